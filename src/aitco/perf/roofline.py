"""Roofline model of a kernel: the slower of its compute time and its memory time.

References
----------
.. [1] S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual performance model
   for multicore architectures", Commun. ACM 52(4), 2009. doi:10.1145/1498765.1498785
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.units import GIGA, TERA


def compute_time_s(
    flops: ArrayLike, peak_tflops: ArrayLike, flops_efficiency: ArrayLike = 1.0
) -> NDArray[np.float64]:
    r"""Time to execute ``flops`` at a fraction of the peak rate.

    Parameters
    ----------
    flops : array_like
        Floating-point operations. [FLOP]
    peak_tflops : array_like
        Dense peak of the data type. [TFLOP/s]
    flops_efficiency : array_like
        Achievable fraction of the peak. [0-1]

    Returns
    -------
    ndarray
        Compute time. [s]

    Notes
    -----
    :math:`t = F / (\eta_F P 10^{12})`.
    """
    return np.asarray(flops, dtype=float) / (
        np.asarray(peak_tflops, dtype=float) * TERA * np.asarray(flops_efficiency, dtype=float)
    )


def memory_time_s(
    bytes_moved: ArrayLike, hbm_bandwidth_gb_s: ArrayLike, memory_efficiency: ArrayLike = 1.0
) -> NDArray[np.float64]:
    r"""Time to move ``bytes_moved`` through device memory at a fraction of its bandwidth.

    Parameters
    ----------
    bytes_moved : array_like
        Bytes read plus written. [B]
    hbm_bandwidth_gb_s : array_like
        Device-memory bandwidth. [GB/s]
    memory_efficiency : array_like
        Achievable fraction of the bandwidth. [0-1]

    Returns
    -------
    ndarray
        Memory time. [s]

    Notes
    -----
    :math:`t = Q / (\eta_M B 10^{9})`.
    """
    return np.asarray(bytes_moved, dtype=float) / (
        np.asarray(hbm_bandwidth_gb_s, dtype=float)
        * GIGA
        * np.asarray(memory_efficiency, dtype=float)
    )


def kernel_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    peak_tflops: ArrayLike,
    hbm_bandwidth_gb_s: ArrayLike,
    flops_efficiency: ArrayLike = 1.0,
    memory_efficiency: ArrayLike = 1.0,
) -> NDArray[np.float64]:
    r"""Roofline time of a kernel: the larger of its compute and memory times.

    Parameters
    ----------
    flops : array_like
        Floating-point operations of the kernel. [FLOP]
    bytes_moved : array_like
        Bytes read from and written to device memory. [B]
    peak_tflops : array_like
        Dense peak throughput for the data type. [TFLOP/s]
    hbm_bandwidth_gb_s : array_like
        Device-memory bandwidth. [GB/s]
    flops_efficiency : array_like, default 1.0
        Achievable fraction of ``peak_tflops``. [0-1]
    memory_efficiency : array_like, default 1.0
        Achievable fraction of ``hbm_bandwidth_gb_s``. [0-1]

    Returns
    -------
    ndarray
        Kernel time. [s]

    Notes
    -----
    :math:`t = \max(F / (\eta_F P),\; Q / (\eta_M B))` (Williams et al. 2009).

    References
    ----------
    .. [1] Williams, Waterman, Patterson, Commun. ACM 52(4), 2009. doi:10.1145/1498765.1498785

    Examples
    --------
    >>> float(kernel_time_s(1e12, 1e9, 1000.0, 1000.0))
    0.001
    """
    return np.maximum(
        compute_time_s(flops, peak_tflops, flops_efficiency),
        memory_time_s(bytes_moved, hbm_bandwidth_gb_s, memory_efficiency),
    )


def arithmetic_intensity(flops: ArrayLike, bytes_moved: ArrayLike) -> NDArray[np.float64]:
    """FLOPs per byte of memory traffic. [FLOP/B]."""
    return np.asarray(flops, dtype=float) / np.asarray(bytes_moved, dtype=float)


def ridge_point(peak_tflops: ArrayLike, hbm_bandwidth_gb_s: ArrayLike) -> NDArray[np.float64]:
    """Arithmetic intensity where a kernel turns compute-bound [FLOP/B].

    Notes
    -----
    :math:`I^* = P / B` with P in FLOP/s and B in B/s.
    """
    return (
        np.asarray(peak_tflops, dtype=float)
        * TERA
        / (np.asarray(hbm_bandwidth_gb_s, dtype=float) * GIGA)
    )

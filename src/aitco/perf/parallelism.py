"""Parallel layouts: rank ordering, pipeline bubble, and plan validity checks.

Ranks are ordered tensor-parallel innermost, then context, then data (with expert parallel
inside data), then pipeline outermost (Megatron-Core's ``tp-cp-ep-dp-pp`` order), so a group's
members are ``stride`` devices apart: TP 1, CP ``tp``, EP/DP ``tp*cp``, PP ``tp*cp*dp``.

References
----------
.. [1] D. Narayanan et al., "Efficient large-scale language model training on GPU clusters using
   Megatron-LM", SC21, arXiv:2104.04473 (bubble (p-1)/m, interleaved schedule (p-1)/(v m)).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

F64 = NDArray[np.float64]

#: Codes of the recomputation modes in vectorised plans.
RECOMPUTE_CODES: dict[str, int] = {"none": 0, "selective": 1, "full": 2}
RECOMPUTE_NAMES: tuple[str, ...] = ("none", "selective", "full")


def bubble_fraction(pp: ArrayLike, n_micro: ArrayLike, vp: ArrayLike = 1) -> F64:
    r"""Pipeline bubble as a fraction of the ideal (bubble-free) time.

    Parameters
    ----------
    pp : array_like
        Pipeline stages. [count]
    n_micro : array_like
        Micro-batches per step. [count]
    vp : array_like
        Virtual stages per device (interleaved 1F1B). [count]

    Returns
    -------
    ndarray
        :math:`(p-1)/(v m)`. [fraction of ideal time]

    Examples
    --------
    >>> float(bubble_fraction(8, 64, 1))
    0.109375
    """
    p = np.asarray(pp, dtype=float)
    return (p - 1.0) / (np.asarray(vp, dtype=float) * np.asarray(n_micro, dtype=float))


def group_strides(tp: ArrayLike, cp: ArrayLike, dp: ArrayLike) -> dict[str, F64]:
    """Distance in devices between consecutive members of each parallel group [count]."""
    t = np.asarray(tp, dtype=float)
    c = np.asarray(cp, dtype=float)
    d = np.asarray(dp, dtype=float)
    return {"tp": np.ones_like(t), "cp": t, "dp": t * c, "ep": t * c, "pp": t * c * d}

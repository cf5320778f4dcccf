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


#: Largest expert-load imbalance charged (a few tokens on many GPUs): the busiest GPU gets at
#: most this many times the mean routed load.
MAX_EXPERT_IMBALANCE = 4.0


def expert_load_imbalance(routed_tokens: ArrayLike, n_gpus: ArrayLike) -> F64:
    r"""Return the expected max/mean routed-token load over the GPUs of an expert-parallel group.

    Parameters
    ----------
    routed_tokens : array_like
        Token-expert assignments of the group in one MoE layer, :math:`T k`. [count]
    n_gpus : array_like
        GPUs sharing the experts (the EP degree), :math:`n`. [count]

    Returns
    -------
    ndarray
        :math:`g = \min(1 + \sqrt{2 \ln n / m}, g_{max})` with :math:`m = T k / n` the mean load
        per GPU: the maximum of :math:`n` bins under uniform random routing (balls into bins,
        M. Raab and A. Steger, RANDOM 1998, heavily loaded case); 1 for one GPU. Used by the
        serving iteration model and by training's expert GEMMs and all-to-alls.
    """
    n = np.maximum(np.asarray(n_gpus, dtype=np.float64), 1.0)
    m = np.maximum(np.asarray(routed_tokens, dtype=np.float64) / n, 1.0)
    g = np.minimum(1.0 + np.sqrt(2.0 * np.log(n) / m), MAX_EXPERT_IMBALANCE)
    return np.asarray(np.where(n > 1.0, g, 1.0), dtype=np.float64)

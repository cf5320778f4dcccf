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

from aitco.perf import comms
from aitco.perf.specs import LinkSpec

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


def routed_remote_nodes(
    n_nodes: ArrayLike, n_active: int, n_groups: int = 1, topk_groups: int = 0
) -> F64:
    r"""Return the expected number of *other* nodes a token's routed experts live on.

    Parameters
    ----------
    n_nodes : array_like
        Nodes (scale-up domains) the expert-parallel group spans, experts spread evenly. [count]
    n_active : int
        Routed experts per token, :math:`k`. [count]
    n_groups, topk_groups : int
        Group-limited routing (DeepSeek-V3: 8 groups, a token's experts from the best 4);
        ``topk_groups`` 0 = no limit.

    Returns
    -------
    ndarray
        :math:`r = c\,(1 - (1 - 1/c)^k)\,(1 - 1/n)`: of the :math:`c` candidate nodes (all
        :math:`n`, or with group-limited routing
        :math:`\min(n, \mathrm{topk} \cdot \max(1, n / n_{groups}))`), the expected number
        holding at least one of the :math:`k` experts under uniform routing, times the chance
        that a target node is not the token's own (by symmetry :math:`1/n`). A dispatch that
        sends a token once per target node (DeepSeek-V3, arXiv 2412.19437 Sec. 3.2.2: "each
        token ... at most 4 nodes", IB once per node, then NVLink) moves :math:`r` copies of
        the hidden state across the scale-out network instead of :math:`k (1 - 1/n)`.
    """
    n = np.maximum(np.asarray(n_nodes, dtype=np.float64), 1.0)
    c = n
    if topk_groups:
        c = np.minimum(n, float(topk_groups) * np.maximum(1.0, n / float(n_groups)))
    distinct = c * (1.0 - (1.0 - 1.0 / c) ** float(n_active))
    return np.asarray(distinct * (1.0 - 1.0 / n), dtype=np.float64)


def moe_alltoall_time_s(
    system: LinkSpec,
    message_bytes: ArrayLike,
    ep: ArrayLike,
    stride: ArrayLike,
    n_active: int,
    *,
    n_groups: int = 1,
    topk_groups: int = 0,
    intra_efficiency: ArrayLike = 1.0,
    inter_efficiency: ArrayLike = 1.0,
) -> F64:
    r"""Return the time of one MoE dispatch (or combine) all-to-all of an expert-parallel group.

    Parameters
    ----------
    system : LinkSpec
        The node/pod links.
    message_bytes : array_like
        One rank's buffer: its tokens times :math:`k` hidden states (times the imbalance). [B]
    ep : array_like
        Expert-parallel degree. [count]
    stride : array_like
        Devices between consecutive EP ranks (:func:`group_strides`). [count]
    n_active : int
        Routed experts per token, :math:`k`. [count]
    n_groups, topk_groups : int
        Group-limited routing of the model (``topk_groups`` 0: none).
    intra_efficiency, inter_efficiency : array_like
        Achievable fractions of the scale-up and scale-out bandwidth. [0-1]

    Returns
    -------
    ndarray
        Time. [s]

    Notes
    -----
    The group holds :math:`g = \min(ep, \lfloor D_{up}/\mathrm{stride} \rfloor)` ranks per
    scale-up domain and spans :math:`ep/g` of them:
    :func:`aitco.perf.comms.hierarchical_alltoall_time_s`, local peers over NVLink/xGMI/ICI
    while remote ones go over the NICs. Group-limited routing (DeepSeek-V3) exists so that the
    dispatch can send each token once per target node and forward it inside the node; its
    scale-out share is then :func:`routed_remote_nodes` / :math:`k` of the buffer.
    """
    ep_a = np.maximum(np.asarray(ep, dtype=np.float64), 1.0)
    g, intra, inter, remote = moe_alltoall_split(
        system, ep_a, stride, n_active, n_groups=n_groups, topk_groups=topk_groups,
        intra_efficiency=intra_efficiency, inter_efficiency=inter_efficiency,
    )  # fmt: skip
    t = comms.hierarchical_alltoall_time_s(message_bytes, ep_a, g, intra, inter, remote)
    return np.asarray(np.where(ep_a > 1.0, t, 0.0), dtype=np.float64)


def moe_alltoall_split(
    system: LinkSpec,
    ep: ArrayLike,
    stride: ArrayLike,
    n_active: int,
    *,
    n_groups: int = 1,
    topk_groups: int = 0,
    intra_efficiency: ArrayLike = 1.0,
    inter_efficiency: ArrayLike = 1.0,
) -> tuple[F64, tuple[F64, F64, F64], tuple[F64, F64, F64], F64 | None]:
    r"""Return how an EP group's all-to-all splits over the node and the network.

    Returns
    -------
    ranks_per_node : ndarray
        :math:`g = \min(ep, \lfloor D_{up}/\mathrm{stride} \rfloor)`. [count]
    intra, inter : tuple of ndarray
        ``(bandwidth_gb_s, latency_us, efficiency)`` of the scale-up link inside a node and of
        the group's link (:func:`aitco.perf.comms.group_link`).
    remote_share : ndarray or None
        Share of the buffer a node-deduplicating dispatch sends over the network
        (:func:`routed_remote_nodes` / :math:`k`) for group-limited routing; None otherwise.
    """
    ep_a = np.maximum(np.asarray(ep, dtype=np.float64), 1.0)
    st = np.maximum(np.asarray(stride, dtype=np.float64), 1.0)
    g = np.clip(np.floor(comms.scale_up_size(system) / st), 1.0, ep_a)
    intra = comms.group_link(system, g, st, intra_efficiency, inter_efficiency)
    inter = comms.group_link(system, ep_a, st, intra_efficiency, inter_efficiency)
    remote = None
    if topk_groups:
        remote = routed_remote_nodes(ep_a / g, n_active, n_groups, topk_groups) / float(n_active)
    return g, intra, inter, remote

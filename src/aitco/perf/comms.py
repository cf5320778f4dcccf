"""Alpha-beta (latency-bandwidth) times of collective operations, vectorised.

Every function takes the message size, the number of ranks, the per-device link bandwidth in one
direction, the per-message latency and an achievable fraction of the bandwidth, and broadcasts
over numpy arrays, so one call prices many plans. A group of one rank costs nothing.

Conventions
-----------
``message_bytes`` is the size of the full (unsharded) buffer each rank holds before an
all-reduce or after an all-gather, the input of a reduce-scatter, the whole send buffer of one
rank in an all-to-all, and the payload of a point-to-point send.

References
----------
.. [1] R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of collective communication operations
   in MPICH", IJHPCA 19(1), 2005. doi:10.1177/1094342005051521
.. [2] P. Sanders, J. Speck, J. L. Träff, "Two-tree algorithms for full bandwidth broadcast,
   reduction and scan", Parallel Computing 35(12), 2009 (NCCL's double binary tree).
.. [3] NVIDIA, "NCCL tests: performance" (algorithm vs bus bandwidth),
   https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md (retrieved 2026-12-02).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.errors import InputError
from aitco.perf.specs import LinkSpec
from aitco.units import GIGA, MEGA

F64 = NDArray[np.float64]

#: Collective algorithms understood by :func:`allreduce_time_s`.
ALLREDUCE_ALGORITHMS = ("ring", "tree", "hierarchical")


def _arr(x: ArrayLike) -> F64:
    return np.asarray(x, dtype=float)


def _beta_s(message_bytes: ArrayLike, bandwidth_gb_s: ArrayLike, efficiency: ArrayLike) -> F64:
    """Seconds to push ``message_bytes`` through a link at ``efficiency`` of its bandwidth."""
    m = _arr(message_bytes)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = m / (_arr(bandwidth_gb_s) * (GIGA * _arr(efficiency)))
    return np.where(m > 0, t, 0.0)  # 0 B: free; no link (0 GB/s): inf


def _alpha_s(latency_us: ArrayLike) -> F64:
    return _arr(latency_us) / MEGA


def allreduce_time_s(
    message_bytes: ArrayLike,
    n_ranks: ArrayLike,
    bandwidth_gb_s: ArrayLike,
    latency_us: ArrayLike,
    efficiency: ArrayLike = 1.0,
    algorithm: str = "ring",
) -> F64:
    r"""Time of an all-reduce of ``message_bytes`` over ``n_ranks``.

    Parameters
    ----------
    message_bytes : array_like
        Size of the buffer reduced (each rank's full copy). [B]
    n_ranks : array_like
        Ranks in the group. [count]
    bandwidth_gb_s : array_like
        Link bandwidth per device, one direction. [GB/s]
    latency_us : array_like
        Per-message latency (alpha). [us]
    efficiency : array_like, default 1.0
        Achievable fraction of ``bandwidth_gb_s``. [0-1]
    algorithm : {"ring", "tree"}
        Ring (bandwidth-optimal) or double binary tree (latency ``log2 n``). For the
        two-level algorithm use :func:`hierarchical_allreduce_time_s`.

    Returns
    -------
    ndarray
        Time. [s]

    Notes
    -----
    Ring: :math:`t = 2\frac{n-1}{n}\frac{M}{\eta B} + 2(n-1)\alpha`.
    Tree: :math:`t = 2\frac{n-1}{n}\frac{M}{\eta B} + 2\lceil\log_2 n\rceil\alpha`
    (the double binary tree reaches the ring's bus bandwidth [2]_, [3]_).

    Examples
    --------
    >>> round(float(allreduce_time_s(1e9, 8, 100.0, 0.0)), 6)
    0.0175
    """
    n = _arr(n_ranks)
    frac = np.where(n > 1, (n - 1) / np.maximum(n, 1), 0.0)
    beta = 2 * frac * _beta_s(message_bytes, bandwidth_gb_s, efficiency)
    if algorithm == "ring":
        steps = 2 * np.maximum(n - 1, 0)
    elif algorithm == "tree":
        steps = 2 * np.ceil(np.log2(np.maximum(n, 1)))
    else:
        raise InputError(
            "algorithm", algorithm, "'ring' or 'tree' (see hierarchical_allreduce_time_s)"
        )
    return np.where(n > 1, beta + steps * _alpha_s(latency_us), 0.0)


def reduce_scatter_time_s(
    message_bytes: ArrayLike,
    n_ranks: ArrayLike,
    bandwidth_gb_s: ArrayLike,
    latency_us: ArrayLike,
    efficiency: ArrayLike = 1.0,
) -> F64:
    r"""Time of a ring reduce-scatter of a ``message_bytes`` buffer over ``n_ranks``.

    Parameters
    ----------
    message_bytes : array_like
        Size of each rank's input buffer (output is 1/n of it). [B]
    n_ranks : array_like
        Ranks in the group. [count]
    bandwidth_gb_s : array_like
        Link bandwidth per device, one direction. [GB/s]
    latency_us : array_like
        Per-message latency. [us]
    efficiency : array_like, default 1.0
        Achievable fraction of the bandwidth. [0-1]

    Returns
    -------
    ndarray
        Time. [s]

    Notes
    -----
    :math:`t = \frac{n-1}{n}\frac{M}{\eta B} + (n-1)\alpha` (Thakur et al. 2005 [1]_).
    """
    n = _arr(n_ranks)
    frac = np.where(n > 1, (n - 1) / np.maximum(n, 1), 0.0)
    t = frac * _beta_s(message_bytes, bandwidth_gb_s, efficiency) + np.maximum(n - 1, 0) * _alpha_s(
        latency_us
    )
    return np.where(n > 1, t, 0.0)


def allgather_time_s(
    message_bytes: ArrayLike,
    n_ranks: ArrayLike,
    bandwidth_gb_s: ArrayLike,
    latency_us: ArrayLike,
    efficiency: ArrayLike = 1.0,
) -> F64:
    r"""Time of a ring all-gather producing a ``message_bytes`` buffer on each of ``n_ranks``.

    Parameters
    ----------
    message_bytes : array_like
        Size of the gathered (full) buffer. [B]
    n_ranks : array_like
        Ranks in the group. [count]
    bandwidth_gb_s : array_like
        Link bandwidth per device, one direction. [GB/s]
    latency_us : array_like
        Per-message latency. [us]
    efficiency : array_like, default 1.0
        Achievable fraction of the bandwidth. [0-1]

    Returns
    -------
    ndarray
        Time. [s]

    Notes
    -----
    :math:`t = \frac{n-1}{n}\frac{M}{\eta B} + (n-1)\alpha` (Thakur et al. 2005 [1]_).
    """
    return reduce_scatter_time_s(message_bytes, n_ranks, bandwidth_gb_s, latency_us, efficiency)


def alltoall_time_s(
    message_bytes: ArrayLike,
    n_ranks: ArrayLike,
    bandwidth_gb_s: ArrayLike,
    latency_us: ArrayLike,
    efficiency: ArrayLike = 1.0,
) -> F64:
    r"""Time of an all-to-all where each rank sends ``message_bytes`` in total (1/n to each peer).

    Parameters
    ----------
    message_bytes : array_like
        Whole send buffer of one rank. [B]
    n_ranks : array_like
        Ranks in the group. [count]
    bandwidth_gb_s : array_like
        Link bandwidth per device, one direction. [GB/s]
    latency_us : array_like
        Per-message latency. [us]
    efficiency : array_like, default 1.0
        Achievable fraction of the bandwidth. [0-1]

    Returns
    -------
    ndarray
        Time. [s]

    Notes
    -----
    Pairwise exchange: :math:`t = \frac{n-1}{n}\frac{M}{\eta B} + (n-1)\alpha`.
    """
    return reduce_scatter_time_s(message_bytes, n_ranks, bandwidth_gb_s, latency_us, efficiency)


def hierarchical_alltoall_time_s(
    message_bytes: ArrayLike,
    n_ranks: ArrayLike,
    ranks_per_node: ArrayLike,
    intra: tuple[ArrayLike, ArrayLike, ArrayLike],
    inter: tuple[ArrayLike, ArrayLike, ArrayLike],
    remote_share: ArrayLike | None = None,
) -> F64:
    r"""Time of an all-to-all whose group spans several nodes (scale-up domains).

    Parameters
    ----------
    message_bytes : array_like
        Whole send buffer of one rank, :math:`M`. [B]
    n_ranks : array_like
        Ranks in the group, :math:`n`. [count]
    ranks_per_node : array_like
        Members of the group inside one node, :math:`g`. [count]
    intra, inter : tuple of array_like
        ``(bandwidth_gb_s, latency_us, efficiency)`` of the scale-up and the scale-out link
        per device (:func:`group_link` of one node's share and of the whole group).
    remote_share : array_like, optional
        Share of :math:`M` that crosses the scale-out network; default :math:`(n - g)/n`, the
        bytes addressed to peers on other nodes. A dispatch that deduplicates by node
        (:func:`aitco.perf.parallelism.routed_remote_nodes`) sends less and forwards the
        copies inside the target node, so its scale-up share is :math:`(g - 1)/g` of
        :math:`M` instead of :math:`(g - 1)/n`.

    Returns
    -------
    ndarray
        Time. [s]

    Notes
    -----
    Every peer's send is posted at once (NCCL's grouped send/recv all-to-all; DeepEP), so the
    local part over the scale-up fabric and the remote part over the NICs run concurrently:
    :math:`t = \max(s_u M/(\eta_u B_u) + (g-1)\alpha_u,\; s_o M/(\eta_o B_o) + (n-g)\alpha_o)`.
    With :math:`g \ge n` it is :func:`alltoall_time_s` on the scale-up link; with
    :math:`g = 1` and no deduplication, :func:`alltoall_time_s` on the scale-out link.
    """
    m = _arr(message_bytes)
    n = np.maximum(_arr(n_ranks), 1.0)
    g = np.clip(_arr(ranks_per_node), 1.0, n)
    bw_u, lat_u, eff_u = (_arr(x) for x in intra)
    bw_o, lat_o, eff_o = (_arr(x) for x in inter)
    if remote_share is None:
        s_o, s_u = (n - g) / n, (g - 1.0) / n
    else:
        s_o, s_u = _arr(remote_share), (g - 1.0) / g
    t_u = _beta_s(s_u * m, bw_u, eff_u) + (g - 1.0) * _alpha_s(lat_u)
    t_o = _beta_s(s_o * m, bw_o, eff_o) + (n - g) * _alpha_s(lat_o)
    flat = alltoall_time_s(m, n, bw_u, lat_u, eff_u)
    return np.asarray(np.where(g >= n, flat, np.maximum(t_u, t_o)), dtype=np.float64)


def p2p_time_s(
    message_bytes: ArrayLike,
    bandwidth_gb_s: ArrayLike,
    latency_us: ArrayLike,
    efficiency: ArrayLike = 1.0,
) -> F64:
    r"""Time of one point-to-point send.

    Parameters
    ----------
    message_bytes : array_like
        Payload. [B]
    bandwidth_gb_s : array_like
        Link bandwidth, one direction. [GB/s]
    latency_us : array_like
        Per-message latency. [us]
    efficiency : array_like, default 1.0
        Achievable fraction of the bandwidth. [0-1]

    Returns
    -------
    ndarray
        Time. [s]

    Notes
    -----
    :math:`t = \alpha + M / (\eta B)`; zero for an empty message.
    """
    m = _arr(message_bytes)
    return np.where(m > 0, _alpha_s(latency_us) + _beta_s(m, bandwidth_gb_s, efficiency), 0.0)


def hierarchical_allreduce_time_s(
    message_bytes: ArrayLike,
    ranks_per_node: ArrayLike,
    n_nodes: ArrayLike,
    intra_bandwidth_gb_s: ArrayLike,
    intra_latency_us: ArrayLike,
    inter_bandwidth_gb_s: ArrayLike,
    inter_latency_us: ArrayLike,
    intra_efficiency: ArrayLike = 1.0,
    inter_efficiency: ArrayLike = 1.0,
) -> F64:
    """Two-level all-reduce: intra-node RS, inter-node all-reduce, intra-node AG.

    Parameters
    ----------
    message_bytes : array_like
        Size of the buffer reduced. [B]
    ranks_per_node : array_like
        Ranks of the group inside one node (scale-up domain). [count]
    n_nodes : array_like
        Nodes the group spans. [count]
    intra_bandwidth_gb_s, inter_bandwidth_gb_s : array_like
        Per-device bandwidth of the scale-up fabric and of the scale-out network, one
        direction. [GB/s]
    intra_latency_us, inter_latency_us : array_like
        Per-message latencies. [us]
    intra_efficiency, inter_efficiency : array_like
        Achievable fractions of the two bandwidths. [0-1]

    Returns
    -------
    ndarray
        Time. [s]

    Notes
    -----
    :math:`t = RS_{k}(M) + AR^{ring}_{N}(M/k) + AG_{k}(M)`, with k ranks per node and N nodes;
    each rank of a node carries 1/k of the inter-node traffic over its own NIC (rail-optimised).
    """
    k = _arr(ranks_per_node)
    m = _arr(message_bytes)
    rs = reduce_scatter_time_s(m, k, intra_bandwidth_gb_s, intra_latency_us, intra_efficiency)
    ar = allreduce_time_s(
        m / np.maximum(k, 1), n_nodes, inter_bandwidth_gb_s, inter_latency_us, inter_efficiency
    )
    ag = allgather_time_s(m, k, intra_bandwidth_gb_s, intra_latency_us, intra_efficiency)
    return rs + ar + ag


def scale_up_size(system: LinkSpec) -> int:
    """Devices reachable over the scale-up fabric: ``max(devices_per_node, scale_up_domain)``."""
    return int(
        max(system.devices_per_node, getattr(system, "scale_up_domain", system.devices_per_node))
    )


def group_link(
    system: LinkSpec,
    n_ranks: ArrayLike,
    stride: ArrayLike = 1,
    intra_efficiency: ArrayLike = 1.0,
    inter_efficiency: ArrayLike = 1.0,
) -> tuple[F64, F64, F64]:
    r"""Bandwidth, latency and efficiency seen by a group of ``n_ranks`` ranks of a ``System``.

    Ranks are numbered so that consecutive ranks share a node (tensor parallel innermost); a group
    whose members are ``stride`` ranks apart spans ``n_ranks * stride`` consecutive devices. If
    those fit in the scale-up domain (``max(devices_per_node, scale_up_domain)``) the group talks
    over the scale-up fabric (NVLink/NVSwitch, xGMI, ICI, or PCIe); otherwise its ring crosses the
    scale-out network, whose per-device bandwidth then bounds it.

    Parameters
    ----------
    system : LinkSpec
        The node/pod links (e.g. an ``aitco.catalog.schema.System``).
    n_ranks : array_like
        Ranks in the group. [count]
    stride : array_like, default 1
        Distance between consecutive members, in devices. [count]
    intra_efficiency, inter_efficiency : array_like
        Achievable fractions of the scale-up and scale-out bandwidth. [0-1]

    Returns
    -------
    bandwidth_gb_s : ndarray
        Per-device bandwidth, one direction. [GB/s]
    latency_us : ndarray
        Per-message latency. [us]
    efficiency : ndarray
        The efficiency fraction that applies. [0-1]

    Notes
    -----
    A group that crosses nodes gets one device's scale-out bandwidth even when several of its
    members share a node. For NCCL's multi-channel ring all-reduce that is pessimistic: each
    channel leaves the node through a different NIC, so the ring's bus bandwidth [3]_ can reach
    :math:`\min(B_{\mathrm{intra}}, k B_{\mathrm{NIC}})` with :math:`k` members per node; the
    nccl-tests fixture (16 H100, 2 nodes, 8 x 400G) reaches 338.8 GB/s, 6.8x the 50 GB/s per
    GPU. That model was tried (docs/training.md, "Scale-out bandwidth of groups that share a
    node") and not adopted: refitted globally it made the training validation clearly worse,
    in-sample and held out, because the published ZeRO-3/FSDP runs across nodes (Megatron-LM
    2021, 768-2240 A100) are bound at about 16-18 GB/s per GPU, 65-72% of one 200G NIC,
    whatever the group size, and the other cross-node DP rows favour one NIC per GPU too. The
    per-device bandwidth therefore stays; it is the bandwidth of the framework-level DP traffic
    the efficiencies were fitted on, not an NCCL-ring ceiling.
    """
    span = _arr(n_ranks) * _arr(stride)
    intra = span <= scale_up_size(system)
    bw = np.where(
        intra, float(system.intra_node_bandwidth_gb_s), float(system.scale_out_bandwidth_gb_s)
    )
    lat = np.where(intra, float(system.intra_node_latency_us), float(system.scale_out_latency_us))
    eff = np.where(intra, _arr(intra_efficiency), _arr(inter_efficiency))
    return bw, lat, eff

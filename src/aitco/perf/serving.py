r"""Serving decisions on the iteration model: capacity, replicas for an SLO, autoscaling, energy.

References
----------
.. [1] Y. Zhong et al., "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized
   Large Language Model Serving," OSDI 2024, arXiv:2401.09670 (goodput under TTFT/TPOT SLOs).
.. [2] MLCommons, "MLPerf Inference Rules", Llama 2 70B Server: 99th-percentile TTFT <= 2 s and
   TPOT <= 200 ms (v4.0, 2024).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.catalog.schema import Accelerator
from aitco.errors import InputError
from aitco.perf.iteration import (
    IDLE_POWER_FRACTION_DEFAULT,
    IterationModel,
    cached_prompt_tokens,
    continuous_batching_step,
    prefill_pairs,
)
from aitco.perf.queueing import simulate_poisson
from aitco.units import J_PER_KWH, MEGA

F64 = NDArray[np.float64]

#: Requests simulated per candidate in the replica search (enough for a stable P99: ~20 samples
#: beyond it).
SLO_SEARCH_REQUESTS = 2000
#: Sustained read bandwidth assumed for loading weights on a cold start: a local NVMe SSD
#: (PCIe 4.0 x4 drives read about 7 GB/s sequentially; datasheets of Samsung PM9A3 / 990 Pro).
NVME_READ_GB_S = 7.0
#: Network read bandwidth for weights pulled from object storage: one 100 Gb/s NIC = 12.5 GB/s,
#: of which about half is typically achieved by S3-style multi-part downloads (assumption).
OBJECT_STORE_READ_GB_S = 6.25
#: Engine warm-up after weights are resident (CUDA-graph capture, memory profiling, compilation).
#: vLLM logs "Graph capturing finished in 10-30 s" on H100 for 7-70B models; 30 s is assumed.
ENGINE_WARMUP_S = 30.0
#: Time to provision a VM/pod with a GPU before any loading starts (cloud node provisioning,
#: container image pull); a few minutes is typical of GPU node pools (assumption, 120 s).
NODE_PROVISION_S = 120.0


def max_request_rate(
    it: IterationModel,
    input_tokens: float,
    output_tokens: float,
    max_batch: int,
    cached_tokens: float = 0.0,
    separate_prefill_tokens: float | None = None,
) -> float:
    r"""Highest sustainable request rate of one replica at the largest batch. [requests/s].

    Notes
    -----
    :math:`\mu = B_{max} / (O\,t_{step}(B_{max}))` with :math:`t_{step}` the steady-state
    continuous-batching iteration time (:func:`aitco.perf.inference.continuous_batching_step`).
    """
    o = max(float(output_tokens), 1.0)
    step = float(
        continuous_batching_step(
            it, max_batch, input_tokens, o, cached_tokens, separate_prefill_tokens
        )
    )
    return max_batch / (o * step)


def replicas_for_slo(
    it: IterationModel,
    qps: float,
    input_tokens: float,
    output_tokens: float,
    *,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    max_num_tokens: int = 8192,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    input_cv: float = 0.0,
    output_cv: float = 0.0,
    seed: int = 0,
    max_replicas: int = 100_000,
    scheduler_steps: int = 1,
    chunked: bool = True,
    prefix_cache_hit_rate: float = 0.0,
    mixed: bool = True,
) -> int | None:
    r"""Fewest replicas whose P99 TTFT and P99 TPOT meet the objectives at ``qps`` in total.

    Parameters
    ----------
    it : IterationModel
        Iteration model of one replica.
    qps : float
        Total arrival rate, split evenly over replicas (round-robin load balancing). [requests/s]
    input_tokens, output_tokens : float
        Mean lengths. [tokens]
    max_num_seqs, kv_capacity_tokens, max_num_tokens : int
        Limits of one replica.
    slo_ttft_s, slo_tpot_s : float, optional
        P99 objectives. [s]
    input_cv, output_cv : float
        Length variability.
    seed : int
        Simulation seed.
    max_replicas : int
        Search bound.

    Returns
    -------
    int or None
        Replicas needed; None when no number of replicas can meet the objectives (e.g. a TPOT
        objective below the single-sequence decode step).

    Notes
    -----
    Lower bound :math:`\\lceil \\lambda / \\mu \\rceil` from :func:`max_request_rate`; then a
    doubling and bisection search over simulated Poisson runs of ``SLO_SEARCH_REQUESTS`` requests.
    The check is monotone in replicas (less load per replica never raises latency).
    """
    if slo_ttft_s is None and slo_tpot_s is None:
        raise InputError("slo", None, "--slo-ttft-ms and/or --slo-tpot-ms")
    # unloaded bounds: one request alone
    single_tpot = float(it.decode_step_s(1, input_tokens + output_tokens / 2.0))
    cached = float(cached_prompt_tokens(input_tokens, prefix_cache_hit_rate))
    single_ttft = float(
        it.iteration_s(
            0.0, 0.0, input_tokens - cached, prefill_pairs(input_tokens - cached, cached), 1.0
        )
    )
    if (slo_tpot_s is not None and single_tpot > slo_tpot_s) or (
        slo_ttft_s is not None and single_ttft > slo_ttft_s
    ):
        return None
    mu = max_request_rate(
        it, input_tokens, output_tokens, max_num_seqs, cached,
        None if mixed else float(max_num_tokens),
    )  # fmt: skip

    def ok(r: int) -> bool:
        res = simulate_poisson(
            it,
            qps / r,
            input_tokens,
            output_tokens,
            input_cv=input_cv,
            output_cv=output_cv,
            max_num_seqs=max_num_seqs,
            kv_capacity_tokens=kv_capacity_tokens,
            max_num_tokens=max_num_tokens,
            num_requests=SLO_SEARCH_REQUESTS,
            seed=seed,
            scheduler_steps=scheduler_steps,
            chunked=chunked,
            prefix_cache_hit_rate=prefix_cache_hit_rate,
            mixed=mixed,
        )
        p = res.percentiles()
        if slo_ttft_s is not None and p["p99_ttft_s"] > slo_ttft_s:
            return False
        return not (slo_tpot_s is not None and p.get("p99_tpot_s", 0.0) > slo_tpot_s)

    return smallest_passing(ok, max(1, math.ceil(qps / mu * (1 + 1e-9))), max_replicas)


def smallest_passing(ok: Callable[[int], bool], lo: int, most: int) -> int | None:
    """Smallest ``n >= lo`` with ``ok(n)`` for a monotone ``ok``: doubling, then bisection.

    Returns None when no ``n`` up to ``most`` passes.
    """
    if ok(lo):
        return lo
    hi = lo * 2
    while not ok(hi):
        lo = hi
        hi *= 2
        if hi > most:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ----------------------------------------------------------------------------- autoscaling
@dataclass(frozen=True)
class ColdStart:
    """Time for a new replica to serve its first request.

    Attributes
    ----------
    provision_s, load_s, warmup_s : float
        Node provisioning, weight loading, engine warm-up. [s]
    total_s : float
        Sum. [s]
    """

    provision_s: float
    load_s: float
    warmup_s: float

    @property
    def total_s(self) -> float:
        """Total cold-start time. [s]."""
        return self.provision_s + self.load_s + self.warmup_s


def cold_start(
    weights_gb: float,
    *,
    source: str = "nvme",
    read_gb_s: float | None = None,
    provision_s: float = NODE_PROVISION_S,
    warmup_s: float = ENGINE_WARMUP_S,
) -> ColdStart:
    r"""Cold-start time of one replica: provision + weights / read bandwidth + warm-up.

    Parameters
    ----------
    weights_gb : float
        Weights of one replica. [GB]
    source : {"nvme", "object-store", "warm-node"}
        Where the weights come from (``warm-node``: node already up, weights cached on NVMe).
    read_gb_s : float, optional
        Override of the read bandwidth. [GB/s]
    provision_s, warmup_s : float
        Provisioning and warm-up times. [s]

    Returns
    -------
    ColdStart
        The components. [s]
    """
    if source == "nvme":
        bw = NVME_READ_GB_S
    elif source == "object-store":
        bw = OBJECT_STORE_READ_GB_S
    elif source == "warm-node":
        bw, provision_s = NVME_READ_GB_S, 0.0
    else:
        raise InputError("source", source, "'nvme', 'object-store' or 'warm-node'")
    bw = read_gb_s or bw
    return ColdStart(provision_s, weights_gb / bw, warmup_s)


def scale_up_lag_cost(
    load_step_qps: float,
    capacity_per_replica_qps: float,
    cold_start_s: float,
    *,
    replica_usd_per_h: float,
    replicas_added: int | None = None,
) -> dict[str, Any]:
    r"""Cost of reacting late to a load step, against keeping warm spares.

    Parameters
    ----------
    load_step_qps : float
        Extra arrival rate appearing at once. [requests/s]
    capacity_per_replica_qps : float
        Sustainable rate of one replica (at the SLO). [requests/s]
    cold_start_s : float
        Time for new replicas to come up. [s]
    replica_usd_per_h : float
        Price of one replica-hour. [USD/h]
    replicas_added : int, optional
        Replicas launched (default: enough for the step).

    Returns
    -------
    dict
        ``replicas_added``, ``backlog_requests`` (requests that arrive during the lag beyond the
        capacity: they miss the SLO or are shed), ``backlog_drain_s`` (time to clear them once
        the replicas are up, if the new capacity exceeds the step), ``warm_spare_usd_per_h``
        (cost of keeping the spares warm instead).

    Notes
    -----
    Backlog :math:`Q = \Delta\lambda\,t_{cold}`; with :math:`r` new replicas of capacity
    :math:`\mu`, it drains in :math:`Q/(r\mu - \Delta\lambda)`.
    """
    if capacity_per_replica_qps <= 0:
        raise InputError("capacity_per_replica_qps", capacity_per_replica_qps, "a positive rate")
    r = replicas_added or math.ceil(load_step_qps / capacity_per_replica_qps)
    backlog = load_step_qps * cold_start_s
    spare = r * capacity_per_replica_qps - load_step_qps
    drain = backlog / spare if spare > 0 else float("inf")
    return {
        "replicas_added": r,
        "backlog_requests": backlog,
        "backlog_drain_s": drain,
        "warm_spare_usd_per_h": r * replica_usd_per_h,
    }


# ----------------------------------------------------------------------------- energy
def power_w(
    tdp_w: ArrayLike, utilization: ArrayLike, idle_fraction: float = IDLE_POWER_FRACTION_DEFAULT
) -> F64:
    r"""Accelerator power from TDP and utilisation: :math:`P = TDP\,(f_0 + (1 - f_0) u)`. [W].

    Parameters
    ----------
    tdp_w : array_like
        Thermal design power. [W]
    utilization : array_like
        Busy fraction (roofline-bound share of the time). [0-1]
    idle_fraction : float
        Idle power as a fraction of TDP. [0-1]

    Returns
    -------
    ndarray
        Power. [W]

    Notes
    -----
    A linear idle-to-TDP interpolation; measured decode power on H100 sits well below TDP
    (memory-bound kernels), which the utilisation term only partly captures.
    """
    u = np.clip(np.asarray(utilization, dtype=np.float64), 0.0, 1.0)
    return np.asarray(
        np.asarray(tdp_w, dtype=np.float64) * (idle_fraction + (1.0 - idle_fraction) * u),
        dtype=np.float64,
    )


def idle_power_w(acc: Accelerator) -> float | None:
    """Return the accelerator's idle draw: the published ``idle_w``, else a fraction of its TDP.

    The fraction is :data:`~aitco.perf.iteration.IDLE_POWER_FRACTION_DEFAULT` (the catalog
    factor ``idle-power.fraction-of-tdp``) of the TDP (of the power limit for a part published
    with a limit only). None without either. [W]
    """
    if acc.idle_w is not None:
        return float(acc.idle_w)
    rated = acc.tdp_w if acc.tdp_w is not None else acc.board_power_w
    if rated is None:
        return None
    return IDLE_POWER_FRACTION_DEFAULT * float(rated)


def idle_power_fraction(acc: Accelerator) -> float:
    """Return the idle draw over the board power (:func:`idle_power_w` / ``board_power_w``)."""
    idle, board = idle_power_w(acc), acc.board_power_w
    if idle is None or not board:
        return IDLE_POWER_FRACTION_DEFAULT
    return min(1.0, idle / float(board))


def busy_time_share(requests_in_flight: ArrayLike) -> F64:
    r"""Return the share of the time a replica runs iterations: :math:`1 - e^{-L}`.

    With Poisson arrivals the number of requests in a system that serves them in parallel
    (M/G/:math:`\infty`, continuous batching below its batch limit) is Poisson with mean
    :math:`L = \lambda W` (Little's law) whatever the service-time distribution, so the engine
    is idle with probability :math:`e^{-L}` [1]_. A replica with a request always in flight
    (closed loop, offline, a static batch, a saturated queue: :math:`L = \infty`) is always busy.

    Parameters
    ----------
    requests_in_flight : array_like
        Mean requests in flight per replica, :math:`L` = requests/s per replica x mean
        end-to-end latency; ``inf`` or NaN: always busy. [requests]

    Returns
    -------
    ndarray
        Busy share of the time. [0-1]

    References
    ----------
    .. [1] L. Kleinrock, *Queueing Systems, Vol. 1: Theory*, Wiley 1975, sec. 3.11 (the
       M/G/infinity system: the number in the system is Poisson with mean lambda x E[S]).

    Examples
    --------
    >>> round(float(busy_time_share(0.02 * 3.9)), 4)  # 0.02 requests/s of 3.9 s each
    0.075
    >>> float(busy_time_share(float("inf")))
    1.0
    """
    lam = np.asarray(requests_in_flight, dtype=np.float64)
    lam = np.where(np.isnan(lam), np.inf, lam)
    if np.any(lam < 0):
        raise InputError("requests_in_flight", float(np.min(lam)), "a mean >= 0")
    return np.asarray(-np.expm1(-lam), dtype=np.float64)


def energy_per_token(
    acc: Accelerator,
    gpus: int,
    output_tokens_per_s: float,
    *,
    utilization: float,
    time_share: float = 1.0,
) -> dict[str, float | None]:
    r"""Power, energy per output token, tokens per second per watt and TOPS/W of the deployment.

    Each accelerator draws its idle power every hour the service runs, plus the busy share of
    the difference to its board power:
    :math:`P = P_\mathrm{idle} + b\,(P_\mathrm{board} - P_\mathrm{idle})` with
    :math:`b` = ``time_share`` (share of the time the engine runs iterations,
    :func:`busy_time_share`) x ``utilization`` (share of an iteration the units compute or
    stream memory). :math:`P_\mathrm{idle}` is :func:`idle_power_w`.

    Returns
    -------
    dict
        ``power_w`` (all GPUs) = ``idle_power_w`` + ``busy_power_w`` (the two parts, all GPUs),
        ``busy_fraction`` (:math:`b`), ``energy_per_token_j``, ``tokens_per_s_per_w``,
        ``peak_tops_per_w`` (peak dense ops of the best type over TDP),
        ``energy_per_million_tokens_kwh``. None where the accelerator has no published TDP.
    """
    board_w = acc.board_power_w  # the TDP, or the lower power limit the device is run at
    idle_w = idle_power_w(acc)
    keys = ("power_w", "idle_power_w", "busy_power_w", "busy_fraction", "energy_per_token_j",
            "tokens_per_s_per_w", "peak_tops_per_w", "energy_per_million_tokens_kwh")  # fmt: skip
    if (
        board_w is None
        or idle_w is None
        or output_tokens_per_s <= 0
        or not math.isfinite(output_tokens_per_s)
    ):
        return dict.fromkeys(keys)
    idle_w = min(idle_w, float(board_w))
    b = float(np.clip(utilization, 0.0, 1.0)) * float(np.clip(time_share, 0.0, 1.0))
    idle_all = idle_w * gpus
    busy_all = b * (float(board_w) - idle_w) * gpus
    p = idle_all + busy_all
    j = p / output_tokens_per_s
    peak = max(acc.peak_tflops.values()) if acc.peak_tflops else 0.0
    return {
        "power_w": p,
        "idle_power_w": idle_all,
        "busy_power_w": busy_all,
        "busy_fraction": b,
        "energy_per_token_j": j,
        "tokens_per_s_per_w": output_tokens_per_s / p,
        "peak_tops_per_w": peak / acc.tdp_w if peak and acc.tdp_w else None,  # TFLOP/s = TOPS
        "energy_per_million_tokens_kwh": j * MEGA / J_PER_KWH,
    }

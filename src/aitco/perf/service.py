r"""Serving plans on the iteration model: disaggregation, autoscaling, GPU shares.

GPU shares: MIG slices and time-slicing replicas (:func:`fractional_accelerator`).

Pure functions of numbers and an :class:`~aitco.perf.inference.IterationModel`; prices come in
as ``usd_per_gpu_hour`` (the CLI resolves them from the catalog), so this module reads no catalog.

References
----------
.. [1] Y. Zhong et al., "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized
   Large Language Model Serving," OSDI 2024, arXiv:2401.09670.
.. [2] P. Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase Splitting,"
   ISCA 2024, arXiv:2311.18677.
.. [3] NVIDIA, "Multi-Instance GPU User Guide: Supported MIG Profiles,"
   https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html
   (retrieved 2026-12-02): 7 compute slices (1/7 of the SMs each) and 8 memory slices (1/8 of
   memory, L2 and memory controllers each); a ``Ng.Mgb`` profile takes ``N`` compute slices.
.. [4] NVIDIA, "Time-Slicing GPUs in Kubernetes," GPU Operator documentation,
   https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html
   (published 2025-09-10): a GPU is handed out as ``replicas`` that interleave in time, "unlike
   MIG, there is no memory or fault-isolation between replicas"; the trade-off is "increased
   latency, jitter, and potential out-of-memory (OOM) conditions".
"""

from __future__ import annotations

import csv
import itertools
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.errors import InputError
from aitco.fileio import open_input
from aitco.limits import MAX_REPLICAS
from aitco.perf import comms, serving
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.inference import (
    GPU_SHARE_FORM_FACTOR,
    IterationModel,
    cached_prompt_tokens,
    continuous_batching_step,
    prefill_pairs,
)
from aitco.perf.queueing import md1_mean_wait_s
from aitco.units import (
    DAYS_PER_MONTH,
    HOURS_PER_DAY,
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
    optional_ms_to_s,
)

F64 = NDArray[np.float64]
#: Rates of a load profile: one per hour of the day.
LOAD_PROFILE_HOURS = int(HOURS_PER_DAY)

TOKENS_PER_MILLION = 1e6
#: MIG slices of one GPU (NVIDIA MIG user guide [3]_).
MIG_COMPUTE_SLICES = 7
MIG_MEMORY_SLICES = 8
#: Autoscaler: seconds between the decision to add replicas and their launch (metrics window +
#: control loop; Kubernetes HPA syncs every 15 s over a 60 s window; assumption, 60 s).
AUTOSCALE_DECISION_LAG_S = 60.0
#: Autoscaler: seconds a replica stays idle before it is removed (HPA's default scale-down
#: stabilisation window is 300 s).
SCALE_DOWN_DELAY_S = 300.0
#: Built-in diurnal profile: relative hourly load (mean 1), a day-time peak at 14:00 and a
#: night trough of a fifth of the peak; an assumption shaped like public request traces
#: (Azure LLM inference trace 2023), to be replaced by ``--load-profile FILE``.
DIURNAL_RELATIVE_LOAD = np.array(
    [0.35, 0.3, 0.27, 0.26, 0.28, 0.35, 0.5, 0.75, 1.05, 1.3, 1.45, 1.55,
     1.6, 1.62, 1.63, 1.6, 1.52, 1.4, 1.25, 1.1, 0.95, 0.8, 0.62, 0.45]
)  # fmt: skip
DIURNAL_RELATIVE_LOAD = DIURNAL_RELATIVE_LOAD / DIURNAL_RELATIVE_LOAD.mean()


# ----------------------------------------------------------------------------- disaggregation
@dataclass(frozen=True)
class PoolPlan:
    """One serving layout: aggregated replicas, or prefill and decode pools.

    Attributes
    ----------
    mode : str
        ``aggregated`` or ``disaggregated``.
    prefill_replicas, decode_replicas : int
        Replicas per pool (aggregated: all in ``decode_replicas``, prefill 0).
    gpus : int
        GPUs in all pools.
    ttft_s, tpot_s : float
        Mean TTFT (prefill + queueing + KV transfer) and TPOT. [s]
    kv_transfer_s : float
        Time to move one prompt's KV cache from the prefill to the decode pool. [s]
    requests_per_s : float
        Sustainable request rate of the layout. [requests/s]
    usd_per_h : float
        Price of all its GPUs. [USD/h]
    meets_slo : bool
        Whether the TTFT and TPOT objectives hold at the load.
    """

    mode: str
    prefill_replicas: int
    decode_replicas: int
    gpus: int
    ttft_s: float
    tpot_s: float
    kv_transfer_s: float
    requests_per_s: float
    usd_per_h: float
    meets_slo: bool

    def to_json(self) -> dict[str, Any]:
        """Return the plan as a JSON-ready dict."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def kv_transfer_s(
    kv_bytes: ArrayLike, bandwidth_gb_s: float, latency_us: float, efficiency: float, lanes: int
) -> F64:
    r"""Time to send a prompt's KV cache between pools over ``lanes`` parallel links. [s].

    Notes
    -----
    :math:`t = \alpha + K / (n\,\eta\,B)` (alpha-beta point-to-point, :func:`comms.p2p_time_s`),
    each of the ``n`` tensor-parallel ranks sending its share.
    """
    k = np.asarray(kv_bytes, dtype=np.float64) / max(lanes, 1)
    return np.asarray(comms.p2p_time_s(k, bandwidth_gb_s, latency_us, efficiency), dtype=np.float64)


def _decode_rate(
    it: IterationModel, i: float, o: float, b_max: int, slo_tpot_s: float | None
) -> tuple[float, float]:
    """Largest decode-only batch meeting the TPOT objective: (requests/s, tpot_s) of a replica."""
    b = np.arange(1, b_max + 1, dtype=np.float64)
    step = it.decode_step_s(b, i + o / 2.0)
    ok = step <= slo_tpot_s if slo_tpot_s is not None else np.ones_like(b, dtype=bool)
    if not ok.any():
        return 0.0, float(step[0])
    j = int(np.nonzero(ok)[0][-1])
    return float(b[j] / (o * step[j])), float(step[j])


def _aggregated_rate(
    it: IterationModel, i: float, o: float, c: float, b_max: int, slo_tpot_s: float | None
) -> tuple[float, float, float]:
    """Largest continuous batch meeting the TPOT objective: (requests/s, tpot_s, ttft_s)."""
    b = np.arange(1, b_max + 1, dtype=np.float64)
    step = continuous_batching_step(it, b, i, o, c)
    ok = step <= slo_tpot_s if slo_tpot_s is not None else np.ones_like(b, dtype=bool)
    j = int(np.nonzero(ok)[0][-1]) if ok.any() else 0
    ttft = float(it.iteration_s(b[j], b[j] * (i + o / 2.0), i - c, prefill_pairs(i - c, c), 1.0))
    return (float(b[j] / (o * step[j])) if ok.any() else 0.0), float(step[j]), ttft


# 85 code lines (over the 80-line guideline, on purpose): one search over prefill:decode
# layouts that sizes both pools and reports the chosen one; split, the two pools' sizing would
# be read apart.
def plan_pools(
    it: IterationModel,
    *,
    input_tokens: float,
    output_tokens: float,
    max_batch: int,
    max_batched_tokens: int,
    gpus_per_replica: int,
    usd_per_gpu_hour: float,
    kv_bytes_per_token: float,
    fabric_bandwidth_gb_s: float,
    fabric_latency_us: float,
    fabric_efficiency: float,
    qps: float | None = None,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    prefix_cache_hit_rate: float = 0.0,
    layout: tuple[int, int] | None = None,
    max_pool_replicas: int = 64,
) -> dict[str, Any]:
    r"""Compare aggregated serving with prefill/decode disaggregation and pick the cheaper.

    Parameters
    ----------
    it : IterationModel
        Iteration model of one replica (the same shape serves either pool).
    input_tokens, output_tokens : float
        Mean lengths. [tokens]
    max_batch, max_batched_tokens : int
        Running sequences and tokens per iteration of one replica.
    gpus_per_replica : int
        ``tp x pp``.
    usd_per_gpu_hour : float
        Price of one GPU. [USD/h]
    kv_bytes_per_token : float
        KV bytes per token of one replica (all ranks). [B]
    fabric_bandwidth_gb_s, fabric_latency_us, fabric_efficiency : float
        The link between pools (scale-out fabric of the system).
    qps : float, optional
        Load to serve (default: the throughput of one decode replica). [requests/s]
    slo_ttft_s, slo_tpot_s : float, optional
        Mean-latency objectives. [s]
    prefix_cache_hit_rate : float
        Share of prompt tokens reused. [0-1)
    layout : (int, int), optional
        A fixed ``P x D`` layout (prefill replicas, decode replicas) instead of the search.
    max_pool_replicas : int
        Search bound per pool.

    Returns
    -------
    dict
        ``chosen`` (``aggregated`` or ``disaggregated``), ``aggregated`` and ``disaggregated``
        (:class:`PoolPlan` as dicts), ``prefill_to_decode_ratio`` and ``kv_transfer_s``.

    Notes
    -----
    Prefill pool: batches of :math:`n = \lfloor N/(I-c) \rfloor` prompts in :math:`S_p`;
    TTFT = M/D/1 wait at service time :math:`S_p/n` + one prompt's prefill + KV transfer.
    Decode pool: decode-only iterations at the largest batch whose step meets the TPOT
    objective (no prefill
    interference, DistServe [1]_, Splitwise [2]_). Aggregated: continuous batching with chunked
    prefill at the largest batch meeting the objective. Each layout is sized for ``qps`` and
    priced by its GPUs; the cheaper layout meeting the objectives is chosen.
    """
    i, o = float(input_tokens), float(output_tokens)
    c = float(cached_prompt_tokens(i, prefix_cache_hit_rate))
    n = max(int(max_batched_tokens // max(i - c, 1.0)), 1)
    s_p = float(it.iteration_s(0.0, 0.0, n * (i - c), n * prefill_pairs(i - c, c), n))
    rate_p = n / s_p
    xfer = float(
        kv_transfer_s(
            kv_bytes_per_token * i,
            fabric_bandwidth_gb_s,
            fabric_latency_us,
            fabric_efficiency,
            it.tp * it.pp,
        )
    )
    rate_d, tpot_d = _decode_rate(it, i, o, max_batch, slo_tpot_s)
    rate_a, tpot_a, ttft_a0 = _aggregated_rate(it, i, o, c, max_batch, slo_tpot_s)
    load = qps if qps is not None else max(rate_d, rate_a)
    price = gpus_per_replica * usd_per_gpu_hour

    # aggregated: fewest replicas whose utilisation keeps the prefill wait within the TTFT SLO
    agg: PoolPlan | None = None
    if rate_a > 0:
        for r in range(max(math.ceil(load / rate_a), 1), max_pool_replicas * 2 + 1):
            wait = float(md1_mean_wait_s(load / r, 1.0 / rate_a))
            ttft = ttft_a0 + (wait if math.isfinite(wait) else math.inf)
            ok = slo_ttft_s is None or ttft <= slo_ttft_s
            if ok or r == max_pool_replicas * 2:
                agg = PoolPlan("aggregated", 0, r, r * gpus_per_replica, ttft, tpot_a, 0.0,
                               r * rate_a, r * price, ok and math.isfinite(ttft))  # fmt: skip
                break
    # disaggregated: vectorised over (x prefill, y decode) replicas
    x = np.arange(1, max_pool_replicas + 1, dtype=np.float64)[:, None]
    y = np.arange(1, max_pool_replicas + 1, dtype=np.float64)[None, :]
    if layout is not None:
        x = np.array([[float(layout[0])]])
        y = np.array([[float(layout[1])]])
    # a prompt waits behind the queue (served at the batched rate) and then runs its own prefill
    s_1 = float(it.iteration_s(0.0, 0.0, i - c, prefill_pairs(i - c, c), 1.0))
    ttft_d = md1_mean_wait_s(load / x, s_p / n) + s_1 + xfer
    cap = np.minimum(x * rate_p, y * rate_d) + 0.0 * (x + y)
    feasible = (cap >= load) & np.isfinite(ttft_d)
    if slo_ttft_s is not None:
        feasible &= ttft_d <= slo_ttft_s
    feasible &= rate_d > 0
    gpus = (x + y) * gpus_per_replica
    score = np.where(feasible, gpus, np.inf)
    dis: PoolPlan | None = None
    k = np.unravel_index(int(np.argmin(score)), score.shape) if layout is None else (0, 0)
    xi, yi = float(x[k[0], 0]), float(y[0, k[1]])
    ttft_k = float(np.broadcast_to(ttft_d, score.shape)[k])
    dis = PoolPlan("disaggregated", int(xi), int(yi), int((xi + yi) * gpus_per_replica), ttft_k,
                   tpot_d, xfer, float(min(xi * rate_p, yi * rate_d)),
                   (xi + yi) * price, bool(feasible[k]))  # fmt: skip
    cands = [p for p in (agg, dis) if p is not None and p.meets_slo]
    chosen = min(cands, key=lambda p: p.usd_per_h) if cands else (agg or dis)
    return {
        "chosen": chosen.mode,
        "load_requests_per_s": load,
        "prefill_to_decode_ratio": f"{dis.prefill_replicas}:{dis.decode_replicas}",
        "kv_transfer_s": xfer,
        "prefill_requests_per_s_per_replica": rate_p,
        "decode_requests_per_s_per_replica": rate_d,
        "aggregated": agg.to_json() if agg else None,
        "disaggregated": dis.to_json(),
    }


# ----------------------------------------------------------------------------- autoscaling
def hourly_load(profile: str | ArrayLike, mean_qps: float) -> F64:
    """Return 24 hourly arrival rates: ``diurnal`` scaled to ``mean_qps``, or 24 given values.

    Values are in requests/s.
    """
    if isinstance(profile, str):
        if profile != "diurnal":
            raise InputError("load_profile", profile, "'diurnal' or a CSV file of hourly qps")
        return np.asarray(DIURNAL_RELATIVE_LOAD * mean_qps, dtype=np.float64)
    q = np.asarray(profile, dtype=np.float64)
    if q.shape != (24,) or not np.all(np.isfinite(q)) or np.any(q < 0):
        raise InputError("load_profile", f"{q.size} values", "24 hourly rates >= 0")
    return q


def autoscale_day(
    qps_by_hour: ArrayLike,
    requests_per_s_per_replica: float,
    *,
    target_utilization: float = 0.7,
    min_replicas: int = 0,
    max_replicas: int = 64,
    cold_start_s: float = 0.0,
    decision_lag_s: float = AUTOSCALE_DECISION_LAG_S,
    scale_down_delay_s: float = SCALE_DOWN_DELAY_S,
    resolution_s: float = 1.0,
) -> dict[str, Any]:
    r"""Simulate a day of a target-utilisation autoscaler with scale-up lag and cold start.

    Parameters
    ----------
    qps_by_hour : array_like
        24 hourly arrival rates (piecewise constant). [requests/s]
    requests_per_s_per_replica : float
        Capacity of one replica. [requests/s]
    target_utilization : float
        Desired busy share: ``desired = ceil(load / (target x capacity))``. [0-1]
    min_replicas, max_replicas : int
        Bounds (``min_replicas = 0``: scale to zero).
    cold_start_s : float
        Provisioning + weight loading + warm-up of a new replica (it is billed from launch). [s]
    decision_lag_s : float
        Delay before the autoscaler launches replicas. [s]
    scale_down_delay_s : float
        Time a surplus replica lingers before removal. [s]
    resolution_s : float
        Simulation step. [s]

    Returns
    -------
    dict
        ``replica_hours`` (billed, per day), ``peak_replicas``, ``mean_replicas``,
        ``unserved_requests`` (arrivals beyond the ready capacity, per day),
        ``unserved_fraction``, ``replicas_by_hour`` (mean billed replicas each hour),
        ``cold_starts`` (replicas launched per day).

    Notes
    -----
    At each step the desired count is :math:`\lceil \lambda / (u\,\mu) \rceil` clipped to the
    bounds; replicas are launched ``decision_lag_s`` after the need appears and serve
    ``cold_start_s`` later; surplus replicas are removed after ``scale_down_delay_s``. Billed
    replicas = ready + starting.
    """
    q = np.asarray(qps_by_hour, dtype=np.float64)
    if requests_per_s_per_replica <= 0:
        raise InputError("autoscale", requests_per_s_per_replica, "a replica with capacity > 0")
    if not 0 < target_utilization <= 1:
        raise InputError("autoscale.target-util", target_utilization, "a fraction in (0, 1]")
    if not 0 <= min_replicas <= max_replicas:
        raise InputError("autoscale.min", min_replicas, f"0 <= min <= max ({max_replicas})")
    steps = round(SECONDS_PER_DAY / resolution_s)
    t = np.arange(steps) * resolution_s
    load = q[np.minimum((t // SECONDS_PER_HOUR).astype(np.int64), q.size - 1)]
    desired = np.clip(
        np.ceil(load / (target_utilization * requests_per_s_per_replica) - 1e-9),
        min_replicas, max_replicas,
    ).astype(np.int64)  # fmt: skip
    lag = round(decision_lag_s / resolution_s)
    boot = round(cold_start_s / resolution_s)
    down = round(scale_down_delay_s / resolution_s)
    # launches: the desired count seen `lag` steps ago; a replica is billed from launch
    seen = np.concatenate([np.full(lag, desired[0]), desired[: steps - lag]]) if lag else desired
    billed = np.empty(steps, dtype=np.int64)
    ready = np.empty(steps, dtype=np.int64)
    launches: list[tuple[int, int]] = []  # (ready_at_step, count)
    n_ready = int(desired[0])
    n_boot = 0
    surplus_since = -1
    started = 0
    seen_l = seen.tolist()
    for s in range(steps):
        while launches and launches[0][0] <= s:
            n_ready += launches[0][1]
            n_boot -= launches[0][1]
            launches.pop(0)
        want = seen_l[s]
        if want > n_ready + n_boot:
            add = want - n_ready - n_boot
            launches.append((s + boot, add))
            n_boot += add
            started += add
            surplus_since = -1
        elif want < n_ready:
            if surplus_since < 0:
                surplus_since = s
            elif s - surplus_since >= down:
                n_ready = max(want, 0)
                surplus_since = -1
        else:
            surplus_since = -1
        ready[s] = n_ready
        billed[s] = n_ready + n_boot
    served = np.minimum(load, ready * requests_per_s_per_replica)
    unserved = float(np.sum(load - served) * resolution_s)
    total = float(np.sum(load) * resolution_s)
    per_hour = billed.reshape(24, -1).mean(axis=1) if steps % 24 == 0 else billed[:24]
    return {
        "replica_hours": float(billed.sum() * resolution_s / SECONDS_PER_HOUR),
        "peak_replicas": int(billed.max()),
        "mean_replicas": float(billed.mean()),
        "unserved_requests": unserved,
        "unserved_fraction": unserved / total if total > 0 else 0.0,
        "replicas_by_hour": [float(x) for x in per_hour],
        "cold_starts": started,
    }


def autoscaled_month_usd(replica_hours_per_day: float, usd_per_replica_hour: float) -> float:
    """Cost of a month of days like the simulated one: replica-hours x price x days. [USD]."""
    return replica_hours_per_day * usd_per_replica_hour * DAYS_PER_MONTH


def parse_autoscale(spec: str) -> dict[str, float]:
    """Parse ``target-util=0.7,min=0,max=64`` (any subset) into autoscaler settings."""
    out: dict[str, float] = {"target-util": 0.7, "min": 0.0, "max": 64.0}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, _, val = part.partition("=")
        if key not in out:
            raise InputError("--autoscale", part, "keys target-util, min, max (k=v,...)")
        try:
            out[key] = float(val)
        except ValueError:
            raise InputError("--autoscale", part, f"a number for {key}") from None
    if not 0 < out["target-util"] <= 1:
        raise InputError("--autoscale", out["target-util"], "target-util in (0, 1]")
    if not (0 <= out["min"] <= out["max"] <= MAX_REPLICAS) or out["max"] < 1:
        raise InputError("--autoscale", spec, f"0 <= min <= max <= {MAX_REPLICAS:,} and max >= 1")
    return out


# ----------------------------------------------------------------------------- MIG
@dataclass(frozen=True)
class MigSlice:
    """A MIG instance of one GPU (NVIDIA MIG user guide [3]_).

    Attributes
    ----------
    profile : str
        ``Ng.Mgb``.
    compute_fraction : float
        Share of the SMs: ``N / 7``. [0-1]
    memory_fraction : float
        Share of memory, L2 and memory bandwidth, in eighths. [0-1]
    memory_gb : float
        Memory of the slice. [GB]
    instances_per_gpu : int
        Slices of this profile one GPU holds; the slice is priced at ``1 / instances_per_gpu``
        of the GPU.
    """

    profile: str
    compute_fraction: float
    memory_fraction: float
    memory_gb: float
    instances_per_gpu: int


#: Accelerator id prefixes of GPUs with MIG (NVIDIA MIG user guide, "Supported GPUs").
MIG_GPU_PREFIXES = ("a100", "a30", "h100", "h200", "h800", "h20", "b200", "gb200")


#: A MIG profile name: compute slices (1-7) and memory, ``Ng.Mgb``.
MIG_PROFILE_PATTERN = r"([1-7])g\.(\d+)gb"


def mig_supported(accelerator_id: str) -> bool:
    """Return whether an accelerator (by catalog id) can be split into MIG instances."""
    return accelerator_id.lower().startswith(MIG_GPU_PREFIXES)


def mig_slice(profile: str, gpu_memory_gb: float, field: str = "--mig") -> MigSlice:
    r"""Resolve a MIG profile such as ``1g.10gb`` against a GPU's memory.

    Notes
    -----
    Compute slices :math:`N` of 7; memory slices :math:`m = \mathrm{round}(8 M / M_{gpu})` of 8;
    instances per GPU :math:`\lfloor \min(7/N, 8/m) \rfloor` (e.g. 1g.10gb on an 80 GB GPU: 7,
    3g.40gb: 2, 4g.40gb: 1, as the user guide's tables list).
    """
    m = re.fullmatch(MIG_PROFILE_PATTERN, profile.strip().lower())
    if m is None:
        raise InputError(field, profile, "a MIG profile like 1g.10gb, 2g.20gb, 3g.40gb")
    n, mem = int(m.group(1)), float(m.group(2))
    slices = round(MIG_MEMORY_SLICES * mem / gpu_memory_gb)
    if not 1 <= slices <= MIG_MEMORY_SLICES:
        raise InputError(
            field, profile, f"a memory size between 1/8 and all of the GPU's {gpu_memory_gb:g} GB"
        )
    inst = int(min(MIG_COMPUTE_SLICES / n, MIG_MEMORY_SLICES / slices) + 1e-9)
    return MigSlice(
        profile, n / MIG_COMPUTE_SLICES, slices / MIG_MEMORY_SLICES,
        gpu_memory_gb * slices / MIG_MEMORY_SLICES, max(inst, 1),
    )  # fmt: skip


__all__ = [
    "MigSlice",
    "PoolPlan",
    "autoscale_day",
    "autoscaled_month_usd",
    "fractional_accelerator",
    "hourly_load",
    "kv_transfer_s",
    "mig_accelerator",
    "mig_slice",
    "mig_supported",
    "parse_autoscale",
    "parse_layout",
    "plan_pools",
    "read_load_profile",
    "service_plans",
    "time_slice_accelerator",
]


def mig_accelerator(acc: Any, profile: str, field: str = "--mig") -> tuple[Any, int]:
    """Return a MIG slice of ``acc`` as an accelerator and the slices one GPU holds.

    SMs (peak rates), memory, bandwidth and TDP are scaled by the slice's shares (NVIDIA MIG
    user guide [3]_); a slice is priced at ``1 / instances`` of the GPU by the caller.
    """
    if not mig_supported(acc.id):
        raise InputError(
            field, profile, f"a GPU with MIG (A100, A30, H100, H200, B200), not {acc.id}"
        )
    sl = mig_slice(profile, float(acc.memory_gb), field)
    upd = {
        "id": f"{acc.id}-mig-{sl.profile}@x{sl.instances_per_gpu}",
        "form_factor": f"{GPU_SHARE_FORM_FACTOR}: MIG {sl.profile} of {acc.id}",
        "memory_gb": sl.memory_gb,
        "hbm_bandwidth_gb_s": acc.hbm_bandwidth_gb_s * sl.memory_fraction,
        "peak_tflops": {k: x * sl.compute_fraction for k, x in acc.peak_tflops.items()},
        # the measured matmul ceiling scales with the SMs too (its ratio to the peak is kept)
        "matmul_tflops": {k: x * sl.compute_fraction for k, x in acc.matmul_tflops.items()},
        "tdp_w": None if acc.tdp_w is None else acc.tdp_w / sl.instances_per_gpu,
        "idle_w": None if acc.idle_w is None else acc.idle_w / sl.instances_per_gpu,
        "power_limit_w": (
            None if acc.power_limit_w is None else acc.power_limit_w / sl.instances_per_gpu
        ),
    }
    return acc.model_copy(update=upd), sl.instances_per_gpu


#: Accelerator vendors whose GPUs the Kubernetes device plugin time-slices (NVIDIA [4]_).
TIME_SLICE_VENDORS = ("nvidia",)


def time_slice_accelerator(
    acc: Any, replicas: int, field: str = "--time-slice", contended: bool = True
) -> Any:
    r"""Return one of ``replicas`` time-slicing shares of a GPU as an accelerator.

    Notes
    -----
    Time-slicing [4]_ interleaves the replicas' contexts on the whole GPU: a context runs alone
    in its slice, at the full peak rates and bandwidth, and waits while the others run. The
    figures here are the *contended* ones, every replica busy: each progresses at
    :math:`1/n` of the GPU's rates (peaks, matmul ceilings, HBM bandwidth), so an iteration takes
    :math:`n` times as long. There is no memory isolation: each engine must be capped to its
    :math:`1/n` of the memory (e.g. vLLM ``--gpu-memory-utilization``), and it draws (and is
    billed) :math:`1/n` of the GPU's power and price. An uncontended replica runs faster, by up
    to :math:`n` times, but nothing guarantees it. Context-switch time is not modelled (no
    published figure; assumption).

    Parameters
    ----------
    acc : Accelerator
        A GPU (or a MIG slice of one, which can be time-sliced too).
    replicas : int
        Replicas sharing the GPU, :math:`n \ge 1` (1: the whole GPU).
    field : str
        Field named in errors.
    contended : bool
        ``True``: every replica busy, rates divided by :math:`n` (the guaranteed figure).
        ``False``: this replica alone on the GPU, full rates, only the memory divided (the best
        case; id ``<gpu>-ts<n>-alone``).

    Returns
    -------
    Accelerator
        The share, with id ``<gpu>-ts<n>``.

    Raises
    ------
    InputError
        When ``replicas`` is not an integer >= 1, or the accelerator is not a GPU that the
        device plugin time-slices.
    """
    if isinstance(replicas, bool) or not isinstance(replicas, (int, np.integer)) or replicas < 1:
        raise InputError(field, replicas, "an integer >= 1: replicas sharing one GPU")
    n = int(replicas)
    if n == 1:
        return acc
    if acc.kind != "gpu" or acc.vendor.lower() not in TIME_SLICE_VENDORS:
        raise InputError(
            field, n, f"an NVIDIA GPU (Kubernetes device-plugin time-slicing), not {acc.id}"
        )

    def share(x: float | None) -> float | None:
        return None if x is None else x / n

    form = f"{GPU_SHARE_FORM_FACTOR}: time-slicing 1/{n} of {acc.id}"
    if not contended:
        upd_alone = {"id": f"{acc.id}-ts{n}-alone", "memory_gb": acc.memory_gb / n,
                     "form_factor": form}  # fmt: skip
        return acc.model_copy(update=upd_alone)
    upd = {
        "id": f"{acc.id}-ts{n}",
        "form_factor": form,
        "memory_gb": acc.memory_gb / n,
        "hbm_bandwidth_gb_s": acc.hbm_bandwidth_gb_s / n,
        "peak_tflops": {k: x / n for k, x in acc.peak_tflops.items()},
        "matmul_tflops": {k: x / n for k, x in acc.matmul_tflops.items()},
        "tdp_w": share(acc.tdp_w),
        "power_limit_w": share(acc.power_limit_w),
        "idle_w": share(acc.idle_w),
    }
    return acc.model_copy(update=upd)


def fractional_accelerator(
    acc: Any, mig: str | None, time_slice: int | None, field_prefix: str = "--"
) -> tuple[Any, int]:
    """Return the share of a GPU one replica runs on and the shares one GPU holds.

    A MIG slice (:func:`mig_accelerator`), time-sliced by ``time_slice`` replicas
    (:func:`time_slice_accelerator`; the device plugin time-slices MIG devices too), or the
    whole GPU. Every surface (``aitco infer``, ``compare``, the serving sweep) resolves a
    fractional replica here; the price of a share is the GPU's over the shares it holds.

    Parameters
    ----------
    acc : Accelerator
        The GPU.
    mig : str or None
        MIG profile, e.g. ``1g.10gb``.
    time_slice : int or None
        Replicas sharing the GPU (or the MIG slice) by time-slicing.
    field_prefix : str
        ``--`` (CLI flags ``--mig``, ``--time-slice``) or ``workload.`` (scenario fields).

    Returns
    -------
    tuple
        ``(accelerator, shares_per_gpu)``.
    """
    cli = field_prefix == "--"
    shares = 1
    if mig is not None:
        acc, shares = mig_accelerator(acc, mig, f"{field_prefix}mig")
    if time_slice is not None:
        ts_field = "--time-slice" if cli else f"{field_prefix}time_slice"
        acc = time_slice_accelerator(acc, time_slice, ts_field)
        shares *= int(time_slice)
    return acc, shares


def parse_layout(spec: str, field: str = "--disaggregate") -> tuple[int, int] | None:
    """Parse ``auto`` (None: search) or ``PxD`` (prefill and decode replicas)."""
    if spec == "auto":
        return None
    p, sep, d = spec.lower().partition("x")
    if not (sep and p.isdigit() and d.isdigit() and 1 <= int(p) <= MAX_REPLICAS >= int(d) >= 1):
        raise InputError(
            field, spec, f"auto, or PxD with 1 <= P, D <= {MAX_REPLICAS:,} replicas (e.g. 2x1)"
        )
    return int(p), int(d)


def read_load_profile(path: str, field: str = "--load-profile") -> list[float]:
    """Read 24 hourly rates from a CSV with a ``qps`` column (an ``hour`` column is optional)."""
    from pathlib import Path

    p = Path(path)
    if not os.path.lexists(p):
        raise InputError(field, path, "diurnal or an existing CSV file")
    with open_input(p, field=field, newline="") as fh:  # a regular file only
        rows = list(itertools.islice(csv.DictReader(fh), LOAD_PROFILE_HOURS + 1))
    try:
        q = [float(r["qps"]) for r in rows]
    except (KeyError, TypeError, ValueError):
        raise InputError(field, path, "a CSV with a numeric 'qps' column", file=path) from None
    if len(q) != 24:
        found = f"{len(q)}" if len(q) <= LOAD_PROFILE_HOURS else f"more than {LOAD_PROFILE_HOURS}"
        raise InputError(field, path, f"24 hourly rows (found {found})", file=path)
    return q


def service_plans(
    values: dict[str, Any],
    it: IterationModel,
    system: Any,
    usd_per_gpu_hour: float | None,
    *,
    input_tokens: float,
    output_tokens: float,
    qps: float | None,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
    disaggregate: str | None = None,
    load_profile: str | Sequence[float] | None = None,
    autoscale: str | None = None,
    prefix_cache_hit_rate: float = 0.0,
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY,
    field_prefix: str = "--",
) -> dict[str, Any]:
    """Disaggregation plan and autoscaled day of one estimated service.

    ``aitco infer``, compare, sweep and optimize all call this one function.

    Parameters
    ----------
    values : dict
        The values of :func:`aitco.perf.inference.estimate_inference` (``tp``, ``pp``, ``ep``,
        ``max_batch_per_replica``, ``max_batched_tokens``, ``cold_start_s``).
    it : IterationModel
        The estimate's iteration model.
    system : System
        Its system (the fabric between prefill and decode pools).
    usd_per_gpu_hour : float or None
        Price of one GPU (None: plans are not priced). [USD/h]
    disaggregate : str, optional
        ``auto`` or ``PxD`` (:func:`plan_pools`).
    load_profile : str or sequence of float, optional
        ``diurnal``, a CSV of 24 hourly rates, or the 24 rates themselves. [requests/s]
    autoscale : str, optional
        ``target-util=..,min=..,max=..``
        (:func:`autoscale_day`). With ``diurnal``, ``qps`` is the day's mean rate.
    efficiency : EfficiencyParams
        Link efficiencies of the KV transfer between pools.
    field_prefix : str
        How errors name the fields (``--`` for flags, ``workload.`` for scenario keys).

    Returns
    -------
    dict
        ``disaggregation`` (:func:`plan_pools`) and ``autoscale`` (:func:`autoscale_day` plus
        ``requests_per_s_per_replica``, ``usd_per_month``, ``fixed_replicas_usd_per_month``,
        ``qps_by_hour``), each present only when asked for.
    """

    def name(key: str) -> str:
        return field_prefix + (key.replace("_", "-") if field_prefix == "--" else key)

    out: dict[str, Any] = {}
    i, o = float(input_tokens), float(output_tokens)
    per = int(values["tp"]) * int(values["pp"]) * int(values.get("ep", 1) or 1)
    price = usd_per_gpu_hour
    if disaggregate is not None:
        layout = parse_layout(disaggregate, name("disaggregate"))
        bw, lat, eff = comms.group_link(
            system, 2, system.devices_per_node, efficiency.intra_node_link,
            efficiency.scale_out_link,
        )  # fmt: skip
        out["disaggregation"] = plan_pools(
            it, input_tokens=i, output_tokens=o, max_batch=int(values["max_batch_per_replica"]),
            max_batched_tokens=int(values["max_batched_tokens"]), gpus_per_replica=per,
            usd_per_gpu_hour=price or 0.0, kv_bytes_per_token=it.kv_bytes_per_token * it.tp,
            fabric_bandwidth_gb_s=float(bw), fabric_latency_us=float(lat),
            fabric_efficiency=float(eff), qps=qps,
            slo_ttft_s=optional_ms_to_s(slo_ttft_ms),
            slo_tpot_s=optional_ms_to_s(slo_tpot_ms),
            prefix_cache_hit_rate=prefix_cache_hit_rate, layout=layout,
        )  # fmt: skip
    if load_profile is not None or autoscale is not None:
        prof = "diurnal" if load_profile is None else load_profile
        if isinstance(prof, str) and prof == "diurnal" and qps is None:
            raise InputError(name("load_profile"), prof, f"{name('qps')} as the day's mean rate")
        if isinstance(prof, str) and prof != "diurnal":  # a CSV path (the CLI's doors only)
            prof = read_load_profile(prof, name("load_profile"))
        hourly = hourly_load(prof, qps or 0.0)
        a = parse_autoscale(autoscale or "")
        cached = float(cached_prompt_tokens(i, prefix_cache_hit_rate))
        cap = serving.max_request_rate(it, i, o, int(values["max_batch_per_replica"]), cached)
        day = autoscale_day(
            hourly, cap, target_utilization=a["target-util"], min_replicas=int(a["min"]),
            max_replicas=int(a["max"]), cold_start_s=float(values["cold_start_s"]),
        )  # fmt: skip
        day["requests_per_s_per_replica"] = cap
        day["gpus_per_replica"] = per
        day["usd_per_month"] = (
            None if price is None else autoscaled_month_usd(day["replica_hours"], per * price)
        )
        day["fixed_replicas_usd_per_month"] = (
            None if price is None
            else autoscaled_month_usd(24.0 * day["peak_replicas"], per * price)
        )  # fmt: skip
        day["qps_by_hour"] = [float(x) for x in hourly]
        out["autoscale"] = day
    return out

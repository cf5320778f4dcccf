"""Vectorised search of parallel training plans: every candidate priced in one numpy call.

Candidates are the cross product of tensor, pipeline, context and expert parallel degrees
(divisors of the device count that the model allows), ZeRO stage, micro-batch, recomputation
and pipeline interleaving; invalid combinations are masked out, all others are evaluated at once
by :func:`aitco.perf.training_model.evaluate_plans`, and the fastest plan that fits in memory wins.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aitco.catalog.schema import System
from aitco.errors import PlanError
from aitco.perf.efficiency import EfficiencyParams
from aitco.perf.flops import ModelShape
from aitco.perf.parallelism import RECOMPUTE_CODES
from aitco.perf.training_model import HardwareShape, PublishedPractice, evaluate_plans

#: Largest degrees tried (beyond these, published runs do not go and collectives stop scaling).
MAX_TP = 64
MAX_CP = 32
MICRO_BATCHES = (1, 2, 4, 8, 16, 32, 64)
#: Model chunks per pipeline stage tried (Megatron needs them to split the stage's layers
#: evenly, so every count up to 8 is tried, not only powers of two).
VIRTUAL_STAGES = (1, 2, 3, 4, 5, 6, 7, 8)
#: Layers the first and last pipeline stages may each carry fewer than the others (Llama 3 405B:
#: 126 layers on 16 stages of 8, one fewer at each end, arXiv 2407.21783 Sec. 3.3.2; Megatron-Core
#: ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers``).
UNEVEN_END_LAYERS = 1
ZERO_STAGES = (0, 1, 2, 3)
PLAN_KEYS = (
    "tp", "pp", "cp", "ep", "dp", "zero", "micro_batch", "recompute", "vp", "recompute_fraction",
    "ep_comm_overlap", "dualpipe",
)  # fmt: skip
#: Shares of the layers fully recomputed tried with ``recompute="full"``.
RECOMPUTE_FRACTIONS = (0.25, 0.5, 0.75, 1.0)
#: Candidates evaluated per numpy pass: blocks this size keep the ~100 temporaries in the CPU
#: cache, about 3x faster than one pass over a million-element array (benchmarks/).
CHUNK = 16384


def evaluate_chunked(plans: dict[str, NDArray[Any]], **kw: Any) -> dict[str, NDArray[Any]]:
    """:func:`aitco.perf.training_model.evaluate_plans` over ``plans`` in cache-sized blocks.

    Parameters
    ----------
    plans : dict of str to ndarray
        Plan arrays of equal length (keys of :data:`PLAN_KEYS`).
    **kw
        The other arguments of :func:`~aitco.perf.training_model.evaluate_plans`.

    Returns
    -------
    dict of str to ndarray
        The outputs of ``evaluate_plans`` for every plan, in order.
    """
    n = int(next(iter(plans.values())).size)
    run: Any = evaluate_plans
    if n <= CHUNK:
        return dict(run(**kw, **plans))
    out: dict[str, NDArray[Any]] = {}
    for i in range(0, n, CHUNK):
        part = run(**kw, **{k: v[i : i + CHUNK] for k, v in plans.items()})
        if not out:
            out = {k: np.empty(n, dtype=np.asarray(a).dtype) for k, a in part.items()}
        for k, a in part.items():
            out[k][i : i + CHUNK] = a
    return out


def divisors(n: int) -> list[int]:
    """Positive divisors of ``n``, ascending."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def candidate_plans(
    ms: ModelShape,
    gpus: int,
    seq_len: int,
    global_batch: int,
    fixed: dict[str, Any] | None = None,
) -> dict[str, NDArray[Any]]:
    """All valid plans as flat arrays (one entry per candidate).

    Parameters
    ----------
    ms : ModelShape
        Model.
    gpus : int
        Devices. [count]
    seq_len : int
        Sequence length. [tokens]
    global_batch : int
        Sequences per step. [count]
    fixed : dict, optional
        Plan fields held at a given value (``tp``, ``pp``, ``cp``, ``ep``, ``dp``, ``zero``,
        ``micro_batch``, ``recompute`` as code, ``vp``, ``recompute_fraction``,
        ``ep_comm_overlap`` 0/1, ``dualpipe`` 0/1: DeepSeek's schedule, only on plans
        :func:`dualpipe_allowed` accepts) and ``min_zero`` (lowest ZeRO stage searched).
        EP overlap is off unless asked for (the one published MoE
        row, Megatron-Bridge DeepSeek-V3 on GB200, is 3% slow without it and 15% fast with it);
        asked for, only plans Megatron-Bridge accepts it on (:func:`ep_overlap_allowed`, or
        ``ep = 1`` where it is moot) are candidates.

    Returns
    -------
    dict of str to ndarray
        Keys of :data:`PLAN_KEYS`.
    """
    fx = {k: v for k, v in (fixed or {}).items() if v is not None}
    divs = np.array(divisors(gpus))

    def opts(key: str, default: Any) -> NDArray[Any]:
        return np.array([fx[key]]) if key in fx else np.asarray(default)

    # Megatron-LM/NeMo shard attention heads and KV groups over TP: TP divides both
    tp = opts("tp", divs[(divs <= MAX_TP) & (ms.n_heads % divs == 0) & (ms.kv_heads % divs == 0)])
    pp = opts("pp", divs[divs <= ms.n_layers])
    cp = opts("cp", divs[(divs <= MAX_CP) & ((seq_len % (2 * divs) == 0) | (divs == 1))])
    ep = opts("ep", divs[ms.n_experts % divs == 0] if ms.moe_layers else np.array([1]))
    zero = opts("zero", ZERO_STAGES)
    mb = opts("micro_batch", MICRO_BATCHES)
    rc = opts("recompute", list(RECOMPUTE_CODES.values()))
    vp = opts("vp", VIRTUAL_STAGES)
    rf = opts("recompute_fraction", RECOMPUTE_FRACTIONS)
    grids = np.meshgrid(tp, pp, cp, ep, zero, mb, rc, vp, rf, indexing="ij")
    t, p, c, e, z, b, r, v, f = (g.ravel() for g in grids)
    tpc = t * p * c
    ok = gpus % tpc == 0
    d = np.where(ok, gpus // np.maximum(tpc, 1), 0)
    if "dp" in fx:
        ok &= d == fx["dp"]
    ok &= d >= 1
    ok &= (d % e == 0) & (d >= e)
    ok &= b * d <= global_batch
    ok &= (r == 2) | (f == 1.0)  # a recompute share only means something with full recompute
    if "vp" in fx:  # an explicit interleaving may leave uneven stages
        ok &= (v == 1) | (p > 1)
    else:
        # interleaved 1F1B (Megatron --num-layers-per-virtual-pipeline-stage) needs the
        # layers split evenly over pp x vp model chunks, or evenly once the first and last
        # stages each give up UNEVEN_END_LAYERS
        even = (ms.n_layers % (p * v) == 0) | ((ms.n_layers + 2 * UNEVEN_END_LAYERS) % (p * v) == 0)
        ok &= (v == 1) | ((p > 1) & (p * v <= ms.n_layers) & even)
    # EP overlap only where asked for (like TP comm overlap) and where the framework allows it
    allowed = ep_overlap_allowed(e, p, v, r)
    epo = (allowed & bool(fx.get("ep_comm_overlap", 0))).astype(int)
    if fx.get("ep_comm_overlap"):
        ok &= allowed | (e == 1)
    dual = np.full(t.shape, int(bool(fx.get("dualpipe", 0))))
    if fx.get("dualpipe"):  # its own schedule: no interleaving; uneven stages are fine
        ok &= dualpipe_allowed(p, v, np.ceil(global_batch / np.maximum(b * d, 1)))
    ok &= z >= int(fx.get("min_zero", 0))  # e.g. ZeRO-Offload shards from stage 1 on
    return {
        "tp": t[ok],
        "pp": p[ok],
        "cp": c[ok],
        "ep": e[ok],
        "dp": d[ok],
        "zero": z[ok],
        "micro_batch": b[ok],
        "recompute": r[ok],
        "vp": v[ok],
        "recompute_fraction": f[ok].astype(float),
        "ep_comm_overlap": epo[ok],
        "dualpipe": dual[ok],
    }


def dualpipe_allowed(
    pp: NDArray[Any], vp: NDArray[Any], n_micro: NDArray[Any]
) -> NDArray[np.bool_]:
    """Plans DeepSeek's DualPipe can run.

    An even number of stages (the two directions pair them), no interleaving (each rank
    already holds two chunks) and at least ``pp`` micro-batches (deepseek-ai/DualPipe README;
    arXiv 2412.19437 Sec. 3.2.1).
    """
    return (pp >= 2) & (pp % 2 == 0) & (vp == 1) & (n_micro >= pp)


def ep_overlap_allowed(
    ep: NDArray[Any], pp: NDArray[Any], vp: NDArray[Any], recompute: NDArray[Any]
) -> NDArray[np.bool_]:
    """Plans on which Megatron-Bridge's EP all-to-all overlap can be enabled.

    ``expert_model_parallel_size > 1``, no full activation recompute, and with pipeline
    parallelism an interleaved schedule (``virtual_pipeline_model_parallel_size`` set): the
    constraints of ``overlap_moe_expert_parallel_comm`` (Megatron-Bridge, *MoE Expert-Parallel
    Overlap*, docs/training/communication-overlap.md).
    """
    return (ep > 1) & (recompute != RECOMPUTE_CODES["full"]) & ((pp == 1) | (vp > 1))


@lru_cache(maxsize=512)
def _candidates_memo(
    ms: ModelShape, gpus: int, seq_len: int, global_batch: int, fixed: tuple[Any, ...]
) -> dict[str, NDArray[Any]]:
    return candidate_plans(ms, gpus, seq_len, global_batch, dict(fixed))


def cached_candidate_plans(
    ms: ModelShape, gpus: int, seq_len: int, global_batch: int, fixed: dict[str, Any] | None
) -> dict[str, NDArray[Any]]:
    """:func:`candidate_plans`, remembered for repeated calls.

    The efficiency fit re-prices the same rows hundreds of times, and candidates do not depend
    on the efficiencies. The arrays returned are shared: callers must not modify them.
    """
    key = tuple(sorted((k, v) for k, v in (fixed or {}).items() if v is not None))
    return _candidates_memo(ms, int(gpus), int(seq_len), int(global_batch), key)


def search_plans(
    ms: ModelShape,
    hw: HardwareShape,
    system: System,
    *,
    gpus: int,
    seq_len: int,
    global_batch: int,
    precision: str,
    method: str,
    eff: EfficiencyParams,
    fixed: dict[str, Any] | None = None,
    optimizer: str = "adam",
    lora_params: float | None = None,
    tp_comm_overlap: bool = False,
    practice: PublishedPractice | None = None,
    attention_kernel: str = "flash",
    shard_devices: int | None = None,
    offload: str = "none",
    loss_kernel: str = "unfused",
    host_loop: str = "python",
    elementwise_kernels: str = "framework",
    gemm_level: str = "framework",
    activation_offload: bool = False,
    moe_capacity_factor: float | None = None,
    moe_pad_to_capacity: bool = False,
) -> tuple[dict[str, Any], dict[str, NDArray[Any]], int, int]:
    """Fastest plan that fits (or the smallest-memory one when none fits).

    With published ``practice`` (layouts of similar runs), the plan chosen is, among the plans
    that fit and whose throughput lies within the best plan's 80% interval (at least
    ``exp(eff.training_log_ratio_q10)`` of the best), the one closest to a published layout
    (:func:`practice_distance`); ties go to the faster.

    Returns
    -------
    plan : dict
        The chosen plan (ints; ``recompute`` as a code).
    results : dict of str to ndarray
        :func:`evaluate_plans` outputs for every candidate.
    n_candidates : int
        Candidates evaluated.
    index : int
        Position of the chosen plan in ``results``.
    """
    cands = cached_candidate_plans(ms, gpus, seq_len, global_batch, fixed)
    n = int(cands["tp"].size)
    fx = fixed or {}
    if n == 0 and fx.get("dualpipe"):
        no_dual = {k: v for k, v in fx.items() if k != "dualpipe"}
        if cached_candidate_plans(ms, gpus, seq_len, global_batch, no_dual)["tp"].size:
            raise PlanError(
                "--pipeline-schedule",
                "dualpipe",
                "an even pp >= 2, no interleaving (vp 1) and at least pp micro-batches per "
                "step: DualPipe's constraints",
                hint="use --pipeline-schedule 1f1b or change --pp/--vp/--global-batch",
            )
    rest = {k: v for k, v in fx.items() if k != "ep_comm_overlap"}
    # the layout is fine without EP overlap: the overlap's own constraints are what fails
    if (
        n == 0
        and (fixed or {}).get("ep_comm_overlap")
        and cached_candidate_plans(ms, gpus, seq_len, global_batch, rest)["tp"].size
    ):
        raise PlanError(
            "--ep-overlap",
            True,
            "a plan with ep > 1, no full recompute and, with pp > 1, an interleaved schedule "
            "(vp > 1 splitting the layers evenly): Megatron-Bridge's constraints",
            hint="drop --ep-overlap or change --pp/--ep/--recompute",
        )
    if n == 0:
        raise PlanError(
            "plan",
            {k: v for k, v in (fixed or {}).items() if v is not None} or "auto",
            f"a layout of {gpus} devices with micro_batch x dp <= the global batch of "
            f"{global_batch} sequences (tp | n_heads={ms.n_heads}, "
            f"pp <= n_layers={ms.n_layers})",
            hint="change --gpus or --global-batch",
        )
    res = evaluate_chunked(
        cands,
        ms=ms,
        hw=hw,
        system=system,
        seq_len=seq_len,
        global_batch=global_batch,
        gpus=gpus,
        precision=precision,
        method=method,
        eff=eff,
        optimizer=optimizer,
        lora_params=lora_params,
        tp_comm_overlap=tp_comm_overlap,
        attention_kernel=attention_kernel,
        shard_devices=shard_devices,
        offload=offload,
        loss_kernel=loss_kernel,
        host_loop=host_loop,
        elementwise_kernels=elementwise_kernels,
        gemm_level=gemm_level,
        activation_offload=activation_offload,
        moe_capacity_factor=moe_capacity_factor,
        moe_pad_to_capacity=moe_pad_to_capacity,
    )
    best = choose_plan(cands, res, eff, practice)
    plan: dict[str, Any] = {k: int(cands[k][best]) for k in PLAN_KEYS if k != "recompute_fraction"}
    plan["recompute_fraction"] = float(cands["recompute_fraction"][best])
    return plan, {**cands, **res}, n, best


def practice_distance(
    plans: dict[str, NDArray[Any]], layouts: tuple[tuple[int, int, int, int], ...]
) -> NDArray[np.float64]:
    r"""Distance of each plan to the nearest published layout.

    Parameters
    ----------
    plans : dict of str to ndarray
        Candidate plans (``tp``, ``pp``, ``cp``, ``ep``).
    layouts : tuple of (tp, pp, cp, ep)
        Published layouts of similar runs.

    Returns
    -------
    ndarray
        :math:`\min_j \sum_{k \in \{tp,pp,cp,ep\}} |\log_2 (k / k_j)|` (0 = a published
        layout; 1 = one degree doubled or halved).
    """
    keys = ("tp", "pp", "cp", "ep")
    x = np.log2(np.stack([np.asarray(plans[k], dtype=float) for k in keys], axis=-1))
    ref = np.log2(np.asarray(layouts, dtype=float))
    return np.min(np.abs(x[:, None, :] - ref[None, :, :]).sum(axis=-1), axis=1)


def choose_plan(
    cands: dict[str, NDArray[Any]],
    res: dict[str, NDArray[Any]],
    eff: EfficiencyParams,
    practice: PublishedPractice | None = None,
) -> int:
    """Index of the plan :func:`search_plans` returns (see there for the rule)."""
    step = res["step_time_s"]
    fits = res["fits"] & np.isfinite(step)
    if not fits.any():
        return int(np.argmin(res["memory_per_gpu_bytes"]))
    fastest = int(np.argmin(np.where(fits, step, np.inf)))
    if practice is None or not practice.layouts:
        return fastest
    near = fits & (step <= step[fastest] * np.exp(-eff.training_log_ratio_q10))
    dist = np.where(near, practice_distance(cands, practice.layouts), np.inf)
    # lexicographic: nearest to practice, then fastest
    order = np.lexsort((step, dist))
    return int(order[0])

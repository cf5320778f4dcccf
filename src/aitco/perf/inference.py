r"""LLM inference: per-iteration roofline (prefill, decode, mixed), memory, batching and latency.

The model has three layers:

1. :class:`IterationModel` - the time of one engine iteration (a forward pass over the tokens
   scheduled in it) on one model replica, from a roofline per operator group: linear layers
   (weights streamed once per iteration, FLOPs per token), attention (KV bytes read by decode
   tokens, FLOPs of prefill token pairs), tensor-parallel all-reduces and pipeline hand-offs on
   the real topology (:mod:`aitco.perf.comms`), plus a fixed per-iteration framework overhead.
2. Memory and batching (:mod:`aitco.perf.kvcache`): weights, activations and the KV-cache
   capacity that bounds the batch; engine limits (``max_num_seqs``).
3. Serving (:func:`estimate_inference`): static or continuous batching, offline max throughput,
   closed-loop concurrency, or open-loop arrivals simulated by :mod:`aitco.perf.queueing`.

References
----------
.. [1] R. Pope et al., "Efficiently Scaling Transformer Inference," MLSys 2023, arXiv:2211.05102.
.. [2] W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with
   PagedAttention," SOSP 2023, doi:10.1145/3600006.3613165.
.. [3] A. Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
   Sarathi-Serve," OSDI 2024, arXiv:2403.02310 (chunked prefill, stall-free batching).
.. [4] Z. Yuan et al., "LLM Inference Unveiled: Survey and Roofline Model Insights"
   (LLM-Viewer), arXiv:2402.16363.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.errors import InfeasiblePlan, InputError, PlanError
from aitco.explain import Estimate, Term, dominant_term
from aitco.perf import queueing, serving
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.iteration import (
    ACTIVATION_WIDTH_D_FF,
    ACTIVATION_WIDTH_D_MODEL,
    ATTENTION_MACS_PER_PAIR,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_TP_MAX_WEIGHT_FRACTION,
    ENGINES,
    FLOPS_PER_MAC,
    FP4_BLOCK_OVERHEAD_BYTES,
    IDLE_POWER_FRACTION_DEFAULT,
    INT4_GROUP_OVERHEAD_BYTES,
    ITERATION_TERMS,
    MAX_EXPERT_IMBALANCE,
    ROOFLINE_P_MAX,
    RUNTIME_RESERVE_GB,
    WEIGHT_ONLY,
    EngineLimits,
    IterationModel,
    MemoryPlan,
    Precisions,
    WeightBytes,
    cached_prompt_tokens,
    continuous_batching_step,
    continuous_batching_terms,
    default_tp,
    expected_distinct_experts,
    expert_load_imbalance,
    iteration_model,
    lowp_gemm_efficiency,
    memory_plan,
    prefill_pairs,
    resolve_precisions,
    speculative_step_s,
    speculative_tokens_per_step,
    weight_bytes,
    weight_bytes_per_element,
)
from aitco.perf.iteration import (  # re-exported: the public API of this module
    _sum_terms as _sum_terms,
)
from aitco.perf.kvcache import KVCapacity, kv_bytes_per_sequence, kv_capacity
from aitco.units import GIGA

F64 = NDArray[np.float64]

#: Names of :mod:`aitco.perf.iteration` re-exported here (this module's public API before the
#: iteration model moved there) and this module's own entry points.
__all__ = [
    "ACTIVATION_WIDTH_D_FF",
    "ACTIVATION_WIDTH_D_MODEL",
    "ATTENTION_MACS_PER_PAIR",
    "DEFAULT_INPUT_TOKENS",
    "DEFAULT_OUTPUT_TOKENS",
    "DEFAULT_TP_MAX_WEIGHT_FRACTION",
    "ENGINES",
    "FLOPS_PER_MAC",
    "FP4_BLOCK_OVERHEAD_BYTES",
    "IDLE_POWER_FRACTION_DEFAULT",
    "INT4_GROUP_OVERHEAD_BYTES",
    "ITERATION_TERMS",
    "MAX_EXPERT_IMBALANCE",
    "ROOFLINE_P_MAX",
    "RUNTIME_RESERVE_GB",
    "WEIGHT_ONLY",
    "EngineLimits",
    "InferenceResult",
    "IterationModel",
    "LoadPoint",
    "MemoryPlan",
    "Precisions",
    "ServingInputs",
    "WeightBytes",
    "apply_speculative",
    "cached_prompt_tokens",
    "closed_loop_point",
    "continuous_batching_step",
    "continuous_batching_terms",
    "default_tp",
    "estimate_inference",
    "expected_distinct_experts",
    "expert_load_imbalance",
    "iteration_model",
    "lowp_gemm_efficiency",
    "memory_plan",
    "prefill_pairs",
    "resolve_precisions",
    "simulated_point",
    "smallest_fitting_tp",
    "speculative_step_s",
    "speculative_tokens_per_step",
    "static_batch_point",
    "validate_serving_inputs",
    "weight_bytes",
    "weight_bytes_per_element",
]

# ----------------------------------------------------------------------------- result


@dataclass
class InferenceResult:
    """Result of :func:`estimate_inference`.

    Attributes
    ----------
    values : dict
        Headline values keyed by the public JSON names (``ttft_s``, ``tpot_s``, ...).
    interval : dict
        ``{name: (low, high)}`` for the headline figures, from the validation error quantiles.
    terms : list of Term
        Itemised terms (for ``--explain``).
    assumptions : list of str
        Assumptions and fallbacks, in words.
    iteration : IterationModel
        The per-iteration model used (for further what-ifs).
    """

    values: dict[str, Any]
    interval: dict[str, tuple[float, float]]
    terms: list[Term]
    assumptions: list[str]
    iteration: IterationModel | None = None
    dominant: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_estimate(self) -> Estimate:
        """Return the result as an :class:`aitco.explain.Estimate`."""
        vals = dict(self.values)
        vals["interval"] = {k: list(v) for k, v in self.interval.items()}
        return Estimate(
            kind="inference",
            values=vals,
            terms=self.terms,
            dominant=self.dominant,
            assumptions=self.assumptions,
        )


def _interval(v: float | None, q10: float, q90: float) -> tuple[float, float] | None:
    """``(v e^{q10}, v e^{q90})`` from quantiles of ln(observed/predicted)."""
    if v is None or not math.isfinite(v):
        return None
    return (v * math.exp(q10), v * math.exp(q90))


def _cite(entry: Any, *fields: str) -> list[str]:
    """Citations of catalog values used by a term (empty when the entry has no provenance)."""
    prov = getattr(entry, "provenance", {}) or {}
    out = []
    for f in fields:
        p = prov.get(f)
        if p is not None:
            out.append(f"{entry.id}.{f}: {p.source.cite()}")
    return out


def _check_positive(name: str, v: float | int | None, *, integer: bool = False) -> None:
    if v is None:
        return
    if (
        isinstance(v, bool)
        or not isinstance(v, int | float)
        or not math.isfinite(float(v))
        or v <= 0
    ):
        raise InputError(name, v, "a positive integer" if integer else "a positive number")
    if integer and int(v) != v:
        raise InputError(name, v, "a positive integer")


def smallest_fitting_tp(
    model: ModelArch,
    acc: Accelerator,
    system: System,
    precisions: Precisions,
    engine: EngineLimits,
    pp: int,
) -> int | None:
    """Smallest tp (power of two within the scale-up domain) whose weights and KV fit, or None."""
    for t in (1, 2, 4, 8, 16, 32, 64, 128):
        if t > max(system.devices_per_node, system.scale_up_domain):
            break
        mp = memory_plan(model, acc, tp=t, pp=pp, precisions=precisions, engine=engine)
        if mp.fits:
            return t
    return None


#: ``form_factor`` prefix of an accelerator that is a share of one GPU (a MIG slice or a
#: time-slicing replica, :func:`aitco.perf.service.fractional_accelerator`): one replica on one
#: share, so more GPUs or tensor parallelism are no way out when it does not fit.
GPU_SHARE_FORM_FACTOR = "share of one GPU"


def _not_fit_values(mp: MemoryPlan) -> dict[str, float]:
    """Return the memory a replica that does not fit needs per GPU, and may use. [GB]."""
    need = mp.weights_gb + mp.activations_gb + mp.reserve_gb
    return {
        "memory_per_gpu_gb": need,
        "memory_capacity_gb": mp.usable_gb,
        "over_by_gb": max(need - mp.usable_gb, 0.0),
    }


def _not_fit_message(
    model: ModelArch,
    acc: Accelerator,
    system: System,
    mp: MemoryPlan,
    precisions: Precisions,
    engine: EngineLimits,
    tp: int,
    pp: int,
) -> str:
    hint = []
    share = acc.form_factor.startswith(GPU_SHARE_FORM_FACTOR)
    t = None if share else smallest_fitting_tp(model, acc, system, precisions, engine, pp)
    if t is not None and t > tp:
        hint.append(f"smallest tp that fits: {t} (x pp {pp} = {t * pp} GPUs per replica)")
    for p in ("fp8", "int8", "int4", "fp4"):
        if weight_bytes_per_element(p) < weight_bytes_per_element(precisions.weights):
            try:
                pr = resolve_precisions(acc, p, None)
            except InputError:
                continue
            if memory_plan(model, acc, tp=tp, pp=pp, precisions=pr, engine=engine).fits:
                hint.append(f"or --precision {p} fits at tp {tp}")
                break
    if share:
        hint.append(
            "use a larger --mig slice or fewer --time-slice replicas: each replica holds its "
            "own weights and KV cache in its share of the memory"
        )
    return (
        f"weights need {mp.weights_gb:.1f} GB per GPU (+{mp.activations_gb:.1f} GB activations, "
        f"{mp.reserve_gb:.1f} GB reserve) but only {mp.usable_gb:.1f} GB of "
        f"{mp.device_gb:.1f} GB ({acc.memory_gb:g} GiB) is usable"
        + (f"; {'; '.join(hint)}" if hint else "; no tp within the node fits: use pp or more GPUs")
    )


# ----------------------------------------------------------------------------- validate
@dataclass(frozen=True)
class ServingInputs:
    """Validated, typed inputs of :func:`estimate_inference` (units in the names).

    Built by :func:`validate_serving_inputs`; every later step trusts these values.
    """

    gpus: int
    tp: int
    pp: int
    replicas: int
    input_tokens: int
    output_tokens: int
    batch: int | None
    concurrency: int | None
    qps: float | None
    mode: str
    slo_ttft_s: float | None
    slo_tpot_s: float | None
    engine: EngineLimits
    allocation: str
    input_cv: float
    output_cv: float
    num_requests: int
    seed: int
    max_batch: int | None
    scheduler_steps: int
    prefix_cache_hit_rate: float
    precisions: Precisions
    trace: tuple[F64, NDArray[np.int64], NDArray[np.int64]] | None = None
    ep: int = 1

    @property
    def gpus_per_replica(self) -> int:
        """GPUs of one replica: ``tp x pp x ep``."""
        return self.tp * self.pp * self.ep

    @property
    def cached_tokens(self) -> float:
        """Prompt tokens per request served from the prefix cache. [tokens]."""
        return float(cached_prompt_tokens(self.input_tokens, self.prefix_cache_hit_rate))


def _validate_trace(
    trace: tuple[ArrayLike, ArrayLike, ArrayLike],
) -> tuple[F64, NDArray[np.int64], NDArray[np.int64]]:
    """Sort a trace by arrival and start it at 0; errors name ``--trace``."""
    arr = np.asarray(trace[0], dtype=np.float64)
    ins = np.asarray(trace[1], dtype=np.int64)
    outs = np.asarray(trace[2], dtype=np.int64)
    if arr.size < 2 or not (arr.size == ins.size == outs.size):
        raise InputError("--trace", arr.size, "at least 2 requests with times and lengths")
    if float(arr.max() - arr.min()) <= 0:
        raise InputError("--trace", "arrival_s", "arrivals spread over a positive time")
    order = np.argsort(arr, kind="stable")
    return arr[order] - arr.min(), ins[order], outs[order]


def _check_load(mode: str, loads: dict[str, Any]) -> None:
    """One load at most: batch, concurrency, qps, trace or offline mode."""
    if mode not in ("online", "offline"):
        raise InputError("--mode", mode, "'online' or 'offline'")
    given = [n for n, v in loads.items() if v is not None]
    if len(given) > 1 or (given and mode == "offline"):
        raise InputError(
            "load",
            " + ".join(given + (["--mode offline"] if mode == "offline" else [])),
            "only one of --batch, --concurrency, --qps, --trace, --mode offline",
        )


def _ms_to_s(v: float | None) -> float | None:
    """Milliseconds (CLI objectives) to seconds."""
    return None if v is None else v / 1000.0


def validate_serving_inputs(
    model: ModelArch,
    acc: Accelerator,
    system: System,
    gpus: int,
    **kw: Any,
) -> ServingInputs:
    """Check and type the inputs of :func:`estimate_inference` (same keyword names).

    Raises
    ------
    InputError, PlanError
        A bad value, named by its flag, with what was expected.
    """
    _check_positive("--gpus", gpus, integer=True)
    for name, key in (
        ("--tp", "tp"), ("--pp", "pp"), ("--batch", "batch"), ("--concurrency", "concurrency"),
        ("--input-tokens", "input_tokens"), ("--output-tokens", "output_tokens"),
        ("--max-batch", "max_batch"), ("--num-requests", "num_requests"),
        ("--scheduler-steps", "scheduler_steps"), ("--max-batched-tokens", "max_batched_tokens"),
        ("--ep", "ep"),
    ):  # fmt: skip
        _check_positive(name, kw[key], integer=True)
    for name, key in (("--qps", "qps"), ("--slo-ttft-ms", "slo_ttft_ms"),
                      ("--slo-tpot-ms", "slo_tpot_ms")):  # fmt: skip
        _check_positive(name, kw[key])
    h = kw["prefix_cache_hit_rate"]
    if isinstance(h, bool) or not isinstance(h, int | float) or not 0.0 <= float(h) < 1.0:
        raise InputError("--prefix-cache-hit-rate", h, "a fraction in [0, 1)")
    if kw["allocation"] not in ("paged", "contiguous"):
        raise InputError("--kv-allocation", kw["allocation"], "'paged' or 'contiguous'")
    _check_load(kw["mode"], {"--batch": kw["batch"], "--concurrency": kw["concurrency"],
                             "--qps": kw["qps"], "--trace": kw["trace"]})  # fmt: skip
    qps, i_tok, o_tok = kw["qps"], kw["input_tokens"], kw["output_tokens"]
    trace = None
    if kw["trace"] is not None:
        trace = _validate_trace(kw["trace"])
        qps = trace[0].size / float(trace[0].max())
        i_tok = max(round(float(trace[1].mean())), 1)
        o_tok = max(round(float(trace[2].mean())), 1)
    if kw["engine"] not in ENGINES:
        raise InputError("--engine", kw["engine"], f"one of {', '.join(ENGINES)}")
    eng = ENGINES[kw["engine"]]
    if kw["max_batched_tokens"] is not None:
        eng = replace(
            eng, max_num_tokens=int(kw["max_batched_tokens"]),
            reference=eng.reference + f"; max_num_batched_tokens={kw['max_batched_tokens']} (user)",
        )  # fmt: skip
    prec = resolve_precisions(acc, kw["precision"], kw["kv_precision"])
    ep = int(kw["ep"])
    if ep > 1:
        if model.moe is None:
            raise InputError("--ep", ep, f"1 for the dense model {model.id} (no routed experts)")
        if (kw["tp"] or 1) != 1 or (kw["pp"] or 1) != 1:
            raise PlanError("--ep", ep, "tp 1 and pp 1 (attention data-parallel over the group)")
        if gpus % ep:
            raise PlanError("--gpus", gpus, f"a multiple of --ep {ep}")
    pp_ = kw["pp"] or 1
    tp_ = kw["tp"] or (1 if ep > 1 else default_tp(model, acc, system, gpus, kw["precision"], pp_))
    if gpus % (tp_ * pp_):
        raise PlanError("--gpus", gpus, f"a multiple of tp x pp = {tp_} x {pp_} = {tp_ * pp_}")
    if model.mla is None and model.n_heads % tp_:
        raise PlanError(
            "--tp", tp_, f"a divisor of the {model.n_heads} attention heads of {model.id}"
        )
    if pp_ > model.n_layers:
        raise PlanError("--pp", pp_, f"at most the {model.n_layers} layers of {model.id}")
    return ServingInputs(
        gpus=gpus, tp=tp_, pp=pp_, replicas=gpus // (tp_ * pp_ * ep), input_tokens=int(i_tok),
        output_tokens=int(o_tok), batch=kw["batch"], concurrency=kw["concurrency"], qps=qps,
        mode=kw["mode"], slo_ttft_s=_ms_to_s(kw["slo_ttft_ms"]),
        slo_tpot_s=_ms_to_s(kw["slo_tpot_ms"]),
        engine=eng, allocation=kw["allocation"], input_cv=kw["input_cv"],
        output_cv=kw["output_cv"], num_requests=kw["num_requests"], seed=kw["seed"],
        max_batch=kw["max_batch"], scheduler_steps=int(kw["scheduler_steps"]),
        prefix_cache_hit_rate=float(h), precisions=prec, trace=trace, ep=ep,
    )  # fmt: skip


# ----------------------------------------------------------------------------- load regimes
@dataclass
class LoadPoint:
    """Latency and throughput of one load regime, with the terms that make them up.

    Attributes
    ----------
    regime : str
        The load regime, in words.
    ttft_terms, tpot_terms : dict of str to float
        Terms whose sums are ``ttft_s`` and ``tpot_s`` (empty when saturated). [s]
    e2e_s : float
        Mean end-to-end latency. [s]
    output_tokens_per_s : float
        Output tokens per second of the deployment. [tokens/s]
    batch : float
        Mean running batch per replica. [sequences]
    prefill_time_fraction : float
        Share of GPU time spent on prompt tokens (for input/output cost allocation). [0-1]
    values : dict
        Regime-specific headline values (percentiles, utilisation, ...).
    """

    regime: str
    ttft_terms: dict[str, float]
    tpot_terms: dict[str, float]
    e2e_s: float
    output_tokens_per_s: float
    batch: float
    prefill_time_fraction: float
    values: dict[str, Any] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)

    @property
    def ttft_s(self) -> float:
        """Mean time to first token: the sum of :attr:`ttft_terms`. [s]."""
        return math.fsum(self.ttft_terms.values()) if self.ttft_terms else float("nan")

    @property
    def tpot_s(self) -> float:
        """Mean time per output token: the sum of :attr:`tpot_terms`. [s]."""
        return math.fsum(self.tpot_terms.values()) if self.tpot_terms else float("nan")


def _floats(terms: dict[str, F64], scale: float = 1.0) -> dict[str, float]:
    return {k: float(v) * scale for k, v in terms.items()}


def _decode_share(it: IterationModel, b: float, ctx: float, mixed_s: float) -> float:
    """Share of a mixed iteration spent on prompt tokens: ``1 - t_decode_only / t_mixed``."""
    dec = float(it.decode_step_s(b, ctx))
    return float(min(max(1.0 - dec / mixed_s, 0.0), 1.0)) if mixed_s > 0 else 0.0


def static_batch_point(it: IterationModel, inp: ServingInputs, b: int) -> LoadPoint:
    """Return the static-batching point: ``b`` prompts prefilled, then decoded, together."""
    i, o, c = float(inp.input_tokens), float(inp.output_tokens), inp.cached_tokens
    ttft = _floats(it.iteration_terms(0.0, 0.0, b * (i - c), b * prefill_pairs(i - c, c), b))
    tpot = _floats(it.iteration_terms(b, b * (i + o / 2.0)))
    ttft["request_path_s"] = it.request_path_s
    t_first, t_tok = math.fsum(ttft.values()), math.fsum(tpot.values())
    e2e = t_first + (o - 1.0) * t_tok
    return LoadPoint(
        "static batch", ttft, tpot, e2e, inp.replicas * b * o / e2e, float(b), t_first / e2e
    )


def static_batch_waves(it: IterationModel, inp: ServingInputs, b: int, admitted: int) -> LoadPoint:
    r"""Return a static batch larger than the KV cache holds at full length, run in waves.

    Notes
    -----
    Every sequence of a static batch reaches its full prompt + output length at the same time,
    so at most ``admitted`` (:attr:`KVCapacity.full_length_sequences`) run together: a
    ``GUARANTEED_NO_EVICT`` scheduler admits no more, and an on-demand one preempts the rest when
    the cache fills. The batch runs in :math:`w = \lceil b / a \rceil` waves of
    :math:`\lceil b / w \rceil` sequences; a sequence of wave :math:`k` waits for the
    :math:`k` waves before it, :math:`(w - 1)/2` wave times on average (the
    ``batch_wave_wait_s`` TTFT term). Throughput is the batch's output over the :math:`w` waves.
    """
    waves = math.ceil(b / admitted)
    b_w = math.ceil(b / waves)
    p = static_batch_point(it, inp, b_w)
    wait = (waves - 1) / 2.0 * p.e2e_s
    ttft = {**p.ttft_terms, "batch_wave_wait_s": wait}
    o = float(inp.output_tokens)
    return LoadPoint(
        f"static batch of {b} in {waves} waves of {b_w} (KV cache holds {admitted} sequences at "
        "full length)",
        ttft,
        p.tpot_terms,
        p.e2e_s + wait,
        inp.replicas * b * o / (waves * p.e2e_s),
        float(b_w),
        p.prefill_time_fraction,
        values={"batch_waves": waves, "batch_per_wave": b_w},
        assumptions=[
            f"--batch {b} exceeds the {admitted} sequences the KV cache holds at full length: "
            f"run in {waves} waves of {b_w} (the engine queues or preempts the rest; "
            "never refused)"
        ],
    )


def _chunked_ttft_terms(it: IterationModel, inp: ServingInputs, b: float) -> dict[str, float]:
    r"""Return the TTFT terms of a prompt joining a running batch of ``b`` (chunked prefill).

    Notes
    -----
    With chunked prefill the prompt's :math:`n = I - c` new tokens are split into
    :math:`k = \lceil n / (N - B) \rceil` chunks (``N`` the max batched tokens); each chunk rides
    on one iteration with the :math:`B` decodes, and the first token is sampled after the last.
    """
    i, o, c = float(inp.input_tokens), float(inp.output_tokens), inp.cached_tokens
    terms = chunked_ttft_terms(
        it, b, i, o, c, inp.engine.max_num_tokens, inp.engine.chunked_prefill,
        inp.engine.mixed_batching,
    )  # fmt: skip
    return {k: float(v) for k, v in terms.items()}


def chunked_ttft_terms(
    it: IterationModel,
    batch: ArrayLike,
    input_tokens: float,
    output_tokens: float,
    cached_tokens: float,
    max_num_tokens: float,
    chunked_prefill: bool = True,
    mixed_batching: bool = True,
) -> dict[str, F64]:
    r"""TTFT terms of a prompt joining running batches ``batch`` (vectorised over the batch). [s].

    Notes
    -----
    With mixed batching the prompt's :math:`n = I - c` new tokens ride in
    :math:`k = \lceil n / (N - B) \rceil` chunks, one per iteration beside the :math:`B` decodes
    (``N`` the max batched tokens; one chunk without chunked prefill). A prefill-first engine
    (``mixed_batching`` False) runs the prompt in prefill-only iterations of up to ``N`` tokens
    (:math:`k = \lceil n / N \rceil`; the decodes wait). The first token is sampled after the
    last chunk.
    """
    b = np.asarray(batch, dtype=np.float64)
    i, o, c = float(input_tokens), float(output_tokens), float(cached_tokens)
    n = i - c
    ride = b if mixed_batching else np.zeros_like(b)  # decodes riding in the prompt's iterations
    budget = np.maximum(float(max_num_tokens) - ride, 1.0)
    k = np.ceil(n / budget) if chunked_prefill else np.ones_like(b)
    terms = it.iteration_terms(ride, ride * (i + o / 2.0), n / k, prefill_pairs(n, c) / k, 1.0 / k)
    return {name: np.asarray(v, dtype=np.float64) * k for name, v in terms.items()}


def scheduler_wait_s(scheduler_steps: ArrayLike, step_s: ArrayLike) -> F64:
    """Mean admission wait of multi-step scheduling: ``(k - 1) / 2`` iterations. [s]."""
    k = np.asarray(scheduler_steps, dtype=np.float64)
    return np.asarray((k - 1.0) / 2.0 * np.asarray(step_s, dtype=np.float64), dtype=np.float64)


def closed_loop_point(it: IterationModel, inp: ServingInputs, b_max: int) -> LoadPoint:
    """Offline max throughput, a single request, or closed-loop concurrency (steady state)."""
    i, o, c = float(inp.input_tokens), float(inp.output_tokens), inp.cached_tokens
    notes: list[str] = []
    if inp.mode == "offline" or inp.concurrency is None:
        b = b_max if inp.mode == "offline" else 1
        regime = "offline max-throughput" if inp.mode == "offline" else "single request"
    else:
        per = inp.concurrency / inp.replicas
        b = int(min(max(per, 1.0), b_max))
        regime = "closed-loop concurrency"
        if per > b_max:
            notes.append(
                f"concurrency {inp.concurrency} exceeds {b_max * inp.replicas} running sequences; "
                "the rest queue"
            )
    if b == 1 and regime == "single request":
        ttft = _floats(it.iteration_terms(0.0, 0.0, i - c, prefill_pairs(i - c, c), 1.0))
        ttft["request_path_s"] = it.request_path_s
        tpot = _floats(it.iteration_terms(1.0, i + o / 2.0))
        e2e = math.fsum(ttft.values()) + (o - 1.0) * math.fsum(tpot.values())
        return LoadPoint(
            regime, ttft, tpot, e2e, inp.replicas * o / e2e, 1.0,
            math.fsum(ttft.values()) / e2e, assumptions=notes,
        )  # fmt: skip
    tpot = _floats(continuous_batching_terms(it, b, i, o, c, inp.engine.separate_prefill_tokens))
    step = math.fsum(tpot.values())
    ttft = _chunked_ttft_terms(it, inp, float(b))
    ttft["request_path_s"] = it.request_path_s
    if inp.scheduler_steps > 1:
        # multi-step scheduling: a prompt waits on average (k-1)/2 iterations for admission
        ttft["scheduler_wait_s"] = float(scheduler_wait_s(inp.scheduler_steps, step))
    if inp.concurrency is not None and inp.concurrency / inp.replicas > b_max:
        ttft["queue_wait_s"] = (inp.concurrency / inp.replicas - b_max) / (b_max / (o * step))
    e2e = math.fsum(ttft.values()) + (o - 1.0) * step
    frac = _decode_share(it, b, i + o / 2.0, step)
    return LoadPoint(
        regime, ttft, tpot, e2e, inp.replicas * b / step, float(b), frac, assumptions=notes
    )


def simulated_point(
    it: IterationModel, inp: ServingInputs, b_max: int, cap: KVCapacity
) -> LoadPoint:
    """Open-loop Poisson or trace arrivals, simulated iteration by iteration on one replica.

    The terms are those of the steady-state iteration at the simulated mean batch, plus one
    ``batching_variation_s`` (TPOT) and one ``queueing_s`` (TTFT) term: what the simulation adds
    to that steady state (queueing, batch fluctuations, scheduler steps). They add up to the
    simulated means.
    """
    assert inp.qps is not None
    i, o, c = float(inp.input_tokens), float(inp.output_tokens), inp.cached_tokens
    eng, per_replica = inp.engine, inp.qps / inp.replicas
    kw: dict[str, Any] = {
        "max_num_seqs": b_max, "kv_capacity_tokens": cap.max_tokens,
        "max_num_tokens": eng.max_num_tokens, "scheduler_steps": inp.scheduler_steps,
        "chunked": eng.chunked_prefill, "slo_ttft_s": inp.slo_ttft_s, "slo_tpot_s": inp.slo_tpot_s,
        "prefix_cache_hit_rate": inp.prefix_cache_hit_rate, "mixed": eng.mixed_batching,
    }  # fmt: skip
    if inp.trace is not None:
        regime = "trace-driven arrivals (simulated)"
        tr_arr, tr_in, tr_out = inp.trace
        room = max(cap.max_tokens - 1, 2)
        sel = slice(0, None, inp.replicas)
        t_in = np.minimum(tr_in[sel], max(room // 2, 1))
        sim = queueing.simulate_continuous_batching(
            it, tr_arr[sel], t_in, np.minimum(tr_out[sel], room - t_in), **kw
        )
    else:
        regime = "open-loop Poisson arrivals (simulated)"
        sim = queueing.simulate_poisson(
            it, per_replica, inp.input_tokens, inp.output_tokens, input_cv=inp.input_cv,
            output_cv=inp.output_cv, num_requests=inp.num_requests, seed=inp.seed, **kw,
        )  # fmt: skip
    cap_rps = serving.max_request_rate(it, i, o, b_max, c, eng.separate_prefill_tokens)
    # offered load (arrival rate over capacity) may exceed 1; utilization is the busy
    # fraction of the capacity and saturates at 1 (then `saturated` is true)
    sat = bool(per_replica >= cap_rps)
    vals: dict[str, Any] = {
        "offered_load": per_replica / cap_rps,
        "utilization": min(1.0, per_replica / cap_rps),
        "saturated": sat,
        "max_qps": cap_rps * inp.replicas,
    }
    for k, pv in sim.percentiles().items():
        vals[k] = None if sat else pv
    vals["goodput_requests_per_s"] = None if sat else sim.goodput_fraction * inp.qps
    b = max(float(sim.mean_batch), 1.0)
    steady = _floats(continuous_batching_terms(it, b, i, o, c, eng.separate_prefill_tokens))
    frac = _decode_share(it, b, i + o / 2.0, math.fsum(steady.values()))
    notes: list[str] = []
    if sat:
        notes.append(
            f"arrival rate {inp.qps:g}/s exceeds the capacity {cap_rps * inp.replicas:.3g}/s: "
            "the queue grows without bound; latencies are reported as null (saturated), "
            "throughput at capacity"
        )
        return LoadPoint(regime, {}, {}, float("nan"), cap_rps * inp.replicas * o,
                         float(sim.mean_batch), frac, vals, notes)  # fmt: skip
    tpot = dict(steady)
    tpot["batching_variation_s"] = sim.mean_tpot_s - math.fsum(steady.values())
    b_ride = b if eng.mixed_batching else 0.0  # decodes riding in the prompt's iteration
    ttft = _floats(
        it.iteration_terms(b_ride, b_ride * (i + o / 2.0), i - c, prefill_pairs(i - c, c), 1.0)
    )
    ttft["request_path_s"] = it.request_path_s
    ttft["queueing_s"] = sim.mean_ttft_s - math.fsum(ttft.values())
    if inp.slo_ttft_s is not None or inp.slo_tpot_s is not None:
        vals["replicas_for_slo"] = serving.replicas_for_slo(
            it, inp.qps, inp.input_tokens, inp.output_tokens, max_num_seqs=b_max,
            kv_capacity_tokens=cap.max_tokens, max_num_tokens=eng.max_num_tokens,
            slo_ttft_s=inp.slo_ttft_s, slo_tpot_s=inp.slo_tpot_s, input_cv=inp.input_cv,
            output_cv=inp.output_cv, seed=inp.seed, scheduler_steps=inp.scheduler_steps,
            chunked=eng.chunked_prefill, prefix_cache_hit_rate=inp.prefix_cache_hit_rate,
            mixed=eng.mixed_batching,
        )  # fmt: skip
        r = vals["replicas_for_slo"]
        vals["gpus_for_slo"] = None if r is None else r * inp.gpus_per_replica
    return LoadPoint(regime, ttft, tpot, sim.mean_e2e_s, inp.qps * o, float(sim.mean_batch),
                     frac, vals, notes)  # fmt: skip


def apply_speculative(
    point: LoadPoint,
    it: IterationModel,
    draft: IterationModel,
    inp: ServingInputs,
    spec_tokens: int,
    acceptance_rate: float,
) -> float:
    """Scale ``point``'s TPOT by the speculative step ratio; return the speed-up.

    The change is one term, ``speculative_s`` (negative when drafting helps):
    :math:`t_{tpot} (t_{spec}/t_{dec} - 1)` with :math:`t_{spec}` from
    :func:`speculative_step_s` and :math:`t_{dec}` the plain decode step at the same batch.
    """
    i, o = float(inp.input_tokens), float(inp.output_tokens)
    b_s = max(point.batch, 1.0)
    plain = float(it.decode_step_s(b_s, i + o / 2.0))
    spec = float(speculative_step_s(it, draft, b_s, i + o / 2.0, spec_tokens, acceptance_rate))
    factor = spec / plain
    tpot = point.tpot_s
    point.tpot_terms["speculative_s"] = tpot * (factor - 1.0)
    point.e2e_s = point.ttft_s + (o - 1.0) * point.tpot_s
    point.output_tokens_per_s /= factor
    return 1.0 / factor


# ----------------------------------------------------------------------------- assemble
#: How each time term is computed (for ``--explain``).
TERM_FORMULAS: dict[str, str] = {
    "linear_compute_s": "pp * share_C * roofline(body_flops*(T/pp)/(gemm_eff*peak), "
    "weights/(hbm_eff*bw))",
    "weights_read_s": "pp * share_M * roofline(compute, weight_bytes_read/(hbm_eff*hbm_bw))",
    "elementwise_s": "pp * elementwise_bytes_per_token * T/pp / (elementwise_eff * hbm_bw)",
    "tp_comm_s": "pp * 2 * layers/pp * allreduce(T/pp * d_model * act_bytes, tp) "
    "(tree, alpha-beta)",
    "pp_p2p_s": "pp * p2p(T/pp * d_model * act_bytes) between stages",
    "ep_all_to_all_s": "2 * moe_layers * alltoall(T/ep * k * d_model * act_bytes * imbalance, ep) "
    "(local peers over scale-up, remote over scale-out)",
    "lm_head_s": "max(sampled * head_flops/(gemm_eff*peak16), head_bytes/(hbm_eff*bw))",
    "kv_read_s": "context_tokens * max(kv_bytes_per_token/(hbm_eff*bw), "
    "decode_attn_flops_per_pair/(eff*peak)) (MLA: weight-absorbed, 2 h (2 d_c + d_r) L)",
    "prefill_attention_s": "prefill_pairs * attn_flops_per_pair / (attn_eff * peak16)",
    "overhead_s": "serving_overhead_s + serving_layer_overhead_s*layers "
    "+ serving_overhead_per_seq_s*seqs (fitted)",
    "scheduler_wait_s": "(scheduler_steps - 1)/2 * iteration_s (admission every k iterations)",
    "queue_wait_s": "(concurrency/replicas - B_max) / (B_max / (O * iteration_s))",
    "queueing_s": "simulated mean TTFT - prefill iteration at the mean batch - request path",
    "request_path_s": "request_path_s (API server / harness, tokenisation, first-token "
    "streaming; outside the GPU iterations)",
    "batching_variation_s": "simulated mean TPOT - steady-state iteration at the mean batch",
    "speculative_s": "tpot * ((k t_draft + t_verify)/E(k, alpha) / t_decode - 1)",
}  # fmt: skip


def _time_terms(prefix: str, terms: dict[str, float], it: IterationModel, acc: Accelerator,
                system: System, prec: Precisions) -> list[Term]:  # fmt: skip
    """One :class:`Term` per model term, named ``<prefix>_<term>``."""
    inputs: dict[str, dict[str, Any]] = {
        "linear_compute_s": {"peak_tflops": it.peak_tflops, "gemm_efficiency": it.gemm_efficiency,
                             "compute_precision": prec.compute},
        "weights_read_s": {"hbm_bandwidth_gb_s": it.hbm_bandwidth_gb_s,
                           "hbm_efficiency": it.hbm_efficiency},
        "kv_read_s": {"kv_bytes_per_token": it.kv_bytes_per_token, "kv_precision": prec.kv},
        "tp_comm_s": {"tp": it.tp, "link_bandwidth_gb_s": it.link_bandwidth_gb_s,
                      "link_latency_us": it.link_latency_us},
        "overhead_s": {"serving_overhead_s": it.overhead_s,
                       "serving_layer_overhead_s": it.layer_overhead_s, "layers": it.n_layers,
                       "serving_overhead_per_seq_s": it.overhead_per_seq_s},
    }  # fmt: skip
    sources = {
        "linear_compute_s": _cite(acc, f"peak_tflops.{prec.compute}"),
        "weights_read_s": _cite(acc, "hbm_bandwidth_gb_s"),
        "tp_comm_s": _cite(system, "intra_node_bandwidth_gb_s", "scale_out_bandwidth_gb_s"),
    }
    return [
        Term(name=f"{prefix}_{k}", value=v, unit="s", formula=TERM_FORMULAS.get(k, ""),
             inputs=inputs.get(k, {}), sources=sources.get(k, []))
        for k, v in terms.items()
    ]  # fmt: skip


def _intervals(vals: dict[str, Any], eff: EfficiencyParams) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for keys, q10, q90 in (
        (("output_tokens_per_s", "requests_per_s", "total_tokens_per_s"),
         eff.inference_throughput_log_ratio_q10, eff.inference_throughput_log_ratio_q90),
        (("ttft_s", "tpot_s", "e2e_latency_s"),
         eff.inference_latency_log_ratio_q10, eff.inference_latency_log_ratio_q90),
    ):  # fmt: skip
        for k in keys:
            iv = _interval(vals[k], q10, q90)
            if iv:
                out[k] = iv
    return out


def _memory_values(mp: MemoryPlan, cap: KVCapacity, inp: ServingInputs, b_max: int,
                   reserved: int) -> dict[str, Any]:  # fmt: skip
    shard = inp.gpus_per_replica
    return {
        "max_concurrency": cap.max_sequences * inp.replicas,
        "max_batch_per_replica": b_max,
        "kv_cache_gb": mp.kv_gb * shard,
        "kv_cache_per_gpu_gb": mp.kv_gb,
        "kv_capacity_tokens": cap.max_tokens,
        "kv_waste_fraction": cap.waste_fraction,
        "kv_allocation": inp.allocation,
        "kv_reserved_tokens_per_sequence": reserved,
        "kv_admission": inp.engine.kv_admission,
        "kv_full_length_sequences": cap.full_length_sequences * inp.replicas,
        "weights_gb": mp.weights_gb * shard,
        "weights_per_gpu_gb": mp.weights_gb,
        "memory_per_gpu_gb": mp.weights_gb + mp.activations_gb + mp.reserve_gb + mp.kv_gb,
        "fits": True,
    }


def _memory(
    model: ModelArch, acc: Accelerator, system: System, inp: ServingInputs,
    draft: ModelArch | None,
) -> tuple[MemoryPlan, KVCapacity, int]:  # fmt: skip
    """Memory plan (with the draft's weights) and KV capacity; the reservation per sequence.

    Contiguous allocation reserves the model's maximum sequence length per request (as engines
    before PagedAttention did [2]_); the prefix cache stores the shared prompt tokens once.
    """
    prec, eng = inp.precisions, inp.engine
    mp = memory_plan(model, acc, tp=inp.tp, pp=inp.pp, precisions=prec, engine=eng, ep=inp.ep)
    if draft is not None:
        dwb = weight_bytes(draft, prec.weights, prec.activations)
        d_gb = dwb.total(draft.moe.n_experts if draft.moe else 0) / inp.tp / GIGA
        mp = MemoryPlan(
            mp.device_gb, mp.usable_gb, mp.weights_gb + d_gb, mp.activations_gb, mp.reserve_gb,
            max(mp.kv_gb - d_gb, 0.0), mp.kv_gb - d_gb > 0,
        )  # fmt: skip
    c = inp.cached_tokens
    unique_in = int(inp.input_tokens - c)
    kv_gb = mp.kv_gb
    if c > 0:  # the shared prefix blocks are held once per replica
        kv_gb = max(
            kv_gb - float(kv_bytes_per_sequence(model, c, prec.kv, inp.tp)) / inp.pp / GIGA, 0.0
        )
    reserved = (max(model.max_seq_len, inp.input_tokens + inp.output_tokens)
                if inp.allocation == "contiguous" else unique_in + inp.output_tokens)  # fmt: skip
    cap = kv_capacity(
        model, kv_gb, input_tokens=unique_in, output_tokens=inp.output_tokens,
        kv_precision=prec.kv, tp=inp.tp, pp=inp.pp, allocation=inp.allocation,
        reserved_tokens=reserved if inp.allocation == "contiguous" else None,
        block_tokens=eng.kv_block_tokens, admission=eng.kv_admission,
    )  # fmt: skip
    if inp.ep > 1:  # each GPU of the group holds the KV of its own sequences
        cap = replace(cap, max_sequences=cap.max_sequences * inp.ep,
                      max_tokens=cap.max_tokens * inp.ep,
                      full_length_sequences=cap.full_length_sequences * inp.ep)  # fmt: skip
    if not mp.fits or cap.max_sequences < 1:
        raise InfeasiblePlan(
            "--model", model.id,
            f"a model that fits on {acc.id} at tp {inp.tp} pp {inp.pp} in {prec.weights}",
            hint=_not_fit_message(model, acc, system, mp, prec, eng, inp.tp, inp.pp),
            values=_not_fit_values(mp),
        )  # fmt: skip
    return mp, cap, reserved


def _draft_iteration(
    draft_model: ModelArch | None,
    spec_tokens: int,
    acceptance_rate: float,
    inp: ServingInputs,
    acc: Accelerator,
    system: System,
    efficiency: EfficiencyParams,
    assumptions: list[str],
) -> IterationModel | None:
    """Validate the speculative-decoding inputs; return the draft's iteration model (or None)."""
    if draft_model is None:
        return None
    _check_positive("--spec-tokens", spec_tokens, integer=True)
    if not 0.0 <= acceptance_rate <= 1.0:
        raise InputError("--acceptance-rate", acceptance_rate, "a probability in [0, 1]")
    if inp.qps is not None:
        raise InputError(
            "--draft-model", draft_model.id, "no --qps (speculative decoding is not simulated)"
        )
    assumptions.append(
        f"speculative decoding: draft {draft_model.id}, k={spec_tokens}, acceptance "
        f"{acceptance_rate:g} (expected "
        f"{float(speculative_tokens_per_step(spec_tokens, acceptance_rate)):.2f} "
        "tokens per step); the draft's KV cache is not counted"
    )
    return iteration_model(
        draft_model, acc, system, tp=inp.tp, pp=1, precisions=inp.precisions,
        efficiency=efficiency, engine=inp.engine.name,
    )  # fmt: skip


def load_point(it: IterationModel, inp: ServingInputs, b_max: int, cap: KVCapacity) -> LoadPoint:
    """Return the load regime: static batch, closed loop or offline, or simulated arrivals."""
    if inp.batch is not None:
        if inp.batch > cap.full_length_sequences:  # the engine runs it in turns, not refuses
            return static_batch_waves(it, inp, inp.batch, cap.full_length_sequences)
        return static_batch_point(it, inp, inp.batch)
    if inp.qps is None:
        return closed_loop_point(it, inp, b_max)
    return simulated_point(it, inp, b_max, cap)


#: Iteration terms during which the accelerators compute or stream memory: their share of the
#: iteration is the busy fraction that sets the serving power draw (:func:`serving.power_w`).
BUSY_TERMS = ("linear_compute_s", "weights_read_s", "elementwise_s", "lm_head_s", "kv_read_s",
              "prefill_attention_s")  # fmt: skip


def busy_share(terms: dict[str, Any], step_s: ArrayLike) -> F64:
    """Return the share of an iteration in :data:`BUSY_TERMS` (vectorised over batches)."""
    busy = sum((np.asarray(terms[k], dtype=np.float64) for k in BUSY_TERMS if k in terms), 0.0)
    step = np.asarray(step_s, dtype=np.float64)
    return np.asarray(np.asarray(busy, dtype=np.float64) / step, dtype=np.float64)


def _headline_values(
    point: LoadPoint,
    inp: ServingInputs,
    acc: Accelerator,
    system: System,
    mp: MemoryPlan,
    memory: dict[str, Any],
) -> dict[str, Any]:
    """Latency, throughput, memory, energy, cold start and setup values of a load point."""
    i, o = float(inp.input_tokens), float(inp.output_tokens)
    out_tps = point.output_tokens_per_s
    req_s = out_tps / o
    tpot_t = point.tpot_terms
    busy = (math.fsum(tpot_t.get(k, 0.0) for k in BUSY_TERMS) / point.tpot_s) if tpot_t else 1.0
    # open-loop arrivals leave the engine idle between requests: busy with probability 1 - e^-L,
    # L = requests in flight per replica; a closed loop, a static batch or a full queue is busy
    open_loop = inp.qps is not None and inp.batch is None
    in_flight = req_s / inp.replicas * point.e2e_s if open_loop else math.inf
    energy = serving.energy_per_token(
        acc, inp.gpus, out_tps, utilization=min(max(busy, 0.0), 1.0),
        time_share=float(serving.busy_time_share(in_flight)),
    )  # fmt: skip
    # a new replica reads its weights from each node's local NVMe (nodes in parallel)
    nodes = math.ceil(inp.gpus_per_replica / system.devices_per_node)
    cold = serving.cold_start(mp.weights_gb * inp.gpus_per_replica / nodes)
    prec, eng = inp.precisions, inp.engine
    vals: dict[str, Any] = {
        "ttft_s": point.ttft_s, "tpot_s": point.tpot_s, "e2e_latency_s": point.e2e_s,
        "output_tokens_per_s": out_tps, "total_tokens_per_s": req_s * (i + o),
        "requests_per_s": req_s, "output_tokens_per_s_per_gpu": out_tps / inp.gpus,
        "batch_per_replica": point.batch, **memory,
        "tp": inp.tp, "pp": inp.pp, "replicas": inp.replicas, "precision": prec.weights,
        "compute_precision": prec.compute, "kv_precision": prec.kv, "engine": eng.name,
        "regime": point.regime, **energy, "cold_start_s": cold.total_s,
        "cold_start_weights_load_s": cold.load_s,
        "prefix_cache_hit_rate": inp.prefix_cache_hit_rate,
        "scheduler_steps": inp.scheduler_steps, "max_batched_tokens": eng.max_num_tokens,
        "prefill_time_fraction": point.prefill_time_fraction, "ep": inp.ep,
    }  # fmt: skip
    if inp.qps is None:
        for k in ("p50_ttft_s", "p99_ttft_s", "p50_tpot_s", "p99_tpot_s", "p99_e2e_latency_s"):
            vals.setdefault(k, None)
    return vals


def _memory_terms(
    mp: MemoryPlan, cap: KVCapacity, acc: Accelerator, inp: ServingInputs, b_max: int,
    engine_cap: int, reserved: float,
) -> list[Term]:  # fmt: skip
    """Explained memory terms: the KV cache per GPU and the batch it allows."""
    return [
        Term(name="kv_cache_gb", value=mp.kv_gb, unit="GB",
             formula="usable - weights - activations - reserve (per GPU)",
             inputs={"device_gb": mp.device_gb, "usable_gb": mp.usable_gb,
                     "weights_gb": mp.weights_gb, "activations_gb": mp.activations_gb,
                     "reserve_gb": mp.reserve_gb},
             sources=_cite(acc, "memory_gb")),
        Term(name="max_batch_per_replica", value=float(b_max), unit="sequences",
             formula="min(kv_cache / kv_bytes(tokens held per sequence), engine max_num_seqs); "
                     "held = reserved tokens (reserved admission) or I + O/2 + block/2 (on demand)",
             inputs={"kv_sequences": cap.max_sequences, "engine_max_num_seqs": engine_cap,
                     "kv_reserved_tokens_per_sequence": reserved,
                     "kv_admission": inp.engine.kv_admission,
                     "kv_block_tokens": inp.engine.kv_block_tokens,
                     "engine": inp.engine.reference}),
    ]  # fmt: skip


def _closing_assumptions(point: LoadPoint, inp: ServingInputs) -> list[str]:
    """Assumptions stated with every estimate (regime, how the terms add up, prefix cache)."""
    out = [
        f"regime: {point.regime}; engine limits: {inp.engine.reference}",
        "ttft_* terms add up to ttft_s and tpot_* terms to tpot_s; power = TDP x (idle fraction "
        "+ (1 - idle fraction) x busy share of the TPOT terms)",
    ]
    if inp.prefix_cache_hit_rate > 0:
        out.append(
            f"prefix cache: {inp.cached_tokens:g} of {inp.input_tokens} prompt tokens reused per "
            "request (not recomputed; their KV blocks held once per replica)"
        )
    return out


def estimate_inference(
    model: ModelArch,
    acc: Accelerator,
    system: System,
    gpus: int,
    *,
    precision: str = "bf16",
    kv_precision: str | None = None,
    input_tokens: int = DEFAULT_INPUT_TOKENS,
    output_tokens: int = DEFAULT_OUTPUT_TOKENS,
    batch: int | None = None,
    concurrency: int | None = None,
    qps: float | None = None,
    mode: str = "online",
    tp: int | None = None,
    pp: int | None = None,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY,
    engine: str = "vllm",
    allocation: str = "paged",
    input_cv: float = 0.0,
    output_cv: float = 0.0,
    num_requests: int = 5000,
    seed: int = 0,
    max_batch: int | None = None,
    scheduler_steps: int = 1,
    draft_model: ModelArch | None = None,
    spec_tokens: int = 4,
    acceptance_rate: float = 0.7,
    trace: tuple[ArrayLike, ArrayLike, ArrayLike] | None = None,
    prefix_cache_hit_rate: float = 0.0,
    max_batched_tokens: int | None = None,
    ep: int = 1,
) -> InferenceResult:
    r"""Predict throughput, TTFT, TPOT, tail latency and memory of serving ``model``.

    Three steps: :func:`validate_serving_inputs` (typed inputs), a load regime
    (:func:`static_batch_point`, :func:`closed_loop_point`, :func:`simulated_point`) built from
    :meth:`IterationModel.iteration_terms`, and the assembly of the values and the explained
    terms, which add up to ``ttft_s`` and ``tpot_s`` because the regime sums them.

    Parameters
    ----------
    model, acc, system : ModelArch, Accelerator, System
        What runs, on what.
    gpus : int
        Accelerators in total (``replicas = gpus / (tp pp)``).
    precision : str
        Weight type (bf16, fp16, fp8, int8, int4, fp4); see :func:`resolve_precisions`.
    kv_precision : str, optional
        KV-cache type.
    input_tokens, output_tokens : int
        Mean prompt and output lengths. [tokens]
    batch : int, optional
        Static batching: ``batch`` prompts prefilled together then decoded together.
    concurrency : int, optional
        Closed loop: ``concurrency`` requests in flight per deployment (continuous batching).
    qps : float, optional
        Open loop: Poisson arrivals at ``qps`` requests/s over the deployment (simulated).
    mode : {"online", "offline"}
        ``offline``: the batch as large as memory and the engine allow (max throughput).
    tp, pp : int, optional
        Parallel degrees of one replica (default: :func:`default_tp`, pp 1).
    slo_ttft_ms, slo_tpot_ms : float, optional
        P99 objectives: with ``qps``, ``replicas_for_slo`` and goodput are reported.
    efficiency : EfficiencyParams
        Efficiency parameters.
    engine : str
        Engine whose limits apply (:data:`ENGINES`).
    allocation : {"paged", "contiguous"}
        KV allocation; contiguous reserves ``max_seq_len`` tokens per request.
    input_cv, output_cv : float
        Coefficients of variation of the lengths for the simulation (0 = fixed).
    num_requests : int
        Requests simulated with ``qps``.
    seed : int
        Random seed of the simulation.
    max_batch : int, optional
        Override of the engine's ``max_num_seqs``.
    scheduler_steps : int
        Multi-step scheduling (vLLM ``--num-scheduler-steps``): prompts join every k iterations.
    draft_model : ModelArch, optional
        Speculative decoding with this draft model on the same GPUs (same tp, precision).
    spec_tokens : int
        Draft tokens proposed per step.
    acceptance_rate : float
        Per-token acceptance probability of the draft's proposals. [0-1]
    trace : (arrival_s, input_tokens, output_tokens), optional
        Trace-driven load instead of Poisson: the requests are dealt round-robin to the
        replicas and one replica's share is simulated; ``qps`` and the mean lengths come from
        the trace.
    prefix_cache_hit_rate : float
        Share of prompt tokens whose KV is reused from the prefix cache. [0-1)
    max_batched_tokens : int, optional
        Override of the engine's tokens per iteration (vLLM ``--max-num-batched-tokens``).
    ep : int
        Expert parallelism for MoE models: a replica is ``ep`` GPUs with attention data-parallel
        and the routed experts sharded (tp = pp = 1); see :meth:`IterationModel._ep_body_terms`.

    Returns
    -------
    InferenceResult
        ``.values`` with ttft_s, tpot_s, e2e_latency_s, output_tokens_per_s, total_tokens_per_s,
        requests_per_s, max_concurrency, kv_cache_gb, weights_gb, fits, (p50/p90/p99 with qps,
        replicas_for_slo with an SLO), energy and efficiency figures; ``.interval``;
        ``.to_estimate()``.

    Raises
    ------
    InputError
        Bad values, or weights that do not fit (with the numbers and the smallest tp or a lower
        precision that fits).
    """
    inp = validate_serving_inputs(
        model, acc, system, gpus, precision=precision, kv_precision=kv_precision,
        input_tokens=input_tokens, output_tokens=output_tokens, batch=batch,
        concurrency=concurrency, qps=qps, mode=mode, tp=tp, pp=pp, slo_ttft_ms=slo_ttft_ms,
        slo_tpot_ms=slo_tpot_ms, engine=engine, allocation=allocation, input_cv=input_cv,
        output_cv=output_cv, num_requests=num_requests, seed=seed, max_batch=max_batch,
        scheduler_steps=scheduler_steps, trace=trace, prefix_cache_hit_rate=prefix_cache_hit_rate,
        max_batched_tokens=max_batched_tokens, ep=ep,
    )  # fmt: skip
    assumptions = list(inp.precisions.notes)
    draft_it = _draft_iteration(
        draft_model, spec_tokens, acceptance_rate, inp, acc, system, efficiency, assumptions
    )
    mp, cap, reserved = _memory(model, acc, system, inp, draft_model)
    it = iteration_model(
        model, acc, system, tp=inp.tp, pp=inp.pp, precisions=inp.precisions,
        efficiency=efficiency, engine=inp.engine.name, ep=inp.ep,
    )  # fmt: skip
    engine_cap = (inp.max_batch or inp.engine.max_num_seqs) * inp.ep
    b_max = int(min(cap.max_sequences, engine_cap))
    point = load_point(it, inp, b_max, cap)
    assumptions += point.assumptions
    vals: dict[str, Any] = dict(point.values)
    if draft_it is not None and point.tpot_terms:
        vals["speculative_speedup"] = apply_speculative(
            point, it, draft_it, inp, spec_tokens, acceptance_rate
        )
    vals.update(
        _headline_values(point, inp, acc, system, mp, _memory_values(mp, cap, inp, b_max, reserved))
    )
    terms = [
        *_time_terms("ttft", point.ttft_terms, it, acc, system, inp.precisions),
        *_time_terms("tpot", point.tpot_terms, it, acc, system, inp.precisions),
        *_memory_terms(mp, cap, acc, inp, b_max, engine_cap, reserved),
    ]
    assumptions += _closing_assumptions(point, inp)
    return InferenceResult(
        values=vals, interval=_intervals(vals, efficiency), terms=terms,
        assumptions=assumptions, iteration=it,
        extra={"input_tokens": inp.input_tokens, "output_tokens": inp.output_tokens},
        dominant=dominant_term({f"tpot_{k}": v for k, v in point.tpot_terms.items()}),
    )  # fmt: skip

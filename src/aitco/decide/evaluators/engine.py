"""Engine-backed evaluators: sweep rows priced with the training and inference engines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aitco.cost.factors import CostFactors
from aitco.cost.pricing import PAY_AS_USED
from aitco.decide.evaluators.base import (
    DEFAULT_SERVICE_MONTHS,
    PRICING_MODES,
    SERVICE_KEYS,
    SERVICE_TEXT_KEYS,
    SERVING_KEYS,
    SERVING_METRICS,
    TRAINING_KEYS,
    TRAINING_METRICS,
    TRAINING_STACK_OPTIONS,
    chunk_len,
)
from aitco.decide.evaluators.costing import ItemPricing
from aitco.decide.evaluators.tables import (
    HardwareTable,
    ModelTable,
)
from aitco.decide.scenario import DataCosts, OpsAssumptions
from aitco.errors import InputError, PlanError
from aitco.perf import service
from aitco.perf.efficiency import (
    DEFAULT_EFFICIENCY,
    ELEMENTWISE_KERNELS,
    GEMM_LEVELS,
    EfficiencyParams,
)
from aitco.perf.flops import model_shape
from aitco.perf.inference import (
    busy_share,
    chunked_ttft_terms,
    continuous_batching_step,
    continuous_batching_terms,
    estimate_inference,
    iteration_model,
    memory_plan,
    scheduler_wait_s,
    validate_serving_inputs,
)
from aitco.perf.iteration import MemoryPlan
from aitco.perf.kvcache import KVCapacity, kv_capacity
from aitco.perf.memory import OFFLOAD_MODES
from aitco.perf.plan_search import dualpipe_allowed, ep_overlap_allowed
from aitco.perf.training import (
    TRAIN_PRECISIONS,
    evaluate_plans,
    hardware_shape,
    offload_min_zero,
    offload_missing,
)
from aitco.perf.training_model import HOST_LOOPS, LOSS_KERNELS
from aitco.units import (
    DTYPES,
    GIGA,
    SECONDS_PER_HOUR,
)

# ----------------------------------------------------------------------------- engine-backed


@dataclass
class EngineTrainingEvaluator(ItemPricing):
    r"""Training configurations priced with the training engine's vectorised plan model.

    The step time, MFU and memory come from :func:`aitco.perf.training.evaluate_plans` (the
    model ``aitco train`` uses, with its globally fitted efficiencies); the cost from compare's
    item functions (:class:`ItemPricing`).
    ``evaluate_plans`` takes the model, the accelerator, the GPU count, the sequence length and
    the global batch as scalars and the parallel plans as arrays, so a chunk is split into groups
    of equal (hardware, model, precision, gpus, seq_len, global_batch) and each group's plans
    are evaluated in one call: the Python loop runs over groups (tens per chunk), never over
    configurations.

    Notes
    -----
    Productive hours :math:`D / \text{tokens/s}`; the wall clock and the cost are those of
    ``aitco compare``: goodput from :func:`aitco.decide.training_cost.training_goodput`
    (failures, spot preemptions, Young/Daly checkpoints, restarts, firmware) and ``total_usd``
    the sum of the items of :func:`aitco.cost.tco.items_usd` (:class:`ItemPricing`): the same
    model for every pricing mode, owned included.
    """

    hw: HardwareTable
    models: ModelTable
    tokens: float
    accelerators: list[Any]
    systems: list[Any]
    model_archs: list[Any]
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    keys: dict[str, list[Any]] = field(default_factory=lambda: dict(TRAINING_KEYS))
    metrics: tuple[str, ...] = TRAINING_METRICS
    #: Catalog factors of compare's items; required to evaluate (a missing one is an error).
    factors: CostFactors | None = None
    #: Operations choices (checkpointing) as in a scenario's ``ops``.
    ops: OpsAssumptions = field(default_factory=OpsAssumptions)
    #: Data costs as in a scenario's ``data`` (storage tier, stored dataset volume).
    data: DataCosts = field(default_factory=DataCosts)
    #: System each offer code runs on (:func:`aitco.cost.pricing.offer_system`; None: the
    #: hardware's own system), as compare runs the engine on a rented offer's fabric.
    offer_systems: list[Any] = field(default_factory=list)
    #: Share of an unused committed term reused elsewhere (compare's option field).
    committed_reuse_fraction: float = 0.0
    #: ZeRO-Offload mode of every configuration (the sweep's base ``workload.plan.offload``).
    offload: str = "none"
    #: Stack options of every configuration (the sweep's base ``workload.plan.<key>`` for the
    #: keys of :data:`TRAINING_STACK_OPTIONS`; absent: the engine's default).
    stack: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._shapes: dict[Any, Any] = {}
        if self.offload not in OFFLOAD_MODES:
            raise InputError(
                "workload.plan.offload", self.offload, f"one of {', '.join(OFFLOAD_MODES)}"
            )
        for key, v in self.stack.items():
            allowed = TRAINING_STACK_OPTIONS.get(key)
            if allowed is None:
                raise InputError(
                    f"workload.plan.{key}", v, f"one of {', '.join(TRAINING_STACK_OPTIONS)}"
                )
            if v not in allowed:
                raise InputError(f"workload.plan.{key}", v, f"one of {', '.join(allowed)}")

    def _model_shape(self, i: int) -> Any:
        key = ("m", i)
        if key not in self._shapes:
            self._shapes[key] = model_shape(self.model_archs[i])
        return self._shapes[key]

    def _hw_shape(self, h: int, prec: str) -> Any:
        key = ("h", h, prec)
        if key not in self._shapes:
            self._shapes[key] = hardware_shape(self.accelerators[h], prec, self.efficiency)
        return self._shapes[key]

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk (cheap checks on all; the engine on the plausible rows, by group)."""
        n = chunk_len(v)
        h, m = self.hw, self.models
        full = {k: np.broadcast_to(np.asarray(a), (n,)) for k, a in v.items()}
        hw, mdl, prec = full["option.hardware"], full["workload.model"], full["workload.precision"]
        g, tp, pp = full["option.gpus"], full["workload.plan.tp"], full["workload.plan.pp"]
        b, gb = full["workload.plan.micro_batch"], full["workload.global_batch"]
        one = np.ones(n, dtype=np.int64)
        cp = full.get("workload.plan.cp", one)
        ep = full.get("workload.plan.ep", one)
        peak = h.peak_tflops[hw, prec]
        bl = h.bill(hw, full["option.pricing"], full["option.region"], g)
        price = bl["price"]
        train_ok = np.isin(prec, [DTYPES.index(p) for p in TRAIN_PRECISIONS])
        mp = tp * pp * cp
        dp = g // mp
        dpb = dp * b
        reason = np.zeros(n, dtype=np.int64)
        reason |= np.where(np.isnan(peak) | ~train_ok, 64, 0)
        reason |= np.where(np.mod(g, mp) != 0, 1, 0)
        # the checks `aitco train --cp/--ep` makes (cp splits the sequence; EP ranks come from DP)
        n_exp = np.array([float(self._model_shape(i).n_experts) for i in range(len(m.ids))])
        moe = np.array([self._model_shape(i).moe_layers > 0 for i in range(len(m.ids))])
        bad_ep = (ep > 1) & ~moe[mdl] | (np.mod(n_exp[mdl], ep) != 0)
        bad_ep |= np.mod(np.maximum(dp, 1), ep) != 0
        reason |= np.where(bad_ep | (np.mod(full["workload.seq_len"], cp) != 0), 8192, 0)
        # the schedule options `aitco train --pipeline-schedule/--ep-overlap` accept
        zero_i = np.zeros(n, dtype=np.int64)
        dual = full.get("workload.plan.pipeline_schedule", zero_i) == 1
        epo = full.get("workload.plan.ep_comm_overlap", zero_i) == 1
        vp_all = full["workload.plan.vp"]
        n_micro = gb // np.maximum(dpb, 1)
        bad_sched = dual & ~dualpipe_allowed(pp, vp_all, n_micro)
        bad_sched |= epo & ~ep_overlap_allowed(ep, pp, vp_all, full["workload.plan.recompute"])
        reason |= np.where(bad_sched, 16384, 0)
        reason |= np.where(tp > h.scale_up_domain[hw], 2, 0)
        vp = full["workload.plan.vp"]
        reason |= np.where(pp * vp > m.n_layers[mdl], 4, 0)
        reason |= np.where((dpb < 1) | (np.mod(gb, np.maximum(dpb, 1)) != 0), 8, 0)
        reason |= np.where(np.isnan(price), 32, 0)
        osys = np.full(n, -1, dtype=np.int64)  # offer code whose own system runs the plan
        if self.offer_systems:
            has = np.array([x is not None for x in self.offer_systems] + [False])
            code = bl["offer"].astype(np.int64)
            rented = full["option.pricing"] < PRICING_MODES.index("owned")
            osys = np.where(rented & has[code], code, -1)
        if self.offload != "none":  # the checks `aitco train --offload` makes, as reasons
            reason |= self._offload_reasons(hw, prec, osys, full["workload.plan.zero"])
        rows = np.flatnonzero(reason == 0)
        out = {k: np.zeros(rows.size) for k in self.metrics}
        fits = np.zeros(rows.size, dtype=bool)
        if rows.size:
            seq = full["workload.seq_len"][rows]
            outer = np.stack(
                [hw[rows], mdl[rows], prec[rows], g[rows], seq, gb[rows], osys[rows]]
            ).astype(float)
            cut = np.flatnonzero(np.any(np.diff(outer, axis=1) != 0, axis=0)) + 1
            order = np.arange(rows.size)
            if cut.size > rows.size // 64:  # not in runs (a random sample): sort into groups
                order = np.lexsort(outer[::-1])
                cut = np.flatnonzero(np.any(np.diff(outer[:, order], axis=1) != 0, axis=0)) + 1
            for grp in np.split(order, cut):
                r_all = rows[grp]
                # rows differing only in pricing/region share a step time: evaluate each plan once
                code = (
                    (
                        (tp[r_all].astype(np.int64) * 256 + pp[r_all].astype(np.int64)) * 65536
                        + b[r_all].astype(np.int64)
                    )
                    * 4
                    + full["workload.plan.zero"][r_all].astype(np.int64)
                ) * 3 + full["workload.plan.recompute"][r_all].astype(np.int64)
                code = code * 64 + vp[r_all].astype(np.int64)
                code = (code * 1024 + cp[r_all].astype(np.int64)) * 1024 + ep[r_all].astype(
                    np.int64
                )
                code = (code * 2 + dual[r_all]) * 2 + epo[r_all]
                _, first, inv = np.unique(code, return_index=True, return_inverse=True)
                inv = inv.reshape(-1)
                r = r_all[first]
                hi, mi, pi = int(hw[r[0]]), int(mdl[r[0]]), int(prec[r[0]])
                gpus, s_len, gbatch = float(g[r[0]]), float(seq[grp[0]]), float(gb[r[0]])
                t, p_ = tp[r].astype(float), pp[r].astype(float)
                c_, e_ = cp[r].astype(float), ep[r].astype(float)
                oc = int(osys[r[0]])
                st = self.stack
                res = evaluate_plans(
                    self._model_shape(mi),
                    self._hw_shape(hi, DTYPES[pi]),
                    self.systems[hi] if oc < 0 else self.offer_systems[oc],
                    seq_len=s_len,
                    global_batch=gbatch,
                    gpus=gpus,
                    precision=DTYPES[pi],
                    method="full",
                    eff=self.efficiency,
                    tp=t,
                    pp=p_,
                    cp=c_,
                    ep=e_,
                    dp=gpus / (t * p_ * c_),
                    zero=full["workload.plan.zero"][r],
                    micro_batch=b[r].astype(float),
                    recompute=full["workload.plan.recompute"][r],
                    vp=vp[r].astype(float),
                    offload=self.offload,
                    elementwise_kernels=st.get("elementwise_kernels", ELEMENTWISE_KERNELS[0]),
                    loss_kernel=st.get("loss_kernel", LOSS_KERNELS[0]),
                    host_loop=st.get("host_loop", HOST_LOOPS[0]),
                    gemm_level=st.get("gemm_level", GEMM_LEVELS[0]),
                    ep_comm_overlap=epo[r].astype(float),
                    dualpipe=dual[r].astype(float),
                )
                out["step_time_s"][grp] = res["step_time_s"][inv]
                out["tokens_per_s"][grp] = res["tokens_per_s"][inv]
                out["mfu"][grp] = res["mfu"][inv]
                out["memory_per_gpu_gb"][grp] = res["memory_per_gpu_bytes"][inv] / GIGA
                out["dp"][grp] = (gpus / (t * p_ * c_))[inv]
                fits[grp] = res["fits"][inv]
            gr = g[rows].astype(float)
            productive_h = self.tokens / out["tokens_per_s"] / SECONDS_PER_HOUR
            items = self.run_items(
                rows, hw, mdl, full["option.pricing"], g, productive_h, price, bl,
                full["option.region"],
            )  # fmt: skip
            wall_h = items.pop("wall_clock_h")
            instances = bl["instances"][rows]
            out["wall_clock_h"] = wall_h
            out["gpu_hours"] = gr * wall_h
            out["price_usd_per_gpu_h"] = price[rows]
            # the sum of compare's items (compute, instance, reliability, people, power, data)
            out["total_usd"] = sum(items.values(), np.zeros(rows.size))
            out["total_gpus"] = gr
            out["gpus_billed"] = bl["gpus_billed"][rows]
            out["instances"] = instances
            out["offer_code"] = bl["offer"][rows]
        reason[rows] |= np.where(fits, 0, 16)
        out_any: dict[str, np.ndarray] = dict(out)
        out_any["rows"] = rows
        out_any["reason"] = reason
        return out_any

    def _offload_reasons(
        self, hw: np.ndarray, prec: np.ndarray, osys: np.ndarray, zero: np.ndarray
    ) -> np.ndarray:
        """Reason bits of configurations the offload cannot run on (host figures, ZeRO stage)."""
        bits = np.where(zero < offload_min_zero(self.offload), 2048, 0)
        # one check per distinct (hardware, precision, system): a loop over groups, not rows
        for h, p_, oc in np.unique(np.stack([hw, prec, osys], axis=1).astype(np.int64), axis=0):
            dtype = DTYPES[int(p_)]
            if dtype not in TRAIN_PRECISIONS or not self.accelerators[h].supports(dtype):
                continue  # already excluded (reason 64)
            system = self.systems[h] if oc < 0 else self.offer_systems[oc]
            if offload_missing(system, self._hw_shape(int(h), dtype), self.offload):
                bits = bits | np.where((hw == h) & (prec == p_) & (osys == oc), 1024, 0)
        return bits


def _serving_inputs(model: Any, acc: Any, sysm: Any, gpus: int, kw: dict[str, Any]) -> Any:
    """Return the engine's validated inputs of a group, or the reason code of an invalid plan.

    :func:`aitco.perf.inference.validate_serving_inputs`, as ``aitco infer`` checks its flags
    (1: no such plan, 64: a precision the accelerator cannot run).
    """
    ep = int(kw["ep"])
    try:
        if ep > 1 and gpus != ep:
            raise PlanError("workload.ep", ep, f"option.gpus = ep ({gpus} given)")
        return validate_serving_inputs(model, acc, sysm, gpus, **kw)
    except PlanError:
        return 1
    except InputError as exc:
        if exc.field in ("--precision", "--kv-precision"):
            return 64
        if exc.field == "--ep":  # expert parallelism of a dense model: no such plan
            return 1
        raise


def serving_inputs(
    precision: str,
    kv_precision: str | None,
    input_tokens: int,
    output_tokens: int,
    gpus: int,
    engine: str,
    scheduler_steps: int = 1,
    prefix_cache_hit_rate: float = 0.0,
    max_batched_tokens: int | None = None,
    ep: int = 1,
) -> dict[str, Any]:
    """Return the keyword arguments of :func:`~aitco.perf.inference.validate_serving_inputs`.

    For one replica of ``gpus`` accelerators (tensor parallel, or expert parallel when
    ``ep > 1``) in a sweep.
    """
    return {
        "precision": precision, "kv_precision": kv_precision, "input_tokens": input_tokens,
        "output_tokens": output_tokens, "batch": None, "concurrency": None, "qps": None,
        "mode": "offline", "tp": 1 if ep > 1 else gpus, "pp": 1, "slo_ttft_ms": None,
        "slo_tpot_ms": None, "engine": engine, "allocation": "paged", "input_cv": 0.0,
        "output_cv": 0.0, "num_requests": 1, "seed": 0, "max_batch": None,
        "scheduler_steps": scheduler_steps, "trace": None,
        "prefix_cache_hit_rate": prefix_cache_hit_rate, "max_batched_tokens": max_batched_tokens,
        "ep": ep,
    }  # fmt: skip


def serving_capacity(
    model: Any, acc: Any, sysm: Any, gpus: int, kw: dict[str, Any]
) -> tuple[Any, MemoryPlan, KVCapacity] | int:
    """Return the engine's memory side of one serving replica, or the reason bit it is invalid for.

    The inputs validated as ``aitco infer`` validates them (:func:`_serving_inputs`), the
    per-GPU memory plan (:func:`~aitco.perf.inference.memory_plan`) and the KV capacity
    (:func:`~aitco.perf.kvcache.kv_capacity`, the engine's blocks and admission): one
    definition of what fits, for the engine evaluator and the ``fast`` screen alike. Returns 1
    (no such plan), 64 (precision) or 16 (the weights do not fit).
    """
    inp = _serving_inputs(model, acc, sysm, gpus, kw)
    if isinstance(inp, int):
        return inp
    prec, eng = inp.precisions, inp.engine
    mp = memory_plan(model, acc, tp=inp.tp, pp=1, precisions=prec, engine=eng, ep=int(kw["ep"]))
    if not mp.fits:
        return 16
    cap = kv_capacity(
        model, mp.kv_gb, input_tokens=int(kw["input_tokens"]),
        output_tokens=int(kw["output_tokens"]), kv_precision=prec.kv, tp=inp.tp, pp=1,
        block_tokens=eng.kv_block_tokens, admission=eng.kv_admission,
    )  # fmt: skip
    return inp, mp, cap


def _gpu_share(acc: Any, mig: str | None, time_slice: int, gpus: int) -> tuple[Any, int] | int:
    """Return a replica's share of one GPU (MIG slice, time-slicing) and the shares per GPU.

    :func:`aitco.perf.service.fractional_accelerator`; an int is the reason code of a share
    that cannot be (1: more than one GPU, 256: no such MIG slice, 4096: no time-slicing).
    """
    if mig is None and time_slice <= 1:
        return acc, 1
    if gpus != 1:
        return 1
    try:
        acc, slices = service.fractional_accelerator(acc, mig, None, "workload.")
    except InputError:
        return 256
    try:
        acc, ts_shares = service.fractional_accelerator(acc, None, time_slice, "workload.")
    except InputError:
        return 4096
    return acc, slices * ts_shares


@dataclass
class _ServiceGroup:
    """What :class:`EngineServingEvaluator` builds once per group of equal service settings."""

    it: Any
    max_seqs: int
    fixed_gb: float
    usable_gb: float
    cached_tokens: float
    max_num_tokens: int
    chunked_prefill: bool
    mixed_batching: bool
    separate_prefill_tokens: float | None
    scheduler_steps: int
    mig_slices: int
    plans: dict[str, Any]
    layout_fixed: bool


@dataclass
class EngineServingEvaluator(ItemPricing):
    r"""Serving configurations priced with the inference engine's iteration model.

    For each group of equal (hardware, model, precision, KV precision, gpus = accelerators of one
    replica, input and output lengths, service fields) the engine's inputs are validated by
    :func:`aitco.perf.inference.validate_serving_inputs` (as ``aitco infer`` does), and
    :func:`aitco.perf.inference.iteration_model`, :func:`~aitco.perf.inference.memory_plan` and
    :func:`aitco.perf.kvcache.kv_capacity` are built once; the batch sizes of the group are
    evaluated together with :func:`aitco.perf.inference.continuous_batching_step` and
    :func:`~aitco.perf.inference.chunked_ttft_terms` -- the steady-state continuous-batching
    model ``aitco infer --concurrency B`` uses.

    Service fields (:data:`SERVICE_KEYS`): ``prefix_cache_hit_rate`` (cached prompt tokens in
    the step and TTFT), ``scheduler_steps`` (admission wait), ``max_batched_tokens`` (prefill
    chunks), ``ep`` (expert parallel replica of ``gpus = ep`` accelerators), ``mig`` (a slice of
    one GPU, priced per slice), ``time_slice`` (one of N time-slicing replicas of a GPU or MIG
    slice, priced per replica: :func:`aitco.perf.service.fractional_accelerator`), and
    ``disaggregate`` / ``load_profile`` / ``autoscale``, planned
    by :func:`aitco.perf.service.service_plans` on the engine's estimate (the function ``aitco
    infer`` and ``aitco compare`` call): a disaggregated row reports the chosen layout's
    latencies, replicas and price; an autoscaled row is billed for the mean running replicas
    (pay-as-used pricing) and reports the peak as ``replicas``. Both ignore the row's batch.

    Notes
    -----
    TPOT = the mean iteration time at running batch *B*; output tokens/s = B / TPOT; TTFT =
    TPOT = the mean iteration time at running batch *B*; output tokens/s = B / TPOT; TTFT =
    the prompt's chunks beside the *B* decodes (in prefill-only iterations on a prefill-first
    engine) plus the multi-step admission wait; replicas for the arrival rate
    :math:`\lceil q\,o / \text{tokens/s} \rceil`; ``total_usd``, ``usd_per_h`` and $/Mtok from
    compare's items (:meth:`ItemPricing._serving_outputs`). A batch above the KV capacity or the
    engine's ``max_num_seqs`` is invalid (memory). Latencies are steady-state means, not
    percentiles under Poisson load.
    """

    hw: HardwareTable
    models: ModelTable
    accelerators: list[Any]
    systems: list[Any]
    model_archs: list[Any]
    qps: float | None = None
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    engine: str = "vllm"
    keys: dict[str, list[Any]] = field(default_factory=lambda: dict(SERVING_KEYS))
    metrics: tuple[str, ...] = SERVING_METRICS
    #: Service period priced. [months]
    months: float = DEFAULT_SERVICE_MONTHS
    #: Catalog factors of compare's items; required to evaluate (a missing one is an error).
    factors: CostFactors | None = None
    #: Operations choices as in a scenario's ``ops``.
    ops: OpsAssumptions = field(default_factory=OpsAssumptions)
    #: Data costs as in a scenario's ``data`` (stored dataset volume).
    data: DataCosts = field(default_factory=DataCosts)
    #: System each offer code runs on (None: the hardware's own system).
    offer_systems: list[Any] = field(default_factory=list)
    #: Share of an unused committed term reused elsewhere (compare's option field).
    committed_reuse_fraction: float = 0.0
    #: Values of the text service keys, by key (their codes index these lists).
    text_values: dict[str, list[Any]] = field(default_factory=dict)
    #: Pricing modes billed per running hour (autoscaled rows); others hold the peak.
    pay_as_used: tuple[str, ...] = PAY_AS_USED

    def __post_init__(self) -> None:
        self._cache: dict[Any, Any] = {}

    def _text(self, key: str, code: int) -> Any:
        vals = self.text_values.get(key)
        return None if vals is None or code < 0 else vals[code]

    def _group(self, k: tuple[int, ...], svc: tuple[Any, ...] = ()) -> Any:
        """Return a :class:`_ServiceGroup`, or an int reason code.

        ``k`` = (hardware, model, precision, KV precision, gpus, input, output tokens) codes;
        ``svc`` = the :data:`SERVICE_KEYS` values (empty: their defaults).
        """
        key = (k, svc)
        if key not in self._cache:
            self._cache[key] = self._build_group(k, svc)
        return self._cache[key]

    def _build_group(self, k: tuple[int, ...], svc: tuple[Any, ...]) -> Any:
        hi, mi, pi, ki, g, i, o = k
        d = dict(SERVICE_KEYS)
        if svc:
            d.update(zip(SERVICE_KEYS, svc, strict=True))
        hit = float(d["workload.prefix_cache_hit_rate"])
        steps, ep = int(d["workload.scheduler_steps"]), int(d["workload.ep"])
        m = d["workload.max_batched_tokens"]
        mbt = None if m is None or m <= 0 else int(m)
        text = {k: None if d[k] is None else self._text(k, int(d[k])) for k in SERVICE_TEXT_KEYS}
        acc, sysm, model = self.accelerators[hi], self.systems[hi], self.model_archs[mi]
        shared = _gpu_share(acc, text["workload.mig"], int(d["workload.time_slice"]), g)
        if isinstance(shared, int):
            return shared
        acc, slices = shared
        kw = serving_inputs(
            DTYPES[pi], None if ki < 0 else DTYPES[ki], i, o, g, self.engine, steps, hit, mbt, ep
        )
        got = serving_capacity(model, acc, sysm, g, kw)
        if isinstance(got, int):
            return got
        inp, mp, cap = got
        prec, eng = inp.precisions, inp.engine
        it = iteration_model(
            model, acc, sysm, tp=inp.tp, pp=1, precisions=prec, efficiency=self.efficiency,
            engine=eng.name, ep=ep,
        )  # fmt: skip
        plans: dict[str, Any] = {}
        dis, prof, auto = (text[k] for k in SERVICE_TEXT_KEYS[1:])
        if dis is not None and (prof is not None or auto is not None):
            raise InputError(
                "workload.disaggregate", dis, "no load_profile/autoscale with it (one layout)"
            )
        if dis is not None or prof is not None or auto is not None:
            est = estimate_inference(
                model, acc, sysm, g, efficiency=self.efficiency,
                **{k: x for k, x in kw.items() if k not in ("input_cv", "output_cv", "trace")},
            )  # fmt: skip
            assert est.iteration is not None  # set by every estimate_inference
            plans = service.service_plans(
                est.values, est.iteration, sysm, None, input_tokens=float(i),
                output_tokens=float(o), qps=self.qps, disaggregate=dis, load_profile=prof,
                autoscale=auto, prefix_cache_hit_rate=hit, efficiency=self.efficiency,
                field_prefix="workload.",
            )  # fmt: skip
        return _ServiceGroup(
            it, min(cap.max_sequences * ep, eng.max_num_seqs * ep),
            mp.weights_gb + mp.activations_gb, mp.usable_gb, inp.cached_tokens,
            eng.max_num_tokens, eng.chunked_prefill, eng.mixed_batching,
            eng.separate_prefill_tokens, steps, slices, plans, dis not in (None, "auto"),
        )  # fmt: skip

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk of serving configurations, one engine model per group."""
        n = chunk_len(v)
        h = self.hw
        full = {k: np.broadcast_to(np.asarray(a), (n,)) for k, a in v.items()}
        hw, mdl, prec = full["option.hardware"], full["workload.model"], full["workload.precision"]
        kvp, g, bsz = full["workload.kv_precision"], full["option.gpus"], full["workload.batch"]
        i_tok, o_tok = full["workload.input_tokens"], full["workload.output_tokens"]
        svc_keys = [k for k in SERVICE_KEYS if k in full]
        price = h.bill(hw, full["option.pricing"], full["option.region"], g)["price"]
        reason = np.zeros(n, dtype=np.int64)
        # precision support is the engine's call (int4/fp4 weights may run on 16-bit compute)
        reason |= np.where(g > h.scale_up_domain[hw], 2, 0)
        reason |= np.where(np.isnan(price), 32, 0)
        rows = np.flatnonzero(reason == 0)
        tpot = np.zeros(rows.size)
        ttft = np.zeros(rows.size)
        mem = np.zeros(rows.size)
        busy = np.zeros(rows.size)
        slices = np.ones(rows.size)
        groups: list[tuple[np.ndarray, _ServiceGroup]] = []
        if rows.size:
            cols = [hw, mdl, prec, kvp, g, i_tok, o_tok] + [full[k] for k in svc_keys]
            outer = np.stack([np.asarray(c, dtype=float)[rows] for c in cols])
            order = np.lexsort(outer[::-1])
            cut = np.flatnonzero(np.any(np.diff(outer[:, order], axis=1) != 0, axis=0)) + 1
            for grp in np.split(order, cut):
                r = rows[grp]
                k = tuple(int(c[r[0]]) for c in cols[:7])
                svc = {key: float(full[key][r[0]]) for key in svc_keys}
                svc_t = tuple(svc.get(key, dv) for key, dv in SERVICE_KEYS.items()) if svc else ()
                got = self._group(k, svc_t)
                if isinstance(got, int):
                    reason[r] |= got
                    continue
                b = bsz[r].astype(float)
                reason[r] |= np.where(b > got.max_seqs, 16, 0)
                i, o, c = float(k[5]), float(k[6]), got.cached_tokens
                # prefill-first engines run prompts in their own iterations (decodes stall)
                sep = got.separate_prefill_tokens
                step_terms = continuous_batching_terms(got.it, b, i, o, c, sep)
                step = continuous_batching_step(got.it, b, i, o, c, sep)
                terms = chunked_ttft_terms(
                    got.it, b, i, o, c, got.max_num_tokens, got.chunked_prefill,
                    got.mixed_batching,
                )  # fmt: skip
                tpot[grp] = step
                busy[grp] = busy_share(step_terms, step)
                ttft[grp] = (
                    sum(terms.values())
                    + got.it.request_path_s
                    + scheduler_wait_s(got.scheduler_steps, step)
                )
                frac = np.minimum(b / max(got.max_seqs, 1), 1.0)
                mem[grp] = got.fixed_gb + (got.usable_gb - got.fixed_gb) * frac
                slices[grp] = got.mig_slices
                if got.plans:
                    groups.append((grp, got))
        keep = reason[rows] == 0
        pos = np.full(rows.size, -1)
        pos[np.flatnonzero(keep)] = np.arange(int(keep.sum()))
        rows, tpot, ttft, mem = rows[keep], tpot[keep], ttft[keep], mem[keep]
        busy, slices = busy[keep], slices[keep]
        b = bsz[rows].astype(float)
        o = o_tok[rows].astype(float)
        tok_s = b / tpot
        gr = g[rows].astype(float)
        pricing = full["option.pricing"][rows]
        region = full["option.region"][rows]
        out = self._serving_outputs(
            hw[rows], pricing, region, ttft, tpot, tok_s, o, gr, busy, slices=slices
        )
        for grp, got in groups:
            at = pos[grp]
            at = at[at >= 0]
            if at.size and not self._plan_rows(
                out, at, got, hw[rows], pricing, region, o, gr, busy, slices
            ):
                reason[rows[at]] |= 512
        # no eligible offer for the replicas: invalid, price
        reason[rows] |= np.where(np.isnan(out["total_usd"]), 32, 0)
        return {**out, "memory_per_gpu_gb": mem, "rows": rows, "reason": reason}

    def _plan_rows(
        self, out: dict[str, np.ndarray], at: np.ndarray, got: _ServiceGroup, hw: np.ndarray,
        pricing: np.ndarray, region: np.ndarray, o: np.ndarray, g: np.ndarray,
        busy_share: np.ndarray, slices: np.ndarray,
    ) -> bool:  # fmt: skip
        """Replace the outputs of disaggregated or autoscaled rows ``at`` by their plan's.

        The plan's replicas (and, autoscaled on a pay-as-used offer, its running share of the
        hours) are priced with the same items as every service
        (:meth:`ItemPricing._serving_outputs`). Returns whether the plan carries the load (a
        disaggregated layout meeting its objectives; an autoscaled day always does, its
        unserved share aside).
        """
        pool, day = got.plans.get("disaggregation"), got.plans.get("autoscale")
        hours_share = np.ones(at.size)
        if pool is not None:
            mode = "disaggregated" if got.layout_fixed else pool["chosen"]
            p = pool[mode] or pool["disaggregated"]
            replicas = float(p["prefill_replicas"] + p["decode_replicas"])
            rps = float(p["requests_per_s"])
            qps = self.qps if self.qps is not None else rps
            ttft, tpot = float(p["ttft_s"]), float(p["tpot_s"])
            out["ttft_s"][at] = ttft
            out["tpot_s"][at] = tpot
            out["e2e_latency_s"][at] = ttft + (o[at] - 1.0) * tpot
        else:
            assert day is not None  # a group has plans only with one of the two
            replicas = float(max(int(day["peak_replicas"]), 1))
            rps = replicas * float(day["requests_per_s_per_replica"])
            qps = float(np.mean(day["qps_by_hour"]))
            payg = np.isin(pricing[at], [PRICING_MODES.index(m) for m in self.pay_as_used])
            hours_share = np.where(payg, float(day["mean_replicas"]) / replicas, 1.0)
        tok_s = np.full(at.size, rps * 1.0) * o[at] / replicas
        plan = self._serving_outputs(
            hw[at], pricing[at], region[at], out["ttft_s"][at], out["tpot_s"][at], tok_s, o[at],
            g[at], busy_share[at], slices=slices[at], replicas=np.full(at.size, replicas),
            qps=qps, hours_share=hours_share,
        )  # fmt: skip
        for k in ("replicas", "total_gpus", "requests_per_s", "output_tokens_per_s", "total_usd",
                  "usd_per_h", "usd_per_million_output_tokens", "price_usd_per_gpu_h",
                  "gpus_billed", "instances", "offer_code"):  # fmt: skip
            out[k][at] = plan[k]
        return bool(p["meets_slo"]) if pool is not None else True

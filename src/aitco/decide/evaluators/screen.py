"""The ``fast`` screening evaluators: the engines' relations on arrays, with a screened time.

A screen ranks millions of plans quickly and leaves the winners to the engines. It is one
performance model with the engines, not a second one: what a plan *needs* comes from the engines'
relations, evaluated on the sweep's arrays -- training memory per GPU and whether it fits
(:func:`aitco.perf.memory.training_memory_bytes`, as ``aitco train``), the model and hardware
FLOPs per token (:mod:`aitco.perf.flops`), the serving memory plan, KV capacity and KV bytes
(:func:`~aitco.decide.evaluators.engine.serving_capacity`,
:func:`aitco.perf.kvcache.kv_cache_bytes`), the collectives (:mod:`aitco.perf.comms`) and the
constants of those modules. Only the *time* is a screen: a roofline of those FLOPs and bytes at
the fitted efficiencies, without the engines' kernel, memory-bound, overlap and scheduler terms.
The screened metrics are named in :data:`SCREENED_METRICS` (echoed by a sweep as
``screened_metrics``); ``tests/decide/test_screen_vs_engine.py`` holds the screen against the
engine formula by formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aitco.cost.factors import CostFactors
from aitco.decide.evaluators.base import (
    DEFAULT_SERVICE_MONTHS,
    SERVING_KEYS,
    SERVING_METRICS,
    TRAINING_KEYS,
    TRAINING_METRICS,
    chunk_len,
    gather,
)
from aitco.decide.evaluators.costing import ItemPricing
from aitco.decide.evaluators.engine import serving_capacity, serving_inputs
from aitco.decide.evaluators.tables import HardwareTable, ModelTable
from aitco.decide.scenario import DataCosts, OpsAssumptions
from aitco.perf.comms import allgather_time_s, allreduce_time_s, reduce_scatter_time_s
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.flops import (
    FORWARD_FLOPS_PER_PARAM,
    model_shape,
    recompute_flops_per_token,
    training_flops_per_token,
)
from aitco.perf.kvcache import kv_cache_bytes
from aitco.perf.memory import (
    ADAM_FP32_BYTES,
    grad_bytes_per_param,
    training_memory_bytes,
    weight_bytes_per_param,
)
from aitco.perf.training import TRAIN_PRECISIONS, hardware_shape
from aitco.perf.training_model import BACKWARD_SHARE
from aitco.units import BYTES_PER_DTYPE, DTYPES, GIGA, SECONDS_PER_HOUR, TERA

# ----------------------------------------------------------------------------- named constants
#: Tensor-parallel all-reduces per layer per micro-batch (2 forward + 2 backward), Megatron-LM
#: (Shoeybi et al., arXiv:1909.08053, fig. 4); full recomputation repeats the 2 forward ones.
TP_ALLREDUCES_PER_LAYER = 4.0
#: Tensor-parallel all-reduces per layer of a forward (decode) pass: after attention and FFN.
TP_ALLREDUCES_PER_LAYER_FORWARD = 2.0
#: The metrics the screens estimate (a roofline of the engines' FLOPs and bytes) rather than take
#: from the engines; every other metric is the engines' relation or compare's cost items on them.
SCREENED_METRICS: dict[str, tuple[str, ...]] = {
    "training": (
        "step_time_s", "tokens_per_s", "mfu", "wall_clock_h", "gpu_hours", "total_usd",
    ),
    "serving": (
        "ttft_s", "tpot_s", "e2e_latency_s", "output_tokens_per_s", "requests_per_s",
        "replicas", "total_gpus", "usd_per_h", "usd_per_million_output_tokens", "total_usd",
        "gpus_billed", "instances",
    ),
}  # fmt: skip


@dataclass
class TrainingEvaluator(ItemPricing):
    r"""Training screen: memory, FLOPs and cost as the engine; step time as a roofline screen.

    Parameters
    ----------
    hw : HardwareTable
        Hardware arrays and price cube.
    models : ModelTable
        Model arrays.
    tokens : float
        Tokens to train on. [tokens]
    efficiency : EfficiencyParams
        GEMM (per family and precision), link and overlap efficiencies.
    accelerators, systems, model_archs : list
        Catalog records of the swept hardware and models (engine shapes, power items, checkpoint
        sizes).
    factors, ops, data, offer_systems, committed_reuse_fraction
        The cost inputs of :class:`ItemPricing` (compare's items).

    Notes
    -----
    The engine's relations, on the sweep's arrays (grouped by model and precision, the only
    scalars they take): memory per GPU and ``fits`` are
    :func:`aitco.perf.memory.training_memory_bytes` as ``aitco train`` calls it (equal to the
    engine evaluator for the same plan, tested); the model FLOPs per token :math:`F_m`
    (:func:`aitco.perf.flops.training_flops_per_token`, the MFU basis) and the hardware FLOPs
    :math:`F_h = F_m + F_{rc}` (with recomputation); the peaks and GEMM efficiency of
    :func:`aitco.perf.training.hardware_shape`; the precisions ``aitco train`` takes.

    The screen (per configuration, :math:`d = g/(t p)` replicas, :math:`m = B/(d\,b)`
    micro-batches per step, :math:`T = B s` tokens per step, ring all-reduces
    :func:`aitco.perf.comms.allreduce_time_s`):

    .. math::

        t_{comp} &= T F_h / (g\, \eta_{gemm} P) \\
        t_{tp} &= m \frac{L}{p}\, 4\, AR(b s d_{model} \beta_{act}, t) \\
        t_{dp} &= AR(P_{dev} \beta_{grad}, d), \quad
        t_{z3} = 2\, AG(P_{dev} \beta_{w}, d) + RS(P_{dev} \beta_{grad}, d) \\
        t_{step} &= (t_{comp} + t_{tp})(1 + (p-1)/(v m)) + \begin{cases}
            t_{dp} - \eta_{ov} \min(t_{dp}, \tfrac{2}{3}(t_{comp} + t_{tp})) & z < 3 \\
            m\,(t_{z3} - \eta_{ov} \min(t_{z3}, (t_{comp} + t_{tp})/m)) & z = 3
        \end{cases}

    with :math:`P_{dev}` the parameters a device holds. It leaves out the engine's attention
    kernel rate, memory-bound kernels, optimizer step, step overhead and TP overlap, so it reads
    faster than ``aitco train``; ranking, not the figure, is what it is for. The dollars are
    compare's items on the screened productive hours (:meth:`ItemPricing.run_items`).
    """

    hw: HardwareTable
    models: ModelTable
    tokens: float
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    keys: dict[str, list[Any]] = field(default_factory=lambda: dict(TRAINING_KEYS))
    metrics: tuple[str, ...] = TRAINING_METRICS
    accelerators: list[Any] = field(default_factory=list)
    systems: list[Any] = field(default_factory=list)
    model_archs: list[Any] = field(default_factory=list)
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
    #: The metrics this evaluator screens (:data:`SCREENED_METRICS`).
    screened: tuple[str, ...] = SCREENED_METRICS["training"]

    def __post_init__(self) -> None:
        # the engine's peaks and GEMM efficiency per (hardware, precision); NaN where
        # ``aitco train`` refuses the precision
        shape = (len(self.hw.ids), len(DTYPES))
        self._peak = np.full(shape, np.nan)  # matmul peak at the power-limited clock [TFLOP/s]
        self._peak_mfu = np.full(shape, np.nan)  # nominal peak, the MFU basis [TFLOP/s]
        self._gemm = np.full(shape, np.nan)
        for h, acc in enumerate(self.accelerators):
            for j, dt in enumerate(DTYPES):
                if dt in TRAIN_PRECISIONS and acc.supports(dt):
                    hs = hardware_shape(acc, dt, self.efficiency)
                    self._peak[h, j] = hs.peak_linear_tflops
                    self._peak_mfu[h, j] = hs.peak_mfu_tflops
                    self._gemm[h, j] = hs.gemm_efficiency
        self._shapes = [model_shape(m) for m in self.model_archs]

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk of training configurations (see the class Notes).

        The cheap plan checks (divisibility, scale-up domain, precision, price) run on the whole
        chunk; the model runs only on the configurations that pass them, whose positions are
        returned as ``rows`` (the metrics have one value per row).
        """
        n = chunk_len(v)
        h, m = self.hw, self.models
        hw, mdl, prec = v["option.hardware"], v["workload.model"], v["workload.precision"]
        g, tp, pp = v["option.gpus"], v["workload.plan.tp"], v["workload.plan.pp"]
        b, gb = v["workload.plan.micro_batch"], v["workload.global_batch"]
        pricing, region = v["option.pricing"], v["option.region"]
        peak = self._peak[hw, prec]
        bl = h.bill(hw, pricing, region, g)
        price = bl["price"]
        mp = tp * pp
        dpb = (g // mp) * b
        reason = np.zeros(n, dtype=np.int64)
        reason |= np.where(np.isnan(peak), 64, 0)
        reason |= np.where(np.mod(g, mp) != 0, 1, 0)
        reason |= np.where(tp > h.scale_up_domain[hw], 2, 0)
        reason |= np.where(pp * v["workload.plan.vp"] > m.n_layers[mdl], 4, 0)
        reason |= np.where((g > h.devices_per_node[hw]) & (h.inter_bw_gb_s[hw] <= 0), 128, 0)
        reason |= np.where((dpb < 1) | (np.mod(gb, np.maximum(dpb, 1)) != 0), 8, 0)
        reason |= np.where(np.isnan(price), 32, 0)
        rows = np.flatnonzero(reason == 0)
        sub = {k: np.broadcast_to(gather(a, rows), (rows.size,)) for k, a in v.items()}
        billing = {k: gather(a, rows) for k, a in bl.items()}
        met = self._model(sub, gather(price, rows), billing)
        reason[rows] |= np.where(met.pop("fits") > 0, 0, 16)
        if rows.size:
            productive_h = self.tokens / met["tokens_per_s"] / SECONDS_PER_HOUR
            items = self.run_items(
                rows, np.broadcast_to(hw, (n,)), np.broadcast_to(mdl, (n,)),
                np.broadcast_to(pricing, (n,)), np.broadcast_to(g, (n,)), productive_h,
                np.broadcast_to(price, (n,)), {k: np.broadcast_to(a, (n,)) for k, a in bl.items()},
                np.broadcast_to(region, (n,)),
            )  # fmt: skip
            wall_h = items.pop("wall_clock_h")
            met["wall_clock_h"] = wall_h
            met["gpu_hours"] = met["total_gpus"] * wall_h
            # the sum of compare's items (compute, instance, reliability, people, power, data)
            met["total_usd"] = sum(items.values(), np.zeros(rows.size))
        met["rows"] = rows
        met["reason"] = reason
        return met

    def _engine_relations(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """FLOPs per token, memory per GPU and the per-device shard: the engine's relations.

        Evaluated on the rows' arrays, one call per (model, precision, sequence length) of the
        chunk (the scalars the relations take).
        """
        mdl, prec = v["workload.model"], v["workload.precision"]
        g = v["option.gpus"].astype(float)
        tp = v["workload.plan.tp"].astype(float)
        pp = v["workload.plan.pp"].astype(float)
        b = v["workload.plan.micro_batch"].astype(float)
        s = v["workload.seq_len"].astype(float)
        dp = g / (tp * pp)
        names = ("model_fpt", "hw_fpt", "mem", "params", "grad_b", "weight_b")
        out = {k: np.zeros(mdl.size) for k in names}
        groups, inv = np.unique(np.stack([mdl, prec, s]), axis=1, return_inverse=True)
        inv = inv.reshape(-1)
        for j in range(groups.shape[1]):
            r = np.flatnonzero(inv == j)
            mi, pi, seq = int(groups[0, j]), int(groups[1, j]), float(groups[2, j])
            ms, dt = self._shapes[mi], DTYPES[pi]
            rec = v["workload.plan.recompute"][r]
            out["model_fpt"][r] = training_flops_per_token(ms, seq)
            out["hw_fpt"][r] = out["model_fpt"][r] + recompute_flops_per_token(ms, seq, rec)
            mem = training_memory_bytes(
                ms, seq_len=seq, precision=dt, method="full", optimizer_bytes=ADAM_FP32_BYTES,
                tp=tp[r], pp=pp[r], cp=1.0, ep=1.0, dp=dp[r], zero=v["workload.plan.zero"][r],
                micro_batch=b[r], recompute=rec,
                n_micro=np.ceil(v["workload.global_batch"][r] / (b[r] * dp[r])),
                vp=v["workload.plan.vp"][r].astype(float),
            )  # fmt: skip
            out["mem"][r] = mem["total"]
            out["params"][r] = mem["params_per_device"]
            out["grad_b"][r] = grad_bytes_per_param(dt)
            # what a ZeRO-3 all-gather moves per weight (fp8 training gathers the 16-bit copy)
            out["weight_b"][r] = min(weight_bytes_per_param(dt, "full"), 2.0)
        return out

    def _model(
        self, v: dict[str, np.ndarray], price: np.ndarray, billing: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Apply the engine's relations and the step-time screen to configurations that passed."""
        h, m = self.hw, self.models
        hw, mdl, prec = v["option.hardware"], v["workload.model"], v["workload.precision"]
        g = v["option.gpus"].astype(float)
        tp = v["workload.plan.tp"].astype(float)
        pp = v["workload.plan.pp"].astype(float)
        b = v["workload.plan.micro_batch"].astype(float)
        rec, zero = v["workload.plan.recompute"], v["workload.plan.zero"]
        s = v["workload.seq_len"].astype(float)
        gb = v["workload.global_batch"].astype(float)
        e = self._engine_relations(v)
        layers, dm = m.n_layers[mdl], m.d_model[mdl]
        dp = g / (tp * pp)
        mb_per_step = gb / (dp * b)
        tokens_step = gb * s
        t_comp = (
            tokens_step * e["hw_fpt"] / (g * self._gemm[hw, prec] * self._peak[hw, prec] * TERA)
        )
        # tensor-parallel all-reduces of the activations over the scale-up fabric
        act_b = np.where(prec == DTYPES.index("fp32"), 4.0, 2.0)
        n_ar = TP_ALLREDUCES_PER_LAYER + np.where(rec == 2, TP_ALLREDUCES_PER_LAYER / 2.0, 0.0)
        ar_tp = allreduce_time_s(
            b * s * dm * act_b, tp, h.intra_bw_gb_s[hw], h.intra_latency_us[hw],
            self.efficiency.intra_node_link,
        )  # fmt: skip
        t_tp = mb_per_step * (layers / pp) * n_ar * ar_tp
        bubble = (pp - 1.0) / (v["workload.plan.vp"] * mb_per_step)
        # data-parallel traffic: a DP group's members are tp devices apart, so it leaves the
        # scale-up domain when dp x tp devices do not fit in it (as :func:`comms.group_link`)
        spans = dp * tp > h.scale_up_domain[hw]
        link = (
            dp,
            np.where(spans, h.inter_bw_gb_s[hw], h.intra_bw_gb_s[hw]),
            np.where(spans, h.inter_latency_us[hw], h.intra_latency_us[hw]),
            np.where(spans, self.efficiency.scale_out_link, self.efficiency.intra_node_link),
        )
        grads = e["params"] * e["grad_b"]
        overlap = self.efficiency.dp_overlap
        # ZeRO 0-2: the gradient all-reduce per step, hidden behind the backward pass only
        t_dp = allreduce_time_s(grads, *link)
        window = BACKWARD_SHARE * (t_comp + t_tp)
        sync = np.where(zero >= 3, 0.0, t_dp - overlap * np.minimum(t_dp, window))
        # ZeRO-3: per micro-batch, 2 weight all-gathers and a gradient reduce-scatter, hidden
        # behind that micro-batch's work (the engine's terms, :func:`dp_comm_times_s`)
        z3_mb = 2.0 * allgather_time_s(e["params"] * e["weight_b"], *link)
        z3_mb = z3_mb + reduce_scatter_time_s(grads, *link)
        t_mb = (t_comp + t_tp) / mb_per_step
        z3 = np.where(
            (zero >= 3) & (dp > 1), mb_per_step * (z3_mb - overlap * np.minimum(z3_mb, t_mb)), 0.0
        )
        step = (t_comp + t_tp) * (1.0 + bubble) + z3 + sync
        tps = tokens_step / step
        wall_h = self.tokens / tps / SECONDS_PER_HOUR
        return {
            "step_time_s": step,
            "tokens_per_s": tps,
            "mfu": e["model_fpt"] * tps / (g * self._peak_mfu[hw, prec] * TERA),
            "memory_per_gpu_gb": e["mem"] / GIGA,
            "wall_clock_h": wall_h,
            "gpu_hours": g * wall_h,
            "price_usd_per_gpu_h": price,
            "total_usd": np.full_like(wall_h, math.nan),  # set by evaluate (compare's items)
            "dp": dp,
            "total_gpus": g,
            "gpus_billed": billing["gpus_billed"] * np.ones_like(g),
            "instances": billing["instances"] * np.ones_like(g),
            "offer_code": billing["offer"] * np.ones_like(g),
            # the engine's criterion: the whole per-device total within the device memory
            "fits": (e["mem"] <= h.memory_gb[hw] * GIGA).astype(np.int8),
        }


@dataclass
class ServingEvaluator(ItemPricing):
    r"""Serving screen: a replica of ``gpus`` accelerators (tensor parallel) at a batch.

    Parameters
    ----------
    hw, models : HardwareTable, ModelTable
        Lookup tables.
    qps : float, optional
        Arrival rate to serve; sets the replica count. [requests/s]
    efficiency : EfficiencyParams
        GEMM (per family), HBM and link efficiencies.
    accelerators, systems, model_archs : list
        Catalog records of the swept hardware and models (the engine's memory plan).
    engine : str
        Serving engine whose memory limits apply (as ``aitco infer --engine``).

    Notes
    -----
    The engine's relations, once per (hardware, model, precision, KV precision, gpus, lengths)
    of the chunk (:func:`~aitco.decide.evaluators.engine.serving_capacity`, as the engine
    evaluator): the precisions ``aitco infer`` resolves, the stored weights *W* per replica, the
    memory plan and the KV capacity, so a batch is valid exactly when the engine admits it
    (:math:`B \le` the sequences the KV cache holds) and ``memory_per_gpu_gb`` is the engine's.
    KV bytes per sequence of :math:`c` tokens, :math:`k(c)`, are the one KV-bytes formula
    (:func:`aitco.perf.kvcache.kv_cache_bytes`: MLA latents, sliding windows), on arrays.

    The screen, with batch *B*, mean context :math:`c = i + o/2`, *g* devices of peak *P* and
    bandwidth *H* per replica:

    .. math::

        t_{pre} &= \max(2 N_a i / (g \eta P),\; W / (g \eta_H H)) \\
        \mathrm{TPOT} &= \max(2 N_a B / (g \eta P),\; (W + B\, k(c))/(g \eta_H H))
                        + 2 L\, AR(B d \beta, g) \\
        \mathrm{TTFT} &= t_{pre} + \mathrm{TPOT} \\
        \text{tokens/s} &= B o / (B t_{pre} + o\,\mathrm{TPOT})

    (continuous batching: each admitted request's prefill stalls the batch once), without the
    engine's attention, kernel-launch, scheduler and request-path terms. Replicas,
    ``total_usd`` (compare's items for ``months``), ``usd_per_h`` and $/Mtok as in
    :meth:`ItemPricing._serving_outputs`. Latencies are unloaded (no queueing); use
    ``aitco infer`` for percentiles under load.
    """

    hw: HardwareTable
    models: ModelTable
    qps: float | None = None
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    keys: dict[str, list[Any]] = field(default_factory=lambda: dict(SERVING_KEYS))
    metrics: tuple[str, ...] = SERVING_METRICS
    accelerators: list[Any] = field(default_factory=list)
    systems: list[Any] = field(default_factory=list)
    model_archs: list[Any] = field(default_factory=list)
    #: Service period priced. [months]
    months: float = DEFAULT_SERVICE_MONTHS
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
    #: Serving engine whose memory limits apply (as the engine evaluator's).
    engine: str = "vllm"
    #: The metrics this evaluator screens (:data:`SCREENED_METRICS`).
    screened: tuple[str, ...] = SCREENED_METRICS["serving"]

    def __post_init__(self) -> None:
        self._groups: dict[tuple[int, ...], tuple[float, ...] | int] = {}

    def _group(self, k: tuple[int, ...]) -> tuple[float, ...] | int:
        """Return the engine's memory side of one group, or its reason bit.

        ``k`` = (hardware, model, precision, KV precision, gpus, input, output) codes; the tuple
        is (max sequences, fixed GB, usable GB, weight bytes of the replica, KV bytes per
        element, compute dtype code, activation bytes).
        """
        if k not in self._groups:
            hi, mi, pi, ki, g, i, o = k
            kw = serving_inputs(DTYPES[pi], None if ki < 0 else DTYPES[ki], i, o, g, self.engine)
            model = self.model_archs[mi]
            got = serving_capacity(model, self.accelerators[hi], self.systems[hi], g, kw)
            if isinstance(got, int):
                self._groups[k] = got
            else:
                inp, mp, cap = got
                pr = inp.precisions
                self._groups[k] = (
                    float(min(cap.max_sequences, inp.engine.max_num_seqs)),
                    mp.weights_gb + mp.activations_gb,
                    mp.usable_gb,
                    mp.weights_gb * GIGA * inp.tp,
                    BYTES_PER_DTYPE[pr.kv],
                    float(DTYPES.index(pr.compute)),
                    BYTES_PER_DTYPE[pr.activations],
                )
        return self._groups[k]

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk of serving configurations (see the class Notes)."""
        n = chunk_len(v)  # constant keys may be length-1 arrays
        full = {k: np.broadcast_to(np.asarray(a), (n,)) for k, a in v.items()}
        hw, mdl, prec = full["option.hardware"], full["workload.model"], full["workload.precision"]
        kvp, g_i = full["workload.kv_precision"], full["option.gpus"]
        i_i, o_i = full["workload.input_tokens"], full["workload.output_tokens"]
        h, m = self.hw, self.models
        reason = np.where(g_i > h.scale_up_domain[hw], 2, 0).astype(np.int64)
        # the engine's memory side, once per group of the chunk
        cols = np.stack([hw, mdl, prec, kvp, g_i, i_i, o_i]).astype(np.int64)
        keys, inv = np.unique(cols, axis=1, return_inverse=True)
        inv = inv.reshape(-1)
        grp = np.full((keys.shape[1], 7), np.nan)
        for j in range(keys.shape[1]):
            got = self._group(tuple(int(x) for x in keys[:, j]))
            if isinstance(got, int):
                reason[inv == j] |= got
            else:
                grp[j] = got
        max_seqs, fixed_gb, usable_gb, w_bytes, kv_b, comp, act_b = (grp[inv, c] for c in range(7))
        bsz = full["workload.batch"].astype(float)
        reason |= np.where(bsz > max_seqs, 16, 0)  # NaN (invalid group) compares False
        g, i, o = g_i.astype(float), i_i.astype(float), o_i.astype(float)
        peak = h.peak_tflops[hw, np.where(np.isnan(comp), 0, comp).astype(np.int64)]
        reason |= np.where(np.isnan(peak) & (reason == 0), 64, 0)
        rows = np.flatnonzero(reason == 0)
        hw, mdl, g, i, o, bsz = hw[rows], mdl[rows], g[rows], i[rows], o[rows], bsz[rows]
        w_bytes, kv_b, peak, act_b = w_bytes[rows], kv_b[rows], peak[rows], act_b[rows]
        eff = h.gemm_eff[hw]
        hbm = h.hbm_bandwidth_gb_s[hw] * GIGA * self.efficiency.hbm
        flops_tok = FORWARD_FLOPS_PER_PARAM * m.active_params[mdl]
        t_pre = np.maximum(flops_tok * i / (g * eff * peak * TERA), w_bytes / (g * hbm))
        kv_seq = kv_cache_bytes(
            m.kv_elements[mdl], m.n_layers[mdl], m.kv_window_layers[mdl], m.kv_window[mdl],
            i + o / 2.0, kv_b,
        )  # fmt: skip
        ar = allreduce_time_s(
            bsz * m.d_model[mdl] * act_b, g, h.intra_bw_gb_s[hw], h.intra_latency_us[hw],
            self.efficiency.intra_node_link,
        )  # fmt: skip
        busy_s = np.maximum(
            flops_tok * bsz / (g * eff * peak * TERA), (w_bytes + bsz * kv_seq) / (g * hbm)
        )
        tpot = busy_s + TP_ALLREDUCES_PER_LAYER_FORWARD * m.n_layers[mdl] * ar
        ttft = t_pre + tpot
        tok_s = bsz * o / (bsz * t_pre + o * tpot)
        # the engine evaluator's figure: fixed memory plus the KV share the batch takes
        frac = np.minimum(bsz / np.maximum(max_seqs[rows], 1.0), 1.0)
        mem_gb = fixed_gb[rows] + (usable_gb[rows] - fixed_gb[rows]) * frac
        out = self._serving_outputs(
            hw, full["option.pricing"][rows], full["option.region"][rows], ttft, tpot, tok_s, o,
            g, busy_s / tpot,
        )  # fmt: skip
        # no eligible offer for the replicas (or one replica): invalid, price
        reason[rows] |= np.where(np.isnan(out["total_usd"]), 32, 0)
        return {**out, "memory_per_gpu_gb": mem_gb, "rows": rows, "reason": reason}

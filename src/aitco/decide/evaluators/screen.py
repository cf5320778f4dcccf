"""The ``fast`` screening evaluators: compact analytic training and serving models."""

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
from aitco.decide.evaluators.tables import (
    KV_TENSORS,
    HardwareTable,
    ModelTable,
)
from aitco.decide.scenario import DataCosts, OpsAssumptions
from aitco.perf.efficiency import (
    DEFAULT_EFFICIENCY,
    EfficiencyParams,
)
from aitco.units import (
    BYTES_PER_DTYPE,
    DTYPES,
    GIGA,
    SECONDS_PER_HOUR,
    TERA,
)

# ----------------------------------------------------------------------------- named constants
#: Bytes of model state per parameter for mixed-precision Adam: bf16 weights (2) + bf16
#: gradients (2) + fp32 master weights, momentum and variance (12). Rajbhandari et al., "ZeRO:
#: memory optimizations toward training trillion parameter models", SC20, sec. 3.1 (16 psi).
ADAM_STATE_BYTES_PER_PARAM = 12.0
WEIGHT_BYTES_TRAINING = 2.0
GRAD_BYTES_TRAINING = 2.0
#: Activation bytes per token per layer per unit of d_model without recomputation, with tensor
#: and sequence parallelism: 34 (Korthikanti et al., arXiv:2205.05198, eq. 2, sbh(34 + 5as/h)).
ACT_BYTES_COEFF = 34.0
#: Attention-score term of the same equation (5 a s / h), dropped by selective recomputation.
ACT_ATTN_COEFF = 5.0
#: Full recomputation keeps only the layer input: 2 bytes per token per d_model (ibid., sec. 5).
ACT_FULL_RECOMPUTE_COEFF = 2.0
#: Share of a step's compute in the backward pass (2 of 3 matmul passes): the window the
#: data-parallel gradient all-reduce can overlap with.
BACKWARD_SHARE = 2.0 / 3.0
#: Training FLOPs per parameter per token (forward 2 + backward 4); Kaplan et al. 2020.
TRAIN_FLOPS_PER_PARAM = 6.0
#: Attention FLOPs per token per layer per (seq_len x d_model), forward+backward (PaLM App. B:
#: 6 * n_layers * seq * d_attn * 2, halved for causal masking -> 6).
ATTN_FLOPS_COEFF = 6.0
#: Extra forward pass under full recomputation: 2 of the 6 FLOPs per parameter again.
FULL_RECOMPUTE_EXTRA = 2.0 / 6.0
#: Tensor-parallel all-reduces per layer per micro-batch (2 forward + 2 backward), Megatron-LM
#: (Shoeybi et al., arXiv:1909.08053, fig. 4).
TP_ALLREDUCES_PER_LAYER = 4.0
#: Fraction of device memory usable by the model (framework, CUDA context and fragmentation take
#: the rest); PyTorch/NCCL reserve a few GB on an 80 GB device.
USABLE_MEMORY_FRACTION = 0.9
#: Inference FLOPs per active parameter per token (one forward pass).
INFER_FLOPS_PER_PARAM = 2.0


_DTYPE_BYTES = np.array([BYTES_PER_DTYPE[d] for d in DTYPES])


def _ring_allreduce_s(
    msg_bytes: np.ndarray, n: np.ndarray, bw_gb_s: np.ndarray, lat_us: np.ndarray, eff: float
) -> np.ndarray:
    r"""Ring all-reduce time, :math:`2\frac{n-1}{n}\frac{M}{\eta B} + 2(n-1)\alpha`.

    Same formula as :func:`aitco.perf.comms.allreduce_time_s` (ring); inlined so that the sweep
    needs no per-call argument validation on million-element arrays.
    """
    frac = np.where(n > 1, (n - 1.0) / n, 0.0)
    return (
        2.0 * frac * msg_bytes / (eff * bw_gb_s * GIGA)
        + 2.0 * np.maximum(n - 1.0, 0.0) * lat_us * 1e-6
    )


@dataclass
class TrainingEvaluator(ItemPricing):
    r"""Vectorised training plan model: step time, memory, wall clock and cost per configuration.

    Parameters
    ----------
    hw : HardwareTable
        Hardware arrays and price cube.
    models : ModelTable
        Model arrays.
    tokens : float
        Tokens to train on. [tokens]
    efficiency : EfficiencyParams
        Link and overlap efficiencies.
    accelerators, systems, model_archs : list
        Catalog records of the swept hardware and models (power items, checkpoint sizes).
    factors, ops, data, offer_systems, committed_reuse_fraction
        The cost inputs of :class:`ItemPricing` (compare's items).

    Notes
    -----
    Per configuration (arrays), with :math:`d = g/(t p)` data-parallel replicas,
    :math:`m = B/(d\,b)` micro-batches per step and :math:`T = B s` tokens per step:

    .. math::

        F &= T\,(6 N_a + 6 L s d_{model}) (1 + \rho) \\
        t_{comp} &= F / (g\, \eta_{gemm} P) \\
        t_{tp} &= m \frac{L}{p}\, 4\, AR_{ring}(b s d_{model} \beta, t) \\
        t_{step} &= (t_{comp} + t_{tp})(1 + (p-1)/m)
                    + t_{dp} - \eta_{ov} \min(t_{dp}, \tfrac{2}{3}(t_{comp} + t_{tp})) \\
        t_{dp} &= AR_{ring}(2 N / (t p), d) \\
        M &= \frac{N}{t p}(2 + 2 [z<2 \to 1, /d] + 12 [z<1 \to 1, /d])
             + \frac{L}{p} p\, s\, b\, d_{model} \frac{c_{act}}{t}

    with :math:`\rho` = 1/3 under full recomputation, ZeRO stage *z* sharding optimizer states
    (z>=1), gradients (z>=2) and weights (z=3) over *d*, and the activation coefficient
    :math:`c_{act}` = 34 + 5 a s / d_model (none), 34 (selective) or 2 (full). The dollars
    are not modelled here: productive hours = tokens / tokens/s go to
    :meth:`ItemPricing.run_items`, the goodput and items ``aitco compare`` prices a run with
    (wall clock with failures, spot preemptions and checkpoints; ``total_usd`` = sum of items).
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
    #: System each offer code runs on (:func:`aitco.decide.compare.offer_system`; None: the
    #: hardware's own system), as compare runs the engine on a rented offer's fabric.
    offer_systems: list[Any] = field(default_factory=list)
    #: Share of an unused committed term reused elsewhere (compare's option field).
    committed_reuse_fraction: float = 0.0

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
        peak = h.peak_tflops[hw, prec]
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
        sub = {k: gather(a, rows) for k, a in v.items()}
        billing = {k: gather(a, rows) for k, a in bl.items()}
        met = self._model(sub, gather(peak, rows), gather(price, rows), billing)
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

    def _model(
        self,
        v: dict[str, np.ndarray],
        peak: np.ndarray,
        price: np.ndarray,
        billing: dict[str, np.ndarray],
    ) -> dict[str, np.ndarray]:
        """Apply the step-time, memory and cost formulas to configurations that passed."""
        h, m = self.hw, self.models
        hw, mdl = v["option.hardware"], v["workload.model"]
        g = v["option.gpus"].astype(float)
        tp = v["workload.plan.tp"].astype(float)
        pp = v["workload.plan.pp"].astype(float)
        b = v["workload.plan.micro_batch"].astype(float)
        zero = v["workload.plan.zero"]
        rec = v["workload.plan.recompute"]
        s = v["workload.seq_len"].astype(float)
        gb = v["workload.global_batch"].astype(float)
        n_tot = m.total_params[mdl]
        n_act = m.active_params[mdl]
        layers = m.n_layers[mdl]
        dm = m.d_model[mdl]
        mp = tp * pp
        dp = g / mp
        mb_per_step = gb / (dp * b)
        # compute
        tokens_step = gb * s
        flops_tok = TRAIN_FLOPS_PER_PARAM * n_act + ATTN_FLOPS_COEFF * layers * s * dm
        rho = np.where(rec == 2, FULL_RECOMPUTE_EXTRA, 0.0)
        t_comp = tokens_step * flops_tok * (1.0 + rho) / (g * h.gemm_eff[hw] * peak * TERA)
        # tensor-parallel all-reduces over the scale-up fabric
        ar_tp = _ring_allreduce_s(
            b * s * dm * WEIGHT_BYTES_TRAINING,
            tp,
            h.intra_bw_gb_s[hw],
            h.intra_latency_us[hw],
            self.efficiency.intra_node_link,
        )
        t_tp = mb_per_step * (layers / pp) * TP_ALLREDUCES_PER_LAYER * ar_tp
        bubble = (pp - 1.0) / (v["workload.plan.vp"] * mb_per_step)
        # data-parallel gradient all-reduce: inter-node when the replicas span nodes
        dpn = h.devices_per_node[hw]
        spans = g > dpn
        bw_dp = np.where(spans, h.inter_bw_gb_s[hw], h.intra_bw_gb_s[hw])
        lat_dp = np.where(spans, h.inter_latency_us[hw], h.intra_latency_us[hw])
        eff_dp = np.where(spans, self.efficiency.scale_out_link, self.efficiency.intra_node_link)
        shard = n_tot / mp
        t_dp = _ring_allreduce_s(shard * GRAD_BYTES_TRAINING, dp, bw_dp, lat_dp, 1.0) / eff_dp
        # the gradient all-reduce hides behind the backward pass only (2/3 of the compute)
        window = BACKWARD_SHARE * (t_comp + t_tp)
        exposed = t_dp - self.efficiency.dp_overlap * np.minimum(t_dp, window)
        step = (t_comp + t_tp) * (1.0 + bubble) + exposed
        # memory per GPU: model states sharded by TP x PP and (ZeRO stage) by DP
        inv_dp = 1.0 / dp
        w = shard * WEIGHT_BYTES_TRAINING * np.where(zero >= 3, inv_dp, 1.0)
        gr = shard * GRAD_BYTES_TRAINING * np.where(zero >= 2, inv_dp, 1.0)
        opt = shard * ADAM_STATE_BYTES_PER_PARAM * np.where(zero >= 1, inv_dp, 1.0)
        coeff = np.where(
            rec == 0,
            ACT_BYTES_COEFF + ACT_ATTN_COEFF * m.n_heads[mdl] * s / dm,
            np.where(rec == 1, ACT_BYTES_COEFF, ACT_FULL_RECOMPUTE_COEFF),
        )
        # 1F1B: the first stage holds pp micro-batches of its L/pp layers
        mem_gb = (w + gr + opt + layers * s * b * dm * coeff / tp) / GIGA
        # throughput; the wall clock and the money are compare's items (evaluate)
        tps = tokens_step / step
        wall_h = self.tokens / tps / SECONDS_PER_HOUR
        gpu_h = g * wall_h
        instances = billing["instances"]
        billed = billing["gpus_billed"]
        return {
            "step_time_s": step,
            "tokens_per_s": tps,
            "mfu": TRAIN_FLOPS_PER_PARAM * n_act * tps / (g * peak * TERA),
            "memory_per_gpu_gb": mem_gb,
            "wall_clock_h": wall_h,
            "gpu_hours": gpu_h,
            "price_usd_per_gpu_h": price,
            "total_usd": np.full_like(wall_h, math.nan),  # set by evaluate (compare's items)
            "dp": dp,
            "total_gpus": g,
            "gpus_billed": billed * np.ones_like(g),
            "instances": instances * np.ones_like(g),
            "offer_code": billing["offer"] * np.ones_like(g),
            "fits": (mem_gb <= h.memory_gb[hw] * USABLE_MEMORY_FRACTION).astype(np.int8),
        }


@dataclass
class ServingEvaluator(ItemPricing):
    r"""Vectorised serving model: a replica of ``gpus`` accelerators (tensor parallel) at a batch.

    Parameters
    ----------
    hw, models : HardwareTable, ModelTable
        Lookup tables.
    qps : float, optional
        Arrival rate to serve; sets the replica count. [requests/s]
    efficiency : EfficiencyParams
        GEMM (per family), HBM and link efficiencies.

    Notes
    -----
    With *W* weight bytes, :math:`k` KV bytes per token, batch *B*, mean context
    :math:`c = i + o/2`, *g* devices of peak *P* and bandwidth *H* per replica:

    .. math::

        t_{pre} &= \max(2 N_a i / (g \eta P),\; W / (g \eta_H H)) \\
        \mathrm{TPOT} &= \max(2 N_a B / (g \eta P),\; (W + B c k)/(g \eta_H H))
                        + 2 L\, AR(B d \beta, g) \\
        \mathrm{TTFT} &= t_{pre} + \mathrm{TPOT} \\
        \text{tokens/s} &= B o / (B t_{pre} + o\,\mathrm{TPOT})

    (continuous batching: each admitted request's prefill stalls the batch once). Replicas,
    ``total_usd`` (compare's items for ``months``), ``usd_per_h`` and $/Mtok as in
    :meth:`ItemPricing._serving_outputs`. Memory must hold
    :math:`W/g + B (i+o) k / g` within the usable fraction. Latencies are unloaded (no queueing);
    use ``aitco infer`` for percentiles under load.
    """

    hw: HardwareTable
    models: ModelTable
    qps: float | None = None
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    keys: dict[str, list[Any]] = field(default_factory=lambda: dict(SERVING_KEYS))
    metrics: tuple[str, ...] = SERVING_METRICS
    accelerators: list[Any] = field(default_factory=list)
    systems: list[Any] = field(default_factory=list)
    #: Service period priced. [months]
    months: float = DEFAULT_SERVICE_MONTHS
    #: Catalog factors of compare's items; required to evaluate (a missing one is an error).
    factors: CostFactors | None = None
    #: Operations choices (checkpointing) as in a scenario's ``ops``.
    ops: OpsAssumptions = field(default_factory=OpsAssumptions)
    #: Data costs as in a scenario's ``data`` (storage tier, stored dataset volume).
    data: DataCosts = field(default_factory=DataCosts)
    #: System each offer code runs on (:func:`aitco.decide.compare.offer_system`; None: the
    #: hardware's own system), as compare runs the engine on a rented offer's fabric.
    offer_systems: list[Any] = field(default_factory=list)
    #: Share of an unused committed term reused elsewhere (compare's option field).
    committed_reuse_fraction: float = 0.0

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk of serving configurations (see the class Notes)."""
        hw = v["option.hardware"]
        mdl = v["workload.model"]
        prec = v["workload.precision"]
        kvp = v["workload.kv_precision"]
        kvp = np.where(kvp < 0, prec, kvp)
        g = v["option.gpus"].astype(float)
        bsz = v["workload.batch"].astype(float)
        i = v["workload.input_tokens"].astype(float)
        o = v["workload.output_tokens"].astype(float)
        h, m = self.hw, self.models
        peak = h.peak_tflops[hw, prec]
        n = chunk_len(v)  # constant keys may be length-1 arrays
        reason = np.zeros(n, dtype=np.int64) | np.where(np.isnan(peak), 64, 0)
        peak = np.where(np.isnan(peak), 1.0, peak)
        reason |= np.where(g > h.scale_up_domain[hw], 2, 0)
        eff = h.gemm_eff[hw]
        hbm = h.hbm_bandwidth_gb_s[hw] * GIGA * self.efficiency.hbm
        w_bytes = m.total_params[mdl] * _DTYPE_BYTES[prec]
        kv_tok = KV_TENSORS * m.n_layers[mdl] * m.kv_width[mdl] * _DTYPE_BYTES[kvp]
        flops_tok = INFER_FLOPS_PER_PARAM * m.active_params[mdl]
        t_pre = np.maximum(flops_tok * i / (g * eff * peak * TERA), w_bytes / (g * hbm))
        ctx = i + o / 2.0
        ar = _ring_allreduce_s(
            bsz * m.d_model[mdl] * _DTYPE_BYTES[prec],
            g,
            h.intra_bw_gb_s[hw],
            h.intra_latency_us[hw],
            self.efficiency.intra_node_link,
        )
        busy_s = np.maximum(
            flops_tok * bsz / (g * eff * peak * TERA), (w_bytes + bsz * ctx * kv_tok) / (g * hbm)
        )
        tpot = busy_s + 2.0 * m.n_layers[mdl] * ar
        ttft = t_pre + tpot
        tok_s = bsz * o / (bsz * t_pre + o * tpot)
        mem_gb = (w_bytes + bsz * (i + o) * kv_tok) / g / GIGA
        reason |= np.where(mem_gb > h.memory_gb[hw] * USABLE_MEMORY_FRACTION, 16, 0)
        full = [
            np.broadcast_to(np.asarray(a), (n,))
            for a in (
                hw,
                v["option.pricing"],
                v["option.region"],
                ttft,
                tpot,
                tok_s,
                o,
                g,
                busy_s / tpot,
            )
        ]
        rows = np.flatnonzero(reason == 0)
        out = self._serving_outputs(*(a[rows] for a in full))
        # no eligible offer for the replicas (or one replica): invalid, price
        reason[rows] |= np.where(np.isnan(out["total_usd"]), 32, 0)
        return {
            **out,
            "memory_per_gpu_gb": (mem_gb * np.ones(n))[rows],
            "rows": rows,
            "reason": reason,
        }

"""Training step time, throughput, MFU/HFU, memory and GPU-hours, from the physics of the plan.

:func:`evaluate_plans` is the vectorised core: every argument that describes a parallel plan is
an array, so one call prices a million candidate plans (the plan search uses it). It composes
:mod:`aitco.perf.flops` (work), :mod:`aitco.perf.memory` (fit) and :mod:`aitco.perf.comms`
(collectives on the real topology). Each kind of kernel sits on one side of the roofline
(:mod:`aitco.perf.roofline`) at training sizes: GEMMs and FlashAttention are compute-bound,
norms/activations/residuals/casts/loss are memory-bound, so their times add.
:func:`estimate_training` is the single-plan interface used by the CLI, TCO and validation.

Step-time model (per device on the critical pipeline stage)::

    t_mb   = GEMMs at gemm[family] x dtype peak + FlashAttention (fwd + 2.5x bwd + recompute)
             at attention x bf16 peak
           + memory-bound ops at elementwise_hbm x bandwidth + 4 us per kernel launch
           + TP/SP all-gathers and reduce-scatters (8 per layer, 12 with full recompute;
             x (1 - tp_overlap) when TP comm overlap is on)
           + EP all-to-alls (4 per MoE layer, 6 with full recompute)
           + CP ring exposure (K/V blocks beyond the attention time)
           [+ ZeRO-3/FSDP parameter gathers and gradient reduce-scatters not hidden]
    step   = (m + (p-1)/v) t_mb + PP p2p + exposed DP gradient sync + optimizer step

References
----------
.. [1] D. Narayanan et al., SC21, arXiv:2104.04473 (PTD-P, bubble, interleaving).
.. [2] V. Korthikanti et al., arXiv:2205.05198, 2022 (sequence parallel, selective recompute).
.. [3] T. Dao, "FlashAttention-2", arXiv:2307.08691, 2023.
.. [4] S. Rajbhandari et al., ZeRO, arXiv:1910.02054.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.errors import InputError, PlanError
from aitco.explain import Estimate, Term
from aitco.perf import comms
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.flops import (
    DEFAULT_LORA_RANK,
    ModelShape,
    attention_flops_per_token,
    layer_matmul_flops_per_token,
    lm_head_flops_per_token,
    model_shape,
    recompute_flops_per_token,
    training_flops_per_token,
)
from aitco.perf.memory import (
    ADAM_8BIT_BYTES,
    ADAM_FP32_BYTES,
    LOGIT_BYTES,
    training_memory_bytes,
    weight_bytes_per_param,
)
from aitco.perf.parallelism import RECOMPUTE_CODES, RECOMPUTE_NAMES, bubble_fraction, group_strides
from aitco.units import GIGA, SECONDS_PER_HOUR, TERA

F64 = NDArray[np.float64]

#: Training data types and the peak used for their linear layers.
TRAIN_PRECISIONS = ("bf16", "fp16", "fp8", "fp32")
#: Attention (FlashAttention) and the LM head run in bf16 even in FP8 training (Transformer
#: Engine keeps them in higher precision).
HIGH_PRECISION_FOR_FP8 = "bf16"
#: Adam step: reads fp32 master, m, v and the gradient (16 B), writes master, m, v and the
#: bf16 weight (14 B) per parameter.
ADAM_STEP_BYTES_PER_PARAM = 30.0
#: Elementwise passes over activations in the backward pass relative to the forward.
BACKWARD_ELEMENTWISE_PASSES = 2.0
#: Reads+writes per element of the memory-bound ops of a layer (norm, residual, activation,
#: rotary): each reads its input and writes its output.
ELEMENTWISE_RW = 2.0
#: Passes over the fp32 logits in the loss (softmax forward, backward).
LOSS_LOGIT_PASSES = 3.0
#: FlashAttention's backward runs 5 matmuls against the forward's 2 (it recomputes the scores;
#: Dao 2023, FlashAttention-2, Sec. 3.1.2): 2.5 forwards of work.
FLASH_BWD_MATMULS = 2.5
#: Attention kernels: FlashAttention (fused, causal blocks skipped, no s x s tensor in HBM) or
#: the unfused attention of 2019-2021 Megatron-LM (batched GEMMs for QK^T and PV over the full
#: s x s matrix, then a fused scale-mask-softmax and dropout that stream the scores through HBM).
ATTENTION_KERNELS = ("flash", "unfused")
#: Passes over the s x s scores (16-bit elements) per head in the unfused forward: QK^T writes
#: S (1), softmax reads S and writes P (2), dropout reads P and writes P' and a 1-byte mask (2.5),
#: PV reads P' (1). The tensors are the 5as^2 bytes of Korthikanti et al. 2022, Sec. 4.1 [2].
UNFUSED_SCORE_PASSES_FWD = 6.5
#: Backward: dP' written (1), dropout backward reads dP' and the mask, writes dP (2.5), softmax
#: backward reads P and dP, writes dS (3), the two GEMMs read dS (2).
UNFUSED_SCORE_PASSES_BWD = 8.5
#: Unfused backward runs 2 GEMMs per forward GEMM (no score recomputation, unlike FlashAttention).
UNFUSED_BWD_MATMULS = 2.0
#: Casting a bf16 tensor to fp8 reads 2 bytes and writes 1 per element (Transformer Engine).
FP8_CAST_BYTES = 3.0
#: Launch and tail latency of one GPU kernel (CUDA launch overhead is a few microseconds;
#: NVIDIA, "Getting started with CUDA graphs", 2019). [s]
KERNEL_OVERHEAD_S = 4e-6
#: Kernels one layer launches per pass (norms, QKV, rotary, attention, projection, residuals,
#: FFN matmuls and activation); the backward pass launches about twice as many.
KERNELS_PER_LAYER_PASS = 12
#: Share of a micro-batch's compute in its backward pass (2 of 3 matmul passes), the window in
#: which data-parallel gradient reduction can overlap.
BACKWARD_SHARE = 2.0 / 3.0


@dataclass(frozen=True)
class HardwareShape:
    """Scalars of the accelerator used by the vectorised model."""

    peak_linear_tflops: float
    peak_attention_tflops: float
    peak_mfu_tflops: float
    hbm_bandwidth_gb_s: float
    memory_gb: float
    gemm_efficiency: float
    attention_efficiency: float = DEFAULT_EFFICIENCY.attention


@dataclass(frozen=True)
class PublishedPractice:
    """What published runs of a similar model on the same accelerator generation reached.

    Attributes
    ----------
    best_mfu : float
        Best published MFU (aitco's convention, 6N + causal attention over the dense peak). [0-1]
    source : str
        Row id (and label) of that best run.
    layouts : tuple of (tp, pp, cp, ep)
        Published parallel layouts of the similar runs (empty: none stated).
    """

    best_mfu: float
    source: str
    layouts: tuple[tuple[int, int, int, int], ...] = ()


def hardware_shape(acc: Accelerator, precision: str, eff: EfficiencyParams) -> HardwareShape:
    """Peaks and memory of ``acc`` for training in ``precision`` (PlanError if unsupported)."""
    if precision not in TRAIN_PRECISIONS:
        raise InputError("--precision", precision, f"one of {', '.join(TRAIN_PRECISIONS)}")
    if not acc.supports(precision):
        raise PlanError(
            "--precision",
            precision,
            f"a data type {acc.id} supports ({', '.join(sorted(acc.peak_tflops))})",
            hint=f"{acc.id} has no dense {precision} peak",
        )
    lin = acc.peak_tflops[precision]
    att_dtype = HIGH_PRECISION_FOR_FP8 if precision == "fp8" else precision
    att = acc.peak_tflops.get(att_dtype, acc.peak_tflops.get("fp16", lin))
    return HardwareShape(
        peak_linear_tflops=float(lin),
        peak_attention_tflops=float(att),
        peak_mfu_tflops=float(lin),
        hbm_bandwidth_gb_s=float(acc.hbm_bandwidth_gb_s),
        memory_gb=float(acc.memory_gb),
        gemm_efficiency=float(eff.training_gemm_for(acc.family)),
        attention_efficiency=float(eff.attention_for(acc.family)),
    )


def _evaluate_plans(
    ms: ModelShape,
    hw: HardwareShape,
    system: System,
    *,
    seq_len: float,
    global_batch: float,
    gpus: float,
    precision: str,
    method: str,
    eff: EfficiencyParams,
    tp: Any,
    pp: Any,
    cp: Any,
    ep: Any,
    dp: Any,
    zero: Any,
    micro_batch: Any,
    recompute: Any,
    vp: Any = 1,
    optimizer: str = "adam",
    lora_params: float | None = None,
    tp_comm_overlap: Any = False,
    recompute_fraction: Any = 1.0,
    attention_kernel: str = "flash",
) -> dict[str, F64]:
    """Step time, throughput and memory of many training plans at once.

    Parameters
    ----------
    ms : ModelShape
        Model dimensions (:func:`aitco.perf.flops.model_shape`).
    hw : HardwareShape
        Accelerator peaks (:func:`hardware_shape`).
    system : System
        Node/pod topology (links and their latencies).
    seq_len : float
        Sequence length. [tokens]
    global_batch : float
        Sequences per optimizer step. [count]
    gpus : float
        Devices. [count]
    precision : str
        Training data type.
    method : {"full", "lora", "qlora"}
        Training method.
    eff : EfficiencyParams
        Efficiency fractions.
    tp, pp, cp, ep, dp, zero, micro_batch, recompute, vp : array_like
        The plans (recompute coded 0 none, 1 selective, 2 full; zero 0-3, FSDP = 3).
    optimizer : {"adam", "adam8bit"}
        Optimizer state format.
    lora_params : float, optional
        Adapter parameters (LoRA/QLoRA). [count]
    recompute_fraction : array_like
        Share of the layers fully recomputed when ``recompute`` is 2 (Megatron
        ``--recompute-num-layers`` / L). [0-1]
    tp_comm_overlap : array_like of bool
        Whether TP collectives are overlapped with GEMMs (Megatron ``tp_comm_overlap``); a
        fraction ``eff.tp_overlap`` of them is then hidden.
    attention_kernel : {"flash", "unfused"}
        FlashAttention, or the unfused attention of pre-2022 Megatron-LM (full s x s GEMMs at
        the GEMM fraction plus the score tensors streamed through HBM).

    Returns
    -------
    dict of str to ndarray
        ``step_time_s``, ``tokens_per_s``, ``tokens_per_s_per_gpu``, ``mfu``, ``hfu``,
        ``memory_per_gpu_bytes``, ``fits`` and the time terms (``compute_s``,
        ``memory_bound_s``, ``tp_comm_s``, ``cp_comm_s``, ``ep_comm_s``, ``pp_comm_s``,
        ``dp_comm_s``, ``bubble_s``, ``optimizer_s``), all per step. [s], [tokens/s], [B]
    """
    tp = np.asarray(tp, dtype=float)
    pp = np.asarray(pp, dtype=float)
    cp = np.asarray(cp, dtype=float)
    ep = np.asarray(ep, dtype=float)
    dp = np.asarray(dp, dtype=float)
    zero = np.asarray(zero)
    mb = np.asarray(micro_batch, dtype=float)
    rc = np.asarray(recompute)
    vp = np.asarray(vp, dtype=float)
    s = float(seq_len)
    m = np.ceil(global_batch / (mb * dp))
    act_b = 4.0 if precision == "fp32" else 2.0
    lps = np.ceil(ms.n_layers / pp)
    tokens = mb * s / cp  # tokens of one micro-batch on one device group member
    h = float(ms.d_model)

    # full recomputation re-runs the layer forward, on a fraction of the layers
    full_rc = np.where(rc == 2, np.asarray(recompute_fraction, dtype=float), 0.0)
    any_rc = (rc >= 1).astype(float)  # selective or full re-run the attention core
    tok_tp = tokens / tp  # tokens per device after sequence parallel
    tok_layers = tok_tp * lps

    # ---------------- compute (per micro-batch, critical stage)
    lin_fwd_tok = layer_matmul_flops_per_token(ms)
    att_fwd_tok = float(attention_flops_per_token(ms, s))
    head_fwd_tok = lm_head_flops_per_token(ms)
    lin_passes = 3.0 if method == "full" else 2.0
    g = hw.gemm_efficiency
    lin_rate = hw.peak_linear_tflops * TERA * g
    att_rate = hw.peak_attention_tflops * TERA * hw.attention_efficiency
    if attention_kernel == "unfused":
        # the full (unmasked) s x s products as batched GEMMs at the 16-bit GEMM fraction
        att_full_tok = float(attention_flops_per_token(ms, s, causal=False))
        att_gemm_rate = hw.peak_attention_tflops * TERA * g
        att_passes = 1.0 + UNFUSED_BWD_MATMULS + any_rc
        att_time = tok_layers * (att_full_tok / att_gemm_rate) * att_passes
    else:
        att_time = tok_layers * (att_fwd_tok / att_rate) * (1.0 + FLASH_BWD_MATMULS + any_rc)
    compute_mb = (
        tok_layers * (lin_fwd_tok / lin_rate) * (lin_passes + full_rc)
        + tok_tp * (head_fwd_tok * lin_passes / (hw.peak_attention_tflops * TERA * g))
        + att_time
    )
    if method != "full":
        lp = ms.lora_params if lora_params is None else lora_params
        compute_mb = compute_mb + tok_layers * (2.0 * lp / ms.n_layers * 3.0 / lin_rate)

    # ---------------- memory-bound elementwise ops
    q = float(ms.n_heads * ms.head_dim)
    kv = float(ms.kv_heads * ms.head_dim)
    f = ms.ffn_width_active
    elem = 2 * h + 2 * h + (3 * f if ms.gated else 2 * f) + (2 * (q + kv) if ms.rope else 0.0)
    layer_bytes = ELEMENTWISE_RW * elem * act_b
    if ms.moe_layers:  # token permutation to/from experts: copy k rows out and back
        layer_bytes += (
            ELEMENTWISE_RW * 2.0 * ms.n_active_experts * h * act_b * (ms.moe_layers / ms.n_layers)
        )
    if precision == "fp8":  # quantise the inputs of every linear layer (fwd) and its grads (bwd)
        layer_bytes += (2 * h + q + f) * FP8_CAST_BYTES
    passes = 1.0 + BACKWARD_ELEMENTWISE_PASSES + full_rc
    hbm_rate = hw.hbm_bandwidth_gb_s * GIGA * eff.elementwise_hbm
    loss_s = ms.vocab_size * LOGIT_BYTES * LOSS_LOGIT_PASSES / hbm_rate
    # fixed per-kernel latency: what makes many small micro-batches slower than few large ones
    membound_mb = (
        tok_layers * (layer_bytes / hbm_rate) * passes
        + tok_tp * loss_s
        + lps * (KERNELS_PER_LAYER_PASS * KERNEL_OVERHEAD_S) * passes
    )
    if attention_kernel == "unfused":  # scores of the device's heads for each of its tokens
        s_att = min(s, float(ms.window)) if ms.window is not None else s
        score_bytes = float(ms.n_heads) * s_att * act_b
        score_passes = UNFUSED_SCORE_PASSES_FWD * (1.0 + any_rc) + UNFUSED_SCORE_PASSES_BWD
        membound_mb = membound_mb + tok_layers * (score_bytes / hbm_rate) * score_passes

    # ---------------- communication inside the micro-batch
    strides = group_strides(tp, cp, dp)
    bw, lat, le = comms.group_link(system, tp, 1, eff.intra_node_link, eff.scale_out_link)
    act_buf = tokens * (h * act_b)
    n_tp = 4.0 * (2.0 + full_rc)  # AG+RS pairs: 2 fwd, 2 bwd, +2 recompute -> 8 or 12 ops
    tp_mb = np.where(
        tp > 1, lps * n_tp * comms.reduce_scatter_time_s(act_buf, tp, bw, lat, le), 0.0
    )
    tp_mb = tp_mb * (1.0 - eff.tp_overlap * np.asarray(tp_comm_overlap, dtype=float))

    bw, lat, le = comms.group_link(
        system, cp, strides["cp"], eff.intra_node_link, eff.scale_out_link
    )
    kv_block = tok_tp * (2.0 * kv * act_b)
    # fwd passes K/V blocks; bwd passes K/V and dK/dV; a recomputed attention passes K/V again
    cp_comm = lps * (3.0 + any_rc) * (cp - 1) * comms.p2p_time_s(kv_block, bw, lat, le)
    cp_mb = np.where(cp > 1, np.maximum(cp_comm - att_time, 0.0), 0.0)

    moe_lps = lps * (ms.moe_layers / ms.n_layers)
    bw, lat, le = comms.group_link(
        system, ep, strides["ep"], eff.intra_node_link, eff.scale_out_link
    )
    a2a_bytes = tok_tp * (ms.n_active_experts * h * act_b)
    n_a2a = 4.0 + 2.0 * full_rc
    ep_mb = np.where(
        ep > 1, moe_lps * n_a2a * comms.alltoall_time_s(a2a_bytes, ep, bw, lat, le), 0.0
    )

    # ---------------- memory
    opt_bytes = ADAM_8BIT_BYTES if optimizer == "adam8bit" else ADAM_FP32_BYTES
    mem = training_memory_bytes(
        ms,
        seq_len=s,
        precision=precision,
        method=method,
        optimizer_bytes=opt_bytes,
        tp=tp,
        pp=pp,
        cp=cp,
        ep=ep,
        dp=dp,
        zero=zero,
        micro_batch=mb,
        recompute=rc,
        recompute_fraction=recompute_fraction,
        n_micro=m,
        vp=vp,
        trainable_params=lora_params,
    )
    trainable = mem["trainable_per_device"]
    params = mem["params_per_device"]

    # ---------------- data parallel (ZeRO / FSDP)
    bw, lat, le = comms.group_link(
        system, dp, strides["dp"], eff.intra_node_link, eff.scale_out_link
    )
    grad_bytes = trainable * (4.0 if precision == "fp32" else 2.0)
    wb = weight_bytes_per_param(precision, method)
    z3 = zero >= 3
    # ZeRO-3/FSDP: per micro-batch, all-gather weights (fwd and bwd) and reduce-scatter grads
    z3_mb = 2.0 * comms.allgather_time_s(
        params * min(wb, 2.0), dp, bw, lat, le
    ) + comms.reduce_scatter_time_s(grad_bytes, dp, bw, lat, le)
    work_mb = compute_mb + membound_mb
    z3_exposed = z3_mb - eff.dp_overlap * np.minimum(z3_mb, work_mb)
    z3_exposed = np.where(z3 & (dp > 1), z3_exposed, 0.0)
    t_mb = work_mb + tp_mb + cp_mb + ep_mb + z3_exposed

    sync = comms.allreduce_time_s(grad_bytes, dp, bw, lat, le)  # ZeRO 0-2: once per step
    window = BACKWARD_SHARE * work_mb
    dp_exposed = np.where(z3 | (dp <= 1), 0.0, sync - eff.dp_overlap * np.minimum(sync, window))

    bw, lat, le = comms.group_link(
        system, 2, strides["pp"], eff.intra_node_link, eff.scale_out_link
    )
    p2p = comms.p2p_time_s(tok_tp * (h * act_b), bw, lat, le)
    # 1F1B: every micro-batch's send/receive is on the critical path; the interleaved schedule
    # overlaps them with compute except in warm-up and cool-down (Megatron overlap_p2p_comm)
    n_p2p = np.where(vp > 1, 2.0 * (pp - 1), 2.0 * m)
    pp_comm = np.where(pp > 1, n_p2p * p2p, 0.0)

    bub = bubble_fraction(pp, m, vp)
    opt_params = np.where(zero >= 1, trainable / dp, trainable)
    opt_s = (
        opt_params
        * ADAM_STEP_BYTES_PER_PARAM
        / (hw.hbm_bandwidth_gb_s * GIGA * eff.elementwise_hbm)
    )

    step = m * t_mb * (1.0 + bub) + pp_comm + dp_exposed + opt_s
    tokens_per_s = global_batch * s / step
    per_gpu = tokens_per_s / gpus
    model_fpt = training_flops_per_token(ms, s, method, lora_params)
    hw_fpt = model_fpt + recompute_flops_per_token(ms, s, rc, recompute_fraction)
    mfu = model_fpt * per_gpu / (hw.peak_mfu_tflops * TERA)
    hfu = hw_fpt * per_gpu / (hw.peak_mfu_tflops * TERA)
    total_mem = mem["total"]
    with np.errstate(invalid="ignore"):  # a plan without its link (t_mb = inf) and no bubble
        bubble_s = np.where(bub > 0, m * t_mb * bub, 0.0)
    return {
        "step_time_s": step,
        "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_gpu": per_gpu,
        "model_tflops_per_gpu": model_fpt * per_gpu / TERA,
        "hardware_tflops_per_gpu": hw_fpt * per_gpu / TERA,
        "mfu": mfu,
        "hfu": hfu,
        "memory_per_gpu_bytes": total_mem,
        "fits": total_mem <= hw.memory_gb * GIGA,
        "n_micro": m,
        "compute_s": m * compute_mb,
        "memory_bound_s": m * membound_mb,
        "tp_comm_s": m * tp_mb,
        "cp_comm_s": m * cp_mb,
        "ep_comm_s": m * ep_mb,
        "zero3_comm_s": m * z3_exposed,
        "bubble_s": bubble_s,
        "pp_comm_s": pp_comm,
        "dp_comm_s": dp_exposed,
        "optimizer_s": opt_s,
        "mem_weights_bytes": mem["weights"],
        "mem_gradients_bytes": mem["gradients"],
        "mem_optimizer_bytes": mem["optimizer"],
        "mem_activations_bytes": mem["activations"],
        "mem_overhead_bytes": mem["overhead"],
    }


def evaluate_plans(*args: Any, **kwargs: Any) -> dict[str, F64]:
    """Step time, throughput and memory of many training plans at once.

    Same parameters and returns as :func:`_evaluate_plans` (documented there). Plans that need a
    link the system lacks (no scale-out network) come out with an infinite step time: the one
    division meant to give an infinity is narrowed in :func:`aitco.perf.comms._beta_s`; any
    other floating-point error raises (issue 17: numerics that complain).
    """
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        return _evaluate_plans(*args, **kwargs)


# =============================================================================== single plan
#: Names of the time terms, as shown by ``--explain``.
TIME_TERMS: dict[str, str] = {
    "compute_s": "GEMMs and FlashAttention at gemm x dtype peak (incl. recompute)",
    "memory_bound_s": "norms, activations, residuals, rotary, loss at hbm x bandwidth",
    "tp_comm_s": "TP/SP all-gather + reduce-scatter per layer (exposed)",
    "cp_comm_s": "CP ring-attention K/V exchange beyond attention time",
    "ep_comm_s": "EP all-to-all dispatch/combine per MoE layer",
    "zero3_comm_s": "ZeRO-3/FSDP weight all-gather + grad reduce-scatter not hidden",
    "dp_comm_s": "DP gradient all-reduce not hidden behind the last backward",
    "pp_comm_s": "PP point-to-point activations/gradients",
    "bubble_s": "pipeline bubble (p-1)/(v m) of the micro-batch time",
    "optimizer_s": "Adam step, memory-bound",
}


@dataclass
class TrainingResult:
    """One training estimate: headline ``values`` (the JSON keys of issue 3), ``interval``, terms.

    Attributes
    ----------
    values : dict
        ``step_time_s``, ``tokens_per_s``, ``tokens_per_s_per_gpu``, ``model_tflops_per_gpu``,
        ``hardware_tflops_per_gpu``, ``mfu``, ``hfu``, ``memory_per_gpu_gb``, ``fits``,
        ``over_by_gb``, ``gpu_hours``, ``wall_clock_h`` (with tokens), ``plan`` and ``interval``.
    interval : dict
        80% ranges ``[low, high]`` of the headline figures, from the validation residuals.
    time_terms_s : dict
        The step-time split. [s]
    memory_terms_gb : dict
        The memory split per device. [GB]
    inputs : dict
        What was estimated (model, hardware, gpus, seq_len, ...).
    candidates : int
        Plans evaluated (1 for an explicit plan).
    """

    values: dict[str, Any]
    interval: dict[str, list[float]]
    time_terms_s: dict[str, float]
    memory_terms_gb: dict[str, float]
    inputs: dict[str, Any] = field(default_factory=dict)
    candidates: int = 1
    term_inputs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_estimate(self) -> Estimate:
        """Return the result as an :class:`aitco.explain.Estimate` (what ``--explain`` prints)."""
        step = sum(self.time_terms_s.values()) or 1.0
        terms = [
            Term(
                name=k,
                value=v,
                unit="s",
                formula=f"{TIME_TERMS[k]} [{v / step:.0%} of step]",
                inputs=self.term_inputs.get(k, {}),
            )
            for k, v in self.time_terms_s.items()
        ]
        terms += [
            Term(name=f"memory_{k}_gb", value=v, unit="GB", formula=f"{k} per device")
            for k, v in self.memory_terms_gb.items()
        ]
        dominant = max(self.time_terms_s.items(), key=lambda kv: kv[1])[0]
        assumptions = [
            "MFU counts 6N + causal attention FLOPs against the training dtype's dense peak",
            "activations per Korthikanti et al. 2022 with FlashAttention and sequence parallel",
            f"plan searched over {self.candidates} candidates"
            if self.candidates > 1
            else "plan as given",
            "interval: 10th-90th percentile of validation log-ratio residuals",
        ]
        return Estimate(
            kind="training",
            values=self.values,
            terms=terms,
            dominant=dominant,
            assumptions=assumptions,
        )


def _check_plan(ms: ModelShape, gpus: int, seq_len: int, p: dict[str, Any]) -> None:
    tp, pp, cp, ep, dp = p["tp"], p["pp"], p["cp"], p["ep"], p["dp"]
    for k in ("tp", "pp", "cp", "ep", "dp"):
        if p[k] is not None and p[k] < 1:
            raise PlanError(f"--{k}", p[k], "an integer >= 1")
    if ms.n_heads % tp:
        raise PlanError("--tp", tp, f"a divisor of the number of attention heads ({ms.n_heads})")
    if pp > ms.n_layers:
        raise PlanError("--pp", pp, f"at most the number of layers ({ms.n_layers})")
    if tp * pp * cp * dp != gpus:
        raise PlanError(
            "plan",
            f"tp={tp} x pp={pp} x cp={cp} x dp={dp} = {tp * pp * cp * dp}",
            f"a product equal to --gpus ({gpus})",
        )
    if seq_len % cp:
        raise PlanError("--cp", cp, f"a divisor of the sequence length ({seq_len})")
    if ep > 1 and not ms.moe_layers:
        raise PlanError("--ep", ep, "1 for a dense model (expert parallelism needs MoE layers)")
    if ms.n_experts % ep or dp % ep:
        raise PlanError("--ep", ep, f"a divisor of n_experts ({ms.n_experts}) and of dp ({dp})")


def estimate_training(
    model: ModelArch,
    acc: Accelerator,
    system: System,
    gpus: int,
    *,
    seq_len: int,
    global_batch: int,
    tokens: float | None = None,
    precision: str = "bf16",
    method: str = "full",
    plan: dict[str, Any] | Any | None = None,
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY,
    lora_rank: int = DEFAULT_LORA_RANK,
    optimizer: str = "adam",
    practice: PublishedPractice | None = None,
    attention_kernel: str = "flash",
) -> TrainingResult:
    """Estimate one training run (searching the plan when no parallel degree is given).

    Parameters
    ----------
    model : ModelArch
        Architecture.
    acc : Accelerator
        Accelerator.
    system : System
        Node/pod topology.
    gpus : int
        Devices. [count]
    seq_len : int
        Sequence length. [tokens]
    global_batch : int
        Sequences per optimizer step. [count]
    tokens : float, optional
        Tokens to train on, for ``gpu_hours`` and ``wall_clock_h``. [tokens]
    precision : {"bf16", "fp16", "fp8", "fp32"}
        Training data type.
    method : {"full", "lora", "qlora"}
        Full training or adapters on a frozen (QLoRA: 4-bit) base.
    plan : dict or ParallelPlan, optional
        ``tp``, ``pp``, ``cp``, ``ep``, ``dp``, ``zero``, ``fsdp``, ``micro_batch``,
        ``recompute`` (name), ``vp``, ``tp_comm_overlap``; missing degrees are 1 (dp
        inferred) when any degree is given, otherwise the whole plan is searched; missing ZeRO
        stage, micro-batch, recomputation and interleaving are searched. ``auto=True`` searches
        everything not given.
    efficiency : EfficiencyParams
        Efficiency fractions (defaults fitted on published runs).
    lora_rank : int
        Adapter rank for LoRA/QLoRA. [count]
    optimizer : {"adam", "adam8bit"}
        Optimizer state format.
    attention_kernel : {"flash", "unfused"}
        Attention implementation (``unfused``: pre-FlashAttention Megatron-LM, 2019-2021).
    practice : PublishedPractice, optional
        Published evidence for this model size and accelerator generation: the result carries
        ``published_best_mfu`` and ``beyond_published_evidence``, and a searched plan prefers,
        among plans within the best one's interval, the one closest to a published layout.

    Returns
    -------
    TrainingResult
        ``.values`` with the JSON keys of issue 3, ``.interval`` and ``.to_estimate()``.

    Raises
    ------
    PlanError
        An impossible plan (names the constraint) or a data type the hardware lacks.
    """
    from aitco.perf.plan_search import search_plans

    if gpus < 1:
        raise InputError("--gpus", gpus, "an integer >= 1")
    if seq_len < 1:
        raise InputError("--seq-len", seq_len, "an integer >= 1")
    if global_batch < 1:
        raise InputError("--global-batch", global_batch, "an integer >= 1 (sequences)")
    if method not in ("full", "lora", "qlora"):
        raise InputError("--method", method, "full, lora or qlora")
    if tokens is not None and not tokens > 0:
        raise InputError("--tokens", tokens, "a positive number of tokens")
    if attention_kernel not in ATTENTION_KERNELS:
        raise InputError("attention_kernel", attention_kernel, " or ".join(ATTENTION_KERNELS))
    ms = model_shape(model, lora_rank)
    hw = hardware_shape(acc, precision, efficiency)
    p: dict[str, Any]
    if plan is None:
        p = {}
    elif isinstance(plan, dict):
        p = dict(plan)
    else:
        p = dict(plan.model_dump())
    auto = bool(p.pop("auto", False))
    degrees = ("tp", "pp", "cp", "ep", "dp")
    explicit = not auto and any(p.get(k) is not None for k in degrees)
    fixed: dict[str, Any] = {}
    if auto:  # search, holding the degrees that were given
        for k in (*degrees, "vp"):
            if p.get(k) is not None:
                fixed[k] = int(p[k])
    if explicit:
        for k in ("tp", "pp", "cp", "ep"):
            fixed[k] = int(p.get(k) or 1)
        tpc = fixed["tp"] * fixed["pp"] * fixed["cp"]
        fixed["dp"] = int(p["dp"]) if p.get("dp") is not None else max(gpus // tpc, 1)
        if p.get("dp") is None and gpus % tpc:
            raise PlanError("plan", f"tp x pp x cp = {tpc}", f"a divisor of --gpus ({gpus})")
        _check_plan(ms, gpus, seq_len, fixed)
        if p.get("vp") is not None:
            fixed["vp"] = int(p["vp"])
        elif fixed["pp"] == 1:
            fixed["vp"] = 1
    if p.get("fsdp"):
        fixed["zero"] = 3
    elif p.get("zero") is not None:
        fixed["zero"] = int(p["zero"])
    if p.get("micro_batch") is not None:
        fixed["micro_batch"] = int(p["micro_batch"])
        if explicit and fixed["micro_batch"] * fixed["dp"] > global_batch:
            raise PlanError(
                "--micro-batch",
                fixed["micro_batch"],
                f"micro_batch x dp ({fixed['dp']}) <= the global batch ({global_batch} sequences)",
            )
    if p.get("recompute") is not None:
        rc = p["recompute"]
        if rc not in RECOMPUTE_CODES:
            raise InputError("--recompute", rc, "none, selective or full")
        fixed["recompute"] = RECOMPUTE_CODES[rc]
        if rc == "full" and p.get("recompute_fraction") is None:
            fixed["recompute_fraction"] = 1.0  # "full" as given: every layer
    if p.get("recompute_fraction") is not None:
        frac = float(p["recompute_fraction"])
        if not 0.0 < frac <= 1.0:
            raise InputError("recompute_fraction", frac, "a share of layers in (0, 1]")
        fixed["recompute_fraction"] = frac
    best, res, n, i = search_plans(
        ms,
        hw,
        system,
        gpus=gpus,
        seq_len=seq_len,
        global_batch=global_batch,
        precision=precision,
        method=method,
        eff=efficiency,
        fixed=fixed,
        optimizer=optimizer,
        tp_comm_overlap=bool(p.get("tp_comm_overlap", False)),
        practice=practice,
        attention_kernel=attention_kernel,
    )

    def v(key: str) -> float:
        return float(res[key][i])

    mem_gb = v("memory_per_gpu_bytes") / GIGA
    values: dict[str, Any] = {
        "step_time_s": v("step_time_s"),
        "tokens_per_s": v("tokens_per_s"),
        "tokens_per_s_per_gpu": v("tokens_per_s_per_gpu"),
        "model_tflops_per_gpu": v("model_tflops_per_gpu"),
        "hardware_tflops_per_gpu": v("hardware_tflops_per_gpu"),
        "mfu": v("mfu"),
        "hfu": v("hfu"),
        "memory_per_gpu_gb": mem_gb,
        "memory_capacity_gb": hw.memory_gb,
        "fits": bool(res["fits"][i]),
        "over_by_gb": max(mem_gb - hw.memory_gb, 0.0),
        "gradient_accumulation": round(v("n_micro")),
        "global_batch": global_batch,
        "global_batch_tokens": global_batch * seq_len,
        # fewer sequences than one per 8 devices (Llama 3's floor): DP is held below the GPUs
        "batch_caps_dp": bool(global_batch * GPUS_PER_SEQUENCE_FLOOR < gpus),
        # fewer micro-batches than pipeline stages: the bubble idles each stage over half a step
        "batch_leaves_gpus_idle": bool(round(v("n_micro")) < best["pp"]),
        "seq_len": seq_len,
        "gpus": gpus,
        "precision": precision,
        "method": method,
        "plan": {
            "tp": best["tp"],
            "pp": best["pp"],
            "cp": best["cp"],
            "ep": best["ep"],
            "dp": best["dp"],
            "zero": best["zero"],
            "fsdp": bool(p.get("fsdp")) or False,
            "micro_batch": best["micro_batch"],
            "recompute": RECOMPUTE_NAMES[best["recompute"]],
            "recompute_fraction": best["recompute_fraction"],
            "vp": best["vp"],
            "tp_comm_overlap": bool(p.get("tp_comm_overlap", False)),
            "searched": n > 1,
        },
    }
    if tokens is not None:
        wall_s = tokens / values["tokens_per_s"]
        values["tokens"] = tokens
        values["wall_clock_h"] = wall_s / SECONDS_PER_HOUR
        values["gpu_hours"] = values["wall_clock_h"] * gpus
    interval = training_interval(values, efficiency)
    values["interval"] = interval
    if practice is not None:
        values["published_best_mfu"] = practice.best_mfu
        values["published_best_source"] = practice.source
        # the whole 80% interval of the predicted MFU lies above the best published run
        values["beyond_published_evidence"] = bool(interval["mfu"][0] > practice.best_mfu)
    time_terms = {k: v(k) for k in TIME_TERMS}
    mem_terms = {
        k: v(f"mem_{k}_bytes") / GIGA
        for k in ("weights", "gradients", "optimizer", "activations", "overhead")
    }
    inputs = {
        "model": model.id,
        "accelerator": acc.id,
        "system": system.id,
        "gpus": gpus,
        "seq_len": seq_len,
        "global_batch": global_batch,
        "precision": precision,
        "method": method,
        "gemm_efficiency": hw.gemm_efficiency,
        "elementwise_hbm_efficiency": efficiency.elementwise_hbm,
        "peak_tflops": hw.peak_linear_tflops,
    }
    pl = values["plan"]
    e = efficiency
    term_inputs: dict[str, dict[str, Any]] = {
        "compute_s": {
            "peak_tflops": hw.peak_linear_tflops,
            "gemm_efficiency": hw.gemm_efficiency,
            "attention_efficiency": hw.attention_efficiency,
            "recompute": pl["recompute"],
            "recompute_fraction": pl["recompute_fraction"],
        },
        "memory_bound_s": {
            "hbm_bandwidth_gb_s": hw.hbm_bandwidth_gb_s,
            "elementwise_hbm": e.elementwise_hbm,
        },
        "tp_comm_s": {
            "tp": pl["tp"],
            "intra_node_link": e.intra_node_link,
            "tp_overlap": e.tp_overlap if pl["tp_comm_overlap"] else 0.0,
        },
        "cp_comm_s": {"cp": pl["cp"]},
        "ep_comm_s": {"ep": pl["ep"]},
        "zero3_comm_s": {"zero": pl["zero"], "dp": pl["dp"], "dp_overlap": e.dp_overlap},
        "dp_comm_s": {
            "dp": pl["dp"],
            "dp_overlap": e.dp_overlap,
            "scale_out_link": e.scale_out_link,
        },
        "pp_comm_s": {"pp": pl["pp"], "vp": pl["vp"]},
        "bubble_s": {
            "pp": pl["pp"],
            "vp": pl["vp"],
            "micro_batches": values["gradient_accumulation"],
        },
        "optimizer_s": {"zero": pl["zero"], "optimizer": optimizer},
    }
    return TrainingResult(values, interval, time_terms, mem_terms, inputs, n, term_inputs)


def training_interval(values: dict[str, Any], eff: EfficiencyParams) -> dict[str, list[float]]:
    r"""80% ranges of the headline figures from the validation residuals.

    Notes
    -----
    With :math:`q_{10}, q_{90}` the 10th/90th percentiles of :math:`\ln(obs/pred)` of
    tokens/s/GPU on the validation rows, throughput lies in
    :math:`[x e^{q_{10}}, x e^{q_{90}}]` and times/hours in :math:`[x e^{-q_{90}}, x e^{-q_{10}}]`.
    """
    lo, hi = eff.training_log_ratio_q10, eff.training_log_ratio_q90
    out: dict[str, list[float]] = {}
    for k in ("tokens_per_s", "tokens_per_s_per_gpu", "mfu", "model_tflops_per_gpu"):
        out[k] = [values[k] * float(np.exp(lo)), values[k] * float(np.exp(hi))]
    for k in ("step_time_s", "gpu_hours", "wall_clock_h"):
        if k in values:
            out[k] = [values[k] * float(np.exp(-hi)), values[k] * float(np.exp(-lo))]
    return out


#: Bytes of a full checkpoint per parameter: bf16 weights 2 + fp32 master/m/v 12 (ZeRO [4]).
CHECKPOINT_BYTES_PER_PARAM = 2.0 + ADAM_FP32_BYTES


def checkpoint_bytes(total_params: Any, include_optimizer: Any = True) -> F64:
    """Size of a training checkpoint [B].

    Parameters
    ----------
    total_params : array_like
        Model parameters. [count]
    include_optimizer : array_like of bool
        Whether optimizer states (fp32 master, Adam moments) are saved too.

    Returns
    -------
    ndarray
        :math:`N (2 + 12)` bytes with optimizer, :math:`2N` without. [B]
    """
    n = np.asarray(total_params, dtype=float)
    return np.where(np.asarray(include_optimizer), n * CHECKPOINT_BYTES_PER_PARAM, n * 2.0)


def checkpoint_save_time_s(
    total_params: Any,
    write_bandwidth_gb_s: Any,
    *,
    include_optimizer: Any = True,
    blocking_fraction: Any = 1.0,
) -> F64:
    r"""Time training stalls to save one checkpoint.

    Parameters
    ----------
    total_params : array_like
        Model parameters. [count]
    write_bandwidth_gb_s : array_like
        Aggregate write bandwidth of the storage the checkpoint goes to. [GB/s]
    include_optimizer : array_like of bool
        Save optimizer states too (needed to resume).
    blocking_fraction : array_like
        Share of the write the training waits for (1 = synchronous; asynchronous
        checkpointing only blocks for the device-to-host copy). [0-1]

    Returns
    -------
    ndarray
        Stall time per checkpoint. [s]

    Notes
    -----
    :math:`t = f_{block}\, N (2 + 12) / B_{write}`.

    Examples
    --------
    >>> float(checkpoint_save_time_s(70e9, 10.0))
    98.0
    """
    size = checkpoint_bytes(total_params, include_optimizer)
    return (
        np.asarray(blocking_fraction, dtype=float)
        * size
        / (np.asarray(write_bandwidth_gb_s, dtype=float) * GIGA)
    )


#: Compute-optimal batch size fitted by DeepSeek LLM (X. Bi et al., arXiv 2401.02954, Sec. 3.1,
#: Fig. 3): :math:`B_{opt} = 0.2920\, C^{0.3271}` tokens for a compute budget :math:`C` FLOPs.
BATCH_LAW_COEF_TOKENS = 0.2920
BATCH_LAW_EXPONENT = 0.3271
#: Tokens per parameter assumed for the compute budget when no token count is given (Chinchilla,
#: J. Hoffmann et al., arXiv 2203.15556: about 20 tokens per parameter).
CHINCHILLA_TOKENS_PER_PARAM = 20.0
#: Published floor of sequences per device at scale: Llama 3 405B trained with 16M-token
#: batches of 8,192-token sequences on 16,384 H100, one sequence per 8 GPUs per step
#: (Llama 3 paper, arXiv 2407.21783, Sec. 3.4.1 and Table 4).
GPUS_PER_SEQUENCE_FLOOR = 8


def default_global_batch_tokens(
    active_params: Any, gpus: Any, seq_len: Any, tokens: Any = None
) -> NDArray[np.int64]:
    r"""Global batch that published practice would use for a run [tokens].

    Parameters
    ----------
    active_params : array_like
        Parameters touched per token (MoE: active). [count]
    gpus : array_like
        Devices. [count]
    seq_len : array_like
        Sequence length. [tokens]
    tokens : array_like, optional
        Tokens to train on (default: 20 per parameter, Chinchilla). [tokens]

    Returns
    -------
    ndarray
        :math:`\max(0.292\,C^{0.3271},\ \lceil n_{gpu}/8 \rceil s)` with :math:`C = 6 N D`,
        rounded up to whole sequences. [tokens]

    Notes
    -----
    The first term is DeepSeek LLM's compute-optimal batch law (2401.02954, Sec. 3.1); the
    second keeps at least one sequence per 8 devices, Llama 3 405B's published batch on 16,384
    GPUs (2407.21783, Sec. 3.4.1), so that a large cluster is not left without data-parallel
    work. Checks: GPT-2 124M on 10B tokens gives 0.44M (llm.c uses 0.52M); DeepSeek-V3 (37B
    active, 14.8T tokens) 30M (published: 12.6M ramped to 63M); Llama 3.1 405B on 16,384 GPUs
    at 8,192 tokens 68M from the law (published 16M: the law is an upper guide, not a cap).

    Examples
    --------
    >>> int(default_global_batch_tokens(124e6, 8, 1024, 10e9))
    435200
    """
    n = np.asarray(active_params, dtype=float)
    s = np.asarray(seq_len, dtype=float)
    d = n * CHINCHILLA_TOKENS_PER_PARAM if tokens is None else np.asarray(tokens, dtype=float)
    law = BATCH_LAW_COEF_TOKENS * (6.0 * n * d) ** BATCH_LAW_EXPONENT
    floor = np.ceil(np.asarray(gpus, dtype=float) / GPUS_PER_SEQUENCE_FLOOR) * s
    seqs = np.maximum(np.ceil(np.maximum(law, floor) / s), 1.0)
    return (seqs * s).astype(np.int64)

"""Training step time of many parallel plans at once: the vectorised model.

Three parts, as the other engines: *validate* (:func:`plan_arrays`: the plans as float arrays
and the per-micro-batch quantities), *model* (pure numpy functions of arrays, one physical
relation each: :func:`linear_time_s`, :func:`attention_time_s`, :func:`memory_bound_time_s`,
:func:`tp_comm_time_s`, :func:`cp_comm_time_s`, :func:`ep_comm_time_s`,
:func:`dp_comm_times_s`, :func:`pp_comm_time_s`, :func:`optimizer_time_s`,
:func:`bubble_time_s`) and *assemble* (:func:`evaluate_plans`: the terms, which sum to the step
time, and the headline figures). :mod:`aitco.perf.plan_search` prices a million candidate plans
per second with it; :mod:`aitco.perf.training` is the single-plan interface.

A fixed time per step (``step_overhead_s``) covers what happens outside the micro-batches
(launches, host synchronisation, data loader); see ``docs/training.md``.

References
----------
.. [1] D. Narayanan et al., SC21, arXiv:2104.04473 (PTD-P, bubble, interleaving).
.. [2] V. Korthikanti et al., arXiv:2205.05198, 2022 (sequence parallel, selective recompute).
.. [3] T. Dao, "FlashAttention-2", arXiv:2307.08691, 2023.
.. [4] S. Rajbhandari et al., ZeRO, arXiv:1910.02054.
.. [5] Y. Zhao et al., "PyTorch FSDP", arXiv:2304.11277, 2023, sec. 3.2.2 (hybrid sharding:
   shard inside a group of hosts, replicate across groups, gradients all-reduced across
   replicas once per step); MaxText multi-slice (FSDP over ICI inside a slice, data
   parallelism over DCN across slices), https://github.com/AI-Hypercomputer/maxtext.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aitco.catalog.schema import Accelerator, System
from aitco.errors import InputError
from aitco.perf import comms
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.flops import (
    ModelShape,
    attention_flops_per_token,
    layer_matmul_flops_per_token,
    lm_head_flops_per_token,
    recompute_flops_per_token,
    routed_expert_flops_per_token,
    training_flops_per_token,
)
from aitco.perf.kernels import (
    attention_seq_efficiency,
    attention_seq_half,
    gemm_k_half,
    gemm_shape_efficiency,
)
from aitco.perf.memory import (
    ADAM_8BIT_BYTES,
    ADAM_FP32_BYTES,
    LOGIT_BYTES,
    OFFLOAD_NVME_MODES,
    OFFLOAD_PARAM_MODES,
    grad_bytes_per_param,
    training_memory_bytes,
    weight_bytes_per_param,
)
from aitco.perf.parallelism import (
    bubble_fraction,
    expert_load_imbalance,
    group_strides,
    moe_alltoall_time_s,
)
from aitco.perf.power import compute_clock_ratio
from aitco.perf.precision import (
    HIGH_PRECISION,
    blended_linear_peak_tflops,
    resolve_training_format,
)
from aitco.units import GIGA, TERA

F64 = NDArray[np.float64]

#: Training data types the plan sweeps price (catalog peak keys); ``aitco train`` and
#: ``compare`` take every format of :data:`aitco.perf.precision.TRAIN_FORMATS` (MXFP8, NVFP4,
#: MXFP4, INT8 too).
TRAIN_PRECISIONS = ("bf16", "fp16", "fp8", "fp32")
#: Attention (FlashAttention) and the LM head run in bf16 even in low-precision training
#: (Transformer Engine keeps them in higher precision; arXiv:2509.25149 for NVFP4).
HIGH_PRECISION_FOR_FP8 = HIGH_PRECISION
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
#: Loss kernels: ``unfused`` (PyTorch cross-entropy over fp32 logits: :data:`LOSS_LOGIT_PASSES`
#: passes of :data:`~aitco.perf.memory.LOGIT_BYTES`) or ``fused`` (one kernel reads each 16-bit
#: logit once and writes its gradient in place: llm.c's ``fused_classifier``, Liger Kernel's
#: fused linear cross-entropy, Megatron-LM ``--cross-entropy-loss-fusion``).
LOSS_KERNELS = ("unfused", "fused")
#: HBM bytes per logit of the fused loss: a 16-bit read and a 16-bit write.
FUSED_LOSS_BYTES_PER_LOGIT = 4.0
#: Step loops: ``python`` (a PyTorch-style loop: the fitted ``step_overhead_s`` of host,
#: launch and data-loader time per step) or ``native`` (no per-step host time on the critical
#: path: a C/CUDA loop such as llm.c's, or a step captured whole in CUDA graphs).
HOST_LOOPS = ("python", "native")
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
#: Casting a bf16 tensor to fp8 reads 2 bytes and writes 1 per element (Transformer Engine);
#: other formats: :meth:`aitco.perf.precision.ResolvedFormat.cast_bytes_per_element`.
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
#: Raw per-direction rate of a PCIe x16 host link by generation (PCI-SIG base specifications:
#: 2.5/5 GT/s with 8b/10b, 8/16/32 GT/s with 128b/130b, 64 GT/s PAM4 with FLIT; 16 lanes). [GB/s]
PCIE_X16_GB_S = {1: 4.0, 2: 8.0, 3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}


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
    gemm_ceiling: float = 0.0  # GEMM fraction at gemm_level "ceiling" (0: gemm_efficiency)
    elementwise_fused: bool = False
    pcie_gb_s: float = 0.0
    tp_overlap: float = DEFAULT_EFFICIENCY.tp_overlap
    clock_ratio: float = 1.0  # compute clock under a power limit (perf.power); 1 at the TDP
    compute_units: float = 0.0  # SMs / CUs for wave quantization (0: unknown, tiles only)
    gemm_k_half: float = 0.0  # short-K half length of this part and precision [elements]
    gemm_latency_s: float = DEFAULT_EFFICIENCY.gemm_latency_s
    attention_block_fixed_s: float = 0.0  # FlashAttention fixed time per query block [s]
    cast_bytes: float = 0.0  # HBM bytes per quantised linear-input element and pass [B]
    lowp_linear_share: float = 0.0  # share of the linear GEMM work on quantised operands
    format_mode: str = "16-bit"  # native, scaled-in-software, emulated or 16-bit
    format_note: str = ""  # how the part runs the format, in words


def host_link_gb_s(acc: Accelerator) -> float:
    """Per-direction rate of the device's link to its host's memory [GB/s].

    The catalog's ``host_link_gb_s`` where the part is not on PCIe (NVLink-C2C of the Grace
    superchips: 450 GB/s each way), else the x16 rate of its PCIe generation; 0 when unknown.
    """
    if acc.host_link_gb_s:
        return float(acc.host_link_gb_s)
    return PCIE_X16_GB_S.get(acc.pcie_gen or 0, 0.0)


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
    """Peaks and memory of ``acc`` for training in ``precision`` (PlanError if unsupported).

    The matmul and attention peaks run at the clock a power limit below the TDP leaves
    (:func:`aitco.perf.power.compute_clock_ratio`); MFU stays against the nominal peak.
    """
    rf = resolve_training_format(acc, precision)  # native, scaled in software or emulated
    gemm_dtype = rf.gemm_dtype
    lin = blended_linear_peak_tflops(acc, rf)
    att_dtype = HIGH_PRECISION_FOR_FP8 if rf.fmt.quantized else gemm_dtype
    att = acc.peak_tflops.get(att_dtype, acc.peak_tflops.get("fp16", lin))
    clock = compute_clock_ratio(acc)  # a power limit below the TDP slows the compute clock
    ceiling = acc.matmul_ceiling(gemm_dtype)
    lowp_share = 1.0 - rf.fmt.bf16_linear_share if rf.fmt.quantized else 0.0
    return HardwareShape(
        peak_linear_tflops=float(lin) * clock,
        peak_attention_tflops=float(att) * clock,
        peak_mfu_tflops=float(acc.peak_tflops[gemm_dtype]),
        hbm_bandwidth_gb_s=float(acc.hbm_bandwidth_gb_s),
        memory_gb=float(acc.memory_gb),
        gemm_efficiency=float(eff.training_gemm_for(acc.family, ceiling)),
        gemm_ceiling=float(eff.training_gemm_at("ceiling", acc.family, ceiling)[0]),
        attention_efficiency=float(eff.attention_for(acc.family)),
        elementwise_fused=acc.elementwise_fused_into_matmul,
        pcie_gb_s=host_link_gb_s(acc),
        tp_overlap=float(eff.tp_overlap_for(acc.family)),
        clock_ratio=clock,
        compute_units=float(acc.compute_units or 0),
        gemm_k_half=gemm_k_half(
            eff.gemm_tile_fixed_s, float(lin) * clock * TERA, float(acc.compute_units or 0)
        ),
        gemm_latency_s=float(eff.gemm_latency_s),
        attention_block_fixed_s=float(eff.attention_block_fixed_for(acc.family)),
        cast_bytes=rf.cast_bytes_per_element(),
        lowp_linear_share=lowp_share,
        format_mode=rf.mode,
        format_note=rf.note,
    )


# =============================================================================== validate
@dataclass(frozen=True)
class RunShape:
    """What every plan of one evaluation shares (scalars).

    Attributes
    ----------
    seq_len : float
        Sequence length. [tokens]
    global_batch : float
        Sequences per optimizer step. [count]
    gpus : float
        Devices. [count]
    precision : str
        Training data type (:data:`TRAIN_PRECISIONS`).
    method : {"full", "lora", "qlora"}
        Training method.
    optimizer : {"adam", "adam8bit"}
        Optimizer state format.
    lora_params : float, optional
        Adapter parameters (LoRA/QLoRA). [count]
    attention_kernel : {"flash", "unfused"}
        Attention implementation.
    shard_devices : float, optional
        Hybrid sharding [5]: ZeRO-3/FSDP state is sharded only inside groups of this many
        consecutive devices (a node, a TPU slice) and replicated across the groups, whose
        gradients are all-reduced once per step. ``None``: the whole DP group shards. [count]
    offload : {"none", "optimizer", "params", "optimizer-nvme", "params-nvme"}
        ZeRO-Offload to host memory (:func:`aitco.perf.memory.training_memory_bytes`,
        :func:`offload_time_s`).
    loss_kernel : {"unfused", "fused"}
        Cross-entropy implementation (:data:`LOSS_KERNELS`).
    host_loop : {"python", "native"}
        Step loop (:data:`HOST_LOOPS`).
    elementwise_kernels : {"framework", "fused", "eager"}
        Style of the memory-bound kernels
        (:data:`aitco.perf.efficiency.ELEMENTWISE_KERNELS`): sets their fraction of HBM
        bandwidth (:meth:`~aitco.perf.efficiency.EfficiencyParams.elementwise_hbm_for`).
    gemm_level : {"framework", "ceiling"}
        GEMM level of the stack (:data:`aitco.perf.efficiency.GEMM_LEVELS`): the fitted
        framework level or the measured matmul ceiling (:func:`gemm_fraction`).
    activation_precision : str, optional
        Format saved activations are held in, when not ``precision`` (an emulated low-precision
        format saves 16-bit tensors).
    activation_offload : bool
        Decoder-layer inputs kept in host memory over the host link (full recompute):
        :func:`aitco.perf.memory.training_memory_bytes`, :func:`activation_offload_time_s`.
    moe_capacity_factor : float, optional
        Expert capacity as a multiple of the even share of routed tokens (tokens beyond it
        dropped); None: dropless (:func:`routed_load_factor`).
    moe_pad_to_capacity : bool
        Every expert's input padded to the capacity.
    """

    seq_len: float
    global_batch: float
    gpus: float
    precision: str
    method: str
    optimizer: str = "adam"
    lora_params: float | None = None
    attention_kernel: str = "flash"
    shard_devices: float | None = None
    offload: str = "none"
    loss_kernel: str = "unfused"
    host_loop: str = "python"
    elementwise_kernels: str = "framework"
    gemm_level: str = "framework"
    activation_precision: str | None = None
    activation_offload: bool = False
    moe_capacity_factor: float | None = None
    moe_pad_to_capacity: bool = False

    @property
    def logit_bytes(self) -> float:
        """Bytes a logit holds in memory until its gradient is formed [B]."""
        return self.act_bytes if self.loss_kernel == "fused" else LOGIT_BYTES

    @property
    def act_bytes(self) -> float:
        """Bytes of one activation element (fp32 training: 4, else 2) [B]."""
        return 4.0 if self.precision == "fp32" else 2.0


@dataclass(frozen=True)
class PlanArrays:
    """The plans as float arrays, with the per-micro-batch quantities every term uses.

    Attributes
    ----------
    tp, pp, cp, ep, dp, vp : ndarray
        Parallel degrees and model chunks per stage. [count]
    zero, recompute : ndarray
        ZeRO stage (FSDP = 3) and recompute code (0 none, 1 selective, 2 full).
    dp_shard : ndarray
        DP ranks that shard ZeRO state: ``dp``, or with hybrid sharding the DP ranks inside
        one ``shard_devices`` group, ``gcd(dp, max(shard_devices // (tp cp), 1))``. [count]
    micro_batch : ndarray
        Sequences per micro-batch. [count]
    tp_comm_overlap : ndarray
        1 where TP collectives overlap GEMMs. [0/1]
    ep_comm_overlap : ndarray
        1 where the expert-parallel all-to-alls of one micro-batch run under the compute of
        another (Megatron ``overlap_moe_expert_parallel_comm``). [0/1]
    dualpipe : ndarray
        1 where the pipeline runs DeepSeek's DualPipe schedule (arXiv 2412.19437 Sec. 3.2.1):
        bidirectional, forward and backward chunks of two micro-batches overlapped so that
        their all-to-alls and PP sends hide under each other's compute. [0/1]
    n_micro : ndarray
        Micro-batches per step, ``ceil(B / (b dp))``. [count]
    layers : ndarray
        Layers of the critical pipeline stage, ``ceil(L / pp)``. [count]
    tokens : ndarray
        Tokens of one micro-batch on one device group member, ``b s / cp``. [tokens]
    full_rc : ndarray
        Share of the layers whose forward is recomputed (full recompute). [0-1]
    any_rc : ndarray
        1 where the attention core is recomputed (selective or full). [0/1]
    recompute_fraction : ndarray
        Share of layers fully recomputed when ``recompute`` is 2. [0-1]
    """

    tp: F64
    pp: F64
    cp: F64
    ep: F64
    dp: F64
    vp: F64
    zero: NDArray[Any]
    recompute: NDArray[Any]
    micro_batch: F64
    tp_comm_overlap: F64
    recompute_fraction: F64
    n_micro: F64
    layers: F64
    tokens: F64
    full_rc: F64
    any_rc: F64
    dp_shard: F64
    ep_comm_overlap: F64
    dualpipe: F64

    @property
    def tok_tp(self) -> F64:
        """Tokens per device after sequence parallelism, ``tokens / tp``."""
        return self.tokens / self.tp

    @property
    def tok_layers(self) -> F64:
        """Token-layers one device computes per micro-batch."""
        return self.tok_tp * self.layers


def plan_arrays(ms: ModelShape, run: RunShape, **plan: Any) -> PlanArrays:
    """Return the plans as :class:`PlanArrays` (the validate step of the model).

    ``plan`` holds ``tp``, ``pp``, ``cp``, ``ep``, ``dp``, ``zero``, ``micro_batch``,
    ``recompute``, ``vp``, ``recompute_fraction``, ``tp_comm_overlap`` and (optional,
    default 0) ``ep_comm_overlap`` and ``dualpipe`` (array_like).
    """
    f = {k: np.asarray(plan[k], dtype=float) for k in ("tp", "pp", "cp", "ep", "dp", "micro_batch")}
    rc = np.asarray(plan["recompute"])
    frac = np.asarray(plan["recompute_fraction"], dtype=float)
    tokens = f["micro_batch"] * run.seq_len / f["cp"]
    dp_shard = f["dp"]
    if run.shard_devices is not None:  # hybrid sharding: the DP ranks inside one group
        per_group = np.maximum(run.shard_devices // (f["tp"] * f["cp"]), 1.0)
        dp_shard = np.gcd(f["dp"].astype(np.int64), per_group.astype(np.int64)).astype(float)
    return PlanArrays(
        **f,
        vp=np.asarray(plan["vp"], dtype=float),
        zero=np.asarray(plan["zero"]),
        recompute=rc,
        tp_comm_overlap=np.asarray(plan["tp_comm_overlap"], dtype=float),
        recompute_fraction=frac,
        n_micro=np.ceil(run.global_batch / (f["micro_batch"] * f["dp"])),
        layers=np.ceil(ms.n_layers / f["pp"]),
        tokens=tokens,
        full_rc=np.where(rc == 2, frac, 0.0),
        any_rc=(rc >= 1).astype(float),
        dp_shard=dp_shard,
        ep_comm_overlap=np.asarray(plan.get("ep_comm_overlap", 0.0), dtype=float),
        dualpipe=np.asarray(plan.get("dualpipe", 0.0), dtype=float),
    )


# =============================================================================== model
def gemm_fraction(hw: HardwareShape, gemm_level: str) -> float:
    """GEMM fraction of the dense peak a run's stack reaches on large GEMMs.

    ``gemm_level`` (:data:`aitco.perf.efficiency.GEMM_LEVELS`) ``framework``: the fitted
    end-to-end ``training_gemm`` of the part's family; ``ceiling``: the part's measured
    matmul ceiling (``HardwareShape.gemm_ceiling``, from
    :meth:`aitco.perf.efficiency.EfficiencyParams.training_gemm_at`). The kernel shape laws
    multiply either.
    """
    if gemm_level == "ceiling" and hw.gemm_ceiling > 0.0:
        return hw.gemm_ceiling
    return hw.gemm_efficiency


def attention_seq_half_for(ms: ModelShape, hw: HardwareShape) -> float:
    """Keys per query at which this part's FlashAttention reaches half its long-run rate."""
    return attention_seq_half(
        hw.attention_block_fixed_s,
        hw.peak_attention_tflops * TERA,
        hw.compute_units,
        float(ms.head_dim),
    )


def attention_time_s(
    ms: ModelShape, hw: HardwareShape, eff: EfficiencyParams, run: RunShape, pa: PlanArrays
) -> F64:
    r"""Attention-core time of one micro-batch on the critical stage [s].

    Notes
    -----
    FlashAttention: :math:`T L_s F_{att} (1 + 2.5 + r_{any}) / (P_{16} a)`
    (forward, the 5-matmul backward of FlashAttention-2 [3], a recomputed forward), with
    :math:`a` the family's ``attention`` fraction times the kernel's sequence-length law
    (:func:`aitco.perf.kernels.attention_seq_efficiency`, causal, fitted to published kernel
    figures).
    Unfused (pre-2022 Megatron-LM): the full :math:`s \times s` products as batched GEMMs at the
    GEMM fraction, 2 backward GEMMs per forward GEMM.
    """
    s = run.seq_len
    if run.attention_kernel == "unfused":
        att_full_tok = float(attention_flops_per_token(ms, s, causal=False))
        rate = hw.peak_attention_tflops * TERA * gemm_fraction(hw, run.gemm_level)
        return pa.tok_layers * (att_full_tok / rate) * (1.0 + UNFUSED_BWD_MATMULS + pa.any_rc)
    rate = (
        hw.peak_attention_tflops
        * TERA
        * hw.attention_efficiency
        * float(attention_seq_efficiency(s, True, attention_seq_half_for(ms, hw)))
    )
    att_fwd_tok = float(attention_flops_per_token(ms, s))
    return pa.tok_layers * (att_fwd_tok / rate) * (1.0 + FLASH_BWD_MATMULS + pa.any_rc)


#: GEMM launches of one layer per pass (QKV, attention output, FFN up(+gate), FFN down; MoE
#: experts as one grouped GEMM).
LAYER_GEMMS = 4.0


def layer_gemm_time_factors(
    ms: ModelShape, tokens: Any, tp: Any, compute_units: float, k_half: float
) -> tuple[F64, F64, F64]:
    r"""Flop-weighted mean of :math:`1/e` over a layer's GEMMs, per pass.

    Parameters
    ----------
    ms : ModelShape
        Model.
    tokens : array_like
        Rows of the activations a device multiplies in one micro-batch (sequence parallel
        gathers the sequence before the column-parallel GEMMs): ``micro_batch x s / cp``.
    tp : array_like
        Tensor-parallel degree (divides the GEMMs' N or K). [count]
    compute_units : float
        SMs / CUs. [count]
    k_half : float
        ``gemm_k_half``. [elements]

    Returns
    -------
    fwd, dgrad, wgrad : ndarray
        :math:`\sum_g w_g / e(M_g, N_g, K_g)` for the forward :math:`(M, N, K)`, the data
        gradient :math:`(M, K, N)` and the weight gradient :math:`(K, N, M)` GEMMs, with
        :math:`w_g` the FLOP share of GEMM :math:`g` (QKV, attention output, FFN up(+gate),
        FFN down; MoE experts as one grouped GEMM of the active width) and :math:`e` =
        :func:`aitco.perf.kernels.gemm_shape_efficiency`. 1 = a large GEMM.
    """
    tokens = np.asarray(tokens, dtype=float)
    tp = np.asarray(tp, dtype=float)
    key = tokens * 1024.0 + tp
    uniq, inv = np.unique(key, return_inverse=True)
    t_u = np.floor(uniq / 1024.0)
    tp_u = uniq - t_u * 1024.0
    h = float(ms.d_model)
    q = float(ms.n_heads * ms.head_dim)
    kv = float(ms.kv_heads * ms.head_dim)
    f = float(ms.ffn_width_active)
    up = 2.0 * f if ms.gated else f
    gemms = ((q + 2.0 * kv, h, True), (h, q, False), (up, h, True), (h, f, False))
    total = sum(n * k for n, k, _ in gemms)
    out = [np.zeros_like(t_u) for _ in range(3)]
    for n_full, k_full, column in gemms:
        n = n_full / tp_u if column else np.full_like(t_u, n_full)
        k = np.full_like(t_u, k_full) if column else k_full / tp_u
        w = n_full * k_full / total
        for i, (a, b, c) in enumerate(((t_u, n, k), (t_u, k, n), (k, n, t_u))):
            out[i] = out[i] + w / gemm_shape_efficiency(a, b, c, compute_units, k_half)
    shape = np.broadcast(tokens, tp).shape
    fwd, dgrad, wgrad = (o[inv].reshape(shape) for o in out)
    return fwd, dgrad, wgrad


def linear_time_s(
    ms: ModelShape, hw: HardwareShape, eff: EfficiencyParams, run: RunShape, pa: PlanArrays
) -> F64:
    r"""GEMM time of one micro-batch on the critical stage (layers, LM head, adapters) [s].

    Notes
    -----
    :math:`T L_s F_{lin} \phi / (P g) + L_s n_g t_0 + (T/tp) F_{head} n_p / (P_{16} g)`, with
    :math:`\phi` the shape factors of :func:`layer_gemm_time_factors` (forward x (1 +
    recomputed share) + data gradient + weight gradient; frozen weights, LoRA/QLoRA, have no
    weight gradient), :math:`g` the family's GEMM fraction, :math:`n_g` the layer's GEMM
    launches (:data:`LAYER_GEMMS` per pass) of fixed time :math:`t_0` (``gemm_latency_s``) and
    :math:`n_p` = 3 (full) or 2 (adapters) passes; adapters add :math:`3 \times 2 P_{lora}`.
    """
    g = gemm_fraction(hw, run.gemm_level)
    lin_rate = hw.peak_linear_tflops * TERA * g
    full = run.method == "full"
    f_fwd, f_dgrad, f_wgrad = layer_gemm_time_factors(
        ms, pa.tokens, pa.tp, hw.compute_units, hw.gemm_k_half
    )
    lin_factor = f_fwd * (1.0 + pa.full_rc) + f_dgrad + (f_wgrad if full else 0.0)
    passes = 3.0 if full else 2.0
    layer_flops: Any = layer_matmul_flops_per_token(ms)
    if ms.moe_layers:  # the busiest GPU of an EP group runs (imbalance - 1) more routed tokens
        layer_flops = layer_flops + routed_expert_flops_per_token(ms) * (
            routed_load_factor(ms, run, pa) - 1.0
        )
    launches = pa.layers * LAYER_GEMMS * (passes + pa.full_rc)
    t = (
        pa.tok_layers * (layer_flops / lin_rate) * lin_factor
        + launches * hw.gemm_latency_s
        + pa.tok_tp * (lm_head_flops_per_token(ms) * passes / (hw.peak_attention_tflops * TERA * g))
    )
    if not full:
        lp = ms.lora_params if run.lora_params is None else run.lora_params
        t = t + pa.tok_layers * (2.0 * lp / ms.n_layers * 3.0 / lin_rate)
    return t


def elementwise_bytes_per_token_layer(
    ms: ModelShape,
    run: RunShape,
    fused: bool = False,
    cast_bytes: float | None = None,
    lowp_share: float = 1.0,
) -> float:
    """HBM bytes the memory-bound kernels of one layer move per token in one pass [B].

    Norms (2), residuals (2), the FFN activation (gated: 3 f, else 2 f), rotary on Q and K,
    each read and written (:data:`ELEMENTWISE_RW`); MoE token permutation; the quantisation
    casts of every linear input in low-precision training, ``cast_bytes`` per element
    (:meth:`aitco.perf.precision.ResolvedFormat.cast_bytes_per_element`; default: FP8's
    :data:`FP8_CAST_BYTES` when ``run.precision`` is fp8) on the ``lowp_share`` of the linear
    layers the recipe quantises. ``fused`` (``Accelerator.elementwise_fused_into_matmul``: XLA
    on TPU): the norms, residuals, activation, rotary and casts ride in the operands and outputs
    of the adjacent matmuls and move no bytes of their own; only the MoE permutation (a gather)
    remains.
    """
    h = float(ms.d_model)
    q = float(ms.n_heads * ms.head_dim)
    kv = float(ms.kv_heads * ms.head_dim)
    f = ms.ffn_width_active
    act_b = run.act_bytes
    elem = 2 * h + 2 * h + (3 * f if ms.gated else 2 * f) + (2 * (q + kv) if ms.rope else 0.0)
    layer_bytes = 0.0 if fused else ELEMENTWISE_RW * elem * act_b
    if ms.moe_layers:  # token permutation to/from experts: copy k rows out and back
        layer_bytes += (
            ELEMENTWISE_RW * 2.0 * ms.n_active_experts * h * act_b * (ms.moe_layers / ms.n_layers)
        )
    if cast_bytes is None:
        cast_bytes = FP8_CAST_BYTES if run.precision == "fp8" else 0.0
    if cast_bytes and not fused:  # quantise the inputs of every quantised linear layer, grads
        layer_bytes += (2 * h + q + f) * cast_bytes * lowp_share
    return float(layer_bytes)


def memory_bound_time_s(
    ms: ModelShape, hw: HardwareShape, eff: EfficiencyParams, run: RunShape, pa: PlanArrays
) -> F64:
    r"""Memory-bound kernel time of one micro-batch on the critical stage [s].

    Notes
    -----
    :math:`T L_s B_{el} n / (\eta B_{HBM}) + (T/tp) V \cdot 4 \cdot 3 / (\eta B_{HBM})
    + L_s k\, t_{launch} n` with :math:`n = 1 + 2 + r_{full}` passes,
    :math:`B_{el}` of :func:`elementwise_bytes_per_token_layer` (0 but the MoE permutation on
    an accelerator whose compiler fuses elementwise work into matmuls), the loss over the
    vocabulary (fp32, 3 passes; a fused loss kernel: one 16-bit read and write), and a launch
    latency per kernel; unfused attention streams its
    :math:`n_h s` scores per token through HBM (6.5 forward, 8.5 backward passes).
    """
    passes = 1.0 + BACKWARD_ELEMENTWISE_PASSES + pa.full_rc
    hbm_rate = hw.hbm_bandwidth_gb_s * GIGA * eff.elementwise_hbm_for(run.elementwise_kernels)
    loss_b = (
        FUSED_LOSS_BYTES_PER_LOGIT
        if run.loss_kernel == "fused"
        else LOGIT_BYTES * LOSS_LOGIT_PASSES
    )
    loss_s = ms.vocab_size * loss_b / hbm_rate
    layer_bytes = elementwise_bytes_per_token_layer(
        ms, run, hw.elementwise_fused, hw.cast_bytes, hw.lowp_linear_share
    )
    t = (
        pa.tok_layers * (layer_bytes / hbm_rate) * passes
        + pa.tok_tp * loss_s
        + pa.layers * (KERNELS_PER_LAYER_PASS * KERNEL_OVERHEAD_S) * passes
    )
    if run.attention_kernel == "unfused":  # scores of the device's heads for each of its tokens
        s = run.seq_len
        s_att = min(s, float(ms.window)) if ms.window is not None else s
        score_bytes = float(ms.n_heads) * s_att * run.act_bytes
        score_passes = UNFUSED_SCORE_PASSES_FWD * (1.0 + pa.any_rc) + UNFUSED_SCORE_PASSES_BWD
        t = t + pa.tok_layers * (score_bytes / hbm_rate) * score_passes
    return t


def tp_comm_time_s(
    ms: ModelShape,
    hw: HardwareShape,
    system: System,
    eff: EfficiencyParams,
    run: RunShape,
    pa: PlanArrays,
) -> F64:
    r"""Exposed TP/SP collectives of one micro-batch [s].

    :math:`L_s \cdot 4 (2 + r_{full})\, t_{RS}(T h b) (1 - o_{tp})` [2]: an all-gather and a
    reduce-scatter around attention and FFN, forward and backward (+ recompute); :math:`o_{tp}`
    the accelerator family's ``tp_overlap`` where the plan overlaps TP comm.
    """
    bw, lat, le = comms.group_link(system, pa.tp, 1, eff.intra_node_link, eff.scale_out_link)
    act_buf = pa.tokens * (float(ms.d_model) * run.act_bytes)
    n_tp = 4.0 * (2.0 + pa.full_rc)  # AG+RS pairs: 2 fwd, 2 bwd, +2 recompute -> 8 or 12 ops
    t = np.where(
        pa.tp > 1, pa.layers * n_tp * comms.reduce_scatter_time_s(act_buf, pa.tp, bw, lat, le), 0.0
    )
    return t * (1.0 - hw.tp_overlap * pa.tp_comm_overlap)


def cp_comm_time_s(
    ms: ModelShape,
    system: System,
    eff: EfficiencyParams,
    run: RunShape,
    pa: PlanArrays,
    attention_s: F64,
) -> F64:
    r"""Context-parallel ring K/V exchange not hidden by the attention time [s].

    :math:`\max(L_s (3 + r_{any})(cp - 1)\, t_{p2p}(2 (T/tp) d_{kv} b) - t_{att}, 0)`: the
    forward passes K/V blocks, the backward K/V and dK/dV, a recomputed attention K/V again.
    """
    strides = group_strides(pa.tp, pa.cp, pa.dp)
    bw, lat, le = comms.group_link(
        system, pa.cp, strides["cp"], eff.intra_node_link, eff.scale_out_link
    )
    kv = float(ms.kv_heads * ms.head_dim)
    kv_block = pa.tok_tp * (2.0 * kv * run.act_bytes)
    ring = pa.layers * (3.0 + pa.any_rc) * (pa.cp - 1) * comms.p2p_time_s(kv_block, bw, lat, le)
    return np.where(pa.cp > 1, np.maximum(ring - attention_s, 0.0), 0.0)


def ep_comm_time_s(
    ms: ModelShape, system: System, eff: EfficiencyParams, run: RunShape, pa: PlanArrays
) -> F64:
    r"""Expert-parallel all-to-alls of one micro-batch: 4 per MoE layer (6 with recompute) [s].

    Each :func:`aitco.perf.parallelism.moe_alltoall_time_s` of the busiest rank's
    :math:`(T/tp)\,k\,h` activations: local peers over the scale-up link, remote ones over the
    NICs, once per target node for group-limited routing.
    """
    if not ms.moe_layers:  # dense: no experts to dispatch to
        return np.zeros_like(pa.tp)
    strides = group_strides(pa.tp, pa.cp, pa.dp)
    moe_layers = pa.layers * (ms.moe_layers / ms.n_layers)
    a2a_bytes = pa.tok_tp * (ms.n_active_experts * float(ms.d_model) * run.act_bytes)
    a2a_bytes = a2a_bytes * routed_load_factor(ms, run, pa)  # the busiest GPU sets the time
    n_a2a = 4.0 + 2.0 * pa.full_rc
    a2a = moe_alltoall_time_s(
        system, a2a_bytes, pa.ep, strides["ep"], ms.n_active_experts,
        n_groups=ms.expert_groups, topk_groups=ms.topk_expert_groups,
        intra_efficiency=eff.intra_node_link, inter_efficiency=eff.scale_out_link,
    )  # fmt: skip
    return np.where(pa.ep > 1, moe_layers * n_a2a * a2a, 0.0)


def routed_load_factor(ms: ModelShape, run: RunShape, pa: PlanArrays) -> F64:
    r"""Routed tokens the busiest expert-parallel rank computes, over the even share.

    Dropless routing (the default): the :func:`expert_imbalance` of random routing. With a
    capacity factor :math:`C` (GShard; Megatron ``--moe-expert-capacity-factor``) a rank takes
    at most :math:`C` times its share and drops the rest, :math:`\min(	ext{imbalance}, C)`;
    padded to the capacity (``--moe-pad-expert-input-to-capacity``) every expert computes
    exactly :math:`C` times its share.
    """
    imb = expert_imbalance(ms, pa)
    c = run.moe_capacity_factor
    if c is None or not ms.moe_layers:
        return imb
    return np.full_like(imb, c) if run.moe_pad_to_capacity else np.minimum(imb, c)


def dropped_token_fraction(imbalance: Any, capacity_factor: float | None) -> F64:
    r"""Share of the routed token assignments a capacity factor drops (0 when dropless).

    A rank whose load is :math:`	ext{imbalance}` times its share keeps :math:`C` of it:
    :math:`\max(0, 1 - C/	ext{imbalance})` of the busiest rank's tokens; an upper bound on the
    mean over ranks.
    """
    imb = np.asarray(imbalance, dtype=float)
    if capacity_factor is None:
        return np.zeros_like(imb)
    return np.asarray(np.maximum(0.0, 1.0 - capacity_factor / imb), dtype=np.float64)


def expert_imbalance(ms: ModelShape, pa: PlanArrays) -> F64:
    r"""Busiest-to-mean routed load of each plan's expert-parallel group (1: dense or EP 1).

    The ``ep`` devices of a group route their micro-batches' :math:`T/tp` tokens each to
    :math:`k` experts: :func:`aitco.perf.parallelism.expert_load_imbalance` of
    :math:`ep \cdot T/tp \cdot k` assignments over ``ep`` devices (uniform random routing, the
    balanced case an auxiliary loss aims at; the same relation the serving model uses).
    """
    if ms.moe_layers == 0:
        return np.ones_like(pa.ep)
    return expert_load_imbalance(pa.tok_tp * pa.ep * ms.n_active_experts, pa.ep)


def ep_exposed_time_s(ep_mb: F64, compute_mb: F64, pa: PlanArrays) -> F64:
    r"""Expert-parallel all-to-all time left exposed per micro-batch [s].

    With EP overlap the dispatch/combine all-to-alls of one micro-batch run under the compute
    of another (Megatron's 1F1B A2A overlap, ``overlap_moe_expert_parallel_comm``; DeepSeek-V3's
    DualPipe, arXiv 2412.19437 Sec. 3.2.1): only what exceeds that compute is exposed,
    :math:`\max(0, t_{a2a} - t_{compute})`. Without it the whole time is.
    """
    hidden = np.maximum(ep_mb - compute_mb, 0.0)
    return np.where((pa.ep_comm_overlap > 0) | (pa.dualpipe > 0), hidden, ep_mb)


def plan_memory_bytes(ms: ModelShape, run: RunShape, pa: PlanArrays) -> dict[str, F64]:
    r"""Memory per device of each plan (:func:`aitco.perf.memory.training_memory_bytes`) [B].

    DualPipe keeps two copies of the model parameters (weights and their gradients here) and
    the activations of :math:`pp + 1` micro-batches instead of :math:`pp` (arXiv 2412.19437
    Table 2).
    """
    opt_bytes = ADAM_8BIT_BYTES if run.optimizer == "adam8bit" else ADAM_FP32_BYTES
    mem = training_memory_bytes(
        ms,
        seq_len=run.seq_len,
        precision=run.precision,
        method=run.method,
        optimizer_bytes=opt_bytes,
        tp=pa.tp,
        pp=pa.pp,
        cp=pa.cp,
        ep=pa.ep,
        dp=pa.dp_shard,  # ZeRO divides by the ranks that shard (all DP without hybrid)
        zero=pa.zero,
        micro_batch=pa.micro_batch,
        recompute=pa.recompute,
        recompute_fraction=pa.recompute_fraction,
        n_micro=pa.n_micro,
        vp=pa.vp,
        trainable_params=run.lora_params,
        offload=run.offload,
        logit_bytes=run.logit_bytes,
        activation_precision=run.activation_precision,
        activation_offload=run.activation_offload,
    )
    if not np.any(pa.dualpipe):
        return mem
    dual = pa.dualpipe > 0
    copies = np.where(dual, 2.0, 1.0)
    more_acts = np.where(dual, (pa.pp + 1.0) / pa.pp, 1.0)
    out = dict(mem)
    out["weights"] = mem["weights"] * copies
    out["gradients"] = mem["gradients"] * copies
    out["activations"] = mem["activations"] * more_acts
    out["total"] = mem["total"] + (
        out["weights"] - mem["weights"] + out["gradients"] - mem["gradients"]
        + out["activations"] - mem["activations"]
    )  # fmt: skip
    return out


def devices_per_host(run: RunShape, system: System) -> float:
    """Return the devices of one node that train, sharing its host memory and CPUs [count]."""
    return min(run.gpus, float(system.devices_per_node))


def offload_time_s(
    hw: HardwareShape,
    system: System,
    eff: EfficiencyParams,
    run: RunShape,
    pa: PlanArrays,
    mem: dict[str, F64],
    work_s: F64,
) -> tuple[F64, F64]:
    r"""Exposed ZeRO-Offload time: per micro-batch and per step [s].

    Notes
    -----
    With :math:`S` the device's trainable shard (:math:`P/d` from ZeRO-1 on),
    :math:`B_{pcie} = \eta_{host} B_{x16}` the host link and :math:`B_{host}` the node's host
    memory bandwidth shared by the devices of the node that train:

    - per micro-batch, the reduced gradient shard goes to the host, :math:`S g / B_{pcie}`,
      hidden behind the backward pass up to its share of the micro-batch's work
      (Ren et al. 2021, Sec. 4.1); with parameters offloaded (ZeRO-Infinity) the weight shard
      comes back once per pass (forward, backward, recompute), :math:`n S_w w / B_{pcie}`,
      prefetched under the micro-batch's work;
    - per step, the CPU optimizer streams :data:`ADAM_STEP_BYTES_PER_PARAM` per parameter of
      the shard at :math:`\eta_{cpu} B_{host}` and, with the weights on the device, the updated
      16-bit shard returns over PCIe; neither overlaps the next step (no delayed update).

    NVMe offload (ZeRO-Infinity ``device: nvme``, modes ``*-nvme``), with the node's NVMe read
    and write bandwidths :math:`R, W` shared by its training devices: the optimizer states
    :math:`S K` are read in and written back each step, sub-group by sub-group, overlapped
    with the CPU step, :math:`\max(S K/R + S K/W\,[+ S w/W], t_{cpu})` (the bracket: updated
    weights written back when they live on NVMe too); weights on NVMe are fetched through
    host bounce buffers at :math:`\min(B_{pcie}, R)` per pass.
    """
    zeros = np.zeros_like(pa.tp)
    if run.offload == "none":
        return zeros, zeros
    pcie = hw.pcie_gb_s * GIGA * eff.host_link
    host_bw = float(system.host_memory_bandwidth_gb_s or 0.0) / devices_per_host(run, system)
    if pcie <= 0 or host_bw <= 0:
        raise InputError(
            "offload", run.offload,
            f"an accelerator with a PCIe generation and a system with host_memory_bandwidth_gb_s "
            f"({system.id})",
        )  # fmt: skip
    shard = np.where(
        pa.zero >= 1, mem["trainable_per_device"] / pa.dp_shard, mem["trainable_per_device"]
    )
    grad_b = grad_bytes_per_param(run.precision)
    wb = min(weight_bytes_per_param(run.precision, run.method), 2.0)
    d2h = shard * grad_b / pcie
    mb = np.maximum(d2h - BACKWARD_SHARE * work_s, 0.0)
    cpu_step = shard * ADAM_STEP_BYTES_PER_PARAM / (host_bw * GIGA * eff.host_memory)
    params_off = run.offload in OFFLOAD_PARAM_MODES
    fetch_rate: Any = pcie
    if run.offload in OFFLOAD_NVME_MODES:
        rd, wr = nvme_rates_b_s(system, run)
        opt_b = ADAM_8BIT_BYTES if run.optimizer == "adam8bit" else ADAM_FP32_BYTES
        swap = shard * opt_b / rd + shard * opt_b / wr + (shard * wb / wr if params_off else 0.0)
        cpu_step = np.maximum(swap, cpu_step)  # sub-groups pipelined: I/O under the CPU step
        fetch_rate = min(pcie, rd)
    if params_off:
        passes = 2.0 + pa.full_rc
        fetch = passes * (mem["params_per_device"] / pa.dp_shard) * wb / fetch_rate
        mb = mb + np.maximum(fetch - work_s, 0.0)
        return mb, cpu_step
    return mb, cpu_step + shard * wb / pcie


def activation_offload_time_s(
    ms: ModelShape,
    hw: HardwareShape,
    eff: EfficiencyParams,
    run: RunShape,
    pa: PlanArrays,
    work_s: F64,
) -> F64:
    r"""Exposed time of moving decoder-layer inputs to and from host memory, per micro-batch [s].

    Notes
    -----
    Each layer's input, :math:`T/t \cdot h\,b` bytes, goes to the host in the forward pass and
    comes back for the layer's recomputation in the backward pass, over the host link at
    :math:`\eta_{host} B_{link}` (``host_link``; NVLink-C2C or PCIe x16). The copies run
    beside the compute (JAX/XLA host offload, asynchronous DMA), so only what exceeds the
    micro-batch's work is exposed: :math:`\max(0, 2 L_s (T/t) h b / (\eta B) - t_{work})`.
    """
    if not run.activation_offload:
        return np.zeros_like(pa.tp)
    rate = hw.pcie_gb_s * GIGA * eff.host_link
    if rate <= 0:
        raise InputError(
            "offload_activations", True,
            "an accelerator with a host link (catalog pcie_gen or host_link_gb_s)",
        )  # fmt: skip
    bytes_mb = 2.0 * pa.layers * pa.tok_tp * float(ms.d_model) * run.act_bytes
    return np.maximum(bytes_mb / rate - work_s, 0.0)


def nvme_rates_b_s(system: System, run: RunShape) -> tuple[float, float]:
    """Return one training device's share of its node's NVMe read and write rates [B/s]."""
    rd, wr = system.nvme_read_gb_s, system.nvme_write_gb_s
    if not rd or not wr:
        raise InputError(
            "offload", run.offload,
            f"a system with nvme_read_gb_s and nvme_write_gb_s ({system.id})",
        )  # fmt: skip
    d = devices_per_host(run, system)
    return float(rd) * GIGA / d, float(wr) * GIGA / d


def dp_comm_times_s(
    system: System,
    eff: EfficiencyParams,
    run: RunShape,
    pa: PlanArrays,
    mem: dict[str, F64],
    work_s: F64,
) -> tuple[F64, F64]:
    r"""Exposed data-parallel traffic: ZeRO-3 per micro-batch, gradient sync per step [s].

    Returns
    -------
    zero3_s : ndarray
        ZeRO-3/FSDP per micro-batch: 2 weight all-gathers + 1 gradient reduce-scatter over the
        ``dp_shard`` ranks that shard, less ``dp_overlap`` x the micro-batch's work [4].
    sync_s : ndarray
        Per step, less ``dp_overlap`` x the backward share of the last micro-batch: ZeRO 0-2,
        the gradient all-reduce over ``dp``; hybrid ZeRO-3 [5], the all-reduce of each rank's
        reduce-scattered gradient shard (:math:`G / dp_{shard}`) over the
        :math:`dp / dp_{shard}` replicas, a group ``dp_shard`` times wider in stride (so it
        crosses the scale-out network, DCN, once the groups leave the scale-up domain).
    """
    strides = group_strides(pa.tp, pa.cp, pa.dp)
    grad_bytes = mem["trainable_per_device"] * grad_bytes_per_param(run.precision)
    wb = weight_bytes_per_param(run.precision, run.method)
    z3 = pa.zero >= 3
    bw, lat, le = comms.group_link(
        system, pa.dp_shard, strides["dp"], eff.intra_node_link, eff.scale_out_link
    )
    gathers = 2.0 * comms.allgather_time_s(
        mem["params_per_device"] * min(wb, 2.0), pa.dp_shard, bw, lat, le
    )
    z3_mb = gathers + comms.reduce_scatter_time_s(grad_bytes, pa.dp_shard, bw, lat, le)
    z3_exposed = np.where(
        z3 & (pa.dp_shard > 1), z3_mb - eff.dp_overlap * np.minimum(z3_mb, work_s), 0.0
    )
    window = BACKWARD_SHARE * work_s
    if run.shard_devices is None:  # no hybrid sharding: dp_shard is dp
        sync = comms.allreduce_time_s(grad_bytes, pa.dp, bw, lat, le)
        sync_exposed = np.where(
            z3 | (pa.dp <= 1), 0.0, sync - eff.dp_overlap * np.minimum(sync, window)
        )
        return z3_exposed, sync_exposed
    replicas = pa.dp / pa.dp_shard
    sync_bytes = np.where(z3, grad_bytes / pa.dp_shard, grad_bytes)
    sync_ranks = np.where(z3, replicas, pa.dp)
    sync_stride = np.where(z3, strides["dp"] * pa.dp_shard, strides["dp"])
    rbw, rlat, rle = comms.group_link(
        system, sync_ranks, sync_stride, eff.intra_node_link, eff.scale_out_link
    )
    sync = comms.allreduce_time_s(sync_bytes, sync_ranks, rbw, rlat, rle)
    sync_exposed = np.where(sync_ranks <= 1, 0.0, sync - eff.dp_overlap * np.minimum(sync, window))
    return z3_exposed, sync_exposed


def pp_comm_time_s(
    ms: ModelShape, system: System, eff: EfficiencyParams, run: RunShape, pa: PlanArrays
) -> F64:
    r"""Pipeline point-to-point time on the critical path per step [1] [s].

    1F1B: every micro-batch's send and receive (:math:`2m`); interleaved: only warm-up and
    cool-down (:math:`2 (pp - 1)`, Megatron ``overlap_p2p_comm``); DualPipe likewise (its
    overlapped chunk pairs hide the PP sends, arXiv 2412.19437 Sec. 3.2.1).
    """
    strides = group_strides(pa.tp, pa.cp, pa.dp)
    bw, lat, le = comms.group_link(
        system, 2, strides["pp"], eff.intra_node_link, eff.scale_out_link
    )
    p2p = comms.p2p_time_s(pa.tok_tp * (float(ms.d_model) * run.act_bytes), bw, lat, le)
    n_p2p = np.where((pa.vp > 1) | (pa.dualpipe > 0), 2.0 * (pa.pp - 1), 2.0 * pa.n_micro)
    return np.where(pa.pp > 1, n_p2p * p2p, 0.0)


def optimizer_time_s(
    hw: HardwareShape, eff: EfficiencyParams, pa: PlanArrays, trainable: F64
) -> F64:
    r"""Adam step, memory-bound: :math:`30\,P_{local} / (\eta B_{HBM})` (ZeRO >= 1 shards) [s]."""
    opt_params = np.where(pa.zero >= 1, trainable / pa.dp_shard, trainable)
    return (
        opt_params
        * ADAM_STEP_BYTES_PER_PARAM
        / (hw.hbm_bandwidth_gb_s * GIGA * eff.elementwise_hbm)
    )


def bubble_time_s(pa: PlanArrays, t_mb: F64) -> tuple[F64, F64]:
    r"""Pipeline bubble; returns (bubble fraction, time).

    1F1B and interleaved: :math:`m\, t_{mb}\, (pp-1)/(v m)` [1]. DualPipe:
    :math:`(pp/2 - 1)(F\&B + B - 3W)` (arXiv 2412.19437 Table 2) with chunks of half a stage,
    :math:`F = t_{mb}/6`, :math:`B = 2F`, :math:`W = F` and the overlapped pair
    :math:`F\&B = F + B` (the overlap hides communication, not compute): :math:`(pp/2-1)\,
    t_{mb}/3` (:data:`DUALPIPE_BUBBLE_MB_SHARE`).
    """
    bub = bubble_fraction(pa.pp, pa.n_micro, pa.vp)
    if np.any(pa.dualpipe):
        dual = (pa.pp - 2.0) / 2.0 * DUALPIPE_BUBBLE_MB_SHARE / np.maximum(pa.n_micro, 1.0)
        bub = np.where(pa.dualpipe > 0, dual, bub)
    # a plan without its link has t_mb = inf; with no bubble its bubble time is 0, not nan
    with np.errstate(invalid="ignore"):
        return bub, np.where(bub > 0, pa.n_micro * t_mb * bub, 0.0)


# =============================================================================== assemble
def _assemble(
    ms: ModelShape,
    hw: HardwareShape,
    run: RunShape,
    pa: PlanArrays,
    terms: dict[str, F64],
    mem: dict[str, F64],
    host_fits: NDArray[Any],
) -> dict[str, NDArray[Any]]:
    """Headline figures of the plans from the step-time terms (which sum to the step time)."""
    step = sum(terms.values(), np.zeros_like(pa.tp))
    tokens_per_s = run.global_batch * run.seq_len / step
    per_gpu = tokens_per_s / run.gpus
    model_fpt = training_flops_per_token(ms, run.seq_len, run.method, run.lora_params)
    hw_fpt = model_fpt + recompute_flops_per_token(
        ms, run.seq_len, pa.recompute, pa.recompute_fraction
    )
    peak = hw.peak_mfu_tflops * TERA
    total_mem = mem["total"]
    return {
        "step_time_s": step,
        "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_gpu": per_gpu,
        "model_tflops_per_gpu": model_fpt * per_gpu / TERA,
        "hardware_tflops_per_gpu": hw_fpt * per_gpu / TERA,
        "mfu": model_fpt * per_gpu / peak,
        "hfu": hw_fpt * per_gpu / peak,
        "memory_per_gpu_bytes": total_mem,
        "fits": (total_mem <= hw.memory_gb * GIGA) & host_fits,
        "host_memory_per_gpu_bytes": mem["host"],
        "nvme_per_gpu_bytes": mem["nvme"],
        "n_micro": pa.n_micro,
        "expert_imbalance": expert_imbalance(ms, pa),
        **terms,
        **{f"mem_{k}_bytes": mem[k] for k in MEMORY_TERMS},
    }


#: Micro-batch times per DualPipe bubble slot: :math:`F\&B + B - 3W` of half-stage chunks with
#: forward : input-gradient : weight-gradient = 1 : 1 : 1, i.e. one forward of a whole stage,
#: a third of its :math:`t_{mb} = F + B` (arXiv 2412.19437 Table 2; see :func:`bubble_time_s`).
DUALPIPE_BUBBLE_MB_SHARE = 1.0 / 3.0

#: Memory terms per device returned by :func:`evaluate_plans` (as ``mem_<name>_bytes``).
MEMORY_TERMS = ("weights", "gradients", "optimizer", "activations", "overhead")


def evaluate_plans(
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
    shard_devices: float | None = None,
    ep_comm_overlap: Any = False,
    offload: str = "none",
    dualpipe: Any = False,
    loss_kernel: str = "unfused",
    host_loop: str = "python",
    elementwise_kernels: str = "framework",
    gemm_level: str = "framework",
    activation_offload: bool = False,
    moe_capacity_factor: float | None = None,
    moe_pad_to_capacity: bool = False,
) -> dict[str, NDArray[Any]]:
    """Step time, throughput and memory of many training plans at once.

    Parameters
    ----------
    ms : ModelShape
        Model dimensions (:func:`aitco.perf.flops.model_shape`).
    hw : HardwareShape
        Accelerator peaks (:func:`hardware_shape`).
    system : System
        Node/pod topology (links and their latencies).
    seq_len, global_batch, gpus : float
        Sequence length [tokens], sequences per step [count], devices [count].
    precision, method, optimizer, lora_params, attention_kernel, shard_devices, offload,
    loss_kernel, host_loop, elementwise_kernels, gemm_level, activation_offload,
    moe_capacity_factor, moe_pad_to_capacity
        As :class:`RunShape`.
    eff : EfficiencyParams
        Efficiency fractions.
    tp, pp, cp, ep, dp, zero, micro_batch, recompute, vp, recompute_fraction, tp_comm_overlap,
    ep_comm_overlap, dualpipe
        The plans, array_like (recompute coded 0 none, 1 selective, 2 full; zero 0-3,
        FSDP = 3; ``recompute_fraction`` the share of layers fully recomputed).

    Returns
    -------
    dict of str to ndarray
        ``step_time_s`` (the sum of the time terms of :data:`TIME_TERMS`, all per step),
        ``tokens_per_s``, ``tokens_per_s_per_gpu``, ``mfu``, ``hfu``, model/hardware TFLOP/s,
        ``memory_per_gpu_bytes``, ``fits``, ``n_micro`` and ``mem_<term>_bytes``.

    Notes
    -----
    Plans that need a link the system lacks (no scale-out network) come out with an infinite
    step time: the one division meant to give an infinity is narrowed in
    :func:`aitco.perf.comms._beta_s`; any other floating-point error raises.
    """
    run = RunShape(
        float(seq_len), float(global_batch), float(gpus), precision, method, optimizer,
        lora_params, attention_kernel, None if shard_devices is None else float(shard_devices),
        offload, loss_kernel, host_loop, elementwise_kernels, gemm_level,
        HIGH_PRECISION if hw.format_mode == "emulated" else None,
        bool(activation_offload), moe_capacity_factor, bool(moe_pad_to_capacity),
    )  # fmt: skip
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        pa = plan_arrays(
            ms, run, tp=tp, pp=pp, cp=cp, ep=ep, dp=dp, zero=zero, micro_batch=micro_batch,
            recompute=recompute, vp=vp, recompute_fraction=recompute_fraction,
            tp_comm_overlap=tp_comm_overlap, ep_comm_overlap=ep_comm_overlap, dualpipe=dualpipe,
        )  # fmt: skip
        return _step_terms(ms, hw, system, eff, run, pa)


def _step_terms(
    ms: ModelShape,
    hw: HardwareShape,
    system: System,
    eff: EfficiencyParams,
    run: RunShape,
    pa: PlanArrays,
) -> dict[str, NDArray[Any]]:
    """Compose the model terms into the step time (per step, critical stage) and assemble."""
    att = attention_time_s(ms, hw, eff, run, pa)
    compute_mb = linear_time_s(ms, hw, eff, run, pa) + att
    membound_mb = memory_bound_time_s(ms, hw, eff, run, pa)
    tp_mb = tp_comm_time_s(ms, hw, system, eff, run, pa)
    cp_mb = cp_comm_time_s(ms, system, eff, run, pa, att)
    ep_mb = ep_exposed_time_s(ep_comm_time_s(ms, system, eff, run, pa), compute_mb, pa)
    mem = plan_memory_bytes(ms, run, pa)
    work_mb = compute_mb + membound_mb
    z3_mb, dp_s = dp_comm_times_s(system, eff, run, pa, mem, work_mb)
    off_mb, off_step = offload_time_s(hw, system, eff, run, pa, mem, work_mb)
    off_mb = off_mb + activation_offload_time_s(ms, hw, eff, run, pa, work_mb)
    t_mb = work_mb + tp_mb + cp_mb + ep_mb + z3_mb + off_mb
    _, bubble_s = bubble_time_s(pa, t_mb)
    m = pa.n_micro
    terms = {
        "compute_s": m * compute_mb,
        "memory_bound_s": m * membound_mb,
        "tp_comm_s": m * tp_mb,
        "cp_comm_s": m * cp_mb,
        "ep_comm_s": m * ep_mb,
        "zero3_comm_s": m * z3_mb,
        "bubble_s": bubble_s,
        "pp_comm_s": pp_comm_time_s(ms, system, eff, run, pa),
        "dp_comm_s": dp_s,
        "optimizer_s": optimizer_time_s(hw, eff, pa, mem["trainable_per_device"])
        * (run.offload == "none"),
        "offload_s": m * off_mb + off_step,
        "step_overhead_s": np.full_like(m, eff.step_overhead_s * (run.host_loop == "python")),
    }
    host_fits = (
        mem["host"] * devices_per_host(run, system) <= float(system.host_memory_gb or 0.0) * GIGA
        if run.offload != "none" or run.activation_offload
        else np.ones_like(m, dtype=bool)
    )
    if run.offload in OFFLOAD_NVME_MODES:  # the node's drives hold its devices' shards
        host_fits = host_fits & (
            mem["nvme"] * devices_per_host(run, system)
            <= float(system.nvme_capacity_gb or 0.0) * GIGA
        )
    return _assemble(ms, hw, run, pa, terms, mem, host_fits)

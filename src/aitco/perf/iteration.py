r"""The per-iteration time model of LLM serving: a roofline per operator group, and memory.

:class:`IterationModel` is the time of one engine iteration (a forward pass over the tokens
scheduled in it) on one model replica, from a roofline per operator group: linear layers (weights
streamed once per iteration, FLOPs per token), attention (KV bytes read by decode tokens, FLOPs of
prefill token pairs), tensor-parallel all-reduces and pipeline hand-offs on the real topology
(:mod:`aitco.perf.comms`), plus per-iteration framework overhead. :func:`memory_plan` splits
device memory into weights, activations and the KV cache that bounds the batch; :data:`ENGINES`
holds the serving engines' scheduler limits.

This module is the bottom of the serving stack: :mod:`aitco.perf.queueing` (the simulator),
:mod:`aitco.perf.serving` and :mod:`aitco.perf.inference` (the estimate) import it, and it
imports none of them.

References
----------
.. [1] R. Pope et al., "Efficiently Scaling Transformer Inference," MLSys 2023, arXiv:2211.05102.
.. [2] W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with
   PagedAttention," SOSP 2023, doi:10.1145/3600006.3613165.
.. [3] A. Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
   Sarathi-Serve," OSDI 2024, arXiv:2403.02310 (chunked prefill, stall-free batching).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.errors import InputError
from aitco.perf import comms
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.flops import FLOPS_PER_MAC as FLOPS_PER_MAC  # re-export (inference)
from aitco.perf.kvcache import KV_ADMISSIONS, PAGED_BLOCK_TOKENS, kv_bytes_per_sequence
from aitco.perf.parallelism import MAX_EXPERT_IMBALANCE as MAX_EXPERT_IMBALANCE  # re-export
from aitco.perf.parallelism import expert_load_imbalance, moe_alltoall_split
from aitco.perf.params import ParamCounts, moe_layer_count, param_counts
from aitco.perf.power import compute_clock_ratio
from aitco.perf.precision import serving_weight_bytes
from aitco.perf.training import FP8_CAST_BYTES
from aitco.units import BLOCK_SCALED_FORMATS, BYTES_PER_DTYPE, GIB, GIGA, TERA

F64 = NDArray[np.float64]

# ----------------------------------------------------------------------------- named constants
#: Per-element overhead of int4 weight-only formats (AWQ/GPTQ): one fp16 scale and one fp16 zero
#: point per group of 128 weights, i.e. 4 B / 128 (Lin et al., "AWQ", MLSys 2024,
#: arXiv:2306.00978; default group size 128).
INT4_GROUP_OVERHEAD_BYTES = 4.0 / 128.0
#: Per-element overhead of NVFP4: one fp8 scale per block of 16 values (NVIDIA Blackwell
#: NVFP4 format, TensorRT Model Optimizer docs, 2025).
FP4_BLOCK_OVERHEAD_BYTES = 1.0 / 16.0
#: Device memory held by the runtime outside weights, KV and activations (CUDA context, cuBLAS
#: and NCCL workspaces, CUDA graphs). vLLM's profiler typically reports 1-2 GiB of "non-torch"
#: memory per GPU (vLLM docs, "Memory profiling", v0.6); 1.5 GB is the assumption used here.
RUNTIME_RESERVE_GB = 1.5
#: Bytes of one catalog "GB" of device memory as an engine sees it. Vendors' nominal HBM sizes are
#: binary: an "80GB" H100 SXM reports 81,559 MiB (nvidia-smi), a "141GB" H200 143,771 MiB, a
#: "192GB" MI300X 191.5 GiB (rocm-smi); vLLM's ``gpu_memory_utilization`` and TensorRT-LLM's
#: ``free_gpu_memory_fraction`` apply to those bytes (``torch.cuda.mem_get_info``). Counting the
#: catalog figure in decimal GB would refuse a model that runs (Llama 3.3 70B FP8 on one H100).
DEVICE_MEMORY_BYTES_PER_GB = float(GIB)
#: Bytes of transient activations per scheduled token per unit of model width: the widest live
#: tensors inside one layer are the FFN up/gate outputs (2 x d_ff) plus residual, normed input and
#: QKV (about 4 x d_model), in 16-bit. Peak workspace = tokens x (4 d + 2 d_ff / tp) x 2 B.
ACTIVATION_WIDTH_D_MODEL = 4.0
ACTIVATION_WIDTH_D_FF = 2.0
#: Largest weights share of device memory the default tensor-parallel choice accepts, so that
#: at least ~20 % is left for the KV cache (a sizing rule of thumb, not an engine limit).
DEFAULT_TP_MAX_WEIGHT_FRACTION = 0.8
#: Mean prompt and output lengths when a shape is not given (the CLI defaults).
DEFAULT_INPUT_TOKENS = 512
DEFAULT_OUTPUT_TOKENS = 256
#: Exponent above which the smooth roofline is the plain max (Williams et al. 2009).
ROOFLINE_P_MAX = 50.0
#: Attention FLOPs per (query, key) pair per head per head-dimension: QK^T and PV, 2 MACs.
ATTENTION_MACS_PER_PAIR = 2.0
#: Fraction of accelerator TDP drawn when idle, used when the catalog has no ``idle_w``: the
#: catalog factor ``idle-power.fraction-of-tdp`` (a test keeps the two equal; perf does not read
#: the catalog). aitco's H200 probe (2026-12-04) measured 121.5 W of 700 W = 0.17 with a CUDA
#: context held and 78 W = 0.11 with none.
IDLE_POWER_FRACTION_DEFAULT = 0.15


@dataclass(frozen=True)
class EngineLimits:
    """Defaults of a serving engine that bound the batch.

    Attributes
    ----------
    name : str
        Engine id.
    max_num_seqs : int
        Most sequences scheduled in one iteration.
    max_num_tokens : int
        Most tokens (prefill + decode) scheduled in one iteration.
    memory_fraction : float
        Share of memory the engine manages. [0-1]
    memory_fraction_of : {"total", "free"}
        Whether ``memory_fraction`` applies to total device memory (vLLM, SGLang) or to the memory
        free after weights (TensorRT-LLM ``kv_cache_free_gpu_mem_fraction``).
    reference : str
        Where the defaults come from.
    chunked_prefill : bool
        Whether long prompts are split into chunks of at most ``max_num_tokens`` by default.
    mixed_batching : bool
        Whether prompt tokens ride in the same iteration as the running decodes (vLLM V1,
        TensorRT-LLM in-flight batching, Sarathi-Serve) or run in prefill-only iterations
        during which every running sequence stalls (vLLM V0's default prefill-first scheduler,
        SGLang without ``--enable-mixed-chunk``, static-batching engines).
    kv_admission : {"on_demand", "reserved"}
        How the scheduler admits a sequence against the KV cache: ``on_demand`` allocates blocks
        as tokens are written and preempts when the cache is full (vLLM, SGLang), so the cache
        holds sequences at their mean length; ``reserved`` admits a sequence only if its prompt
        plus all its output tokens fit (TensorRT-LLM's default ``GUARANTEED_NO_EVICT``
        capacity scheduler; static-batching servers).
    kv_block_tokens : int
        Tokens per KV block (vLLM ``--block-size`` 16, SGLang ``page_size`` 1, TensorRT-LLM
        ``tokens_per_block`` 32).
    """

    name: str
    max_num_seqs: int
    max_num_tokens: int
    memory_fraction: float
    memory_fraction_of: str
    reference: str
    chunked_prefill: bool = True
    mixed_batching: bool = True
    kv_admission: str = "on_demand"
    kv_block_tokens: int = PAGED_BLOCK_TOKENS

    def __post_init__(self) -> None:
        if self.kv_admission not in KV_ADMISSIONS:
            raise InputError("kv_admission", self.kv_admission, f"one of {KV_ADMISSIONS}")

    @property
    def separate_prefill_tokens(self) -> float | None:
        """Token budget of a prefill-only iteration, or None when prompts ride with decodes."""
        return None if self.mixed_batching else float(self.max_num_tokens)


#: Engine defaults (named, with their documentation).
ENGINES: dict[str, EngineLimits] = {
    "vllm": EngineLimits(
        "vllm",
        256,
        8192,
        0.90,
        "total",
        "vLLM EngineArgs defaults: max_num_seqs=256, gpu_memory_utilization=0.9, chunked "
        "prefill off for short-context models (v0.6, 2024); without it the V0 scheduler "
        "prioritises prefills and does not batch prefill and decode together (vLLM docs, "
        "'Performance and Tuning: Chunked Prefill', v0.5-0.6)",
        chunked_prefill=False,
        mixed_batching=False,
    ),
    "vllm-v1": EngineLimits(
        "vllm-v1",
        1024,
        8192,
        0.90,
        "total",
        "vLLM V1 arg_utils defaults on >=70 GiB GPUs: max_num_seqs=1024, "
        "max_num_batched_tokens=8192",
    ),
    "sglang": EngineLimits(
        "sglang",
        4096,
        16384,
        0.88,
        "total",
        "SGLang server_args: mem_fraction_static 0.88 (as in the v0.3 benchmark), "
        "max_running_requests derived from memory (4096 used as the cap), "
        "chunked_prefill 8192-16384; prefill (extend) batches run apart from decode batches "
        "unless --enable-mixed-chunk (server_args enable_mixed_chunk=False, v0.3-0.4); "
        "token-granular KV pool (page_size=1), admitted on demand",
        mixed_batching=False,
        kv_block_tokens=1,
    ),
    "generic": EngineLimits(
        "generic",
        256,
        8192,
        0.90,
        "total",
        "generic engine (DeepSpeed-Inference, HF, FasterTransformer, llama.cpp): vLLM 0.6-like "
        "limits, whole-prompt prefill in its own iteration, each sequence's cache reserved for "
        "its full length",
        chunked_prefill=False,
        mixed_batching=False,
        kv_admission="reserved",
    ),
    "trtllm": EngineLimits(
        "trtllm",
        2048,
        8192,
        0.90,
        "free",
        "TensorRT-LLM BuildConfig defaults: max_batch_size=2048, max_num_tokens=8192; "
        "KvCacheConfig.free_gpu_memory_fraction=0.9 (docs 'How to Change KV Cache Behavior'); "
        "capacity scheduler GUARANTEED_NO_EVICT by default: a request is admitted only when its "
        "prompt plus max output tokens fit (docs 'Useful Runtime Options'); tokens_per_block 32",
        kv_admission="reserved",
        kv_block_tokens=32,
    ),
}

#: Precisions stored weight-only (dequantised to 16-bit before the matmul).
WEIGHT_ONLY = ("int4",)


@dataclass(frozen=True)
class Precisions:
    """Resolved data types of one deployment.

    Attributes
    ----------
    weights : str
        Storage type of the linear-layer weights.
    compute : str
        Type whose dense peak bounds the matmuls (``bf16`` when weights are dequantised).
    activations : str
        Type of activations and all-reduce messages.
    kv : str
        KV-cache type.
    notes : tuple of str
        Fallbacks taken (e.g. fp8 weights on a GPU without fp8 tensor cores).
    """

    weights: str
    compute: str
    activations: str
    kv: str
    notes: tuple[str, ...] = ()


def resolve_precisions(acc: Accelerator, precision: str, kv_precision: str | None) -> Precisions:
    """Choose compute, activation and KV data types for ``precision`` on ``acc``.

    Parameters
    ----------
    acc : Accelerator
        The accelerator (its ``peak_tflops`` keys say which types have tensor-core support).
    precision : str
        Weight type requested (bf16, fp16, fp8, int8, int4, fp4).
    kv_precision : str, optional
        KV-cache type; default: fp8 for fp8/fp4 weights where the hardware has fp8, else the
        16-bit activation type.

    Returns
    -------
    Precisions
        The resolved types, with a note for every fallback.

    Notes
    -----
    A weight type the hardware cannot multiply natively (int4 always; fp8, int8 or fp4 on
    hardware without that peak) is *documented fallback*: stored quantised (memory and bandwidth
    benefit) and dequantised to 16-bit for compute (as AWQ/GPTQ/Marlin kernels do). A type with
    no 16-bit path at all raises :class:`InputError`.
    """
    if precision not in BYTES_PER_DTYPE and precision not in BLOCK_SCALED_FORMATS:
        raise InputError("--precision", precision, f"one of {', '.join(SERVING_PRECISIONS)}")
    act = "bf16" if acc.supports("bf16") else "fp16" if acc.supports("fp16") else None
    notes: list[str] = []
    if precision in BLOCK_SCALED_FORMATS:
        compute, note = _block_scaled_compute(acc, precision, act)
        notes.extend([note] if note else [])
    elif precision in ("fp32", "tf32"):
        compute = precision if acc.supports(precision) else None
        act = precision
    elif precision in ("bf16", "fp16"):
        compute = precision if acc.supports(precision) else act
        if compute != precision and compute is not None:
            notes.append(f"{acc.id} has no {precision} tensor rate; computing in {compute}")
        act = compute
    elif precision in WEIGHT_ONLY or not acc.supports(precision):
        compute = act
        if precision not in WEIGHT_ONLY:
            notes.append(
                f"{acc.id} has no native {precision} rate: weights stored in {precision} and "
                f"dequantised to {act} for compute (weight-only fallback)"
            )
    else:
        compute = precision
    if compute is None or act is None:
        # e.g. an int8-only edge accelerator asked for bf16
        if acc.supports(precision):
            compute = precision
            act = precision
        else:
            have = ", ".join(sorted(acc.peak_tflops)) or "none"
            raise InputError(
                "--precision",
                precision,
                f"a data type {acc.id} supports (has: {have})",
                hint="quantise the model to a supported type",
            )
    if kv_precision is None:
        low = precision in ("fp8", "fp4", "fp6") or precision in BLOCK_SCALED_FORMATS
        kv = "fp8" if low and acc.supports("fp8") else act
    else:
        if kv_precision not in BYTES_PER_DTYPE and kv_precision not in BLOCK_SCALED_FORMATS:
            raise InputError(
                "--kv-precision", kv_precision, f"one of {', '.join(SERVING_PRECISIONS)}"
            )
        kv = kv_precision
    return Precisions(precision, compute, act, kv, tuple(notes))


#: Weight formats ``aitco infer --precision`` takes: the data types and the block-scaled formats.
SERVING_PRECISIONS: tuple[str, ...] = (*BYTES_PER_DTYPE, *BLOCK_SCALED_FORMATS)


def _block_scaled_compute(acc: Accelerator, fmt: str, act: str | None) -> tuple[str | None, str]:
    """Return the compute type of a block-scaled weight format on ``acc`` and any fallback note.

    Native where the part has the element type's peak and lists the format
    (``Accelerator.block_scaled_formats``); with the element peak but not the block scaling,
    the matmuls run at the element rate with the scales applied in software; without the
    element peak, weight-only storage dequantised to 16 bit (the fallback of the other types).
    """
    element = BLOCK_SCALED_FORMATS[fmt][0]
    if acc.supports(element) and fmt in acc.block_scaled_formats:
        return element, ""
    if acc.supports(element):
        return element, (
            f"{acc.id} runs {element} matmuls but not {fmt}'s block scaling: scales applied in "
            "software, matmuls at the element rate"
        )
    return act, (
        f"{acc.id} has no native {element} rate: {fmt} weights dequantised to {act} for compute "
        "(weight-only fallback)"
    )


def weight_bytes_per_element(precision: str) -> float:
    """Return the stored bytes per weight, including quantisation scales. [B].

    ``int4``: AWQ/GPTQ group scales; ``fp4``: NVFP4's FP8 scale per 16; ``fp6``: an MX scale
    per 32 (the FP6 layout the hardware runs); the block-scaled formats their own scales
    (:func:`aitco.perf.precision.serving_weight_bytes`).
    """
    if precision in BLOCK_SCALED_FORMATS:
        return serving_weight_bytes(precision)
    b = BYTES_PER_DTYPE[precision]
    if precision == "int4":
        return b + INT4_GROUP_OVERHEAD_BYTES
    if precision == "fp4":
        return b + FP4_BLOCK_OVERHEAD_BYTES
    if precision == "fp6":
        return serving_weight_bytes("mxfp6")
    return b


def lowp_gemm_efficiency(gemm_16bit: float, dtype: str, lowp_scale: float) -> float:
    r"""GEMM efficiency of ``dtype`` from the 16-bit one: one factor per halving of the width.

    Notes
    -----
    :math:`\eta(b) = \eta_{16}\,s^{\log_2(16/b)}` for :math:`b < 16` bits. Each halving doubles the
    tensor-core peak but not the work around the matmul (activation quantisation, epilogues,
    scales), so the achieved fraction falls: measured maximum achievable matmul FLOPS on H200 is
    80 % of peak in BF16 and 73 % in FP8 (stas00/ml-engineering MAMF table), and serving kernels
    fall further. ``s`` is fitted globally (``EfficiencyParams.lowp_gemm_scale``).
    """
    b = BYTES_PER_DTYPE[dtype]
    if b >= 2.0:
        return gemm_16bit
    return gemm_16bit * lowp_scale ** math.log2(2.0 / b)


# ----------------------------------------------------------------------------- weights
@dataclass(frozen=True)
class WeightBytes:
    """Bytes of the weights by role, whole model (one replica copy).

    Attributes
    ----------
    embedding : float
        Input embedding (kept 16-bit, as quantisation recipes do). [B]
    lm_head : float
        Output projection (16-bit; 0 if tied). [B]
    dense : float
        Quantised weights read by every token: attention, dense FFN, shared experts, router,
        norms. [B]
    expert_each : float
        One routed expert in one MoE layer. [B]
    n_moe_layers : int
        Layers with routed experts.
    """

    embedding: float
    lm_head: float
    dense: float
    expert_each: float
    n_moe_layers: int

    def total(self, n_experts: int) -> float:
        """All stored weight bytes. [B]."""
        return (
            self.embedding
            + self.lm_head
            + self.dense
            + self.expert_each * n_experts * self.n_moe_layers
        )


def weight_bytes(model: ModelArch, precision: str, act_dtype: str) -> WeightBytes:
    """Return the stored weight bytes of ``model`` with linear layers in ``precision``.

    Parameters
    ----------
    model : ModelArch
        The architecture.
    precision : str
        Storage type of the linear layers.
    act_dtype : str
        16-bit type of the embedding and LM head.

    Returns
    -------
    WeightBytes
        Bytes by role. [B]
    """
    pc = param_counts(model)
    wb = weight_bytes_per_element(precision)
    ab = BYTES_PER_DTYPE[act_dtype]
    dense = (pc.attention + pc.ffn_dense + pc.ffn_shared + pc.router + pc.norm) * wb
    if model.moe is not None:
        n_moe = moe_layer_count(model)
        each = pc.ffn_expert / (model.moe.n_experts * n_moe) * wb
    else:
        n_moe, each = 0, 0.0
    return WeightBytes(pc.embedding * ab, pc.lm_head * ab, dense, each, n_moe)


def expected_distinct_experts(tokens: ArrayLike, n_experts: int, n_active: int) -> F64:
    r"""Return the expected number of distinct routed experts touched in one layer.

    Notes
    -----
    With uniform routing each token picks :math:`k` of :math:`E` experts, so an expert is missed by
    one token with probability :math:`1-k/E`:
    :math:`E_{touched} = E\,[1 - (1 - k/E)^{T}]`. One token touches :math:`k`; large batches touch
    all :math:`E` (so decode weight traffic grows with batch, unlike a dense model).
    """
    t = np.asarray(tokens, dtype=np.float64)
    return np.asarray(n_experts * (1.0 - (1.0 - n_active / n_experts) ** t), dtype=np.float64)


# ----------------------------------------------------------------------------- iteration model
#: Names of the terms of one iteration (:meth:`IterationModel.iteration_terms`), in order.
ITERATION_TERMS = (
    "linear_compute_s",
    "weights_read_s",
    "elementwise_s",
    "tp_comm_s",
    "pp_p2p_s",
    "ep_all_to_all_s",
    "lm_head_s",
    "kv_read_s",
    "prefill_attention_s",
    "overhead_s",
)


def _sum_terms(terms: dict[str, F64]) -> F64:
    """Return the sum of a dict of term arrays (broadcast). [s]."""
    total: F64 = np.zeros(())
    for v in terms.values():
        total = np.asarray(total + v, dtype=np.float64)
    return total


@dataclass(frozen=True)
class IterationModel:
    """Time of one engine iteration on one replica (``tp x pp`` GPUs), as a roofline per op group.

    Build it with :func:`iteration_model`. All per-GPU quantities already include the tp/pp split.

    Attributes
    ----------
    tp, pp : int
        Tensor- and pipeline-parallel degrees.
    peak_tflops : float
        Dense peak of the compute type. [TFLOP/s]
    hbm_bandwidth_gb_s : float
        Device-memory bandwidth. [GB/s]
    gemm_efficiency, hbm_efficiency : float
        Achievable fractions of the two peaks. [0-1]
    body_flops_per_token : float
        Linear-layer FLOPs per token per GPU, LM head excluded. [FLOP]
    head_flops_per_token : float
        LM-head FLOPs per sampled token per GPU. [FLOP]
    dense_weight_bytes : float
        Weights read every iteration per GPU (all but routed experts). [B]
    expert_bytes_each : float
        One routed expert of one layer, per GPU. [B]
    n_moe_layers, n_experts, n_active : int
        MoE shape (0 for dense models).
    attn_flops_per_pair : float
        Attention FLOPs per (query, context) token pair per GPU (prefill). [FLOP]
    decode_attn_flops_per_pair : float
        The same for a decode step, 0 when equal to ``attn_flops_per_pair`` (MLA decodes in the
        weight-absorbed form, :func:`decode_attention_flops_per_pair`). [FLOP]
    kv_bytes_per_token : float
        KV bytes per cached token per GPU. [B]
    allreduce_bytes_per_token : float
        All-reduce payload per token (d_model activations). [B]
    allreduces_per_iteration : int
        All-reduces per pipeline stage per iteration (2 per layer with tp > 1).
    link_bandwidth_gb_s, link_latency_us, link_efficiency : float
        Link seen by the tensor-parallel group.
    pp_bandwidth_gb_s, pp_latency_us, pp_efficiency : float
        Link seen by pipeline hand-offs.
    overhead_s : float
        Per-iteration framework overhead (scheduler, sampling, launches). [s]
    request_path_s : float
        Per-request latency outside the GPU iterations (API server or harness, tokenisation,
        first-token streaming): adds to TTFT, never occupies the GPU. [s]
    """

    tp: int
    pp: int
    peak_tflops: float
    hbm_bandwidth_gb_s: float
    gemm_efficiency: float
    hbm_efficiency: float
    body_flops_per_token: float
    head_flops_per_token: float
    dense_weight_bytes: float
    expert_bytes_each: float
    n_moe_layers: int
    n_experts: int
    n_active: int
    attn_flops_per_pair: float
    kv_bytes_per_token: float
    allreduce_bytes_per_token: float
    allreduces_per_iteration: int
    link_bandwidth_gb_s: float
    link_latency_us: float
    link_efficiency: float
    pp_bandwidth_gb_s: float
    pp_latency_us: float
    pp_efficiency: float
    overhead_s: float
    overhead_per_seq_s: float = 0.0
    layer_overhead_s: float = 0.0
    n_layers: int = 0
    roofline_p: float = 1e9
    head_weight_bytes: float = 0.0
    elementwise_bytes_per_token: float = 0.0
    elementwise_efficiency: float = 1.0
    head_peak_tflops: float = 0.0
    attn_peak_tflops: float = 0.0
    attn_gemm_efficiency: float = 0.0
    ep: int = 1
    expert_flops_per_token: float = 0.0
    a2a_bytes_per_token: float = 0.0
    decode_attn_flops_per_pair: float = 0.0
    a2a_bandwidth_gb_s: float = 0.0
    a2a_latency_us: float = 0.0
    a2a_efficiency: float = 1.0
    a2a_ranks_per_node: float = 1.0
    a2a_local_bandwidth_gb_s: float = 0.0
    a2a_local_latency_us: float = 0.0
    a2a_local_efficiency: float = 1.0
    a2a_remote_share: float = -1.0  # < 0: bytes to remote peers, (n - g)/n; else node-deduplicated
    request_path_s: float = 0.0

    # --- components ------------------------------------------------------------------------
    def _flops_rate(self) -> float:
        return self.gemm_efficiency * self.peak_tflops * TERA

    def overhead_total_s(self, seqs: float) -> float:
        """Return the fixed + per-layer + per-sequence overhead of one iteration. [s]."""
        return (
            self.overhead_s + self.layer_overhead_s * self.n_layers + self.overhead_per_seq_s * seqs
        )

    def _attn_rate(self) -> float:
        eff = self.attn_gemm_efficiency or self.gemm_efficiency
        return eff * (self.attn_peak_tflops or self.peak_tflops) * TERA

    def _byte_rate(self) -> float:
        return self.hbm_efficiency * self.hbm_bandwidth_gb_s * GIGA

    def _roofline_stage(self, compute: F64, mem: F64) -> tuple[F64, F64]:
        r"""Time of a stage bound by ``compute`` and ``mem`` seconds, and the compute share. [s].

        A hard roofline (``max``) when ``roofline_p >= ROOFLINE_P_MAX``; otherwise the smooth
        p-norm :math:`t = (t_c^p + t_m^p)^{1/p}`, so near the ridge point neither bound is
        reached; the compute share is :math:`t_c^p / (t_c^p + t_m^p)`.
        """
        q = self.roofline_p
        if q >= ROOFLINE_P_MAX:
            return np.maximum(compute, mem), np.where(compute >= mem, 1.0, 0.0)
        hi = np.maximum(np.maximum(compute, mem), 1e-30)
        cq, mq = (compute / hi) ** q, (mem / hi) ** q
        return hi * (cq + mq) ** (1.0 / q), cq / (cq + mq)

    def _elementwise_s(self, tokens: ArrayLike) -> F64:
        """HBM time of the element-wise kernels (norms, activations) for ``tokens``. [s]."""
        return np.asarray(
            self.elementwise_bytes_per_token
            * np.asarray(tokens, dtype=np.float64)
            / (self.elementwise_efficiency * self.hbm_bandwidth_gb_s * GIGA),
            dtype=np.float64,
        )

    def linear_s(self, tokens: ArrayLike, sampled: ArrayLike | None = None) -> F64:
        """Linear layers + collectives + LM head + overhead for ``tokens`` scheduled tokens. [s].

        Parameters
        ----------
        tokens : array_like
            Tokens in the iteration (decode + prefill). [tokens]
        sampled : array_like, optional
            Tokens that go through the LM head (default: all). [tokens]

        Returns
        -------
        ndarray
            Time of the linear part of the iteration, with tp/pp communication and overhead. [s]

        Notes
        -----
        ``linear_s = body_s(tokens) + head_s(sampled)``. With pipeline parallelism the batch is
        cut in ``pp`` micro-batches that each stage processes in turn; one iteration of all tokens
        then lasts ``pp`` stage-times of a micro-batch, and every micro-batch re-reads the stage's
        weights (PP adds capacity, not decode bandwidth).
        """
        t = np.asarray(tokens, dtype=np.float64)
        s = t if sampled is None else np.asarray(sampled, dtype=np.float64)
        return np.asarray(self.body_s(t) + self.head_s(s), dtype=np.float64)

    def body_terms(self, tokens: ArrayLike) -> dict[str, F64]:
        r"""Terms of the transformer layers for ``tokens`` tokens; they sum to :meth:`body_s`.

        Parameters
        ----------
        tokens : array_like
            Tokens in the iteration. [tokens]

        Returns
        -------
        dict of str to ndarray
            ``linear_compute_s`` and ``weights_read_s`` (the roofline of the linear layers, split
            by the share of each bound), ``elementwise_s``, ``tp_comm_s``, ``pp_p2p_s`` and
            ``overhead_s`` (fixed + per-layer host overhead). [s]

        Notes
        -----
        With :math:`C` the compute time and :math:`M` the weight-read time of one stage, the smooth
        roofline is :math:`S = (C^q + M^q)^{1/q}` (``max(C, M)`` for large ``q``); it is split as
        :math:`S\,C^q/(C^q+M^q)` to compute and :math:`S\,M^q/(C^q+M^q)` to memory, so the two
        terms add up to ``S`` and the larger bound gets the larger share. Every stage term is
        multiplied by ``pp`` (micro-batches run through the stages in turn).
        """
        t = np.asarray(tokens, dtype=np.float64)
        if self.ep > 1:
            return self._ep_body_terms(t)
        mb = t / self.pp
        compute = (self.body_flops_per_token * mb) / self._flops_rate()
        wbytes: F64 | float = self.dense_weight_bytes
        if self.n_moe_layers:
            wbytes = (
                wbytes
                + self.expert_bytes_each
                * self.n_moe_layers
                * expected_distinct_experts(mb, self.n_experts, self.n_active)
            )
        mem = np.asarray(wbytes / self._byte_rate() + 0.0 * mb, dtype=np.float64)
        stage, c_share = self._roofline_stage(compute, mem)
        elem = self._elementwise_s(mb)
        p2p = (
            np.asarray(
                comms.p2p_time_s(
                    mb * self.allreduce_bytes_per_token,
                    self.pp_bandwidth_gb_s,
                    self.pp_latency_us,
                    self.pp_efficiency,
                ),
                dtype=np.float64,
            )
            if self.pp > 1
            else np.zeros_like(mb)
        )
        fixed = self.overhead_s + self.layer_overhead_s * self.n_layers
        return {
            "linear_compute_s": np.asarray(self.pp * stage * c_share, dtype=np.float64),
            "weights_read_s": np.asarray(self.pp * stage * (1.0 - c_share), dtype=np.float64),
            "elementwise_s": np.asarray(self.pp * elem, dtype=np.float64),
            "tp_comm_s": np.asarray(self.pp * self.comm_s(mb), dtype=np.float64),
            "pp_p2p_s": np.asarray(self.pp * p2p, dtype=np.float64),
            "ep_all_to_all_s": np.zeros_like(mb),
            "overhead_s": np.asarray(fixed + 0.0 * mb, dtype=np.float64),
        }

    def _ep_body_terms(self, tokens: F64) -> dict[str, F64]:
        r"""Layer terms of an expert-parallel group: attention data-parallel, experts sharded.

        Notes
        -----
        ``tokens`` are those of the whole group of :math:`n` = ``ep`` GPUs; each GPU runs
        :math:`T/n` tokens through its attention and dense layers (full copies), and its
        :math:`E/n` experts receive :math:`T k / n` routed tokens on average, :math:`\times g`
        on the busiest GPU (:func:`expert_load_imbalance`). Weights read per GPU: the dense
        weights plus its share of the distinct experts touched. Per MoE layer, tokens are
        dispatched to and combined from their experts by two all-to-alls
        (:func:`aitco.perf.comms.hierarchical_alltoall_time_s`: local peers over the scale-up
        link, remote ones over the NICs, once per target node for group-limited routing;
        DeepSeek-V3 serving: attention DP + expert EP).
        """
        n = float(self.ep)
        tg = tokens / n
        imb = expert_load_imbalance(tokens * self.n_active, self.ep)
        dense_flops = self.body_flops_per_token - self.expert_flops_per_token
        compute = (dense_flops * tg + self.expert_flops_per_token * tg * imb) / self._flops_rate()
        distinct = expected_distinct_experts(tokens, self.n_experts, self.n_active)
        wbytes = self.dense_weight_bytes + self.expert_bytes_each * self.n_moe_layers * distinct / n
        mem = np.asarray(wbytes / self._byte_rate() + 0.0 * tg, dtype=np.float64)
        stage, c_share = self._roofline_stage(compute, mem)
        elem = self._elementwise_s(tg)
        a2a = comms.hierarchical_alltoall_time_s(
            tg * self.a2a_bytes_per_token * imb, self.ep, self.a2a_ranks_per_node,
            (self.a2a_local_bandwidth_gb_s, self.a2a_local_latency_us, self.a2a_local_efficiency),
            (self.a2a_bandwidth_gb_s, self.a2a_latency_us, self.a2a_efficiency),
            self.a2a_remote_share if self.a2a_remote_share >= 0.0 else None,
        )  # fmt: skip
        zero = np.zeros_like(tg)
        return {
            "linear_compute_s": np.asarray(stage * c_share, dtype=np.float64),
            "weights_read_s": np.asarray(stage * (1.0 - c_share), dtype=np.float64),
            "elementwise_s": np.asarray(elem, dtype=np.float64),
            "tp_comm_s": zero,
            "pp_p2p_s": zero,
            "ep_all_to_all_s": np.asarray(2.0 * self.n_moe_layers * a2a, dtype=np.float64),
            "overhead_s": np.asarray(
                self.overhead_s + self.layer_overhead_s * self.n_layers + zero, dtype=np.float64
            ),
        }

    def body_s(self, tokens: ArrayLike) -> F64:
        """Return the time of the transformer layers, collectives and fixed overheads. [s]."""
        return _sum_terms(self.body_terms(tokens))

    def head_terms(self, sampled: ArrayLike) -> dict[str, F64]:
        r"""LM head (its own roofline, 16-bit) and per-sequence host overhead. [s].

        Returns
        -------
        dict of str to ndarray
            ``lm_head_s`` and ``overhead_s`` (per sampled sequence). [s]

        Notes
        -----
        :math:`t = \max(s F_h / \eta P_{16}, W_h / \eta_B B) + s\,t_{seq}` for ``s`` sampled tokens.
        """
        s = np.asarray(sampled, dtype=np.float64)
        head_rate = self.gemm_efficiency * (self.head_peak_tflops or self.peak_tflops) * TERA
        compute = self.head_flops_per_token * s / head_rate
        mem = self.head_weight_bytes / self._byte_rate()
        return {
            "lm_head_s": np.asarray(np.maximum(compute, mem), dtype=np.float64),
            "overhead_s": np.asarray(self.overhead_per_seq_s * s, dtype=np.float64),
        }

    def head_s(self, sampled: ArrayLike) -> F64:
        """Return the LM-head time plus per-sequence overhead of ``sampled`` tokens. [s]."""
        return _sum_terms(self.head_terms(sampled))

    def comm_s(self, tokens_per_microbatch: ArrayLike) -> F64:
        """Tensor-parallel all-reduces of one stage for a micro-batch. [s]."""
        if self.tp <= 1:
            return np.zeros_like(np.asarray(tokens_per_microbatch, dtype=np.float64))
        msg = np.asarray(tokens_per_microbatch, dtype=np.float64) * self.allreduce_bytes_per_token
        one = comms.allreduce_time_s(
            msg,
            self.tp,
            self.link_bandwidth_gb_s,
            self.link_latency_us,
            self.link_efficiency,
            algorithm="tree",
        )
        return np.asarray(self.allreduces_per_iteration * one, dtype=np.float64)

    @property
    def decode_attention_s_per_context_token(self) -> float:
        """Decode attention time per cached context token read (all stages). [s]."""
        return max(
            self.kv_bytes_per_token / self._byte_rate(),
            (self.decode_attn_flops_per_pair or self.attn_flops_per_pair) / self._attn_rate(),
        )

    @property
    def prefill_attention_s_per_pair(self) -> float:
        """Prefill attention time per (query, key) pair, compute-bound (flash attention). [s]."""
        return self.attn_flops_per_pair / self._attn_rate()

    def iteration_terms(
        self,
        decode_seqs: ArrayLike,
        decode_context_tokens: ArrayLike,
        prefill_tokens: ArrayLike = 0.0,
        prefill_pairs: ArrayLike = 0.0,
        prefill_seqs: ArrayLike = 0.0,
    ) -> dict[str, F64]:
        r"""Terms of one iteration; they add up to :meth:`iteration_s` by construction.

        Parameters
        ----------
        decode_seqs : array_like
            Sequences generating one token each. [count]
        decode_context_tokens : array_like
            Sum of their context lengths (KV tokens read). [tokens]
        prefill_tokens : array_like
            Prompt tokens processed (whole prompts or chunks). [tokens]
        prefill_pairs : array_like
            Causal (query, key) pairs of those prompt tokens. [pairs]
        prefill_seqs : array_like
            Prompts finishing their prefill (they sample one token). [count]

        Returns
        -------
        dict of str to ndarray
            :data:`ITERATION_TERMS`: ``linear_compute_s``, ``weights_read_s``, ``elementwise_s``,
            ``tp_comm_s``, ``pp_p2p_s``, ``lm_head_s``, ``kv_read_s``, ``prefill_attention_s``,
            ``overhead_s``. [s]

        Notes
        -----
        .. math:: t = p\,[\max(F_{lin}/\eta_F P, W/\eta_B B) + t_{elem} + t_{AR} + t_{p2p}]
                      + t_{head} + \max(K/\eta_B B, F_{att}/\eta_F P)
                      + X_{pf}/\eta_F P + t_0
        """
        b = np.asarray(decode_seqs, dtype=np.float64)
        pf = np.asarray(prefill_tokens, dtype=np.float64)
        body = self.body_terms(b + pf)
        head = self.head_terms((b + np.asarray(prefill_seqs, dtype=np.float64)) / self.ep)
        # attention is data-parallel under expert parallelism: each GPU holds its own sequences
        attn = (
            self.decode_attention_s_per_context_token
            * np.asarray(decode_context_tokens, dtype=np.float64)
            / self.ep
        )
        pre = self.prefill_attention_s_per_pair * np.asarray(prefill_pairs, dtype=np.float64)
        pre = pre / self.ep
        return {
            "linear_compute_s": body["linear_compute_s"],
            "weights_read_s": body["weights_read_s"],
            "elementwise_s": body["elementwise_s"],
            "tp_comm_s": body["tp_comm_s"],
            "pp_p2p_s": body["pp_p2p_s"],
            "ep_all_to_all_s": body["ep_all_to_all_s"],
            "lm_head_s": head["lm_head_s"],
            "kv_read_s": np.asarray(attn, dtype=np.float64),
            "prefill_attention_s": np.asarray(pre, dtype=np.float64),
            "overhead_s": np.asarray(body["overhead_s"] + head["overhead_s"], dtype=np.float64),
        }

    def iteration_s(
        self,
        decode_seqs: ArrayLike,
        decode_context_tokens: ArrayLike,
        prefill_tokens: ArrayLike = 0.0,
        prefill_pairs: ArrayLike = 0.0,
        prefill_seqs: ArrayLike = 0.0,
    ) -> F64:
        """Time of one iteration: the sum of :meth:`iteration_terms` (same parameters). [s]."""
        return _sum_terms(
            self.iteration_terms(
                decode_seqs, decode_context_tokens, prefill_tokens, prefill_pairs, prefill_seqs
            )
        )

    def decode_step_s(self, batch: ArrayLike, context_tokens: ArrayLike) -> F64:
        """Return the time of one decode iteration at mean context ``context_tokens``. [s]."""
        b = np.asarray(batch, dtype=np.float64)
        return self.iteration_s(b, b * np.asarray(context_tokens, dtype=np.float64))

    def prefill_s(self, prompt_tokens: ArrayLike, n_prompts: ArrayLike = 1.0) -> F64:
        """Time to prefill ``n_prompts`` prompts of ``prompt_tokens`` in one iteration. [s]."""
        n = np.asarray(n_prompts, dtype=np.float64)
        s = np.asarray(prompt_tokens, dtype=np.float64)
        return self.iteration_s(0.0, 0.0, n * s, n * s * (s + 1) / 2.0, n)


#: Element reads+writes per token and layer of the fused residual-add + RMSNorm kernels of an
#: inference engine: two per layer (before attention and before the FFN), each reading the
#: residual and the new input and writing the updated residual and the normed output, 4 d
#: elements each (vLLM custom op ``fused_add_rms_norm``; TensorRT-LLM fused residual+norm
#: plugins). Rotary embedding runs inside the QKV/attention kernel (no extra pass).
FUSED_NORM_ELEMENTS_PER_D = 8.0
#: Element reads+writes per FFN element of the fused gated activation (``silu_and_mul``: read
#: the gate and up halves, write one): 3 per ``d_ff`` column; 2 for a plain activation.
FUSED_GATED_ACT_ELEMENTS = 3.0
FUSED_PLAIN_ACT_ELEMENTS = 2.0


def fused_elementwise_bytes_per_token(
    model: ModelArch, precisions: Precisions, tp: int, into_matmul: bool = False
) -> float:
    r"""HBM bytes per token and layer of an inference engine's memory-bound (fused) kernels. [B].

    Notes
    -----
    :math:`b = (8 d + a f / t)\,s_{act} + (2 d + (q + f)/t)\,s_{fp8}` with :math:`d` the model
    width (replicated on every tp rank), :math:`f` the active FFN width split over :math:`t`
    ranks, :math:`a` = 3 (gated) or 2, :math:`s_{act}` the activation bytes, and, when the
    linear layers compute in fp8/fp4, the cast of each linear input (:data:`FP8_CAST_BYTES`).
    Inference engines fuse residual, norm, activation and rotary into a few kernels, unlike the
    unfused forward+backward passes counted by :mod:`aitco.perf.training`
    (:data:`FUSED_NORM_ELEMENTS_PER_D`, :data:`FUSED_GATED_ACT_ELEMENTS`). ``into_matmul``
    (``Accelerator.elementwise_fused_into_matmul``: XLA on TPU): that work rides in the
    operands and outputs of the matmuls, 0 bytes of its own.
    """
    if into_matmul:
        return 0.0
    d = float(model.d_model)
    q_w = float(model.n_heads * model.dim_head)
    f_w = float(model.moe.d_ff_expert * model.moe.n_active if model.moe else model.d_ff)
    act = FUSED_GATED_ACT_ELEMENTS if model.gated_ffn else FUSED_PLAIN_ACT_ELEMENTS
    elem = (FUSED_NORM_ELEMENTS_PER_D * d + act * f_w / tp) * BYTES_PER_DTYPE[
        precisions.activations
    ]
    if BYTES_PER_DTYPE[precisions.compute] < BYTES_PER_DTYPE[precisions.activations]:
        elem += (2.0 * d + (q_w + f_w) / tp) * FP8_CAST_BYTES
    return float(elem)


def iteration_model(
    model: ModelArch,
    acc: Accelerator,
    system: System,
    *,
    tp: int = 1,
    pp: int = 1,
    precisions: Precisions,
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY,
    engine: str | None = None,
    ep: int = 1,
) -> IterationModel:
    """Build the :class:`IterationModel` of one replica.

    Parameters
    ----------
    model : ModelArch
        The architecture.
    acc : Accelerator
        The accelerator.
    system : System
        The node / pod (topology for the collectives).
    tp, pp : int
        Tensor- and pipeline-parallel degrees of one replica.
    precisions : Precisions
        Resolved data types (:func:`resolve_precisions`).
    efficiency : EfficiencyParams
        Efficiency parameters (fitted globally).
    engine : str, optional
        Serving engine, for its per-iteration host overhead
        (:meth:`EfficiencyParams.serving_overhead_for`).
    ep : int
        Expert-parallel group (``tp = pp = 1``): attention data-parallel over ``ep`` GPUs, routed
        experts sharded over them, all-to-all on the group's link.

    Returns
    -------
    IterationModel
        The per-iteration model.
    """
    pc: ParamCounts = param_counts(model)
    wb = weight_bytes(model, precisions.weights, precisions.activations)
    shard = tp * pp
    d = model.d_model
    head_params = model.vocab_size * d
    act_b = BYTES_PER_DTYPE[precisions.activations]
    elem_per_token = fused_elementwise_bytes_per_token(
        model, precisions, tp, acc.elementwise_fused_into_matmul
    ) * math.ceil(model.n_layers / pp)
    n_active = model.moe.n_active if model.moe else 0
    clock = compute_clock_ratio(acc)  # a power limit below the TDP slows the compute clock
    return IterationModel(
        ep=ep,
        expert_flops_per_token=FLOPS_PER_MAC * pc.expert_active if ep > 1 else 0.0,
        a2a_bytes_per_token=d * act_b * n_active,
        tp=tp,
        pp=pp,
        peak_tflops=float(acc.peak_tflops[precisions.compute]) * clock,
        hbm_bandwidth_gb_s=float(acc.hbm_bandwidth_gb_s),
        gemm_efficiency=lowp_gemm_efficiency(
            efficiency.gemm_for(acc.family, acc.matmul_ceiling("bf16")),
            precisions.compute,
            efficiency.lowp_gemm_scale,
        ),
        hbm_efficiency=efficiency.decode_hbm,
        body_flops_per_token=FLOPS_PER_MAC * (pc.active - pc.embedding - pc.lm_head) / shard,
        head_flops_per_token=FLOPS_PER_MAC * head_params / tp,
        dense_weight_bytes=wb.dense / shard,
        head_weight_bytes=head_params * act_b / tp,
        elementwise_bytes_per_token=elem_per_token,
        elementwise_efficiency=efficiency.decode_hbm,
        expert_bytes_each=wb.expert_each / shard,
        n_moe_layers=wb.n_moe_layers // 1,
        n_experts=model.moe.n_experts if model.moe else 0,
        n_active=n_active,
        attn_flops_per_pair=attention_flops_per_pair(model, tp),
        decode_attn_flops_per_pair=decode_attention_flops_per_pair(model, tp),
        kv_bytes_per_token=float(kv_bytes_per_sequence(model, 1.0, precisions.kv, tp)),
        allreduce_bytes_per_token=d * act_b,
        allreduces_per_iteration=(2 * math.ceil(model.n_layers / pp)) if tp > 1 else 0,
        n_layers=model.n_layers,
        head_peak_tflops=float(acc.peak_tflops[precisions.activations]) * clock,
        attn_peak_tflops=float(acc.peak_tflops[precisions.activations]) * clock,
        **_link_fields(system, tp, ep, efficiency),
        **_a2a_fields(model, system, ep, efficiency),
        **_engine_fields(efficiency, engine),
    )


def attention_flops_per_pair(model: ModelArch, tp: int) -> float:
    r"""Attention FLOPs per (query, key) token pair over all layers, per tp rank. [FLOP].

    Notes
    -----
    :math:`2\,h\,(d_{qk} + d_v) L / t`: the score and value matmuls of every head (MLA: its
    no-rope, rope and value head dimensions).
    """
    if model.mla is not None:
        a = model.mla
        pair_macs = float(model.n_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim))
    else:
        pair_macs = float(model.n_heads * model.dim_head * ATTENTION_MACS_PER_PAIR)
    return FLOPS_PER_MAC * pair_macs * model.n_layers / tp


def decode_attention_flops_per_pair(model: ModelArch, tp: int) -> float:
    r"""Attention FLOPs per (query, cached token) pair of a decode step, per tp rank. [FLOP].

    Notes
    -----
    Multi-head latent attention decodes in the weight-absorbed form (DeepSeek-V2, arXiv
    2405.04434, §2.1.2; FlashMLA and TensorRT-LLM's MLA generation kernels): ``W_UK`` is folded
    into the query and ``W_UV`` into the output projection, so each head scores the cached
    latent plus its rope key, :math:`d_c + d_r`, and sums the latent values, :math:`d_c`:
    :math:`2\,h\,(2 d_c + d_r) L / t` (128 heads x 1,088 for DeepSeek-V3, 3.4 times the
    per-head dims of the expanded form). The cache is read once for all heads, so the step is
    compute-bound on current GPUs. Other attention decodes as it prefills
    (:func:`attention_flops_per_pair`).
    """
    if model.mla is None:
        return attention_flops_per_pair(model, tp)
    a = model.mla
    pair_macs = float(model.n_heads * (2 * a.kv_lora_rank + a.qk_rope_head_dim))
    return FLOPS_PER_MAC * pair_macs * model.n_layers / tp


def _link_fields(
    system: System, tp: int, ep: int, efficiency: EfficiencyParams
) -> dict[str, float]:
    """Links of the tp group, the pipeline hand-off and the expert-parallel group."""
    links = {"link": (tp, 1), "pp": (2, tp), "a2a": (ep, 1)}
    out: dict[str, float] = {}
    for name, (n, inner) in links.items():
        bw, lat, eff = comms.group_link(
            system, n, inner, efficiency.intra_node_link, efficiency.scale_out_link
        )
        out[f"{name}_bandwidth_gb_s"] = float(bw)
        out[f"{name}_latency_us"] = float(lat)
        out[f"{name}_efficiency"] = float(eff)
    return out


def _a2a_fields(
    model: ModelArch, system: System, ep: int, efficiency: EfficiencyParams
) -> dict[str, float]:
    """Node split of the expert-parallel group (:func:`moe_alltoall_split`, consecutive ranks)."""
    moe = model.moe
    n_groups, topk_groups = moe.routing_groups if moe else (1, 0)
    g, (bw, lat, eff), _, remote = moe_alltoall_split(
        system, ep, 1, moe.n_active if moe else 1, n_groups=n_groups, topk_groups=topk_groups,
        intra_efficiency=efficiency.intra_node_link, inter_efficiency=efficiency.scale_out_link,
    )  # fmt: skip
    return {
        "a2a_ranks_per_node": float(g),
        "a2a_local_bandwidth_gb_s": float(bw),
        "a2a_local_latency_us": float(lat),
        "a2a_local_efficiency": float(eff),
        "a2a_remote_share": -1.0 if remote is None else float(remote),
    }


def _engine_fields(efficiency: EfficiencyParams, engine: str | None) -> dict[str, float]:
    """Host overheads and kernel-efficiency fields of the serving engine."""
    return {
        "overhead_s": efficiency.serving_overhead_for(engine),
        "overhead_per_seq_s": efficiency.serving_overhead_per_seq_s,
        "layer_overhead_s": efficiency.serving_layer_overhead_s,
        "roofline_p": efficiency.roofline_p,
        "attn_gemm_efficiency": efficiency.prefill_attention,
        "request_path_s": efficiency.request_path_for(engine),
    }


# ----------------------------------------------------------------------------- memory plan
@dataclass(frozen=True)
class MemoryPlan:
    """Per-GPU memory of one replica and the KV capacity left.

    Attributes
    ----------
    device_gb : float
        Device memory. [GB]
    usable_gb : float
        Memory the engine manages. [GB]
    weights_gb : float
        Weights per GPU. [GB]
    activations_gb : float
        Transient activation workspace per GPU. [GB]
    reserve_gb : float
        Runtime reserve. [GB]
    kv_gb : float
        KV-cache memory per GPU. [GB]
    fits : bool
        Whether the weights fit with room for at least one sequence.
    """

    device_gb: float
    usable_gb: float
    weights_gb: float
    activations_gb: float
    reserve_gb: float
    kv_gb: float
    fits: bool


def memory_plan(
    model: ModelArch,
    acc: Accelerator,
    *,
    tp: int,
    pp: int,
    precisions: Precisions,
    engine: EngineLimits,
    max_num_tokens: int | None = None,
    ep: int = 1,
) -> MemoryPlan:
    """Memory of one GPU of a replica: weights, activations, reserve, and what is left for KV.

    Notes
    -----
    ``usable = f M`` (vLLM, SGLang) or ``usable = W + A + R + f (M - W - A - R)`` (TensorRT-LLM,
    fraction of free memory); ``kv = usable - W - A - R``. With expert parallelism over ``ep``
    GPUs each holds the dense weights and ``1/ep`` of the routed experts.
    """
    wb = weight_bytes(model, precisions.weights, precisions.activations)
    n_exp = model.moe.n_experts if model.moe else 0
    experts = wb.expert_each * n_exp * wb.n_moe_layers
    w_gb = (wb.total(n_exp) - experts + experts / ep) / (tp * pp) / GIGA
    tokens = max_num_tokens or engine.max_num_tokens
    act_per_tok = (
        ACTIVATION_WIDTH_D_MODEL * model.d_model + ACTIVATION_WIDTH_D_FF * model.d_ff / tp
    ) * BYTES_PER_DTYPE[precisions.activations]
    a_gb = tokens * act_per_tok / GIGA
    m = device_memory_gb(acc)
    fixed = w_gb + a_gb + RUNTIME_RESERVE_GB
    if engine.memory_fraction_of == "free":
        usable = fixed + engine.memory_fraction * max(m - fixed, 0.0)
    else:
        usable = engine.memory_fraction * m
    kv = usable - fixed
    return MemoryPlan(m, usable, w_gb, a_gb, RUNTIME_RESERVE_GB, max(kv, 0.0), kv > 0)


def device_memory_gb(acc: Accelerator) -> float:
    """Device memory an engine sees, in decimal GB (the catalog's nominal GB are binary). [GB]."""
    return float(acc.memory_gb) * DEVICE_MEMORY_BYTES_PER_GB / GIGA


def default_tp(
    model: ModelArch, acc: Accelerator, system: System, gpus: int, precision: str, pp: int = 1
) -> int:
    """Smallest power-of-two tp (within the node, dividing ``gpus / pp``) whose weights leave room.

    The weights per GPU must stay under ``DEFAULT_TP_MAX_WEIGHT_FRACTION`` of device memory; if
    none does, the largest candidate is returned (and the fit check reports the shortfall).
    """
    act = "bf16" if acc.supports("bf16") else "fp16"
    wb = weight_bytes(model, precision, act)
    total = wb.total(model.moe.n_experts if model.moe else 0) / GIGA
    cands = [
        t
        for t in (1, 2, 4, 8, 16, 32, 64)
        if t <= max(system.devices_per_node, system.scale_up_domain)
        and (gpus // pp) % t == 0
        and t <= gpus // pp
    ]
    if not cands:
        return 1
    for t in cands:
        if total / (t * pp) <= DEFAULT_TP_MAX_WEIGHT_FRACTION * device_memory_gb(acc):
            return t
    return cands[-1]


# ----------------------------------------------------------------------------- steady states
def prefill_pairs(new_tokens: ArrayLike, cached_tokens: ArrayLike = 0.0) -> F64:
    r"""Causal (query, key) pairs of prefilling ``new_tokens`` after ``cached_tokens``. [pairs].

    Parameters
    ----------
    new_tokens : array_like
        Prompt tokens computed, :math:`n`. [tokens]
    cached_tokens : array_like
        Prompt tokens whose KV is reused from the prefix cache, :math:`c`. [tokens]

    Returns
    -------
    ndarray
        :math:`n\,c + n(n+1)/2`: each new token attends to the cached prefix and to the new
        tokens before it (vLLM automatic prefix caching, SGLang RadixAttention). [pairs]
    """
    n = np.asarray(new_tokens, dtype=np.float64)
    c = np.asarray(cached_tokens, dtype=np.float64)
    return np.asarray(n * c + n * (n + 1.0) / 2.0, dtype=np.float64)


def cached_prompt_tokens(input_tokens: ArrayLike, hit_rate: ArrayLike) -> F64:
    r"""Prompt tokens served from the prefix cache, leaving at least one token to compute.

    Notes
    -----
    :math:`c = \min(\lfloor h\,I \rfloor, I - 1)` for a hit rate :math:`h` of prompt tokens.
    """
    i = np.asarray(input_tokens, dtype=np.float64)
    h = np.asarray(hit_rate, dtype=np.float64)
    return np.asarray(np.minimum(np.floor(h * i), np.maximum(i - 1.0, 0.0)), dtype=np.float64)


def continuous_batching_terms(
    it: IterationModel,
    batch: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    cached_tokens: ArrayLike = 0.0,
    separate_prefill_tokens: float | None = None,
) -> dict[str, F64]:
    r"""Terms of the mean continuous-batching iteration (sum: the time per decode step). [s].

    Parameters
    ----------
    it : IterationModel
        The per-iteration model.
    batch : array_like
        Sequences running (each generating one token per iteration). [count]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths. [tokens]
    cached_tokens : array_like
        Prompt tokens reused from the prefix cache per request (:func:`cached_prompt_tokens`).
        [tokens]
    separate_prefill_tokens : float, optional
        None (default): prompt tokens ride with the decodes (stall-free). Otherwise prompts run
        in prefill-only iterations of at most this many tokens (:attr:`EngineLimits.
        separate_prefill_tokens`), during which the decodes stall.

    Returns
    -------
    dict of str to ndarray
        :meth:`IterationModel.iteration_terms` of the mean iteration (per decode step). [s]

    Notes
    -----
    In steady state :math:`B/O` requests finish per iteration and as many start, so every
    iteration carries :math:`B` decode tokens at mean context :math:`I + O/2` plus
    :math:`B (I - c) / O` prompt tokens (chunked prefill piggy-backed on decode, Sarathi-Serve
    [3]_),
    whose causal pairs are :math:`(B/O)\,` :func:`prefill_pairs` :math:`(I - c, c)`.
    """
    b = np.asarray(batch, dtype=np.float64)
    i = np.asarray(input_tokens, dtype=np.float64)
    o = np.maximum(np.asarray(output_tokens, dtype=np.float64), 1.0)
    c = np.asarray(cached_tokens, dtype=np.float64)
    starts = b / o
    if separate_prefill_tokens is None:
        return it.iteration_terms(
            b, b * (i + o / 2.0), starts * (i - c), starts * prefill_pairs(i - c, c), starts
        )
    return _stalled_prefill_terms(it, b, i, o, c, float(separate_prefill_tokens))


def _stalled_prefill_terms(
    it: IterationModel, b: F64, i: F64, o: F64, c: F64, budget_tokens: float
) -> dict[str, F64]:
    r"""Per-decode-step terms when prompts run in prefill-only iterations (decodes stall).

    Notes
    -----
    Prefill-first scheduling: the :math:`s = B/O` prompts that start per decode step are
    prefilled as soon as seats free up, :math:`m = \mathrm{clip}(s, 1, N/(I-c))` prompts per
    prefill-only iteration (at least one, at most the token budget :math:`N`), so
    :math:`s/m` such iterations run per decode step, each re-reading the weights. The terms are
    those of the decode-only step plus :math:`s/m` prefill iterations of :math:`m` prompts.
    """
    n_new = np.maximum(i - c, 1.0)
    starts = b / o
    m = np.clip(starts, 1.0, np.maximum(budget_tokens / n_new, 1.0))
    dec = it.iteration_terms(b, b * (i + o / 2.0))
    pre = it.iteration_terms(0.0, 0.0, m * n_new, m * prefill_pairs(n_new, c), m)
    g = starts / m
    return {k: np.asarray(dec[k] + g * pre[k], dtype=np.float64) for k in dec}


def continuous_batching_step(
    it: IterationModel,
    batch: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    cached_tokens: ArrayLike = 0.0,
    separate_prefill_tokens: float | None = None,
) -> F64:
    """Return the mean continuous-batching iteration time (sum of the terms). [s].

    See :func:`continuous_batching_terms` (same parameters).
    """
    return _sum_terms(
        continuous_batching_terms(
            it, batch, input_tokens, output_tokens, cached_tokens, separate_prefill_tokens
        )
    )


def speculative_tokens_per_step(spec_tokens: ArrayLike, acceptance_rate: ArrayLike) -> F64:
    r"""Return the expected tokens emitted per verification step of speculative decoding.

    Parameters
    ----------
    spec_tokens : array_like
        Draft tokens proposed per step, :math:`k`. [tokens]
    acceptance_rate : array_like
        Probability that the target accepts each draft token, :math:`\alpha` (i.i.d.). [0-1]

    Returns
    -------
    ndarray
        Expected tokens per step. [tokens]

    Notes
    -----
    :math:`E = (1 - \alpha^{k+1}) / (1 - \alpha)`, and :math:`k+1` when :math:`\alpha = 1`
    (Leviathan, Kalman, Matias, "Fast Inference from Transformers via Speculative Decoding",
    ICML 2023, arXiv:2211.17192, eq. 1).
    """
    k = np.asarray(spec_tokens, dtype=np.float64)
    a = np.asarray(acceptance_rate, dtype=np.float64)
    safe = np.where(a < 1.0, a, 0.5)
    return np.asarray(
        np.where(a < 1.0, (1.0 - safe ** (k + 1.0)) / (1.0 - safe), k + 1.0), dtype=np.float64
    )


def speculative_step_s(
    target: IterationModel,
    draft: IterationModel,
    batch: ArrayLike,
    context_tokens: ArrayLike,
    spec_tokens: int,
    acceptance_rate: float,
) -> F64:
    r"""Time per emitted token with speculative decoding at a decode batch. [s].

    Notes
    -----
    One step: the draft runs :math:`k` decode iterations, then the target verifies :math:`k+1`
    tokens per sequence in one pass (the KV of the context is read once; :math:`k` extra query
    tokens cost linear FLOPs and attention pairs). Per emitted token:
    :math:`t = (k\,t_{draft} + t_{verify}) / E(k, \alpha)`.
    """
    b = np.asarray(batch, dtype=np.float64)
    c = np.asarray(context_tokens, dtype=np.float64)
    k = float(spec_tokens)
    t_draft = k * draft.decode_step_s(b, c)
    t_verify = target.iteration_s(b, b * c, b * k, b * k * c, 0.0)
    return np.asarray(
        (t_draft + t_verify) / speculative_tokens_per_step(k, acceptance_rate), dtype=np.float64
    )

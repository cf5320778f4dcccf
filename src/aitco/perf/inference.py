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
from aitco.errors import InputError, PlanError
from aitco.explain import Estimate, Term, dominant_term
from aitco.perf import comms
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.kvcache import KVCapacity, kv_bytes_per_sequence, kv_capacity
from aitco.perf.params import ParamCounts, param_counts
from aitco.perf.training import ELEMENTWISE_RW, FP8_CAST_BYTES
from aitco.units import BYTES_PER_DTYPE, GIGA, TERA

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
#: Bytes of transient activations per scheduled token per unit of model width: the widest live
#: tensors inside one layer are the FFN up/gate outputs (2 x d_ff) plus residual, normed input and
#: QKV (about 4 x d_model), in 16-bit. Peak workspace = tokens x (4 d + 2 d_ff / tp) x 2 B.
ACTIVATION_WIDTH_D_MODEL = 4.0
ACTIVATION_WIDTH_D_FF = 2.0
#: Largest weights share of device memory the default tensor-parallel choice accepts, so that
#: at least ~20 % is left for the KV cache (a sizing rule of thumb, not an engine limit).
DEFAULT_TP_MAX_WEIGHT_FRACTION = 0.8
#: Mean prompt and output lengths when a shape is not given (issue #4 CLI defaults).
DEFAULT_INPUT_TOKENS = 512
DEFAULT_OUTPUT_TOKENS = 256
#: Exponent above which the smooth roofline is the plain max (Williams et al. 2009).
ROOFLINE_P_MAX = 50.0
#: Dense FLOPs per multiply-accumulate.
FLOPS_PER_MAC = 2.0
#: Attention FLOPs per (query, key) pair per head per head-dimension: QK^T and PV, 2 MACs.
ATTENTION_MACS_PER_PAIR = 2.0
#: Fraction of accelerator TDP drawn when idle, used when the catalog has no ``idle_w``
#: (a common 20-30 % range for datacenter GPUs; see the ``idle-power.fraction-of-tdp`` factor).
IDLE_POWER_FRACTION_DEFAULT = 0.25


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
        Whether long prompts are split into chunks that ride along with decodes by default.
    """

    name: str
    max_num_seqs: int
    max_num_tokens: int
    memory_fraction: float
    memory_fraction_of: str
    reference: str
    chunked_prefill: bool = True


#: Engine defaults (named, with their documentation).
ENGINES: dict[str, EngineLimits] = {
    "vllm": EngineLimits(
        "vllm",
        256,
        8192,
        0.90,
        "total",
        "vLLM EngineArgs defaults: max_num_seqs=256, gpu_memory_utilization=0.9, chunked "
        "prefill off for short-context models (v0.6, 2024)",
        chunked_prefill=False,
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
        "chunked_prefill 8192-16384",
    ),
    "generic": EngineLimits(
        "generic",
        256,
        8192,
        0.90,
        "total",
        "generic engine (DeepSpeed-Inference, HF, FasterTransformer, llama.cpp): vLLM 0.6-like "
        "limits, whole-prompt prefill",
        chunked_prefill=False,
    ),
    "trtllm": EngineLimits(
        "trtllm",
        2048,
        8192,
        0.90,
        "free",
        "TensorRT-LLM BuildConfig defaults: max_batch_size=2048, max_num_tokens=8192; "
        "KvCacheConfig.free_gpu_memory_fraction=0.9",
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
    if precision not in BYTES_PER_DTYPE:
        raise InputError("--precision", precision, "one of bf16, fp16, fp8, int8, int4, fp4")
    act = "bf16" if acc.supports("bf16") else "fp16" if acc.supports("fp16") else None
    notes: list[str] = []
    if precision in ("fp32", "tf32"):
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
        kv = "fp8" if precision in ("fp8", "fp4") and acc.supports("fp8") else act
    else:
        if kv_precision not in BYTES_PER_DTYPE:
            raise InputError(
                "--kv-precision", kv_precision, "one of bf16, fp16, fp8, int8, int4, fp4"
            )
        kv = kv_precision
    return Precisions(precision, compute, act, kv, tuple(notes))


def weight_bytes_per_element(precision: str) -> float:
    """Return the stored bytes per weight, including quantisation scales. [B]."""
    b = BYTES_PER_DTYPE[precision]
    if precision == "int4":
        return b + INT4_GROUP_OVERHEAD_BYTES
    if precision == "fp4":
        return b + FP4_BLOCK_OVERHEAD_BYTES
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
        n_moe = model.n_layers - model.moe.first_dense_layers
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


#: Largest expert-load imbalance charged (a few tokens on many GPUs): the busiest GPU gets at
#: most this many times the mean routed load.
MAX_EXPERT_IMBALANCE = 4.0


def expert_load_imbalance(routed_tokens: ArrayLike, n_gpus: int) -> F64:
    r"""Return the expected max/mean routed-token load over the GPUs of an expert-parallel group.

    Parameters
    ----------
    routed_tokens : array_like
        Token-expert assignments in one MoE layer, :math:`T k`. [count]
    n_gpus : int
        GPUs sharing the experts, :math:`n`.

    Returns
    -------
    ndarray
        :math:`g = \min(1 + \sqrt{2 \ln n / m}, g_{max})` with :math:`m = T k / n` the mean load
        per GPU: the maximum of :math:`n` bins under uniform random routing (balls into bins,
        M. Raab and A. Steger, RANDOM 1998, heavily loaded case); 1 for one GPU.
    """
    m = np.maximum(np.asarray(routed_tokens, dtype=np.float64) / max(n_gpus, 1), 1.0)
    if n_gpus <= 1:
        return np.ones_like(m)
    return np.asarray(
        np.minimum(1.0 + np.sqrt(2.0 * math.log(n_gpus) / m), MAX_EXPERT_IMBALANCE),
        dtype=np.float64,
    )


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
        Attention FLOPs per (query, context) token pair per GPU. [FLOP]
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
    a2a_bandwidth_gb_s: float = 0.0
    a2a_latency_us: float = 0.0
    a2a_efficiency: float = 1.0

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
        dispatched to and combined from their experts by two all-to-alls on the group's link
        (DeepSeek-V3 serving: attention DP + expert EP).
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
        a2a = comms.alltoall_time_s(
            tg * self.a2a_bytes_per_token * imb, self.ep, self.a2a_bandwidth_gb_s,
            self.a2a_latency_us, self.a2a_efficiency,
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
            self.attn_flops_per_pair / self._attn_rate(),
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
    body_params = pc.active - pc.embedding - pc.lm_head
    pair_macs: float
    if model.mla is not None:
        a = model.mla
        pair_macs = model.n_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim)
    else:
        pair_macs = model.n_heads * model.dim_head * ATTENTION_MACS_PER_PAIR
    attn_flops_pair = FLOPS_PER_MAC * pair_macs * model.n_layers / tp
    kv_tok = float(kv_bytes_per_sequence(model, 1.0, precisions.kv, tp))  # all layers, per rank
    act_b = BYTES_PER_DTYPE[precisions.activations]
    bw, lat, eff = comms.group_link(
        system, tp, 1, efficiency.intra_node_link, efficiency.scale_out_link
    )
    pbw, plat, peff = comms.group_link(
        system, 2, tp, efficiency.intra_node_link, efficiency.scale_out_link
    )
    gemm_16 = efficiency.gemm_for(acc.family)
    # memory-bound elementwise ops of the forward pass (norms, residuals, activation, rotary),
    # counted as in aitco.perf.training: hidden-size ops replicated on every tp rank, the
    # FFN/QKV-width ops split; fp8 compute adds the cast of every linear layer's input.
    q_w = float(model.n_heads * model.dim_head)
    kv_w = float(model.kv_heads * model.dim_head)
    f_w = float(model.moe.d_ff_expert * model.moe.n_active if model.moe else model.d_ff)
    ffn_elems = 3.0 * f_w if model.gated_ffn else 2.0 * f_w
    rope = 2.0 * (q_w + kv_w) if model.position_embedding == "rope" else 0.0
    elem = (
        ELEMENTWISE_RW
        * (4.0 * d + (ffn_elems + rope) / tp)
        * BYTES_PER_DTYPE[precisions.activations]
    )
    if BYTES_PER_DTYPE[precisions.compute] < BYTES_PER_DTYPE[precisions.activations]:
        elem += (2.0 * d + (q_w + f_w) / tp) * FP8_CAST_BYTES
    elem_per_token = elem * math.ceil(model.n_layers / pp)
    n_experts = model.moe.n_experts if model.moe else 0
    n_active = model.moe.n_active if model.moe else 0
    abw, alat, aeff = comms.group_link(
        system, ep, 1, efficiency.intra_node_link, efficiency.scale_out_link
    )
    return IterationModel(
        ep=ep,
        expert_flops_per_token=FLOPS_PER_MAC * pc.expert_active if ep > 1 else 0.0,
        a2a_bytes_per_token=d * act_b * n_active,
        a2a_bandwidth_gb_s=float(abw),
        a2a_latency_us=float(alat),
        a2a_efficiency=float(aeff),
        tp=tp,
        pp=pp,
        peak_tflops=float(acc.peak_tflops[precisions.compute]),
        hbm_bandwidth_gb_s=float(acc.hbm_bandwidth_gb_s),
        gemm_efficiency=lowp_gemm_efficiency(
            gemm_16, precisions.compute, efficiency.lowp_gemm_scale
        ),
        hbm_efficiency=efficiency.decode_hbm,
        body_flops_per_token=FLOPS_PER_MAC * body_params / shard,
        head_flops_per_token=FLOPS_PER_MAC * head_params / tp,
        dense_weight_bytes=wb.dense / shard,
        head_weight_bytes=head_params * act_b / tp,
        elementwise_bytes_per_token=elem_per_token,
        elementwise_efficiency=efficiency.elementwise_hbm,
        expert_bytes_each=wb.expert_each / shard,
        n_moe_layers=wb.n_moe_layers // 1,
        n_experts=n_experts,
        n_active=n_active,
        attn_flops_per_pair=attn_flops_pair,
        kv_bytes_per_token=kv_tok,
        allreduce_bytes_per_token=d * act_b,
        allreduces_per_iteration=(2 * math.ceil(model.n_layers / pp)) if tp > 1 else 0,
        link_bandwidth_gb_s=float(bw),
        link_latency_us=float(lat),
        link_efficiency=float(eff),
        pp_bandwidth_gb_s=float(pbw),
        pp_latency_us=float(plat),
        pp_efficiency=float(peff),
        overhead_s=efficiency.serving_overhead_for(engine),
        overhead_per_seq_s=efficiency.serving_overhead_per_seq_s,
        layer_overhead_s=efficiency.serving_layer_overhead_s,
        n_layers=model.n_layers,
        roofline_p=efficiency.roofline_p,
        head_peak_tflops=float(acc.peak_tflops[precisions.activations]),
        attn_peak_tflops=float(acc.peak_tflops[precisions.activations]),
        attn_gemm_efficiency=efficiency.prefill_attention,
    )


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
    m = float(acc.memory_gb)
    fixed = w_gb + a_gb + RUNTIME_RESERVE_GB
    if engine.memory_fraction_of == "free":
        usable = fixed + engine.memory_fraction * max(m - fixed, 0.0)
    else:
        usable = engine.memory_fraction * m
    kv = usable - fixed
    return MemoryPlan(m, usable, w_gb, a_gb, RUNTIME_RESERVE_GB, max(kv, 0.0), kv > 0)


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
        if total / (t * pp) <= DEFAULT_TP_MAX_WEIGHT_FRACTION * acc.memory_gb:
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
) -> dict[str, F64]:
    r"""Terms of the mean stall-free continuous-batching iteration (sum: the step time). [s].

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

    Returns
    -------
    dict of str to ndarray
        :meth:`IterationModel.iteration_terms` of the mean iteration. [s]

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
    return it.iteration_terms(
        b, b * (i + o / 2.0), starts * (i - c), starts * prefill_pairs(i - c, c), starts
    )


def continuous_batching_step(
    it: IterationModel,
    batch: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    cached_tokens: ArrayLike = 0.0,
) -> F64:
    """Return the mean continuous-batching iteration time (sum of the terms). [s].

    See :func:`continuous_batching_terms` (same parameters).
    """
    return _sum_terms(
        continuous_batching_terms(it, batch, input_tokens, output_tokens, cached_tokens)
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
    t = smallest_fitting_tp(model, acc, system, precisions, engine, pp)
    if t is not None and t > tp:
        hint.append(f"smallest tp that fits: {t} (x pp {pp} = {t * pp} GPUs per replica)")
    for p in ("fp8", "int8", "int4", "fp4"):
        if BYTES_PER_DTYPE[p] < BYTES_PER_DTYPE[precisions.weights]:
            try:
                pr = resolve_precisions(acc, p, None)
            except InputError:
                continue
            if memory_plan(model, acc, tp=tp, pp=pp, precisions=pr, engine=engine).fits:
                hint.append(f"or --precision {p} fits at tp {tp}")
                break
    return (
        f"weights need {mp.weights_gb:.1f} GB per GPU (+{mp.activations_gb:.1f} GB activations, "
        f"{mp.reserve_gb:.1f} GB reserve) but only {mp.usable_gb:.1f} GB of "
        f"{mp.device_gb:.0f} GB is usable"
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
        eng = EngineLimits(
            eng.name, eng.max_num_seqs, int(kw["max_batched_tokens"]), eng.memory_fraction,
            eng.memory_fraction_of, eng.reference + f"; max_num_batched_tokens="
            f"{kw['max_batched_tokens']} (user)", eng.chunked_prefill,
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
    t_first, t_tok = math.fsum(ttft.values()), math.fsum(tpot.values())
    e2e = t_first + (o - 1.0) * t_tok
    return LoadPoint(
        "static batch", ttft, tpot, e2e, inp.replicas * b * o / e2e, float(b), t_first / e2e
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
        it, b, i, o, c, inp.engine.max_num_tokens, inp.engine.chunked_prefill
    )
    return {k: float(v) for k, v in terms.items()}


def chunked_ttft_terms(
    it: IterationModel,
    batch: ArrayLike,
    input_tokens: float,
    output_tokens: float,
    cached_tokens: float,
    max_num_tokens: float,
    chunked_prefill: bool = True,
) -> dict[str, F64]:
    r"""TTFT terms of a prompt joining running batches ``batch`` (vectorised over the batch). [s].

    Notes
    -----
    The prompt's :math:`n = I - c` new tokens ride in :math:`k = \lceil n / (N - B) \rceil`
    chunks, one per iteration beside the :math:`B` decodes (``N`` the max batched tokens; one
    chunk without chunked prefill); the first token is sampled after the last chunk.
    """
    b = np.asarray(batch, dtype=np.float64)
    i, o, c = float(input_tokens), float(output_tokens), float(cached_tokens)
    n = i - c
    budget = np.maximum(float(max_num_tokens) - b, 1.0)
    k = np.ceil(n / budget) if chunked_prefill else np.ones_like(b)
    terms = it.iteration_terms(b, b * (i + o / 2.0), n / k, prefill_pairs(n, c) / k, 1.0 / k)
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
        tpot = _floats(it.iteration_terms(1.0, i + o / 2.0))
        e2e = math.fsum(ttft.values()) + (o - 1.0) * math.fsum(tpot.values())
        return LoadPoint(
            regime, ttft, tpot, e2e, inp.replicas * o / e2e, 1.0,
            math.fsum(ttft.values()) / e2e, assumptions=notes,
        )  # fmt: skip
    tpot = _floats(continuous_batching_terms(it, b, i, o, c))
    step = math.fsum(tpot.values())
    ttft = _chunked_ttft_terms(it, inp, float(b))
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
    from aitco.perf import queueing, serving  # local: queueing imports this module

    assert inp.qps is not None
    i, o, c = float(inp.input_tokens), float(inp.output_tokens), inp.cached_tokens
    eng, per_replica = inp.engine, inp.qps / inp.replicas
    kw: dict[str, Any] = {
        "max_num_seqs": b_max, "kv_capacity_tokens": cap.max_tokens,
        "max_num_tokens": eng.max_num_tokens, "scheduler_steps": inp.scheduler_steps,
        "chunked": eng.chunked_prefill, "slo_ttft_s": inp.slo_ttft_s, "slo_tpot_s": inp.slo_tpot_s,
        "prefix_cache_hit_rate": inp.prefix_cache_hit_rate,
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
    cap_rps = serving.max_request_rate(it, i, o, b_max, c)
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
    steady = _floats(continuous_batching_terms(it, b, i, o, c))
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
    ttft = _floats(it.iteration_terms(b, b * (i + o / 2.0), i - c, prefill_pairs(i - c, c), 1.0))
    ttft["queueing_s"] = sim.mean_ttft_s - math.fsum(ttft.values())
    if inp.slo_ttft_s is not None or inp.slo_tpot_s is not None:
        vals["replicas_for_slo"] = serving.replicas_for_slo(
            it, inp.qps, inp.input_tokens, inp.output_tokens, max_num_seqs=b_max,
            kv_capacity_tokens=cap.max_tokens, max_num_tokens=eng.max_num_tokens,
            slo_ttft_s=inp.slo_ttft_s, slo_tpot_s=inp.slo_tpot_s, input_cv=inp.input_cv,
            output_cv=inp.output_cv, seed=inp.seed, scheduler_steps=inp.scheduler_steps,
            chunked=eng.chunked_prefill, prefix_cache_hit_rate=inp.prefix_cache_hit_rate,
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
    "ep_all_to_all_s": "2 * moe_layers * alltoall(T/ep * k * d_model * act_bytes * imbalance, ep)",
    "lm_head_s": "max(sampled * head_flops/(gemm_eff*peak16), head_bytes/(hbm_eff*bw))",
    "kv_read_s": "context_tokens * max(kv_bytes_per_token/(hbm_eff*bw), "
    "attn_flops_per_pair/(eff*peak))",
    "prefill_attention_s": "prefill_pairs * attn_flops_per_pair / (attn_eff * peak16)",
    "overhead_s": "serving_overhead_s + serving_layer_overhead_s*layers "
    "+ serving_overhead_per_seq_s*seqs (fitted)",
    "scheduler_wait_s": "(scheduler_steps - 1)/2 * iteration_s (admission every k iterations)",
    "queue_wait_s": "(concurrency/replicas - B_max) / (B_max / (O * iteration_s))",
    "queueing_s": "simulated mean TTFT - prefill iteration at the mean batch",
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
    )  # fmt: skip
    if inp.ep > 1:  # each GPU of the group holds the KV of its own sequences
        cap = replace(cap, max_sequences=cap.max_sequences * inp.ep,
                      max_tokens=cap.max_tokens * inp.ep)  # fmt: skip
    if not mp.fits or cap.max_sequences < 1:
        raise InputError(
            "--model", model.id,
            f"a model that fits on {acc.id} at tp {inp.tp} pp {inp.pp} in {prec.weights}",
            hint=_not_fit_message(model, acc, system, mp, prec, eng, inp.tp, inp.pp),
        )  # fmt: skip
    return mp, cap, reserved


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
    from aitco.perf import serving  # local: serving imports this module

    inp = validate_serving_inputs(
        model, acc, system, gpus, precision=precision, kv_precision=kv_precision,
        input_tokens=input_tokens, output_tokens=output_tokens, batch=batch,
        concurrency=concurrency, qps=qps, mode=mode, tp=tp, pp=pp, slo_ttft_ms=slo_ttft_ms,
        slo_tpot_ms=slo_tpot_ms, engine=engine, allocation=allocation, input_cv=input_cv,
        output_cv=output_cv, num_requests=num_requests, seed=seed, max_batch=max_batch,
        scheduler_steps=scheduler_steps, trace=trace, prefix_cache_hit_rate=prefix_cache_hit_rate,
        max_batched_tokens=max_batched_tokens, ep=ep,
    )  # fmt: skip
    prec, eng = inp.precisions, inp.engine
    assumptions = list(prec.notes)
    draft_it: IterationModel | None = None
    if draft_model is not None:
        _check_positive("--spec-tokens", spec_tokens, integer=True)
        if not 0.0 <= acceptance_rate <= 1.0:
            raise InputError("--acceptance-rate", acceptance_rate, "a probability in [0, 1]")
        if inp.qps is not None:
            raise InputError(
                "--draft-model", draft_model.id, "no --qps (speculative decoding is not simulated)"
            )
        draft_it = iteration_model(
            draft_model, acc, system, tp=inp.tp, pp=1, precisions=prec, efficiency=efficiency,
            engine=eng.name,
        )  # fmt: skip
        assumptions.append(
            f"speculative decoding: draft {draft_model.id}, k={spec_tokens}, acceptance "
            f"{acceptance_rate:g} (expected "
            f"{float(speculative_tokens_per_step(spec_tokens, acceptance_rate)):.2f} "
            "tokens per step); the draft's KV cache is not counted"
        )
    mp, cap, reserved = _memory(model, acc, system, inp, draft_model)
    it = iteration_model(
        model, acc, system, tp=inp.tp, pp=inp.pp, precisions=prec, efficiency=efficiency,
        engine=eng.name, ep=inp.ep,
    )  # fmt: skip
    engine_cap = (inp.max_batch or eng.max_num_seqs) * inp.ep
    b_max = int(min(cap.max_sequences, engine_cap))
    if inp.batch is not None:
        if inp.batch > cap.max_sequences:
            raise InputError(
                "--batch", inp.batch,
                f"at most {cap.max_sequences} sequences (KV capacity per replica)",
            )  # fmt: skip
        point = static_batch_point(it, inp, inp.batch)
    elif inp.qps is None:
        point = closed_loop_point(it, inp, b_max)
    else:
        point = simulated_point(it, inp, b_max, cap)
    assumptions += point.assumptions
    vals: dict[str, Any] = dict(point.values)
    if draft_it is not None and point.tpot_terms:
        vals["speculative_speedup"] = apply_speculative(
            point, it, draft_it, inp, spec_tokens, acceptance_rate
        )
    i, o = float(inp.input_tokens), float(inp.output_tokens)
    out_tps = point.output_tokens_per_s
    req_s = out_tps / o
    tpot_t = point.tpot_terms
    busy_keys = ("linear_compute_s", "weights_read_s", "elementwise_s", "lm_head_s",
                 "kv_read_s", "prefill_attention_s")  # fmt: skip
    busy = (math.fsum(tpot_t.get(k, 0.0) for k in busy_keys) / point.tpot_s) if tpot_t else 1.0
    energy = serving.energy_per_token(acc, gpus, out_tps, utilization=min(max(busy, 0.0), 1.0))
    # a new replica reads its weights from each node's local NVMe (nodes in parallel)
    nodes = math.ceil(inp.gpus_per_replica / system.devices_per_node)
    cold = serving.cold_start(mp.weights_gb * inp.gpus_per_replica / nodes)
    vals.update({
        "ttft_s": point.ttft_s, "tpot_s": point.tpot_s, "e2e_latency_s": point.e2e_s,
        "output_tokens_per_s": out_tps, "total_tokens_per_s": req_s * (i + o),
        "requests_per_s": req_s, "output_tokens_per_s_per_gpu": out_tps / gpus,
        "batch_per_replica": point.batch,
        **_memory_values(mp, cap, inp, b_max, reserved),
        "tp": inp.tp, "pp": inp.pp, "replicas": inp.replicas, "precision": prec.weights,
        "compute_precision": prec.compute, "kv_precision": prec.kv, "engine": eng.name,
        "regime": point.regime, **energy, "cold_start_s": cold.total_s,
        "cold_start_weights_load_s": cold.load_s,
        "prefix_cache_hit_rate": inp.prefix_cache_hit_rate,
        "scheduler_steps": inp.scheduler_steps, "max_batched_tokens": eng.max_num_tokens,
        "prefill_time_fraction": point.prefill_time_fraction, "ep": inp.ep,
    })  # fmt: skip
    if inp.qps is None:
        for k in ("p50_ttft_s", "p99_ttft_s", "p50_tpot_s", "p99_tpot_s", "p99_e2e_latency_s"):
            vals.setdefault(k, None)
    terms = [
        *_time_terms("ttft", point.ttft_terms, it, acc, system, prec),
        *_time_terms("tpot", tpot_t, it, acc, system, prec),
        Term(name="kv_cache_gb", value=mp.kv_gb, unit="GB",
             formula="usable - weights - activations - reserve (per GPU)",
             inputs={"device_gb": mp.device_gb, "usable_gb": mp.usable_gb,
                     "weights_gb": mp.weights_gb, "activations_gb": mp.activations_gb,
                     "reserve_gb": mp.reserve_gb},
             sources=_cite(acc, "memory_gb")),
        Term(name="max_batch_per_replica", value=float(b_max), unit="sequences",
             formula="min(kv_cache / kv_bytes(reserved tokens), engine max_num_seqs)",
             inputs={"kv_sequences": cap.max_sequences, "engine_max_num_seqs": engine_cap,
                     "kv_reserved_tokens_per_sequence": reserved, "engine": eng.reference}),
    ]  # fmt: skip
    assumptions.append(f"regime: {point.regime}; engine limits: {eng.reference}")
    assumptions.append(
        "ttft_* terms add up to ttft_s and tpot_* terms to tpot_s; power = TDP x (idle fraction "
        "+ (1 - idle fraction) x busy share of the TPOT terms)"
    )
    if inp.prefix_cache_hit_rate > 0:
        assumptions.append(
            f"prefix cache: {inp.cached_tokens:g} of {inp.input_tokens} prompt tokens reused per "
            "request (not recomputed; their KV blocks held once per replica)"
        )
    return InferenceResult(
        values=vals, interval=_intervals(vals, efficiency), terms=terms,
        assumptions=assumptions, iteration=it,
        extra={"input_tokens": inp.input_tokens, "output_tokens": inp.output_tokens},
        dominant=dominant_term({f"tpot_{k}": v for k, v in tpot_t.items()}),
    )  # fmt: skip

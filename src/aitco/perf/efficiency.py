"""The small, named set of efficiency parameters every performance model uses.

They are the only fitted numbers in aitco's performance models: achievable fractions of the
hardware peaks. Defaults are fitted **once, globally** on the published runs in
``aitco/validation/data`` (see ``docs/efficiency.md`` for the fit and its residuals), never per
model, per row or per benchmark. A calibration profile (``aitco calibrate``) replaces them with
values fitted to the user's own cluster.

Owners: the training engine owns the ``gemm``/``hbm``/link/overlap fields; the inference engine
owns the ``decode``/``prefill``/``serving`` fields. Edit only your own fields.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from aitco.perf.kernels import flash_kernel_for

#: Accelerator families (``Accelerator.family`` in the catalog).
FAMILIES: tuple[str, ...] = (
    "nvidia-volta",
    "nvidia-ampere",
    "nvidia-ada",
    "nvidia-hopper",
    "nvidia-blackwell",
    "nvidia-blackwell-rtx",
    "nvidia-orin",
    "amd-cdna2",
    "amd-cdna3",
    "amd-cdna4",
    "intel-gaudi",
    "google-tpu",
    "aws-neuron",
)


#: Kernel shape constants fitted to published kernel benchmarks by
#: :func:`aitco.validation.kernels.fit_kernel_defaults` (a test refits them and compares):
#: fixed time of a GEMM output tile [s] and of a GEMM kernel [s] on OpenXLA's H100/B200 matmul
#: tables; fixed time of a FlashAttention query block [s] on the FlashAttention-3 paper's H100
#: figures (FA2 and FA3 kernels); fraction of HBM bandwidth reached by fused (Triton) and eager
#: (PyTorch / Hugging Face) normalisation and activation kernels on Liger-Kernel's published
#: A100/H100 benchmark data (``elementwise_kernels.csv``).
KERNEL_FIT_DEFAULTS: dict[str, float] = {
    "gemm_tile_fixed_s": 1.108e-6,
    "gemm_latency_s": 5.545e-6,
    "attention_block_fixed_s.fa2": 1.326e-6,
    "attention_block_fixed_s.fa3": 2.070e-6,
    "attention_block_fixed_s.cudnn": 1.481e-6,
    "elementwise_hbm.fused": 0.8249,
    "elementwise_hbm.eager": 0.3408,
}
#: Elementwise kernel styles of a training stack: ``framework`` (the end-to-end fitted
#: ``elementwise_hbm`` of the frameworks the throughput rows ran), ``fused`` (one hand-written
#: kernel per fused op: llm.c, Liger Kernel, TinyLlama's fused norms and SwiGLU) or ``eager``
#: (PyTorch / Hugging Face modules op by op, no compiler).
ELEMENTWISE_KERNELS: tuple[str, ...] = ("framework", "fused", "eager")
#: GEMM level of a training stack: ``framework`` (the end-to-end fitted ``training_gemm`` of the
#: frameworks the throughput rows ran: what a GEMM reaches inside a Python framework's step) or
#: ``ceiling`` (the accelerator's measured matmul ceiling, ``matmul_tflops`` of the catalog: a
#: native C/CUDA loop calling cuBLAS(Lt) back to back, such as llm.c). Both are multiplied by the
#: kernel shape laws.
GEMM_LEVELS: tuple[str, ...] = ("framework", "ceiling")


def _frac(default: float, description: str) -> Any:
    return Field(default=default, ge=0.01, le=1.0, description=description)


class EfficiencyParams(BaseModel):
    """Achievable fractions of peak, fitted globally.

    Attributes
    ----------
    gemm : dict of str to float
        Achievable fraction of the dtype's dense peak for large matrix multiplies, per
        accelerator family (families absent use ``gemm_default``). [0-1]
    gemm_default : float
        Fraction for families without a fitted value. [0-1]
    hbm : float
        Achievable fraction of device-memory bandwidth for streaming kernels. [0-1]
    intra_node_link : float
        Achievable fraction of the scale-up link bandwidth for collectives (NCCL bus bandwidth
        over link peak). [0-1]
    scale_out_link : float
        Achievable fraction of the scale-out NIC bandwidth for collectives. [0-1]
    dp_overlap : float
        Fraction of data-parallel gradient/parameter traffic hidden behind compute: ZeRO-3/FSDP
        gathers and reduce-scatters behind the micro-batch, the per-step gradient all-reduce
        (with hybrid sharding: of the gradient shards across the groups, over DCN) behind the
        last backward. [0-1]
    attention : float
        Fraction of the bf16 dense peak reached by FlashAttention in training. [0-1]
    elementwise_hbm : float
        Fraction of HBM bandwidth reached by training's memory-bound kernels. [0-1]
    tp_overlap : float
        Share of tensor-parallel collectives hidden behind GEMMs when the plan enables TP
        comm overlap (Megatron ``tp_comm_overlap``). [0-1]
    training_log_ratio_q10, training_log_ratio_q90 : float
        10th/90th percentiles of ln(observed/predicted) tokens/s/GPU on the validation rows,
        giving the 80% interval of training estimates.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    # ---- training engine ----------------------------------------------------------------------
    # Defaults fitted ONCE, globally, on the 51 predictable throughput rows of
    # aitco/validation/data/training.csv by aitco.validation.training.fit_efficiency()
    # (scipy.optimize.least_squares minimising the sum of squared ln(observed/predicted)
    # tokens/s/GPU over all rows at once; no per-row or per-model factor). The interval
    # percentiles are those of the leave-one-source-out residuals (validate training --cv group).
    # Fit and residuals: docs/efficiency.md.
    gemm: dict[str, float] = Field(
        default_factory=lambda: {
            # fitted on the training rows of the first release (coordinate descent); kept for
            # the engines that share it (inference, decide); training uses `training_gemm`
            "nvidia-ampere": 0.6186,
            "nvidia-hopper": 0.6118,
            "nvidia-blackwell": 0.6718,
        }
    )
    training_gemm: dict[str, float] = Field(
        default_factory=lambda: {
            "nvidia-ampere": 0.6739,
            "nvidia-hopper": 0.7041,
            "nvidia-blackwell": 0.7714,  # only 3 GB200 FP8 rows: weakly constrained
        },
        description="GEMM fraction of the dense peak in training, per family (fitted with the "
        "other training fields); families absent use `gemm`. A calibration of `gemm` for a "
        "family replaces the entry here too.",
    )
    gemm_share_of_ceiling: float = _frac(
        0.76,
        "GEMM efficiency (`gemm`, inference and decisions) as a share of the accelerator's "
        "measured matmul ceiling, for families without a fitted `gemm` value: the geometric "
        "mean of `gemm[family] / ceiling` over the inference validation rows of fitted families "
        "(derived, not a free parameter).",
    )
    training_gemm_share_of_ceiling: float = _frac(
        0.876,
        "Training GEMM efficiency as a share of the accelerator's measured matmul ceiling "
        "(`Accelerator.matmul_ceiling`, a published GEMM microbenchmark over the dense peak), for "
        "families without a fitted `training_gemm` value: the row-weighted geometric mean of "
        "`training_gemm[family] / ceiling` over the fitted rows (derived after each fit, not a "
        "free parameter).",
    )
    # no training rows for other families: the mean of the three issue-3 values (not fitted itself)
    gemm_default: float = _frac(0.634, "GEMM fraction of dense peak where no family value exists.")
    hbm: float = _frac(0.80, "Fraction of HBM bandwidth achieved by memory-bound kernels.")
    intra_node_link: float = _frac(
        0.8557, "Fraction of scale-up link bandwidth achieved by collectives."
    )
    scale_out_link: float = _frac(0.6475, "Fraction of NIC bandwidth achieved by collectives.")
    dp_overlap: float = Field(default=1.0, ge=0.0, le=1.0, description="Share of DP comm hidden.")
    host_link: float = _frac(
        0.80,
        "Fraction of the raw PCIe x16 rate reached by pinned host<->device copies (ZeRO-Offload "
        "gradient and parameter traffic). Not fitted (no offload row): pinned cudaMemcpy "
        "reaches about 25 of 31.5 GB/s on PCIe 4.0 x16.",
    )
    host_memory: float = _frac(
        0.50,
        "Fraction of the node's peak host-memory bandwidth a vectorised CPU optimizer step "
        "(DeepSpeed CPU-Adam) streams at. Not fitted (no offload row); an assumption.",
    )
    attention: float = _frac(
        0.2928,
        "Fraction of the bf16 dense peak reached by FlashAttention kernels (training) on families "
        "without a fitted `attention_by_family` value (the mean of the fitted ones, not fitted).",
    )
    attention_by_family: dict[str, float] = Field(
        default_factory=lambda: {
            "nvidia-ampere": 0.3982,
            "nvidia-hopper": 0.1961,
            "nvidia-blackwell": 0.2842,  # only 3 GB200 FP8 rows: weakly constrained
        },
        description="FlashAttention fraction of the bf16 dense peak per accelerator family "
        "(kernel generation differs: FlashAttention-2 reaches a larger share of A100's peak than "
        "of H100's); families absent use `attention`.",
    )
    tp_overlap: float = Field(
        default=0.3809,
        ge=0.0,
        le=1.0,
        description="Share of TP collectives hidden behind GEMMs when TP comm overlap is on.",
    )
    tp_overlap_by_family: dict[str, float] = Field(
        default_factory=dict,
        description="`tp_overlap` of accelerator families whose collectives run on other hardware "
        "than the matmuls (TPU: ICI transfers by DMA engines under XLA's async collectives, while "
        "GPU collectives are kernels that take SMs from the GEMMs); fitted only where the family "
        "has rows in the fit, families absent use `tp_overlap`.",
    )
    step_overhead_s: float = Field(
        default=0.0090,
        ge=0.0,
        le=2.0,
        description="Fixed time per optimizer step outside the micro-batches (kernel launches "
        "of the optimizer and gradient clipping, data-loader hand-off, host synchronisation). [s]",
    )
    # Kernel shape laws (aitco.perf.kernels), fitted ONCE to published kernel benchmarks by
    # aitco.validation.kernels (not to end-to-end rows; the end-to-end fit never moves them).
    gemm_tile_fixed_s: float = Field(
        default=KERNEL_FIT_DEFAULTS["gemm_tile_fixed_s"],
        ge=0.0,
        le=1e-4,
        description="Fixed time of one GEMM output tile outside its K loop (pipeline fill, "
        "epilogue, write-back): short-K GEMMs reach `K / (K + K_half)` of a long one, with "
        "`K_half` from this time and the SM's rate (aitco.perf.kernels.gemm_k_half); fitted to "
        "OpenXLA's measured H100 and B200 matmul tables (aitco.validation.kernels). [s]",
    )
    gemm_latency_s: float = Field(
        default=KERNEL_FIT_DEFAULTS["gemm_latency_s"],
        ge=0.0,
        le=1e-3,
        description="Fixed time of one GEMM kernel (launch, the last wave's drain); fitted with "
        "`gemm_tile_fixed_s`. [s]",
    )
    attention_block_fixed_s: dict[str, float] = Field(
        default_factory=lambda: {
            "fa2": KERNEL_FIT_DEFAULTS["attention_block_fixed_s.fa2"],
            "fa3": KERNEL_FIT_DEFAULTS["attention_block_fixed_s.fa3"],
            "cudnn": KERNEL_FIT_DEFAULTS["attention_block_fixed_s.cudnn"],
        },
        description="Fixed time of one FlashAttention query block (load Q, softmax bookkeeping, "
        "write O) per kernel generation (fa2, fa3, cudnn): short sequences reach "
        "`s_k / (s_k + s_half)` of a long one, with `s_half` from this time, the SM's rate and "
        "the head dim (aitco.perf.kernels.attention_seq_half); fitted to the FlashAttention-3 "
        "paper's H100 kernel figures (aitco.validation.kernels). [s]",
    )
    elementwise_hbm: float = _frac(
        0.4991,
        "Fraction of HBM bandwidth reached by training's elementwise, normalisation, loss and "
        "optimizer kernels (many small, partly unfused kernels; weight streaming uses `hbm`).",
    )
    elementwise_hbm_by_kernels: dict[str, float] = Field(
        default_factory=lambda: {
            "fused": KERNEL_FIT_DEFAULTS["elementwise_hbm.fused"],
            "eager": KERNEL_FIT_DEFAULTS["elementwise_hbm.eager"],
        },
        description="Fraction of HBM bandwidth reached on the ideal bytes by training's "
        "elementwise kernels of another style than the frameworks `elementwise_hbm` was fitted "
        "on: `fused` (hand-written one-pass kernels) and `eager` (PyTorch / Hugging Face "
        "modules op by op); geometric means over Liger-Kernel's published A100/H100 "
        "normalisation and activation benchmarks (aitco.validation.kernels.fit_elementwise).",
    )
    training_log_ratio_q10: float = Field(
        default=-0.1234,
        description="10th percentile of ln(observed/predicted) tokens/s/GPU, leave-one-source-out "
        "cross-validated on every bundled validation row (new sources included).",
    )
    training_log_ratio_q90: float = Field(
        default=0.1822,
        description="90th percentile of ln(observed/predicted) tokens/s/GPU, leave-one-source-out "
        "cross-validated on every bundled validation row (new sources included).",
    )

    # ---- inference engine ---------------------------------------------------------------------
    serving_overhead_s: float = Field(
        default=0.004,
        ge=0.0,
        le=0.1,
        description="Per-iteration serving-engine overhead (scheduling, sampling, kernel launches "
        "not hidden by CUDA graphs) added to every forward pass. [s]",
    )
    serving_overhead_by_engine: dict[str, float] = Field(
        default_factory=lambda: {"trtllm": 0.0},
        description="Per-iteration host overhead by serving engine (C++ executor vs Python "
        "scheduler), like gemm by family; engines absent use serving_overhead_s. [s]",
    )
    serving_layer_overhead_s: float = Field(
        default=7.5e-05,
        ge=0.0,
        le=0.001,
        description="Per-layer per-iteration gap between kernels (launch/tail latency of the ~10 "
        "kernels of a layer, even under CUDA graphs); scales with depth. [s]",
    )
    decode_hbm: float = _frac(
        0.95,
        "Fraction of HBM bandwidth reached by inference weight streaming and paged-attention KV "
        "reads (GEMV/GEMM at small M, XQA/paged attention kernels).",
    )
    roofline_p: float = Field(
        default=2.0,
        ge=1.0,
        description="Exponent of the smooth roofline of the linear layers, t = (C^p + M^p)^(1/p): "
        "large = plain max(C, M); small = compute and weight streaming overlap poorly near the "
        "ridge point (GEMMs with M of a few hundred tokens).",
    )
    inference_throughput_log_ratio_q10: float = Field(
        default=-0.078,
        description="10th percentile of ln(observed/predicted) offline throughput on the "
        "inference validation rows (interval of aitco infer).",
    )
    inference_throughput_log_ratio_q90: float = Field(
        default=0.09,
        description="90th percentile of ln(observed/predicted) offline throughput.",
    )
    inference_latency_log_ratio_q10: float = Field(
        default=-0.163,
        description="10th percentile of ln(observed/predicted) TTFT/TPOT on the validation rows.",
    )
    inference_latency_log_ratio_q90: float = Field(
        default=0.951,
        description="90th percentile of ln(observed/predicted) TTFT/TPOT on the validation rows.",
    )
    prefill_attention: float = _frac(
        0.7,
        "Fraction of the 16-bit dense peak reached by forward-only (inference) FlashAttention "
        "kernels on prompt tokens; the training field 'attention' covers forward+backward.",
    )
    serving_overhead_per_seq_s: float = Field(
        default=0.0,
        ge=0.0,
        le=0.001,
        description="Per-sequence per-iteration host overhead (sampling, detokenisation, scheduler "
        "bookkeeping in the serving loop). [s]",
    )
    request_path_s: float = Field(
        default=0.0,
        ge=0.0,
        le=0.5,
        description="Latency a request spends outside the GPU iterations before its first token "
        "reaches the client (API server or benchmark harness, tokenisation, hand-off to the "
        "engine loop, detokenisation and streaming of the first token); adds to TTFT and "
        "end-to-end latency, never occupies the GPU. Engines absent from "
        "request_path_by_engine use this value (0: TensorRT-LLM's C++ executor and unnamed "
        "stacks are not fitted). [s]",
    )
    request_path_by_engine: dict[str, float] = Field(
        default_factory=lambda: {"vllm": 0.015, "sglang": 0.0025},
        description="Request path (request_path_s) by serving engine, fitted globally on the "
        "load rows of the inference validation: vLLM's Python OpenAI-compatible server "
        "tokenises, schedules and detokenises in its API process (tens of ms), SGLang runs "
        "its tokenizer and detokenizer in separate processes (a few ms). [s]",
    )
    lowp_gemm_scale: float = Field(
        default=0.9,
        ge=0.3,
        le=1.0,
        description="Factor on the GEMM efficiency per halving of the operand width below 16 bit "
        "(fp8/int8: x s, fp4: x s^2). [0-1]",
    )

    def serving_overhead_for(self, engine: str | None) -> float:
        """Per-iteration serving overhead of an engine (``serving_overhead_s`` if not fitted)."""
        if engine is None:
            return self.serving_overhead_s
        return self.serving_overhead_by_engine.get(engine, self.serving_overhead_s)

    def request_path_for(self, engine: str | None) -> float:
        """Request path of an engine. [s].

        The engine's fitted value; a versioned engine without one (``vllm-v1``) takes its
        stack's (``vllm``: the same OpenAI-compatible API server tokenises and detokenises in
        front of either engine core); ``request_path_s`` when neither is fitted.
        """
        if engine is None:
            return self.request_path_s
        for key in (engine, engine.split("-", 1)[0]):
            if key in self.request_path_by_engine:
                return self.request_path_by_engine[key]
        return self.request_path_s

    def attention_for(self, family: str) -> float:
        """Training FlashAttention fraction of an accelerator family."""
        return self.attention_by_family.get(family, self.attention)

    def attention_block_fixed_for(self, family: str) -> float:
        """``attention_block_fixed_s`` of the FlashAttention kernel ``family`` runs [s]."""
        kernel = flash_kernel_for(family)
        return self.attention_block_fixed_s.get(kernel, self.attention_block_fixed_s["fa2"])

    def elementwise_hbm_for(self, kernels: str) -> float:
        """Fraction of HBM bandwidth of training's elementwise kernels of a style.

        ``kernels`` is one of :data:`ELEMENTWISE_KERNELS`; ``framework`` (or any other) gives
        ``elementwise_hbm``.
        """
        return self.elementwise_hbm_by_kernels.get(kernels, self.elementwise_hbm)

    def tp_overlap_for(self, family: str) -> float:
        """Share of TP collectives hidden when TP comm overlap is on, for an accelerator family."""
        return self.tp_overlap_by_family.get(family, self.tp_overlap)

    def training_gemm_for(self, family: str, matmul_ceiling: float | None = None) -> float:
        """GEMM efficiency (fraction of the dense peak) of an accelerator in training.

        The family's fitted ``training_gemm`` value, else its shared (fitted or calibrated)
        ``gemm`` value; for a family with neither, the accelerator's measured matmul ceiling
        times ``training_gemm_share_of_ceiling`` when a ceiling is given, else ``gemm_default``.
        """
        return self._training_gemm(family, matmul_ceiling)[0]

    def training_gemm_basis(self, family: str, matmul_ceiling: float | None = None) -> str:
        """Say where :meth:`training_gemm_for` takes its value from (for ``--explain``)."""
        return self._training_gemm(family, matmul_ceiling)[1]

    def _training_gemm(self, family: str, matmul_ceiling: float | None) -> tuple[float, str]:
        """Apply the rule of :meth:`training_gemm_for`; return (value, where it came from)."""
        if family in self.training_gemm:
            return self.training_gemm[family], f"fitted training_gemm[{family}]"
        if family in self.gemm:
            return self.gemm[family], f"gemm[{family}] (fitted or calibrated)"
        if matmul_ceiling is not None:
            share = self.training_gemm_share_of_ceiling
            return matmul_ceiling * share, (
                f"measured matmul ceiling {matmul_ceiling:.3f} of peak x "
                f"training_gemm_share_of_ceiling {share:.3f}"
            )
        return self.gemm_default, "gemm_default (no fitted value, no measured matmul rate)"

    def training_gemm_at(
        self, level: str, family: str, matmul_ceiling: float | None = None
    ) -> tuple[float, str]:
        """GEMM fraction of a training stack at a :data:`GEMM_LEVELS` level, and its basis.

        ``framework``: :meth:`training_gemm_for`. ``ceiling``: the measured matmul ceiling
        (never below the framework level); without a measured ceiling, the framework level.
        """
        value, basis = self._training_gemm(family, matmul_ceiling)
        if level != "ceiling":
            return value, basis
        if matmul_ceiling is None:
            return value, f"{basis} (no measured matmul ceiling for gemm_level ceiling)"
        if matmul_ceiling < value:
            return value, f"{basis} (above the measured matmul ceiling {matmul_ceiling:.3f})"
        return matmul_ceiling, f"measured matmul ceiling {matmul_ceiling:.3f} (gemm_level ceiling)"

    def gemm_for(self, family: str, matmul_ceiling: float | None = None) -> float:
        """GEMM efficiency (fraction of the dense peak) of an accelerator family.

        The family's fitted ``gemm`` value; for a family without one, the accelerator's
        measured matmul ceiling times ``gemm_share_of_ceiling`` when a ceiling is given, else
        ``gemm_default``.
        """
        if family in self.gemm:
            return self.gemm[family]
        if matmul_ceiling is not None:
            return matmul_ceiling * self.gemm_share_of_ceiling
        return self.gemm_default

    def with_overrides(self, overrides: dict[str, Any]) -> EfficiencyParams:
        """Return a copy with some parameters replaced (validated); per-family dicts merge."""
        data = self.model_dump()
        changed: dict[str, set[str]] = {"gemm": set(), "training_gemm": set()}
        for k, v in overrides.items():
            if k in (
                "gemm",
                "training_gemm",
                "attention_by_family",
                "tp_overlap_by_family",
                "request_path_by_engine",
            ) and isinstance(v, dict):
                if k in changed:
                    changed[k] |= {f for f, x in v.items() if data[k].get(f) != x}
                data[k] = {**data[k], **v}
            else:
                data[k] = v
        # a changed (calibrated) GEMM fraction holds for training too, unless the training value
        # was itself changed in the same call
        drop = changed["gemm"] - changed["training_gemm"]
        data["training_gemm"] = {f: x for f, x in data["training_gemm"].items() if f not in drop}
        return EfficiencyParams.model_validate(data)


def share_of_ceiling(pairs: Iterable[tuple[float, float | None]]) -> float | None:
    """Geometric mean of ``fitted / ceiling`` over ``(fitted, ceiling)`` pairs with a ceiling.

    How much of its measured matmul ceiling a fitted GEMM fraction reaches, one pair per
    validation row: the derivation of ``training_gemm_share_of_ceiling`` and
    ``gemm_share_of_ceiling``. ``None`` when no pair has a ceiling.
    """
    logs = [math.log(fitted / ceiling) for fitted, ceiling in pairs if ceiling]
    return math.exp(sum(logs) / len(logs)) if logs else None


#: The globally fitted defaults (see docs/efficiency.md).
DEFAULT_EFFICIENCY = EfficiencyParams()

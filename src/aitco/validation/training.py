"""Predict every row of a training ground-truth CSV and tabulate the errors.

Each row is predicted from the hardware specs (catalog), the architecture and the published
layout only, with the global efficiency parameters; nothing from the row's measured outcome
enters the prediction. Rows that cannot be predicted (no device count, no batch, unmapped
hardware) are reported as skipped with the reason, never dropped.

The published throughput is compared as tokens/s per GPU. Where a source reports TFLOP/s per
GPU instead, it is converted to tokens/s with **that source's own FLOP convention** (see
:func:`reference_flops_per_token`), not with aitco's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.optimize import least_squares

from aitco.catalog.loader import Catalog, load_catalog
from aitco.catalog.schema import ModelArch
from aitco.decide.practice import PRACTICE_SIZE_FACTOR as PRACTICE_SIZE_FACTOR  # re-export
from aitco.decide.practice import PublishedRun, practice_for
from aitco.decide.practice import published_practice as published_practice  # re-export
from aitco.errors import AitcoError, InputError
from aitco.fileio import check_input_file
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams, share_of_ceiling
from aitco.perf.flops import model_shape, training_flops_per_token
from aitco.perf.params import param_counts
from aitco.perf.training import TrainingResult, default_global_batch, estimate_training
from aitco.units import TERA

DATA_CSV = Path(__file__).parent / "data" / "training.csv"
#: Published runs from sources that are not in the shared ground truth (read with ``DATA_CSV``
#: by default; ``data/README.md`` lists them). Their rows were never used to set the defaults.
NEW_SOURCES_CSV = Path(__file__).parent / "data" / "training_new_sources.csv"
#: Row sets of the bundled data: every row, the ground-truth copy the defaults were fitted on,
#: or the rows of the new sources only.
ROW_SETS = ("all", "fitted", "new")

#: Run scopes whose throughput is the model's target (README of the ground truth, caveat 2).
THROUGHPUT_SCOPES = ("throughput_benchmark", "production_run_segment")

#: Hardware strings of the ground truth -> catalog accelerator (or system) id, first match wins.
#: Selene and DGX A100 rows are the 80 GB SXM part (ground-truth README caveat 6).
HARDWARE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\ba3 \(h100|a3-highgpu", "gcp-a3-highgpu-8g"),  # GCP A3 VM (a system id)
    (r"gb200", "gb200"),
    (r"b200", "b200"),
    (r"h800", "h800-sxm5-80gb"),
    (r"h200", "h200-sxm-141gb"),
    (r"h100 \([^)]*hbm2e", "h100-sxm5-94gb-hbm2e"),  # torchtitan's Grand Teton part
    (r"h100", "h100-sxm5-80gb"),
    (r"a100-40", "a100-sxm4-40gb"),
    (r"a100", "a100-sxm4-80gb"),
    (r"v100", "v100-sxm2-32gb"),
    (r"tpu v4|tpu-v4", "tpu-v4"),
    (r"tpu v5p|tpu-v5p", "tpu-v5p"),
    (r"tpu v5e|tpu-v5e", "tpu-v5e"),
    (r"tpu v6e|tpu-v6e|trillium", "tpu-v6e"),
    (r"mi325x", "mi325x"),
    (r"mi300x", "mi300x"),
    (r"gaudi2", "gaudi2"),
    (r"gaudi3", "gaudi3"),
)

#: Attention of the Megatron-LM 2021 / Megatron-DeepSpeed runs (MT-NLG, ZeRO-3 comparison):
#: unfused QK^T, scale-mask-softmax, dropout and PV (``aitco.perf.training.ATTENTION_KERNELS``).
PRE_FLASH_ATTENTION_KERNEL = "unfused"

#: arXiv id of FlashAttention (T. Dao et al., 2205.14135, May 2022). A run whose source is an
#: arXiv paper submitted before it cannot have used it: its attention is predicted with the
#: unfused kernel (a stated fact of the software then, not a per-row factor).
FLASH_ATTENTION_ARXIV_ID = "2205.14135"


#: Training stacks whose loss kernel, step loop and elementwise kernels the row's framework
#: names, as stated facts of the software (as the attention kernel above; not per-row factors):
#:
#: - llm.c computes softmax, loss and the logits' gradient in one kernel over its 16-bit logits
#:   (``fused_classifier`` in ``train_gpt2.cu``), runs its step loop in C (no Python host time
#:   per step), writes its layernorm, residual and GELU as hand-fused CUDA kernels and calls
#:   cuBLASLt for its matmuls back to back from C, the bias in the GEMM epilogue
#:   (``matmul_cublaslt``, "Wrapper around cublasLtMatmul", in ``llmc/matmul.cuh``): its
#:   GEMMs are priced at the measured matmul ceiling (``gemm_level`` ``ceiling``), not at the
#:   framework level fitted end to end;
#: - TinyLlama ("lit-gpt based (flash-attn 2, fused kernels)"): its README, the row's source,
#:   lists "fused layernorm, fused swiglu, fused cross entropy loss, fused rotary positional
#:   embedding" (``jzhang38/TinyLlama`` README, "Blazingly Fast"); its loop is Python
#:   (Lightning Fabric).
STACK_OPTIONS: tuple[tuple[str, dict[str, str]], ...] = (
    (
        "llm.c",
        {
            "loss_kernel": "fused",
            "host_loop": "native",
            "elementwise_kernels": "fused",
            "gemm_level": "ceiling",
        },
    ),
    ("fused kernels", {"loss_kernel": "fused", "elementwise_kernels": "fused"}),
)


def stack_options_of(row: pd.Series) -> dict[str, str]:
    """Plan options (loss kernel, step loop, elementwise kernels) of a row's named stack."""
    fw = str(row.get("framework", ""))
    for name, opts in STACK_OPTIONS:
        if name in fw:
            return dict(opts)
    return {}


def attention_kernel_of(row: pd.Series) -> str:
    """Attention kernel of a row: unfused for runs described before FlashAttention existed.

    Megatron-LM 2021 and Megatron-DeepSpeed / ZeRO-3 rows (by framework), and rows whose source
    is an arXiv paper older than :data:`FLASH_ATTENTION_ARXIV_ID`, get
    :data:`PRE_FLASH_ATTENTION_KERNEL`; all others FlashAttention.
    """
    fw = str(row.get("framework", ""))
    label = str(row["model"])
    megatron_2021 = "Megatron-LM" in fw and ("2021" in label or "Table 2" in label)
    if megatron_2021 or "Megatron-DeepSpeed" in fw or "ZeRO-3" in fw:
        return PRE_FLASH_ATTENTION_KERNEL
    m = re.search(r"arXiv[: ]*(\d{4}\.\d{4,5})", str(row.get("source", "")), re.IGNORECASE)

    def arxiv_order(arxiv_id: str) -> tuple[int, ...]:
        return tuple(int(x) for x in arxiv_id.split("."))

    if m and arxiv_order(m.group(1)) < arxiv_order(FLASH_ATTENTION_ARXIV_ID):
        return PRE_FLASH_ATTENTION_KERNEL
    return "flash"


#: Megatron-LM 2021 (Narayanan et al., Table 1) head counts by hidden size; vocab 51,200.
MEGATRON_2021_HEADS = {2304: 24, 3072: 32, 4096: 32, 6144: 48, 8192: 64, 10240: 80, 12288: 96,
                       16384: 128, 20480: 128, 25600: 160}  # fmt: skip
MEGATRON_VOCAB = 51200
MEGATRON_CORE_VOCAB = 131072  # row notes of T064-T073

#: Row model names -> architecture keys (their catalog ids in :data:`CATALOG_ALIASES`).
MODEL_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"llama 3\.1 405b", "llama-3.1-405b"),
    (r"llama 3(\.1)? 70b", "llama-3-70b"),
    (r"nemotron-4 340b", "nemotron-4-340b"),
    (r"deepseek-v3", "deepseek-v3"),
    (r"megatron-turing nlg 530b", "mt-nlg-530b"),
    (r"llama 3\.1 8b", "llama-3.1-8b"),
    (r"llama 3 8b", "llama-3-8b"),
    (r"llama 2 7b", "llama-2-7b"),
    (r"llama 2 13b", "llama-2-13b"),
    (r"llama 2 70b", "llama-2-70b"),
)

#: Catalog ids of each architecture key, first found wins (catalog/data/models/*.yaml, sourced).
CATALOG_ALIASES: dict[str, tuple[str, ...]] = {
    "llama-3.1-405b": ("llama-3.1-405b",),
    "llama-3-70b": ("llama-3-70b", "llama-3.1-70b"),
    "nemotron-4-340b": ("nemotron-4-340b",),
    "deepseek-v3": ("deepseek-v3",),
    "mt-nlg-530b": ("mt-nlg-530b",),
    "llama-3.1-8b": ("llama-3.1-8b", "llama-3-8b"),
    "llama-3-8b": ("llama-3-8b", "llama-3.1-8b"),
    "llama-2-7b": ("llama-2-7b",),
    "llama-2-13b": ("llama-2-13b",),
    "llama-2-70b": ("llama-2-70b",),
}
#: A row whose model text names ``catalog <id>`` (e.g. the MaxText synthetic models) uses that
#: catalog entry.
CATALOG_ID_IN_NAME = re.compile(r"\bcatalog ([a-z0-9][a-z0-9.\-]*[a-z0-9])")

#: Catalog ids of the llm-foundry pretraining YAMLs, tried in order for a row named ``mpt-<size>``
#: (``{size}`` is the row's size label; catalog/data/models/mosaicml.yaml).
MPT_CATALOG_IDS = ("mpt-{size}-foundry", "mpt-{size}")

#: GPT-3 shaped models named by size in the Megatron rows without layers/hidden in the row.
GPT_BY_SIZE = {"175b": (96, 12288), "177b": (96, 12288), "530b": (105, 20480)}
#: Pre-training sequence length assumed when a full-run row gives none (the catalog's
#: ``max_seq_len`` is often the long-context extension, not the main pre-training stage).
DEFAULT_RUN_SEQ_LEN = 4096


class SkipRow(Exception):
    """A row that cannot be predicted; the message says why."""


@dataclass
class Case:
    """Everything needed to predict one row (all from specs and the published layout)."""

    row_id: str
    model: ModelArch
    accelerator: str
    gpus: int
    seq_len: int
    global_batch: int
    precision: str
    plan: dict[str, Any]
    target: str  # "tokens_per_s_per_gpu" or "tflops_per_gpu"
    observed: float
    flop_basis: str  # "mfu" or "hfu" when the target is TFLOP/s
    scope: str
    label: str
    notes: list[str] = field(default_factory=list)
    tokens: float | None = None  # full runs: tokens trained
    group: str = ""  # source group (:func:`source_group`), for cross-validation
    attention_kernel: str = "flash"


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def map_hardware(text: str) -> str:
    """Catalog accelerator id of a ground-truth hardware string (SkipRow if unknown)."""
    t = str(text).lower()
    for pat, acc in HARDWARE_PATTERNS:
        if re.search(pat, t):
            return acc
    raise SkipRow(f"hardware {text!r} has no catalog accelerator mapping")


def _gpt(
    name: str, layers: int, hidden: int, vocab: int, seq: int, heads: int | None = None
) -> ModelArch:
    return ModelArch(
        id=name, n_layers=layers, d_model=hidden,
        n_heads=heads or MEGATRON_2021_HEADS.get(hidden, hidden // 128),
        d_ff=4 * hidden, vocab_size=vocab, max_seq_len=seq, ffn_type="gelu", norm="layernorm",
        position_embedding="learned", attention_bias=True, mlp_bias=True,
    )  # fmt: skip


def row_model(row: pd.Series, catalog: Catalog | None) -> tuple[ModelArch, str]:
    """Return the architecture of a row and its origin (catalog, known table, or row dims)."""
    name = str(row["model"])
    low = name.lower()
    seq = int(_num(row.get("seq_len")) or 2048)
    named = CATALOG_ID_IN_NAME.search(low)
    if named:
        cid = named.group(1)
        if catalog is None or cid not in catalog.models:
            raise SkipRow(f"model {name!r} names catalog id {cid!r}, which the catalog lacks")
        return catalog.models[cid], f"catalog:{cid}"
    for pat, key in MODEL_PATTERNS:
        if re.search(pat, low):
            for cid in CATALOG_ALIASES.get(key, ()):
                if catalog is not None and cid in catalog.models:
                    return catalog.models[cid], f"catalog:{cid}"
            raise SkipRow(f"model {key!r} is not in the catalog (ids {CATALOG_ALIASES.get(key)})")
    m = re.search(r"mpt-(\d+[mb])", low)
    if m and catalog is not None:
        for cid in (t.format(size=m.group(1)) for t in MPT_CATALOG_IDS):
            if cid in catalog.models:
                # the learned position table is sized to the run's sequence (llm-foundry sets
                # max_seq_len per run), so the row's seq_len replaces the YAML default
                arch = catalog.models[cid].model_copy(update={"max_seq_len": seq})
                return arch, f"catalog:{cid} (max_seq_len = row seq_len)"
    layers, hidden = _num(row.get("layers")), _num(row.get("hidden_size"))
    vocab = (
        MEGATRON_CORE_VOCAB
        if "megatron-core" in low or "h100" in str(row["hardware"]).lower()
        else MEGATRON_VOCAB
    )
    if layers and hidden:
        heads = None
        hm = re.search(r"(\d+) heads", str(row.get("notes", "")))
        if hm:
            heads = int(hm.group(1))
        return _gpt(
            f"gpt-{layers:.0f}l-{hidden:.0f}h", int(layers), int(hidden), vocab, seq, heads
        ), "row layers/hidden_size (GPT)"
    for size, (L, h) in GPT_BY_SIZE.items():
        if re.search(rf"\b{size}\b", low) and "gpt" in low:
            return _gpt(f"gpt-{size}", L, h, vocab, seq), f"GPT-3 shape for {size}"
    raise SkipRow(f"no architecture for model {name!r} (not in catalog, no layers/hidden_size)")


def parse_plan(text: Any, gpus: int) -> dict[str, Any]:
    """Parallel layout from the row's ``parallelism`` text (empty dict: search it)."""
    t = "" if text is None or (isinstance(text, float) and math.isnan(text)) else str(text)
    plan: dict[str, Any] = {}
    pats = (("tp", r"\bTP(\d+)"), ("pp", r"\bPP(\d+)"), ("cp", r"\bCP(\d+)"),
            ("dp", r"\bDP=?(\d+)"), ("ep", r"\bEP(\d+)"), ("vp", r"\bVP(\d+)"))  # fmt: skip
    for key, pat in pats:
        m = re.search(pat, t)
        if m:
            plan[key] = int(m.group(1))
    m = re.search(r"model-parallel size (\d+)", t)
    if m:  # Megatron 2021: TP fills the node (<= 8), PP takes the rest
        mp = int(m.group(1))
        plan["tp"] = min(8, mp)
        plan["pp"] = mp // plan["tp"]
    m = re.search(r"micro-batch (\d+)", t)
    if m:
        plan["micro_batch"] = int(m.group(1))
    if "ZeRO-3" in t or "FSDP" in t:
        plan["zero"] = 3
        plan["fsdp"] = "FSDP" in t
    m = re.search(r"ZeRO stage (\d)", t)
    if m:
        plan["zero"] = int(m.group(1))
    if "activation checkpointing=True" in t:
        plan["recompute"] = "full"
    elif "activation checkpointing=False" in t:
        plan["recompute"] = "none"
    elif "selective recompute" in t:
        plan["recompute"] = "selective"
    if (
        plan
        and not any(k in plan for k in ("tp", "pp", "cp", "dp", "ep"))
        and plan.get("zero") == 3
    ):
        plan["dp"] = gpus  # FSDP / ZeRO-3 alone: pure data parallel
    if plan.get("dp") is not None and plan.get("ep"):
        plan["dp"] = plan["dp"]
    return plan


#: Multi-slice TPU runs: "<slices>x <generation>-<size>" in the row's model label (MaxText tables).
SLICES_IN_LABEL = re.compile(r"\b(\d+)x v\d+[a-z]*-\d+\b")
#: Hybrid sharding stated in the parallelism text: data parallelism over DCN across N groups.
DCN_DATA_PARALLELISM = re.compile(r"dcn_data_parallelism (\d+)")


def hybrid_shard_devices(row: pd.Series, gpus: int) -> int | None:
    """Devices of one hybrid-sharding group (a TPU slice, a VM), ``None`` when not stated.

    MaxText runs FSDP over ICI inside a slice (or NVLink inside an A3 VM) and plain data
    parallelism over DCN across slices/VMs: ``dcn_data_parallelism N`` in the parallelism text,
    or ``<N>x v5e-256``-style slice counts in the label, give the N groups of ``gpus / N``.
    """
    text = str(row.get("parallelism", ""))
    if "FSDP" not in text:
        return None
    m = DCN_DATA_PARALLELISM.search(text) or SLICES_IN_LABEL.search(str(row.get("model", "")))
    if not m or gpus % int(m.group(1)):
        return None
    return gpus // int(m.group(1))


def parse_precision(text: Any) -> str:
    """Training data type of a row (bf16 when not stated)."""
    t = str(text).lower()
    return "fp8" if "fp8" in t else ("fp16" if "fp16" in t and "bf16" not in t else "bf16")


def reference_flops_per_token(model: ModelArch, seq_len: int, basis: str) -> float:
    """FLOPs per token in the convention of Megatron/PaLM-style TFLOP/s reports [FLOP].

    Notes
    -----
    MFU basis: :math:`6 (N_{ne} + V h) + 12 L h s` (Narayanan et al. 2021 eq. 3 without
    recomputation; PaLM App. B; non-causal attention). HFU basis (Megatron 2021 "TFLOP/s
    including recomputation"): :math:`8 N_{ne} + 6 V h + 16 L h s`.
    """
    pc = param_counts(model)
    n_ne = pc.non_embedding if model.moe is None else pc.active - pc.embedding - pc.lm_head
    vh = model.vocab_size * model.d_model
    lhs = model.n_layers * model.d_model * seq_len
    if basis == "hfu":
        return 8 * n_ne + 6 * vh + 16 * lhs
    return 6 * (n_ne + vh) + 12 * lhs


#: Full-run model names -> catalog id candidates (tried in order; the catalog is the source).
RUN_MODEL_IDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"gpt-2 1558m", ("gpt2-1.5b",)),
    (r"gpt-2 350m", ("gpt2-350m",)),
    (r"gpt-2 124m", ("gpt2-124m",)),
    (r"gpt-3 175b", ("gpt3-175b",)),
    (r"llama-1 (\d+)b", ("llama-1-{0}b",)),
    (r"llama (\d(?:\.\d)?) (\d+)b", ("llama-{0}-{1}b",)),
    (r"opt-175b", ("opt-175b",)),
    (r"palm 540b", ("palm-540b",)),
    (r"tinyllama 1\.1b", ("tinyllama-1.1b",)),
    (r"mpt-(\d+(?:\.\d+)?)b", ("mpt-{0}b",)),
    (r"falcon-(\d+)b", ("falcon-{0}b",)),
    (r"deepseek-v3", ("deepseek-v3",)),
    (r"bloom", ("bloom-176b",)),
)


def run_model(row: pd.Series, catalog: Catalog | None) -> tuple[ModelArch, str]:
    """Architecture of a full-run row from the catalog (SkipRow if the catalog lacks it)."""
    low = str(row["model"]).lower()
    for pat, ids in RUN_MODEL_IDS:
        m = re.search(pat, low)
        if m:
            for cid in ids:
                key = cid.format(*m.groups())
                if catalog is not None and key in catalog.models:
                    return catalog.models[key], f"catalog:{key}"
    return row_model(row, catalog)


def run_case(row: pd.Series, catalog: Catalog | None, assumed_gpus: int | None = None) -> Case:
    """Case of a full run: ideal GPU-hours (or wall clock) for the published token count.

    The prediction is the throughput model alone (no failures, restarts, evaluation or
    checkpoint stalls), so it should come out *below* the published GPU-hours; the ratio is
    the run's implied goodput. A row without its cluster size is skipped, or, with
    ``assumed_gpus`` (``aitco validate tco``), predicted on that many devices (a note says so).
    """
    rid = str(row["id"])
    gpus = _num(row.get("num_accelerators"))
    notes = []
    if not gpus:
        if assumed_gpus is None:
            raise SkipRow("num_accelerators not given")
        gpus = float(assumed_gpus)
        notes.append(f"gpus assumed {assumed_gpus}")
    tokens = _num(row.get("training_tokens"))
    if not tokens:
        raise SkipRow("training_tokens not given")
    gpu_h = _num(row.get("gpu_hours"))
    wall_h = _num(row.get("wall_clock_hours"))
    if not gpu_h and not wall_h:
        raise SkipRow("neither gpu_hours nor wall_clock_hours given")
    acc = map_hardware(row["hardware"])
    model, src = run_model(row, catalog)
    seq = int(_num(row.get("seq_len")) or min(model.max_seq_len, DEFAULT_RUN_SEQ_LEN))
    if not _num(row.get("seq_len")):
        notes.append(f"seq_len assumed {seq}")
    gbt = _num(row.get("global_batch_tokens"))
    if not gbt:
        notes.append("batch: the `aitco train` default rule")
    # without a published batch: the one `aitco train` uses (published practice by size and GPUs)
    gb = (
        max(1, round(gbt / seq))
        if gbt
        else default_global_batch(param_counts(model).active, int(gpus), seq, tokens)
    )
    plan = parse_plan(row.get("parallelism"), int(gpus))
    plan = {k: v for k, v in plan.items() if k in ("zero", "fsdp", "micro_batch", "recompute")}
    plan.update(stack_options_of(row))
    target, obs = ("gpu_hours", gpu_h) if gpu_h else ("wall_clock_h", wall_h)
    return Case(
        rid, model, acc, int(gpus), seq, gb,
        parse_precision(row.get("precision")), plan, target, float(obs or 0.0), "mfu",
        str(row["run_scope"]), str(row["model"]), [f"arch: {src}", *notes], tokens,
        source_group(row.get("source")), attention_kernel_of(row),
    )  # fmt: skip


def row_case(row: pd.Series, catalog: Catalog | None) -> Case:
    """Build the prediction case of one row (SkipRow with the reason when impossible)."""
    if str(row["run_scope"]) not in THROUGHPUT_SCOPES:
        return run_case(row, catalog)
    rid = str(row["id"])
    gpus = _num(row.get("num_accelerators"))
    if not gpus:
        raise SkipRow("num_accelerators not given")
    seq = _num(row.get("seq_len"))
    if not seq:
        raise SkipRow("seq_len not given")
    gbt = _num(row.get("global_batch_tokens"))
    if not gbt:
        raise SkipRow("global_batch_tokens not given")
    acc = map_hardware(row["hardware"])
    model, src = row_model(row, catalog)
    gb = max(1, round(gbt / seq))
    plan = parse_plan(row.get("parallelism"), int(gpus))
    shard = hybrid_shard_devices(row, int(gpus))
    if shard is not None:
        plan["shard_devices"] = shard
    plan.update(stack_options_of(row))
    fw = str(row.get("framework", ""))
    basis = "mfu"
    label = str(row["model"])
    megatron_2021 = "Megatron-LM" in fw and ("2021" in label or "Table 2" in label)
    attention = attention_kernel_of(row)
    if megatron_2021 or "Megatron-DeepSpeed" in fw or "ZeRO-3" in fw:
        basis = "hfu"  # TFLOP/s counting recomputation (row notes)
        plan.setdefault("recompute", "full")  # Megatron 2021 runs recomputed activations
    if re.search(r"\bTP\b[^;.]*overlap", str(row.get("notes", ""))):
        plan["tp_comm_overlap"] = True  # the source states TP comm overlap was on
    tok = _num(row.get("tokens_per_s_per_gpu"))
    tfl = _num(row.get("tflops_per_gpu"))
    if tok:
        target, obs = "tokens_per_s_per_gpu", tok
    elif tfl:
        target, obs = "tflops_per_gpu", tfl
    else:
        raise SkipRow("neither tokens_per_s_per_gpu nor tflops_per_gpu given")
    return Case(
        rid, model, acc, int(gpus), int(seq), gb, parse_precision(row.get("precision")), plan,
        target, obs, basis, str(row["run_scope"]), label, [f"arch: {src}"], None,
        source_group(row.get("source")), attention,
    )  # fmt: skip


@dataclass
class RowResult:
    """Prediction and error of one row (or the reason it was skipped)."""

    row_id: str
    label: str
    scope: str
    target: str = ""
    observed: float = float("nan")
    predicted: float = float("nan")
    ape: float = float("nan")
    log_ratio: float = float("nan")
    plan: str = ""
    fits: bool | None = None
    skipped: str = ""
    dominant: str = ""
    source_group: str = ""


def estimate_case(case: Case, catalog: Catalog, eff: EfficiencyParams) -> TrainingResult:
    """Estimate a case: the one prediction `validate training` and `validate tco` compare.

    Full runs (no stated layout) get the plan `aitco train` reports for them.
    """
    acc, system = catalog.hardware(case.accelerator)
    precision = case.precision
    if not acc.supports(precision) and acc.supports("fp16"):
        precision = "fp16"  # e.g. V100: mixed precision in fp16 (no bf16)
    # a full run states no layout: it is priced with the plan `aitco train` and `compare` choose
    # (within the interval of the fastest, nearest to published layouts of similar runs), so the
    # full-run error is that of the figure a user gets; throughput rows keep their stated plans
    practice = (
        practice_for(
            param_counts(case.model).total, acc.family, precision, case.model.moe is not None
        )
        if case.scope not in THROUGHPUT_SCOPES
        else None
    )
    return estimate_training(
        case.model, acc, system, case.gpus, seq_len=case.seq_len, global_batch=case.global_batch,
        precision=precision, plan=case.plan, efficiency=eff, tokens=case.tokens,
        attention_kernel=case.attention_kernel, practice=practice,
        speed_of_infeasible=True,  # the run happened: its speed, with the memory verdict beside
    )  # fmt: skip


def predict_case(case: Case, catalog: Catalog, eff: EfficiencyParams) -> RowResult:
    """Predict a case and compare it with the published figure."""
    res = estimate_case(case, catalog, eff)
    tps = res.values["tokens_per_s_per_gpu"]
    if case.target == "tokens_per_s_per_gpu":
        pred = tps
    elif case.target in ("gpu_hours", "wall_clock_h"):
        pred = res.values[case.target]
    else:
        pred = tps * reference_flops_per_token(case.model, case.seq_len, case.flop_basis) / TERA
    p = res.values["plan"]
    plan_s = (
        f"tp{p['tp']} pp{p['pp']} cp{p['cp']} ep{p['ep']} dp{p['dp']} z{p['zero']} "
        f"mb{p['micro_batch']} {p['recompute']}"
        + (f"@{p['recompute_fraction']:g}" if p["recompute_fraction"] < 1 else "")
        + (f" vp{p['vp']}" if p["vp"] > 1 else "")
    )
    dom = max(res.time_terms_s.items(), key=lambda kv: kv[1])[0]
    return RowResult(
        case.row_id, case.label, case.scope, case.target, case.observed, pred,
        abs(pred - case.observed) / case.observed, math.log(case.observed / pred), plan_s,
        bool(res.values["fits"]), "", dom, case.group,
    )  # fmt: skip


def _read_csv(p: Path) -> pd.DataFrame:
    check_input_file(p, field="CSV")  # a regular file (pandas is never handed a FIFO)
    df = pd.read_csv(p)
    missing = {"id", "model", "hardware", "run_scope"} - set(df.columns)
    if missing:
        raise InputError("CSV", str(p), f"columns {sorted(missing)} (training ground-truth schema)")
    return df


def load_rows(path: str | Path | None = None) -> pd.DataFrame:
    """Read a ground-truth CSV in the schema of ``shared/groundtruth/training.csv``.

    Without a path: the bundled rows, :data:`DATA_CSV` followed by :data:`NEW_SOURCES_CSV`.
    """
    if path is not None:
        return _read_csv(Path(path))
    return pd.concat([_read_csv(DATA_CSV), _read_csv(NEW_SOURCES_CSV)], ignore_index=True)


def row_set_ids(row_set: str) -> set[str] | None:
    """Return the ids of the bundled rows of a row set (:data:`ROW_SETS`); ``None`` for all."""
    if row_set not in ROW_SETS:
        raise InputError("rows", row_set, f"one of {', '.join(ROW_SETS)}")
    if row_set == "all":
        return None
    return set(_read_csv(DATA_CSV if row_set == "fitted" else NEW_SOURCES_CSV)["id"].astype(str))


def select_rows(results: list[RowResult], row_set: str) -> list[RowResult]:
    """Return the results of the bundled rows of ``row_set`` (all of them for ``"all"``)."""
    ids = row_set_ids(row_set)
    return list(results) if ids is None else [r for r in results if r.row_id in ids]


def validate_training(
    path: str | Path | None = None,
    catalog: Catalog | None = None,
    eff: EfficiencyParams = DEFAULT_EFFICIENCY,
    scopes: tuple[str, ...] | None = THROUGHPUT_SCOPES,
) -> list[RowResult]:
    """Predict every row (of the given scopes; ``None`` = all) and return the per-row results."""
    if catalog is None:
        catalog = load_catalog()
    df = load_rows(path)
    out: list[RowResult] = []
    for _, row in df.iterrows():
        scope = str(row["run_scope"])
        if scopes is not None and scope not in scopes:
            continue
        try:
            case = row_case(row, catalog)
            out.append(predict_case(case, catalog, eff))
        except SkipRow as exc:
            out.append(
                RowResult(str(row["id"]), str(row["model"]), scope, skipped=str(exc),
                          source_group=source_group(row.get("source")))
            )  # fmt: skip
        except AitcoError as exc:
            out.append(
                RowResult(str(row["id"]), str(row["model"]), scope, skipped=f"model error: {exc}",
                          source_group=source_group(row.get("source")))
            )  # fmt: skip
    return out


def summary(results: list[RowResult]) -> dict[str, Any]:
    """Median / 90th percentile APE, mean log ratio and quantiles over the predicted rows."""
    done = [r for r in results if not r.skipped]
    ape = np.array([r.ape for r in done])
    lr = np.array([r.log_ratio for r in done])
    if not done:
        return {"rows": len(results), "predicted": 0, "skipped": len(results)}
    return {
        "rows": len(results),
        "predicted": len(done),
        "skipped": len(results) - len(done),
        "median_ape": float(np.median(ape)),
        "p90_ape": float(np.quantile(ape, 0.9)),
        "mean_ape": float(np.mean(ape)),
        "max_ape": float(np.max(ape)),
        "log_ratio_q10": float(np.quantile(lr, 0.1)),
        "log_ratio_q90": float(np.quantile(lr, 0.9)),
        "mean_log_ratio": float(np.mean(lr)),
    }


def results_frame(results: list[RowResult]) -> pd.DataFrame:
    """Return the per-row error table as a DataFrame."""
    return pd.DataFrame([r.__dict__ for r in results])


#: Parameters fitted globally by :func:`fit_efficiency`, with their search bounds. The fields the
#: inference engine shares (``elementwise_hbm``, ``intra_node_link``, ``scale_out_link``, ``gemm``)
#: stay at their issue-3 values so that refitting training never moves inference; training has
#: its own ``training_gemm`` and ``attention_by_family``.
FIT_BOUNDS: dict[str, tuple[float, float]] = {
    "gemm.nvidia-ampere": (0.40, 0.95),
    "gemm.nvidia-hopper": (0.40, 0.95),
    "gemm.nvidia-blackwell": (0.40, 0.95),
    "attention.nvidia-ampere": (0.15, 0.90),
    "attention.nvidia-hopper": (0.15, 0.90),
    "attention.nvidia-blackwell": (0.15, 0.90),
    "dp_overlap": (0.0, 1.0),
    "tp_overlap": (0.0, 1.0),
    "tp_overlap.google-tpu": (0.0, 1.0),
    "step_overhead_s": (0.0, 1.0),
}


def _vector(eff: EfficiencyParams) -> NDArray[np.float64]:
    """Return the fitted parameters of ``eff`` in the order of :data:`FIT_BOUNDS`."""
    out = []
    for key in FIT_BOUNDS:
        if key.startswith("gemm."):
            out.append(eff.training_gemm_for(key.split(".", 1)[1]))
        elif key.startswith("attention."):
            out.append(eff.attention_for(key.split(".", 1)[1]))
        elif key.startswith("tp_overlap."):
            out.append(eff.tp_overlap_for(key.split(".", 1)[1]))
        else:
            out.append(getattr(eff, key))
    return np.asarray(out, dtype=float)


def _from_vector(eff: EfficiencyParams, x: NDArray[np.float64]) -> EfficiencyParams:
    """``eff`` with the parameters of :data:`FIT_BOUNDS` set to ``x``."""
    field = {"gemm": "training_gemm", "attention": "attention_by_family",
             "tp_overlap": "tp_overlap_by_family"}  # fmt: skip
    by: dict[str, dict[str, float]] = {f: {} for f in field.values()}
    rest: dict[str, float] = {}
    for k, v in zip(FIT_BOUNDS, x, strict=True):
        head, _, fam = k.partition(".")
        if fam:
            by[field[head]][fam] = float(v)
        else:
            rest[k] = float(v)
    return eff.with_overrides({**by, **rest})


def _drop_unseen_overlap(
    eff: EfficiencyParams, cases: list[Case], catalog: Catalog
) -> EfficiencyParams:
    """Drop the per-family ``tp_overlap`` of families without a row in ``cases``.

    Those families then use the fitted ``tp_overlap``: a value no row constrained is only the
    start value, not a fit.
    """
    seen = {catalog.hardware(c.accelerator)[0].family for c in cases}
    keep = {f: v for f, v in eff.tp_overlap_by_family.items() if f in seen}
    return EfficiencyParams.model_validate({**eff.model_dump(), "tp_overlap_by_family": keep})


#: Log ratio charged to a row the model cannot price with trial parameters (an error, not a
#: skip: the fit must not improve by making rows unpredictable).
FAILED_ROW_LOG_RATIO = 1.0
#: Relative step of the finite-difference Jacobian of the fit (plans switch discontinuously
#: with the efficiencies, so a tiny step would see a flat objective).
FIT_DIFF_STEP = 0.02
#: Function evaluations of each leave-one-source-out refit (``validate training --cv group``):
#: each fold starts from the global fit and moves only as far as its rows pull it.
CV_MAX_NFEV = 3
#: Iterations of the trust-region fit (each costs one model evaluation per parameter + 1).
FIT_MAX_NFEV = 12


def throughput_cases(path: str | Path | None = None, catalog: Catalog | None = None) -> list[Case]:
    """Return the predictable throughput rows of a ground-truth CSV as :class:`Case` objects."""
    catalog = catalog if catalog is not None else load_catalog()
    df = load_rows(path)
    cases = []
    for _, row in df.iterrows():
        if str(row["run_scope"]) in THROUGHPUT_SCOPES:
            try:
                cases.append(row_case(row, catalog))
            except SkipRow:
                continue
    return cases


def gemm_share_of_ceiling(
    eff: EfficiencyParams, catalog: Catalog, cases: list[Case]
) -> float | None:
    """Training GEMM efficiency as a share of the measured matmul ceiling, from fitted families.

    For every case whose accelerator family has a fitted ``training_gemm`` value and whose
    accelerator has a measured matmul ceiling (``Accelerator.matmul_ceiling`` of the case's
    precision), the ratio ``training_gemm[family] / ceiling``; their geometric mean (each row
    weighs the same). It carries what the fitted families say about end-to-end training
    frameworks to accelerators without runs of their own. ``None`` when no case qualifies.
    """
    pairs = []
    for c in cases:
        acc, _ = catalog.hardware(c.accelerator)
        if acc.family in eff.training_gemm:
            pairs.append((eff.training_gemm[acc.family], acc.matmul_ceiling(c.precision)))
    return share_of_ceiling(pairs)


def with_derived_share(
    eff: EfficiencyParams, catalog: Catalog, cases: list[Case]
) -> EfficiencyParams:
    """``eff`` with ``training_gemm_share_of_ceiling`` derived from ``cases`` (kept if none fit)."""
    share = gemm_share_of_ceiling(eff, catalog, cases)
    if share is None:
        return eff
    return eff.with_overrides({"training_gemm_share_of_ceiling": min(1.0, share)})


def fit_cases(
    cases: list[Case],
    catalog: Catalog,
    start: EfficiencyParams = DEFAULT_EFFICIENCY,
    max_nfev: int = FIT_MAX_NFEV,
) -> tuple[EfficiencyParams, dict[str, Any]]:
    r"""Fit the parameters of :data:`FIT_BOUNDS` once, globally, on ``cases``.

    ``scipy.optimize.least_squares`` (trust-region reflective, within the bounds) minimises
    :math:`\sum_i \ln^2(obs_i / pred_i)` over all rows at once: every row weighs the same,
    and no row or model gets its own factor. A row the trial parameters cannot price counts
    :data:`FAILED_ROW_LOG_RATIO`.

    Returns
    -------
    eff : EfficiencyParams
        The fitted parameters, with the 10th/90th percentiles of the in-sample residuals.
    info : dict
        RMS log ratio, evaluations and the in-sample :func:`summary`.
    """
    evals = 0

    def residuals(x: NDArray[np.float64]) -> NDArray[np.float64]:
        nonlocal evals
        evals += 1
        e = _from_vector(start, x)
        out = np.empty(len(cases))
        for i, c in enumerate(cases):
            try:
                out[i] = predict_case(c, catalog, e).log_ratio
            except AitcoError:
                out[i] = FAILED_ROW_LOG_RATIO
        return out

    # accelerators without a fitted family take the share of their matmul ceiling that the
    # fitted families reach: derived from the start for the fit, again from the result after it
    start = with_derived_share(start, catalog, cases)
    lo = np.array([b[0] for b in FIT_BOUNDS.values()])
    hi = np.array([b[1] for b in FIT_BOUNDS.values()])
    # start strictly inside the bounds (the trust-region method needs an interior point)
    x0 = np.clip(_vector(start), lo + 1e-3 * (hi - lo), hi - 1e-3 * (hi - lo))
    sol = least_squares(
        residuals, x0, bounds=(lo, hi), method="trf", diff_step=FIT_DIFF_STEP, max_nfev=max_nfev
    )
    eff = with_derived_share(_from_vector(start, sol.x), catalog, cases)
    eff = _drop_unseen_overlap(eff, cases, catalog)
    s = summary([predict_case(c, catalog, eff) for c in cases])
    eff = eff.with_overrides(
        {"training_log_ratio_q10": s["log_ratio_q10"], "training_log_ratio_q90": s["log_ratio_q90"]}
    )
    rms = float(np.sqrt(np.mean(sol.fun**2)))
    return eff, {"objective": rms, "loss": "l2", "evaluations": evals, **s}


def fit_efficiency(
    path: str | Path | None = None,
    catalog: Catalog | None = None,
    start: EfficiencyParams = DEFAULT_EFFICIENCY,
    max_nfev: int = FIT_MAX_NFEV,
) -> tuple[EfficiencyParams, dict[str, Any]]:
    """Fit the global efficiency parameters once on the throughput rows (:func:`fit_cases`)."""
    catalog = catalog if catalog is not None else load_catalog()
    return fit_cases(throughput_cases(path, catalog), catalog, start, max_nfev)


def source_group(source: Any) -> str:
    """Group key of a row's ``source``: one paper, repository or report.

    A GitHub repository (``github.com/owner/repo``) or an arXiv id names the group; otherwise
    the first word and the first year of the citation (``"Narayanan 2021"``), so that tables
    of one paper (Table 1, Table 2) fall in one group.
    """
    text = str(source)
    m = re.search(r"github\.com/[\w.-]+/[\w.-]+", text)
    if m:
        return m.group(0).lower()
    m = re.search(r"arXiv[: ]*(\d{4}\.\d{4,5})", text, flags=re.IGNORECASE)
    if m:
        return f"arxiv:{m.group(1)}"
    words = text.split()
    year = re.search(r"\b(19|20)\d{2}\b", text)
    return f"{words[0].lower() if words else '?'} {year.group(0) if year else ''}".strip()


def cross_validate(
    path: str | Path | None = None,
    catalog: Catalog | None = None,
    start: EfficiencyParams = DEFAULT_EFFICIENCY,
    max_nfev: int = FIT_MAX_NFEV,
) -> list[RowResult]:
    """Leave-one-source-out predictions of the throughput rows.

    For each source group (:func:`source_group`), the global parameters are refitted with
    :func:`fit_cases` on the rows of every *other* group, and the group's rows are predicted
    with that fit: each row is predicted by parameters that never saw its source. Rows that
    cannot be predicted are returned as skipped, as in :func:`validate_training`.
    """
    catalog = catalog if catalog is not None else load_catalog()
    df = load_rows(path)
    df = df[df["run_scope"].isin(THROUGHPUT_SCOPES)]
    cases: list[Case] = []
    out: list[RowResult] = []
    for _, row in df.iterrows():
        try:
            cases.append(row_case(row, catalog))
        except SkipRow as exc:
            out.append(
                RowResult(str(row["id"]), str(row["model"]), str(row["run_scope"]),
                          skipped=str(exc), source_group=source_group(row.get("source")))
            )  # fmt: skip
    for g in sorted({c.group for c in cases}):
        train = [c for c in cases if c.group != g]
        eff, _ = fit_cases(train, catalog, start, max_nfev) if train else (start, {})
        for c in (c for c in cases if c.group == g):
            try:
                out.append(predict_case(c, catalog, eff))
            except AitcoError as exc:
                out.append(
                    RowResult(c.row_id, c.label, c.scope, skipped=f"model error: {exc}",
                              source_group=g)
                )  # fmt: skip
    order = {str(r): i for i, r in enumerate(df["id"])}
    return sorted(out, key=lambda r: order.get(r.row_id, len(order)))


def by_source_group(results: list[RowResult]) -> list[dict[str, Any]]:
    """Rows, median and max APE of the predicted rows of each source group."""
    groups: dict[str, list[float]] = {}
    for r in results:
        if not r.skipped:
            groups.setdefault(r.source_group, []).append(r.ape)
    return [
        {"source_group": g, "rows": len(a), "median_ape": float(np.median(a)),
         "max_ape": float(np.max(a))}
        for g, a in sorted(groups.items())
    ]  # fmt: skip


def coverage(results: list[RowResult], eff: EfficiencyParams = DEFAULT_EFFICIENCY) -> float:
    """Share of predicted rows whose log ratio lies inside the 80% interval of ``eff``."""
    lr = np.array([r.log_ratio for r in results if not r.skipped])
    if lr.size == 0:
        return float("nan")
    lo, hi = eff.training_log_ratio_q10, eff.training_log_ratio_q90
    return float(np.mean((lr >= lo) & (lr <= hi)))


def markdown_table(results: list[RowResult]) -> str:
    """Return the per-row error table in Markdown (as pasted into ``docs/training.md``)."""
    lines = [
        "| id | run | metric | published | predicted | APE | plan (searched if the row has none) |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in results:
        if r.skipped:
            lines.append(f"| {r.row_id} | {r.label} | - | - | - | skipped | {r.skipped} |")
            continue
        metric = {"tokens_per_s_per_gpu": "tokens/s/GPU", "tflops_per_gpu": "TFLOP/s/GPU"}.get(
            r.target, r.target
        )
        lines.append(
            f"| {r.row_id} | {r.label} | {metric} | {r.observed:,.4g} | {r.predicted:,.4g} | "
            f"{r.ape:.1%} | {r.plan} |"
        )
    return "\n".join(lines) + "\n"


def published_runs(catalog: Catalog, path: str | Path | None = None) -> list[PublishedRun]:
    """Return the throughput rows as published MFU (aitco's convention) with their layouts.

    The published tokens/s per GPU (or TFLOP/s converted with the source's own FLOP convention,
    :func:`reference_flops_per_token`) times aitco's training FLOPs per token
    (:func:`aitco.perf.flops.training_flops_per_token`), over the dtype's dense peak.
    """
    out = []
    for c in throughput_cases(path, catalog):
        acc, _ = catalog.hardware(c.accelerator)
        precision = c.precision if acc.supports(c.precision) else "fp16"
        if not acc.supports(precision):
            continue
        ms = model_shape(c.model)
        tps = (
            c.observed
            if c.target == "tokens_per_s_per_gpu"
            else c.observed * TERA / reference_flops_per_token(c.model, c.seq_len, c.flop_basis)
        )
        mfu = (
            tps
            * training_flops_per_token(ms, c.seq_len, "full", None)
            / (acc.peak_tflops[precision] * TERA)
        )
        layout = None
        if any(k in c.plan for k in ("tp", "pp", "cp", "ep", "dp")):  # dp alone: FSDP/ZeRO-3
            layout = tuple(int(c.plan.get(k, 1)) for k in ("tp", "pp", "cp", "ep"))
        out.append(
            PublishedRun(c.row_id, c.label, acc.family, precision == "fp8", ms.total_params,
                         float(mfu), layout, ms.moe_layers > 0)  # type: ignore[arg-type]
        )  # fmt: skip
    return out

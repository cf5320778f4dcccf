"""Training step time, throughput, MFU/HFU, memory and GPU-hours, from the physics of the plan.

:func:`~aitco.perf.training_model.evaluate_plans` (in :mod:`aitco.perf.training_model`,
re-exported here) is the vectorised core: every argument that describes a parallel plan is an
array, so one call prices a million candidate plans (the plan search uses it). It composes
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
             + step_overhead_s (fixed per step, fitted)

This module is the single-plan side: validate the inputs and the given plan, search the rest
(:func:`aitco.perf.plan_search.search_plans`), assemble a :class:`TrainingResult` whose time
terms are the model's own and add up to the step time.

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
from aitco.perf.efficiency import (
    DEFAULT_EFFICIENCY,
    ELEMENTWISE_KERNELS,
    GEMM_LEVELS,
    EfficiencyParams,
)
from aitco.perf.flops import DEFAULT_LORA_RANK, ModelShape, model_shape
from aitco.perf.memory import ADAM_FP32_BYTES, OFFLOAD_MODES, OFFLOAD_NVME_MODES
from aitco.perf.parallelism import RECOMPUTE_CODES, RECOMPUTE_NAMES
from aitco.perf.plan_search import search_plans
from aitco.perf.training_model import (
    ATTENTION_KERNELS,
    ELEMENTWISE_RW,
    FP8_CAST_BYTES,
    HOST_LOOPS,
    LOSS_KERNELS,
    MEMORY_TERMS,
    TRAIN_PRECISIONS,
    HardwareShape,
    PublishedPractice,
    dropped_token_fraction,
    evaluate_plans,
    gemm_fraction,
    hardware_shape,
)
from aitco.units import GIGA, SECONDS_PER_HOUR

F64 = NDArray[np.float64]

__all__ = [
    "ATTENTION_KERNELS",
    "ELEMENTWISE_RW",
    "FP8_CAST_BYTES",
    "TRAIN_PRECISIONS",
    "HardwareShape",
    "PublishedPractice",
    "TrainingResult",
    "checkpoint_bytes",
    "checkpoint_save_time_s",
    "default_global_batch",
    "default_global_batch_tokens",
    "estimate_training",
    "evaluate_plans",
    "hardware_shape",
    "training_interval",
]


# =============================================================================== single plan
#: Names of the time terms, as shown by ``--explain``.
TIME_TERMS: dict[str, str] = {
    "compute_s": "GEMMs and FlashAttention at gemm x dtype peak x kernel shape (incl. recompute)",
    "memory_bound_s": "norms, activations, residuals, rotary, loss at hbm x bandwidth",
    "tp_comm_s": "TP/SP all-gather + reduce-scatter per layer (exposed)",
    "cp_comm_s": "CP ring-attention K/V exchange beyond attention time",
    "ep_comm_s": "EP all-to-all dispatch/combine per MoE layer",
    "zero3_comm_s": "ZeRO-3/FSDP weight all-gather + grad reduce-scatter not hidden",
    "dp_comm_s": "DP gradient all-reduce not hidden behind the last backward",
    "pp_comm_s": "PP point-to-point activations/gradients",
    "bubble_s": "pipeline bubble (p-1)/(v m) of the micro-batch time",
    "optimizer_s": "Adam step, memory-bound",
    "offload_s": "ZeRO-Offload: PCIe gradient/weight copies not hidden + the CPU optimizer step "
    "(NVMe: + optimizer-state swaps not under it)",
    "step_overhead_s": "fixed per-step host/launch/data-loader time (step_overhead_s)",
}


@dataclass
class TrainingResult:
    """One training estimate: headline ``values`` (`aitco train` JSON keys), ``interval``, terms.

    Attributes
    ----------
    values : dict
        ``step_time_s``, ``tokens_per_s``, ``tokens_per_s_per_gpu``, ``model_tflops_per_gpu``,
        ``hardware_tflops_per_gpu``, ``mfu``, ``hfu``, ``memory_per_gpu_gb``, ``fits``,
        ``over_by_gb``, ``host_memory_per_gpu_gb`` (ZeRO-Offload), ``gpu_hours``,
        ``wall_clock_h`` (with tokens), ``plan`` and ``interval``.
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
        if self.time_terms_s:
            dominant = max(self.time_terms_s.items(), key=lambda kv: kv[1])[0]
        else:  # an infeasible plan has no step: the largest memory term is what blocks it
            dominant = f"memory_{max(self.memory_terms_gb.items(), key=lambda kv: kv[1])[0]}_gb"
        assumptions = [
            "MFU counts 6N + causal attention FLOPs against the training dtype's dense peak",
            "activations per Korthikanti et al. 2022 with FlashAttention and sequence parallel",
            f"plan searched over {self.candidates} candidates"
            if self.candidates > 1
            else "plan as given",
            "interval: 10th-90th percentile of validation log-ratio residuals",
        ]
        if self.values.get("infeasible_reason"):
            assumptions.append(f"infeasible: {self.values['infeasible_reason']}")
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
    speed_of_infeasible: bool = False,
) -> TrainingResult:
    r"""Estimate one training run (searching the plan when no parallel degree is given).

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
        ``recompute`` (name), ``vp``, ``tp_comm_overlap``, ``ep_comm_overlap`` (EP
        all-to-alls under another micro-batch's compute; off unless given; given, the
        search keeps to plans Megatron-Bridge allows it on), ``pipeline_schedule``
        (``1f1b``, or ``dualpipe``: DeepSeek's bidirectional schedule, its EP and PP
        communication hidden, bubble :math:`(pp/2 - 1)\,t_{mb}/3`, two parameter copies;
        only even ``pp`` without interleaving), ``shard_devices`` (hybrid
        sharding: ZeRO-3/FSDP inside groups of that many devices, a node or a TPU slice, data
        parallel across them; :class:`~aitco.perf.training_model.RunShape`); missing degrees
        are 1 (dp inferred) when any degree is given, otherwise the whole plan is searched;
        missing ZeRO stage, micro-batch, recomputation and interleaving are searched.
        ``auto=True`` searches everything not given.
    efficiency : EfficiencyParams
        Efficiency fractions (defaults fitted on published runs).
    lora_rank : int
        Adapter rank for LoRA/QLoRA. [count]
    optimizer : {"adam", "adam8bit"}
        Optimizer state format.
    attention_kernel : {"flash", "unfused"}
        Attention implementation (``unfused``: pre-FlashAttention Megatron-LM, 2019-2021).
    speed_of_infeasible : bool
        Keep the step time and throughput of a plan that cannot run (``feasible`` false). Only
        for the validation, which prices runs that did happen and reports the memory verdict
        beside them; every command gets ``None`` (one verdict: never a speed for a plan that
        cannot run).
    practice : PublishedPractice, optional
        Published evidence for this model size and accelerator generation: the result carries
        ``published_best_mfu`` and ``beyond_published_evidence``, and a searched plan prefers,
        among plans within the best one's interval, the one closest to a published layout.

    Returns
    -------
    TrainingResult
        ``.values`` (`aitco train` JSON keys), ``.interval`` and ``.to_estimate()``.

    Raises
    ------
    PlanError
        An impossible plan (names the constraint) or a data type the hardware lacks.
    """
    _check_inputs(gpus, seq_len, global_batch, method, tokens, attention_kernel)
    ms = model_shape(model, lora_rank)
    hw = hardware_shape(acc, precision, efficiency)
    p = _plan_dict(plan)
    fixed = _fixed_plan(ms, p, gpus, seq_len, global_batch)
    shard_devices = _shard_devices(p, gpus)
    offload = _offload(p)
    _check_offload(offload, fixed, system, hw)
    act_offload = _activation_offload(p, fixed, system, hw, ms)
    capacity, pad = _moe_capacity(p, ms)
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
        shard_devices=shard_devices,
        offload=offload,
        loss_kernel=_choice(p, "loss_kernel", LOSS_KERNELS),
        host_loop=_choice(p, "host_loop", HOST_LOOPS),
        elementwise_kernels=_choice(p, "elementwise_kernels", ELEMENTWISE_KERNELS),
        gemm_level=_choice(p, "gemm_level", GEMM_LEVELS),
        activation_offload=act_offload,
        moe_capacity_factor=capacity,
        moe_pad_to_capacity=pad,
    )
    values = _values(res, i, best, p, hw, n, gpus, seq_len, global_batch, precision, method)
    values["plan"].update(
        offload_activations=act_offload, moe_capacity_factor=capacity, moe_pad_to_capacity=pad
    )
    if capacity is not None:
        values["moe_dropped_token_fraction"] = (
            0.0 if pad else float(dropped_token_fraction(res["expert_imbalance"][i], capacity))
        )
    reason = infeasible_reason(values, res, i, system, hw, gpus, n)
    values["feasible"] = reason is None
    values["infeasible_reason"] = reason
    hide = reason is not None and not speed_of_infeasible
    if hide:  # one verdict: no throughput for a plan that cannot run
        for k in THROUGHPUT_KEYS:
            values[k] = None
    if tokens is not None:
        values["tokens"] = tokens
        values["wall_clock_h"] = (
            None if hide else tokens / values["tokens_per_s"] / SECONDS_PER_HOUR
        )
        values["gpu_hours"] = None if hide else values["wall_clock_h"] * gpus
    interval = {} if hide else training_interval(values, efficiency)
    values["interval"] = interval
    if practice is not None:
        values["published_best_mfu"] = practice.best_mfu
        values["published_best_source"] = practice.source
        # the whole 80% interval of the predicted MFU lies above the best published run
        values["beyond_published_evidence"] = bool(
            interval and interval["mfu"][0] > practice.best_mfu
        )
    # an infeasible plan has no step time: its terms are not shown (never a throughput)
    time_terms = {} if hide else {k: float(res[k][i]) for k in TIME_TERMS}
    mem_terms = {k: float(res[f"mem_{k}_bytes"][i]) / GIGA for k in MEMORY_TERMS}
    inputs = {
        "model": model.id,
        "accelerator": acc.id,
        "system": system.id,
        "gpus": gpus,
        "seq_len": seq_len,
        "global_batch": global_batch,
        "precision": precision,
        "method": method,
        "gemm_efficiency": gemm_fraction(hw, values["plan"]["gemm_level"]),
        "gemm_efficiency_basis": efficiency.training_gemm_at(
            values["plan"]["gemm_level"], acc.family, acc.matmul_ceiling(precision)
        )[1],
        "elementwise_hbm_efficiency": efficiency.elementwise_hbm_for(
            values["plan"]["elementwise_kernels"]
        ),
        "peak_tflops": hw.peak_linear_tflops,
    }
    term_inputs = _term_inputs(hw, efficiency, values, optimizer)
    term_inputs["compute_s"]["gemm_basis"] = inputs["gemm_efficiency_basis"]
    if hw.format_note:
        term_inputs["compute_s"]["precision_note"] = hw.format_note
        inputs["precision_note"] = hw.format_note
    if values["plan"]["offload"] in OFFLOAD_NVME_MODES:
        term_inputs["offload_s"].update(
            nvme_read_gb_s=system.nvme_read_gb_s, nvme_write_gb_s=system.nvme_write_gb_s
        )
    return TrainingResult(values, interval, time_terms, mem_terms, inputs, n, term_inputs)


#: Headline keys that describe how fast a plan runs: ``None`` when it cannot run.
THROUGHPUT_KEYS = (
    "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
    "hardware_tflops_per_gpu", "mfu", "hfu",
)  # fmt: skip


def infeasible_reason(
    values: dict[str, Any],
    res: dict[str, Any],
    i: int,
    system: System,
    hw: HardwareShape,
    gpus: int,
    n: int,
) -> str | None:
    """Why the chosen plan cannot run (``None`` when it can): the one feasibility verdict.

    Device memory over capacity, host memory over the node's (ZeRO-Offload, activation offload),
    or a step that needs a link the system lacks (infinite time: groups beyond the scale-up
    domain on a system without a scale-out network).
    """
    searched = f"the smallest of {n:,} plans searched" if n > 1 else "the plan as given"
    if not np.isfinite(float(res["step_time_s"][i])):
        return (
            f"{gpus:,} devices need a scale-out network that {system.id} lacks (scale-up domain "
            f"{system.scale_up_domain}, scale_out_bandwidth_gb_s {system.scale_out_bandwidth_gb_s})"
        )
    mem = values["memory_per_gpu_gb"]
    if mem > hw.memory_gb:
        return (
            f"needs {mem:,.1f} GB per device, {mem - hw.memory_gb:,.1f} GB over the "
            f"{hw.memory_gb:,.0f} GB available ({searched}); use more devices, full recompute, "
            "activation or ZeRO offload, or a narrower precision"
        )
    if not bool(res["fits"][i]):
        host = values["host_memory_per_gpu_gb"] + values.get("nvme_per_gpu_gb", 0.0)
        return (
            f"the offloaded state needs {host:,.1f} GB per device of host memory or NVMe, more "
            f"than {system.id} has per device ({searched})"
        )
    return None


def _activation_offload(
    p: dict[str, Any], fixed: dict[str, Any], system: System, hw: HardwareShape, ms: ModelShape
) -> bool:
    """Whether decoder-layer inputs go to host memory; hold full recompute when they do."""
    if not p.get("offload_activations"):
        return False
    rc = fixed.get("recompute")
    if rc is not None and rc != RECOMPUTE_CODES["full"]:
        raise PlanError(
            "--offload-activations", True, "full recompute (the offloaded layer inputs are "
            "what the backward pass recomputes each layer from)",
            hint=f"drop --recompute {RECOMPUTE_NAMES[rc]} or --offload-activations",
        )  # fmt: skip
    missing = [] if system.host_memory_gb else ["host_memory_gb"]
    if hw.pcie_gb_s <= 0:
        missing.append("the accelerator's pcie_gen or host_link_gb_s")
    if missing:
        raise InputError(
            "--offload-activations", True,
            f"a system whose catalog entry gives {', '.join(missing)} ({system.id} does not)",
            hint="choose a system with these figures, or set them in a catalog overlay",
        )  # fmt: skip
    fixed["recompute"] = RECOMPUTE_CODES["full"]
    fixed["recompute_fraction"] = 1.0
    return True


def _moe_capacity(p: dict[str, Any], ms: ModelShape) -> tuple[float | None, bool]:
    """Return the MoE capacity factor and padding of a plan dict, checked."""
    c = p.get("moe_capacity_factor")
    pad = bool(p.get("moe_pad_to_capacity"))
    if c is None:
        if pad:
            raise InputError(
                "--moe-pad-to-capacity", True, "a --moe-capacity-factor to pad to"
            )  # fmt: skip
        return None, False
    c = float(c)
    if not (c > 0.0 and np.isfinite(c)):
        raise InputError("--moe-capacity-factor", c, "a positive number (1.0: the even share)")
    if not ms.moe_layers:
        raise InputError("--moe-capacity-factor", c, "a mixture-of-experts model")
    return c, pad


def _check_inputs(
    gpus: int,
    seq_len: int,
    global_batch: int,
    method: str,
    tokens: float | None,
    attention_kernel: str,
) -> None:
    """Raise :class:`InputError` naming the first input out of range."""
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


def _choice(p: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    """Return a plan dict's text option (the first allowed value when absent), checked."""
    v = p.get(key) or allowed[0]
    if v not in allowed:
        raise InputError(f"--{key.replace('_', '-')}", v, f"one of {', '.join(allowed)}")
    return str(v)


def _offload(p: dict[str, Any]) -> str:
    """ZeRO-Offload mode of a plan dict (``none`` when absent); InputError when unknown."""
    v = p.get("offload") or "none"
    if v not in OFFLOAD_MODES:
        raise InputError("--offload", v, f"one of {', '.join(OFFLOAD_MODES)}")
    return str(v)


def offload_min_zero(offload: str) -> int:
    """Lowest ZeRO stage an offload mode runs with.

    ``optimizer`` (ZeRO-Offload) shards from ZeRO-1 on; ``params`` (ZeRO-Infinity) needs ZeRO-3,
    as does every NVMe offload (DeepSpeed's ``device: nvme`` is a ZeRO-3 feature).
    """
    return {"none": 0, "optimizer": 1, "params": 3, "optimizer-nvme": 3, "params-nvme": 3}[offload]


#: System figures every offload needs, and those an NVMe offload needs too.
OFFLOAD_HOST_FIELDS = ("host_memory_gb", "host_memory_bandwidth_gb_s")
OFFLOAD_NVME_FIELDS = ("nvme_capacity_gb", "nvme_read_gb_s", "nvme_write_gb_s")


def offload_missing(system: System, hw: HardwareShape, offload: str = "optimizer") -> list[str]:
    """Catalog figures an offload needs that ``system`` / its accelerator do not give (empty: none).

    The node must state its host memory and its bandwidth (and, for an NVMe offload, its NVMe
    capacity and read/write bandwidths), the accelerator its PCIe generation.
    """
    fields = OFFLOAD_HOST_FIELDS + (OFFLOAD_NVME_FIELDS if offload in OFFLOAD_NVME_MODES else ())
    missing = [f for f in fields if getattr(system, f) is None]
    return missing if missing or hw.pcie_gb_s > 0 else ["the accelerator's pcie_gen"]


def _check_offload(offload: str, fixed: dict[str, Any], system: System, hw: HardwareShape) -> None:
    """Restrict the search to the ZeRO stages an offload needs; raise when it cannot run."""
    if offload == "none":
        return
    need = offload_min_zero(offload)
    given = fixed.get("zero")
    if given is not None and given < need:
        raise PlanError(
            "--offload", offload, f"ZeRO stage >= {need} (given --zero {given})",
            hint="raise --zero or drop --offload",
        )  # fmt: skip
    fixed["min_zero"] = need
    missing = offload_missing(system, hw, offload)
    if missing:
        what = ", ".join(missing)
        raise InputError(
            "--offload", offload,
            f"a system whose catalog entry gives {what} ({system.id} does not)",
            hint="choose a system with these figures, or set them in a catalog overlay",
        )  # fmt: skip


def _shard_devices(p: dict[str, Any], gpus: int) -> int | None:
    """Return the hybrid-sharding group size of plan ``p`` (``None``: none), checked."""
    v = p.get("shard_devices")
    if v is None:
        return None
    try:
        n = int(v)
    except (TypeError, ValueError):
        n = 0
    if n < 1 or n != v or gpus % n:
        raise InputError("shard_devices", v, f"a positive divisor of the devices ({gpus})")
    return n


def _plan_dict(plan: dict[str, Any] | Any | None) -> dict[str, Any]:
    """Return the plan as a plain dict (``None``: empty; a ``ParallelPlan``: its fields)."""
    if plan is None:
        return {}
    if isinstance(plan, dict):
        return dict(plan)
    return dict(plan.model_dump())


#: Parallel degrees of a plan (the rest, ZeRO/micro-batch/recompute/vp, are options).
DEGREES = ("tp", "pp", "cp", "ep", "dp")


def _fixed_plan(
    ms: ModelShape, p: dict[str, Any], gpus: int, seq_len: int, global_batch: int
) -> dict[str, Any]:
    """Return the plan fields the search must hold (``p`` loses its ``auto`` key).

    ``auto=True`` searches everything not given; any degree given without ``auto`` makes the
    layout explicit (missing degrees 1, dp inferred) and checks it.
    """
    auto = bool(p.pop("auto", False))
    explicit = not auto and any(p.get(k) is not None for k in DEGREES)
    fixed: dict[str, Any] = {}
    if auto:  # search, holding the degrees that were given
        fixed = {k: int(p[k]) for k in (*DEGREES, "vp") if p.get(k) is not None}
    if explicit:
        fixed = _explicit_degrees(ms, p, gpus, seq_len)
    fixed.update(_fixed_options(p, ms.n_layers))
    if explicit and "micro_batch" in fixed and fixed["micro_batch"] * fixed["dp"] > global_batch:
        raise PlanError(
            "--micro-batch",
            fixed["micro_batch"],
            f"micro_batch x dp ({fixed['dp']}) <= the global batch ({global_batch} sequences)",
        )
    return fixed


def _explicit_degrees(ms: ModelShape, p: dict[str, Any], gpus: int, seq_len: int) -> dict[str, Any]:
    """Return the degrees of an explicit layout (missing: 1; dp: the devices left), checked."""
    fixed: dict[str, Any] = {k: int(p.get(k) or 1) for k in ("tp", "pp", "cp", "ep")}
    tpc = fixed["tp"] * fixed["pp"] * fixed["cp"]
    fixed["dp"] = int(p["dp"]) if p.get("dp") is not None else max(gpus // tpc, 1)
    if p.get("dp") is None and gpus % tpc:
        raise PlanError("plan", f"tp x pp x cp = {tpc}", f"a divisor of --gpus ({gpus})")
    _check_plan(ms, gpus, seq_len, fixed)
    if p.get("vp") is not None:
        fixed["vp"] = int(p["vp"])
    elif fixed["pp"] == 1:
        fixed["vp"] = 1
    return fixed


def _recompute_layers(p: dict[str, Any], rc: Any, n_layers: int) -> dict[str, Any]:
    """Partial recomputation by layer count (Megatron ``--recompute-num-layers``).

    ``recompute_layers`` N of the model's L layers fully recomputed: ``recompute`` full on the
    share N / L (every stage recomputes that share of its layers).
    """
    k = p["recompute_layers"]
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= n_layers:
        raise InputError("--recompute-layers", k, f"a whole number of layers in 1..{n_layers}")
    if rc not in (None, "full"):
        raise InputError("--recompute-layers", k, "recompute full (or no --recompute)")
    return {"recompute": RECOMPUTE_CODES["full"], "recompute_fraction": k / n_layers}


def _fixed_options(p: dict[str, Any], n_layers: int = 1) -> dict[str, Any]:
    """Return the ZeRO stage, micro-batch and recomputation given in ``p`` (recompute coded)."""
    out: dict[str, Any] = {}
    if p.get("fsdp"):
        out["zero"] = 3
    elif p.get("zero") is not None:
        out["zero"] = int(p["zero"])
    if p.get("micro_batch") is not None:
        out["micro_batch"] = int(p["micro_batch"])
    rc = p.get("recompute")
    if rc is not None:
        if rc not in RECOMPUTE_CODES:
            raise InputError("--recompute", rc, "none, selective or full")
        out["recompute"] = RECOMPUTE_CODES[rc]
        if rc == "full" and p.get("recompute_fraction") is None:
            out["recompute_fraction"] = 1.0  # "full" as given: every layer
    if p.get("ep_comm_overlap") is not None:
        out["ep_comm_overlap"] = int(bool(p["ep_comm_overlap"]))
    sched = p.get("pipeline_schedule")
    if sched is not None and sched not in PIPELINE_SCHEDULES:
        raise InputError("--pipeline-schedule", sched, " or ".join(PIPELINE_SCHEDULES))
    if sched == "dualpipe":
        out["dualpipe"] = 1
    if p.get("recompute_layers") is not None:
        out.update(_recompute_layers(p, rc, n_layers))
    if p.get("recompute_fraction") is not None:
        frac = float(p["recompute_fraction"])
        if not 0.0 < frac <= 1.0:
            raise InputError("recompute_fraction", frac, "a share of layers in (0, 1]")
        out["recompute_fraction"] = frac
    return out


def _values(
    res: dict[str, Any],
    i: int,
    best: dict[str, Any],
    p: dict[str, Any],
    hw: HardwareShape,
    n: int,
    gpus: int,
    seq_len: int,
    global_batch: int,
    precision: str,
    method: str,
) -> dict[str, Any]:
    """Return the headline values (JSON keys of ``aitco train``) of plan ``i`` of ``res``."""

    def v(key: str) -> float:
        return float(res[key][i])

    mem_gb = v("memory_per_gpu_bytes") / GIGA
    n_micro = round(v("n_micro"))
    return {
        "step_time_s": v("step_time_s"),
        "tokens_per_s": v("tokens_per_s"),
        "tokens_per_s_per_gpu": v("tokens_per_s_per_gpu"),
        "model_tflops_per_gpu": v("model_tflops_per_gpu"),
        "hardware_tflops_per_gpu": v("hardware_tflops_per_gpu"),
        "mfu": v("mfu"),
        "hfu": v("hfu"),
        "memory_per_gpu_gb": mem_gb,
        "memory_capacity_gb": hw.memory_gb,
        "host_memory_per_gpu_gb": v("host_memory_per_gpu_bytes") / GIGA,
        "nvme_per_gpu_gb": v("nvme_per_gpu_bytes") / GIGA,
        "fits": bool(res["fits"][i]),
        "over_by_gb": max(mem_gb - hw.memory_gb, 0.0),
        "gradient_accumulation": n_micro,
        "global_batch": global_batch,
        "global_batch_tokens": global_batch * seq_len,
        # fewer sequences than one per 8 devices (Llama 3's floor): DP is held below the GPUs
        "batch_caps_dp": bool(global_batch * GPUS_PER_SEQUENCE_FLOOR < gpus),
        # fewer micro-batches than pipeline stages: the bubble idles each stage over half a step
        "batch_leaves_gpus_idle": bool(n_micro < best["pp"]),
        "seq_len": seq_len,
        "gpus": gpus,
        "precision": precision,
        "precision_mode": hw.format_mode,
        "method": method,
        "plan": {
            **{k: best[k] for k in DEGREES},
            "zero": best["zero"],
            "fsdp": bool(p.get("fsdp")) or False,
            "micro_batch": best["micro_batch"],
            "recompute": RECOMPUTE_NAMES[best["recompute"]],
            "recompute_fraction": best["recompute_fraction"],
            "vp": best["vp"],
            "tp_comm_overlap": bool(p.get("tp_comm_overlap", False)),
            "ep_comm_overlap": bool(best["ep_comm_overlap"]),
            "pipeline_schedule": _schedule_name(best),
            "shard_devices": _shard_devices(p, gpus),
            "offload": _offload(p),
            "loss_kernel": _choice(p, "loss_kernel", LOSS_KERNELS),
            "host_loop": _choice(p, "host_loop", HOST_LOOPS),
            "elementwise_kernels": _choice(p, "elementwise_kernels", ELEMENTWISE_KERNELS),
            "gemm_level": _choice(p, "gemm_level", GEMM_LEVELS),
            "searched": n > 1,
        },
    }


#: Pipeline schedules a plan may ask for: ``1f1b`` (interleaved when ``vp`` > 1; Megatron) or
#: ``dualpipe`` (DeepSeek-V3, arXiv 2412.19437 Sec. 3.2.1; deepseek-ai/DualPipe).
PIPELINE_SCHEDULES = ("1f1b", "dualpipe")


def _schedule_name(best: dict[str, Any]) -> str:
    """Return the schedule a plan runs: ``dualpipe``, ``interleaved`` (vp > 1) or ``1f1b``."""
    if best.get("dualpipe"):
        return "dualpipe"
    return "interleaved" if best["vp"] > 1 else "1f1b"


def _term_inputs(
    hw: HardwareShape, e: EfficiencyParams, values: dict[str, Any], optimizer: str
) -> dict[str, dict[str, Any]]:
    """Return the inputs ``--explain`` shows beside each time term."""
    pl = values["plan"]
    return {
        "compute_s": {
            "peak_tflops": hw.peak_linear_tflops,
            "power_limit_clock_ratio": hw.clock_ratio,
            "gemm_efficiency": gemm_fraction(hw, pl["gemm_level"]),
            "gemm_level": pl["gemm_level"],
            "attention_efficiency": hw.attention_efficiency,
            "compute_units": hw.compute_units,
            "gemm_k_half": hw.gemm_k_half,
            "gemm_latency_s": hw.gemm_latency_s,
            "attention_block_fixed_s": hw.attention_block_fixed_s,
            "recompute": pl["recompute"],
            "recompute_fraction": pl["recompute_fraction"],
            "precision_mode": hw.format_mode,
            "low_precision_linear_share": hw.lowp_linear_share,
        },
        "memory_bound_s": {
            "hbm_bandwidth_gb_s": hw.hbm_bandwidth_gb_s,
            "elementwise_hbm": e.elementwise_hbm_for(pl["elementwise_kernels"]),
            "elementwise_kernels": pl["elementwise_kernels"],
            "loss_kernel": pl["loss_kernel"],
            "cast_bytes_per_element": hw.cast_bytes,
        },
        "tp_comm_s": {
            "tp": pl["tp"],
            "intra_node_link": e.intra_node_link,
            "tp_overlap": hw.tp_overlap if pl["tp_comm_overlap"] else 0.0,
        },
        "cp_comm_s": {"cp": pl["cp"]},
        "ep_comm_s": {
            "ep": pl["ep"],
            "ep_comm_overlap": pl["ep_comm_overlap"] or pl["pipeline_schedule"] == "dualpipe",
        },
        "zero3_comm_s": {"zero": pl["zero"], "dp": pl["dp"], "dp_overlap": e.dp_overlap},
        "dp_comm_s": {
            "dp": pl["dp"],
            "dp_overlap": e.dp_overlap,
            "scale_out_link": e.scale_out_link,
        },
        "pp_comm_s": {"pp": pl["pp"], "vp": pl["vp"], "pipeline_schedule": pl["pipeline_schedule"]},
        "bubble_s": {
            "pp": pl["pp"],
            "vp": pl["vp"],
            "pipeline_schedule": pl["pipeline_schedule"],
            "micro_batches": values["gradient_accumulation"],
        },
        "optimizer_s": {"zero": pl["zero"], "optimizer": optimizer},
        "offload_s": {
            "offload": pl["offload"],
            "pcie_gb_s": hw.pcie_gb_s,
            "host_link": e.host_link,
            "host_memory": e.host_memory,
        },
        "step_overhead_s": {"step_overhead_s": e.step_overhead_s, "host_loop": pl["host_loop"]},
    }


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


def default_global_batch(active_params: float, gpus: int, seq_len: int, tokens: Any = None) -> int:
    """:func:`default_global_batch_tokens` in whole sequences (at least one) [sequences].

    The one default-batch rule of aitco: ``aitco train`` and the decision engine's training
    workloads both call it when no batch is given.

    Examples
    --------
    >>> default_global_batch(124e6, 8, 1024, 10e9)
    425
    """
    bt = float(default_global_batch_tokens(active_params, gpus, seq_len, tokens))
    return max(1, round(bt / seq_len))

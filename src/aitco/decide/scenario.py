"""The :class:`Scenario`: a workload, hardware options, a deployment and cost assumptions.

A scenario is what ``aitco compare|tco|report|sweep`` take. It validates on construction and
round-trips to YAML (:meth:`Scenario.from_yaml`, :meth:`Scenario.to_yaml`). Errors name the
file, the field path, the value and what was expected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import ConfigDict, Field, ValidationError, model_validator

from aitco.errors import InputError
from aitco.fileio import load_yaml, write_atomic
from aitco.limits import MAX_QPS, StrictNumbers, check_tree
from aitco.perf.service import LOAD_PROFILE_HOURS
from aitco.perf.training import default_global_batch
from aitco.units import optional_ms_to_s

__all__ = [
    "HardwareOption",
    "InferenceWorkload",
    "ParallelPlan",
    "Scenario",
    "Stage",
    "TrainingWorkload",
    "scenario_error",
    "write_atomic",
]

#: Load profiles named rather than read from a file.
NAMED_LOAD_PROFILES = ("diurnal",)

Precision = Literal[
    "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp6",
    "mxfp8", "mxfp6", "mxfp4", "nvfp4",
]  # fmt: skip
PricingMode = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "owned", "colocation"]


class ParallelPlan(StrictNumbers):
    """Parallel degrees of a training run; any left ``None`` is inferred or searched."""

    model_config = ConfigDict(extra="forbid")

    tp: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    cp: int | None = Field(default=None, ge=1)
    ep: int | None = Field(default=None, ge=1)
    dp: int | None = Field(default=None, ge=1)
    zero: Literal[0, 1, 2, 3] | None = None
    fsdp: bool = False
    micro_batch: int | None = Field(default=None, ge=1)
    recompute: Literal["none", "selective", "full"] | None = None
    #: Hybrid sharding: ZeRO/FSDP state split inside groups of this many devices (a node or a
    #: TPU slice), data parallel across the groups. [devices]
    shard_devices: int | None = Field(default=None, ge=1)
    #: Expert-parallel all-to-alls overlapped with another micro-batch's compute (Megatron-Bridge
    #: ``overlap_moe_expert_parallel_comm``, DualPipe); off unless true.
    ep_comm_overlap: bool | None = None
    #: Pipeline schedule: ``1f1b`` (interleaved when the search picks vp > 1) or ``dualpipe``
    #: (DeepSeek-V3's bidirectional schedule: EP and PP communication hidden, smaller bubble,
    #: two parameter copies; even pp, no interleaving). ``1f1b`` unless given.
    pipeline_schedule: Literal["1f1b", "dualpipe"] | None = None
    #: ZeRO-Offload to host memory: ``optimizer`` (states, fp32 gradients, CPU Adam step) or
    #: ``params`` (weights too, ZeRO-Infinity; ZeRO-3); ``optimizer-nvme`` / ``params-nvme``
    #: keep those states on the node's NVMe drives (ZeRO-3). ``none`` unless given.
    offload: Literal["none", "optimizer", "params", "optimizer-nvme", "params-nvme"] | None = None
    #: Cross-entropy kernel: ``unfused`` (PyTorch over fp32 logits) or ``fused`` (one kernel
    #: over the 16-bit logits, gradient in place: llm.c, Liger Kernel, Megatron-LM
    #: ``--cross-entropy-loss-fusion``). ``unfused`` unless given.
    loss_kernel: Literal["unfused", "fused"] | None = None
    #: Step loop: ``python`` (a PyTorch-style loop's per-step host time) or ``native`` (a C/CUDA
    #: loop such as llm.c's, or a step captured whole in CUDA graphs). ``python`` unless given.
    host_loop: Literal["python", "native"] | None = None
    #: Elementwise kernels: ``framework`` (the end-to-end fitted level), ``fused`` (hand-written
    #: one-pass kernels: llm.c, Liger Kernel) or ``eager`` (PyTorch / Hugging Face modules op by
    #: op). ``framework`` unless given.
    elementwise_kernels: Literal["framework", "fused", "eager"] | None = None
    #: GEMM level: ``framework`` (the fitted end-to-end level inside a Python framework's step)
    #: or ``ceiling`` (the accelerator's measured matmul ceiling: a native C/CUDA loop such as
    #: llm.c). ``framework`` unless given.
    gemm_level: Literal["framework", "ceiling"] | None = None
    #: Activation offload to host memory: every decoder layer's input kept in host memory over
    #: the host link, the layer recomputed in the backward pass (MaxText's offloaded
    #: decoder-layer input; full recompute). Off unless true.
    offload_activations: bool | None = None
    #: Partial recomputation: the first N layers of each stage fully recomputed (Megatron
    #: ``--recompute-num-layers``); sets ``recompute: full`` on that share of the layers.
    recompute_layers: int | None = Field(default=None, ge=1)
    #: MoE capacity factor: each expert takes at most this many times its even share of the
    #: routed tokens, the rest are dropped (GShard / Megatron ``--moe-expert-capacity-factor``);
    #: None = dropless.
    moe_capacity_factor: float | None = Field(default=None, gt=0)
    #: Pad every expert's input to the capacity (Megatron ``--moe-pad-expert-input-to-capacity``):
    #: the experts always compute the full capacity.
    moe_pad_to_capacity: bool | None = None


class TrainingWorkload(StrictNumbers):
    """Training: a model, a token budget, batch and precision (pre-training or fine-tuning)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["training"] = "training"
    name: str = "training"
    model: str = Field(description="Catalog id, Hugging Face config.json path or model YAML path.")
    tokens: float = Field(gt=0, description="Tokens to train on. [tokens]")
    seq_len: int = Field(default=2048, ge=1)
    global_batch: int | None = Field(default=None, ge=1, description="Global batch. [sequences]")
    global_batch_tokens: int | None = Field(
        default=None, ge=1, description="Global batch. [tokens]"
    )
    precision: Precision = "bf16"
    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: int = Field(default=16, ge=1)
    plan: ParallelPlan = Field(default_factory=ParallelPlan)
    checkpoint_interval_h: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_batch(self) -> TrainingWorkload:
        if self.global_batch is not None and self.global_batch_tokens is not None:
            msg = "give global_batch (sequences) or global_batch_tokens, not both"
            raise ValueError(msg)
        return self

    def batch_sequences(self, active_params: float, gpus: int) -> int:
        """Global batch in sequences: as given, else the published-practice rule of ``train``.

        Parameters
        ----------
        active_params : float
            Parameters touched per token (MoE: active). [count]
        gpus : int
            Devices of the option being priced. [count]

        Returns
        -------
        int
            ``global_batch``, or ``global_batch_tokens / seq_len``, or
            :func:`aitco.perf.training.default_global_batch` (the same rule and code as
            ``aitco train``). [sequences]
        """
        if self.global_batch is not None:
            return self.global_batch
        if self.global_batch_tokens is not None:
            return max(1, round(self.global_batch_tokens / self.seq_len))
        return default_global_batch(active_params, gpus, self.seq_len, self.tokens)


class InferenceWorkload(StrictNumbers):
    """Serving: a model, request shapes, load and latency objectives, for a service period."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["inference"] = "inference"
    name: str = "inference"
    model: str
    precision: Precision = "bf16"
    kv_precision: Precision | None = None
    input_tokens: int = Field(default=512, ge=1)
    output_tokens: int = Field(default=256, ge=1)
    mode: Literal["online", "offline"] = "online"
    qps: float | None = Field(default=None, gt=0, description="Mean arrival rate. [requests/s]")
    concurrency: int | None = Field(default=None, ge=1)
    batch: int | None = Field(default=None, ge=1)
    tp: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    slo_ttft_ms: float | None = Field(default=None, gt=0)
    slo_tpot_ms: float | None = Field(default=None, gt=0)
    months: float = Field(default=1.0, gt=0, description="Service period priced. [months]")
    prefix_cache_hit_rate: float = Field(
        default=0.0, ge=0, lt=1, description="Share of prompt tokens reused from the prefix cache."
    )
    scheduler_steps: int = Field(default=1, ge=1, description="Multi-step scheduling steps.")
    max_batched_tokens: int | None = Field(
        default=None, ge=1, description="Tokens per engine iteration. [tokens]"
    )
    kv_allocation: Literal["paged", "contiguous"] = "paged"
    ep: int = Field(
        default=1, ge=1, description="Expert parallelism (MoE): GPUs per replica, attention DP."
    )
    disaggregate: str | None = Field(
        default=None,
        description="Prefill/decode disaggregation: 'auto' (cheaper of the two) or 'PxD'.",
    )
    load_profile: (
        str
        | Annotated[
            list[Annotated[float, Field(ge=0, le=MAX_QPS)]],
            Field(min_length=LOAD_PROFILE_HOURS, max_length=LOAD_PROFILE_HOURS),
        ]
        | None
    ) = Field(
        default=None,
        description="'diurnal' (qps = the day's mean), a CSV of 24 hourly rates (hour,qps), or "
        "the 24 hourly rates themselves (requests/s; the only form a web request may send).",
    )
    autoscale: str | None = Field(
        default=None,
        description="Autoscaler 'target-util=0.7,min=0,max=64'; priced by replicas running.",
    )
    mig: str | None = Field(default=None, description="MIG slice per replica, e.g. 1g.10gb.")
    time_slice: int | None = Field(
        default=None,
        ge=1,
        description="Time-slicing: replicas sharing each GPU (or MIG slice); each is priced at "
        "1/N of it and runs at 1/N of its rates and memory (all replicas busy).",
    )

    @model_validator(mode="after")
    def _one_layout(self) -> InferenceWorkload:
        if self.disaggregate is not None and (self.load_profile or self.autoscale):
            msg = "disaggregate, or load_profile/autoscale: one serving layout is priced"
            raise ValueError(msg)
        return self

    @property
    def slo_ttft_s(self) -> float | None:
        """Time-to-first-token objective [s]; the YAML key is ``slo_ttft_ms``."""
        return optional_ms_to_s(self.slo_ttft_ms)

    @property
    def slo_tpot_s(self) -> float | None:
        """Time-per-output-token objective [s]; the YAML key is ``slo_tpot_ms``."""
        return optional_ms_to_s(self.slo_tpot_ms)


Workload = Annotated[TrainingWorkload | InferenceWorkload, Field(discriminator="kind")]


class HardwareOption(StrictNumbers):
    """One way to run the workload: hardware, how many, and how it is paid for."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    hardware: str = Field(description="Accelerator or system id.")
    gpus: int = Field(ge=1, description="Accelerators used. [count]")
    pricing: PricingMode = "on_demand"
    offer: str | None = Field(
        default=None, description="Cloud offer id; default: cheapest for the term."
    )
    region: str | None = None
    usd_per_gpu_hour: float | None = Field(
        default=None, ge=0, description="Override of the rental price."
    )
    cooling: Literal["air", "liquid"] | None = None
    power_limit_w: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Power limit the accelerators run at, below their TDP (nvidia-smi -pl): energy is "
            "drawn up to it and the compute clocks drop by (limit / TDP)^(1/3). [W]"
        ),
    )
    provider: str | None = Field(
        default=None,
        description=(
            "Cloud provider to take offers from; 'any': the cheapest eligible offer of any "
            "provider for this pricing mode (default: one home instance type for every mode)."
        ),
    )
    committed_reuse_fraction: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description=(
            "Share of the unused hours of a committed (reserved) term the user reuses for other "
            "work; the rest is billed to this option. [fraction]"
        ),
    )

    @property
    def label(self) -> str:
        """Display name: the given name or ``hardware xGPUS pricing`` (``x1`` left out)."""
        count = f" x{self.gpus}" if self.gpus != 1 else ""
        return self.name or f"{self.hardware}{count} {self.pricing}"


class Stage(StrictNumbers):
    """One stage of a multi-stage plan (pre-training, SFT, RLHF...) on its own hardware."""

    model_config = ConfigDict(extra="forbid")

    name: str
    workload: Workload
    option: HardwareOption


class OpsAssumptions(StrictNumbers):
    """Operations choices that change the reliability and people items of a TCO.

    Attributes
    ----------
    checkpointing : {"optimal", "fixed", "none"}
        ``optimal``: the Young/Daly interval for the job's interruption rate; ``fixed``: the
        workload's ``checkpoint_interval_h``; ``none``: no checkpoints (an error whenever the
        job can be interrupted, e.g. on spot).
    checkpoint_async : bool
        Asynchronous checkpointing (the job stalls only for the snapshot, not the write).
    checkpoints_kept : int
        Checkpoints kept in storage during the run.
    depreciation : {"straight_line", "declining"}
        Book-depreciation schedule of owned hardware.
    repair_model : {"per_incident", "cluster_scale"}
        Failure/repair labour: ``per_incident`` (``incident_response``: interruptions x staff
        hours per incident x loaded rate) or ``cluster_scale`` (``repair_labour``: the same x a
        coefficient 1 + alpha log2(nodes) that grows with the job's nodes).
    """

    model_config = ConfigDict(extra="forbid")

    checkpointing: Literal["optimal", "fixed", "none"] = "optimal"
    checkpoint_async: bool = False
    checkpoints_kept: int = Field(default=2, ge=0)
    depreciation: Literal["straight_line", "declining"] = "straight_line"
    repair_model: Literal["per_incident", "cluster_scale"] = "per_incident"


class DataCosts(StrictNumbers):
    """Data costs of a workload (all optional, zero by default). Prices in USD."""

    model_config = ConfigDict(extra="forbid")

    acquisition_usd: float = Field(default=0.0, ge=0, description="Licences/purchases. [USD]")
    raw_tb: float = Field(default=0.0, ge=0, description="Raw data cleaned. [TB]")
    cleaning_usd_per_tb: float = Field(default=0.0, ge=0, description="[USD/TB]")
    labeled_items: float = Field(default=0.0, ge=0, description="[items]")
    labeling_usd_per_item: float = Field(default=0.0, ge=0, description="[USD/item]")
    stored_gb: float | None = Field(
        default=None, ge=0, description="Dataset stored; default: tokens x bytes per token. [GB]"
    )
    storage_tier: str = Field(default="s3-standard", description="storage.usd-per-gb-month.<tier>")
    egress_gb: float = Field(default=0.0, ge=0, description="Internet egress. [GB]")
    egress_kind: str = Field(
        default="internet-egress-aws", description="transfer.usd-per-gb.<kind>"
    )
    cross_zone_gb: float = Field(default=0.0, ge=0, description="Cross-zone transfer. [GB]")
    cross_zone_kind: str = Field(default="cross-az-aws", description="transfer.usd-per-gb.<kind>")


class ComplianceCosts(StrictNumbers):
    """Audit-log and data retention: GB/day kept ``retention_days`` at a storage tier.

    Each day's volume is charged for its whole retention period (also after the run), and
    ``audit_hours`` of staff time at the loaded labour rate.
    """

    model_config = ConfigDict(extra="forbid")

    gb_per_day: float = Field(default=0.0, ge=0, description="[GB/day]")
    retention_days: float = Field(default=0.0, ge=0, description="[days]")
    storage_tier: str = Field(default="s3-ia", description="storage.usd-per-gb-month.<tier>")
    audit_hours: float = Field(
        default=0.0,
        ge=0,
        description="Staff hours of audits and evidence requests over the retention. [h]",
    )


class Scenario(StrictNumbers):
    """A question to answer: a workload (or stages) on hardware options, with assumptions.

    Attributes
    ----------
    name : str
        Scenario name.
    workload : TrainingWorkload or InferenceWorkload, optional
        The workload compared across ``options``.
    options : list of HardwareOption
        Hardware and pricing options to compare.
    stages : list of Stage
        A multi-stage plan, added up stage by stage (alternative to workload/options).
    preset : str, optional
        Named assumption preset from the catalog.
    assumptions : dict
        Factor overrides (factor id -> value) applied on top of the preset.
    ops : OpsAssumptions
        Checkpointing and depreciation choices.
    data, compliance : DataCosts, ComplianceCosts
        Data and retention costs (zero unless given).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = "scenario"
    description: str = ""
    workload: Workload | None = None
    options: list[HardwareOption] = Field(default_factory=list)
    stages: list[Stage] = Field(default_factory=list)
    preset: str | None = None
    assumptions: dict[str, float | list[float]] = Field(default_factory=dict)
    calibration: str | None = Field(default=None, description="Calibration profile YAML path.")
    ops: OpsAssumptions = Field(default_factory=OpsAssumptions)
    data: DataCosts = Field(default_factory=DataCosts)
    compliance: ComplianceCosts = Field(default_factory=ComplianceCosts)

    @model_validator(mode="after")
    def _something_to_do(self) -> Scenario:
        if self.stages:
            return self
        if self.workload is None:
            msg = "a scenario needs a 'workload' with 'options', or 'stages'"
            raise ValueError(msg)
        if not self.options:
            msg = "'options' must list at least one hardware option"
            raise ValueError(msg)
        return self

    def workloads(self) -> list[tuple[str, TrainingWorkload | InferenceWorkload]]:
        """``(field path, workload)`` of the workload and of every stage."""
        out: list[tuple[str, TrainingWorkload | InferenceWorkload]] = []
        if self.workload is not None:
            out.append(("workload", self.workload))
        out += [(f"stages[{i}].workload", st.workload) for i, st in enumerate(self.stages)]
        return out

    def file_references(self, model_ids: Any = ()) -> list[tuple[str, str]]:
        """Every field whose value would be read as a file: ``(field path, value)``.

        The one list of the scenario's path-like fields: the calibration profile, a load profile
        given as a CSV path, and a model that is not one of ``model_ids`` (a ``config.json`` or
        model YAML path). The web API refuses each one (the server reads no files).
        """
        refs: list[tuple[str, str]] = []
        if self.calibration is not None:
            refs.append(("calibration", self.calibration))
        for where, wl in self.workloads():
            if wl.model not in model_ids:
                refs.append((f"{where}.model", wl.model))
            prof = getattr(wl, "load_profile", None)
            if isinstance(prof, str) and prof not in NAMED_LOAD_PROFILES:
                refs.append((f"{where}.load_profile", prof))
        return refs

    # ------------------------------------------------------------------ YAML
    @classmethod
    def from_dict(cls, data: Any, *, file: str | None = None) -> Scenario:
        """Validate a mapping; errors name the file, field path, value and expectation.

        Every number also passes :func:`aitco.limits.check_tree` (the ranges of the flags of
        the same name), whichever door the mapping came through: a YAML file, a web request.
        """
        if not isinstance(data, dict):
            raise InputError("scenario", type(data).__name__, "a mapping", file=file)
        try:
            scen = cls.model_validate(data)
        except ValidationError as exc:
            raise scenario_error(exc, data, file) from exc
        check_tree(data, file=file)  # absurd numbers the schema lets through stop here too
        return scen

    @classmethod
    def from_yaml(cls, path: str | Path) -> Scenario:
        """Read a scenario YAML file."""
        p = Path(path)
        data = load_yaml(p, field="SCENARIO")
        check_tree(data, file=str(p))  # NaN/inf, negative or absurd numbers stop at the edge
        return cls.from_dict(data, file=str(p))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict without unset defaults (what :meth:`to_yaml` writes)."""
        out = self.model_dump(mode="json", exclude_defaults=True)
        # the workload discriminator must survive even though it equals its default
        if self.workload is not None:
            out.setdefault("workload", {})
            out["workload"] = {"kind": self.workload.kind, **out["workload"]}
        for st, raw in zip(self.stages, out.get("stages", []), strict=False):
            raw["workload"] = {"kind": st.workload.kind, **raw.get("workload", {})}
        return out

    def to_yaml(self, path: str | Path | None = None) -> str:
        """YAML text of the scenario; written atomically to ``path`` when given."""
        text = yaml.safe_dump(self.to_dict(), sort_keys=False)
        if path is not None:
            write_atomic(Path(path), text)
        return text


def scenario_error(exc: ValidationError, data: Any, file: str | None) -> InputError:
    """Turn a pydantic error into an :class:`InputError` naming field, value and expectation."""
    err = exc.errors()[0]
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p in ("training", "inference"))]
    value: Any = data
    for p in loc:
        in_dict = isinstance(value, dict) and p in value
        in_list = isinstance(value, list) and isinstance(p, int) and p < len(value)
        if in_dict or in_list:
            value = value[p]
        else:
            value = err.get("input")
            break
    field = ".".join(str(p) for p in loc) or "scenario"
    return InputError(field, value, err["msg"].removeprefix("Value error, "), file=file)

"""Pydantic schema of catalog entries.

Entries hold plain typed values (what the models compute with) and a ``provenance`` map from each
field path to the source it came from, so that every value shown or used can say where it came
from and when. The YAML form lets each value be written either bare (it then takes the entry's
default ``source``) or as ``{value: ..., source: KEY, note: ...}``; see :mod:`aitco.catalog.loader`.

Units are in field names (``_gb``, ``_gb_s``, ``_w``, ``_usd``, ``_tflops``) and in the
``unit`` metadata of each field, which the catalog reference is generated from.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from aitco.limits import MIN_POWER_LIMIT_FRACTION, Range, check_value
from aitco.units import BLOCK_SCALED_FORMATS, DTYPES

NonNeg = Field(ge=0)


def _f(description: str, unit: str | None = None, **kw: Any) -> Any:
    if unit:
        kw["json_schema_extra"] = {"unit": unit}
    return Field(description=description, **kw)


class Source(BaseModel):
    """A bibliographic source: a title, a URL or document, and the date it was read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    title: str
    url: str | None = None
    document: str | None = None
    retrieved: dt.date = _f("Date the source was read or published (as_of).")
    note: str | None = None

    def cite(self) -> str:
        """One-line citation: title, where, date."""
        where = self.url or self.document or ""
        return f"{self.title}{' — ' + where if where else ''} (retrieved {self.retrieved})"


class Provenance(BaseModel):
    """Where one value came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Source
    note: str | None = None


class Entry(BaseModel):
    """Base of every catalog entry: an id, a name and the provenance of each value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = _f(
        "Lowercase hyphenated id, e.g. 'h100-sxm5-80gb'.", pattern=r"^[a-z0-9][a-z0-9._/+-]*$"
    )
    name: str = ""
    note: str | None = None
    provenance: dict[str, Provenance] = Field(default_factory=dict, repr=False)

    def values(self) -> dict[str, Any]:
        """Flat ``{field.path: value}`` of every leaf value except the provenance itself."""
        return flatten(self.model_dump(exclude={"provenance"}, exclude_unset=True))


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts into dotted keys.

    Lists of records (non-empty lists whose items are all dicts, e.g. the prices of an offer) are
    flattened with their index (``prices.0.usd_per_hour``); other lists are kept as leaf values.
    """
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                out.update(flatten(v, key))
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                for i, x in enumerate(v):
                    out.update(flatten(x, f"{key}.{i}"))
            else:
                out[key] = v
    else:
        out[prefix] = d
    return out


# --------------------------------------------------------------------------- accelerators
AcceleratorKind = Literal["gpu", "tpu", "npu", "edge"]


class _PriceDates(BaseModel):
    """Dating fields shared by purchase and rental prices (each declares its own ``as_of``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    retrieved: dt.date | None = _f("Date the price was read, where it differs.", default=None)
    as_of_estimated: bool = _f(
        "Whether ``as_of`` was chosen by hand (the source gives no date).", default=False
    )
    usd_year: int | None = _f(
        "Year whose dollars the price is in (None: the year of ``as_of``).",
        default=None,
        ge=1913,
        le=2100,
    )

    @property
    def dollar_year(self) -> int:
        """Year whose dollars the price is in: ``usd_year``, else the year of ``as_of``."""
        as_of: dt.date = getattr(self, "as_of")  # noqa: B009 - declared by each subclass
        return self.usd_year or as_of.year


class Price(_PriceDates):
    """A purchase price (per unit) with currency, date and kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    usd: float = _f("Price in nominal US dollars of ``usd_year``.", "USD", ge=0)
    as_of: dt.date = _f("Date the price applied (quoted, listed or sold).")
    kind: str = _f("list, street, listing, system_per_gpu, estimate, ...", default="list")
    region: str = "global"
    currency: Literal["USD"] = "USD"


class Accelerator(Entry):
    """One accelerator (GPU, TPU, NPU, edge module): dense peaks, memory, links and power."""

    vendor: str
    kind: AcceleratorKind = "gpu"
    family: str = _f("Efficiency family key (e.g. 'nvidia-hopper'); see aitco.perf.efficiency.")
    form_factor: str = ""
    peak_tflops: dict[str, float] = _f(
        "Dense peak throughput per data type (no sparsity). int8 is in TOPS.", "TFLOP/s"
    )
    memory_gb: float = _f("Device memory capacity.", "GB", gt=0)
    hbm_bandwidth_gb_s: float = _f("Device memory bandwidth.", "GB/s", gt=0)
    scale_up_bandwidth_gb_s: float | None = _f(
        "Scale-up link bandwidth per device, one direction.", "GB/s", default=None, ge=0
    )
    pcie_gen: int | None = _f("Host PCIe generation.", default=None, ge=1, le=7)
    compute_units: int | None = _f(
        "Streaming multiprocessors (NVIDIA SMs) or compute units (AMD CUs) that GEMM tiles are "
        "scheduled on (wave quantization).",
        default=None,
        ge=1,
    )
    matmul_tflops: dict[str, float] = _f(
        "Measured maximum achievable dense matmul throughput per data type (a GEMM "
        "microbenchmark such as MAMF, where one is published); the share of the peak that kernels "
        "reach on this accelerator and software.",
        "TFLOP/s",
        default_factory=dict,
    )
    block_scaled_formats: list[str] = _f(
        "Block-scaled number formats the matrix units run natively (MXFP8, MXFP6, MXFP4, "
        "NVFP4: aitco.units.BLOCK_SCALED_FORMATS), at the dense peak of their element type; "
        "a format not listed is emulated (dequantised to a type the part has).",
        default_factory=list,
    )
    host_link_gb_s: float | None = _f(
        "Per-direction bandwidth between the device and its host's memory when it is not a "
        "PCIe x16 link (NVLink-C2C on Grace superchips); None: the PCIe generation's rate.",
        "GB/s",
        default=None,
        gt=0,
    )
    elementwise_fused_into_matmul: bool = _f(
        "Whether the accelerator's compiler fuses elementwise work (norms, residual adds, "
        "activations, rotary, casts) into the operands and outputs of the adjacent matmuls, so "
        "it moves no extra HBM traffic (XLA on TPU, the only compiler those chips have); GPU "
        "stacks launch it as separate memory-bound kernels.",
        default=False,
    )
    tdp_w: float | None = _f("Maximum board/module power.", "W", default=None, gt=0)
    power_limit_w: float | None = _f(
        "Power limit the accelerator is run at when below its TDP (``nvidia-smi -pl``, a "
        "deployment setting): energy is drawn up to it and the compute clocks drop "
        "(``aitco.perf.power``); the peak and matmul figures hold at the TDP. None = the TDP.",
        "W",
        default=None,
        gt=0,
    )
    idle_w: float | None = _f("Measured idle power, where published.", "W", default=None, ge=0)
    launch_year: int = _f("Year of launch.", ge=2010, le=2035)
    price: Price | None = None
    price_history: list[Price] = _f(
        "Earlier (or other) dated purchase quotes of the part, kept beside ``price`` (the quote "
        "in force): ``catalog show`` prints the trend, ``--as-of`` prices with the quote of a "
        "date, and the residual-value decline is fitted from them (aitco.catalog.history).",
        default_factory=list,
    )
    residual_class: str = _f(
        "Residual-value curve key in the factors (e.g. 'datacenter-gpu').", default="datacenter-gpu"
    )
    default_system: str | None = _f(
        "System id used when only the accelerator is named.", default=None
    )

    @field_validator("block_scaled_formats")
    @classmethod
    def _known_formats(cls, v: list[str]) -> list[str]:
        for k in v:
            if k not in BLOCK_SCALED_FORMATS:
                known = ", ".join(BLOCK_SCALED_FORMATS)
                msg = f"unknown block-scaled format {k!r} (expected {known})"
                raise ValueError(msg)
        return v

    @field_validator("peak_tflops", "matmul_tflops")
    @classmethod
    def _known_dtypes(cls, v: dict[str, float]) -> dict[str, float]:
        for k, x in v.items():
            if k not in DTYPES:
                msg = f"unknown data type {k!r} (expected one of {', '.join(DTYPES)})"
                raise ValueError(msg)
            if x <= 0:
                msg = f"{k} throughput must be > 0, got {x} TFLOP/s"
                raise ValueError(msg)
        return v

    def with_power_limit(
        self, power_limit_w: float | None, *, field: str = "--power-limit-w"
    ) -> Accelerator:
        """Return this accelerator run at ``power_limit_w`` (itself when None).

        Raises
        ------
        aitco.errors.InputError
            The limit is above the TDP or below the lowest limit a driver accepts
            (:data:`aitco.limits.MIN_POWER_LIMIT_FRACTION` of the TDP): one check for every
            door (``train``, ``infer``, a scenario option).
        """
        if power_limit_w is None:
            return self
        if self.tdp_w is not None:
            lo = MIN_POWER_LIMIT_FRACTION * self.tdp_w
            check_value(
                field,
                power_limit_w,
                rng=Range(lo, self.tdp_w, f"W (from {MIN_POWER_LIMIT_FRACTION:.0%} of the "
                          f"{self.tdp_w:g} W TDP of {self.id} up to it)"),
            )  # fmt: skip
        return self.model_copy(update={"power_limit_w": power_limit_w})

    @property
    def board_power_w(self) -> float | None:
        """Most power one device draws: its TDP, or the lower power limit it is run at [W]."""
        if self.power_limit_w is None:
            return self.tdp_w
        if self.tdp_w is None:
            return self.power_limit_w
        return min(self.tdp_w, self.power_limit_w)

    def supports(self, dtype: str) -> bool:
        """Whether the accelerator has a dense peak for ``dtype``."""
        return dtype in self.peak_tflops

    def matmul_ceiling(self, dtype: str) -> float | None:
        """Measured matmul throughput over the dense peak for ``dtype`` (0-1), or ``None``.

        A data type without its own measurement (e.g. fp8 where only bf16 was benchmarked) takes
        the bf16 fraction; ``None`` when nothing was measured.
        """
        for d in (dtype, "bf16"):
            if d in self.matmul_tflops and d in self.peak_tflops:
                return min(1.0, self.matmul_tflops[d] / self.peak_tflops[d])
        return None


# --------------------------------------------------------------------------- systems
Fabric = Literal["nvswitch", "nvlink", "xgmi", "pcie", "ici", "neuronlink", "roce", "unified"]


class System(Entry):
    """A node or pod: devices per node, intra-node fabric, NICs, node power and price."""

    accelerator: str = _f("Accelerator id.")
    devices_per_node: int = _f("Accelerators per node.", ge=1)
    intra_node_fabric: Fabric
    intra_node_bandwidth_gb_s: float = _f(
        "Bandwidth per device to its peers inside the node, one direction.", "GB/s", gt=0
    )
    intra_node_latency_us: float = _f(
        "Per-message latency inside the node.", "us", default=2.0, ge=0
    )
    scale_up_domain: int = _f(
        "Devices reachable over the scale-up fabric (8 for HGX, 72 for NVL72, pod size for TPU).",
        default=8,
        ge=1,
    )
    nics_per_node: int = _f("Scale-out NICs per node.", default=0, ge=0)
    scale_out_bandwidth_gb_s: float = _f(
        "Scale-out bandwidth per device, one direction.", "GB/s", default=0.0, ge=0
    )
    scale_out_latency_us: float = _f("Per-message latency across nodes.", "us", default=5.0, ge=0)
    topology: str = _f(
        "Scale-out topology: fat-tree, rail-optimized, torus-2d, torus-3d, none.",
        default="fat-tree",
    )
    node_power_w: float = _f(
        "Node power beyond the accelerators (CPUs, NICs, fans, switches in the node).",
        "W",
        default=0.0,
        ge=0,
    )
    node_price: Price | None = None
    node_price_history: list[Price] = _f(
        "Earlier (or other) dated quotes of the node price, kept beside ``node_price``.",
        default_factory=list,
    )
    cooling: Literal["air", "liquid"] = "air"
    host_memory_gb: float | None = _f(
        "Host (CPU) memory of one node, where ZeRO-Offload keeps optimizer states and parameters.",
        "GB",
        default=None,
        gt=0,
    )
    host_memory_bandwidth_gb_s: float | None = _f(
        "Peak host memory bandwidth of one node (all sockets: channels x transfer rate x 8 B), "
        "which a CPU optimizer step streams.",
        "GB/s",
        default=None,
        gt=0,
    )
    nvme_capacity_gb: float | None = _f(
        "Local NVMe capacity of one node (all drives), where ZeRO-Infinity's NVMe offload keeps "
        "optimizer states and parameters.",
        "GB",
        default=None,
        gt=0,
    )
    nvme_read_gb_s: float | None = _f(
        "Sustained sequential read bandwidth of the node's NVMe drives together (RAID 0).",
        "GB/s",
        default=None,
        gt=0,
    )
    nvme_write_gb_s: float | None = _f(
        "Sustained sequential write bandwidth of the node's NVMe drives together (RAID 0).",
        "GB/s",
        default=None,
        gt=0,
    )


# --------------------------------------------------------------------------- cloud offers
PricingTerm = Literal["on_demand", "spot", "reserved_1y", "reserved_3y"]
ClusterNetwork = Literal["efa", "infiniband", "roce", "ici", "neuronlink", "ethernet", "none"]


class OfferPrice(_PriceDates):
    """One rental price of a cloud offer, for a term and a region, on a date."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    term: PricingTerm
    region: str
    usd_per_hour: float = _f("Price per instance-hour.", "USD/h", ge=0)
    as_of: dt.date = _f("Date the price applied (the price list's date).")
    currency: Literal["USD"] = "USD"
    source: str = _f("Source key (resolved into the entry's provenance).")
    note: str | None = None


class CloudOffer(Entry):
    """A rentable instance type of a provider, with its prices by term and region."""

    provider: str
    instance: str
    accelerator: str = _f("Accelerator id.")
    system: str | None = _f("System id whose topology the instance has.", default=None)
    accelerators_per_instance: int = _f("Accelerators in one instance.", ge=1)
    vcpus: int | None = _f("Host vCPUs of one instance, where stated.", default=None, ge=1)
    host_memory_gb: float | None = _f(
        "Host (CPU) memory of one instance, where stated.", "GB", default=None, gt=0
    )
    cluster_network: ClusterNetwork | None = _f(
        "Fabric that joins instances for multi-node jobs ('none': the provider offers no cluster "
        "network for this shape; null: not stated).",
        default=None,
    )
    max_instances: int | None = _f(
        "Largest cluster of this shape the provider states it sells, where stated.",
        default=None,
        ge=1,
    )
    prices: list[OfferPrice] = Field(min_length=1)
    price_history: list[OfferPrice] = _f(
        "Earlier dated quotes of the offer (any term and region), kept beside ``prices`` (the "
        "quotes in force, one per term and region): ``catalog show`` prints the trend and "
        "``--as-of`` prices with the quotes of a date.",
        default_factory=list,
    )

    @property
    def family(self) -> str:
        """Instance family, the key of family-level factors (``p5.48xlarge`` -> ``p5``)."""
        return instance_family(self.instance)

    def usd_per_accel_hour(self, term: str, region: str | None = None) -> float | None:
        """Cheapest price per accelerator-hour for ``term`` (in ``region`` when given)."""
        cands = [
            p.usd_per_hour / self.accelerators_per_instance
            for p in self.prices
            if p.term == term and (region is None or p.region == region)
        ]
        return min(cands) if cands else None


def instance_family(instance: str) -> str:
    """Family of an instance type, as providers group them for spot capacity and pricing.

    AWS names are ``<family>.<size>`` (``p5.48xlarge`` -> ``p5``, ``g6e.12xlarge`` -> ``g6e``);
    other names are their own family, lower-cased with ``_`` as ``-``
    (``Standard_ND96isr_H100_v5`` -> ``standard-nd96isr-h100-v5``).

    Examples
    --------
    >>> instance_family("p4d.24xlarge"), instance_family("a3-highgpu-8g")
    ('p4d', 'a3-highgpu-8g')
    """
    name = instance.strip().lower()
    return name.split(".", 1)[0] if "." in name else name.replace("_", "-")


#: Factor id prefix of spot/preemptible interruption rates (per instance-hour).
SPOT_RATE_PREFIX = "spot-interruption.per-hour."


def spot_rate_ids(provider: str | None, instance: str | None) -> list[str]:
    """Factor ids of a spot interruption rate, most specific first.

    ``spot-interruption.per-hour.<provider>.<family>`` (the provider's published band for that
    instance family), then ``<provider>``, then ``default``.

    Examples
    --------
    >>> spot_rate_ids("aws", "p5.48xlarge")[0]
    'spot-interruption.per-hour.aws.p5'
    """
    prov = (provider or "default").lower()
    ids = [f"{SPOT_RATE_PREFIX}{prov}", f"{SPOT_RATE_PREFIX}default"]
    if instance and prov != "default":
        ids.insert(0, f"{SPOT_RATE_PREFIX}{prov}.{instance_family(instance)}")
    return list(dict.fromkeys(ids))


# --------------------------------------------------------------------------- models
class MoE(BaseModel):
    """Mixture-of-experts feed-forward layers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_experts: int = Field(ge=1)
    n_active: int = Field(ge=1, description="Routed experts active per token.")
    n_shared: int = Field(default=0, ge=0, description="Shared experts always active.")
    d_ff_expert: int = Field(ge=1, description="Hidden size of one expert's FFN.")
    first_dense_layers: int = Field(default=0, ge=0, description="Leading layers with a dense FFN.")
    n_moe_layers: int | None = Field(
        default=None,
        ge=1,
        description="Layers with experts when MoE and dense FFN layers interleave (Llama 4 "
        "``interleave_moe_layer_step``, Qwen2-MoE ``decoder_sparse_step``); None = every layer "
        "after ``first_dense_layers``. The other layers have a dense FFN of ``d_ff``.",
    )
    n_groups: int = Field(
        default=1,
        ge=1,
        description="Expert groups of group-limited (node-limited) routing (Hugging Face "
        "``n_group``); 1 = routing over all experts.",
    )
    topk_groups: int | None = Field(
        default=None,
        ge=1,
        description="Groups a token's experts may come from (``topk_group``; DeepSeek-V3: 4 "
        "of 8, 'each token sent to at most 4 nodes'); None = no limit.",
    )

    @model_validator(mode="after")
    def _active_le_total(self) -> MoE:
        if self.n_active > self.n_experts:
            msg = f"moe.n_active ({self.n_active}) exceeds moe.n_experts ({self.n_experts})"
            raise ValueError(msg)
        if self.n_experts % self.n_groups:
            msg = f"moe.n_groups ({self.n_groups}) does not divide moe.n_experts ({self.n_experts})"
            raise ValueError(msg)
        if self.topk_groups is not None and self.topk_groups > self.n_groups:
            msg = f"moe.topk_groups ({self.topk_groups}) exceeds moe.n_groups ({self.n_groups})"
            raise ValueError(msg)
        return self

    @property
    def group_limited(self) -> bool:
        """Whether routing limits each token to fewer expert groups than there are."""
        return self.topk_groups is not None and self.topk_groups < self.n_groups

    @property
    def routing_groups(self) -> tuple[int, int]:
        """``(n_groups, topk_groups)`` of group-limited routing; ``(1, 0)`` without a limit."""
        return (self.n_groups, self.topk_groups or 0) if self.group_limited else (1, 0)


class MLA(BaseModel):
    """Multi-head latent attention (DeepSeek-V2/V3) dimensions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    q_lora_rank: int | None = Field(default=None, ge=1)
    kv_lora_rank: int = Field(ge=1)
    qk_nope_head_dim: int = Field(ge=1)
    qk_rope_head_dim: int = Field(ge=0)
    v_head_dim: int = Field(ge=1)


class ModelArch(Entry):
    """A transformer architecture: enough to count parameters, FLOPs, memory and KV cache."""

    family: str = ""
    n_layers: int = Field(ge=1)
    d_model: int = Field(ge=1)
    n_heads: int = Field(ge=1)
    n_kv_heads: int | None = Field(
        default=None, ge=1, description="KV heads (GQA/MQA); None = n_heads."
    )
    head_dim: int | None = Field(default=None, ge=1, description="None = d_model / n_heads.")
    d_ff: int = Field(ge=1, description="FFN hidden size of dense layers.")
    vocab_size: int = Field(ge=1)
    max_seq_len: int = Field(default=2048, ge=1)
    ffn_type: Literal["gelu", "relu", "swiglu", "geglu"] = "swiglu"
    norm: Literal["layernorm", "rmsnorm"] = "rmsnorm"
    position_embedding: Literal["learned", "rope", "alibi", "none"] = "rope"
    tied_embeddings: bool = False
    attention_bias: bool = Field(default=False, description="Biases on Q/K/V/O projections.")
    qkv_bias_only: bool = Field(default=False, description="Bias on Q/K/V only (Qwen2).")
    mlp_bias: bool = False
    parallel_attention: bool = Field(
        default=False, description="Attention and MLP in parallel (Falcon, GPT-J)."
    )
    sliding_window: int | None = Field(default=None, ge=1)
    sliding_window_every: int = Field(
        default=0, ge=0, description="Every k-th layer uses the sliding window (0 = all or none)."
    )
    sliding_window_layers: int | None = Field(
        default=None,
        ge=0,
        description="Layers that attend only to the sliding window, when the model states them "
        "(Hugging Face ``layer_types`` / ``sliding_window_pattern``: Gemma 3 five of six, "
        "gpt-oss every other); overrides ``sliding_window_every``.",
    )
    moe: MoE | None = None
    mla: MLA | None = None
    published_params_b: float | None = Field(
        default=None, gt=0, description="Published total parameter count, in billions."
    )
    published_active_params_b: float | None = Field(default=None, gt=0)
    published_params_resolution_b: float | None = Field(
        default=None,
        gt=0,
        description="Unit of the last digit of the published counts as printed (0.1 for '1.7B').",
    )

    @model_validator(mode="after")
    def _consistent(self) -> ModelArch:
        kv = self.n_kv_heads or self.n_heads
        if self.n_heads % kv:
            msg = f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({kv})"
            raise ValueError(msg)
        if self.moe is not None and self.moe.n_moe_layers is not None:
            room = self.n_layers - self.moe.first_dense_layers
            if self.moe.n_moe_layers > room:
                msg = (
                    f"moe.n_moe_layers ({self.moe.n_moe_layers}) exceeds the layers after the "
                    f"dense ones ({room})"
                )
                raise ValueError(msg)
        if self.sliding_window_layers is not None and self.sliding_window_layers > self.n_layers:
            msg = (
                f"sliding_window_layers ({self.sliding_window_layers}) exceeds n_layers "
                f"({self.n_layers})"
            )
            raise ValueError(msg)
        if self.head_dim is None and self.mla is None and self.d_model % self.n_heads:
            msg = (
                f"d_model ({self.d_model}) is not divisible by n_heads ({self.n_heads}); "
                "give head_dim"
            )
            raise ValueError(msg)
        return self

    @property
    def kv_heads(self) -> int:
        """Number of key/value heads."""
        return self.n_kv_heads or self.n_heads

    @property
    def dim_head(self) -> int:
        """Per-head dimension."""
        return self.head_dim or self.d_model // self.n_heads

    @property
    def gated_ffn(self) -> bool:
        """Whether the FFN has a gate projection (SwiGLU/GeGLU: three matrices)."""
        return self.ffn_type in ("swiglu", "geglu")


# --------------------------------------------------------------------------- factors
FactorCategory = Literal[
    "electricity",
    "pue",
    "power_conversion",
    "idle_power",
    "utilization_power",
    "carbon",
    "residual_value",
    "depreciation",
    "failure",
    "spot_interruption",
    "storage",
    "transfer",
    "labour",
    "support",
    "fragmentation",
    "firmware",
    "checkpoint",
    "compliance",
    "data",
    "finance",
    "facility",
    "network",
    "other",
]


class Factor(Entry):
    """A sourced cost or physical factor (a price, a rate, a fraction, a curve)."""

    category: FactorCategory
    value: float | list[float]
    unit: str
    low: float | None = None
    high: float | None = None
    region: str | None = None
    applies_to: str | None = Field(
        default=None, description="Hardware class, provider, ... it applies to."
    )

    @model_validator(mode="after")
    def _finite(self) -> Factor:
        vals = self.value if isinstance(self.value, list) else [self.value]
        for x in vals:
            if x != x or x in (float("inf"), float("-inf")):
                msg = f"factor {self.id}: value must be finite, got {x}"
                raise ValueError(msg)
        return self


# --------------------------------------------------------------------------- token APIs
class ApiPrice(Entry):
    """Price of a managed token API (per million tokens), on a date."""

    provider: str
    model: str
    input_usd_per_mtok: float = Field(ge=0)
    output_usd_per_mtok: float = Field(ge=0)
    cached_input_usd_per_mtok: float | None = Field(default=None, ge=0)
    batch_discount: float | None = Field(default=None, ge=0, le=1)
    context_window: int | None = Field(default=None, ge=1)
    as_of: dt.date


# --------------------------------------------------------------------------- non-transformer models
class CnnModel(Entry):
    """A non-transformer network (a CNN) described by its work per inference.

    The roofline of :mod:`aitco.perf.cnn` needs only the FLOPs, the parameters (weights read once
    per batch) and the activation elements written and read per inference.
    """

    arch: Literal["cnn"] = "cnn"
    family: str = ""
    params: float = Field(gt=0, description="Parameters. [count]")
    flops_per_inference: float = Field(
        gt=0, description="FLOPs of one forward pass (multiply-accumulates x 2). [FLOP]"
    )
    activation_elements_per_inference: float = Field(
        gt=0, description="Output elements of every layer for one input. [count]"
    )
    input_resolution: int | None = Field(default=None, ge=1, description="Square input. [px]")
    weight_layers: int = Field(
        ge=1, description="Convolution and fully connected layers (one fused kernel each)."
    )


# --------------------------------------------------------------------------- presets
class Preset(Entry):
    """A named set of assumption overrides (factor id -> value), cited as its author's claims."""

    description: str
    overrides: dict[str, float | list[float]] = Field(default_factory=dict)


KINDS: dict[str, type[Entry]] = {
    "accelerators": Accelerator,
    "systems": System,
    "offers": CloudOffer,
    "models": ModelArch,
    "factors": Factor,
    "apis": ApiPrice,
    "presets": Preset,
    "cnn_models": CnnModel,
}

"""What the performance models read from a model architecture and a system: typed protocols.

The models depend on these shapes, not on the catalog's classes: any object with these read-only
attributes will do (a catalog :class:`aitco.catalog.schema.ModelArch` or ``System``, a dataclass,
a ``SimpleNamespace`` in a test). So ``perf`` needs no catalog import, and the catalog may grow
fields without touching the models. Units are in the names (``_gb_s`` GB/s, ``_us`` microseconds).
"""

from __future__ import annotations

from typing import Protocol


class MoESpec(Protocol):
    """Mixture-of-experts feed-forward layers (see ``aitco.catalog.schema.MoE``)."""

    @property
    def n_experts(self) -> int:
        """Routed experts per MoE layer [count]."""

    @property
    def n_active(self) -> int:
        """Routed experts active per token [count]."""

    @property
    def n_shared(self) -> int:
        """Shared experts, always active [count]."""

    @property
    def d_ff_expert(self) -> int:
        """Hidden size of one expert's FFN [elements]."""

    @property
    def first_dense_layers(self) -> int:
        """Leading layers with a dense FFN instead of experts [count]."""

    @property
    def n_moe_layers(self) -> int | None:
        """Layers with experts where they interleave with dense ones [count].

        None: every layer after the leading dense ones.
        """

    @property
    def n_groups(self) -> int:
        """Expert groups of group-limited routing; 1 = none [count]."""

    @property
    def topk_groups(self) -> int | None:
        """Groups a token's experts may come from; None = no limit [count]."""

    @property
    def group_limited(self) -> bool:
        """Whether routing limits each token to fewer groups than there are."""

    @property
    def routing_groups(self) -> tuple[int, int]:
        """``(n_groups, topk_groups)`` of group-limited routing; ``(1, 0)`` without a limit."""


class MLASpec(Protocol):
    """Multi-head latent attention dimensions (see ``aitco.catalog.schema.MLA``)."""

    @property
    def q_lora_rank(self) -> int | None:
        """Rank of the query compression; None = uncompressed queries [elements]."""

    @property
    def kv_lora_rank(self) -> int:
        """Rank of the joint key/value compression (the cached latent) [elements]."""

    @property
    def qk_nope_head_dim(self) -> int:
        """Per-head query/key dimension without rotary embedding [elements]."""

    @property
    def qk_rope_head_dim(self) -> int:
        """Per-head query/key dimension with rotary embedding [elements]."""

    @property
    def v_head_dim(self) -> int:
        """Per-head value dimension [elements]."""


class ArchSpec(Protocol):
    """A transformer architecture as the models read it (see ``aitco.catalog.schema.ModelArch``)."""

    @property
    def n_layers(self) -> int:
        """Transformer layers [count]."""

    @property
    def d_model(self) -> int:
        """Hidden size [elements]."""

    @property
    def n_heads(self) -> int:
        """Attention (query) heads [count]."""

    @property
    def kv_heads(self) -> int:
        """Key/value heads [count]."""

    @property
    def dim_head(self) -> int:
        """Per-head dimension [elements]."""

    @property
    def d_ff(self) -> int:
        """FFN hidden size of dense layers [elements]."""

    @property
    def gated_ffn(self) -> bool:
        """Whether the FFN has a gate projection (SwiGLU/GeGLU: three matrices)."""

    @property
    def vocab_size(self) -> int:
        """Vocabulary size [tokens]."""

    @property
    def max_seq_len(self) -> int:
        """Longest context [tokens]."""

    @property
    def norm(self) -> str:
        """``layernorm`` (weight and bias) or ``rmsnorm`` (weight only)."""

    @property
    def position_embedding(self) -> str:
        """``learned``, ``rope``, ``alibi`` or ``none``."""

    @property
    def tied_embeddings(self) -> bool:
        """Whether the output head shares the input embedding's weights."""

    @property
    def attention_bias(self) -> bool:
        """Biases on the Q/K/V/O projections."""

    @property
    def qkv_bias_only(self) -> bool:
        """Biases on Q/K/V only (Qwen2)."""

    @property
    def mlp_bias(self) -> bool:
        """Biases on the FFN projections."""

    @property
    def parallel_attention(self) -> bool:
        """Attention and FFN in parallel from one input (Falcon, GPT-J)."""

    @property
    def sliding_window(self) -> int | None:
        """Sliding-window length of the windowed layers; None = full attention [tokens]."""

    @property
    def sliding_window_every(self) -> int:
        """Every k-th layer uses the sliding window (0 = all or none) [count]."""

    @property
    def sliding_window_layers(self) -> int | None:
        """Layers that use the sliding window, when stated; overrides the above [count]."""

    @property
    def moe(self) -> MoESpec | None:
        """Mixture-of-experts layers, or None for a dense model."""

    @property
    def mla(self) -> MLASpec | None:
        """Latent attention dimensions, or None for standard attention."""


class LinkSpec(Protocol):
    """The links of a node or pod as the collective models read them (``catalog.schema.System``).

    An object may also have ``scale_up_domain`` (devices reachable over the scale-up fabric,
    e.g. 72 for an NVL72 rack); without it the scale-up domain is one node.
    """

    @property
    def devices_per_node(self) -> int:
        """Accelerators per node [count]."""

    @property
    def intra_node_bandwidth_gb_s(self) -> float:
        """Per-device scale-up bandwidth, one direction [GB/s]."""

    @property
    def intra_node_latency_us(self) -> float:
        """Per-message latency inside the scale-up domain [us]."""

    @property
    def scale_out_bandwidth_gb_s(self) -> float:
        """Per-device scale-out (network) bandwidth, one direction [GB/s]."""

    @property
    def scale_out_latency_us(self) -> float:
        """Per-message latency across nodes [us]."""


class PowerSpec(Protocol):
    """The power figures of an accelerator (``catalog.schema.Accelerator``)."""

    @property
    def tdp_w(self) -> float | None:
        """Maximum board/module power; the peak figures hold at it [W]."""

    @property
    def power_limit_w(self) -> float | None:
        """Power limit the device is run at when below its TDP; None = the TDP [W]."""


class FormatSpec(Protocol):
    """The number formats an accelerator runs (``catalog.schema.Accelerator``)."""

    @property
    def id(self) -> str:
        """Catalog id of the accelerator."""

    @property
    def peak_tflops(self) -> dict[str, float]:
        """Dense peak throughput per data type [TFLOP/s]."""

    @property
    def block_scaled_formats(self) -> list[str]:
        """Block-scaled formats the matrix units run natively (MXFP8, NVFP4, ...)."""

    def supports(self, dtype: str) -> bool:
        """Whether the accelerator has a dense peak for ``dtype``."""

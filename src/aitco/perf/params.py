"""Parameter counts of transformer architectures, from their dimensions.

The count is exact for the architectures in the catalog (embeddings, attention projections with
GQA/MQA/MLA, dense or gated FFNs, MoE experts and routers, norms and biases), so that it can be
checked against published counts (``tests/catalog/test_param_counts.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aitco.perf.specs import ArchSpec


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts of a model, split by role.

    Attributes
    ----------
    embedding : int
        Token (and learned position) embeddings.
    lm_head : int
        Output projection (0 when tied to the embedding).
    attention : int
        All attention projections (with biases), all layers.
    ffn_dense : int
        Dense FFN weights (with biases), all dense layers.
    ffn_expert : int
        Routed-expert weights, all MoE layers (all experts).
    ffn_shared : int
        Shared-expert weights, all MoE layers.
    router : int
        MoE router (gate) weights.
    norm : int
        Normalisation weights (and biases).
    expert_active : int
        Routed-expert weights active per token, all MoE layers.
    """

    embedding: int
    lm_head: int
    attention: int
    ffn_dense: int
    ffn_expert: int
    ffn_shared: int
    router: int
    norm: int
    expert_active: int

    @property
    def total(self) -> int:
        """All parameters."""
        return (
            self.embedding
            + self.lm_head
            + self.attention
            + self.ffn_dense
            + self.ffn_expert
            + self.ffn_shared
            + self.router
            + self.norm
        )

    @property
    def active(self) -> int:
        """Parameters used per token (only the active routed experts count)."""
        return self.total - self.ffn_expert + self.expert_active

    @property
    def non_embedding(self) -> int:
        """All parameters except the token/position embedding and the LM head."""
        return self.total - self.embedding - self.lm_head


def attention_params_per_layer(m: ArchSpec) -> int:
    """Count the weights and biases of one attention block [count]."""
    d = m.d_model
    if m.mla is not None:
        a = m.mla
        qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            q = d * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * m.n_heads * qk_head
        else:
            q = d * m.n_heads * qk_head
        kv_down = d * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank
        kv_up = a.kv_lora_rank * m.n_heads * (a.qk_nope_head_dim + a.v_head_dim)
        o = m.n_heads * a.v_head_dim * d
        return q + kv_down + kv_up + o
    hd = m.dim_head
    q = d * m.n_heads * hd
    kv = 2 * d * m.kv_heads * hd
    o = m.n_heads * hd * d
    bias = 0
    if m.attention_bias:
        bias = m.n_heads * hd + 2 * m.kv_heads * hd + d
    elif m.qkv_bias_only:
        bias = m.n_heads * hd + 2 * m.kv_heads * hd
    return q + kv + o + bias


def ffn_params(m: ArchSpec, d_ff: int) -> int:
    """Count the weights and biases of one FFN of hidden size ``d_ff`` [count]."""
    mats = 3 if m.gated_ffn else 2
    bias = (d_ff * (mats - 1) + m.d_model) if m.mlp_bias else 0
    return mats * m.d_model * d_ff + bias


def norm_params_per_layer(m: ArchSpec) -> int:
    """Norm weights of one layer (two norms, one if attention and MLP run in parallel)."""
    per_norm = m.d_model * (2 if m.norm == "layernorm" else 1)
    n_norms = 1 if m.parallel_attention else 2
    return per_norm * n_norms


def moe_layer_count(m: ArchSpec) -> int:
    """Layers with routed experts (0 for a dense model) [count].

    ``moe.n_moe_layers`` where MoE and dense layers interleave (Llama 4, Qwen2-MoE with a sparse
    step), else every layer after the leading dense ones (DeepSeek ``first_k_dense_replace``).
    The other ``n_layers - moe_layer_count`` layers have a dense FFN of ``d_ff``.
    """
    if m.moe is None:
        return 0
    n = getattr(m.moe, "n_moe_layers", None)
    return int(n) if n is not None else m.n_layers - m.moe.first_dense_layers


def param_counts(m: ArchSpec) -> ParamCounts:
    """Count the parameters of ``m`` by role.

    Parameters
    ----------
    m : ArchSpec
        The architecture.

    Returns
    -------
    ParamCounts
        Counts by role; ``.total`` and ``.active`` give the headline numbers.

    Examples
    --------
    >>> from aitco.catalog.schema import ModelArch
    >>> gpt2 = ModelArch(id="gpt2", n_layers=12, d_model=768, n_heads=12, d_ff=3072,
    ...                  vocab_size=50257, max_seq_len=1024, ffn_type="gelu", norm="layernorm",
    ...                  position_embedding="learned", tied_embeddings=True,
    ...                  attention_bias=True, mlp_bias=True)
    >>> param_counts(gpt2).total
    124439808
    """
    emb = m.vocab_size * m.d_model
    if m.position_embedding == "learned":
        emb += m.max_seq_len * m.d_model
    lm_head = 0 if m.tied_embeddings else m.vocab_size * m.d_model
    attn = attention_params_per_layer(m) * m.n_layers
    norm = norm_params_per_layer(m) * m.n_layers + m.d_model * (2 if m.norm == "layernorm" else 1)
    if m.mla is not None:
        a = m.mla
        extra = a.kv_lora_rank + (a.q_lora_rank or 0)  # latent norms
        norm += extra * m.n_layers
    if m.moe is None:
        return ParamCounts(emb, lm_head, attn, ffn_params(m, m.d_ff) * m.n_layers, 0, 0, 0, norm, 0)
    moe = m.moe
    n_moe = moe_layer_count(m)
    dense = ffn_params(m, m.d_ff) * (m.n_layers - n_moe)
    one_expert = ffn_params(m, moe.d_ff_expert)
    experts = one_expert * moe.n_experts * n_moe
    shared = one_expert * moe.n_shared * n_moe
    router = m.d_model * moe.n_experts * n_moe
    active = one_expert * moe.n_active * n_moe
    return ParamCounts(emb, lm_head, attn, dense, experts, shared, router, norm, active)

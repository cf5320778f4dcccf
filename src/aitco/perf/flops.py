"""FLOPs of transformer training, per token: dense and MoE, attention, LM head, LoRA, recompute.

All counts are multiply-adds x 2. The *model* FLOPs (MFU basis) count one forward and one
backward pass; the *hardware* FLOPs (HFU basis) add what activation recomputation executes again.

References
----------
.. [1] J. Kaplan et al., "Scaling laws for neural language models", arXiv:2001.08361, 2020
   (6N FLOPs per token).
.. [2] A. Chowdhery et al., "PaLM: scaling language modeling with pathways", arXiv:2204.02311,
   2022, App. B (MFU with attention FLOPs).
.. [3] V. Korthikanti et al., "Reducing activation recomputation in large transformer models",
   arXiv:2205.05198, 2022 (HFU, selective recomputation).
.. [4] E. Hu et al., "LoRA: low-rank adaptation of large language models", arXiv:2106.09685, 2021.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.perf.params import (
    attention_params_per_layer,
    ffn_params,
    moe_layer_count,
    param_counts,
)
from aitco.perf.specs import ArchSpec

F64 = NDArray[np.float64]

#: FLOPs per multiply-add.
FLOPS_PER_MAC = 2.0
#: Backward pass of a matmul = two matmuls of the forward's size (input and weight gradients).
BACKWARD_MATMULS = 2.0
#: Forward FLOPs per (active) weight per token: one multiply-add, 2N for a forward pass [1].
FORWARD_FLOPS_PER_PARAM = FLOPS_PER_MAC
#: Training FLOPs per (active) weight per token, forward and backward: the 6N rule [1].
TRAINING_FLOPS_PER_PARAM = (1.0 + BACKWARD_MATMULS) * FLOPS_PER_MAC
#: Causal masking halves the attention score/value matmuls (FlashAttention skips masked blocks).
CAUSAL_FRACTION = 0.5
#: LoRA rank used when none is given (QLoRA paper, Dettmers et al. 2023, uses 16 to 64).
DEFAULT_LORA_RANK = 16


@dataclass(frozen=True)
class ModelShape:
    """Scalar dimensions of a model that the vectorised training model needs.

    Attributes are counts; ``*_params`` are parameter counts; ``attn_width`` is
    ``n_heads * head_dim`` of the score/value products.
    """

    n_layers: int
    d_model: int
    n_heads: int
    kv_heads: int
    head_dim: int
    qk_head_dim: int  # width of the query-key product per head (MLA: nope + rope)
    d_ff: int
    vocab_size: int
    gated: bool
    rope: bool
    layer_dense_params: float  # attention + norm + dense FFN of a dense layer
    attn_params_per_layer: float
    ffn_active_params_per_layer: float  # mean over layers of FFN params touched per token
    expert_params_per_layer: float  # mean over layers of routed-expert params (all experts)
    moe_layers: int
    n_experts: int
    n_active_experts: int
    embedding_params: float
    lm_head_params: float
    total_params: float
    active_params: float
    lora_params: float  # adapter params for all linear projections at DEFAULT_LORA_RANK
    ffn_width_active: float  # hidden width of the FFN(s) a token passes through (for activations)
    window: int | None
    window_layer_fraction: float = 1.0  # share of the layers that attend only to the window
    expert_groups: int = 1  # groups of group-limited routing (1: none)
    topk_expert_groups: int = 0  # groups a token may use (0: no limit)


def sliding_window_layer_count(m: ArchSpec) -> int:
    """Layers that attend only to a sliding window (0 if none) [count].

    The model's stated ``sliding_window_layers`` (Hugging Face ``layer_types``), else every
    ``sliding_window_every``-th layer, else all layers when a window is set.
    """
    if m.sliding_window is None:
        return 0
    stated = getattr(m, "sliding_window_layers", None)
    if stated is not None:
        return int(stated)
    if m.sliding_window_every <= 0:
        return m.n_layers
    return m.n_layers // m.sliding_window_every


def model_shape(m: ArchSpec, lora_rank: int = DEFAULT_LORA_RANK) -> ModelShape:
    """Reduce an architecture (e.g. a catalog ``ModelArch``) to the scalars the model uses.

    Parameters
    ----------
    m : ArchSpec
        Architecture.
    lora_rank : int
        Rank of LoRA adapters on every linear projection. [count]

    Returns
    -------
    ModelShape
    """
    pc = param_counts(m)
    L = m.n_layers
    attn = attention_params_per_layer(m)
    hd = m.dim_head
    if m.moe is None:
        ffn_active = float(ffn_params(m, m.d_ff))
        experts = 0.0
        moe_layers, n_exp, n_act = 0, 1, 1
        width = float(m.d_ff)
        groups, topk_groups = 1, 0
    else:
        moe = m.moe
        moe_layers = moe_layer_count(m)
        dense_layers = L - moe_layers
        one = ffn_params(m, moe.d_ff_expert)
        per_moe_active = one * (moe.n_active + moe.n_shared) + m.d_model * moe.n_experts
        ffn_active = (dense_layers * ffn_params(m, m.d_ff) + moe_layers * per_moe_active) / L
        experts = one * moe.n_experts * moe_layers / L
        n_exp, n_act = moe.n_experts, moe.n_active
        groups, topk_groups = moe.routing_groups
        width = (
            dense_layers * m.d_ff + moe_layers * moe.d_ff_expert * (moe.n_active + moe.n_shared)
        ) / L
    # LoRA on q, k, v, o and the FFN matrices: r * (in + out) per matrix
    mats = 3 if m.gated_ffn else 2
    q_out = m.n_heads * hd
    kv_out = m.kv_heads * hd
    lora_attn = lora_rank * ((m.d_model + q_out) * 2 + (m.d_model + kv_out) * 2)
    lora_ffn = lora_rank * mats * (m.d_model + m.d_ff)
    window_layers = sliding_window_layer_count(m)
    window = m.sliding_window if window_layers else None
    return ModelShape(
        n_layers=L,
        d_model=m.d_model,
        n_heads=m.n_heads,
        kv_heads=m.kv_heads,
        head_dim=(m.mla.v_head_dim if m.mla is not None else hd),
        qk_head_dim=(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim if m.mla is not None else hd),
        d_ff=m.d_ff,
        vocab_size=m.vocab_size,
        gated=m.gated_ffn,
        rope=m.position_embedding == "rope",
        layer_dense_params=float(pc.non_embedding - pc.ffn_expert) / L,
        attn_params_per_layer=float(attn),
        ffn_active_params_per_layer=float(ffn_active),
        expert_params_per_layer=float(experts),
        moe_layers=moe_layers,
        n_experts=n_exp,
        n_active_experts=n_act,
        embedding_params=float(pc.embedding),
        lm_head_params=float(pc.lm_head if pc.lm_head else m.vocab_size * m.d_model),
        total_params=float(pc.total),
        active_params=float(pc.active),
        lora_params=float((lora_attn + lora_ffn) * L),
        ffn_width_active=float(width),
        window=window,
        window_layer_fraction=window_layers / L,
        expert_groups=int(groups),
        topk_expert_groups=int(topk_groups),
    )


def layer_matmul_flops_per_token(ms: ModelShape) -> float:
    """Forward FLOPs of one layer's weight matmuls, per token [FLOP].

    Notes
    -----
    :math:`F = 2 (P_{attn} + P_{ffn,active})` (router included in the active FFN).
    """
    return FLOPS_PER_MAC * (ms.attn_params_per_layer + ms.ffn_active_params_per_layer)


def routed_expert_flops_per_token(ms: ModelShape) -> float:
    """Forward FLOPs of one layer's routed-expert matmuls, per token, mean over layers [FLOP].

    Notes
    -----
    :math:`F = 2 P_{experts} k / E`: the ``k`` of ``E`` routed experts a token passes through (the
    shared experts and the router are not routed); 0 for a dense model. Part of
    :func:`layer_matmul_flops_per_token`.
    """
    return FLOPS_PER_MAC * ms.expert_params_per_layer * ms.n_active_experts / ms.n_experts


def attention_flops_per_token(ms: ModelShape, seq_len: ArrayLike, causal: bool = True) -> F64:
    r"""Forward FLOPs of one layer's attention scores and weighted values, per token [FLOP].

    Parameters
    ----------
    ms : ModelShape
        Model.
    seq_len : array_like
        Sequence length. [tokens]
    causal : bool
        Count only the unmasked half (what FlashAttention executes).

    Notes
    -----
    :math:`F = 2\, s\, n_h (d_{qk} + d_v) \cdot c` with :math:`c = 1/2` for causal masking
    (QK^T and AV products); a sliding window caps the attended length.
    """
    s = np.asarray(seq_len, dtype=float)
    if ms.window is not None:  # mean over the layers: windowed ones attend to at most the window
        f = ms.window_layer_fraction
        s = f * np.minimum(s, float(ms.window)) + (1.0 - f) * s
    frac = CAUSAL_FRACTION if causal else 1.0
    return FLOPS_PER_MAC * s * ms.n_heads * (ms.qk_head_dim + ms.head_dim) * frac


def lm_head_flops_per_token(ms: ModelShape) -> float:
    """Forward FLOPs of the output projection (logits), per token [FLOP]."""
    return FLOPS_PER_MAC * ms.d_model * ms.vocab_size


def training_flops_per_token(
    ms: ModelShape, seq_len: ArrayLike, method: str = "full", lora_params: float | None = None
) -> F64:
    r"""Model FLOPs (MFU basis) of one training token: forward + backward [FLOP].

    Parameters
    ----------
    ms : ModelShape
        Model.
    seq_len : array_like
        Sequence length. [tokens]
    method : {"full", "lora", "qlora"}
        Full fine-tuning/pre-training, or frozen base with adapters.
    lora_params : float, optional
        Adapter parameters (default ``ms.lora_params``). [count]

    Returns
    -------
    ndarray
        FLOPs per token. [FLOP]

    Notes
    -----
    Full: :math:`3 (L (F_{mm} + F_{att}) + F_{head})` (the 6N rule plus causal attention).
    LoRA/QLoRA: the frozen weights get no weight-gradient GEMM, so base matmuls cost
    :math:`2 F_{mm}` and adapters :math:`3 \cdot 2 P_{lora}`; attention keeps its :math:`3\times`.
    """
    mm = ms.n_layers * layer_matmul_flops_per_token(ms) + lm_head_flops_per_token(ms)
    att = ms.n_layers * attention_flops_per_token(ms, seq_len)
    if method == "full":
        return (1.0 + BACKWARD_MATMULS) * (mm + att)
    lp = ms.lora_params if lora_params is None else lora_params
    return (1.0 + BACKWARD_MATMULS - 1.0) * mm + (1.0 + BACKWARD_MATMULS) * (
        att + FLOPS_PER_MAC * lp
    )


def recompute_flops_per_token(
    ms: ModelShape, seq_len: ArrayLike, recompute: ArrayLike, fraction: ArrayLike = 1.0
) -> F64:
    """Extra forward FLOPs executed again by activation recomputation, per token [FLOP].

    Parameters
    ----------
    ms : ModelShape
        Model.
    seq_len : array_like
        Sequence length. [tokens]
    recompute : array_like of int
        0 none, 1 selective (attention core only, Korthikanti et al. 2022), 2 full (the layer's
        whole forward).
    fraction : array_like
        Share of the layers fully recomputed when ``recompute`` is 2 (Megatron's
        ``--recompute-num-layers``); the others keep their activations. [0-1]

    Returns
    -------
    ndarray
        FLOPs per token. [FLOP]
    """
    r = np.asarray(recompute)
    att = ms.n_layers * attention_flops_per_token(ms, seq_len)
    full = ms.n_layers * layer_matmul_flops_per_token(ms) + att
    return np.where(r == 2, np.asarray(fraction, dtype=float) * full, np.where(r == 1, att, 0.0))

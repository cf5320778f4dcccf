"""Read a Hugging Face ``config.json`` as an aitco :class:`~aitco.catalog.schema.ModelArch`.

The reader dispatches on ``model_type`` and maps that family's field names onto aitco's
architecture fields. Every value it sets takes the config file itself as its source (document =
the file path, date = the file's modification time), so ``aitco catalog show`` and ``--explain``
can say where each dimension came from.

Supported ``model_type`` values: see :data:`SUPPORTED` (dense, GQA/MQA and MLA attention,
sliding-window and chunked layers from ``layer_types``, NoPE layers, MoE with shared experts and
interleaved dense layers); multimodal wrappers are read through their ``text_config``. Decoders
aitco cannot price (state-space, recurrent and linear-attention hybrids: :data:`NOT_PRICEABLE`)
raise :class:`~aitco.errors.InputError` naming the type and why; unknown types raise naming the
type and the supported list; a missing required field raises naming the field and the file.

Notes
-----
Defaults follow the ``transformers`` configuration classes when a field is absent (e.g. a GPT-2
``n_inner`` of ``None`` means ``4 * n_embd``; a Falcon ``ffn_hidden_size`` of ``None`` means
``4 * hidden_size``; ``tie_word_embeddings`` defaults to the family's convention).

References
----------
.. [1] Hugging Face ``transformers`` model configuration classes (``LlamaConfig``,
   ``GPT2Config``, ``FalconConfig``, ``MptConfig``, ``DeepseekV3Config``, ...).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aitco.catalog.provenance import file_source
from aitco.catalog.schema import MLA, ModelArch, MoE, Provenance, Source
from aitco.errors import InputError
from aitco.fileio import read_text
from aitco.limits import check_tree

#: GPT-2/BLOOM/Falcon-style FFN width when the config leaves it implicit (d_ff = 4 d_model).
FFN_EXPANSION_DEFAULT = 4
#: Context length assumed when a config has none (ALiBi models such as BLOOM).
DEFAULT_MAX_SEQ_LEN = 2048


class _Cfg:
    """A config dict with field access that names the file on a missing field."""

    def __init__(self, data: dict[str, Any], path: Path) -> None:
        self.data = data
        self.path = path
        #: The field read last: the one a failed number conversion was reading.
        self.last: str | None = None

    def req(self, *names: str) -> Any:
        """First present of ``names`` (aliases); raise naming the first if none is present."""
        for n in names:
            if self.data.get(n) is not None:
                self.last = n
                return self.data[n]
        raise InputError(
            names[0],
            None,
            f"a value in the {self.data.get('model_type')!r} config"
            + (f" (aliases: {', '.join(names[1:])})" if len(names) > 1 else ""),
            file=str(self.path),
        )

    def get(self, name: str, default: Any = None) -> Any:
        """Return an optional field (``None`` counts as absent)."""
        v = self.data.get(name)
        self.last = name
        return default if v is None else v


def _llama_like(c: _Cfg, *, tied_default: bool = False) -> dict[str, Any]:
    """Fields shared by the LLaMA family of configs (Llama, Mistral, Qwen2, Gemma, Phi-3...)."""
    heads = int(c.req("num_attention_heads"))
    out: dict[str, Any] = {
        "n_layers": int(c.req("num_hidden_layers")),
        "d_model": int(c.req("hidden_size")),
        "n_heads": heads,
        "n_kv_heads": int(c.get("num_key_value_heads", heads)),
        "d_ff": int(c.req("intermediate_size")),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("max_position_embeddings", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "swiglu",
        "norm": "rmsnorm",
        "position_embedding": "rope",
        "tied_embeddings": bool(c.get("tie_word_embeddings", tied_default)),
        "attention_bias": bool(c.get("attention_bias", False)),
        "mlp_bias": bool(c.get("mlp_bias", False)),
    }
    if c.get("head_dim") is not None:
        out["head_dim"] = int(c.get("head_dim"))
    return out


#: ``layer_types`` entries of layers that attend to a bounded span of keys: a sliding window
#: (Gemma 3, gpt-oss, OLMo 3, Cohere 2) or fixed chunks (Llama 4's chunked attention, priced as
#: a window of the chunk size: a query sees at most that many keys).
WINDOWED_LAYER_TYPES = ("sliding_attention", "chunked_attention")


def _windows(c: _Cfg, out: dict[str, Any], *, window: Any = None) -> dict[str, Any]:
    """Set ``sliding_window`` and the windowed-layer count from the config's layer pattern.

    ``layer_types`` (transformers >= 4.53: one entry per layer) wins; else
    ``sliding_window_pattern`` (every p-th layer global, the others windowed: Gemma 3 p = 6,
    Cohere 2 p = 4; EXAONE 4 writes it as a string such as ``"LLLG"``); else every layer uses the
    window. A config without a window is left unchanged.
    """
    w = c.get("sliding_window") if window is None else window
    if not w:
        return out
    n = out["n_layers"]
    types = c.get("layer_types")
    pattern = c.get("sliding_window_pattern", c.get("_sliding_window_pattern"))
    if isinstance(types, list) and types:
        if len(types) != n:
            raise InputError(
                "layer_types", f"{len(types)} entries", f"one per layer ({n}, num_hidden_layers)",
                file=str(c.path),
            )  # fmt: skip
        windowed = sum(1 for t in types if t in WINDOWED_LAYER_TYPES)
    elif isinstance(pattern, str) and pattern:
        p = pattern.upper()
        windowed = sum(p[i % len(p)] == "L" for i in range(n))
    elif pattern:
        windowed = n - n // int(pattern)
    else:
        windowed = n
    if windowed:
        out["sliding_window"] = int(w)
        out["sliding_window_layers"] = windowed
    return out


def _llama(c: _Cfg) -> dict[str, Any]:
    return _windows(c, _llama_like(c))


def _mistral(c: _Cfg) -> dict[str, Any]:
    return _windows(c, _llama_like(c))


def _mixtral(c: _Cfg) -> dict[str, Any]:
    out = _mistral(c)
    out["moe"] = MoE(
        n_experts=int(c.req("num_local_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        d_ff_expert=out["d_ff"],
    )
    return out


def _qwen2(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c)
    out["qkv_bias_only"] = True  # Qwen2 has biases on q/k/v only
    if c.get("use_sliding_window", False) and c.get("sliding_window"):
        out["sliding_window"] = int(c.get("sliding_window"))
        # layers from max_window_layers on use the window (transformers Qwen2Config)
        full = min(int(c.get("max_window_layers", 0)), out["n_layers"])
        if full:
            out["sliding_window_layers"] = out["n_layers"] - full
    return out


def _sparse_layers(c: _Cfg, n_layers: int, *, step_key: str = "decoder_sparse_step") -> int:
    """Count the MoE layers of a Qwen-MoE-style config.

    Layer i has experts when ``(i + 1) % step == 0`` and i is not in ``mlp_only_layers``
    (transformers ``Qwen2MoeDecoderLayer``).
    """
    step = int(c.get(step_key, 1))
    if step < 1:
        raise InputError(step_key, step, "an integer >= 1", file=str(c.path))
    dense = {int(i) for i in (c.get("mlp_only_layers") or [])}
    return sum(1 for i in range(n_layers) if (i + 1) % step == 0 and i not in dense)


def _qwen2_moe(c: _Cfg) -> dict[str, Any]:
    out = _qwen2(c)
    d_exp = int(c.req("moe_intermediate_size"))
    shared = int(c.get("shared_expert_intermediate_size", 0))
    if shared % d_exp:
        raise InputError(
            "shared_expert_intermediate_size",
            shared,
            f"a multiple of moe_intermediate_size ({d_exp}) (aitco models shared experts as "
            "copies of the routed expert size)",
            file=str(c.path),
        )
    out["moe"] = _moe_or_dense(
        c, out,
        n_experts=int(c.req("num_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        n_shared=shared // d_exp,
        d_ff_expert=d_exp,
        n_moe_layers=_sparse_layers(c, out["n_layers"]),
    )  # fmt: skip
    return out


def _qwen3(c: _Cfg) -> dict[str, Any]:
    """Qwen3: Llama-like, explicit head_dim, no QKV bias (per-head q/k RMSNorms not counted)."""
    return _llama_like(c)


def _qwen3_moe(c: _Cfg) -> dict[str, Any]:
    out = _qwen3(c)
    out["moe"] = _moe_or_dense(
        c, out,
        n_experts=int(c.req("num_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        d_ff_expert=int(c.req("moe_intermediate_size")),
        n_moe_layers=_sparse_layers(c, out["n_layers"]),
    )  # fmt: skip
    return out


def _moe_or_dense(
    c: _Cfg,
    out: dict[str, Any],
    *,
    n_moe_layers: int | None = None,
    first_dense: int = 0,
    **moe: Any,
) -> MoE | None:
    """Return the config's :class:`MoE`, with the MoE-layer count only when layers interleave.

    ``n_moe_layers`` equal to every layer after the ``first_dense`` ones is left implicit; 0 MoE
    layers is a dense model (None).
    """
    room = out["n_layers"] - first_dense
    if n_moe_layers is not None and n_moe_layers <= 0:
        return None
    count = None if n_moe_layers is None or n_moe_layers == room else n_moe_layers
    return MoE(first_dense_layers=first_dense, n_moe_layers=count, **moe)


def _gemma(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c, tied_default=True)
    out["ffn_type"] = "geglu"
    return out


def _gemma2(c: _Cfg) -> dict[str, Any]:
    out = _gemma(c)
    if c.get("sliding_window"):
        if c.get("layer_types"):
            return _windows(c, out)
        out["sliding_window"] = int(c.get("sliding_window"))
        out["sliding_window_every"] = 2  # Gemma 2 alternates local and global layers
    return out


def _gemma3(c: _Cfg) -> dict[str, Any]:
    """Read a Gemma 3 text model: GeGLU, tied embeddings, local and global layers.

    Five local layers to one global (``sliding_window_pattern`` 6 or ``layer_types``).
    """
    return _windows(c, _gemma(c))


def _phi3(c: _Cfg) -> dict[str, Any]:
    return _windows(c, _llama_like(c))


def _nemotron(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c)
    act = str(c.get("hidden_act", "relu2"))
    out["ffn_type"] = "relu" if "relu" in act else "gelu"  # squared ReLU, not gated
    out["norm"] = "layernorm"
    return out


def _deepseek_v3(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c)
    out.pop("n_kv_heads", None)
    out.pop("head_dim", None)
    q_rank = c.get("q_lora_rank")
    out["mla"] = MLA(
        q_lora_rank=int(q_rank) if q_rank else None,
        kv_lora_rank=int(c.req("kv_lora_rank")),
        qk_nope_head_dim=int(c.req("qk_nope_head_dim")),
        qk_rope_head_dim=int(c.req("qk_rope_head_dim")),
        v_head_dim=int(c.req("v_head_dim")),
    )
    out["moe"] = _deepseek_moe(c, out)
    return out


def _deepseek_moe(c: _Cfg, out: dict[str, Any]) -> MoE | None:
    """Return a DeepSeek-style MoE (DeepSeek-V2/V3, GLM-4.5, dots.llm1).

    ``first_k_dense_replace`` dense layers, then experts on every ``moe_layer_freq``-th layer
    (transformers ``DeepseekV2DecoderLayer``: ``i >= first_k_dense_replace and
    i % moe_layer_freq == 0``).
    """
    n = out["n_layers"]
    first = int(c.get("first_k_dense_replace", 0))
    freq = int(c.get("moe_layer_freq", 1))
    if freq < 1:
        raise InputError("moe_layer_freq", freq, "an integer >= 1", file=str(c.path))
    return _moe_or_dense(
        c, out,
        n_experts=int(c.req("n_routed_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        n_shared=int(c.get("n_shared_experts", 0)),
        d_ff_expert=int(c.req("moe_intermediate_size")),
        first_dense=first,
        n_moe_layers=sum(1 for i in range(first, n) if i % freq == 0),
        n_groups=int(c.get("n_group") or 1),
        topk_groups=int(c.get("topk_group")) if c.get("topk_group") else None,
    )  # fmt: skip


def _gpt2(c: _Cfg) -> dict[str, Any]:
    d = int(c.req("n_embd", "hidden_size"))
    return {
        "n_layers": int(c.req("n_layer", "num_hidden_layers")),
        "d_model": d,
        "n_heads": int(c.req("n_head", "num_attention_heads")),
        "d_ff": int(c.get("n_inner") or FFN_EXPANSION_DEFAULT * d),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("n_positions", c.get("n_ctx", 1024))),
        "ffn_type": "gelu",
        "norm": "layernorm",
        "position_embedding": "learned",
        "tied_embeddings": bool(c.get("tie_word_embeddings", True)),
        "attention_bias": True,
        "mlp_bias": True,
    }


def _gpt_neox(c: _Cfg) -> dict[str, Any]:
    heads = int(c.req("num_attention_heads"))
    return {
        "n_layers": int(c.req("num_hidden_layers")),
        "d_model": int(c.req("hidden_size")),
        "n_heads": heads,
        "d_ff": int(c.req("intermediate_size")),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("max_position_embeddings", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "gelu",
        "norm": "layernorm",
        "position_embedding": "rope",
        "tied_embeddings": bool(c.get("tie_word_embeddings", False)),
        "attention_bias": bool(c.get("attention_bias", True)),
        "mlp_bias": True,
        "parallel_attention": bool(c.get("use_parallel_residual", True)),
    }


def _opt(c: _Cfg) -> dict[str, Any]:
    bias = bool(c.get("enable_bias", True))
    return {
        "n_layers": int(c.req("num_hidden_layers")),
        "d_model": int(c.req("hidden_size")),
        "n_heads": int(c.req("num_attention_heads")),
        "d_ff": int(c.req("ffn_dim")),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("max_position_embeddings", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "relu",
        "norm": "layernorm",
        "position_embedding": "learned",
        "tied_embeddings": bool(c.get("tie_word_embeddings", True)),
        "attention_bias": bias,
        "mlp_bias": bias,
    }


def _bloom(c: _Cfg) -> dict[str, Any]:
    d = int(c.req("hidden_size", "n_embed"))
    return {
        "n_layers": int(c.req("n_layer", "num_hidden_layers")),
        "d_model": d,
        "n_heads": int(c.req("n_head", "num_attention_heads")),
        "d_ff": FFN_EXPANSION_DEFAULT * d,
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("seq_length", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "gelu",
        "norm": "layernorm",
        "position_embedding": "alibi",
        "tied_embeddings": bool(c.get("tie_word_embeddings", True)),
        "attention_bias": True,
        "mlp_bias": True,
    }


def _falcon(c: _Cfg) -> dict[str, Any]:
    d = int(c.req("hidden_size", "n_embed"))
    heads = int(c.req("num_attention_heads", "n_head"))
    if c.get("new_decoder_architecture", False):
        kv = int(c.req("num_kv_heads", "n_head_kv"))
    elif c.get("multi_query", True):
        kv = 1
    else:
        kv = heads
    bias = bool(c.get("bias", False))
    return {
        "n_layers": int(c.req("num_hidden_layers", "n_layer")),
        "d_model": d,
        "n_heads": heads,
        "n_kv_heads": kv,
        "d_ff": int(c.get("ffn_hidden_size") or FFN_EXPANSION_DEFAULT * d),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("max_position_embeddings", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "gelu",
        "norm": "layernorm",
        "position_embedding": "alibi" if c.get("alibi", False) else "rope",
        # Falcon checkpoints keep a separate lm_head: the published 41.8B of Falcon-40B counts it
        # (41.3B with a tied head).
        "tied_embeddings": bool(c.get("tie_word_embeddings", False)),
        "attention_bias": bias,
        "mlp_bias": bias,
        "parallel_attention": bool(c.get("parallel_attn", True)),
    }


def _mpt(c: _Cfg) -> dict[str, Any]:
    d = int(c.req("d_model"))
    attn = c.get("attn_config", {}) or {}
    ffn = c.get("ffn_config", {}) or {}
    ratio = c.get("expansion_ratio", ffn.get("expansion_ratio", FFN_EXPANSION_DEFAULT))
    bias = not bool(c.get("no_bias", False))
    alibi = bool(attn.get("alibi", False))
    learned = bool(c.get("learned_pos_emb", True)) and not alibi
    return {
        "n_layers": int(c.req("n_layers")),
        "d_model": d,
        "n_heads": int(c.req("n_heads")),
        "d_ff": round(float(ratio) * d),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("max_seq_len", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "gelu",
        "norm": "layernorm",
        "position_embedding": "alibi" if alibi else ("learned" if learned else "none"),
        "tied_embeddings": bool(c.get("tie_word_embeddings", True)),
        "attention_bias": bias,
        "mlp_bias": bias,
    }


def _non_gated(out: dict[str, Any], act: str = "gelu") -> dict[str, Any]:
    """Set an up/down MLP without a gate (two matrices): ``gelu`` or ``relu`` (squared too)."""
    out["ffn_type"] = "relu" if "relu" in act else "gelu"
    return out


def _gemma_like_window(c: _Cfg) -> dict[str, Any]:
    """VaultGemma: Gemma 2's layout (GeGLU, tied, local/global alternation)."""
    return _gemma2(c)


def _olmo(c: _Cfg) -> dict[str, Any]:
    """OLMo 1/2/3 (and FlexOlmo's dense part): Llama-like; OLMo 3 has sliding layers."""
    return _windows(c, _llama_like(c))


def _cohere(c: _Cfg) -> dict[str, Any]:
    """Command R (Cohere): attention and MLP in parallel from one LayerNorm, tied embeddings."""
    out = _llama_like(c, tied_default=True)
    out["norm"] = "layernorm"
    out["parallel_attention"] = True
    return _windows(c, out)


def _exaone4(c: _Cfg) -> dict[str, Any]:
    return _windows(c, _llama_like(c))


def _ernie45(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c, tied_default=True)
    bias = bool(c.get("use_bias", False))
    out["attention_bias"] = bias
    out["mlp_bias"] = bias
    return out


def _apertus(c: _Cfg) -> dict[str, Any]:
    """Apertus: up/down MLP with the xIELU activation (no gate)."""
    return _non_gated(_llama_like(c), str(c.get("hidden_act", "xielu")))


def _relu2_llama(c: _Cfg) -> dict[str, Any]:
    """Arcee (AFM), nanochat: Llama-like attention, up/down MLP with squared ReLU."""
    return _non_gated(_llama_like(c), str(c.get("hidden_act", "relu2")))


def _phi(c: _Cfg) -> dict[str, Any]:
    """Phi-1/1.5/2: parallel attention + MLP from one LayerNorm, GELU up/down, biases."""
    out = _llama_like(c)
    out.update(norm="layernorm", parallel_attention=True, attention_bias=True, mlp_bias=True)
    return _non_gated(out, str(c.get("hidden_act", "gelu_new")))


def _starcoder2(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c, tied_default=True)
    bias = bool(c.get("use_bias", True))
    out.update(norm="layernorm", attention_bias=bias, mlp_bias=bias)
    return _windows(c, _non_gated(out, str(c.get("hidden_act", "gelu_pytorch_tanh"))))


def _stablelm(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c)
    out["norm"] = "layernorm"
    out["qkv_bias_only"] = bool(c.get("use_qkv_bias", False))
    out["parallel_attention"] = bool(c.get("use_parallel_residual", False))
    return out


def _persimmon(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c)
    out.update(norm="layernorm", attention_bias=True, mlp_bias=True)
    return _non_gated(out, str(c.get("hidden_act", "relu2")))


def _gpt_bigcode(c: _Cfg) -> dict[str, Any]:
    """StarCoder / SantaCoder: GPT-2 layout with multi-query attention (one K/V head)."""
    out = _gpt2(c)
    if c.get("multi_query", True):
        out["n_kv_heads"] = 1
    out["max_seq_len"] = int(c.get("n_positions", DEFAULT_MAX_SEQ_LEN))
    return out


def _gpt_neo(c: _Cfg) -> dict[str, Any]:
    """Read GPT-Neo: learned positions, some layers local.

    Local attention (``window_size``) on the layers ``attention_types`` marks local.
    """
    d = int(c.req("hidden_size"))
    n = int(c.req("num_layers", "num_hidden_layers"))
    out = {
        "n_layers": n,
        "d_model": d,
        "n_heads": int(c.req("num_heads", "num_attention_heads")),
        "d_ff": int(c.get("intermediate_size") or FFN_EXPANSION_DEFAULT * d),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("max_position_embeddings", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "gelu",
        "norm": "layernorm",
        "position_embedding": "learned",
        "tied_embeddings": bool(c.get("tie_word_embeddings", True)),
        "attention_bias": False,
        "mlp_bias": True,
    }
    local = 0
    for item in c.get("attention_types") or []:
        kinds, repeat = item[0], int(item[1])
        local += repeat * sum(1 for k in kinds if k == "local")
    if local and c.get("window_size"):
        out["sliding_window"] = int(c.get("window_size"))
        out["sliding_window_layers"] = min(local, n)
    return out


def _gptj(c: _Cfg) -> dict[str, Any]:
    """GPT-J / CodeGen: attention and MLP in parallel, rotary, separate LM head."""
    d = int(c.req("n_embd", "hidden_size"))
    return {
        "n_layers": int(c.req("n_layer", "num_hidden_layers")),
        "d_model": d,
        "n_heads": int(c.req("n_head", "num_attention_heads")),
        "d_ff": int(c.get("n_inner") or FFN_EXPANSION_DEFAULT * d),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("n_positions", c.get("n_ctx", DEFAULT_MAX_SEQ_LEN))),
        "ffn_type": "gelu",
        "norm": "layernorm",
        "position_embedding": "rope",
        "tied_embeddings": bool(c.get("tie_word_embeddings", False)),
        "attention_bias": False,
        "mlp_bias": True,
        "parallel_attention": True,
    }


def _gpt_classic(c: _Cfg) -> dict[str, Any]:
    """GPT-1 (``openai-gpt``): the GPT-2 layout with learned positions and tied embeddings."""
    return _gpt2(c)


def _xglm(c: _Cfg) -> dict[str, Any]:
    """XGLM: pre-LN decoder, sinusoidal positions (no weights), GELU, tied embeddings."""
    return {
        "n_layers": int(c.req("num_layers")),
        "d_model": int(c.req("d_model")),
        "n_heads": int(c.req("attention_heads")),
        "d_ff": int(c.req("ffn_dim")),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("max_position_embeddings", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "gelu",
        "norm": "layernorm",
        "position_embedding": "none",
        "tied_embeddings": bool(c.get("tie_word_embeddings", True)),
        "attention_bias": True,
        "mlp_bias": True,
    }


def _biogpt(c: _Cfg) -> dict[str, Any]:
    return {
        "n_layers": int(c.req("num_hidden_layers")),
        "d_model": int(c.req("hidden_size")),
        "n_heads": int(c.req("num_attention_heads")),
        "d_ff": int(c.req("intermediate_size")),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("max_position_embeddings", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "gelu",
        "norm": "layernorm",
        "position_embedding": "learned",
        "tied_embeddings": bool(c.get("tie_word_embeddings", True)),
        "attention_bias": True,
        "mlp_bias": True,
    }


def _ctrl(c: _Cfg) -> dict[str, Any]:
    """CTRL: sinusoidal positions, ReLU MLP of width ``dff``, tied embeddings."""
    return {
        "n_layers": int(c.req("n_layer")),
        "d_model": int(c.req("n_embd")),
        "n_heads": int(c.req("n_head")),
        "d_ff": int(c.req("dff")),
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("n_positions", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "relu",
        "norm": "layernorm",
        "position_embedding": "none",
        "tied_embeddings": bool(c.get("tie_word_embeddings", True)),
        "attention_bias": True,
        "mlp_bias": True,
    }


def _smollm3(c: _Cfg) -> dict[str, Any]:
    """Read SmolLM3: Llama-like, with NoPE layers.

    The layers without rotary embedding (``no_rope_layers``, NoPE) cost the same matmuls, so
    they change nothing aitco prices but the rotary elementwise work.
    """
    return _windows(c, _llama_like(c))


# ------------------------------------------------------------------ mixture-of-experts families
def _dbrx(c: _Cfg) -> dict[str, Any]:
    """DBRX: nested ``attn_config`` (K/V heads) and ``ffn_config`` (16 experts, top 4, GLU)."""
    attn = _Cfg(c.get("attn_config", {}) or {}, c.path)
    ffn = _Cfg(c.get("ffn_config", {}) or {}, c.path)
    d_exp = int(ffn.req("ffn_hidden_size"))
    return {
        "n_layers": int(c.req("n_layers")),
        "d_model": int(c.req("d_model")),
        "n_heads": int(c.req("n_heads")),
        "n_kv_heads": int(attn.req("kv_n_heads")),
        "d_ff": d_exp,
        "vocab_size": int(c.req("vocab_size")),
        "max_seq_len": int(c.get("max_seq_len", DEFAULT_MAX_SEQ_LEN)),
        "ffn_type": "swiglu",
        "norm": "layernorm",
        "position_embedding": "rope",
        "tied_embeddings": bool(c.get("tie_word_embeddings", False)),
        "moe": MoE(
            n_experts=int(ffn.req("moe_num_experts")),
            n_active=int(ffn.req("moe_top_k")),
            d_ff_expert=d_exp,
        ),
    }


def _phimoe(c: _Cfg) -> dict[str, Any]:
    """Phi-3.5-MoE: Mixtral's layout with LayerNorm and attention biases."""
    out = _mixtral(c)
    out["norm"] = "layernorm"
    out["attention_bias"] = bool(c.get("attention_bias", True))
    return out


def _olmoe(c: _Cfg) -> dict[str, Any]:
    """OLMoE / FlexOlmo: every layer's FFN is ``num_experts`` experts of ``intermediate_size``."""
    out = _olmo(c)
    out["moe"] = MoE(
        n_experts=int(c.req("num_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        d_ff_expert=out["d_ff"],
    )
    return out


def _granitemoe(c: _Cfg) -> dict[str, Any]:
    """Granite MoE (and MoE-shared: a shared expert of ``shared_intermediate_size``)."""
    out = _llama_like(c)
    d_exp = out["d_ff"]
    shared = int(c.get("shared_intermediate_size", 0))
    if shared % d_exp:
        raise InputError(
            "shared_intermediate_size", shared,
            f"a multiple of intermediate_size ({d_exp}) (aitco models shared experts as copies "
            "of the routed expert size)",
            file=str(c.path),
        )  # fmt: skip
    out["moe"] = MoE(
        n_experts=int(c.req("num_local_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        n_shared=shared // d_exp,
        d_ff_expert=d_exp,
    )
    return out


def _glm4_moe(c: _Cfg) -> dict[str, Any]:
    """Read GLM-4.5 / dots.llm1: DeepSeek-style MoE without latent attention.

    Leading dense layers, shared experts, grouped routing.
    """
    out = _llama_like(c)
    out["moe"] = _deepseek_moe(c, out)
    return out


def _ernie45_moe(c: _Cfg) -> dict[str, Any]:
    """Read ERNIE 4.5 MoE: experts on every ``moe_layer_interval``-th layer of a range.

    The range is ``[moe_layer_start_index, moe_layer_end_index]`` (transformers
    ``Ernie4_5_MoeDecoderLayer``).
    """
    out = _ernie45(c)
    n = out["n_layers"]
    n_exp = c.req("moe_num_experts")
    if isinstance(n_exp, list):
        raise InputError(
            "moe_num_experts", n_exp, "one integer (per-modality expert lists are multimodal)",
            file=str(c.path),
        )  # fmt: skip
    start = int(c.get("moe_layer_start_index", 0))
    end = int(c.get("moe_layer_end_index", n - 1))
    end = n - 1 if end < 0 else end
    every = int(c.get("moe_layer_interval", 1))
    layers = sum(1 for i in range(n) if (i + 1) % every == 0 and start <= i <= end)
    d_exp = int(c.req("moe_intermediate_size"))
    out["moe"] = _moe_or_dense(
        c, out,
        n_experts=int(n_exp),
        n_active=int(c.req("moe_k")),
        n_shared=int(c.get("moe_num_shared_experts", 0)),
        d_ff_expert=d_exp,
        n_moe_layers=layers,
    )  # fmt: skip
    return out


def _llama4(c: _Cfg) -> dict[str, Any]:
    """Read the Llama 4 text model: interleaved MoE, chunked local attention, NoPE layers.

    MoE on every ``interleave_moe_layer_step``-th layer (or the listed ``moe_layers``) with one
    shared expert; dense layers of ``intermediate_size_mlp``; chunked local attention
    (``attention_chunk_size``) on the RoPE layers, global attention without positions (NoPE) on
    every ``no_rope_layer_interval``-th layer.
    """
    out = _llama_like(c)
    n = out["n_layers"]
    d_exp = int(c.req("intermediate_size"))
    out["d_ff"] = int(c.get("intermediate_size_mlp", d_exp))
    listed = c.get("moe_layers")
    if isinstance(listed, list):
        moe_layers = len(listed)
    else:
        step = int(c.get("interleave_moe_layer_step", 1))
        moe_layers = sum(1 for i in range(n) if (i + 1) % step == 0) if step >= 1 else 0
    out["moe"] = _moe_or_dense(
        c, out,
        n_experts=int(c.req("num_local_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        n_shared=1,
        d_ff_expert=d_exp,
        n_moe_layers=moe_layers,
    )  # fmt: skip
    chunk = c.get("attention_chunk_size")
    if chunk:
        rope = c.get("no_rope_layers")
        if isinstance(rope, list) and rope:
            chunked = sum(1 for i in range(n) if i < len(rope) and rope[i])
        else:
            every = int(c.get("no_rope_layer_interval", 4))
            chunked = sum(1 for i in range(n) if (i + 1) % every != 0)
        if chunked:
            out["sliding_window"] = int(chunk)
            out["sliding_window_layers"] = chunked
    return out


def _gpt_oss(c: _Cfg) -> dict[str, Any]:
    """Read gpt-oss: every layer MoE, sliding and full attention alternating.

    ``num_local_experts`` experts, top ``num_experts_per_tok``, biases on attention and
    experts, windows from ``layer_types``; the attention sinks add one logit per head (not
    counted).
    """
    out = _windows(c, _llama_like(c))
    out["mlp_bias"] = True
    out["moe"] = MoE(
        n_experts=int(c.req("num_local_experts")),
        n_active=int(c.req("num_experts_per_tok", "experts_per_token")),
        d_ff_expert=out["d_ff"],
    )
    return out


def _hunyuan_moe(c: _Cfg) -> dict[str, Any]:
    """Hunyuan MoE: every layer MoE; per-layer lists accepted when all entries agree."""

    def one(name: str, default: Any = None) -> int:
        v = c.get(name, default) if default is not None else c.req(name)
        if isinstance(v, list):
            if len(set(v)) != 1:
                raise InputError(name, v, "the same value for every layer", file=str(c.path))
            v = v[0]
        return int(v)

    out = _llama_like(c)
    d_exp = one("moe_intermediate_size", out["d_ff"])
    out["moe"] = MoE(
        n_experts=one("num_experts"),
        n_active=one("moe_topk"),
        n_shared=one("num_shared_expert", 0),
        d_ff_expert=d_exp,
    )
    return out


#: ``model_type`` -> reader of that family's field names.
READERS: dict[str, Callable[[_Cfg], dict[str, Any]]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3,
    "vaultgemma": _gemma_like_window,
    "phi": _phi,
    "phi3": _phi3,
    "nemotron": _nemotron,
    "deepseek_v3": _deepseek_v3,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "opt": _opt,
    "bloom": _bloom,
    "falcon": _falcon,
    "RefinedWeb": _falcon,
    "RefinedWebModel": _falcon,
    "mpt": _mpt,
    # Llama-like dense families (field names of LlamaConfig; windows from the layer pattern)
    "code_llama": _llama,
    "ministral": _mistral,
    "ministral3": _mistral,
    "granite": _llama,
    "helium": _llama,
    "seed_oss": _llama,
    "hunyuan_v1_dense": _llama,
    "glm": _llama,
    "glm4": _llama,
    "cwm": _llama,
    "olmo": _olmo,
    "olmo2": _olmo,
    "olmo3": _olmo,
    "smollm3": _smollm3,
    "exaone4": _exaone4,
    "ernie4_5": _ernie45,
    "apertus": _apertus,
    "arcee": _relu2_llama,
    "nanochat": _relu2_llama,
    "cohere": _cohere,
    "cohere2": _cohere,
    "starcoder2": _starcoder2,
    "stablelm": _stablelm,
    "persimmon": _persimmon,
    # GPT-2-era layouts
    "gpt_bigcode": _gpt_bigcode,
    "gpt_neo": _gpt_neo,
    "gptj": _gptj,
    "codegen": _gptj,
    "openai-gpt": _gpt_classic,
    "xglm": _xglm,
    "biogpt": _biogpt,
    "ctrl": _ctrl,
    # mixture of experts
    "deepseek_v2": _deepseek_v3,
    "dbrx": _dbrx,
    "phimoe": _phimoe,
    "olmoe": _olmoe,
    "flex_olmo": _olmoe,
    "granitemoe": _granitemoe,
    "granitemoeshared": _granitemoe,
    "glm4_moe": _glm4_moe,
    "dots1": _glm4_moe,
    "ernie4_5_moe": _ernie45_moe,
    "hunyuan_v1_moe": _hunyuan_moe,
    "llama4_text": _llama4,
    "gpt_oss": _gpt_oss,
    "qwen3_vl_text": _qwen3,
    "qwen3_vl_moe_text": _qwen3_moe,
}

#: Multimodal wrappers whose language model sits in ``text_config`` (its own ``model_type``):
#: aitco prices that decoder; the vision or audio encoder is not counted.
TEXT_CONFIG_WRAPPERS = ("gemma3", "llama4", "mistral3", "qwen3_vl", "qwen3_vl_moe", "llava",
                        "llava_next", "aya_vision", "internvl", "paligemma")  # fmt: skip

#: Decoder-only ``model_type`` values of ``transformers`` that aitco does not price, with why:
#: the analytic model counts attention + MLP transformer layers.
NOT_PRICEABLE: dict[str, str] = {
    "mamba": "a state-space model (selective scan, no attention layers)",
    "mamba2": "a state-space model (no attention layers)",
    "falcon_mamba": "a state-space model (no attention layers)",
    "rwkv": "a recurrent (RWKV) model without attention layers",
    "xlstm": "a recurrent (xLSTM) model",
    "recurrent_gemma": "recurrent (Griffin RG-LRU) blocks mixed with local attention",
    "jamba": "a hybrid of Mamba and attention layers",
    "bamba": "a hybrid of Mamba-2 and attention layers",
    "zamba": "a hybrid of Mamba and shared attention blocks",
    "zamba2": "a hybrid of Mamba-2 and shared attention blocks",
    "falcon_h1": "parallel Mamba-2 and attention heads in each layer",
    "granitemoehybrid": "a hybrid of Mamba-2 and attention layers",
    "lfm2": "a hybrid of gated short convolutions and attention",
    "lfm2_moe": "a hybrid of gated short convolutions and attention",
    "qwen3_next": "a hybrid of Gated DeltaNet linear attention and gated attention",
    "minimax": "a hybrid of lightning (linear) attention and softmax attention",
    "diffllama": "differential attention (two softmax maps per head)",
    "bitnet": "ternary BitLinear weights (1.58-bit kernels aitco has no rate for)",
    "blt": "a byte latent transformer (local byte encoder/decoder around a patch transformer)",
    "jetmoe": "mixture-of-attention-heads layers",
    "longcat_flash": "zero-computation experts (the active parameters vary per token)",
    "doge": "dynamic mask attention with cross-domain MoE",
}

#: Supported ``model_type`` values, in the order they are listed in error messages.
SUPPORTED: tuple[str, ...] = tuple(READERS)


def config_source(path: Path) -> Source:
    """Return the provenance of values read from ``path``: the file, dated by its mtime."""
    return file_source(path, f"Hugging Face config.json {path.name}")


def model_from_hf_config(path: str | Path, *, model_id: str | None = None) -> ModelArch:
    """Build a :class:`ModelArch` from a Hugging Face ``config.json``.

    Parameters
    ----------
    path : str or Path
        The ``config.json`` file.
    model_id : str, optional
        Id to give the model; default: the parent folder's name (lowercased), else the file stem.

    Returns
    -------
    ModelArch
        The architecture, every value sourced to the file.

    Raises
    ------
    InputError
        Unreadable or non-JSON file, unsupported ``model_type`` (the message lists the supported
        ones), a missing required field (named, with the file) or an inconsistent value.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "config.json"
    >>> _ = d.write_text(json.dumps({"model_type": "gpt2", "n_embd": 768, "n_layer": 12,
    ...                              "n_head": 12, "vocab_size": 50257, "n_positions": 1024}))
    >>> model_from_hf_config(d).d_ff
    3072
    """
    p = Path(path).expanduser()
    try:
        text = read_text(p, field="model")  # a regular file, bounded
    except OSError as exc:
        raise InputError("model", str(p), "a readable config.json file") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            "config.json", f"line {exc.lineno}", f"valid JSON ({exc.msg})", file=str(p)
        ) from exc
    except RecursionError:
        raise InputError("config.json", str(p), "JSON nested less deeply", file=str(p)) from None
    if not isinstance(data, dict):
        raise InputError("config.json", type(data).__name__, "a JSON object", file=str(p))
    # NaN, Infinity and integers too large for a float stop here, naming the field
    check_tree(data, file=str(p))
    mtype, data = _language_model(data, p)
    cfg = _Cfg(data, p)
    try:
        fields = READERS[mtype](cfg)
    except (TypeError, ValueError, OverflowError) as exc:  # "x", [], {} where a number belongs
        field = cfg.last or "config.json"
        raise InputError(field, cfg.data.get(field), f"a number ({exc})", file=str(p)) from None
    eid = model_id or _default_id(p)
    src = config_source(p)
    prov = {k: Provenance(source=src) for k in [*fields, "name", "family"]}
    try:
        return ModelArch(
            id=eid,
            name=str(data.get("_name_or_path") or eid),
            family=str(mtype),
            provenance=prov,
            **fields,
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "config"
        raise InputError(
            loc, err.get("input"), err["msg"].removeprefix("Value error, "), file=str(p)
        ) from exc


def _language_model(data: dict[str, Any], p: Path) -> tuple[str, dict[str, Any]]:
    """Return the ``model_type`` to read and the fields to read it from.

    A multimodal wrapper (:data:`TEXT_CONFIG_WRAPPERS`) is read through its ``text_config``; a
    decoder aitco cannot price (:data:`NOT_PRICEABLE`) and an unknown type raise, naming the
    type (and the reason, or the supported list).
    """
    mtype = data.get("model_type")
    text = data.get("text_config")
    if mtype not in READERS and isinstance(text, dict) and text.get("model_type") in READERS:
        merged = {k: v for k, v in data.items() if k != "text_config"}
        merged.update(text)  # the language model's own fields win
        return str(text["model_type"]), merged
    if mtype in TEXT_CONFIG_WRAPPERS and not isinstance(text, dict):
        raise InputError(
            "text_config", None,
            f"the language model's config (a {mtype!r} file is a multimodal wrapper)",
            file=str(p),
        )  # fmt: skip
    if isinstance(mtype, str) and mtype in NOT_PRICEABLE:
        raise InputError(
            "model_type", mtype,
            "a decoder-only attention transformer aitco can price",
            file=str(p), hint=f"{mtype!r} is {NOT_PRICEABLE[mtype]}",
        )  # fmt: skip
    if mtype not in READERS:
        raise InputError("model_type", mtype, f"one of {', '.join(SUPPORTED)}", file=str(p))
    return str(mtype), data


def _default_id(p: Path) -> str:
    base = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    cleaned = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in base.lower())
    cleaned = cleaned.strip("-._") or "hf-model"
    return cleaned if cleaned[0].isalnum() else f"m{cleaned}"

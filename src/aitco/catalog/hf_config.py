"""Read a Hugging Face ``config.json`` as an aitco :class:`~aitco.catalog.schema.ModelArch`.

The reader dispatches on ``model_type`` and maps that family's field names onto aitco's
architecture fields. Every value it sets takes the config file itself as its source (document =
the file path, date = the file's modification time), so ``aitco catalog show`` and ``--explain``
can say where each dimension came from.

Supported ``model_type`` values: see :data:`SUPPORTED`. Unknown types raise
:class:`~aitco.errors.InputError` naming the type and the supported list; a missing required
field raises naming the field and the file.

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


def _llama(c: _Cfg) -> dict[str, Any]:
    return _llama_like(c)


def _mistral(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c)
    if c.get("sliding_window"):
        out["sliding_window"] = int(c.get("sliding_window"))
    return out


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
    return out


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
    if c.get("mlp_only_layers") or int(c.get("decoder_sparse_step", 1)) != 1:
        raise InputError(
            "decoder_sparse_step",
            c.get("decoder_sparse_step", 1),
            "1 with no mlp_only_layers (interleaved dense/MoE layers are not modelled)",
            file=str(c.path),
        )
    out["moe"] = MoE(
        n_experts=int(c.req("num_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        n_shared=shared // d_exp,
        d_ff_expert=d_exp,
    )
    return out


def _qwen3(c: _Cfg) -> dict[str, Any]:
    """Qwen3: Llama-like, explicit head_dim, no QKV bias (per-head q/k RMSNorms not counted)."""
    return _llama_like(c)


def _qwen3_moe(c: _Cfg) -> dict[str, Any]:
    out = _qwen3(c)
    if c.get("mlp_only_layers") or int(c.get("decoder_sparse_step", 1)) != 1:
        raise InputError(
            "decoder_sparse_step",
            c.get("decoder_sparse_step", 1),
            "1 with no mlp_only_layers (interleaved dense/MoE layers are not modelled)",
            file=str(c.path),
        )
    out["moe"] = MoE(
        n_experts=int(c.req("num_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        d_ff_expert=int(c.req("moe_intermediate_size")),
    )
    return out


def _gemma(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c, tied_default=True)
    out["ffn_type"] = "geglu"
    return out


def _gemma2(c: _Cfg) -> dict[str, Any]:
    out = _gemma(c)
    if c.get("sliding_window"):
        out["sliding_window"] = int(c.get("sliding_window"))
        out["sliding_window_every"] = 2  # Gemma 2 alternates local and global layers
    return out


def _phi3(c: _Cfg) -> dict[str, Any]:
    out = _llama_like(c)
    if c.get("sliding_window"):
        out["sliding_window"] = int(c.get("sliding_window"))
    return out


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
    if int(c.get("moe_layer_freq", 1)) != 1:
        raise InputError(
            "moe_layer_freq",
            c.get("moe_layer_freq"),
            "1 (every layer after the dense ones)",
            file=str(c.path),
        )
    out["moe"] = MoE(
        n_experts=int(c.req("n_routed_experts")),
        n_active=int(c.req("num_experts_per_tok")),
        n_shared=int(c.get("n_shared_experts", 0)),
        d_ff_expert=int(c.req("moe_intermediate_size")),
        first_dense_layers=int(c.get("first_k_dense_replace", 0)),
        n_groups=int(c.get("n_group") or 1),
        topk_groups=int(c.get("topk_group")) if c.get("topk_group") else None,
    )
    return out


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
    mtype = data.get("model_type")
    if mtype not in READERS:
        raise InputError("model_type", mtype, f"one of {', '.join(SUPPORTED)}", file=str(p))
    cfg = _Cfg(data, p)
    try:
        fields = READERS[str(mtype)](cfg)
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


def _default_id(p: Path) -> str:
    base = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    cleaned = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in base.lower())
    cleaned = cleaned.strip("-._") or "hf-model"
    return cleaned if cleaned[0].isalnum() else f"m{cleaned}"

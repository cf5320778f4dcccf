"""KV cache: bytes per token (MHA/GQA/MQA/MLA, sliding window), capacity and fragmentation.

The key/value cache is what bounds batching in LLM serving: every running sequence keeps the keys
and values of all its past tokens in device memory. These functions size it from the architecture
and say how many sequences fit in the memory left after weights and activations, for paged
(vLLM-style blocks) and contiguous (max-length reservation) allocation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.errors import InputError
from aitco.perf.flops import sliding_window_layer_count
from aitco.perf.precision import serving_weight_bytes
from aitco.perf.specs import ArchSpec
from aitco.units import BLOCK_SCALED_FORMATS, BYTES_PER_DTYPE, gb_to_bytes

F64 = NDArray[np.float64]

#: vLLM's default KV block size in tokens (``--block-size 16``); Kwon et al., "Efficient Memory
#: Management for Large Language Model Serving with PagedAttention", SOSP 2023,
#: doi:10.1145/3600006.3613165.
PAGED_BLOCK_TOKENS = 16
#: Tensors cached per layer and token by multi-head (MHA/GQA/MQA) attention: keys and values.
KV_TENSORS = 2
#: How a scheduler admits sequences against the KV cache (``EngineLimits.kv_admission``).
KV_ADMISSIONS = ("on_demand", "reserved")


def _dtype_bytes(dtype: str, field: str = "kv_precision") -> float:
    if dtype in BLOCK_SCALED_FORMATS:  # e.g. an NVFP4 KV cache: elements plus block scales
        return serving_weight_bytes(dtype)
    if dtype not in BYTES_PER_DTYPE:
        names = (*BYTES_PER_DTYPE, *BLOCK_SCALED_FORMATS)
        raise InputError(field, dtype, f"one of {', '.join(names)}")
    return BYTES_PER_DTYPE[dtype]


def kv_elements_per_token_per_layer(model: ArchSpec) -> int:
    r"""Return the cached elements per token in one layer (keys plus values, all KV heads).

    Parameters
    ----------
    model : ArchSpec
        The architecture.

    Returns
    -------
    int
        Elements per token per layer. [count]

    Notes
    -----
    MHA/GQA/MQA: :math:`2\\,n_{kv}\\,d_{head}`. MLA (DeepSeek-V2/V3) caches the compressed latent
    and the decoupled RoPE key: :math:`r_{kv} + d_{rope}` (DeepSeek-AI, arXiv:2405.04434, §2.1).
    """
    if model.mla is not None:
        return model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
    return KV_TENSORS * model.kv_heads * model.dim_head


def sliding_window_layers(model: ArchSpec) -> int:
    """Return the number of layers that attend only to a sliding window (0 if none).

    One definition with the FLOP count: :func:`aitco.perf.flops.sliding_window_layer_count`.
    """
    return sliding_window_layer_count(model)


def kv_cache_bytes(
    elements_per_token_layer: ArrayLike,
    n_layers: ArrayLike,
    window_layers: ArrayLike,
    window_tokens: ArrayLike,
    context_tokens: ArrayLike,
    bytes_per_element: ArrayLike,
) -> F64:
    r"""KV-cache bytes of one sequence of ``context_tokens`` tokens: the one KV-bytes formula.

    Every argument is an array (or scalar) broadcast together, so a sweep evaluates many
    models, precisions and lengths at once; :func:`kv_bytes_per_sequence` is the one-model
    case, and :func:`kv_layout` gives a model's first four arguments.

    Parameters
    ----------
    elements_per_token_layer : array_like
        Cached elements per token in one layer (:func:`kv_elements_per_token_per_layer`).
        [count]
    n_layers : array_like
        Layers. [count]
    window_layers : array_like
        Layers that attend only to a sliding window (:func:`sliding_window_layers`). [count]
    window_tokens : array_like
        Window of those layers (0 when there is none). [tokens]
    context_tokens : array_like
        Tokens in the sequence so far. [tokens]
    bytes_per_element : array_like
        Bytes of one cached element (``BYTES_PER_DTYPE`` of the KV precision). [B]

    Returns
    -------
    ndarray
        Bytes of the whole model, unsharded. [B]

    Notes
    -----
    .. math:: M = b\,e\,\left[(L - L_w)\,n + L_w \min(n, w)\right]

    Examples
    --------
    >>> float(kv_cache_bytes(64, 2, 1, 4, 10, 2.0))  # one full layer of 10 tokens, one of 4
    1792.0
    """
    n = np.asarray(context_tokens, dtype=np.float64)
    n_l = np.asarray(n_layers, dtype=np.float64)
    l_w = np.asarray(window_layers, dtype=np.float64)
    w = np.asarray(window_tokens, dtype=np.float64)
    tokens = (n_l - l_w) * n + l_w * np.minimum(n, w)
    e = np.asarray(elements_per_token_layer, dtype=np.float64)
    return np.asarray(np.asarray(bytes_per_element, dtype=np.float64) * e * tokens)


def kv_layout(model: ArchSpec) -> tuple[int, int, int, int]:
    """``(elements per token per layer, layers, sliding-window layers, window)`` of a model.

    The model-dependent arguments of :func:`kv_cache_bytes` (window 0 when there is none).
    """
    return (
        kv_elements_per_token_per_layer(model),
        model.n_layers,
        sliding_window_layers(model),
        int(model.sliding_window or 0),
    )


def kv_bytes_per_sequence(
    model: ArchSpec, context_tokens: ArrayLike, kv_precision: str = "bf16", tp: int = 1
) -> F64:
    r"""KV-cache bytes one sequence of ``context_tokens`` tokens holds, per tensor-parallel rank.

    Parameters
    ----------
    model : ArchSpec
        The architecture.
    context_tokens : array_like
        Tokens in the sequence so far (prompt plus generated). [tokens]
    kv_precision : str
        Data type of the cache (``bf16``, ``fp8``, ...).
    tp : int
        Tensor-parallel degree: KV heads are split across ranks; when there are fewer KV heads than
        ranks each rank keeps a replica of one head. MLA latents are replicated on every rank.

    Returns
    -------
    ndarray
        Bytes per rank (all layers of the model; divide by the pipeline degree per stage). [B]

    Notes
    -----
    .. math:: M = b\\,e\\,\\left[(L - L_w)\\,n + L_w \\min(n, w)\\right] / \\text{shard}

    with :math:`e` elements per token per layer, :math:`b` bytes per element, :math:`L_w`
    sliding-window layers of window :math:`w`.

    Examples
    --------
    >>> from aitco.catalog.schema import ModelArch
    >>> m = ModelArch(id="toy", n_layers=2, d_model=64, n_heads=4, n_kv_heads=2, d_ff=128,
    ...               vocab_size=100)
    >>> float(kv_bytes_per_sequence(m, 10, "fp16"))  # 2 layers * 2*(2*16) elems * 2 B * 10 tok
    2560.0
    """
    b = _dtype_bytes(kv_precision)
    if model.mla is not None:
        shard = 1.0
    else:
        kv = model.kv_heads
        shard = float(min(tp, kv)) if kv % min(tp, kv) == 0 else 1.0
    return kv_cache_bytes(*kv_layout(model), context_tokens, b) / shard


@dataclass(frozen=True)
class KVCapacity:
    """How many sequences and tokens the KV cache holds.

    Attributes
    ----------
    kv_cache_gb : float
        Memory given to the KV cache, per GPU. [GB]
    max_sequences : int
        Sequences the cache holds at once under the engine's admission (KV-bound concurrency):
        at their full reserved length when admission reserves it, at their mean length over
        their life when blocks are allocated on demand. [count]
    max_tokens : int
        Cached tokens that fit at once. [tokens]
    waste_fraction : float
        Share of the KV memory that holds no token (internal fragmentation or unused reservation),
        averaged over a sequence's life. [0-1]
    bytes_per_token : float
        KV bytes per cached token per GPU, at the reserved length. [B]
    full_length_sequences : int
        Sequences that fit at once at their full prompt + output length (the peak of a batch
        whose sequences start and finish together). [count]
    """

    kv_cache_gb: float
    max_sequences: int
    max_tokens: int
    waste_fraction: float
    bytes_per_token: float
    full_length_sequences: int = 0


def fragmentation_waste_fraction(
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    *,
    allocation: str = "paged",
    block_tokens: int = PAGED_BLOCK_TOKENS,
    reserved_tokens: ArrayLike | None = None,
) -> F64:
    r"""Average share of allocated KV memory that holds no token, over a sequence's life.

    Parameters
    ----------
    input_tokens, output_tokens : array_like
        Prompt and generated lengths. [tokens]
    allocation : {"paged", "contiguous"}
        ``paged``: fixed-size blocks allocated on demand, the last one partly filled.
        ``contiguous``: one slab of ``reserved_tokens`` reserved up front (pre-PagedAttention
        servers reserve the maximum sequence length).
    block_tokens : int
        Block size of paged allocation. [tokens]
    reserved_tokens : array_like, optional
        Contiguous reservation per sequence; default ``input + output``. [tokens]

    Returns
    -------
    ndarray
        Wasted fraction of the allocated KV memory. [0-1]

    Notes
    -----
    While a sequence grows from :math:`I` to :math:`I+O` tokens its mean length is
    :math:`\\bar n = I + O/2`. Paged waste is half a block on average:
    :math:`(k/2)/(\\bar n + k/2)`; contiguous waste is :math:`1 - \\bar n / R`. Kwon et al. (SOSP
    2023) measured 60-80 % waste in contiguous systems and under 4 % with paging.
    """
    i = np.asarray(input_tokens, dtype=np.float64)
    o = np.asarray(output_tokens, dtype=np.float64)
    mean_len = i + o / 2.0
    if allocation == "paged":
        half = block_tokens / 2.0
        return np.asarray(half / (mean_len + half), dtype=np.float64)
    if allocation == "contiguous":
        r = i + o if reserved_tokens is None else np.asarray(reserved_tokens, dtype=np.float64)
        return np.asarray(np.clip(1.0 - mean_len / r, 0.0, 1.0), dtype=np.float64)
    raise InputError("allocation", allocation, "'paged' or 'contiguous'")


def kv_capacity(
    model: ArchSpec,
    free_memory_gb: float,
    *,
    input_tokens: int,
    output_tokens: int,
    kv_precision: str = "bf16",
    tp: int = 1,
    pp: int = 1,
    allocation: str = "paged",
    block_tokens: int = PAGED_BLOCK_TOKENS,
    reserved_tokens: int | None = None,
    admission: str = "reserved",
) -> KVCapacity:
    r"""Sequences and tokens that fit in ``free_memory_gb`` of KV cache per GPU.

    Parameters
    ----------
    model : ArchSpec
        The architecture.
    free_memory_gb : float
        Device memory per GPU left for the KV cache after weights, activations and reserve. [GB]
    input_tokens, output_tokens : int
        Request shape. [tokens]
    kv_precision : str
        Cache data type.
    tp, pp : int
        Tensor- and pipeline-parallel degrees (KV heads split over tp, layers over pp).
    allocation : {"paged", "contiguous"}
        Allocation scheme (see :func:`fragmentation_waste_fraction`).
    block_tokens : int
        Paged block size. [tokens]
    reserved_tokens : int, optional
        Contiguous reservation per sequence (default ``input + output``). [tokens]
    admission : {"reserved", "on_demand"}
        ``reserved``: each sequence holds its full ``input + output`` length from admission
        (TensorRT-LLM's default ``GUARANTEED_NO_EVICT`` scheduler, contiguous servers).
        ``on_demand`` (paged only): blocks are allocated as tokens are written and the scheduler
        preempts when the cache is full (vLLM, SGLang), so in steady state a sequence holds its
        mean length over its life, :math:`I + O/2` plus half a block.

    Returns
    -------
    KVCapacity
        Capacity in sequences (under the admission) and in tokens.

    Notes
    -----
    Capacity is linear in free memory: :math:`N_{seq} = \\lfloor F / m_{seq} \\rfloor` with
    :math:`m_{seq}` the bytes of one sequence at its reserved length, rounded up to whole blocks
    when paged.
    """
    if free_memory_gb < 0:
        free_memory_gb = 0.0
    full = input_tokens + output_tokens
    if allocation == "paged":
        reserved = int(np.ceil(full / block_tokens) * block_tokens)
    elif allocation == "contiguous":
        reserved = int(reserved_tokens if reserved_tokens is not None else full)
    else:
        raise InputError("allocation", allocation, "'paged' or 'contiguous'")
    if admission not in KV_ADMISSIONS:
        raise InputError("kv_admission", admission, f"one of {KV_ADMISSIONS}")
    per_seq = float(kv_bytes_per_sequence(model, reserved, kv_precision, tp)) / pp
    per_token = float(kv_bytes_per_sequence(model, 1.0, kv_precision, tp)) / pp
    free_b = gb_to_bytes(free_memory_gb)
    n_full = int(free_b // per_seq) if per_seq > 0 else 0
    n_seq = n_full
    if admission == "on_demand" and allocation == "paged":
        held = input_tokens + output_tokens / 2.0 + block_tokens / 2.0
        per_held = float(kv_bytes_per_sequence(model, held, kv_precision, tp)) / pp
        n_seq = max(int(free_b // per_held), n_full) if per_held > 0 else 0
    waste = float(
        fragmentation_waste_fraction(
            input_tokens,
            output_tokens,
            allocation=allocation,
            block_tokens=block_tokens,
            reserved_tokens=reserved,
        )
    )
    return KVCapacity(
        kv_cache_gb=free_memory_gb,
        max_sequences=n_seq,
        max_tokens=int(free_b // per_token) if per_token > 0 else 0,
        waste_fraction=waste,
        bytes_per_token=per_token,
        full_length_sequences=n_full,
    )

"""Memory per device of a training run: weights, gradients, optimizer states, activations.

Vectorised over parallel plans. Sharding: tensor parallel (with sequence parallel, Megatron)
divides weights and activations by ``tp``; pipeline parallel keeps ``ceil(L/pp)`` layers per
stage and, with 1F1B, up to ``pp`` micro-batches of activations in flight on the first stage;
context parallel divides the tokens by ``cp``; expert parallel divides the routed experts by
``ep``; ZeRO 1/2/3 (and FSDP = ZeRO-3) divide optimizer states / gradients / weights by ``dp``.

References
----------
.. [1] S. Rajbhandari et al., "ZeRO: memory optimizations toward training trillion parameter
   models", SC20, arXiv:1910.02054 (2 + 2 + 12 bytes per parameter with Adam).
.. [2] V. Korthikanti et al., "Reducing activation recomputation in large transformer models",
   arXiv:2205.05198, 2022, Sec. 4 (activation bytes per layer; 34 sbh/t with SP).
.. [3] T. Dettmers et al., "8-bit optimizers via block-wise quantization", ICLR 2022.
.. [4] T. Dettmers et al., "QLoRA: efficient finetuning of quantized LLMs", arXiv:2305.14314,
   2023 (NF4 with double quantization: 0.127 bits of constants per parameter).
.. [5] PyTorch, "CUDA semantics: memory management" (caching allocator, context), 2024.
.. [6] J. Ren et al., "ZeRO-Offload: democratizing billion-scale model training", USENIX ATC
   2021, arXiv:2101.06840 (optimizer states, fp32 gradients and the update on the CPU).
.. [7] S. Rajbhandari et al., "ZeRO-Infinity: breaking the GPU memory wall for extreme scale
   deep learning", SC21, arXiv:2104.07857 (parameters offloaded too, fetched per layer).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aitco.perf.flops import ModelShape
from aitco.perf.precision import TRAIN_FORMATS, train_format
from aitco.units import BITS_PER_BYTE, GIGA

F64 = NDArray[np.float64]

#: Bytes of a gradient element in mixed-precision training (bf16/fp16; ZeRO paper [1]).
GRAD_BYTES = 2.0
#: Adam states with fp32 master weights: master 4 + momentum 4 + variance 4 bytes ([1], K = 12).
ADAM_FP32_BYTES = 12.0
#: 8-bit Adam: fp32 master 4 + momentum 1 + variance 1 bytes ([3]).
ADAM_8BIT_BYTES = 6.0
#: NF4 base weights with double-quantised constants: 4 + 0.127 bits ([4]).
QLORA_BASE_BYTES = (4.0 + 0.127) / BITS_PER_BYTE
#: Logits are upcast to fp32 for the cross-entropy loss.
LOGIT_BYTES = 4.0
#: Per-device memory the framework takes before the model: CUDA context (~0.5-1 GB), NCCL
#: buffers and caching-allocator fragmentation. Assumption in the range PyTorch [5] and
#: DeepSpeed users report; named so a calibration can replace it.
FRAMEWORK_OVERHEAD_GB = 3.0
#: ZeRO-3/FSDP materialise the current and the prefetched layer's full weights.
ZERO3_LIVE_LAYERS = 2.0
#: Decoder-layer inputs an activation-offloading run holds on the device: the layer being
#: computed and the one being copied in or out (MaxText's offloaded decoder-layer input, the
#: JAX ``offload_dot_with_no_batch_dims`` / host-offload remat policies). [layers]
OFFLOADED_LIVE_LAYERS = 2.0
#: ZeRO-Offload keeps an fp32 gradient buffer of the device's shard in host memory, where the
#: CPU optimizer step reads it ([6], Sec. 4). [B/param]
HOST_GRAD_BYTES = 4.0
#: Offload modes of :func:`training_memory_bytes` (DeepSpeed ``offload_optimizer`` /
#: ``offload_param``, ``device: cpu`` or ``device: nvme`` [7]).
OFFLOAD_MODES = ("none", "optimizer", "params", "optimizer-nvme", "params-nvme")
#: Offload modes that move the weight shard off the device too (ZeRO-Infinity, ZeRO-3).
OFFLOAD_PARAM_MODES = ("params", "params-nvme")
#: Offload modes whose states live on the node's NVMe drives (ZeRO-Infinity [7]).
OFFLOAD_NVME_MODES = ("optimizer-nvme", "params-nvme")


def activation_elements_per_token_layer(ms: ModelShape, recompute: ArrayLike) -> F64:
    """Activation elements one layer keeps per token for the backward pass [count].

    Parameters
    ----------
    ms : ModelShape
        Model.
    recompute : array_like of int
        0 none, 1 selective, 2 full.

    Returns
    -------
    ndarray
        Elements per token per layer (multiply by the element size; divide by ``tp`` with SP).

    Notes
    -----
    Following Korthikanti et al. (2022) without dropout and with FlashAttention (no
    :math:`s^2` score matrix, so selective recomputation stores the same as none):
    attention keeps its input, Q, K, V and output (:math:`2h + 2 n_{kv} d_h + h`), the FFN its
    input, the up(/gate) outputs and the activation output, and the two norms their inputs.
    Full recomputation keeps only the layer input :math:`h`.
    """
    h = float(ms.d_model)
    q = float(ms.n_heads * ms.head_dim)
    kv = float(ms.kv_heads * ms.head_dim)
    f = ms.ffn_width_active
    attn = h + q + 2 * kv + q
    ffn = h + (2 * f if ms.gated else f) + f
    norms = 2 * h
    none = attn + ffn + norms
    r = np.asarray(recompute)
    return np.where(r == 2, h, none)


def activation_bytes_per_token_layer(ms: ModelShape, recompute: ArrayLike, precision: str) -> F64:
    """Activation bytes one layer keeps per token for the backward pass [B].

    Parameters
    ----------
    ms : ModelShape
        Model.
    recompute : array_like of int
        0 none, 1 selective, 2 full.
    precision : str
        Training data type.

    Returns
    -------
    ndarray
        Bytes per token per layer (divide by ``tp`` with sequence parallel).

    Notes
    -----
    :func:`activation_elements_per_token_layer` at 2 bytes (4 in fp32). In low-precision
    training the inputs saved for the weight-gradient GEMMs (QKV input, projection input, FFN
    input and FFN-out input: :math:`2h + n_h d_h + f`) are kept quantised, at the format's bytes
    per element with its block scales (FP8: 1 byte, Transformer Engine; MXFP8 1.03, NVFP4 0.56:
    :mod:`aitco.perf.precision`); the recipe's BF16 layers keep theirs in 16 bit.
    """
    elems = activation_elements_per_token_layer(ms, recompute)
    if precision == "fp32":
        return elems * 4.0
    fmt = TRAIN_FORMATS.get(precision)
    if fmt is None or not fmt.quantized:
        return elems * 2.0
    gemm_inputs = 2.0 * ms.d_model + ms.n_heads * ms.head_dim + ms.ffn_width_active
    saved = (1.0 - fmt.bf16_linear_share) * gemm_inputs * (2.0 - fmt.element_bytes)
    return np.where(np.asarray(recompute) == 2, elems * 2.0, elems * 2.0 - saved)


def weight_bytes_per_param(precision: str, method: str) -> float:
    """Bytes of one stored (frozen or trained) base weight [B].

    16-bit weights plus the format's persistent quantised copies
    (:attr:`aitco.perf.precision.TrainFormat.weight_cache_copies`: FP8 one, MXFP8 a row-wise and
    a column-wise one, NVFP4 one 2D-scaled copy, INT8 none); fp32 training 4; QLoRA's NF4 base.
    """
    if method == "qlora":
        return QLORA_BASE_BYTES
    if precision == "fp32":
        return 4.0
    fmt = train_format(precision)
    if not fmt.quantized:
        return 2.0
    return 2.0 + fmt.weight_cache_copies * fmt.element_bytes


def grad_bytes_per_param(precision: str) -> float:
    """Bytes of one gradient element: fp32 training keeps fp32 gradients, else 16-bit [B]."""
    return 4.0 if precision == "fp32" else GRAD_BYTES


def training_memory_bytes(
    ms: ModelShape,
    *,
    seq_len: float,
    precision: str,
    method: str,
    optimizer_bytes: float,
    tp: ArrayLike,
    pp: ArrayLike,
    cp: ArrayLike,
    ep: ArrayLike,
    dp: ArrayLike,
    zero: ArrayLike,
    micro_batch: ArrayLike,
    recompute: ArrayLike,
    n_micro: ArrayLike,
    vp: ArrayLike = 1,
    trainable_params: float | None = None,
    recompute_fraction: ArrayLike = 1.0,
    offload: str = "none",
    logit_bytes: float = LOGIT_BYTES,
    activation_precision: str | None = None,
    activation_offload: bool = False,
) -> dict[str, F64]:
    r"""Peak memory per device of a training plan, by component [B].

    Parameters
    ----------
    ms : ModelShape
        Model.
    seq_len : float
        Sequence length. [tokens]
    precision : str
        Training data type (``bf16``, ``fp16``, ``fp8``, ``fp32``).
    method : {"full", "lora", "qlora"}
        Training method.
    optimizer_bytes : float
        Optimizer state bytes per trainable parameter (``ADAM_FP32_BYTES`` or
        ``ADAM_8BIT_BYTES``). [B]
    tp, pp, cp, ep, dp : array_like
        Parallel degrees. [count]
    zero : array_like
        ZeRO stage 0-3 (FSDP full shard = 3).
    micro_batch : array_like
        Sequences per micro-batch. [count]
    recompute : array_like
        0 none, 1 selective, 2 full.
    n_micro : array_like
        Micro-batches per step (gradient accumulation). [count]
    vp : array_like
        Interleaved (virtual) pipeline stages per device. [count]
    trainable_params : float, optional
        Trainable parameters for LoRA (default: ``ms.lora_params``). [count]
    recompute_fraction : array_like
        Share of the layers fully recomputed when ``recompute`` is 2. [0-1]
    offload : {"none", "optimizer", "params", "optimizer-nvme", "params-nvme"}
        ZeRO-Offload [6]: ``optimizer`` keeps the optimizer states and an fp32 gradient buffer
        of the device's ZeRO shard in host memory (the CPU runs the optimizer step; 16-bit
        gradients leave the device bucket by bucket as the backward pass makes them);
        ``params`` (ZeRO-Infinity [7], ZeRO-3 only) also keeps the weight shard there, the
        device holding only the layers in flight. The ``-nvme`` modes (ZeRO-Infinity's
        ``device: nvme``) keep those states on the node's NVMe drives instead; the fp32
        gradient buffer stays in host memory.
    logit_bytes : float
        Bytes per logit held for the loss (:func:`activation_memory_bytes`). [B]
    activation_precision : str, optional
        Format the saved activations are held in (default ``precision``; an emulated format's
        fake-quantised run saves 16-bit tensors: ``bf16``).
    activation_offload : bool
        Decoder-layer inputs kept in host memory (with full recompute): the device holds
        :data:`OFFLOADED_LIVE_LAYERS` of them, the host the rest (``host``).

    Returns
    -------
    dict of str to ndarray
        ``weights``, ``gradients``, ``optimizer``, ``activations``, ``overhead``, ``total``,
        ``host`` (host memory the device's offloaded shard takes) and ``nvme`` (NVMe space it
        takes). [B]

    Notes
    -----
    Per stage: :math:`P = (\lceil L/p \rceil P_{layer} + P_{emb})/t + \lceil L/p \rceil
    P_{exp}/(t\,e)`. States: weights :math:`w P`, gradients :math:`2 P`, optimizer :math:`K P`,
    divided by :math:`d` from ZeRO stage 3, 2 and 1 on. Activations:
    :math:`A\, b s / (c\, t)\, \lceil L/p \rceil \min(p, m)(1 + (p-1)/(p v))` bytes.
    """
    tp = np.asarray(tp, dtype=float)
    pp = np.asarray(pp, dtype=float)
    cp = np.asarray(cp, dtype=float)
    ep = np.asarray(ep, dtype=float)
    dp = np.asarray(dp, dtype=float)
    zero = np.asarray(zero)
    mb = np.asarray(micro_batch, dtype=float)
    m = np.asarray(n_micro, dtype=float)
    vp = np.asarray(vp, dtype=float)
    lps = np.ceil(ms.n_layers / pp)
    emb = np.where(
        pp > 1, max(ms.embedding_params, ms.lm_head_params), ms.embedding_params + ms.lm_head_params
    )
    dense_p = (lps * ms.layer_dense_params + emb) / tp
    exp_p = lps * ms.expert_params_per_layer / (tp * ep)
    params = dense_p + exp_p
    wb = weight_bytes_per_param(precision, method)
    if method == "full":
        trainable = params
        frozen = np.zeros_like(params)
    else:
        lp = ms.lora_params if trainable_params is None else trainable_params
        trainable = lp * lps / ms.n_layers / tp
        frozen = params
    z3 = zero >= 3
    # trained weights are sharded by ZeRO-3; frozen base weights are sharded too under FSDP
    weights = np.where(z3, (trainable * wb + frozen * wb) / dp, trainable * wb + frozen * wb)
    live = np.where(
        z3,
        ZERO3_LIVE_LAYERS * (ms.layer_dense_params + ms.expert_params_per_layer / ep) / tp * wb,
        0.0,
    )
    weights = weights + live
    grad_b = grad_bytes_per_param(precision)
    grads = np.where(zero >= 2, trainable * grad_b / dp, trainable * grad_b)
    opt = np.where(zero >= 1, trainable * optimizer_bytes / dp, trainable * optimizer_bytes)
    host = np.zeros_like(opt)
    nvme = np.zeros_like(opt)
    if offload != "none":
        on_nvme = offload in OFFLOAD_NVME_MODES
        shard = np.where(zero >= 1, trainable / dp, trainable)
        host = shard * HOST_GRAD_BYTES + (0.0 if on_nvme else opt)
        nvme = opt if on_nvme else nvme
        opt = np.zeros_like(opt)
        grads = np.zeros_like(grads)  # streamed to the host bucket by bucket as produced
        if offload in OFFLOAD_PARAM_MODES:
            if on_nvme:
                nvme = nvme + weights - live
            else:
                host = host + weights - live
            weights = live
    acts = activation_memory_bytes(
        ms,
        mb * seq_len / cp,
        tp,
        pp,
        m,
        vp,
        recompute,
        recompute_fraction,
        activation_precision or precision,
        logit_bytes,
    )
    if activation_offload:  # the layer inputs move to the host; two stay (in use, in transfer)
        stored = offloadable_activation_bytes(
            ms, mb * seq_len / cp, tp, pp, m, vp, activation_precision or precision
        )
        inputs_layer = stored / np.ceil(ms.n_layers / pp) / _in_flight(pp, m, vp)
        acts = acts - stored + OFFLOADED_LIVE_LAYERS * inputs_layer
        host = host + stored
    overhead = np.full_like(acts, FRAMEWORK_OVERHEAD_GB * GIGA)
    total = weights + grads + opt + acts + overhead
    return {
        "weights": weights,
        "gradients": grads,
        "optimizer": opt,
        "activations": acts,
        "overhead": overhead,
        "total": total,
        "params_per_device": params,
        "trainable_per_device": trainable,
        "host": host,
        "nvme": nvme,
    }


def activation_memory_bytes(
    ms: ModelShape,
    tokens: ArrayLike,
    tp: ArrayLike,
    pp: ArrayLike,
    n_micro: ArrayLike,
    vp: ArrayLike,
    recompute: ArrayLike,
    recompute_fraction: ArrayLike,
    precision: str,
    logit_bytes: float = LOGIT_BYTES,
) -> F64:
    r"""Activations a device of the critical pipeline stage holds at its peak [B].

    Parameters
    ----------
    ms : ModelShape
        Model.
    tokens : array_like
        Tokens of one micro-batch on one device group member, ``b s / cp``. [tokens]
    tp, pp, n_micro, vp : array_like
        TP and PP degrees, micro-batches per step, model chunks per stage. [count]
    recompute, recompute_fraction : array_like
        Recompute code (0 none, 1 selective, 2 full) and the share of layers fully recomputed.
    precision : str
        Training data type.
    logit_bytes : float
        Bytes per logit held for the loss (fp32 :data:`LOGIT_BYTES`; a fused loss kernel keeps
        the 16-bit logits and writes their gradient in place). [B]

    Returns
    -------
    ndarray
        :math:`A\, T/t\, \lceil L/p \rceil \min(p, m)(1 + (p-1)/(p v))` with :math:`A` per
        token and layer (Korthikanti et al. 2022; full recompute keeps the layer input on its
        share of the layers and re-materialises one layer), plus the logits. [B]
    """
    tokens = np.asarray(tokens, dtype=float)
    tp = np.asarray(tp, dtype=float)
    pp = np.asarray(pp, dtype=float)
    vp = np.asarray(vp, dtype=float)
    rc = np.asarray(recompute)
    frac = np.where(rc == 2, np.asarray(recompute_fraction, dtype=float), 0.0)
    kept = activation_bytes_per_token_layer(ms, np.where(rc == 2, 0, rc), precision)
    inputs_only = activation_bytes_per_token_layer(ms, 2, precision)
    per_layer = (frac * inputs_only + (1.0 - frac) * kept) * tokens / tp
    acts = per_layer * np.ceil(ms.n_layers / pp) * _in_flight(pp, n_micro, vp)
    # full recompute re-materialises one layer's full activations during its backward
    one_layer = activation_bytes_per_token_layer(ms, 0, precision) * tokens / tp
    acts = acts + np.where(rc == 2, one_layer, 0.0)
    return acts + tokens * ms.vocab_size / tp * logit_bytes


def _in_flight(pp: ArrayLike, n_micro: ArrayLike, vp: ArrayLike) -> F64:
    """Micro-batches whose activations the first pipeline stage holds at its peak (1F1B)."""
    pp = np.asarray(pp, dtype=float)
    vp = np.asarray(vp, dtype=float)
    return np.asarray(
        np.minimum(pp, np.asarray(n_micro, dtype=float))
        * (1.0 + np.where(vp > 1, (pp - 1) / (pp * vp), 0.0)),
        dtype=np.float64,
    )


def offloadable_activation_bytes(
    ms: ModelShape,
    tokens: ArrayLike,
    tp: ArrayLike,
    pp: ArrayLike,
    n_micro: ArrayLike,
    vp: ArrayLike,
    precision: str,
) -> F64:
    r"""Decoder-layer inputs a fully recomputed stage keeps for its backward pass [B].

    :math:`h\,b\,T/t \cdot \lceil L/p \rceil \cdot` the in-flight micro-batches: what an
    activation-offloading run (MaxText's offloaded decoder-layer input) keeps in host memory
    instead of on the device.
    """
    tokens = np.asarray(tokens, dtype=float)
    one = activation_bytes_per_token_layer(ms, 2, precision) * tokens / np.asarray(tp, dtype=float)
    layers = np.ceil(ms.n_layers / np.asarray(pp, dtype=float))
    return np.asarray(one * layers * _in_flight(pp, n_micro, vp), dtype=np.float64)

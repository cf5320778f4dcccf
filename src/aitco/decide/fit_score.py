r"""Model-hardware fit: a per-dimension score (0-1) with the reason behind each number.

Five dimensions, each a small physical ratio rather than an opinion:

``memory_fit``
    Share of the device memory the workload needs on the GPUs given, from the engines' memory
    relations: serving, the stored weights (:func:`aitco.perf.iteration.weight_bytes`) plus the
    KV cache of the reference batch (:func:`aitco.perf.kvcache.kv_bytes_per_sequence`, sliding
    windows included); training, the per-device total of
    :func:`aitco.perf.memory.training_memory_bytes` for ZeRO-3 over the GPUs with selective
    recomputation (weights, gradients, Adam states, activations, framework overhead), as
    ``aitco train`` sizes it. 1 up to ``MEMORY_COMFORT_FRACTION``, falling linearly to 0 where
    it no longer fits.
``kv_bandwidth``
    Serving: decode is memory-bound, and however large the batch each token still reads its own
    KV cache, so the arithmetic intensity of decode is capped at
    :math:`I_{max} = 2 N_a / (C k)` (active parameters, context *C*, KV bytes per token *k*).
    The score is :math:`\min(1, I_{max} / I^*)` against the ridge point :math:`I^* = P / B`:
    below 1, the KV cache keeps decode from ever using the full peak (long contexts and
    bandwidth-poor hardware score low). Training GEMMs are compute-bound and score 1.
``moe_interconnect``
    Mixture-of-experts: expert-parallel all-to-all time per token over the link the experts span
    (scale-up inside a node, scale-out beyond) against the expert compute time,
    :math:`1 / (1 + t_{a2a} / t_{exp})`. Dense models score 1.
``topology``
    Tensor parallelism needed to fit (from ``memory_fit``) against the intra-node fabric: the
    all-reduce time of a layer's activations over the link against the layer's compute,
    :math:`1 / (1 + t_{AR} / t_{layer})`. PCIe-only nodes score low when TP > 1 is needed.
``precision_support``
    1 when the accelerator has a dense peak for the precision; 0 otherwise (with the data types
    it does support).

The overall score is the geometric mean, so one failing dimension pulls it down hard.
"""

from __future__ import annotations

import math
from typing import Any

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.decide.practice import practice_for
from aitco.errors import InfeasiblePlan, InputError
from aitco.perf.comms import allreduce_time_s
from aitco.perf.flops import FORWARD_FLOPS_PER_PARAM, TRAINING_FLOPS_PER_PARAM, model_shape
from aitco.perf.inference import estimate_inference
from aitco.perf.iteration import weight_bytes
from aitco.perf.kvcache import kv_bytes_per_sequence
from aitco.perf.memory import ADAM_FP32_BYTES, training_memory_bytes
from aitco.perf.params import moe_layer_count, param_counts
from aitco.perf.training import default_global_batch, estimate_training
from aitco.units import BYTES_PER_DTYPE, DTYPES, GIGA, TERA

#: Memory use up to which the fit is comfortable (room for fragmentation, CUDA graphs, spikes).
MEMORY_COMFORT_FRACTION = 0.8
#: Serving reference batch (concurrent sequences) for the KV and intensity figures.
REFERENCE_BATCH = 32
#: All-to-all messages per MoE layer per token (dispatch + combine).
A2A_PER_MOE_LAYER = 2.0
#: FLOPs per parameter per token: forward (serving) and forward+backward (training), the
#: engines' constants (:mod:`aitco.perf.flops`).
FLOPS_PER_PARAM = {"inference": FORWARD_FLOPS_PER_PARAM, "training": TRAINING_FLOPS_PER_PARAM}
#: Tensor-parallel all-reduces per layer of a forward pass (after attention and after the FFN;
#: Megatron-LM, Shoeybi et al., arXiv:1909.08053, fig. 4).
TP_ALLREDUCES_PER_LAYER_FORWARD = 2.0
#: Recomputation the training memory figure assumes: selective (code 1 of the engines).
SELECTIVE_RECOMPUTE = 1
#: NVLink 4 bandwidth per GPU per direction (H100 SXM), the reference scale-up link. [GB/s]
REFERENCE_SCALE_UP_GB_S = 450.0


def _dim(score: float, reason: str, **values: Any) -> dict[str, Any]:
    return {"score": max(0.0, min(1.0, score)), "reason": reason, "values": values}


def fit_score(
    catalog: Catalog,
    model: str | ModelArch,
    hardware: str,
    *,
    kind: str = "inference",
    precision: str = "bf16",
    gpus: int | None = None,
    input_tokens: int = 2048,
    output_tokens: int = 512,
    seq_len: int = 4096,
    batch: int | None = None,
) -> dict[str, Any]:
    """Score how well ``model`` fits ``hardware`` for serving or training, dimension by dimension.

    Parameters
    ----------
    catalog : Catalog
        Accelerators, systems, models.
    model : str or ModelArch
        Model id, config path or architecture.
    hardware : str
        Accelerator or system id.
    kind : {"inference", "training"}
        Workload.
    precision : str
        Weight/compute data type.
    gpus : int, optional
        Accelerators available (default: one node).
    input_tokens, output_tokens : int
        Serving request shape (context = input + output). [tokens]
    seq_len : int
        Training sequence length. [tokens]
    batch : int, optional
        Concurrent sequences (serving, default ``REFERENCE_BATCH``) or micro-batch per device
        (training, default 1). [count]

    Returns
    -------
    dict
        ``overall`` (geometric mean), ``dimensions`` ({name: {score, reason, values}}),
        ``weakest`` (the lowest dimension) and the inputs.
    """
    if kind not in ("inference", "training"):
        raise InputError("--kind", kind, "inference or training")
    if precision not in DTYPES:
        raise InputError("--precision", precision, f"one of {', '.join(DTYPES)}")
    m = model if isinstance(model, ModelArch) else catalog.resolve_model(model, field="--model")
    acc, sysm = catalog.hardware(hardware, field="--hardware")
    g = gpus or sysm.devices_per_node
    if g < 1:
        raise InputError("--gpus", g, "an integer >= 1")
    if batch is None:
        batch = REFERENCE_BATCH if kind == "inference" else 1
    if batch < 1:
        raise InputError("--batch", batch, "an integer >= 1")
    pc = param_counts(m)
    dims: dict[str, dict[str, Any]] = {}
    mem, tp_needed = _memory(
        m, acc, kind, precision, g, input_tokens + output_tokens, seq_len, batch
    )
    dims["memory_fit"] = mem
    dims["kv_bandwidth"] = _intensity(
        m, acc, kind, precision, input_tokens + output_tokens, batch, pc
    )
    dims["moe_interconnect"] = _moe(m, acc, sysm, kind, precision, g, pc)
    dims["topology"] = _topology(
        m, acc, sysm, precision, tp_needed, batch, seq_len if kind == "training" else 1, pc
    )
    dims["precision_support"] = _precision(acc, precision)
    verdict = _engine_verdict(
        m, acc, sysm, kind, precision, g, (input_tokens, output_tokens, seq_len, batch)
    )
    if not verdict["feasible"]:  # compare's verdict: the memory dimension cannot pass
        dims["memory_fit"] = {
            **mem, "score": 0.0, "reason": f"{mem['reason']}; {verdict['infeasible_reasons'][0]}"
        }  # fmt: skip
    elif mem["score"] == 0.0:
        dims["memory_fit"] = {**mem, "reason": f"{mem['reason']}; {verdict['note']}"}
    scores = [d["score"] for d in dims.values()]
    overall = (
        math.exp(sum(math.log(max(s, 1e-6)) for s in scores) / len(scores)) if all(scores) else 0.0
    )
    weakest = min(dims, key=lambda k: dims[k]["score"])
    return {
        "model": m.id,
        "hardware": acc.id,
        "system": sysm.id,
        "kind": kind,
        "precision": precision,
        "gpus": g,
        "overall": overall,
        "weakest": weakest,
        "feasible": verdict["feasible"],
        "infeasible_reasons": verdict["infeasible_reasons"],
        "dimensions": dims,
    }


def _engine_verdict(
    m: ModelArch, acc: Accelerator, sysm: System, kind: str, precision: str, g: int,
    shape: tuple[int, int, int, int],
) -> dict[str, Any]:  # fmt: skip
    """Return the engine's verdict on ``g`` devices, as ``compare`` reaches it for an option.

    Serving: the inference engine at ``batch`` concurrent requests (it admits fewer when their
    KV cache does not fit, and refuses when the weights do not); training: the training engine
    with its searched plan. ``feasible`` and ``infeasible_reasons`` ("does not fit in memory:
    ...") are then those of a compare option of the same hardware and devices.
    """
    input_tokens, output_tokens, seq_len, batch = shape
    if kind == "inference":
        try:
            res = estimate_inference(
                m, acc, sysm, g, precision=precision, input_tokens=input_tokens,
                output_tokens=output_tokens, concurrency=batch,
            )  # fmt: skip
        except InfeasiblePlan as exc:
            why = f"does not fit in memory: {exc.hint or exc}"
            return {"feasible": False, "infeasible_reasons": [why], "note": ""}
        v = res.values
        note = (
            f"the engine serves it at tp {v.get('tp')} with up to "
            f"{v.get('max_concurrency')} sequences in flight"
        )
        return {"feasible": True, "infeasible_reasons": [], "note": note}
    pc = param_counts(m)
    run = estimate_training(
        m, acc, sysm, g, seq_len=seq_len,
        global_batch=default_global_batch(pc.active, g, seq_len, None), precision=precision,
        practice=practice_for(pc.total, acc.family, precision, m.moe is not None),
    )  # fmt: skip
    v = run.values
    if not v.get("feasible", True):
        why = v["infeasible_reason"]
        if not v.get("fits", True):
            why = f"does not fit in memory: {why}"
        return {"feasible": False, "infeasible_reasons": [why], "note": ""}
    p = v.get("plan", {})
    need = float(v["memory_per_gpu_gb"])
    note = (
        f"the training engine's plan (tp {p.get('tp')}, pp {p.get('pp')}, zero {p.get('zero')}, "
        f"micro-batch {p.get('micro_batch')}) needs {need:.1f} GB per device of "
        f"{float(v['memory_capacity_gb']):g} GB"
    )
    return {"feasible": True, "infeasible_reasons": [], "note": note}


def _comfort(frac: float) -> float:
    """Score of a memory use: 1 up to :data:`MEMORY_COMFORT_FRACTION`, 0 from 1, linear between."""
    if frac <= MEMORY_COMFORT_FRACTION:
        return 1.0
    if frac >= 1.0:
        return 0.0
    return (1.0 - frac) / (1.0 - MEMORY_COMFORT_FRACTION)


def _memory(
    m: ModelArch,
    acc: Accelerator,
    kind: str,
    precision: str,
    g: int,
    context: int,
    seq_len: int,
    batch: int,
) -> tuple[dict[str, Any], int]:
    per_gpu = acc.memory_gb * GIGA * MEMORY_COMFORT_FRACTION
    if kind == "inference":
        weights = weight_bytes(m, precision, _act_dtype(precision)).total(
            m.moe.n_experts if m.moe else 0
        )
        kv = batch * float(kv_bytes_per_sequence(m, context, precision))
        need = weights + kv
        what = f"weights {weights / GIGA:.1f} GB + KV {kv / GIGA:.1f} GB"
        what += f" ({batch} x {context} tokens)"
        shards = need / per_gpu
    else:
        # ZeRO-3 shards the model states over all g devices; each holds its micro-batch's
        # activations (selective recomputation): the engine's memory relation, per device
        mem = training_memory_bytes(
            model_shape(m), seq_len=seq_len, precision=precision, method="full",
            optimizer_bytes=ADAM_FP32_BYTES, tp=1, pp=1, cp=1, ep=1, dp=g, zero=3,
            micro_batch=batch, recompute=SELECTIVE_RECOMPUTE, n_micro=1,
        )  # fmt: skip
        per_device = float(mem["total"])
        states = float(mem["weights"] + mem["gradients"] + mem["optimizer"])
        need = g * per_device
        what = (
            f"per device: weights+grads+Adam {states / GIGA:.1f} GB (ZeRO-3 over {g}) + "
            f"activations {float(mem['activations']) / GIGA:.1f} GB (micro-batch {batch} x "
            f"{seq_len}) + framework {float(mem['overhead']) / GIGA:.1f} GB"
        )
        shards = per_device / per_gpu
    have = acc.memory_gb * GIGA * g
    frac = need / have
    tp_needed = 1 if shards <= 1 else 2 ** math.ceil(math.log2(shards))
    score = _comfort(frac)
    verdict = (
        "fits comfortably" if score == 1 else ("does not fit" if score == 0 else "fits, tight")
    )
    reason = f"{what} = {need / GIGA:.1f} GB of {g} x {acc.memory_gb:g} GB ({frac:.0%}): {verdict}"
    if score == 0:
        more = math.ceil(need / per_gpu)
        reason += f"; needs about {more} x {acc.memory_gb:g} GB devices"
    return _dim(
        score, reason, required_gb=need / GIGA, available_gb=have / GIGA, fraction=frac
    ), tp_needed


def _act_dtype(precision: str) -> str:
    """16-bit type of the embedding and LM head (the precision itself when it is 16/32-bit)."""
    return precision if BYTES_PER_DTYPE[precision] >= 2 else "bf16"


def _intensity(
    m: ModelArch, acc: Accelerator, kind: str, precision: str, context: int, batch: int, pc: Any
) -> dict[str, Any]:
    peak = (
        acc.peak_tflops.get(precision)
        or acc.peak_tflops.get("bf16")
        or max(acc.peak_tflops.values())
    )
    ridge = peak * TERA / (acc.hbm_bandwidth_gb_s * GIGA)
    if kind == "inference":
        kv_seq = float(kv_bytes_per_sequence(m, context, precision))
        kv = batch * kv_seq
        w = weight_bytes(m, precision, _act_dtype(precision)).total(m.moe.n_experts if m.moe else 0)
        flops_tok = FLOPS_PER_PARAM["inference"] * pc.active
        at_batch = flops_tok * batch / (w + kv)
        # however large the batch, each token still reads its own KV cache: the ceiling
        ceiling = flops_tok / kv_seq
        share = kv / (w + kv)
        score = min(1.0, ceiling / ridge)
        reason = (
            f"decode intensity {at_batch:.3g} FLOP/B at batch {batch} (KV {share:.0%} of bytes "
            f"read), at most {ceiling:.3g} FLOP/B at any batch with context {context}, vs ridge "
            f"{ridge:.3g} FLOP/B"
        )
        if score < 1:
            reason += (
                f": KV-cache bandwidth caps decode at {score:.0%} of peak FLOPs on this hardware "
                "(more HBM bandwidth, a KV cache in fp8 or shorter contexts help)"
            )
        else:
            reason += ": batching can make decode compute-bound"
        vals = {
            "intensity_at_batch": at_batch,
            "intensity_ceiling": ceiling,
            "ridge_flop_per_byte": ridge,
            "kv_share": share,
        }
        return _dim(score, reason, **vals)
    reason = "training GEMMs are compute-bound (intensity far above the ridge point)"
    return _dim(1.0, reason, ridge_flop_per_byte=ridge)


def _moe(
    m: ModelArch, acc: Accelerator, sysm: System, kind: str, precision: str, g: int, pc: Any
) -> dict[str, Any]:
    if m.moe is None:
        return _dim(1.0, "dense model: no expert all-to-all", sparsity=1.0)
    b = BYTES_PER_DTYPE[precision]
    sparsity = pc.active / pc.total
    moe_layers = moe_layer_count(m)
    # per token per MoE layer: send the hidden state to k experts and back
    a2a_bytes = A2A_PER_MOE_LAYER * m.moe.n_active * m.d_model * b * moe_layers
    spans_nodes = m.moe.n_experts > sysm.devices_per_node and g > sysm.devices_per_node
    link = (
        sysm.scale_out_bandwidth_gb_s
        if spans_nodes and sysm.scale_out_bandwidth_gb_s
        else sysm.intra_node_bandwidth_gb_s
    )
    peak = acc.peak_tflops.get(precision) or max(acc.peak_tflops.values())
    t_a2a = a2a_bytes / (link * GIGA)
    expert_flops = FLOPS_PER_PARAM[kind] * (pc.expert_active if pc.expert_active else pc.active)
    t_exp = expert_flops / (peak * TERA)
    ratio = t_a2a / t_exp
    where = "scale-out NICs" if spans_nodes else f"{sysm.intra_node_fabric}"
    reason = (
        f"MoE {m.moe.n_active}/{m.moe.n_experts} experts ({sparsity:.1%} of weights active): "
        f"all-to-all {a2a_bytes / 1e3:.3g} kB/token over {where} at {link:g} GB/s takes "
        f"{ratio:.2f}x the expert compute"
    )
    return _dim(
        1.0 / (1.0 + ratio), reason, sparsity=sparsity, a2a_to_compute=ratio, link_gb_s=link
    )


def _topology(
    m: ModelArch,
    acc: Accelerator,
    sysm: System,
    precision: str,
    tp: int,
    batch: int,
    seq: int,
    pc: Any,
) -> dict[str, Any]:
    if tp <= 1:
        return _dim(
            1.0,
            "fits on one device: no tensor parallelism needed",
            tp=1,
            fabric=sysm.intra_node_fabric,
        )
    b = BYTES_PER_DTYPE[precision]
    tokens = batch * seq
    msg = tokens * m.d_model * b
    inside = tp <= sysm.devices_per_node
    bw = sysm.intra_node_bandwidth_gb_s if inside else (sysm.scale_out_bandwidth_gb_s or 1.0)
    fabric = sysm.intra_node_fabric if inside else "the scale-out network"
    lat = sysm.intra_node_latency_us if inside else sysm.scale_out_latency_us
    t_ar = TP_ALLREDUCES_PER_LAYER_FORWARD * float(allreduce_time_s(msg, tp, bw, lat))
    peak = acc.peak_tflops.get(precision) or max(acc.peak_tflops.values())
    t_layer = FLOPS_PER_PARAM["inference"] * pc.active / m.n_layers * tokens / (tp * peak * TERA)
    ratio = t_ar / t_layer
    reason = (
        f"needs TP={tp}; two all-reduces per layer over {fabric} at {bw:g} GB/s "
        f"(NVLink 4 reference {REFERENCE_SCALE_UP_GB_S:g}) take {ratio:.2f}x the layer compute"
    )
    if tp > sysm.devices_per_node:
        reason += f"; TP beyond the {sysm.devices_per_node}-device node crosses the network"
    return _dim(
        1.0 / (1.0 + ratio),
        reason,
        tp=tp,
        fabric=sysm.intra_node_fabric,
        ar_to_compute=ratio,
        link_gb_s=bw,
    )


def _precision(acc: Accelerator, precision: str) -> dict[str, Any]:
    if acc.supports(precision):
        reason = f"{acc.id} has a dense {precision} peak of {acc.peak_tflops[precision]:g} TFLOP/s"
        if precision in ("bf16", "fp16") and acc.supports("fp8"):
            reason += f" (fp8: {acc.peak_tflops['fp8']:g}, a lever)"
        return _dim(1.0, reason, peak_tflops=acc.peak_tflops[precision])
    have = ", ".join(sorted(acc.peak_tflops))
    return _dim(
        0.0,
        f"{acc.id} has no {precision} support (supports {have})",
        supported=sorted(acc.peak_tflops),
    )

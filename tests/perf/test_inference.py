"""Hand-computed checks of the inference model: KV bytes, weights, roofline, regimes, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aitco.catalog.schema import MLA, Accelerator, ModelArch, MoE, System
from aitco.errors import InputError, PlanError
from aitco.perf.efficiency import EfficiencyParams
from aitco.perf.inference import (
    ENGINES,
    IterationModel,
    continuous_batching_step,
    estimate_inference,
    expected_distinct_experts,
    iteration_model,
    lowp_gemm_efficiency,
    memory_plan,
    resolve_precisions,
    speculative_tokens_per_step,
    weight_bytes,
)
from aitco.perf.iteration import Precisions
from aitco.perf.kvcache import (
    fragmentation_waste_fraction,
    kv_bytes_per_sequence,
    kv_capacity,
)

LLAMA8 = ModelArch(
    id="l8", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336, vocab_size=128256
)
LLAMA70 = ModelArch(
    id="l70", n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, d_ff=28672, vocab_size=128256
)
GPU = Accelerator(
    id="gpu-x", vendor="test", family="nvidia-hopper", memory_gb=80, hbm_bandwidth_gb_s=3000,
    peak_tflops={"bf16": 1000.0, "fp16": 1000.0, "fp8": 2000.0, "int8": 2000.0}, launch_year=2023,
    tdp_w=700,
)  # fmt: skip
OLD = Accelerator(
    id="old-x", vendor="test", family="nvidia-ampere", memory_gb=80, hbm_bandwidth_gb_s=2000,
    peak_tflops={"bf16": 312.0, "fp16": 312.0, "int8": 624.0}, launch_year=2020,
)  # fmt: skip
NODE = System(
    id="node-x", accelerator="gpu-x", devices_per_node=8, intra_node_fabric="nvswitch",
    intra_node_bandwidth_gb_s=450, intra_node_latency_us=2.0, scale_out_bandwidth_gb_s=50,
)  # fmt: skip
# no overheads and no low-precision penalty: makes hand computation exact
BARE = EfficiencyParams(
    gemm={"nvidia-hopper": 0.5, "nvidia-ampere": 0.5}, gemm_default=0.5, decode_hbm=0.5,
    attention=0.5, prefill_attention=0.5, serving_overhead_s=0.0, serving_layer_overhead_s=0.0,
    serving_overhead_per_seq_s=0.0, lowp_gemm_scale=1.0, roofline_p=1e9, elementwise_hbm=0.5,
)  # fmt: skip
# fused element-wise traffic per token (bf16, tp 1): two residual+RMSNorm kernels (8 d) and
# silu_and_mul (3 d_ff), x 2 B x 32 layers, at the decode HBM efficiency
ELEM_S_PER_TOKEN = (8 * 4096 + 3 * 14336) * 2 * 32 / (0.5 * 3000e9)


def test_kv_bytes_gqa_hand_computed() -> None:
    # Llama 3.1 8B: 32 layers x 2 (K,V) x 8 heads x 128 dims x 2 B = 131072 B per token
    assert float(kv_bytes_per_sequence(LLAMA8, 1, "bf16")) == 131072.0
    assert float(kv_bytes_per_sequence(LLAMA8, 1000, "fp8")) == 65536.0 * 1000
    # tp 2 splits the 8 KV heads; tp 16 > 8 heads keeps one head per rank (replication)
    assert float(kv_bytes_per_sequence(LLAMA8, 1, "bf16", tp=2)) == 65536.0
    assert float(kv_bytes_per_sequence(LLAMA8, 1, "bf16", tp=16)) == 131072.0 / 8


def test_kv_bytes_mla_and_sliding_window() -> None:
    mla = ModelArch(
        id="mla", n_layers=2, d_model=1024, n_heads=8, d_ff=2048, vocab_size=100,
        mla=MLA(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
    )  # fmt: skip
    # latent (512) + rope key (64) per layer, 2 layers, 2 B, replicated across tp
    assert float(kv_bytes_per_sequence(mla, 10, "bf16", tp=4)) == (512 + 64) * 2 * 2 * 10
    sw = ModelArch(
        id="sw", n_layers=4, d_model=512, n_heads=8, n_kv_heads=2, d_ff=1024, vocab_size=100,
        sliding_window=100, sliding_window_every=2,
    )  # fmt: skip
    per_tok_layer = 2 * 2 * 64 * 2  # K,V x 2 heads x 64 dims x 2 B
    # 2 global layers hold 1000 tokens, 2 windowed layers hold 100
    assert float(kv_bytes_per_sequence(sw, 1000, "bf16")) == per_tok_layer * (2 * 1000 + 2 * 100)


def test_fragmentation_paged_vs_contiguous() -> None:
    paged = float(fragmentation_waste_fraction(500, 500, allocation="paged", block_tokens=16))
    assert paged == pytest.approx(8 / (750 + 8))
    cont = float(
        fragmentation_waste_fraction(500, 500, allocation="contiguous", reserved_tokens=4096)
    )
    assert cont == pytest.approx(1 - 750 / 4096)
    assert cont > 10 * paged
    with pytest.raises(InputError):
        fragmentation_waste_fraction(1, 1, allocation="buddy")


def test_kv_capacity_sequences() -> None:
    cap = kv_capacity(LLAMA8, 10.0, input_tokens=1000, output_tokens=1000, kv_precision="bf16")
    per_seq = 131072.0 * 2000  # 2000 tokens is a whole number of 16-token blocks
    assert cap.max_sequences == int(10e9 // per_seq)
    assert cap.max_tokens == int(10e9 // 131072.0)


def test_weight_bytes_keep_embeddings_16bit() -> None:
    wb = weight_bytes(LLAMA8, "fp8", "bf16")
    assert wb.embedding == 128256 * 4096 * 2
    assert wb.lm_head == 128256 * 4096 * 2
    total = wb.total(0)
    # about 8.03 B params: ~7.0 B linear at 1 B + 1.05 B embeddings at 2 B
    assert 9.0e9 < total < 9.2e9


def test_precision_resolution_and_fallbacks() -> None:
    p = resolve_precisions(GPU, "fp8", None)
    assert (p.compute, p.kv, p.notes) == ("fp8", "fp8", ())
    q = resolve_precisions(OLD, "fp8", None)  # no fp8 tensor cores: weight-only fallback
    assert q.compute == "bf16"
    assert q.kv == "bf16"
    assert "dequantised" in q.notes[0]
    r = resolve_precisions(GPU, "int4", None)  # AWQ/GPTQ: always weight-only
    assert r.compute == "bf16"
    assert r.weights == "int4"
    with pytest.raises(InputError):
        resolve_precisions(GPU, "fp7", None)
    edge = Accelerator(
        id="npu", vendor="t", family="nvidia-orin", memory_gb=8, hbm_bandwidth_gb_s=100,
        peak_tflops={"int8": 100.0}, launch_year=2022,
    )  # fmt: skip
    assert resolve_precisions(edge, "int8", None).compute == "int8"
    with pytest.raises(InputError, match="supports"):
        resolve_precisions(edge, "bf16", None)


def test_lowp_gemm_efficiency() -> None:
    assert lowp_gemm_efficiency(0.7, "bf16", 0.8) == 0.7
    assert lowp_gemm_efficiency(0.7, "fp8", 0.8) == pytest.approx(0.56)
    assert lowp_gemm_efficiency(0.7, "fp4", 0.8) == pytest.approx(0.7 * 0.64)


def _it(model: ModelArch = LLAMA8, tp: int = 1, prec: str = "bf16") -> IterationModel:
    p = resolve_precisions(GPU, prec, None)
    return iteration_model(model, GPU, NODE, tp=tp, pp=1, precisions=p, efficiency=BARE)


def test_decode_step_batch1_is_weight_bound_hand_computed() -> None:
    it = _it()
    wb = weight_bytes(LLAMA8, "bf16", "bf16")
    weights_s = (wb.dense + wb.lm_head) / (0.5 * 3000e9)  # body weights + LM head weights
    kv_s = 131072.0 * 1000 / (0.5 * 3000e9)
    assert float(it.decode_step_s(1, 1000)) == pytest.approx(
        weights_s + kv_s + ELEM_S_PER_TOKEN, rel=1e-9
    )


def test_prefill_is_compute_bound_hand_computed() -> None:
    it = _it()
    s = 4096
    body = 2 * (8030261248 - 2 * 128256 * 4096)  # FLOPs per token outside embeddings/head
    # the LM head runs for the last token only: its own roofline is its weight read
    head = 128256 * 4096 * 2 / (0.5 * 3000e9)
    lin = body * s / (0.5 * 1000e12) + head
    attn = 2 * 2 * 32 * 128 * 32 * s * (s + 1) / 2 / (0.5 * 1000e12)
    elem = ELEM_S_PER_TOKEN * s
    assert float(it.prefill_s(s)) == pytest.approx(lin + attn + elem, rel=1e-3)


def test_tensor_parallel_adds_allreduce_and_halves_weights() -> None:
    one, two = _it(LLAMA70, 1), _it(LLAMA70, 2)
    assert two.dense_weight_bytes == pytest.approx(one.dense_weight_bytes / 2)
    assert float(two.comm_s(1.0)) > 0
    assert float(one.comm_s(1.0)) == 0
    assert float(two.decode_step_s(1, 100)) < float(one.decode_step_s(1, 100))


def test_moe_distinct_experts() -> None:
    assert float(expected_distinct_experts(1, 64, 8)) == pytest.approx(8.0)
    assert float(expected_distinct_experts(10_000, 64, 8)) == pytest.approx(64.0)
    e = expected_distinct_experts(np.arange(1, 200), 64, 6)
    assert np.all(np.diff(e) > 0)
    moe = ModelArch(
        id="moe", n_layers=4, d_model=1024, n_heads=8, d_ff=2048, vocab_size=1000,
        moe=MoE(n_experts=16, n_active=2, d_ff_expert=512),
    )  # fmt: skip
    it = _it(moe)
    # decode weight traffic grows with batch (more distinct experts), per-token cost falls
    t1, t64 = float(it.decode_step_s(1, 10)), float(it.decode_step_s(64, 10))
    assert t64 > t1
    assert t64 / 64 < t1


def test_regimes_offline_static_online() -> None:
    kw = {"input_tokens": 512, "output_tokens": 256, "efficiency": BARE}
    off = estimate_inference(LLAMA8, GPU, NODE, 1, mode="offline", **kw).values
    one = estimate_inference(LLAMA8, GPU, NODE, 1, **kw).values
    static = estimate_inference(LLAMA8, GPU, NODE, 1, batch=32, **kw).values
    assert off["output_tokens_per_s"] > static["output_tokens_per_s"] > one["output_tokens_per_s"]
    assert off["tpot_s"] > one["tpot_s"]
    assert off["batch_per_replica"] == min(off["max_concurrency"], ENGINES["vllm"].max_num_seqs)
    keys = ("ttft_s", "tpot_s", "e2e_latency_s", "output_tokens_per_s", "total_tokens_per_s",
            "requests_per_s", "max_concurrency", "kv_cache_gb", "weights_gb", "fits")  # fmt: skip
    for k in keys:
        assert k in off
    # total = output x (I + O) / O
    assert off["total_tokens_per_s"] == pytest.approx(off["output_tokens_per_s"] * 768 / 256)
    # one request alone: e2e = ttft + (O-1) tpot
    assert one["e2e_latency_s"] == pytest.approx(one["ttft_s"] + 255 * one["tpot_s"])


def test_replicas_scale_throughput() -> None:
    a = estimate_inference(LLAMA8, GPU, NODE, 1, mode="offline", efficiency=BARE).values
    b = estimate_inference(LLAMA8, GPU, NODE, 4, tp=1, mode="offline", efficiency=BARE).values
    assert b["replicas"] == 4
    assert b["output_tokens_per_s"] == pytest.approx(4 * a["output_tokens_per_s"])


def test_does_not_fit_suggests_tp_and_precision() -> None:
    with pytest.raises(InputError) as ei:
        estimate_inference(LLAMA70, GPU, NODE, 1, tp=1, precision="bf16")
    msg = str(ei.value)
    assert "GB per GPU" in msg
    # 141 GB of bf16 weights: half of them fit in 90% of an 80 GiB (85.9 GB) device
    assert "smallest tp that fits: 2" in msg
    assert "of 85.9 GB (80 GiB) is usable" in msg
    assert "--precision fp8 fits at tp 1" in msg


def test_bad_inputs() -> None:
    with pytest.raises(PlanError):
        estimate_inference(LLAMA8, GPU, NODE, 3, tp=2)
    with pytest.raises(InputError):
        estimate_inference(LLAMA8, GPU, NODE, 1, batch=4, qps=2.0)
    with pytest.raises(InputError):
        estimate_inference(LLAMA8, GPU, NODE, 1, qps=-1.0)
    with pytest.raises(InputError):
        estimate_inference(LLAMA8, GPU, NODE, 0)
    with pytest.raises(InputError):
        estimate_inference(LLAMA8, GPU, NODE, 1, engine="tgi")


def test_static_batch_above_kv_capacity_runs_in_waves_not_refused() -> None:
    """Issue 31: an engine queues (GUARANTEED_NO_EVICT) or preempts a static batch the cache
    cannot hold at full length; it is never refused for a capacity the engine does not have."""
    kw = {"input_tokens": 2048, "output_tokens": 2048, "engine": "trtllm", "efficiency": BARE}
    top = estimate_inference(LLAMA8, GPU, NODE, 1, mode="offline", **kw).values
    admitted = top["kv_full_length_sequences"]
    v = estimate_inference(LLAMA8, GPU, NODE, 1, batch=3 * admitted + 1, **kw).values
    assert v["batch_waves"] == 4
    assert v["batch_per_wave"] <= admitted
    one = estimate_inference(LLAMA8, GPU, NODE, 1, batch=v["batch_per_wave"], **kw).values
    # the same throughput as one wave, at most; the later waves wait (a TTFT term)
    assert v["output_tokens_per_s"] <= one["output_tokens_per_s"] * (1 + 1e-9)
    assert v["ttft_s"] > one["ttft_s"]


def test_on_demand_admission_holds_more_sequences_than_reserved() -> None:
    """vLLM allocates KV blocks as tokens are written (preempting when full): in steady state
    a sequence holds about I + O/2 tokens; TensorRT-LLM's default scheduler reserves I + O."""
    kw = {"input_tokens": 512, "output_tokens": 2048, "mode": "offline", "efficiency": BARE}
    v = estimate_inference(LLAMA70, GPU, NODE, 4, tp=4, engine="vllm-v1", **kw).values
    t = estimate_inference(LLAMA70, GPU, NODE, 4, tp=4, engine="trtllm", **kw).values
    assert v["kv_admission"] == "on_demand"
    assert t["kv_admission"] == "reserved"
    per_seq_gb = {k: x["kv_cache_gb"] / x["max_concurrency"] for k, x in (("v", v), ("t", t))}
    # (512 + 2048/2 + 16/2) vs 512 + 2048 tokens per sequence
    assert per_seq_gb["v"] / per_seq_gb["t"] == pytest.approx(1544 / 2560, rel=0.01)


def test_saturation_reports_null_latency_not_infinite() -> None:
    v = estimate_inference(LLAMA8, GPU, NODE, 1, qps=1e5, num_requests=2000, efficiency=BARE).values
    assert v["saturated"] is True
    assert v["p99_ttft_s"] is None
    assert v["offered_load"] > 1  # arrival rate over capacity
    assert v["utilization"] == 1.0  # a fraction: saturates at 1
    assert math.isfinite(v["output_tokens_per_s"])
    assert v["output_tokens_per_s"] > 0


def test_qps_reports_percentiles_and_replicas() -> None:
    v = estimate_inference(
        LLAMA8, GPU, NODE, 2, tp=1, qps=20.0, num_requests=2000, slo_ttft_ms=1000,
        slo_tpot_ms=200, efficiency=BARE,
    ).values  # fmt: skip
    assert v["saturated"] is False
    assert v["p50_ttft_s"] <= v["p99_ttft_s"]
    assert v["p50_tpot_s"] <= v["p99_tpot_s"]
    assert v["replicas_for_slo"] >= 1
    assert v["output_tokens_per_s"] == pytest.approx(20.0 * 256)


def test_memory_plan_engine_fraction_semantics() -> None:
    p = resolve_precisions(GPU, "bf16", None)
    v = memory_plan(LLAMA8, GPU, tp=1, pp=1, precisions=p, engine=ENGINES["vllm"])
    t = memory_plan(LLAMA8, GPU, tp=1, pp=1, precisions=p, engine=ENGINES["trtllm"])
    device_gb = 80 * 2**30 / 1e9  # the catalog's "80 GB" are binary, as engines count them
    assert v.device_gb == pytest.approx(device_gb)
    assert v.usable_gb == pytest.approx(0.9 * device_gb)
    assert t.kv_gb == pytest.approx(
        0.9 * (device_gb - t.weights_gb - t.activations_gb - t.reserve_gb)
    )


def test_continuous_batching_step_counts_prefill() -> None:
    it = _it()
    dec = float(it.decode_step_s(64, 1000 + 50))
    mixed = float(continuous_batching_step(it, 64, 1000, 100))
    assert mixed > dec


def test_to_estimate_explains() -> None:
    r = estimate_inference(LLAMA8, GPU, NODE, 1, mode="offline")
    est = r.to_estimate()
    assert est.kind == "inference"
    assert est.dominant in {t.name for t in est.terms}
    assert "interval" in est.values
    lo, hi = r.interval["output_tokens_per_s"]
    assert lo < r.values["output_tokens_per_s"] < hi


def test_speculative_decoding() -> None:
    assert float(speculative_tokens_per_step(4, 0.0)) == pytest.approx(1.0)
    assert float(speculative_tokens_per_step(4, 1.0)) == pytest.approx(5.0)
    assert float(speculative_tokens_per_step(3, 0.5)) == pytest.approx(1.875)
    draft = ModelArch(
        id="d1", n_layers=16, d_model=2048, n_heads=32, n_kv_heads=8, d_ff=8192,
        vocab_size=128256,
    )  # fmt: skip
    kw = {"input_tokens": 512, "output_tokens": 256, "efficiency": BARE, "tp": 2}
    base = estimate_inference(LLAMA70, GPU, NODE, 2, precision="fp8", **kw).values
    good = estimate_inference(
        LLAMA70, GPU, NODE, 2, precision="fp8", draft_model=draft, acceptance_rate=0.8, **kw
    ).values
    bad = estimate_inference(
        LLAMA70, GPU, NODE, 2, precision="fp8", draft_model=draft, acceptance_rate=0.0, **kw
    ).values
    # batch 1 decode is weight-bound: a good draft speeds it up, a useless one slows it down
    assert good["tpot_s"] < base["tpot_s"] < bad["tpot_s"]
    assert good["speculative_speedup"] > 1.5
    assert good["kv_cache_gb"] < base["kv_cache_gb"]  # the draft's weights take memory
    with pytest.raises(InputError):
        estimate_inference(LLAMA8, GPU, NODE, 1, draft_model=draft, qps=1.0)
    with pytest.raises(InputError):
        estimate_inference(LLAMA8, GPU, NODE, 1, draft_model=draft, acceptance_rate=1.5)


def test_trace_driven_load() -> None:
    t = np.arange(200) * 0.05
    ins = np.full(200, 300)
    outs = np.full(200, 100)
    v = estimate_inference(LLAMA8, GPU, NODE, 1, trace=(t, ins, outs), efficiency=BARE).values
    assert v["regime"].startswith("trace-driven")
    assert v["requests_per_s"] == pytest.approx(200 / (199 * 0.05))
    assert v["p50_ttft_s"] is not None
    with pytest.raises(InputError):
        estimate_inference(LLAMA8, GPU, NODE, 1, trace=(t, ins, outs), qps=3.0)
    with pytest.raises(InputError):
        estimate_inference(LLAMA8, GPU, NODE, 1, trace=([0.0], [1], [1]))


def test_cold_start_reported() -> None:
    v = estimate_inference(LLAMA70, GPU, NODE, 2, tp=2, precision="fp8", efficiency=BARE).values
    # one node reads ~72 GB of fp8 weights from NVMe at 7 GB/s, plus provisioning and warm-up
    assert v["cold_start_weights_load_s"] == pytest.approx(v["weights_gb"] / 7.0)
    assert v["cold_start_s"] > v["cold_start_weights_load_s"]


def test_accelerator_that_fuses_elementwise_into_matmuls_has_no_elementwise_traffic() -> None:
    """XLA on TPU fuses norms, residuals and the activation into the matmuls (catalog
    ``elementwise_fused_into_matmul``): the iteration model's elementwise term is 0."""
    prec = Precisions(weights="bf16", compute="bf16", activations="bf16", kv="bf16")
    fused = GPU.model_copy(update={"elementwise_fused_into_matmul": True})
    plain = iteration_model(LLAMA8, GPU, NODE, precisions=prec, efficiency=BARE)
    xla = iteration_model(LLAMA8, fused, NODE, precisions=prec, efficiency=BARE)
    assert plain.elementwise_bytes_per_token == pytest.approx(ELEM_S_PER_TOKEN * 0.5 * 3000e9)
    assert xla.elementwise_bytes_per_token == 0.0

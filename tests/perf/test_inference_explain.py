"""``infer --explain`` adds up: ttft_* and tpot_* terms sum to ttft_s and tpot_s in every regime.

The terms come from :meth:`IterationModel.iteration_terms` and the load regime that sums them;
these tests would fail if a regime changed its headline figure without the terms (the previous
explain path re-derived a decode step that was 52-92 % of the reported TPOT).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from aitco.catalog.schema import Accelerator, ModelArch, MoE, System
from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.perf.inference import (
    InferenceResult,
    estimate_inference,
    iteration_model,
    resolve_precisions,
)

LLAMA8 = ModelArch(
    id="l8", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336, vocab_size=128256
)
LLAMA70 = ModelArch(
    id="l70", n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, d_ff=28672, vocab_size=128256
)
MOE = ModelArch(
    id="moe", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336,
    vocab_size=32000, moe=MoE(n_experts=8, n_active=2, d_ff_expert=14336),
)  # fmt: skip
DRAFT = ModelArch(
    id="d1", n_layers=16, d_model=2048, n_heads=32, n_kv_heads=8, d_ff=8192, vocab_size=128256
)
GPU = Accelerator(
    id="gpu-x", vendor="test", family="nvidia-hopper", memory_gb=80, hbm_bandwidth_gb_s=3000,
    peak_tflops={"bf16": 1000.0, "fp16": 1000.0, "fp8": 2000.0, "int8": 2000.0}, launch_year=2023,
    tdp_w=700,
)  # fmt: skip
NODE = System(
    id="node-x", accelerator="gpu-x", devices_per_node=8, intra_node_fabric="nvswitch",
    intra_node_bandwidth_gb_s=450, intra_node_latency_us=2.0, scale_out_bandwidth_gb_s=50,
)  # fmt: skip
# a slow PCIe box: tensor parallelism is communication-bound
PCIE = System(
    id="pcie-x", accelerator="gpu-x", devices_per_node=8, intra_node_fabric="pcie",
    intra_node_bandwidth_gb_s=8, intra_node_latency_us=20.0, scale_out_bandwidth_gb_s=5,
)  # fmt: skip

CASES: dict[str, tuple[ModelArch, System, int, dict[str, Any]]] = {
    "memory-bound single request": (LLAMA8, NODE, 1, {}),
    "compute-bound offline": (LLAMA8, NODE, 1, {"mode": "offline", "input_tokens": 2048}),
    "communication-bound tp 8 on PCIe": (LLAMA8, PCIE, 8, {"tp": 8, "concurrency": 64}),
    "prefill-heavy": (LLAMA8, NODE, 1, {"input_tokens": 16000, "output_tokens": 16,
                                        "concurrency": 32}),
    "chunked prefill (small token budget)": (
        LLAMA8, NODE, 1, {"input_tokens": 8000, "concurrency": 16, "engine": "vllm-v1",
                          "max_batched_tokens": 1024}),
    "static batch": (LLAMA8, NODE, 1, {"batch": 16}),
    "queued concurrency": (LLAMA8, NODE, 1, {"concurrency": 5000}),
    "speculative": (LLAMA70, NODE, 2, {"precision": "fp8", "tp": 2, "draft_model": DRAFT}),
    "Poisson (simulated)": (LLAMA8, NODE, 1, {"qps": 4.0, "num_requests": 400}),
    "prefix cache + scheduler steps": (
        LLAMA8, NODE, 1, {"concurrency": 32, "prefix_cache_hit_rate": 0.6,
                          "scheduler_steps": 8}),
    "pipeline + MoE": (MOE, NODE, 4, {"tp": 2, "pp": 2, "concurrency": 32}),
}  # fmt: skip


def _sum(res: InferenceResult, prefix: str) -> float:
    return math.fsum(t.value for t in res.terms if t.name.startswith(prefix + "_"))


@pytest.mark.parametrize("case", list(CASES))
def test_explain_terms_add_up(case: str) -> None:
    model, system, gpus, kw = CASES[case]
    res = estimate_inference(model, GPU, system, gpus, **kw)
    v = res.values
    assert _sum(res, "ttft") == pytest.approx(v["ttft_s"], rel=1e-9)
    assert _sum(res, "tpot") == pytest.approx(v["tpot_s"], rel=1e-9)
    assert v["e2e_latency_s"] > v["ttft_s"] > 0
    assert res.dominant.startswith("tpot_")


def test_dominant_term_follows_the_regime() -> None:
    one = estimate_inference(LLAMA70, GPU, NODE, 4, tp=4)
    assert one.dominant == "tpot_weights_read_s"  # one sequence: weights streamed per token
    pcie = estimate_inference(LLAMA8, GPU, PCIE, 8, tp=8, concurrency=64)
    assert pcie.dominant == "tpot_tp_comm_s"
    # a stall-free engine (prompt tokens ride with the decodes) at its largest batch
    big = estimate_inference(LLAMA8, GPU, NODE, 1, mode="offline", input_tokens=64,
                             output_tokens=64, engine="vllm-v1")  # fmt: skip
    assert big.dominant == "tpot_linear_compute_s"


def test_prefill_first_engine_pays_a_prefill_iteration_per_decode_step() -> None:
    # vLLM V0 (prefill-first): the prompts that start each step run in their own iteration,
    # re-reading the weights and paying the iteration overhead again; the terms still add up
    kw: dict[str, Any] = {"mode": "offline", "input_tokens": 64, "output_tokens": 64}
    v0 = estimate_inference(LLAMA8, GPU, NODE, 1, engine="vllm", **kw)
    v1 = estimate_inference(LLAMA8, GPU, NODE, 1, engine="vllm", max_batch=1024, **kw)
    mixed = estimate_inference(LLAMA8, GPU, NODE, 1, engine="vllm-v1", max_batch=256, **kw)
    assert v0.values["batch_per_replica"] == mixed.values["batch_per_replica"] == 256
    assert v0.values["tpot_s"] > mixed.values["tpot_s"]
    assert _sum(v0, "tpot") == pytest.approx(v0.values["tpot_s"], rel=1e-9)
    assert v1.values["output_tokens_per_s"] > v0.values["output_tokens_per_s"]


def test_iteration_terms_sum_to_the_iteration() -> None:
    p = resolve_precisions(GPU, "bf16", None)
    it = iteration_model(LLAMA8, GPU, NODE, tp=2, pp=2, precisions=p,
                         efficiency=DEFAULT_EFFICIENCY)  # fmt: skip
    terms = it.iteration_terms(64, 64 * 1000, 512, 512 * 513 / 2, 1)
    assert math.fsum(float(x) for x in terms.values()) == pytest.approx(
        float(it.iteration_s(64, 64 * 1000, 512, 512 * 513 / 2, 1)), rel=1e-12
    )
    assert all(float(x) >= 0 for x in terms.values())


def test_prefix_cache_cuts_ttft_and_kv_per_request() -> None:
    base = estimate_inference(LLAMA8, GPU, NODE, 1, input_tokens=4000, concurrency=32).values
    hit = estimate_inference(
        LLAMA8, GPU, NODE, 1, input_tokens=4000, concurrency=32, prefix_cache_hit_rate=0.75
    ).values
    assert hit["ttft_s"] < 0.5 * base["ttft_s"]
    assert hit["max_concurrency"] > base["max_concurrency"]


def test_contiguous_kv_reserves_max_seq_len() -> None:
    model = LLAMA8.model_copy(update={"max_seq_len": 8192})
    paged = estimate_inference(model, GPU, NODE, 1, mode="offline", engine="sglang").values
    cont = estimate_inference(
        model, GPU, NODE, 1, mode="offline", engine="sglang", allocation="contiguous"
    ).values
    assert cont["kv_reserved_tokens_per_sequence"] == 8192
    assert cont["max_concurrency"] < paged["max_concurrency"] / 5
    assert cont["output_tokens_per_s"] < paged["output_tokens_per_s"]


def test_scheduler_steps_raise_ttft() -> None:
    one = estimate_inference(LLAMA8, GPU, NODE, 1, concurrency=64).values
    ten = estimate_inference(LLAMA8, GPU, NODE, 1, concurrency=64, scheduler_steps=10).values
    assert ten["ttft_s"] > one["ttft_s"] + 4 * one["tpot_s"]


def test_expert_parallel_serving() -> None:
    kw: dict[str, Any] = {"mode": "offline", "precision": "fp8"}
    ep = estimate_inference(MOE, GPU, NODE, 8, ep=8, **kw)
    v = ep.values
    assert (v["tp"], v["ep"], v["replicas"]) == (1, 8, 1)
    assert _sum(ep, "tpot") == pytest.approx(v["tpot_s"], rel=1e-9)
    a2a = next(t.value for t in ep.terms if t.name == "tpot_ep_all_to_all_s")
    assert a2a > 0
    # across nodes the all-to-all runs on the slower scale-out link
    wide = estimate_inference(MOE, GPU, NODE, 16, ep=16, **kw)
    a2a16 = next(t.value for t in wide.terms if t.name == "tpot_ep_all_to_all_s")
    assert a2a16 > a2a
    # group-limited routing (at most 1 of 2 groups/nodes per token): the dispatch crosses
    # the NICs once per remote target node, less than the k copies above
    grouped = MOE.model_copy(
        update={"id": "moe-g", "moe": MOE.moe.model_copy(update={"n_groups": 2, "topk_groups": 1})}
    )
    g16 = estimate_inference(grouped, GPU, NODE, 16, ep=16, **kw)
    a2a_g = next(t.value for t in g16.terms if t.name == "tpot_ep_all_to_all_s")
    assert a2a_g < a2a16
    assert _sum(g16, "tpot") == pytest.approx(g16.values["tpot_s"], rel=1e-9)
    # each GPU holds 1/ep of the experts: more KV room than tp 1 alone would leave
    tp8 = estimate_inference(MOE, GPU, NODE, 8, tp=8, **kw).values
    assert v["max_concurrency"] > 0
    assert v["weights_per_gpu_gb"] > tp8["weights_per_gpu_gb"]  # dense weights replicated


def test_expert_load_imbalance() -> None:
    from aitco.perf.inference import expert_load_imbalance

    assert float(expert_load_imbalance(1e9, 8)) == pytest.approx(1.0, abs=1e-3)
    assert float(expert_load_imbalance(64, 8)) > float(expert_load_imbalance(6400, 8)) > 1.0
    assert float(expert_load_imbalance(100, 1)) == 1.0


def test_ep_needs_a_moe_model() -> None:
    from aitco.errors import InputError

    with pytest.raises(InputError, match="--ep"):
        estimate_inference(LLAMA8, GPU, NODE, 8, ep=8)


def test_request_path_adds_to_ttft_only() -> None:
    eff = DEFAULT_EFFICIENCY.with_overrides({"request_path_by_engine": {"vllm": 0.02}})
    base_eff = DEFAULT_EFFICIENCY.with_overrides({"request_path_by_engine": {"vllm": 0.0}})
    for load in ({}, {"concurrency": 16}, {"qps": 2.0, "num_requests": 300}):
        kw: dict[str, Any] = {"input_tokens": 256, "output_tokens": 64, **load}
        a = estimate_inference(LLAMA8, GPU, NODE, 1, efficiency=base_eff, **kw)
        b = estimate_inference(LLAMA8, GPU, NODE, 1, efficiency=eff, **kw)
        assert b.values["ttft_s"] == pytest.approx(a.values["ttft_s"] + 0.02, rel=1e-6)
        assert b.values["tpot_s"] == pytest.approx(a.values["tpot_s"], rel=1e-9)
        assert _sum(b, "ttft") == pytest.approx(b.values["ttft_s"], rel=1e-9)
        if "qps" in load:  # the simulated percentiles move by the same constant
            assert b.values["p50_ttft_s"] == pytest.approx(a.values["p50_ttft_s"] + 0.02)
            assert b.values["p50_tpot_s"] == pytest.approx(a.values["p50_tpot_s"])


def test_request_path_is_per_engine_with_a_global_fallback() -> None:
    eff = DEFAULT_EFFICIENCY.with_overrides(
        {"request_path_s": 0.001, "request_path_by_engine": {"sglang": 0.004}}
    )
    # one engine overridden: the others keep their fitted values (the map merges)
    assert eff.request_path_by_engine["vllm"] == DEFAULT_EFFICIENCY.request_path_by_engine["vllm"]
    assert eff.request_path_for("sglang") == 0.004
    assert eff.request_path_for("trtllm") == 0.001  # not fitted: the global value
    assert eff.request_path_for(None) == 0.001
    # a versioned engine without its own value takes its stack's (same API server in front)
    assert eff.request_path_for("vllm-v1") == eff.request_path_by_engine["vllm"]
    v1 = eff.with_overrides({"request_path_by_engine": {"vllm-v1": 0.03}})
    assert v1.request_path_for("vllm-v1") == 0.03
    kw: dict[str, Any] = {"input_tokens": 256, "output_tokens": 64, "efficiency": eff}
    sg = estimate_inference(LLAMA8, GPU, NODE, 1, engine="sglang", **kw)
    trt = estimate_inference(LLAMA8, GPU, NODE, 1, engine="trtllm", **kw)

    def path(r: InferenceResult) -> float:
        return next(t.value for t in r.terms if t.name == "ttft_request_path_s")

    assert path(sg) == pytest.approx(0.004)
    assert path(trt) == pytest.approx(0.001)

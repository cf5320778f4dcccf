"""Training engine: hand-computed FLOPs, memory, bubble, plan errors, fits, LoRA, checkpoints."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aitco.catalog.schema import Accelerator, ModelArch, MoE, System
from aitco.errors import InputError, PlanError
from aitco.perf import flops, memory
from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.perf.parallelism import bubble_fraction
from aitco.perf.params import param_counts
from aitco.perf.plan_search import candidate_plans, divisors
from aitco.perf.training import (
    checkpoint_bytes,
    checkpoint_save_time_s,
    estimate_training,
    model_shape,
)

ACC = Accelerator(
    id="test-gpu",
    vendor="test",
    family="nvidia-hopper",
    peak_tflops={"bf16": 1000.0, "fp16": 1000.0, "fp8": 2000.0, "fp32": 60.0},
    memory_gb=80.0,
    hbm_bandwidth_gb_s=3000.0,
    launch_year=2023,
)
ACC_NO_FP8 = ACC.model_copy(update={"id": "old-gpu", "peak_tflops": {"bf16": 300.0, "fp32": 20.0}})
SYS = System(
    id="test-node",
    accelerator="test-gpu",
    devices_per_node=8,
    intra_node_fabric="nvswitch",
    intra_node_bandwidth_gb_s=450.0,
    scale_up_domain=8,
    scale_out_bandwidth_gb_s=50.0,
)
# A Llama-like 8-layer model small enough to compute by hand.
M = ModelArch(
    id="tiny", n_layers=8, d_model=1024, n_heads=16, n_kv_heads=4, d_ff=4096, vocab_size=32000
)


def _est(gpus: int = 8, **kw: object):
    args: dict[str, object] = dict(seq_len=2048, global_batch=64)
    args.update(kw)
    return estimate_training(M, ACC, SYS, gpus, **args)  # type: ignore[arg-type]


def test_flops_per_token_is_6n_plus_causal_attention() -> None:
    ms = model_shape(M)
    pc = param_counts(M)
    non_emb_matmul = pc.non_embedding - 8 * (2 * 1024) - 1024  # minus norm weights
    head = 32000 * 1024
    att = 8 * 2 * 2048 * 16 * 64 * 2 * 0.5  # 2 FLOP x s x heads x (dqk + dv) x causal 1/2
    expected = 3 * (2 * (non_emb_matmul + head) + att)
    assert float(flops.training_flops_per_token(ms, 2048)) == pytest.approx(expected, rel=1e-9)


def test_lora_skips_weight_gradients() -> None:
    ms = model_shape(M)
    full = float(flops.training_flops_per_token(ms, 2048, "full"))
    lora = float(flops.training_flops_per_token(ms, 2048, "lora", lora_params=0.0))
    att = 8 * float(flops.attention_flops_per_token(ms, 2048))
    # frozen matmuls: 2x forward instead of 3x; attention still 3x
    assert lora == pytest.approx((full - 3 * att) * 2 / 3 + 3 * att)


def test_recompute_flops() -> None:
    ms = model_shape(M)
    r = flops.recompute_flops_per_token(ms, 2048, np.array([0, 1, 2]))
    att = 8 * float(flops.attention_flops_per_token(ms, 2048))
    assert r[0] == 0.0
    assert r[1] == pytest.approx(att)
    assert r[2] == pytest.approx(8 * flops.layer_matmul_flops_per_token(ms) + att)


def test_zero_stages_shard_states_by_dp() -> None:
    ms = model_shape(M)
    kw = dict(seq_len=2048.0, precision="bf16", method="full", optimizer_bytes=12.0, tp=1, pp=1,
              cp=1, ep=1, dp=8, micro_batch=1, recompute=0, n_micro=1)  # fmt: skip
    p = ms.total_params
    m0 = memory.training_memory_bytes(ms, zero=0, **kw)  # type: ignore[arg-type]
    m1 = memory.training_memory_bytes(ms, zero=1, **kw)  # type: ignore[arg-type]
    m2 = memory.training_memory_bytes(ms, zero=2, **kw)  # type: ignore[arg-type]
    assert float(m0["weights"]) == pytest.approx(2 * p)
    assert float(m0["gradients"]) == pytest.approx(2 * p)
    assert float(m0["optimizer"]) == pytest.approx(12 * p)
    assert float(m1["optimizer"]) == pytest.approx(12 * p / 8)
    assert float(m2["gradients"]) == pytest.approx(2 * p / 8)


def test_full_recompute_keeps_only_layer_inputs() -> None:
    ms = model_shape(M)
    a = memory.activation_elements_per_token_layer(ms, np.array([0, 2]))
    assert a[1] == 1024
    # input, Q, K, V, attention output; FFN input, gate+up, act; two norm inputs
    assert a[0] == (1024 + 1024 + 2 * 256 + 1024) + (1024 + 2 * 4096 + 4096) + 2 * 1024


def test_qlora_uses_4bit_base() -> None:
    assert memory.weight_bytes_per_param("bf16", "qlora") == pytest.approx((4 + 0.127) / 8)
    full = _est(gpus=1, plan={"tp": 1, "micro_batch": 1, "recompute": "full"})
    ql = _est(gpus=1, method="qlora", plan={"tp": 1, "micro_batch": 1, "recompute": "full"})
    assert ql.memory_terms_gb["weights"] < full.memory_terms_gb["weights"] / 3
    assert ql.memory_terms_gb["optimizer"] < full.memory_terms_gb["optimizer"] / 50


def test_bubble() -> None:
    assert float(bubble_fraction(4, 8)) == pytest.approx(3 / 8)
    assert float(bubble_fraction(4, 8, 2)) == pytest.approx(3 / 16)
    assert float(bubble_fraction(1, 8)) == 0.0


def test_pipeline_adds_bubble_term() -> None:
    r = _est(
        plan={"tp": 1, "pp": 4, "dp": 2, "micro_batch": 1, "recompute": "none", "zero": 0, "vp": 1}
    )
    m = r.values["gradient_accumulation"]
    assert m == 32
    work = r.time_terms_s["bubble_s"] / (3 / 32)
    assert work == pytest.approx(
        sum(r.time_terms_s[k] for k in ("compute_s", "memory_bound_s", "tp_comm_s", "cp_comm_s",
                                         "ep_comm_s", "zero3_comm_s")), rel=1e-6)  # fmt: skip


def test_values_have_issue_keys_and_interval() -> None:
    r = _est(tokens=1e9)
    for k in ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
              "hardware_tflops_per_gpu", "mfu", "hfu", "memory_per_gpu_gb", "fits", "gpu_hours",
              "wall_clock_h", "plan", "interval"):  # fmt: skip
        assert k in r.values
    assert set(r.values["plan"]) >= {
        "tp",
        "pp",
        "cp",
        "ep",
        "dp",
        "zero",
        "micro_batch",
        "recompute",
    }
    lo, hi = r.interval["tokens_per_s_per_gpu"]
    assert lo < r.values["tokens_per_s_per_gpu"] < hi
    assert r.values["gpu_hours"] == pytest.approx(1e9 / r.values["tokens_per_s"] / 3600 * 8)
    assert 0 < r.values["mfu"] <= r.values["hfu"] < 1
    est = r.to_estimate()
    assert est.dominant in r.time_terms_s


def test_step_time_is_sum_of_terms() -> None:
    r = _est(
        plan={"tp": 2, "pp": 2, "dp": 2, "micro_batch": 2, "zero": 1, "recompute": "selective"}
    )
    assert r.values["step_time_s"] == pytest.approx(sum(r.time_terms_s.values()), rel=1e-9)


@pytest.mark.parametrize(
    ("plan", "gpus", "match"),
    [
        ({"tp": 3}, 6, "attention heads"),
        ({"pp": 16}, 16, "number of layers"),
        ({"tp": 2, "pp": 2, "dp": 4}, 8, "equal to --gpus"),
        ({"ep": 2}, 8, "dense model"),
        ({"tp": 3, "dp": 1}, 8, "attention heads"),
    ],
)
def test_impossible_plans_name_the_constraint(plan: dict, gpus: int, match: str) -> None:
    with pytest.raises(PlanError, match=match):
        _est(gpus=gpus, plan=plan)


def test_unsupported_dtype() -> None:
    """A format the part has no matrix rate for runs emulated (issue 31), saying so; a part with
    neither the format nor a 16-bit rate refuses it."""
    em = estimate_training(M, ACC_NO_FP8, SYS, 8, seq_len=2048, global_batch=64, precision="fp8")
    assert em.values["precision_mode"] == "emulated"
    assert "fp8" in em.inputs["precision_note"]
    bf = estimate_training(M, ACC_NO_FP8, SYS, 8, seq_len=2048, global_batch=64, precision="bf16")
    assert em.values["step_time_s"] > bf.values["step_time_s"] * 0.98
    int8_only = ACC_NO_FP8.model_copy(update={"peak_tflops": {"int8": 100.0}})
    with pytest.raises(PlanError, match="fp8"):
        estimate_training(M, int8_only, SYS, 8, seq_len=2048, global_batch=64, precision="fp8")


def test_bad_inputs() -> None:
    with pytest.raises(InputError):
        _est(gpus=0)
    with pytest.raises(InputError):
        _est(method="dora")
    with pytest.raises(InputError):
        _est(plan={"recompute": "sometimes"})


def test_non_fitting_plan_says_by_how_much() -> None:
    big = ModelArch(id="big", n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, d_ff=28672,
                    vocab_size=128256)  # fmt: skip
    r = estimate_training(big, ACC, SYS, 8, seq_len=4096, global_batch=64,
                          plan={"tp": 1, "dp": 8, "zero": 0, "micro_batch": 1})  # fmt: skip
    assert r.values["fits"] is False
    assert r.values["over_by_gb"] == pytest.approx(r.values["memory_per_gpu_gb"] - 80.0)
    assert r.values["over_by_gb"] > 500  # 70B x 16 B/param unsharded is over 1 TB


def test_auto_plan_fits_and_beats_naive() -> None:
    big = ModelArch(id="big", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336,
                    vocab_size=128256)  # fmt: skip
    auto = estimate_training(big, ACC, SYS, 64, seq_len=4096, global_batch=256)
    assert auto.values["fits"]
    assert auto.candidates > 100
    naive = estimate_training(big, ACC, SYS, 64, seq_len=4096, global_batch=256,
                              plan={"tp": 8, "pp": 8, "dp": 1})  # fmt: skip
    assert auto.values["step_time_s"] <= naive.values["step_time_s"]


def test_auto_holds_given_degrees() -> None:
    r = _est(gpus=8, plan={"tp": 2, "auto": True})
    assert r.values["plan"]["tp"] == 2
    assert r.candidates > 1


def test_moe_expert_parallel_runs() -> None:
    moe = ModelArch(id="moe", n_layers=8, d_model=1024, n_heads=16, d_ff=4096, vocab_size=32000,
                    moe=MoE(n_experts=8, n_active=2, d_ff_expert=1024))  # fmt: skip
    r1 = estimate_training(moe, ACC, SYS, 8, seq_len=2048, global_batch=64, plan={"dp": 8, "ep": 1})
    r8 = estimate_training(moe, ACC, SYS, 8, seq_len=2048, global_batch=64, plan={"dp": 8, "ep": 8})
    assert r8.time_terms_s["ep_comm_s"] > 0 == r1.time_terms_s["ep_comm_s"]
    assert r8.memory_terms_gb["weights"] < r1.memory_terms_gb["weights"]


def test_ep_overlap_hides_all_to_alls_up_to_the_compute_and_only_where_allowed() -> None:
    moe = ModelArch(id="moe", n_layers=8, d_model=1024, n_heads=16, d_ff=4096, vocab_size=32000,
                    moe=MoE(n_experts=8, n_active=2, d_ff_expert=1024))  # fmt: skip
    kw: dict[str, Any] = {"seq_len": 2048, "global_batch": 64}
    plan = {"dp": 8, "ep": 8, "recompute": "none", "micro_batch": 1}
    off = estimate_training(moe, ACC, SYS, 8, plan=plan, **kw)
    on = estimate_training(moe, ACC, SYS, 8, plan={**plan, "ep_comm_overlap": True}, **kw)
    assert on.values["plan"]["ep_comm_overlap"] is True
    assert off.values["plan"]["ep_comm_overlap"] is False
    a2a, comp = off.time_terms_s["ep_comm_s"], off.time_terms_s["compute_s"]
    assert on.time_terms_s["ep_comm_s"] == pytest.approx(max(0.0, a2a - comp), abs=1e-12)
    assert on.values["step_time_s"] <= off.values["step_time_s"]
    # full recompute is not allowed with it (Megatron-Bridge): asked for, the search avoids it
    auto = estimate_training(moe, ACC, SYS, 8, plan={"ep": 8, "auto": True,
                                                     "ep_comm_overlap": True}, **kw)  # fmt: skip
    assert auto.values["plan"]["recompute"] != "full"
    assert auto.values["plan"]["ep_comm_overlap"] is True
    # nothing allows it: a clear error naming the constraint
    with pytest.raises(PlanError, match="ep-overlap") as exc:
        estimate_training(moe, ACC, SYS, 8, plan={**plan, "recompute": "full",
                                                  "ep_comm_overlap": True}, **kw)  # fmt: skip
    assert exc.value.field == "--ep-overlap"
    # the search never turns it on by itself
    free = estimate_training(moe, ACC, SYS, 8, plan={"ep": 8, "auto": True}, **kw)
    assert free.values["plan"]["ep_comm_overlap"] is False


def test_candidate_plans_are_valid() -> None:
    ms = model_shape(M)
    c = candidate_plans(ms, 64, 2048, 256)
    assert (c["tp"] * c["pp"] * c["cp"] * c["dp"] == 64).all()
    assert (ms.n_heads % c["tp"] == 0).all()
    assert (c["pp"] <= ms.n_layers).all()
    assert (c["micro_batch"] * c["dp"] <= 256).all()
    assert divisors(12) == [1, 2, 3, 4, 6, 12]


def test_checkpoint() -> None:
    assert float(checkpoint_bytes(1e9)) == 14e9
    assert float(checkpoint_bytes(1e9, include_optimizer=False)) == 2e9
    assert float(checkpoint_save_time_s(1e9, 7.0)) == pytest.approx(2.0)
    t = checkpoint_save_time_s(np.array([1e9, 2e9]), 14.0, blocking_fraction=0.5)
    assert t.tolist() == pytest.approx([0.5, 1.0])


def test_efficiency_scales_compute() -> None:
    slow = DEFAULT_EFFICIENCY.with_overrides({"gemm": {"nvidia-hopper": 0.3}})
    a = _est(plan={"tp": 1, "dp": 8, "micro_batch": 1, "recompute": "none", "zero": 1})
    b = _est(
        plan={"tp": 1, "dp": 8, "micro_batch": 1, "recompute": "none", "zero": 1}, efficiency=slow
    )
    assert b.time_terms_s["compute_s"] > a.time_terms_s["compute_s"]


def test_partial_recompute_sits_between_none_and_full() -> None:
    base = {"tp": 1, "dp": 8, "micro_batch": 2, "zero": 1, "vp": 1}
    none = _est(plan={**base, "recompute": "none"})
    half = _est(plan={**base, "recompute": "full", "recompute_fraction": 0.5})
    full = _est(plan={**base, "recompute": "full"})
    assert full.values["plan"]["recompute_fraction"] == 1.0
    a = [r.memory_terms_gb["activations"] for r in (none, half, full)]
    t = [r.values["step_time_s"] for r in (none, half, full)]
    assert a[0] > a[1] > a[2]
    assert t[0] < t[1] < t[2]
    ratio = [r.values["hfu"] / r.values["mfu"] for r in (none, half, full)]
    assert ratio[0] < ratio[1] < ratio[2]
    with pytest.raises(InputError):
        _est(plan={**base, "recompute": "full", "recompute_fraction": 1.5})


# --------------------------------------------------------------------------------------------
# issue 16: default batch, framework-valid layouts, plans within published evidence
# --------------------------------------------------------------------------------------------


def test_default_batch_follows_the_law_and_the_gpu_floor() -> None:
    from aitco.perf.training import GPUS_PER_SEQUENCE_FLOOR, default_global_batch_tokens

    # small model, few GPUs: DeepSeek LLM's law 0.292 C^0.3271 with C = 6 N D
    law = 0.2920 * (6 * 124e6 * 10e9) ** 0.3271
    got = int(default_global_batch_tokens(124e6, 8, 1024, 10e9))
    assert law <= got < law + 1024  # rounded up to whole sequences
    # many GPUs: at least one sequence per 8 GPUs (Llama 3 405B's 16M tokens on 16,384 GPUs)
    floor = default_global_batch_tokens(1e8, 16384, 8192, 1e9)
    assert int(floor) == 16384 // GPUS_PER_SEQUENCE_FLOOR * 8192
    # no token count: Chinchilla's 20 tokens per parameter sets the budget
    assert int(default_global_batch_tokens(8e9, 8, 2048)) == int(
        default_global_batch_tokens(8e9, 8, 2048, 20 * 8e9)
    )


def test_estimate_flags_a_batch_that_caps_dp_or_idles_stages() -> None:
    r = _est(gpus=64, global_batch=4)  # 4 sequences for 64 GPUs
    assert r.values["batch_caps_dp"] is True
    assert r.values["global_batch_tokens"] == 4 * 2048
    ok = _est(gpus=8, global_batch=64)
    assert ok.values["batch_caps_dp"] is False
    idle = _est(gpus=8, global_batch=2, plan={"tp": 1, "pp": 4, "dp": 2, "micro_batch": 1})
    assert idle.values["batch_leaves_gpus_idle"] is True  # 1 micro-batch for 4 stages


def test_search_returns_only_layouts_frameworks_accept() -> None:
    # 12 layers, 16 heads, 4 KV heads
    m = ModelArch(id="m", n_layers=12, d_model=1024, n_heads=16, n_kv_heads=4, d_ff=4096,
                  vocab_size=32000)  # fmt: skip
    c = candidate_plans(model_shape(m), 64, 2048, 1024)
    assert np.all(4 % c["tp"] == 0)  # TP divides the KV heads (and so the heads)
    inter = c["vp"] > 1
    assert inter.any()
    chunks = c["pp"][inter] * c["vp"][inter]
    assert np.all((12 % chunks == 0) | ((12 + 2) % chunks == 0))
    assert np.all(chunks <= 12)


def test_plan_within_evidence_prefers_published_practice() -> None:
    from aitco.perf.training import PublishedPractice

    big = ModelArch(id="big", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336,
                    vocab_size=128256)  # fmt: skip
    free = estimate_training(big, ACC, SYS, 64, seq_len=4096, global_batch=256)
    assert "beyond_published_evidence" not in free.values
    layout = (2, 1, 1, 1)
    pr = PublishedPractice(best_mfu=0.30, source="row X", layouts=(layout,))
    r = estimate_training(big, ACC, SYS, 64, seq_len=4096, global_batch=256, practice=pr)
    p = r.values["plan"]
    lo = np.exp(DEFAULT_EFFICIENCY.training_log_ratio_q10)
    # within the best plan's interval, and no farther from practice than the fastest plan
    assert r.values["tokens_per_s"] >= free.values["tokens_per_s"] * lo * (1 - 1e-9)
    dist = abs(np.log2(p["tp"] / 2)) + abs(np.log2(p["pp"])) + abs(np.log2(p["cp"]))
    fp = free.values["plan"]
    fdist = abs(np.log2(fp["tp"] / 2)) + abs(np.log2(fp["pp"])) + abs(np.log2(fp["cp"]))
    assert dist <= fdist
    assert r.values["published_best_mfu"] == 0.30
    # the whole interval of the MFU above 0.30: beyond the evidence
    assert r.values["beyond_published_evidence"] is (r.values["interval"]["mfu"][0] > 0.30)
    high = PublishedPractice(best_mfu=0.99, source="row Y", layouts=())
    r2 = estimate_training(big, ACC, SYS, 64, seq_len=4096, global_batch=256, practice=high)
    assert r2.values["beyond_published_evidence"] is False
    assert r2.values["plan"] == free.values["plan"]  # no layouts: the fastest plan


def test_training_gemm_is_its_own_but_calibration_of_gemm_reaches_it() -> None:
    e = DEFAULT_EFFICIENCY
    assert e.training_gemm_for("nvidia-hopper") == e.training_gemm["nvidia-hopper"]
    assert e.training_gemm_for("amd-cdna3") == e.gemm_for("amd-cdna3")  # no training value
    cal = e.with_overrides({"gemm": {"nvidia-hopper": 0.5}})
    assert cal.training_gemm_for("nvidia-hopper") == 0.5
    assert cal.training_gemm_for("nvidia-ampere") == e.training_gemm["nvidia-ampere"]
    assert e.attention_for("amd-cdna3") == e.attention


def test_families_without_runs_take_a_share_of_their_measured_matmul_ceiling() -> None:
    e = DEFAULT_EFFICIENCY
    share = e.training_gemm_share_of_ceiling
    # a fitted family keeps its own value whatever the accelerator's microbenchmark says
    assert e.training_gemm_for("nvidia-hopper", 0.5) == e.training_gemm["nvidia-hopper"]
    # one without runs: the ceiling times the share the fitted families reach
    assert e.training_gemm_for("amd-cdna3", 0.5) == pytest.approx(0.5 * share)
    assert e.training_gemm_for("amd-cdna3", 0.6) > e.training_gemm_for("amd-cdna3", 0.5)
    assert e.training_gemm_for("amd-cdna3", None) == e.gemm_for("amd-cdna3")
    # a calibrated (or fitted) shared value of the family wins over the microbenchmark
    cal = e.with_overrides({"gemm": {"amd-cdna3": 0.3}})
    assert cal.training_gemm_for("amd-cdna3", 0.5) == 0.3
    assert cal.gemm_for("amd-cdna3", 0.5) == 0.3
    assert e.gemm_for("amd-cdna3", 0.5) == pytest.approx(0.5 * e.gemm_share_of_ceiling)
    # --explain says which rule gave the number
    assert "fitted" in e.training_gemm_basis("nvidia-hopper", 0.8)
    assert "measured matmul ceiling 0.500" in e.training_gemm_basis("amd-cdna3", 0.5)
    assert "gemm_default" in e.training_gemm_basis("amd-cdna3", None)


def test_a_slower_matmul_ceiling_makes_training_slower() -> None:
    fast = ACC.model_copy(update={"family": "test-family", "matmul_tflops": {"bf16": 900.0}})
    slow = fast.model_copy(update={"matmul_tflops": {"bf16": 500.0}})
    plan = {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "recompute": "none"}
    a = estimate_training(M, fast, SYS, 8, seq_len=2048, global_batch=64, plan=plan)
    b = estimate_training(M, slow, SYS, 8, seq_len=2048, global_batch=64, plan=plan)
    assert b.values["tokens_per_s"] < a.values["tokens_per_s"]
    # the GEMM part of the compute term scales with 1 / ceiling (attention does not)
    ratio = b.time_terms_s["compute_s"] / a.time_terms_s["compute_s"]
    assert 1.3 < ratio <= 0.9 / 0.5 + 1e-9


def test_elementwise_fused_into_matmuls_removes_its_hbm_traffic_only() -> None:
    """XLA on TPU fuses norms, residuals, activation and rotary into the matmuls: the
    memory-bound term loses their bytes; compute and the rest of the step are unchanged."""
    fused_acc = ACC.model_copy(update={"elementwise_fused_into_matmul": True})
    plan = {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "recompute": "none"}
    a = estimate_training(M, ACC, SYS, 8, seq_len=2048, global_batch=64, plan=plan)
    b = estimate_training(M, fused_acc, SYS, 8, seq_len=2048, global_batch=64, plan=plan)
    assert b.time_terms_s["memory_bound_s"] < 0.5 * a.time_terms_s["memory_bound_s"]
    assert b.time_terms_s["memory_bound_s"] > 0.0  # the loss over the vocabulary remains
    assert b.time_terms_s["compute_s"] == pytest.approx(a.time_terms_s["compute_s"])
    assert b.values["tokens_per_s"] > a.values["tokens_per_s"]


def test_unfused_attention_costs_hbm_traffic_and_full_gemms() -> None:
    flash = _est(plan={"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "recompute": "none"})
    unf = estimate_training(M, ACC, SYS, 8, seq_len=2048, global_batch=64,
                            plan={"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1,
                                  "recompute": "none"}, attention_kernel="unfused")  # fmt: skip
    # the s x s scores streamed through HBM make the memory-bound term larger
    assert unf.time_terms_s["memory_bound_s"] > flash.time_terms_s["memory_bound_s"]
    with pytest.raises(InputError, match="attention_kernel"):
        _est(attention_kernel="xformers")


def test_restating_the_shared_gemm_keeps_the_training_value() -> None:
    e = DEFAULT_EFFICIENCY
    same = e.with_overrides({"gemm": {"nvidia-hopper": e.gemm_for("nvidia-hopper")}})
    assert same.training_gemm_for("nvidia-hopper") == e.training_gemm_for("nvidia-hopper")


def test_offload_time_grows_as_the_host_link_slows() -> None:
    """The offload term is PCIe copies plus the CPU step: a slower host link costs more, and
    parameters offloaded (ZeRO-Infinity) leave the device only the layers in flight."""
    host_sys = SYS.model_copy(
        update={"host_memory_gb": 2048.0, "host_memory_bandwidth_gb_s": 600.0}
    )
    gen5 = ACC.model_copy(update={"pcie_gen": 5})
    gen4 = ACC.model_copy(update={"pcie_gen": 4})
    plan = {"tp": 1, "pp": 1, "dp": 8, "zero": 3, "micro_batch": 1, "recompute": "none"}
    kw = dict(seq_len=2048, global_batch=64)
    fast = estimate_training(M, gen5, host_sys, 8, plan={**plan, "offload": "optimizer"}, **kw)
    slow = estimate_training(M, gen4, host_sys, 8, plan={**plan, "offload": "optimizer"}, **kw)
    none = estimate_training(M, gen5, host_sys, 8, plan=plan, **kw)
    assert slow.time_terms_s["offload_s"] > fast.time_terms_s["offload_s"] > 0
    assert none.time_terms_s["offload_s"] == 0
    assert none.time_terms_s["optimizer_s"] > 0
    par = estimate_training(M, gen5, host_sys, 8, plan={**plan, "offload": "params"}, **kw)
    assert par.memory_terms_gb["weights"] < fast.memory_terms_gb["weights"]
    assert par.values["host_memory_per_gpu_gb"] > fast.values["host_memory_per_gpu_gb"]
    with pytest.raises(InputError, match="--offload"):
        estimate_training(M, gen5, host_sys, 8, plan={**plan, "offload": "nvme"}, **kw)
    with pytest.raises(InputError, match="host_memory"):
        estimate_training(M, gen5, SYS, 8, plan={**plan, "offload": "optimizer"}, **kw)


def test_fused_loss_and_native_loop_are_the_stack_properties_they_say() -> None:
    """A fused loss kernel reads each 16-bit logit once and writes its gradient in place
    (4 B instead of 3 passes over 4 B) and holds 16-bit logits; a native loop drops the fitted
    per-step host time; nothing else moves."""
    plan = {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "recompute": "none"}
    kw = dict(seq_len=2048, global_batch=64)
    base = estimate_training(M, ACC, SYS, 8, plan=plan, **kw)
    fused = estimate_training(M, ACC, SYS, 8, plan={**plan, "loss_kernel": "fused"}, **kw)
    native = estimate_training(M, ACC, SYS, 8, plan={**plan, "host_loop": "native"}, **kw)
    hbm = ACC.hbm_bandwidth_gb_s * 1e9 * DEFAULT_EFFICIENCY.elementwise_hbm
    tokens_per_device = 64 * 2048 / 8
    saved_s = tokens_per_device * M.vocab_size * (3 * 4.0 - 4.0) / hbm
    dt = base.time_terms_s["memory_bound_s"] - fused.time_terms_s["memory_bound_s"]
    assert dt == pytest.approx(saved_s, rel=1e-9)
    # one micro-batch's logits: fp32 -> 16-bit
    dm = base.memory_terms_gb["activations"] - fused.memory_terms_gb["activations"]
    assert dm == pytest.approx(2048 * M.vocab_size * 2.0 / 1e9, rel=1e-9)
    assert native.time_terms_s["step_overhead_s"] == 0.0
    assert base.time_terms_s["step_overhead_s"] == DEFAULT_EFFICIENCY.step_overhead_s
    assert native.time_terms_s["compute_s"] == base.time_terms_s["compute_s"]
    assert fused.values["plan"]["loss_kernel"] == "fused"
    assert native.values["plan"]["host_loop"] == "native"
    with pytest.raises(InputError, match="--loss-kernel"):
        estimate_training(M, ACC, SYS, 8, plan={**plan, "loss_kernel": "chunked"}, **kw)


def test_elementwise_kernel_style_sets_the_memory_bound_rate_alone() -> None:
    """``fused`` and ``eager`` elementwise kernels change only the memory-bound term, by the
    ratio of their fitted HBM fractions to the end-to-end ``elementwise_hbm`` (the per-kernel
    launch time aside); explain shows the fraction used."""
    plan = {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "recompute": "none"}
    kw = dict(seq_len=2048, global_batch=64)
    e = DEFAULT_EFFICIENCY
    base = estimate_training(M, ACC, SYS, 8, plan=plan, **kw)
    launch_s = estimate_training(  # bytes at an unbounded rate: the kernel launches alone
        M, ACC, SYS, 8, plan=plan, efficiency=e.model_copy(update={"elementwise_hbm": 1e9}), **kw
    ).time_terms_s["memory_bound_s"]
    assert 0 < launch_s < base.time_terms_s["memory_bound_s"]
    for style in ("fused", "eager"):
        r = estimate_training(M, ACC, SYS, 8, plan={**plan, "elementwise_kernels": style}, **kw)
        bytes_s = base.time_terms_s["memory_bound_s"] - launch_s
        want = launch_s + bytes_s * e.elementwise_hbm / e.elementwise_hbm_by_kernels[style]
        assert r.time_terms_s["memory_bound_s"] == pytest.approx(want, rel=1e-9), style
        assert r.time_terms_s["compute_s"] == base.time_terms_s["compute_s"]
        assert r.values["plan"]["elementwise_kernels"] == style
        assert r.term_inputs["memory_bound_s"]["elementwise_hbm"] == e.elementwise_hbm_for(style)
    fused = estimate_training(M, ACC, SYS, 8, plan={**plan, "elementwise_kernels": "fused"}, **kw)
    eager = estimate_training(M, ACC, SYS, 8, plan={**plan, "elementwise_kernels": "eager"}, **kw)
    assert fused.values["step_time_s"] < base.values["step_time_s"] < eager.values["step_time_s"]
    assert base.values["plan"]["elementwise_kernels"] == "framework"
    with pytest.raises(InputError, match="--elementwise-kernels"):
        estimate_training(M, ACC, SYS, 8, plan={**plan, "elementwise_kernels": "compiled"}, **kw)


def test_gemm_level_ceiling_prices_the_gemms_at_the_measured_matmul_ceiling() -> None:
    """``gemm_level`` ``ceiling`` (a native loop calling cuBLAS back to back) puts the GEMMs at
    the accelerator's measured matmul ceiling instead of the fitted framework level: only the
    GEMM part of the compute term moves, by the ratio of the two levels; explain names the
    level and its basis. Without a measured ceiling (or one below the framework level) the
    framework level stays, and says so."""
    plan = {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "recompute": "none"}
    kw = dict(seq_len=2048, global_batch=64)
    e = DEFAULT_EFFICIENCY
    framework = e.training_gemm_for(ACC.family)
    measured = ACC.model_copy(update={"matmul_tflops": {"bf16": 900.0}})  # 0.9 of the peak
    base = estimate_training(M, measured, SYS, 8, plan=plan, **kw)
    top = estimate_training(M, measured, SYS, 8, plan={**plan, "gemm_level": "ceiling"}, **kw)
    no_gemm = e.model_copy(update={"training_gemm": {ACC.family: 1e9}})  # GEMMs take no time
    att_s = estimate_training(M, measured, SYS, 8, plan=plan, efficiency=no_gemm, **kw)
    att_s_top = estimate_training(
        M, measured, SYS, 8, plan={**plan, "gemm_level": "ceiling"}, efficiency=no_gemm, **kw
    )
    assert att_s.time_terms_s["compute_s"] > 0.0
    gemm_base = base.time_terms_s["compute_s"] - att_s.time_terms_s["compute_s"]
    gemm_top = top.time_terms_s["compute_s"] - att_s_top.time_terms_s["compute_s"]
    assert gemm_top == pytest.approx(gemm_base * framework / 0.9, rel=1e-9)
    assert top.time_terms_s["memory_bound_s"] == base.time_terms_s["memory_bound_s"]
    assert top.values["plan"]["gemm_level"] == "ceiling"
    assert base.values["plan"]["gemm_level"] == "framework"
    assert top.term_inputs["compute_s"]["gemm_efficiency"] == pytest.approx(0.9)
    assert "measured matmul ceiling 0.900" in top.term_inputs["compute_s"]["gemm_basis"]
    # no measured ceiling: the framework level, said in the basis
    none = estimate_training(M, ACC, SYS, 8, plan={**plan, "gemm_level": "ceiling"}, **kw)
    plain = estimate_training(M, ACC, SYS, 8, plan=plan, **kw)
    assert none.values["step_time_s"] == plain.values["step_time_s"]
    assert "no measured matmul ceiling" in none.term_inputs["compute_s"]["gemm_basis"]
    # a ceiling below the fitted level never slows the stack down
    low = ACC.model_copy(update={"matmul_tflops": {"bf16": 100.0}})
    slow = estimate_training(M, low, SYS, 8, plan={**plan, "gemm_level": "ceiling"}, **kw)
    assert (
        slow.values["step_time_s"]
        == estimate_training(M, low, SYS, 8, plan=plan, **kw).values["step_time_s"]
    )
    with pytest.raises(InputError, match="--gemm-level"):
        estimate_training(M, ACC, SYS, 8, plan={**plan, "gemm_level": "peak"}, **kw)


def test_nvme_offload_moves_the_states_to_the_drives_and_swaps_them_each_step() -> None:
    """ZeRO-Infinity's NVMe offload: the optimizer states (and weights) leave host memory for
    the node's drives; each step reads and writes the optimizer states at the drives' rates
    (shared by the node's devices), so slower drives cost more and the host holds only the
    fp32 gradient buffer."""
    fast_sys = SYS.model_copy(update={
        "host_memory_gb": 2048.0, "host_memory_bandwidth_gb_s": 600.0,
        "nvme_capacity_gb": 30720.0, "nvme_read_gb_s": 54.4, "nvme_write_gb_s": 32.0,
    })  # fmt: skip
    slow_sys = fast_sys.model_copy(update={"nvme_read_gb_s": 13.6, "nvme_write_gb_s": 8.0})
    acc = ACC.model_copy(update={"pcie_gen": 5})
    plan = {"tp": 1, "pp": 1, "dp": 8, "zero": 3, "micro_batch": 1, "recompute": "none"}
    kw = dict(seq_len=2048, global_batch=64)
    cpu = estimate_training(M, acc, fast_sys, 8, plan={**plan, "offload": "optimizer"}, **kw)
    nv = estimate_training(M, acc, fast_sys, 8, plan={**plan, "offload": "optimizer-nvme"}, **kw)
    slow = estimate_training(M, acc, slow_sys, 8, plan={**plan, "offload": "optimizer-nvme"}, **kw)
    assert slow.time_terms_s["offload_s"] > nv.time_terms_s["offload_s"]
    assert nv.term_inputs["offload_s"]["nvme_read_gb_s"] == 54.4  # --explain names the drives
    # the 12 B/param of Adam states now sit on the drives, not in host memory
    shard = cpu.values["host_memory_per_gpu_gb"] / 16.0  # 12 B states + 4 B fp32 gradients
    assert nv.values["nvme_per_gpu_gb"] == pytest.approx(12.0 * shard, rel=1e-9)
    assert nv.values["host_memory_per_gpu_gb"] == pytest.approx(4.0 * shard, rel=1e-9)
    assert cpu.values["nvme_per_gpu_gb"] == 0.0
    # the swap at the slow drives' rates bounds the step from below: 8 devices share them
    gb = 12.0 * shard
    swap_s = gb / (13.6 / 8) + gb / (8.0 / 8)
    assert slow.time_terms_s["offload_s"] >= swap_s
    par = estimate_training(M, acc, fast_sys, 8, plan={**plan, "offload": "params-nvme"}, **kw)
    assert par.values["nvme_per_gpu_gb"] > nv.values["nvme_per_gpu_gb"]
    assert par.memory_terms_gb["weights"] < nv.memory_terms_gb["weights"]
    tiny = fast_sys.model_copy(update={"nvme_capacity_gb": 1.0})
    assert not estimate_training(
        M, acc, tiny, 8, plan={**plan, "offload": "optimizer-nvme"}, **kw
    ).values["fits"]
    with pytest.raises(InputError, match="nvme_read_gb_s"):
        estimate_training(M, acc, fast_sys.model_copy(update={"nvme_read_gb_s": None}), 8,
                          plan={**plan, "offload": "optimizer-nvme"}, **kw)  # fmt: skip
    z1 = {**plan, "zero": 1, "offload": "optimizer-nvme"}
    with pytest.raises(PlanError, match="ZeRO stage >= 3"):
        estimate_training(M, acc, fast_sys, 8, plan=z1, **kw)


def test_zero_offload_10b_on_one_v100_is_near_the_published_40_tflops(catalog) -> None:
    """Ren et al. 2021 (ZeRO-Offload, arXiv 2101.06840): a 10B GPT-2-style model trains on one
    V100 at 40 TFLOP/s with the optimizer on the CPU. An indicative check, not a validation
    row: the paper's batch is not restated here, so batches of 8-32 sequences of 1,024 tokens
    must bracket 40 TFLOP/s (model FLOPs), with PCIe 3 and the DGX-1 host from the catalog."""
    acc, node = catalog.hardware("v100-sxm2-32gb")
    base = catalog.models["megatron-gpt-7.5b"]
    gpt10b = base.model_copy(update={"id": "gpt-10b", "n_layers": 50, "d_model": 4096,
                                     "n_heads": 32, "n_kv_heads": 32, "d_ff": 16384})  # fmt: skip
    tflops = [
        estimate_training(gpt10b, acc, node, 1, seq_len=1024, global_batch=gb, precision="fp16",
                          plan={"offload": "optimizer"}).values["model_tflops_per_gpu"]
        for gb in (8, 32)
    ]  # fmt: skip
    assert tflops[0] < 40.0 < tflops[1]
    assert tflops[0] > 0.6 * 40.0
    assert tflops[1] < 1.4 * 40.0

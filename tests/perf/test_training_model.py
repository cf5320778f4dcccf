"""The split training model: terms that add up to the step time, one default-batch rule."""

from __future__ import annotations

import numpy as np
import pytest
from tests.perf.test_training import SYS, M  # the hand-computable node and model

from aitco.catalog.schema import Accelerator, System
from aitco.errors import InputError
from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.perf.flops import model_shape
from aitco.perf.training import TIME_TERMS, default_global_batch, estimate_training
from aitco.perf.training_model import evaluate_plans, hardware_shape

ACC = Accelerator(
    id="test-gpu",
    vendor="test",
    family="nvidia-hopper",
    peak_tflops={"bf16": 1000.0, "fp16": 1000.0},
    memory_gb=80.0,
    hbm_bandwidth_gb_s=3000.0,
    launch_year=2023,
)


def test_time_terms_sum_to_the_step_time() -> None:
    r = estimate_training(M, ACC, SYS, 8, seq_len=2048, global_batch=64, plan={"tp": 2, "pp": 2})
    assert set(r.time_terms_s) == set(TIME_TERMS)
    assert sum(r.time_terms_s.values()) == pytest.approx(r.values["step_time_s"], rel=1e-12)
    assert r.time_terms_s["step_overhead_s"] == DEFAULT_EFFICIENCY.step_overhead_s


def test_vectorised_terms_sum_to_the_step_time() -> None:
    ms = model_shape(M)
    hw = hardware_shape(ACC, "bf16", DEFAULT_EFFICIENCY)
    tp = np.array([1, 2, 4, 8])
    res = evaluate_plans(
        ms, hw, SYS, seq_len=2048, global_batch=64, gpus=8, precision="bf16", method="full",
        eff=DEFAULT_EFFICIENCY, tp=tp, pp=1, cp=1, ep=1, dp=8 // tp, zero=1, micro_batch=1,
        recompute=0,
    )  # fmt: skip
    total = sum(res[k] for k in TIME_TERMS)
    np.testing.assert_allclose(total, res["step_time_s"], rtol=1e-12)


def test_default_batch_in_sequences_is_the_token_rule() -> None:
    assert default_global_batch(124e6, 8, 1024, 10e9) == 425  # 435,200 tokens / 1,024
    # Llama 3 405B on 16,384 GPUs: at least one sequence per 8 GPUs
    assert default_global_batch(405e9, 16384, 8192, 15.6e12) >= 2048


def test_step_overhead_weighs_on_small_models_not_large_ones() -> None:
    big = M.model_copy(update={"id": "big", "n_layers": 64, "d_model": 8192, "n_heads": 64,
                               "n_kv_heads": 8, "d_ff": 28672})  # fmt: skip
    small = estimate_training(M, ACC, SYS, 8, seq_len=2048, global_batch=16)
    large = estimate_training(big, ACC, SYS, 64, seq_len=2048, global_batch=64)
    share_small = small.time_terms_s["step_overhead_s"] / small.values["step_time_s"]
    share_large = large.time_terms_s["step_overhead_s"] / large.values["step_time_s"]
    assert share_small > 10 * share_large


def _hybrid(shard_devices: int | None, gpus: int = 64):
    plan = {"dp": gpus, "fsdp": True, "micro_batch": 1, "recompute": "none"}
    if shard_devices is not None:
        plan["shard_devices"] = shard_devices
    return estimate_training(M, ACC, SYS, gpus, seq_len=2048, global_batch=gpus, plan=plan)


def test_hybrid_sharding_keeps_fsdp_in_the_node_and_all_reduces_across_nodes() -> None:
    full, hybrid = _hybrid(None), _hybrid(8)
    # FSDP across 8 nodes: its gathers cross the 50 GB/s scale-out; hybrid keeps them on NVLink
    assert hybrid.time_terms_s["zero3_comm_s"] < full.time_terms_s["zero3_comm_s"] / 5
    assert full.time_terms_s["dp_comm_s"] == 0.0  # full ZeRO-3 has no separate gradient sync
    assert hybrid.values["tokens_per_s_per_gpu"] > full.values["tokens_per_s_per_gpu"]
    # weights, gradients and Adam states sharded 8 ways, not 64: more memory per device
    assert hybrid.memory_terms_gb["weights"] > full.memory_terms_gb["weights"]
    assert hybrid.values["plan"]["shard_devices"] == 8
    assert full.values["plan"]["shard_devices"] is None


def test_hybrid_gradient_all_reduce_is_exposed_once_it_outlasts_the_backward() -> None:
    ms, hw = model_shape(M), hardware_shape(ACC, "bf16", DEFAULT_EFFICIENCY)
    kw = dict(
        seq_len=2048, global_batch=64, gpus=64, precision="bf16", method="full",
        tp=1, pp=1, cp=1, ep=1, dp=64, zero=3, micro_batch=1, recompute=0,
    )  # fmt: skip
    slow = System(**{**SYS.model_dump(), "scale_out_bandwidth_gb_s": 0.05})
    fast_res = evaluate_plans(ms, hw, SYS, eff=DEFAULT_EFFICIENCY, shard_devices=8, **kw)
    slow_res = evaluate_plans(ms, hw, slow, eff=DEFAULT_EFFICIENCY, shard_devices=8, **kw)
    # the all-reduce of a 1/8 gradient shard over 8 replicas crosses the scale-out network only
    assert slow_res["dp_comm_s"][()] > 10 * fast_res["dp_comm_s"][()]
    np.testing.assert_allclose(slow_res["zero3_comm_s"], fast_res["zero3_comm_s"], rtol=1e-12)


def test_hybrid_group_of_all_devices_is_plain_fsdp() -> None:
    full, whole = _hybrid(None), _hybrid(64)
    assert whole.values["step_time_s"] == pytest.approx(full.values["step_time_s"], rel=1e-12)
    assert whole.values["memory_per_gpu_gb"] == pytest.approx(full.values["memory_per_gpu_gb"])


@pytest.mark.parametrize("bad", [3, 0, -8, "x", 8.5])
def test_hybrid_group_size_must_divide_the_devices(bad: object) -> None:
    with pytest.raises(InputError, match="shard_devices"):
        _hybrid(bad)  # type: ignore[arg-type]


def test_expert_parallel_groups_pay_the_busiest_gpus_routed_load() -> None:
    """Training's expert GEMMs and all-to-alls carry the serving model's load imbalance.

    Under uniform routing the busiest of ``ep`` devices gets :math:`1 + \\sqrt{2 \\ln ep / m}`
    times the mean load ``m``: the extra routed-expert GEMM time of an EP-8 plan over the same
    plan without imbalance is exactly that share of the routed FLOPs; EP 1 and dense models pay
    nothing.
    """
    from aitco.catalog.schema import MoE
    from aitco.perf import training_model as tm
    from aitco.perf.flops import routed_expert_flops_per_token
    from aitco.perf.parallelism import expert_load_imbalance

    moe = M.model_copy(update={"id": "moe", "moe": MoE(n_experts=8, n_active=2, d_ff_expert=1024)})
    ms, dense = model_shape(moe), model_shape(M)
    run = tm.RunShape(2048.0, 64.0, 8.0, "bf16", "full", "adam", None, "flash", None, "none")
    plan = dict(tp=1, pp=1, cp=1, dp=8, zero=1, micro_batch=1, recompute=0, vp=1,
                recompute_fraction=1.0, tp_comm_overlap=0)  # fmt: skip
    hw = hardware_shape(ACC, "bf16", DEFAULT_EFFICIENCY)
    pa1 = tm.plan_arrays(ms, run, ep=np.array([1.0]), **plan)
    pa8 = tm.plan_arrays(ms, run, ep=np.array([8.0]), **plan)
    g = expert_load_imbalance(2048.0 * 8 * 2, 8)
    assert float(tm.expert_imbalance(ms, pa8)[0]) == pytest.approx(float(g))
    assert float(g) > 1.0
    assert float(tm.expert_imbalance(ms, pa1)[0]) == 1.0
    assert float(tm.expert_imbalance(dense, tm.plan_arrays(dense, run, ep=1.0, **plan))) == 1.0
    extra = tm.linear_time_s(ms, hw, DEFAULT_EFFICIENCY, run, pa8) - tm.linear_time_s(
        ms, hw, DEFAULT_EFFICIENCY, run, pa1
    )
    rate = hw.peak_linear_tflops * 1e12 * hw.gemm_efficiency
    want = 2048.0 * ms.n_layers * routed_expert_flops_per_token(ms) * (float(g) - 1.0) * 3 / rate
    assert float(extra[0]) == pytest.approx(want, rel=1e-9)


def test_tp_overlap_is_per_accelerator_family_with_a_fallback() -> None:
    """A family's own TP-overlap share drives its TP term; families without one use the global."""
    from aitco.perf import training_model as tm

    tpu = ACC.model_copy(update={"id": "test-tpu", "family": "google-tpu"})
    eff = DEFAULT_EFFICIENCY.with_overrides(
        {"tp_overlap": 0.2, "tp_overlap_by_family": {"google-tpu": 0.9}}
    )
    assert eff.tp_overlap_for("nvidia-hopper") == 0.2
    assert eff.tp_overlap_for("google-tpu") == 0.9
    ms = model_shape(M)
    run = tm.RunShape(2048.0, 64.0, 8.0, "bf16", "full", "adam", None, "flash", None, "none")
    plan = dict(tp=4, pp=1, cp=1, ep=1, dp=2, zero=1, micro_batch=1, recompute=0, vp=1,
                recompute_fraction=1.0)  # fmt: skip
    on = tm.plan_arrays(ms, run, tp_comm_overlap=1, **plan)
    off = tm.plan_arrays(ms, run, tp_comm_overlap=0, **plan)
    for acc, share in ((ACC, 0.2), (tpu, 0.9)):
        hw = hardware_shape(acc, "bf16", eff)
        t_on = tm.tp_comm_time_s(ms, hw, SYS, eff, run, on)
        t_off = tm.tp_comm_time_s(ms, hw, SYS, eff, run, off)
        assert float(t_off) > 0
        assert float(t_on) == pytest.approx(float(t_off) * (1.0 - share), rel=1e-12)


def test_group_limited_routing_crosses_fewer_nodes() -> None:
    """DeepSeek-V3 routes each token to at most 4 of 8 expert groups (nodes): the dispatch
    sends it once per target node (arXiv 2412.19437 Sec. 3.2.2), so EP 64 over 8 nodes moves
    :math:`4 (1 - (3/4)^8) \\cdot 7/8 \\approx 3.15` hidden states per token over the NICs
    instead of :math:`8 \\cdot 56/64 = 7`: about 0.45 of the all-to-all time of the same model
    without the limit, which is close to the ~1:1 computation-to-communication ratio the report
    gives for its cross-node EP."""
    from aitco.catalog.schema import MoE
    from aitco.perf import training_model as tm
    from aitco.perf.parallelism import moe_alltoall_time_s, routed_remote_nodes

    assert float(routed_remote_nodes(1, 8)) == 0.0
    assert float(routed_remote_nodes(8, 1)) == pytest.approx(7 / 8)
    want = 4 * (1 - 0.75**8) * 7 / 8
    assert float(routed_remote_nodes(8, 8, 8, 4)) == pytest.approx(want)
    assert float(routed_remote_nodes(64, 8, 8, 4)) <= 8  # 4 groups of 8 nodes each at most
    free = float(routed_remote_nodes(8, 8))
    assert free == pytest.approx(8 * (1 - (7 / 8) ** 8) * 7 / 8)
    assert want < free < 7

    sys8 = SYS
    m = 1e9
    limited = moe_alltoall_time_s(sys8, m, 64, 1, 8, n_groups=8, topk_groups=4)
    flat = moe_alltoall_time_s(sys8, m, 64, 1, 8)
    nic = sys8.scale_out_bandwidth_gb_s * 1e9
    assert float(flat) == pytest.approx(56 / 64 * m / nic + 56 * sys8.scale_out_latency_us * 1e-6)
    assert float(limited) == pytest.approx(
        want / 8 * m / nic + 56 * sys8.scale_out_latency_us * 1e-6
    )
    assert float(moe_alltoall_time_s(sys8, m, 1, 1, 8)) == 0.0

    # the training model charges it: same plan, the group-limited model's EP time is smaller
    grouped = M.model_copy(
        update={
            "id": "g",
            "moe": MoE(n_experts=64, n_active=8, d_ff_expert=512, n_groups=8, topk_groups=4),
        }
    )
    free_m = M.model_copy(update={"id": "f", "moe": MoE(n_experts=64, n_active=8, d_ff_expert=512)})
    run = tm.RunShape(2048.0, 1024.0, 64.0, "bf16", "full", "adam", None, "flash", None, "none")
    plan = dict(tp=1, pp=1, cp=1, dp=64, ep=64.0, zero=1, micro_batch=1, recompute=0, vp=1,
                recompute_fraction=1.0, tp_comm_overlap=0)  # fmt: skip
    eff = DEFAULT_EFFICIENCY
    t_g = tm.ep_comm_time_s(
        model_shape(grouped), sys8, eff, run, tm.plan_arrays(model_shape(grouped), run, **plan)
    )
    t_f = tm.ep_comm_time_s(
        model_shape(free_m), sys8, eff, run, tm.plan_arrays(model_shape(free_m), run, **plan)
    )
    assert 0.3 < float(t_g) / float(t_f) < 0.6


def test_dualpipe_bubble_memory_and_hidden_all_to_all() -> None:
    """DualPipe (arXiv 2412.19437 Table 2): bubble (pp/2 - 1)(F&B + B - 3W) = (pp/2 - 1) t_mb/3
    with F : B_input : W = 1 : 1 : 1 per half-stage chunk; two parameter copies (weights and
    gradients twice) and pp + 1 micro-batches of activations; the all-to-alls hide under the
    compute like Megatron's EP overlap."""
    from aitco.catalog.schema import MoE
    from aitco.perf import training_model as tm
    from aitco.perf.plan_search import dualpipe_allowed

    moe = M.model_copy(update={"id": "moe", "moe": MoE(n_experts=8, n_active=2, d_ff_expert=1024)})
    ms = model_shape(moe)
    run = tm.RunShape(2048.0, 256.0, 64.0, "bf16", "full", "adam", None, "flash", None, "none")
    plan = dict(tp=1, pp=4.0, cp=1, dp=16, ep=8.0, zero=1, micro_batch=1, recompute=0, vp=1,
                recompute_fraction=1.0, tp_comm_overlap=0)  # fmt: skip
    one = tm.plan_arrays(ms, run, **plan)
    dual = tm.plan_arrays(ms, run, dualpipe=1.0, **plan)
    t_mb = np.array([2.0])

    def f(a: object) -> float:
        return float(np.asarray(a).ravel()[0])

    m = f(one.n_micro)  # 256 / 16 = 16 micro-batches
    assert f(tm.bubble_time_s(one, t_mb)[1]) == pytest.approx(3 * 2.0)  # (pp - 1) t_mb
    assert f(tm.bubble_time_s(dual, t_mb)[1]) == pytest.approx(1 * 2.0 / 3)
    assert f(tm.bubble_time_s(dual, t_mb)[0]) == pytest.approx(1 / 3 / m)
    m1, m2 = tm.plan_memory_bytes(ms, run, one), tm.plan_memory_bytes(ms, run, dual)
    assert f(m2["weights"]) == pytest.approx(2 * f(m1["weights"]))
    assert f(m2["gradients"]) == pytest.approx(2 * f(m1["gradients"]))
    assert f(m2["activations"]) == pytest.approx(5 / 4 * f(m1["activations"]))
    parts = ("weights", "gradients", "optimizer", "activations", "overhead")
    assert f(m2["total"]) == pytest.approx(sum(f(m2[k]) for k in parts))
    a2a, compute = np.array([3.0]), np.array([2.0])
    assert f(tm.ep_exposed_time_s(a2a, compute, one)) == 3.0
    assert f(tm.ep_exposed_time_s(a2a, compute, dual)) == 1.0
    ok = dualpipe_allowed(np.array([2, 3, 4, 16, 1]), np.array([1, 1, 2, 1, 1]),
                          np.array([8, 8, 8, 8, 8]))  # fmt: skip
    assert ok.tolist() == [True, False, False, False, False]


def test_layer_gemms_follow_the_kernel_shape_laws() -> None:
    """Shape factors are 1 for tile-aligned GEMMs without SM count or short-K time, and the
    flop-weighted 1/e of gemm_shape_efficiency otherwise (hand-computed for the forward)."""
    from aitco.perf.kernels import gemm_shape_efficiency
    from aitco.perf.training_model import layer_gemm_time_factors

    ms = model_shape(M)
    for f in layer_gemm_time_factors(ms, 8192.0, 1.0, 0.0, 0.0):
        assert float(f) == pytest.approx(1.0)
    h, f_w = float(ms.d_model), float(ms.ffn_width_active)
    q, kv = float(ms.n_heads * ms.head_dim), float(ms.kv_heads * ms.head_dim)
    up = 2 * f_w if ms.gated else f_w
    gemms = ((q + 2 * kv, h), (h, q), (up, h), (h, f_w))  # (N, K), TP 1
    total = sum(n * k for n, k in gemms)
    want = sum(
        n * k / total / float(gemm_shape_efficiency(4096.0, n, k, 132, 127.0)) for n, k in gemms
    )
    fwd, _, _ = layer_gemm_time_factors(ms, 4096.0, 1.0, 132, 127.0)
    assert float(fwd) == pytest.approx(want, rel=1e-12)
    assert float(fwd) > 1.0


def test_short_sequences_and_narrow_gemms_run_further_from_the_peak() -> None:
    """Per FLOP, a narrow model at a short sequence is slower than a wide one at a long one."""
    acc = ACC.model_copy(update={"compute_units": 132})
    hw = hardware_shape(acc, "bf16", DEFAULT_EFFICIENCY)
    assert hw.gemm_k_half == pytest.approx(
        DEFAULT_EFFICIENCY.gemm_tile_fixed_s * 1e15 / 132 / (2 * 128 * 256)
    )
    no_laws = DEFAULT_EFFICIENCY.with_overrides(
        {"gemm_tile_fixed_s": 0.0, "gemm_latency_s": 0.0,
         "attention_block_fixed_s": {"fa2": 0.0, "fa3": 0.0}}
    )  # fmt: skip
    slowdown = {}
    for seq in (512, 8192):
        with_laws = estimate_training(M, acc, SYS, 8, seq_len=seq, global_batch=64, plan={"tp": 1})
        without = estimate_training(
            M, acc, SYS, 8, seq_len=seq, global_batch=64, plan={"tp": 1}, efficiency=no_laws
        )
        slowdown[seq] = with_laws.values["step_time_s"] / without.values["step_time_s"]
    assert slowdown[512] > slowdown[8192] > 1.0

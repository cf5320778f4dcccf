"""Memory as frameworks manage it, and one feasibility verdict (issue 31, item 3)."""

from __future__ import annotations

from typing import Any

import pytest

from aitco.catalog.schema import Accelerator, ModelArch, MoE, System
from aitco.errors import InputError, PlanError
from aitco.perf.memory import OFFLOADED_LIVE_LAYERS
from aitco.perf.training import THROUGHPUT_KEYS, estimate_training
from aitco.perf.training_model import dropped_token_fraction, host_link_gb_s

ACC = Accelerator(
    id="gpu", vendor="test", family="nvidia-hopper", peak_tflops={"bf16": 989.0, "fp8": 1979.0},
    memory_gb=80, hbm_bandwidth_gb_s=3350, launch_year=2023, pcie_gen=5, tdp_w=700,
    compute_units=132,
)  # fmt: skip
SYS = System(
    id="node", accelerator="gpu", devices_per_node=8, intra_node_fabric="nvswitch",
    intra_node_bandwidth_gb_s=450, scale_out_bandwidth_gb_s=50, nics_per_node=8,
    host_memory_gb=2048, host_memory_bandwidth_gb_s=600,
)  # fmt: skip
DENSE = ModelArch(
    id="d8b", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336, vocab_size=128256
)
MOE = ModelArch(
    id="moe", n_layers=16, d_model=2048, n_heads=16, n_kv_heads=8, d_ff=8192, vocab_size=32000,
    moe=MoE(n_experts=16, n_active=2, d_ff_expert=2048),
)  # fmt: skip
PLAN: dict[str, Any] = {"tp": 1, "pp": 1, "dp": 8, "zero": 3, "micro_batch": 1}


def _run(model: ModelArch = DENSE, seq: int = 32768, **plan: Any) -> Any:
    return estimate_training(
        model, ACC, SYS, 8, seq_len=seq, global_batch=64, plan={**PLAN, **plan}
    ).values


def test_activation_offload_moves_layer_inputs_to_the_host() -> None:
    base = _run(recompute="full")
    off = _run(offload_activations=True)
    assert off["plan"]["offload_activations"] is True
    assert off["plan"]["recompute"] == "full"  # the offloaded inputs are what is recomputed from
    layer_input_gb = 32768 * 4096 * 2 / 1e9  # one layer's input, bf16
    moved = (DENSE.n_layers - OFFLOADED_LIVE_LAYERS) * layer_input_gb
    assert base["memory_per_gpu_gb"] - off["memory_per_gpu_gb"] == pytest.approx(moved, rel=1e-6)
    assert off["host_memory_per_gpu_gb"] == pytest.approx(DENSE.n_layers * layer_input_gb)
    # the copies (2 x 8.6 GB over PCIe 5 at 0.8 x 63 GB/s) hide under the step's compute here
    assert off["step_time_s"] == pytest.approx(base["step_time_s"], rel=1e-9)


def test_activation_offload_needs_full_recompute_and_a_host() -> None:
    with pytest.raises(PlanError, match="full recompute"):
        _run(offload_activations=True, recompute="selective")
    no_host = SYS.model_copy(update={"host_memory_gb": None})
    with pytest.raises(InputError, match="host_memory_gb"):
        estimate_training(
            DENSE, ACC, no_host, 8, seq_len=4096, global_batch=64,
            plan={**PLAN, "offload_activations": True},
        )  # fmt: skip


def test_host_link_prefers_nvlink_c2c() -> None:
    assert host_link_gb_s(ACC) == 63.0  # PCIe 5 x16
    assert host_link_gb_s(ACC.model_copy(update={"host_link_gb_s": 450.0})) == 450.0


def test_partial_recompute_by_layer_count() -> None:
    v = _run(seq=8192, recompute_layers=8)
    assert (v["plan"]["recompute"], v["plan"]["recompute_fraction"]) == ("full", 0.25)
    full = _run(seq=8192, recompute="full")
    none = _run(seq=8192, recompute="none")
    assert full["memory_per_gpu_gb"] < v["memory_per_gpu_gb"] < none["memory_per_gpu_gb"]
    assert none["step_time_s"] < v["step_time_s"] < full["step_time_s"]
    with pytest.raises(InputError, match="--recompute-layers"):
        _run(recompute_layers=33)


def test_moe_capacity_factor_drops_or_pads() -> None:
    kw: dict[str, Any] = {"model": MOE, "seq": 4096, "ep": 8, "zero": 1}
    free = _run(**kw)
    capped = _run(**kw, moe_capacity_factor=1.0)
    padded = _run(**kw, moe_capacity_factor=1.5, moe_pad_to_capacity=True)
    assert capped["step_time_s"] <= free["step_time_s"]  # the busiest rank stops at capacity
    assert padded["step_time_s"] > free["step_time_s"]  # every expert computes 1.5x its share
    assert 0.0 < capped["moe_dropped_token_fraction"] < 0.5
    assert padded["moe_dropped_token_fraction"] == 0.0
    assert float(dropped_token_fraction(1.2, 1.0)) == pytest.approx(1 - 1 / 1.2)
    with pytest.raises(InputError, match="mixture-of-experts"):
        _run(moe_capacity_factor=1.0)
    with pytest.raises(InputError, match="--moe-capacity-factor"):
        _run(**kw, moe_pad_to_capacity=True)


def test_one_verdict_never_a_speed_for_a_plan_that_cannot_run() -> None:
    big = ModelArch(
        id="big", n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, d_ff=28672,
        vocab_size=128256,
    )  # fmt: skip
    r = estimate_training(
        big, ACC, SYS, 8, seq_len=4096, global_batch=64, tokens=1e9,
        plan={"tp": 1, "dp": 8, "zero": 0, "micro_batch": 1},
    )  # fmt: skip
    v = r.values
    assert (v["fits"], v["feasible"]) == (False, False)
    assert "GB over the 80 GB available" in v["infeasible_reason"]
    assert all(v[k] is None for k in THROUGHPUT_KEYS)
    assert v["gpu_hours"] is None
    assert r.time_terms_s == {}
    assert r.to_estimate().dominant.startswith("memory_")
    # the validation prices runs that happened: their speed, with the verdict beside it
    kept = estimate_training(
        big, ACC, SYS, 8, seq_len=4096, global_batch=64, speed_of_infeasible=True,
        plan={"tp": 1, "dp": 8, "zero": 0, "micro_batch": 1},
    ).values  # fmt: skip
    assert kept["feasible"] is False
    assert kept["tokens_per_s_per_gpu"] > 0
    ok = _run(seq=4096)
    assert ok["feasible"] is True
    assert ok["infeasible_reason"] is None

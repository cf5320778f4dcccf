"""The split training model: terms that add up to the step time, one default-batch rule."""

from __future__ import annotations

import numpy as np
import pytest

from aitco.catalog.schema import Accelerator, ModelArch, System
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
SYS = System(
    id="test-node",
    accelerator="test-gpu",
    devices_per_node=8,
    intra_node_fabric="nvswitch",
    intra_node_bandwidth_gb_s=450.0,
    scale_up_domain=8,
    scale_out_bandwidth_gb_s=50.0,
)
M = ModelArch(
    id="tiny", n_layers=8, d_model=1024, n_heads=16, n_kv_heads=4, d_ff=4096, vocab_size=32000
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

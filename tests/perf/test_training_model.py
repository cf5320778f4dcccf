"""The split training model: GEMM shape physics, terms that add up, one default-batch rule."""

from __future__ import annotations

import numpy as np
import pytest

from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.perf.flops import model_shape
from aitco.perf.training import TIME_TERMS, default_global_batch, estimate_training
from aitco.perf.training_model import (
    evaluate_plans,
    gemm_k_efficiency,
    gemm_wave_utilization,
    hardware_shape,
    layer_gemm_time_factors,
)

ACC = Accelerator(
    id="test-gpu",
    vendor="test",
    family="nvidia-hopper",
    peak_tflops={"bf16": 1000.0, "fp16": 1000.0},
    memory_gb=80.0,
    hbm_bandwidth_gb_s=3000.0,
    launch_year=2023,
    compute_units=132,
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


def test_wave_quantization_by_hand() -> None:
    # 132 tiles of 128x256 fill one wave of 132 SMs exactly
    assert float(gemm_wave_utilization(128 * 12, 256 * 11, 132)) == pytest.approx(1.0)
    # 133 tiles of 128x256 need a second, nearly empty wave (133/264); 128x128 tiles do better:
    # 266 tiles in 3 waves of 132
    one_more = float(gemm_wave_utilization(128 * 7, 256 * 19, 132))
    assert one_more == pytest.approx(266 / 396)
    # an edge tile half full: tile quantization alone (unknown SM count)
    assert float(gemm_wave_utilization(192, 128, 0)) == pytest.approx(192 / 256)
    assert float(gemm_k_efficiency(512, 512.0)) == pytest.approx(0.5)
    assert float(gemm_k_efficiency(512, 0.0)) == 1.0


def test_tp_shrinks_gemms_and_lowers_their_efficiency() -> None:
    ms = model_shape(M)
    f1 = layer_gemm_time_factors(ms, 4096, 1, 132, 173.0)
    f8 = layer_gemm_time_factors(ms, 4096, 8, 132, 173.0)
    for a, b in zip(f1, f8, strict=True):
        assert float(b) > float(a) >= 1.0  # 1/e: more time per FLOP with narrower GEMMs


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

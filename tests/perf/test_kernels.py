"""Kernel shape laws (aitco.perf.kernels): hand-computed values and limits."""

from __future__ import annotations

import numpy as np
import pytest

from aitco.perf.kernels import (
    attention_seq_efficiency,
    flash_kernel_for,
    gemm_k_efficiency,
    gemm_shape_efficiency,
    gemm_time_s,
    gemm_wave_utilization,
)


def test_wave_quantization_by_hand() -> None:
    # 8192 x 8192 in 128 x 256 tiles: 64 x 32 = 2048 tiles on 132 SMs -> 16 waves of 132 slots
    assert float(gemm_wave_utilization(8192, 8192, 132)) == pytest.approx(2048 / (16 * 132))
    # a 128 x 256 output on 132 SMs: best split into two 128 x 128 tiles, 2 of 132 slots busy
    assert float(gemm_wave_utilization(128, 256, 132)) == pytest.approx(2 / 132)
    # a batch multiplies the tiles: 132 tiles fill one wave exactly
    assert float(gemm_wave_utilization(128, 256, 132, batch=132)) == pytest.approx(1.0)
    # partial edge tiles (tile quantization) with unknown SM count
    assert float(gemm_wave_utilization(100, 256, 0)) == pytest.approx(100 / 128)


def test_short_k_law_and_limits() -> None:
    assert float(gemm_k_efficiency(142.0, 142.0)) == pytest.approx(0.5)
    assert float(gemm_k_efficiency(1e9, 142.0)) == pytest.approx(1.0, abs=1e-6)
    e = gemm_shape_efficiency(np.array([1024, 8192]), 4096, np.array([512, 8192]), 132, 142.0)
    assert e[0] < e[1] <= 1.0


def test_gemm_time_is_latency_plus_flops_at_the_shaped_rate() -> None:
    rate = 800e12
    t = float(gemm_time_s(8192, 8192, 8192, rate, 132, 142.0, 5e-6))
    e = float(gemm_shape_efficiency(8192, 8192, 8192, 132, 142.0))
    assert t == pytest.approx(5e-6 + 2 * 8192**3 / (rate * e))


def test_attention_law_by_hand_and_limits() -> None:
    # causal, 4096 tokens: 2048 keys per query on average, diagonal blocks of 128 computed whole
    want = 2048 / (2048 + 150) * 4096 / (4096 + 128)
    assert float(attention_seq_efficiency(4096, True, 150.0)) == pytest.approx(want)
    assert float(attention_seq_efficiency(4096, False, 150.0)) == pytest.approx(4096 / 4246)
    seqs = np.array([512, 2048, 8192, 131072])
    e = attention_seq_efficiency(seqs, True, 236.8)
    assert np.all(np.diff(e) > 0)
    assert e[-1] < 1.0
    assert e[-1] > 0.99
    assert np.all(
        attention_seq_efficiency(seqs, True, 236.8) < attention_seq_efficiency(seqs, False, 236.8)
    )


def test_kernel_generation_by_family() -> None:
    assert flash_kernel_for("nvidia-hopper") == "fa2"  # SDPA's default; FA3 is opt-in
    assert flash_kernel_for("nvidia-blackwell") == "cudnn"
    assert flash_kernel_for("nvidia-ampere") == "fa2"
    assert flash_kernel_for("amd-cdna3") == "fa2"

"""Compute clocks under a power limit (``aitco.perf.power``) and the power a limited part draws."""

from __future__ import annotations

import pytest

from aitco.catalog.schema import Accelerator
from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.perf.power import compute_clock_ratio, power_limited_clock_ratio
from aitco.perf.serving import energy_per_token
from aitco.perf.training_model import hardware_shape

GPU = Accelerator(
    id="gpu-x", vendor="test", family="nvidia-hopper", memory_gb=80, hbm_bandwidth_gb_s=3000,
    peak_tflops={"bf16": 1000.0, "fp8": 2000.0}, launch_year=2023, tdp_w=700,
)  # fmt: skip
CAPPED = GPU.model_copy(update={"id": "gpu-capped", "power_limit_w": 500.0})


def test_cube_law_and_no_limit() -> None:
    """P ~ f^3 in the DVFS range: a 500 W limit on a 700 W part leaves (5/7)^(1/3) = 0.894."""
    assert power_limited_clock_ratio(500.0, 700.0) == pytest.approx((5 / 7) ** (1 / 3))
    assert power_limited_clock_ratio(500.0, 700.0) == pytest.approx(0.8939, abs=1e-4)
    assert power_limited_clock_ratio(None, 700.0) == 1.0
    assert power_limited_clock_ratio(800.0, 700.0) == 1.0  # a limit above the TDP changes nothing
    assert power_limited_clock_ratio(500.0, None) == 1.0
    assert compute_clock_ratio(GPU) == 1.0


def test_limited_part_computes_slower_but_mfu_keeps_the_nominal_peak() -> None:
    r = (5 / 7) ** (1 / 3)
    free = hardware_shape(GPU, "bf16", DEFAULT_EFFICIENCY)
    capped = hardware_shape(CAPPED, "bf16", DEFAULT_EFFICIENCY)
    assert capped.peak_linear_tflops == pytest.approx(free.peak_linear_tflops * r)
    assert capped.peak_attention_tflops == pytest.approx(free.peak_attention_tflops * r)
    assert capped.peak_mfu_tflops == free.peak_mfu_tflops == 1000.0
    assert capped.hbm_bandwidth_gb_s == free.hbm_bandwidth_gb_s


def test_limited_part_draws_at_most_its_limit() -> None:
    assert CAPPED.board_power_w == 500.0
    assert GPU.board_power_w == 700.0
    limit_only = GPU.model_copy(update={"tdp_w": None, "power_limit_w": 450.0})
    assert limit_only.board_power_w == 450.0
    e_free = energy_per_token(GPU, 8, 1000.0, utilization=1.0)
    e_cap = energy_per_token(CAPPED, 8, 1000.0, utilization=1.0)
    assert e_cap["power_w"] == pytest.approx(e_free["power_w"] * 500 / 700)


def test_catalog_torchtitan_h100_runs_at_its_500_w_limit() -> None:
    """The Grand Teton H100 (HBM2e) is a 700 W part run at 500 W: 884 dense BF16 TFLOP/s, between
    the 400 W H100 NVL (835) and the 700 W SXM5 (989), where torchtitan's file places it."""
    from aitco.catalog.loader import load_catalog

    acc = load_catalog().accelerators["h100-sxm5-94gb-hbm2e"]
    assert (acc.tdp_w, acc.power_limit_w, acc.board_power_w) == (700, 500, 500)
    hw = hardware_shape(acc, "bf16", DEFAULT_EFFICIENCY)
    assert 835.0 < hw.peak_linear_tflops < 989.4

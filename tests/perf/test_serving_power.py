"""Serving power follows load (issue 32 item 6): idle power every hour plus the busy share of the
difference to the board power; a nearly idle service draws close to its idle power, and the energy
per token falls as load rises."""

from __future__ import annotations

import math

import pytest

from aitco.catalog.loader import load_catalog
from aitco.catalog.schema import Accelerator
from aitco.perf.inference import estimate_inference
from aitco.perf.iteration import IDLE_POWER_FRACTION_DEFAULT
from aitco.perf.serving import busy_time_share, energy_per_token, idle_power_w

GPU = Accelerator(
    id="gpu-x", vendor="test", family="nvidia-hopper", memory_gb=80, hbm_bandwidth_gb_s=3000,
    peak_tflops={"bf16": 1000.0}, launch_year=2023, tdp_w=700,
)  # fmt: skip


def test_power_is_idle_plus_busy_share_of_the_rest() -> None:
    e = energy_per_token(GPU, 2, 100.0, utilization=0.5, time_share=0.4)
    idle = IDLE_POWER_FRACTION_DEFAULT * 700
    assert e["busy_fraction"] == pytest.approx(0.2)
    assert e["idle_power_w"] == pytest.approx(2 * idle)
    assert e["busy_power_w"] == pytest.approx(2 * 0.2 * (700 - idle))
    assert e["power_w"] == pytest.approx(e["idle_power_w"] + e["busy_power_w"])
    measured = GPU.model_copy(update={"idle_w": 90.0})
    assert idle_power_w(measured) == 90.0  # a published idle draw wins over the TDP fraction
    assert energy_per_token(measured, 1, 1.0, utilization=0.0)["power_w"] == pytest.approx(90.0)


def test_busy_time_share_is_one_minus_exp_of_requests_in_flight() -> None:
    assert float(busy_time_share(0.0)) == 0.0
    assert float(busy_time_share(1.0)) == pytest.approx(1 - math.exp(-1))
    assert float(busy_time_share(math.inf)) == 1.0
    assert float(busy_time_share(math.nan)) == 1.0  # a saturated queue: always busy


def test_idle_fraction_default_is_the_catalog_factor() -> None:
    """perf cannot read the catalog: its default is kept equal to the factor here."""
    cat = load_catalog(use_env=False)
    assert cat.factor_value("idle-power.fraction-of-tdp") == IDLE_POWER_FRACTION_DEFAULT


@pytest.fixture(scope="module")
def h100_loads():
    cat = load_catalog(use_env=False)
    acc, sysm = cat.hardware("h100-sxm5-80gb")
    model = cat.resolve_model("llama-3-8b")
    out = {}
    for qps in (0.02, 0.5, 5.0, 20.0):
        r = estimate_inference(model, acc, sysm, 1, qps=qps, num_requests=1000)
        out[qps] = r.values
    return acc, out


def test_nearly_idle_service_draws_close_to_idle(h100_loads) -> None:
    acc, v = h100_loads
    idle = idle_power_w(acc)
    assert 70.0 <= idle <= 120.0  # H100 idles at 70-120 W
    low = v[0.02]
    assert low["idle_power_w"] == pytest.approx(idle)
    assert low["power_w"] < 1.2 * idle  # was 401 W: the iteration draw every hour
    assert low["busy_fraction"] < 0.05


def test_power_rises_and_energy_per_token_falls_with_load(h100_loads) -> None:
    _, v = h100_loads
    loads = sorted(v)
    power = [v[q]["power_w"] for q in loads]
    joules = [v[q]["energy_per_token_j"] for q in loads]
    assert power == sorted(power)
    assert joules == sorted(joules, reverse=True)
    assert power[-1] <= 700.0

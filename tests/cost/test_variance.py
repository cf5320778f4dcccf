"""Variance arithmetic: price + usage = the difference, and a ledger that adds up exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitco.cost import variance as var

money = st.floats(min_value=-1e7, max_value=1e7, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-3, max_value=1e7, allow_nan=False, allow_infinity=False)


@given(q_p=positive, p_p=positive, q_b=positive, p_b=positive)
def test_price_plus_usage_is_the_difference(q_p, p_p, q_b, p_b):
    c_b = q_b * p_b
    pv = float(var.price_variance_usd(c_b, q_b, p_p))
    uv = float(var.usage_variance_usd(q_b, q_p, p_p))
    assert pv + uv == pytest.approx(c_b - q_p * p_p, rel=1e-9, abs=1e-6 * (c_b + q_p * p_p))
    assert pv == pytest.approx((p_b - p_p) * q_b, rel=1e-9, abs=1e-6 * c_b)


@given(predicted=money, billed=money, vs=st.lists(money, max_size=15))
def test_the_ledger_adds_up_exactly_in_any_order(predicted, billed, vs):
    p, gv, b, u = var.exact_ledger(predicted, vs, billed)
    parts = [p, *gv, u]
    assert sum(parts) == b
    assert math.fsum(parts) == b
    assert sum(reversed(parts)) == b
    # each amount moves by less than one part in 2**52 of the largest partial sum
    scale = abs(predicted) + abs(billed) + sum(abs(v) for v in vs) + 1e-300
    for got, given_ in [(p, predicted), (b, billed), *zip(gv, vs, strict=True)]:
        assert abs(got - given_) <= 2.0**-51 * 2 * scale


def test_predicted_stays_exact_when_the_bill_is_on_its_grid():
    vs = [-406.18, 177.62, 35.55]
    p, gv, b, u = var.exact_ledger(1989.115150837768, vs, 1806.5920104544794)
    assert p == 1989.115150837768  # compare's total, to the last bit
    assert b == 1806.5920104544794
    assert gv == pytest.approx(vs, rel=1e-15)
    assert u == pytest.approx(1806.5920104544794 - 1989.115150837768 - sum(vs), abs=1e-9)


def test_close_identity_left_to_right():
    u = var.close_identity(0.1, [0.2, 0.3], 0.6)
    assert 0.1 + 0.2 + 0.3 + u == 0.6


def test_training_split_is_each_cause_in_gpu_hours():
    got = var.training_usage_split(
        gpus=8,
        predicted_productive_h=10.0,
        predicted_overhead_gpu_h=2.0,
        predicted_idle_gpu_h=1.0,
        productive_plan_h=11.0,
        extra_work_h=0.5,
        lost_h=0.5,
        idle_outside_h=0.25,
        excess_gpu_h=3.0,
    )
    assert {k: float(v) for k, v in got.items()} == {
        "slower_steps": 8.0,
        "restarts_lost_work": 2.0,
        "idle_waiting": 1.0,
        "more_instances_longer_period": 7.0,
    }
    assert tuple(got) == var.TRAINING_CAUSES


@pytest.mark.parametrize(
    ("idle", "busy", "stepped", "gaps", "want"),
    [
        (1.0, 10.1, 10.0, 0.4, 0.7),  # 0.1 h of the gaps was busy (lost work): 0.3 h idle in them
        (1.0, 9.0, 10.0, 0.4, 0.6),  # telemetry covers less than the steps: every gap idle
        (1.0, 12.0, 10.0, 0.4, 1.0),  # busy beyond the gaps: none of them idle
        (0.2, 10.0, 10.0, 0.4, 0.0),  # floored at 0
    ],
)
def test_idle_outside_the_job(idle, busy, stepped, gaps, want):
    assert var.idle_outside_job_h(idle, busy, stepped, gaps) == pytest.approx(want)


def test_excess_gpu_hours_per_charge_period():
    slots = {
        ("2026-11-02T10:00:00", "2026-11-02T11:00:00"): 16.0,
        ("2026-11-02T11:00:00", "2026-11-02T12:00:00"): 8.0,
        ("2026-11-03T00:00:00", "2026-11-04T00:00:00"): 8 * 24 + 4.0,  # a daily row
    }
    from aitco.calibrate.billing import period_hours

    assert var.excess_gpu_hours(slots, period_hours, 8) == pytest.approx(12.0)


def test_unit_price_of_zero_quantity_is_nan():
    assert np.isnan(var.unit_price(1.0, 0.0))
    assert float(var.unit_price(10.0, 4.0)) == 2.5

"""Properties of the cost models (hypothesis, "ci" profile)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aitco.catalog.loader import load_catalog
from aitco.cost import cloud, data, finance, people, power, reliability
from aitco.cost.tco import Breakdown
from aitco.decide import compare as cmp
from aitco.decide.scenario import Scenario
from aitco.limits import MIN_MAGNITUDE


def _typed(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Numbers a user can give (limits.py): 0, or a magnitude of at least MIN_MAGNITUDE."""
    return st.floats(lo, hi).filter(lambda x: x == 0 or abs(x) >= MIN_MAGNITUDE)


DATA = Path(__file__).parents[1] / "decide" / "data" / "tco_test_catalog.yaml"
price = st.floats(0.0, 1e3, allow_nan=False)
scale = st.floats(0.0, 100.0, allow_nan=False)
frac = st.floats(0.0, 0.99, allow_nan=False)


@given(q=st.floats(0, 1e6), p=price, k=scale)
def test_items_linear_in_price(q, p, k):
    pairs = [
        (lambda x: cloud.rental_usd(q, x)),
        (lambda x: power.electricity_usd(q, x)),
        (lambda x: data.storage_usd(q, 3.0, x)),
        (lambda x: data.per_unit_usd(q, x, "p")),
        (lambda x: data.retention_usd(q, 30.0, 90.0, x)),
        (lambda x: people.incident_usd(q, 2.0, x)),
        (lambda x: people.ops_staff_usd(q, 100.0, 2.0, x)),
    ]
    for f in pairs:
        assert float(f(k * p)) == pytest.approx(k * float(f(p)), rel=1e-9, abs=1e-9)


@given(
    p=st.floats(0, 1e4), tau=st.floats(0.01, 100), d=st.floats(0, 1), r=st.floats(0, 5), phi=frac
)
def test_zero_failure_rate_gives_zero_rework(p, tau, d, r, phi):
    o = reliability.goodput_overheads(p, 0.0, tau, d, r, phi)
    assert float(o["rework_h"]) == 0.0
    assert float(o["restart_h"]) == 0.0
    assert float(o["interruptions"]) == 0.0


@given(it=st.floats(0, 1e7), loss=frac, pue=st.floats(1.0, 3.0), dp=st.floats(0, 1.0))
def test_raising_pue_never_lowers_power(it, loss, pue, dp):
    assert float(power.facility_power_w(it, loss, pue + dp)) >= float(
        power.facility_power_w(it, loss, pue)
    )


@given(c=st.floats(0, 1e7), v=st.floats(0, 1), r=st.floats(0, 0.3), n=st.floats(0.5, 10))
def test_residual_value_never_raises_cost(c, v, r, n):
    with_rv = float(finance.equivalent_annual_cost_usd(c, v, r, n))
    without = float(finance.equivalent_annual_cost_usd(c, 0.0, r, n))
    assert with_rv <= without * (1 + 1e-12) + 1e-9


@given(
    c=st.floats(1, 1e6),
    b=st.floats(0, 1),
    v=st.floats(0, 1),
    r=st.floats(0, 0.3),
    n=st.floats(0.5, 10),
)
def test_ownership_split_adds_up(c, b, v, r, n):
    s = finance.ownership_split_usd(c, b, v, r, n)
    parts = s["depreciation_usd"] + s["tech_iteration_risk_usd"] + s["financing_usd"]
    assert float(parts) == pytest.approx(float(s["total_usd"]), rel=1e-9, abs=1e-6)


@given(
    st.lists(
        st.tuples(st.floats(-1e6, 1e6), st.sampled_from(["compute", "power", "people"])),
        max_size=30,
    )
)
def test_items_always_sum_to_total(items):
    b = Breakdown(name="x")
    for i, (usd, cat) in enumerate(items):
        b.add(f"i{i}", usd, cat)
    b.finalize()
    assert b.total_usd == pytest.approx(math.fsum(u for u, _ in items), abs=1e-6)


@given(r=st.floats(0.0, 0.5))
def test_annuity_limit(r):
    assert float(finance.annuity_factor(r, 1.0)) == pytest.approx(1.0 + r)


# ----------------------------------------------------------------- through compare()
@pytest.fixture(scope="module")
def cat():
    return load_catalog([DATA], use_env=False)


def _fake(model, acc, system, gpus, **kw):
    return SimpleNamespace(
        values={"wall_clock_h": 12.0, "tokens_per_s": 1e5, "fits": True, "mfu": 0.4}
    )


def _owned(cat, **assumptions):
    scn = Scenario.from_dict(
        {
            "name": "p",
            "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 1e9},
            "options": [{"hardware": "a100-sxm4-80gb", "gpus": 16, "pricing": "owned"}],
            "assumptions": assumptions,
        }
    )
    return cmp.compare(scn, cat).options[0]


@settings(max_examples=15)
@given(pue=st.floats(1.0, 2.0), dp=st.floats(0.0, 1.0))
def test_compare_raising_pue_never_lowers_cost(cat, pue, dp):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cmp, "_engine", lambda kind: _fake)
        lo = _owned(cat, **{"pue.air": pue, "pue.liquid": pue}).total_usd
        hi = _owned(cat, **{"pue.air": pue + dp, "pue.liquid": pue + dp}).total_usd
    assert hi >= lo - 1e-9


@settings(max_examples=15)
@given(p=_typed(0.0, 50.0))
def test_compare_rental_total_is_affine_in_price(cat, p):
    def total(x):
        scn = Scenario.from_dict(
            {
                "name": "p",
                "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 1e9},
                "options": [
                    {
                        "hardware": "h100-sxm5-80gb",
                        "gpus": 8,
                        "pricing": "on_demand",
                        "usd_per_gpu_hour": x,
                    }
                ],
            }
        )
        return cmp.compare(scn, cat).options[0].total_usd

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cmp, "_engine", lambda kind: _fake)
        t0, t1, t2 = total(0.0), total(p), total(2 * p)
    assert t2 - t1 == pytest.approx(t1 - t0, rel=1e-9, abs=1e-9)


@settings(max_examples=10)
@given(lam=_typed(0, 1e-3))
def test_compare_zero_failures_zero_rework(cat, lam):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cmp, "_engine", lambda kind: _fake)
        b = _owned(cat, **{"failure.interruptions-per-gpu-hour": lam})
    if lam == 0:
        assert b.usd("failure_rework") == 0
        assert b.usd("network_rework") == 0
        assert b.usd("restart_requeue") == 0
    else:
        assert b.usd("restart_requeue") > 0
    assert np.isclose(sum(i.usd for i in b.items), b.total_usd)


@settings(max_examples=10)
@given(p=_typed(0.0, 1.0))
def test_compare_owned_total_is_affine_in_electricity_price(cat, p):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cmp, "_engine", lambda kind: _fake)
        t0, t1, t2 = (
            _owned(cat, **{"electricity.usd-per-kwh.us": x}).total_usd for x in (0.0, p, 2 * p)
        )
    assert t2 - t1 == pytest.approx(t1 - t0, rel=1e-9, abs=1e-9)
    assert t1 >= t0

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest

from aitco.cli.app import main
from aitco.decide import roi
from aitco.errors import InputError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


# ---------------------------------------------------------------- the two worked examples (exact)
def test_roi_worked_example_cli(capsys):
    code, out, _ = run(
        ["roi", "--monthly-savings-usd", "128000", "--monthly-cost-usd", "42000", "--json"], capsys
    )
    assert code == 0
    d = json.loads(out)
    assert d["roi"] == pytest.approx(86000 / 42000, rel=1e-15)
    assert str(d["roi"]).startswith("2.0476")


def test_breakeven_worked_example_cli(capsys):
    args = [
        "breakeven",
        "--fixed-cost-usd",
        "1280000",
        "--price-per-call-usd",
        "0.85",
        "--gross-margin",
        "0.62",
        "--json",
    ]
    code, out, _ = run(args, capsys)
    assert code == 0
    d = json.loads(out)
    assert d["calls_per_month"] == pytest.approx(1_280_000 / (0.85 * 0.62), rel=1e-15)
    assert str(d["calls_per_month"]).startswith("2428842")
    assert d["calls_per_day"] == pytest.approx(d["calls_per_month"] / (365.25 / 12), rel=1e-15)


def test_bad_flat_inputs_exit_2(capsys):
    code, _, err = run(["roi", "--monthly-savings-usd", "1", "--monthly-cost-usd", "0"], capsys)
    assert code == 2
    assert "monthly_cost_usd" in err
    code, _, err = run(
        [
            "breakeven",
            "--fixed-cost-usd",
            "1",
            "--price-per-call-usd",
            "1",
            "--gross-margin",
            "1.5",
        ],
        capsys,
    )
    assert code == 2
    assert "gross_margin" in err
    code, _, err = run(["breakeven", "--fixed-cost-usd", "1"], capsys)
    assert code == 2
    assert "--price-per-call-usd" in err


# ---------------------------------------------------------------- finance helpers
def test_npv_matches_hand_computation():
    flows = [-1000.0, 300.0, 400.0, 500.0]
    r = 0.05
    expect = -1000 + 300 / 1.05 + 400 / 1.05**2 + 500 / 1.05**3
    assert roi.npv(flows, r) == pytest.approx(expect, rel=1e-12)


def test_irr_zeroes_npv_and_matches_numpy_financial():
    flows = [-450000.0] + [40000.0] * 36
    r = roi.irr(flows)
    assert r is not None
    assert roi.npv(flows, r) == pytest.approx(0.0, abs=1e-6)
    npf = pytest.importorskip("numpy_financial")
    assert r == pytest.approx(float(npf.irr(flows)), rel=1e-8)


def test_irr_none_without_sign_change():
    assert roi.irr([100.0, 100.0]) is None
    assert roi.irr([-100.0, -1.0]) is None


def test_monthly_rate_compounds_to_annual():
    rm = roi.monthly_rate(0.1)
    assert (1 + rm) ** 12 == pytest.approx(1.1, rel=1e-12)


def test_payback_interpolates():
    # 100 up front, 40 a month: cumulative -60, -20, +20 -> payback at 2.5 months
    assert roi.payback_months(100.0, [40.0, 40.0, 40.0]) == pytest.approx(2.5)
    assert roi.payback_months(100.0, [10.0, 10.0]) is None
    assert roi.payback_months(0.0, [5.0]) == 0.0


# ---------------------------------------------------------------- time series
def _inputs(**kw):
    base = dict(
        horizon_months=24,
        monthly_savings_usd=100_000.0,
        monthly_cost_usd=20_000.0,
        variable_cost_usd=10_000.0,
        traffic_growth_per_month=0.02,
        labour={"sre": {"fte": 1.0, "usd_per_hour": 100.0}},
        upfront_usd=300_000.0,
        iteration_cost_usd=50_000.0,
        iteration_months=6,
        discount_rate=0.12,
    )
    base.update(kw)
    return roi.RoiInputs.from_dict(base)


def test_series_formulas_row_by_row():
    inp = _inputs()
    res = roi.roi_series(inp)
    labour = 1.0 * 2080 / 12 * 100.0
    for row in res["months"]:
        t = row["month"]
        g = 1.02 ** (t - 1)
        it = 50_000.0 if (t - 1) % 6 == 0 else 0.0
        spend = 20_000 + 10_000 * g + labour + it
        assert row["traffic_factor"] == pytest.approx(g)
        assert row["spend_usd"] == pytest.approx(spend)
        assert row["roi"] == pytest.approx((100_000 * g - spend) / spend)
    months = res["months"]
    assert sum(1 for m in months if m["iteration_usd"] > 0) == 4  # months 1, 7, 13, 19
    flows = [-300_000.0] + [m["net_usd"] for m in months]
    assert res["npv_usd"] == pytest.approx(roi.npv(flows, roi.monthly_rate(0.12)))
    assert res["irr_annual"] == pytest.approx((1 + res["irr_monthly"]) ** 12 - 1)
    assert months[-1]["cumulative_usd"] == pytest.approx(sum(flows))


def test_decay_lowers_npv_and_delays_payback():
    up = roi.roi_series(_inputs(traffic_growth_per_month=0.02))
    down = roi.roi_series(_inputs(traffic_growth_per_month=-0.05))
    assert down["npv_usd"] < up["npv_usd"]
    assert down["payback_months"] is None or down["payback_months"] >= up["payback_months"]


def test_tornado_sorted_and_savings_dominates():
    bars = roi.tornado(_inputs())
    ranges = [b["range"] for b in bars]
    assert ranges == sorted(ranges, reverse=True)
    assert bars[0]["input"] == "monthly_savings_usd"
    up = next(b for b in bars if b["input"] == "monthly_cost_usd")
    assert up["metric_high"] < up["metric_low"]  # more cost, less NPV


def test_roi_file_cli_and_bad_field(tmp_path, capsys):
    code, out, _ = run(["roi", "examples/roi_support_bot.yaml", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert len(d["months"]) == 36
    assert d["tornado"]
    assert math.isfinite(d["npv_usd"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("roi:\n  monthly_savings_usd: 1\n  horizon_monthz: 3\n")
    code, _, err = run(["roi", str(bad)], capsys)
    assert code == 2
    assert "horizon_monthz" in err


def test_breakeven_file_cli(capsys):
    code, out, _ = run(["breakeven", "examples/roi_support_bot.yaml", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    m0 = d["months"][0]
    assert m0["calls_per_month"] == pytest.approx(m0["spend_usd"] / (0.85 * 0.62))


def test_vectorised_flat_forms():
    s = np.array([1.0, 2.0, 3.0])
    assert np.allclose(roi.monthly_roi(s, 1.0), s - 1)
    with pytest.raises(InputError):
        roi.breakeven_calls_per_month(1.0, 0.0, 0.5)


def test_costs_priced_from_scenarios(catalog):
    from aitco.decide.compare import compare
    from aitco.decide.scenario import Scenario

    inp = roi.RoiInputs.from_yaml("examples/roi_chat_service_tco.yaml")
    out, used = roi.with_scenario_costs(inp, catalog, file="examples/roi_chat_service_tco.yaml")
    scn = Scenario.from_yaml("examples/inference-llama3-8b-chat.yaml")
    best = min(b.total_usd for b in compare(scn, catalog).options)
    assert out.variable_cost_usd == pytest.approx(best / scn.workload.months)
    assert used["serving_scenario"]["variable_cost_usd"] == pytest.approx(out.variable_cost_usd)
    assert out.iteration_cost_usd > 0
    bad = inp.model_copy(update={"serving_scenario": "finetune-lora-llama3-70b.yaml"})
    with pytest.raises(InputError, match="inference"):
        roi.with_scenario_costs(bad, catalog, file="examples/roi_chat_service_tco.yaml")


# ---------------------------------------------------------------- IRR with several roots (issue 12)
DECAYING = EXAMPLES / "roi_decaying_traffic.yaml"


def test_decaying_traffic_irr_is_found_and_matches_numpy_financial():
    npf = pytest.importorskip("numpy_financial")
    inp = roi.RoiInputs.from_yaml(str(DECAYING))
    res = roi.roi_series(inp)
    flows = [-inp.upfront_usd] + [m["net_usd"] for m in res["months"]]
    assert flows[-1] < 0, "late months must lose money in this example"
    assert flows[1] > 0
    r = res["irr_monthly"]
    assert r is not None
    assert res["irr_null_reason"] is None
    assert r == pytest.approx(0.4639, abs=5e-4)
    # numpy-financial's NPV is zero there
    assert abs(float(npf.npv(r, flows))) <= 1e-9 * inp.upfront_usd
    # every root numpy-financial's polynomial method finds is one of ours, and ours are all roots
    poly = np.roots(np.asarray(flows)[::-1])
    real = poly[(np.abs(poly.imag) < 1e-9) & (poly.real > 0)].real
    theirs = np.sort(1.0 / real - 1.0)
    theirs = theirs[theirs > -0.99]
    assert np.allclose(theirs, res["irr_roots_monthly"], rtol=1e-9, atol=1e-12)
    assert len(res["irr_roots_monthly"]) == 2
    # numpy-financial's own irr returns one of the roots; its current default selection
    # (smallest non-negative root) is ours
    theirs_irr = float(npf.irr(flows))
    assert min(abs(theirs_irr - x) for x in res["irr_roots_monthly"]) <= 1e-9
    if "selection_logic" in inspect.signature(npf.irr).parameters:
        assert r == pytest.approx(theirs_irr, rel=1e-9)
    assert res["irr_annual"] == pytest.approx((1 + r) ** 12 - 1, rel=1e-12)


def test_irr_null_carries_a_reason():
    res = roi.irr_result([100.0, 50.0])
    assert res.irr is None
    assert "never change sign" in (res.reason or "")
    res = roi.irr_result([-100.0])
    assert res.irr is None
    assert res.reason
    # a loss that never pays back at any rate: NPV < 0 everywhere
    res = roi.irr_result([-100.0, 50.0, -60.0])
    assert res.irr is None
    assert res.roots == ()
    assert "never zero" in (res.reason or "")


def test_irr_single_root_equals_numpy_financial():
    npf = pytest.importorskip("numpy_financial")
    for flows in ([-100.0, 39.0, 59.0, 55.0, 20.0], [-100.0, 0.0, 0.0, 74.0], [-5e5] + [4e4] * 36):
        assert roi.irr(flows) == pytest.approx(float(npf.irr(flows)), rel=1e-9)


def test_roi_ratios_have_distinct_names_and_one_definition():
    inp = roi.RoiInputs.from_yaml(str(EXAMPLES / "roi_support_bot.yaml"))
    res = roi.roi_series(inp)
    spend = res["total_spend_usd"]
    assert res["roi_horizon"] == pytest.approx((res["total_savings_usd"] - spend) / spend)
    monthly = [m["roi"] for m in res["months"]]
    assert res["roi_monthly_mean"] == pytest.approx(float(np.mean(monthly)))
    # deprecated aliases keep their values
    assert res["cumulative_roi"] == res["roi_horizon"]
    assert res["mean_monthly_roi"] == res["roi_monthly_mean"]
    keys = [k for k, _label, _unit, _v in roi.roi_summary(res)]
    assert len(set(keys)) == len(keys)
    assert "roi" not in keys


def test_cli_roi_of_decaying_traffic_gives_an_irr(capsys):
    code, out, _ = run(["roi", str(DECAYING), "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["irr_monthly"] == pytest.approx(0.4639, abs=5e-4)
    assert d["irr_null_reason"] is None
    assert len(d["irr_roots_monthly"]) == 2
    code, out, _ = run(["roi", str(DECAYING)], capsys)
    assert "46.39 %" in out
    assert "change sign more than once" in out


def test_workbook_screenshot_is_committed_and_small():
    png = EXAMPLES.parent / "docs" / "screenshots" / "workbook-summary.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size < 300_000


# ---------------------------------------------------------------- finance that warns (issue 32)
def test_payback_is_not_reported_when_the_cash_turns_negative_again():
    from aitco.cost import finance

    kept = finance.payback_result(100.0, [40.0, 40.0, 40.0], npv_usd=10.0)
    assert kept.months == pytest.approx(2.5)
    assert kept.reason is None
    again = finance.payback_result(100.0, [80.0, 40.0, -50.0, -10.0])
    assert again.months is None
    assert again.breaks_even_month == pytest.approx(1.5)
    assert again.loses_again_month == 3
    assert "loses money again in month 3" in again.reason
    # recovered and stays recovered, but worth less than nothing at the discount rate
    neg = finance.payback_result(100.0, [60.0, 41.0], npv_usd=-0.5)
    assert neg.months is None
    assert neg.breaks_even_month == pytest.approx(2 - 1 / 41)
    assert "NPV" in neg.reason
    never = finance.payback_result(100.0, [10.0, 10.0])
    assert (never.months, never.breaks_even_month, never.reason) == (
        None,
        None,
        "not within horizon",
    )


LOSING = roi.RoiInputs(
    horizon_months=36,
    monthly_savings_usd=128000,
    monthly_cost_usd=40000,
    variable_cost_usd=9000,
    traffic_growth_per_month=-0.08,
    upfront_usd=180000,
    discount_rate=0.10,
)


def test_losing_project_has_no_payback_and_warns():
    """Decaying traffic: NPV and net < 0 although month 1 pays well; no 'payback 2.5 months'."""
    r = roi.roi_series(LOSING)
    assert r["npv_usd"] < 0
    assert r["net_usd"] < 0
    assert r["loses_money"]
    assert r["payback_months"] is None
    assert 2 < r["breaks_even_month"] < 3
    assert r["loses_again_month"] == 30
    assert "loses money again in month 30" in r["payback_null_reason"]
    assert r["warnings"][0].startswith("the project loses money: NPV -$")
    assert any("IRR" in w and "not a return" in w for w in r["warnings"])
    # `roi` has one meaning: the ROI of one month (here month 1), as in the flat form and rows
    assert r["roi"] == pytest.approx(r["months"][0]["roi"])
    assert r["roi"] == pytest.approx(float(roi.monthly_roi(128000, 49000)))
    # a profitable project carries no warning and keeps its payback
    ok = roi.roi_series(LOSING.model_copy(update={"monthly_cost_usd": 18000}))
    assert ok["warnings"] == []
    assert not ok["loses_money"]
    assert ok["payback_months"] == pytest.approx(ok["breaks_even_month"])


def test_cli_says_the_project_loses_money(tmp_path, capsys):
    path = tmp_path / "loss.yaml"
    path.write_text(
        "roi:\n  horizon_months: 36\n  monthly_savings_usd: 128000\n  monthly_cost_usd: 40000\n"
        "  variable_cost_usd: 9000\n  traffic_growth_per_month: -0.08\n"
        "  savings_scale_with_traffic: true\n  upfront_usd: 180000\n  discount_rate: 0.10\n"
    )
    code, out, _ = run(["roi", str(path)], capsys)
    assert code == 0
    assert "WARNING: the project loses money" in out
    assert out.index("WARNING") < out.index("Monthly ROI")  # said first
    assert "payback 2." not in out
    code, out, _ = run(["roi", str(path), "--json"], capsys)
    d = json.loads(out)
    assert d["payback_months"] is None
    assert d["loses_money"] is True
    assert d["roi"] == pytest.approx(d["months"][0]["roi"])

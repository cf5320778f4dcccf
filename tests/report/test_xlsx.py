"""The ROI workbook's live formulas, recalculated by a formula engine, against aitco's functions."""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import Any

import pytest

from aitco.errors import InputError
from aitco.report import xlsx

roi = pytest.importorskip("aitco.decide.roi")
formulas = pytest.importorskip("formulas")


def recalc(path: Path) -> dict[str, dict[str, Any]]:
    """Evaluate every formula of the workbook; ``{SHEET: {CELL: value}}`` (upper case)."""
    model = formulas.ExcelModel().loads(str(path)).finish()
    sol = model.calculate()
    out: dict[str, dict[str, Any]] = {}
    for key, ranges in sol.items():
        k = key.upper()
        if "!" not in k or ":" in k.split("!")[1]:
            continue
        sheet = k.split("]")[1].split("'")[0]
        v = ranges.value[0][0]
        out.setdefault(sheet, {})[k.split("!")[1]] = v.item() if hasattr(v, "item") else v
    return out


def summary(cells: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Summary values by key (row 4 onwards of the Summary sheet, column B)."""
    return {key: cells["SUMMARY"][f"B{4 + i}"] for i, key in enumerate(xlsx.SUMMARY_KEYS)}


@pytest.fixture
def fewer_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    # fewer monthly rows keep the recalculation quick; rows past the horizon are still written
    monkeypatch.setattr(xlsx, "DEFAULT_ROWS", 26)


def test_flat_forms_match_aitco(tmp_path: Path, fewer_rows: None) -> None:
    wi = xlsx.WorkbookInputs(
        horizon_months=12,
        monthly_savings_usd=128000,
        monthly_cost_usd=42000,
        price_per_call_usd=0.85,
        gross_margin=0.62,
    )
    p = xlsx.write_roi_workbook(tmp_path / "flat.xlsx", wi)
    s = summary(recalc(p))
    assert s["roi"] == pytest.approx(float(roi.monthly_roi(128000, 42000)), rel=1e-12)
    assert s["roi"] == pytest.approx(2.0476190, rel=1e-6)
    be = float(roi.breakeven_calls_per_month(42000, 0.85, 0.62))
    assert s["calls_per_month"] == pytest.approx(be, rel=1e-12)

    wi.monthly_cost_usd = 1_280_000
    p = xlsx.write_roi_workbook(tmp_path / "be.xlsx", wi)
    s = summary(recalc(p))
    assert s["calls_per_month"] == pytest.approx(1_280_000 / (0.85 * 0.62), rel=1e-12)
    assert s["calls_per_month"] == pytest.approx(2_428_842.5, abs=0.1)
    assert s["calls_per_day"] == pytest.approx(
        float(roi.calls_per_day(s["calls_per_month"])), rel=1e-12
    )


def test_series_matches_roi_series(tmp_path: Path, fewer_rows: None) -> None:
    inp = roi.RoiInputs(
        horizon_months=24,
        monthly_savings_usd=128000,
        monthly_cost_usd=30000,
        variable_cost_usd=12000,
        traffic_growth_per_month=-0.03,  # traffic decays 3 %/month
        labour={
            "sre": {"fte": 0.5, "usd_per_hour": 95},
            "ml-engineer": {"fte": 0.25, "usd_per_hour": 120},
        },
        upfront_usd=400000,
        iteration_cost_usd=50000,
        iteration_months=6,
        discount_rate=0.1,
        price_per_call_usd=0.85,
        gross_margin=0.62,
    )
    p = xlsx.write_roi_workbook(tmp_path / "roi.xlsx", xlsx.WorkbookInputs.from_roi_inputs(inp))
    cells = recalc(p)
    s = summary(cells)
    ref = roi.roi_series(inp)
    for key in (
        "cumulative_roi",
        "payback_months",
        "npv_usd",
        "irr_monthly",
        "irr_annual",
        "total_savings_usd",
        "total_spend_usd",
    ):
        assert s[key] == pytest.approx(ref[key], rel=1e-9), key
    col = {name: chr(ord("A") + i) for i, (name, _f) in enumerate(xlsx._MONTH_COLS)}
    monthly = cells["MONTHLY"]
    for row in ref["months"]:
        r = row["month"] + 1
        for name in (
            "traffic_factor",
            "savings_usd",
            "infra_usd",
            "labour_usd",
            "iteration_usd",
            "spend_usd",
            "net_usd",
            "cumulative_usd",
            "roi",
            "calls_per_month",
        ):
            assert monthly[f"{col[name]}{r}"] == pytest.approx(row[name], rel=1e-9), (name, r)
    # months past the horizon are blank
    assert monthly[f"A{24 + 2}"] == ""
    assert monthly[f"{col['spend_usd']}{26 + 1}"] == ""


def test_no_payback_within_horizon(tmp_path: Path, fewer_rows: None) -> None:
    inp = roi.RoiInputs(
        horizon_months=12, monthly_savings_usd=10000, monthly_cost_usd=9000, upfront_usd=1e6
    )
    ref = roi.roi_series(inp)
    assert ref["payback_months"] is None
    s = summary(
        recalc(
            xlsx.write_roi_workbook(tmp_path / "np.xlsx", xlsx.WorkbookInputs.from_roi_inputs(inp))
        )
    )
    assert s["payback_months"] == "not within horizon"
    assert s["npv_usd"] == pytest.approx(ref["npv_usd"], rel=1e-9)
    assert ref["irr_monthly"] is not None or s["irr_monthly"] == "none"
    if ref["irr_monthly"] is not None:
        assert s["irr_monthly"] == pytest.approx(ref["irr_monthly"], rel=1e-6)
    assert not math.isnan(s["cumulative_roi"])


def test_workbook_structure(tmp_path: Path) -> None:
    p = xlsx.write_roi_workbook(
        tmp_path / "w.xlsx", xlsx.WorkbookInputs(monthly_savings_usd=1, monthly_cost_usd=1)
    )
    with zipfile.ZipFile(p) as z:
        names = z.namelist()
    assert any(n.startswith("xl/charts/chart") for n in names), "the summary sheet has a chart"
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.load_workbook(p)
    assert wb.sheetnames == ["Inputs", "Monthly", "Summary"]
    assert str(wb["Summary"]["B4"].value).startswith("=")  # a live formula, not a value
    assert str(wb["Monthly"][f"A{xlsx.DEFAULT_ROWS + 1}"].value).startswith("=IF(")
    assert wb["Monthly"][f"A{xlsx.DEFAULT_ROWS + 2}"].value is None
    assert {"npv_usd", "payback_months", "horizon_months"} <= set(wb.defined_names)


def test_bad_inputs_raise_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="horizon_months"):
        xlsx.roi_workbook_bytes(xlsx.WorkbookInputs(horizon_months=0))
    with pytest.raises(InputError, match="gross_margin"):
        xlsx.roi_workbook_bytes(xlsx.WorkbookInputs(gross_margin=1.5))
    with pytest.raises(InputError, match="-o"):
        xlsx.write_roi_workbook(tmp_path / "roi.csv", xlsx.WorkbookInputs())
    assert not (tmp_path / "roi.csv").exists()

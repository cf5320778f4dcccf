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
    # constant traffic and no labour: every month has the flat roi_monthly, so does the mean
    assert s["roi_monthly_mean"] == pytest.approx(float(roi.monthly_roi(128000, 42000)), rel=1e-12)
    assert s["roi_monthly_mean"] == pytest.approx(2.0476190, rel=1e-6)
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
        "roi_horizon",
        "roi_monthly_mean",
        "payback_months",
        "npv_usd",
        "irr_monthly",
        "irr_annual",
        "total_savings_usd",
        "total_spend_usd",
        "net_usd",
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
    assert not math.isnan(s["roi_horizon"])


def test_workbook_structure(tmp_path: Path) -> None:
    p = xlsx.write_roi_workbook(
        tmp_path / "w.xlsx", xlsx.WorkbookInputs(monthly_savings_usd=1, monthly_cost_usd=1)
    )
    with zipfile.ZipFile(p) as z:
        names = z.namelist()
        charts = [z.read(n).decode() for n in names if n.startswith("xl/charts/chart")]
    # the cumulative net and the monthly ROI, each on one value axis crossed at zero by the
    # month axis (issue 35: a secondary axis put the ROI's zero line at 20 %)
    assert len(charts) == 2, "the summary sheet has two charts"
    for xml in charts:
        assert xml.count("<c:valAx>") == 1
        assert '<c:crossesAt val="0"/>' in xml
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


# ---------------------------------------------------------------- issue 12/14: one set of names
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def cached_summary(path: Path) -> dict[str, Any]:
    """Summary values as stored in the file (what a spreadsheet shows without recalculating)."""
    openpyxl = pytest.importorskip("openpyxl")
    ws = openpyxl.load_workbook(path, data_only=True)["Summary"]
    return {ws.cell(4 + i, 1).value: ws.cell(4 + i, 2).value for i in range(len(xlsx.SUMMARY_KEYS))}


def test_template_example_is_the_seed_roi_example() -> None:
    inp = roi.RoiInputs.from_yaml(str(EXAMPLES / "roi_support_bot.yaml"))
    from_file = xlsx.WorkbookInputs.from_roi_inputs(inp)
    ex = xlsx.example_inputs()
    for name in (
        "horizon_months",
        "monthly_savings_usd",
        "monthly_cost_usd",
        "variable_cost_usd",
        "traffic_growth_per_month",
        "savings_scale_with_traffic",
        "labour",
        "upfront_usd",
        "iteration_cost_usd",
        "iteration_months",
        "discount_rate",
        "price_per_call_usd",
        "gross_margin",
    ):
        assert getattr(ex, name) == getattr(from_file, name), name


def test_cached_values_are_the_computed_values_and_names_are_the_cli_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from aitco.cli.app import main

    out = tmp_path / "t.xlsx"
    with pytest.raises(SystemExit) as exc:
        main(["roi-template", "-o", str(out)])  # no --roi: the seed example's inputs
    assert exc.value.code == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["roi", str(EXAMPLES / "roi_support_bot.yaml"), "--json"])
    cli = json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit):
        main(["breakeven", str(EXAMPLES / "roi_support_bot.yaml"), "--json"])
    be = json.loads(capsys.readouterr().out)
    cached = cached_summary(out)
    assert list(cached) == list(xlsx.SUMMARY_KEYS)
    for key, _label, _unit in roi.ROI_SUMMARY:
        if cli[key] is None:  # e.g. loses_again_month of a project that stays in profit
            assert cached[key] == "none", key
            continue
        assert cached[key] == pytest.approx(cli[key], rel=1e-12), key
        assert cached[key] != 0
    for key in ("calls_per_month", "max_calls_per_month", "calls_per_day"):
        assert cached[key] == pytest.approx(be[key], rel=1e-12), key
    # the three ratios of the issue (611 %, 85.4 %, 43.2 %) now have names that tell them apart
    assert cached["roi_horizon"] == pytest.approx(0.4318, abs=1e-4)
    assert cached["roi_monthly_mean"] == pytest.approx(0.8541, abs=1e-4)


def test_every_formula_cell_has_a_cached_value(tmp_path: Path, fewer_rows: None) -> None:
    p = xlsx.write_roi_workbook(tmp_path / "w.xlsx", xlsx.example_inputs())
    cells = recalc(p)  # the formula engine's values
    openpyxl = pytest.importorskip("openpyxl")
    stored = openpyxl.load_workbook(p, data_only=True)
    formulas_wb = openpyxl.load_workbook(p)
    n = 0
    for ws in formulas_wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if not (isinstance(cell.value, str) and cell.value.startswith("=")):
                    continue
                n += 1
                mine = stored[ws.title][cell.coordinate].value
                theirs = cells[ws.title.upper()].get(cell.coordinate)
                if isinstance(theirs, int | float) and not isinstance(theirs, bool):
                    assert isinstance(mine, int | float), (ws.title, cell.coordinate, mine)
                    assert mine == pytest.approx(theirs, rel=1e-9, abs=1e-9), (
                        ws.title,
                        cell.coordinate,
                    )
                else:
                    assert mine in ("", None, theirs), (ws.title, cell.coordinate, mine, theirs)
    assert n > 300


def test_print_layout_one_landscape_page_for_the_summary(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    p = xlsx.write_roi_workbook(tmp_path / "w.xlsx", xlsx.example_inputs())
    wb = openpyxl.load_workbook(p)
    for name in ("Inputs", "Monthly", "Summary"):
        ws = wb[name]
        assert ws.page_setup.orientation == "landscape", name
        assert ws.sheet_properties.pageSetUpPr.fitToPage, name
        assert ws.print_area, name
    su = wb["Summary"]
    # 1 x 1 page (1 is the file format's default, so the writer may leave the attribute out)
    assert su.page_setup.fitToWidth in (None, 1)
    assert su.page_setup.fitToHeight in (None, 1)
    # the monthly print area stops at the horizon (no pages of blank rows)
    assert str(wb["Monthly"].print_area).endswith("$O$38")
    # money, percentages and months carry their formats
    assert "$" in su["B6"].number_format  # npv_usd
    assert "%" in su["B4"].number_format  # roi_horizon
    assert "months" in su["B9"].number_format  # payback_months


def test_cli_text_and_report_print_the_same_names_and_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from types import SimpleNamespace

    from aitco.cli.app import main
    from aitco.report import html, markdown, model

    path = EXAMPLES / "roi_support_bot.yaml"
    data = SimpleNamespace(roi=None, tornado=None)
    model.add_roi(data, roi.RoiInputs.from_yaml(str(path)))  # what `aitco report --roi` does
    rows = html.roi_rows(data.roi)
    with pytest.raises(SystemExit):
        main(["roi", str(path)])
    text = capsys.readouterr().out
    assert [k for k, _l, _t in rows] == [k for k, _l, _u in roi.ROI_SUMMARY]
    for key, _label, shown in rows:
        line = next(ln for ln in text.splitlines() if f" {key} " in ln)
        assert shown in line, (key, shown, line)
    assert "43.18 %" in text  # roi_horizon
    assert "85.41 %" in text  # roi_monthly_mean
    assert markdown.roi_rows is html.roi_rows


@pytest.mark.slow
def test_project_that_loses_money_has_no_payback_and_says_so(
    tmp_path: Path, fewer_rows: None
) -> None:
    """Decaying traffic: the cash breaks even, then turns negative again (issue 32)."""
    inp = roi.RoiInputs(
        horizon_months=24,
        monthly_savings_usd=128000,
        monthly_cost_usd=60000,
        variable_cost_usd=9000,
        traffic_growth_per_month=-0.08,
        upfront_usd=100000,
        discount_rate=0.1,
    )
    ref = roi.roi_series(inp)
    assert ref["payback_months"] is None
    assert ref["loses_money"]
    assert ref["loses_again_month"] is not None
    p = xlsx.write_roi_workbook(tmp_path / "loss.xlsx", xlsx.WorkbookInputs.from_roi_inputs(inp))
    cells = recalc(p)
    s = summary(cells)
    assert s["payback_months"] == ref["payback_null_reason"]
    assert s["breaks_even_month"] == pytest.approx(ref["breaks_even_month"], rel=1e-9)
    assert s["loses_again_month"] == ref["loses_again_month"]
    warning = cells["SUMMARY"][f"A{4 + len(xlsx.SUMMARY_KEYS)}"]
    assert warning.startswith("WARNING: the project loses money")
    openpyxl = pytest.importorskip("openpyxl")
    stored = openpyxl.load_workbook(p, data_only=True)["Summary"]
    assert stored[f"A{4 + len(xlsx.SUMMARY_KEYS)}"].value == warning  # cached = recalculated

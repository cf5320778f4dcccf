"""``aitco report`` and ``aitco roi-template`` end to end, with the real engines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from aitco.cli.app import main
from aitco.report.html import usd

compare_mod = pytest.importorskip("aitco.decide.compare")

REPO = Path(__file__).resolve().parents[2]
ROI_YAML = REPO / "examples" / "roi_support_bot.yaml"

TRAINING = {
    "name": "cli report test",
    "workload": {
        "kind": "training",
        "model": "gpt2-124m",
        "tokens": 2e9,
        "seq_len": 1024,
        "global_batch": 256,
    },
    "options": [
        {"hardware": "a100-sxm4-80gb", "gpus": 8, "pricing": "on_demand"},
        {"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "owned"},
    ],
}
SERVING = {
    "name": "cli serving test",
    "workload": {"kind": "inference", "model": "llama-3-8b", "qps": 2, "months": 3},
    "options": [
        {"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "on_demand"},
        {"hardware": "l40s", "gpus": 2, "pricing": "on_demand"},
    ],
}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return (exc.value.code if isinstance(exc.value.code, int) else 0), out, err


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    p = tmp_path / "scenario.yaml"
    p.write_text(yaml.safe_dump(TRAINING))
    return p


def _engine_totals(data: dict) -> dict[str, float]:
    from aitco.catalog.loader import load_catalog
    from aitco.decide.scenario import Scenario

    comp = compare_mod.compare(Scenario.from_dict(data), load_catalog(use_env=False))
    return {o.name: o.total_usd for o in comp.options}


def test_html_report_shows_the_engine_numbers(
    scenario_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()  # report creates no folder the user did not name (issue 18)
    code, _stdout, err = run(
        ["report", str(scenario_file), "-o", str(out), "--roi", str(ROI_YAML)], capsys
    )
    assert code == 0, err
    text = out.read_text()
    for name, total in _engine_totals(TRAINING).items():
        row = re.search(
            rf'<tr data-option="{re.escape(name)}">.*?<td class="total">([^<]+)</td>', text, re.S
        )
        assert row is not None, name
        assert row.group(1) == usd(total)
    for fig in ("breakdown", "waterfall_1", "waterfall_2", "pareto_time", "roi", "tornado"):
        assert f'id="fig-{fig}"' in text
    assert "https://cdn" not in text
    assert "<script" not in text
    assert not list(out.parent.glob(".*.tmp"))


def test_markdown_report_with_pngs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scen = tmp_path / "serving.yaml"
    scen.write_text(yaml.safe_dump(SERVING))
    code, _o, err = run(["report", str(scen), "-o", str(tmp_path / "r.md")], capsys)
    assert code == 0, err
    md = (tmp_path / "r.md").read_text()
    pngs = sorted(p.name for p in (tmp_path / "r_files").glob("*.png"))
    assert "pareto_latency.png" in pngs
    assert "breakdown.png" in pngs
    for p in pngs:
        assert f"(r_files/{p})" in md
    assert "No telemetry was ingested" in md


def test_bad_output_suffix_is_an_input_error(
    scenario_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _o, err = run(["report", str(scenario_file), "-o", str(tmp_path / "r.pdf")], capsys)
    assert code == 2
    assert "-o" in err
    assert "Traceback" not in err
    assert not (tmp_path / "r.pdf").exists()
    code, _o, err = run(
        ["report", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "r.html")], capsys
    )
    assert code == 2
    assert "SCENARIO" in err


def test_roi_template_filled_from_a_serving_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    scen = tmp_path / "serving.yaml"
    scen.write_text(yaml.safe_dump(SERVING))
    out = tmp_path / "roi.xlsx"
    code, _o, err = run(["roi-template", "-o", str(out), str(scen), "--roi", str(ROI_YAML)], capsys)
    assert code == 0, err
    from aitco.catalog.loader import load_catalog
    from aitco.decide.scenario import Scenario

    comp = compare_mod.compare(Scenario.from_dict(SERVING), load_catalog(use_env=False))
    cheapest = next(o for o in comp.options if o.name == comp.cheapest)
    wb = openpyxl.load_workbook(out)
    ws = wb["Inputs"]
    cells = {ws.cell(r, 1).value: ws.cell(r, 2).value for r in range(4, 20)}
    assert cells["Fixed running cost"] == pytest.approx(cheapest.values["usd_per_month"], rel=1e-12)
    assert cells["Savings in month 1"] == 128000  # from the ROI YAML


def test_report_with_a_sweep_front(
    scenario_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep_mod = pytest.importorskip("aitco.decide.sweep")
    spec = {
        "sweep": {
            "kind": "training",
            "workload": {"model": "gpt2-124m", "tokens": 2e9, "seq_len": 1024, "global_batch": 256},
            "grid": {
                "option.hardware": ["a100-sxm4-80gb", "h100-sxm5-80gb"],
                "option.gpus": [8, 16, 32],
                "option.pricing": ["on_demand", "spot"],
            },
            "objective": "total_usd",
            "pareto": ["total_usd", "wall_clock_h"],
        }
    }
    sf = tmp_path / "sweep.yaml"
    sf.write_text(yaml.safe_dump(spec))
    out = tmp_path / "r.md"
    code, _o, err = run(["report", str(scenario_file), "-o", str(out), "--sweep", str(sf)], capsys)
    assert code == 0, err
    assert (tmp_path / "r_files" / "pareto_sweep.png").read_bytes().startswith(b"\x89PNG")
    from aitco.catalog.loader import load_catalog
    from aitco.report.model import ReportData, add_sweep_front

    data = ReportData(title="t")
    add_sweep_front(data, sweep_mod.SweepSpec.from_yaml(sf), load_catalog(use_env=False))
    ref = sweep_mod.sweep(sweep_mod.SweepSpec.from_yaml(sf), load_catalog(use_env=False)).to_json()
    assert data.sweep_front is not None
    assert data.sweep_front["rows"] == ref["pareto"]  # the decide layer's front, unchanged

"""One comparison result, rendered everywhere (issue 32 items 1 and 4).

``compare`` chooses (cheapest, fastest, Pareto fronts, verdict); the CLI JSON, the report (its
JSON, HTML cards and Markdown), the web API and the ROI workbook render that choice and never
choose again. An option that cannot run is an answer: infeasible, with its reason ("does not fit
in memory" and the memory it needs), next to the options that are priced. With nothing
feasible, no surface names a cheapest or a fastest option, and each says so first.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from aitco.cli.app import main
from aitco.decide.compare import compare
from aitco.decide.scenario import Scenario
from aitco.report.html import render_html, summary_cards
from aitco.report.markdown import render_markdown
from aitco.report.model import build_report
from aitco.report.plots import report_figures
from aitco.report.xlsx import WorkbookInputs, fill_from_comparison

WORKLOAD = {"kind": "training", "model": "llama-3-8b", "tokens": 2e8, "seq_len": 2048}
#: Fits and has an offer.
RUNS = {"name": "h100 x8", "hardware": "h100-sxm5-80gb", "gpus": 8, "provider": "aws"}
#: Llama 3 8B training does not fit in one L4's 24 GB.
UNFIT = {"name": "l4 x1", "hardware": "l4", "gpus": 1, "provider": "aws"}
#: The home instance type of 16 H100s (no provider named) sells no spot price: priced for
#: reference, infeasible.
NO_OFFER = {"name": "h100 spot", "hardware": "h100-sxm5-80gb", "gpus": 16, "pricing": "spot"}


def _scenario(*options: dict[str, Any]) -> Scenario:
    return Scenario.from_dict({"name": "one result", "workload": WORKLOAD, "options": options})


@pytest.fixture(scope="module")
def mixed(catalog: Any) -> tuple[Scenario, Any]:
    scn = _scenario(RUNS, UNFIT, NO_OFFER)
    return scn, compare(scn, catalog)


@pytest.fixture(scope="module")
def none_feasible(catalog: Any) -> tuple[Scenario, Any]:
    scn = _scenario(UNFIT, NO_OFFER)
    return scn, compare(scn, catalog)


def test_an_unfit_option_is_an_answer_beside_the_priced_ones(mixed) -> None:
    _scn, comp = mixed
    runs, unfit, no_offer = comp.options
    assert runs.values["feasible"]
    assert math.isfinite(runs.total_usd)
    assert unfit.values["feasible"] is False
    assert math.isnan(unfit.total_usd)
    (reason,) = unfit.values["infeasible_reasons"]  # one reason: no "$nan" implausible total
    assert reason.startswith("does not fit in memory: ")
    need, usable = unfit.values["memory_per_gpu_gb"], unfit.values["memory_capacity_gb"]
    assert need > usable > 0
    assert unfit.values["over_by_gb"] == pytest.approx(need - usable)
    assert f"{need:,.1f} GB" in reason  # the reason states the memory it needs
    # priced for reference, but it cannot run: never chosen, not on the Pareto front
    assert no_offer.values["feasible"] is False
    assert math.isfinite(no_offer.total_usd)
    assert comp.cheapest == comp.fastest == "h100 x8"
    assert comp.feasible_options == ["h100 x8"]
    assert [p["name"] for p in comp.pareto_time] == ["h100 x8"]
    assert comp.verdict.startswith("cheapest: h100 x8")
    assert "2 of 3 options cannot run as priced" in comp.verdict


def test_every_surface_renders_the_comparison_choice(mixed, catalog) -> None:
    scn, comp = mixed
    data = build_report(scn, catalog, compare=lambda s, c: comp)
    j = json.loads(json.dumps(data.to_json(), default=str))
    assert (j["cheapest"], j["fastest"]) == (comp.cheapest, comp.fastest)
    assert j["feasible_options"] == comp.feasible_options
    assert j["verdict"] == comp.verdict
    assert data.pareto_time == comp.pareto_time
    marked = {c["name"]: [t for _k, t in c["marks"]] for c in summary_cards(data)}
    assert marked["h100 spot"] == []
    assert marked["l4 x1"] == []
    assert any(t.startswith("cheapest") for t in marked["h100 x8"])
    # the hidden-cost waterfalls show only options that can run
    falls = {f"waterfall_{k}" for k in (1, 2, 3)}
    assert [s for s, _c, _b in report_figures(data, only=falls)] == ["waterfall_1"]
    inputs = WorkbookInputs()
    assert fill_from_comparison(inputs, data).name == "h100 x8"
    assert inputs.upfront_usd == pytest.approx(comp.option("h100 x8").total_usd)


def test_nothing_feasible_names_no_cheapest_anywhere(none_feasible, catalog) -> None:
    scn, comp = none_feasible
    assert comp.cheapest is None
    assert comp.fastest is None
    assert comp.feasible_options == []
    assert comp.pareto_time == []
    assert comp.pareto_latency == []
    assert comp.verdict.startswith("no option is feasible")
    assert "no cheapest and no fastest" in comp.verdict
    j = comp.to_json()
    assert j["cheapest"] is None
    assert j["fastest"] is None
    data = build_report(scn, catalog, compare=lambda s, c: comp)
    rj = data.to_json()
    assert rj["cheapest"] is None
    assert rj["fastest"] is None
    assert rj["verdict"] == comp.verdict
    assert all(c["marks"] == [] for c in summary_cards(data))
    html = render_html(data, figures=[])
    assert 'class="tag cheap"' not in html
    assert 'class="tag fast"' not in html
    # the verdict comes first, before the cards
    assert html.index("No option is feasible") < html.index('class="card')
    md = render_markdown(data, [])
    summary = md.split("## Summary", 1)[1]
    assert summary.lstrip().startswith("**No option is feasible")
    assert "(cheapest" not in md
    assert "(fastest" not in md
    inputs = WorkbookInputs()
    assert fill_from_comparison(inputs, data) is None
    assert "no option is feasible" in inputs.notes[-1]


def test_cli_json_and_text_say_so_first(tmp_path, capsys) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(_scenario(UNFIT, NO_OFFER).to_dict()))
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(path), "--json"])
    assert exc.value.code in (0, None)
    j = json.loads(capsys.readouterr().out)
    assert j["cheapest"] is None
    assert j["fastest"] is None
    assert j["feasible_options"] == []
    assert j["verdict"].startswith("no option is feasible")
    assert j["comparisons"][0]["verdict"] == j["verdict"]
    unfit = j["options"][0]
    assert unfit["total_usd"] is None
    assert unfit["feasible"] is False
    assert unfit["memory_per_gpu_gb"] > unfit["memory_capacity_gb"]
    with pytest.raises(SystemExit):
        main(["compare", str(path)])
    out = capsys.readouterr().out
    assert out.lstrip().startswith("one result: no option is feasible")
    assert "cheapest:" not in out


def test_a_ten_year_run_has_one_verdict(catalog) -> None:
    """One verdict: compare rules out a run of more than ten years (aitco.limits) before it
    chooses, so the report (and the web, which renders it) never calls it the cheapest."""
    scn = Scenario.from_dict(
        {
            "name": "long",
            "workload": {**WORKLOAD, "tokens": 1e14},
            "options": [{**RUNS, "gpus": 8}, {**RUNS, "name": "h100 x64", "gpus": 64}],
        }
    )
    comp = compare(scn, catalog)
    long, short = comp.options
    assert long.values["wall_clock_days"] > 3650
    assert long.values["feasible"] is False
    assert any("years" in r for r in long.values["infeasible_reasons"])
    assert comp.cheapest == short.name
    data = build_report(scn, catalog, compare=lambda s, c: comp)
    assert data.cheapest == short.name
    assert not data.options[0].is_feasible


@pytest.fixture(scope="module")
def web() -> Any:
    from fastapi.testclient import TestClient

    from aitco.web.app import create_app

    with TestClient(create_app()) as c:
        yield c


def test_web_api_renders_the_comparison(web, mixed, none_feasible) -> None:
    scn, comp = mixed
    j = web.post("/api/v1/compare", json=scn.to_dict()).json()
    assert (j["cheapest"], j["fastest"]) == (comp.cheapest, comp.fastest)
    assert j["verdict"] == comp.verdict
    got = {o["name"]: o for o in j["options"]}
    assert set(got) == {o.name for o in comp.options}  # the unfit option is kept, with a word
    assert got["l4 x1"]["feasible"] is False
    assert got["l4 x1"]["total_usd"] is None
    assert got["l4 x1"]["infeasible_reasons"][0].startswith("does not fit in memory")
    assert got["h100 x8"]["total_usd"] == pytest.approx(comp.option("h100 x8").total_usd)
    scn0, comp0 = none_feasible
    j0 = web.post("/api/v1/compare", json=scn0.to_dict()).json()
    assert j0["cheapest"] is None
    assert j0["fastest"] is None
    assert j0["verdict"] == comp0.verdict
    frag = web.post("/api/v1/compare", json=scn0.to_dict(), headers={"HX-Request": "true"}).text
    assert "No option is feasible" in frag
    assert 'class="tag cheap"' not in frag

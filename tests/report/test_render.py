"""Reports rendered from small explicit breakdowns: model, plots, HTML and Markdown."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from aitco.cost.tco import Breakdown
from aitco.errors import InputError
from aitco.report import html, markdown, model, plots

PNG = b"\x89PNG\r\n\x1a\n"


def _option(name: str, rent: float, days: float, extra: dict[str, tuple[str, float]]) -> Breakdown:
    b = Breakdown(name=name, hardware=(name.split() or ["?"])[0], pricing="on_demand", gpus=8)
    b.add("rental", rent, "compute", formula="gpus x hours x usd_per_gpu_hour", inputs={"gpus": 8})
    for item, (cat, usd) in extra.items():
        b.add(item, usd, cat, formula=f"{item} formula", sources=["factor.x"])
    b.values["wall_clock_days"] = days
    return b.finalize()


@pytest.fixture
def options() -> list[Breakdown]:
    return [
        _option(
            "a100 x64 on_demand",
            100_000.0,
            20.0,
            {
                "failure_rework": ("reliability", 8000.0),
                "labour": ("people", 12_000.0),
                "egress": ("data", 300.0),
            },
        ),
        _option(
            "h100 x32 spot",
            80_000.0,
            25.0,
            {"failure_rework": ("reliability", 15_000.0), "labour": ("people", 9000.0)},
        ),
        _option("l40s x48 on_demand", 120_000.0, 30.0, {"labour": ("people", 10_000.0)}),
    ]


def test_option_view_waterfall_adds_up(options: list[Breakdown]) -> None:
    o = model.OptionView.from_any(options[0])
    assert o.rental_usd() == 100_000.0
    assert o.rental_usd() + sum(i.usd for i in o.hidden_items()) == pytest.approx(o.total_usd)
    assert [i.name for i in o.hidden_items()] == ["labour", "failure_rework", "egress"]
    assert o.by_category() == {
        "compute": 100_000.0,
        "reliability": 8000.0,
        "people": 12_000.0,
        "data": 300.0,
    }
    # the JSON form gives the same view
    assert model.OptionView.from_any(options[0].to_json()) == o


def test_pareto_points_marks_the_front() -> None:
    pts = model.pareto_points(
        [("a", 1, 10), ("b", 2, 5), ("c", 3, 6), ("d", 2, 5), ("e", float("nan"), 1)]
    )
    front = {p["name"] for p in pts if p["front"]}
    assert front == {"a", "b", "d"}  # c is beaten by b on both axes; ties do not dominate
    assert [p["name"] for p in pts] == ["a", "b", "c", "d"]  # non-finite points are dropped


def test_report_from_options(options: list[Breakdown]) -> None:
    data = model.report_from_options("demo", options)
    assert data.cheapest == "h100 x32 spot"  # 104,000 < 120,300 < 130,000
    assert data.fastest == "a100 x64 on_demand"
    assert {p["name"] for p in data.pareto_time if p["front"]} == {
        "a100 x64 on_demand",
        "h100 x32 spot",
    }
    # coordinates under their glossary names (unit in the name), not x/y
    assert set(data.pareto_time[0]) == {"name", "wall_clock_days", "total_usd", "front"}
    j = data.to_json()
    assert [o["total_usd"] for o in j["options"]] == [120_300.0, 104_000.0, 130_000.0]
    with pytest.raises(InputError, match="options"):
        model.report_from_options("empty", [])


def test_every_plot_is_a_png(options: list[Breakdown]) -> None:
    data = model.report_from_options("demo", options)
    data.roi = {
        "months": [
            {"month": m, "cumulative_usd": -1000 + 300 * m, "roi": 0.2} for m in range(1, 13)
        ],
        "payback_months": 3.33,
        "npv_usd": 2000.0,
    }
    data.tornado = [
        {
            "input": "monthly_savings_usd",
            "metric_base": 100.0,
            "metric_low": 50.0,
            "metric_high": 150.0,
        },
        {"input": "discount_rate", "metric_base": 100.0, "metric_low": 104.0, "metric_high": 97.0},
    ]
    data.utilisation = {
        "matrix": [[0.9, 0.1, float("nan")], [0.5, 0.95, 0.2]],
        "devices": ["gpu0", "gpu1"],
        "times": ["t0", "t1", "t2"],
        "idle_threshold": 0.3,
        "source": "dcgm.csv",
    }
    figs = plots.report_figures(data)
    stems = [s for s, _c, _b in figs]
    assert stems == [
        "breakdown",
        "waterfall_1",
        "waterfall_2",
        "waterfall_3",
        "pareto_time",
        "roi",
        "tornado",
        "utilisation",
    ]
    for _s, _c, png in figs:
        assert png.startswith(PNG)
        assert len(png) > 2000


def test_html_is_self_contained(options: list[Breakdown], tmp_path: Path) -> None:
    data = model.report_from_options("demo <script>", options, scenario={"name": "demo"})
    text = html.render_html(data)
    assert "<script" not in text.replace("demo &lt;script&gt;", "")  # autoescaped, and no JS
    assert not re.search(r'src\s*=\s*"(https?:)?//', text), "nothing is fetched from the network"
    assert "<link" not in text
    for o in options:
        assert o.name in text
        for i in o.items:
            assert f">{i.name.replace('_', ' ')}<" in text
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(imgs) == 5  # breakdown, 3 waterfalls, cost-vs-time
    assert all(base64.b64decode(b).startswith(PNG) for b in imgs)
    assert "$130,000" in text
    assert "cheapest" in text


def test_markdown_writes_pngs_beside_it(options: list[Breakdown], tmp_path: Path) -> None:
    data = model.report_from_options("demo", options)
    files = markdown.write_markdown(data, tmp_path / "report.md")
    md = (tmp_path / "report.md").read_text()
    assert files[0] == tmp_path / "report.md"
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert links
    assert all((tmp_path / rel).read_bytes().startswith(PNG) for rel in links)
    assert "- **h100 x32 spot**: $104,000, 25 days **(cheapest: $16,300 less than a100" in md
    assert "| failure rework | Reliability | $15,000 |" in md
    assert max(len(line) for line in md.splitlines()) < 200
    assert not list(tmp_path.rglob("*.tmp"))


def test_plots_survive_duplicate_and_long_names() -> None:
    # found by the API fuzzer: four options with the same name; also absurdly long names
    same = [
        _option("l4 x1 on_demand", 1000.0, 1.0, {"labour": ("people", 5000.0)}) for _ in range(4)
    ]
    long = [_option("x" * 300 + f" {k}", 1000.0 * (k + 1), 1.0 + k, {}) for k in range(3)]
    odd = [_option(n, 1000.0, 1.0, {}) for n in ("\x1f", "\U0010300d&kæ", "费用 ✓")]
    for opts in (same, long, odd):
        data = model.report_from_options("edge", opts)
        for _s, _c, png in plots.report_figures(data):
            assert png.startswith(PNG)


def test_headers_are_labels_not_keys(options: list[Breakdown]) -> None:
    from aitco.labels import LABELS

    for o in options:
        o.values.update(usd_per_million_tokens=0.5, goodput=0.9962, gpu_hours=100.0)
    data = model.report_from_options("labels", options)
    text = html.render_html(data, figures=[])
    heads = re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', text)
    heads += re.findall(r"<dt>([^<]*)</dt>", text)
    assert heads
    assert not [h for h in heads if re.search(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b", h)], heads
    # every key shown as a column has an entry in the label table
    keys = re.findall(r'<th scope="col" data-key="([^"]+)"', text)
    assert set(keys) >= {"wall_clock_days", "usd_per_million_tokens", "goodput", "gpu_hours"}
    assert all(k in LABELS for k in keys)
    assert "99.62%" in text  # goodput as a percentage
    # durations in the one time unit of the page (hours up to a few days, days beyond)
    assert "Time to finish [days]</th>" in text
    assert ">20</td>" in text
    assert "Time to finish</dt><dd>20 days</dd>" in text


def test_source_addresses_are_links() -> None:
    src = "failure.x: Llama Team, The Llama 3 Herd of Models " + "x" * 200
    src += " — https://arxiv.org/abs/2407.21783 (retrieved 2024-07-31)"
    b = _option("a100 x8", 1000.0, 1.0, {})
    b.add("rework", 10.0, "reliability", formula="f", sources=[src])
    data = model.report_from_options("links", [b.finalize()])
    text = html.render_html(data, figures=[])
    assert '<a href="https://arxiv.org/abs/2407.21783" rel="noopener noreferrer">' in text
    md = markdown.render_markdown(data, [])
    assert "<https://arxiv.org/abs/2407.21783>" in md
    assert max(len(line) for line in md.splitlines()) < 200


def test_report_says_a_project_loses_money(options: list[Breakdown]) -> None:
    """Issue 32: the HTML and Markdown reports say so first, and print no payback."""
    from aitco.decide import roi

    data = model.report_from_options("demo", options)
    losing = roi.RoiInputs(
        horizon_months=36, monthly_savings_usd=128000, monthly_cost_usd=40000,
        variable_cost_usd=9000, traffic_growth_per_month=-0.08, upfront_usd=180000,
        discount_rate=0.10,
    )  # fmt: skip
    model.add_roi(data, losing)
    rows = {k: t for k, _l, t in html.roi_rows(data.roi)}
    assert rows["payback_months"].startswith("none: breaks even")
    page = html.render_html(data, figures=[])
    roi_part = page[page.index('<section id="roi">') :]
    assert roi_part.index("the project loses money") < roi_part.index("<table")
    md = markdown.render_markdown(data, [])
    assert "**Warning:** the project loses money" in md
    assert data.to_json()["roi_series"]["loses_money"] is True
    assert "roi" not in data.to_json()  # `roi` keeps one meaning: the ROI of one month

"""Charts a reader can trust: labels of 11 px or more, bars from zero, one time unit, swings."""

from __future__ import annotations

from typing import Any

import pytest
from tests.report.test_render import _option

from aitco.report import model, plots

#: Smallest label a person must read on screen. [px]
MIN_LABEL_PX = 11.0


@pytest.fixture(scope="module")
def data() -> Any:
    from aitco.decide.roi import RoiInputs

    opts = [
        _option("a100 x64 on_demand", 1200.0, 0.2, {"labour": ("people", 100.0)}),
        _option("h100 x32 spot", 280.0, 0.12, {"egress": ("data", 4.5)}),
        _option("l40s x48 owned", 1300.0, 0.39, {"labour": ("people", 1000.0)}),
    ]
    d = model.report_from_options("charts", opts)
    inp = RoiInputs(
        horizon_months=24,
        monthly_savings_usd=50_000.0,
        monthly_cost_usd=8_000.0,
        upfront_usd=100_000.0,
    )
    model.add_roi(d, inp)
    return d


@pytest.mark.integration  # draws every chart twice (~3 s)
@pytest.mark.parametrize("narrow", [False, True])
def test_every_chart_labels_at_least_11_px(data: Any, narrow: bool) -> None:
    figs = plots.report_figures(data, narrow=narrow)
    assert {s for s, _c, _p in figs} >= {"breakdown", "waterfall_1", "pareto_time", "roi"}
    for stem, _caption, png in figs:
        px = float(plots.png_text(png, plots.MIN_FONT_KEY) or 0)
        assert px >= MIN_LABEL_PX, (stem, px)
        width, _h = plots.png_size(png)
        if narrow:  # a phone's content column: shown at about its own size
            assert width == round(plots.NARROW_WIDTH_IN * plots.DPI), stem
        else:  # never wider than the report's and the page's content column
            assert width <= plots.MAX_WIDTH_IN * plots.DPI, stem


def test_pareto_time_axis_in_the_cards_unit(data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    orig = plots._png
    monkeypatch.setattr(plots, "_png", lambda f: seen.append(f) or orig(f))
    plots.report_figures(data, only=("pareto_time",))
    xlabel = seen[0].axes[0].get_xlabel()
    assert data.time_unit() == ("h", 1.0)  # runs of 3-9 h
    assert xlabel == "Time to finish [h]"
    xs = sorted(p.get_offsets()[:, 0].tolist() for p in seen[0].axes[0].collections)
    flat = sorted(x for group in xs for x in group)
    assert flat[0] == pytest.approx(0.12 * 24)  # hours, not days


def test_tornado_states_its_swing(data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    orig = plots._png
    monkeypatch.setattr(plots, "_png", lambda f: seen.append(f) or orig(f))
    figs = plots.report_figures(data, only=("tornado",))
    assert "±20%" in figs[0][1]  # the caption
    ax = seen[0].axes[0]
    assert "±20%" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["input -20%", "input +20%"]


def test_breakdown_bars_from_zero(data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    orig = plots._png
    monkeypatch.setattr(plots, "_png", lambda f: seen.append(f) or orig(f))
    plots.report_figures(data, only=("breakdown",))
    assert seen[0].axes[0].get_xlim()[0] == 0.0


# --------------------------------------------------------------------------- reconcile waterfall
def _reconciliation() -> dict[str, Any]:
    """A reconciliation's JSON: a 2 % discount and small variances on a $10,000 bill."""
    return {
        "predicted_usd": 10_000.0,
        "billed_usd": 10_150.0,
        "unexplained_usd": 10.0,
        "variances": [
            {"cause": "price", "item": "gpu_compute", "usd": -200.0},
            {"cause": "slower_steps", "item": "gpu_compute", "usd": 300.0},
            {"cause": "idle_waiting", "item": "gpu_compute", "usd": 40.0},
        ],
    }


@pytest.mark.parametrize("narrow", [False, True])
def test_reconcile_waterfall_bars_from_zero_and_labels_of_11_px(narrow: bool) -> None:
    import re

    from aitco.report import reconcile as rw

    svg = str(rw.waterfall_svg(_reconciliation(), narrow=narrow))
    assert rw.svg_min_font_px(svg) >= MIN_LABEL_PX
    width = int(re.search(r'width="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    # shown at its own size (report.css never scales it): the phone one fits a phone's column
    assert width == (rw.NARROW_W if narrow else rw.WIDE_W)
    if narrow:
        assert width <= round(plots.NARROW_WIDTH_IN * plots.DPI)
    bars = [
        (float(x), float(w))
        for x, w in re.findall(r'<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"', svg)
    ]
    zero = float(re.search(r'<line x1="([0-9.]+)"', svg).group(1))  # type: ignore[union-attr]
    # the totals start at the zero line and keep their proportions
    (x_p, w_p), (x_b, w_b) = bars[0], bars[-1]
    assert x_p == pytest.approx(zero, abs=0.1)
    assert x_b == pytest.approx(zero, abs=0.1)
    assert w_b / w_p == pytest.approx(10_150.0 / 10_000.0, rel=1e-3)
    # a variance's bar is to the same scale as the totals
    assert bars[2][1] / w_p == pytest.approx(300.0 / 10_000.0, abs=0.002)

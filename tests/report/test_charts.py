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

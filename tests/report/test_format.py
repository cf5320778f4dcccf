"""One label table and one money/duration format for every surface."""

from __future__ import annotations

import math
from typing import Any

import pytest

from aitco.formatting import duration_h, usd, usd_si, value
from aitco.labels import LABELS, label
from aitco.report.model import HEADLINE_KEYS


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1234.4, "$1,234"),
        (-1.949, "-$1.95"),
        (43.061, "$43.06"),
        (138.0, "$138"),
        (-0.001, "-$0.001"),
        (0.0, "$0.00"),
        (0.02134, "$0.0213"),
        (math.nan, "-"),
        (None, "-"),
        (True, "-"),
    ],
)
def test_usd(x: object, text: str) -> None:
    assert usd(x) == text


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1.23e6, "$1.23M"),
        (1.2e12, "$1.2T"),
        (1.5e15, "$1500T"),
        (999_999.0, "$1M"),
        (-950.0, "-$950"),
        (0.0, "$0"),
        (2500.0, "$2.5k"),
    ],
)
def test_usd_si(x: float, text: str) -> None:
    assert usd_si(x) == text


@pytest.mark.parametrize(
    ("h", "text"),
    [(0.5, "30 min"), (2.76, "2.8 h"), (30.0, "30 h"), (300.0, "12.5 days"), (24e3, "2.7 years")],
)
def test_duration_reads_best(h: float, text: str) -> None:
    assert duration_h(h) == text


def test_values_by_key() -> None:
    assert value("wall_clock_days", 0.115) == "2.8 h"  # a 2.8-hour run, not 0.115 days
    assert value("usd_per_million_tokens", 0.4321) == "$0.43"
    assert value("goodput", 0.9962) == "99.62%"
    assert value("gpu_hours", 1234.0) == "1,234"


def test_every_headline_key_has_a_label() -> None:
    missing = [k for k in HEADLINE_KEYS if k not in LABELS]
    assert not missing
    assert all("_" not in LABELS[k] for k in HEADLINE_KEYS)


def test_label_of_unknown_keys_is_words_and_unit() -> None:
    assert label("checkpoint_interval_h") == "Checkpoint interval [h]"
    assert label("capex_usd") == "Capex [$]"


def test_chart_money_axis_is_si_above_a_trillion() -> None:
    from aitco.report.plots import _usd_short

    assert _usd_short(1.2e12) == "$1.2T"
    assert _usd_short(3.4e9) == "$3.4B"


def test_twin_axes_share_zero() -> None:
    from matplotlib.figure import Figure

    from aitco.report.plots import _align_zero

    ax = Figure().add_subplot()
    ax.plot([0, 1, 2], [-100.0, 50.0, 400.0])
    ax2 = ax.twinx()
    ax2.plot([0, 1, 2], [-0.1, 2.0, 3.0])
    _align_zero(ax, ax2)
    (a, b), (c, d) = ax.get_ylim(), ax2.get_ylim()
    assert -a / (b - a) == pytest.approx(-c / (d - c))
    assert a <= -100.0
    assert b >= 400.0
    assert c <= -0.1
    assert d >= 3.0


def test_waterfall_bars_start_at_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """A $15 step is drawn 15/1000 as tall as a $1,000 bar (issue 35: a cut axis drew a $4.52
    bar taller than a $575 one); the small steps carry their dollars and share as text."""
    from tests.report.test_render import _option

    from aitco.report import model, plots

    o = model.OptionView.from_any(
        _option("x", 1000.0, 1.0, {"labour": ("people", 20.0), "egress": ("data", 15.0)})
    )
    seen: list[Any] = []
    orig = plots._png

    def spy(f: Any) -> bytes:
        seen.append(f.axes[0])
        return orig(f)

    monkeypatch.setattr(plots, "_png", spy)
    plots.waterfall_png(o)
    ax = seen[0]
    lo, hi = ax.get_ylim()
    assert lo == 0.0
    assert hi >= 1035.0
    heights = sorted(abs(p.get_height()) for p in ax.patches)
    assert heights[0] / heights[-1] == pytest.approx(15.0 / 1035.0, rel=1e-6)
    texts = [t.get_text() for t in ax.texts]
    assert any("$15" in t and "+1.4%" in t for t in texts), texts

"""``aitco compare`` uses the width it has: wide layout as soon as it fits, names never cut."""

from __future__ import annotations

from typing import Any

import pytest

from aitco.cli import render, tco_cmd
from aitco.decide.compare import compare
from aitco.decide.defaults import default_scenarios

WIDTHS = (80, 100, 120, 140, 160, 200, 240)
#: Cost categories of the default training comparison, as the wide layout titles them.
TRAINING_CATEGORIES = ("compute", "reliab.", "power", "people", "data")


@pytest.fixture(scope="module")
def comparisons(catalog: Any) -> list[Any]:
    return [compare(s, catalog) for s in default_scenarios()]


def rendered(comps: list[Any], width: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(render.console, "width", width)
    with render.console.capture() as cap:
        for c in comps:
            tco_cmd.render_comparison(c)
    return cap.get().splitlines()


@pytest.mark.parametrize("width", WIDTHS)
def test_tables_fit_and_names_are_never_cut(
    comparisons: list[Any], width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = rendered(comparisons, width, monkeypatch)
    assert max(len(ln) for ln in lines) <= width
    text = "\n".join(lines)
    assert "…" not in text
    for c in comparisons:
        for o in c.options:
            words = o.name.split()
            assert all(w in text for w in words), (width, o.name)


@pytest.mark.parametrize("width", [120, 160])
def test_wide_layout_from_120_columns(
    comparisons: list[Any], width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = rendered(comparisons, width, monkeypatch)
    training = lines[: next(i for i, ln in enumerate(lines) if "service" in ln)]
    for o in comparisons[0].options:  # every name whole on one line (not 2-4 wrapped lines)
        assert any(o.name in ln for ln in training), (width, o.name)
    head = next(ln for ln in training if "compute" in ln)
    assert all(k in head for k in TRAINING_CATEGORIES), head
    assert "other" not in head  # every category in its own column


def test_narrow_terminal_keeps_every_name(
    comparisons: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns the names wrap at their first space: both halves are there, whole."""
    lines = rendered(comparisons, 80, monkeypatch)
    for o in comparisons[0].options:
        first, rest = o.name.split(" ", 1)
        assert any(first in ln for ln in lines)
        assert any(rest in ln for ln in lines)


def test_one_time_unit_per_table(comparisons: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The default runs take 3-9 h: the tables say hours, at every width."""
    for width in (80, 240):
        text = "\n".join(rendered(comparisons[:1], width, monkeypatch))
        assert "days" not in text
        assert "hours" in text or "time to finish [h]" in text

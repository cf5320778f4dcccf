"""`aitco compare` fits the terminal: every item when wide, categories when narrow."""

from __future__ import annotations

import pytest

from aitco.cli import render
from aitco.cli.app import main


def _compare_text(width: int, capsys: pytest.CaptureFixture[str]) -> str:
    old = render.console.width
    render.console.width = width
    try:
        with pytest.raises(SystemExit) as exc:
            main(["compare"])
    finally:
        render.console.width = old
    assert exc.value.code in (0, None)
    return capsys.readouterr().out


def test_narrow_terminal_gets_totals_by_category(capsys):
    out = _compare_text(80, capsys)
    assert "reliab." in out
    assert "every item: a wider terminal" in out
    assert "rental_on_demand" not in out  # the per-item rows need a wide terminal
    assert max(len(line) for line in out.splitlines()) <= 80


def test_wide_terminal_gets_every_item(capsys):
    out = _compare_text(240, capsys)
    for item in ("rental_on_demand", "rental_spot", "depreciation", "fragmentation_idle"):
        assert item in out

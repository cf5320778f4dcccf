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


def _scenario_text(path: str, width: int, capsys: pytest.CaptureFixture[str]) -> str:
    old = render.console.width
    render.console.width = width
    try:
        with pytest.raises(SystemExit) as exc:
            main(["compare", path])
    finally:
        render.console.width = old
    assert exc.value.code in (0, None)
    return capsys.readouterr().out


COMMITTED = """\
name: one month of a 1-year reservation
workload: {kind: inference, model: llama-3-8b, qps: 1.0}
options:
- {hardware: h100-sxm5-80gb, gpus: 1, pricing: reserved_1y, provider: any}
- {hardware: h100-sxm5-80gb, gpus: 1, pricing: on_demand}
- {hardware: a100-sxm4-80gb, gpus: 1, pricing: on_demand}
"""


@pytest.mark.slow
def test_committed_term_has_used_and_unused_columns(tmp_path, capsys):
    """Issue 32: the used share and the unused commitment are separate columns."""
    path = tmp_path / "committed.yaml"
    path.write_text(COMMITTED)
    narrow = _scenario_text(str(path), 80, capsys)
    assert "unused" in narrow
    assert "commit." in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 80
    wide = _scenario_text(str(path), 240, capsys)
    for row in ("$/month used", "used [USD]", "unused commitment [USD]"):
        assert row in wide

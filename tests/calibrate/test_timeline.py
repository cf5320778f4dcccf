"""The time ledger of a training log: kept steps, redone steps, gaps."""

from __future__ import annotations

import pytest

from aitco.calibrate.parsers.base import ParseResult
from aitco.calibrate.parsers.train_log import parse_train_log
from aitco.calibrate.timeline import run_timeline
from aitco.errors import InputError


def _log(records: list[dict]) -> ParseResult:
    return ParseResult(
        kind="trainlog", path="x.log", format="jsonl", format_version="", records=records
    )


def _rec(step: int, t: float, ts: str | None = None) -> dict:
    r = {"step": step, "step_time_s": t}
    if ts:
        r["timestamp"] = ts
    return r


def test_a_restart_is_found_and_the_ledger_adds_up():
    # every 10 steps at 1 s; crash after step 30 (logged), downtime, resume from step 20
    recs = [
        _rec(10, 1.0, "2026-01-01 00:00:10"),
        _rec(20, 1.0, "2026-01-01 00:00:20"),
        _rec(30, 1.0, "2026-01-01 00:00:30"),
        _rec(30, 1.0, "2026-01-01 00:01:40"),  # steps 21-30 again: restart at 00:01:30
        _rec(40, 1.0, "2026-01-01 00:01:50"),
    ]
    recs[3]["step"] = 30
    tl = run_timeline(_log(recs))
    assert tl.log_interval_steps == 10
    (r,) = tl.restarts
    assert (r.last_step_before, r.resumed_from_step, r.repeated_steps) == (30, 20, 10)
    assert r.gap_s == pytest.approx(60.0)
    assert tl.unique_steps == 40
    assert tl.productive_s == pytest.approx(40.0)
    assert tl.repeated_s == pytest.approx(10.0)
    assert tl.span_s == pytest.approx(110.0)
    assert tl.gaps_s == pytest.approx(60.0)
    assert tl.span_s == pytest.approx(tl.productive_s + tl.repeated_s + tl.gaps_s)


def test_a_log_without_timestamps_has_no_span(fixtures_dir):
    tl = run_timeline(parse_train_log(fixtures_dir / "megatron_log_legacy.txt"))
    assert tl.span_s is None
    assert tl.gaps_h == 0.0
    assert tl.restarts == []
    assert tl.productive_s > 0
    assert any("no timestamps" in n for n in tl.notes)


def test_the_real_megatron_log_is_read(fixtures_dir):
    tl = run_timeline(parse_train_log(fixtures_dir / "megatron_log.txt"))
    assert tl.log_interval_steps == 1
    assert tl.span_s is not None
    assert tl.global_batch == 128


def test_a_log_without_step_times_is_one_clear_error():
    with pytest.raises(InputError, match="step records with a step number and a time per step"):
        run_timeline(_log([{"step": 1, "loss": 2.0}]))

r"""The time ledger of a training run from its log: steps done once, steps redone, gaps.

:func:`run_timeline` reads the step records of a parsed training log (step number, time per
step, timestamp) and splits the job's wall clock into

* **productive** time: the steps the run kept (each step number counted once);
* **repeated** time: steps done and then thrown away, because a restart resumed from an earlier
  checkpoint (the log's step number goes back);
* **gaps**: wall-clock time between logged steps that no step accounts for (restart downtime,
  hangs, checkpoint saves and evaluation outside the step timer).

A log line may stand for several steps (Megatron prints every ``--log-interval`` steps, with the
mean time per step): the line covers the steps since the previous line of the same attempt.
After a restart the first line covers one log interval (the interval is the most common step
increment). The ledger is exact by construction:

.. math:: T_{span} = \sum_{kept} k_i t_i + \sum_{redone} k_i t_i + T_{gaps}

where :math:`T_{span}` runs from the start of the first logged step (its timestamp less its
steps' time) to the last timestamp; a log without timestamps gives no span and no gaps.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from aitco.calibrate.parsers.base import ParseResult
from aitco.calibrate.parsers.train_log import MAX_RECORDS_KEPT
from aitco.errors import InputError
from aitco.units import SECONDS_PER_HOUR


@dataclass
class Restart:
    """One restart seen in the log.

    Attributes
    ----------
    at_line : int
        Index (0-based) of the first step record after the restart.
    last_step_before : int
        Highest step logged before the restart.
    resumed_from_step : int
        Step the run resumed after (its checkpoint).
    repeated_steps : int
        Steps logged before the restart and done again after it.
    repeated_s : float
        Time those steps took the first time. [s]
    gap_s : float, optional
        Wall clock between the last step logged before and the first step after (lost
        unlogged work plus downtime). [s]
    """

    at_line: int
    last_step_before: int
    resumed_from_step: int
    repeated_steps: int
    repeated_s: float
    gap_s: float | None


@dataclass
class RunTimeline:
    """The time ledger of one training run (see the module docstring).

    Attributes
    ----------
    lines : int
        Step records used.
    log_interval_steps : int
        Steps per log line (the most common step increment).
    first_step, last_step : int
        Lowest and highest step logged.
    unique_steps : int
        Steps the run kept.
    repeated_steps : int
        Steps done twice (or more) because of restarts.
    productive_s : float
        Time of the kept steps. [s]
    repeated_s : float
        Time of the steps thrown away. [s]
    span_s : float, optional
        Job wall clock from the first step's start to the last timestamp. [s]
    gaps_s : float, optional
        ``span_s`` less the time of every logged step. [s]
    restart_gaps_s : float, optional
        The part of ``gaps_s`` at restarts. [s]
    restarts : list of Restart
    global_batch : float, optional
        Sequences per step (from the log when it prints it).
    truncated : bool
        The parser kept only the first records of a longer log.
    """

    lines: int
    log_interval_steps: int
    first_step: int
    last_step: int
    unique_steps: int
    repeated_steps: int
    productive_s: float
    repeated_s: float
    span_s: float | None
    gaps_s: float | None
    restart_gaps_s: float | None
    restarts: list[Restart] = field(default_factory=list)
    global_batch: float | None = None
    truncated: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def mean_step_s(self) -> float:
        """Return the mean time of a kept step [s]."""
        return self.productive_s / self.unique_steps if self.unique_steps else 0.0

    @property
    def productive_h(self) -> float:
        """Return the time of the kept steps [h]."""
        return self.productive_s / SECONDS_PER_HOUR

    @property
    def repeated_h(self) -> float:
        """Return the time of the steps thrown away [h]."""
        return self.repeated_s / SECONDS_PER_HOUR

    @property
    def gaps_h(self) -> float:
        """Return the gaps [h] (0 when the log has no timestamps)."""
        return (self.gaps_s or 0.0) / SECONDS_PER_HOUR

    @property
    def other_gaps_s(self) -> float | None:
        """Return the gaps that are not at a restart [s] (hangs, saves, evaluation)."""
        if self.gaps_s is None or self.restart_gaps_s is None:
            return None
        return self.gaps_s - self.restart_gaps_s

    def hours(self) -> dict[str, float | None]:
        """Return the ledger in hours per accelerator [h]: productive, repeated, gaps, span."""

        def h(x: float | None) -> float | None:
            return x / SECONDS_PER_HOUR if x is not None else None

        return {
            "productive_h": self.productive_s / SECONDS_PER_HOUR,
            "repeated_h": self.repeated_s / SECONDS_PER_HOUR,
            "gaps_h": h(self.gaps_s),
            "restart_gaps_h": h(self.restart_gaps_s),
            "other_gaps_h": h(self.other_gaps_s),
            "span_h": h(self.span_s),
        }

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (times in seconds and hours)."""
        out = asdict(self)
        out["mean_step_s"] = self.mean_step_s
        out["other_gaps_s"] = self.other_gaps_s
        out.update(self.hours())
        return out


def _timestamp(s: Any) -> float | None:
    if not isinstance(s, str) or not s:
        return None
    try:
        t = dt.datetime.fromisoformat(s.replace(",", ".").strip())
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def run_timeline(result: ParseResult) -> RunTimeline:
    """Time ledger of a parsed training log.

    Parameters
    ----------
    result : ParseResult
        A training log parsed by :func:`aitco.calibrate.parsers.train_log.parse_train_log`.

    Returns
    -------
    RunTimeline

    Raises
    ------
    aitco.errors.InputError
        If the log has no step records with a step number and a time per step.
    """
    recs = [
        r
        for r in result.records
        if isinstance(r.get("step"), int)
        and isinstance(r.get("step_time_s"), int | float)
        and r["step_time_s"] > 0
    ]
    if not recs:
        raise InputError(
            "training log",
            result.path,
            "step records with a step number and a time per step (Megatron 'iteration' and "
            "'elapsed time per iteration', or JSONL step/step_time_ms)",
        )
    deltas = Counter(b["step"] - a["step"] for a, b in itertools.pairwise(recs))
    positive = {d: n for d, n in deltas.items() if d > 0}
    k = max(positive, key=lambda d: (positive[d], -d)) if positive else 1
    stamps = [_timestamp(r.get("timestamp")) for r in recs]
    timed = all(t is not None for t in stamps)
    covered: list[int] = []
    repeated = [False] * len(recs)
    kept: list[int] = []  # indices of the lines the run kept so far, in step order
    restarts: list[Restart] = []
    top = None
    for i, r in enumerate(recs):
        s = int(r["step"])
        restarted = top is not None and s <= top
        if restarted:  # the step went back: a restart from a checkpoint
            resume = s - k
            thrown = [j for j in kept if int(recs[j]["step"]) > resume]
            for j in thrown:
                repeated[j] = True
            kept = [j for j in kept if not repeated[j]]
            gap = None
            if timed:
                start_i = stamps[i] - k * float(r["step_time_s"])  # type: ignore[operator]
                gap = start_i - stamps[i - 1]  # type: ignore[operator]
            restarts.append(
                Restart(
                    at_line=i,
                    last_step_before=int(top or 0),
                    resumed_from_step=resume,
                    repeated_steps=sum(covered[j] for j in thrown),
                    repeated_s=sum(covered[j] * float(recs[j]["step_time_s"]) for j in thrown),
                    gap_s=gap,
                )
            )
            covered.append(k)
        elif top is None:
            covered.append(min(s, k) if s > 0 else 1)
        else:
            covered.append(s - int(recs[i - 1]["step"]))
        kept.append(i)
        top = s if top is None or restarted else max(top, s)
    times = [c * float(r["step_time_s"]) for c, r in zip(covered, recs, strict=True)]
    productive = sum(t for t, rep in zip(times, repeated, strict=True) if not rep)
    redone = sum(t for t, rep in zip(times, repeated, strict=True) if rep)
    span = gaps = restart_gaps = None
    notes: list[str] = []
    if timed:
        span = stamps[-1] - (stamps[0] - times[0])  # type: ignore[operator]
        gaps = span - productive - redone
        restart_gaps = sum(x.gap_s or 0.0 for x in restarts)
    else:
        notes.append("the log has no timestamps: no job span and no gaps between steps")
    gbs = [r["global_batch"] for r in recs if isinstance(r.get("global_batch"), int | float)]
    truncated = len(result.records) >= MAX_RECORDS_KEPT
    if truncated:
        notes.append(
            f"only the first {MAX_RECORDS_KEPT:,} step records of the log are kept: the ledger "
            "covers them"
        )
    return RunTimeline(
        lines=len(recs),
        log_interval_steps=k,
        first_step=min(int(r["step"]) for r in recs),
        last_step=max(int(r["step"]) for r in recs),
        unique_steps=sum(c for c, rep in zip(covered, repeated, strict=True) if not rep),
        repeated_steps=sum(c for c, rep in zip(covered, repeated, strict=True) if rep),
        productive_s=productive,
        repeated_s=redone,
        span_s=span,
        gaps_s=gaps,
        restart_gaps_s=restart_gaps,
        restarts=restarts,
        global_batch=float(gbs[-1]) if gbs else None,
        truncated=truncated,
        notes=notes,
    )

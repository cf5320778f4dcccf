"""What a service served, hour by hour: requests and tokens per time bucket.

The evidence of what a service served is a token-API usage export (the OpenAI organisation Usage
API: time buckets of ``num_model_requests``, ``input_tokens`` and ``output_tokens``) or a request
log (one API response per line, with its ``created`` time and ``usage``). Their readers
(:mod:`aitco.audit.served`) feed a :class:`ServedAccumulator`, which keeps one bucket per time
interval (a request log's requests go to the clock hour they were created in), so memory follows
the hours, not the requests. The result is a :class:`~aitco.calibrate.parsers.base.ParseResult`
of kind :data:`SERVED_KIND` whose records are the buckets.

:func:`load_in_periods` spreads the buckets over a bill's charge periods (in proportion to the
overlap) and says how much of each period the evidence covers; :func:`hour_of_day_rates` gives
the observed load profile, 24 mean arrival rates by UTC hour of day, to set beside a scenario's
``load_profile`` or ``qps``.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aitco.calibrate.parsers.base import ParseResult, SkipLog
from aitco.units import HOURS_PER_DAY, SECONDS_PER_HOUR

#: ParseResult kind of served-load evidence.
SERVED_KIND = "served"
#: Distinct model names counted in a served record (the rest are summed as "other").
MAX_MODELS_KEPT = 20
#: Bucket counts of the three quantities, in record key order.
COUNT_KEYS = ("requests", "input_tokens", "output_tokens")


@dataclass
class ServedAccumulator:
    """Buckets of served requests and tokens, keyed by their ``(start_s, end_s)`` interval.

    Attributes
    ----------
    buckets : dict
        ``(start_s, end_s) -> [requests, input_tokens, output_tokens]`` (Unix seconds).
    by_model : dict
        Requests per model name (the first :data:`MAX_MODELS_KEPT`; the rest under ``other``).
    failed, unbilled, untimed : int
        Request-log lines of failed calls, of calls without usage, and of successful calls
        without a time (counted in the totals, not in any bucket).
    untimed_counts : list of int
        Requests, input and output tokens of the untimed calls.
    sources : set of str
        Which shapes were read: ``usage_api`` buckets, ``request_log`` lines.
    """

    buckets: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    by_model: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    unbilled: int = 0
    untimed: int = 0
    untimed_counts: list[int] = field(default_factory=lambda: [0, 0, 0])
    sources: set[str] = field(default_factory=set)
    #: First and last clock hour of the request log's timed requests. [s]
    log_hours: list[int] = field(default_factory=list)

    def add_bucket(
        self, start_s: int, end_s: int, requests: int, input_tokens: int, output_tokens: int
    ) -> None:
        """Add the counts of one usage-export bucket result (``[start_s, end_s)``)."""
        b = self.buckets.setdefault((int(start_s), int(end_s)), [0, 0, 0])
        b[0] += requests
        b[1] += input_tokens
        b[2] += output_tokens
        self.sources.add("usage_api")

    def add_request(
        self, created_s: float | None, input_tokens: int, output_tokens: int, model: str | None
    ) -> None:
        """Add one served request of a request log, in the clock hour it was created."""
        self.sources.add("request_log")
        self._model(model)
        if created_s is None:
            self.untimed += 1
            for i, x in enumerate((1, input_tokens, output_tokens)):
                self.untimed_counts[i] += x
            return
        h = math.floor(created_s / SECONDS_PER_HOUR) * int(SECONDS_PER_HOUR)
        self.log_hours = (
            [min(self.log_hours[0], h), max(self.log_hours[1], h)] if self.log_hours else [h, h]
        )
        b = self.buckets.setdefault((h, h + int(SECONDS_PER_HOUR)), [0, 0, 0])
        b[0] += 1
        b[1] += input_tokens
        b[2] += output_tokens

    def count_model(self, model: str | None, requests: int) -> None:
        """Count ``requests`` of ``model`` (a usage-export result grouped by model)."""
        self._model(model, requests)

    def _model(self, model: str | None, n: int = 1) -> None:
        key = str(model) if model else "(not named)"
        if key not in self.by_model and len(self.by_model) >= MAX_MODELS_KEPT:
            key = "other"
        self.by_model[key] = self.by_model.get(key, 0) + n

    def result(
        self,
        path: str,
        *,
        lines_read: int,
        lines_ignored: int = 0,
        skipped: SkipLog | None = None,
    ) -> ParseResult:
        """Return the buckets as a :data:`SERVED_KIND` ParseResult (records sorted by time).

        A request log covers every clock hour from its first request to its last: the hours
        between without a request are buckets of zero requests.
        """
        hour = int(SECONDS_PER_HOUR)
        if self.log_hours:
            for h in range(self.log_hours[0], self.log_hours[1] + hour, hour):
                self.buckets.setdefault((h, h + hour), [0, 0, 0])
        recs = [
            {"start_s": s, "end_s": e, **dict(zip(COUNT_KEYS, c, strict=True))}
            for (s, e), c in sorted(self.buckets.items())
        ]
        tot = [
            sum(r[k] for r in recs) + u
            for k, u in zip(COUNT_KEYS, self.untimed_counts, strict=True)
        ]
        shape = " and ".join(sorted(self.sources)) or "nothing"
        res = ParseResult(
            kind=SERVED_KIND,
            path=path,
            format="served load (" + shape + ")",
            format_version="openai usage api / api responses",
            records=recs,
            lines_read=lines_read,
            lines_ignored=lines_ignored,
            skipped=skipped or SkipLog(),
        )
        res.summary = {
            "requests": tot[0],
            "input_tokens": tot[1],
            "output_tokens": tot[2],
            "buckets": len(recs),
            "first_s": recs[0]["start_s"] if recs else None,
            "last_s": recs[-1]["end_s"] if recs else None,
            "failed_requests": self.failed,
            "requests_without_usage": self.unbilled,
            "requests_without_time": self.untimed,
            "by_model": dict(self.by_model),
            "sources": sorted(self.sources),
        }
        return res


# --------------------------------------------------------------------------- time helpers
def bill_time_s(text: str) -> float | None:
    """Return Unix seconds of a bill's normalised time (``YYYY-MM-DDTHH:MM:SS``, UTC)."""
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def iso_utc(seconds: float | None) -> str | None:
    """Return Unix seconds as an ISO time in UTC (None stays None)."""
    if seconds is None:
        return None
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Buckets:
    """Served buckets of one or more records, merged and sorted: arrays over the buckets.

    Attributes
    ----------
    start_s, end_s : numpy.ndarray
        Bucket bounds. [s]
    counts : numpy.ndarray
        ``(n, 3)``: requests, input tokens and output tokens of each bucket.
    cover : list of tuple
        The union of the buckets' intervals, merged and sorted. [s]
    overlap_s : float
        Time counted by more than one bucket (evidence read twice). [s]
    """

    start_s: np.ndarray
    end_s: np.ndarray
    counts: np.ndarray
    cover: list[tuple[float, float]]
    overlap_s: float

    @classmethod
    def of(cls, results: Sequence[ParseResult]) -> Buckets:
        """Merge the buckets of ``results`` (same interval: counts added)."""
        merged: dict[tuple[float, float], np.ndarray] = {}
        for r in results:
            for rec in r.records:
                key = (float(rec["start_s"]), float(rec["end_s"]))
                c = np.array([float(rec[k]) for k in COUNT_KEYS])
                merged[key] = merged.get(key, np.zeros(len(COUNT_KEYS))) + c
        keys = sorted(k for k in merged if k[1] > k[0])
        cover: list[tuple[float, float]] = []
        total = 0.0
        for a, b in keys:
            total += b - a
            if cover and a <= cover[-1][1]:
                cover[-1] = (cover[-1][0], max(cover[-1][1], b))
            else:
                cover.append((a, b))
        union = sum(b - a for a, b in cover)
        return cls(
            start_s=np.array([k[0] for k in keys], dtype=float),
            end_s=np.array([k[1] for k in keys], dtype=float),
            counts=np.array([merged[k] for k in keys], dtype=float).reshape(-1, len(COUNT_KEYS)),
            cover=cover,
            overlap_s=total - union,
        )

    @property
    def empty(self) -> bool:
        """Whether there is no bucket."""
        return self.start_s.size == 0


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def load_in_periods(
    buckets: Buckets, periods: Sequence[tuple[float, float]]
) -> tuple[np.ndarray, np.ndarray]:
    """Spread the buckets over charge periods; how much of each period they cover.

    A bucket's counts go to the periods it overlaps in proportion to the overlap (a daily
    bucket spreads evenly over its hours; hourly buckets fill hourly periods exactly).

    Parameters
    ----------
    buckets : Buckets
        The served evidence.
    periods : sequence of (start_s, end_s)
        Charge periods of the bill. [s]

    Returns
    -------
    counts : numpy.ndarray
        ``(n_periods, 3)``: requests, input and output tokens in each period.
    covered_s : numpy.ndarray
        Seconds of each period inside the evidence's buckets. [s]
    """
    n = len(periods)
    counts = np.zeros((n, len(COUNT_KEYS)))
    covered = np.zeros(n)
    starts = buckets.start_s.tolist()
    ends_sorted = np.maximum.accumulate(buckets.end_s).tolist() if starts else []
    c_starts = [a for a, _ in buckets.cover]
    for i, (s, e) in enumerate(periods):
        j0 = bisect.bisect_right(ends_sorted, s)
        j1 = bisect.bisect_left(starts, e)
        for j in range(j0, j1):
            b0, b1 = starts[j], float(buckets.end_s[j])
            ov = _overlap(s, e, b0, b1)
            if ov > 0:
                counts[i] += buckets.counts[j] * (ov / (b1 - b0))
        k = max(bisect.bisect_right(c_starts, s) - 1, 0)
        while k < len(buckets.cover) and buckets.cover[k][0] < e:
            covered[i] += _overlap(s, e, *buckets.cover[k])
            k += 1
    return counts, covered


def hour_of_day_rates(buckets: Buckets) -> tuple[np.ndarray, np.ndarray]:
    """Return the observed mean rates by UTC hour of day, and the hours of evidence behind each.

    Each bucket's counts are spread over the clock hours it spans in proportion to the overlap,
    so a bucket coarser than an hour gives a flat profile within it.

    Returns
    -------
    rates : numpy.ndarray
        ``(24, 3)``: mean requests, input tokens and output tokens per second of each hour of
        day (NaN for an hour the evidence never covers). [1/s]
    hours : numpy.ndarray
        Hours of evidence behind each hour of day. [h]
    """
    n = int(HOURS_PER_DAY)
    tot = np.zeros((n, len(COUNT_KEYS)))
    secs = np.zeros(n)
    hour = SECONDS_PER_HOUR
    for b0, b1, c in zip(buckets.start_s, buckets.end_s, buckets.counts, strict=True):
        t = math.floor(b0 / hour) * hour
        while t < b1:
            ov = _overlap(b0, b1, t, t + hour)
            if ov > 0:
                k = int(t // hour) % n
                tot[k] += c * ov / (b1 - b0)
                secs[k] += ov
            t += hour
    covered = (secs > 0)[:, None]
    rates = np.where(covered, tot / np.where(covered, secs[:, None], 1.0), math.nan)
    return rates, secs / hour


def summary_of(results: Sequence[ParseResult]) -> dict[str, Any]:
    """Totals of several served records: requests, tokens, and the calls not counted."""
    keys = (
        "requests",
        "input_tokens",
        "output_tokens",
        "failed_requests",
        "requests_without_usage",
        "requests_without_time",
    )
    out: dict[str, Any] = {k: sum(int(r.summary.get(k) or 0) for r in results) for k in keys}
    models: dict[str, int] = {}
    for r in results:
        for m, n in (r.summary.get("by_model") or {}).items():
            models[m] = models.get(m, 0) + int(n)
    out["by_model"] = models
    out["files"] = [r.path for r in results]
    return out

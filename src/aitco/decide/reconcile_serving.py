"""A service's month in a reconciliation: billed accelerators against the load they carried.

:func:`serving_month` splits the accelerator-hour usage variance of an inference option
(:func:`aitco.cost.variance.serving_usage_split`) with the evidence of what was served
(``--served``: a token-API usage export or a request log, :mod:`aitco.audit.served`) and of what
one replica can serve (a vLLM / SGLang serving benchmark at saturation, ``--logs``), charge
period by charge period of the bill. It also sets the observed service beside the predicted one:
accelerators and replicas billed, the load (mean, peak and the hour-of-day profile against the
scenario's ``qps`` / ``load_profile``), the request shape, the utilisation, and the dollars per
million tokens.

Without served evidence the split is the bill's alone: ``more_replicas`` and ``longer_period``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aitco.calibrate.parsers.base import ParseResult
from aitco.calibrate.served_load import (
    Buckets,
    bill_time_s,
    hour_of_day_rates,
    iso_utc,
    load_in_periods,
    summary_of,
)
from aitco.cost import variance as var
from aitco.cost.breakdown import Breakdown
from aitco.decide.scenario import InferenceWorkload
from aitco.errors import InputError
from aitco.perf.service import hourly_load, read_load_profile
from aitco.units import HOURS_PER_DAY, HOURS_PER_MONTH, MEGA, SECONDS_PER_HOUR

#: A benchmark whose mean request shape (input or output tokens per request) differs from the
#: scenario's by more than this share measures another workload: its capacity is not used.
BENCH_SHAPE_TOLERANCE = 0.10
#: A benchmark served at this share of a finite offered rate or above was not saturated: its
#: throughput is the offered load, not the capacity.
BENCH_SATURATION_SHARE = 0.95
#: Observed tokens per request further than this share from the scenario's are named in a note.
SHAPE_NOTE_TOLERANCE = 0.10
#: Load evidence covering less than this share of the billed span is named in a note.
COVERAGE_NOTE_MIN = 0.95

BASIS = {
    "higher_load": "predicted GPUs x (observed / planned requests/s - 1) x hours covered by the "
    "load evidence x predicted $/GPU-hour",
    "slower_serving": "GPUs the plan's sizing gives the observed load x (predicted / measured "
    "requests/s per GPU - 1) x predicted $/GPU-hour",
    "lower_utilization": "(GPU-hours billed - GPU-hours the observed load needed at the plan's "
    "utilisation and the measured capacity), hours covered by the load evidence, x predicted "
    "$/GPU-hour",
    "more_replicas": "(mean GPUs billed at once - predicted GPUs) x billed hours not covered "
    "by load evidence x predicted $/GPU-hour",
    "longer_period": "predicted GPUs x (billed hours - predicted hours) x predicted $/GPU-hour",
}


@dataclass
class ServingMonth:
    """The variances of a service month's accelerator hours and the service observed.

    Attributes
    ----------
    causes : list of tuple
        ``(cause, usd, basis, detail)`` in :data:`aitco.cost.variance.SERVING_CAUSES` order.
    serving : dict
        The ``serving`` object of the reconciliation JSON.
    usage_gpu_h : dict
        The causes in accelerator-hours (``evidence.usage_gpu_h``).
    unexplained_usd : float
        What the causes leave of the usage variance (rounding; the whole of it when the bill's
        accelerator rows carry no charge period).
    notes : list of str
        What the reader should know.
    """

    causes: list[tuple[str, float, str, dict[str, Any]]] = field(default_factory=list)
    serving: dict[str, Any] = field(default_factory=dict)
    usage_gpu_h: dict[str, Any] = field(default_factory=dict)
    unexplained_usd: float = 0.0
    notes: list[str] = field(default_factory=list)


@dataclass
class _Periods:
    """The bill's accelerator charge periods that carry a readable time, sorted. [s], [GPU-h]."""

    start_s: np.ndarray
    end_s: np.ndarray
    gpu_h: np.ndarray
    unreadable_gpu_h: float

    @classmethod
    def of(cls, slots: dict[tuple[str, str], float]) -> _Periods:
        rows, bad = [], 0.0
        for (s, e), gh in slots.items():
            a, b = bill_time_s(s), bill_time_s(e)
            if a is None or b is None or b <= a:
                bad += gh
            else:
                rows.append((a, b, gh))
        rows.sort()
        arr = np.array(rows, dtype=float).reshape(-1, 3)
        return cls(arr[:, 0], arr[:, 1], arr[:, 2], bad)

    @property
    def hours(self) -> np.ndarray:
        return np.asarray((self.end_s - self.start_s) / SECONDS_PER_HOUR, dtype=float)

    def pairs(self) -> list[tuple[float, float]]:
        return list(zip(self.start_s.tolist(), self.end_s.tolist(), strict=True))


def gpus_per_replica(b: Breakdown) -> float:
    """Return the accelerators of one replica of a priced service (total GPUs / replicas)."""
    reps = b.values.get("replicas")
    return float(b.gpus) / float(reps) if reps else 1.0


def bench_capacity(
    benches: Sequence[ParseResult], w: InferenceWorkload, per_replica: float
) -> tuple[float | None, dict[str, Any], list[str]]:
    """Return the measured requests/s one accelerator serves at saturation, from benchmarks.

    The highest ``request_throughput`` of the runs of the scenario's request shape (mean
    input and output tokens per request within :data:`BENCH_SHAPE_TOLERANCE`) that saturated
    the server (``request_rate`` infinite, or served below :data:`BENCH_SATURATION_SHARE` of
    it), over the accelerators of one replica: a benchmark is taken to run against one replica.

    Returns
    -------
    tuple
        ``(requests/s per GPU or None, the run used, notes)``.
    """
    best: tuple[float, dict[str, Any]] | None = None
    notes: list[str] = []
    for r in benches:
        for rec in r.records:
            tput = rec.get("request_throughput")
            done = rec.get("completed")
            if not isinstance(tput, float) or not tput > 0 or not done:
                continue
            shape = (
                float(rec.get("total_input_tokens") or 0.0) / float(done),
                float(rec.get("total_output_tokens") or 0.0) / float(done),
            )
            plan = (float(w.input_tokens), float(w.output_tokens))
            if any(
                abs(x / p - 1) > BENCH_SHAPE_TOLERANCE for x, p in zip(shape, plan, strict=True)
            ):
                notes.append(
                    f"benchmark {r.path}: {shape[0]:.0f} input / {shape[1]:.0f} output tokens per "
                    f"request against the scenario's {plan[0]:.0f} / {plan[1]:.0f}: its capacity "
                    "is for another workload, not used"
                )
                continue
            rate = rec.get("request_rate")
            if (
                isinstance(rate, float)
                and math.isfinite(rate)
                and tput >= BENCH_SATURATION_SHARE * rate
            ):
                notes.append(
                    f"benchmark {r.path}: it served its offered {rate:g} requests/s, so it did not "
                    "saturate the server: its throughput is not a capacity, not used"
                )
                continue
            if best is None or tput > best[0]:
                best = (tput, {"path": r.path, "request_throughput": tput,
                               "input_tokens_per_request": shape[0],
                               "output_tokens_per_request": shape[1],
                               "max_concurrency": rec.get("max_concurrency")})  # fmt: skip
    if best is None:
        return None, {}, notes
    return best[0] / per_replica, best[1], notes


def planned_profile(w: InferenceWorkload, b: Breakdown) -> list[float] | None:
    """Return the scenario's 24 hourly arrival rates: its ``load_profile``, else a flat ``qps``."""
    prof = w.load_profile
    if prof is None:
        q = b.values.get("requests_per_s")
        return [float(q)] * int(HOURS_PER_DAY) if q else None
    if isinstance(prof, str) and prof != "diurnal":
        prof = read_load_profile(prof, "workload.load_profile")
    return [float(x) for x in hourly_load(prof, float(w.qps or 0.0))]


def serving_month(
    b: Breakdown,
    w: InferenceWorkload,
    *,
    q_p: float,
    q_b: float,
    p_p: float,
    slots: dict[tuple[str, str], float],
    span_h: float | None,
    served: Sequence[ParseResult] = (),
    benches: Sequence[ParseResult] = (),
    telemetry: dict[str, Any] | None = None,
    tokens_served: float | None = None,
    billed_usd: float = 0.0,
) -> ServingMonth:
    """Split a service month's accelerator-hour usage variance and describe the service.

    Parameters
    ----------
    b : Breakdown
        ``compare``'s option (``values``: ``requests_per_s``, ``requests_per_s_capacity``,
        ``replicas``, ``utilization``, ``tokens``...).
    w : InferenceWorkload
        The scenario's workload.
    q_p, q_b : float
        Predicted and billed accelerator-hours. [GPU-h]
    p_p : float
        Predicted price. [USD/GPU-h]
    slots : dict
        Accelerator-hours billed per ``(start, end)`` charge period (normalised bill times).
    span_h : float or None
        From the first to the last charge period. [h]
    served : sequence of ParseResult
        What the service served (:func:`aitco.audit.served.read_served`).
    benches : sequence of ParseResult
        vLLM / SGLang serving benchmarks.
    telemetry : dict, optional
        DCGM / nvidia-smi hours per accelerator (busy share: ``observed_utilization``).
    tokens_served : float, optional
        ``--tokens``: the tokens served, when no served evidence gives them.
    billed_usd : float
        The bill in scope (for the billed $/M tokens). [USD]
    """
    out = ServingMonth()
    usage_usd = float(var.usage_variance_usd(q_b, q_p, p_p))
    if not span_h:
        out.notes.append("the bill's accelerator rows carry no charge period: usage not split")
        out.unexplained_usd = usage_usd
        return out
    per = gpus_per_replica(b)
    h_plan = float(w.months) * HOURS_PER_MONTH
    g = q_p / h_plan if h_plan else float(b.gpus)
    periods = _Periods.of(slots)
    lam_p = float(b.values.get("requests_per_s") or 0.0)
    cap_p = float(b.values.get("requests_per_s_capacity") or 0.0) / float(b.gpus or 1)
    cap_m, bench_run, bench_notes = bench_capacity(benches, w, per)
    out.notes += bench_notes
    ratio = cap_p / cap_m if cap_m and cap_p else 1.0
    buckets = Buckets.of(served)
    counts = np.zeros((periods.start_s.size, 3))
    covered_h = np.zeros(periods.start_s.size)
    if served:
        counts, covered_s = load_in_periods(buckets, periods.pairs())
        covered_h = covered_s / SECONDS_PER_HOUR
        if not covered_h.sum():
            raise InputError(
                "--served",
                ", ".join(r.path for r in served),
                f"requests served inside the bill's charge period "
                f"({iso_utc(periods.start_s.min(initial=math.inf)) or '?'} to "
                f"{iso_utc(periods.end_s.max(initial=-math.inf)) or '?'}); the evidence covers "
                f"{iso_utc(buckets.start_s.min(initial=math.inf)) or '?'} to "
                f"{iso_utc(buckets.end_s.max(initial=-math.inf)) or '?'}",
            )
    load = np.divide(
        counts[:, 0], covered_h * SECONDS_PER_HOUR, out=np.zeros_like(covered_h),
        where=covered_h > 0,
    )  # fmt: skip
    split = var.serving_usage_split(
        predicted_gpus=g, predicted_h=h_plan, billed_span_h=span_h, period_h=periods.hours,
        period_gpu_h=periods.gpu_h, covered_h=covered_h, load_per_s=load,
        planned_load_per_s=lam_p if served else 0.0, capacity_ratio=ratio,
    )  # fmt: skip
    causes: tuple[str, ...] = var.SERVING_CAUSES if served else ("more_replicas", "longer_period")
    explained = 0.0
    for c in causes:
        usd = split[c] * p_p
        explained += usd
        out.causes.append((c, usd, BASIS[c], {"gpu_h": split[c], **_detail(c, float(b.gpus), g,
                           h_plan, span_h, periods, covered_h, lam_p, load, ratio)}))  # fmt: skip
    out.unexplained_usd = usage_usd - explained
    out.usage_gpu_h = {
        "billed_gpu_h": q_b,
        "predicted_gpu_h": q_p,
        **{f"{c}_gpu_h": split[c] for c in causes},
        "unexplained_gpu_h": (q_b - q_p) - sum(split[c] for c in causes),
    }
    if periods.unreadable_gpu_h:
        out.notes.append(
            f"{periods.unreadable_gpu_h:.4g} GPU-hours billed without a readable charge period: "
            "not split (unexplained)"
        )
    out.serving = _service(
        b, w, g=g, per=per, q_p=q_p, q_b=q_b, span_h=span_h, periods=periods,
        telemetry=telemetry, billed_usd=billed_usd,
    )  # fmt: skip
    out.serving["benchmarks"] = [
        {k: rec.get(k) for k in ("request_throughput", "output_throughput", "mean_ttft_ms")}
        for r in benches
        for rec in r.records
    ] or None
    if out.serving["benchmarks"] is None:
        del out.serving["benchmarks"]
    _capacity(out, cap_p, cap_m, bench_run, served=bool(served))
    _load(out, b, w, buckets, served, counts, covered_h, periods, span_h, lam_p, cap_m or cap_p)
    _tokens(out, b, served, counts, tokens_served, billed_usd)
    return out


def _detail(
    cause: str,
    gpus: float,
    g: float,
    h_plan: float,
    span_h: float,
    periods: _Periods,
    covered_h: np.ndarray,
    lam_p: float,
    load: np.ndarray,
    ratio: float,
) -> dict[str, Any]:
    cov = float(covered_h.sum())
    lam = float(np.sum(load * covered_h) / cov) if cov else None
    billed = float(periods.gpu_h.sum())
    if cause == "longer_period":
        return {"billed_span_h": span_h, "predicted_h": h_plan, "predicted_mean_gpus": g}
    if cause == "more_replicas":
        return {
            "mean_gpus_billed": billed / span_h if span_h else None,
            "predicted_gpus": gpus,
            "predicted_mean_gpus": g,
            "billed_span_h": span_h,
            "hours_without_load_evidence": span_h - cov,
        }
    base = {
        "predicted_mean_gpus": g,
        "load_covered_h": cov,
        "planned_requests_per_s": lam_p,
        "observed_requests_per_s": lam,
    }
    if cause == "slower_serving":
        return {**base, "capacity_ratio_predicted_to_measured": ratio}
    if cause == "lower_utilization":
        need = var.load_gpu_h(g, covered_h, load, lam_p) * ratio
        return {
            **base,
            "billed_gpu_h_covered": float(
                var.covered_gpu_h(periods.hours, periods.gpu_h, covered_h).sum()
            ),
            "needed_gpu_h_at_plan_utilization": float(need.sum()),
        }
    return base


def _service(
    b: Breakdown,
    w: InferenceWorkload,
    *,
    g: float,
    per: float,
    q_p: float,
    q_b: float,
    span_h: float,
    periods: _Periods,
    telemetry: dict[str, Any] | None,
    billed_usd: float,
) -> dict[str, Any]:
    """Return the service as billed: accelerators and replicas at once, period by period."""
    at_once = np.sort(np.divide(periods.gpu_h, periods.hours, out=np.zeros_like(periods.gpu_h),
                                where=periods.hours > 0))  # fmt: skip
    n = at_once.size
    tel = telemetry or {}
    busy = tel.get("busy_h")
    mean_b = q_b / span_h
    return {
        "predicted_gpus": float(b.gpus),
        "predicted_mean_gpus": g,
        "predicted_replicas": b.values.get("replicas"),
        "gpus_per_replica": per,
        "mean_gpus_billed": mean_b,
        "peak_gpus_billed": float(at_once[-1]) if n else None,
        "min_gpus_billed": float(at_once[0]) if n else None,
        "median_gpus_billed": float(at_once[n // 2]) if n else None,
        "mean_replicas_billed": mean_b / per,
        "peak_replicas_billed": float(at_once[-1]) / per if n else None,
        "median_replicas_billed": float(at_once[n // 2]) / per if n else None,
        "predicted_gpu_h": q_p,
        "billed_gpu_h": q_b,
        "billed_span_h": span_h,
        "predicted_h": float(w.months) * HOURS_PER_MONTH,
        "predicted_utilization": b.values.get("utilization"),
        "observed_utilization": busy / tel["observed_h"]
        if busy is not None and tel.get("observed_h")
        else None,
        "predicted_tokens": b.values.get("tokens"),
        "planned_input_tokens_per_request": float(w.input_tokens),
        "planned_output_tokens_per_request": float(w.output_tokens),
        "served_tokens": None,
        "predicted_usd_per_million_tokens": b.values.get("usd_per_million_tokens"),
        "billed_usd_per_million_tokens": None,
        "predicted_usd_per_million_output_tokens": b.values.get("usd_per_million_output_tokens"),
        "billed_usd_per_million_output_tokens": None,
        "billed_usd": billed_usd,
    }


def _capacity(
    out: ServingMonth, cap_p: float, cap_m: float | None, run: dict[str, Any], *, served: bool
) -> None:
    s = out.serving
    s["predicted_capacity_per_gpu_requests_per_s"] = cap_p or None
    s["measured_capacity_per_gpu_requests_per_s"] = cap_m
    s["capacity_vs_predicted"] = cap_m / cap_p if cap_m and cap_p else None
    if run:
        s["capacity_benchmark"] = run
    elif served:
        out.notes.append(
            "no serving benchmark at saturation (--logs): the capacity per GPU is taken as "
            "predicted, so slower serving than predicted shows as lower utilization"
        )


def _load(
    out: ServingMonth,
    b: Breakdown,
    w: InferenceWorkload,
    buckets: Buckets,
    served: Sequence[ParseResult],
    counts: np.ndarray,
    covered_h: np.ndarray,
    periods: _Periods,
    span_h: float,
    lam_p: float,
    cap_gpu: float,
) -> None:
    """Add the load observed against the plan: rates, hour-of-day profile, utilisation."""
    s = out.serving
    s["predicted_requests_per_s"] = lam_p or None
    plan = planned_profile(w, b)
    if not served:
        s["load_profile"] = {"hours_utc": list(range(int(HOURS_PER_DAY))),
                             "planned_requests_per_s": plan}  # fmt: skip
        return
    cov = float(covered_h.sum())
    req = float(counts[:, 0].sum())
    lam = req / (cov * SECONDS_PER_HOUR) if cov else None
    rates = np.divide(counts[:, 0], covered_h * SECONDS_PER_HOUR,
                      out=np.full_like(covered_h, np.nan), where=covered_h > 0)  # fmt: skip
    gpu_cov = float(var.covered_gpu_h(periods.hours, periods.gpu_h, covered_h).sum())
    by_hour, ev_h = hour_of_day_rates(buckets)
    tok_in, tok_out = float(w.input_tokens), float(w.output_tokens)
    s.update(
        served_requests=req,
        observed_requests_per_s=lam,
        peak_requests_per_s=float(np.nanmax(rates)) if np.isfinite(rates).any() else None,
        load_vs_plan=lam / lam_p if lam is not None and lam_p else None,
        load_covered_h=cov,
        load_covers_fraction=cov / span_h if span_h else None,
        observed_load_utilization=req / (gpu_cov * cap_gpu * SECONDS_PER_HOUR)
        if gpu_cov and cap_gpu
        else None,
        load_profile={
            "hours_utc": list(range(int(HOURS_PER_DAY))),
            "observed_requests_per_s": _finite_list(by_hour[:, 0]),
            "planned_requests_per_s": plan,
            "observed_input_tokens_per_s": _finite_list(by_hour[:, 1]),
            "planned_input_tokens_per_s": [q * tok_in for q in plan] if plan else None,
            "observed_output_tokens_per_s": _finite_list(by_hour[:, 2]),
            "planned_output_tokens_per_s": [q * tok_out for q in plan] if plan else None,
            "evidence_h": [float(x) for x in ev_h],
        },
        served_evidence=summary_of(served),
    )
    if lam is not None and s.get("peak_requests_per_s"):
        s["peak_to_mean"] = s["peak_requests_per_s"] / lam
    if cov < COVERAGE_NOTE_MIN * span_h:
        out.notes.append(
            f"the served evidence covers {cov:,.1f} of the {span_h:,.1f} billed hours: the "
            "hours it misses stay in more_replicas"
        )
    if buckets.overlap_s > 0:
        out.notes.append(
            f"served buckets overlap for {buckets.overlap_s / SECONDS_PER_HOUR:,.1f} h: the "
            "requests of those hours are counted twice (one usage export per period)"
        )
    for r in served:
        if r.meta.get("warning"):
            out.notes.append(f"{r.path}: {r.meta['warning']}")


def _finite_list(x: np.ndarray) -> list[float | None]:
    return [float(v) if math.isfinite(v) else None for v in x]


def _tokens(
    out: ServingMonth,
    b: Breakdown,
    served: Sequence[ParseResult],
    counts: np.ndarray,
    tokens_served: float | None,
    billed_usd: float,
) -> None:
    """Tokens served, the request shape, and the billed dollars per million tokens."""
    s = out.serving
    req = float(counts[:, 0].sum())
    if served and req:
        s["observed_input_tokens_per_request"] = float(counts[:, 1].sum()) / req
        s["observed_output_tokens_per_request"] = float(counts[:, 2].sum()) / req
        _shape_note(out)
    tokens = tokens_served
    out_tokens = None
    if tokens is None and served:
        tokens = float(counts[:, 1].sum() + counts[:, 2].sum())
        out_tokens = float(counts[:, 2].sum())
        s["served_tokens_source"] = "served evidence, inside the billed span"
    elif tokens is not None:
        s["served_tokens_source"] = "--tokens"
    s["served_tokens"] = tokens
    if tokens:
        s["billed_usd_per_million_tokens"] = billed_usd / tokens * MEGA
        plan = b.values.get("tokens")
        if plan:
            s["traffic_vs_plan"] = tokens / float(plan)
    if out_tokens:
        s["billed_usd_per_million_output_tokens"] = billed_usd / out_tokens * MEGA


def _shape_note(out: ServingMonth) -> None:
    s = out.serving
    for what in ("input", "output"):
        got = s.get(f"observed_{what}_tokens_per_request")
        want = s.get(f"planned_{what}_tokens_per_request")
        if got is not None and want and abs(got / want - 1) > SHAPE_NOTE_TOLERANCE:
            out.notes.append(
                f"requests carried {got:,.0f} {what} tokens on average against the scenario's "
                f"{want:,.0f}: the load in requests/s weighs them as planned ones"
            )

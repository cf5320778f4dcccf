"""Spot and multi-cloud arbitrage: a price-threshold placement policy over a price trace.

A price trace is a CSV of ``timestamp, offer, usd_per_hour`` rows (the header names the
columns, in any order; ``provider`` may stand for ``offer``), optionally with ``gpus`` (GPUs per
instance, to turn an instance price into a GPU price), ``capacity_gpus`` (GPUs obtainable from
the offer) and ``interrupted`` (1 when the offer preempted its instances at that time). Prices
hold until the offer's next row; an offer is unavailable before its first row and when its price
is empty.

The policy serves a fleet of ``gpus`` accelerators (inference replicas, which may live in any
cloud) step by step: it fills the fleet from the cheapest offers priced at or below the
threshold, up to each offer's capacity, and places the rest on a fallback (on-demand) price.
Every GPU that starts on an offer loses ``restart_h`` of work (boot and model load); a preemption
loses the same on every GPU of the offer. Output tokens are produced by the GPU-hours that are
not lost, so the cost per million tokens counts both the price and the churn. The baseline puts
the whole fleet on one offer (falling back when it is unavailable).

The simulation is vectorised over time (sort, cumulative sums and differences of a
time x offer matrix).
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.cost.offers import ineligibility, span_ineligibility
from aitco.errors import InputError, ParseError, UnknownIdError
from aitco.fileio import read_text
from aitco.limits import MAX_GPUS, MAX_USD_PER_GPU_HOUR
from aitco.units import MEGA, SECONDS_PER_HOUR

REQUIRED_COLUMNS = ("timestamp", "offer", "usd_per_hour")
OPTIONAL_COLUMNS = ("gpus", "capacity_gpus", "interrupted")
#: ``provider`` is accepted as the name of the ``offer`` column.
ALIASES = {"provider": "offer"}
FALLBACK = "fallback"


@dataclass
class PriceTrace:
    """A parsed price trace: a time grid and per-offer matrices (forward-filled).

    Attributes
    ----------
    times : numpy.ndarray
        Sorted unique timestamps. [s since the epoch]
    offers : list of str
        Offer names (columns of the matrices).
    usd_per_gpu_hour : numpy.ndarray
        (T, O) price per GPU-hour, NaN where unavailable. [USD/GPU-h]
    capacity_gpus : numpy.ndarray
        (O,) GPUs obtainable from each offer (inf when not given). [count]
    interrupted : numpy.ndarray
        (T, O) 1 where the offer preempted its instances at that time.
    rows : int
        Data rows read.
    gpus_per_instance : numpy.ndarray
        (O,) GPUs of one instance of each offer (the ``gpus`` column; 1 when not given).
    """

    times: np.ndarray
    offers: list[str]
    usd_per_gpu_hour: np.ndarray
    capacity_gpus: np.ndarray
    interrupted: np.ndarray
    rows: int
    gpus_per_instance: np.ndarray | None = None


def _parse_time(raw: str) -> float:
    s = raw.strip()
    try:
        return float(s)
    except ValueError:
        pass
    t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def read_price_trace(path: str | Path) -> PriceTrace:
    """Read a price-trace CSV; a malformed line raises :class:`ParseError` naming line and column.

    Lines starting with ``#`` and blank lines are skipped.
    """
    p = Path(path)
    text = read_text(p, field="PRICE_TRACE")  # a regular file, at most MAX_FILE_BYTES
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines())]
    body = [(n, ln) for n, ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not body:
        raise ParseError(str(p), "empty price trace (no header)")
    hdr_line, hdr = body[0]
    header = [ALIASES.get(h.strip().lower(), h.strip().lower()) for h in next(csv.reader([hdr]))]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ParseError(
            str(p),
            f"header lacks column(s) {', '.join(missing)} (need {', '.join(REQUIRED_COLUMNS)}; "
            f"got {', '.join(header)})",
            line=hdr_line,
        )
    col = {c: header.index(c) for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if c in header}
    recs: list[tuple[float, str, float, float, float, int]] = []
    per_instance: dict[str, int] = {}
    for n, ln in body[1:]:
        cells = next(csv.reader([ln]))
        if len(cells) != len(header):
            raise ParseError(str(p), f"expected {len(header)} columns, got {len(cells)}", line=n)

        def cell(name: str, cells: list[str] = cells) -> str:
            return cells[col[name]].strip()

        try:
            t = _parse_time(cell("timestamp"))
        except ValueError as exc:
            raise ParseError(
                str(p), f"column 'timestamp': {cell('timestamp')!r} is not a time", line=n
            ) from exc
        offer = cell("offer")
        if not offer:
            raise ParseError(str(p), "column 'offer': empty offer name", line=n)
        raw = cell("usd_per_hour")
        price = math.nan
        if raw:
            try:
                price = float(raw)
            except ValueError as exc:
                raise ParseError(
                    str(p), f"column 'usd_per_hour': {raw!r} is not a number", line=n
                ) from exc
            if not math.isfinite(price) or price < 0:
                raise ParseError(str(p), f"column 'usd_per_hour': {raw!r} must be >= 0", line=n)
        vals: dict[str, float] = {}
        for name, default in (("gpus", 1.0), ("capacity_gpus", math.inf), ("interrupted", 0.0)):
            if name in col and cell(name):
                try:
                    vals[name] = float(cell(name))
                except ValueError as exc:
                    raise ParseError(
                        str(p), f"column '{name}': {cell(name)!r} is not a number", line=n
                    ) from exc
                x = vals[name]
                unlimited = name == "capacity_gpus" and x == math.inf
                if not (unlimited or 0 <= x <= MAX_GPUS) or (name == "gpus" and x == 0):
                    raise ParseError(
                        str(p), f"column '{name}': {cell(name)!r} out of range", line=n
                    )
            else:
                vals[name] = default
        if price / vals["gpus"] > MAX_USD_PER_GPU_HOUR:  # the range of --usd-per-gpu-hour
            raise ParseError(
                str(p), f"column 'usd_per_hour': {raw!r} is more than {MAX_USD_PER_GPU_HOUR:g} "
                "USD per GPU-hour", line=n,
            )  # fmt: skip
        recs.append((t, offer, price / vals["gpus"], vals["capacity_gpus"], vals["interrupted"], n))
        per_instance[offer] = max(per_instance.get(offer, 1), round(vals["gpus"]))
    if not recs:
        raise ParseError(str(p), "no data rows after the header", line=hdr_line)
    offers = sorted({r[1] for r in recs})
    times = np.unique(np.array([r[0] for r in recs]))
    oi = {o: j for j, o in enumerate(offers)}
    price_m = np.full((times.size, len(offers)), np.nan)
    set_m = np.zeros((times.size, len(offers)), dtype=bool)
    intr = np.zeros((times.size, len(offers)))
    cap = np.full(len(offers), np.inf)
    for t, o, pr, c, it, _n in recs:
        i = int(np.searchsorted(times, t))
        j = oi[o]
        price_m[i, j] = pr
        set_m[i, j] = True
        intr[i, j] = max(intr[i, j], 1.0 if it > 0 else 0.0)
        if math.isfinite(c):
            cap[j] = c
    # forward-fill each offer's price from its last row (an empty price = unavailable)
    idx = np.where(set_m, np.arange(times.size)[:, None], -1)
    np.maximum.accumulate(idx, axis=0, out=idx)
    filled = np.where(idx >= 0, price_m[np.maximum(idx, 0), np.arange(len(offers))], np.nan)
    gpi = np.array([per_instance[o] for o in offers], dtype=np.int64)
    return PriceTrace(times, offers, filled, cap, intr, len(recs), gpi)


def offer_eligibility(
    trace: PriceTrace, gpus: int, gpus_per_replica: int, catalog: Catalog | None = None
) -> dict[str, str]:
    """Why each trace offer cannot host the fleet's replicas (compare's eligibility rules).

    A replica of ``gpus_per_replica`` accelerators that spans instances needs a cluster network
    (:func:`aitco.cost.offers.span_ineligibility`); an offer named as in the catalog is judged
    by :func:`aitco.cost.offers.ineligibility` (its network, its instance size, its
    ``max_instances``), any other by the trace's ``gpus`` column with no network stated.

    Returns
    -------
    dict
        ``{offer: reason}`` of the offers that cannot host a replica (empty when all can).
    """
    out: dict[str, str] = {}
    per = trace.gpus_per_instance
    for j, name in enumerate(trace.offers):
        known = catalog.offers.get(name) if catalog is not None else None
        if known is not None:
            why = ineligibility(known, gpus, gpus_per_replica)
        else:
            a = 1 if per is None else int(per[j])
            why = span_ineligibility(name, min(gpus_per_replica, gpus), a, None)
        if why is not None:
            out[name] = why
    return out


def simulate(
    trace: PriceTrace,
    *,
    gpus: int,
    threshold_usd_per_gpu_hour: float | None,
    fallback_usd_per_gpu_hour: float,
    tokens_per_s_per_gpu: float,
    restart_h: float = 0.25,
    only_offer: str | None = None,
) -> dict[str, Any]:
    r"""Run the placement policy (or the single-offer baseline) over the trace.

    Parameters
    ----------
    trace : PriceTrace
        Prices per GPU-hour over time.
    gpus : int
        Fleet size to keep running. [count]
    threshold_usd_per_gpu_hour : float or None
        Use an offer only while its price is at or below this (None: any price).
    fallback_usd_per_gpu_hour : float
        Price of the fallback capacity (on-demand) for GPUs no offer provides. [USD/GPU-h]
    tokens_per_s_per_gpu : float
        Output tokens one working GPU produces per second. [tokens/s]
    restart_h : float
        Work lost by each GPU that starts on an offer or is preempted. [h]
    only_offer : str, optional
        Baseline: use this offer alone (and the fallback).

    Returns
    -------
    dict
        ``total_usd``, ``gpu_hours``, ``useful_gpu_hours``, ``tokens``,
        ``usd_per_million_tokens``, ``effective_usd_per_gpu_h`` (``total_usd / gpu_hours``),
        ``starts``, ``preemptions``, ``share_by_offer``.

    Notes
    -----
    At step *k* (duration :math:`\Delta_k` to the next timestamp; the last step has the median
    step length), offers priced :math:`\le` the threshold are sorted by price and filled up to
    capacity: :math:`a_{k,o} = \min(c_o, \max(0, g - \sum_{o' < o} c_{o'}))`. Starts are
    :math:`\max(0, a_{k,o} - a_{k-1,o})` (plus every GPU of an offer when it is preempted);
    lost GPU-hours :math:`= (\text{starts}) \cdot t_{restart}`. Cost
    :math:`= \sum_k \Delta_k (\sum_o a_{k,o} p_{k,o} + a_{k,fb} p_{fb})`; tokens
    :math:`= 3600\,\tau\,(\sum a \Delta - \text{lost})`.
    """
    if gpus < 1:
        raise InputError("--gpus", gpus, "an integer >= 1")
    if tokens_per_s_per_gpu <= 0:
        raise InputError("--tokens-per-s-per-gpu", tokens_per_s_per_gpu, "a throughput > 0")
    if fallback_usd_per_gpu_hour < 0:
        raise InputError("--fallback-usd-per-gpu-hour", fallback_usd_per_gpu_hour, "a price >= 0")
    price = trace.usd_per_gpu_hour.copy()
    cap = trace.capacity_gpus.copy()
    if only_offer is not None:
        if only_offer not in trace.offers:
            raise UnknownIdError("offer", only_offer, trace.offers, field="--baseline")
        keep = np.array([o == only_offer for o in trace.offers])
        price[:, ~keep] = np.nan
    n_o = price.shape[1]
    steps = np.diff(trace.times) / SECONDS_PER_HOUR
    last = float(np.median(steps)) if steps.size else 1.0
    dt_h = np.append(steps, last)
    usable = np.isfinite(price)
    if threshold_usd_per_gpu_hour is not None:
        usable &= price <= threshold_usd_per_gpu_hour
    key = np.where(usable, price, np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    cap_fleet = np.minimum(cap, float(gpus))  # an offer never supplies more than the fleet
    cap_sorted = np.where(np.take_along_axis(usable, order, axis=1), cap_fleet[order], 0.0)
    before = np.cumsum(cap_sorted, axis=1) - cap_sorted
    alloc_sorted = np.minimum(cap_sorted, np.maximum(gpus - before, 0.0))
    alloc = np.zeros_like(alloc_sorted)
    np.put_along_axis(alloc, order, alloc_sorted, axis=1)
    fb = gpus - alloc.sum(axis=1)
    prev = np.vstack([np.zeros((1, n_o)), alloc[:-1]])
    starts = np.maximum(alloc - prev, 0.0)
    preempt = alloc * (trace.interrupted > 0)
    fb_prev = np.append(0.0, fb[:-1])
    fb_starts = np.maximum(fb - fb_prev, 0.0)
    lost = np.minimum(
        (starts + preempt).sum(axis=1) * restart_h + fb_starts * restart_h, gpus * dt_h
    )
    spend = (np.nan_to_num(alloc * price).sum(axis=1) + fb * fallback_usd_per_gpu_hour) * dt_h
    gpu_h = gpus * dt_h
    useful = gpu_h - lost
    tokens = float(np.sum(useful)) * tokens_per_s_per_gpu * SECONDS_PER_HOUR
    total = float(spend.sum())
    share = {o: float(np.sum(alloc[:, j] * dt_h)) for j, o in enumerate(trace.offers)}
    share[FALLBACK] = float(np.sum(fb * dt_h))
    tot_h = float(gpu_h.sum())
    return {
        "total_usd": total,
        "gpu_hours": tot_h,
        "useful_gpu_hours": float(useful.sum()),
        "lost_gpu_hours": float(lost.sum()),
        "tokens": tokens,
        "usd_per_million_tokens": total / (tokens / MEGA) if tokens > 0 else None,
        "effective_usd_per_gpu_h": total / tot_h if tot_h > 0 else None,
        "starts": float(starts.sum() + fb_starts.sum()),
        "preemptions": float(preempt.sum()),
        "share_by_offer": {k: v / tot_h for k, v in share.items() if v > 0},
    }


def arbitrage(
    trace_path: str | Path,
    *,
    gpus: int = 8,
    threshold_usd_per_gpu_hour: float | None = None,
    fallback_usd_per_gpu_hour: float | None = None,
    tokens_per_s_per_gpu: float = 1000.0,
    restart_h: float = 0.25,
    baseline: str | None = None,
    gpus_per_replica: int = 1,
    catalog: Catalog | None = None,
) -> dict[str, Any]:
    """Simulate the threshold policy and every single-offer baseline over a price trace.

    Offers that cannot host a replica under ``compare``'s eligibility rules
    (:func:`offer_eligibility`: a replica that spans instances needs a cluster network) are
    left out of the policy and of the baselines, with the reason (``ineligible_offers``).

    Parameters
    ----------
    trace_path : path
        Price-trace CSV.
    gpus : int
        Fleet size. [count]
    threshold_usd_per_gpu_hour : float, optional
        Price cap of the policy; default the fallback price (use spot while it is cheaper).
    fallback_usd_per_gpu_hour : float, optional
        On-demand fallback price; default the highest price seen in the trace.
    tokens_per_s_per_gpu : float
        Throughput of one working GPU. [tokens/s]
    restart_h : float
        Work lost per start or preemption. [h]
    baseline : str, optional
        Offer of the single-offer baseline (default: the one cheapest over the trace).
    gpus_per_replica : int
        Accelerators of one replica, which must share a network. [count]
    catalog : Catalog, optional
        Catalog whose offers (by id) the trace may name: their network and instance limits.

    Returns
    -------
    dict
        ``policy`` and ``baseline`` results, ``baselines`` (every eligible offer alone),
        ``ineligible_offers`` (``{offer: reason}``) and ``savings_vs_baseline`` (fraction of
        the baseline's $/Mtok saved).
    """
    if gpus_per_replica < 1:
        raise InputError("--gpus-per-replica", gpus_per_replica, "an integer >= 1")
    tr = read_price_trace(trace_path)
    ineligible = offer_eligibility(tr, gpus, gpus_per_replica, catalog)
    if ineligible:  # never placed: the policy and the baselines see no price for them
        drop = np.array([o in ineligible for o in tr.offers])
        tr.usd_per_gpu_hour[:, drop] = np.nan
    seen = tr.usd_per_gpu_hour[np.isfinite(tr.usd_per_gpu_hour)]
    if seen.size == 0 and ineligible:
        raise InputError(
            "--gpus-per-replica", gpus_per_replica, "a replica some offer of the trace can host",
            hint="; ".join(ineligible.values()),
        )  # fmt: skip
    if seen.size == 0:
        raise InputError("usd_per_hour", "all empty", "at least one price in the trace")
    fb = float(seen.max()) if fallback_usd_per_gpu_hour is None else fallback_usd_per_gpu_hour
    thr = fb if threshold_usd_per_gpu_hour is None else threshold_usd_per_gpu_hour

    def run(threshold: float | None, only: str | None = None) -> dict[str, Any]:
        return simulate(
            tr,
            gpus=gpus,
            threshold_usd_per_gpu_hour=threshold,
            fallback_usd_per_gpu_hour=fb,
            tokens_per_s_per_gpu=tokens_per_s_per_gpu,
            restart_h=restart_h,
            only_offer=only,
        )

    policy = run(thr)
    singles = {o: run(None, o) for o in tr.offers if o not in ineligible}
    if baseline in ineligible:
        raise InputError("--baseline", baseline, "an offer that can host a replica",
                         hint=ineligible[baseline])  # fmt: skip
    if baseline is None:
        baseline = min(singles, key=lambda o: singles[o]["usd_per_million_tokens"] or math.inf)
    elif baseline not in singles:
        raise UnknownIdError("offer", baseline, tr.offers, field="--baseline")
    base = singles[baseline]
    p, b = policy["usd_per_million_tokens"], base["usd_per_million_tokens"]
    return {
        "trace": str(trace_path),
        "n_rows": tr.rows,
        "offers": tr.offers,
        "trace_h": float((tr.times[-1] - tr.times[0]) / SECONDS_PER_HOUR)
        if tr.times.size > 1
        else 0.0,
        "gpus": gpus,
        "gpus_per_replica": gpus_per_replica,
        "ineligible_offers": ineligible,
        "threshold_usd_per_gpu_h": thr,
        "fallback_usd_per_gpu_h": fb,
        "tokens_per_s_per_gpu": tokens_per_s_per_gpu,
        "restart_h": restart_h,
        "policy": policy,
        "baseline_offer": baseline,
        "baseline": base,
        "baselines": singles,
        "usd_per_million_tokens": p,
        "baseline_usd_per_million_tokens": b,
        "savings_vs_baseline": (b - p) / b if p is not None and b else None,
    }

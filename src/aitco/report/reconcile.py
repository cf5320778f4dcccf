"""The reconcile section of a report: a waterfall from predicted to billed, the variance table.

Works on the JSON of a reconciliation (:meth:`aitco.decide.reconcile.Reconciliation.to_json`,
what ``aitco reconcile --json`` prints), so a saved result can be put in a report later
(``aitco report SCENARIO -o report.html --reconcile reconcile.json``). The waterfall is an inline
SVG drawn here (no plotting library, nothing fetched): one bar per step, the running total
carried from the predicted bill to the billed one, on a dollar axis that starts at zero (bar
lengths keep their proportions; a variance of a few percent is a short bar with its amount
written beside it). It comes in two widths, like the report's charts: the desktop one
(:data:`WIDE_W` px) and the phone one (:data:`NARROW_W` px, each label above its bar); the page
shows the one that fits (``report.css``), always at its own size, so every label is
:data:`FONT_PX` px on screen (:func:`svg_min_font_px` reads it back for the tests).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from aitco.errors import InputError
from aitco.fileio import read_text
from aitco.formatting import num, pct, usd

#: Waterfall geometry: label column, bar area and value column widths, row height. [px]
LABEL_W = 210
BAR_W = 430
VALUE_W = 110
ROW_H = 26
PAD = 10
#: Width of the desktop waterfall. [px]
WIDE_W = LABEL_W + BAR_W + VALUE_W
#: Width of the phone waterfall: the content column of a 390 px phone screen, as the report's
#: phone charts (:data:`aitco.report.plots.NARROW_WIDTH_IN` at its DPI). [px]
NARROW_W = 330
#: Row height of the phone waterfall: a label line above a bar. [px]
NARROW_ROW_H = 40
#: Font size of every label of the waterfall: shown at its own size, 13 px on screen, above the
#: 11 px floor of the charts (:data:`aitco.report.plots.MIN_FONT_PT` at its DPI). [px]
FONT_PX = 13
#: Amounts below this print as $0.00 (they are exact in the JSON). [USD]
HALF_CENT_USD = 0.005
#: Colours (Okabe-Ito, as the report's plots): totals, increases, decreases.
TOTAL_COLOUR = "#0072B2"
UP_COLOUR = "#D55E00"
DOWN_COLOUR = "#009E73"
#: Readable names of the causes.
CAUSE_LABELS = {
    "predicted": "predicted (compare)",
    "price": "price",
    "slower_steps": "slower steps",
    "restarts_lost_work": "restarts and lost work",
    "idle_waiting": "idle and waiting",
    "more_instances_longer_period": "more instances / longer",
    "higher_load": "higher load",
    "slower_serving": "slower serving",
    "lower_utilization": "lower utilisation",
    "more_replicas": "more replicas",
    "longer_period": "longer period",
    "usage": "usage (other items)",
    "predicted_not_billed": "predicted, not billed",
    "billed_not_predicted": "billed, not predicted",
    "unexplained": "unexplained",
    "billed": "billed",
}


def waterfall_steps(out: dict[str, Any]) -> list[tuple[str, float, float, float]]:
    """Return the steps ``(cause, usd, start, end)`` from predicted to billed, one per cause.

    Parameters
    ----------
    out : dict
        A reconciliation's JSON.
    """
    by: dict[str, float] = {}
    for v in out["variances"]:
        by[v["cause"]] = by.get(v["cause"], 0.0) + float(v["usd"])
    steps = [("predicted", float(out["predicted_usd"]), 0.0, float(out["predicted_usd"]))]
    run = float(out["predicted_usd"])
    for cause, x in [*by.items(), ("unexplained", float(out["unexplained_usd"]))]:
        steps.append((cause, x, run, run + x))
        run += x
    steps.append(("billed", float(out["billed_usd"]), 0.0, float(out["billed_usd"])))
    return steps


def axis_range(steps: list[tuple[str, float, float, float]]) -> tuple[float, float]:
    """Return the dollar range of the waterfall's axis: from zero (or the lowest negative total).

    Every bar is drawn to scale from the zero line, so their lengths keep their proportions.
    """
    vals = [b for _, _, _, b in steps] + [a for _, _, a, _ in steps]
    low, hi = min(vals), max(vals)
    return min(low, 0.0), max(hi, 0.0) or 1.0


def _bar_colour(cause: str, val: float) -> str:
    if cause in ("predicted", "billed"):
        return TOTAL_COLOUR
    return UP_COLOUR if val > 0 else DOWN_COLOUR


def _amount(cause: str, val: float) -> str:
    sign = "" if cause in ("predicted", "billed") or val < HALF_CENT_USD else "+"
    return f"{sign}{escape(usd(val))}"


def waterfall_svg(out: dict[str, Any], *, narrow: bool = False) -> Markup:
    """Draw the waterfall as an inline SVG (labels escaped), desktop or phone width.

    Parameters
    ----------
    out : dict
        A reconciliation's JSON.
    narrow : bool
        The phone variant (:data:`NARROW_W` px wide, each label and amount above its bar).
    """
    steps = waterfall_steps(out)
    lo, hi = axis_range(steps)
    span = hi - lo or 1.0
    left, bar_w = (PAD, NARROW_W - 2 * PAD) if narrow else (LABEL_W, BAR_W)
    row_h = NARROW_ROW_H if narrow else ROW_H

    def x(v: float) -> float:
        return left + (v - lo) / span * bar_w

    width = NARROW_W if narrow else WIDE_W
    height = 2 * PAD + row_h * len(steps)
    kind = "waterfall waterfall-narrow" if narrow else "waterfall"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{kind}" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}" role="img" '
        'aria-label="From the predicted bill to the billed one">'
    ]
    zero = x(0.0)
    parts.append(
        f'<line x1="{zero:.1f}" y1="{PAD}" x2="{zero:.1f}" y2="{height - PAD}" stroke="#555"/>'
    )
    for i, (cause, val, a, b) in enumerate(steps):
        y = PAD + i * row_h
        bar_y = y + (row_h - ROW_H) + 4
        x0, x1 = sorted((x(a), x(b)))
        label = escape(CAUSE_LABELS.get(cause, cause))
        if narrow:  # the label and its amount on a line above the bar
            parts.append(
                f'<text x="{PAD + 4}" y="{y + FONT_PX}" font-size="{FONT_PX}">{label}: '
                f"{_amount(cause, val)}</text>"
            )
        else:
            parts.append(
                f'<text x="{LABEL_W - 8}" y="{y + ROW_H * 0.65:.1f}" text-anchor="end" '
                f'font-size="{FONT_PX}">{label}</text>'
                f'<text x="{LABEL_W + BAR_W + 6}" y="{y + ROW_H * 0.65:.1f}" '
                f'font-size="{FONT_PX}">{_amount(cause, val)}</text>'
            )
        parts.append(
            f'<rect x="{x0:.1f}" y="{bar_y}" width="{max(x1 - x0, 1.0):.1f}" '
            f'height="{ROW_H - 8}" fill="{_bar_colour(cause, val)}"><title>{label}: '
            f"{escape(usd(val))}</title></rect>"
        )
        if i and i < len(steps) - 1 and not narrow:
            parts.append(
                f'<line x1="{x(a):.1f}" y1="{bar_y - row_h + ROW_H - 8}" x2="{x(a):.1f}" '
                f'y2="{bar_y}" stroke="#888" stroke-dasharray="2,2"/>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def svg_min_font_px(svg: str) -> float:
    """Return the smallest ``font-size`` of an SVG's texts, in px at its own size."""
    sizes = [float(m) for m in re.findall(r'font-size="([0-9.]+)"', svg)]
    return min(sizes) if sizes else math.inf


def section_context(out: dict[str, Any]) -> dict[str, Any]:
    """Return what the ``reconcile.html.j2`` partial renders."""
    billed = float(out["billed_usd"]) or 0.0
    rows = [
        {
            "cause": CAUSE_LABELS.get(v["cause"], v["cause"]),
            "key": v["cause"],
            "item": v["item"],
            "usd": usd(0.0 if abs(v["usd"]) < HALF_CENT_USD else v["usd"]),
            "share": pct(v["usd"] / billed) if billed else "-",
            "basis": v.get("basis", ""),
        }
        for v in sorted(out["variances"], key=lambda v: -abs(v["usd"]))
    ]
    err = out.get("prediction_error_fraction")
    return {
        "rec": out,
        "svg": waterfall_svg(out),
        "svg_narrow": waterfall_svg(out, narrow=True),
        "axis_start": usd(axis_range(waterfall_steps(out))[0]),
        "serving_rows": serving_rows(out.get("serving")),
        "profile_rows": profile_rows(out.get("serving")),
        "rows": rows,
        "unexplained": usd(out["unexplained_usd"]),
        "unexplained_share": pct(out["unexplained_usd"] / billed) if billed else "-",
        "predicted": usd(out["predicted_usd"]),
        "billed": usd(billed),
        "error": f"{usd(out['prediction_error_usd'])} ({pct(err) if err is not None else '-'})",
        "item_rows": [
            {
                "item": r["item"],
                "predicted": usd(r["predicted_usd"]),
                "billed": usd(r["billed_usd"]),
                "error": usd(r["prediction_error_usd"]),
                "error_pct": pct(r["prediction_error_fraction"])
                if r["prediction_error_fraction"] is not None
                else "-",
            }
            for r in out["items"]
        ],
        "out_of_scope": [
            {
                "scope": g["scope"],
                "label": g["label"],
                "usd": usd(g["billed_usd"]),
                "rows": g["rows"],
            }
            for g in out.get("out_of_scope", [])
        ],
        "out_of_scope_usd": usd(out.get("out_of_scope_usd")),
    }


def _pair(a: Any, b: Any, digits: int = 3) -> str:
    return f"{num(a, digits)} / {num(b, digits)}"


def serving_rows(s: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """Return the service month as rows ``(quantity, predicted, billed or observed)``.

    The terminal table and the HTML section show these rows (one place formats them); hours
    are the one time unit, rates are per second.
    """
    if not s:
        return []
    plan = s.get("load_profile", {}).get("planned_requests_per_s") or []
    rows = [
        ("accelerators at once (mean / peak)", num(s.get("predicted_mean_gpus"), 3),
         _pair(s.get("mean_gpus_billed"), s.get("peak_gpus_billed"))),
        ("replicas at once (mean / peak)", num(s.get("predicted_replicas"), 3),
         _pair(s.get("mean_replicas_billed"), s.get("peak_replicas_billed"))),
        ("hours", num(s.get("predicted_h"), 4), num(s.get("billed_span_h"), 4)),
        ("GPU-hours", num(s.get("predicted_gpu_h"), 4), num(s.get("billed_gpu_h"), 4)),
        ("requests/s (mean)", num(s.get("predicted_requests_per_s"), 3),
         num(s.get("observed_requests_per_s"), 3)),
        ("requests/s (busiest hour)", num(max(plan) if plan else None, 3),
         num(s.get("peak_requests_per_s"), 3)),
        ("requests/s one GPU serves", num(s.get("predicted_capacity_per_gpu_requests_per_s"), 3),
         num(s.get("measured_capacity_per_gpu_requests_per_s"), 3)),
        ("utilisation (load / capacity billed)", pct(s.get("predicted_utilization")),
         pct(s.get("observed_load_utilization"))),
        ("tokens per request (input / output)",
         _pair(s.get("planned_input_tokens_per_request"),
               s.get("planned_output_tokens_per_request"), 4),
         _pair(s.get("observed_input_tokens_per_request"),
               s.get("observed_output_tokens_per_request"), 4)),
        ("tokens", num(s.get("predicted_tokens"), 4), num(s.get("served_tokens"), 4)),
        ("$ per million tokens", usd(s.get("predicted_usd_per_million_tokens")),
         usd(s.get("billed_usd_per_million_tokens"))),
        ("$ per million output tokens", usd(s.get("predicted_usd_per_million_output_tokens")),
         usd(s.get("billed_usd_per_million_output_tokens"))),
    ]  # fmt: skip
    if s.get("observed_utilization") is not None:
        rows.append(("busy share (telemetry)", "-", pct(s.get("observed_utilization"))))
    return rows


def profile_rows(s: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """Return the load profile as rows ``(hour of day UTC, planned, observed)`` [requests/s].

    Empty when no served evidence gave an observed profile.
    """
    prof = (s or {}).get("load_profile") or {}
    obs = prof.get("observed_requests_per_s")
    if not obs:
        return []
    plan = prof.get("planned_requests_per_s") or [None] * len(obs)
    return [
        (f"{h:02d}:00", num(p, 3), num(o, 3))
        for h, p, o in zip(prof.get("hours_utc", range(len(obs))), plan, obs, strict=False)
    ]


def load_reconcile_json(path: str | Path) -> dict[str, Any]:
    """Read the JSON ``aitco reconcile --json`` printed (for ``aitco report --reconcile``)."""
    p = Path(path)
    text = read_text(p, field="--reconcile")  # a regular file, at most MAX_FILE_BYTES
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError("--reconcile", str(p), f"JSON ({exc.msg}, line {exc.lineno})") from exc
    except RecursionError:
        raise InputError("--reconcile", str(p), "JSON nested less deeply") from None
    keys = ("predicted_usd", "billed_usd", "variances", "unexplained_usd")
    if not isinstance(doc, dict) or any(k not in doc for k in keys):
        raise InputError(
            "--reconcile", str(p), "the JSON of `aitco reconcile --json` (" + ", ".join(keys) + ")"
        )
    return doc

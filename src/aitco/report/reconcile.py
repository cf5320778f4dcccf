"""The reconcile section of a report: a waterfall from predicted to billed, the variance table.

Works on the JSON of a reconciliation (:meth:`aitco.decide.reconcile.Reconciliation.to_json`,
what ``aitco reconcile --json`` prints), so a saved result can be put in a report later
(``aitco report SCENARIO -o report.html --reconcile reconcile.json``). The waterfall is an inline
SVG drawn here (no plotting library, nothing fetched): one bar per step, the running total
carried from the predicted bill to the billed one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from aitco.errors import InputError
from aitco.fileio import read_text
from aitco.formatting import pct, usd

#: Waterfall geometry: label column, bar area and value column widths, row height. [px]
LABEL_W = 210
BAR_W = 430
VALUE_W = 110
ROW_H = 26
PAD = 10
#: Share of the range of running totals left below the smallest one on the axis.
AXIS_MARGIN = 0.6
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
    """Return the dollar range of the waterfall's axis.

    From 0 when a running total is negative; otherwise from :data:`AXIS_MARGIN` of the range
    below the smallest running total, so that variances of a few percent stay visible (the
    total bars are then cut at the axis start, which the caption states).
    """
    vals = [b for _, _, _, b in steps] + [
        a for c, _, a, _ in steps if c not in ("predicted", "billed")
    ]
    low, hi = min(vals), max(vals)
    if low <= 0:
        return min(low, 0.0), max(hi, 0.0) or 1.0
    return max(0.0, low - AXIS_MARGIN * (hi - low)), hi


def waterfall_svg(out: dict[str, Any]) -> Markup:
    """Draw the waterfall as an inline SVG (labels escaped)."""
    steps = waterfall_steps(out)
    lo, hi = axis_range(steps)
    span = hi - lo or 1.0

    def x(v: float) -> float:
        return LABEL_W + (v - lo) / span * BAR_W

    width = LABEL_W + BAR_W + VALUE_W
    height = 2 * PAD + ROW_H * len(steps)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="waterfall" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}" role="img" '
        'aria-label="From the predicted bill to the billed one">'
    ]
    for i, (cause, val, a, b) in enumerate(steps):
        y = PAD + i * ROW_H
        total = cause in ("predicted", "billed")
        colour = TOTAL_COLOUR if total else UP_COLOUR if val > 0 else DOWN_COLOUR
        x0, x1 = sorted((max(x(a), LABEL_W), max(x(b), LABEL_W)))  # totals cut at the axis
        label = escape(CAUSE_LABELS.get(cause, cause))
        parts.append(
            f'<text x="{LABEL_W - 8}" y="{y + ROW_H * 0.65:.1f}" text-anchor="end" '
            f'font-size="13">{label}</text>'
        )
        parts.append(
            f'<rect x="{x0:.1f}" y="{y + 4}" width="{max(x1 - x0, 1.0):.1f}" '
            f'height="{ROW_H - 8}" fill="{colour}"><title>{label}: {escape(usd(val))}</title>'
            "</rect>"
        )
        if i and i < len(steps) - 1:
            parts.append(
                f'<line x1="{x(a):.1f}" y1="{y - ROW_H + 4}" x2="{x(a):.1f}" y2="{y + 4}" '
                'stroke="#888" stroke-dasharray="2,2"/>'
            )
        sign = "" if total or val < HALF_CENT_USD else "+"
        parts.append(
            f'<text x="{LABEL_W + BAR_W + 6}" y="{y + ROW_H * 0.65:.1f}" font-size="13">'
            f"{sign}{escape(usd(val))}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


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
        "axis_start": usd(axis_range(waterfall_steps(out))[0]),
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

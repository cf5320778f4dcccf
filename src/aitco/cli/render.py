"""Rendering helpers shared by every command: JSON to stdout, rich tables, explanations."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any, get_args

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from aitco.decide.scenario import PricingMode
from aitco.explain import Estimate
from aitco.formatting import TIME_KEYS_H, num, time_unit
from aitco.labels import DISPLAY_UNITS, LABELS, display_scale, label

#: The pricing modes, as every ``--pricing`` option's help lists them.
PRICING_MODES = ", ".join(get_args(PricingMode))

console = Console()
err_console = Console(stderr=True, soft_wrap=True)


def _default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "isoformat"):
        return o.isoformat()
    if hasattr(o, "model_dump"):
        return o.model_dump()
    return str(o)


def _clean(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_clean(v) for v in o]
    return o


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (non-finite floats become null)."""
    sys.stdout.write(json.dumps(_clean(obj), indent=2, default=_default) + "\n")
    sys.stdout.flush()


def fmt(x: Any, digits: int = 3) -> str:
    """Format a number compactly (thousands separators, significant digits).

    Same rules as the reports' :func:`aitco.formatting.num`, with 3 significant digits by default.
    """
    return num(x, digits)


def table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, caption: str | None = None
) -> Table:
    """Build a rich table from rows of values (numbers are formatted with :func:`fmt`).

    A column named by a JSON key (``wall_clock_h``, ``ttft_s``) is titled with its label and
    shown in its display unit, as in the reports and the web app: latencies of a token in ms
    (:data:`aitco.labels.DISPLAY_UNITS`), durations in the table's one time unit (hours, or days
    beyond a few). Titles are plain text (``[ms]`` is a unit, not markup).
    """
    rows = [list(r) for r in rows]
    t = Table(title=title, caption=caption, show_lines=False)
    scales = []
    for i, c in enumerate(columns):
        head, scale = c, 1.0
        if c in TIME_KEYS_H:
            unit, per_h = time_unit(r[i] * TIME_KEYS_H[c] for r in rows if _is_num(r[i]))
            head, scale = f"{label(c)} [{unit}]", TIME_KEYS_H[c] / per_h
        elif "_" in c and (c in LABELS or c in DISPLAY_UNITS):
            head, scale = label(c), display_scale(c)
        scales.append(scale)
        t.add_column(escape(head), justify="left" if i == 0 else "right", overflow="fold")
    for r in rows:
        t.add_row(
            *(
                v if isinstance(v, str) else fmt(v * k if _is_num(v) else v)
                for v, k in zip(r, scales, strict=False)
            )
        )
    return t


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def print_explain(est: Estimate) -> None:
    """Print the terms of an estimate: value, unit, formula, inputs, and the dominant term."""
    t = Table(title=f"How the {est.kind} estimate was reached", show_lines=True)
    for c in ("term", "value", "unit", "formula", "inputs"):
        t.add_column(c)
    for term in est.terms:
        inputs = ", ".join(
            f"{k}={fmt(v) if not isinstance(v, str) else v}" for k, v in term.inputs.items()
        )
        name = f"[bold]{term.name}[/bold]" if term.name == est.dominant else term.name
        t.add_row(name, fmt(term.value), term.unit, term.formula, inputs)
    console.print(t)
    if est.dominant:
        console.print(f"Dominant term: [bold]{est.dominant}[/bold]")
    for a in est.assumptions:
        console.print(f"  - {a}")

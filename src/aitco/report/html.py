"""Self-contained HTML report: tables, itemised breakdown and plots inlined as base64 PNG.

The file works offline: no script, no font and no image is fetched from anywhere; plots are
PNG data URIs and the stylesheet is inlined. The Jinja2 templates live in
``aitco/report/templates`` and are shared with the web app, which renders the same comparison
partial.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from aitco import __version__
from aitco.decide.roi import summary_text_rows
from aitco.formatting import (
    TIME_KEYS_H,
    duration_h,
    in_time_unit,
    num,
    option_hours,
    pct,
    usd,
    usd_si,
    value,
)
from aitco.labels import category_label, display_scale, label, short_label
from aitco.report import plots
from aitco.report.model import COMMITTED_KEYS, HEADLINE_KEYS, ReportData
from aitco.report.plots import report_figures
from aitco.report.reconcile import section_context

if TYPE_CHECKING:  # pragma: no cover
    import jinja2

TEMPLATES = "templates"


def templates_dir() -> Path:
    """Folder of the report templates (shared with the web app)."""
    return Path(str(resources.files("aitco.report") / TEMPLATES))


def fmt_months(x: Any) -> str:
    """Format a payback period in months (``not within horizon`` when None)."""
    if not isinstance(x, int | float):
        return "not within horizon"
    return f"{x:.1f} months"


def roi_rows(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    """ROI summary rows ``(key, label, text)``: the names and values ``aitco roi FILE`` prints."""
    return summary_text_rows(res)


def environment(extra_dirs: Sequence[Path] = ()) -> jinja2.Environment:
    """Jinja2 environment over the report templates (and ``extra_dirs`` first), autoescaped."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*(str(d) for d in extra_dirs), str(templates_dir())]),
        autoescape=jinja2.select_autoescape(["html", "j2", "xml"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        usd=usd,
        usd_si=usd_si,
        pct=pct,
        num=num,
        fmt_months=fmt_months,
        label=label,
        short_label=short_label,
        value=value,
        duration_h=duration_h,
        cell=cell,
        header=header,
        category_label=category_label,
        category_colour=category_colour,
        is_link=is_link,
        linkify=linkify,
        roi_rows=roi_rows,
    )
    return env


#: Two options whose times differ by less than this fraction are tied for fastest.
TIE_FRACTION = 0.01


#: A web address inside a source's text (trailing punctuation is not part of it).
URL_RE = re.compile(r"https?://[^\s<>\"']+[^\s<>\"'.,;:)\]]")


def linkify(text: Any) -> Markup:
    """Escape a source's text and make every web address in it a link a reader can click."""
    out, last = [], 0
    s = str(text)
    for m in URL_RE.finditer(s):
        url = m.group(0)
        out.append(escape(s[last : m.start()]))
        out.append(Markup('<a href="{0}" rel="noopener noreferrer">{0}</a>').format(url))
        last = m.end()
    out.append(escape(s[last:]))
    return Markup("").join(out)


def is_link(s: Any) -> bool:
    """Return True when a source is a web address a reader can click."""
    return isinstance(s, str) and s.startswith(("https://", "http://"))


def category_colour(category: str) -> str:
    """Colour of a cost category, the same in every chart and in the page's bars."""
    return plots.category_colour(category)


#: Latency objectives of a service shown on its card: (value key, scenario key of the target).
SLO_KEYS: tuple[tuple[str, str, str], ...] = (
    ("ttft_s", "slo_ttft_ms", "TTFT"),
    ("tpot_s", "slo_tpot_ms", "TPOT"),
)


def surface_time_unit(data: ReportData) -> tuple[str, float]:
    """Return the one time unit of a report or page (:meth:`ReportData.time_unit`)."""
    return data.time_unit()


def _hours(values: Any) -> float | None:
    return option_hours(values)


def cell(key: str, x: Any, unit: tuple[str, float]) -> str:
    """Format a table cell: durations in the surface's time unit, the rest by :func:`value`."""
    if key in TIME_KEYS_H:
        if not isinstance(x, int | float) or isinstance(x, bool):
            return "-"
        return f"{num(float(x) * TIME_KEYS_H[key] / unit[1], 3)}"
    return value(key, x)


def header(key: str, unit: tuple[str, float]) -> str:
    """Title a column: durations carry the surface's time unit (``Time to finish [h]``)."""
    return f"{label(key)} [{unit[0]}]" if key in TIME_KEYS_H else label(key)


def slo_rows(o: Any, scenario: Any) -> list[dict[str, Any]]:
    """Return a service option's latencies against the scenario's objectives (its card).

    Each row: ``name`` (TTFT, TPOT), ``text`` (the value in the display unit), ``target`` (the
    objective, or ""), ``missed`` (True when the value is above its objective).
    """
    wl = (scenario or {}).get("workload") or {}
    out = []
    for key, target_key, name in SLO_KEYS:
        v = o.values.get(key)
        if not isinstance(v, int | float) or isinstance(v, bool) or v != v:
            continue
        shown = float(v) * display_scale(key)
        target = wl.get(target_key)
        missed = isinstance(target, int | float) and shown > float(target)
        out.append(
            {
                "name": name,
                "text": f"{num(shown, 3)} ms",
                "target": f"{num(float(target), 3)} ms" if target is not None else "",
                "missed": bool(missed),
            }
        )
    return out


def verdict(data: ReportData) -> str:
    """Say the answer in one line: the cheapest feasible option, by how much, and the fastest.

    Examples
    --------
    >>> from aitco.report.model import report_from_options
    >>> from aitco.cost.tco import Breakdown
    >>> def opt(name, usd, days):
    ...     b = Breakdown(name=name, hardware="x", pricing="on_demand", gpus=8)
    ...     b.add("rental", usd, "compute")
    ...     b.values["wall_clock_days"] = days
    ...     return b.finalize()
    >>> print(verdict(report_from_options("t", [opt("a", 1000.0, 0.5), opt("b", 700.0, 1.0)])))
    Cheapest: b, $700 in 24 h ($300 less than a). Fastest: a, 12 h.
    """
    ok = _feasible(data)
    n = len(data.options)
    by_name = {o.name: o for o in ok}
    cheap = by_name.get(data.cheapest)
    if cheap is None and data.verdict:  # the comparison chose nothing: its own words
        return data.verdict[:1].upper() + data.verdict[1:] + "."
    if cheap is None:  # a report made by hand: no option can run
        why = "; ".join(sorted({r for o in data.options for r in o.infeasible_reasons}))
        return f"None of the {n} options is feasible, so none is cheapest or fastest" + (
            f": {why}." if why else "."
        )
    unit = surface_time_unit(data)
    per_month = cheap.values.get("usd_per_month")
    if isinstance(per_month, int | float) and not isinstance(per_month, bool):
        text = f"Cheapest: {cheap.name}, {usd(per_month)}/month"
        months = cheap.values.get("horizon_months")
        if isinstance(months, int | float) and months != 1:
            text += f" ({usd(cheap.total_usd)} over {num(months, 3)} months)"
    else:
        text = f"Cheapest: {cheap.name}, {usd(cheap.total_usd)}"
    h = _hours(cheap.values)
    text += f" in {in_time_unit(h, unit)}" if h is not None else ""
    rest = sorted((o for o in ok if o is not cheap), key=lambda o: o.total_usd)
    if rest:
        text += f" ({usd(rest[0].total_usd - cheap.total_usd)} less than {rest[0].name})"
    fast = by_name.get(data.fastest)
    if fast is not None and fast is not cheap:
        fh = _hours(fast.values)
        lat = fast.latency_s()
        if fh is not None:
            text += f". Fastest: {fast.name}, {in_time_unit(fh, unit)}"
        elif lat is not None:
            text += f". Fastest: {fast.name}, {num(lat, 3)} s end to end"
    bad = n - len(ok)
    if bad:
        text += f". {bad} of {n} options not feasible"
    return text + "."


def _feasible(data: ReportData) -> list[Any]:
    """Return the options the comparison found feasible (:attr:`ReportData.feasible_options`)."""
    names = set(data.feasible_options)
    if not names and data.cheapest:  # a report made by hand without the feasible names
        names = {o.name for o in data.options if o.is_feasible}
    return [o for o in data.options if o.name in names]


def _days(o: Any) -> float | None:
    v = o.values.get("wall_clock_days")
    return float(v) if isinstance(v, int | float) and v == v else None


def _cheapest_mark(o: Any, others: list[Any]) -> tuple[str, str]:
    """Return the card mark of the comparison's cheapest option: how much less than the next."""
    nxt = min(others, key=lambda p: p.total_usd, default=None)
    why = (
        f"{usd(nxt.total_usd - o.total_usd)} less than {nxt.name}"
        if nxt is not None
        else "the only feasible option"
    )
    return ("cheap", f"cheapest: {why}")


def _fastest_mark(o: Any, others: list[Any], unit: tuple[str, float]) -> tuple[str, str] | None:
    """Return the card mark of the comparison's fastest option: sooner, or its latency."""
    d = _days(o)
    if d is not None:
        timed = [(p, t) for p in others if (t := _days(p)) is not None]
        nxt_t = min(timed, key=lambda t: t[1], default=None)
        if nxt_t is None:
            why = "the only timed option"
        elif 24 * (nxt_t[1] - d) <= TIE_FRACTION * 24 * d:
            why = f"tied with {nxt_t[0].name}"
        else:
            why = f"{in_time_unit(24 * (nxt_t[1] - d), unit)} sooner than {nxt_t[0].name}"
        return ("fast", f"fastest: {why}")
    lat = o.latency_s()
    if lat is None:
        return None
    lats = [(p, x) for p in others if (x := p.latency_s()) is not None]
    nxt_l = min(lats, key=lambda t: t[1], default=None)
    why = (
        f"latency {num(lat, 3)} s vs {num(nxt_l[1], 3)} s for {nxt_l[0].name}"
        if nxt_l is not None
        else "the only option with a latency"
    )
    return ("fast", f"fastest: {why}")


def _time_cell(o: Any, unit: tuple[str, float]) -> tuple[str, str]:
    """Return the card's time figure and its key: a duration, or a service's monthly cost."""
    d = _days(o)
    if d is not None:
        return in_time_unit(24 * d, unit), "wall_clock_days"
    if "usd_per_month" not in o.values:
        return "-", "wall_clock_days"
    time = f"{usd(o.values.get('usd_per_month'))}/month"
    unused = o.values.get("committed_term_unused_usd")
    if unused:  # a committed term: the used share and the unused commitment, apart
        used = usd(o.values.get("usd_per_month_used"))
        time += f" ({used}/month used + {usd(unused)} unused commitment)"
    return time, "usd_per_month"


def summary_cards(data: ReportData) -> list[dict[str, Any]]:
    """One card per option, the answer first: total, time, $/M tokens, feasibility and marks.

    The marks render the comparison's choices (``data.cheapest``, ``data.fastest``); nothing
    is chosen here.

    Returns
    -------
    list of dict
        ``name``, ``total`` (money), ``time`` (a duration or a monthly cost) and its
        ``time_label``, ``billing`` (offer, instances, GPUs billed, when given), ``usd_per_mtok``,
        ``feasible``, ``reasons``, ``marks`` (``(css class, text)`` pairs, e.g.
        ``("cheap", "cheapest: $1,200 less than h100 x8")``), ``share`` (of the largest total,
        0-1, for the bar), ``categories`` (``(category, usd, share of the option's total)``)
        and ``slo`` (:func:`slo_rows`).
    """
    opts = data.options
    top = max((abs(o.total_usd) for o in opts if o.total_usd == o.total_usd), default=0.0)
    ok = _feasible(data)
    unit = surface_time_unit(data)
    cards = []
    for o in opts:
        others = [p for p in ok if p is not o]
        marks: list[tuple[str, str]] = []
        if data.cheapest and o.name == data.cheapest:
            marks.append(_cheapest_mark(o, others))
        fast = _fastest_mark(o, others, unit) if data.fastest and o.name == data.fastest else None
        if fast is not None:
            marks.append(fast)
        time, time_key = _time_cell(o, unit)
        total = o.total_usd if o.total_usd == o.total_usd else 0.0
        cats = [(c, v, (v / total if total else 0.0)) for c, v in o.by_category().items()]
        cards.append(
            {
                "name": o.name,
                "total": usd(o.total_usd),
                "time": time,
                "time_label": short_label(time_key),
                "billing": _billing(o.values),
                "usd_per_mtok": usd(o.values.get("usd_per_million_tokens")),
                "feasible": o.is_feasible,
                "reasons": list(o.infeasible_reasons),
                "marks": marks,
                "share": max(0.0, total) / (top or 1.0),
                "categories": cats,
                "slo": slo_rows(o, data.scenario),
            }
        )
    return cards


def _billing(values: Any) -> str:
    """Offer, instances and GPUs billed of an option, when the comparison gives them."""
    parts = []
    inst, billed, offer = (values.get(k) for k in ("instances", "gpus_billed", "offer_id"))
    if isinstance(inst, int | float) and not isinstance(inst, bool):
        parts.append(f"{num(inst)} instance{'s' if inst != 1 else ''}")
    if isinstance(billed, int | float) and not isinstance(billed, bool):
        parts.append(f"{num(billed)} GPUs billed")
    if offer:
        parts.append(f"offer {offer}")
    return " · ".join(parts)


def answer_context(data: ReportData) -> dict[str, Any]:
    """Return what the answer templates (summary, bars, comparison) need: report and web."""
    return {
        "data": data,
        "headline": headline_keys(data),
        "cards": summary_cards(data),
        "verdict": verdict(data),
        "time_unit": surface_time_unit(data),
    }


def headline_keys(data: ReportData) -> list[str]:
    """Headline columns that at least one option has, in :data:`HEADLINE_KEYS` order.

    The committed-term columns (used share, unused commitment) only when an option leaves a
    commitment unused.
    """
    committed = any(o.values.get("committed_term_unused_usd") for o in data.options)
    return [
        k
        for k in HEADLINE_KEYS
        if any(k in o.values for o in data.options) and (committed or k not in COMMITTED_KEYS)
    ]


def figure_views(
    figures: list[tuple[str, str, bytes]], narrow: list[tuple[str, str, bytes]] | None = None
) -> list[dict[str, Any]]:
    """Return the charts as the templates show them: a desktop PNG and its phone variant.

    Each view: ``stem``, ``caption``, ``b64`` and ``narrow_b64`` (base64 PNGs; the phone variant
    is shown on screens up to 600 px, "" when there is none), and ``min_font_px`` /
    ``narrow_min_font_px``, the smallest text of each PNG in pixels at its own size (read from
    the PNG, written by :func:`aitco.report.plots._png`).
    """
    phone = {stem: png for stem, _c, png in (narrow or [])}
    out = []
    for stem, caption, png in figures:
        small = phone.get(stem)
        out.append(
            {
                "stem": stem,
                "caption": caption,
                "b64": base64.b64encode(png).decode("ascii"),
                "narrow_b64": base64.b64encode(small).decode("ascii") if small else "",
                "min_font_px": plots.png_text(png, plots.MIN_FONT_KEY) or "",
                "narrow_min_font_px": (
                    plots.png_text(small, plots.MIN_FONT_KEY) or "" if small else ""
                ),
            }
        )
    return out


def render_html(
    data: ReportData,
    figures: list[tuple[str, str, bytes]] | None = None,
    narrow: list[tuple[str, str, bytes]] | None = None,
) -> str:
    """Render the self-contained HTML report.

    Parameters
    ----------
    data : ReportData
        The report.
    figures : list of (stem, caption, png), optional
        Plots; default :func:`aitco.report.plots.report_figures`.
    narrow : list of (stem, caption, png), optional
        Their phone variants (``report_figures(data, narrow=True)``); without them a phone shows
        each chart at its own size in a box that scrolls sideways, so labels keep their size.

    Returns
    -------
    str
        The HTML document.
    """
    import yaml

    figs = report_figures(data) if figures is None else figures
    # the stylesheet is ours (a package file), inlined as is: escaping it would break its quotes
    css = Markup((templates_dir() / "report.css").read_text(encoding="utf-8"))
    tpl = environment().get_template("report.html.j2")
    return tpl.render(
        **answer_context(data),
        version=__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        css=css,
        figures=figure_views(figs, narrow),
        scenario_yaml=yaml.safe_dump(data.scenario, sort_keys=False) if data.scenario else "",
        r=section_context(data.reconcile) if data.reconcile else None,
    )


def render_reconcile_html(rec: Any) -> str:
    """Render a self-contained HTML page of one reconciliation (a model or its JSON)."""
    out = rec.to_json() if hasattr(rec, "to_json") else rec
    css = Markup((templates_dir() / "report.css").read_text(encoding="utf-8"))
    tpl = environment().get_template("reconcile_page.html.j2")
    return tpl.render(
        r=section_context(out),
        css=css,
        version=__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )

"""PNG plots of a report: breakdown, hidden-cost waterfall, Pareto fronts, ROI, tornado, heatmap.

Each function takes plain data (from :mod:`aitco.report.model`) and returns PNG bytes. Figures are
built with :class:`matplotlib.figure.Figure` on the Agg canvas, never through ``pyplot``, so that
plots are thread-safe in the web app and nothing needs a display. Matplotlib is imported inside
the functions so that ``aitco --help`` stays fast.
"""

from __future__ import annotations

import functools
import io
import math
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aitco.formatting import usd_si
from aitco.labels import category_label, label

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from aitco.report.model import OptionView

#: Colour of each cost category (colour-blind-safe Okabe-Ito palette), others cycle.
CATEGORY_COLOURS: dict[str, str] = {
    "compute": "#0072B2",
    "reliability": "#D55E00",
    "power": "#E69F00",
    "facility": "#F0E442",
    "people": "#CC79A7",
    "data": "#009E73",
    "compliance": "#56B4E9",
    "carbon": "#999999",
}
_EXTRA_COLOURS = ("#8c564b", "#17becf", "#bcbd22", "#7f7f7f")

#: Hidden-cost items smaller than this share of the total are grouped as "other". [fraction]
WATERFALL_MIN_SHARE = 0.01
#: Longest option or item label drawn in a plot (longer ones end with an ellipsis). [characters]
MAX_LABEL_CHARS = 40
#: Heatmaps with at most this many cells print each value in its cell.
MAX_ANNOTATED_CELLS = 120
#: Resolution of the PNGs. [dots per inch]
DPI = 110


def _figure(width_in: float, height_in: float) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def _png(fig: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # when labels leave no room, matplotlib falls back to the plain layout: still a plot
        warnings.filterwarnings("ignore", message="constrained_layout not applied")
        # a name in a script the bundled font lacks is drawn as boxes, not refused
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
        fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _label(name: str) -> str:
    """Printable label of at most :data:`MAX_LABEL_CHARS` characters (with an ellipsis)."""
    name = "".join(ch if ch.isprintable() else "?" for ch in name)
    return name if len(name) <= MAX_LABEL_CHARS else name[: MAX_LABEL_CHARS - 1] + "…"


def _usd_axis(ax: Axes, axis: str = "x") -> None:
    from matplotlib.ticker import FuncFormatter

    f = FuncFormatter(lambda v, _p: _usd_short(v))
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(f)


def _usd_short(v: float) -> str:
    return usd_si(v)


def category_colour(category: str) -> str:
    """Colour of a cost category: :data:`CATEGORY_COLOURS`, else a fixed pick by name.

    The pick depends on the name only (not on the order categories appear in), so that one
    category has one colour in every chart, the report and the web page.
    """
    if category in CATEGORY_COLOURS:
        return CATEGORY_COLOURS[category]
    k = sum(category.encode("utf-8")) % len(_EXTRA_COLOURS)
    return _EXTRA_COLOURS[k]


def _colour(category: str, seen: dict[str, str]) -> str:
    return category_colour(category)


def _align_zero(ax: Axes, ax2: Axes) -> None:
    """Set the limits of twin axes so that their zeros are at the same height."""
    lo1, hi1 = ax.get_ylim()
    lo2, hi2 = ax2.get_ylim()
    lo1, hi1 = min(lo1, 0.0), max(hi1, 0.0)
    lo2, hi2 = min(lo2, 0.0), max(hi2, 0.0)
    # fraction of each axis below zero; use the larger one for both
    f1 = -lo1 / (hi1 - lo1) if hi1 > lo1 else 0.0
    f2 = -lo2 / (hi2 - lo2) if hi2 > lo2 else 0.0
    f = max(f1, f2)
    if f >= 1.0:
        return
    for a, lo, hi in ((ax, lo1, hi1), (ax2, lo2, hi2)):
        if f > 0:
            span = max(hi / (1 - f) if hi > 0 else 0.0, -lo / f if lo < 0 else 0.0)
            a.set_ylim(-f * span, (1 - f) * span)
        else:
            a.set_ylim(0.0, hi)


def _numbered_labels(
    ax: Axes, xs: Sequence[float], ys: Sequence[float], names: Sequence[str]
) -> None:
    """Label points by number and list ``number. name`` beside the axes (no overlaps)."""
    for k, (x, y) in enumerate(zip(xs, ys, strict=True), start=1):
        ax.annotate(
            str(k),
            (x, y),
            textcoords="offset points",
            xytext=(5, 5),
            fontsize=8,
            weight="bold",
            clip_on=True,
        )
    if names:
        key = "\n".join(f"{k}. {_label(n)}" for k, n in enumerate(names, start=1))
        ax.text(1.02, 1.0, key, transform=ax.transAxes, va="top", ha="left", fontsize=8)


def cost_breakdown_png(options: Sequence[OptionView]) -> bytes:
    """Horizontal stacked bars: each option's total split by cost category.

    Parameters
    ----------
    options : sequence of OptionView
        The compared options.

    Returns
    -------
    bytes
        PNG image.
    """
    cats: list[str] = []
    for o in options:
        for c in o.by_category():
            if c not in cats:
                cats.append(c)
    order = [c for c in CATEGORY_COLOURS if c in cats] + [
        c for c in cats if c not in CATEGORY_COLOURS
    ]
    fig, ax = _figure(8.0, 0.55 * len(options) + 1.6)
    ys = list(range(len(options)))
    left = [0.0] * len(options)
    extra: dict[str, str] = {}
    for c in order:
        w = [o.by_category().get(c, 0.0) for o in options]
        ax.barh(
            ys,
            w,
            left=left,
            color=_colour(c, extra),
            label=category_label(c),
            edgecolor="white",
            linewidth=0.5,
        )
        left = [a + b for a, b in zip(left, w, strict=True)]
    for y, o in enumerate(options):
        ax.text(o.total_usd, y, "  " + _usd_short(o.total_usd), va="center", fontsize=8)
    ax.set_yticks(ys, [_label(o.name) for o in options])
    ax.invert_yaxis()
    _usd_axis(ax, "x")
    ax.set_xlim(0, max((o.total_usd for o in options), default=1.0) * 1.18 or 1.0)
    ax.set_xlabel("Total cost [$]")
    ax.set_title("Cost breakdown per option")
    fig.legend(loc="outside lower center", ncols=min(6, len(order)), fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def waterfall_png(option: OptionView) -> bytes:
    """Hidden-cost waterfall: from the advertised compute price to the full TCO.

    Parameters
    ----------
    option : OptionView
        One option.

    Returns
    -------
    bytes
        PNG image.

    Notes
    -----
    The first bar is :meth:`OptionView.rental_usd`; each other item is a floating bar starting
    where the previous one ended (items under :data:`WATERFALL_MIN_SHARE` of the total are
    grouped); the last bar is the total, equal to the sum of every item.
    """
    start = option.rental_usd()
    steps: list[tuple[str, float, str]] = []
    small = 0.0
    for i in option.hidden_items():
        if option.total_usd and abs(i.usd) < WATERFALL_MIN_SHARE * abs(option.total_usd):
            small += i.usd
        else:
            steps.append((i.name, i.usd, i.category))
    if small:
        steps.append(("other (small items)", small, "other"))
    labels = ["compute price", *[_label(s[0]).replace("_", " ") for s in steps], "full TCO"]
    fig, ax = _figure(max(6.5, 0.62 * len(labels) + 2), 4.4)
    extra: dict[str, str] = {}
    ax.bar(0, start, color=CATEGORY_COLOURS["compute"])
    level = start
    levels = [start, option.total_usd]
    for k, (_n, usd, cat) in enumerate(steps, start=1):
        ax.bar(k, usd, bottom=level, color=_colour(cat, extra))
        ax.text(k, level + max(usd, 0), _usd_short(usd), ha="center", va="bottom", fontsize=8)
        level += usd
        levels.append(level)
    # start the axis near the smallest bar so that 1-4 % hidden costs are visible, not slivers
    lo, hi = min(levels), max(levels)
    if lo > 0 and hi > lo:
        ax.set_ylim(max(0.0, lo - 0.6 * (hi - lo)), hi + 0.15 * (hi - lo))
    ax.bar(len(labels) - 1, option.total_usd, color="#333333")
    ax.text(0, start, _usd_short(start), ha="center", va="bottom", fontsize=8)
    ax.text(
        len(labels) - 1,
        option.total_usd,
        _usd_short(option.total_usd),
        ha="center",
        va="bottom",
        fontsize=8,
        weight="bold",
    )
    ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right", fontsize=8)
    _usd_axis(ax, "y")
    ax.set_ylabel(
        r"Cumulative cost [\$] (axis starts at {})".format(
            _usd_short(ax.get_ylim()[0]).replace("$", r"\$")
        )
        if ax.get_ylim()[0] > 0
        else "Cumulative cost [$]"
    )
    uplift = (option.total_usd / start - 1.0) if start > 0 else math.nan
    extra_txt = f": +{uplift:.0%} over the compute price" if math.isfinite(uplift) else ""
    ax.set_title(f"{_label(option.name)}\ncompute price to full TCO{extra_txt}", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def pareto_png(
    points: Sequence[Mapping[str, Any]],
    *,
    xlabel: str,
    title: str,
    x_key: str = "x",
    y_key: str = "total_usd",
) -> bytes:
    """Scatter of options (x to minimise vs cost) with the Pareto front joined by a step line.

    Parameters
    ----------
    points : sequence of mapping
        ``{name, <x_key>, <y_key>, front}`` from :func:`aitco.report.model.pareto_points`.
    xlabel : str
        Label of the x axis, with its unit.
    title : str
        Plot title.
    x_key, y_key : str
        Keys of the coordinates in ``points`` (y in USD).

    Returns
    -------
    bytes
        PNG image.
    """
    fig, ax = _figure(7.0, 4.4)
    off = [p for p in points if not p["front"]]
    xk, yk = x_key, y_key
    on = sorted((p for p in points if p["front"]), key=lambda p: p[xk])
    ax.scatter([p[xk] for p in off], [p[yk] for p in off], c="#999999", label="dominated", zorder=2)
    ax.scatter(
        [p[xk] for p in on], [p[yk] for p in on], c="#D55E00", label="Pareto front", zorder=3
    )
    if len(on) > 1:
        ax.step([p[xk] for p in on], [p[yk] for p in on], where="post", color="#D55E00", alpha=0.6)
    _numbered_labels(
        ax, [p[xk] for p in points], [p[yk] for p in points], [p["name"] for p in points]
    )
    _usd_axis(ax, "y")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Total cost [$]")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def sweep_front_png(front: Mapping[str, Any]) -> bytes:
    """Plot the Pareto front of a sweep: each configuration on the front, joined by a step line.

    Parameters
    ----------
    front : mapping
        :attr:`aitco.report.model.ReportData.sweep_front` (``metrics``: the two minimised
        metrics, the first drawn on the y axis; ``rows``: the front's configurations).

    Returns
    -------
    bytes
        PNG image.
    """
    y_key, x_key = (m.lstrip("-") for m in front["metrics"][:2])
    rows = sorted(
        (
            r
            for r in front["rows"]
            if isinstance(r.get(x_key), int | float) and isinstance(r.get(y_key), int | float)
        ),
        key=lambda r: r[x_key],
    )
    fig, ax = _figure(7.5, 4.6)
    xs = [r[x_key] for r in rows]
    ys = [r[y_key] for r in rows]
    ax.step(xs, ys, where="post", color="#D55E00", alpha=0.6)
    ax.scatter(xs, ys, color="#D55E00", zorder=3, label=f"Pareto front ({len(rows)} plans)")
    names = [
        " ".join(str(r[k]) for k in ("hardware", "gpus", "pricing", "precision") if k in r)
        for r in rows
    ]
    _numbered_labels(ax, xs, ys, names)
    if y_key.endswith("_usd") or "_usd_per_" in y_key or y_key.startswith("usd_per_"):
        _usd_axis(ax, "y")
    if x_key.endswith("_usd") or x_key.startswith("usd_per_"):
        _usd_axis(ax, "x")
    ax.set_xlabel(label(x_key))
    ax.set_ylabel(label(y_key))
    n = front.get("evaluated")
    ax.set_title(
        f"Sweep: {label(y_key)} vs {label(x_key)}"
        + (f" ({n:,} plans evaluated)" if isinstance(n, int) else ""),
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def roi_png(series: Mapping[str, Any]) -> bytes:
    """Cumulative net cash flow and monthly ROI over the horizon, with the payback month.

    Parameters
    ----------
    series : mapping
        A :func:`aitco.decide.roi.roi_series` result.

    Returns
    -------
    bytes
        PNG image.
    """
    months = [r["month"] for r in series["months"]]
    cum = [r["cumulative_usd"] for r in series["months"]]
    roi = [r["roi"] for r in series["months"]]
    fig, ax = _figure(7.5, 4.2)
    ax.axhline(0, color="#333333", linewidth=0.8)
    ax.plot(months, cum, color="#0072B2", linewidth=2, label="Cumulative net cash flow [$]")
    ax.fill_between(months, cum, 0, where=[c < 0 for c in cum], color="#D55E00", alpha=0.15)
    ax.fill_between(months, cum, 0, where=[c >= 0 for c in cum], color="#009E73", alpha=0.15)
    pb = series.get("payback_months")
    if isinstance(pb, int | float):
        ax.axvline(pb, color="#009E73", linestyle="--", linewidth=1)
        ax.text(
            pb, ax.get_ylim()[1], f" payback {pb:.1f} months", va="top", fontsize=8, color="#006644"
        )
    _usd_axis(ax, "y")
    ax.set_xlabel("Month")
    ax.set_ylabel("Cumulative net cash flow [$]")
    ax2 = ax.twinx()
    ax2.plot(months, roi, color="#E69F00", linestyle="--", label="Monthly ROI [ratio]")
    ax2.set_ylabel("Monthly ROI [ratio]")
    _align_zero(ax, ax2)
    npv = series.get("npv_usd")
    title = f"ROI and payback (NPV {_usd_short(npv)})" if isinstance(npv, int | float) else "ROI"
    if series.get("loses_money") and isinstance(npv, int | float):
        title = f"The project loses money (NPV {_usd_short(npv)}): no payback"
    ax.set_title(title)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return _png(fig)


def tornado_png(bars: Sequence[Mapping[str, Any]], *, metric: str = "npv_usd") -> bytes:
    """Sensitivity tornado: the metric at each input's low and high value, widest bar on top.

    Parameters
    ----------
    bars : sequence of mapping
        :func:`aitco.decide.roi.tornado` rows (``input``, ``metric_base``, ``metric_low``,
        ``metric_high``, ``low_value``, ``high_value``).
    metric : str
        Name of the metric, for the axis label.

    Returns
    -------
    bytes
        PNG image.
    """
    rows = [
        b
        for b in bars
        if isinstance(b.get("metric_low"), int | float)
        and isinstance(b.get("metric_high"), int | float)
    ]
    fig, ax = _figure(7.5, 0.45 * max(len(rows), 1) + 1.6)
    if not rows:
        ax.text(0.5, 0.5, "no input moves the metric", ha="center", transform=ax.transAxes)
        return _png(fig)
    base = float(rows[0]["metric_base"])
    names = [label(str(b["input"])) for b in rows]
    lo = [float(b["metric_low"]) - base for b in rows]
    hi = [float(b["metric_high"]) - base for b in rows]
    ax.barh(names, lo, left=base, color="#56B4E9", label="input -swing")
    ax.barh(names, hi, left=base, color="#E69F00", label="input +swing")
    ax.axvline(base, color="#333333", linewidth=1)
    ax.invert_yaxis()
    if metric.endswith("_usd"):
        _usd_axis(ax, "x")
    ax.set_xlabel(label(metric))
    ax.set_title(f"Sensitivity of {label(metric)} (one input at a time)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def utilisation_heatmap_png(
    matrix: Sequence[Sequence[float]],
    devices: Sequence[str],
    times: Sequence[str],
    *,
    idle_threshold: float = 0.3,
    title: str = "Accelerator utilisation",
) -> bytes:
    """Heatmap of utilisation per device over time, idle cells (below the threshold) hatched.

    Parameters
    ----------
    matrix : sequence of sequence of float
        Utilisation per device (rows) and time bin (columns); NaN where there is no sample. [0-1]
    devices : sequence of str
        Row labels.
    times : sequence of str
        Column labels.
    idle_threshold : float
        Utilisation below which a device counts as idle. [0-1]
    title : str
        Plot title.

    Returns
    -------
    bytes
        PNG image.
    """
    import numpy as np
    from matplotlib.patches import Rectangle

    m = np.asarray(matrix, dtype=float)
    fig, ax = _figure(8.0, 0.3 * m.shape[0] + 2.0)
    im = ax.imshow(m, aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
    for r, c in zip(*np.nonzero(np.isfinite(m) & (m < idle_threshold)), strict=True):
        ax.add_patch(
            Rectangle(
                (c - 0.5, r - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#D55E00", linewidth=0
            )
        )
    cells = zip(*np.nonzero(np.isfinite(m)), strict=True) if m.size <= MAX_ANNOTATED_CELLS else ()
    for r, c in cells:
        ax.text(
            c,
            r,
            f"{m[r, c]:.0%}",
            ha="center",
            va="center",
            fontsize=7,
            color="white" if m[r, c] < 0.6 else "black",
        )
    ax.set_yticks(range(len(devices)), devices, fontsize=7)
    step = max(1, len(times) // 10)
    ax.set_xticks(
        range(0, len(times), step),
        [times[i] for i in range(0, len(times), step)],
        rotation=30,
        ha="right",
        fontsize=7,
    )
    cb = fig.colorbar(im, ax=ax)
    cb.set_label("Utilisation [0-1]")
    finite = m[np.isfinite(m)]
    idle_share = float((finite < idle_threshold).mean()) if finite.size else math.nan
    ax.set_title(
        f"{title} (idle < {idle_threshold:.0%}: {idle_share:.0%} of samples, hatched)", fontsize=10
    )
    return _png(fig)


def report_figures(data: Any, only: Collection[str] | None = None) -> list[tuple[str, str, bytes]]:
    """Every plot that applies to a report, as ``(file stem, caption, PNG bytes)``.

    Parameters
    ----------
    data : aitco.report.model.ReportData
        The report.
    only : collection of str, optional
        Stems to render (``breakdown``, ``waterfall_1``..., ``pareto_time``, ``pareto_latency``,
        ``roi``, ``tornado``, ``utilisation``); default all.

    Returns
    -------
    list of tuple
        The stacked breakdown, one waterfall per feasible option (cheapest first), the
        cost-vs-time and cost-vs-latency fronts of the feasible options (when two or more have
        the values), the ROI curve and
        tornado (when ROI inputs were given) and the utilisation heatmap (when telemetry was
        ingested).
    """
    todo: list[tuple[str, str, Callable[[], bytes]]] = []
    # an option that cannot run has no cost (total NaN): it is listed, not plotted
    priced = [o for o in data.options if math.isfinite(o.total_usd)]
    if priced:
        todo.append(
            (
                "breakdown",
                "Cost breakdown per option, by category",
                lambda: cost_breakdown_png(priced),
            )
        )
        # the hidden costs of the options that can run (an infeasible option is no answer)
        runnable = [o for o in priced if o.is_feasible]
        for k, o in enumerate(sorted(runnable, key=lambda o: o.total_usd)):
            todo.append(
                (
                    f"waterfall_{k + 1}",
                    f"Hidden costs of {o.name}: compute price to full TCO",
                    functools.partial(waterfall_png, o),
                )
            )
    if len(data.pareto_time) >= 2:
        todo.append(
            (
                "pareto_time",
                "Cost vs time: the Pareto front",
                lambda: pareto_png(
                    data.pareto_time,
                    xlabel="Time to finish [days]",
                    title="Cost vs time to train",
                    x_key="wall_clock_days",
                ),
            )
        )
    if len(data.pareto_latency) >= 2:
        todo.append(
            (
                "pareto_latency",
                "Cost vs latency: the Pareto front",
                lambda: pareto_png(
                    data.pareto_latency,
                    xlabel="Latency [s]",
                    title="Cost vs latency",
                    x_key="latency_s",
                ),
            )
        )
    if data.sweep_front is not None and data.sweep_front.get("rows"):
        sf = data.sweep_front
        todo.append(
            (
                "pareto_sweep",
                f"Pareto front of the sweep {sf.get('source', '')}".rstrip(),
                lambda: sweep_front_png(sf),
            )
        )
    if data.roi is not None:
        todo.append(("roi", "ROI and payback over the horizon", lambda: roi_png(data.roi)))
    if data.tornado:
        todo.append(
            (
                "tornado",
                f"Sensitivity of {data.tornado_metric} to each input",
                lambda: tornado_png(data.tornado, metric=data.tornado_metric),
            )
        )
    if data.utilisation is not None:
        u = data.utilisation
        todo.append(
            (
                "utilisation",
                f"Utilisation from {u.get('source', 'telemetry')}",
                lambda: utilisation_heatmap_png(
                    u["matrix"],
                    u["devices"],
                    u["times"],
                    idle_threshold=float(u.get("idle_threshold", 0.3)),
                ),
            )
        )
    return [(stem, cap, make()) for stem, cap, make in todo if only is None or stem in only]

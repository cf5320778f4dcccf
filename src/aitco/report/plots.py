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
from aitco.labels import category_label, display_scale, label

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
#: Smallest text in a chart. [pt] At :data:`DPI` it is 8 x 110 / 72 = 12.2 px, so a chart shown
#: at its own size (the report and the web app never enlarge a figure past it) has labels of at
#: least 11 px, the floor the browser tests check on a desktop and a phone.
MIN_FONT_PT = 8.0
#: Width of a chart's phone variant (``narrow=True``): 330 px, the width of a 390 px phone
#: screen's content column, so the phone shows it at about its own size. [in]
NARROW_WIDTH_IN = 3.0
#: Widest chart on a desktop: 1,100 px at :data:`DPI`, inside the report's and the web page's
#: content column at 1400 px, so a desktop never shrinks a chart. [in]
MAX_WIDTH_IN = 10.0
#: PNG text key holding the smallest font of a chart in pixels at its own size.
MIN_FONT_KEY = "aitco:min-font-px"


def _figure(width_in: float, height_in: float, narrow: bool = False) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    width = NARROW_WIDTH_IN if narrow else min(width_in, MAX_WIDTH_IN)
    fig = Figure(figsize=(width, height_in), dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def _min_font_px(fig: Figure) -> float:
    """Return the smallest font of the figure's visible texts, in pixels at its own size."""
    from matplotlib.text import Text

    sizes = [
        float(t.get_fontsize())
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_figure() is not None
    ]
    return min(sizes, default=MIN_FONT_PT) * DPI / 72.0


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
    # drawn once: the tick labels exist now; their smallest font goes in a text chunk
    return _with_text(buf.getvalue(), MIN_FONT_KEY, f"{_min_font_px(fig):.2f}")


def _with_text(png: bytes, key: str, value: str) -> bytes:
    """Return ``png`` with a ``tEXt`` chunk ``key`` = ``value`` after its header chunk."""
    import struct
    import zlib

    data = key.encode("latin-1") + b"\x00" + value.encode("latin-1")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data
    chunk += struct.pack(">I", zlib.crc32(b"tEXt" + data) & 0xFFFFFFFF)
    (ihdr_len,) = struct.unpack(">I", png[8:12])
    end = 8 + 12 + ihdr_len  # signature, then IHDR (length, type, data, crc)
    return png[:end] + chunk + png[end:]


def png_text(png: bytes, key: str) -> str | None:
    """Return the value of a PNG ``tEXt`` chunk (e.g. :data:`MIN_FONT_KEY`), or None.

    Examples
    --------
    >>> png_text(b"not a png", MIN_FONT_KEY) is None
    True
    """
    import struct

    if not png.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    pos = 8
    while pos + 8 <= len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        data = png[pos + 8 : pos + 8 + length]
        if kind == b"tEXt" and b"\x00" in data:
            k, v = data.split(b"\x00", 1)
            if k.decode("latin-1") == key:
                return v.decode("latin-1")
        if kind == b"IDAT":  # text chunks come before the image data
            return None
        pos += 12 + length
    return None


def png_size(png: bytes) -> tuple[int, int]:
    """Return the width and height of a PNG from its header [px]."""
    import struct

    w, h = struct.unpack(">II", png[16:24])
    return int(w), int(h)


def _label(name: str) -> str:
    """Printable label of at most :data:`MAX_LABEL_CHARS` characters (with an ellipsis)."""
    name = "".join(ch if ch.isprintable() else "?" for ch in name)
    return name if len(name) <= MAX_LABEL_CHARS else name[: MAX_LABEL_CHARS - 1] + "…"


def _max_ticks(n: int) -> Any:
    """Return matplotlib's ``MaxNLocator(n)`` (at most ``n`` + 1 ticks: a phone's axis)."""
    from matplotlib.ticker import MaxNLocator as Locator

    return Locator(n)


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


def _figure_with_key(
    width_in: float, height_in: float, names: Sequence[str], narrow: bool
) -> tuple[Figure, Axes, Axes | None]:
    """Make a figure whose numbered-point key goes beside the axes (under them on a phone)."""
    if not narrow or not names:
        fig, ax = _figure(width_in, height_in, narrow)
        return fig, ax, None
    from matplotlib.figure import Figure

    key_h = 0.2 * len(names) + 0.2
    fig = Figure(figsize=(NARROW_WIDTH_IN, height_in + key_h), dpi=DPI, layout="constrained")
    ax, key_ax = fig.subplots(2, 1, height_ratios=[height_in, key_h])
    key_ax.set_axis_off()
    return fig, ax, key_ax


def _numbered_labels(
    ax: Axes,
    xs: Sequence[float],
    ys: Sequence[float],
    names: Sequence[str],
    key_ax: Axes | None = None,
) -> None:
    """Label points by number and list ``number. name`` beside the axes (or in ``key_ax``)."""
    for k, (x, y) in enumerate(zip(xs, ys, strict=True), start=1):
        ax.annotate(
            str(k),
            (x, y),
            textcoords="offset points",
            xytext=(5, 5),
            fontsize=MIN_FONT_PT,
            weight="bold",
            clip_on=True,
        )
    if names:
        key = "\n".join(f"{k}. {_label(n)}" for k, n in enumerate(names, start=1))
        if key_ax is not None:  # a phone: the key under the axes
            key_ax.text(0.0, 1.0, key, va="top", ha="left", fontsize=MIN_FONT_PT)
        else:
            ax.text(1.02, 1.0, key, transform=ax.transAxes, va="top", ha="left", fontsize=8)


def _names_above_bars(ax: Axes, names: Sequence[str]) -> None:
    """Write each bar's name above it, left-aligned (a phone has no room for tick labels)."""
    ax.set_yticks([])
    at_left = ax.get_yaxis_transform()  # x in axes fraction, y in data
    for y, n in enumerate(names):
        ax.text(
            0.01,
            y - 0.42,
            _label(n),
            transform=at_left,
            va="bottom",
            ha="left",
            fontsize=MIN_FONT_PT,
        )


def cost_breakdown_png(options: Sequence[OptionView], *, narrow: bool = False) -> bytes:
    """Horizontal stacked bars from zero: each option's total split by cost category.

    Parameters
    ----------
    options : sequence of OptionView
        The compared options.
    narrow : bool
        The phone variant (:data:`NARROW_WIDTH_IN` wide, names above the bars).

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
    per_bar = 0.8 if narrow else 0.55
    fig, ax = _figure(8.0, per_bar * len(options) + 1.6 + (0.5 if narrow else 0), narrow)
    ys = list(range(len(options)))
    left = [0.0] * len(options)
    extra: dict[str, str] = {}
    for c in order:
        w = [o.by_category().get(c, 0.0) for o in options]
        ax.barh(
            ys,
            w,
            left=left,
            height=0.5 if narrow else 0.8,
            color=_colour(c, extra),
            label=category_label(c),
            edgecolor="white",
            linewidth=0.5,
        )
        left = [a + b for a, b in zip(left, w, strict=True)]
    for y, o in enumerate(options):
        ax.text(o.total_usd, y, " " + _usd_short(o.total_usd), va="center", fontsize=MIN_FONT_PT)
    if narrow:
        _names_above_bars(ax, [o.name for o in options])
        ax.set_ylim(len(options) - 0.5, -1.0)
    else:
        ax.set_yticks(ys, [_label(o.name) for o in options])
        ax.invert_yaxis()
    _usd_axis(ax, "x")
    ax.set_xlim(0, max((o.total_usd for o in options), default=1.0) * 1.3 or 1.0)
    if narrow:
        ax.xaxis.set_major_locator(_max_ticks(4))
    ax.set_xlabel("Total cost [$]")
    ax.set_title("Cost breakdown per option", fontsize=10 if narrow else None)
    ncols = min(3 if narrow else 6, len(order))
    fig.legend(loc="outside lower center", ncols=max(ncols, 1), fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def waterfall_png(option: OptionView, *, narrow: bool = False) -> bytes:
    """Hidden-cost waterfall from zero: from the advertised compute price to the full TCO.

    Parameters
    ----------
    option : OptionView
        One option.
    narrow : bool
        The phone variant.

    Returns
    -------
    bytes
        PNG image.

    Notes
    -----
    The first bar is :meth:`OptionView.rental_usd`; each other item is a floating bar starting
    where the previous one ended (items under :data:`WATERFALL_MIN_SHARE` of the total are
    grouped); the last bar is the total, equal to the sum of every item. The value axis starts at
    zero, so bar heights keep their proportions: a hidden cost of 1 % is a thin step, and its
    dollar amount and share are written above it.
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
    fig, ax = _figure(max(6.5, 0.62 * len(labels) + 2), 4.8 if narrow else 4.4, narrow)
    extra: dict[str, str] = {}
    ax.bar(0, start, color=CATEGORY_COLOURS["compute"])
    level = start
    total = option.total_usd or 1.0
    for k, (_n, usd, cat) in enumerate(steps, start=1):
        ax.bar(k, usd, bottom=level, color=_colour(cat, extra))
        share = f"\n{usd / total:+.1%}" if not narrow else ""
        ax.text(
            k,
            level + max(usd, 0),
            _usd_short(usd) + share,
            ha="center",
            va="bottom",
            fontsize=MIN_FONT_PT,
        )
        level += usd
    ax.bar(len(labels) - 1, option.total_usd, color="#333333")
    ax.text(0, start, _usd_short(start), ha="center", va="bottom", fontsize=MIN_FONT_PT)
    ax.text(
        len(labels) - 1,
        option.total_usd,
        _usd_short(option.total_usd),
        ha="center",
        va="bottom",
        fontsize=MIN_FONT_PT,
        weight="bold",
    )
    hi = max(start, option.total_usd, *(0.0,))
    ax.set_ylim(min(0.0, level, start), hi * 1.22 if hi > 0 else 1.0)  # from zero
    rotation = 60 if narrow else 35
    ax.set_xticks(range(len(labels)), labels, rotation=rotation, ha="right", fontsize=MIN_FONT_PT)
    _usd_axis(ax, "y")
    ax.set_ylabel("Cumulative cost [$]")
    uplift = (option.total_usd / start - 1.0) if start > 0 else math.nan
    extra_txt = f": +{uplift:.1%} over the compute price" if math.isfinite(uplift) else ""
    sep = "\n" if narrow else ""
    title = f"{_label(option.name)}\ncompute price to full TCO{extra_txt.replace(': ', ':' + sep)}"
    ax.set_title(title, fontsize=MIN_FONT_PT if narrow else 9)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def pareto_png(
    points: Sequence[Mapping[str, Any]],
    *,
    xlabel: str,
    title: str,
    x_key: str = "x",
    y_key: str = "total_usd",
    x_scale: float = 1.0,
    narrow: bool = False,
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
    x_scale : float
        Factor from the points' x to the axis unit (e.g. 24 to draw days in hours).
    narrow : bool
        The phone variant (the key of the numbered points under the axes).

    Returns
    -------
    bytes
        PNG image.
    """
    names = [p["name"] for p in points]
    fig, ax, key_ax = _figure_with_key(7.0, 3.6 if narrow else 4.4, names, narrow)

    def x(p: Mapping[str, Any]) -> float:
        return float(p[x_key]) * x_scale

    off = [p for p in points if not p["front"]]
    yk = y_key
    on = sorted((p for p in points if p["front"]), key=x)
    ax.scatter([x(p) for p in off], [p[yk] for p in off], c="#999999", label="dominated", zorder=2)
    ax.scatter([x(p) for p in on], [p[yk] for p in on], c="#D55E00", label="Pareto front", zorder=3)
    if len(on) > 1:
        ax.step([x(p) for p in on], [p[yk] for p in on], where="post", color="#D55E00", alpha=0.6)
    _numbered_labels(ax, [x(p) for p in points], [p[yk] for p in points], names, key_ax)
    _usd_axis(ax, "y")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Total cost [$]")
    ax.set_title(title, fontsize=10 if narrow else None)
    ax.margins(x=0.12, y=0.1)  # room for the point numbers
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def sweep_front_png(front: Mapping[str, Any], *, narrow: bool = False) -> bytes:
    """Plot the Pareto front of a sweep: each configuration on the front, joined by a step line.

    Parameters
    ----------
    front : mapping
        :attr:`aitco.report.model.ReportData.sweep_front` (``metrics``: the two minimised
        metrics, the first drawn on the y axis; ``rows``: the front's configurations).
    narrow : bool
        The phone variant.

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
    names = [
        " ".join(str(r[k]) for k in ("hardware", "gpus", "pricing", "precision") if k in r)
        for r in rows
    ]
    fig, ax, key_ax = _figure_with_key(7.5, 3.6 if narrow else 4.6, names, narrow)
    xs = [r[x_key] * display_scale(x_key) for r in rows]
    ys = [r[y_key] * display_scale(y_key) for r in rows]
    ax.step(xs, ys, where="post", color="#D55E00", alpha=0.6)
    ax.scatter(xs, ys, color="#D55E00", zorder=3, label=f"Pareto front ({len(rows)} plans)")
    _numbered_labels(ax, xs, ys, names, key_ax)
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
        fontsize=MIN_FONT_PT if narrow else 10,
        wrap=True,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def roi_png(series: Mapping[str, Any], *, narrow: bool = False) -> bytes:
    """Cumulative net cash flow and monthly ROI over the horizon, with the payback month.

    The two value axes share their zero (the month axis crosses both at zero).

    Parameters
    ----------
    series : mapping
        A :func:`aitco.decide.roi.roi_series` result.
    narrow : bool
        The phone variant.

    Returns
    -------
    bytes
        PNG image.
    """
    months = [r["month"] for r in series["months"]]
    cum = [r["cumulative_usd"] for r in series["months"]]
    roi = [r["roi"] for r in series["months"]]
    fig, ax = _figure(7.5, 4.6 if narrow else 4.2, narrow)
    ax.axhline(0, color="#333333", linewidth=0.8)
    ax.plot(months, cum, color="#0072B2", linewidth=2, label="Cumulative net cash flow [$]")
    ax.fill_between(months, cum, 0, where=[c < 0 for c in cum], color="#D55E00", alpha=0.15)
    ax.fill_between(months, cum, 0, where=[c >= 0 for c in cum], color="#009E73", alpha=0.15)
    _usd_axis(ax, "y")
    ax.set_xlabel("Month")
    ax.set_ylabel("Cumulative net cash flow [$]")
    ax2 = ax.twinx()
    ax2.plot(months, roi, color="#E69F00", linestyle="--", label="Monthly ROI [ratio]")
    ax2.set_ylabel("Monthly ROI [ratio]")
    _align_zero(ax, ax2)
    pb = series.get("payback_months")
    if isinstance(pb, int | float):
        ax.axvline(pb, color="#009E73", linestyle="--", linewidth=1)
        ax.text(
            pb,
            ax.get_ylim()[1],
            f" payback {pb:.1f} months",
            va="top",
            fontsize=MIN_FONT_PT,
            color="#006644",
        )
    npv = series.get("npv_usd")
    title = f"ROI and payback (NPV {_usd_short(npv)})" if isinstance(npv, int | float) else "ROI"
    if series.get("loses_money") and isinstance(npv, int | float):
        title = f"The project loses money (NPV {_usd_short(npv)}): no payback"
    ax.set_title(title, fontsize=10 if narrow else None, wrap=True)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    if narrow:
        fig.legend(h1 + h2, l1 + l2, fontsize=8, loc="outside lower center", frameon=False)
    else:
        ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return _png(fig)


def tornado_swing(bars: Sequence[Mapping[str, Any]]) -> float | None:
    """Return the relative swing of a tornado's inputs from its bars (0.2 = -20 % and +20 %)."""
    for b in bars:
        base, low = b.get("base_value"), b.get("low_value")
        if isinstance(base, int | float) and isinstance(low, int | float) and base:
            return round(1.0 - float(low) / float(base), 6)
    return None


def tornado_png(
    bars: Sequence[Mapping[str, Any]], *, metric: str = "npv_usd", narrow: bool = False
) -> bytes:
    """Sensitivity tornado: the metric at each input's low and high value, widest bar on top.

    The swing (each input moved by -s and +s, one at a time) is stated in the title and legend.

    Parameters
    ----------
    bars : sequence of mapping
        :func:`aitco.decide.roi.tornado` rows (``input``, ``metric_base``, ``metric_low``,
        ``metric_high``, ``base_value``, ``low_value``, ``high_value``).
    metric : str
        Name of the metric, for the axis label.
    narrow : bool
        The phone variant (input names above their bars).

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
    per_bar = 0.7 if narrow else 0.45
    fig, ax = _figure(7.5, per_bar * max(len(rows), 1) + 1.8, narrow)
    if not rows:
        ax.text(0.5, 0.5, "no input moves the metric", ha="center", transform=ax.transAxes)
        return _png(fig)
    swing = tornado_swing(rows)
    pm = f"{swing:.0%}" if swing is not None else "the swing"
    base = float(rows[0]["metric_base"])
    names = [label(str(b["input"])) for b in rows]
    lo = [float(b["metric_low"]) - base for b in rows]
    hi = [float(b["metric_high"]) - base for b in rows]
    ys = list(range(len(rows)))
    height = 0.45 if narrow else 0.8
    ax.barh(ys, lo, left=base, height=height, color="#56B4E9", label=f"input -{pm}")
    ax.barh(ys, hi, left=base, height=height, color="#E69F00", label=f"input +{pm}")
    ax.axvline(base, color="#333333", linewidth=1)
    if narrow:
        _names_above_bars(ax, names)
        ax.set_ylim(len(rows) - 0.5, -1.0)
        ax.xaxis.set_major_locator(_max_ticks(3))
    else:
        ax.set_yticks(ys, names)
        ax.invert_yaxis()
    if metric.endswith("_usd"):
        _usd_axis(ax, "x")
    ax.set_xlabel(label(metric))
    ax.set_title(
        f"Sensitivity of {label(metric)}: each input moved ±{pm}, one at a time",
        fontsize=MIN_FONT_PT if narrow else 10,
        wrap=True,
    )
    if narrow:
        fig.legend(fontsize=8, loc="outside lower center", ncols=2, frameon=False)
    else:
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
    narrow: bool = False,
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
    narrow : bool
        The phone variant.

    Returns
    -------
    bytes
        PNG image.
    """
    import numpy as np
    from matplotlib.patches import Rectangle

    m = np.asarray(matrix, dtype=float)
    fig, ax = _figure(8.0, 0.3 * m.shape[0] + 2.0, narrow)
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
            fontsize=MIN_FONT_PT,
            color="white" if m[r, c] < 0.6 else "black",
        )
    ax.set_yticks(range(len(devices)), devices, fontsize=MIN_FONT_PT)
    step = max(1, len(times) // 10)
    ax.set_xticks(
        range(0, len(times), step),
        [times[i] for i in range(0, len(times), step)],
        rotation=30,
        ha="right",
        fontsize=MIN_FONT_PT,
    )
    cb = fig.colorbar(im, ax=ax)
    cb.set_label("Utilisation [0-1]")
    finite = m[np.isfinite(m)]
    idle_share = float((finite < idle_threshold).mean()) if finite.size else math.nan
    ax.set_title(
        f"{title} (idle < {idle_threshold:.0%}: {idle_share:.0%} of samples, hatched)",
        fontsize=MIN_FONT_PT if narrow else 10,
        wrap=True,
    )
    return _png(fig)


def report_figures(
    data: Any, only: Collection[str] | None = None, *, narrow: bool = False
) -> list[tuple[str, str, bytes]]:
    """Every plot that applies to a report, as ``(file stem, caption, PNG bytes)``.

    Parameters
    ----------
    data : aitco.report.model.ReportData
        The report.
    only : collection of str, optional
        Stems to render (``breakdown``, ``waterfall_1``..., ``pareto_time``, ``pareto_latency``,
        ``roi``, ``tornado``, ``utilisation``); default all.
    narrow : bool
        The phone variants (:data:`NARROW_WIDTH_IN` wide), shown on screens up to 600 px.

    Returns
    -------
    list of tuple
        The stacked breakdown, one waterfall per feasible option (cheapest first), the
        cost-vs-time and cost-vs-latency fronts of the feasible options (when two or more have
        the values), the ROI curve and
        tornado (when ROI inputs were given) and the utilisation heatmap (when telemetry was
        ingested). Durations are drawn in the report's one time unit
        (:meth:`aitco.report.model.ReportData.time_unit`), as its cards and tables write them.
    """
    todo: list[tuple[str, str, Callable[[], bytes]]] = []
    # an option that cannot run has no cost (total NaN): it is listed, not plotted
    priced = [o for o in data.options if math.isfinite(o.total_usd)]
    if priced:
        todo.append(
            (
                "breakdown",
                "Cost breakdown per option, by category",
                lambda: cost_breakdown_png(priced, narrow=narrow),
            )
        )
        # the hidden costs of the options that can run (an infeasible option is no answer)
        runnable = [o for o in priced if o.is_feasible]
        for k, o in enumerate(sorted(runnable, key=lambda o: o.total_usd)):
            todo.append(
                (
                    f"waterfall_{k + 1}",
                    f"Hidden costs of {o.name}: compute price to full TCO",
                    functools.partial(waterfall_png, o, narrow=narrow),
                )
            )
    if len(data.pareto_time) >= 2:
        unit, per_h = data.time_unit()
        todo.append(
            (
                "pareto_time",
                "Cost vs time: the Pareto front",
                lambda: pareto_png(
                    data.pareto_time,
                    xlabel=f"Time to finish [{unit}]",
                    title="Cost vs time to train",
                    x_key="wall_clock_days",
                    x_scale=24.0 / per_h,
                    narrow=narrow,
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
                    narrow=narrow,
                ),
            )
        )
    if data.sweep_front is not None and data.sweep_front.get("rows"):
        sf = data.sweep_front
        todo.append(
            (
                "pareto_sweep",
                f"Pareto front of the sweep {sf.get('source', '')}".rstrip(),
                lambda: sweep_front_png(sf, narrow=narrow),
            )
        )
    if data.roi is not None:
        roi = data.roi
        todo.append(
            ("roi", "ROI and payback over the horizon", lambda: roi_png(roi, narrow=narrow))
        )
    if data.tornado:
        swing = tornado_swing(data.tornado)
        pm = f" moved ±{swing:.0%}" if swing is not None else ""
        todo.append(
            (
                "tornado",
                f"Sensitivity of {label(data.tornado_metric)} to each input{pm}, one at a time",
                lambda: tornado_png(data.tornado, metric=data.tornado_metric, narrow=narrow),
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
                    narrow=narrow,
                ),
            )
        )
    return [(stem, cap, make()) for stem, cap, make in todo if only is None or stem in only]

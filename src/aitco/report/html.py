"""Self-contained HTML report: tables, itemised breakdown and plots inlined as base64 PNG.

The file works offline: no script, no font and no image is fetched from anywhere; plots are
PNG data URIs and the stylesheet is inlined. The Jinja2 templates live in
``aitco/report/templates`` and are shared with the web app, which renders the same comparison
partial.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aitco.formatting import num

if TYPE_CHECKING:  # pragma: no cover
    import jinja2

    from aitco.report.model import ReportData

TEMPLATES = "templates"


def templates_dir() -> Path:
    """Folder of the report templates (shared with the web app)."""
    return Path(str(resources.files("aitco.report") / TEMPLATES))


def usd(x: Any) -> str:
    """Format dollars: ``$1,234,567`` (cents below $100); ``-`` for missing values."""
    if not isinstance(x, int | float) or isinstance(x, bool) or not math.isfinite(x):
        return "-"
    return f"${x:,.2f}" if abs(x) < 100 else f"${x:,.0f}"


def pct(x: Any) -> str:
    """Format a fraction as a percentage (0.1234 -> ``12.3%``)."""
    if not isinstance(x, int | float) or isinstance(x, bool) or not math.isfinite(x):
        return "-"
    return f"{100 * x:.1f}%"


def fmt_months(x: Any) -> str:
    """Format a payback period in months (``not within horizon`` when None)."""
    if not isinstance(x, int | float):
        return "not within horizon"
    return f"{x:.1f} months"


def roi_rows(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    """ROI summary rows ``(key, label, text)``: the names and values ``aitco roi FILE`` prints."""
    from aitco.decide.roi import format_summary_value, roi_summary

    return [(k, label, format_summary_value(unit, v)) for k, label, unit, v in roi_summary(res)]


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
    env.globals.update(usd=usd, pct=pct, num=num, fmt_months=fmt_months, roi_rows=roi_rows)
    return env


def headline_keys(data: ReportData) -> list[str]:
    """Headline columns that at least one option has, in :data:`HEADLINE_KEYS` order."""
    from aitco.report.model import HEADLINE_KEYS

    return [k for k in HEADLINE_KEYS if any(k in o.values for o in data.options)]


def render_html(data: ReportData, figures: list[tuple[str, str, bytes]] | None = None) -> str:
    """Render the self-contained HTML report.

    Parameters
    ----------
    data : ReportData
        The report.
    figures : list of (stem, caption, png), optional
        Plots; default :func:`aitco.report.plots.report_figures`.

    Returns
    -------
    str
        The HTML document.
    """
    import yaml

    from aitco import __version__
    from aitco.report.plots import report_figures

    figs = report_figures(data) if figures is None else figures
    css = (templates_dir() / "report.css").read_text(encoding="utf-8")
    tpl = environment().get_template("report.html.j2")
    return tpl.render(
        data=data,
        version=__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        css=css,
        headline=headline_keys(data),
        figures=[(s, c, base64.b64encode(b).decode("ascii")) for s, c, b in figs],
        scenario_yaml=yaml.safe_dump(data.scenario, sort_keys=False) if data.scenario else "",
    )

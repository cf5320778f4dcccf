"""Markdown report: the comparison, the itemised breakdown, and the plots as PNGs beside it.

``report.md`` links its plots as ``report_files/<plot>.png`` (a folder named after the report,
written next to it). Every file is written atomically.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aitco import __version__
from aitco.fileio import check_output, write_atomic
from aitco.formatting import pct, usd
from aitco.labels import category_label
from aitco.report.html import (
    URL_RE,
    cell,
    header,
    headline_keys,
    roi_rows,
    summary_cards,
    surface_time_unit,
    verdict,
)
from aitco.report.plots import report_figures

if TYPE_CHECKING:  # pragma: no cover
    from aitco.report.model import ReportData


#: Longest Markdown line written (readable in an 200-column terminal). [characters]
MAX_LINE_CHARS = 199
#: Longest formula shown in a breakdown row (the HTML report has it in full). [characters]
MAX_FORMULA_CHARS = 60


def _cell(s: str, limit: int | None = None) -> str:
    s = s.replace("|", "\\|").replace("\n", " ")
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def _fit(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def _source(s: str) -> str:
    """Source text with its web addresses as Markdown autolinks (clickable in a viewer)."""
    return URL_RE.sub(lambda m: f"<{m.group(0)}>", s)


def _source_line(k: int, src: str) -> str:
    """``k. text <url>``, the text shortened (never the address) to fit :data:`MAX_LINE_CHARS`."""
    line = f"{k}. {_source(src)}"
    if len(line) <= MAX_LINE_CHARS:
        return line
    links = " ".join(f"<{u}>" for u in URL_RE.findall(src))
    room = MAX_LINE_CHARS - len(f"{k}. ") - len(links) - 2
    text = _cell(URL_RE.sub("", src).strip(" —-"), max(room, 20))
    return _fit(f"{k}. {text} {links}".rstrip())


def _summary_lines(data: ReportData) -> list[str]:
    """Return the answer first (the verdict), then one line per option."""
    out = ["## Summary", "", _fit(f"**{verdict(data)}**"), ""]
    for c in summary_cards(data):
        marks = "".join(f" **({t})**" for _k, t in c["marks"])
        per_mtok = f", {c['usd_per_mtok']} per million tokens" if c["usd_per_mtok"] != "-" else ""
        feas = "" if c["feasible"] else " **NOT FEASIBLE: " + "; ".join(c["reasons"]) + "**"
        out.append(
            _fit(f"- **{_cell(c['name'])}**: {c['total']}, {c['time']}{per_mtok}{feas}{marks}")
        )
    out.append("")
    return out


def _comparison_lines(data: ReportData) -> list[str]:
    """Return one section per option: its total and headline values."""
    heads = headline_keys(data)
    unit = surface_time_unit(data)
    out = ["## Comparison", ""]
    for o in data.options:
        out += [_fit(f"### {_cell(o.name)}: {usd(o.total_usd)}"), ""]
        out += [
            _fit(f"- {header(k, unit)}: {cell(k, o.values.get(k), unit)}")
            for k in heads
            if k in o.values
        ]
        out.append("")
    return out


def _breakdown_lines(o: Any) -> list[str]:
    """Return an option's item table and its numbered sources."""
    out = [
        _fit(f"### {_cell(o.name)}: {usd(o.total_usd)}"),
        "",
        "| Cost item | Category | Cost [$] | Share | Formula | Sources |",
        "|---|---|---:|---:|---|---:|",
    ]
    sources: list[str] = []
    for i in o.items:
        refs = []
        for src in i.sources:
            if src not in sources:
                sources.append(src)
            refs.append(f"[{sources.index(src) + 1}]")
        formula = f"`{_cell(i.formula, MAX_FORMULA_CHARS)}`" if i.formula else ""
        out.append(
            _fit(
                f"| {_cell(i.name.replace('_', ' '), 40)} | {category_label(i.category)} | "
                f"{usd(i.usd)} | "
                f"{pct(i.share)} | {formula} | {' '.join(refs)} |"
            )
        )
    out.append("")
    if sources:
        out += ["Sources:", ""]
        out += [_source_line(k, src) for k, src in enumerate(sources, start=1)]
        out.append("")
    return out


def _tail_lines(data: ReportData, figure_links: list[tuple[str, str]]) -> list[str]:
    """Return the plots after the first, the ROI, the options left out, what is not shown."""
    out: list[str] = []
    if len(figure_links) > 1:
        out += ["## Plots", ""]
        for rel, caption in figure_links[1:]:
            out += [_fit(f"![{caption}]({rel})"), "", _fit(f"_{caption}_"), ""]
    if data.roi:
        r = data.roi
        out += [
            "## ROI",
            "",
            *(_fit(f"**Warning:** {w}") + "\n" for w in r.get("warnings", [])),
            *(_fit(f"- {name} (`{key}`): {text}") for key, name, text in roi_rows(r)),
            "",
        ]
    if data.dropped_options:
        out += ["## Options left out", ""]
        out += [_fit(f"- option {d['option']}: {d['message']}") for d in data.dropped_options]
        out.append("")
    if data.notes:
        out += ["## Not shown", "", *(_fit(f"- {n}") for n in data.notes), ""]
    return out


def render_markdown(data: ReportData, figure_links: list[tuple[str, str]]) -> str:
    """Render the Markdown text: the answer first, then the breakdown; lines under 200 characters.

    Parameters
    ----------
    data : ReportData
        The report.
    figure_links : list of (relative path, caption)
        The plot files, relative to the Markdown file.

    Returns
    -------
    str
        Markdown.
    """
    out = [f"# {data.title}", ""]
    if data.description:
        out += [data.description, ""]
    out += [
        f"_Generated by aitco {__version__} on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; the "
        "numbers are those of `aitco compare --json`._",
        "",
    ]
    out += _summary_lines(data)
    if figure_links:
        rel, caption = figure_links[0]
        out += [f"![{caption}]({rel})", ""]
    out += _comparison_lines(data)
    out += ["## Itemised breakdown", ""]
    for o in data.options:
        out += _breakdown_lines(o)
    out += _tail_lines(data, figure_links)
    return "\n".join(out)


def write_markdown(data: ReportData, path: Path) -> list[Path]:
    """Write ``path`` and its plots (in ``<stem>_files/``) atomically; return the files written."""
    check_output(path, field="-o")  # before any plot is written
    folder = path.parent / f"{path.stem}_files"
    written: list[Path] = []
    links: list[tuple[str, str]] = []
    for stem, caption, png in report_figures(data):
        p = folder / f"{stem}.png"
        write_atomic(p, png, make_parent=True)
        written.append(p)
        links.append((f"{folder.name}/{p.name}", caption))
    write_atomic(path, render_markdown(data, links), field="-o")
    written.insert(0, path)
    return written

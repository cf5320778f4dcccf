"""``aitco compare``, ``aitco tco``, ``aitco preset list|show|diff`` and ``aitco validate tco``.

Thin: parse, call :func:`aitco.decide.compare.compare`, render. ``--json`` prints one object whose
``options[]`` each carry ``name`` (hardware id and pricing mode), ``total_usd``,
``wall_clock_days`` (training) and ``items[]`` of ``{name, usd, category, share}`` (plus
``formula``, ``inputs`` and ``sources`` with ``--explain``).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from aitco.catalog.currency import in_usd_year, usd_year_note
from aitco.catalog.staleness import oldest_line, stale_line, unique_stale
from aitco.cli import state
from aitco.cli.render import console, fmt, print_json, table
from aitco.cost.tco import CATEGORIES, Breakdown
from aitco.decide.compare import Comparison, compare
from aitco.decide.scenario import Scenario
from aitco.errors import UnknownIdError
from aitco.formatting import in_time_unit, option_hours, time_unit
from aitco.labels import display_scale
from aitco.perf.efficiency import EfficiencyParams

preset_app = typer.Typer(help="Assumption presets: list, show, and diff how they move the answer.")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
ExplainOpt = Annotated[
    bool, typer.Option("--explain", help="Show each item's formula, inputs and sources.")
]
PresetOpt = Annotated[
    str | None, typer.Option("--preset", help="Assumption preset (see `aitco preset list`).")
]
CalibOpt = Annotated[
    str | None,
    typer.Option("--calibration", help="Calibration profile YAML (efficiency parameters)."),
]


def _efficiency(path: str | None) -> EfficiencyParams | None:
    if not path:
        return None
    from aitco.calibrate.profile import load_profile

    return load_profile(path).efficiency


def _scenarios(path: str | None) -> list[Scenario]:
    if path:
        return [Scenario.from_yaml(path)]
    from aitco.decide.defaults import default_scenarios

    return default_scenarios()


def run_comparisons(
    path: str | None,
    preset: str | None = None,
    calibration: str | None = None,
    usd_year: int | None = None,
) -> list[Comparison]:
    """Compare the scenario at ``path`` (or the built-in defaults) with the CLI's catalog."""
    cat = state.catalog()
    if usd_year is not None:  # every price in dollars of one year (aitco.catalog.currency)
        cat = in_usd_year(cat, usd_year)
    eff = _efficiency(calibration)
    return [compare(s, cat, preset=preset, efficiency=eff) for s in _scenarios(path)]


def comparisons_json(comps: list[Comparison], *, explain: bool) -> dict[str, Any]:
    """JSON object of one or more comparisons: ``options[]`` of all, ``comparisons[]`` summaries."""
    options = []
    summaries = []
    for c in comps:
        for o in c.options:
            options.append({"scenario": c.name, **o.to_json(explain=explain)})
        summaries.append(
            {
                "scenario": c.name,
                "kind": c.kind,
                "preset": c.preset,
                "verdict": c.verdict,
                "cheapest": c.cheapest,
                "fastest": c.fastest,
                "feasible_options": c.feasible_options,
                "options": [o.name for o in c.options],
                "pareto_time": c.pareto_time,
                "pareto_latency": c.pareto_latency,
                "stale_inputs": c.stale_inputs,
                "oldest_price": c.oldest_price,
                **({"assumptions": c.assumptions} if explain else {}),
            }
        )
    out: dict[str, Any] = {"options": options, "comparisons": summaries}
    if len(comps) == 1:
        out.update(
            scenario=comps[0].name,
            kind=comps[0].kind,
            verdict=comps[0].verdict,
            cheapest=comps[0].cheapest,
            fastest=comps[0].fastest,
            feasible_options=comps[0].feasible_options,
            pareto_time=comps[0].pareto_time,
            pareto_latency=comps[0].pareto_latency,
        )
    out["stale_inputs"] = unique_stale(s for c in comps for s in c.stale_inputs)
    oldest = unique_stale(c.oldest_price for c in comps if c.oldest_price)
    out["oldest_price"] = oldest[0] if oldest else None
    return out


def _header(o: Breakdown, c: Comparison) -> str:
    marks = []
    if o.name == c.cheapest:
        marks.append("[green]cheapest[/green]")
    if o.name == c.fastest:
        marks.append("[cyan]fastest[/cyan]")
    if not o.values.get("fits", True):
        marks.append("[red]does not fit[/red]")
    if o.values.get("meets_slo") is False:
        marks.append("[red]misses SLO[/red]")
    marked = ("does not fit in memory", "misses the SLO")  # shown by the marks above
    if any(r not in marked for r in o.values.get("infeasible_reasons", [])):
        marks.append("[red]infeasible[/red]")
    name = o.name.replace(" ", "\n", 1) if o.kind != "plan" else o.name
    return name + ("\n" + " ".join(marks) if marks else "")


def _item_names(c: Comparison) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for cat in CATEGORIES:
        for o in c.options:
            for i in o.items:
                if i.category == cat:
                    seen[(cat, i.name)] = None
    return list(seen)


def render_comparison(c: Comparison) -> None:
    """Print one comparison in the widest layout the terminal holds (names never cut).

    Every item of every option (options as columns) when that fits; else options as rows, with
    as many cost categories and figures as fit, option names on one line when they fit
    (the *wide* layout), and wrapped (never cut) only on the narrowest terminals.
    """
    if c.kind == "plan":  # one column per stage, then the plan's total
        for plan in c.options:
            stages = Comparison(
                name=f"{plan.name}: stage by stage", kind="training", options=plan.stages
            )
            render_comparison(stages)
            hours = option_hours(plan.values)
            unit = time_unit([hours])
            console.print(
                f"[bold]plan total: {fmt(plan.total_usd)} USD[/bold] over "
                f"{in_time_unit(hours, unit)} wall-clock "
                f"({len(plan.stages)} stages, added up stage by stage)"
            )
        return
    width = console.width
    full = _items_table(c)
    if _table_width(full) <= width:
        console.print(full)
        return
    for layout in ROW_LAYOUTS:
        t = _rows_table(c, layout)
        if _table_width(t) <= width or layout == ROW_LAYOUTS[-1]:
            console.print(t)
            return


def _table_width(t: Table) -> int:
    """Return the characters the table needs with every row on one line [columns]."""
    from rich.console import Console
    from rich.measure import Measurement

    wide = Console(width=100_000, color_system=None, file=io.StringIO())
    return int(Measurement.get(wide, wide.options, t).maximum)


def _headline(c: Comparison) -> list[tuple[str, str, float, int]]:
    """(label, key, display scale, digits) of the figures shown above the items."""
    if c.kind == "inference":
        return [
            ("GPUs deployed", "total_gpus", 1.0, 0),
            ("utilisation", "utilization", 1.0, 3),
            ("TTFT [ms]", "ttft_s", display_scale("ttft_s"), 1),
            ("TPOT [ms]", "tpot_s", display_scale("tpot_s"), 1),
            ("$/month", "usd_per_month", 1.0, 0),
            ("$/M tokens", "usd_per_million_tokens", 1.0, 3),
            ("$/M output tokens", "usd_per_million_output_tokens", 1.0, 3),
        ]
    unit, per_h = _time_unit(c)
    return [
        (f"time to finish [{unit}]", "wall_clock_h", 1.0 / per_h, -3),
        ("goodput", "goodput", 1.0, 4),
        ("GPU-hours", "gpu_hours", 1.0, 0),
        ("$/GPU-h effective", "effective_usd_per_gpu_h", 1.0, 3),
        ("$/M tokens", "usd_per_million_tokens", 1.0, 4),
    ]


def _time_unit(c: Comparison) -> tuple[str, float]:
    """Return the one time unit of a comparison's table (hours, or days beyond a few)."""
    return time_unit(option_hours(o.values) for o in c.options)


def _items_table(c: Comparison) -> Table:
    """Options as columns, every headline figure and every item as a row."""
    cols = ["", *(_header(o, c) for o in c.options)]
    rows: list[list[Any]] = []
    head = _headline(c)
    if any(o.values.get("committed_term_unused_usd") for o in c.options):
        # a committed term: the used share and the unused commitment, apart
        if c.kind == "inference":
            head += [("$/month used", "usd_per_month_used", 1.0, 0)]
        head += [
            ("used [USD]", "used_usd", 1.0, 0),
            ("unused commitment [USD]", "committed_term_unused_usd", 1.0, 0),
        ]
    head += [("energy [kWh]", "energy_kwh", 1.0, 0), ("kg CO2e", "kg_co2e", 1.0, 0)]
    if any(o.values.get("memory_per_gpu_gb") is not None for o in c.options):
        # an option that does not fit: the memory it needs per GPU, and what it may use
        head += [
            ("memory needed per GPU [GB]", "memory_per_gpu_gb", 1.0, 1),
            ("memory usable per GPU [GB]", "memory_capacity_gb", 1.0, 1),
        ]
    if any("capex_usd" in o.values for o in c.options):
        head += [
            ("capex (owned) [USD]", "capex_usd", 1.0, 0),
            ("book value at end [USD]", "book_value_end_usd", 1.0, 0),
            ("market value at end [USD]", "market_value_end_usd", 1.0, 0),
        ]
    for label, key, scale, digits in head:
        rows.append(
            [
                f"[bold]{escape(label)}[/bold]",
                *(_num(_scaled(o.values.get(key), scale), digits) for o in c.options),
            ]
        )
    for cat, name in _item_names(c):
        rows.append([f"{cat}: {name}", *(_num(_usd_or_none(o, name), 2) for o in c.options)])
    rows.append(
        ["[bold]total \\[USD][/bold]", *(f"[bold]{fmt(o.total_usd)}[/bold]" for o in c.options)]
    )
    return _table(c, cols, rows, _choices_caption(c) or None, wrap_names=False)


def _choices_caption(c: Comparison) -> str:
    """Return the comparison's choices under its table ("" for the stages of a plan)."""
    if c.cheapest is None:
        return "no option is feasible" if c.verdict else ""
    return f"cheapest: {c.cheapest}" + (f"; fastest: {c.fastest}" if c.fastest else "")


@dataclass(frozen=True)
class RowLayout:
    """How an options-as-rows table is laid out (richest first in :data:`ROW_LAYOUTS`).

    Attributes
    ----------
    every_category : bool
        One column per cost category present; else :data:`_COMPACT_CATEGORIES` and "other".
    extras : bool
        $/M tokens, energy and CO2e columns.
    marks_column : bool
        Cheapest / fastest / infeasible marks in their own column (else under the name).
    wrap_names : bool
        Option names may wrap over lines (never cut); else each is on one line.
    """

    every_category: bool
    extras: bool
    marks_column: bool
    wrap_names: bool


#: Layouts tried in order; the first that fits the terminal is printed. The first three are the
#: *wide* layout (every cost category, names on one line).
ROW_LAYOUTS: tuple[RowLayout, ...] = (
    RowLayout(every_category=True, extras=True, marks_column=True, wrap_names=False),
    RowLayout(every_category=True, extras=False, marks_column=True, wrap_names=False),
    RowLayout(every_category=True, extras=False, marks_column=False, wrap_names=False),
    RowLayout(every_category=False, extras=False, marks_column=False, wrap_names=False),
    RowLayout(every_category=False, extras=False, marks_column=False, wrap_names=True),
)

#: Categories shown on their own in the narrowest tables; the rest are summed as "other".
_COMPACT_CATEGORIES = ("compute", "reliability", "power", "people")
_SHORT = {"reliability": "reliab.", "compliance": "complian."}


def _rows_table(c: Comparison, layout: RowLayout) -> Table:
    """Options as rows: their figures, totals by cost category and the total."""
    present = [k for k in CATEGORIES if any(i.category == k for o in c.options for i in o.items)]
    cats = present if layout.every_category else [k for k in _COMPACT_CATEGORIES if k in present]
    if c.kind == "inference":
        head = [
            ("GPUs", "total_gpus", 1.0, 0),
            ("TTFT ms", "ttft_s", display_scale("ttft_s"), 0),
            ("TPOT ms", "tpot_s", display_scale("tpot_s"), 0),
        ]
        if not layout.every_category:  # two latency columns leave room for compute + the rest
            cats = cats[:1]
    else:
        unit, per_h = _time_unit(c)
        head = [("hours" if unit == "h" else unit, "wall_clock_h", 1.0 / per_h, -3)]
    rest = [k for k in present if k not in cats]
    # a committed term: the unused commitment in a column of its own, out of compute
    unused_col = any(o.values.get("committed_term_unused_usd") for o in c.options)
    extras = (
        [
            ("$/M tok", "usd_per_million_tokens", 1.0, 3),
            ("kWh", "energy_kwh", 1.0, 0),
            ("kg CO2e", "kg_co2e", 1.0, 0),
        ]
        if layout.extras
        else []
    )
    cols = ["option", *(h[0] for h in head), *(_SHORT.get(k, k) for k in cats)]
    cols += ["unused commit."] if unused_col else []
    cols += ["other"] if rest else []
    cols += ["total", *(e[0] for e in extras)]
    cols += [""] if layout.marks_column else []
    rows: list[list[Any]] = []
    for o in c.options:
        marks = _marks(o, c)
        name = escape(o.name)
        if layout.wrap_names:
            name = name.replace(" ", "\n", 1)
        if marks and not layout.marks_column:
            name += "\n" + " ".join(marks)
        unused = float(o.values.get("committed_term_unused_usd") or 0.0)
        by_cat = {
            k: math.fsum(
                i.usd for i in o.items if i.category == k and i.name != "committed_term_unused"
            )
            for k in present
        }
        row = [
            name,
            *(_num(_scaled(o.values.get(key), scale), d) for _, key, scale, d in head),
            *(_num(by_cat[k], 0) for k in cats),
        ]
        if unused_col:
            row.append(_num(unused, 0))
        if rest:
            row.append(_num(math.fsum(by_cat[k] for k in rest), 0))
        row.append(f"[bold]{fmt(o.total_usd)}[/bold]")
        row += [_num(_scaled(o.values.get(key), s), d) for _, key, s, d in extras]
        if layout.marks_column:
            row.append(" ".join(marks))
        rows.append(row)
    choices = _choices_caption(c)
    caption = (f"{choices}. " if choices else "") + (
        "USD by category; every item: a wider terminal, --explain or --json"
    )
    return _table(c, cols, rows, caption, wrap_names=layout.wrap_names)


def _marks(o: Breakdown, c: Comparison) -> list[str]:
    """Return an option's marks: cheapest, fastest, does not fit, misses SLO, infeasible."""
    return _header(o, c).split("\n")[2:] if o.kind != "plan" else []


def _scaled(x: Any, scale: float) -> Any:
    if isinstance(x, int | float) and not isinstance(x, bool) and scale != 1.0:
        return float(x) * scale
    return x


def _table(
    c: Comparison, cols: list[str], rows: list[list[Any]], caption: str | None, *, wrap_names: bool
) -> Table:
    """Build a table of ``rows`` under ``cols`` titled with the comparison (and preset)."""
    preset = f" (preset {c.preset})" if c.preset else ""
    t = Table(title=f"{c.name}{preset}", caption=caption)
    t.add_column(cols[0], no_wrap=not wrap_names, overflow="fold", min_width=_OPTION_NAME_CHARS)
    for col in cols[1:]:
        t.add_column(col, justify="right", no_wrap=True, overflow="fold")
    for r in rows:
        t.add_row(*r)
    return t


#: Narrowest option-name column ("h100-sxm5-80gb" on one line when names wrap). [columns]
_OPTION_NAME_CHARS = 14


def _usd_or_none(o: Breakdown, name: str) -> float | None:
    return o.usd(name) if any(i.name == name for i in o.items) else None


def _num(x: Any, digits: int) -> str:
    """Format a table number: ``digits`` decimals, or -N for N significant digits."""
    if digits < 0 and isinstance(x, int | float) and not isinstance(x, bool):
        return fmt(float(x), -digits)
    if x is None or isinstance(x, str):
        return "-" if x is None else x
    if isinstance(x, bool):
        return fmt(x)
    v = float(x)
    if digits == 0 or abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}" if abs(v) >= 1 else fmt(v, digits)


def _inputs_text(inputs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v if isinstance(v, str) else _short_any(v)}" for k, v in inputs.items())


def _short_any(v: Any) -> str:
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_short_any(x) for x in v) + "]"
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int | float):
        return fmt(float(v))
    return str(v)


def _explain(c: Comparison) -> None:
    """Per option: every item with its formula, inputs and sources; then the factors used."""
    options = [st for o in c.options for st in (o.stages or [o])]
    for o in options:
        rows = [
            [
                f"{i.category}: {i.name}",
                fmt(i.usd),
                f"{100 * i.share:.1f}%",
                escape(i.formula),
                escape(_inputs_text(i.inputs)),
                escape("; ".join(src.split(": ", 1)[0] for src in i.sources)),
            ]
            for i in o.items
        ]
        console.print(
            table(
                f"How {o.name} was priced (total {fmt(o.total_usd)} USD)",
                ["item", "USD", "share", "formula", "inputs", "sources"],
                rows,
            )
        )
        _print_tree(o)
        billed = o.values.get("gpus_billed")
        if o.values.get("offer_id"):
            console.print(
                f"  offer {escape(str(o.values['offer_id']))}: {o.values.get('instances')} "
                f"instance(s), {billed} accelerators billed for {o.gpus} used",
                highlight=False,
            )
        if o.values.get("feasible") is False:
            console.print("  [red]infeasible[/red]:", highlight=False)
            for r in o.values.get("infeasible_reasons", []):
                console.print(f"    - {escape(r)}", highlight=False)
        for a in o.assumptions:
            console.print(f"  - {escape(a)}", highlight=False)
    console.print(f"[bold]Verdict[/bold]: {escape(c.verdict)}", highlight=False)
    console.print("[bold]Factors used[/bold] (value, then where it came from):")
    for a in c.assumptions:
        console.print(f"  - {escape(a)}", highlight=False)


def _print_tree(o: Breakdown) -> None:
    """Print the explain tree of an option: total, items, and the performance terms behind them.

    Items without performance terms are folded into one line, so the tree shows the path from
    dollars to step time (or to TTFT/TPOT) where the engines produced the hours.
    """
    from rich.tree import Tree

    root = Tree(f"[bold]total_usd[/bold] {fmt(o.total_usd)} USD", guide_style="dim")
    rest = [i for i in o.items if not i.terms]
    for item in o.items:
        if not item.terms:
            continue
        node = root.add(
            f"[bold]{item.name}_usd[/bold] {fmt(item.usd)} USD = {escape(item.formula)}"
        )
        _add_terms(node, item.terms)
    if rest:
        root.add(f"{len(rest)} other items {fmt(sum(i.usd for i in rest))} USD (table above)")
    console.print(root)


def _add_terms(node: Any, terms: list[Any]) -> None:
    """Add ``terms`` under ``node``, recursively (leaves of value 0 left out)."""
    for t in terms:
        if not t.value and not t.children:
            continue
        label = f"{t.name} {fmt(t.value)} {t.unit}"
        if t.formula:
            label += f" = {escape(t.formula)}"
        _add_terms(node.add(label), t.children)


UsdYearOpt = Annotated[
    int | None,
    typer.Option(
        "--usd-year",
        help="State every purchase and rental price in US dollars of this year (CPI-U, BLS).",
    ),
]


def compare_cmd(
    scenario: Annotated[
        str | None,
        typer.Argument(metavar="[SCENARIO.yaml]", help="Scenario; default: the built-in one."),
    ] = None,
    json_out: JsonOpt = False,
    explain: ExplainOpt = False,
    preset: PresetOpt = None,
    calibration: CalibOpt = None,
    usd_year: UsdYearOpt = None,
) -> None:
    """Compare hardware and pricing options item by item (default: GPT-2 1.02B + Llama 3 8B)."""
    comps = run_comparisons(scenario, preset, calibration, usd_year)
    if json_out:
        out = comparisons_json(comps, explain=explain)
        if usd_year is not None:
            out["usd_year"] = usd_year_note(state.catalog(), usd_year)
        print_json(out)
        return
    if usd_year is not None:
        console.print(usd_year_note(state.catalog(), usd_year)["note"], highlight=False)
    for c in comps:
        render_verdict(c)
        if c.stale_inputs:
            console.print(f"[yellow]{escape(stale_line(c.stale_inputs))}[/yellow]")
        if c.oldest_price:
            console.print(escape(oldest_line(c.oldest_price)), highlight=False)
        if explain:
            _explain(c)


def render_verdict(c: Comparison) -> None:
    """Print a comparison: the answer first when nothing can run, the table, then each reason."""
    if not c.feasible_options:
        console.print(f"[bold red]{escape(c.name)}: {escape(c.verdict)}[/bold red]")
    render_comparison(c)
    for o in c.options:  # the engine's verdict with its reason, not only a mark
        if o.values.get("feasible") is False:
            why = "; ".join(o.values.get("infeasible_reasons", []))
            console.print(f"[red]infeasible[/red] {escape(o.name)}: {escape(why)}")


def tco_cmd(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO.yaml", help="Scenario to price.")],
    json_out: JsonOpt = False,
    explain: ExplainOpt = False,
    preset: PresetOpt = None,
    calibration: CalibOpt = None,
    usd_year: UsdYearOpt = None,
) -> None:
    """Itemised total cost of ownership of any scenario (training, service, multi-stage)."""
    compare_cmd(scenario, json_out, explain, preset, calibration, usd_year)


# --------------------------------------------------------------------------- presets
@preset_app.command("list")
def preset_list(json_out: JsonOpt = False) -> None:
    """List the assumption presets."""
    cat = state.catalog()
    rows = [
        {"id": p.id, "name": p.name, "overrides": len(p.overrides), "description": p.description}
        for p in cat.presets.values()
    ]
    if json_out:
        print_json({"presets": rows})
        return
    console.print(
        table(
            "Assumption presets",
            ["id", "name", "overrides"],
            [[r["id"], r["name"], r["overrides"]] for r in rows],
        )
    )


def _preset(cat: Any, pid: str) -> Any:
    if pid not in cat.presets:
        raise UnknownIdError("preset", pid, cat.presets, field="PRESET")
    return cat.presets[pid]


def _catalog_value(cat: Any, fid: str) -> Any:
    f = cat.factors.get(fid)
    if f is None and fid.startswith("residual-value.") and fid[15:] in cat.accelerators:
        # no curve for the accelerator itself: its hardware class's curve applies
        f = cat.factors.get(f"residual-value.{cat.accelerators[fid[15:]].residual_class}")
    return None if f is None else f.value


@preset_app.command("show")
def preset_show(
    name: Annotated[
        str, typer.Argument(metavar="PRESET", help="Preset id (see `aitco preset list`).")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Show a preset's overrides beside the catalog values they replace, and its source."""
    cat = state.catalog()
    p = _preset(cat, name)
    prov = p.provenance.get("description") or next(iter(p.provenance.values()), None)
    src = prov.source.cite() if prov else None
    rows = [
        {"factor": k, "preset": v, "catalog": _catalog_value(cat, k)}
        for k, v in p.overrides.items()
    ]
    if json_out:
        print_json(
            {
                "id": p.id,
                "name": p.name,
                "description": p.description,
                "source": src,
                "overrides": rows,
            }
        )
        return
    console.print(f"[bold]{p.id}[/bold]: {p.description}", highlight=False)
    if src:
        console.print(f"source: {src}", highlight=False)
    console.print(
        table(
            f"Overrides of {p.id}",
            ["factor", "preset", "catalog"],
            [[r["factor"], _short(r["preset"]), _short(r["catalog"])] for r in rows],
        )
    )


def _short(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list):
        return "[" + ", ".join(fmt(float(x)) for x in v) + "]"
    return fmt(float(v))


def preset_diff_data(
    a: str, b: str, scenario: str | None = None, calibration: str | None = None
) -> dict[str, Any]:
    """Totals of every option under presets ``a`` and ``b`` and the factors that differ."""
    cat = state.catalog()
    pa, pb = _preset(cat, a), _preset(cat, b)
    keys = sorted(set(pa.overrides) | set(pb.overrides))
    factors = []
    for k in keys:
        va, vb = (
            pa.overrides.get(k, _catalog_value(cat, k)),
            pb.overrides.get(k, _catalog_value(cat, k)),
        )
        if va != vb:
            factors.append(
                {"factor": k, "presets": [{"preset": a, "value": va}, {"preset": b, "value": vb}]}
            )
    ca = run_comparisons(scenario, a, calibration)
    cb = run_comparisons(scenario, b, calibration)
    options = []
    for x, y in zip(ca, cb, strict=True):
        for oa, ob in zip(x.options, y.options, strict=True):
            delta = ob.total_usd - oa.total_usd
            options.append(
                {
                    "scenario": x.name,
                    "name": oa.name,
                    "presets": [
                        {"preset": a, "total_usd": oa.total_usd},
                        {"preset": b, "total_usd": ob.total_usd},
                    ],
                    "delta_usd": delta,
                    "delta_fraction": delta / oa.total_usd if oa.total_usd else None,
                }
            )
    ranks = [
        {
            "scenario": x.name,
            "presets": [
                {"preset": a, "cheapest": x.cheapest},
                {"preset": b, "cheapest": y.cheapest},
            ],
        }
        for x, y in zip(ca, cb, strict=True)
    ]
    return {"a": a, "b": b, "factors": factors, "options": options, "cheapest": ranks}


@preset_app.command("diff")
def preset_diff(
    a: Annotated[str, typer.Argument(metavar="PRESET_A", help="Preset of the base totals.")],
    b: Annotated[str, typer.Argument(metavar="PRESET_B", help="Preset compared with it.")],
    scenario: Annotated[
        str | None, typer.Option("--scenario", help="Scenario YAML; default: the built-in ones.")
    ] = None,
    json_out: JsonOpt = False,
    calibration: CalibOpt = None,
) -> None:
    """Show how much two presets' assumptions move each option's total."""
    d = preset_diff_data(a, b, scenario, calibration)
    if json_out:
        print_json(d)
        return
    console.print(
        table(
            f"Factors that differ: {a} vs {b}",
            ["factor", a, b],
            [[f["factor"], *(_short(p["value"]) for p in f["presets"])] for f in d["factors"]],
        )
    )
    rows = [
        [
            o["name"],
            *(p["total_usd"] for p in o["presets"]),
            o["delta_usd"],
            "-" if o["delta_fraction"] is None else f"{100 * o['delta_fraction']:+.1f}%",
        ]
        for o in d["options"]
    ]
    console.print(
        table(f"Total cost [USD]: {a} -> {b}", ["option", a, b, "delta", "delta %"], rows)
    )
    for r in d["cheapest"]:
        console.print(
            f"{r['scenario']}: cheapest "
            + " vs ".join(f"{p['cheapest']} ({p['preset']})" for p in r["presets"]),
            highlight=False,
        )


def validate_tco_cmd(
    json_out: JsonOpt = False,
    calibration: CalibOpt = None,
) -> None:
    """Full-run GPU-hours of published runs from throughput x goodput: the error table."""
    from aitco.cli.validation_render import render_tco_validation
    from aitco.validation.tco import validate_full_runs

    res = validate_full_runs(state.catalog(), efficiency=_efficiency(calibration))
    if json_out:
        print_json(res)
        return
    render_tco_validation(res)


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``compare``, ``tco``, ``preset`` and ``validate tco``."""
    app.command("compare")(compare_cmd)
    app.command("tco")(tco_cmd)
    app.add_typer(preset_app, name="preset")
    groups["validate"].command("tco")(validate_tco_cmd)

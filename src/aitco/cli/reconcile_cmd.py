"""``aitco reconcile``: the predicted bill of a plan against the real one, item by item.

Thin: parse the flags, call :func:`aitco.decide.reconcile.reconcile` (and
:func:`~aitco.decide.reconcile.feedback` for ``--calibrate``), render. ``--json`` prints one
object with ``predicted_usd``, ``billed_usd``, ``variances[]`` (``cause``, ``item``, ``usd``...)
and ``unexplained_usd``; ``predicted_usd + sum(variances[].usd) + unexplained_usd`` equals
``billed_usd`` exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from aitco.cli import state
from aitco.cli.render import console, print_json, table
from aitco.errors import InputError
from aitco.formatting import pct, usd

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
#: Characters of a bill line's description shown in the terminal tables.
LABEL_CHARS = 48
#: Amounts below this print as $0.00 in the terminal (they are exact in --json). [USD]
HALF_CENT_USD = 0.005
#: Bill lines outside the run's scope listed in the terminal (all are in --json).
OUT_OF_SCOPE_SHOWN = 8


def _tags(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in items or []:
        k, sep, v = t.partition("=")
        if not sep or not k.strip():
            raise InputError("--tag", t, "KEY=VALUE (a resource tag of the run's resources)")
        out[k.strip()] = v.strip()
    return out


def _period(text: str | None) -> tuple[str | None, str | None]:
    if not text:
        return None, None
    a, sep, b = text.partition("/")
    if not sep:
        raise InputError("--period", text, "START/END (ISO dates or times; either may be empty)")
    return a.strip() or None, b.strip() or None


def reconcile_cmd(
    scenario: Annotated[
        str, typer.Argument(metavar="SCENARIO.yaml", help="The plan the bill is for.")
    ],
    bill: Annotated[
        Path, typer.Option("--bill", help="FOCUS billing export (CSV, .csv.gz or Parquet).")
    ],
    logs: Annotated[
        list[Path] | None,
        typer.Option(
            "--logs",
            help="A log of the run (repeatable; format detected, or KIND:FILE): a training "
            "log, DCGM / nvidia-smi telemetry, a vLLM / SGLang benchmark.",
        ),
    ] = None,
    option: Annotated[
        str | None, typer.Option("--option", help="Option of the scenario the bill is for.")
    ] = None,
    as_json: JsonOpt = False,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate",
            help="Write what the evidence supports: a calibration profile (-o) and a catalog "
            "overlay of billed prices and observed reliability (--prices).",
        ),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Calibration profile YAML to write (--calibrate)."),
    ] = None,
    prices: Annotated[
        Path | None,
        typer.Option(
            "--prices",
            help="Catalog overlay YAML to write (--calibrate; default: beside -o, "
            "NAME.prices.yaml).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Write the profile even when the fit is implausible."),
    ] = False,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag",
            help="KEY=VALUE: a resource tag of the run (repeatable); other resources' rows are "
            "listed as out of scope.",
        ),
    ] = None,
    account: Annotated[
        str | None,
        typer.Option("--account", help="Billing or sub-account id the run was billed to."),
    ] = None,
    period: Annotated[
        str | None,
        typer.Option("--period", help="START/END: the run's charge period (ISO dates)."),
    ] = None,
    tokens: Annotated[
        float | None,
        typer.Option("--tokens", help="Tokens a service served in the billed period.", min=0),
    ] = None,
    interval_s: Annotated[
        float | None,
        typer.Option(
            "--interval-s", help="Telemetry sampling interval in seconds (dcgmi dmon -d / 1000)."
        ),
    ] = None,
    idle_threshold: Annotated[
        float | None,
        typer.Option("--idle-threshold", help="Utilisation below which a GPU is idle [0-1]."),
    ] = None,
    engine: Annotated[
        str, typer.Option("--engine", help="How the bill is read: auto, csv or duckdb.")
    ] = "auto",
    calibration: Annotated[
        str | None,
        typer.Option("--calibration", help="Calibration profile YAML (as compare)."),
    ] = None,
    preset: Annotated[
        str | None, typer.Option("--preset", help="Assumption preset (as compare).")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write a self-contained HTML page (with a waterfall)."),
    ] = None,
) -> None:
    """Reconcile a plan with its bill: price and usage variances, item by item, and feedback."""
    from aitco.decide.reconcile import feedback, parse_logs, reconcile
    from aitco.decide.scenario import Scenario

    if calibrate and output is None:
        raise InputError("-o", None, "the profile YAML to write with --calibrate")
    if (output is not None or prices is not None) and not calibrate:
        raise InputError("--calibrate", False, "--calibrate when -o or --prices is given")
    if idle_threshold is not None and not 0 <= idle_threshold <= 1:
        raise InputError("--idle-threshold", idle_threshold, "a fraction in [0, 1]")
    if interval_s is not None and interval_s <= 0:
        raise InputError("--interval-s", interval_s, "a positive number of seconds")
    if engine not in ("auto", "csv", "duckdb"):
        raise InputError("--engine", engine, "auto, csv or duckdb")
    start, end = _period(period)
    from aitco.fileio import check_output

    for flag, path in (("-o", output), ("--prices", prices), ("--html", html)):
        if path is not None:  # before any work: never an input, never a device
            check_output(path, field=flag)
    if output is not None and prices is None:
        check_output(output.with_name(output.stem + ".prices.yaml"), field="--prices")
    scen = Scenario.from_yaml(scenario)
    cat = state.catalog()
    parsed = parse_logs(logs or [], interval_s=interval_s, idle_threshold=idle_threshold)
    rec = reconcile(
        scen,
        cat,
        bill,
        option=option,
        logs=parsed,
        efficiency=state.efficiency(calibration) if calibration else None,
        preset=preset,
        account=account,
        start=start,
        end=end,
        tags=_tags(tag),
        engine=engine,
        tokens_served=tokens,
    )
    out = rec.to_json()
    written: list[str] = []
    if calibrate:
        assert output is not None
        from aitco.calibrate.profile import save_profile
        from aitco.fileio import write_atomic

        fb = feedback(rec, scen, cat)
        if fb.warnings and not force:
            raise InputError(
                "fit",
                "implausible",
                f"a plausible fit ({fb.warnings[0]}); no profile written, pass --force to "
                "write it anyway",
            )
        prices_path = prices or output.with_name(output.stem + ".prices.yaml")
        save_profile(fb.profile, output)
        write_atomic(prices_path, fb.overlay_yaml(), field="--prices")
        written = [str(output), str(prices_path)]
        out["calibration"] = {
            "profile": str(output),
            "prices": str(prices_path),
            "warnings": fb.warnings,
            **fb.summary,
        }
    if html is not None:
        from aitco.fileio import write_atomic
        from aitco.report.html import render_reconcile_html

        write_atomic(html, render_reconcile_html(rec), field="--html")
        written.append(str(html))
    if as_json:
        print_json(out)
        return
    render(out)
    for w in written:
        console.print(f"wrote {escape(w)}", highlight=False)
    if calibrate:
        console.print(
            f"  next: aitco --catalog {escape(written[1])} compare {escape(scenario)} "
            f"--calibration {escape(written[0])}",
            highlight=False,
        )


def _money(x: float) -> str:
    """Dollars as :func:`aitco.formatting.usd`, with amounts below half a cent shown as $0.00."""
    return usd(0.0 if abs(x) < HALF_CENT_USD else x)


def _short(s: str, n: int = LABEL_CHARS) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def render(out: dict[str, Any]) -> None:
    """Print a reconciliation (the JSON of :meth:`Reconciliation.to_json`) as tables."""
    billed = out["billed_usd"] or 0.0
    b = out["bill"]
    console.print(
        f"[bold]{escape(out['scenario'])}[/bold] — option {escape(out['option'])} "
        f"({out['pricing']}, {out.get('provider') or '-'})",
        highlight=False,
    )
    console.print(
        f"bill {escape(str(b['path']))}: {b['rows']:,} rows ({b['engine']}), "
        f"{b['format_version']}, charge period {b['charge_period_start']} to "
        f"{b['charge_period_end']}; scope: {escape(b['scope'])}",
        highlight=False,
    )
    err = out["prediction_error_fraction"]
    console.print(
        f"predicted {usd(out['predicted_usd'])}, billed {usd(billed)}: prediction error "
        f"{usd(out['prediction_error_usd'])} ({pct(err) if err is not None else '-'})",
        highlight=False,
    )
    rows: list[list[Any]] = []
    for v in sorted(out["variances"], key=lambda v: -abs(v["usd"])):
        rows.append(
            [
                v["cause"],
                _short(v["item"]),
                _money(v["usd"]),
                pct(v["usd"] / billed) if billed else "-",
            ]
        )
    u = out["unexplained_usd"]
    rows.append(["unexplained", "", _money(u), pct(u / billed) if billed else "-"])
    t = table(
        "Variances, largest first (billed - predicted; how each is computed: --json basis)",
        ["cause", "item", "USD", "of billed"],
        rows,
    )
    t.columns[1].justify = "left"
    console.print(t)
    item_rows = [
        [
            _short(r["item"]),
            _money(r["predicted_usd"]),
            _money(r["billed_usd"]),
            _money(r["prediction_error_usd"]),
            pct(r["prediction_error_fraction"])
            if r["prediction_error_fraction"] is not None
            else "-",
        ]
        for r in out["items"]
    ]
    console.print(
        table(
            "Cost-prediction error by item (predicted - billed)",
            ["item", "predicted", "billed", "error", "error %"],
            item_rows,
        )
    )
    if out.get("serving"):
        s = out["serving"]
        srows = [[k, v] for k, v in s.items() if not isinstance(v, list | dict)]
        console.print(
            table("Service month: predicted against billed", ["quantity", "value"], srows)
        )
    oos = out["out_of_scope"]
    if oos:
        console.print(
            f"{len(oos)} bill lines outside the run's scope, {usd(out['out_of_scope_usd'])} "
            "(not billed to the run; all in --json):",
            highlight=False,
        )
        for g in oos[:OUT_OF_SCOPE_SHOWN]:
            console.print(
                f"  {g['scope']}: {escape(_short(g['label']))} — {usd(g['billed_usd'])} "
                f"({g['rows']} rows)",
                highlight=False,
            )
        if len(oos) > OUT_OF_SCOPE_SHOWN:
            console.print(f"  ... {len(oos) - OUT_OF_SCOPE_SHOWN} more", highlight=False)
    for n in out["notes"]:
        console.print(f"  - {escape(n)}", highlight=False)
    cal = out.get("calibration")
    if cal:
        for k, v in (cal.get("fitted") or {}).items():
            console.print(f"  fitted {k} = {v:.4g}", highlight=False)
        for line in cal.get("overlay") or []:
            console.print(f"  overlay {escape(line)}", highlight=False)


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``reconcile`` to the ``aitco`` command."""
    app.command("reconcile")(reconcile_cmd)

"""``aitco report``, ``aitco roi-template`` and ``aitco web``: reports, ROI workbook, web app.

Thin: each parses its flags, calls :mod:`aitco.report` (which calls :mod:`aitco.decide`) and
writes files atomically. Heavy imports (matplotlib, xlsxwriter, fastapi) happen inside the
commands so that ``aitco --help`` stays fast.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated, Any

import typer

from aitco.cli import state
from aitco.cli.render import console
from aitco.errors import AitcoError, EnvironmentFailure, InputError
from aitco.extras import require_extra
from aitco.fileio import check_output, write_atomic
from aitco.limits import DEFAULT_MAX_SWEEP_POINTS

#: Default address of ``aitco web``: localhost only.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


class EngineMissingError(AitcoError):
    """A ``decide`` engine this command needs is not installed."""


def _roi_inputs(roi_file: str | None) -> Any:
    if roi_file is None:
        return None
    from aitco.decide.roi import RoiInputs

    return RoiInputs.from_yaml(roi_file)


def _build(
    scenario_path: str,
    roi_file: str | None,
    telemetry: list[str] | None = None,
    sweep_file: str | None = None,
    max_points: int = DEFAULT_MAX_SWEEP_POINTS,
) -> Any:
    from aitco.decide.scenario import Scenario

    scen = Scenario.from_yaml(scenario_path)
    roi_in = _roi_inputs(roi_file)
    util = None
    if telemetry:
        from aitco.report.telemetry import utilisation_from_files

        util = utilisation_from_files(telemetry)
    try:
        from aitco.report.model import build_report

        cat = state.catalog()
        data = build_report(scen, cat, roi_inputs=roi_in, utilisation=util)
        if sweep_file is not None:
            from aitco.decide.sweep import SweepSpec
            from aitco.report.model import add_sweep_front

            add_sweep_front(
                data, SweepSpec.from_yaml(sweep_file), cat, source=Path(sweep_file).name,
                max_points=max_points,
            )  # fmt: skip
        return data
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("aitco."):
            raise EngineMissingError(f"{exc.name} is not available in this install") from exc
        raise


def report_cmd(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO.yaml", help="Scenario to compare.")],
    output: Annotated[
        str,
        typer.Option("-o", "--output", help="report.html (self-contained) or report.md (+ PNGs)."),
    ],
    roi: Annotated[
        str | None,
        typer.Option("--roi", help="ROI YAML (examples/roi_*.yaml) for ROI curves and tornado."),
    ] = None,
    telemetry: Annotated[
        list[str] | None,
        typer.Option(
            "--telemetry",
            help="dcgmi dmon or nvidia-smi CSV telemetry: utilisation/idle heatmap (repeatable).",
        ),
    ] = None,
    sweep: Annotated[
        str | None,
        typer.Option(
            "--sweep",
            help="Sweep YAML (aitco sweep): add the Pareto front of its plans.",
        ),
    ] = None,
    max_points: Annotated[
        int,
        typer.Option(
            "--max-points", help="Most plans the --sweep evaluates (a larger grid is refused)."
        ),
    ] = DEFAULT_MAX_SWEEP_POINTS,
    reconcile: Annotated[
        str | None,
        typer.Option(
            "--reconcile",
            help="JSON of `aitco reconcile --json`: add the plan-against-bill section (HTML).",
        ),
    ] = None,
) -> None:
    """Write a report: comparison, itemised breakdown and plots (HTML or Markdown)."""
    out = Path(output)
    suffix = out.suffix.lower()
    if suffix not in (".html", ".htm", ".md", ".markdown"):
        raise InputError("-o", output, "a path ending in .html or .md")
    check_output(out, field="-o")  # never an input (the scenario), never a device
    require_extra("report", what="aitco report")
    data = _build(scenario, roi, telemetry, sweep, max_points)
    if reconcile is not None:
        from aitco.report.reconcile import load_reconcile_json

        data.reconcile = load_reconcile_json(reconcile)
    if suffix in (".html", ".htm"):
        from aitco.report.html import render_html

        write_atomic(out, render_html(data), field="-o")
        written = [out]
    else:
        from aitco.report.markdown import write_markdown

        written = write_markdown(data, out)
    if not data.feasible_options:  # the answer first: nothing can run
        console.print(f"[bold red]{data.title}: {data.verdict}[/bold red]", highlight=False)
    console.print(
        f"wrote {written[0]}" + (f" and {len(written) - 1} plots" if len(written) > 1 else "")
    )


def roi_template_cmd(
    output: Annotated[str, typer.Option("-o", "--output", help="Workbook path (.xlsx).")],
    scenario: Annotated[
        str | None,
        typer.Argument(
            metavar="[SCENARIO]", help="Scenario whose cheapest option fills the running cost."
        ),
    ] = None,
    roi: Annotated[
        str | None, typer.Option("--roi", help="ROI YAML with the inputs to fill in.")
    ] = None,
) -> None:
    """Write the ROI workbook: inputs, live monthly ROI, payback, NPV, IRR, break-even, chart."""
    require_extra("xlsxwriter", "report", what="aitco roi-template")
    from aitco.report.xlsx import (
        WorkbookInputs,
        example_inputs,
        workbook_for,
        write_roi_workbook,
    )

    check_output(output, field="-o")
    inputs = example_inputs()
    roi_in = _roi_inputs(roi)
    if roi_in is not None:
        inputs = WorkbookInputs.from_roi_inputs(roi_in, notes=[f"inputs from {roi}"])
    if scenario is not None:
        data = _build(scenario, None)
        if not data.feasible_options:  # nothing feasible: said first, nothing filled
            console.print(f"[bold red]{data.title}: {data.verdict}[/bold red]", highlight=False)
        inputs = workbook_for(data, inputs)
    path = write_roi_workbook(output, inputs)
    console.print(f"wrote {path}")


def web_cmd(
    host: Annotated[
        str, typer.Option(help="Address to bind (localhost by default).")
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="TCP port.", min=1, max=65535)] = DEFAULT_PORT,
) -> None:
    """Serve the web app (scenario builder, comparison, charts, downloads) on HOST:PORT."""
    require_extra("web", what="aitco web")
    import uvicorn

    from aitco.web.app import create_app

    if host not in ("127.0.0.1", "localhost", "::1"):
        console.print(
            f"[yellow]warning:[/yellow] binding to {host}: the app is reachable from other hosts"
        )
    sock = _listen(host, port)  # a busy port is reported before any URL is printed
    console.print(f"aitco web on http://{host}:{port}/ (Ctrl-C to stop)")
    config = uvicorn.Config(
        create_app(overlays=state.overlays()), host=host, port=port, log_level="warning"
    )
    uvicorn.Server(config).run(sockets=[sock])


def _listen(host: str, port: int) -> socket.socket:
    """Bind ``host:port`` now, so a busy port fails with one line (exit 1) before serving."""
    sock: socket.socket | None = None
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen()
    except OSError as exc:
        if sock is not None:
            sock.close()
        raise EnvironmentFailure(
            f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc}); "
            "choose another --port"
        ) from exc
    return sock


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``report``, ``roi-template`` and ``web`` to the ``aitco`` command."""
    app.command("report")(report_cmd)
    app.command("roi-template")(roi_template_cmd)
    app.command("web")(web_cmd)

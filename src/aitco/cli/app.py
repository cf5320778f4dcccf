"""The ``aitco`` command: a typer app whose sub-commands live in their own modules.

Each ``aitco.cli.*_cmd`` module exposes ``register(app, groups)``; user errors
(:class:`aitco.errors.AitcoError`) print one line naming field, value and expectation and exit 2.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer
from pydantic import ValidationError

from aitco import __version__
from aitco.cli import state
from aitco.cli.render import err_console
from aitco.errors import AitcoError

app = typer.Typer(
    name="aitco",
    help="What will this AI workload really cost, on which hardware, and is it worth it?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
validate_app = typer.Typer(help="Validate the models against published runs.", no_args_is_help=True)
app.add_typer(validate_app, name="validate")
GROUPS: dict[str, typer.Typer] = {"validate": validate_app}

#: Modules that add commands; a module that is missing is skipped (built incrementally).
COMMAND_MODULES = (
    "catalog_cmd",
    "train_cmd",
    "infer_cmd",
    "tco_cmd",
    "decide_cmd",
    "calibrate_cmd",
    "audit_cmd",
    "report_cmd",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"aitco {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    catalog: Annotated[
        list[str] | None,
        typer.Option(
            "--catalog",
            help="Catalog overlay YAML (repeatable; may appear anywhere on the line). "
            "Also read from AITCO_CATALOG.",
        ),
    ] = None,
) -> None:
    """Estimate, compare and audit what AI training and inference really cost."""


_REGISTERED: list[bool] = []


def _register() -> None:
    """Import every command module once and let it add its commands."""
    if _REGISTERED:
        return
    _REGISTERED.append(True)
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(f"aitco.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"aitco.cli.{name}":
                continue
            raise
        mod.register(app, GROUPS)


def _extract_catalog_flags(argv: list[str]) -> tuple[list[str], list[str]]:
    """Pull every ``--catalog FILE`` / ``--catalog=FILE`` out of argv, wherever it is."""
    rest: list[str] = []
    paths: list[str] = []
    it = iter(range(len(argv)))
    skip = False
    for i in it:
        if skip:
            skip = False
            continue
        a = argv[i]
        if a == "--catalog" and i + 1 < len(argv):
            paths.append(argv[i + 1])
            skip = True
        elif a.startswith("--catalog="):
            paths.append(a.split("=", 1)[1])
        else:
            rest.append(a)
    return rest, paths


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    args = list(sys.argv[1:] if argv is None else argv)
    args, paths = _extract_catalog_flags(args)
    state.set_overlays(paths)
    _register()
    try:
        app(args=args, prog_name="aitco", standalone_mode=True)
    except AitcoError as exc:
        err_console.print(f"[bold red]error:[/bold red] {exc}", highlight=False, markup=True)
        sys.exit(exc.exit_code)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        err_console.print(
            f"[bold red]error:[/bold red] {loc} = {err.get('input')!r}: {err['msg']}",
            highlight=False,
        )
        sys.exit(2)
    sys.exit(0)


if __name__ == "__main__":  # pragma: no cover
    main()

"""The ``aitco`` command: a typer app whose sub-commands live in their own modules.

Each ``aitco.cli.*_cmd`` module exposes ``register(app, groups)``. The edge of the program is
here, in one place for every command:

- every numeric option is checked by :func:`aitco.limits.check_value` before the command runs
  (finite, inside its documented plausible range);
- user errors (:class:`aitco.errors.AitcoError`, pydantic ``ValidationError``), usage errors,
  unreadable or unwritable files and non-UTF-8 input print one ``error:`` line and exit 2;
  environment failures (disk full, out of memory, an unreachable service) print one line and
  exit 1 (see :data:`ENVIRONMENT_ERRNOS`). Both hold for ``python -m aitco`` and for
  ``typer.testing.CliRunner().invoke(app, ...)``, because the handling lives in the root
  group's ``main``.
"""

from __future__ import annotations

import errno
import functools
import importlib
import os
import sys
import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer
import typer.core
from pydantic import ValidationError
from typer.models import ArgumentInfo, OptionInfo

from aitco import __version__, fileio
from aitco.catalog.loader import env_paths
from aitco.cli import state
from aitco.cli.render import err_console
from aitco.errors import AitcoError
from aitco.extras import missing_extra
from aitco.limits import check_value

#: OS errors caused by the machine rather than by the user's input: exit 1 (not 2).
ENVIRONMENT_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.ENOMEM,
        errno.EIO,
        errno.ECONNREFUSED,
        errno.ETIMEDOUT,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.EADDRINUSE,
    }
)
#: Exit status of a user error (bad value, unreadable file, usage) and of an environment failure.
EXIT_USER = 2
EXIT_ENVIRONMENT = 1


def _say(message: str) -> None:
    """Print the one ``error:`` line on stderr (no markup interpretation of the message)."""
    err_console.print(
        f"[bold red]error:[/bold red] {_one_line(message)}",
        highlight=False,
        markup=True,
        soft_wrap=True,
    )


def _one_line(text: str) -> str:
    from rich.markup import escape

    return escape(" ".join(str(text).split()))


def _os_error_line(exc: OSError) -> tuple[str, int]:
    where = exc.filename if exc.filename is not None else ""
    what = exc.strerror or type(exc).__name__
    code = EXIT_ENVIRONMENT if exc.errno in ENVIRONMENT_ERRNOS else EXIT_USER
    return (f"{where}: {what}" if where else what), code


def _silence_stdout() -> None:
    """Point a broken standard output at /dev/null, so the flush at exit raises nothing."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, AttributeError, ValueError):  # no real file descriptor (a test runner)
        pass


def _stdout_is_devnull() -> bool:
    """Whether standard output is /dev/null (rich points a broken pipe there)."""
    try:
        st, null = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError, AttributeError):
        return False
    return (st.st_dev, st.st_ino, st.st_rdev) == (null.st_dev, null.st_ino, null.st_rdev)


def _closed_stream() -> str | None:
    """Name of a closed standard stream (``aitco compare --json >&-``), else None."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            return name
        try:
            fd = stream.fileno()
        except (OSError, ValueError, AttributeError):  # io.StringIO in a test runner: open
            continue
        try:
            os.fstat(fd)
        except OSError:
            return name
    return None


def handle_errors(fn: Callable[[], Any]) -> int:
    """Run ``fn`` and turn every expected failure into one ``error:`` line and an exit status."""
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
    from typer.exceptions import Abort, Exit

    was_devnull = _stdout_is_devnull()
    try:
        rv = fn()
        return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
    except Exit as exc:
        return int(exc.exit_code)
    except SystemExit:
        # click and rich answer a broken pipe with a silent exit 1 (click wraps the streams,
        # rich points stdout at /dev/null): say it in one line
        pacified = type(sys.stdout).__name__ == "PacifyFlushWrapper"
        if pacified or (_stdout_is_devnull() and not was_devnull):
            _say("standard output was closed by its reader (broken pipe); output cut short")
            return EXIT_ENVIRONMENT
        raise
    except NoArgsIsHelpError as exc:
        exc.show()
        return EXIT_USER
    except ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        hint = f" (try '{ctx.command_path} --help')" if ctx is not None else ""
        _say(exc.format_message() + hint)
        return int(exc.exit_code)
    except Abort:
        _say("aborted")
        return EXIT_ENVIRONMENT
    except AitcoError as exc:
        _say(str(exc))
        return exc.exit_code
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        value = err.get("input")
        shown = repr(value) if not isinstance(value, dict | list) else type(value).__name__
        _say(f"{loc} = {shown[:200]}: {err['msg']}")
        return EXIT_USER
    except UnicodeError as exc:
        _say(f"input is not UTF-8 text ({exc})")
        return EXIT_USER
    except ModuleNotFoundError as exc:
        missing = missing_extra(exc)  # an optional package: name the extra that brings it
        if missing is None:
            raise
        _say(str(missing))
        return missing.exit_code
    except ValueError as exc:
        if not type(exc).__module__.startswith("pandas"):  # a CSV pandas cannot parse
            raise
        _say(f"input is not a readable CSV table ({exc})")
        return EXIT_USER
    except OSError as exc:
        if exc.errno == errno.EPIPE:  # the reader went away (``| head``)
            _silence_stdout()
            _say("standard output was closed by its reader (broken pipe); output cut short")
            return EXIT_ENVIRONMENT
        line, code = _os_error_line(exc)
        _say(line)
        return code
    except MemoryError:
        _say("out of memory; use a smaller input (see the input ranges in docs/cli.md)")
        return EXIT_ENVIRONMENT
    except RecursionError:
        _say("input nested too deeply")
        return EXIT_USER


class AitcoGroup(typer.core.TyperGroup):
    """Root command group: ``--catalog`` anywhere on the line, and the error handling above."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; exit (or return, when not standalone) with its status."""
        closed = _closed_stream()
        if closed is not None:  # one line (when stderr is open) and a non-zero exit
            if closed == "stdout" and sys.stderr is not None:
                sys.stderr.write("error: standard output is closed: nothing can be printed\n")
            if standalone_mode:
                sys.exit(EXIT_ENVIRONMENT)
            return EXIT_ENVIRONMENT
        argv = list(sys.argv[1:] if args is None else args)
        argv, paths = _extract_catalog_flags(argv)
        state.set_overlays(paths)
        show_flags_as_flags(self)

        def run() -> Any:
            for p in [*env_paths(), *paths]:  # overlays are inputs of every command
                fileio.note_input(p)
            return super(AitcoGroup, self).main(
                argv, prog_name or "aitco", complete_var, standalone_mode=False, **extra
            )

        with fileio.command_scope():  # the files this command reads: no output replaces one
            code = handle_errors(run)
        if standalone_mode:
            sys.exit(code)
        return code


def show_flags_as_flags(command: Any) -> None:
    """Give every on/off option of ``command`` (and its sub-commands) no value in ``--help``.

    Typer shows each option's type (``--json <bool>``), which reads as if a flag took a value;
    a flag is written alone (``--json``), as it is typed.
    """
    from typer._click.core import Context

    params = list(getattr(command, "params", ()))
    if hasattr(command, "get_help_option"):  # --help is made (once) when first asked for
        params.append(command.get_help_option(Context(command)))
    for p in params:
        if getattr(p, "is_bool_flag", False) and p.metavar is None:
            p.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        show_flags_as_flags(sub)


app = typer.Typer(
    cls=AitcoGroup,
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
    "reconcile_cmd",
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
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            metavar="DATE",
            help="Price as of DATE (YYYY-MM-DD): each price series takes its latest quote dated "
            "on or before it (price_history), and ages are measured at it. Give it before the "
            "command: aitco --as-of 2025-06-01 compare ...",
        ),
    ] = None,
) -> None:
    """Estimate, compare and audit what AI training and inference really cost."""
    state.set_as_of(as_of)


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
    _validate_options(app)


def _flag_of(name: str, hint: Any) -> str:
    """Return the command-line spelling of ``name`` (its first ``--flag``, else ``--name``)."""
    for meta in typing.get_args(hint)[1:] if typing.get_origin(hint) is Annotated else ():
        if isinstance(meta, OptionInfo | ArgumentInfo):
            decls = [d for d in (meta.param_decls or ()) if d.startswith("--")]
            if decls:
                return decls[0].split("/")[0]
            if isinstance(meta, ArgumentInfo):
                return name.upper()
    return "--" + name.replace("_", "-")


#: Parameters that name a file or folder a command writes (never one of its inputs).
OUTPUT_PARAMS = frozenset({"output", "out", "csv", "parquet", "html", "prices"})


def _checked(callback: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a command: every numeric option passes :func:`aitco.limits.check_value` first.

    Every other argument that names an existing regular file is noted as an input of the
    command (:func:`aitco.fileio.note_input`), so that an output path can be refused before any
    work is done when it is one of them.
    """
    hints = typing.get_type_hints(callback, include_extras=True)
    flags = {n: _flag_of(n, h) for n, h in hints.items() if n != "return"}

    @functools.wraps(callback)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, value in kwargs.items():
            items = value if isinstance(value, list | tuple) else [value]
            for v in items:
                check_value(flags.get(name, name), v)
                if name not in OUTPUT_PARAMS and isinstance(v, str | os.PathLike) and v:
                    fileio.note_input(v)
        return callback(*args, **kwargs)

    wrapper.__aitco_checked__ = True  # type: ignore[attr-defined]
    return wrapper


def _validate_options(typer_app: typer.Typer) -> None:
    """Install :func:`_checked` on every registered command, sub-groups included."""
    for info in typer_app.registered_commands:
        if info.callback is not None and not getattr(info.callback, "__aitco_checked__", False):
            info.callback = _checked(info.callback)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _validate_options(group.typer_instance)


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
    """Console-script entry point (exits with the status described in the module docstring)."""
    _register()
    app(args=list(sys.argv[1:] if argv is None else argv), prog_name="aitco")


if __name__ == "__main__":  # pragma: no cover
    main()

"""CLI fuzz harness (issue 18): hostile values into every command and option, in-process.

Every leaf command of ``aitco`` is found from the typer app itself, so a new command or option is
fuzzed without editing this file. Each case starts from a known-good invocation of the command
(:data:`BASES`, or just the command name), sets one option or argument to a hostile value (NaN,
infinities, -1, 0, 1e308, empty, non-UTF-8 text, a directory, an unwritable path, a path under a
regular file, a binary file) and runs it with typer's ``CliRunner``. The outcome must be one of:

- exit 0, and with ``--json`` one JSON object on stdout with no NaN or infinity in it;
- exit 2 (bad input) or 1 (environment failure) with exactly one ``error:`` line on stderr;

and never an uncaught exception (a traceback) nor ``nan``/``inf`` printed as a result.

Used by ``tests/fuzz/test_cli_fuzz.py`` (bounded, in the normal suite) and by
``benchmarks/fuzz_cli.py`` (a longer run with a count argument).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import typer
from typer.testing import CliRunner

from aitco.cli import app as cli_app

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DATA = REPO / "tests" / "calibrate" / "data"

#: Commands never fuzzed in-process: ``web`` serves forever once it gets a free port.
SKIP = frozenset({"web"})
#: Commands too slow (several seconds per run on a small machine) for the bounded CI run.
SLOW = frozenset(
    {"report", "validate training", "validate inference", "validate tco", "preset diff",
     "api-vs-self-host", "compare", "sweep"}
)  # fmt: skip

#: A known-good invocation per command (``<tmp>`` is the case's scratch folder).
BASES: dict[str, list[str]] = {
    "train": ["train", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "8",
              "--tokens", "1e9", "--json"],
    "infer": ["infer", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb", "--json"],
    "compare": ["compare", "--json"],
    "tco": ["tco", str(EXAMPLES / "multistage-tco.yaml"), "--json"],
    "roi": ["roi", "--monthly-savings-usd", "128000", "--monthly-cost-usd", "42000", "--json"],
    "breakeven": ["breakeven", "--fixed-cost-usd", "1280000", "--price-per-call-usd", "0.85",
                  "--gross-margin", "0.62", "--json"],
    "sweep": ["sweep", str(EXAMPLES / "sweep_training.yaml"), "--no-progress", "--json"],
    "optimize": ["optimize", str(EXAMPLES / "sweep_training.yaml"), "--no-progress", "--json"],
    "buy-vs-rent": ["buy-vs-rent", str(EXAMPLES / "buy_vs_rent_h100.yaml"), "--json"],
    "api-vs-self-host": ["api-vs-self-host", str(EXAMPLES / "api_vs_self_host_llama70b.yaml"),
                         "--json"],
    "arbitrage": ["arbitrage", str(EXAMPLES / "price_trace_h100_spot.csv"), "--json"],
    "fit-score": ["fit-score", "--model", "llama-3-8b", "--hardware", "l4", "--json"],
    "levers": ["levers", str(EXAMPLES / "levers_llama3_8b_pretrain.yaml"), "--json"],
    "ingest": ["ingest", "auto", str(DATA / "nccl_results.json"), "--json"],
    "actual-vs-estimate": ["actual-vs-estimate", str(DATA / "steps.jsonl"), "--model",
                           "llama-3-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "8",
                           "--seq-len", "2048", "--global-batch", "16", "--json"],
    "calibrate": ["calibrate", str(DATA / "nccl_results.json"), "-o", "<tmp>/p.yaml", "--force",
                  "--json"],
    "probe": ["probe", "--size", "128", "--copy-mb", "4", "--repeats", "1", "--backend",
              "numpy", "--json"],
    "audit": ["audit", str(DATA / "vllm_current.jsonl"), "--price", "openai/gpt-4o", "--json"],
    "api-prices": ["api-prices", "--json"],
    "report": ["report", str(EXAMPLES / "default.yaml"), "-o", "<tmp>/r.html"],
    "roi-template": ["roi-template", "-o", "<tmp>/roi.xlsx"],
    "catalog list": ["catalog", "list", "accelerators", "--json"],
    "catalog show": ["catalog", "show", "h100-sxm5-80gb", "--json"],
    "catalog sources": ["catalog", "sources", "--json"],
    "preset list": ["preset", "list", "--json"],
    "preset show": ["preset", "show", "industry-2024", "--json"],
    "preset diff": ["preset", "diff", "aitco-default", "industry-2024", "--json"],
}  # fmt: skip

#: Hostile numbers (as typed on a command line).
NUMBERS = ("nan", "inf", "-inf", "-1", "0", "1e308", "-1e308", "", "1e-320", "caf\udce9",
           "99999999999999999999999")  # fmt: skip
#: Hostile ids and free text.
STRINGS = ("", "nosuch-id", "caf\udce9", "x" * 400, "../../../etc/passwd", "nan", "-1",
           "[bold]markup[/bold]")  # fmt: skip
#: Hostile paths; ``<...>`` placeholders are made per case by :func:`make_path`.
PATHS = ("<dir>", "<unwritable>", "<under-file>", "<binary>", "<latin1>", "<empty>",
         "<missing>", "")  # fmt: skip

_PATH_NAME = re.compile(
    r"(output|csv|parquet|calibration|scenario|file|log|sweep|trace|roi|path|dir|xlsx|catalog)"
)


@dataclass(frozen=True)
class Slot:
    """One option or argument of a command, and the hostile values it gets."""

    command: str
    flag: str | None  # None for a positional argument
    index: int  # position among the command's arguments
    values: tuple[str, ...]


def leaf_commands() -> dict[str, Any]:
    """``{"catalog show": click command, ...}`` for every command of the app."""
    cli_app._register()
    group = typer.main.get_command(cli_app.app)
    found: dict[str, Any] = {}

    def walk(cmd: Any, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        elif path:
            found[" ".join(path)] = cmd

    walk(group, [])
    return found


def _values_for(param: Any) -> tuple[str, ...] | None:
    ann = param.type_descriptor.annotation
    text = str(ann)
    if ann is bool or getattr(param, "is_flag", False):
        return None
    if ann in (int, float):
        return NUMBERS
    if "Path" in text or _PATH_NAME.search(param.name or ""):
        return PATHS
    return STRINGS


def slots(*, include_slow: bool = True) -> list[Slot]:
    """Every fuzzable option and argument of every command."""
    out: list[Slot] = []
    for name, cmd in sorted(leaf_commands().items()):
        if name in SKIP or (not include_slow and name in SLOW):
            continue
        n_arg = 0
        for p in cmd.params:
            if p.name == "help" or getattr(p, "hidden", False):
                continue
            values = _values_for(p)
            is_arg = getattr(p, "param_type_name", "") == "argument"
            if values is not None:
                flag = None if is_arg else p.opts[0]
                out.append(Slot(name, flag, n_arg, values))
            n_arg += int(is_arg)
        out.append(Slot(name, "--catalog", 0, PATHS))  # the global overlay option
    return out


def make_path(token: str, tmp: Path) -> str:
    """Turn a ``<...>`` placeholder into a real hostile path under ``tmp``."""
    regular = tmp / "regular.txt"
    regular.write_text("x")
    made = {
        "<dir>": tmp,
        "<unwritable>": Path("/proc/aitco-no-such-dir/out.yaml"),
        "<under-file>": regular / "out.yaml",
        "<missing>": tmp / "missing" / "nothing.yaml",
    }
    if token in made:
        return str(made[token])
    if token == "<binary>":
        p = tmp / "blob.yaml"
        p.write_bytes(bytes(range(256)) * 4)
        return str(p)
    if token == "<latin1>":
        p = tmp / "latin1.yaml"
        p.write_bytes("name: café\nworkload:\n  tokens: 1e300\n".encode("latin-1"))
        return str(p)
    if token == "<empty>":
        p = tmp / "empty.yaml"
        p.write_bytes(b"")
        return str(p)
    return token


def build_args(slot: Slot, value: str, tmp: Path) -> list[str]:
    """The base invocation of ``slot.command`` with ``slot`` set to ``value``."""
    base = [a.replace("<tmp>", str(tmp)) for a in BASES.get(slot.command, slot.command.split())]
    value = make_path(value, tmp) if value.startswith("<") and value.endswith(">") else value
    n_words = len(slot.command.split())
    if slot.flag is None:  # replace the index-th positional argument after the command words
        pos = [
            i for i in range(n_words, len(base))
            if not base[i].startswith("-") and not base[i - 1].startswith("-")
        ]  # fmt: skip
        if slot.index < len(pos):
            base[pos[slot.index]] = value
        else:
            base.insert(n_words, value)
        return base
    if slot.flag in base:
        i = base.index(slot.flag)
        if i + 1 < len(base) and not base[i + 1].startswith("--"):
            base[i + 1] = value
            return base
    return [*base, slot.flag, value]


#: A printed NaN or infinity: a whole token, not part of a name (``aws-inf2.xlarge``, ``nano``).
_NON_FINITE = re.compile(r"(?<![A-Za-z0-9_-])(nan|NaN|-?inf|-?Infinity|\$inf)(?![A-Za-z0-9_])")


@dataclass
class Outcome:
    """What one case did, and the problem found (None when it behaved)."""

    args: list[str]
    exit_code: int
    problem: str | None
    stdout: str = ""


def check(args: list[str], runner: CliRunner | None = None) -> Outcome:
    """Run one case and judge it against the rules in the module docstring."""
    runner = runner or CliRunner()
    cmd = _command()
    with mock.patch("typer.testing._get_command", return_value=cmd):  # build the tree once
        res = runner.invoke(cli_app.app, args, catch_exceptions=True)
    outcome = _judge(args, res)
    outcome.stdout = res.stdout
    return outcome


def _judge(args: list[str], res: Any) -> Outcome:
    """Judge one finished run (see :func:`check`)."""
    code = res.exit_code
    exc = res.exception
    if exc is not None and not isinstance(exc, SystemExit):
        return Outcome(args, code, f"uncaught {type(exc).__name__}: {exc}")
    out, err = res.stdout, res.stderr
    if "Traceback" in out or "Traceback" in err:
        return Outcome(args, code, "traceback printed")
    if code == 0:
        if "--json" in args:
            try:
                doc = json.loads(out)
            except ValueError as e:
                return Outcome(args, code, f"--json output is not one JSON object ({e})")
            bad = _first_non_finite(doc)
            if bad:
                return Outcome(args, code, f"non-finite number in JSON at {bad}")
        elif _NON_FINITE.search(_strip_echo(out, args)):
            return Outcome(args, code, "non-finite number printed")
        return Outcome(args, code, None)
    if code in (1, 2):
        lines = [ln for ln in err.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("error: ")]
        if len(errors) != 1:
            return Outcome(args, code, f"expected one 'error:' line on stderr, got {lines[:3]}")
        return Outcome(args, code, None)
    return Outcome(args, code, f"unexpected exit status {code}")


@functools.cache
def _command() -> Any:
    """The click command tree of the app, built once (typer rebuilds it on every invoke)."""
    cli_app._register()
    return typer.main.get_command(cli_app.app)


def _strip_echo(text: str, args: list[str]) -> str:
    for a in args:  # a value the user typed may be echoed back (an id, a file name)
        if len(a) > 2:
            text = text.replace(a, "")
    return text


def _first_non_finite(obj: Any, path: str = "") -> str | None:
    if isinstance(obj, float) and not math.isfinite(obj):
        return path or "."
    if isinstance(obj, dict):
        for k, v in obj.items():
            hit = _first_non_finite(v, f"{path}.{k}")
            if hit:
                return hit
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            hit = _first_non_finite(v, f"{path}[{i}]")
            if hit:
                return hit
    return None

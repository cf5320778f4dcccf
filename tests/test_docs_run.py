"""Docs that run: every ``aitco`` command shown in README.md and docs/*.md, and the module map.

Each command in a fenced ``bash``/``console`` block is run in-process from a scratch folder that
holds ``examples/``, ``tests/`` and the input files the pages name (the real fixtures of
``tests/fixtures``). It must exit 0 (or the status its comment states, ``# exit 2``). Where the
page shows JSON output under the command, the real output must have the same shape: every key the
page shows, with the same kind of value (numbers may differ: prices and fits move).

Lines that are synopses rather than commands (``A | B``, ``[--flag]``, ``NAME``, ``...``) and
long-running servers (``aitco web``) are checked against the command line itself instead: the
command exists and takes every flag the line shows.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from tests.conftest import FIXTURES, REPO

import aitco.cli.app as cli_app

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
SHELL_LANGS = {"", "bash", "console", "sh", "shell"}
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(\.[a-z]+)?\]?$")
SERVERS = {"web"}
#: Input files the pages name, made from the fixtures (name in the page -> file in the clone).
ALIASES = {
    "requests.jsonl": FIXTURES / "openai_usage.jsonl",
    "dcgm_dmon.txt": FIXTURES / "dcgmi_dmon.txt",
    "my.csv": FIXTURES / "groundtruth" / "training.csv",
    "config.json": REPO / "tests" / "catalog" / "data" / "hf" / "llama-3-8b" / "config.json",
}
#: A request trace in the documented format (arrival_s,input_tokens,output_tokens).
TRACE_CSV = "arrival_s,input_tokens,output_tokens\n0.0,512,128\n0.5,1024,256\n1.0,256,64\n"


@dataclass(frozen=True)
class DocCommand:
    """One command line of a page, with the output the page shows under it (if any)."""

    page: str
    line: int
    text: str
    shown: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    def argv_chain(self) -> list[list[str]]:
        """The command's argv lists (``a && b`` is two), without the program name."""
        words = shlex.split(self.text, comments=True)
        chains: list[list[str]] = [[]]
        for w in words:
            if w == "&&":
                chains.append([])
            else:
                chains[-1].append(w)
        out = []
        for argv in chains:
            if argv[:3] == ["python", "-m", "aitco"]:
                argv = argv[3:]
            elif argv[:1] == ["aitco"]:
                argv = argv[1:]
            out.append(argv)
        return out

    def is_synopsis(self) -> bool:
        words = shlex.split(self.text, comments=True)
        return any(
            w == "|" or w.startswith("[") or w in ("...", "…") or PLACEHOLDER.match(w)
            for w in words
        )

    def expected_exit(self) -> int:
        """0, or the status a ``# exit N`` comment states (2 when the page shows an error)."""
        m = re.search(r"#.*\bexit(?: status| code)? (\d)", self.text)
        if m:
            return int(m.group(1))
        return 2 if self.shown.startswith("error:") else 0


def _commands(page: Path) -> list[DocCommand]:
    text = page.read_text(encoding="utf-8")
    out: list[DocCommand] = []
    for m in FENCE.finditer(text):
        if m.group(1) not in SHELL_LANGS:
            continue
        first_line = text.count("\n", 0, m.start(2)) + 1
        lines = m.group(2).splitlines()
        i = 0
        while i < len(lines):
            raw = lines[i].strip()
            start = i
            cmd = raw[2:] if raw.startswith("$ ") else raw
            if not (
                cmd.startswith("aitco ") or cmd == "aitco" or cmd.startswith("python -m aitco")
            ):
                i += 1
                continue
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            shown: list[str] = []
            if raw.startswith("$ "):
                while i < len(lines) and not lines[i].strip().startswith("$ "):
                    shown.append(lines[i])
                    i += 1
            rel = page.relative_to(REPO).as_posix()
            out.append(DocCommand(rel, first_line + start, cmd, "\n".join(shown).strip()))
    return out


COMMANDS = [c for p in PAGES for c in _commands(p)]


def test_the_pages_show_commands():
    assert len(COMMANDS) >= 60, f"only {len(COMMANDS)} commands found in README.md and docs/"
    assert any(c.page == "README.md" for c in COMMANDS)


# --------------------------------------------------------------------------------------------
# running


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch folder holding what the pages' commands read, and where they write."""
    d = tmp_path_factory.mktemp("docs-run")
    for name in ("examples", "tests", "src"):
        (d / name).symlink_to(REPO / name, target_is_directory=True)
    for f in FIXTURES.iterdir():
        if f.is_file() and f.name != "README.md":
            shutil.copy(f, d / f.name)
    for name, src in ALIASES.items():
        shutil.copy(src, d / name)
    (d / "requests.csv").write_text(TRACE_CSV, encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    overlay = re.search(r"```yaml\n(# my-prices\.yaml.*?)```", readme, re.S)
    assert overlay, "README.md no longer shows the my-prices.yaml overlay"
    (d / "my-prices.yaml").write_text(overlay.group(1), encoding="utf-8")
    # prof.yaml: a calibration profile, fitted as docs/cli.md shows (aitco calibrate)
    calibrate = "calibrate megatron_log.txt --model mixtral-8x7b --hardware h100-sxm5-80gb"
    argv = [*calibrate.split(), "--gpus", "16", "--seq-len", "2048", "--params", "gemm"]
    argv += ["-o", str(d / "prof.yaml"), "--json"]
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(io.StringIO()):
        mp.chdir(d)
        mp.delenv("AITCO_CATALOG_DATA", raising=False)  # the pages show the shipped catalog
        with pytest.raises(SystemExit) as exc:
            cli_app.main(argv)
    assert exc.value.code in (0, None), f"aitco {' '.join(argv)} failed"
    return d


_RUNS: dict[tuple[str, ...], tuple[int, str, str]] = {}


def _run(argv: list[str], cwd: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    key = (str(cwd), *argv)
    if key not in _RUNS:
        capsys.readouterr()
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(cwd)
            mp.setattr(sys, "argv", ["aitco", *argv])
            with pytest.raises(SystemExit) as exc:
                cli_app.main(list(argv))
        out, err = capsys.readouterr()
        code = exc.value.code
        _RUNS[key] = (code if isinstance(code, int) else (0 if code is None else 1), out, err)
    return _RUNS[key]


def _kind(x: Any) -> str:
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int | float):
        return "number"
    return type(x).__name__


def shape_mismatches(shown: Any, actual: Any, path: str = "$") -> list[str]:
    """Where ``actual`` lacks a key the page shows, or holds another kind of value there.

    ``"…"`` keys and ``"… N more"`` list items mark what the page left out; ``null`` on
    either side matches anything (a value that may not exist).
    """
    if shown is None or actual is None:
        return []
    if shown == "{…}":  # an object the page leaves out
        shown = {}
    elif shown == "[…]":
        shown = []
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            return [f"{path}: the page shows an object, the command gives {_kind(actual)}"]
        out: list[str] = []
        for k, v in shown.items():
            if k.startswith("…"):
                continue
            if k not in actual:
                out.append(f"{path}.{k}: shown on the page, absent from the output")
            else:
                out += shape_mismatches(v, actual[k], f"{path}.{k}")
        return out
    if isinstance(shown, list):
        if not isinstance(actual, list):
            return [f"{path}: the page shows a list, the command gives {_kind(actual)}"]
        items = [x for x in shown if not (isinstance(x, str) and x.startswith("…"))]
        if items and actual:
            return shape_mismatches(items[0], actual[0], f"{path}[0]")
        return []
    if _kind(shown) != _kind(actual):
        return [f"{path}: the page shows a {_kind(shown)}, the command gives {_kind(actual)}"]
    return []


def test_shape_comparison_finds_drift():
    shown = {"a": 1.5, "b": {"c": "x"}, "top": [{"d": 1}, "… 2 more"], "…": "3 more keys"}
    good = {"a": 2, "b": {"c": "y", "e": 1}, "top": [{"d": 7, "f": 0}], "g": 1}
    assert shape_mismatches(shown, good) == []
    assert shape_mismatches({"explain": "{…}"}, {"explain": {"x": 1}}) == []
    assert shape_mismatches({"explain": "{…}"}, {"explain": "text"}) != []
    bad = {"a": "2", "b": {}, "top": [{"d": None}]}
    assert shape_mismatches(shown, bad) == [
        "$.a: the page shows a number, the command gives str",
        "$.b.c: shown on the page, absent from the output",
    ]


def _runnable() -> list[DocCommand]:
    return [c for c in COMMANDS if not c.is_synopsis() and c.argv_chain()[0][:1] != ["web"]]


def _tiered(cmd: DocCommand) -> Any:
    """A documented command is an integration test; a cross-validation (``--cv``), which refits
    the model once per fold, is in the refit tier (tests/README.md)."""
    refits = any("--cv" in argv for argv in cmd.argv_chain())
    return pytest.param(cmd, marks=pytest.mark.refit if refits else pytest.mark.integration)


@pytest.mark.usefixtures("live_catalog_data")  # the pages show output of the shipped catalog
@pytest.mark.parametrize("cmd", [_tiered(c) for c in _runnable()], ids=lambda c: c.id)
def test_doc_command_runs(cmd: DocCommand, workdir: Path, capsys: pytest.CaptureFixture[str]):
    chain = cmd.argv_chain()
    for argv in chain[:-1]:
        code, _, err = _run(argv, workdir, capsys)
        assert code == 0, f"{cmd.id}: aitco {shlex.join(argv)} exited {code}: {err[-600:]}"
    code, out, err = _run(chain[-1], workdir, capsys)
    assert code == cmd.expected_exit(), (
        f"{cmd.id}: aitco {shlex.join(chain[-1])} exited {code}, the page expects "
        f"{cmd.expected_exit()}: {err[-600:]}"
    )
    assert "Traceback" not in err
    if cmd.shown.startswith("{"):
        shown = json.loads(cmd.shown)
        actual = json.loads(out)
        problems = shape_mismatches(shown, actual)
        assert not problems, f"{cmd.id}: output differs in shape from the page:\n" + "\n".join(
            problems
        )


# --------------------------------------------------------------------------------------------
# synopses and servers: the command exists and takes the flags shown


def _click_root() -> Any:
    cli_app._register()
    root = typer.main.get_command(cli_app.app)
    assert hasattr(root, "commands"), "the aitco app is not a command group"
    return root


def _flags_of(cmd: Any) -> set[str]:
    flags: set[str] = set()
    for p in cmd.params:
        flags.update(o for o in (*p.opts, *p.secondary_opts) if o.startswith("-"))
    if hasattr(cmd, "commands"):
        for sub in cmd.commands.values():
            flags |= _flags_of(sub)
    return flags


def _synopses() -> list[DocCommand]:
    return [c for c in COMMANDS if c not in _runnable()]


@pytest.mark.parametrize("cmd", _synopses(), ids=lambda c: c.id)
def test_doc_synopsis_names_real_commands_and_flags(cmd: DocCommand):
    root = _click_root()
    for argv in cmd.argv_chain():
        words = [w.strip("[]") for w in argv]
        assert words, f"{cmd.id}: empty command"
        name = words[0]
        assert name in root.commands, f"{cmd.id}: no command 'aitco {name}'"
        command = root.commands[name]
        flags = {w.split("=", 1)[0] for w in words if w.startswith("--")}
        unknown = sorted(flags - _flags_of(command) - {"--help", "--catalog", "--version"})
        assert not unknown, f"{cmd.id}: 'aitco {name}' takes no {unknown}"


# --------------------------------------------------------------------------------------------
# docs/architecture.md: the module map names every package and module, and nothing else


def _module_map() -> str:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    begin, end = "<!-- BEGIN module map", "<!-- END module map -->"
    assert begin in text, "docs/architecture.md lost its module-map markers"
    assert end in text, "docs/architecture.md lost its module-map markers"
    return text.split(begin, 1)[1].split(end, 1)[0]


def test_architecture_map_names_every_package_and_module():
    section = _module_map()
    src = REPO / "src" / "aitco"
    missing = []
    for p in sorted(src.rglob("*.py")):
        rel = p.relative_to(src).as_posix()
        if p.parent == src:
            name = f"`aitco.{p.stem}`" if p.stem != "__init__" else None
        elif p.name == "__init__.py":
            name = f"`aitco.{p.parent.relative_to(src).as_posix().replace('/', '.')}`"
            if "/" in p.parent.relative_to(src).as_posix():
                name = None  # a sub-package shows through its modules
        else:
            name = f"`{rel}`"
        if name and name not in section:
            missing.append(name)
    assert not missing, (
        f"docs/architecture.md does not name {missing}: run python scripts/gen_architecture.py"
    )
    named = set(re.findall(r"`([a-z_/]+\.py)`", section))
    gone = sorted(n for n in named if "/" in n and not (src / n).is_file())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"

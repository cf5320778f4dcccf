"""Optional dependencies: a missing extra is one line naming it, exit 2, never a traceback.

The extras are simulated missing by an import hook that refuses their packages: in-process for
the commands that need an extra (the aitco modules that imported one are dropped from
``sys.modules`` for the test and put back afterwards), and in a clean interpreter for the README
tour with no extra at all (integration tier), as after a plain ``pip install .``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.metadata
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REPO

from aitco.extras import EXTRA_MODULES, EXTRA_OF_MODULE, MissingExtraError, require_extra

EXTRAS = sorted(set(EXTRA_OF_MODULE.values()))
#: aitco modules that import an optional package at their top: re-imported under the block.
REIMPORTED = ("aitco.cli", "aitco.report", "aitco.web", "aitco.audit", "aitco.calibrate")
ONE_LINE = re.compile(r"^error: .* pip install 'aitco\[(\w+)\]'$")


class _Blocker(importlib.abc.MetaPathFinder):
    def __init__(self, tops: set[str]) -> None:
        self.tops = tops

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.split(".")[0] in self.tops:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


@contextlib.contextmanager
def without(modules: Sequence[str]) -> Iterator[None]:
    """Run the block as if ``modules`` (import names) were not installed."""
    tops = set(modules)
    saved = dict(sys.modules)
    for name in list(sys.modules):
        if name.split(".")[0] in tops or name.startswith(REIMPORTED):
            del sys.modules[name]
    blocker = _Blocker(tops)
    sys.meta_path.insert(0, blocker)
    try:
        yield
    finally:
        sys.meta_path.remove(blocker)
        # aitco modules first imported inside the block hold the re-imported copies: drop them;
        # third-party modules stay (a C extension cannot be loaded twice in one process)
        for name in list(sys.modules):
            if name not in saved and (name == "aitco" or name.startswith("aitco.")):
                del sys.modules[name]
        sys.modules.update(saved)


def modules_of(*extras: str) -> list[str]:
    return [m for m, e in EXTRA_OF_MODULE.items() if e in extras]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``aitco ARGV`` with the aitco modules imported now (inside a ``without`` block)."""
    cli = importlib.import_module("aitco.cli.app")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    out, err = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 0), out, err


def assert_one_line(err: str, extra: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    m = ONE_LINE.match(lines[0])
    assert m, lines[0]
    assert m.group(1) == extra, lines[0]
    assert "Traceback" not in err


# --------------------------------------------------------------------------------------------
# the table matches pyproject.toml


def _extra_requirements() -> dict[str, set[str]]:
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    raw: dict[str, list[str]] = cfg["project"]["optional-dependencies"]

    def names(extra: str) -> set[str]:
        out: set[str] = set()
        for req in raw[extra]:
            m = re.match(r"aitco\[([\w,]+)\]", req)
            if m:
                for sub in m.group(1).split(","):
                    out |= names(sub)
            else:
                out.add(re.split(r"[<>=\[;]", req, maxsplit=1)[0].strip().lower())
        return out

    return {e: names(e) for e in raw}


def test_every_module_in_the_table_comes_with_its_extra() -> None:
    reqs = _extra_requirements()
    dists = importlib.metadata.packages_distributions()
    unknown = []
    for module, extra in EXTRA_OF_MODULE.items():
        assert extra in reqs, f"{module}: no extra {extra!r} in pyproject.toml"
        for dist in dists.get(module, []):
            if dist.lower().replace("_", "-") not in {r.replace("_", "-") for r in reqs[extra]}:
                unknown.append((module, dist, extra))
    # a module may come in as a dependency of a listed one (markupsafe with jinja2, starlette
    # with fastapi): it must then be a dependency of a requirement of that extra
    for module, dist, extra in unknown:
        parents = [
            r
            for r in reqs[extra]
            if any(
                re.split(r"[<>=\[; ]", d, maxsplit=1)[0].lower() == dist.lower()
                for d in (_requires(r) or [])
            )
        ]
        assert parents, f"{module} ({dist}) is not a requirement of aitco[{extra}]"
    assert reqs["report"] <= reqs["web"], "aitco[web] renders the report's charts"


def _requires(dist: str) -> list[str] | None:
    try:
        return importlib.metadata.requires(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def test_require_extra_names_the_extra() -> None:
    with without(["xlsxwriter"]):
        with pytest.raises(MissingExtraError) as exc:
            require_extra("xlsxwriter", what="aitco roi-template")
        assert str(exc.value) == (
            "aitco roi-template needs the optional package 'xlsxwriter': "
            "pip install 'aitco[report]'"
        )
        with pytest.raises(MissingExtraError, match=r"aitco\[web\]"):
            require_extra("web", what="aitco web")
    assert require_extra("report") is None
    assert require_extra("xlsxwriter").__name__ == "xlsxwriter"


# --------------------------------------------------------------------------------------------
# each extra missing: the commands that need it say so in one line


#: (extra simulated missing, command, the extra the message must name)
CASES = [
    ("report", "report examples/default.yaml -o {tmp}/r.html", "report"),
    ("report", "report examples/default.yaml -o {tmp}/r.md", "report"),
    ("report", "roi-template -o {tmp}/roi.xlsx", "report"),
    ("report", "web --port 1", "web"),
    ("web", "web --port 1", "web"),
    ("audit", "audit tests/fixtures/openai_usage.jsonl --price-source genai-prices", "audit"),
]


@pytest.mark.parametrize(("extra", "command", "named"), CASES, ids=[c[1] for c in CASES])
def test_command_without_its_extra(
    extra: str,
    command: str,
    named: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    argv = shlex.split(command.format(tmp=tmp_path))
    with without(modules_of(extra)):
        code, _out, err = run_cli(argv, capsys)
    assert code == 2, err
    if extra == "audit":  # an older message with the flag's field; the extra is still named
        assert f"pip install 'aitco[{named}]'" in err
        assert len(err.strip().splitlines()) == 1
    else:
        assert_one_line(err, named)
    assert not list(tmp_path.iterdir()), "nothing is written when the extra is missing"


def test_generic_handler_names_the_extra(capsys: pytest.CaptureFixture[str]) -> None:
    """A missing package reached past the commands' own checks still gives the one line."""
    with without(modules_of("report")):
        cli = importlib.import_module("aitco.cli.app")
        code = cli.handle_errors(lambda: importlib.import_module("matplotlib.pyplot"))
        _out, err = capsys.readouterr()
    assert code == 2
    assert_one_line(err, "report")


@pytest.mark.parametrize("extra", sorted(EXTRA_MODULES))
def test_extra_module_lists_are_in_the_table(extra: str) -> None:
    assert all(m in EXTRA_OF_MODULE for m in EXTRA_MODULES[extra])


# --------------------------------------------------------------------------------------------
# the README tour after `pip install .`: each line runs or names its extra, as the README says


def _tour() -> list[tuple[str, str | None]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## A tour", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    out = []
    for line in block.splitlines():
        if not line.startswith("aitco "):
            continue
        m = re.search(r"#.*needs aitco\[(\w+)\]", line)
        out.append((line, m.group(1) if m else None))
    return out


def test_tour_lines_that_need_an_extra_say_which() -> None:
    tour = _tour()
    assert len(tour) >= 15
    named = {cmd.split()[1]: extra for cmd, extra in tour if extra}
    assert named.get("report") == "report"
    assert named.get("roi-template") == "report"
    assert named.get("web") == "web"


#: A clean interpreter that cannot import the optional packages, then ``aitco ARGV``. In-process
#: blocking is not enough here: pandas imported while pyarrow was importable keeps using it.
CORE_ONLY = """
import importlib.abc, sys
TOPS = set(sys.argv[1].split(","))

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in TOPS:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
from aitco.cli.app import main
main(sys.argv[2:])
"""


def run_core_only(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``aitco ARGV`` in a new interpreter where no extra is installed."""
    env = {k: v for k, v in os.environ.items() if k != "AITCO_CATALOG_DATA"}  # shipped catalog
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    mods = ",".join(modules_of(*EXTRAS))
    return subprocess.run(
        [sys.executable, "-c", CORE_ONLY, mods, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.mark.integration
@pytest.mark.parametrize(("line", "extra"), _tour(), ids=[t[0][:60] for t in _tour()])
def test_tour_line_with_core_install_only(line: str, extra: str | None, tmp_path: Path) -> None:
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    if "--calibration profile.yaml" in line:  # the tour fits it on the line before
        prev = next(c for c, _ in _tour() if " -o profile.yaml" in c)
        assert run_core_only(shlex.split(prev, comments=True)[1:], tmp_path).returncode == 0
    argv = shlex.split(line, comments=True)[1:]
    res = run_core_only(argv, tmp_path)
    if extra is None:
        assert res.returncode == 0, (
            f"{line}: exit {res.returncode} after `pip install .` alone: {res.stderr[-400:]}"
        )
    else:
        assert res.returncode == 2, f"{line}: exit {res.returncode}, the README says aitco[{extra}]"
        assert_one_line(res.stderr, extra)

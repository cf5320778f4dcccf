"""The test tiers (tests/README.md): what the default run selects, and the unit tier's rules."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from types import SimpleNamespace

import pytest
from tests.conftest import DEFAULT_MARKEXPR, REPO, starts_python_or_cli, tier_of


def _item(*markers: str, fixtures: tuple[str, ...] = ()) -> SimpleNamespace:
    """A stand-in for a collected test carrying ``markers`` and using ``fixtures``."""
    return SimpleNamespace(
        get_closest_marker=lambda m: m if m in markers else None, fixturenames=list(fixtures)
    )


def test_the_default_run_is_the_unit_tier():
    opts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = opts["tool"]["pytest"]["ini_options"]["addopts"]
    assert f"-m '{DEFAULT_MARKEXPR}'" in addopts
    assert DEFAULT_MARKEXPR == "not integration and not refit"


@pytest.mark.parametrize(
    ("markers", "tier"),
    [
        ((), "unit"),
        (("integration",), "integration"),
        (("slow",), "integration"),
        (("browser",), "integration"),
        (("refit",), "refit"),
        (("refit", "slow"), "refit"),
        (("genai",), "unit"),
    ],
)
def test_tier_of(markers, tier):
    assert tier_of(_item(*markers)) == tier


def test_a_cross_validation_fixture_puts_a_test_in_the_refit_tier():
    assert tier_of(_item(fixtures=("catalog", "cv_all"))) == "refit"
    assert tier_of(_item("slow", fixtures=("cv_all",))) == "refit"
    assert tier_of(_item(fixtures=("catalog",))) == "unit"


def test_ci_runs_the_readme_command_then_the_other_tiers():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = 'pip install ".[test]" && pytest'
    assert command in readme
    lines = [ln.strip() for ln in ci.splitlines()]
    first = lines.index(command)
    assert any("pytest -m integration" in ln for ln in lines[first:])
    assert any("pytest -m refit" in ln for ln in lines[first:])


@pytest.mark.parametrize(
    ("executable", "args", "starts"),
    [
        (None, [sys.executable, "-m", "ruff"], True),
        (None, ["python3", "-c", "pass"], True),
        (None, "aitco compare --json", True),
        (None, [b"/usr/bin/python3.11"], True),
        ("/usr/bin/python3", ["x"], True),
        (None, ["soffice", "--headless"], False),
        (None, ["git", "status"], False),
    ],
)
def test_what_counts_as_a_cli_subprocess(executable, args, starts):
    assert starts_python_or_cli(executable, args) is starts


def test_a_unit_test_cannot_start_python():
    with pytest.raises(RuntimeError, match="integration tier"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_a_unit_test_may_start_other_programs():
    true = shutil.which("true")
    if true is None:
        pytest.skip("no `true` program on this system")
    assert subprocess.run([true], check=False).returncode == 0

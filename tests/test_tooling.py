"""Strict tooling is part of the test suite: ruff, the import-layer contracts and mypy."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from tests.conftest import REPO

#: Each test runs a tool in a subprocess: the integration tier (tests/README.md).
pytestmark = pytest.mark.integration


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=900, check=False)


def test_ruff_clean():
    res = _run([sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks", "scripts"])
    assert res.returncode == 0, res.stdout + res.stderr


def test_import_layers_kept():
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed")
    res = _run([exe])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr


def test_mypy_clean():
    res = _run([sys.executable, "-m", "mypy", "src/aitco"])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr

"""Every docstring example in src/aitco runs (pytest collects them here, one test per module)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import aitco

MODULES = sorted(m.name for m in pkgutil.walk_packages(aitco.__path__, "aitco."))
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _examples(module: str) -> list[doctest.DocTest]:
    mod = importlib.import_module(module)
    found = doctest.DocTestFinder().find(mod, module)
    return [t for t in found if t.examples and (t.filename or "").endswith(".py")]


@pytest.mark.parametrize("module", MODULES)
def test_doctests_pass(module: str) -> None:
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in _examples(module):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_doctests_are_collected() -> None:
    """The suite really runs the examples (a guard against a finder that finds nothing)."""
    n = sum(len(_examples(m)) for m in MODULES)
    assert n >= 39, f"only {n} docstrings with examples found"

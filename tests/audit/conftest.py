"""Audit tests run on the shipped price table unless a test opts in to genai-prices.

genai-prices is an optional extra: the existing audit tests pin the offline fallback (the
catalog's table) by hiding the package, as on a machine where it is not installed. Tests marked
``genai`` see the package when it is installed.
"""

from __future__ import annotations

import sys

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "genai: the test uses genai-prices when installed")


@pytest.fixture(autouse=True)
def _no_genai_prices(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("genai") is None:
        monkeypatch.setitem(sys.modules, "genai_prices", None)  # import raises ImportError

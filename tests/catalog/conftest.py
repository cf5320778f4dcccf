"""Catalog tests read the live catalog (``src/aitco/catalog/data``), not the test library."""

from __future__ import annotations

import pytest

from aitco.catalog.loader import load_catalog, shipped_data_dir


@pytest.fixture(autouse=True)
def _live_data(live_catalog_data: None) -> None:
    """Every test here, and the CLI it runs, reads the shipped data (no ``AITCO_CATALOG_DATA``)."""


@pytest.fixture(scope="session")
def catalog():
    """The live built-in catalog (no user overlays)."""
    return load_catalog(use_env=False, data_dir=shipped_data_dir())

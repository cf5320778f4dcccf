"""Validation tests read the live catalog: they measure the shipped model and catalog data
against published runs, so a catalog change that moves an error budget must fail them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aitco.catalog.loader import DATA_ENV_VAR, load_catalog, shipped_data_dir


@pytest.fixture(scope="module", autouse=True)
def _live_data() -> Iterator[None]:
    """Every test here, its module-scoped results and the CLI it runs read the shipped data.

    Module-scoped (unlike ``live_catalog_data``) so that it is in place before the modules'
    module-scoped fixtures compute their validation reports.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(DATA_ENV_VAR, raising=False)
        yield


@pytest.fixture(scope="session")
def catalog():
    """The live built-in catalog (no user overlays)."""
    return load_catalog(use_env=False, data_dir=shipped_data_dir())

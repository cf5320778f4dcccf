"""Unit tests read the frozen catalog copy, so a catalog update cannot change their results."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest
from tests.conftest import FROZEN_CATALOG, REPO

from aitco.catalog.loader import (
    DATA_ENV_VAR,
    builtin_data_dir,
    load_catalog,
    shipped_data_dir,
)
from aitco.catalog.schema import KINDS
from aitco.errors import CatalogError


def _freeze_script():
    spec = importlib.util.spec_from_file_location(
        "freeze_test_catalog", REPO / "scripts" / "freeze_test_catalog.py"
    )
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_unit_tests_read_the_frozen_copy(catalog):
    assert os.environ[DATA_ENV_VAR] == str(FROZEN_CATALOG)
    assert builtin_data_dir() == FROZEN_CATALOG
    assert builtin_data_dir() != shipped_data_dir()
    assert all(Path(f).is_relative_to(FROZEN_CATALOG) for f in load_catalog().files)
    assert all(Path(f).is_relative_to(FROZEN_CATALOG) for f in catalog.files)


def test_live_fixture_reads_the_shipped_data(live_catalog_data):
    assert builtin_data_dir() == shipped_data_dir()
    assert all(Path(f).is_relative_to(shipped_data_dir()) for f in load_catalog().files)


def test_a_price_update_in_the_live_data_does_not_reach_unit_tests(tmp_path, monkeypatch):
    """Copy the live data and change every hourly price: the unit-test catalog is unchanged."""
    live = tmp_path / "data"
    shutil.copytree(shipped_data_dir(), live)
    clouds = sorted((live / "clouds").glob("*.yaml"))
    assert clouds, "the catalog has no cloud price files"
    for f in clouds:
        text = f.read_text(encoding="utf-8")
        f.write_text(text.replace("usd_per_hour: ", "usd_per_hour: 1"), encoding="utf-8")
    updated = load_catalog(use_env=False, data_dir=live)
    frozen = load_catalog(use_env=False)
    changed = [
        oid
        for oid, offer in updated.offers.items()
        if oid in frozen.offers  # offers added to the live data since the copy was taken
        and offer.model_dump(exclude={"provenance"})
        != frozen.offers[oid].model_dump(exclude={"provenance"})
    ]
    assert changed, "the mutation changed no price: the test would prove nothing"
    # what unit tests see is the frozen copy, whatever the live data says
    monkeypatch.setattr("aitco.catalog.loader.shipped_data_dir", lambda: live)
    assert load_catalog(use_env=False).offers == frozen.offers
    # and the patch does reach a reader of the live data, so the assertion above could fail
    monkeypatch.delenv(DATA_ENV_VAR)
    assert load_catalog(use_env=False).offers != frozen.offers


def test_frozen_copy_is_a_whole_catalog():
    """Every kind the live catalog fills is filled in the frozen copy too."""
    frozen = load_catalog(use_env=False)
    live = load_catalog(use_env=False, data_dir=shipped_data_dir())
    empty = [kind for kind in KINDS if live.kind(kind) and not frozen.kind(kind)]
    assert not empty, f"kinds empty in the frozen copy: {empty}"


def test_bad_data_folder_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV_VAR, str(tmp_path))
    with pytest.raises(CatalogError, match=DATA_ENV_VAR):
        load_catalog()


def test_freeze_script_copies_and_checks(tmp_path):
    mod = _freeze_script()
    dst = tmp_path / "frozen"
    n = mod.freeze(shipped_data_dir(), dst)
    assert n == len(list(shipped_data_dir().rglob("*.yaml")))
    assert mod.differences(shipped_data_dir(), dst) == []
    (dst / "sources.yaml").write_text("sources: {}\n", encoding="utf-8")
    assert mod.differences(shipped_data_dir(), dst) == ["sources.yaml"]

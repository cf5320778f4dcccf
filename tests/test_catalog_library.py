"""Tests read the hand-picked test catalog library, so a catalog update cannot change their results.

The library (``tests/fixtures/catalog``) holds the entries the tests need, picked from the
shipped catalog and edited only on purpose: every entry is listed in its ``README.md`` with the
reason it is there.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from tests.conftest import TEST_CATALOG

from aitco.catalog.loader import (
    DATA_ENV_VAR,
    builtin_data_dir,
    load_catalog,
    shipped_data_dir,
)
from aitco.catalog.schema import KINDS
from aitco.errors import CatalogError

#: ``| `id` | reason |`` rows of the library's README, under ``### <kind> (<n>)`` headings.
ROW = re.compile(r"^\| `([^`]+)` \| (.+) \|$")
HEADING = re.compile(r"^### (\w+) \((\d+)\)$")


def _listed() -> dict[str, dict[str, str]]:
    """``{kind: {id: reason}}`` as the library's README lists them."""
    out: dict[str, dict[str, str]] = {}
    kind = None
    for line in (TEST_CATALOG / "README.md").read_text(encoding="utf-8").splitlines():
        if m := HEADING.match(line):
            kind = m.group(1)
            out[kind] = {}
        elif (m := ROW.match(line)) and kind is not None:
            out[kind][m.group(1)] = m.group(2).strip()
    return out


def test_tests_read_the_library(catalog):
    assert os.environ[DATA_ENV_VAR] == str(TEST_CATALOG)
    assert builtin_data_dir() == TEST_CATALOG
    assert builtin_data_dir() != shipped_data_dir()
    assert all(Path(f).is_relative_to(TEST_CATALOG) for f in load_catalog().files)
    assert all(Path(f).is_relative_to(TEST_CATALOG) for f in catalog.files)


def test_live_fixture_reads_the_shipped_data(live_catalog_data):
    assert builtin_data_dir() == shipped_data_dir()
    assert all(Path(f).is_relative_to(shipped_data_dir()) for f in load_catalog().files)


def test_a_price_update_in_the_live_data_does_not_reach_the_tests(tmp_path, monkeypatch):
    """Copy the live data and change every hourly price: the test library is unchanged."""
    live = tmp_path / "data"
    shutil.copytree(shipped_data_dir(), live)
    clouds = sorted((live / "clouds").glob("*.yaml"))
    assert clouds, "the catalog has no cloud price files"
    for f in clouds:
        text = f.read_text(encoding="utf-8")
        f.write_text(text.replace("usd_per_hour: ", "usd_per_hour: 1"), encoding="utf-8")
    updated = load_catalog(use_env=False, data_dir=live)
    library = load_catalog(use_env=False)
    changed = [
        oid
        for oid, offer in library.offers.items()
        if offer.model_dump(exclude={"provenance"})
        != updated.offers[oid].model_dump(exclude={"provenance"})
    ]
    assert changed, "the mutation changed no price of the library's offers: it would prove nothing"
    # what the tests see is the library, whatever the live data says
    monkeypatch.setattr("aitco.catalog.loader.shipped_data_dir", lambda: live)
    assert load_catalog(use_env=False).offers == library.offers
    # and the patch does reach a reader of the live data, so the assertion above could fail
    monkeypatch.delenv(DATA_ENV_VAR)
    assert load_catalog(use_env=False).offers != library.offers


def test_the_library_fills_every_kind_and_is_small():
    """Every kind the shipped catalog fills is filled here, with a fraction of its entries."""
    library = load_catalog(use_env=False)
    live = load_catalog(use_env=False, data_dir=shipped_data_dir())
    empty = [kind for kind in KINDS if live.kind(kind) and not library.kind(kind)]
    assert not empty, f"kinds empty in the test library: {empty}"
    for kind in ("accelerators", "systems", "offers", "models", "apis"):
        assert len(library.kind(kind)) < 0.7 * len(live.kind(kind)), kind


def test_every_entry_is_listed_with_its_reason():
    """Adding or removing an entry means saying why, in the library's README."""
    library = load_catalog(use_env=False)
    listed = _listed()
    assert set(listed) == set(KINDS)
    for kind in KINDS:
        have = set(library.kind(kind))
        assert set(listed[kind]) == have, (
            f"{kind}: README lists {sorted(set(listed[kind]) - have)} that the library lacks, "
            f"and not {sorted(have - set(listed[kind]))}"
        )
        assert all(listed[kind].values()), f"{kind}: an entry without a reason"


def test_the_library_cites_only_sources_it_has():
    """A library entry keeps its sources; the bibliography holds no source nothing cites."""
    library = load_catalog(use_env=False)
    cited = {
        p.source.key
        for kind in KINDS
        for e in library.kind(kind).values()
        for p in getattr(e, "provenance", {}).values()
    }
    assert cited
    assert cited == set(library.sources)


def test_bad_data_folder_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV_VAR, str(tmp_path))
    with pytest.raises(CatalogError, match=DATA_ENV_VAR):
        load_catalog()

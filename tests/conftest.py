"""Shared test fixtures."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
#: Fixtures the tests need, copied with their provenance (tests/fixtures/README.md).
FIXTURES = REPO / "tests" / "fixtures"
#: The frozen copy of the built-in catalog data that unit tests read (``AITCO_CATALOG_DATA``), so a
#: catalog update cannot change their results; refresh it with ``scripts/freeze_test_catalog.py``.
#: ``tests/catalog/`` and ``tests/test_docs_run.py`` read the live data (``live_catalog_data``).
FROZEN_CATALOG = FIXTURES / "catalog"
#: Set at import, before any test module loads a catalog, and inherited by CLI subprocesses.
os.environ["AITCO_CATALOG_DATA"] = str(FROZEN_CATALOG)
#: An empty cache directory for the whole run (``aitco catalog update`` caches; genai-prices data
#: a developer fetched must not change audit results): tests that fetch set their own.
os.environ["AITCO_CACHE_DIR"] = tempfile.mkdtemp(prefix="aitco-test-cache-")
#: Reason prefix of a skip for a missing file; under ``CI=true`` such a skip fails the test.
MISSING_FILE = "missing file:"


def skip_if_missing(path: Path) -> Path:
    """Return ``path``, or skip the test (failed under ``CI=true``) when it does not exist."""
    if not path.exists():
        pytest.skip(f"{MISSING_FILE} {path}")
    return path


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """``tests/fixtures``: real logs, reference data and ground truth, with provenance."""
    return skip_if_missing(FIXTURES)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ``../shared`` folder beside the repository; prefer ``fixtures_dir`` (in the clone)."""
    return skip_if_missing(SHARED)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing_file_skip_fails(report: pytest.TestReport, ci: bool) -> bool:
    """True when ``report`` is a skip for a missing file and CI must fail it."""
    if not (ci and report.skipped) or not isinstance(report.longrepr, tuple):
        return False
    reason = str(report.longrepr[2])
    return MISSING_FILE in reason or "../shared" in reason


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """Under ``CI=true`` a test that skips for a missing file fails instead (issue 17 item 6)."""
    report = yield
    if missing_file_skip_fails(report, _in_ci()):
        reason = report.longrepr[2]
        report.outcome = "failed"
        report.longrepr = f"skipped for a missing file under CI=true: {reason}"
    return report


@pytest.fixture(scope="session")
def catalog():
    """The frozen test catalog (``tests/fixtures/catalog``, no user overlays)."""
    from aitco.catalog.loader import load_catalog

    return load_catalog(use_env=False, data_dir=FROZEN_CATALOG)


@pytest.fixture
def live_catalog_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the code under test read the shipped catalog data instead of the frozen copy."""
    monkeypatch.delenv("AITCO_CATALOG_DATA", raising=False)

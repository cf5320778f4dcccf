"""Shared test fixtures, and the test tiers (tests/README.md)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
#: The project's shared data folder beside the clone. Tests read the copies in ``tests/fixtures``;
#: only the checks that a copy in ``tests/`` still matches its original read ``../shared``.
SHARED = REPO.parent / "shared"
#: Fixtures the tests need, copied with their provenance (tests/fixtures/README.md).
FIXTURES = REPO / "tests" / "fixtures"
#: The hand-picked test catalog library the tests read (``AITCO_CATALOG_DATA``), so a catalog
#: update cannot change their results; it changes only on purpose (its ``README.md``).
#: ``tests/catalog/``, ``tests/validation/`` and ``tests/test_docs_run.py`` read the shipped data
#: (``live_catalog_data``).
TEST_CATALOG = FIXTURES / "catalog"
#: Set at import, before any test module loads a catalog, and inherited by CLI subprocesses.
os.environ["AITCO_CATALOG_DATA"] = str(TEST_CATALOG)
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


#: Skip reason of a test that compares a copy in ``tests/`` with its original in ``../shared``.
NO_SHARED = (
    f"{MISSING_FILE} ../shared is not beside the repository (only the checks that the copies in "
    "tests/ match their originals need it)"
)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared``, for the checks that copies in ``tests/`` match their originals only.

    Every other test reads the copies in ``tests/fixtures`` (``fixtures_dir``). Without the
    folder the test skips with a reason that names no absolute path (fails under ``CI=true``).
    """
    if not SHARED.is_dir():
        pytest.skip(NO_SHARED)
    return SHARED


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
    """The test catalog library (``tests/fixtures/catalog``, no user overlays)."""
    from aitco.catalog.loader import load_catalog

    return load_catalog(use_env=False, data_dir=TEST_CATALOG)


@pytest.fixture
def live_catalog_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the code under test read the shipped catalog data instead of the test library."""
    monkeypatch.delenv("AITCO_CATALOG_DATA", raising=False)


# --------------------------------------------------------------------------------------------
# Test tiers (tests/README.md). ``pytest`` runs the unit tier: pyproject.toml's addopts deselect
# the heavier tiers with ``-m "not integration and not refit"``; ``pytest -m integration`` and
# ``pytest -m refit`` run them; ``pytest -m ""`` runs every tier. .ci/run runs all three.

#: The marker expression of pyproject.toml's addopts: the default run is the unit tier.
DEFAULT_MARKEXPR = "not integration and not refit"
#: Markers that put a test in the integration tier unless it is marked ``refit``.
INTEGRATION_ALIASES = ("slow", "browser")
#: Fixtures that refit a model (cross-validation): a test that uses one is in the refit tier,
#: whatever its markers say.
REFIT_FIXTURES = ("cv_all",)
#: A unit-tier test whose call takes longer is listed at the end of the run (speed it up or
#: give it a tier); 2 s is ~1 % of the unit tier's 5-minute budget on a quiet 2-core machine.
UNIT_BUDGET_S = 2.0
#: Tier of each collected test, by node id.
_TIERS: dict[str, str] = {}


def tier_of(item: pytest.Item) -> str:
    """``unit``, ``integration`` or ``refit``: the tier a collected test runs in."""
    if item.get_closest_marker("refit") is not None:
        return "refit"
    if set(getattr(item, "fixturenames", ())) & set(REFIT_FIXTURES):
        return "refit"
    if any(item.get_closest_marker(m) is not None for m in ("integration", *INTEGRATION_ALIASES)):
        return "integration"
    return "unit"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` and ``browser`` tests ``integration`` (before ``-m`` deselects).

    A test carries one tier marker: ``integration`` and ``refit`` together are a usage error.
    """
    both = [
        i.nodeid
        for i in items
        if i.get_closest_marker("integration") and i.get_closest_marker("refit")
    ]
    if both:
        msg = f"a test is in one tier, marked integration or refit, not both: {both[:5]}"
        raise pytest.UsageError(msg)
    for item in items:
        tier = _TIERS[item.nodeid] = tier_of(item)
        if item.get_closest_marker(tier) is None and tier != "unit":
            item.add_marker(tier)


def starts_python_or_cli(executable: Any, args: Any) -> bool:
    """True when ``subprocess.Popen(args, executable=executable)`` starts Python or ``aitco``."""
    if isinstance(args, str | bytes | os.PathLike):
        args = [args]
    first = executable if executable is not None else next(iter(args), "")
    first = os.fsdecode(first)
    return first == sys.executable or Path(first.split(" ")[0]).name.startswith(("python", "aitco"))


#: True while the call phase of a unit-tier test runs.
_IN_UNIT_TEST = False


def _no_cli_subprocess_in_unit_tests(event: str, args: tuple[Any, ...]) -> None:
    if event == "subprocess.Popen" and _IN_UNIT_TEST and starts_python_or_cli(*args[:2]):
        msg = (
            f"a unit-tier test started {args[1]!r}: a test that runs Python or the aitco CLI in "
            "a subprocess belongs to the integration tier (@pytest.mark.integration, "
            "tests/README.md)"
        )
        raise RuntimeError(msg)


sys.addaudithook(_no_cli_subprocess_in_unit_tests)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """While a unit-tier test runs, starting Python or ``aitco`` in a subprocess is an error."""
    global _IN_UNIT_TEST
    _IN_UNIT_TEST = _TIERS.get(item.nodeid, tier_of(item)) == "unit"
    try:
        return (yield)
    finally:
        _IN_UNIT_TEST = False


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Name the deselected tiers, and the unit-tier tests slower than :data:`UNIT_BUDGET_S`."""
    reports = [r for k in ("passed", "failed") for r in terminalreporter.stats.get(k, [])]
    slow = [
        r
        for r in reports
        if r.when == "call" and r.duration > UNIT_BUDGET_S and _TIERS.get(r.nodeid) == "unit"
    ]
    if slow:
        terminalreporter.write_sep("-", f"unit-tier tests slower than {UNIT_BUDGET_S:g} s")
        for r in sorted(slow, key=lambda r: -r.duration)[:10]:
            terminalreporter.write_line(f"{r.duration:6.2f}s {r.nodeid}")
        terminalreporter.write_line("speed them up, or give them a tier (tests/README.md)")
    if config.getoption("markexpr") == DEFAULT_MARKEXPR and terminalreporter.stats.get(
        "deselected"
    ):
        terminalreporter.write_line(
            "the integration and refit tiers were deselected: `pytest -m integration`, "
            '`pytest -m refit`, or `pytest -m ""` for every tier (tests/README.md)'
        )

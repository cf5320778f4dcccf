"""The fixtures the tests read live in tests/fixtures, each listed with its source."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from tests.conftest import FIXTURES, NO_SHARED, missing_file_skip_fails
from tests.conftest import SHARED as SHARED_ABS

from aitco.validation import inference as vinf
from aitco.validation import training as vtrain


def _files() -> list[str]:
    return sorted(
        p.relative_to(FIXTURES).as_posix()
        for p in FIXTURES.rglob("*")
        if p.is_file()
        and p.name != "README.md"
        and not p.relative_to(FIXTURES).is_relative_to(
            "catalog"
        )  # the test catalog library: its own README, every value keeps its source
    )


def test_every_fixture_is_listed_with_a_source():
    table = (FIXTURES / "README.md").read_text(encoding="utf-8").split("\n---\n", 1)[0]
    listed = set(re.findall(r"^\| `([^`]+)` \|", table, flags=re.M))
    files = set(_files())
    assert files, "tests/fixtures is empty"
    assert not files - listed, f"fixtures without a provenance row: {sorted(files - listed)}"
    assert not listed - files, f"provenance rows without a file: {sorted(listed - files)}"


def test_ground_truth_copies_match_the_bundled_validation_data():
    assert (FIXTURES / "groundtruth" / "training.csv").read_bytes() == vtrain.DATA_CSV.read_bytes()
    assert (FIXTURES / "groundtruth" / "inference.csv").read_bytes() == (
        vinf.default_csv().read_bytes()
    )


def test_copies_match_shared(shared_dir):
    """Beside a ../shared checkout, each copy is byte-identical to its original."""
    pairs = [(f, shared_dir / ("fixtures/" + f if "/" not in f else f)) for f in _files()]
    differ = [
        f for f, src in pairs if src.is_file() and src.read_bytes() != (FIXTURES / f).read_bytes()
    ]
    assert not differ, f"tests/fixtures copies differ from ../shared: {differ}"


def _report(outcome: str, reason: str) -> SimpleNamespace:
    return SimpleNamespace(skipped=outcome == "skipped", longrepr=("f.py", 1, f"Skipped: {reason}"))


@pytest.mark.parametrize(
    ("outcome", "reason", "ci", "fails"),
    [
        ("skipped", "missing file: /x/y.txt", True, True),
        ("skipped", "../shared is not present beside the repository", True, True),
        ("skipped", NO_SHARED, True, True),
        ("skipped", NO_SHARED, False, False),
        ("skipped", "missing file: /x/y.txt", False, False),
        ("skipped", "chromium is not installed", True, False),
        ("passed", "", True, False),
    ],
)
def test_ci_fails_a_skip_for_a_missing_file(outcome, reason, ci, fails):
    assert missing_file_skip_fails(_report(outcome, reason), ci) is fails


def test_the_shared_skip_names_no_absolute_path():
    assert "../shared" in NO_SHARED
    assert str(SHARED_ABS) not in NO_SHARED

#!/usr/bin/env python3
"""Copy the built-in catalog data into ``tests/fixtures/catalog``: the frozen copy unit tests read.

Unit tests read this copy (``tests/conftest.py`` sets ``AITCO_CATALOG_DATA`` to it), so a price or
spec update in ``src/aitco/catalog/data`` cannot change their results; the live catalog is tested
by ``tests/catalog/`` and by ``tests/test_docs_run.py`` (the docs show live output) only.

Refresh the copy on purpose, when a unit test should see new catalog data, and review the diff of
the tests that change with it::

    python scripts/freeze_test_catalog.py           # rewrite tests/fixtures/catalog
    python scripts/freeze_test_catalog.py --check   # exit 1 when the copy differs from live data
"""

from __future__ import annotations

import argparse
import datetime as dt
import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIVE = REPO / "src" / "aitco" / "catalog" / "data"
FROZEN = REPO / "tests" / "fixtures" / "catalog"
NOTE = "README.md"


def _yaml_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.yaml"))


def differences(live: Path = LIVE, frozen: Path = FROZEN) -> list[str]:
    """Relative paths that differ, or exist on one side only, between the two data folders."""
    a, b = set(_yaml_files(live)), set(_yaml_files(frozen)) if frozen.is_dir() else set()
    out = sorted(a ^ b)
    out += [f for f in sorted(a & b) if not filecmp.cmp(live / f, frozen / f, shallow=False)]
    return sorted(out)


def _commit() -> str:
    try:
        res = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return res.stdout.strip()


def freeze(live: Path = LIVE, frozen: Path = FROZEN) -> int:
    """Replace ``frozen`` by a copy of the YAML files of ``live``; return the number copied."""
    if frozen.exists():
        shutil.rmtree(frozen)
    files = _yaml_files(live)
    for rel in files:
        dst = frozen / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(live / rel, dst)
    today = dt.datetime.now(dt.UTC).date().isoformat()
    (frozen / NOTE).write_text(
        "# Frozen test catalog\n\n"
        f"A copy of `src/aitco/catalog/data` ({len(files)} YAML files), taken {today} at commit "
        f"`{_commit()}` by `scripts/freeze_test_catalog.py`.\n"
        "Every value keeps the source and date it has in the live catalog (`sources.yaml`).\n\n"
        "Unit tests read this copy (`AITCO_CATALOG_DATA`, set in `tests/conftest.py`), so a\n"
        "catalog update cannot break them. Do not edit by hand: refresh it with the script,\n"
        "on purpose.\n",
        encoding="utf-8",
    )
    return len(files)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report differences, change nothing")
    args = ap.parse_args(argv)
    if args.check:
        diff = differences()
        for f in diff:
            print(f"differs: {f}")
        print(f"{len(diff)} file(s) differ between {LIVE} and {FROZEN}")
        return 1 if diff else 0
    n = freeze()
    print(f"copied {n} files to {FROZEN.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Source hygiene: no references to the project's private tracker in the shipped code and data."""

from __future__ import annotations

import re

from tests.conftest import REPO

SRC = REPO / "src" / "aitco"
#: "issue 5", "issue #3", "issues 2 and 5": numbers of a tracker a reader of the code cannot open.
TRACKER = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
#: Files exempt from the check (none).
PENDING: set[str] = set()


def test_no_private_tracker_references_in_src():
    hits = []
    for p in sorted(SRC.rglob("*")):
        if p.suffix not in {".py", ".yaml", ".md", ".html", ".j2"}:
            continue
        rel = p.relative_to(SRC).as_posix()
        if rel in PENDING:
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if TRACKER.search(line):
                hits.append(f"{rel}:{i}: {line.strip()[:90]}")
    assert not hits, "cite a public source or say it plainly:\n" + "\n".join(hits)


def test_tracker_pattern_matches_what_it_should():
    assert TRACKER.search("the keys of issue 3 (step_time_s)")
    assert TRACKER.search("(issue #4 CLI defaults)")
    assert not TRACKER.search("a known issue with NCCL 2.18")

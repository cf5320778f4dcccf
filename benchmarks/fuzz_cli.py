"""Longer CLI fuzz run (issues 18, 37): every door x hostile value, or a random sample.

The doors are the command-line options and arguments (``tests/fuzz/harness.py``) and, since
issue 37, the values inside the files a command reads and its output paths
(``tests/fuzz/doors.py``: scenario, overlay and ``config.json`` fields, trace and log rows,
outputs equal to inputs).

Usage::

    PYTHONPATH=src python benchmarks/fuzz_cli.py            # every case of every door
    PYTHONPATH=src python benchmarks/fuzz_cli.py 2000       # 2000 random cases (seeded)
    PYTHONPATH=src python benchmarks/fuzz_cli.py 500 --seed 7 --command train
    PYTHONPATH=src python benchmarks/fuzz_cli.py --doors files   # only the file doors

Prints one line per problem found and a summary (cases tried, exit statuses, problems, slowest
case); exits 1 when a case misbehaved or ran past ``--max-seconds``. The rules are those of
``tests/fuzz/harness.py`` and ``tests/fuzz/doors.py``.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))

import doors
import harness


def main(argv: list[str] | None = None) -> int:
    """Run the fuzz cases and print the summary; return 1 when a case misbehaved."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("count", nargs="?", type=int, default=None, help="random cases (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--command", action="append", help="only these commands (repeatable)")
    ap.add_argument("--fast", action="store_true", help="skip the slow commands")
    ap.add_argument("--doors", choices=("all", "flags", "files"), default="all")
    ap.add_argument("--max-seconds", type=float, default=60.0, help="a slower case is a problem")
    ap.add_argument("--verbose", action="store_true", help="print every case and its time")
    a = ap.parse_args(argv)
    cases: list[tuple[object, str]] = []
    if a.doors in ("all", "flags"):
        slots = [
            s
            for s in harness.slots(include_slow=not a.fast)
            if not a.command or s.command in a.command
        ]
        cases += [(s, v) for s in slots for v in s.values]
    if a.doors in ("all", "files"):
        cases += [(d, v) for d, v in doors.cases() if not a.command or d.name in a.command]
    if a.count is not None:
        rng = random.Random(a.seed)
        cases = [rng.choice(cases) for _ in range(a.count)]
    codes: collections.Counter[int] = collections.Counter()
    problems = 0
    slowest = (0.0, "")
    t0 = time.perf_counter()
    for case, value in cases:
        t = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="aitco-fuzz-") as tmp:
            if isinstance(case, doors.Door):
                o = doors.run_case(case, value, Path(tmp))
            else:
                o = harness.check(harness.build_args(case, value, Path(tmp)))  # type: ignore[arg-type]
        dt = time.perf_counter() - t
        slowest = max(slowest, (dt, " ".join(o.args)))
        if a.verbose:
            print(f"{dt:6.2f}s {o.exit_code} {o.args}", flush=True)
        codes[o.exit_code] += 1
        problem = o.problem or (
            f"ran {dt:.0f} s (> {a.max_seconds:g} s)" if dt > a.max_seconds else None
        )
        if problem:
            problems += 1
            print(f"PROBLEM {problem}: aitco {' '.join(map(repr, o.args))}", flush=True)
    dt = time.perf_counter() - t0
    print(
        f"{len(cases)} hostile cases in {dt:.0f} s: exit statuses "
        f"{dict(sorted(codes.items()))}, {problems} problems; slowest {slowest[0]:.1f} s "
        f"(aitco {slowest[1][:120]})"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

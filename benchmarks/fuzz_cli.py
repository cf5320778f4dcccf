"""Longer CLI fuzz run (issue 18): every command x option x hostile value, or a random sample.

Usage::

    PYTHONPATH=src python benchmarks/fuzz_cli.py            # every slot x every hostile value
    PYTHONPATH=src python benchmarks/fuzz_cli.py 2000       # 2000 random cases (seeded)
    PYTHONPATH=src python benchmarks/fuzz_cli.py 500 --seed 7 --command train

Prints one line per problem found and a summary (cases tried, exit statuses, problems); exits 1
when a case misbehaved. The rules are those of ``tests/fuzz/harness.py``.
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

import harness


def main(argv: list[str] | None = None) -> int:
    """Run the fuzz cases and print the summary; return 1 when a case misbehaved."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("count", nargs="?", type=int, default=None, help="random cases (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--command", action="append", help="only these commands (repeatable)")
    ap.add_argument("--fast", action="store_true", help="skip the slow commands")
    ap.add_argument("--verbose", action="store_true", help="print every case and its time")
    a = ap.parse_args(argv)
    slots = [
        s for s in harness.slots(include_slow=not a.fast) if not a.command or s.command in a.command
    ]
    cases = [(s, v) for s in slots for v in s.values]
    if a.count is not None:
        rng = random.Random(a.seed)
        cases = [rng.choice(cases) for _ in range(a.count)]
    codes: collections.Counter[int] = collections.Counter()
    problems = 0
    t0 = time.perf_counter()
    for slot, value in cases:
        t = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="aitco-fuzz-") as tmp:
            o = harness.check(harness.build_args(slot, value, Path(tmp)))
        if a.verbose:
            print(f"{time.perf_counter() - t:6.2f}s {o.exit_code} {o.args}", flush=True)
        codes[o.exit_code] += 1
        if o.problem:
            problems += 1
            print(f"PROBLEM {o.problem}: aitco {' '.join(map(repr, o.args))}", flush=True)
    dt = time.perf_counter() - t0
    print(
        f"{len(cases)} hostile cases over {len({s.command for s in slots})} commands and "
        f"{len(slots)} options/arguments in {dt:.0f} s: exit statuses "
        f"{dict(sorted(codes.items()))}, {problems} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

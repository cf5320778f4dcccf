"""Speed and memory of ``aitco reconcile`` on a large FOCUS bill (the 5-million-row target).

Usage::

    python benchmarks/bench_reconcile.py                         # 500,000 rows, both engines
    python benchmarks/bench_reconcile.py --rows 5000000          # the 5-million-row target
    python benchmarks/bench_reconcile.py --rows 5000000 --engine duckdb

Writes a FOCUS 1.0 CSV into a temporary folder: the test set's run (the rows of
``tests/fixtures/reconcile/focus_bill.csv``) inside an account of ``--resources`` other resources
(GPU and CPU instances, storage, transfer) billed hour by hour, with their own tags, until the
file has ``--rows`` rows. Then each engine reconciles the run (``--tag run=llama1b-r7``) in a
fresh Python process, which reports its wall time and peak RSS (``ru_maxrss``): the bill's rows
are summed into line groups and never kept, so memory follows the distinct charges, not the
rows. Run two sizes to see it: the peak barely moves from 0.5 to 5 million rows.

The result must be the same as on the small bill (the other resources are out of scope), which
the script checks.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "reconcile"
#: Instance types of the other resources: (description, $/h, GPU instance).
OTHER = (
    ("$55.04 per On Demand Linux p5.48xlarge Instance Hour", 55.04),
    ("$5.672 per On Demand Linux g5.12xlarge Instance Hour", 5.672),
    ("$1.624 per On Demand Linux g5.4xlarge Instance Hour", 1.624),
    ("$0.192 per On Demand Linux m5.xlarge Instance Hour", 0.192),
    ("$0.023 per GB - first 50 TB / month of storage used", 0.023),
    ("$0.09 per GB - first 10 TB / month data transfer out", 0.09),
)

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from aitco.catalog.loader import load_catalog
from aitco.decide.reconcile import reconcile, parse_logs
from aitco.decide.scenario import Scenario
d, bill, engine = sys.argv[1], sys.argv[2], sys.argv[3]
logs = parse_logs([d + "/megatron_run.log.gz", d + "/dcgm_dmon.txt.gz"], interval_s=20)
t1 = time.perf_counter()
rec = reconcile(Scenario.from_yaml(d + "/scenario.yaml"), load_catalog(), bill, logs=logs,
                tags={"run": "llama1b-r7"}, engine=engine)
t2 = time.perf_counter()
u = resource.getrusage(resource.RUSAGE_SELF)
r = u.ru_maxrss
print(json.dumps({"engine": rec.bill["engine"], "rows": rec.bill["rows"],
                  "cpu_s": u.ru_utime + u.ru_stime,
                  "billed_usd": rec.billed_usd, "unexplained_usd": rec.unexplained_usd,
                  "out_of_scope_usd": rec.out_of_scope_usd, "reconcile_s": t2 - t1,
                  "total_s": t2 - t0, "peak_rss_mb": r / 1024}))
"""


def write_bill(path: Path, rows: int, resources: int, seed: int = 0) -> int:
    """The fixture's rows, then hourly rows of other resources until ``rows`` rows."""
    rnd = random.Random(seed)
    src = (FIXTURE / "focus_bill.csv").read_text(encoding="utf-8").splitlines()
    header = next(csv.reader([src[0]]))
    n = 0
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write("\n".join(src) + "\n")
        n += len(src) - 1
        res = [
            (f"r-{i:06d}", OTHER[i % len(OTHER)], f'{{"project": "p{i % 37}", "run": "x{i}"}}')
            for i in range(resources)
        ]
        hour = 0
        buf = io.StringIO()
        bw = csv.writer(buf, lineterminator="\n")
        while n < rows:
            start = f"2026-11-{1 + hour // 24 % 30:02d} {hour % 24:02d}:00:00"
            end = f"2026-11-{1 + (hour + 1) // 24 % 30:02d} {(hour + 1) % 24:02d}:00:00"
            for rid, (desc, price), tags in res:
                if n >= rows:
                    break
                qty = 1.0 if "Instance Hour" in desc else rnd.uniform(0.1, 50.0)
                unit = "Hours" if "Instance Hour" in desc else "GB"
                rec = {c: "NULL" for c in header}
                rec.update(
                    BilledCost=f"{qty * price:.10f}",
                    EffectiveCost=f"{qty * price:.10f}",
                    ListCost=f"{qty * price:.10f}",
                    BillingAccountId="493010271563",
                    SubAccountId="602211930887",
                    BillingCurrency="USD",
                    ChargeCategory="Usage",
                    ChargeDescription=desc,
                    ChargePeriodStart=start,
                    ChargePeriodEnd=end,
                    ConsumedQuantity=f"{qty:.6f}",
                    ConsumedUnit=unit,
                    PricingQuantity=f"{qty:.6f}",
                    PricingUnit=unit,
                    ProviderName="AWS",
                    ResourceId=rid,
                    ServiceName="Amazon Elastic Compute Cloud",
                    Tags=tags,
                    Id=str(n),
                )
                bw.writerow([rec[c] for c in header])
                n += 1
            fh.write(buf.getvalue())
            buf.seek(0)
            buf.truncate()
            hour += 1
    return n


def run(engine: str, bill: Path) -> dict:
    """Reconcile in a fresh process; its JSON line (time, peak RSS, totals)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(FIXTURE), str(bill), engine],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=500_000, help="rows of the bill")
    ap.add_argument("--resources", type=int, default=2_000, help="other resources billed hourly")
    ap.add_argument("--engine", choices=("csv", "duckdb", "both"), default="both")
    ap.add_argument("--keep", type=Path, default=None, help="write the bill here and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bill = (args.keep or Path(tmp)) / "focus_big.csv"
        t = time.perf_counter()
        n = write_bill(bill, args.rows, args.resources)
        size = bill.stat().st_size / 2**20
        print(f"bill: {n:,} rows, {size:,.0f} MiB, written in {time.perf_counter() - t:.0f} s")
        small = run("csv", FIXTURE / "focus_bill.csv")
        engines = ("csv", "duckdb") if args.engine == "both" else (args.engine,)
        for e in engines:
            r = run(e, bill)
            same = (
                abs(r["billed_usd"] - small["billed_usd"]) < 1e-6
                and abs(r["unexplained_usd"] - small["unexplained_usd"]) < 1e-6
            )
            print(
                f"{r['engine']:>6}: {r['rows']:,} rows reconciled in {r['reconcile_s']:.1f} s wall "
                f"({r['rows'] / r['reconcile_s']:,.0f} rows/s; process CPU {r['cpu_s']:.0f} s), "
                f"peak RSS {r['peak_rss_mb']:.0f} MB"
                f"; out of scope {r['out_of_scope_usd']:,.0f} USD; same result as the small "
                f"bill: {same}"
            )
            if not same:
                raise SystemExit(f"{e}: the result differs from the small bill's: {r} vs {small}")
        print(f"small bill (66 rows): peak RSS {small['peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write the reconcile test set of a service month whose causes of cost are known by construction.

The files are in the real formats of the samples in ``tests/fixtures``: a FOCUS 1.0 export with
the 44 columns of ``focus_billing_sample.csv``; the served load as OpenAI organisation Usage API
pages (``/v1/organization/usage/completions?bucket_width=1h&group_by=model``: one page a day of
24 one-hour buckets of ``organization.usage.completions.result``, the layout of line 3 of
``openai_usage.jsonl``), the export an OpenAI-compatible gateway in front of the service gives;
and a ``vllm bench serve --save-result`` JSON at saturation (``--request-rate inf``), the keys of
``vllm_benchmark_serving.json``.

The plan (``tests/fixtures/reconcile_service/scenario.yaml``): Llama 3.1 8B chat, 20 requests/s
of 1,024 input and 300 output tokens, on two AWS p5.4xlarge (1 x H100 each) on demand, for a
month. What happened in November 2026 (720 hours):

* **higher load**: requests arrived at 1.25 x the planned rate on average, with a daily cycle
  (busy afternoons, quiet nights) and quieter weekends; requests had the planned shape;
* **slower serving**: one replica serves 0.85 x the requests/s ``aitco compare`` predicts
  (the benchmark at saturation says so);
* **lower utilisation**: the team's autoscaler keeps at least two replicas and aims at 55 %
  busy replicas, below the plan's utilisation, so replicas idle at night and between steps;
* **a discounted price**: private pricing bills $5.848 an instance-hour, 15 % below the $6.88
  list price the catalog holds;
* **a shorter period**: November's 720 hours against the average month's 730.5 the plan prices.

The bill also carries the account's Business support fee (10 % of the month's usage).
``truth.json`` holds the construction: the true arrival rate and the replicas billed hour by
hour, the measured capacity and the prices; the test computes each cause's dollar effect from
it with the definitions of ``docs/reconcile.md``.

Usage::

    python scripts/make_reconcile_service_fixtures.py            # rewrite the test set
    python scripts/make_reconcile_service_fixtures.py --check    # exit 1 when files would change
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import gzip
import io
import json
import math
import os
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "reconcile_service"
FROZEN = REPO / "tests" / "fixtures" / "catalog"
SAMPLE_BILL = REPO / "tests" / "fixtures" / "focus_billing_sample.csv"

SEED = 20261201
START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
HOURS = 30 * 24
QPS = 20.0
INPUT_TOKENS = 1024
OUTPUT_TOKENS = 300
GPUS = 2
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
LOAD_VS_PLAN = 1.25
#: Relative load by UTC hour of day (a chat service of one region: quiet nights, busy afternoons).
DAY_SHAPE = (
    0.30, 0.25, 0.22, 0.22, 0.25, 0.35, 0.55, 0.80, 1.05, 1.25, 1.40, 1.50,
    1.55, 1.60, 1.62, 1.58, 1.50, 1.38, 1.22, 1.05, 0.88, 0.70, 0.52, 0.38,
)  # fmt: skip
WEEKEND = 0.70
CAPACITY_VS_PREDICTED = 0.85
TARGET_UTIL = 0.55
MIN_REPLICAS = 2
LIST_USD_PER_H = 6.88
BILLED_USD_PER_H = 5.848
SUPPORT_RATE = 0.10
SUPPORT_MIN_USD = 100.0
TOKEN_NOISE = 0.002
BENCH_PROMPTS = 2000
TAGS = {"service": "chat-llama8b", "env": "prod"}
ACCOUNT = "493010271563"
SUB_ACCOUNT = "602211930888"

SCENARIO = f"""\
# The planned service month that focus_bill.csv bills (scripts/make_reconcile_service_fixtures.py).
# aitco reconcile scenario.yaml --bill focus_bill.csv.gz --served usage_export.jsonl.gz \\
#   --logs vllm_bench.json
name: llama-3.1-8b chat service, November
description: {QPS:g} requests/s of {INPUT_TOKENS} + {OUTPUT_TOKENS} tokens on two p5.4xlarge
workload:
  kind: inference
  name: chat
  model: llama-3.1-8b
  precision: bf16
  input_tokens: {INPUT_TOKENS}
  output_tokens: {OUTPUT_TOKENS}
  mode: online
  qps: {QPS:g}
  slo_ttft_ms: 500
  slo_tpot_ms: 50
  months: 1
options:
  - name: H100 x2 AWS on-demand
    hardware: h100-sxm5-80gb
    gpus: {GPUS}
    pricing: on_demand
    provider: aws
"""


def predicted(scenario_path: Path) -> dict[str, float]:
    """Return what ``aitco compare`` predicts with the frozen test catalog."""
    os.environ["AITCO_CATALOG_DATA"] = str(FROZEN)
    sys.path.insert(0, str(REPO / "src"))
    from aitco.catalog.loader import load_catalog
    from aitco.decide.compare import compare
    from aitco.decide.scenario import Scenario

    cat = load_catalog(use_env=False, data_dir=FROZEN)
    o = compare(Scenario.from_yaml(scenario_path), cat).options[0]
    return {
        "gpus": float(o.gpus),
        "requests_per_s": float(o.values["requests_per_s"]),
        "capacity_per_gpu": float(o.values["requests_per_s_capacity"]) / float(o.gpus),
        "usd_per_gpu_h": float(o.values["price_usd_per_gpu_h"]),
    }


def arrival_rates() -> list[float]:
    """Return the true mean arrival rate of each hour, averaging LOAD_VS_PLAN x QPS [1/s]."""
    raw = []
    for h in range(HOURS):
        t = START + dt.timedelta(hours=h)
        raw.append(DAY_SHAPE[t.hour] * (WEEKEND if t.weekday() >= 5 else 1.0))
    scale = LOAD_VS_PLAN * QPS * HOURS / sum(raw)
    return [x * scale for x in raw]


def usage_pages(rnd: random.Random, lam: list[float]) -> tuple[bytes, list[int]]:
    """Usage API pages, one a day (24 one-hour buckets); the requests of each hour."""
    lines = []
    counts = []
    for day in range(HOURS // 24):
        buckets = []
        for k in range(24):
            h = day * 24 + k
            mu = lam[h] * 3600
            n = max(0, round(rnd.gauss(mu, math.sqrt(mu))))  # Poisson, normal approximation
            counts.append(n)
            t0 = int((START + dt.timedelta(hours=h)).timestamp())
            tin = round(n * INPUT_TOKENS * (1 + rnd.gauss(0, TOKEN_NOISE)))
            tout = round(n * OUTPUT_TOKENS * (1 + rnd.gauss(0, TOKEN_NOISE)))
            buckets.append({
                "object": "bucket", "start_time": t0, "end_time": t0 + 3600,
                "results": [{
                    "object": "organization.usage.completions.result",
                    "input_tokens": tin, "input_cached_tokens": 0,
                    "input_audio_tokens": 0, "output_tokens": tout, "output_audio_tokens": 0,
                    "num_model_requests": n, "project_id": None, "user_id": None,
                    "api_key_id": None, "model": MODEL, "batch": None,
                }],
            })  # fmt: skip
        last = day == HOURS // 24 - 1
        page = {"object": "page", "data": buckets, "has_more": not last,
                "next_page": None if last else f"page_{day + 1:04d}"}  # fmt: skip
        lines.append(json.dumps(page, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode(), counts


def bench(rnd: random.Random, capacity: float) -> bytes:
    """``vllm bench serve --save-result`` at ``--request-rate inf`` on one replica."""
    tput = capacity
    out_tokens = BENCH_PROMPTS * OUTPUT_TOKENS - rnd.randint(200, 900)  # a few stop early
    duration = BENCH_PROMPTS / tput
    doc = {
        "date": "20261128-101512", "endpoint_type": "openai", "backend": "vllm",
        "label": None, "model_id": MODEL, "tokenizer_id": MODEL, "num_prompts": BENCH_PROMPTS,
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": None,
        "duration": duration, "completed": BENCH_PROMPTS, "failed": 0,
        "total_input_tokens": BENCH_PROMPTS * INPUT_TOKENS, "total_output_tokens": out_tokens,
        "request_throughput": tput, "request_goodput": None,
        "output_throughput": out_tokens / duration,
        "total_token_throughput": (BENCH_PROMPTS * INPUT_TOKENS + out_tokens) / duration,
        "mean_ttft_ms": 1803.2, "median_ttft_ms": 1650.7, "std_ttft_ms": 911.4,
        "p99_ttft_ms": 4210.9, "mean_tpot_ms": 44.1, "median_tpot_ms": 43.6,
        "std_tpot_ms": 4.2, "p99_tpot_ms": 58.3, "mean_itl_ms": 43.9, "median_itl_ms": 38.2,
        "std_itl_ms": 20.7, "p99_itl_ms": 121.5,
    }  # fmt: skip
    return (json.dumps(doc, indent=2) + "\n").encode()


def replicas(lam: list[float], capacity: float) -> list[int]:
    """Return the replicas of the team's autoscaler: ceil(load / (target x capacity)), >= 2."""
    return [max(MIN_REPLICAS, math.ceil(x / (TARGET_UTIL * capacity))) for x in lam]


def bill(reps: list[int]) -> list[dict[str, object]]:
    """Rows of the FOCUS export: one row per instance-hour, and the support fee."""
    rows: list[dict[str, object]] = []
    rid = 2_410_000
    base = {
        "BillingAccountId": ACCOUNT, "BillingAccountName": "Atlas Research",
        "BillingCurrency": "USD", "BillingPeriodStart": "2026-11-01 00:00:00",
        "BillingPeriodEnd": "2026-12-01 00:00:00",
        "InvoiceIssuerName": "Amazon Web Services, Inc.", "ProviderName": "AWS",
        "PublisherName": "Amazon Web Services, Inc.", "SubAccountId": SUB_ACCOUNT,
        "SubAccountName": "ml-serving", "RegionId": "us-east-1",
        "RegionName": "US East (N. Virginia)",
    }  # fmt: skip
    tags = json.dumps(TAGS)
    for h, n in enumerate(reps):
        a = START + dt.timedelta(hours=h)
        for k in range(n):
            rid += 1
            rows.append({
                **base, "Id": rid, "AvailabilityZone": "us-east-1a" if k % 2 == 0 else "us-east-1b",
                "BilledCost": BILLED_USD_PER_H, "ChargeCategory": "Usage",
                "ChargeDescription": f"${LIST_USD_PER_H} per On Demand Linux p5.4xlarge "
                "Instance Hour",
                "ChargeFrequency": "Usage-Based",
                "ChargePeriodStart": a.strftime("%Y-%m-%d %H:%M:%S"),
                "ChargePeriodEnd": (a + dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
                "ConsumedQuantity": 1.0, "ConsumedUnit": "Hours",
                "ContractedCost": BILLED_USD_PER_H, "ContractedUnitPrice": BILLED_USD_PER_H,
                "EffectiveCost": BILLED_USD_PER_H, "ListCost": LIST_USD_PER_H,
                "ListUnitPrice": str(LIST_USD_PER_H), "PricingCategory": "Standard",
                "PricingQuantity": 1.0, "PricingUnit": "Hours",
                "ResourceId": f"i-0chat{k:02d}a7e19b2f4", "ResourceType": "instance",
                "ServiceCategory": "Compute", "ServiceName": "Amazon Elastic Compute Cloud",
                "SkuId": "P54XLH100ONDEMND",
                "SkuPriceId": "P54XLH100ONDEMND.JRTCKXETXF.6YS6EN2CT7", "Tags": tags,
            })  # fmt: skip
    usage = sum(float(r["BilledCost"]) for r in rows)  # type: ignore[arg-type]
    support = max(SUPPORT_MIN_USD, round(SUPPORT_RATE * usage, 2))
    rows.append({
        **base, "Id": rid + 1, "BilledCost": support, "ChargeCategory": "Usage",
        "ChargeDescription": "Business Support: greater of $100 or 10% of monthly AWS usage",
        "ChargeFrequency": "Recurring", "ChargePeriodStart": "2026-11-01 00:00:00",
        "ChargePeriodEnd": "2026-12-01 00:00:00", "ContractedCost": support,
        "EffectiveCost": support, "ListCost": support, "PricingCategory": "Standard",
        "ServiceCategory": "Management and Governance", "ServiceName": "AWS Support (Business)",
        "SkuId": "QMR7CSTTAZ3G3UD5", "SubAccountId": ACCOUNT,
        "SubAccountName": "Atlas Research (payer)",
    })  # fmt: skip
    return rows


def _cell(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.11f}"
    return '"' + str(v).replace('"', '""') + '"'


def build(scenario_path: Path) -> tuple[dict[str, bytes], dict[str, object]]:
    """Every file of the test set (name -> bytes) and the construction (``truth.json``)."""
    rnd = random.Random(SEED)
    plan = predicted(scenario_path)
    lam = arrival_rates()
    capacity = round(plan["capacity_per_gpu"] * CAPACITY_VS_PREDICTED, 4)  # one GPU a replica
    pages, counts = usage_pages(rnd, lam)
    reps = replicas(lam, capacity)
    rows = bill(reps)
    header = SAMPLE_BILL.read_text(encoding="utf-8").splitlines()[0]
    cols = next(csv.reader([header]))
    buf = io.StringIO()
    buf.write(header + "\n")
    for r in rows:
        buf.write(",".join(_cell(r.get(c)) for c in cols) + "\n")
    truth = {
        "generator": "scripts/make_reconcile_service_fixtures.py",
        "seed": SEED,
        "start": START.isoformat(),
        "hours": HOURS,
        "planned_requests_per_s": QPS,
        "load_vs_plan": LOAD_VS_PLAN,
        "capacity_vs_predicted": CAPACITY_VS_PREDICTED,
        "predicted_at_generation": plan,
        "measured_capacity_per_gpu_requests_per_s": capacity,
        "gpus_per_replica": 1,
        "target_utilization": TARGET_UTIL,
        "min_replicas": MIN_REPLICAS,
        "billed_usd_per_gpu_h": BILLED_USD_PER_H,
        "list_usd_per_gpu_h": LIST_USD_PER_H,
        "tags": TAGS,
        "arrival_rate_per_s": [round(x, 6) for x in lam],
        "requests": counts,
        "gpus_billed": reps,
        "billed_gpu_h": sum(reps),
        "support_usd": float(rows[-1]["BilledCost"]),  # type: ignore[arg-type]
    }
    files = {
        "scenario.yaml": SCENARIO.encode(),
        "focus_bill.csv.gz": gzip.compress(buf.getvalue().encode(), mtime=0),
        "usage_export.jsonl.gz": gzip.compress(pages, mtime=0),
        "vllm_bench.json": bench(rnd, capacity),
        "truth.json": (json.dumps(truth, indent=1) + "\n").encode(),
    }
    return files, truth


def main(argv: list[str] | None = None) -> int:
    """Write (or check) the test set."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a file would change")
    ap.add_argument("--out", type=Path, default=OUT, help="folder to write (default: %(default)s)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = args.out / ".scenario.tmp.yaml"
    tmp.write_text(SCENARIO, encoding="utf-8")
    try:
        files, truth = build(tmp)
    finally:
        tmp.unlink()
    changed = [n for n, data in files.items() if not (args.out / n).is_file()
               or (args.out / n).read_bytes() != data]  # fmt: skip
    if args.check:
        if changed:
            print("would change: " + ", ".join(changed))
            return 1
        print("reconcile service fixtures are up to date")
        return 0
    for n, data in files.items():
        (args.out / n).write_bytes(data)
    print(f"wrote {len(files)} files to {args.out}: " + ", ".join(files))
    print(f"  billed GPU-hours {truth['billed_gpu_h']}, requests {sum(truth['requests']):,}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

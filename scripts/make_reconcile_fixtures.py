#!/usr/bin/env python3
"""Write the reconcile test set: one training run whose causes of cost are known by construction.

The files are in the real formats of the samples in ``tests/fixtures`` (copies of
``../shared/fixtures``): a FOCUS 1.0 export with the 44 columns of ``focus_billing_sample.csv``, a
``dcgmi dmon`` capture laid out as ``dcgmi_dmon.txt`` (header and units line, reprinted every 14
rounds, GPUs in descending order as in ``dcgmi_dmon_multigpu.txt``) and a Megatron-LM 2024
``training_log`` as ``megatron_log.txt`` (timestamped ``iteration`` lines, ``--log-interval``).

The run (``tests/fixtures/reconcile/scenario.yaml``): Llama 3.2 1B pre-trained on 45,000 steps of
512 x 2,048 tokens on one AWS p5.48xlarge (8 x H100), on demand, us-east-1. What happened:

* **slower steps**: every step takes 1.10 x the step time ``aitco compare`` predicts (with the
  frozen test catalog), with 1 % noise from one log interval to the next;
* **idle hours**: the instance is up 27 min before the first step (environment, data staging,
  NCCL start-up) and 12 min after the last (checkpoint upload), the GPUs idle;
* **one restart**: an NCCL failure at step 28,347; the job restarts 11 min later from the
  checkpoint of step 28,000 (steps 28,001-28,347 are done twice);
* **a discounted price**: a private-pricing agreement bills $44.032 per instance-hour, 20 % below
  the $55.04 list price the catalog holds.

Beside the run, the bill carries its S3 storage (3 days), 55 GB of internet egress (the scenario
plans 40 GB), CloudWatch logs (not predicted), the account's Business support fee (10 % of the
month's usage, at least $100; account-level, untagged) and another team's g5.12xlarge (tagged
``project=vision``: outside the run's scope).

``truth.json`` holds the construction (times, hours, prices) and the dollar effect of each cause
under the variance definitions of ``docs/reconcile.md``, computed from the construction (not from
the files). The test recomputes them with the current prediction.

Usage::

    python scripts/make_reconcile_fixtures.py            # rewrite tests/fixtures/reconcile
    python scripts/make_reconcile_fixtures.py --check    # exit 1 when the files would change
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
OUT = REPO / "tests" / "fixtures" / "reconcile"
FROZEN = REPO / "tests" / "fixtures" / "catalog"
SAMPLE_BILL = REPO / "tests" / "fixtures" / "focus_billing_sample.csv"

SEED = 20261102
GPUS = 8
STEPS = 45_000
GLOBAL_BATCH = 512
SEQ_LEN = 2048
LOG_INTERVAL = 100
CHECKPOINT_EVERY = 1000
SLOWER = 1.10
STEP_NOISE = 0.01
LAUNCH = dt.datetime(2026, 11, 2, 6, 0, 0, tzinfo=dt.UTC)
SETUP_IDLE_S = 27 * 60
TEARDOWN_IDLE_S = 12 * 60
CRASH_AFTER_STEP = 28_347
DOWNTIME_S = 11 * 60
LIST_USD_PER_H = 55.04
BILLED_USD_PER_H = 44.032
DCGM_INTERVAL_S = 20
DCGM_START_S = 20  # the DCGM capture starts 20 s after launch and stops 10 s before the end
DCGM_STOP_BEFORE_END_S = 10
HEADER_EVERY = 14
EGRESS_GB = 55.0
EGRESS_USD_PER_GB = 0.09
STORAGE_DAYS = 3
S3_USD_PER_GB_MONTH = 0.023
DATASET_GB = 188.74368
CHECKPOINT_GB = 34.6028032
CLOUDWATCH_USD = 1.87
OTHER_TEAM_HOURS = 20
OTHER_TEAM_USD_PER_H = 5.672
SUPPORT_RATE = 0.10
SUPPORT_MIN_USD = 100.0
TAGS = {"project": "llm-pretrain", "run": "llama1b-r7"}
ACCOUNT = "493010271563"
SUB_ACCOUNT = "602211930887"

SCENARIO = f"""\
# The planned run that focus_bill.csv bills (written by scripts/make_reconcile_fixtures.py).
# aitco reconcile scenario.yaml --bill focus_bill.csv --logs megatron_run.log.gz ...
name: llama-3.2-1b pre-training run r7
description: 45,000 steps of 512 x 2,048 tokens on one p5.48xlarge, on demand
workload:
  kind: training
  name: pretrain-1b-r7
  model: llama-3.2-1b
  tokens: {STEPS * GLOBAL_BATCH * SEQ_LEN}
  seq_len: {SEQ_LEN}
  global_batch: {GLOBAL_BATCH}
  precision: bf16
data:
  egress_gb: 40
options:
  - name: H100 x8 AWS on-demand
    hardware: h100-sxm5-80gb
    gpus: {GPUS}
    pricing: on_demand
    provider: aws
"""


def predicted_step_s(scenario_path: Path) -> tuple[float, float]:
    """Step time and $/GPU-hour ``aitco compare`` predicts with the frozen test catalog."""
    os.environ["AITCO_CATALOG_DATA"] = str(FROZEN)
    sys.path.insert(0, str(REPO / "src"))
    from aitco.catalog.loader import load_catalog
    from aitco.decide.compare import compare
    from aitco.decide.scenario import Scenario

    cat = load_catalog(use_env=False, data_dir=FROZEN)
    o = compare(Scenario.from_yaml(scenario_path), cat).options[0]
    return float(o.values["productive_h"]) * 3600 / STEPS, float(o.values["price_usd_per_gpu_h"])


def tflops_per_gpu(step_s: float) -> float:
    """Model TFLOP/s per GPU at ``step_s`` per step (what Megatron's --log-throughput prints)."""
    from aitco.calibrate.measurements import model_flops_per_token
    from aitco.catalog.loader import load_catalog

    arch = load_catalog(use_env=False, data_dir=FROZEN).models["llama-3.2-1b"]
    return model_flops_per_token(arch, SEQ_LEN) * GLOBAL_BATCH * SEQ_LEN / step_s / GPUS / 1e12


def stamp(t: dt.datetime) -> str:
    """Megatron's timestamp text."""
    return t.strftime("%Y-%m-%d %H:%M:%S")


def megatron_line(t: dt.datetime, step: int, ms: float, tflops: float, lr: float, loss: float,
                  gnorm: float) -> str:  # fmt: skip
    """One Megatron-LM ``training_log`` line (the layout of ``megatron_log.txt``)."""
    return (
        f" [{stamp(t)}] iteration {step:>8d}/{STEPS:>8d} | consumed samples: "
        f"{step * GLOBAL_BATCH:>12d} | elapsed time per iteration (ms): {ms:.1f} | "
        f"throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | learning rate: {lr:.6E} | "
        f"global batch size: {GLOBAL_BATCH:>5d} | lm loss: {loss:.6E} | loss scale: 1.0 | "
        f"grad norm: {gnorm:.3f} | num zeros: 0.0 | number of skipped iterations:   0 | "
        "number of nan iterations:   0 |\n"
    )


def build(scenario_path: Path) -> tuple[dict[str, bytes], dict[str, object]]:
    """Every file of the test set (name -> bytes) and the construction (``truth.json``)."""
    rnd = random.Random(SEED)
    t_pred, price_gpu_h = predicted_step_s(scenario_path)
    t_true = round(t_pred * SLOWER, 4)
    # ---- the run: per-log-interval step times (the mean over the interval, as Megatron prints)
    n_lines = STEPS // LOG_INTERVAL
    line_ms = [round(t_true * 1000 * (1 + rnd.gauss(0, STEP_NOISE)), 1) for _ in range(n_lines)]
    redo_ms = {}  # the second attempt of the intervals redone after the restart
    ckpt = (CRASH_AFTER_STEP // CHECKPOINT_EVERY) * CHECKPOINT_EVERY
    for i in range(ckpt // LOG_INTERVAL, CRASH_AFTER_STEP // LOG_INTERVAL + 1):
        redo_ms[i] = round(t_true * 1000 * (1 + rnd.gauss(0, STEP_NOISE)), 1)
    job_start = LAUNCH + dt.timedelta(seconds=SETUP_IDLE_S)
    log = io.StringIO()
    log.write(
        "using world size: 8, data-parallel size: 8, context-parallel size: 1, tensor-model-"
        "parallel size: 1, pipeline-model-parallel size: 1\n"
        "> building Llama-3.2-1B model ...\n"
        " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 1235814400\n"
        "[after dataloaders are built] datetime: " + stamp(job_start) + "\n"
        "training ...\n"
    )
    tflops = tflops_per_gpu(t_true)
    t = job_start
    busy: list[tuple[dt.datetime, dt.datetime]] = []
    seg_start = t
    ckpt_end = None
    crash = None
    i = 0
    while i < n_lines:
        step = (i + 1) * LOG_INTERVAL
        attempt2 = crash is not None and i in redo_ms
        ms = redo_ms[i] if attempt2 else line_ms[i]
        if crash is None and step > CRASH_AFTER_STEP:
            # the crash: the steps after the last log line up to CRASH_AFTER_STEP are lost
            frac = (CRASH_AFTER_STEP - (step - LOG_INTERVAL)) * ms / 1000
            crash = t + dt.timedelta(seconds=frac)
            busy.append((seg_start, crash))
            log.write(
                f"[rank3]:[E{crash.strftime('%m%d %H:%M:%S')}.512000 ProcessGroupNCCL.cpp:1895] "
                "[PG 0 (default_pg) Rank 3] Process group watchdog thread terminated with "
                "exception: NCCL error: unhandled system error\n"
                "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
                "pretrain_gpt.py FAILED\n"
            )
            restart = crash + dt.timedelta(seconds=DOWNTIME_S)
            log.write(
                "using world size: 8, data-parallel size: 8, context-parallel size: 1, tensor-"
                "model-parallel size: 1, pipeline-model-parallel size: 1\n"
                f" loading checkpoint from /fsx/ckpt/llama1b-r7 at iteration {ckpt}\n"
                f"  successfully loaded checkpoint from /fsx/ckpt/llama1b-r7 [ t 1/1, p 1/1 ] "
                f"at iteration {ckpt}\n"
            )
            t = seg_start = restart
            i = ckpt // LOG_INTERVAL
            continue
        t = t + dt.timedelta(seconds=LOG_INTERVAL * ms / 1000)
        if crash is None and step == ckpt:
            ckpt_end = t
        lr = (
            3e-4
            * min(1.0, step / 2000)
            * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / STEPS)))
        )
        loss = 2.2 + 8.0 * math.exp(-step / 4000) + rnd.gauss(0, 0.02)
        log.write(megatron_line(t, step, ms, tflops / (ms / 1000 / t_true), lr, loss,
                                abs(rnd.gauss(0.9, 0.15))))  # fmt: skip
        if step % CHECKPOINT_EVERY == 0:
            log.write(f"saving checkpoint at iteration {step:>8d} to /fsx/ckpt/llama1b-r7\n")
        i += 1
    job_end = t
    busy.append((seg_start, job_end))
    log.write(f"[after training is done] datetime: {stamp(job_end)}\n")
    assert crash is not None
    assert ckpt_end is not None
    # the kept steps: every interval once, the redone ones at their second attempt
    kept_s = (
        sum(LOG_INTERVAL * ms / 1000 for ms in line_ms)
        - sum(LOG_INTERVAL * line_ms[j] / 1000 for j in redo_ms)
        + sum(LOG_INTERVAL * redo_ms[j] / 1000 for j in redo_ms)
    )
    terminate = job_end + dt.timedelta(seconds=TEARDOWN_IDLE_S)
    # ---- DCGM: dcgmi dmon -e 203,155 -d 20000 (GPUTL, POWER)
    dcgm = io.StringIO()
    header = "#Entity   GPUTL             POWER\nID                          W\n"
    t0 = LAUNCH + dt.timedelta(seconds=DCGM_START_S)
    t_stop = terminate - dt.timedelta(seconds=DCGM_STOP_BEFORE_END_S)
    k = 0
    while True:
        ts = t0 + dt.timedelta(seconds=k * DCGM_INTERVAL_S)
        if ts >= t_stop:
            break
        if k % HEADER_EVERY == 0:
            dcgm.write(header)
        on = any(a <= ts < b for a, b in busy)
        for g in range(GPUS - 1, -1, -1):
            if on:
                u, p = rnd.randint(86, 99), rnd.uniform(590, 700)
            else:
                u, p = 0, rnd.uniform(66, 75)
            dcgm.write(f"GPU {g}     {u:<18d}{p:.1f}\n")
        k += 1
    # ---- the bill
    bill_rows = bill(terminate)
    sample_header = SAMPLE_BILL.read_text(encoding="utf-8").splitlines()[0]
    cols = next(csv.reader([sample_header]))
    buf = io.StringIO()
    buf.write(sample_header + "\n")
    for r in bill_rows:
        buf.write(",".join(_cell(r.get(c)) for c in cols) + "\n")
    run_gpu_h = (terminate - LAUNCH).total_seconds() / 3600 * GPUS
    lost_s = (crash - ckpt_end).total_seconds()
    truth = {
        "generator": "scripts/make_reconcile_fixtures.py",
        "seed": SEED,
        "gpus": GPUS,
        "steps": STEPS,
        "log_interval_steps": LOG_INTERVAL,
        "predicted_step_s_at_generation": t_pred,
        "true_step_s": t_true,
        "slower_factor": SLOWER,
        "launch": LAUNCH.isoformat(),
        "job_start": job_start.isoformat(),
        "crash": crash.isoformat(),
        "restart": (crash + dt.timedelta(seconds=DOWNTIME_S)).isoformat(),
        "job_end": job_end.isoformat(),
        "terminate": terminate.isoformat(),
        "productive_s": kept_s,
        "lost_work_s": lost_s,
        "downtime_s": float(DOWNTIME_S),
        "idle_s": float(SETUP_IDLE_S + TEARDOWN_IDLE_S),
        "billed_gpu_h": run_gpu_h,
        "billed_usd_per_instance_h": BILLED_USD_PER_H,
        "list_usd_per_instance_h": LIST_USD_PER_H,
        "accelerators_per_instance": GPUS,
        "tags": TAGS,
        "bill_other_usd": {
            "storage": sum(r["BilledCost"] for r in bill_rows if r.get("ResourceType") == "bucket"),
            "egress": EGRESS_GB * EGRESS_USD_PER_GB,
            "cloudwatch": CLOUDWATCH_USD,
            "support": next(r["BilledCost"] for r in bill_rows if r.get("ResourceId") is None),
            "other_team_out_of_scope": OTHER_TEAM_HOURS * OTHER_TEAM_USD_PER_H,
        },
        "effects_usd_at_generation": {
            "price": (BILLED_USD_PER_H / GPUS - price_gpu_h) * run_gpu_h,
            "slower_steps_before_overheads": GPUS * (kept_s - STEPS * t_pred) / 3600 * price_gpu_h,
            "restarts_lost_work_before_predicted_overheads": GPUS * (lost_s + DOWNTIME_S) / 3600
            * price_gpu_h,
            "idle_waiting": GPUS * (SETUP_IDLE_S + TEARDOWN_IDLE_S) / 3600 * price_gpu_h,
        },
    }  # fmt: skip
    files = {
        "scenario.yaml": SCENARIO.encode(),
        "focus_bill.csv": buf.getvalue().encode(),
        "megatron_run.log.gz": gzip.compress(log.getvalue().encode(), mtime=0),
        "dcgm_dmon.txt.gz": gzip.compress(dcgm.getvalue().encode(), mtime=0),
        "truth.json": (json.dumps(truth, indent=2) + "\n").encode(),
    }
    return files, truth


def _cell(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return '"true"' if v else '"false"'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.11f}"
    return '"' + str(v).replace('"', '""') + '"'


def _hours(a: dt.datetime, b: dt.datetime) -> list[tuple[dt.datetime, float]]:
    """Clock hours overlapped by [a, b) and the hours used in each."""
    out = []
    h = a.replace(minute=0, second=0, microsecond=0)
    while h < b:
        nxt = h + dt.timedelta(hours=1)
        used = (min(nxt, b) - max(h, a)).total_seconds() / 3600
        if used > 0:
            out.append((h, used))
        h = nxt
    return out


def bill(terminate: dt.datetime) -> list[dict[str, object]]:
    """Rows of the FOCUS export (column -> value; absent columns are NULL)."""
    rid = 1_830_000
    rows: list[dict[str, object]] = []
    base = {
        "BillingAccountId": ACCOUNT,
        "BillingAccountName": "Atlas Research",
        "BillingCurrency": "USD",
        "BillingPeriodStart": "2026-11-01 00:00:00",
        "BillingPeriodEnd": "2026-12-01 00:00:00",
        "InvoiceIssuerName": "Amazon Web Services, Inc.",
        "ProviderName": "AWS",
        "PublisherName": "Amazon Web Services, Inc.",
        "SubAccountId": SUB_ACCOUNT,
        "SubAccountName": "ml-training",
        "RegionId": "us-east-1",
        "RegionName": "US East (N. Virginia)",
    }

    def add(**kw: object) -> None:
        nonlocal rid
        rid += 1
        rows.append({**base, "Id": rid, **kw})

    tags = json.dumps(TAGS)
    for h, used in _hours(LAUNCH, terminate):
        add(
            AvailabilityZone="us-east-1a",
            BilledCost=used * BILLED_USD_PER_H,
            ChargeCategory="Usage",
            ChargeDescription=f"${LIST_USD_PER_H} per On Demand Linux p5.48xlarge Instance Hour",
            ChargeFrequency="Usage-Based",
            ChargePeriodStart=h.strftime("%Y-%m-%d %H:%M:%S"),
            ChargePeriodEnd=(h + dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
            ConsumedQuantity=used,
            ConsumedUnit="Hours",
            ContractedCost=used * BILLED_USD_PER_H,
            ContractedUnitPrice=BILLED_USD_PER_H,
            EffectiveCost=used * BILLED_USD_PER_H,
            ListCost=used * LIST_USD_PER_H,
            ListUnitPrice=str(LIST_USD_PER_H),
            PricingCategory="Standard",
            PricingQuantity=used,
            PricingUnit="Hours",
            ResourceId="i-0c5a7e19b2f48d3a1",
            ResourceType="instance",
            ServiceCategory="Compute",
            ServiceName="Amazon Elastic Compute Cloud",
            SkuId="KGW5Y2T7JX9M3QPD",
            SkuPriceId="KGW5Y2T7JX9M3QPD.JRTCKXETXF.6YS6EN2CT7",
            Tags=tags,
        )
    other_start = dt.datetime(2026, 11, 2, 9, 0, 0, tzinfo=dt.UTC)
    for j in range(OTHER_TEAM_HOURS):
        h = other_start + dt.timedelta(hours=j)
        add(
            AvailabilityZone="us-east-1b",
            BilledCost=OTHER_TEAM_USD_PER_H,
            ChargeCategory="Usage",
            ChargeDescription=f"${OTHER_TEAM_USD_PER_H} per On Demand Linux g5.12xlarge "
            "Instance Hour",
            ChargeFrequency="Usage-Based",
            ChargePeriodStart=h.strftime("%Y-%m-%d %H:%M:%S"),
            ChargePeriodEnd=(h + dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
            ConsumedQuantity=1.0,
            ConsumedUnit="Hours",
            ContractedCost=OTHER_TEAM_USD_PER_H,
            ContractedUnitPrice=OTHER_TEAM_USD_PER_H,
            EffectiveCost=OTHER_TEAM_USD_PER_H,
            ListCost=OTHER_TEAM_USD_PER_H,
            ListUnitPrice=str(OTHER_TEAM_USD_PER_H),
            PricingCategory="Standard",
            PricingQuantity=1.0,
            PricingUnit="Hours",
            ResourceId="i-07be2d1c9a3f60e55",
            ResourceType="instance",
            ServiceCategory="Compute",
            ServiceName="Amazon Elastic Compute Cloud",
            SkuId="Z6H3CWQ2B8RJ7V4N",
            SkuPriceId="Z6H3CWQ2B8RJ7V4N.JRTCKXETXF.6YS6EN2CT7",
            Tags=json.dumps({"project": "vision", "run": "det-sweep-3"}),
        )  # fmt: skip
    day0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    for d in range(STORAGE_DAYS):
        day = day0 + dt.timedelta(days=d + 1)
        for what, gb in (("dataset", DATASET_GB), ("checkpoints", CHECKPOINT_GB)):
            gbmo = gb / 30.0  # one day of a 30-day month
            add(
                AvailabilityZone=None,
                BilledCost=gbmo * S3_USD_PER_GB_MONTH,
                ChargeCategory="Usage",
                ChargeDescription="$0.023 per GB - first 50 TB / month of storage used",
                ChargeFrequency="Usage-Based",
                ChargePeriodStart=day.strftime("%Y-%m-%d %H:%M:%S"),
                ChargePeriodEnd=(day + dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S"),
                ConsumedQuantity=gbmo,
                ConsumedUnit="GB-Mo",
                ContractedCost=gbmo * S3_USD_PER_GB_MONTH,
                ContractedUnitPrice=S3_USD_PER_GB_MONTH,
                EffectiveCost=gbmo * S3_USD_PER_GB_MONTH,
                ListCost=gbmo * S3_USD_PER_GB_MONTH,
                ListUnitPrice=str(S3_USD_PER_GB_MONTH),
                PricingCategory="Standard",
                PricingQuantity=gbmo,
                PricingUnit="GB-Mo",
                ResourceId=f"llm-pretrain-{what}",
                ResourceType="bucket",
                ServiceCategory="Storage",
                ServiceName="Amazon Simple Storage Service",
                SkuId="WP9ANXZGBYYSGJEA",
                SkuPriceId="WP9ANXZGBYYSGJEA.JRTCKXETXF.PGHJ3S3EYE",
                Tags=json.dumps(TAGS),
            )
    end_day = terminate.replace(hour=0, minute=0, second=0)
    add(
        AvailabilityZone=None,
        BilledCost=EGRESS_GB * EGRESS_USD_PER_GB,
        ChargeCategory="Usage",
        ChargeDescription="$0.09 per GB - first 10 TB / month data transfer out beyond the "
        "global free tier",
        ChargeFrequency="Usage-Based",
        ChargePeriodStart=end_day.strftime("%Y-%m-%d %H:%M:%S"),
        ChargePeriodEnd=(end_day + dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S"),
        ConsumedQuantity=EGRESS_GB,
        ConsumedUnit="GB",
        ContractedCost=EGRESS_GB * EGRESS_USD_PER_GB,
        ContractedUnitPrice=EGRESS_USD_PER_GB,
        EffectiveCost=EGRESS_GB * EGRESS_USD_PER_GB,
        ListCost=EGRESS_GB * EGRESS_USD_PER_GB,
        ListUnitPrice=str(EGRESS_USD_PER_GB),
        PricingCategory="Standard",
        PricingQuantity=EGRESS_GB,
        PricingUnit="GB",
        ResourceId="i-0c5a7e19b2f48d3a1",
        ResourceType="instance",
        ServiceCategory="Networking",
        ServiceName="AWS Data Transfer",
        SkuId="AQUVJ4P9E3BRK5WX",
        SkuPriceId="AQUVJ4P9E3BRK5WX.JRTCKXETXF.N9EW5UVVPA",
        Tags=json.dumps(TAGS),
    )
    add(
        AvailabilityZone=None,
        BilledCost=CLOUDWATCH_USD,
        ChargeCategory="Usage",
        ChargeDescription="$0.50 per GB - data ingested for CloudWatch Logs",
        ChargeFrequency="Usage-Based",
        ChargePeriodStart=end_day.strftime("%Y-%m-%d %H:%M:%S"),
        ChargePeriodEnd=(end_day + dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S"),
        ConsumedQuantity=CLOUDWATCH_USD / 0.5,
        ConsumedUnit="GB",
        ContractedCost=CLOUDWATCH_USD,
        ContractedUnitPrice=0.5,
        EffectiveCost=CLOUDWATCH_USD,
        ListCost=CLOUDWATCH_USD,
        ListUnitPrice="0.5",
        PricingCategory="Standard",
        PricingQuantity=CLOUDWATCH_USD / 0.5,
        PricingUnit="GB",
        ResourceId="/aws/llm-pretrain/llama1b-r7",
        ResourceType="log-group",
        ServiceCategory="Management and Governance",
        ServiceName="AmazonCloudWatch",
        SkuId="E7XD3NQ4BKKW6H2S",
        SkuPriceId="E7XD3NQ4BKKW6H2S.JRTCKXETXF.CV4PJ9WXTR",
        Tags=json.dumps(TAGS),
    )
    usage = sum(float(r["BilledCost"]) for r in rows)  # type: ignore[arg-type]
    support = max(SUPPORT_MIN_USD, round(SUPPORT_RATE * usage, 2))
    add(
        AvailabilityZone=None,
        BilledCost=support,
        ChargeCategory="Usage",
        ChargeDescription="Business Support: greater of $100 or 10% of monthly AWS usage",
        ChargeFrequency="Recurring",
        ChargePeriodStart="2026-11-01 00:00:00",
        ChargePeriodEnd="2026-12-01 00:00:00",
        ConsumedQuantity=None,
        ConsumedUnit=None,
        ContractedCost=support,
        ContractedUnitPrice=None,
        EffectiveCost=support,
        ListCost=support,
        ListUnitPrice=None,
        PricingCategory="Standard",
        PricingQuantity=None,
        PricingUnit=None,
        ResourceId=None,
        ResourceType=None,
        ServiceCategory="Management and Governance",
        ServiceName="AWS Support (Business)",
        SkuId="QMR7CSTTAZ3G3UD5",
        SkuPriceId=None,
        SubAccountId=ACCOUNT,
        SubAccountName="Atlas Research (payer)",
        Tags=None,
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Write (or check) the test set."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a file would change")
    ap.add_argument("--out", type=Path, default=OUT, help="folder to write (default: %(default)s)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    scen = args.out / "scenario.yaml"
    if not args.check:
        scen.write_text(SCENARIO, encoding="utf-8")
    tmp = scen if scen.is_file() else None
    if tmp is None:
        tmp = args.out / ".scenario.tmp.yaml"
        tmp.write_text(SCENARIO, encoding="utf-8")
    files, truth = build(tmp)
    if tmp.name.startswith(".scenario.tmp"):
        tmp.unlink()
    changed = [n for n, data in files.items() if not (args.out / n).is_file()
               or (args.out / n).read_bytes() != data]  # fmt: skip
    if args.check:
        if changed:
            print("would change: " + ", ".join(changed))
            return 1
        print("reconcile fixtures are up to date")
        return 0
    for n, data in files.items():
        (args.out / n).write_bytes(data)
    print(f"wrote {len(files)} files to {args.out}: " + ", ".join(files))
    for k, v in truth["effects_usd_at_generation"].items():  # type: ignore[union-attr]
        print(f"  {k}: {v:,.2f} USD")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

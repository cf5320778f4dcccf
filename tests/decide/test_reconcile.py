"""aitco reconcile on a test set whose causes are known by construction (fixtures/reconcile).

``scripts/make_reconcile_fixtures.py`` wrote the files: a run of 45,000 steps whose steps are 10 %
slower than predicted, with 39 idle minutes, one restart and a 20 % discount (``truth.json``).
The expected dollar effect of each cause is computed here from the construction and the current
prediction, with the variance definitions of docs/reconcile.md; reconcile measures them from the
files.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from aitco.calibrate.billing import BillScope, classify, provider_id, read_bill
from aitco.decide.compare import compare
from aitco.decide.reconcile import parse_logs, reconcile
from aitco.decide.scenario import Scenario
from aitco.errors import InputError

TOL = 0.05  # each cause within 5 % of its dollar effect
UNEXPLAINED_MAX = 0.02  # of the billed total
TAGS = {"run": "llama1b-r7"}


@pytest.fixture(scope="module")
def d(fixtures_dir: Path) -> Path:
    return fixtures_dir / "reconcile"


@pytest.fixture(scope="module")
def truth(d: Path) -> dict:
    return json.loads((d / "truth.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def scenario(d: Path) -> Scenario:
    return Scenario.from_yaml(d / "scenario.yaml")


@pytest.fixture(scope="module")
def logs(d: Path) -> list:
    return parse_logs([d / "megatron_run.log.gz", d / "dcgm_dmon.txt.gz"], interval_s=20)


@pytest.fixture(scope="module")
def rec(scenario, catalog, d, logs):
    return reconcile(scenario, catalog, d / "focus_bill.csv", logs=logs, tags=TAGS)


@pytest.fixture(scope="module")
def plan(scenario, catalog):
    """The prediction the variances are measured against (compare's option)."""
    b = compare(scenario, catalog).options[0]
    gpu_items = [i for i in b.items if "usd_per_gpu_hour" in i.inputs]
    price = float(b.values["price_usd_per_gpu_h"])
    overhead = [i for i in gpu_items if i.category == "reliability"]
    return {
        "breakdown": b,
        "price": price,
        "productive_gpu_h": sum(i.usd for i in gpu_items if i.category == "compute") / price,
        "overhead_gpu_h": sum(i.usd for i in overhead) / price,
    }


def _by_cause(rec, item: str = "gpu_compute") -> dict[str, float]:
    return {v.cause: v.usd for v in rec.variances if v.item == item}


def expected_effects(truth: dict, plan: dict) -> dict[str, float]:
    """Each cause's dollar effect from the construction, with the definitions of the docs."""
    g, p = truth["gpus"], plan["price"]
    billed_price = truth["billed_usd_per_instance_h"] / truth["accelerators_per_instance"]
    return {
        "price": (billed_price - p) * truth["billed_gpu_h"],
        "slower_steps": (g * truth["productive_s"] / 3600 - plan["productive_gpu_h"]) * p,
        "restarts_lost_work": (
            g * (truth["lost_work_s"] + truth["downtime_s"]) / 3600 - plan["overhead_gpu_h"]
        )
        * p,
        "idle_waiting": g * truth["idle_s"] / 3600 * p,
    }


@pytest.mark.parametrize("cause", ["price", "slower_steps", "restarts_lost_work", "idle_waiting"])
def test_each_known_cause_is_attributed_within_5_percent(rec, truth, plan, cause):
    want = expected_effects(truth, plan)[cause]
    got = _by_cause(rec)[cause]
    assert abs(want) > 10.0, f"{cause}: the construction should give it a real effect"
    assert got == pytest.approx(want, rel=TOL), f"{cause}: {got:.2f} USD vs {want:.2f} USD"


def test_no_extra_instances_and_under_2_percent_unexplained(rec):
    assert _by_cause(rec)["more_instances_longer_period"] == pytest.approx(0.0, abs=0.01)
    assert abs(rec.unexplained_usd) < UNEXPLAINED_MAX * rec.billed_usd


def test_predicted_is_compares_total_and_the_ledger_is_exact(rec, plan):
    assert rec.predicted_usd == pytest.approx(plan["breakdown"].total_usd, rel=1e-12)
    j = json.loads(json.dumps(rec.to_json()))
    parts = [j["predicted_usd"], *(v["usd"] for v in j["variances"]), j["unexplained_usd"]]
    assert sum(parts) == j["billed_usd"]
    assert math.fsum(parts) == j["billed_usd"]
    assert sum(reversed(parts)) == j["billed_usd"]
    for v in j["variances"]:
        assert v["cause"]
        assert isinstance(v["usd"], float)


def test_billed_total_is_the_runs_rows_and_the_other_team_is_listed(rec, truth, d):
    rows = _rows(d / "focus_bill.csv")
    outside = [r for r in rows if "vision" in (r["Tags"] or "")]
    assert outside
    assert rec.billed_usd == pytest.approx(
        sum(float(r["BilledCost"]) for r in rows if r not in outside), rel=1e-12
    )
    assert rec.out_of_scope_usd == pytest.approx(truth["bill_other_usd"]["other_team_out_of_scope"])
    (line,) = rec.out_of_scope
    assert line["scope"] == "other resources (tags)"
    assert line["instance"] == "g5.12xlarge"
    assert line["rows"] == len(outside)


def test_items_predicted_not_billed_and_billed_not_predicted(rec, truth, plan):
    b = plan["breakdown"]
    nb = {v.item: v.usd for v in rec.variances if v.cause == "predicted_not_billed"}
    assert nb == {i.name: pytest.approx(-i.usd) for i in b.items if i.category == "people"
                  and i.name != "cloud_support"}  # fmt: skip
    bnp = [v for v in rec.variances if v.cause == "billed_not_predicted"]
    assert [v.usd for v in bnp] == [pytest.approx(truth["bill_other_usd"]["cloudwatch"])]
    support = _by_cause(rec, "support")["usage"]
    assert support == pytest.approx(truth["bill_other_usd"]["support"] - b.usd("cloud_support"))
    net = _by_cause(rec, "network")
    assert net["price"] == pytest.approx(0.0, abs=1e-9)
    assert net["usage"] == pytest.approx(truth["bill_other_usd"]["egress"] - b.usd("egress"))
    store = _by_cause(rec, "storage")
    assert store["usage"] + store["price"] == pytest.approx(
        truth["bill_other_usd"]["storage"] - b.usd("dataset_storage") - b.usd("checkpoint_storage")
    )


def test_each_item_has_its_prediction_error(rec):
    items = {r.item: r for r in rec.items}
    gpu = items["gpu_compute"]
    assert gpu.unit == "GPU-hour"
    assert gpu.prediction_error_usd == pytest.approx(gpu.predicted_usd - gpu.billed_usd)
    assert gpu.billed_unit_price_usd == pytest.approx(44.032 / 8)
    assert rec.prediction_error_usd == pytest.approx(rec.predicted_usd - rec.billed_usd)


def test_the_timeline_finds_the_restart(rec, truth):
    tl = rec.evidence["timeline"]
    assert tl["log_interval_steps"] == truth["log_interval_steps"]
    assert tl["unique_steps"] == truth["steps"]
    (r,) = tl["restarts"]
    assert r["resumed_from_step"] == 28_000
    assert r["last_step_before"] == 28_300
    assert tl["productive_s"] == pytest.approx(truth["productive_s"], abs=0.5)


def test_without_logs_the_usage_variance_stays_unexplained(scenario, catalog, d, rec):
    bare = reconcile(scenario, catalog, d / "focus_bill.csv", tags=TAGS)
    causes = {v.cause for v in bare.variances if v.item == "gpu_compute"}
    assert causes == {"price", "more_instances_longer_period"}
    usage = sum(v.usd for v in rec.variances if v.item == "gpu_compute" and v.cause != "price")
    assert bare.unexplained_usd == pytest.approx(usage + rec.unexplained_usd, rel=1e-9)
    assert any("no training log" in n for n in bare.notes)


# --------------------------------------------------------------------------- honest matching
def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _rewrite(src: Path, dst: Path, edit) -> Path:
    rows = _rows(src)
    cols = list(rows[0])
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=cols, quoting=csv.QUOTE_ALL)
    w.writeheader()
    for r in rows:
        for new in edit(dict(r)):
            w.writerow(new)
    dst.write_text(out.getvalue(), encoding="utf-8")
    return dst


def test_a_second_instance_is_more_instances(scenario, catalog, d, logs, tmp_path, rec):
    extra_hours = {"2026-11-02T10:00:00", "2026-11-02T11:00:00", "2026-11-02T12:00:00"}

    def edit(r):
        yield r
        if (
            "p5.48xlarge" in r["ChargeDescription"]
            and r["ChargePeriodStart"].replace(" ", "T") in extra_hours
        ):
            yield {**r, "ResourceId": "i-0another", "Id": r["Id"] + "9"}

    bill = _rewrite(d / "focus_bill.csv", tmp_path / "bill.csv", edit)
    more = reconcile(scenario, catalog, bill, logs=logs, tags=TAGS)
    price_gpu_h = more.variances[0].detail["predicted_usd_per_gpu_h"]
    got = _by_cause(more)["more_instances_longer_period"]
    assert got == pytest.approx(3 * 8 * price_gpu_h, rel=1e-9)
    assert more.unexplained_usd == pytest.approx(rec.unexplained_usd, abs=0.01)
    assert more.evidence["bill_gpu"]["peak_gpus_billed"] == pytest.approx(16)


def test_another_currency_is_one_clear_line(scenario, catalog, d, tmp_path):
    def edit(r):
        yield {**r, "BillingCurrency": "EUR"}

    bill = _rewrite(d / "focus_bill.csv", tmp_path / "eur.csv", edit)
    with pytest.raises(InputError, match=r"BillingCurrency EUR.*a bill in USD"):
        reconcile(scenario, catalog, bill, tags=TAGS)


def test_another_provider_is_one_clear_line(scenario, catalog, d, tmp_path):
    def edit(r):
        yield {**r, "ProviderName": "Microsoft"}

    bill = _rewrite(d / "focus_bill.csv", tmp_path / "azure.csv", edit)
    with pytest.raises(InputError, match=r"the bill has providers Microsoft.*provider aws"):
        reconcile(scenario, catalog, bill, tags=TAGS)


def test_another_account_or_period_is_one_clear_line(scenario, catalog, d):
    with pytest.raises(InputError, match=r"the bill has accounts 493010271563"):
        reconcile(scenario, catalog, d / "focus_bill.csv", account="111111111111")
    with pytest.raises(InputError, match=r"charge period 2026-11-01T00:00:00 to 2026-12-01"):
        reconcile(scenario, catalog, d / "focus_bill.csv", start="2027-01-01")
    with pytest.raises(InputError, match=r"no resource row with the tags run=other"):
        reconcile(scenario, catalog, d / "focus_bill.csv", tags={"run": "other"})


def test_a_period_keeps_its_rows_and_lists_the_rest(scenario, catalog, d, rec):
    day = reconcile(
        scenario, catalog, d / "focus_bill.csv", tags=TAGS, start="2026-11-02", end="2026-11-03"
    )
    outside = [g for g in day.out_of_scope if g["scope"] == "outside period"]
    assert {g["kind"] for g in outside} >= {"gpu_compute", "support", "storage"}
    assert day.billed_usd + sum(g["billed_usd"] for g in outside) == pytest.approx(rec.billed_usd)


def test_an_option_must_be_named_when_there_are_several(catalog, d, tmp_path):
    text = (d / "scenario.yaml").read_text(encoding="utf-8")
    two = text + "  - {name: second, hardware: h100-sxm5-80gb, gpus: 8, provider: aws}\n"
    p = tmp_path / "two.yaml"
    p.write_text(two, encoding="utf-8")
    scn = Scenario.from_yaml(p)
    with pytest.raises(InputError, match=r"--option = None: expected the option the bill is for"):
        reconcile(scn, catalog, d / "focus_bill.csv", tags=TAGS)
    got = reconcile(scn, catalog, d / "focus_bill.csv", tags=TAGS, option="second")
    assert got.option == "second"


def test_an_owned_option_has_no_cloud_bill(catalog, d, tmp_path):
    text = (d / "scenario.yaml").read_text(encoding="utf-8").replace("on_demand", "owned")
    p = tmp_path / "owned.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="a rented option"):
        reconcile(Scenario.from_yaml(p), catalog, d / "focus_bill.csv")


# --------------------------------------------------------------------------- bill reading
@pytest.mark.parametrize(
    "scope",
    [
        BillScope(provider="aws", tags=TAGS),
        BillScope(provider="aws", account="602211930887", start="2026-11-02", end="2026-11-03",
                  tags=TAGS),
    ],
    ids=["tags", "account-period-tags"],
)  # fmt: skip
def test_csv_and_duckdb_engines_give_the_same_groups(d, scope):
    pytest.importorskip("duckdb")
    a = read_bill(d / "focus_bill.csv", scope, engine="csv")
    b = read_bill(d / "focus_bill.csv", scope, engine="duckdb")
    assert (a.rows, a.engine, b.engine) == (b.rows, "csv", "duckdb")

    def key(bill):
        return sorted(
            (tuple(g.key.values()), g.scope, g.kind, round(g.billed_usd, 9), round(g.quantity, 9))
            for g in bill.groups
        )

    assert key(a) == key(b)
    assert a.gpu_slots == pytest.approx(b.gpu_slots)


def test_a_parquet_bill_reads_as_the_csv(d, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pq = tmp_path / "bill.parquet"
    src = str(d / "focus_bill.csv").replace("'", "''")
    duckdb.sql(
        f"COPY (SELECT * FROM read_csv('{src}', header=true, all_varchar=true, "
        f"nullstr=['NULL'])) TO '{pq}' (FORMAT parquet)"
    )
    scope = BillScope(provider="aws", tags=TAGS)
    a, b = read_bill(d / "focus_bill.csv", scope), read_bill(pq, scope)
    assert b.engine == "duckdb"
    assert sum(g.billed_usd for g in b.in_scope()) == pytest.approx(
        sum(g.billed_usd for g in a.in_scope()), rel=1e-12
    )


def test_malformed_rows_are_counted_not_fatal(d, tmp_path):
    def edit(r):
        if r["Id"].endswith("5"):
            r = {**r, "BilledCost": "twelve"}
        yield r

    bill = read_bill(_rewrite(d / "focus_bill.csv", tmp_path / "bad.csv", edit))
    assert bill.skipped.count > 0
    assert bill.skipped.first[0][1] == "BilledCost is not a number"


def test_the_sample_bill_is_read(fixtures_dir):
    bill = read_bill(fixtures_dir / "focus_billing_sample.csv")
    kinds = {g.kind for g in bill.groups}
    assert "gpu_compute" in kinds
    assert "credit" in kinds
    assert set(bill.providers) >= {"AWS", "Microsoft"}


def test_provider_names_and_kinds():
    assert provider_id("Amazon Web Services, Inc.") == "aws"
    assert provider_id("Google Cloud") == "gcp"
    assert provider_id("Oracle") == "oci"
    k = {"ChargeCategory": "Usage", "ConsumedUnit": "Hours"}
    assert classify({**k, "ChargeDescription": "On Demand Linux p5.48xlarge Instance Hour"}) == (
        "gpu_compute",
        "p5.48xlarge",
        8,
    )
    assert classify({"ChargeCategory": "Tax"})[0] == "tax"
    assert classify({"ServiceName": "AWS Support (Business)"})[0] == "support"
    assert classify({"ServiceCategory": "Storage", "ConsumedUnit": "GB-Mo"})[0] == "storage"
    assert classify({"ChargeDescription": "data transfer out"})[0] == "network"


# --------------------------------------------------------------------------- a service month
SERVICE = """\
name: chat service month
workload:
  kind: inference
  name: chat
  model: llama-3.1-8b
  precision: bf16
  input_tokens: 1024
  output_tokens: 300
  mode: online
  qps: 20
  slo_ttft_ms: 500
  slo_tpot_ms: 50
  months: 1
options:
  - {name: H100 on-demand, hardware: h100-sxm5-80gb, gpus: 1, pricing: on_demand, provider: aws}
"""
#: Instance-hours of an autoscaled third replica in the month. [h]
BURST_H = 100


def _service_bill(path: Path) -> Path:
    """November on three p5.4xlarge (1 x H100): two all month, a third for BURST_H hours."""
    import datetime as dt

    cols = [
        "ProviderName", "BillingAccountId", "BillingCurrency", "ChargeCategory",
        "ChargeDescription", "ChargePeriodStart", "ChargePeriodEnd", "ConsumedQuantity",
        "ConsumedUnit", "BilledCost", "ListCost", "ResourceId", "ServiceName",
    ]  # fmt: skip
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(cols)
    t0 = dt.datetime(2026, 11, 1)
    for h in range(30 * 24):
        a, b = t0 + dt.timedelta(hours=h), t0 + dt.timedelta(hours=h + 1)
        for inst in ("i-a", "i-b", "i-c") if h < BURST_H else ("i-a", "i-b"):
            w.writerow(
                ["AWS", "1", "USD", "Usage", "On Demand Linux p5.4xlarge Instance Hour",
                 a.isoformat(), b.isoformat(), 1.0, "Hours", 6.88, 6.88, inst, "EC2"]
            )  # fmt: skip
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def service(catalog, tmp_path_factory):
    d = tmp_path_factory.mktemp("service")
    (d / "s.yaml").write_text(SERVICE, encoding="utf-8")
    scn = Scenario.from_yaml(d / "s.yaml")
    bill = _service_bill(d / "bill.csv")
    return scn, reconcile(scn, catalog, bill, tokens_served=6.0e10), compare(scn, catalog)


def test_a_service_month_splits_into_more_replicas_and_period(service):
    _, rec, comp = service
    b = comp.options[0]
    causes = _by_cause(rec)
    assert causes["price"] == pytest.approx(0.0, abs=1e-6)
    assert causes["more_replicas"] == pytest.approx(BURST_H * 6.88, rel=1e-9)
    gpu = next(r for r in rec.items if r.item == "gpu_compute")
    usage = (gpu.billed_qty - gpu.predicted_qty) * 6.88
    assert causes["more_replicas"] + causes["longer_period"] == pytest.approx(usage, rel=1e-9)
    s = rec.serving
    assert s["predicted_gpus"] == b.gpus
    assert s["peak_gpus_billed"] == pytest.approx(3)
    assert s["median_gpus_billed"] == pytest.approx(2)
    assert s["billed_span_h"] == pytest.approx(720)
    assert s["billed_usd_per_million_tokens"] == pytest.approx(rec.billed_usd / 6.0e10 * 1e6)
    assert s["predicted_usd_per_million_tokens"] == b.values["usd_per_million_tokens"]


def test_telemetry_read_at_the_wrong_interval_is_named(scenario, catalog, d):
    logs = parse_logs([d / "megatron_run.log.gz", d / "dcgm_dmon.txt.gz"])  # -d 20000 forgotten
    got = reconcile(scenario, catalog, d / "focus_bill.csv", logs=logs, tags=TAGS)
    assert any("check --interval-s" in n for n in got.notes)


@pytest.mark.integration  # re-creates the test set (about a second of compare and writing)
def test_the_generator_writes_the_committed_test_set(capsys):
    import importlib.util

    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location(
        "make_reconcile_fixtures", REPO / "scripts" / "make_reconcile_fixtures.py"
    )
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--check"]) == 0, capsys.readouterr().out

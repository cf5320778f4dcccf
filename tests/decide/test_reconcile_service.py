"""aitco reconcile on a service month whose causes are known by construction.

``scripts/make_reconcile_service_fixtures.py`` wrote ``tests/fixtures/reconcile_service``: a month
of a chat service planned at 20 requests/s on two H100s, that carried 1.25 x the load, served
0.85 x the requests/s per GPU the plan predicts, ran an autoscaler that idles replicas, and was
billed 15 % below list, over November's 720 hours (``truth.json``). Each cause's dollar effect is
computed here from the construction and the current prediction with the definitions of
docs/reconcile.md; reconcile measures them from the bill, the usage export and the benchmark.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
from pathlib import Path

import pytest

from aitco.audit.served import read_served
from aitco.calibrate.served_load import Buckets, hour_of_day_rates, load_in_periods
from aitco.cost.variance import serving_usage_split
from aitco.decide.compare import compare
from aitco.decide.reconcile import parse_logs, reconcile
from aitco.decide.scenario import Scenario
from aitco.errors import InputError, ParseError
from aitco.units import HOURS_PER_MONTH

TOL = 0.05  # each cause within 5 % of its dollar effect
UNEXPLAINED_MAX = 0.02  # of the billed total
TAGS = {"service": "chat-llama8b"}


@pytest.fixture(scope="module")
def d(fixtures_dir: Path) -> Path:
    return fixtures_dir / "reconcile_service"


@pytest.fixture(scope="module")
def truth(d: Path) -> dict:
    return json.loads((d / "truth.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def scenario(d: Path) -> Scenario:
    return Scenario.from_yaml(d / "scenario.yaml")


@pytest.fixture(scope="module")
def evidence(d: Path) -> list:
    return [*parse_logs([d / "vllm_bench.json"]), read_served(d / "usage_export.jsonl.gz")]


@pytest.fixture(scope="module")
def rec(scenario, catalog, d, evidence):
    return reconcile(scenario, catalog, d / "focus_bill.csv.gz", logs=evidence, tags=TAGS)


@pytest.fixture(scope="module")
def plan(scenario, catalog) -> dict:
    """The prediction the variances are measured against (compare's option)."""
    b = compare(scenario, catalog).options[0]
    gpu_items = [i for i in b.items if "usd_per_gpu_hour" in i.inputs]
    price = float(b.values["price_usd_per_gpu_h"])
    h_plan = scenario.workload.months * HOURS_PER_MONTH
    return {
        "breakdown": b,
        "price": price,
        "gpus": sum(i.usd for i in gpu_items) / price / h_plan,
        "h_plan": h_plan,
        "requests_per_s": float(b.values["requests_per_s"]),
        "capacity_per_gpu": float(b.values["requests_per_s_capacity"]) / b.gpus,
    }


def expected_effects(truth: dict, plan: dict) -> dict[str, float]:
    """Each cause's dollar effect from the construction, with the definitions of the docs."""
    p, g, lam_p = plan["price"], plan["gpus"], plan["requests_per_s"]
    r = plan["capacity_per_gpu"] / truth["measured_capacity_per_gpu_requests_per_s"]
    lam, billed = truth["arrival_rate_per_s"], truth["gpus_billed"]
    need = [g * x / lam_p for x in lam]  # GPU-hours of each hour at the plan's sizing
    return {
        "price": (truth["billed_usd_per_gpu_h"] - p) * sum(billed),
        "higher_load": p * sum(n - g for n in need),
        "slower_serving": p * sum(need) * (r - 1),
        "lower_utilization": p * sum(b - r * n for b, n in zip(billed, need, strict=True)),
        "longer_period": p * g * (truth["hours"] - plan["h_plan"]),
    }


def _by_cause(rec, item: str = "gpu_compute") -> dict[str, float]:
    return {v.cause: v.usd for v in rec.variances if v.item == item}


CAUSES = ["price", "higher_load", "slower_serving", "lower_utilization", "longer_period"]


@pytest.mark.parametrize("cause", CAUSES)
def test_each_known_cause_is_attributed_within_5_percent(rec, truth, plan, cause):
    want = expected_effects(truth, plan)[cause]
    got = _by_cause(rec)[cause]
    assert abs(want) > 100.0, f"{cause}: the construction should give it a real effect"
    assert got == pytest.approx(want, rel=TOL), f"{cause}: {got:.2f} USD vs {want:.2f} USD"


def test_under_2_percent_unexplained_and_no_unattributed_replicas(rec):
    assert _by_cause(rec)["more_replicas"] == pytest.approx(0.0, abs=0.01)
    assert abs(rec.unexplained_usd) < UNEXPLAINED_MAX * rec.billed_usd


def test_predicted_is_compares_total_and_the_ledger_is_exact(rec, plan):
    assert rec.predicted_usd == pytest.approx(plan["breakdown"].total_usd, rel=1e-12)
    j = json.loads(json.dumps(rec.to_json()))
    parts = [j["predicted_usd"], *(v["usd"] for v in j["variances"]), j["unexplained_usd"]]
    assert sum(parts) == j["billed_usd"]
    assert math.fsum(parts) == j["billed_usd"]
    assert sum(reversed(parts)) == j["billed_usd"]


def test_the_service_observed_against_the_plan(rec, truth, plan, d):
    s = rec.serving
    lam = truth["arrival_rate_per_s"]
    assert s["load_vs_plan"] == pytest.approx(truth["load_vs_plan"], rel=0.01)
    assert s["observed_requests_per_s"] == pytest.approx(sum(lam) / len(lam), rel=0.01)
    assert s["served_requests"] == sum(truth["requests"])
    assert s["capacity_vs_predicted"] == pytest.approx(truth["capacity_vs_predicted"], rel=1e-3)
    assert s["peak_gpus_billed"] == max(truth["gpus_billed"])
    assert s["mean_replicas_billed"] == pytest.approx(sum(truth["gpus_billed"]) / truth["hours"])
    assert s["billed_span_h"] == truth["hours"]
    # utilisation: load over the capacity billed at the measured capacity per GPU
    cap = truth["measured_capacity_per_gpu_requests_per_s"]
    want = sum(lam) / (sum(truth["gpus_billed"]) * cap)
    assert s["observed_load_utilization"] == pytest.approx(want, rel=0.01)
    assert s["observed_load_utilization"] < s["predicted_utilization"]
    # dollars per million tokens: the bill over the tokens served in the billed span
    with gzip.open(d / "usage_export.jsonl.gz", "rt", encoding="utf-8") as fh:
        pages = [json.loads(line) for line in fh]
    tokens = sum(r["input_tokens"] + r["output_tokens"] for p in pages for b in p["data"]
                 for r in b["results"])  # fmt: skip
    assert s["served_tokens"] == pytest.approx(tokens, rel=1e-12)
    assert s["billed_usd_per_million_tokens"] == pytest.approx(rec.billed_usd / tokens * 1e6)
    # the load profile: 24 hourly means (UTC) against the scenario's flat qps
    prof = s["load_profile"]
    assert prof["planned_requests_per_s"] == [plan["requests_per_s"]] * 24
    start = dt.datetime.fromisoformat(truth["start"])
    for hour in (3, 14):
        rates = [x for k, x in enumerate(lam) if (start + dt.timedelta(hours=k)).hour == hour]
        want_h = sum(rates) / len(rates)
        assert prof["observed_requests_per_s"][hour] == pytest.approx(want_h, rel=0.01)
        got_out = prof["observed_output_tokens_per_s"][hour]
        assert got_out == pytest.approx(want_h * 300, rel=0.01)  # requests of the planned shape
    assert prof["planned_output_tokens_per_s"] == [plan["requests_per_s"] * 300] * 24


def test_without_served_evidence_the_bill_alone_splits_it(scenario, catalog, d, rec):
    alone = reconcile(scenario, catalog, d / "focus_bill.csv.gz", tags=TAGS)
    causes = _by_cause(alone)
    assert "higher_load" not in causes
    measured = _by_cause(rec)
    together = sum(measured[c] for c in ("higher_load", "slower_serving", "lower_utilization"))
    assert causes["more_replicas"] == pytest.approx(together, rel=1e-9)
    assert causes["longer_period"] == pytest.approx(measured["longer_period"], rel=1e-12)
    assert alone.billed_usd == rec.billed_usd


def test_without_a_benchmark_slower_serving_shows_as_lower_utilization(scenario, catalog, d, rec):
    served = read_served(d / "usage_export.jsonl.gz")
    got = reconcile(scenario, catalog, d / "focus_bill.csv.gz", logs=[served], tags=TAGS)
    c, m = _by_cause(got), _by_cause(rec)
    assert c["slower_serving"] == 0.0
    assert c["higher_load"] == pytest.approx(m["higher_load"], rel=1e-9)
    assert c["lower_utilization"] == pytest.approx(
        m["lower_utilization"] + m["slower_serving"], rel=1e-9
    )
    assert any("no serving benchmark" in n for n in got.notes)


def test_served_evidence_of_another_period_is_one_clear_line(scenario, catalog, d, tmp_path):
    result = {"object": "organization.usage.completions.result", "input_tokens": 10,
              "output_tokens": 5, "num_model_requests": 1}  # fmt: skip
    bucket = {"object": "bucket", "start_time": 1704067200, "end_time": 1704070800,
              "results": [result]}  # fmt: skip
    page = {"object": "page", "data": [bucket]}
    f = tmp_path / "jan.jsonl"
    f.write_text(json.dumps(page) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="--served") as e:
        reconcile(scenario, catalog, d / "focus_bill.csv.gz", logs=[read_served(f)], tags=TAGS)
    assert "2024-01-01" in str(e.value)


# --------------------------------------------------------------------------- request logs
def _request_log_and_export(tmp_path: Path, counts: list[int], t0: int) -> tuple[Path, Path]:
    """A request log and the usage export of the same requests (hour by hour)."""
    lines, buckets = [], []
    for h, n in enumerate(counts):
        start = t0 + 3600 * h
        for k in range(n):
            lines.append({"id": f"chatcmpl-{h}-{k}", "object": "chat.completion",
                          "created": start + (k * 3599) // max(n, 1), "model": "llama-3.1-8b",
                          "choices": [{"index": 0, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 1000, "completion_tokens": 300}})  # fmt: skip
        buckets.append({"object": "bucket", "start_time": start, "end_time": start + 3600,
                        "results": [{"object": "organization.usage.completions.result",
                                     "input_tokens": 1000 * n, "output_tokens": 300 * n,
                                     "num_model_requests": n}]})  # fmt: skip
    lines.append({"id": "x", "object": "chat.completion", "created": t0, "status": 500,
                  "error": {"code": "server_error"}})  # fmt: skip
    log = tmp_path / "requests.jsonl"
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n", encoding="utf-8")
    exp = tmp_path / "usage.json"
    exp.write_text(json.dumps({"object": "page", "data": buckets}, indent=2), encoding="utf-8")
    return log, exp


def test_a_request_log_and_its_usage_export_give_one_answer(tmp_path):
    t0 = 1793491200  # 2026-11-01 00:00 UTC
    counts = [3, 0, 5, 8, 2, 1]
    log, exp = _request_log_and_export(tmp_path, counts, t0)
    a, b = read_served(log), read_served(exp)
    assert a.summary["requests"] == b.summary["requests"] == sum(counts)
    assert a.summary["failed_requests"] == 1
    assert a.skipped.count == 1  # the line that is not JSON
    assert b.format.endswith("(usage_api)")
    periods = [(t0 + 1800.0 * i, t0 + 1800.0 * (i + 1)) for i in range(2 * len(counts))]
    for r in (a, b):
        got, covered = load_in_periods(Buckets.of([r]), periods)
        assert got[:, 0].sum() == pytest.approx(sum(counts))
        assert got[0, 0] == pytest.approx(1.5)  # an hourly bucket spreads over its half hours
        assert covered.sum() == pytest.approx(3600.0 * len(counts))
    rates, hours = hour_of_day_rates(Buckets.of([a]))
    assert rates[3, 0] == pytest.approx(8 / 3600)
    assert rates[3, 2] == pytest.approx(8 * 300 / 3600)  # output tokens per second
    assert hours[3] == pytest.approx(1.0)
    assert math.isnan(rates[12, 0])


def test_nothing_served_is_a_parse_error(tmp_path):
    f = tmp_path / "empty.jsonl"
    f.write_text('{"object": "page", "data": []}\n', encoding="utf-8")
    with pytest.raises(ParseError, match="no served request"):
        read_served(f)


def test_the_split_adds_up_to_the_usage_variance():
    got = serving_usage_split(
        predicted_gpus=2.0, predicted_h=730.5, billed_span_h=4.0, period_h=[1, 1, 1],
        period_gpu_h=[3, 2, 4], covered_h=[1, 0.5, 0], load_per_s=[30.0, 10.0, 0.0],
        planned_load_per_s=20.0, capacity_ratio=1.2,
    )  # fmt: skip
    assert sum(got.values()) == pytest.approx(9 - 2 * 730.5)
    assert got["higher_load"] == pytest.approx(2 * (1.5 - 1) * 1 + 2 * (0.5 - 1) * 0.5)
    assert got["more_replicas"] == pytest.approx(2 * 0.5 + 4 - 2 * (4 - 1.5))


@pytest.mark.integration  # re-creates the test set (compare and writing: seconds)
def test_the_generator_writes_the_committed_test_set(capsys):
    import importlib.util

    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location(
        "make_reconcile_service_fixtures",
        REPO / "scripts" / "make_reconcile_service_fixtures.py",
    )
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--check"]) == 0, capsys.readouterr().out


def test_every_key_is_in_the_glossary(rec):
    from tests.contracts.test_json_contracts import _all_keys, glossary_names

    documented = glossary_names()
    missing = sorted(k for k in set(_all_keys(rec.to_json())) if k not in documented)
    assert not missing, f"keys not in docs/glossary.md: {missing}"

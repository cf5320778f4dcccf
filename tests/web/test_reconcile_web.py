"""The reconcile web page and API: upload a scenario, a bill and logs; the result of the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from aitco.catalog.loader import load_catalog
from aitco.decide.reconcile import reconcile
from aitco.decide.scenario import Scenario
from aitco.web.app import MAX_BODY_BYTES, create_app


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


@pytest.fixture(scope="module")
def d(fixtures_dir: Path) -> Path:
    return fixtures_dir / "reconcile"


def _files(d: Path) -> list[tuple[str, tuple[str, bytes]]]:
    return [
        ("scenario", ("scenario.yaml", (d / "scenario.yaml").read_bytes())),
        ("bill", ("focus_bill.csv", (d / "focus_bill.csv").read_bytes())),
        ("logs", ("megatron_run.log.gz", (d / "megatron_run.log.gz").read_bytes())),
        ("logs", ("dcgm_dmon.txt.gz", (d / "dcgm_dmon.txt.gz").read_bytes())),
    ]


def test_the_api_answers_what_the_cli_does(client, d):
    r = client.post("/api/v1/reconcile", data={"tags": "run=llama1b-r7"}, files=_files(d)[:2])
    assert r.status_code == 200, r.text
    j = r.json()
    want = reconcile(
        Scenario.from_yaml(d / "scenario.yaml"),
        load_catalog(),
        d / "focus_bill.csv",
        tags={"run": "llama1b-r7"},
    )
    assert j["billed_usd"] == want.billed_usd
    assert j["predicted_usd"] == want.predicted_usd
    assert [v["usd"] for v in j["variances"]] == [v.usd for v in want.variances]
    assert j["bill"]["path"] == "uploaded bill"


@pytest.mark.integration  # uploads 270 kB of logs and parses them: seconds
def test_logs_larger_than_the_json_limit_are_accepted(client, d):
    files = _files(d)
    assert sum(len(b) for _, (_, b) in files) > MAX_BODY_BYTES
    form = {"tags": "run=llama1b-r7", "interval_s": "20"}
    r = client.post("/api/v1/reconcile", data=form, files=files)
    assert r.status_code == 200, r.text
    j = r.json()
    assert {v["cause"] for v in j["variances"]} >= {"slower_steps", "idle_waiting"}
    assert abs(j["unexplained_usd"]) < 0.02 * j["billed_usd"]


def test_the_page_shows_the_form_and_the_waterfall(client, d):
    page = client.get("/reconcile")
    assert page.status_code == 200
    assert 'enctype="multipart/form-data"' in page.text
    r = client.post("/reconcile", data={"tags": "run=llama1b-r7"}, files=_files(d)[:2])
    assert r.status_code == 200, r.text
    assert 'class="waterfall"' in r.text
    assert "Predicted against billed" in r.text


def test_bad_uploads_are_one_clear_message(client, d):
    r = client.post("/api/v1/reconcile", files=_files(d)[1:2])
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "scenario"
    r = client.post("/reconcile", data={"tags": "run"}, files=_files(d)[:2])
    assert r.status_code == 422
    assert "KEY=VALUE" in r.text
    big = client.post("/api/v1/compare", content=b"x" * (MAX_BODY_BYTES + 1))
    assert big.status_code == 413  # the JSON routes keep their small limit


def test_a_service_month_with_its_served_load(client, fixtures_dir):
    s = fixtures_dir / "reconcile_service"
    files = [
        ("scenario", ("scenario.yaml", (s / "scenario.yaml").read_bytes())),
        ("bill", ("focus_bill.csv.gz", (s / "focus_bill.csv.gz").read_bytes())),
        ("logs", ("vllm_bench.json", (s / "vllm_bench.json").read_bytes())),
        ("served", ("usage_export.jsonl.gz", (s / "usage_export.jsonl.gz").read_bytes())),
    ]
    r = client.post("/api/v1/reconcile", data={"tags": "service=chat-llama8b"}, files=files)
    assert r.status_code == 200, r.text
    j = r.json()
    assert {"higher_load", "slower_serving", "lower_utilization"} <= {
        v["cause"] for v in j["variances"]
    }
    assert j["serving"]["load_vs_plan"] > 1.2
    assert j["serving"]["capacity_benchmark"]["path"] == "log0.json"  # no server path
    page = client.post("/reconcile", data={"tags": "service=chat-llama8b"}, files=files)
    assert page.status_code == 200, page.text
    assert "The service month: predicted against billed" in page.text
    assert "waterfall-narrow" in page.text

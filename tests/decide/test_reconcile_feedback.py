"""What `reconcile --calibrate` feeds back: the observed idle share as a factor compare prices,
and one run's interruption rate only when asked (it is 175x the catalog's from one event)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aitco.calibrate.profile import load_profile, save_profile
from aitco.catalog.loader import load_catalog
from aitco.cost import items
from aitco.cost.factors import FAILURE_RATE_ID, RENTED_IDLE_ID, RESTART_ID
from aitco.decide.compare import compare
from aitco.decide.reconcile import feedback, parse_logs, reconcile
from aitco.decide.scenario import Scenario
from aitco.errors import InputError

TAGS = {"run": "llama1b-r7"}


@pytest.fixture(scope="module")
def d(fixtures_dir: Path) -> Path:
    return fixtures_dir / "reconcile"


@pytest.fixture(scope="module")
def scenario(d: Path) -> Scenario:
    return Scenario.from_yaml(d / "scenario.yaml")


@pytest.fixture(scope="module")
def logs(d: Path) -> list:
    return parse_logs([d / "megatron_run.log.gz", d / "dcgm_dmon.txt.gz"], interval_s=20)


@pytest.fixture(scope="module")
def rec(scenario, catalog, d, logs):
    return reconcile(scenario, catalog, d / "focus_bill.csv", logs=logs, tags=TAGS)


def _facts(fb) -> dict[str, float]:
    return {f["id"]: f["value"]["value"] for f in fb.overlay.get("factors", [])}


def test_one_runs_failure_rate_is_named_not_written(rec, scenario, catalog):
    fb = feedback(rec, scenario, catalog)
    facts = _facts(fb)
    assert FAILURE_RATE_ID not in facts
    assert RESTART_ID in facts  # a measured duration is written
    (line,) = [x for x in fb.summary["overlay"] if FAILURE_RATE_ID in x]
    assert "not written" in line
    assert "95% interval" in line
    assert "--write-failure-rate" in line
    asked = _facts(feedback(rec, scenario, catalog, write_failure_rate=True))
    cat_rate = catalog.factors[FAILURE_RATE_ID].value
    assert asked[FAILURE_RATE_ID] > 100 * cat_rate  # why it is not a default


def test_the_idle_share_is_written_and_compare_prices_it(rec, scenario, catalog, d, logs, tmp_path):
    fb = feedback(rec, scenario, catalog)
    share = fb.summary["measurements"]["idle_share_observed"]
    assert _facts(fb)[RENTED_IDLE_ID] == pytest.approx(share, rel=1e-3)
    (tmp_path / "p.prices.yaml").write_text(fb.overlay_yaml(), encoding="utf-8")
    save_profile(fb.profile, tmp_path / "p.yaml")
    cal = load_catalog([str(tmp_path / "p.prices.yaml")])
    eff = load_profile(tmp_path / "p.yaml").efficiency
    b = compare(scenario, cal, efficiency=eff).options[0]
    idle = b.item("rented_idle")
    f = idle.inputs["idle_fraction"]
    assert f == pytest.approx(share, rel=1e-3)
    want = idle.inputs["gpus_billed"] * idle.inputs["wall_clock_h"] * f / (1 - f)
    assert idle.usd == pytest.approx(want * idle.inputs["usd_per_gpu_hour"], rel=1e-12)
    # re-reconciled with the feedback, the idle time is predicted: its variance is gone
    again = reconcile(scenario, cal, d / "focus_bill.csv", logs=logs, tags=TAGS, efficiency=eff)
    before = next(v.usd for v in rec.variances if v.cause == "idle_waiting")
    after = next(v.usd for v in again.variances if v.cause == "idle_waiting")
    assert abs(after) < 0.05 * abs(before)
    assert abs(again.prediction_error_fraction) < abs(rec.prediction_error_fraction)


def test_rented_idle_applies_to_pay_as_used_training_only(catalog, scenario):
    opts = [
        {"name": "od", "hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand",
         "provider": "aws"},
        {"name": "spot", "hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "spot",
         "provider": "aws"},
        {"name": "1y", "hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "reserved_1y",
         "provider": "gcp"},
    ]  # fmt: skip
    scn = Scenario.model_validate(
        {**scenario.model_dump(exclude_none=True), "options": opts,
         "assumptions": {RENTED_IDLE_ID: 0.1}}
    )  # fmt: skip
    got = {b.name: b for b in compare(scn, catalog).options}
    base = compare(scenario, catalog).options[0]
    od = got["od"]
    assert od.usd("rented_idle") == pytest.approx(
        8 * od.item("rented_idle").inputs["wall_clock_h"] / 9 * od.values["price_usd_per_gpu_h"]
    )
    assert got["spot"].usd("rented_idle") > 0
    assert "rented_idle" not in {i.name for i in got["1y"].items}  # held: fragmentation
    assert "rented_idle" not in {i.name for i in base.items}  # the default 0 adds no item


def test_the_item_function():
    assert float(items.rented_idle_gpu_h(100.0, 0.2)) == pytest.approx(25.0)
    assert float(items.rented_idle_usd(25.0, 2.0)) == pytest.approx(50.0)
    with pytest.raises(InputError, match=RENTED_IDLE_ID):
        items.rented_idle_gpu_h(100.0, 1.0)


def test_the_overlay_is_a_catalog_overlay(rec, scenario, catalog, tmp_path):
    fb = feedback(rec, scenario, catalog)
    doc = yaml.safe_load(fb.overlay_yaml())
    assert {f["id"] for f in doc["factors"]} == {RESTART_ID, RENTED_IDLE_ID}

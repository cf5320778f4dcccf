from __future__ import annotations

import json

import pytest

from aitco.cli.app import main
from aitco.decide.compare import compare
from aitco.decide.levers import RISKS, levers
from aitco.decide.scenario import Scenario

TRAIN = {
    "name": "t",
    "workload": {
        "kind": "training",
        "model": "llama-3.2-1b",
        "tokens": 2e10,
        "seq_len": 2048,
        "global_batch": 512,
        "plan": {"tp": 2, "pp": 1, "micro_batch": 1},
    },
    "options": [
        {"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand", "provider": "aws"}
    ],
}


@pytest.fixture(scope="module")
def train_levers(catalog):
    return levers(Scenario.from_dict(TRAIN), catalog)


def test_all_training_levers_reported_and_ranked(train_levers):
    names = {lv["lever"] for lv in train_levers["levers"]}
    assert names == {
        "fp8",
        "parallel_plan",
        "fused_kernels",
        "recompute_zero",
        "spot_checkpointing",
        "fine_tune_open_model",
        "another_region",
    }
    rows = train_levers["levers"]
    app = [r for r in rows if r["applicable"]]
    assert rows[: len(app)] == app  # applicable levers first
    saved = [r["usd_saved"] for r in app]
    assert saved == sorted(saved, reverse=True)
    for r in rows:
        assert r["risk"] == RISKS[r["lever"]][0]
        if not r["applicable"]:
            assert r["reason"]


def test_spot_lever_equals_compare_of_the_variant(catalog, train_levers):
    spot = next(r for r in train_levers["levers"] if r["lever"] == "spot_checkpointing")
    data = json.loads(json.dumps(TRAIN))
    data["options"][0]["pricing"] = "spot"
    direct = compare(Scenario.from_dict(data), catalog).options[0].total_usd
    if spot["applicable"]:
        assert spot["result"]["total_usd"] == pytest.approx(direct)
        assert spot["usd_saved"] == pytest.approx(train_levers["base"]["total_usd"] - direct)


def test_fused_kernels_lever_equals_compare_of_the_variant(catalog, train_levers):
    """The lever is the plan with fused elementwise and loss kernels, priced by compare; a plan
    that already runs them has no such lever."""
    lv = next(r for r in train_levers["levers"] if r["lever"] == "fused_kernels")
    data = json.loads(json.dumps(TRAIN))
    data["workload"]["plan"].update(elementwise_kernels="fused", loss_kernel="fused")
    direct = compare(Scenario.from_dict(data), catalog).options[0].total_usd
    assert lv["applicable"]
    assert lv["result"]["total_usd"] == pytest.approx(direct)
    assert lv["usd_saved"] == pytest.approx(train_levers["base"]["total_usd"] - direct)
    assert lv["usd_saved"] > 0
    done = levers(Scenario.from_dict(data), catalog)
    again = next(r for r in done["levers"] if r["lever"] == "fused_kernels")
    assert not again["applicable"]
    assert "already runs fused" in again["reason"]


def test_searched_plan_is_not_a_lever(catalog):
    data = json.loads(json.dumps(TRAIN))
    data["workload"].pop("plan")
    res = levers(Scenario.from_dict(data), catalog)
    pp = next(r for r in res["levers"] if r["lever"] == "parallel_plan")
    assert not pp["applicable"]
    assert "already searched" in pp["reason"]


def test_inference_levers(catalog):
    scn = Scenario.from_dict(
        {
            "name": "i",
            "workload": {"kind": "inference", "model": "llama-3.1-8b", "qps": 5, "months": 1},
            "options": [{"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "on_demand"}],
        }
    )
    res = levers(scn, catalog)
    names = {lv["lever"] for lv in res["levers"]}
    assert {
        "quantize_fp8",
        "quantize_int4",
        "offline_batching",
        "spot_checkpointing",
        "another_region",
    } == names
    assert res["base"]["total_usd"] > 0


def test_cli(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["levers", "examples/levers_llama3_8b_pretrain.yaml", "--json"])
    out, _ = capsys.readouterr()
    assert exc.value.code == 0
    d = json.loads(out)
    assert d["levers"]
    assert d["base"]["total_usd"] > 0
    with pytest.raises(SystemExit) as exc:
        main(["levers", "examples/levers_llama3_8b_pretrain.yaml", "--option", "nope"])
    capsys.readouterr()
    assert exc.value.code == 2


def test_a_lever_compare_finds_infeasible_is_not_applicable(catalog):
    """Issue 32: the spot lever is priced by compare; where compare finds spot infeasible (the
    home instance type sells no spot price), the lever is not applicable, with compare's reason."""
    data = {
        "name": "h100",
        "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 1e9, "seq_len": 1024},
        "options": [{"hardware": "h100-sxm5-80gb", "gpus": 16, "pricing": "on_demand"}],
    }
    res = levers(Scenario.from_dict(data), catalog)
    spot = next(r for r in res["levers"] if r["lever"] == "spot_checkpointing")
    data["options"][0]["pricing"] = "spot"
    direct = compare(Scenario.from_dict(data), catalog).options[0]
    assert spot["applicable"] is direct.values["feasible"]
    assert not spot["applicable"], "the home type of 16 H100s sells no spot price"
    assert spot["reason"].startswith("compare finds the change infeasible: no eligible offer")
    assert "usd_saved" not in spot


def test_a_lever_that_makes_an_unfit_option_run(catalog):
    """The option as given does not fit: levers say so, and a lever that makes it fit has no
    saving (nothing to save against) but ``makes_feasible``."""
    scn = Scenario.from_dict(
        {
            "name": "70b on one h100",
            "workload": {"kind": "inference", "model": "llama-3.1-70b", "batch": 8},
            "options": [{"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "on_demand"}],
        }
    )
    res = levers(scn, catalog)
    assert res["base"]["feasible"] is False
    assert res["base"]["infeasible_reasons"][0].startswith("does not fit in memory")
    int4 = next(r for r in res["levers"] if r["lever"] == "quantize_int4")
    assert int4["applicable"]
    assert int4["makes_feasible"]
    assert int4["usd_saved"] is None
    assert int4["result"]["feasible"]

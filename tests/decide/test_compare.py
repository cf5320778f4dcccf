"""compare(): wiring, hand-computed totals, invariants and bad input (test-library factors)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from aitco.catalog.loader import load_catalog
from aitco.decide import compare as cmp
from aitco.decide.compare import compare
from aitco.decide.defaults import default_inference, default_training
from aitco.decide.scenario import Scenario
from aitco.errors import InputError

DATA = Path(__file__).parent / "data" / "tco_test_catalog.yaml"


@pytest.fixture(scope="module")
def cat():
    return load_catalog([DATA], use_env=False)


@pytest.fixture(scope="module")
def default_train(cat):
    return compare(default_training(), cat)


def _fake_training(wall_h: float):
    def est(model, acc, system, gpus, **kw):
        return SimpleNamespace(
            values={
                "wall_clock_h": wall_h,
                "tokens_per_s": kw["tokens"] / (wall_h * 3600),
                "fits": True,
                "mfu": 0.4,
            }
        )

    return est


def _scn(**over) -> Scenario:
    base = {
        "name": "hand",
        "workload": {
            "kind": "training",
            "model": "gpt2-124m",
            "tokens": 1e9,
            "seq_len": 1024,
            "global_batch": 8,
        },
        "options": [
            {
                "hardware": "h100-sxm5-80gb",
                "gpus": 8,
                "pricing": "on_demand",
                "usd_per_gpu_hour": 2.0,
            }
        ],
        "data": {"stored_gb": 0},
        "ops": {"checkpoints_kept": 0},
        "assumptions": {
            "failure.interruptions-per-gpu-hour": 0.0,
            "firmware.downtime-hours-per-year": 0.0,
            "ops.fte-per-1000-gpus.cloud": 0.0,
            "ops.fte-per-1000-gpus.owned": 0.0,
        },
    }
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            base[k] = {**base[k], **v}
        else:
            base[k] = v
    return Scenario.from_dict(base)


def test_hand_computed_rental_total(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake_training(10.0))
    b = compare(_scn(), cat).options[0]
    # 8 GPUs x 10 h x $2 = $160; no failures, no downtime, no staff, no data: the total is the rent
    assert b.usd("rental_on_demand") == pytest.approx(160.0)
    assert b.total_usd == pytest.approx(160.0)
    assert b.values["goodput"] == pytest.approx(1.0)
    assert b.values["wall_clock_days"] == pytest.approx(10 / 24)
    assert b.values["usd_per_million_tokens"] == pytest.approx(160.0 / 1e3)


def test_hand_computed_failures(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake_training(10.0))
    lam = 1e-3
    scn = _scn(
        assumptions={"failure.interruptions-per-gpu-hour": lam},
        workload={
            "kind": "training",
            "model": "gpt2-124m",
            "tokens": 1e9,
            "seq_len": 1024,
            "global_batch": 8,
            "checkpoint_interval_h": 1.0,
        },
    )
    b = compare(scn, cat).options[0]
    rate = lam * 8  # interruptions per hour of the job
    restart = 0.5  # restart.hours of the test catalog
    save_h = b.item("checkpoint_stall").inputs["checkpoint_save_s"] / 3600
    w = (10 + 10 * save_h / 1.0) / (1 - rate * (0.5 + restart))
    assert b.values["wall_clock_h"] == pytest.approx(w)
    assert b.usd("failure_rework") + b.usd("network_rework") == pytest.approx(
        8 * rate * w * 0.5 * 2.0
    )
    assert b.usd("network_rework") == pytest.approx(0.1 * 8 * rate * w * 0.5 * 2.0)
    assert b.usd("restart_requeue") == pytest.approx(8 * rate * w * restart * 2.0)
    # incidents: failures x 1 staff hour (ops.mttr-staff-hours) x $100 wage
    # (labour.usd-per-hour.sre) x 1.5 (labour.employer-cost-factor of the test catalog)
    assert b.usd("incident_response") == pytest.approx(rate * w * 1.0 * 100.0 * 1.5)


def test_default_training_contract(default_train):
    assert len(default_train.options) == 9
    for o in default_train.options:
        assert o.hardware in o.name
        assert o.pricing in o.name
        assert math.isclose(sum(i.usd for i in o.items), o.total_usd, rel_tol=1e-12)
        assert o.values["wall_clock_days"] > 0
        assert 0 < o.values["goodput"] <= 1
    names = {o.name for o in default_train.options}
    assert default_train.cheapest in names
    assert default_train.fastest in names
    owned = default_train.option("h100-sxm5-80gb x32 owned")
    assert {
        "depreciation",
        "tech_iteration_risk",
        "financing",
        "fragmentation_idle",
        "cooling_pue_overhead",
        "power_conversion_loss",
        "electricity_it_idle",
    } <= {i.name for i in owned.items}
    spot = default_train.option("h100-sxm5-80gb x32 spot")
    assert spot.usd("spot_preemption_rework") > 0
    assert (
        spot.values["goodput"]
        < default_train.option("h100-sxm5-80gb x32 on_demand").values["goodput"]
    )
    assert "fragmentation_idle" not in {i.name for i in spot.items}


def test_json_contract(default_train):
    js = default_train.to_json(explain=False)
    for o in js["options"]:
        assert {"name", "total_usd", "wall_clock_days", "items"} <= set(o)
        for i in o["items"]:
            assert {"name", "usd", "category"} <= set(i)


def test_inference_service(cat):
    comp = compare(default_inference(), cat)
    assert comp.kind == "inference"
    for o in comp.options:
        assert o.values["usd_per_month"] == pytest.approx(o.total_usd)
        assert o.values["usd_per_million_tokens"] > 0
        assert o.usd("retention") > 0
        assert math.isclose(sum(i.usd for i in o.items), o.total_usd, rel_tol=1e-12)
    assert comp.cheapest is not None


def test_preset_moves_owned_cost(cat):
    a = compare(default_training(), cat)
    b = compare(default_training(), cat, preset="industry-2024")
    assert b.preset == "industry-2024"
    oa, ob = a.option("a100-sxm4-80gb x64 owned"), b.option("a100-sxm4-80gb x64 owned")
    assert oa.total_usd != ob.total_usd
    assert ob.item("fragmentation_idle").inputs["idle_fraction"] == pytest.approx(0.176)
    assert ob.values["market_value_end_usd"] == pytest.approx(0.28 * ob.values["capex_usd"])


def test_residual_value_never_raises_owned_cost(cat):
    base = _scn(options=[{"hardware": "a100-sxm4-80gb", "gpus": 8, "pricing": "owned"}])
    with_rv = compare(base, cat).options[0].total_usd
    zero = base.model_copy(
        update={"assumptions": {**base.assumptions, "residual-value.datacenter-gpu": [1.0, 0.0]}}
    )
    assert with_rv <= compare(zero, cat).options[0].total_usd


def test_multistage_adds_up(cat):
    stage = {
        "kind": "training",
        "model": "gpt2-124m",
        "tokens": 1e9,
        "seq_len": 1024,
        "global_batch": 64,
    }
    scn = Scenario.from_dict(
        {
            "name": "plan",
            "stages": [
                {
                    "name": "pretrain",
                    "workload": stage,
                    "option": {
                        "hardware": "h100-sxm5-80gb",
                        "gpus": 8,
                        "pricing": "on_demand",
                        "provider": "aws",
                    },
                },
                {
                    "name": "sft",
                    "workload": {**stage, "tokens": 1e8},
                    "option": {"hardware": "a100-sxm4-80gb", "gpus": 8, "pricing": "owned"},
                },
            ],
        }
    )
    comp = compare(scn, cat)
    plan = comp.options[0]
    assert plan.kind == "plan"
    assert [s.name for s in plan.stages] == ["pretrain", "sft"]
    assert plan.total_usd == pytest.approx(sum(s.total_usd for s in plan.stages))
    assert plan.values["wall_clock_days"] == pytest.approx(
        sum(s.values["wall_clock_days"] for s in plan.stages)
    )


@pytest.mark.parametrize(
    ("assumptions", "field"),
    [
        ({"electricity.usd-per-kwh.us": -0.1}, "electricity.usd-per-kwh"),
        ({"fragmentation.idle-fraction": 1.5}, "fragmentation.idle-fraction"),
        ({"pue.air": 0.9, "pue.liquid": 0.9}, "pue"),
        ({"power-conversion.loss": -0.2}, "power-conversion.loss"),
    ],
)
def test_bad_assumptions_name_the_field(cat, assumptions, field):
    scn = _scn(options=[{"hardware": "l40s", "gpus": 8, "pricing": "owned"}])
    scn = scn.model_copy(update={"assumptions": {**scn.assumptions, **assumptions}})
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        compare(scn, cat)


def test_spot_without_checkpoint_interval_is_an_error(cat):
    scn = _scn(
        options=[{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "spot", "provider": "aws"}],
        ops={"checkpointing": "none", "checkpoints_kept": 0},
    )
    with pytest.raises(InputError, match="checkpoint"):
        compare(scn, cat)


def test_negative_price_in_scenario_is_an_error():
    with pytest.raises(InputError, match="usd_per_gpu_hour"):
        _scn(options=[{"hardware": "h100-sxm5-80gb", "gpus": 8, "usd_per_gpu_hour": -1.0}])


def test_unknown_preset(cat):
    with pytest.raises(InputError, match="preset"):
        compare(default_training(), cat, preset="industry-2042")


def test_energy_per_token_by_precision(cat):
    def run(prec: str) -> float:
        scn = Scenario.from_dict(
            {
                "name": "p",
                "workload": {
                    "kind": "training", "model": "gpt2-1.02b", "tokens": 1e9, "seq_len": 2048,
                    "global_batch": 256, "precision": prec,
                },
                "options": [{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "owned"}],
            }
        )  # fmt: skip
        return compare(scn, cat).options[0].values["energy_per_token_j"]

    bf16, fp8 = run("bf16"), run("fp8")
    assert 0 < fp8 < bf16  # fp8 trains faster at the same power: less energy per token


def test_colocation_adds_the_fee_to_owned(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake_training(10.0))
    opt = {"hardware": "a100-sxm4-80gb", "gpus": 8}
    owned = compare(_scn(options=[{**opt, "pricing": "owned"}]), cat).options[0]
    colo = compare(_scn(options=[{**opt, "pricing": "colocation"}]), cat).options[0]
    fee = colo.usd("colocation")
    assert fee > 0
    it = colo.item("colocation").inputs
    assert fee == pytest.approx(it["it_kw"] * 150.0 * it["months"])  # test factor: 150 $/kW-month
    assert colo.total_usd == pytest.approx(owned.total_usd + fee)


def test_depreciation_method_moves_the_split_not_the_total(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake_training(10.0))
    opt = [{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "owned"}]
    sl = compare(_scn(options=opt), cat).options[0]
    dec = compare(
        _scn(options=opt, ops={"depreciation": "declining", "checkpoints_kept": 0}), cat
    ).options[0]
    assert dec.total_usd == pytest.approx(sl.total_usd)
    assert dec.usd("depreciation") != pytest.approx(sl.usd("depreciation"))
    assert dec.usd("depreciation") + dec.usd("tech_iteration_risk") == pytest.approx(
        sl.usd("depreciation") + sl.usd("tech_iteration_risk")
    )


def test_reserved_pays_for_fragmentation(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake_training(10.0))
    opt = {"hardware": "h100-sxm5-80gb", "gpus": 8, "usd_per_gpu_hour": 2.0}
    od = compare(_scn(options=[{**opt, "pricing": "on_demand"}]), cat).options[0]
    rs = compare(_scn(options=[{**opt, "pricing": "reserved_1y"}]), cat).options[0]
    # 10 % idle (test factor): 80 held GPU-h x 0.1/0.9 x $2
    assert rs.usd("fragmentation_idle") == pytest.approx(80 * 0.1 / 0.9 * 2.0)
    assert "fragmentation_idle" not in {i.name for i in od.items}


def test_hot_spares_for_owned(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake_training(10.0))
    b = compare(
        _scn(options=[{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "owned"}]), cat
    ).options[0]
    per_h = b.values["price_usd_per_gpu_h"]
    assert b.usd("hot_spares") == pytest.approx(8 * 10.0 * 0.04 * per_h)


def test_power_chain_hand_computed(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake_training(10.0))
    b = compare(
        _scn(options=[{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "owned"}]), cat
    ).options[0]
    inp = b.item("electricity_it_active").inputs
    node_w = inp["node_power_w"]
    # test factors: active 0.8 x TDP, idle 0.2, 30 W switch/GPU, loss 5 %, $0.08/kWh
    active_kwh = (8 * inp["tdp_w"] * 0.8 + 1 * node_w + 8 * 30) * 10.0 / 1000
    assert b.usd("electricity_it_active") == pytest.approx(active_kwh * 0.08)
    # idle: only the fragmentation-idle hours (10 % of held capacity): 10 h x 0.1/0.9
    idle_kwh = (8 * inp["tdp_w"] * 0.2 + node_w + 8 * 30) * (10.0 * 0.1 / 0.9) / 1000
    assert b.usd("electricity_it_idle") == pytest.approx(idle_kwh * 0.08)
    it = active_kwh + idle_kwh
    assert b.usd("power_conversion_loss") == pytest.approx(it * (1 / 0.95 - 1) * 0.08)
    assert b.usd("cooling_pue_overhead") == pytest.approx(it / 0.95 * (inp["pue"] - 1) * 0.08)
    assert b.values["energy_kwh"] == pytest.approx(it / 0.95 * inp["pue"])
    assert b.values["kg_co2e"] == pytest.approx(b.values["energy_kwh"] * 0.4)


def test_data_and_compliance_hand_computed(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake_training(730.5))  # one month
    scn = _scn(
        data={"stored_gb": 1000, "acquisition_usd": 500, "raw_tb": 2, "cleaning_usd_per_tb": 100,
              "labeled_items": 1000, "labeling_usd_per_item": 0.1, "egress_gb": 100,
              "cross_zone_gb": 50},
        compliance={"gb_per_day": 10, "retention_days": 90, "storage_tier": "s3-ia"},
    )  # fmt: skip
    b = compare(scn, cat).options[0]
    assert b.usd("data_acquisition") == pytest.approx(500)
    assert b.usd("data_cleaning") == pytest.approx(200)
    assert b.usd("data_labeling") == pytest.approx(100)
    assert b.usd("dataset_storage") == pytest.approx(1000 * 1.0 * 0.023)
    assert b.usd("egress") == pytest.approx(100 * 0.09)
    assert b.usd("cross_zone_transfer") == pytest.approx(50 * 0.02)
    days = 730.5 / 24
    # every day's 10 GB is kept the whole 90 days (also after the run): GB x retention months
    assert b.usd("retention") == pytest.approx(10 * days * (90 / 30.4375) * 0.0125)


def test_scenario_sections_round_trip(tmp_path):
    import yaml

    for scn in (
        default_training(),
        default_inference(),
        Scenario.from_yaml(DATA.parents[3] / "examples" / "multistage-tco.yaml"),
    ):
        path = tmp_path / "s.yaml"
        scn.to_yaml(path)
        again = Scenario.from_yaml(path)
        assert again == scn
        assert yaml.safe_load(path.read_text())  # plain YAML


def test_every_accelerator_and_mode_prices_or_fails_cleanly(cat):
    """No traceback for any catalog accelerator x pricing mode: a price or an AitcoError."""
    from aitco.errors import AitcoError

    for acc in sorted(cat.accelerators):
        for mode in ("on_demand", "spot", "owned"):
            scn = Scenario.from_dict(
                {
                    "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 1e8},
                    "options": [{"hardware": acc, "gpus": 8, "pricing": mode}],
                }
            )
            try:
                b = compare(scn, cat).options[0]
            except AitcoError:
                continue
            assert math.isfinite(b.total_usd)
            assert b.total_usd > 0


def test_option_power_limit_trades_time_for_energy(cat):
    """An owned node capped at 500 W: the same plan runs slower (compute clock (500/700)^(1/3))
    and every hour draws less; the uncapped option of the same hardware is not touched."""
    opt = {"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "owned"}
    scn = _scn(options=[opt, {**opt, "name": "capped", "power_limit_w": 500}])
    free, capped = compare(scn, cat).options
    assert capped.values["gpu_hours"] > free.values["gpu_hours"]
    assert capped.values["gpu_hours"] < free.values["gpu_hours"] / (5 / 7) ** (1 / 3) + 1e-9
    kwh_per_h = [o.values["energy_kwh"] / o.values["wall_clock_h"] for o in (free, capped)]
    assert kwh_per_h[1] < kwh_per_h[0]
    alone = compare(_scn(options=[opt]), cat).options[0]
    assert alone.values["gpu_hours"] == pytest.approx(free.values["gpu_hours"], rel=1e-12)

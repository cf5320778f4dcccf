"""``compare`` itemises the hidden costs (issue 12 item 6): on-call team, loaded labour,
cluster-scale repair, tiered support, committed retention, audit labour, host power by slot."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from aitco.catalog.loader import load_catalog
from aitco.cost import people
from aitco.decide import compare as cmp
from aitco.decide.compare import compare
from aitco.decide.scenario import Scenario

DATA = Path(__file__).parent / "data" / "tco_test_catalog.yaml"
#: Test catalog: $100/h wage, employer-cost factor 1.5, 0 on-call seats unless overridden.
LOADED = 100.0 * 1.5


@pytest.fixture(scope="module")
def cat():
    return load_catalog([DATA], use_env=False)


@pytest.fixture(scope="module")
def real():
    return load_catalog(use_env=False)


def _fake(wall_h: float):
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


def _scn(option: dict, **over) -> Scenario:
    base = {
        "name": "hidden",
        "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 1e9, "seq_len": 1024,
                     "global_batch": 8},
        "options": [option],
        "data": {"stored_gb": 0},
        "ops": {"checkpoints_kept": 0},
        "assumptions": {
            "failure.interruptions-per-gpu-hour": 0.0,
            "firmware.downtime-hours-per-year": 0.0,
        },
    }  # fmt: skip
    for k, v in over.items():
        base[k] = {**base[k], **v} if isinstance(v, dict) and k in base else v
    return Scenario.from_dict(base)


def _sums(b) -> None:
    assert math.isclose(math.fsum(i.usd for i in b.items), b.total_usd, rel_tol=1e-12)


def test_four_gpu_owned_cluster_pays_on_call_team(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake(10.0))
    own = {"hardware": "h100-sxm5-80gb", "gpus": 4, "pricing": "owned"}
    team = {"ops.on-call-seats.owned": 1.0, "labour.productive-hours-per-fte-year": 1878.5}
    b = compare(_scn(own, assumptions=team), cat).options[0]
    fte = 8766 / 1878.5
    assert b.usd("ops_staff") == pytest.approx(fte * 10.0 / 8766 * 2080 * LOADED)
    assert b.item("ops_staff").inputs["on_call_min_fte"] == pytest.approx(fte)
    _sums(b)
    # without the on-call seat the same cluster pays only the per-GPU ratio (2 FTE/1000 GPUs)
    b0 = compare(_scn(own), cat).options[0]
    assert b0.usd("ops_staff") == pytest.approx(4 / 1000 * 2.0 * 10.0 / 8766 * 2080 * LOADED)
    # a rented cluster carries no on-call minimum
    rent = {**own, "pricing": "on_demand", "usd_per_gpu_hour": 2.0}
    br = compare(_scn(rent, assumptions=team), cat).options[0]
    assert br.usd("ops_staff") == pytest.approx(4 / 1000 * 1.0 * 10.0 / 8766 * 2080 * LOADED)


def test_cluster_scale_repair_model(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake(10.0))
    opt = {"hardware": "h100-sxm5-80gb", "gpus": 64, "pricing": "on_demand",
           "usd_per_gpu_hour": 2.0}  # fmt: skip
    lam = {"failure.interruptions-per-gpu-hour": 1e-4}
    ops = {"checkpoints_kept": 0, "checkpointing": "optimal"}
    base = compare(_scn(opt, assumptions=lam, ops=ops), cat).options[0]
    scaled = compare(
        _scn(opt, assumptions=lam, ops={**ops, "repair_model": "cluster_scale"}), cat
    ).options[0]
    assert "repair_labour" not in [i.name for i in base.items]
    assert "incident_response" not in [i.name for i in scaled.items]
    alpha = cat.factor_value("ops.repair-scale-per-node-doubling")
    # 64 GPUs = 8 nodes: 1 + alpha x 3
    assert scaled.usd("repair_labour") == pytest.approx(
        base.usd("incident_response") * (1 + alpha * 3)
    )
    _sums(scaled)


def test_retention_for_the_whole_period_and_audit_labour(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake(240.0))  # a 10-day run
    opt = {"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand",
           "usd_per_gpu_hour": 2.0}  # fmt: skip
    comp = {"gb_per_day": 1.0, "retention_days": 7 * 365.25, "storage_tier": "s3-ia",
            "audit_hours": 40}  # fmt: skip
    b = compare(_scn(opt, compliance=comp), cat).options[0]
    # 10 GB produced, each kept 84 months at $0.0125/GB-month (test catalog s3-ia)
    assert b.usd("retention") == pytest.approx(10 * 84 * 0.0125)
    assert b.usd("audit_labour") == pytest.approx(40 * LOADED)
    assert b.item("audit_labour").category == "compliance"
    _sums(b)


def test_one_gpu_owned_job_pays_host_power_by_slot(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake(10.0))
    b = compare(_scn({"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "owned"}), cat)
    b = b.options[0]
    inp = b.item("electricity_it_active").inputs
    assert inp["nodes"] == pytest.approx(1 / 8)
    node_w = inp["node_power_w"]
    assert node_w > 0
    active_kwh = (inp["tdp_w"] * 0.8 + node_w / 8 + 30) * 10.0 / 1000
    assert b.usd("electricity_it_active") == pytest.approx(active_kwh * 0.08)


def test_aws_support_follows_the_business_tiers(real):
    scn = Scenario.from_dict({
        "name": "support",
        "workload": {"kind": "training", "model": "llama-3-8b", "tokens": 2e10, "seq_len": 2048},
        "options": [{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand",
                     "provider": "aws"}],
    })  # fmt: skip
    b = compare(scn, real).options[0]
    sup = b.item("cloud_support")
    spend = sup.inputs["spend_usd"]
    months = sup.inputs["months"]
    assert months >= 1.0
    assert sup.inputs["tier_rates"] == [0.10, 0.07, 0.05, 0.03]
    expect = people.tiered_fee_usd(
        spend, months, [0, 10e3, 80e3, 250e3], [0.10, 0.07, 0.05, 0.03], 100.0
    )
    assert sup.usd == pytest.approx(float(expect))
    assert spend == pytest.approx(
        sum(i.usd for i in b.items if i.category in ("compute", "reliability"))
    )
    _sums(b)


def test_provider_without_a_tabled_plan_pays_no_support(real):
    scn = Scenario.from_dict({
        "name": "support",
        "workload": {"kind": "training", "model": "llama-3-8b", "tokens": 2e9, "seq_len": 2048},
        "options": [{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand",
                     "provider": "lambda"}],
    })  # fmt: skip
    b = compare(scn, real).options[0]
    assert "cloud_support" not in [i.name for i in b.items]

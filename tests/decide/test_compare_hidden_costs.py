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


def test_owned_fleet_pays_its_share_of_the_on_call_rota(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake(10.0))
    own = {"hardware": "h100-sxm5-80gb", "gpus": 4, "pricing": "owned"}
    rota = 8766 / 1878.5  # one seat around the clock: 4.67 FTE
    team = {"ops.on-call-seats.owned": 1.0, "labour.productive-hours-per-fte-year": 1878.5}
    hours_cost = 10.0 / 8766 * 2080 * LOADED  # one FTE for the 10-hour run
    # a fleet with a rota of its own (rota fleet 1 GPU) pays the whole rota
    own_rota = {**team, "ops.on-call-rota-gpus": 1.0}
    b = compare(_scn(own, assumptions=own_rota), cat).options[0]
    assert b.usd("ops_staff") == pytest.approx(rota * hours_cost)
    assert b.item("ops_staff").inputs["on_call_min_fte"] == pytest.approx(rota)
    _sums(b)
    # a 4-GPU fleet sharing a rota sized for 400 GPUs pays 1 % of it (0.047 FTE > the ratio)
    shared = {**team, "ops.on-call-rota-gpus": 400.0}
    bs = compare(_scn(own, assumptions=shared), cat).options[0]
    assert bs.usd("ops_staff") == pytest.approx(rota * 4 / 400 * hours_cost)
    assert bs.item("ops_staff").inputs["staff_fte"] == pytest.approx(rota / 100)
    # the default rota fleet (4,000 GPUs): the share (0.0047 FTE) is below the per-GPU ratio
    bd = compare(_scn(own, assumptions=team), cat).options[0]
    assert bd.usd("ops_staff") == pytest.approx(4 / 1000 * 2.0 * hours_cost)
    # staff scale with the fleet: 40 GPUs pay 10x the staff of 4
    b40 = compare(_scn({**own, "gpus": 40}, assumptions=shared), cat).options[0]
    assert b40.usd("ops_staff") == pytest.approx(10 * bs.usd("ops_staff"))
    # without the on-call seat the same cluster pays only the per-GPU ratio (2 FTE/1000 GPUs)
    b0 = compare(_scn(own), cat).options[0]
    assert b0.usd("ops_staff") == pytest.approx(4 / 1000 * 2.0 * hours_cost)
    # a rented cluster carries no on-call share
    rent = {**own, "pricing": "on_demand", "usd_per_gpu_hour": 2.0}
    br = compare(_scn(rent, assumptions=own_rota), cat).options[0]
    assert br.usd("ops_staff") == pytest.approx(4 / 1000 * 1.0 * hours_cost)


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
    # a run of a few days is held a fraction of a month: it pays its share of the month
    assert 0.0 < months < 1.0
    assert months == pytest.approx(b.values["wall_clock_days"] * 24 / 730.5, rel=1e-6)
    assert sup.inputs["tier_rates"] == [0.10, 0.07, 0.05, 0.03]
    breaks, rates = [0, 10e3, 80e3, 250e3], [0.10, 0.07, 0.05, 0.03]
    rate_per_month = spend / months  # the account is billed the run's monthly rate
    fee = float(people.monthly_fee_usd(rate_per_month, breaks, rates, 100.0))
    assert sup.usd == pytest.approx(spend * fee / rate_per_month)
    assert sup.usd < 0.10 * spend  # never more than the top bracket's rate on the spend
    assert spend == pytest.approx(
        sum(i.usd for i in b.items if i.category in ("compute", "reliability"))
    )
    _sums(b)


def test_short_job_pays_its_share_of_the_monthly_minimum(real):
    """A 17-minute job is not charged AWS's whole $100 monthly minimum (issue 32)."""
    breaks, rates = [0, 10e3, 80e3, 250e3], [0.10, 0.07, 0.05, 0.03]
    minutes = 17 / 60 / 730.5
    short = float(people.support_share_usd(50.0, minutes, breaks, rates, 100.0))
    assert short == pytest.approx(50.0 * 0.0647, rel=0.01)  # the rate of a $129k/month account
    assert short < 5.0
    # an account billed $500 a month pays the $100 minimum: half a month pays half of it
    assert float(people.support_share_usd(250.0, 0.5, breaks, rates, 100.0)) == pytest.approx(50)
    # a month or more with no other spend: the tiered fee of the month(s)
    whole = float(people.support_share_usd(150e3, 3.0, breaks, rates, 100.0))
    assert whole == pytest.approx(float(people.tiered_fee_usd(150e3, 3.0, breaks, rates, 100.0)))
    # other spend on the account lowers the job's rate (the brackets fall)
    big = float(people.support_share_usd(50e3, 1.0, breaks, rates, 100.0, 1e6))
    assert big / 50e3 < float(people.monthly_fee_usd(50e3, breaks, rates, 100.0)) / 50e3
    assert big / 50e3 == pytest.approx(
        float(people.monthly_fee_usd(1.05e6, breaks, rates, 100.0)) / 1.05e6
    )


def test_provider_without_a_tabled_plan_pays_no_support(real):
    scn = Scenario.from_dict({
        "name": "support",
        "workload": {"kind": "training", "model": "llama-3-8b", "tokens": 2e9, "seq_len": 2048},
        "options": [{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand",
                     "provider": "lambda"}],
    })  # fmt: skip
    b = compare(scn, real).options[0]
    assert "cloud_support" not in [i.name for i in b.items]


def test_committed_term_shows_used_share_and_unused_commitment_apart(cat, monkeypatch):
    monkeypatch.setattr(cmp, "_engine", lambda kind: _fake(730.5))  # one month of a 1-year term
    opt = {"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "reserved_1y",
           "usd_per_gpu_hour": 2.0}  # fmt: skip
    b = compare(_scn(opt), cat).options[0]
    unused = b.usd("committed_term_unused")
    assert unused > 0
    assert b.values["committed_term_unused_usd"] == pytest.approx(unused)
    assert b.values["used_usd"] + b.values["committed_term_unused_usd"] == pytest.approx(
        b.total_usd
    )
    # the used share is about one month of the term, the unused commitment the other eleven
    assert unused > 10 * b.usd("rental_reserved_1y")
    on_demand = compare(_scn({**opt, "pricing": "on_demand"}), cat).options[0]
    assert on_demand.values["committed_term_unused_usd"] == 0.0
    assert on_demand.values["used_usd"] == pytest.approx(on_demand.total_usd)


@pytest.mark.parametrize(("gpus", "qps"), [(1, 10.0), (8, 96.0)])
def test_owned_h100_service_costs_less_than_renting_by_default(catalog, gpus, qps):
    """Issue 32: one owned H100, and 8 at about half load, cost less than renting on demand;
    every staffing and support line names its sources."""
    scn = Scenario.from_dict({
        "name": "own vs rent",
        "workload": {"kind": "inference", "model": "llama-3-8b", "qps": qps},
        "options": [
            {"hardware": "h100-sxm5-80gb", "gpus": gpus, "pricing": "owned"},
            {"hardware": "h100-sxm5-80gb", "gpus": gpus, "pricing": "on_demand"},
        ],
    })  # fmt: skip
    owned, rented = compare(scn, catalog).options
    assert owned.values["total_gpus"] == rented.values["total_gpus"] == gpus
    assert owned.total_usd < rented.total_usd
    if gpus == 8:
        assert 0.4 < owned.values["utilization"] < 0.6
    for b in (owned, rented):
        for it in b.items:
            if it.category == "people":
                assert it.sources, it.name
        staff = b.item("ops_staff")
        assert any("Data Center Knowledge" in s for s in staff.sources)
    assert any("Site Reliability Engineering" in s for s in owned.item("ops_staff").sources)
    assert owned.item("ops_staff").inputs["staff_fte"] < 0.05  # not a 4.67-FTE rota

"""Offer selection (issue 12): whole instances, eligibility, one provider per option."""

from __future__ import annotations

import datetime as dt

import pytest

from aitco.catalog.loader import load_catalog
from aitco.catalog.schema import CloudOffer, OfferPrice
from aitco.cost.offers import instances_needed, select_offer


@pytest.fixture(scope="module")
def cat():
    return load_catalog(use_env=False)


def _offer(oid, per_inst, prices, *, provider="p", net=None, max_inst=None):
    return CloudOffer(
        id=oid,
        provider=provider,
        instance=oid,
        accelerator="x",
        accelerators_per_instance=per_inst,
        cluster_network=net,
        max_instances=max_inst,
        prices=[
            OfferPrice(
                term=t, region="us-east-1", usd_per_hour=u, as_of=dt.date(2026, 1, 1), source="s"
            )
            for t, u in prices.items()
        ],
    )


@pytest.mark.parametrize(
    ("gpus", "unit", "per", "want"),
    [
        (1, 1, 8, 1),
        (8, 8, 8, 1),
        (9, 9, 8, 2),
        (16, 16, 8, 2),
        (6, 2, 4, 2),
        (7, 1, 8, 1),
        (3, 3, 2, 2),
    ],
)
def test_instances_needed(gpus, unit, per, want):
    assert instances_needed(gpus, unit, per) == want


def test_one_gpu_a100_on_aws_bills_a_whole_8_gpu_instance(cat):
    c = select_offer(cat.offers_for("a100-sxm4-80gb"), "on_demand", 1, provider="aws")
    assert c is not None
    assert c.eligible
    assert (c.offer_id, c.instances, c.gpus_billed) == ("aws-p4de.24xlarge", 1, 8)
    assert c.usd_per_hour_billed == pytest.approx(
        cat.offers["aws-p4de.24xlarge"].prices[0].usd_per_hour
    )


def test_one_gpu_shape_is_used_where_the_provider_sells_one(cat):
    c = select_offer(cat.offers_for("h100-sxm5-80gb"), "on_demand", 1, provider="aws")
    assert c is not None
    assert (c.offer_id, c.gpus_billed) == ("aws-p5.4xlarge", 1)


@pytest.mark.parametrize("term", ["on_demand", "spot", "reserved_1y", "reserved_3y"])
@pytest.mark.parametrize("provider", [None, "any", "runpod", "aws", "gcp"])
def test_128_h100_training_never_on_a_single_gpu_offer(cat, term, provider):
    c = select_offer(cat.offers_for("h100-sxm5-80gb"), term, 128, provider=provider)
    if c is None or not c.eligible:
        return  # no eligible offer: the option is infeasible, never priced as if it were
    o = cat.offers[c.offer_id]
    assert o.accelerators_per_instance > 1
    assert o.cluster_network not in (None, "none")
    assert c.gpus_billed >= 128


def test_inference_replicas_may_use_single_gpu_offers():
    one = _offer("one", 1, {"on_demand": 2.0})
    eight = _offer("eight", 8, {"on_demand": 24.0}, net="efa")
    c = select_offer([one, eight], "on_demand", 6, unit_gpus=1)
    assert c is not None
    assert (c.offer_id, c.instances, c.gpus_billed) == ("one", 6, 6)
    # a 6-GPU training job cannot span six 1-GPU instances without a cluster network
    c = select_offer([one, eight], "on_demand", 6)
    assert c is not None
    assert (c.offer_id, c.instances, c.gpus_billed) == ("eight", 1, 8)


def test_home_instance_type_keeps_every_term_on_one_offer():
    a = _offer("a", 8, {"on_demand": 16.0}, provider="pa", net="efa")
    b = _offer("b", 8, {"on_demand": 24.0, "reserved_1y": 8.0}, provider="pb", net="efa")
    od = select_offer([a, b], "on_demand", 8)
    assert od is not None
    assert od.offer_id == "a"
    ry = select_offer([a, b], "reserved_1y", 8)
    assert ry is not None
    assert not ry.eligible
    assert "sells no reserved_1y" in ry.reasons[0]
    anyp = select_offer([a, b], "reserved_1y", 8, provider="any")
    assert anyp is not None
    assert anyp.eligible
    assert anyp.offer_id == "b"


def test_max_instances_and_missing_fabric_make_an_offer_ineligible():
    o = _offer("o", 8, {"on_demand": 10.0}, net="infiniband", max_inst=2)
    assert select_offer([o], "on_demand", 16).eligible
    c = select_offer([o], "on_demand", 24)
    assert not c.eligible
    assert "at most 2" in c.reasons[0]
    n = _offer("n", 8, {"on_demand": 10.0})
    c = select_offer([n], "on_demand", 16)
    assert not c.eligible
    assert "no cluster network" in c.reasons[0]
    assert select_offer([n], "spot", 8) is None

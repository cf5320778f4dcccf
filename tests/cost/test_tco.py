import pytest

from aitco.cost.tco import Breakdown, add_stages


def test_items_sum_and_shares():
    b = Breakdown(name="x")
    b.add("rental", 75.0, "compute")
    b.add("failure_rework", 25.0, "reliability")
    b.finalize()
    assert b.total_usd == 100.0
    assert b.item("rental").share == pytest.approx(0.75)
    js = b.to_json()
    assert js["total_usd"] == 100.0
    assert {i["name"] for i in js["items"]} == {"rental", "failure_rework"}
    est = b.to_estimate()
    assert est.dominant == "rental_usd"


def test_non_finite_item_rejected():
    b = Breakdown(name="x")
    with pytest.raises(ValueError, match="not finite"):
        b.add("bad", float("nan"), "compute")


def test_stages_add_up():
    a = Breakdown(name="pretrain", values={"wall_clock_days": 2.0})
    a.add("rental", 100.0, "compute")
    a.finalize()
    b = Breakdown(name="sft", values={"wall_clock_days": 0.5})
    b.add("rental", 10.0, "compute")
    b.finalize()
    plan = add_stages("plan", [a, b])
    assert plan.total_usd == pytest.approx(110.0)
    assert plan.values["wall_clock_days"] == pytest.approx(2.5)
    assert [i.name for i in plan.items] == ["pretrain:rental", "sft:rental"]

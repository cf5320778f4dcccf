from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitco.cli.app import main
from aitco.decide.arbitrage import arbitrage, read_price_trace, simulate
from aitco.errors import ParseError

HDR = "timestamp,offer,usd_per_hour,gpus,capacity_gpus,interrupted\n"


def _write(tmp_path, body, name="t.csv"):
    p = tmp_path / name
    p.write_text(body)
    return p


def test_hand_computed_two_offers(tmp_path):
    # two hours; offer a at 1 $/GPU-h (cap 2), b at 2 $/GPU-h; fleet of 3; fallback 5
    p = _write(tmp_path, HDR + "0,a,1,1,2,0\n0,b,2,1,,0\n3600,a,1,1,2,0\n3600,b,2,1,,0\n")
    tr = read_price_trace(p)
    r = simulate(
        tr,
        gpus=3,
        threshold_usd_per_gpu_hour=None,
        fallback_usd_per_gpu_hour=5.0,
        tokens_per_s_per_gpu=1.0,
        restart_h=0.0,
    )
    assert r["total_usd"] == pytest.approx(2 * (2 * 1 + 1 * 2))
    assert r["tokens"] == pytest.approx(3 * 2 * 3600)
    assert r["share_by_offer"] == pytest.approx({"a": 2 / 3, "b": 1 / 3})
    # a threshold below b's price sends the third GPU to the fallback
    r2 = simulate(
        tr,
        gpus=3,
        threshold_usd_per_gpu_hour=1.5,
        fallback_usd_per_gpu_hour=5.0,
        tokens_per_s_per_gpu=1.0,
        restart_h=0.0,
    )
    assert r2["total_usd"] == pytest.approx(2 * (2 * 1 + 5))


def test_forward_fill_gpus_column_and_outage(tmp_path):
    p = _write(tmp_path, HDR + "0,a,8,8,,0\n3600,b,3,1,,0\n7200,a,,8,,0\n")
    tr = read_price_trace(p)
    a = tr.offers.index("a")
    assert tr.usd_per_gpu_hour[:, a].tolist()[:2] == [1.0, 1.0]  # 8 $/h / 8 GPUs, forward-filled
    assert np.isnan(tr.usd_per_gpu_hour[2, a])  # empty price = unavailable


def test_restarts_and_preemptions_cost_tokens(tmp_path):
    p = _write(tmp_path, HDR + "0,a,1,1,,0\n3600,a,1,1,,1\n7200,a,1,1,,0\n")
    r = simulate(
        read_price_trace(p),
        gpus=2,
        threshold_usd_per_gpu_hour=None,
        fallback_usd_per_gpu_hour=9.0,
        tokens_per_s_per_gpu=1.0,
        restart_h=0.5,
    )
    # start at t0 (2 GPUs) and the preemption at t1 (2 GPUs), 0.5 h each
    assert r["lost_gpu_hours"] == pytest.approx(2.0)
    assert r["tokens"] == pytest.approx((2 * 3 - 2.0) * 3600)


@pytest.mark.parametrize(
    ("body", "line", "column"),
    [
        ("timestamp,offer\n0,a\n", 1, "usd_per_hour"),
        (HDR + "0,a,1,1,,0\nnot-a-time,a,1,1,,0\n", 3, "timestamp"),
        (HDR + "0,a,x,1,,0\n", 2, "usd_per_hour"),
        (HDR + "0,a,-1,1,,0\n", 2, "usd_per_hour"),
        (HDR + "0,a,1,0,,0\n", 2, "gpus"),
        (HDR + "0,a,1\n", 2, "columns"),
    ],
)
def test_malformed_lines_named(tmp_path, body, line, column):
    p = _write(tmp_path, "# comment\n" + body)
    with pytest.raises(ParseError) as exc:
        read_price_trace(p)
    assert f":{line + 1}:" in str(exc.value)
    assert column in str(exc.value)


@given(
    prices=st.lists(
        st.lists(st.floats(0.1, 10.0), min_size=3, max_size=3), min_size=2, max_size=12
    ),
    gpus=st.integers(1, 20),
)
def test_policy_never_worse_than_any_single_offer_without_churn(tmp_path_factory, prices, gpus):
    d = tmp_path_factory.mktemp("tr")
    rows = "".join(
        f"{t * 3600},{o},{prices[t][j]:.4f},1,,0\n"
        for t in range(len(prices))
        for j, o in enumerate("abc")
    )
    tr = read_price_trace(_write(d, HDR + rows))
    kw = {
        "gpus": gpus,
        "fallback_usd_per_gpu_hour": 20.0,
        "tokens_per_s_per_gpu": 1.0,
        "restart_h": 0.0,
    }
    pol = simulate(tr, threshold_usd_per_gpu_hour=None, **kw)
    for o in tr.offers:
        single = simulate(tr, threshold_usd_per_gpu_hour=None, only_offer=o, **kw)
        assert pol["total_usd"] <= single["total_usd"] + 1e-9


def test_cli_example_and_bad_trace(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["arbitrage", "examples/price_trace_h100_spot.csv", "--gpus", "48", "--json"])
    out, _ = capsys.readouterr()
    assert exc.value.code == 0
    d = json.loads(out)
    assert d["policy"]["usd_per_million_tokens"] > 0
    assert d["baseline_offer"] in d["offers"]
    bad = _write(tmp_path, HDR + "0,a,1,1,,0\n1,a,oops,1,,0\n")
    with pytest.raises(SystemExit) as exc:
        main(["arbitrage", str(bad)])
    _, err = capsys.readouterr()
    assert exc.value.code == 2
    assert "usd_per_hour" in err
    assert ":3" in err


def test_default_threshold_is_fallback():
    r = arbitrage("examples/price_trace_h100_spot.csv", gpus=8)
    assert r["threshold_usd_per_gpu_h"] == r["fallback_usd_per_gpu_h"]


def test_offers_that_cannot_host_a_replica_are_left_out(tmp_path, catalog):
    """Compare's eligibility: a replica of 8 GPUs on single-GPU instances with no cluster
    network is not a placement (issue 32: the single-GPU community offers)."""
    p = _write(
        tmp_path,
        HDR + "0,big,16,8,64,0\n0,small,1,1,64,0\n3600,big,16,8,64,0\n3600,small,1,1,64,0\n",
    )
    one = arbitrage(p, gpus=16, gpus_per_replica=1, catalog=catalog)
    assert one["ineligible_offers"] == {}
    assert one["policy"]["share_by_offer"] == pytest.approx({"small": 1.0})
    eight = arbitrage(p, gpus=16, gpus_per_replica=8, catalog=catalog)
    assert set(eight["ineligible_offers"]) == {"small"}
    assert "no cluster network" in eight["ineligible_offers"]["small"]
    assert set(eight["baselines"]) == {"big"}
    assert eight["policy"]["share_by_offer"] == pytest.approx({"big": 1.0})


def test_a_catalog_offer_is_judged_by_its_catalog_network(tmp_path, catalog):
    """An offer named as in the catalog: its cluster network decides (EFA joins instances)."""
    offer = catalog.offers["aws-p5.48xlarge"]
    assert offer.cluster_network == "efa"
    p = _write(tmp_path, HDR + f"0,{offer.id},80,8,64,0\n3600,{offer.id},80,8,64,0\n")
    res = arbitrage(p, gpus=32, gpus_per_replica=16, catalog=catalog)
    assert res["ineligible_offers"] == {}

from __future__ import annotations

import json

import numpy as np
import pytest

from aitco.catalog.schema import ApiPrice
from aitco.cli.app import main
from aitco.decide.api_vs_self_host import (
    api_usd_per_mtok,
    api_vs_self_host,
    break_even_volume,
    self_host_usd_per_mtok,
)
from aitco.errors import InputError


def _api(**kw):
    base = dict(
        id="x/y",
        provider="x",
        model="y",
        input_usd_per_mtok=3.0,
        output_usd_per_mtok=15.0,
        as_of="2026-01-01",
    )
    base.update(kw)
    return ApiPrice(**base)


def test_blended_api_price_by_hand():
    a = _api(cached_input_usd_per_mtok=0.3, batch_discount=0.5)
    assert api_usd_per_mtok(a, 512, 256) == pytest.approx((512 * 3 + 256 * 15) / 768)
    cached = api_usd_per_mtok(a, 512, 256, cached_fraction=0.5)
    assert cached == pytest.approx((256 * 3 + 256 * 0.3 + 256 * 15) / 768)
    assert api_usd_per_mtok(a, 512, 256, batch=True) == pytest.approx(
        api_usd_per_mtok(a, 512, 256) / 2
    )
    with pytest.raises(InputError):
        api_usd_per_mtok(a, 1, 1, cached_fraction=2)


def test_self_host_price_by_hand():
    cands = {"requests_per_s": np.array([1.0]), "usd_per_h": np.array([2.0])}
    vol = np.array([1e6, 1e12])
    p, _ = self_host_usd_per_mtok(cands, vol, 500, 500)
    # 1e6 tokens/month is far below one replica: a full replica-month for 1 Mtok
    assert p[0] == pytest.approx(2.0 * 365.25 * 24 / 12 / 1.0)
    need = 1e12 / 1000 / (365.25 * 24 / 12 * 3600)
    assert p[1] == pytest.approx(np.ceil(need) * 2.0 * 365.25 * 24 / 12 / 1e6)


def test_break_even_volume_sawtooth():
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert break_even_volume(v, np.array([5, 3, 4, 2, 1.0]), 3.5) == 4.0
    assert break_even_volume(v, np.array([5, 5, 5, 5, 5.0]), 1.0) is None
    assert break_even_volume(v, np.array([1, 1, 1, 1, 1.0]), 2.0) == 1.0


def test_self_hosting_wins_at_high_volume(catalog):
    r = api_vs_self_host(
        catalog,
        "llama-3.1-8b",
        volume_tokens_per_month=1e11,
        apis=["openai/gpt-4o"],
        load_check=False,
    )
    row = r["apis"][0]
    assert row["self_host_wins"]
    assert row["break_even_tokens_per_month"] < 1e11
    sh = r["self_host"]
    assert sh["replicas"] * sh["requests_per_s_per_replica"] >= sh["requests_per_s_needed"]
    # at the break-even volume the self-host price is at or below the API price
    low = api_vs_self_host(
        catalog,
        "llama-3.1-8b",
        volume_tokens_per_month=row["break_even_tokens_per_month"],
        apis=["openai/gpt-4o"],
        load_check=False,
    )
    assert low["apis"][0]["self_host_wins"]
    tiny = api_vs_self_host(
        catalog,
        "llama-3.1-8b",
        volume_tokens_per_month=1e5,
        apis=["openai/gpt-4o"],
        load_check=False,
    )
    assert not tiny["apis"][0]["self_host_wins"]


def test_latency_objective_binds(catalog):
    with pytest.raises(InputError, match="latency"):
        api_vs_self_host(
            catalog,
            "llama-3.1-70b",
            volume_tokens_per_month=1e9,
            max_tpot_s=1e-6,
            load_check=False,
        )


def test_cli(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["api-vs-self-host", "examples/api_vs_self_host_llama70b.yaml", "--json"])
    out, _ = capsys.readouterr()
    assert exc.value.code == 0
    d = json.loads(out)
    assert d["apis"]
    assert d["self_host"]["load_check"]["available"] in (True, False)
    with pytest.raises(SystemExit) as exc:
        main(["api-vs-self-host", "--api", "openai/gpt-4", "--json"])
    _, err = capsys.readouterr()
    assert exc.value.code == 2
    assert "did you mean" in err


def test_token_prices_side_by_side(catalog):
    """API list prices per M input/output next to the self-hosted split of the same cost."""
    vol, i, o = 5e9, 512, 256
    r = api_vs_self_host(
        catalog, "llama-3.1-8b", volume_tokens_per_month=vol, apis=["openai/gpt-4o"],
        input_tokens=i, output_tokens=o, hardware=("h100-sxm5-80gb",), load_check=False,
    )  # fmt: skip
    row = r["apis"][0]
    api = catalog.apis["openai/gpt-4o"]
    assert row["input_usd_per_million_tokens"] == api.input_usd_per_mtok
    assert row["output_usd_per_million_tokens"] == api.output_usd_per_mtok
    assert row["price_source"].startswith("catalog")
    sh = r["self_host"]
    # allocation basis: input and output costs together recover the plan's monthly cost
    need = sh["requests_per_s_needed"]
    usd_h = sh["usd_per_million_tokens"] * vol / 1e6 / 730.0
    split = (
        (
            sh["usd_per_million_input_tokens"] * need * i
            + sh["split_usd_per_million_output_tokens"] * need * o
        )
        * 3600
        / 1e6
    )
    assert split == pytest.approx(usd_h, rel=1e-3)
    assert 0 < sh["prefill_time_fraction"] < 1
    assert sh["usage_usd_per_million_output_tokens"] <= sh["split_usd_per_million_output_tokens"]
    assert sh["usage_usd_per_million_output_tokens"] == pytest.approx(
        sh["split_usd_per_million_output_tokens"] * sh["utilization"]
    )
    # the whole cost over the output tokens: the one usd_per_million_output_tokens (issue 34)
    assert sh["usd_per_million_output_tokens"] == pytest.approx(
        sh["usd_per_million_tokens"] * (i + o) / o, rel=1e-9
    )


def test_the_chosen_plan_is_priced_by_compares_cost_path(catalog):
    """Issue 32 item 3: the screen ranks plans; the plan chosen is priced as compare prices a
    service (whole instances, every item), and every figure at the volume is that price."""
    from aitco.decide.service_cost import price_service_plan

    vol = 3e10
    r = api_vs_self_host(
        catalog, "llama-3.1-8b", volume_tokens_per_month=vol, apis=["openai/gpt-4o"],
        load_check=False,
    )  # fmt: skip
    sh = r["self_host"]
    assert sh["priced_by"].startswith("compare's cost path")
    b, _res = price_service_plan(
        catalog,
        {**sh, "model": "llama-3.1-8b", "input_tokens": 512, "output_tokens": 256,
         "pricing": "on_demand"},
    )  # fmt: skip
    assert sh["usd_per_month"] == pytest.approx(b.total_usd, rel=1e-9)
    assert sh["usd_per_million_tokens"] == pytest.approx(b.total_usd / (vol / 1e6), rel=1e-6)
    assert r["apis"][0]["self_host_usd_per_month"] == pytest.approx(sh["usd_per_month"], rel=1e-6)
    assert sh["gpus_billed"] >= sh["replicas"] * sh["gpus_per_replica"]

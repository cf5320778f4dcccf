"""``aitco train`` and ``aitco infer`` price their plan as ``aitco compare`` prices the option.

Issue 35 item 4: the price flags (``--pricing``, ``--provider``, ``--region``,
``--usd-per-gpu-hour``) are the fields of a compare option, and the dollars come from the same
cost path (offer selection, whole instances, goodput, every item): one total for one plan.
"""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest

from aitco.cli.app import main
from aitco.cli.state import Pricing
from aitco.decide.compare import compare
from aitco.decide.scenario import PricingMode, Scenario

PLAN = {"tp": 2, "pp": 1, "micro_batch": 1, "zero": 1, "recompute": "selective"}
TRAIN_FLAGS = [
    "train", "--model", "llama-3.2-1b", "--hardware", "h100-sxm5-80gb", "--gpus", "8",
    "--tokens", "2e9", "--seq-len", "2048", "--global-batch", "128", "--tp", "2", "--pp", "1",
    "--micro-batch", "1", "--zero", "1", "--recompute", "selective", "--json",
]  # fmt: skip


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    assert exc.value.code in (0, None), err
    return json.loads(out)


def _option(mode: str, provider: str | None) -> dict[str, Any]:
    opt = {"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": mode}
    return {**opt, "provider": provider} if provider else opt


def test_pricing_flag_lists_the_scenario_modes() -> None:
    assert [p.value for p in Pricing] == list(get_args(PricingMode))


@pytest.mark.parametrize(
    ("mode", "provider"),
    [("on_demand", None), ("spot", "aws"), ("reserved_1y", "any"), ("owned", None)],
)
def test_train_total_is_compare_total(mode, provider, catalog, capsys) -> None:
    flags = [*TRAIN_FLAGS, "--pricing", mode, *(["--provider", provider] if provider else [])]
    got = _run(flags, capsys)
    scn = Scenario.from_dict(
        {
            "name": "t",
            "workload": {
                "kind": "training", "model": "llama-3.2-1b", "tokens": 2e9, "seq_len": 2048,
                "global_batch": 128, "plan": PLAN,
            },
            "options": [_option(mode, provider)],
        }
    )  # fmt: skip
    b = compare(scn, catalog).options[0]
    assert b.values["feasible"], b.values["infeasible_reasons"]
    assert got["total_usd"] == pytest.approx(b.total_usd, rel=1e-9)
    assert got["tco"]["total_usd"] == pytest.approx(b.total_usd, rel=1e-9)
    assert got["offer_id"] == b.values["offer_id"]
    assert got["priced_wall_clock_h"] == pytest.approx(b.values["wall_clock_h"], rel=1e-9)
    assert [i["name"] for i in got["tco"]["items"]] == [i.name for i in b.items]


def test_train_without_tokens_or_offer_has_no_total(capsys) -> None:
    flags = [f for f in TRAIN_FLAGS if f not in ("--tokens", "2e9")]
    got = _run(flags, capsys)
    assert got["total_usd"] is None
    assert "no --tokens" in got["price_source"]
    # compare's verdict on the offer: the home type of 16 H100s sells no spot price
    got = _run(
        ["train", "--model", "gpt2-124m", "--hardware", "h100-sxm5-80gb", "--gpus", "16",
         "--tokens", "1e9", "--pricing", "spot", "--json"],
        capsys,
    )  # fmt: skip
    assert got["total_usd"] is None
    assert got["price_source"].startswith("price: none, infeasible (no eligible offer")


@pytest.mark.parametrize(("mode", "provider"), [("spot", "any"), ("owned", None)])
def test_infer_total_is_compare_total(mode, provider, catalog, capsys) -> None:
    """A closed-loop service (no rescaling): infer's month equals compare's month."""
    flags = [
        "infer", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb", "--concurrency", "16",
        "--pricing", mode, *(["--provider", provider] if provider else []), "--json",
    ]  # fmt: skip
    got = _run(flags, capsys)
    opt = {**_option(mode, provider), "gpus": 1}
    scn = Scenario.from_dict(
        {
            "name": "i",
            "workload": {"kind": "inference", "model": "llama-3-8b", "concurrency": 16},
            "options": [opt],
        }
    )
    b = compare(scn, catalog).options[0]
    assert b.values["feasible"], b.values["infeasible_reasons"]
    assert got["tco"]["total_usd"] == pytest.approx(b.total_usd, rel=1e-9)
    assert got["usd_per_month"] == pytest.approx(b.values["usd_per_month"], rel=1e-9)
    assert got["offer_id"] == b.values["offer_id"]

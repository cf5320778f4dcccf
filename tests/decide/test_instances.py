"""Offers are instances, one provider per option, feasibility (issue 12)."""

from __future__ import annotations

import json

import pytest

from aitco.catalog.loader import load_catalog
from aitco.cli.app import main
from aitco.decide.compare import compare
from aitco.decide.optimize import optimize
from aitco.decide.scenario import Scenario
from aitco.decide.sweep import SweepSpec

TRAIN = {
    "kind": "training",
    "model": "gpt2-124m",
    "tokens": 2e9,
    "seq_len": 1024,
    "global_batch": 64,
}


@pytest.fixture(scope="module")
def cat():
    return load_catalog(use_env=False)


def _run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, _ = capsys.readouterr()
    assert exc.value.code in (0, None)
    return json.loads(out)


def test_cli_one_gpu_a100_on_aws_bills_an_8_gpu_instance_per_hour(tmp_path, capsys, cat):
    p = tmp_path / "one.yaml"
    p.write_text(
        "name: one\n"
        "workload: {kind: training, model: gpt2-124m, tokens: 2.0e9, seq_len: 1024,"
        " global_batch: 64}\n"
        "options:\n"
        "  - {hardware: a100-sxm4-80gb, gpus: 1, pricing: on_demand, provider: aws}\n"
    )
    d = _run_json(["compare", str(p), "--json"], capsys)
    o = d["options"][0]
    instance_h = max(
        pr.usd_per_hour for pr in cat.offers[o["offer_id"]].prices if pr.term == "on_demand"
    )
    assert cat.offers[o["offer_id"]].accelerators_per_instance == 8
    assert (o["instances"], o["gpus_billed"], o["feasible"]) == (1, 8, True)
    assert o["total_usd"] / o["wall_clock_h"] >= instance_h
    assert "idle_instance_gpus" in {i["name"] for i in o["items"]}


def test_compare_json_options_carry_instance_and_feasibility_keys(capsys):
    d = _run_json(["compare", "--json"], capsys)
    for o in d["options"]:
        for k in ("feasible", "infeasible_reasons", "instances", "gpus_billed", "offer_id"):
            assert k in o, k
        assert o["total_usd"] == pytest.approx(sum(i["usd"] for i in o["items"]), rel=1e-12)
    infeasible = {o["name"] for o in d["options"] if not o["feasible"]}
    for c in d["comparisons"]:
        assert c["cheapest"] not in infeasible
        assert c["fastest"] not in infeasible


def test_infeasible_option_is_never_cheapest_or_fastest(cat):
    # llama-3-8b full training on one RTX 4090 does not fit; it is the cheapest by dollars
    scn = Scenario.from_dict(
        {
            "name": "fit",
            "workload": {**TRAIN, "model": "llama-3-8b", "tokens": 1e8, "global_batch": 8},
            "options": [
                {
                    "hardware": "rtx-4090",
                    "gpus": 1,
                    "pricing": "on_demand",
                    "usd_per_gpu_hour": 0.01,
                },
                {
                    "hardware": "h100-sxm5-80gb",
                    "gpus": 8,
                    "pricing": "on_demand",
                    "usd_per_gpu_hour": 3.0,
                },
            ],
        }
    )
    comp = compare(scn, cat)
    bad = comp.options[0]
    assert bad.values["feasible"] is False
    # the engine's one verdict with its reason (issue 31), and no throughput or cost
    assert "GB over the 24 GB available" in bad.values["infeasible_reasons"][0]
    assert bad.values["tokens_per_s"] is None
    assert bad.total_usd != bad.total_usd  # NaN: no cost for an option that cannot run
    assert comp.cheapest == comp.options[1].name
    assert comp.fastest == comp.options[1].name


def test_128_h100_optimize_never_on_a_single_gpu_offer(cat):
    spec = SweepSpec.from_dict(
        {
            "kind": "training",
            "workload": {
                "model": "gpt2-1.02b",
                "tokens": 2e10,
                "seq_len": 2048,
                "global_batch": 512,
                "precision": "bf16",
            },
            "option": {"hardware": "h100-sxm5-80gb", "gpus": 128, "provider": "any"},
            "grid": {"pricing": ["on_demand", "spot"], "tp": [1, 2], "micro_batch": [1, 2]},
            "top_k": 20,
        }
    )
    out = optimize(spec, cat)
    assert out["status"] == "optimal"
    for row in out["top"]:
        o = cat.offers[row["offer_id"]]
        assert o.accelerators_per_instance > 1
        assert o.cluster_network not in (None, "none")
        assert row["gpus_billed"] >= 128
    # compare prices the same plan on the same offer
    best = out["best"]
    scn = Scenario.from_dict(
        {
            "name": "same",
            "workload": {
                **TRAIN,
                "model": "gpt2-1.02b",
                "tokens": 2e10,
                "seq_len": 2048,
                "global_batch": 512,
            },
            "options": [
                {
                    "hardware": "h100-sxm5-80gb",
                    "gpus": 128,
                    "pricing": best["pricing"],
                    "provider": "any",
                }
            ],
        }
    )
    o = compare(scn, cat).options[0]
    assert o.values["offer_id"] == best["offer_id"]
    assert o.values["gpus_billed"] == best["gpus_billed"]
    assert o.values["price_usd_per_gpu_h"] == pytest.approx(best["price_usd_per_gpu_h"], rel=1e-12)


def test_committed_term_is_billed_whole_less_reuse(cat):
    def run(reuse: float):
        scn = Scenario.from_dict(
            {
                "name": "ri",
                "workload": TRAIN,
                "options": [
                    {
                        "hardware": "h100-sxm5-80gb",
                        "gpus": 8,
                        "pricing": "reserved_1y",
                        "offer": "gcp-a3-highgpu-8g",
                        "committed_reuse_fraction": reuse,
                    }
                ],
            }
        )
        return compare(scn, cat).options[0]

    full, half = run(0.0), run(0.5)
    per_gpu_h = full.values["price_usd_per_gpu_h"]
    # a short job on a 1-year commitment pays (nearly) the whole year
    assert full.total_usd >= 0.99 * 8 * per_gpu_h * 8766.0
    unused = full.usd("committed_term_unused")
    assert half.usd("committed_term_unused") == pytest.approx(unused / 2, rel=1e-9)


def test_scaled_service_label_shows_the_priced_count(cat):
    scn = Scenario.from_dict(
        {
            "name": "svc",
            "workload": {
                "kind": "inference",
                "model": "llama-3-8b",
                "input_tokens": 512,
                "output_tokens": 256,
                "qps": 20,
                "months": 1,
            },
            "options": [{"hardware": "l4", "gpus": 1, "pricing": "on_demand"}],
        }
    )
    o = compare(scn, cat).options[0]
    if o.gpus > 1:
        assert f"x{o.gpus}" in o.name
    assert o.values["gpus_billed"] >= o.gpus


def test_sources_cite_every_cluster_network(cat):
    for o in cat.offers.values():
        if o.cluster_network is not None:
            assert "cluster_network" in o.provenance, o.id


def test_cli_table_marks_an_option_without_an_eligible_offer(tmp_path, capsys):
    # AWS's cheapest on-demand shape for one H100 (p5.4xlarge) sells no spot price (48 L40S,
    # the former example, tie on price between two shapes: the one that sells spot wins now)
    p = tmp_path / "spot.yaml"
    p.write_text(
        "name: spot\n"
        "workload: {kind: training, model: gpt2-124m, tokens: 2.0e8, seq_len: 1024,"
        " global_batch: 8}\n"
        "options:\n"
        "  - {hardware: h100-sxm5-80gb, gpus: 1, pricing: spot, provider: aws}\n"
        "  - {hardware: h100-sxm5-80gb, gpus: 1, pricing: on_demand, provider: aws}\n"
    )
    d = _run_json(["compare", str(p), "--json"], capsys)
    spot, od = d["options"]
    assert spot["feasible"] is False
    assert any("sells no spot price" in r for r in spot["infeasible_reasons"])
    assert d["cheapest"] == od["name"]
    with pytest.raises(SystemExit):
        main(["compare", str(p), "--explain"])
    out, _ = capsys.readouterr()
    assert "infeasible" in out
    assert "sells no spot price" in out


def test_inference_option_that_does_not_fit_is_infeasible_not_an_error(cat):
    """One verdict (issue 31): a serving option whose model does not fit is infeasible with the
    engine's reason, beside the options that run, instead of failing the whole comparison."""
    scn = Scenario.from_dict(
        {
            "name": "serve-fit",
            "workload": {"kind": "inference", "model": "llama-3-70b", "qps": 1},
            "options": [
                {"hardware": "l4", "gpus": 1, "pricing": "on_demand", "usd_per_gpu_hour": 0.5},
                {"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand",
                 "usd_per_gpu_hour": 3.0},
            ],
        }
    )  # fmt: skip
    comp = compare(scn, cat)
    bad, good = comp.options
    assert bad.values["feasible"] is False
    assert "usable" in bad.values["infeasible_reasons"][0]
    assert bad.total_usd != bad.total_usd  # NaN: no cost
    assert good.values.get("feasible", True) is True
    assert comp.cheapest == good.name

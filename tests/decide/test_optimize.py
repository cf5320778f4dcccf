from __future__ import annotations

import json
from itertools import pairwise

import numpy as np
import pytest

from aitco.cli.app import main
from aitco.decide.optimize import infeasible_message, optimize, with_constraints
from aitco.decide.sweep import SweepSpec, build_plan, evaluate_all
from aitco.units import HOURS_PER_MONTH

SPEC = {
    "kind": "training",
    "workload": {"model": "gpt2-124m", "tokens": 1e10, "seq_len": 1024, "global_batch": 512},
    "grid": {
        "hardware": ["h100-sxm5-80gb", "a100-sxm4-80gb", "l40s"],
        "gpus": [8, 16, 32, 64, 128],
        "pricing": ["on_demand", "spot", "owned"],
        "tp": [1, 2, 4],
        "pp": [1, 2],
        "recompute": ["selective", "full"],
    },
    "chunk_size": 500,
}


def _brute(catalog, spec):
    plan = build_plan(spec, catalog)
    idx = np.arange(plan.n_configs)
    m = evaluate_all(plan, idx)
    return plan, idx, m


def test_cheapest_feasible_matches_brute_force(catalog):
    # a deadline that only a few plans meet (the fastest take about 0.5 h: 19,073 steps each
    # pay the fitted per-step overhead of the training model)
    limit_h = 0.6
    spec = with_constraints(SweepSpec.from_dict(SPEC), max_wall_clock_h=limit_h, max_gpus=64)
    out = optimize(spec, catalog)
    assert out["status"] == "optimal"
    _, idx, m = _brute(catalog, spec)
    ok = (m["reason"] == 0) & (m["wall_clock_h"] <= limit_h) & (m["total_gpus"] <= 64)
    assert 0 < ok.sum() < (m["reason"] == 0).sum()  # the deadline binds
    cost = np.where(ok, m["total_usd"], np.inf)
    best = int(np.lexsort((idx, cost))[0])
    assert out["best"]["config"] == best
    assert out["best"]["wall_clock_h"] <= limit_h
    assert out["best"]["gpus"] <= 64
    # the front is sorted by cost with strictly falling time
    front = out["pareto"]
    assert all(a["total_usd"] <= b["total_usd"] for a, b in pairwise(front))
    assert all(a["wall_clock_h"] > b["wall_clock_h"] for a, b in pairwise(front))


def test_allowed_pricing_filters(catalog):
    spec = with_constraints(SweepSpec.from_dict(SPEC), allowed_pricing=["on_demand"])
    out = optimize(spec, catalog)
    assert out["status"] == "optimal"
    assert {r["pricing"] for r in out["top"]} == {"on_demand"}


def test_infeasible_names_binding_constraint_and_closest(catalog):
    spec = with_constraints(SweepSpec.from_dict(SPEC), max_wall_clock_h=1e-4, max_total_usd=1e6)
    out = optimize(spec, catalog)
    assert out["status"] == "infeasible"
    assert out["best"] is None
    assert out["binding"][0]["constraint"] == "max_wall_clock_h"
    assert out["binding"][0]["plans_failing_only_this"] == out["valid"]
    assert out["closest"]
    c = out["closest"][0]
    _, _, m = _brute(catalog, spec)
    ok = m["reason"] == 0
    assert c["wall_clock_h"] == pytest.approx(m["wall_clock_h"][ok].min())
    msg = infeasible_message(out)
    assert "max_wall_clock_h" in msg
    assert "closest plan" in msg


def test_optimize_cli_infeasible_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["optimize", "examples/sweep_training.yaml", "--deadline-h", "0.0001", "--json"])
    out, _ = capsys.readouterr()
    assert exc.value.code == 2
    d = json.loads(out)
    assert d["status"] == "infeasible"
    assert d["binding"][0]["constraint"] == "max_wall_clock_h"
    with pytest.raises(SystemExit) as exc:
        main(["optimize", "examples/sweep_training.yaml", "--deadline-h", "1000", "--json"])
    out, _ = capsys.readouterr()
    assert exc.value.code == 0
    assert json.loads(out)["status"] == "optimal"


def test_serving_optimize_checks_p99(catalog):
    spec = SweepSpec.from_dict(
        {
            "kind": "serving",
            "workload": {
                "model": "llama-3.1-8b",
                "input_tokens": 512,
                "output_tokens": 128,
                "qps": 8,
            },
            "grid": {
                "hardware": ["h100-sxm5-80gb", "l40s"],
                "gpus": [1, 2],
                "batch": [8, 32, 64],
                "precision": ["bf16", "fp8"],
                "pricing": ["on_demand"],
            },
            "top_k": 5,
        }
    )
    spec = with_constraints(spec, max_ttft_s=0.5, max_tpot_s=0.05)
    out = optimize(spec, catalog)
    assert out["p99_checks"]
    if out["status"] == "optimal":
        best = out["best"]
        # the plan best names is the P99-scaled one, priced as compare prices a service
        # (whole instances, every item), not the steady-state row scaled linearly
        assert best["replicas"] == best["replicas_at_p99"] >= best["sweep_replicas"]
        assert best["total_gpus"] == best["replicas"] * best["gpus"]
        assert best["usd_per_h_at_p99"] == best["usd_per_h"]
        assert best["total_usd"] == pytest.approx(best["usd_per_h"] * HOURS_PER_MONTH, rel=1e-9)
        assert best["gpus_billed"] >= best["total_gpus"]
    else:
        assert out["status"] == "infeasible_at_p99"

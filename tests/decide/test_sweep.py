from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aitco.cli.app import main
from aitco.decide import evaluators as ev
from aitco.decide.sweep import SweepSpec, build_plan, decode, evaluate_all, pareto_mask, sweep
from aitco.errors import InputError

GRID = {
    "hardware": ["h100-sxm5-80gb", "a100-sxm4-80gb", "mi300x"],
    "gpus": [8, 16, 32, 64],
    "pricing": ["on_demand", "spot", "owned"],
    "precision": ["bf16", "fp8"],
    "tp": [1, 2, 4, 8],
    "pp": [1, 2],
    "micro_batch": [1, 4],
    "zero": [0, 1, 3],
    "recompute": ["none", "full"],
}


def _spec(**kw):
    d = {
        "kind": "training",
        "workload": {"model": "gpt2-124m", "tokens": 1e10, "seq_len": 1024, "global_batch": 512},
        "grid": GRID,
        "top_k": 7,
        "chunk_size": 1000,
    }
    d.update(kw)
    return SweepSpec.from_dict(d)


def run(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_grid_decoding_is_the_full_product(catalog):
    plan = build_plan(_spec(), catalog)
    n = int(np.prod([len(v) for v in GRID.values()]))
    assert plan.n_configs == n
    v = decode(plan, np.arange(n))
    hw = plan.dims[0]
    seen = set(
        zip(
            v["option.hardware"].tolist(),
            v["option.gpus"].tolist(),
            v["workload.plan.tp"].tolist(),
            v["workload.plan.recompute"].tolist(),
            v["option.pricing"].tolist(),
            strict=True,
        )
    )
    assert len(seen) == 3 * 4 * 4 * 2 * 3
    assert hw.labels == GRID["hardware"]


def test_vectorised_matches_per_configuration_loop(catalog):
    """Evaluating one configuration at a time gives the same numbers as the whole chunk."""
    plan = build_plan(_spec(), catalog)
    idx = np.arange(0, plan.n_configs, 97)
    vals = decode(plan, idx)
    full = plan.evaluator.evaluate(vals)
    for j in range(40):
        one = plan.evaluator.evaluate(
            {k: v if v.shape[0] == 1 else v[j : j + 1] for k, v in vals.items()}
        )
        assert one["reason"][0] == full["reason"][j]
        if one["reason"][0] == 0:
            pos = int(np.flatnonzero(full["rows"] == j)[0])
            for k in ("total_usd", "step_time_s", "memory_per_gpu_gb"):
                np.testing.assert_allclose(one[k][0], full[k][pos], rtol=1e-12)


def test_top_k_and_pareto_match_brute_force(catalog):
    spec = _spec()
    res = sweep(spec, catalog)
    plan = res.plan
    idx = np.arange(plan.n_configs)
    m = evaluate_all(plan, idx)
    ok = m["reason"] == 0
    cost = np.where(ok, m["total_usd"], np.inf)
    order = np.lexsort((idx, cost))[: spec.top_k]
    assert res.top["config"].tolist() == order.tolist()
    # Pareto by brute force: not dominated by any valid point
    fi = np.flatnonzero(ok)
    x, y = m["total_usd"][fi], m["wall_clock_h"][fi]
    front = set(fi[pareto_mask(x, y, fi)].tolist())
    for j in fi[:: max(1, fi.size // 300)]:
        dominated = np.any(
            (x <= m["total_usd"][j])
            & (y <= m["wall_clock_h"][j])
            & ((x < m["total_usd"][j]) | (y < m["wall_clock_h"][j]))
        )
        if dominated:
            assert j not in front
    fx = m["total_usd"][list(front)]
    fy = m["wall_clock_h"][list(front)]
    o = np.argsort(fx)
    assert np.all(np.diff(fy[o]) < 0)  # along the front, more money buys less time
    assert set(res.pareto["config"].tolist()) == front


def test_chunking_does_not_change_the_result(catalog):
    a = sweep(_spec(chunk_size=1000), catalog)
    b = sweep(_spec(chunk_size=100_000), catalog)
    pd.testing.assert_frame_equal(a.top, b.top)
    pd.testing.assert_frame_equal(a.pareto, b.pareto)
    assert a.partial.valid == b.partial.valid


def test_dask_backend_identical_to_local(catalog):
    pytest.importorskip("dask.distributed")
    spec = _spec(chunk_size=3000)
    loc = sweep(spec, catalog, backend="local")
    dsk = sweep(spec, catalog, backend="dask", workers=2)
    pd.testing.assert_frame_equal(loc.top, dsk.top)
    pd.testing.assert_frame_equal(loc.pareto, dsk.pareto)
    assert loc.partial.evaluated == dsk.partial.evaluated
    assert loc.partial.reasons == dsk.partial.reasons


def test_random_sample_is_seeded(catalog):
    a = sweep(_spec(sample=5000, seed=3), catalog)
    b = sweep(_spec(sample=5000, seed=3), catalog)
    c = sweep(_spec(sample=5000, seed=4), catalog)
    assert a.partial.evaluated == 5000
    pd.testing.assert_frame_equal(a.top, b.top)
    assert (
        a.top["config"].tolist() != c.top["config"].tolist() or a.partial.valid != c.partial.valid
    )


def test_parquet_all_rows(catalog, tmp_path):
    res = sweep(_spec(chunk_size=5000), catalog, parquet_dir=str(tmp_path / "rows"))
    df = pd.read_parquet(tmp_path / "rows")
    assert len(df) == res.plan.n_configs
    assert int(df["valid"].sum()) == res.partial.valid
    best = df[df["valid"]].sort_values(["total_usd", "config"]).iloc[0]
    assert best["config"] == res.top["config"].iloc[0]


def test_more_gpus_never_cheaper_per_token_on_same_plan(catalog):
    """Physics sanity: same plan, same price -> doubling GPUs never lowers step time x GPUs."""
    res = sweep(_spec(), catalog)
    plan = res.plan
    m = evaluate_all(plan, np.arange(plan.n_configs))
    gh = m["gpu_hours"]
    assert np.all(gh[m["reason"] == 0] > 0)


def test_unknown_key_did_you_mean(catalog):
    with pytest.raises(InputError) as exc:
        build_plan(_spec(grid={**GRID, "gpu": [8]}), catalog)
    assert "did you mean" in str(exc.value)
    assert "option.gpus" in str(exc.value)
    with pytest.raises(InputError, match="did you mean"):
        build_plan(_spec(grid={**GRID, "option.hardwre": ["l4"]}), catalog)


def test_empty_grid_and_bad_values(catalog):
    with pytest.raises(InputError, match="empty"):
        build_plan(_spec(grid={**GRID, "gpus": []}), catalog)
    with pytest.raises(InputError, match="h100-sxm5-80gb"):
        build_plan(_spec(grid={**GRID, "hardware": ["h100-sxm5"]}), catalog)
    with pytest.raises(InputError, match="pricing"):
        build_plan(_spec(grid={**GRID, "pricing": ["cheap"]}), catalog)
    with pytest.raises(InputError, match="metric"):
        build_plan(_spec(objective="total_dollars"), catalog)


def test_sweep_cli_json_and_progress_off(capsys):
    code, out, _ = run(
        ["sweep", "examples/sweep_training.yaml", "--json", "--grid", "gpus=8,16"], capsys
    )
    assert code == 0
    d = json.loads(out)
    assert d["top"]
    assert d["pareto"]
    assert d["evaluated"] == d["n_configs"]
    assert all(r["gpus"] in (8, 16) for r in d["top"])
    code, _, err = run(["sweep", "examples/sweep_training.yaml", "--grid", "gpuz=8"], capsys)
    assert code == 2
    assert "did you mean" in err


def test_serving_sweep(catalog):
    spec = SweepSpec.from_dict(
        {
            "kind": "serving",
            "workload": {
                "model": "gpt2-124m",
                "input_tokens": 512,
                "output_tokens": 256,
                "qps": 20,
            },
            "grid": {
                "hardware": ["h100-sxm5-80gb", "l4", "l40s"],
                "gpus": [1, 2, 4],
                "batch": [1, 8, 32, 128],
                "precision": ["bf16", "fp8"],
            },
        }
    )
    res = sweep(spec, catalog)
    assert res.partial.valid > 0
    top = res.top
    assert (top["usd_per_million_output_tokens"].diff().dropna() >= 0).all()
    # larger batches raise TPOT (more KV traffic) on the same hardware
    plan = res.plan
    m = evaluate_all(plan, np.arange(plan.n_configs))
    v = decode(plan, np.arange(plan.n_configs))
    sel = (
        (v["option.hardware"] == 0)
        & (v["option.gpus"] == 1)
        & (v["workload.precision"] == ev.DTYPES.index("bf16"))
    )
    tp = m["tpot_s"][sel]
    assert np.all(np.diff(tp) >= 0)


def test_range_digits_match_division(catalog):
    from aitco.decide.sweep import _range_digits

    plan = build_plan(_spec(), catalog)
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = int(rng.integers(0, plan.n_configs - 2))
        n = int(rng.integers(2, plan.n_configs - a + 1))
        idx = np.arange(a, a + n)
        rd = _range_digits(plan, idx)
        for d, s in zip(plan.dims, plan.strides, strict=True):
            if d.size > 1:
                np.testing.assert_array_equal(rd[d.key], (idx // s) % d.size)


def test_engine_evaluator_equals_estimate_training(catalog):
    """The sweep's engine path gives exactly what `aitco train` gives for the same plan."""
    from aitco.decide.evaluators import RECOMPUTE
    from aitco.perf.training import estimate_training

    spec = SweepSpec.from_dict(
        {
            "kind": "training",
            "workload": {
                "model": "llama-3.2-1b",
                "tokens": 1e10,
                "seq_len": 2048,
                "global_batch": 256,
            },
            "grid": {
                "hardware": ["h100-sxm5-80gb", "a100-sxm4-80gb"],
                "gpus": [8, 16],
                "tp": [1, 2],
                "pp": [1, 2],
                "micro_batch": [1, 2],
                "zero": [0, 3],
                "recompute": ["none", "full"],
            },
        }
    )
    plan = build_plan(spec, catalog)
    idx = np.arange(plan.n_configs)
    m = evaluate_all(plan, idx)
    pos = {
        d.key: p
        for d, p in zip(plan.dims, [decode(plan, idx)[d.key] for d in plan.dims], strict=True)
    }
    ok = np.flatnonzero(m["reason"] == 0)
    assert ok.size > 50
    model = catalog.resolve_model("llama-3.2-1b")
    for j in ok[:: max(1, ok.size // 10)]:
        v = {k: (a[j] if a.shape[0] > 1 else a[0]) for k, a in pos.items()}
        acc, sysm = catalog.hardware(spec.grid["hardware"][int(v["option.hardware"])])
        # a rented plan runs on the fabric of the offer the sweep billed (as compare prices it)
        offer_sys = plan.evaluator.offer_systems[int(m["offer_code"][j])]
        r = estimate_training(
            model,
            acc,
            offer_sys or sysm,
            int(v["option.gpus"]),
            seq_len=2048,
            global_batch=256,
            tokens=1e10,
            plan={
                "tp": int(v["workload.plan.tp"]),
                "pp": int(v["workload.plan.pp"]),
                "micro_batch": int(v["workload.plan.micro_batch"]),
                "zero": int(v["workload.plan.zero"]),
                "recompute": RECOMPUTE[int(v["workload.plan.recompute"])],
                "vp": 1,
            },
        )
        assert m["step_time_s"][j] == pytest.approx(r.values["step_time_s"], rel=1e-9)
        assert m["memory_per_gpu_gb"][j] == pytest.approx(r.values["memory_per_gpu_gb"], rel=1e-9)


def test_fast_evaluator_option(catalog):
    res = sweep(_spec(evaluator="fast"), catalog)
    assert res.partial.valid > 0
    assert type(res.plan.evaluator).__name__ == "TrainingEvaluator"


def test_engine_serving_evaluator_equals_estimate_inference(catalog):
    from aitco.perf.inference import estimate_inference
    from aitco.units import DTYPES

    spec = SweepSpec.from_dict(
        {
            "kind": "serving",
            "workload": {"model": "llama-3.1-8b", "input_tokens": 1024, "output_tokens": 256},
            "grid": {
                "hardware": ["h100-sxm5-80gb", "l40s"],
                "gpus": [1, 2],
                "batch": [1, 8, 64],
                "precision": ["bf16", "fp8", "int4"],
            },
        }
    )
    plan = build_plan(spec, catalog)
    idx = np.arange(plan.n_configs)
    m = evaluate_all(plan, idx)
    v = decode(plan, idx)
    ok = np.flatnonzero(m["reason"] == 0)
    assert ok.size > 20
    model = catalog.resolve_model("llama-3.1-8b")
    for j in ok[::5]:
        acc, sysm = catalog.hardware(spec.grid["hardware"][int(v["option.hardware"][j])])
        g, b = int(v["option.gpus"][j]), int(v["workload.batch"][j])
        r = estimate_inference(
            model,
            acc,
            sysm,
            g,
            precision=DTYPES[int(v["workload.precision"][j])],
            input_tokens=1024,
            output_tokens=256,
            concurrency=b,
            tp=g,
        )
        assert m["tpot_s"][j] == pytest.approx(r.values["tpot_s"], rel=1e-9)
        assert m["ttft_s"][j] == pytest.approx(r.values["ttft_s"], rel=1e-9)


def test_unknown_spec_keys_suggest(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text("sweep:\n  objectve: total_usd\n")
    code, _, err = run(["sweep", str(f)], capsys)
    assert code == 2
    assert "did you mean 'objective'" in err
    f.write_text("sweep:\n  constraints: {max_wallclock_h: 3}\n")
    code, _, err = run(["sweep", str(f)], capsys)
    assert code == 2
    assert "max_wall_clock_h" in err


def test_owned_capital_price_matches_compare(catalog):
    """The sweep's owned accelerator-hour is compare's capital price; energy is an item."""
    from aitco.decide.compare import compare
    from aitco.decide.evaluators import PRICING_MODES, hardware_table
    from aitco.decide.scenario import Scenario

    scn = Scenario.from_dict(
        {
            "name": "t",
            "workload": {
                "kind": "training",
                "model": "llama-3-8b",
                "tokens": 1e10,
                "seq_len": 4096,
                "global_batch": 512,
            },
            "options": [
                {"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "owned", "region": "us"}
            ],
        }
    )
    opt = compare(scn, catalog).options[0]
    table = hardware_table(catalog, ["h100-sxm5-80gb"], ["us"])
    owned = table.price[0, PRICING_MODES.index("owned"), 0]
    assert owned == pytest.approx(opt.values["price_usd_per_gpu_h"], rel=1e-12)
    # the energy is not folded into the price: compare bills it as power items
    assert sum(i.usd for i in opt.items if i.category == "power") > 0

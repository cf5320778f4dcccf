"""The ``fast`` screens against the engines, formula by formula (issue 34 item 3).

One performance model: what the screens take from the engines' relations must equal the engine
evaluators' figures exactly (memory per GPU, feasibility, the FLOPs behind MFU, KV bytes); what
they screen (the time) must rank plans as the engines do and read no slower than them, so that
screening never drops a plan the engine would keep for being slow. ``fit_score`` takes its memory
and KV figures from the same relations.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from aitco.decide.evaluators import RECOMPUTE, SCREENED_METRICS, model_table
from aitco.decide.fit_score import fit_score
from aitco.decide.sweep import SweepSpec, build_plan, decode, evaluate_all
from aitco.perf.iteration import weight_bytes
from aitco.perf.kvcache import kv_bytes_per_sequence, kv_cache_bytes
from aitco.perf.params import param_counts
from aitco.perf.training import estimate_training
from aitco.units import GIGA

#: Smallest rank correlation of screened and engine times over the grids below (measured
#: 2026-12-04 on the test library: training 0.94-0.97, serving TPOT 0.79-0.94, TTFT 0.95).
MIN_RANK_CORRELATION = {"step_time_s": 0.9, "ttft_s": 0.9, "tpot_s": 0.75}

TRAIN_GRID = {
    "hardware": ["h100-sxm5-80gb", "a100-sxm4-80gb"],
    "gpus": [8, 16, 64],
    "tp": [1, 2, 8],
    "pp": [1, 2],
    "micro_batch": [1, 2],
    "zero": [0, 1, 3],
    "recompute": ["none", "selective", "full"],
}
SERVE_GRID = {
    "hardware": ["h100-sxm5-80gb", "l40s"],
    "gpus": [1, 2, 4],
    "batch": [1, 16, 128],
    "input_tokens": [512, 8192],
    "output_tokens": [256],
}


def _pair(catalog, kind: str, model: str, grid: dict) -> tuple[dict, dict, dict]:
    """Screen and engine metrics of every configuration of one grid, and the decoded codes."""
    workload = {"model": model}
    if kind == "training":
        workload |= {"tokens": 1e11, "seq_len": 4096, "global_batch": 512}
    out = []
    for evaluator in ("fast", "engine"):
        spec = SweepSpec.from_dict(
            {"kind": kind, "evaluator": evaluator, "workload": workload, "grid": grid}
        )
        plan = build_plan(spec, catalog)
        idx = np.arange(plan.n_configs)
        out.append(evaluate_all(plan, idx))
    return out[0], out[1], decode(plan, idx)


@pytest.fixture(scope="module", params=["llama-3-8b", "mixtral-8x7b", "gemma-2-9b"])
def training(request, catalog):
    return _pair(catalog, "training", request.param, TRAIN_GRID)


@pytest.fixture(scope="module", params=["llama-3.1-8b", "llama-3.1-70b", "gemma-2-9b"])
def serving(request, catalog):
    return _pair(catalog, "serving", request.param, SERVE_GRID)


def _valid(fast: dict, engine: dict) -> np.ndarray:
    return (fast["reason"] == 0) & (engine["reason"] == 0)


# --------------------------------------------------------------------------------------------
# training


def test_training_memory_and_feasibility_are_the_engines(training) -> None:
    """Memory per GPU (:func:`training_memory_bytes`) and ``fits``: the same plans, the same GB."""
    fast, engine, _ = training
    np.testing.assert_array_equal(fast["reason"], engine["reason"])
    ok = _valid(fast, engine)
    assert ok.sum() > 50
    np.testing.assert_allclose(
        fast["memory_per_gpu_gb"][ok], engine["memory_per_gpu_gb"][ok], rtol=1e-12
    )


def test_training_flops_behind_mfu_are_the_engines(training) -> None:
    """MFU x step time is the model FLOPs of a step over the peak: equal on both sides."""
    fast, engine, _ = training
    ok = _valid(fast, engine)
    np.testing.assert_allclose(
        fast["mfu"][ok] * fast["step_time_s"][ok],
        engine["mfu"][ok] * engine["step_time_s"][ok],
        rtol=1e-9,
    )


def test_training_step_time_screen_ranks_as_the_engine_and_is_optimistic(training) -> None:
    fast, engine, _ = training
    ok = _valid(fast, engine)
    f, e = fast["step_time_s"][ok], engine["step_time_s"][ok]
    assert np.all(f <= e * (1.0 + 1e-9)), float(np.max(f / e))
    assert spearmanr(f, e).statistic >= MIN_RANK_CORRELATION["step_time_s"]


def test_training_cost_follows_the_screened_hours(training) -> None:
    """The dollars are compare's items on the screened hours: dearer where the engine is slower."""
    fast, engine, _ = training
    ok = _valid(fast, engine)
    assert np.all(fast["total_usd"][ok] <= engine["total_usd"][ok] * (1.0 + 1e-9))
    for k in SCREENED_METRICS["training"]:
        assert k in fast


def test_engine_training_evaluator_memory_is_aitco_train(catalog) -> None:
    """The reference of the tests above is ``aitco train``'s own figure for the plan."""
    fast, _, codes = _pair(catalog, "training", "llama-3-8b", TRAIN_GRID)
    model = catalog.resolve_model("llama-3-8b")
    ok = np.flatnonzero(fast["reason"] == 0)
    for j in ok[:: max(1, ok.size // 5)]:
        v = {k: int(a[j] if a.shape[0] > 1 else a[0]) for k, a in codes.items()}
        acc, sysm = catalog.hardware(TRAIN_GRID["hardware"][v["option.hardware"]])
        r = estimate_training(
            model, acc, sysm, v["option.gpus"], seq_len=4096, global_batch=512, tokens=1e11,
            plan={
                "tp": v["workload.plan.tp"], "pp": v["workload.plan.pp"],
                "micro_batch": v["workload.plan.micro_batch"], "zero": v["workload.plan.zero"],
                "recompute": RECOMPUTE[v["workload.plan.recompute"]], "vp": 1,
            },
        )  # fmt: skip
        assert fast["memory_per_gpu_gb"][j] == pytest.approx(
            r.values["memory_per_gpu_gb"], rel=1e-9
        )


# --------------------------------------------------------------------------------------------
# serving


def test_serving_memory_and_admission_are_the_engines(serving) -> None:
    """The memory plan and KV capacity decide validity; the memory figure is the engine's."""
    fast, engine, _ = serving
    np.testing.assert_array_equal(fast["reason"], engine["reason"])
    ok = _valid(fast, engine)
    assert ok.sum() > 5
    np.testing.assert_allclose(
        fast["memory_per_gpu_gb"][ok], engine["memory_per_gpu_gb"][ok], rtol=1e-12
    )


@pytest.mark.parametrize("metric", ["ttft_s", "tpot_s"])
def test_serving_latency_screens_rank_as_the_engine(serving, metric: str) -> None:
    fast, engine, _ = serving
    ok = _valid(fast, engine)
    assert (
        spearmanr(fast[metric][ok], engine[metric][ok]).statistic >= (MIN_RANK_CORRELATION[metric])
    )
    assert metric in SCREENED_METRICS["serving"]


@pytest.mark.parametrize("model_id", ["llama-3.1-8b", "gemma-2-9b", "deepseek-v3", "mixtral-8x7b"])
@pytest.mark.parametrize("context", [1, 1000, 4096, 32768])
def test_kv_bytes_on_arrays_are_the_engines(catalog, model_id: str, context: int) -> None:
    """The screen's KV bytes (model-table arrays) equal the engine's, windows and MLA included."""
    model = catalog.resolve_model(model_id)
    mt = model_table([model])
    got = kv_cache_bytes(
        mt.kv_elements, mt.n_layers, mt.kv_window_layers, mt.kv_window, float(context), 2.0
    )
    assert float(got[0]) == pytest.approx(float(kv_bytes_per_sequence(model, context, "bf16")))


def test_sliding_windows_cap_the_kv_cache(catalog) -> None:
    """Gemma 2 alternates 4k-window layers: past the window its cache grows at half the rate."""
    gemma = catalog.resolve_model("gemma-2-9b")
    assert gemma.sliding_window
    w = gemma.sliding_window
    full = kv_bytes_per_sequence(gemma, 2 * w) - kv_bytes_per_sequence(gemma, w)
    below = kv_bytes_per_sequence(gemma, w) - kv_bytes_per_sequence(gemma, 0)
    assert float(full) == pytest.approx(float(below) / 2.0)


# --------------------------------------------------------------------------------------------
# fit_score


def test_fit_score_training_memory_is_aitco_train(catalog) -> None:
    """ZeRO-3 over the GPUs with selective recomputation, as ``aitco train`` sizes that plan."""
    r = fit_score(catalog, "llama-3-8b", "h100-sxm5-80gb", kind="training", gpus=8, seq_len=4096)
    model = catalog.resolve_model("llama-3-8b")
    acc, sysm = catalog.hardware("h100-sxm5-80gb")
    t = estimate_training(
        model, acc, sysm, 8, seq_len=4096, global_batch=8, tokens=1e9,
        plan={"tp": 1, "pp": 1, "micro_batch": 1, "zero": 3, "recompute": "selective", "vp": 1},
    )  # fmt: skip
    required = r["dimensions"]["memory_fit"]["values"]["required_gb"]
    assert required / 8 == pytest.approx(t.values["memory_per_gpu_gb"], rel=1e-9)


@pytest.mark.parametrize("model_id", ["llama-3.1-8b", "gemma-2-9b"])
def test_fit_score_serving_memory_is_weights_plus_the_engines_kv(catalog, model_id: str) -> None:
    r = fit_score(catalog, model_id, "h100-sxm5-80gb", input_tokens=16000, output_tokens=384)
    model = catalog.resolve_model(model_id)
    weights = weight_bytes(model, "bf16", "bf16").total(0)
    kv = 32 * float(kv_bytes_per_sequence(model, 16384, "bf16"))
    required = r["dimensions"]["memory_fit"]["values"]["required_gb"]
    assert required == pytest.approx((weights + kv) / GIGA, rel=1e-12)
    # each decoded token reads its own sequence's KV cache: 2 N_a FLOPs per k(context) bytes
    ceiling = r["dimensions"]["kv_bandwidth"]["values"]["intensity_ceiling"]
    assert ceiling == pytest.approx(2.0 * param_counts(model).active / (kv / 32), rel=1e-12)

"""Properties of the decision layer: finance identities, Pareto/merge invariants, linearity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aitco.decide import roi
from aitco.decide.sweep import SweepSpec, build_plan, evaluate_chunk, merge, pareto_mask
from aitco.limits import MIN_MAGNITUDE

money = st.floats(1.0, 1e7, allow_nan=False, allow_infinity=False)


@given(s=money, c=money, k=st.floats(0.01, 100.0))
def test_roi_is_scale_free(s, c, k):
    assert float(roi.monthly_roi(k * s, k * c)) == pytest.approx(
        float(roi.monthly_roi(s, c)), rel=1e-9
    )


@given(f=money, p=st.floats(0.001, 100.0), m=st.floats(0.01, 1.0))
def test_breakeven_recovers_the_fixed_cost(f, p, m):
    n = float(roi.breakeven_calls_per_month(f, p, m))
    assert n * p * m == pytest.approx(f, rel=1e-9)
    assert float(roi.breakeven_calls_per_month(2 * f, p, m)) == pytest.approx(2 * n, rel=1e-12)


@given(flows=st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=40))
def test_npv_at_zero_rate_is_the_sum(flows):
    assert roi.npv(flows, 0.0) == pytest.approx(sum(flows), rel=1e-9, abs=1e-6)


@given(up=st.floats(1e3, 1e6), net=st.floats(10.0, 1e5), n=st.integers(2, 120))
def test_irr_zeroes_the_npv(up, net, n):
    flows = [-up] + [net] * n
    r = roi.irr(flows)
    if r is None:
        assert net * n <= up * 1.0000001 or r is None
        return
    assert abs(roi.npv(flows, r)) <= 1e-6 * up


@given(pts=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=60))
def test_pareto_mask_is_exactly_the_non_dominated_set(pts):
    x = np.array([p[0] for p in pts], dtype=float)
    y = np.array([p[1] for p in pts], dtype=float)
    idx = np.arange(x.size)
    keep = set(pareto_mask(x, y, idx).tolist())
    for i in range(x.size):
        dominated = np.any((x <= x[i]) & (y <= y[i]) & ((x < x[i]) | (y < y[i])))
        dup_earlier = np.any((x == x[i]) & (y == y[i]) & (idx < i))
        assert (i in keep) == (not dominated and not dup_earlier)


@dataclass
class RandomEvaluator:
    """A pluggable evaluator with pseudo-random metrics (hash of the configuration)."""

    keys: dict[str, list[Any]] = field(default_factory=dict)
    metrics: tuple[str, ...] = ("total_usd", "wall_clock_h", "total_gpus")

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        n = max(a.shape[0] for a in v.values())
        h = np.zeros(n)
        for i, a in enumerate(v.values()):
            h = h + np.broadcast_to(a, (n,)) * (i + 1.37)
        cost = np.round(np.abs(np.sin(h * 12.9898)) * 50.0)  # many ties on purpose
        time = np.round(np.abs(np.cos(h * 78.233)) * 50.0)
        reason = (np.abs(np.sin(h * 3.1)) > 0.9).astype(np.int64) * 16
        return {"total_usd": cost, "wall_clock_h": time, "total_gpus": np.ones(n), "reason": reason}


def _plan(catalog, chunk_size):
    spec = SweepSpec.from_dict(
        {
            "kind": "training",
            "evaluator": "fast",
            "workload": {"model": "gpt2-124m", "tokens": 1e9, "seq_len": 1024, "global_batch": 64},
            "grid": {
                "gpus": [1, 2, 4, 8, 16],
                "tp": [1, 2],
                "micro_batch": [1, 2, 4],
                "zero": [0, 1, 2, 3],
                "recompute": ["none", "full"],
                "hardware": ["h100-sxm5-80gb", "a100-sxm4-80gb"],
            },
            "top_k": 7,
            "chunk_size": chunk_size,
        }
    )
    ev = RandomEvaluator()
    return build_plan(spec, catalog, evaluator=ev)


@settings(max_examples=25)
@given(chunk=st.integers(7, 500), seed=st.integers(0, 10_000))
def test_merge_order_and_chunking_do_not_change_the_result(catalog, chunk, seed):
    ref_plan = _plan(catalog, 100_000)
    ref = evaluate_chunk(ref_plan, 0)
    plan = _plan(catalog, chunk)
    parts = [evaluate_chunk(plan, c) for c in range(plan.n_chunks)]
    order = np.random.default_rng(seed).permutation(len(parts))
    acc = None
    for i in order:
        acc = merge(plan, acc, parts[int(i)])
    assert acc is not None
    assert acc.top_idx.tolist() == merge(ref_plan, None, ref).top_idx.tolist()
    assert sorted(acc.front_idx.tolist()) == sorted(ref.front_idx.tolist())
    assert acc.valid == ref.valid


@given(k=st.floats(0.1, 10.0))
def test_sweep_cost_is_linear_in_price(catalog, k):
    from aitco.decide.sweep import evaluate_all

    def cost(mult):
        spec = SweepSpec.from_dict(
            {
                "kind": "training",
                "workload": {
                    "model": "gpt2-124m",
                    "tokens": 1e9,
                    "seq_len": 1024,
                    "global_batch": 64,
                },
                "grid": {"gpus": [8, 16], "tp": [1, 2], "hardware": ["h100-sxm5-80gb"]},
                "prices": {"h100-sxm5-80gb": {"on_demand": 2.0 * mult}},
            }
        )
        plan = build_plan(spec, catalog)
        return evaluate_all(plan, np.arange(plan.n_configs))["total_usd"]

    # affine, not linear: the items compare adds (ops staff, incidents, storage) do not scale
    # with the accelerator price; the price-driven part does, exactly
    t1, t2, tk = cost(1.0), cost(2.0), cost(k)
    ok = np.isfinite(t1)
    scale = 1e-12 * np.abs(tk[ok]).max(initial=1.0)
    assert np.allclose(tk[ok] - t1[ok], (k - 1.0) * (t2[ok] - t1[ok]), rtol=1e-12, atol=scale)
    assert np.all(t2[ok] > t1[ok])


@given(
    shift=st.floats(-0.05, 0.05),
    g=st.floats(-0.05, 0.05).filter(lambda x: x == 0 or abs(x) >= MIN_MAGNITUDE),
)
def test_roi_series_npv_falls_with_cost(shift, g):
    base = dict(
        horizon_months=24,
        monthly_savings_usd=1e5,
        monthly_cost_usd=3e4,
        traffic_growth_per_month=g,
        upfront_usd=2e5,
        discount_rate=0.1,
    )
    lo = roi.roi_series(roi.RoiInputs.from_dict(base))["npv_usd"]
    hi = roi.roi_series(
        roi.RoiInputs.from_dict({**base, "monthly_cost_usd": 3e4 * (1 + abs(shift) + 1e-3)})
    )["npv_usd"]
    assert hi < lo

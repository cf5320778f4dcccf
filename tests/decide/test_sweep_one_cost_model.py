"""Every sweep evaluator bills through compare's item functions; no factor has a silent default.

Issue 12 item 1: the ``fast`` evaluators keep their compact performance models but have no cost
model of their own: for the same plan, productive hours and offer they give the dollars of the
shared items (``ItemPricing``), the ones the engine evaluator and ``aitco compare`` use. A
catalog factor the sweep needs and the catalog lacks is an error that names it.
"""

from __future__ import annotations

import numpy as np
import pytest

from aitco.catalog.loader import Catalog
from aitco.decide import evaluators as ev
from aitco.decide.sweep import SweepSpec, build_plan, chunk_indices, decode, sweep
from aitco.errors import AitcoError
from aitco.units import HOURS_PER_MONTH

TRAIN = {
    "kind": "training",
    "workload": {"model": "llama-3-8b", "tokens": 1e10, "seq_len": 2048, "global_batch": 256},
    "grid": {
        "option.hardware": ["h100-sxm5-80gb", "a100-sxm4-80gb"],
        "option.gpus": [8, 16],
        "option.pricing": ["on_demand", "spot", "reserved_1y", "owned"],
        "workload.plan.tp": [1, 2],
    },
    "top_k": 64,
}
SERVE = {
    "kind": "serving",
    "workload": {"model": "llama-3-8b", "input_tokens": 512, "output_tokens": 256, "qps": 5},
    "grid": {
        "option.hardware": ["h100-sxm5-80gb"],
        "option.gpus": [1, 2],
        "option.pricing": ["on_demand", "owned"],
        "workload.batch": [8, 32],
    },
}


def test_fast_training_total_is_the_shared_items(catalog):
    """The fast evaluator's total = the engine evaluator's items at the fast plan's hours."""
    plan = build_plan(SweepSpec.from_dict({**TRAIN, "evaluator": "fast"}), catalog)
    fast = plan.evaluator
    assert isinstance(fast, ev.TrainingEvaluator)
    eng = build_plan(SweepSpec.from_dict(TRAIN), catalog).evaluator
    assert isinstance(eng, ev.EngineTrainingEvaluator)
    v = decode(plan, chunk_indices(plan, 0))
    out = fast.evaluate(v)
    rows = out["rows"]
    assert rows.size > 0
    n = len(rows) if np.ndim(rows) else 1
    size = int(chunk_indices(plan, 0).size)
    full = {k: np.broadcast_to(np.asarray(a), (size,)) for k, a in v.items()}
    bl = fast.hw.bill(
        full["option.hardware"], full["option.pricing"], full["option.region"], full["option.gpus"]
    )
    productive_h = fast.tokens / out["tokens_per_s"] / 3600.0
    items = eng.run_items(
        rows, full["option.hardware"], full["workload.model"], full["option.pricing"],
        full["option.gpus"], productive_h, bl["price"], bl, full["option.region"],
    )  # fmt: skip
    wall = items.pop("wall_clock_h")
    total = sum(items.values(), np.zeros(n))
    np.testing.assert_allclose(out["total_usd"], total, rtol=1e-12)
    np.testing.assert_allclose(out["wall_clock_h"], wall, rtol=1e-12)
    owned = full["option.pricing"][rows] == ev.PRICING_MODES.index("owned")
    assert owned.any()
    assert np.all(items["electricity_it_active"][owned] > 0)  # energy is an item, not a price
    assert np.all(items["electricity_it_active"][~owned] == 0)


@pytest.mark.parametrize("evaluator", ["engine", "fast"])
def test_serving_rows_price_the_period(evaluator, catalog):
    res = sweep(SweepSpec.from_dict({**SERVE, "evaluator": evaluator, "top_k": 8}), catalog)
    top = res.to_json()["top"]
    assert top
    for r in top:
        assert r["total_usd"] > 0
        hours = r["total_usd"] / r["usd_per_h"]
        assert hours == pytest.approx(ev.DEFAULT_SERVICE_MONTHS * HOURS_PER_MONTH, rel=1e-9)
        assert r["gpus_billed"] >= r["total_gpus"]


def _without(catalog: Catalog, fid: str) -> Catalog:
    facs = {k: f for k, f in catalog.factors.items() if k != fid}
    return Catalog(**{**catalog.__dict__, "factors": facs})


@pytest.mark.parametrize("evaluator", ["engine", "fast"])
@pytest.mark.parametrize(
    ("spec", "fid"),
    [
        (TRAIN, "restart.hours"),
        (TRAIN, "network.switch-power-w-per-gpu"),
        (SERVE, "fragmentation.idle-fraction"),
        (SERVE, "power-conversion.loss"),
    ],
)
def test_missing_factor_is_an_error_naming_it(spec, fid, evaluator, catalog):
    assert fid in catalog.factors
    with pytest.raises(AitcoError, match=fid.replace(".", r"\.")):
        sweep(SweepSpec.from_dict({**spec, "evaluator": evaluator}), _without(catalog, fid))

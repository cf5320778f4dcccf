"""Sweep and compare price the same plan with the same items (hypothesis).

Issue 12 item 1: ``total_usd`` of a sweep row is the sum of the items ``aitco compare`` builds,
computed by the same functions, for training and serving, on-demand, spot, committed and owned.

Training: the sweep evaluates the items compare composes (:func:`aitco.cost.tco.items_usd`, the
one composition of :mod:`aitco.cost.tco`: compute, idle instance GPUs, committed term,
reliability, people, storage, the owned energy items) over arrays; the property draws several
plans in every pricing mode, prices them with compare, then evaluates all of them in one
vectorised call on compare's productive hours and checks each item, the wall clock and
``total_usd`` to 1e-9 relative.

Serving: the property draws services of one replica (tensor-parallel degree, closed-loop batch,
service period, pricing mode) and checks that the engine serving evaluator's ``total_usd`` (its
own throughput, compare's items) equals compare's to 1e-9 relative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from aitco.catalog.loader import load_catalog
from aitco.cost.factors import CostFactors
from aitco.decide import evaluators as ev
from aitco.decide.compare import compare
from aitco.decide.scenario import (
    HardwareOption,
    InferenceWorkload,
    Scenario,
    TrainingWorkload,
)
from aitco.errors import CatalogError
from aitco.units import HOURS_PER_MONTH

CAT = load_catalog(use_env=False)
HW = ["a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "l40s", "mi300x"]
MODES = ["on_demand", "spot", "reserved_1y", "reserved_3y", "owned"]
MODEL = "llama-3-8b"
#: Compare's compute-category items that are not the rental of the productive hours.
INSTANCE_ITEMS = ("idle_instance_gpus", "committed_term_unused")
#: Categories whose items the sweep prices (data: dataset and checkpoint storage).
SHARED_CATEGORIES = ("compute", "reliability", "people", "data", "power", "carbon")


def _priceable(hw: str, mode: str) -> bool:
    """Whether compare prices ``hw`` in ``mode`` at all (one provider per option may sell none)."""
    one = HardwareOption(hardware=hw, gpus=8, pricing=mode)
    try:
        compare(Scenario(workload=TrainingWorkload(model=MODEL, tokens=1e9), options=[one]), CAT)
    except CatalogError:
        return False
    return True


#: (hardware, pricing mode) pairs the catalog prices: drawing only these keeps the property
#: about plans (a pair with no offer is rejected by compare and invalid in the sweep alike).
PRICEABLE = [(h, m) for h in HW for m in MODES if _priceable(h, m)]

plan = st.tuples(st.sampled_from(PRICEABLE), st.sampled_from([1, 2, 4, 8, 16, 24, 64])).map(
    lambda t: (t[0][0], t[1], t[0][1])
)


@settings(max_examples=20, deadline=None)
@given(
    plans=st.lists(plan, min_size=1, max_size=4, unique=True),
    tokens=st.floats(1e8, 5e10),
    reuse=st.sampled_from([0.0, 0.5]),
)
def test_sweep_items_equal_compare_items(plans, tokens, reuse):
    opts = [
        HardwareOption(hardware=h, gpus=g, pricing=m, committed_reuse_fraction=reuse)
        for h, g, m in plans
    ]
    scn = Scenario(
        workload=TrainingWorkload(model=MODEL, tokens=tokens, seq_len=2048), options=opts
    )
    try:
        comp = compare(scn, CAT)
    except CatalogError:  # no price of that mode for some drawn hardware: not a plan
        reject()
    hw_ids = sorted({h for h, _, _ in plans})
    pairs = [CAT.hardware(x) for x in hw_ids]
    table = ev.hardware_table(CAT, hw_ids, [None])
    evaluator = ev.EngineTrainingEvaluator(
        hw=table,
        models=ev.model_table([CAT.resolve_model(MODEL)]),
        tokens=tokens,
        accelerators=[a for a, _ in pairs],
        systems=[s for _, s in pairs],
        model_archs=[CAT.resolve_model(MODEL)],
        factors=CostFactors(CAT),
        committed_reuse_fraction=reuse,
    )
    hw = np.array([hw_ids.index(h) for h, _, _ in plans])
    mode = np.array([ev.PRICING_MODES.index(m) for _, _, m in plans])
    gpus = np.array([g for _, g, _ in plans])
    bill = table.bill(hw, mode, np.zeros_like(hw), gpus)
    # no eligible offer: invalid in the sweep, infeasible in compare (test_offer_props)
    # a plan that does not fit is infeasible in compare (no hours, no cost): not priced here
    keep = [
        i
        for i in range(len(plans))
        if math.isfinite(bill["price"][i])
        and comp.options[i].values.get("productive_h") is not None
    ]
    if not keep:
        reject()
    hw, mode, gpus = hw[keep], mode[keep], gpus[keep]
    bl = {k: a[keep] for k, a in bill.items()}
    rows = np.arange(len(keep))
    productive_h = np.array([comp.options[i].values["productive_h"] for i in keep])
    items = evaluator.run_items(
        rows, hw, np.zeros_like(hw), mode, gpus, productive_h, bl["price"], bl
    )
    wall_h = items.pop("wall_clock_h")
    for j, i in enumerate(keep):
        b = comp.options[i]
        assert wall_h[j] == pytest.approx(b.values["wall_clock_h"], rel=1e-9)
        got = {it.name: it.usd for it in b.items}
        shared = [it for it in b.items if it.category in SHARED_CATEGORIES]
        for it in shared:  # every compute/reliability/people item of compare is in the sweep
            key = (
                "compute" if it.category == "compute" and it.name not in INSTANCE_ITEMS else it.name
            )
            assert key in items, it.name
        compute = sum(
            it.usd for it in shared if it.category == "compute" and it.name not in INSTANCE_ITEMS
        )
        assert items["compute"][j] == pytest.approx(compute, rel=1e-9)
        for name, arr in items.items():
            if name != "compute":
                assert arr[j] == pytest.approx(got.get(name, 0.0), rel=1e-9, abs=1e-9), name
        # default scenario: no one-off data or compliance items, so every item is shared
        assert len(shared) == len(b.items)
        assert sum(a[j] for a in items.values()) == pytest.approx(b.total_usd, rel=1e-9)


SERVICE_HW = ["a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "mi300x"]
SERVICE_PRICEABLE = [(h, m) for h, m in PRICEABLE if h in SERVICE_HW]
IN_TOKENS, OUT_TOKENS = 512, 256

service = st.tuples(st.sampled_from(SERVICE_PRICEABLE), st.sampled_from([1, 2, 4, 8])).map(
    lambda t: (t[0][0], t[1], t[0][1])
)


@settings(max_examples=12, deadline=None)
@given(
    plans=st.lists(service, min_size=1, max_size=3, unique=True),
    batch=st.sampled_from([1, 8, 32, 96]),
    months=st.sampled_from([0.5, 1.0, 3.0, 12.0]),
    reuse=st.sampled_from([0.0, 0.5]),
)
def test_sweep_service_total_equals_compare(plans, batch, months, reuse):
    hw_ids = sorted({h for h, _, _ in plans})
    pairs = [CAT.hardware(x) for x in hw_ids]
    arch = CAT.resolve_model(MODEL)
    table = ev.hardware_table(CAT, hw_ids, [None])
    evaluator = ev.EngineServingEvaluator(
        hw=table,
        models=ev.model_table([arch]),
        accelerators=[a for a, _ in pairs],
        systems=[s for _, s in pairs],
        model_archs=[arch],
        months=months,
        factors=CostFactors(CAT),
        committed_reuse_fraction=reuse,
    )
    k = len(plans)
    out = evaluator.evaluate(
        {
            "option.hardware": np.array([hw_ids.index(h) for h, _, _ in plans]),
            "option.gpus": np.array([float(g) for _, g, _ in plans]),
            "option.pricing": np.array([ev.PRICING_MODES.index(m) for _, _, m in plans]),
            "option.region": np.zeros(k, dtype=np.int64),
            "workload.model": np.zeros(k, dtype=np.int64),
            "workload.precision": np.full(k, ev.DTYPES.index("bf16")),
            "workload.kv_precision": np.full(k, -1),
            "workload.batch": np.full(k, float(batch)),
            "workload.input_tokens": np.full(k, float(IN_TOKENS)),
            "workload.output_tokens": np.full(k, float(OUT_TOKENS)),
        }
    )
    valid = [j for j, r in enumerate(out["rows"]) if out["reason"][r] == 0]
    if not valid:  # does not fit, batch above the KV capacity, or no offer: not a service
        reject()
    for j in valid:
        h, g, m = plans[int(out["rows"][j])]
        wl = InferenceWorkload(
            model=MODEL, input_tokens=IN_TOKENS, output_tokens=OUT_TOKENS, concurrency=batch,
            tp=g, months=months,
        )  # fmt: skip
        one = HardwareOption(hardware=h, gpus=g, pricing=m, committed_reuse_fraction=reuse)
        b = compare(Scenario(workload=wl, options=[one]), CAT).options[0]
        assert b.gpus == g  # one replica: no scaling in either command
        assert out["gpus_billed"][j] == b.values["gpus_billed"]
        assert out["total_usd"][j] == pytest.approx(b.total_usd, rel=1e-9), (h, g, m)


@settings(max_examples=8, deadline=None)
@given(
    pick=st.sampled_from(SERVICE_PRICEABLE),
    qps=st.sampled_from([2.0, 20.0, 80.0]),
    months=st.sampled_from([0.5, 1.0, 12.0]),
    reuse=st.sampled_from([0.0, 0.5]),
)
def test_sweep_service_items_equal_compare_items(pick, qps, months, reuse):
    """Scaled services (an arrival rate): the sweep's items at compare's sizing, item by item."""
    h, m = pick
    wl = InferenceWorkload(
        model=MODEL, input_tokens=IN_TOKENS, output_tokens=OUT_TOKENS, qps=qps, months=months
    )
    one = HardwareOption(hardware=h, gpus=1, pricing=m, committed_reuse_fraction=reuse)
    b = compare(Scenario(workload=wl, options=[one]), CAT).options[0]
    if not b.values["feasible"]:
        reject()
    acc, sysm = CAT.hardware(h)
    arch = CAT.resolve_model(MODEL)
    table = ev.hardware_table(CAT, [h], [None])
    evaluator = ev.EngineServingEvaluator(
        hw=table,
        models=ev.model_table([arch]),
        accelerators=[acc],
        systems=[sysm],
        model_archs=[arch],
        months=months,
        factors=CostFactors(CAT),
        committed_reuse_fraction=reuse,
    )
    n = float(b.values["total_gpus"])
    per_replica = n / b.values["replicas"]
    one_row = np.zeros(1, dtype=np.int64)
    mode = np.array([ev.PRICING_MODES.index(m)])
    bl = table.bill(one_row, mode, one_row, np.array([n]), np.array([per_replica]))
    assert bl["gpus_billed"][0] == b.values["gpus_billed"]
    got = {it.name: it for it in b.items}
    active = None
    if "electricity_it_active" in got:  # owned: the engine's busy share, as compare took it
        active = np.array([got["electricity_it_active"].inputs["busy_share_of_hours"]])
    items = evaluator.serving_items(
        one_row, mode, one_row, np.array([per_replica]), np.array([n]),
        months * HOURS_PER_MONTH, np.array([b.values["utilization"]]), bl, active,
    )  # fmt: skip
    compute = sum(
        it.usd for it in b.items if it.category == "compute" and it.name not in INSTANCE_ITEMS
    )
    assert items["compute"][0] == pytest.approx(compute, rel=1e-9)
    for name, arr in items.items():
        if name != "compute":
            want = got[name].usd if name in got else 0.0
            assert arr[0] == pytest.approx(want, rel=1e-9, abs=1e-9), name
    assert sum(a[0] for a in items.values()) == pytest.approx(b.total_usd, rel=1e-9)

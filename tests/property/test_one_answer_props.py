"""One plan, one total and one verdict in every command and surface (issue 32 item 3; hypothesis).

Drawn plans -- training (dense and MoE, pinned parallel plans, pipeline parallel), services (one
replica at a closed-loop batch; scaled services with an arrival rate and SLOs), in every pricing
mode (on-demand, spot, committed, owned), with and without a pinned provider -- are priced by
``compare`` and by every other command and surface that prices them: ``tco`` (the CLI JSON),
``sweep`` and ``optimize`` (the engine evaluator), ``levers`` (its base), ``buy-vs-rent`` (its
offer selection and eligibility for the rented modes), ``train``/``infer`` (the price flags),
the report and the web API. Each must give compare's total (to 1e-9 relative) and compare's
verdict (feasible or not).

Known gaps kept loud (strict xfail, so they fail once fixed): a training plan with ``pp > 1``
is resolved twice (compare picks an interleaving ``vp``, the sweep ``vp = 1``); a scaled service
that compare sizes for capacity is not re-sized for its SLO (/work/notes/for-S.md). Both are
plan resolution (issue 32 item 2).

The draws run every command, so the properties are in the integration tier (``slow``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from aitco.cli.app import main
from aitco.decide.buy_vs_rent import buy_vs_rent
from aitco.decide.choices import is_feasible
from aitco.decide.compare import compare
from aitco.decide.levers import levers
from aitco.decide.optimize import optimize
from aitco.decide.scenario import Scenario
from aitco.decide.sweep import SweepSpec, sweep
from aitco.errors import CatalogError
from aitco.report.model import build_report

pytestmark = [
    pytest.mark.slow,
    # the catalog and web fixtures are large: hypothesis warns while it prints a failing example
    pytest.mark.filterwarnings(
        "ignore:Generating overly large repr:hypothesis.errors.HypothesisWarning"
    ),
]

REL = 1e-9
MODES = ["on_demand", "spot", "reserved_1y", "owned"]
#: (model, hardware, gpus, plan) of pinned training plans: dense and MoE (expert parallel).
TRAINING = [
    ("llama-3.2-1b", "h100-sxm5-80gb", 8, {"tp": 1, "pp": 1, "micro_batch": 2, "zero": 1}),
    ("llama-3-8b", "h100-sxm5-80gb", 16, {"tp": 2, "pp": 1, "micro_batch": 1, "zero": 1}),
    ("llama-3-8b", "a100-sxm4-80gb", 16, {"tp": 4, "pp": 1, "micro_batch": 1, "zero": 1}),
    ("qwen3-30b-a3b", "h100-sxm5-80gb", 16, {"tp": 1, "pp": 1, "ep": 8, "micro_batch": 1,
                                             "zero": 1}),
    ("llama-3-8b", "l40s", 16, {"tp": 2, "pp": 1, "micro_batch": 1, "zero": 1}),
]  # fmt: skip
#: The same plans with a pipeline (pp = 2).
PIPELINED = [
    ("llama-3-8b", "h100-sxm5-80gb", 16, {"tp": 2, "pp": 2, "micro_batch": 1, "zero": 1}),
    ("llama-3-8b", "a100-sxm4-80gb", 32, {"tp": 2, "pp": 2, "micro_batch": 1, "zero": 1}),
]
PROVIDERS = [None, "any", "aws"]


@pytest.fixture(scope="module")
def web() -> Any:
    from fastapi.testclient import TestClient

    from aitco.web.app import create_app

    with TestClient(create_app()) as c:
        yield c


def _cli(args: list[str]) -> dict[str, Any]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code in (0, None)
    return json.loads(buf.getvalue())


def _same(a: Any, b: Any) -> bool:
    """Two totals agree: both finite and equal to 1e-9, or both missing (no answer)."""
    fa = a is not None and math.isfinite(a)
    fb = b is not None and math.isfinite(b)
    return (fa and fb and a == pytest.approx(b, rel=REL)) or (not fa and not fb)


def _training(model: str, hw: str, gpus: int, plan: dict[str, Any], mode: str,
              provider: str | None, tokens: float) -> dict[str, Any]:  # fmt: skip
    opt = {"hardware": hw, "gpus": gpus, "pricing": mode}
    if provider:
        opt["provider"] = provider
    wl = {"kind": "training", "model": model, "tokens": tokens, "seq_len": 2048,
          "global_batch": 128, "plan": {**plan, "recompute": "selective"}}  # fmt: skip
    return {"name": "one answer", "workload": wl, "options": [opt]}


def _sweep_spec(doc: dict[str, Any]) -> SweepSpec:
    wl, opt = doc["workload"], doc["options"][0]
    grid = {
        "option.hardware": [opt["hardware"]],
        "option.gpus": [opt["gpus"]],
        "option.pricing": [opt["pricing"]],
        "workload.precision": ["bf16"],
        **{f"workload.plan.{k}": [v] for k, v in wl["plan"].items()},
    }
    return SweepSpec.from_dict(
        {
            "kind": "training",
            "evaluator": "engine",
            "workload": {k: v for k, v in wl.items() if k not in ("kind", "plan")},
            "option": {"provider": opt["provider"]} if "provider" in opt else {},
            "grid": grid,
            "objective": "total_usd",
        }
    )


def _rented_offer_agrees(catalog: Any, doc: dict[str, Any], b: Any) -> None:
    """buy-vs-rent selects compare's offer (and eligibility) for the option's mode."""
    opt = doc["options"][0]
    if opt["pricing"] == "owned":
        return
    res = buy_vs_rent(
        catalog, opt["hardware"], opt["gpus"], provider=opt.get("provider"),
        modes=(opt["pricing"],),
    )  # fmt: skip
    rent = res["rent"][opt["pricing"]]
    eligible = not any(r.startswith("no eligible offer") for r in b.values["infeasible_reasons"])
    assert rent.get("available", True) is eligible, (rent, b.values["infeasible_reasons"])
    if eligible:
        # per accelerator used: compare's instance price over the accelerators the job uses
        per_used = b.values["price_usd_per_gpu_h"] * b.values["gpus_billed"] / b.gpus
        assert rent["price_usd_per_gpu_h"] == pytest.approx(per_used, rel=REL)
        assert rent["price_source"] == f"catalog offer {b.values['offer_id']}"


def _compared(scn: Scenario, catalog: Any) -> Any:
    """Compare's option; a pricing mode the catalog has no price for at all is not a plan."""
    try:
        return compare(scn, catalog).options[0]
    except CatalogError:  # e.g. no reserved_1y price of the hardware anywhere: every command
        reject()  # refuses it alike (test_sweep_total_props)


def _every_surface(catalog: Any, web: Any, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Price one training plan in every command and surface: (compare's option, the others)."""
    scn = Scenario.from_dict(doc)
    b = _compared(scn, catalog)
    got: dict[str, tuple[Any, bool]] = {}
    spec = _sweep_spec(doc)
    top = sweep(spec, catalog).to_json()["top"]
    got["sweep"] = (top[0]["total_usd"], True) if top else (None, False)
    best = optimize(spec, catalog).get("best")
    got["optimize"] = (best["total_usd"], True) if best else (None, False)
    base = levers(scn, catalog)["base"]
    got["levers"] = (base["total_usd"], base["feasible"])
    rep = build_report(scn, catalog).to_json()["options"][0]
    got["report"] = (rep["total_usd"], rep["feasible"])
    api = web.post("/api/v1/compare", json=doc).json()["options"][0]
    got["web"] = (api["total_usd"], api["feasible"])
    return b, got


def _check(b: Any, got: dict[str, tuple[Any, bool]]) -> None:
    feasible = is_feasible(b)
    for surface, (total, ok) in got.items():
        assert ok is feasible, (surface, b.values.get("infeasible_reasons"))
        if feasible:
            assert _same(total, b.total_usd), (surface, total, b.total_usd)


@settings(max_examples=10, deadline=None)
@given(
    pick=st.sampled_from(TRAINING),
    mode=st.sampled_from(MODES),
    provider=st.sampled_from(PROVIDERS),
    tokens=st.sampled_from([5e8, 3e9]),
)
def test_training_plan_one_total_one_verdict(pick, mode, provider, tokens, catalog, web,
                                             tmp_path_factory):  # fmt: skip
    model, hw, gpus, plan = pick
    doc = _training(model, hw, gpus, plan, mode, provider, tokens)
    b, got = _every_surface(catalog, web, doc)
    path = tmp_path_factory.mktemp("one") / "scn.json"
    path.write_text(json.dumps(doc))
    cli = _cli(["tco", str(path), "--json"])["options"][0]
    got["tco"] = (cli["total_usd"], cli["feasible"])
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in plan.items()]
    tr = _cli([
        "train", "--model", model, "--hardware", hw, "--gpus", str(gpus), "--tokens",
        str(tokens), "--seq-len", "2048", "--global-batch", "128", "--recompute", "selective",
        "--pricing", mode, *(["--provider", provider] if provider else []), *flags, "--json",
    ])  # fmt: skip
    got["train"] = (tr["total_usd"], tr["total_usd"] is not None)
    _check(b, got)
    _rented_offer_agrees(catalog, doc, b)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="pp > 1: compare resolves an interleaving vp, the sweep vp = 1 (issue 32 item 2, S)",
)
@settings(max_examples=4, deadline=None)
@given(pick=st.sampled_from(PIPELINED), mode=st.sampled_from(["on_demand", "owned"]))
def test_pipelined_training_plan_one_total(pick, mode, catalog, web):
    model, hw, gpus, plan = pick
    doc = _training(model, hw, gpus, plan, mode, "any" if mode != "owned" else None, 2e9)
    b, got = _every_surface(catalog, web, doc)
    _check(b, got)


SERVING_HW = ["h100-sxm5-80gb", "a100-sxm4-80gb", "h200-sxm-141gb"]


@settings(max_examples=8, deadline=None)
@given(
    hw=st.sampled_from(SERVING_HW),
    tp=st.sampled_from([1, 2]),
    batch=st.sampled_from([4, 32]),
    mode=st.sampled_from(MODES),
    provider=st.sampled_from([None, "any"]),
)
def test_service_one_replica_one_total_one_verdict(hw, tp, batch, mode, provider, catalog, web):
    """A service of one replica at a closed-loop batch: compare, sweep, optimize, levers,
    report, web and ``infer`` price the same month."""
    opt = {"hardware": hw, "gpus": tp, "pricing": mode, **({"provider": provider} if provider
                                                           else {})}  # fmt: skip
    wl = {"kind": "inference", "model": "llama-3-8b", "input_tokens": 512, "output_tokens": 256,
          "concurrency": batch, "tp": tp, "months": 1.0}  # fmt: skip
    doc = {"name": "one service", "workload": wl, "options": [opt]}
    scn = Scenario.from_dict(doc)
    b = _compared(scn, catalog)
    spec = SweepSpec.from_dict(
        {
            "kind": "serving", "evaluator": "engine",
            "workload": {"model": "llama-3-8b", "input_tokens": 512, "output_tokens": 256,
                         "months": 1.0},
            "option": {"provider": provider} if provider else {},
            "grid": {"option.hardware": [hw], "option.gpus": [tp], "option.pricing": [mode],
                     "workload.precision": ["bf16"], "workload.batch": [batch]},
            "objective": "total_usd",
        }
    )  # fmt: skip
    got: dict[str, tuple[Any, bool]] = {}
    top = sweep(spec, catalog).to_json()["top"]
    got["sweep"] = (top[0]["total_usd"], True) if top else (None, False)
    best = optimize(spec, catalog).get("best")
    got["optimize"] = (best["total_usd"], True) if best else (None, False)
    base = levers(scn, catalog)["base"]
    got["levers"] = (base["total_usd"], base["feasible"])
    rep = build_report(scn, catalog).to_json()["options"][0]
    got["report"] = (rep["total_usd"], rep["feasible"])
    api = web.post("/api/v1/compare", json=doc).json()["options"][0]
    got["web"] = (api["total_usd"], api["feasible"])
    inf = _cli([
        "infer", "--model", "llama-3-8b", "--hardware", hw, "--gpus", str(tp), "--tp", str(tp),
        "--concurrency", str(batch), "--pricing", mode,
        *(["--provider", provider] if provider else []), "--json",
    ])  # fmt: skip
    got["infer"] = ((inf.get("tco") or {}).get("total_usd"), inf.get("tco") is not None)
    _check(b, got)


@settings(max_examples=6, deadline=None)
@given(
    qps=st.sampled_from([2.0, 12.0]),
    slo=st.sampled_from([(None, None), (500.0, 50.0), (300.0, 30.0)]),
    mode=st.sampled_from(MODES),
)
def test_scaled_service_one_total_one_verdict(qps, slo, mode, catalog, web):
    """A service with an arrival rate and SLOs, scaled to replicas by compare: the levers,
    the report and the web give compare's total and verdict."""
    wl = {"kind": "inference", "model": "llama-3-8b", "qps": qps, "months": 1.0,
          "slo_ttft_ms": slo[0], "slo_tpot_ms": slo[1]}  # fmt: skip
    doc = {"name": "scaled", "workload": {k: v for k, v in wl.items() if v is not None},
           "options": [{"hardware": "l40s", "gpus": 1, "pricing": mode}]}  # fmt: skip
    scn = Scenario.from_dict(doc)
    b = _compared(scn, catalog)
    got: dict[str, tuple[Any, bool]] = {}
    base = levers(scn, catalog)["base"]
    got["levers"] = (base["total_usd"], base["feasible"])
    rep = build_report(scn, catalog).to_json()["options"][0]
    got["report"] = (rep["total_usd"], rep["feasible"])
    api = web.post("/api/v1/compare", json=doc).json()["options"][0]
    got["web"] = (api["total_usd"], api["feasible"])
    _check(b, got)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="compare sizes a saturated service for capacity, not its SLO (/work/notes/for-S.md)",
)
def test_70b_20qps_slo_verdict(catalog):
    """Issue 32 "SLO verdicts differ": Llama 3.1 70B at 20 req/s under 500/50 ms. ``optimize``
    finds a plan that meets the SLO at P99 (5 replicas of tp 4); compare, asked for 8 H100s,
    must scale to the replicas the SLO needs, not stop at capacity and call it infeasible."""
    wl = {"kind": "inference", "model": "llama-3.1-70b", "qps": 20, "input_tokens": 1024,
          "output_tokens": 256, "slo_ttft_ms": 500, "slo_tpot_ms": 50, "months": 1}  # fmt: skip
    opt = {"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand", "provider": "any"}
    b = compare(Scenario.from_dict({"workload": wl, "options": [opt]}), catalog).options[0]
    assert b.values["feasible"], b.values["infeasible_reasons"]
    assert b.values["total_gpus"] >= 20

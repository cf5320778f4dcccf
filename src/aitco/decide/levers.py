"""Savings levers: re-price a scenario with each standard lever pulled, and rank them.

Each lever is a concrete change to the scenario (a precision, a plan, a pricing mode, a region,
a method), priced with the same itemised TCO as ``aitco compare``
(:func:`aitco.decide.compare.compare`) so the saving includes every hidden-cost line. Levers are
ranked by dollars saved, then by time added (training wall clock, or serving latency), and carry
a risk label with its reason. A lever that does not apply says why.

Risk labels are qualitative and fixed per lever (:data:`RISKS`): ``low`` changes no result
(only how it is computed or where), ``medium`` changes numerics or availability in ways that
usually hold with care (fp8 recipes, quantisation, preemptions), ``high`` changes the product
(a fine-tuned open model is a different model).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aitco.catalog.loader import Catalog
from aitco.decide.choices import is_feasible
from aitco.decide.compare import compare
from aitco.decide.scenario import HardwareOption, Scenario
from aitco.errors import AitcoError, InputError, UnknownIdError

#: Tokens of the fine-tuning run the "fine-tune an open model" lever prices instead of a
#: pre-training run: 2B tokens, the order of large supervised fine-tuning sets (e.g. Tulu 3
#: SFT mix ~0.9M examples; Llama 2-Chat SFT 27.5k examples) -- an assumption to override.
FINE_TUNE_TOKENS = 2.0e9

RISKS: dict[str, tuple[str, str]] = {
    "fp8": ("medium", "fp8 training needs per-tensor scaling recipes; watch loss spikes"),
    "parallel_plan": ("low", "same math, another split of the work"),
    "fused_kernels": (
        "low",
        "same math in fewer kernels (Liger Kernel or the framework's fused ops); check that "
        "they support the model",
    ),
    "recompute_zero": ("low", "same result on half the GPUs; slower"),
    "spot_checkpointing": ("medium", "preemptions: needs frequent checkpoints and a restart loop"),
    "fine_tune_open_model": (
        "high",
        "a fine-tuned open model is not the model you would pre-train",
    ),
    "another_region": ("low", "data residency, egress and latency to users may change"),
    "quantize_fp8": ("medium", "fp8 weights and KV cache: small accuracy changes; evaluate"),
    "quantize_int4": ("medium", "4-bit weights: measurable accuracy loss on some tasks"),
    "offline_batching": ("medium", "requests wait for a full batch: no interactive latency"),
}


#: is training -> (time measure compared, key of its change with the lever, unit in the name).
TIME_ADDED_KEYS: dict[bool, tuple[str, str]] = {
    True: ("wall_clock_days", "time_added_days"),
    False: ("e2e_latency_s", "time_added_s"),
}


def time_added(row: dict[str, Any]) -> float | None:
    """Return the lever's change of the time measure (``time_added_days`` or ``time_added_s``)."""
    for _tkey, key in TIME_ADDED_KEYS.values():
        if row.get(key) is not None:
            return float(row[key])
    return None


def _one_option(scn: Scenario, option: str | None) -> tuple[Scenario, HardwareOption]:
    if scn.workload is None or not scn.options:
        raise InputError(
            "scenario", scn.name, "a workload with options (levers do not apply to stages)"
        )
    if option is None:
        opt = scn.options[0]
    else:
        names = {o.label: o for o in scn.options}
        if option not in names:
            raise UnknownIdError("option", option, names, field="--option")
        opt = names[option]
    return scn.model_copy(update={"options": [opt]}), opt


def _variant(
    scn: Scenario, *, workload: dict[str, Any] | None = None, option: dict[str, Any] | None = None
) -> Scenario:
    data = scn.to_dict()
    if workload:
        data["workload"] = {**data["workload"], **workload}
    if option:
        data["options"] = [{**data["options"][0], **option}]
    return Scenario.from_dict(data)


def _maker(scn: Scenario, workload: dict[str, Any]) -> Callable[[], Scenario]:
    """Return a function building the variant of ``scn`` with ``workload`` changes."""

    def make() -> Scenario:
        return _variant(scn, workload=workload)

    return make


def _summary(b: Any, kind: str) -> dict[str, Any]:
    """Return the cost and time of a priced option, and whether compare finds it feasible."""
    v = b.values
    out = {"total_usd": b.total_usd}
    if kind == "training":
        out["wall_clock_days"] = v.get("wall_clock_days")
    else:
        out["e2e_latency_s"] = v.get("e2e_latency_s")
        out["tpot_s"] = v.get("tpot_s")
        out["usd_per_million_tokens"] = v.get("usd_per_million_tokens")
    out["feasible"] = is_feasible(b)
    out["infeasible_reasons"] = list(v.get("infeasible_reasons", []))
    return out


@dataclass(frozen=True)
class Candidate:
    """A lever to price: its name, the change in words, and how to build the variant.

    ``make`` is None when the lever does not apply; ``why_not`` says why.
    """

    name: str
    change: str
    make: Callable[[], Scenario] | None = None
    why_not: str = ""


def _fp8(scn: Scenario, w: Any, acc: Any) -> Candidate:
    change = "workload.precision: fp8"
    if w.precision != "fp8" and acc.supports("fp8"):
        return Candidate("fp8", change, _maker(scn, {"precision": "fp8"}))
    return Candidate("fp8", change, None, f"already fp8 or {acc.id} has no fp8")


def _parallel_plan(scn: Scenario, w: Any) -> Candidate:
    change = "workload.plan: searched"
    if any(getattr(w.plan, k) is not None for k in ("tp", "pp", "cp", "ep", "dp")):
        return Candidate("parallel_plan", change, _maker(scn, {"plan": {}}))
    return Candidate("parallel_plan", change, None, "the plan is already searched by the engine")


def _fused_kernels(scn: Scenario, w: Any) -> Candidate:
    if w.plan.elementwise_kernels == "fused" and w.plan.loss_kernel == "fused":
        return Candidate(
            "fused_kernels", "fused elementwise and loss kernels", None,
            "the plan already runs fused elementwise and loss kernels",
        )  # fmt: skip
    plan = {
        **w.plan.model_dump(exclude_none=True),
        "elementwise_kernels": "fused",
        "loss_kernel": "fused",
    }
    return Candidate(
        "fused_kernels",
        "workload.plan: elementwise_kernels fused, loss_kernel fused",
        _maker(scn, {"plan": plan}),
    )


def _recompute_zero(scn: Scenario, w: Any, opt: HardwareOption) -> Candidate:
    if opt.gpus < 2:
        return Candidate(
            "recompute_zero", "fewer GPUs with recomputation + ZeRO-3", None, "already on one GPU"
        )
    half = opt.gpus // 2
    plan = {**w.plan.model_dump(exclude_none=True), "recompute": "full", "zero": 3}

    def make() -> Scenario:
        return _variant(scn, workload={"plan": plan}, option={"gpus": half})

    return Candidate(
        "recompute_zero", f"gpus {opt.gpus} -> {half}, full recomputation + ZeRO-3", make
    )


def _fine_tune(scn: Scenario, w: Any, fine_tune_tokens: float) -> Candidate:
    if w.method == "full" and w.tokens > fine_tune_tokens:
        return Candidate(
            "fine_tune_open_model",
            f"workload.method: lora on {fine_tune_tokens:.3g} tokens",
            _maker(scn, {"method": "lora", "tokens": fine_tune_tokens}),
        )
    return Candidate(
        "fine_tune_open_model", "LoRA fine-tune instead", None,
        "already a fine-tune (or a small run)",
    )  # fmt: skip


def _training_candidates(
    scn: Scenario, w: Any, opt: HardwareOption, acc: Any, fine_tune_tokens: float
) -> list[Candidate]:
    return [
        _fp8(scn, w, acc),
        _parallel_plan(scn, w),
        _fused_kernels(scn, w),
        _recompute_zero(scn, w, opt),
        _fine_tune(scn, w, fine_tune_tokens),
    ]


def _quantize(scn: Scenario, w: Any, acc: Any, name: str, prec: str) -> Candidate:
    if w.precision == prec:
        return Candidate(name, f"precision {prec}", None, f"already {prec}")
    if prec == "fp8" and not acc.supports("fp8"):
        return Candidate(name, f"precision {prec}", None, f"{acc.id} has no fp8")
    upd: dict[str, Any] = {"precision": prec}
    if prec == "fp8":
        upd["kv_precision"] = "fp8"
    return Candidate(name, f"workload.precision: {prec}", _maker(scn, upd))


def _offline(scn: Scenario, w: Any) -> Candidate:
    if w.slo_ttft_ms is not None or w.slo_tpot_ms is not None or w.mode != "online":
        return Candidate(
            "offline_batching", "offline batching", None, "latency objectives (or already offline)"
        )
    if w.qps is not None:
        return Candidate(
            "offline_batching", "offline batching", None,
            "the service answers arrivals (workload.qps): an offline batch serves no arrivals",
        )  # fmt: skip
    upd = {"mode": "offline", "batch": None, "concurrency": None}
    return Candidate("offline_batching", "workload.mode: offline", _maker(scn, upd))


def _serving_candidates(scn: Scenario, w: Any, acc: Any) -> list[Candidate]:
    return [
        _quantize(scn, w, acc, "quantize_fp8", "fp8"),
        _quantize(scn, w, acc, "quantize_int4", "int4"),
        _offline(scn, w),
    ]


def _spot(scn: Scenario, opt: HardwareOption) -> Candidate:
    if opt.pricing in ("on_demand", "reserved_1y", "reserved_3y"):
        return Candidate(
            "spot_checkpointing",
            "option.pricing: spot",
            lambda: _variant(scn, option={"pricing": "spot", "offer": None}),
        )
    why = "already spot" if opt.pricing == "spot" else "owned hardware"
    return Candidate("spot_checkpointing", "spot", None, why)


def _price(cand: Candidate, base: dict[str, Any], catalog: Catalog, kind: str) -> dict[str, Any]:
    """Price a lever's variant with ``compare``; infeasible there, the lever does not apply."""
    risk, risk_reason = RISKS[cand.name]
    row: dict[str, Any] = {
        "lever": cand.name, "change": cand.change, "risk": risk, "risk_reason": risk_reason,
    }  # fmt: skip
    if cand.make is None:
        return {**row, "applicable": False, "reason": cand.why_not}
    try:
        res = _summary(compare(cand.make(), catalog).options[0], kind)
    except AitcoError as exc:
        return {**row, "applicable": False, "reason": str(exc)}
    return _applied(row, res, base, kind)


def _applied(
    row: dict[str, Any], res: dict[str, Any], base: dict[str, Any], kind: str
) -> dict[str, Any]:
    """Return the row of a lever compare priced; not applicable when compare finds it infeasible."""
    if not res["feasible"]:
        why = "; ".join(res["infeasible_reasons"]) or "infeasible"
        return {**row, "applicable": False, "result": res,
                "reason": f"compare finds the change infeasible: {why}"}  # fmt: skip
    tkey, added_key = TIME_ADDED_KEYS[kind == "training"]
    saved = base["total_usd"] - res["total_usd"] if base["feasible"] else None
    out = {
        **row,
        "applicable": True,
        "result": res,
        "usd_saved": saved,
        "saved_fraction": saved / base["total_usd"] if saved is not None and base["total_usd"]
        else None,
        "time_metric": tkey,
        added_key: res[tkey] - base[tkey]
        if res.get(tkey) is not None and base.get(tkey) is not None
        else None,
    }  # fmt: skip
    if not base["feasible"]:  # the option as given cannot run: the lever makes it run
        out["makes_feasible"] = True
    return out


def _region_row(
    scn: Scenario, catalog: Catalog, opt: HardwareOption, base: dict[str, Any], kind: str,
    acc_id: str,
) -> dict[str, Any]:  # fmt: skip
    """Return the cheapest other region where compare finds the option feasible, as a row."""
    regions = _regions(catalog, acc_id, opt)
    risk, risk_reason = RISKS["another_region"]
    row: dict[str, Any] = {"lever": "another_region", "risk": risk, "risk_reason": risk_reason}
    if not regions:
        return {**row, "change": "another region", "applicable": False,
                "reason": "no other region priced in the catalog"}  # fmt: skip
    row["change"] = "option.region: cheapest of " + ", ".join(regions)
    best = _best_region(scn, catalog, opt, regions, kind)
    if best is None or (base["feasible"] and best[1]["total_usd"] >= base["total_usd"]):
        return {**row, "applicable": False, "reason": "no feasible region priced below the base"}
    reg, res = best
    row["change"] = f"option.region: {reg}"
    return _applied(row, res, base, kind)


def _rank(r: dict[str, Any]) -> tuple[Any, ...]:
    saved = r.get("usd_saved")
    return (
        not r.get("applicable", False),
        -(saved if saved is not None else 0.0),
        time_added(r) or 0.0,
        {"low": 0, "medium": 1, "high": 2}[r["risk"]],
    )


def levers(
    scenario: Scenario,
    catalog: Catalog,
    *,
    option: str | None = None,
    fine_tune_tokens: float = FINE_TUNE_TOKENS,
) -> dict[str, Any]:
    """Price each standard lever on one option of ``scenario`` and rank them.

    Each lever is a variant of the scenario priced by :func:`aitco.decide.compare.compare`
    (its offer selection, eligibility and feasibility): a variant that compare finds infeasible
    (no eligible offer, does not fit, misses the SLO) is not applicable, with compare's reason.

    Parameters
    ----------
    scenario : Scenario
        A workload with hardware options.
    catalog : Catalog
        Catalog for pricing.
    option : str, optional
        Label of the option to work on (default: the first).
    fine_tune_tokens : float
        Tokens of the fine-tuning alternative to pre-training. [tokens]

    Returns
    -------
    dict
        ``base`` (cost, time, ``feasible`` and ``infeasible_reasons`` of the option as given)
        and ``levers`` (ranked: ``lever``, ``change``, ``applicable``, ``usd_saved``,
        ``saved_fraction``, ``time_metric``, ``time_added_days`` (training) or
        ``time_added_s`` (service), ``risk``, ``risk_reason``, ``result`` (the variant as
        compare priced it), or ``reason`` when not applicable; ``makes_feasible`` when the
        option as given cannot run and the lever makes it run, ``usd_saved`` then null).
    """
    scn, opt = _one_option(scenario, option)
    w = scn.workload
    assert w is not None
    base = _summary(compare(scn, catalog).options[0], w.kind)
    acc, _sysm = catalog.hardware(opt.hardware, field="options[0].hardware")
    cands = (
        _training_candidates(scn, w, opt, acc, fine_tune_tokens)
        if w.kind == "training"
        else _serving_candidates(scn, w, acc)
    )
    cands.append(_spot(scn, opt))
    rows = [_price(c, base, catalog, w.kind) for c in cands]
    rows.append(_region_row(scn, catalog, opt, base, w.kind, acc.id))
    rows.sort(key=_rank)
    return {
        "scenario": scenario.name,
        "option": opt.label,
        "kind": w.kind,
        "base": base,
        "levers": rows,
    }


def _regions(catalog: Catalog, acc_id: str, opt: HardwareOption) -> list[str]:
    """Regions where the option could run instead (offers for rented, electricity for owned)."""
    if opt.pricing in ("owned", "colocation"):
        regs = sorted(
            f.removeprefix("electricity.usd-per-kwh.")
            for f in catalog.factors
            if f.startswith("electricity.usd-per-kwh.")
        )
    else:
        regs = sorted(
            {
                p.region
                for o in catalog.offers_for(acc_id)
                for p in o.prices
                if p.term == opt.pricing and (opt.provider is None or o.provider == opt.provider)
            }
        )
    return [r for r in regs if r != opt.region]


def _best_region(
    scn: Scenario, catalog: Catalog, opt: HardwareOption, regions: list[str], kind: str
) -> tuple[str, dict[str, Any]] | None:
    best: tuple[str, dict[str, Any]] | None = None
    for r in regions:
        try:
            upd: dict[str, Any] = {"region": r}
            if opt.pricing not in ("owned", "colocation"):
                upd["offer"] = None
            res = _summary(compare(_variant(scn, option=upd), catalog).options[0], kind)
        except AitcoError:
            continue
        if not res["feasible"]:  # compare's verdict: a region it cannot run in is no lever
            continue
        if best is None or res["total_usd"] < best[1]["total_usd"]:
            best = (r, res)
    return best

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
from typing import Any

from aitco.catalog.loader import Catalog
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
    v = b.values
    out = {"total_usd": b.total_usd}
    if kind == "training":
        out["wall_clock_days"] = v.get("wall_clock_days")
    else:
        out["e2e_latency_s"] = v.get("e2e_latency_s")
        out["tpot_s"] = v.get("tpot_s")
        out["usd_per_million_tokens"] = v.get("usd_per_million_tokens")
    return out


def levers(
    scenario: Scenario,
    catalog: Catalog,
    *,
    option: str | None = None,
    fine_tune_tokens: float = FINE_TUNE_TOKENS,
) -> dict[str, Any]:
    """Price each standard lever on one option of ``scenario`` and rank them.

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
        ``base`` (cost and time of the option as given) and ``levers`` (ranked: ``lever``,
        ``change``, ``applicable``, ``usd_saved``, ``saved_fraction``, ``time_metric``,
        ``time_added_days`` (training) or ``time_added_s`` (service),
        ``risk``, ``risk_reason``, or ``reason`` when not applicable).
    """
    scn, opt = _one_option(scenario, option)
    w = scn.workload
    assert w is not None
    base_b = compare(scn, catalog).options[0]
    base = _summary(base_b, w.kind)
    acc, _sysm = catalog.hardware(opt.hardware, field="options[0].hardware")
    cands: list[tuple[str, str, Callable[[], Scenario] | None, str]] = []

    def add(name: str, change: str, make: Callable[[], Scenario] | None, why_not: str = "") -> None:
        cands.append((name, change, make, why_not))

    rented = opt.pricing in ("on_demand", "reserved_1y", "reserved_3y", "spot")
    if w.kind == "training":
        if w.precision != "fp8" and acc.supports("fp8"):
            add(
                "fp8",
                "workload.precision: fp8",
                lambda: _variant(scn, workload={"precision": "fp8"}),
            )
        else:
            add("fp8", "workload.precision: fp8", None, f"already fp8 or {acc.id} has no fp8")
        explicit = any(getattr(w.plan, k) is not None for k in ("tp", "pp", "cp", "ep", "dp"))
        if explicit:
            add(
                "parallel_plan",
                "workload.plan: searched",
                lambda: _variant(scn, workload={"plan": {}}),
            )
        else:
            add(
                "parallel_plan",
                "workload.plan: searched",
                None,
                "the plan is already searched by the engine",
            )
        if w.plan.elementwise_kernels == "fused" and w.plan.loss_kernel == "fused":
            add(
                "fused_kernels",
                "fused elementwise and loss kernels",
                None,
                "the plan already runs fused elementwise and loss kernels",
            )
        else:
            fused_plan = {
                **w.plan.model_dump(exclude_none=True),
                "elementwise_kernels": "fused",
                "loss_kernel": "fused",
            }
            add(
                "fused_kernels",
                "workload.plan: elementwise_kernels fused, loss_kernel fused",
                lambda: _variant(scn, workload={"plan": fused_plan}),
            )
        if opt.gpus >= 2:
            half = opt.gpus // 2
            add(
                "recompute_zero",
                f"gpus {opt.gpus} -> {half}, full recomputation + ZeRO-3",
                lambda: _variant(
                    scn,
                    workload={
                        "plan": {
                            **w.plan.model_dump(exclude_none=True),
                            "recompute": "full",
                            "zero": 3,
                        }
                    },
                    option={"gpus": half},
                ),
            )
        else:
            add(
                "recompute_zero",
                "fewer GPUs with recomputation + ZeRO-3",
                None,
                "already on one GPU",
            )
        if w.method == "full" and w.tokens > fine_tune_tokens:
            add(
                "fine_tune_open_model",
                f"workload.method: lora on {fine_tune_tokens:.3g} tokens",
                lambda: _variant(scn, workload={"method": "lora", "tokens": fine_tune_tokens}),
            )
        else:
            add(
                "fine_tune_open_model",
                "LoRA fine-tune instead",
                None,
                "already a fine-tune (or a small run)",
            )
    else:
        for name, prec in (("quantize_fp8", "fp8"), ("quantize_int4", "int4")):
            if w.precision == prec:
                add(name, f"precision {prec}", None, f"already {prec}")
            elif prec == "fp8" and not acc.supports("fp8"):
                add(name, f"precision {prec}", None, f"{acc.id} has no fp8")
            else:
                upd: dict[str, Any] = {"precision": prec}
                if prec == "fp8":
                    upd["kv_precision"] = "fp8"
                add(name, f"workload.precision: {prec}", _maker(scn, upd))
        has_slo = w.slo_ttft_ms is not None or w.slo_tpot_ms is not None
        if w.mode == "online" and not has_slo:
            add(
                "offline_batching",
                "workload.mode: offline",
                lambda: _variant(scn, workload={"mode": "offline"}),
            )
        else:
            add(
                "offline_batching",
                "offline batching",
                None,
                "latency objectives (or already offline)",
            )
    if rented and opt.pricing != "spot":
        add(
            "spot_checkpointing",
            "option.pricing: spot",
            lambda: _variant(scn, option={"pricing": "spot", "offer": None}),
        )
    else:
        add(
            "spot_checkpointing",
            "spot",
            None,
            "already spot" if opt.pricing == "spot" else "owned hardware",
        )
    regions = _regions(catalog, acc.id, opt)
    if regions:
        add("another_region", "option.region: cheapest of " + ", ".join(regions), None, "")
    else:
        add("another_region", "another region", None, "no other region priced in the catalog")

    rows = []
    for name, change, make, why_not in cands:
        risk, risk_reason = RISKS[name]
        row: dict[str, Any] = {
            "lever": name,
            "change": change,
            "risk": risk,
            "risk_reason": risk_reason,
        }
        if name == "another_region" and regions:
            best = _best_region(scn, catalog, opt, regions, w.kind)
            if best is None or best[1]["total_usd"] >= base["total_usd"]:
                row.update(applicable=False, reason="no region priced below the base")
                rows.append(row)
                continue
            reg, res = best
            row["change"] = f"option.region: {reg}"
        elif make is None:
            row.update(applicable=False, reason=why_not)
            rows.append(row)
            continue
        else:
            try:
                res = _summary(compare(make(), catalog).options[0], w.kind)
            except AitcoError as exc:
                row.update(applicable=False, reason=str(exc))
                rows.append(row)
                continue
        row["applicable"] = True
        row["result"] = res
        row["usd_saved"] = base["total_usd"] - res["total_usd"]
        row["saved_fraction"] = row["usd_saved"] / base["total_usd"] if base["total_usd"] else None
        tkey, added_key = TIME_ADDED_KEYS[w.kind == "training"]
        row["time_metric"] = tkey
        if res.get(tkey) is not None and base.get(tkey) is not None:
            row[added_key] = res[tkey] - base[tkey]
        else:
            row[added_key] = None
        rows.append(row)
    risk_rank = {"low": 0, "medium": 1, "high": 2}
    rows.sort(
        key=lambda r: (
            not r.get("applicable", False),
            -(r.get("usd_saved") or 0.0),
            time_added(r) or 0.0,
            risk_rank[r["risk"]],
        )
    )
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
        if best is None or res["total_usd"] < best[1]["total_usd"]:
            best = (r, res)
    return best

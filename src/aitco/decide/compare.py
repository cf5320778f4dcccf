"""Compare options of a scenario: the itemised TCO of each hardware x pricing-mode option.

``compare(scenario, catalog)`` resolves ids and factors (catalog values, then the preset, then the
scenario's ``assumptions``), asks the performance engines for throughput
(:func:`aitco.perf.training.estimate_training`, :func:`aitco.perf.inference.estimate_inference`),
and prices every cost item with the pure functions of :mod:`aitco.cost`. It never models
throughput itself.

Pricing modes: ``on_demand``, ``reserved_1y``, ``reserved_3y`` and ``spot`` are rented at the
catalog offer price (or ``usd_per_gpu_hour``); ``owned`` prices capex (accelerators, servers,
network, storage, installation) by its equivalent annual cost over the holding period, split
into depreciation, technology-iteration risk and financing, plus electricity at the site's PUE;
``colocation`` is owned hardware in rented space (adds the colocation fee per kW-month).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from aitco.calibrate.profile import load_profile
from aitco.catalog.loader import Catalog
from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.catalog.staleness import oldest_price_input, stale_price_inputs
from aitco.cost.factors import CostFactors
from aitco.cost.pricing import (
    GpuHourPrice,
)
from aitco.cost.tco import Breakdown, add_stages
from aitco.decide.choices import choose, is_feasible
from aitco.decide.option_cost import option_name, option_price
from aitco.decide.practice import practice_for
from aitco.decide.scenario import (
    HardwareOption,
    InferenceWorkload,
    ParallelPlan,
    Scenario,
    TrainingWorkload,
)
from aitco.decide.service_cost import bill_service, price_service, size_service
from aitco.decide.training_cost import price_training
from aitco.errors import AitcoError, InfeasiblePlan, InputError
from aitco.limits import implausible_reasons
from aitco.perf import service as service_mod
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.inference import estimate_inference
from aitco.perf.params import param_counts
from aitco.perf.training import estimate_training


class Comparison(BaseModel):
    """The one result of a comparison: the options priced item by item, and what is chosen.

    Every surface (CLI tables, ``--json``, ``--explain``, the report, the web app, the
    workbook) renders this object; none selects, sizes or prices again.

    Attributes
    ----------
    name : str
        Scenario name.
    kind : str
        ``"training"``, ``"inference"`` or ``"plan"``.
    options : list of Breakdown
        One breakdown per option: items, totals, headline values, ``feasible`` and
        ``infeasible_reasons`` (an option that cannot run has no items and a null total).
    cheapest, fastest : str or None
        Names of the cheapest feasible option and of the fastest (shortest wall clock for
        training, lowest end-to-end latency for inference); None when no option is feasible.
    feasible_options : list of str
        Names of the options that can run as priced.
    pareto_time, pareto_latency : list of dict
        Cost-vs-time and cost-vs-latency points of the feasible options, ``front`` marking the
        Pareto front (:func:`aitco.decide.choices.pareto_points`).
    verdict : str
        One line: the cheapest and the fastest, or that no option is feasible and why.
    preset : str or None
        Assumption preset applied.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str
    options: list[Breakdown] = Field(default_factory=list)
    cheapest: str | None = None
    fastest: str | None = None
    feasible_options: list[str] = Field(default_factory=list)
    pareto_time: list[dict[str, Any]] = Field(default_factory=list)
    pareto_latency: list[dict[str, Any]] = Field(default_factory=list)
    verdict: str = ""
    preset: str | None = None
    assumptions: list[str] = Field(default_factory=list)
    #: Prices the answer rests on that are older than 12 months (aitco.catalog.staleness).
    stale_inputs: list[dict[str, Any]] = Field(default_factory=list)
    #: The oldest price the answer rests on, with its age (aitco.catalog.staleness).
    oldest_price: dict[str, Any] | None = None

    def option(self, name: str) -> Breakdown:
        """Return the option called ``name`` (KeyError if absent)."""
        for o in self.options:
            if o.name == name:
                return o
        raise KeyError(name)

    def to_json(self, *, explain: bool = True) -> dict[str, Any]:
        """JSON-ready dict: ``options[]`` with name, total_usd, values and items."""
        return {
            "scenario": self.name,
            "kind": self.kind,
            "preset": self.preset,
            "verdict": self.verdict,
            "cheapest": self.cheapest,
            "fastest": self.fastest,
            "feasible_options": self.feasible_options,
            "options": [o.to_json(explain=explain) for o in self.options],
            "pareto_time": self.pareto_time,
            "pareto_latency": self.pareto_latency,
            "assumptions": self.assumptions,
            "stale_inputs": self.stale_inputs,
            "oldest_price": self.oldest_price,
        }


# --------------------------------------------------------------------------- public API
def compare(
    scenario: Scenario,
    catalog: Catalog,
    *,
    preset: str | None = None,
    efficiency: EfficiencyParams | None = None,
) -> Comparison:
    """Price every option of a scenario item by item.

    Parameters
    ----------
    scenario : Scenario
        Workload and options, or a multi-stage plan.
    catalog : Catalog
        Catalog to resolve ids and factors from.
    preset : str, optional
        Assumption preset; overrides ``scenario.preset``.
    efficiency : EfficiencyParams, optional
        Efficiency parameters for the engines (default: the globally fitted ones, or the
        scenario's calibration profile).

    Returns
    -------
    Comparison
        One :class:`~aitco.cost.tco.Breakdown` per option, cheapest and fastest marked.
    """
    preset_id = preset or scenario.preset
    eff = efficiency or _efficiency(scenario)
    fac = CostFactors(catalog, preset_id, dict(scenario.assumptions))
    memo: dict[Any, Any] = {}  # engine results of this call (same hardware, other pricing)
    if scenario.stages:
        parts = []
        for i, st in enumerate(scenario.stages):
            b = _price(
                scenario, st.workload, st.option, catalog, fac, eff, memo, where=f"stages[{i}]",
                one_off=i == 0,
            )  # fmt: skip
            b.name = st.name
            parts.append(b)
        plan = add_stages(scenario.name, parts)
        plan.values["feasible"] = all(is_feasible(p) for p in parts)
        plan.values["infeasible_reasons"] = [
            f"{p.name}: {r}" for p in parts for r in p.values.get("infeasible_reasons", [])
        ]
        plan.assumptions = _assumption_lines(fac)
        comp = Comparison(name=scenario.name, kind="plan", options=[plan], preset=preset_id)
    else:
        assert scenario.workload is not None  # guaranteed by Scenario validation
        opts = [
            _price(scenario, scenario.workload, opt, catalog, fac, eff, memo, where=f"options[{i}]")
            for i, opt in enumerate(scenario.options)
        ]
        _unique_names(opts)
        comp = Comparison(
            name=scenario.name, kind=scenario.workload.kind, options=opts, preset=preset_id
        )
    comp.assumptions = _assumption_lines(fac)
    _mark_implausible(comp)
    _mark(comp)
    used = [
        (b.hardware, b.pricing, b.values.get("offer"), b.values.get("region"))
        for o in comp.options
        for b in (o.stages or [o])
    ]
    comp.stale_inputs = stale_price_inputs(catalog, used)
    comp.oldest_price = oldest_price_input(catalog, used)
    return comp


def tco(scenario: Scenario, catalog: Catalog, **kw: Any) -> Comparison:
    """Alias of :func:`compare` for one scenario (``aitco tco``)."""
    return compare(scenario, catalog, **kw)


# --------------------------------------------------------------------------- internals
def _efficiency(scenario: Scenario) -> EfficiencyParams:
    if scenario.calibration:
        return load_profile(scenario.calibration).efficiency
    return DEFAULT_EFFICIENCY


def _unique_names(opts: list[Breakdown]) -> None:
    seen: dict[str, int] = {}
    for o in opts:
        if o.name in seen:
            seen[o.name] += 1
            o.name = f"{o.name} #{seen[o.name]}"
        else:
            seen[o.name] = 1


def _mark_implausible(comp: Comparison) -> None:
    """Mark as not feasible what costs or lasts implausibly much (:mod:`aitco.limits`)."""
    for o in comp.options:
        for b in o.stages or [o]:
            if math.isnan(b.total_usd):  # not priced (it cannot run): its reason is said
                continue
            why = implausible_reasons(b.total_usd, b.values.get("wall_clock_days"))
            if why:
                b.values["feasible"] = False
                b.values["infeasible_reasons"] = [*b.values.get("infeasible_reasons", []), *why]


def _mark(comp: Comparison) -> None:
    """Set the choices: :func:`aitco.decide.choices.choose` over the verdicts just made."""
    got = choose(comp.options, comp.kind)
    comp.cheapest, comp.fastest = got.cheapest, got.fastest
    comp.feasible_options = got.feasible_options
    comp.pareto_time, comp.pareto_latency = got.pareto_time, got.pareto_latency
    comp.verdict = got.verdict


def _assumption_lines(fac: CostFactors) -> list[str]:
    return fac.assumption_lines()


def _engine(kind: str) -> Any:
    """Return the performance engine function of ``kind`` ("training" or "inference")."""
    return estimate_training if kind == "training" else estimate_inference


def _guarded(fn: Any, what: str, *args: Any, **kw: Any) -> Any:
    """Run an engine; an arithmetic failure inside it becomes one clear error, not a traceback."""
    try:
        return fn(*args, **kw)
    except ArithmeticError as exc:
        msg = f"{what}: the performance engine failed ({type(exc).__name__}: {exc})"
        raise AitcoError(msg) from exc


def _plan_guarded(fn: Any, what: str, *args: Any, **kw: Any) -> Any:
    """:func:`_guarded` for the training engine; a bad plan field is named by its scenario path."""
    try:
        return _guarded(fn, what, *args, **kw)
    except InputError as exc:
        name = exc.field.removeprefix("--").replace("-", "_")  # a CLI flag names the same field
        if type(exc) is InputError and name in ParallelPlan.model_fields:
            raise InputError(
                f"workload.plan.{name}", exc.value, exc.expected, hint=exc.hint
            ) from exc
        raise


#: Headline values of an option that cannot run: no figure, not a zero.
INFEASIBLE_NONE_KEYS = (
    "wall_clock_h", "wall_clock_days", "productive_h", "gpu_hours", "tokens_per_s",
    "tokens_per_s_per_gpu", "mfu", "usd_per_million_tokens", "energy_kwh", "kg_co2e",
    "output_tokens_per_s", "ttft_s", "tpot_s", "usd_per_million_output_tokens",
)  # fmt: skip
#: The memory figures an option that does not fit reports (the memory it needs). [GB]
MEMORY_KEYS = ("memory_per_gpu_gb", "memory_capacity_gb", "over_by_gb")
#: The first words of the reason of an option that does not fit, in every command.
NOT_FIT = "does not fit in memory"


def _infeasible_option(
    opt: HardwareOption, kind: str, reason: str, *, fits: bool, memory: dict[str, Any]
) -> Breakdown:
    """Return an option the engine says cannot run, with the engine's reason.

    No cost items, ``total_usd`` undefined (NaN, null in JSON), ``feasible`` false; never the
    cheapest nor the fastest. The other options of the comparison are priced as usual. An
    option that does not fit says so first (:data:`NOT_FIT`) and reports the memory it needs
    per GPU (:data:`MEMORY_KEYS`, from the engine).
    """
    b = Breakdown(
        name=option_name(opt), kind=kind, hardware=opt.hardware, pricing=opt.pricing,
        gpus=opt.gpus, total_usd=math.nan,
    )  # fmt: skip
    if not fits and not reason.startswith(NOT_FIT):
        reason = f"{NOT_FIT}: {reason}"
    b.values = {
        "feasible": False,
        "infeasible_reasons": [reason],
        "fits": fits,
        **dict.fromkeys(INFEASIBLE_NONE_KEYS),
        **{k: float(memory[k]) for k in MEMORY_KEYS if memory.get(k) is not None},
    }
    return b


def _price(
    scn: Scenario,
    w: TrainingWorkload | InferenceWorkload,
    opt: HardwareOption,
    cat: Catalog,
    fac: CostFactors,
    eff: EfficiencyParams,
    memo: dict[Any, Any],
    *,
    where: str,
    one_off: bool = True,
) -> Breakdown:
    acc, sysm = cat.hardware(opt.hardware, field=f"{where}.hardware")
    acc = acc.with_power_limit(opt.power_limit_w, field=f"{where}.power_limit_w")
    cat.check_region(opt.region, field=f"{where}.region")  # unknown: did you mean, not ignored
    model = cat.resolve_model(w.model, field="workload.model")
    # a training job is one network-joined unit; a service's unit is one replica (tp x pp)
    unit = opt.gpus
    if isinstance(w, InferenceWorkload) and (w.tp or w.pp):
        unit = min(opt.gpus, (w.tp or 1) * (w.pp or 1))
    price, sysm = option_price(
        cat, opt, acc, sysm, fac, depreciation=scn.ops.depreciation, unit_gpus=unit, where=where
    )
    hardware = (acc, sysm, model)
    if isinstance(w, TrainingWorkload):
        return _training(scn, w, opt, hardware, price, fac, eff, memo, where, one_off)
    return _inference(scn, w, opt, hardware, price, fac, eff, memo, where, one_off)


def _training(
    scn: Scenario,
    w: TrainingWorkload,
    opt: HardwareOption,
    hardware: tuple[Accelerator, System, ModelArch],
    price: GpuHourPrice,
    fac: CostFactors,
    eff: EfficiencyParams,
    memo: dict[Any, Any],
    where: str,
    one_off: bool = True,
) -> Breakdown:
    """Run the training engine (once per hardware) and price the option's run."""
    acc, sysm, model = hardware
    plan = w.plan.model_dump(exclude_none=True, exclude_defaults=True) or None
    key = (
        "training",
        model.id,
        acc.id,
        acc.power_limit_w,  # an option's own power limit changes the engine's answer
        sysm.model_dump_json(),
        opt.gpus,
        w.model_dump_json(),
        eff.model_dump_json(),
    )
    res = memo.get(key)
    if res is None:  # the same hardware under several pricing modes runs the engine once
        res = _plan_guarded(
            _engine("training"),
            f"{where}: training {model.id} on {opt.gpus} x {acc.id}",
            model,
            acc,
            sysm,
            opt.gpus,
            seq_len=w.seq_len,
            global_batch=w.batch_sequences(param_counts(model).active, opt.gpus),
            tokens=w.tokens,
            precision=w.precision,
            method=w.method,
            plan=plan,
            efficiency=eff,
            lora_rank=w.lora_rank,
            # the plan `aitco train` chooses: within the interval of the fastest, nearest to
            # published layouts of similar runs (one plan, one GPU-hour figure in every command)
            practice=practice_for(
                param_counts(model).total, acc.family, w.precision, model.moe is not None
            ),
        )
        memo[key] = res
    v = res.values
    if not v.get("feasible", True):  # the engine's one verdict: no throughput, so no cost
        fits = bool(v["fits"])
        memory = {} if fits else v
        return _infeasible_option(opt, "training", v["infeasible_reason"], fits=fits, memory=memory)
    return price_training(scn, w, opt, hardware, price, fac, res, where=where, one_off=one_off)


def _inference(
    scn: Scenario,
    w: InferenceWorkload,
    opt: HardwareOption,
    hardware: tuple[Accelerator, System, ModelArch],
    price: GpuHourPrice,
    fac: CostFactors,
    eff: EfficiencyParams,
    memo: dict[Any, Any],
    where: str,
    one_off: bool = True,
) -> Breakdown:
    """Size the option's service with the inference engine and price it."""
    acc, sysm, model = hardware
    # a MIG slice and/or a time-slicing share: n counts shares, priced per share
    acc, shares = service_mod.fractional_accelerator(acc, w.mig, w.time_slice, "workload.")

    def run(gpus: int, qps: float | None) -> Any:
        key = (
            "inference",
            model.id,
            acc.id,
            acc.power_limit_w,
            sysm.model_dump_json(),
            gpus,
            w.model_dump_json(),
            eff.model_dump_json(),
            qps,
        )
        if key not in memo:
            memo[key] = _guarded(
                _engine("inference"),
                f"{where}: serving {model.id} on {gpus} x {acc.id}",
                model,
                acc,
                sysm,
                gpus,
                precision=w.precision,
                kv_precision=w.kv_precision,
                input_tokens=w.input_tokens,
                output_tokens=w.output_tokens,
                batch=w.batch,
                concurrency=w.concurrency,
                qps=w.qps if qps is None else qps,
                mode=w.mode,
                tp=w.tp,
                pp=w.pp,
                slo_ttft_ms=w.slo_ttft_ms,
                slo_tpot_ms=w.slo_tpot_ms,
                efficiency=eff,
                prefix_cache_hit_rate=w.prefix_cache_hit_rate,
                scheduler_steps=w.scheduler_steps,
                max_batched_tokens=w.max_batched_tokens,
                allocation=w.kv_allocation,
                ep=w.ep,
            )
        return memo[key]

    try:
        size = size_service(w, opt, run, sysm, price.usd_per_gpu_h / shares, eff)
    except InfeasiblePlan as exc:  # does not fit: the option is infeasible, with the reason
        return _infeasible_option(
            opt, "inference", exc.hint or str(exc), fits=False, memory=getattr(exc, "values", {})
        )
    billed = bill_service(price, opt, size, sysm, w, shares)
    return price_service(
        scn, w, opt, (acc, sysm, model), billed, fac, size, shares=shares, one_off=one_off
    )

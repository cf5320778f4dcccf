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
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from aitco.calibrate.profile import load_profile
from aitco.catalog.loader import Catalog
from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.catalog.staleness import oldest_price_input, stale_price_inputs
from aitco.cost import carbon, cloud, data, people, power, reliability
from aitco.cost.factors import CostFactors
from aitco.cost.pricing import (
    COMMITTED_TERM_YEARS,
    DEFAULT_REGION,
    HELD,
    OWNED,
    PAY_AS_USED,
    RENTED,
    GpuHourPrice,
    offer_system,
    owned_price,
    rental_price,
    slice_price,
)
from aitco.cost.tco import Breakdown, add_stages
from aitco.decide.practice import practice_for
from aitco.decide.scenario import (
    DataCosts,
    HardwareOption,
    InferenceWorkload,
    OpsAssumptions,
    ParallelPlan,
    Scenario,
    TrainingWorkload,
)
from aitco.errors import AitcoError, CatalogError, InputError
from aitco.perf import service as service_mod
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.flops import model_shape
from aitco.perf.inference import estimate_inference
from aitco.perf.params import param_counts
from aitco.perf.training import checkpoint_save_time_s, estimate_training
from aitco.units import (
    DAYS_PER_MONTH,
    GIGA,
    HOURS_PER_DAY,
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    KG_PER_TONNE,
    MEGA,
    SECONDS_PER_HOUR,
    WATTS_PER_KILOWATT,
)


class Comparison(BaseModel):
    """The options of one scenario (or one multi-stage plan), priced item by item.

    Attributes
    ----------
    name : str
        Scenario name.
    kind : str
        ``"training"``, ``"inference"`` or ``"plan"``.
    options : list of Breakdown
        One breakdown per option.
    cheapest, fastest : str or None
        Names of the cheapest option and of the fastest (shortest wall clock for training,
        lowest latency for inference), among those that fit in memory.
    preset : str or None
        Assumption preset applied.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str
    options: list[Breakdown] = Field(default_factory=list)
    cheapest: str | None = None
    fastest: str | None = None
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
            "cheapest": self.cheapest,
            "fastest": self.fastest,
            "options": [o.to_json(explain=explain) for o in self.options],
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


def is_feasible(o: Breakdown) -> bool:
    """Whether an option can run as priced (``feasible``; a plan: every stage feasible)."""
    if o.stages:
        return all(is_feasible(s) for s in o.stages)
    return bool(o.values.get("feasible", True))


def _mark(comp: Comparison) -> None:
    """Mark the cheapest and the fastest among the feasible options (a tie in time: cheaper)."""
    ok = [o for o in comp.options if is_feasible(o)]
    if not ok:
        return
    comp.cheapest = min(ok, key=lambda o: o.total_usd).name
    if comp.kind == "inference":
        lat = [o for o in ok if isinstance(o.values.get("e2e_latency_s"), int | float)]
        if lat:
            comp.fastest = min(lat, key=lambda o: (o.values["e2e_latency_s"], o.total_usd)).name
    else:
        comp.fastest = min(
            ok, key=lambda o: (o.values.get("wall_clock_h", math.inf), o.total_usd)
        ).name


def _assumption_lines(fac: CostFactors) -> list[str]:
    return fac.assumption_lines()


def _option_name(opt: HardwareOption) -> str:
    return opt.name or f"{opt.hardware} x{opt.gpus} {opt.pricing}"


def _rental_price(
    cat: Catalog,
    acc: Accelerator,
    opt: HardwareOption,
    where: str,
    gpus: int | None = None,
    unit_gpus: int | None = None,
) -> GpuHourPrice:
    """:func:`aitco.cost.pricing.rental_price` of an option (``gpus`` in units of ``unit_gpus``)."""
    return rental_price(
        cat, acc, opt.pricing, opt.gpus if gpus is None else gpus, unit_gpus=unit_gpus,
        usd_per_gpu_hour=opt.usd_per_gpu_hour, offer=opt.offer, provider=opt.provider,
        region=opt.region, where=where,
    )  # fmt: skip


def _price_per_gpu_h(
    cat: Catalog,
    acc: Accelerator,
    sysm: System,
    opt: HardwareOption,
    fac: CostFactors,
    scn: Scenario,
    where: str,
    unit_gpus: int | None = None,
) -> GpuHourPrice:
    if opt.pricing in RENTED:
        return _rental_price(cat, acc, opt, where, opt.gpus, unit_gpus)
    pr = owned_price(acc, fac, scn.ops.depreciation, opt.gpus)
    pr.instances = math.ceil(opt.gpus / sysm.devices_per_node)
    pr.gpus_billed = opt.gpus
    return pr


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


def _checkpoint_bytes(model: ModelArch, w: TrainingWorkload) -> float:
    if w.method == "full":
        trainable = float(param_counts(model).total)
    else:
        # LoRA adapters: the one count of aitco.perf.flops (every linear projection, rank r)
        trainable = float(model_shape(model, lora_rank=w.lora_rank).lora_params)
    return trainable * reliability.CHECKPOINT_BYTES_PER_PARAM_ADAM


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
    acc = acc.with_power_limit(opt.power_limit_w)  # below the TDP: slower compute, less power
    model = cat.resolve_model(w.model, field="workload.model")
    # a training job is one network-joined unit; a service's unit is one replica (tp x pp)
    unit = opt.gpus
    if isinstance(w, InferenceWorkload) and (w.tp or w.pp):
        unit = min(opt.gpus, (w.tp or 1) * (w.pp or 1))
    price = _price_per_gpu_h(cat, acc, sysm, opt, fac, scn, where, unit)
    price.reprice = (
        (lambda g, u: _rental_price(cat, acc, opt, where, g, u)) if opt.pricing in RENTED else None
    )
    if price.offer and opt.hardware not in cat.systems:
        osys = offer_system(cat, acc, sysm, price.offer)
        if osys is not None:
            if osys.node_power_w != cat.systems[osys.id].node_power_w:
                price.inputs["node_power_w_from"] = sysm.id
            sysm = osys
            price.inputs["system"] = osys.id
    if isinstance(w, TrainingWorkload):
        return _training(scn, w, opt, acc, sysm, model, price, fac, eff, memo, where, one_off)
    return _inference(scn, w, opt, acc, sysm, model, price, fac, eff, memo, where, one_off)


@dataclass
class _Run:
    """Hours of a run or service period, as the items need them."""

    gpus: int
    productive_h: float
    wall_h: float
    overhead: dict[str, float]
    interruptions: float
    failure_share: float
    busy_fraction: float
    busy_h: float = 0.0


def _training(
    scn: Scenario,
    w: TrainingWorkload,
    opt: HardwareOption,
    acc: Accelerator,
    sysm: System,
    model: ModelArch,
    price: GpuHourPrice,
    fac: CostFactors,
    eff: EfficiencyParams,
    memo: dict[Any, Any],
    where: str,
    one_off: bool = True,
) -> Breakdown:
    est = _engine("training")
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
            est,
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
    productive_h = float(v["wall_clock_h"])
    n = opt.gpus
    nodes = math.ceil(n / sysm.devices_per_node)
    instances = price.instances if opt.pricing in RENTED and price.offer else nodes

    spot_id = None
    sigma = 0.0
    if opt.pricing == "spot":
        offer = fac.catalog.offers.get(price.offer) if price.offer else None
        spot_id, sigma = fac.spot_rate_per_instance_h(
            price.provider or opt.provider, f"{where}.pricing", offer.instance if offer else None
        )
    g = training_goodput(
        model, w, scn.ops, fac, n, nodes, productive_h,
        spot_rate_per_instance_h=sigma, instances=instances, where=where,
    )  # fmt: skip
    o = {k: float(x) for k, x in g["overheads"].items()}
    rate, rate_fail, tau, tau_how = (
        float(g["rate_per_h"]),
        float(g["failure_rate_per_h"]),
        float(g["tau_h"]),
        g["tau_rule"],
    )
    save_h, ckpt_bytes, async_frac, restart_h = (
        float(g["save_h"]),
        g["ckpt_bytes"],
        g["async"],
        g["restart_h"],
    )
    lam_id, restart_id = "failure.interruptions-per-gpu-hour", "restart.hours"
    fw_id = "firmware.downtime-hours-per-year"
    wall_h = float(o["wall_clock_h"])
    run = _Run(
        gpus=n,
        productive_h=productive_h,
        wall_h=wall_h,
        overhead={
            k: float(o[k]) for k in ("rework_h", "restart_h", "checkpoint_stall_h", "firmware_h")
        },
        interruptions=float(o["interruptions"]),
        failure_share=rate_fail / rate if rate > 0 else 1.0,
        busy_fraction=productive_h / wall_h if wall_h > 0 else 1.0,
        busy_h=productive_h,
    )
    b = Breakdown(
        name=_option_name(opt), kind="training", hardware=opt.hardware, pricing=opt.pricing, gpus=n
    )
    _compute_items(b, run, price, opt)
    net_id = "failure.network-interruption-fraction"
    _reliability_items(
        b,
        run,
        price,
        opt,
        fac,
        spot_id=spot_id,
        restart_h=restart_h,
        extra_inputs={
            "checkpoint_interval_h": tau,
            "checkpoint_interval_rule": tau_how,
            "checkpoint_save_s": save_h * SECONDS_PER_HOUR,
            "checkpoint_bytes": ckpt_bytes,
            "interruptions_per_h": rate,
            "async_stall_fraction": async_frac,
        },
        ids=[lam_id, net_id, restart_id, fw_id, "checkpoint.write-gb-s-per-node"],
    )
    _instance_items(b, run, price, opt)
    # host power: the job's share of its servers' slots (a 1-GPU job pays 1/8 of an 8-GPU host)
    host_nodes = float(power.host_share_nodes(n, sysm.devices_per_node))
    kwh, kg = _power_items(b, run, acc, sysm, price, opt, fac, host_nodes)
    _people_items(b, run, price, opt, fac, nodes=nodes, repair_model=scn.ops.repair_model)
    tokens = float(w.tokens)
    months = wall_h / HOURS_PER_MONTH
    dataset_gb, ckpt_gb = training_storage_gb(scn.data, scn.ops, fac, tokens, ckpt_bytes)
    _data_items(b, scn, fac, months, dataset_gb, ckpt_gb, one_off=one_off)
    _compliance_items(b, scn, fac, wall_h / HOURS_PER_DAY)
    _carbon_items(b, fac, kg)
    b.finalize()
    gpu_hours = n * wall_h
    b.values = {
        "fits": bool(v.get("fits", True)),
        "wall_clock_h": wall_h,
        "wall_clock_days": wall_h / HOURS_PER_DAY,
        "productive_h": productive_h,
        "goodput": float(o["goodput"]),
        "gpu_hours": gpu_hours,
        "tokens": tokens,
        "tokens_per_s": _f(v.get("tokens_per_s")),
        "tokens_per_s_per_gpu": _f(v.get("tokens_per_s_per_gpu")),
        "mfu": _f(v.get("mfu")),
        "interruptions": run.interruptions,
        "checkpoint_interval_h": tau,
        "price_usd_per_gpu_h": price.usd_per_gpu_h,
        "effective_usd_per_gpu_h": b.total_usd / gpu_hours if gpu_hours else math.nan,
        "usd_per_million_tokens": b.total_usd / tokens * MEGA,
        "energy_kwh": kwh,
        "kg_co2e": kg,
        "energy_per_token_j": _per_token_j(kwh, tokens),
        "offer": price.offer,
        **price.capex,
    }
    b.values.update(_instance_values(price, b))
    b.assumptions = [f"throughput from aitco.perf.training ({res.__class__.__name__})"]
    return b


def training_goodput(
    model: ModelArch,
    w: TrainingWorkload,
    ops: OpsAssumptions,
    fac: CostFactors,
    gpus: Any,
    nodes: Any,
    productive_h: Any,
    *,
    spot_rate_per_instance_h: Any = 0.0,
    instances: Any = 0,
    where: str = "option",
) -> dict[str, Any]:
    """Goodput of a training run: interruption rates, checkpoint interval and lost hours.

    Vectorised: ``gpus``, ``nodes``, ``productive_h``, ``spot_rate_per_instance_h`` and
    ``instances`` may be arrays of equal shape (a sweep's rows); the rates, intervals and
    overheads then are arrays too (a single option is the 0-d case).

    Parameters
    ----------
    model : ModelArch
        Architecture (for the checkpoint size).
    w : TrainingWorkload
        Workload (method, LoRA rank, fixed checkpoint interval).
    ops : OpsAssumptions
        Checkpointing choices.
    fac : CostFactors
        Factor values.
    gpus, nodes : int
        Accelerators and nodes of the job. [count]
    productive_h : float
        Wall-clock hours at the modelled throughput. [h]
    spot_rate_per_instance_h : float
        Spot preemptions per instance-hour (0 when not on spot). [1/h]
    instances : int
        Instances the job runs on. [count]
    where : str
        Field prefix for errors.

    Returns
    -------
    dict
        ``overheads`` (:func:`aitco.cost.reliability.goodput_overheads`), ``rate_per_h``,
        ``failure_rate_per_h``, ``tau_h``, ``tau_rule``, ``save_h``, ``ckpt_bytes``, ``async``,
        ``restart_h``.
    """
    lam = fac.value("failure.interruptions-per-gpu-hour")
    rate_fail = np.asarray(reliability.job_interruption_rate_per_h(lam, gpus), dtype=float)
    rate_spot = np.asarray(
        reliability.job_interruption_rate_per_h(0.0, 0, spot_rate_per_instance_h, instances),
        dtype=float,
    )
    rate = rate_fail + rate_spot
    ckpt_bytes = _checkpoint_bytes(model, w)
    bw = fac.value("checkpoint.write-gb-s-per-node")
    save_h = _checkpoint_save_h(model, w, ckpt_bytes, bw, nodes)
    tau: Any
    if w.checkpoint_interval_h is not None and ops.checkpointing != "none":
        tau = np.full_like(rate, w.checkpoint_interval_h)
        tau_how = "workload.checkpoint_interval_h"
    elif ops.checkpointing == "fixed":
        raise InputError(
            "workload.checkpoint_interval_h",
            None,
            "an interval in hours when ops.checkpointing is 'fixed'",
        )
    elif ops.checkpointing == "none":
        tau = np.full_like(rate, math.nan)
        tau_how = "no checkpoints"
        fld = (
            f"{where}.pricing (spot) with ops.checkpointing"
            if np.any(rate_spot > 0)
            else "ops.checkpointing"
        )
        reliability.require_checkpoint_interval(tau, rate, fld)
    else:
        with np.errstate(divide="ignore", over="ignore"):  # a subnormal rate: MTBF inf
            mtbf = np.where(rate > 0, 1.0 / np.where(rate > 0, rate, 1.0), math.inf)
        tau = np.asarray(reliability.optimal_checkpoint_interval_h(save_h, mtbf), dtype=float)
        tau_how = "Young/Daly optimum sqrt(2 delta M) - delta"
    async_frac = fac.value("checkpoint.async-stall-fraction") if ops.checkpoint_async else 1.0
    restart_h = fac.value("restart.hours")
    phi = float(
        reliability.firmware_downtime_fraction(fac.value("firmware.downtime-hours-per-year"))
    )
    o = reliability.goodput_overheads(productive_h, rate, tau, save_h, restart_h, phi, async_frac)
    return {
        "overheads": o,
        "rate_per_h": rate,
        "failure_rate_per_h": rate_fail,
        "tau_h": tau,
        "tau_rule": tau_how,
        "save_h": save_h,
        "ckpt_bytes": ckpt_bytes,
        "async": async_frac,
        "restart_h": restart_h,
    }


# ------------------------------------------------------------------ vectorised item amounts
# Each item's amount is one function of arrays, called by compare's per-option item assembly
# (0-d arrays) and by the sweep (one element per configuration): one formula per item.


def gpu_hours_usd(gpus: Any, hours: Any, usd_per_gpu_h: Any) -> np.ndarray:
    """Return accelerators x hours x price per accelerator-hour (lost or spare hours) [USD]."""
    return np.asarray(np.asarray(gpus, dtype=float) * hours * usd_per_gpu_h, dtype=float)


def idle_instance_usd(gpus_billed: Any, gpus: Any, wall_h: Any, usd_per_gpu_h: Any) -> np.ndarray:
    """Return the idle accelerators of the last instance, billed for the wall clock [USD]."""
    idle = np.maximum(np.asarray(gpus_billed, dtype=float) - gpus, 0.0)
    return np.asarray(cloud.rental_usd(idle * wall_h, usd_per_gpu_h), dtype=float)


def committed_term_usd(
    gpus_billed: Any, held_h: Any, term_h: Any, reuse_fraction: Any, usd_per_gpu_h: Any
) -> dict[str, np.ndarray]:
    """Return the unused part of whole committed terms, less reuse (``usd``, ``terms``)."""
    held = np.asarray(held_h, dtype=float)
    th = np.asarray(term_h, dtype=float)
    terms = np.maximum(np.ceil(held / th), 1.0)
    unused_h = np.maximum(terms * th - held, 0.0)
    usd = cloud.rental_usd(
        np.asarray(gpus_billed, dtype=float) * unused_h * (1.0 - np.asarray(reuse_fraction)),
        usd_per_gpu_h,
    )
    return {"usd": np.asarray(usd, dtype=float), "terms": terms, "unused_h": unused_h}


def rework_usd(
    gpus: Any, rework_h: Any, failure_share: Any, network_fraction: Any, usd_per_gpu_h: Any
) -> dict[str, np.ndarray]:
    """Return the work lost to interruptions: failure, network and spot shares [USD]."""
    lost = np.asarray(gpus, dtype=float) * rework_h * usd_per_gpu_h
    fs = np.asarray(failure_share, dtype=float)
    return {
        "failure_rework": np.asarray(lost * fs * (1 - network_fraction), dtype=float),
        "network_rework": np.asarray(lost * fs * network_fraction, dtype=float),
        "spot_preemption_rework": np.asarray(lost * (1 - fs), dtype=float),
    }


#: Labour role whose wage prices operations, incident and audit time.
OPS_ROLE_ID = "labour.usd-per-hour.sre"
#: Employer cost of compensation over wages (wage -> loaded labour rate).
EMPLOYER_COST_ID = "labour.employer-cost-factor"
#: CostFactors of the on-call minimum team of an owned cluster.
ON_CALL_IDS = ("ops.on-call-seats.owned", "labour.productive-hours-per-fte-year")
#: Repair-labour models: per-incident staff hours, or scaled by the job's node count.
REPAIR_SCALE_ID = "ops.repair-scale-per-node-doubling"


def loaded_labour_rate(fac: CostFactors, role_id: str = OPS_ROLE_ID) -> tuple[float, list[str]]:
    """Return the loaded hourly rate of ``role_id`` (wage x employer-cost factor) and its ids."""
    w = people.loaded_rate_usd_per_h(fac.value(role_id), fac.value(EMPLOYER_COST_ID))
    return float(w), [role_id, EMPLOYER_COST_ID]


def on_call_min_fte(fac: CostFactors) -> float:
    """Return the minimum operations team of an owned cluster (24x7 on-call seats) [FTE]."""
    seats, hours = (fac.value(i) for i in ON_CALL_IDS)
    return float(people.on_call_fte(seats, hours))


def support_schedule(
    fac: CostFactors, provider: str | None
) -> tuple[Any, Any, float, list[str]] | None:
    """Return a provider's support fee brackets (breaks, rates, monthly minimum, ids), or None.

    None where the catalog tables no plan for the provider (no support item is charged).
    """
    key = (provider or "").lower()
    ids = [
        f"support.tier-breaks-usd.{key}",
        f"support.tier-rates.{key}",
        f"support.minimum-usd-per-month.{key}",
    ]
    if not key or not fac.has(ids[1]):
        return None
    breaks, rates = fac.curve(ids[0]), fac.curve(ids[1])
    if len(breaks) != len(rates):
        raise CatalogError(ids[0], breaks, f"one break per rate of {ids[1]} ({len(rates)})")
    return breaks, rates, fac.value(ids[2]), ids


def support_billed_months(wall_h: Any, term_h: Any) -> np.ndarray:
    """Months a support plan bills for a run: its wall clock, or its whole committed terms.

    At least one month (plans are billed by the month). ``term_h`` NaN: no committed term.
    """
    w = np.asarray(wall_h, dtype=float)
    th = np.asarray(term_h, dtype=float)
    has = np.isfinite(th) & (th > 0)
    safe = np.where(has, th, 1.0)
    billed = np.where(has, np.maximum(np.ceil(w / safe), 1.0) * safe, w)
    return np.asarray(np.maximum(billed / HOURS_PER_MONTH, 1.0), dtype=float)


def support_fee_usd(fac: CostFactors, providers: Any, spend_usd: Any, months: Any) -> np.ndarray:
    """Tiered support fee of each row's provider on its spend (0 where no plan is tabled)."""
    prov = np.asarray(providers, dtype=object)
    spend = np.asarray(spend_usd, dtype=float)
    m = np.broadcast_to(np.asarray(months, dtype=float), spend.shape)
    prov = np.broadcast_to(prov, spend.shape)
    out = np.zeros(spend.shape)
    for key in {str(x) for x in prov.ravel() if x}:
        sched = support_schedule(fac, key)
        if sched is None:
            continue
        sel = prov == key
        breaks, rates, low, _ = sched
        out[sel] = people.tiered_fee_usd(spend[sel], m[sel], breaks, rates, low)
    return out


def labour_items_usd(
    *,
    gpus: Any,
    wall_h: Any,
    interruptions: Any,
    owned: Any,
    nodes: Any,
    fac: CostFactors,
    repair_model: str = "per_incident",
) -> dict[str, np.ndarray]:
    """Return ``ops_staff`` and the incident or repair labour of runs, as arrays [USD].

    Operations staff: the larger of the per-GPU ratio and, for owned clusters, the 24x7
    on-call minimum team; all labour at the loaded rate. ``repair_model``: ``per_incident``
    (``incident_response``: interruptions x staff hours x rate) or ``cluster_scale``
    (``repair_labour``: the same x 1 + alpha log2(nodes)).
    """
    w, _ = loaded_labour_rate(fac)
    own = np.asarray(owned, dtype=bool)
    fte = np.where(
        own, fac.value("ops.fte-per-1000-gpus.owned"), fac.value("ops.fte-per-1000-gpus.cloud")
    )
    min_fte = np.where(own, on_call_min_fte(fac), 0.0)
    out = {"ops_staff": np.asarray(people.ops_staff_usd(gpus, wall_h, fte, w, min_fte), float)}
    mttr = fac.value("ops.mttr-staff-hours")
    if repair_model == "cluster_scale":
        a = fac.value(REPAIR_SCALE_ID)
        out["repair_labour"] = np.asarray(
            people.repair_labour_usd(interruptions, mttr, w, nodes, a), dtype=float
        )
    elif repair_model == "per_incident":
        out["incident_response"] = np.asarray(
            people.incident_usd(interruptions, mttr, w), dtype=float
        )
    else:
        raise InputError("ops.repair_model", repair_model, "one of per_incident, cluster_scale")
    return out


def held_items_usd(
    *,
    gpus: Any,
    wall_h: Any,
    usd_per_gpu_h: Any,
    gpus_billed: Any,
    rented: Any,
    held: Any,
    owned: Any,
    term_h: Any,
    fac: CostFactors,
    reuse_fraction: float,
) -> dict[str, np.ndarray]:
    """Items of holding ``gpus`` accelerators for ``wall_h`` hours, as arrays [USD].

    ``hot_spares`` (owned: the spare share of the fleet), ``fragmentation_idle`` (held
    capacity the scheduler cannot fill), ``idle_instance_gpus`` (rented: the idle accelerators
    of the last instance) and ``committed_term_unused`` (the unused rest of a committed term,
    ``term_h`` NaN: none); also ``fragmentation_idle_gpu_h``. Shared by training runs and
    services (:func:`training_run_items_usd`, :func:`serving_run_items_usd`).
    """
    n = np.asarray(gpus, dtype=float)
    wh = np.asarray(wall_h, dtype=float)
    p = np.asarray(usd_per_gpu_h, dtype=float)
    spares = fac.value("spares.fraction")  # a catalog factor: missing is an error naming it
    frag_gpu_h = np.where(
        held,
        reliability.fragmentation_idle_h(n * wh, fac.value("fragmentation.idle-fraction")),
        0.0,
    )
    th = np.asarray(term_h, dtype=float)
    has_term = np.isfinite(th)
    held_h = wh + np.where(n > 0, frag_gpu_h / np.where(n > 0, n, 1.0), 0.0)
    term = committed_term_usd(gpus_billed, held_h, np.where(has_term, th, 1.0), reuse_fraction, p)
    return {
        "hot_spares": np.where(owned, gpu_hours_usd(n * wh, spares, p), 0.0),
        "fragmentation_idle": frag_gpu_h * p,
        "idle_instance_gpus": np.where(rented, idle_instance_usd(gpus_billed, n, wh, p), 0.0),
        "committed_term_unused": np.where(has_term, term["usd"], 0.0),
        "fragmentation_idle_gpu_h": np.asarray(frag_gpu_h, dtype=float),
    }


def cloud_support_usd(
    items: dict[str, Any], rented: Any, fac: CostFactors, providers: Any, wall_h: Any, term_h: Any
) -> np.ndarray:
    """``cloud_support`` of rented rows: each provider's tiered fee on the supported spend.

    The spend is the sum of :data:`SUPPORTED_SPEND_ITEMS` in ``items``, billed over
    :func:`support_billed_months` (the wall clock, or whole committed terms).
    """
    spend = sum(items[k] for k in SUPPORTED_SPEND_ITEMS if k in items)
    months = support_billed_months(wall_h, term_h)
    return np.where(rented, support_fee_usd(fac, providers, spend, months), 0.0)


def training_run_items_usd(
    *,
    gpus: Any,
    productive_h: Any,
    overheads: dict[str, Any],
    failure_share: Any,
    usd_per_gpu_h: Any,
    gpus_billed: Any,
    rented: Any,
    spot: Any,
    held: Any,
    owned: Any,
    term_h: Any,
    fac: CostFactors,
    reuse_fraction: float,
    support_provider: Any,
    nodes: Any = None,
    repair_model: str = "per_incident",
) -> dict[str, np.ndarray]:
    """Compute, instance, reliability and people items of training runs, as arrays.

    The same item functions, in the same order, as :func:`_training` builds for one option
    (:func:`_compute_items`, :func:`_reliability_items`, :func:`_instance_items`,
    :func:`_people_items`), over a sweep's rows; mode masks (``rented``, ``spot``, ``held``,
    ``owned``) and ``term_h`` (NaN: no committed term) select the mode-dependent items, which
    are 0 where they do not apply. ``support_provider``: each row's provider id, whose tiered
    support schedule (:func:`support_fee_usd`) prices ``cloud_support``. ``nodes``: each row's
    node count (the
    cluster-scale repair model; default: one). Power, data, compliance and carbon are not
    included (see ``docs/tco.md``).
    """
    n = np.asarray(gpus, dtype=float)
    p = np.asarray(usd_per_gpu_h, dtype=float)
    wall_h = np.asarray(overheads["wall_clock_h"], dtype=float)
    fs = np.asarray(failure_share, dtype=float)
    net = np.where(fs > 0, fac.value("failure.network-interruption-fraction"), 0.0)
    out: dict[str, np.ndarray] = {}
    out["compute"] = np.asarray(cloud.rental_usd(n * productive_h, p), dtype=float)
    out.update(rework_usd(n, overheads["rework_h"], fs, net, p))
    out["spot_preemption_rework"] = np.where(spot, out["spot_preemption_rework"], 0.0)
    for name, key in (
        ("restart_requeue", "restart_h"),
        ("checkpoint_stall", "checkpoint_stall_h"),
        ("firmware_downtime", "firmware_h"),
    ):
        out[name] = gpu_hours_usd(n, overheads[key], p)
    held_items = held_items_usd(
        gpus=n, wall_h=wall_h, usd_per_gpu_h=p, gpus_billed=gpus_billed, rented=rented,
        held=held, owned=owned, term_h=term_h, fac=fac, reuse_fraction=reuse_fraction,
    )  # fmt: skip
    held_items.pop("fragmentation_idle_gpu_h")
    out.update(held_items)
    out.update(
        labour_items_usd(
            gpus=n,
            wall_h=wall_h,
            interruptions=overheads["interruptions"],
            owned=owned,
            nodes=np.ones_like(n) if nodes is None else nodes,
            fac=fac,
            repair_model=repair_model,
        )
    )
    out["cloud_support"] = cloud_support_usd(out, rented, fac, support_provider, wall_h, term_h)
    return out


#: Items of the compute and reliability categories, on which the cloud support fee is charged.
SUPPORTED_SPEND_ITEMS = (
    "compute",
    "failure_rework",
    "network_rework",
    "spot_preemption_rework",
    "restart_requeue",
    "checkpoint_stall",
    "firmware_downtime",
    "hot_spares",
    "fragmentation_idle",
    "idle_instance_gpus",
    "committed_term_unused",
)


#: Power items of owned hardware (category ``power``), in the order compare adds them.
POWER_ITEMS = (
    "electricity_it_active",
    "electricity_it_idle",
    "power_conversion_loss",
    "cooling_pue_overhead",
)


def power_items_usd(
    *,
    gpus: Any,
    tdp_w: Any,
    active_fraction: Any,
    idle_fraction: Any,
    nodes: Any,
    node_power_w: Any,
    switch_w_per_gpu: Any,
    busy_h: Any,
    idle_h: Any,
    loss: Any,
    pue: Any,
    usd_per_kwh: Any,
    kg_per_kwh: Any,
) -> dict[str, np.ndarray]:
    """Energy, emissions and electricity items of runs or services, as arrays.

    The power chain of :mod:`aitco.cost.power` (IT power busy and idle, conversion loss, PUE)
    and :func:`aitco.cost.carbon.emissions_kg_co2e`, over arrays of equal shape (a sweep's rows;
    one option is the 0-d case). ``usd_per_kwh`` is 0 where energy is inside a rental price.
    Returns the four :data:`POWER_ITEMS` [USD] and ``busy_it_w``, ``it_active_kwh``,
    ``it_idle_kwh``, ``input_kwh``, ``meter_kwh``, ``kg_co2e``.
    """
    busy_it_w = power.it_power_w(
        gpus, tdp_w, 1.0, active_fraction, idle_fraction, nodes, node_power_w, switch_w_per_gpu
    )
    idle_it_w = power.it_power_w(
        gpus, tdp_w, 0.0, active_fraction, idle_fraction, nodes, node_power_w, switch_w_per_gpu
    )
    it_active_kwh = power.energy_kwh(busy_it_w, busy_h)
    it_idle_kwh = power.energy_kwh(idle_it_w, idle_h)
    it_kwh = it_active_kwh + it_idle_kwh
    input_kwh = power.facility_energy_kwh(it_kwh, loss, 1.0)
    meter_kwh = power.facility_energy_kwh(it_kwh, loss, pue)
    return {
        "electricity_it_active": np.asarray(power.electricity_usd(it_active_kwh, usd_per_kwh)),
        "electricity_it_idle": np.asarray(power.electricity_usd(it_idle_kwh, usd_per_kwh)),
        "power_conversion_loss": np.asarray(power.electricity_usd(input_kwh - it_kwh, usd_per_kwh)),
        "cooling_pue_overhead": np.asarray(
            power.electricity_usd(meter_kwh - input_kwh, usd_per_kwh)
        ),
        "busy_it_w": np.asarray(busy_it_w, dtype=float),
        "it_active_kwh": np.asarray(it_active_kwh, dtype=float),
        "it_idle_kwh": np.asarray(it_idle_kwh, dtype=float),
        "input_kwh": np.asarray(input_kwh, dtype=float),
        "meter_kwh": np.asarray(meter_kwh, dtype=float),
        "kg_co2e": np.asarray(carbon.emissions_kg_co2e(meter_kwh, kg_per_kwh), dtype=float),
    }


def carbon_price_usd(kg_co2e: Any, usd_per_tonne: Any) -> np.ndarray:
    """Return the carbon price of emissions: t CO2e x $/t [USD]."""
    return np.asarray(np.asarray(kg_co2e, dtype=float) / KG_PER_TONNE * usd_per_tonne)


def serving_run_items_usd(
    *,
    gpus: Any,
    gpus_per_replica: Any,
    hours: Any,
    usd_per_gpu_h: Any,
    gpus_billed: Any,
    rented: Any,
    held: Any,
    owned: Any,
    term_h: Any,
    fac: CostFactors,
    reuse_fraction: float,
    support_provider: Any,
    nodes: Any = None,
    repair_model: str = "per_incident",
) -> dict[str, np.ndarray]:
    """Compute, instance, reliability and people items of services, as arrays.

    The items :func:`_inference` builds for one service over a period of ``hours``: the held
    accelerators are paid for every hour; restarts of a failed replica (failure rate x GPU-hours
    x accelerators per replica x restart hours) and firmware downtime are the share of those paid
    hours that served nothing. Mode masks and ``term_h`` as in :func:`training_run_items_usd`;
    people items from :func:`labour_items_usd` (``nodes``: each row's node count, for the
    cluster-scale repair model) and ``cloud_support`` from the tiered schedule of each row's
    ``support_provider`` (:func:`support_fee_usd`), as for training.
    Also returns ``interruptions``, ``lost_h`` (hours per accelerator that served nothing) and
    ``fragmentation_idle_gpu_h`` (for the power items).
    """
    n = np.asarray(gpus, dtype=float)
    hrs = np.asarray(hours, dtype=float)
    p = np.asarray(usd_per_gpu_h, dtype=float)
    lam = fac.value("failure.interruptions-per-gpu-hour")
    restart_h = fac.value("restart.hours")
    phi = float(
        reliability.firmware_downtime_fraction(fac.value("firmware.downtime-hours-per-year"))
    )
    interruptions = lam * n * hrs
    restart_gpu_h = interruptions * np.asarray(gpus_per_replica, dtype=float) * restart_h
    safe_n = np.where(n > 0, n, 1.0)
    lost_h = restart_gpu_h / safe_n + phi * hrs
    out: dict[str, np.ndarray] = {}
    out["compute"] = np.asarray(cloud.rental_usd(n * (hrs - lost_h), p), dtype=float)
    out["restart_requeue"] = gpu_hours_usd(restart_gpu_h, 1.0, p)
    out["firmware_downtime"] = gpu_hours_usd(n, phi * hrs, p)
    held_items = held_items_usd(
        gpus=n, wall_h=hrs, usd_per_gpu_h=p, gpus_billed=gpus_billed, rented=rented,
        held=held, owned=owned, term_h=term_h, fac=fac, reuse_fraction=reuse_fraction,
    )  # fmt: skip
    frag_gpu_h = held_items.pop("fragmentation_idle_gpu_h")
    out.update(held_items)
    out.update(
        labour_items_usd(
            gpus=n,
            wall_h=np.broadcast_to(hrs, n.shape),
            interruptions=interruptions,
            owned=owned,
            nodes=np.ones_like(n) if nodes is None else nodes,
            fac=fac,
            repair_model=repair_model,
        )
    )
    out["cloud_support"] = cloud_support_usd(
        out, rented, fac, support_provider, np.broadcast_to(hrs, n.shape), term_h
    )
    return {
        **out,
        "interruptions": np.asarray(interruptions, dtype=float),
        "lost_h": np.asarray(lost_h, dtype=float),
        "fragmentation_idle_gpu_h": np.asarray(frag_gpu_h, dtype=float),
    }


#: Values :func:`serving_run_items_usd` returns beside the items.
SERVING_RUN_VALUES = ("interruptions", "lost_h", "fragmentation_idle_gpu_h")


def _checkpoint_save_h(
    model: ModelArch, w: TrainingWorkload, ckpt_bytes: float, bw_gb_s_per_node: float, nodes: Any
) -> Any:
    """Return the synchronous checkpoint save time in hours (nodes write in parallel).

    Full training uses :func:`aitco.perf.training.checkpoint_save_time_s` (parameters x 14 B over
    the aggregate bandwidth); LoRA uses the adapter bytes over the same bandwidth.
    """
    if w.method == "full":
        total = float(param_counts(model).total)
        nodes_a = np.asarray(nodes, dtype=float)
        return (
            np.asarray(checkpoint_save_time_s(total, bw_gb_s_per_node * nodes_a), dtype=float)
            / SECONDS_PER_HOUR
        )
    return np.asarray(
        reliability.checkpoint_save_time_h(ckpt_bytes, bw_gb_s_per_node, nodes), dtype=float
    )


def _meets_slo(w: InferenceWorkload, v: dict[str, Any]) -> bool | None:
    """Whether the mean TTFT and TPOT meet the workload's objectives (None: no objective)."""
    slo_ttft_s, slo_tpot_s = w.slo_ttft_s, w.slo_tpot_s
    if slo_ttft_s is None and slo_tpot_s is None:
        return None
    ttft, tpot = _f(v.get("ttft_s")), _f(v.get("tpot_s"))
    if ttft is None or tpot is None or math.isnan(ttft) or math.isnan(tpot):
        return False
    ok_ttft = slo_ttft_s is None or ttft <= slo_ttft_s
    ok_tpot = slo_tpot_s is None or tpot <= slo_tpot_s
    return bool(ok_ttft and ok_tpot)


def _f(x: Any) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _compute_items(b: Breakdown, run: _Run, price: GpuHourPrice, opt: HardwareOption) -> None:
    gh = run.gpus * run.productive_h
    for part, per_h in price.parts.items():
        formula = "gpus x productive hours x price per GPU-hour"
        if part != "rental":
            formula = f"gpus x productive hours x ({part} over the holding period / holding hours)"
        b.add(
            part if part != "rental" else f"rental_{opt.pricing}",
            # the technology-iteration risk can be negative (market value above book value)
            float(cloud.rental_usd(gh, per_h)) if part == "rental" else gh * per_h,
            "compute",
            formula,
            {
                "gpus": run.gpus,
                "productive_h": run.productive_h,
                "usd_per_gpu_hour": per_h,
                **price.inputs,
            },
            price.sources,
        )


def _instance_items(b: Breakdown, run: _Run, price: GpuHourPrice, opt: HardwareOption) -> None:
    """Rented whole instances: the idle accelerators of the last instance, and a committed term.

    A committed (reserved) term is billed for whole terms whether used or not; what the user
    reuses it for (``committed_reuse_fraction``) is taken off the unused part.
    """
    if opt.pricing not in RENTED:
        return
    p = price.usd_per_gpu_h
    idle = max(price.gpus_billed - run.gpus, 0)
    if idle:
        b.add(
            "idle_instance_gpus",
            float(idle_instance_usd(price.gpus_billed, run.gpus, run.wall_h, p)),
            "compute",
            "(gpus billed - gpus used) x wall-clock hours x price per GPU-hour "
            "(the idle accelerators of whole instances)",
            {
                "gpus_billed": price.gpus_billed,
                "gpus": run.gpus,
                "instances": price.instances,
                "wall_clock_h": run.wall_h,
                "usd_per_gpu_hour": p,
            },
            price.sources,
        )
    years = COMMITTED_TERM_YEARS.get(opt.pricing)
    if years is None:
        return
    term_h = years * HOURS_PER_YEAR
    frag_h = run.overhead.get("fragmentation_idle_gpu_h", 0.0) / run.gpus if run.gpus else 0.0
    held_h = run.wall_h + frag_h
    reuse = opt.committed_reuse_fraction
    term = committed_term_usd(price.gpus_billed, held_h, term_h, reuse, p)
    terms, unused_h = int(term["terms"]), float(term["unused_h"])
    b.add(
        "committed_term_unused",
        float(term["usd"]),
        "compute",
        "gpus billed x (whole terms x term hours - hours held) x (1 - reuse fraction) x price",
        {
            "gpus_billed": price.gpus_billed,
            "term_h": term_h,
            "terms": terms,
            "held_h": held_h,
            "unused_h": unused_h,
            "committed_reuse_fraction": reuse,
            "usd_per_gpu_hour": p,
        },
        price.sources,
    )


def _feasibility(values: dict[str, Any], price: GpuHourPrice) -> tuple[bool, list[str]]:
    """Whether the option can run as priced, and why not (the reasons, in words)."""
    reasons: list[str] = []
    if values.get("fits") is False:
        reasons.append("does not fit in memory")
    if values.get("meets_slo") is False:
        reasons.append("misses the SLO")
    reasons.extend(values.get("_extra_reasons", []))
    reasons.extend(price.reasons)
    return not reasons, reasons


def _instance_values(price: GpuHourPrice, b: Breakdown) -> dict[str, Any]:
    feasible, reasons = _feasibility(b.values, price)
    b.values.pop("_extra_reasons", None)
    return {
        "feasible": feasible,
        "infeasible_reasons": reasons,
        "offer_id": price.offer,
        "provider": price.provider,
        "instances": price.instances,
        "gpus_billed": price.gpus_billed,
    }


def _reliability_items(
    b: Breakdown,
    run: _Run,
    price: GpuHourPrice,
    opt: HardwareOption,
    fac: CostFactors,
    *,
    spot_id: str | None,
    restart_h: float,
    extra_inputs: dict[str, Any],
    ids: list[str],
) -> None:
    p = price.usd_per_gpu_h
    n = run.gpus
    net = fac.value("failure.network-interruption-fraction") if run.failure_share > 0 else 0.0
    rework = run.overhead.get("rework_h", 0.0)
    src = fac.sources(*ids)
    common = {"gpus": n, "usd_per_gpu_hour": p, **extra_inputs}
    fs = run.failure_share
    lost = {k: float(x) for k, x in rework_usd(n, rework, fs, net, p).items()}
    b.add(
        "failure_rework",
        lost["failure_rework"],
        "reliability",
        "gpus x interruptions(non-network failures) x checkpoint_interval/2 x price",
        {**common, "rework_h": rework, "failure_share": fs, "network_fraction": net},
        src,
    )
    b.add(
        "network_rework",
        lost["network_rework"],
        "reliability",
        "gpus x interruptions(network/topology) x checkpoint_interval/2 x price",
        {**common, "rework_h": rework, "network_fraction": net},
        src,
    )
    if spot_id is not None:
        b.add(
            "spot_preemption_rework",
            lost["spot_preemption_rework"],
            "reliability",
            "gpus x spot preemptions x checkpoint_interval/2 x price",
            {**common, "rework_h": rework, "spot_share": 1 - fs},
            [*fac.sources(spot_id), *src],
        )
    b.add(
        "restart_requeue",
        float(gpu_hours_usd(n, run.overhead.get("restart_h", 0.0), p)),
        "reliability",
        "gpus x interruptions x restart hours x price",
        {**common, "interruptions": run.interruptions, "restart_h_each": restart_h},
        src,
    )
    if "checkpoint_stall_h" in run.overhead:
        b.add(
            "checkpoint_stall",
            float(gpu_hours_usd(n, run.overhead["checkpoint_stall_h"], p)),
            "reliability",
            "gpus x (productive hours / interval) x save time x stall fraction x price",
            {**common, "stall_h": run.overhead["checkpoint_stall_h"]},
            [*src, *fac.sources("checkpoint.async-stall-fraction")],
        )
    b.add(
        "firmware_downtime",
        float(gpu_hours_usd(n, run.overhead.get("firmware_h", 0.0), p)),
        "reliability",
        "gpus x wall clock x (firmware downtime hours per year / hours per year) x price",
        {**common, "firmware_h": run.overhead.get("firmware_h", 0.0)},
        src,
    )
    _spares_item(b, run, price, opt, fac)
    if opt.pricing in HELD:
        f = fac.value("fragmentation.idle-fraction")
        idle = float(reliability.fragmentation_idle_h(n * run.wall_h, f))
        run.overhead["fragmentation_idle_gpu_h"] = idle
        b.add(
            "fragmentation_idle",
            idle * p,
            "reliability",
            "held GPU-hours x f/(1-f) x price (capacity idle from scheduling fragmentation)",
            {"held_gpu_h": n * run.wall_h, "idle_fraction": f, "usd_per_gpu_hour": p},
            fac.sources("fragmentation.idle-fraction"),
        )


def _spares_item(
    b: Breakdown, run: _Run, price: GpuHourPrice, opt: HardwareOption, fac: CostFactors
) -> None:
    """Owned clusters keep spare accelerators to swap in for failed ones: their capital cost."""
    sid = "spares.fraction"
    if opt.pricing not in OWNED:
        return
    f = fac.value(sid)
    if not 0.0 <= f <= 1.0:
        raise InputError(sid, f, "a fraction in [0, 1] (fractions are 0-1, not percent)")
    held = run.gpus * run.wall_h
    b.add(
        "hot_spares",
        float(gpu_hours_usd(held, f, price.usd_per_gpu_h)),
        "reliability",
        "held GPU-hours x spare share of the fleet x capital cost per GPU-hour",
        {"held_gpu_h": held, "spares_fraction": f, "usd_per_gpu_hour": price.usd_per_gpu_h},
        fac.sources(sid),
    )


def _pue_id(sysm: System, opt: HardwareOption) -> str:
    if opt.pricing in RENTED:
        return "pue.hyperscale"
    return f"pue.{opt.cooling or sysm.cooling}"


def _power_items(
    b: Breakdown,
    run: _Run,
    acc: Accelerator,
    sysm: System,
    price: GpuHourPrice,
    opt: HardwareOption,
    fac: CostFactors,
    nodes: float,
    active_fraction: float | None = None,
) -> tuple[float, float]:
    """Energy items (owned/colocation) and the energy and emissions of every mode.

    ``active_fraction`` (average draw over TDP while serving, from the inference engine) replaces
    the training draw factor for services.
    """
    board_w = acc.board_power_w  # the TDP, or the lower power limit the device is run at
    if board_w is None:
        if opt.pricing in RENTED:  # energy is inside the rental price: report it as unknown
            b.assumptions.append(
                f"{acc.id} has no published TDP: energy and emissions not estimated"
            )
            return math.nan, math.nan
        raise CatalogError(f"accelerators.{acc.id}.tdp_w", None, "a TDP to compute power")
    fa_id = "utilization-power.training-fraction-of-tdp"
    fa = fac.value(fa_id) if active_fraction is None else active_fraction
    fi = fac.value("idle-power.fraction-of-tdp")
    sw = fac.value("network.switch-power-w-per-gpu")
    loss = fac.value("power-conversion.loss")
    pue_id = _pue_id(sysm, opt)
    pue_v = fac.value(pue_id)
    region = opt.region or DEFAULT_REGION
    n = run.gpus
    frag_h = run.overhead.get("fragmentation_idle_gpu_h", 0.0) / n if n else 0.0
    busy_h = run.busy_h
    idle_h = run.wall_h - busy_h + frag_h
    ci_id, ci = fac.region_value("carbon.kg-per-kwh", region, "carbon region")
    usd_kwh = 0.0
    el_id = None
    if opt.pricing in OWNED:
        el_id, usd_kwh = fac.region_value(
            "electricity.usd-per-kwh", region, f"{opt.pricing} region"
        )
    amt = {
        k: float(x)
        for k, x in power_items_usd(
            gpus=n, tdp_w=board_w, active_fraction=fa, idle_fraction=fi, nodes=nodes,
            node_power_w=sysm.node_power_w, switch_w_per_gpu=sw, busy_h=busy_h, idle_h=idle_h,
            loss=loss, pue=pue_v, usd_per_kwh=usd_kwh, kg_per_kwh=ci,
        ).items()
    }  # fmt: skip
    busy_it_w = amt["busy_it_w"]
    it_active_kwh, it_idle_kwh = amt["it_active_kwh"], amt["it_idle_kwh"]
    it_kwh = it_active_kwh + it_idle_kwh
    input_kwh, meter_kwh, kg = amt["input_kwh"], amt["meter_kwh"], amt["kg_co2e"]
    inputs = {
        "gpus": n,
        "tdp_w": board_w,  # the board power drawn: the TDP, or the lower limit below
        "power_limit_w": acc.power_limit_w,
        "active_fraction_of_tdp": fa,
        "idle_fraction_of_tdp": fi,
        "nodes": nodes,
        "node_power_w": sysm.node_power_w,
        "switch_w_per_gpu": sw,
        "busy_h": busy_h,
        "idle_h": idle_h,
        "conversion_loss": loss,
        "pue": pue_v,
        "pue_factor": pue_id,
    }
    ids = [
        "utilization-power.training-fraction-of-tdp",
        "idle-power.fraction-of-tdp",
        "network.switch-power-w-per-gpu",
        "power-conversion.loss",
        pue_id,
    ]
    if opt.pricing in OWNED:
        assert el_id is not None
        src = fac.sources(*ids, el_id)
        inp = {**inputs, "usd_per_kwh": usd_kwh}
        b.add(
            "electricity_it_active",
            amt["electricity_it_active"],
            "power",
            "gpus x TDP x active fraction x busy hours (+ node and switch power) x $/kWh",
            {**inp, "kwh": it_active_kwh},
            src,
        )
        b.add(
            "electricity_it_idle",
            amt["electricity_it_idle"],
            "power",
            "gpus x TDP x idle fraction x idle hours (restarts, stalls, fragmentation) x $/kWh",
            {**inp, "kwh": it_idle_kwh},
            src,
        )
        b.add(
            "power_conversion_loss",
            amt["power_conversion_loss"],
            "power",
            "IT kWh x (1/(1 - loss) - 1) x $/kWh (PSU/UPS/PDU)",
            {**inp, "kwh": input_kwh - it_kwh},
            src,
        )
        b.add(
            "cooling_pue_overhead",
            amt["cooling_pue_overhead"],
            "power",
            "IT input kWh x (PUE - 1) x $/kWh",
            {**inp, "kwh": meter_kwh - input_kwh},
            src,
        )
        if opt.pricing == "colocation":
            colo_id = "facility.colocation-usd-per-kw-month"
            colo = fac.value(colo_id)
            kw = busy_it_w / WATTS_PER_KILOWATT
            months = (run.wall_h + frag_h) / HOURS_PER_MONTH
            b.add(
                "colocation",
                kw * colo * months,
                "facility",
                "IT capacity kW x colocation $/kW-month x months held",
                {"it_kw": kw, "usd_per_kw_month": colo, "months": months},
                fac.sources(colo_id),
            )
    b.assumptions.append(
        f"energy at the meter {meter_kwh:,.0f} kWh; carbon intensity {ci} kg/kWh ({ci_id})"
    )
    return meter_kwh, kg


def _people_items(
    b: Breakdown,
    run: _Run,
    price: GpuHourPrice,
    opt: HardwareOption,
    fac: CostFactors,
    *,
    nodes: float = 1.0,
    repair_model: str = "per_incident",
) -> None:
    owned = opt.pricing in OWNED
    fte_id = "ops.fte-per-1000-gpus.owned" if owned else "ops.fte-per-1000-gpus.cloud"
    w, rate_ids = loaded_labour_rate(fac)
    wage = fac.value(OPS_ROLE_ID)
    labour = labour_items_usd(
        gpus=run.gpus,
        wall_h=run.wall_h,
        interruptions=run.interruptions,
        owned=owned,
        nodes=nodes,
        fac=fac,
        repair_model=repair_model,
    )
    fte = fac.value(fte_id)
    min_fte = on_call_min_fte(fac) if owned else 0.0
    staff_inputs = {
        "gpus": run.gpus,
        "hours": run.wall_h,
        "fte_per_1000_gpus": fte,
        "ratio_fte": run.gpus / people.GPUS_PER_STAFFING_UNIT * fte,
        "on_call_min_fte": min_fte,
        "wage_usd_per_hour": wage,
        "employer_cost_factor": fac.value(EMPLOYER_COST_ID),
        "usd_per_hour": w,
    }
    b.add(
        "ops_staff",
        float(labour["ops_staff"]),
        "people",
        "max(gpus/1000 x FTE per 1000 GPUs, on-call seats x 8766 h / productive h per FTE"
        " [owned]) x (hours/8766) x 2080 h x wage x employer-cost factor",
        staff_inputs,
        fac.sources(fte_id, *rate_ids, *(ON_CALL_IDS if owned else ())),
    )
    mttr_id = "ops.mttr-staff-hours"
    mttr = fac.value(mttr_id)
    inc = {"interruptions": run.interruptions, "mttr_staff_h": mttr, "usd_per_hour": w}
    if "repair_labour" in labour:
        a = fac.value(REPAIR_SCALE_ID)
        b.add(
            "repair_labour",
            float(labour["repair_labour"]),
            "people",
            "interruptions x staff hours per incident x loaded $/h x (1 + alpha log2(nodes))"
            " (cluster-scale model)",
            {**inc, "nodes": nodes, "scale_per_node_doubling": a},
            fac.sources(mttr_id, REPAIR_SCALE_ID, *rate_ids),
        )
    else:
        b.add(
            "incident_response",
            float(labour["incident_response"]),
            "people",
            "interruptions x staff hours per incident x loaded $/h",
            inc,
            fac.sources(mttr_id, *rate_ids),
        )
    if opt.pricing not in RENTED:
        return
    sched = support_schedule(fac, price.provider)
    if sched is None:
        return
    breaks, rates, low, ids = sched
    spend = sum(i.usd for i in b.items if i.category in ("compute", "reliability"))
    years = COMMITTED_TERM_YEARS.get(opt.pricing)
    term_h = years * HOURS_PER_YEAR if years else math.nan
    months = float(support_billed_months(run.wall_h, term_h))
    b.add(
        "cloud_support",
        float(people.tiered_fee_usd(spend, months, breaks, rates, low)),
        "people",
        "months x max(sum over brackets of rate x part of the monthly spend in the bracket,"
        " monthly minimum) (provider support plan)",
        {
            "spend_usd": spend,
            "months": months,
            "monthly_spend_usd": spend / months,
            "tier_breaks_usd_per_month": breaks,
            "tier_rates": rates,
            "minimum_usd_per_month": low,
            "provider": price.provider,
        },
        fac.sources(*ids),
    )


def training_storage_gb(
    d: DataCosts, ops: OpsAssumptions, fac: CostFactors, tokens: Any, checkpoint_bytes: Any
) -> tuple[Any, Any]:
    """Return the dataset and kept-checkpoint volumes of a training run [GB].

    The dataset is ``data.stored_gb`` when given, else tokens x ``data.bytes-per-token``.
    """
    dataset_gb = d.stored_gb
    if dataset_gb is None:
        dataset_gb = tokens * fac.value("data.bytes-per-token") / GIGA
    return dataset_gb, checkpoint_bytes * ops.checkpoints_kept / GIGA


def storage_items_usd(
    d: DataCosts, fac: CostFactors, months: Any, dataset_gb: Any, checkpoint_gb: Any
) -> dict[str, np.ndarray]:
    """Return the dataset and checkpoint storage items for the months held [USD]."""
    tier_id = f"storage.usd-per-gb-month.{d.storage_tier}"
    price = fac.value(tier_id, "data.storage_tier")
    return {
        "dataset_storage": np.asarray(data.storage_usd(dataset_gb, months, price), dtype=float),
        "checkpoint_storage": np.asarray(
            data.storage_usd(checkpoint_gb, months, price), dtype=float
        ),
        "usd_per_gb_month": np.asarray(price, dtype=float),
    }


def _data_items(
    b: Breakdown,
    scn: Scenario,
    fac: CostFactors,
    months: float,
    dataset_gb: float,
    checkpoint_gb: float,
    *,
    one_off: bool = True,
) -> None:
    d = scn.data
    tier_id = f"storage.usd-per-gb-month.{d.storage_tier}"
    store = {
        k: float(x) for k, x in storage_items_usd(d, fac, months, dataset_gb, checkpoint_gb).items()
    }
    price = store["usd_per_gb_month"]
    # one-off costs (acquisition, cleaning, labelling, transfer) go to the first stage only
    if one_off and d.acquisition_usd:
        b.add(
            "data_acquisition",
            d.acquisition_usd,
            "data",
            "given",
            {"acquisition_usd": d.acquisition_usd},
        )
    if one_off and d.raw_tb:
        b.add(
            "data_cleaning",
            float(data.per_unit_usd(d.raw_tb, d.cleaning_usd_per_tb, "data.cleaning_usd_per_tb")),
            "data",
            "raw TB x $/TB",
            {"raw_tb": d.raw_tb, "usd_per_tb": d.cleaning_usd_per_tb},
        )
    if one_off and d.labeled_items:
        b.add(
            "data_labeling",
            float(
                data.per_unit_usd(
                    d.labeled_items, d.labeling_usd_per_item, "data.labeling_usd_per_item"
                )
            ),
            "data",
            "items x $/item",
            {"items": d.labeled_items, "usd_per_item": d.labeling_usd_per_item},
        )
    if dataset_gb:
        b.add(
            "dataset_storage",
            store["dataset_storage"],
            "data",
            "dataset GB x months x $/GB-month",
            {"gb": dataset_gb, "months": months, "usd_per_gb_month": price},
            fac.sources(tier_id, "data.bytes-per-token"),
        )
    if checkpoint_gb:
        b.add(
            "checkpoint_storage",
            store["checkpoint_storage"],
            "data",
            "checkpoints kept x checkpoint GB x months x $/GB-month",
            {"gb": checkpoint_gb, "months": months, "usd_per_gb_month": price},
            fac.sources(tier_id),
        )
    transfers = (
        ("egress", d.egress_gb, d.egress_kind, "data.egress_kind"),
        ("cross_zone_transfer", d.cross_zone_gb, d.cross_zone_kind, "data.cross_zone_kind"),
    )
    for name, gb, kind, field_name in transfers:
        breaks_id, tiers_id = f"transfer.tier-breaks-gb.{kind}", f"transfer.tier-usd-per-gb.{kind}"
        if one_off and gb and fac.has(breaks_id) and fac.has(tiers_id):
            # the provider's monthly volume tiers, the period's volume spread over its months
            breaks, rates = fac.curve(breaks_id), fac.curve(tiers_id)
            billed_months = max(1.0, months)
            usd = float(data.tiered_transfer_usd(gb, billed_months, breaks, rates))
            b.add(
                name,
                usd,
                "data",
                "GB per month priced by the provider's volume tiers x months",
                {"gb": gb, "months": billed_months, "usd_per_gb": usd / gb},
                fac.sources(breaks_id, tiers_id),
                note="tiers from (GB/month): "
                + ", ".join(f"{x:g} at ${r:g}/GB" for x, r in zip(breaks, rates, strict=False)),
            )
        elif one_off and gb:
            fid = f"transfer.usd-per-gb.{kind}"
            p = fac.value(fid, field_name)
            b.add(
                name,
                float(data.per_unit_usd(gb, p, fid)),
                "data",
                "GB x $/GB",
                {"gb": gb, "usd_per_gb": p},
                fac.sources(fid),
            )


def _compliance_items(b: Breakdown, scn: Scenario, fac: CostFactors, period_days: float) -> None:
    """Retention for the whole period the run's records are kept, and the audit labour."""
    c = scn.compliance
    if c.gb_per_day and c.retention_days:
        tid = f"storage.usd-per-gb-month.{c.storage_tier}"
        p = fac.value(tid, "compliance.storage_tier")
        b.add(
            "retention",
            float(data.retention_committed_usd(c.gb_per_day, c.retention_days, period_days, p)),
            "compliance",
            "GB/day x days produced x retention months x $/GB-month (each day's volume is kept"
            " the whole retention period, also after the run)",
            {
                "gb_per_day": c.gb_per_day,
                "retention_days": c.retention_days,
                "period_days": period_days,
                "gb_months": c.gb_per_day * period_days * c.retention_days / DAYS_PER_MONTH,
                "usd_per_gb_month": p,
            },
            fac.sources(tid),
        )
    if c.audit_hours:
        w, ids = loaded_labour_rate(fac)
        b.add(
            "audit_labour",
            float(data.audit_labour_usd(c.audit_hours, w)),
            "compliance",
            "audit hours x wage x employer-cost factor",
            {"audit_hours": c.audit_hours, "usd_per_hour": w},
            fac.sources(*ids),
        )


def _per_token_j(kwh: float, tokens: float) -> float | None:
    if not tokens or not math.isfinite(kwh):
        return None
    return float(carbon.energy_per_token_j(kwh, tokens))


def _carbon_items(b: Breakdown, fac: CostFactors, kg: float) -> None:
    cid = "carbon.usd-per-tonne"
    if fac.has(cid):
        p = fac.value(cid)
        if p < 0:
            raise InputError(cid, p, "a carbon price >= 0")
        if p > 0 and math.isfinite(kg):
            b.add(
                "carbon_price",
                float(carbon_price_usd(kg, p)),
                "carbon",
                "t CO2e x $/t",
                {"kg_co2e": kg, "usd_per_tonne": p},
                fac.sources(cid),
            )


def _inference(
    scn: Scenario,
    w: InferenceWorkload,
    opt: HardwareOption,
    acc: Accelerator,
    sysm: System,
    model: ModelArch,
    price: GpuHourPrice,
    fac: CostFactors,
    eff: EfficiencyParams,
    memo: dict[Any, Any],
    where: str,
    one_off: bool = True,
) -> Breakdown:
    est = _engine("inference")
    # a MIG slice and/or a time-slicing share: n counts shares, priced per share
    acc, shares = service_mod.fractional_accelerator(acc, w.mig, w.time_slice, "workload.")

    def run_engine(gpus: int, qps: float | None = None) -> Any:
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
            memo[key] = _run_inference(gpus, qps)
        return memo[key]

    def _run_inference(gpus: int, qps: float | None) -> Any:
        return _guarded(
            est,
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

    res = run_engine(opt.gpus)
    v = res.values
    n = opt.gpus
    scaled = ""
    per_replica = int(v.get("tp", 1) or 1) * int(v.get("pp", 1) or 1) * int(v.get("ep", 1) or 1)
    g_slo = v.get("gpus_for_slo")
    plans = _service_plans(w, res, sysm, price.usd_per_gpu_h / shares, eff)
    pool = plans.get("disaggregation")
    day = plans.get("autoscale")
    if pool is not None:
        if w.disaggregate != "auto":  # a fixed PxD layout is priced as asked
            pool = {**pool, "chosen": "disaggregated"}
        chosen = pool[pool["chosen"]] or pool["disaggregated"]
        n = int(chosen["gpus"])
        scaled = (
            f"{pool['chosen']} serving ({chosen['prefill_replicas']} prefill : "
            f"{chosen['decode_replicas']} decode replicas), {n} GPUs"
        )
    elif day is not None:
        n = max(int(day["peak_replicas"]), 1) * per_replica
        scaled = (
            f"autoscaled: peak {day['peak_replicas']} replicas, "
            f"{day['replica_hours']:.1f} replica-hours a day"
        )
    elif w.qps and isinstance(g_slo, int | float) and g_slo > n:
        n = int(g_slo)
        scaled = f"scaled from {opt.gpus} to {n} GPUs to meet the SLO at {w.qps:g} req/s"
    elif w.qps and v.get("saturated") and _f(v.get("max_qps")):
        cap_per_replica = float(v["max_qps"]) / max(int(v.get("replicas", 1) or 1), 1)
        n = math.ceil(w.qps / cap_per_replica) * per_replica
        scaled = f"scaled from {opt.gpus} to {n} GPUs: {w.qps:g} req/s exceeds the capacity"
    if n != opt.gpus and pool is None and day is None:
        res = run_engine(n)
        v = res.values
    elif day is not None:
        # latencies of the busiest hour: its load on the peak replicas (the autoscaler's target)
        res = run_engine(n, max(float(q) for q in day["qps_by_hour"]) or None)
        v = res.values
    per_replica = int(v.get("tp", 1) or 1) * int(v.get("pp", 1) or 1) * int(v.get("ep", 1) or 1)
    # a MIG / time-sliced service bills whole GPUs of `shares` replicas; n counts shares
    whole = math.ceil(n / shares)
    if price.reprice is not None:
        # the service rents whole instances for n accelerators in replicas of per_replica
        price = price.reprice(whole, max(per_replica // shares, 1))
    elif opt.pricing in OWNED:
        price.instances, price.gpus_billed = math.ceil(whole / sysm.devices_per_node), whole
        # the capital of the accelerators priced (a scaled service owns them, not opt.gpus)
        price.capex = {k: x * whole / opt.gpus for k, x in price.capex.items()}
    if shares > 1:
        price = slice_price(price, shares, w.mig, w.time_slice)
    replicas = int(v.get("replicas", 1) or 1)
    hours = w.months * HOURS_PER_MONTH
    rps_capacity = _f(v.get("max_qps")) or _f(v.get("requests_per_s")) or 0.0
    qps = w.qps if w.qps else (_f(v.get("requests_per_s")) or 0.0)
    util = _f(v.get("utilization"))
    busy = min(1.0, util) if util is not None else 1.0
    # hours the n GPUs are billed: an autoscaled pay-as-used service pays for running replicas
    billed_h = hours
    if pool is not None:
        chosen = pool[pool["chosen"]] or pool["disaggregated"]
        replicas = int(chosen["prefill_replicas"]) + int(chosen["decode_replicas"])
        rps_capacity = float(chosen["requests_per_s"])
        busy = min(1.0, qps / rps_capacity) if rps_capacity > 0 else 1.0
        e2e = chosen["ttft_s"] + (w.output_tokens - 1) * chosen["tpot_s"]
        v = {**v, "ttft_s": chosen["ttft_s"], "tpot_s": chosen["tpot_s"], "e2e_latency_s": e2e}
    if day is not None:
        peak = max(int(day["peak_replicas"]), 1)
        replicas = peak
        rps_capacity = peak * float(day["requests_per_s_per_replica"])
        qps = float(np.mean(day["qps_by_hour"]))
        running = float(day["mean_replicas"]) * float(day["requests_per_s_per_replica"])
        busy = min(1.0, qps / running) if running > 0 else 0.0
        if opt.pricing in PAY_AS_USED:
            billed_h = hours * float(day["mean_replicas"]) / peak
    lam_id = "failure.interruptions-per-gpu-hour"
    restart_h = fac.value("restart.hours")
    phi = float(
        reliability.firmware_downtime_fraction(fac.value("firmware.downtime-hours-per-year"))
    )
    term_years = COMMITTED_TERM_YEARS.get(opt.pricing)
    amt = serving_run_items_usd(
        gpus=n,
        gpus_per_replica=per_replica,
        hours=billed_h,
        usd_per_gpu_h=price.usd_per_gpu_h,
        gpus_billed=price.gpus_billed,
        rented=opt.pricing in RENTED,
        held=opt.pricing in HELD,
        owned=opt.pricing in OWNED,
        term_h=math.nan if term_years is None else term_years * HOURS_PER_YEAR,
        fac=fac,
        reuse_fraction=opt.committed_reuse_fraction,
        support_provider=price.provider if opt.pricing in RENTED else "",
        nodes=math.ceil(n / sysm.devices_per_node),
        repair_model=scn.ops.repair_model,
    )
    usd = {k: float(x) for k, x in amt.items()}
    interruptions = usd["interruptions"]
    # a failed replica is down for the restart time; its GPUs are paid for while it restarts
    restart_gpu_h = interruptions * per_replica * restart_h
    run = _Run(
        gpus=n,
        productive_h=billed_h,
        wall_h=billed_h,
        overhead={"restart_h": restart_gpu_h / n, "firmware_h": phi * billed_h},
        interruptions=interruptions,
        failure_share=1.0,
        busy_fraction=busy,
        busy_h=billed_h * busy,
    )
    label = _option_name(opt) if n == opt.gpus else f"{_option_name(opt)} (priced x{n})"
    b = Breakdown(name=label, kind="inference", hardware=opt.hardware, pricing=opt.pricing, gpus=n)
    # the service holds its GPUs the whole period; restarts and firmware downtime are shown as
    # the share of those paid hours that served nothing
    lost_h = usd["lost_h"]
    serving = _Run(n, billed_h - lost_h, billed_h, {}, interruptions, 1.0, busy)
    _compute_items(b, serving, price, opt)
    p = price.usd_per_gpu_h
    src = fac.sources(lam_id, "restart.hours", "firmware.downtime-hours-per-year")
    b.add(
        "restart_requeue",
        usd["restart_requeue"],
        "reliability",
        "failures (rate x GPU-hours) x GPUs per replica x restart hours x price",
        {
            "interruptions": interruptions,
            "gpus_per_replica": per_replica,
            "restart_h": restart_h,
            "usd_per_gpu_hour": p,
        },
        src,
    )
    b.add(
        "firmware_downtime",
        usd["firmware_downtime"],
        "reliability",
        "gpus x hours x firmware downtime share x price",
        {"gpus": n, "hours": billed_h, "downtime_fraction": phi, "usd_per_gpu_hour": p},
        src,
    )
    _spares_item(b, run, price, opt, fac)
    if opt.pricing in HELD:
        f = fac.value("fragmentation.idle-fraction")
        run.overhead["fragmentation_idle_gpu_h"] = usd["fragmentation_idle_gpu_h"]
        b.add(
            "fragmentation_idle",
            usd["fragmentation_idle"],
            "reliability",
            "held GPU-hours x f/(1-f) x price",
            {"held_gpu_h": n * billed_h, "idle_fraction": f, "usd_per_gpu_hour": p},
            fac.sources("fragmentation.idle-fraction"),
        )
    _instance_items(b, serving_held(run, serving), price, opt)
    engine_w = _f(v.get("power_w"))
    active = None
    # GPUs the engine estimate ran on (a disaggregated or autoscaled plan prices more or fewer)
    est_gpus = opt.gpus if pool is not None else n
    board_w = acc.board_power_w
    if engine_w and board_w:
        # the engine's average GPU draw at the served load, over TDP; every hour is at that draw
        active = min(1.0, engine_w / (est_gpus * board_w))
        # (an autoscaled pay-as-used service draws it only while its replicas run: billed_h)
        run.busy_h = billed_h
    # power: the share of the node(s) used (a 1-GPU replica draws 1/8 of an 8-GPU node's host)
    # (MIG: n counts slices; the host is shared by the whole GPUs' slots)
    host_nodes = float(power.host_share_nodes(n / shares, sysm.devices_per_node))
    kwh, kg = _power_items(b, run, acc, sysm, price, opt, fac, host_nodes, active)
    _people_items(
        b,
        run,
        price,
        opt,
        fac,
        nodes=math.ceil(n / sysm.devices_per_node),
        repair_model=scn.ops.repair_model,
    )
    months = w.months
    _data_items(b, scn, fac, months, scn.data.stored_gb or 0.0, 0.0, one_off=one_off)
    _compliance_items(b, scn, fac, hours / HOURS_PER_DAY)
    _carbon_items(b, fac, kg)
    b.finalize()
    seconds = hours * SECONDS_PER_HOUR
    tokens = qps * (w.input_tokens + w.output_tokens) * seconds
    out_tokens = qps * w.output_tokens * seconds
    b.values = {
        "fits": bool(v.get("fits", True)),
        "replicas": replicas,
        "total_gpus": n,
        "horizon_months": w.months,
        "requests_per_s": qps,
        "requests_per_s_capacity": rps_capacity,
        "scaled": scaled or None,
        "meets_slo": _meets_slo(w, v),
        "utilization": busy,
        "ttft_s": _f(v.get("ttft_s")),
        "tpot_s": _f(v.get("tpot_s")),
        "e2e_latency_s": _f(v.get("e2e_latency_s")),
        "tokens": tokens,
        "usd_per_month": b.total_usd / months,
        "usd_per_million_tokens": b.total_usd / tokens * MEGA if tokens else None,
        "usd_per_million_output_tokens": b.total_usd / out_tokens * MEGA if out_tokens else None,
        "price_usd_per_gpu_h": price.usd_per_gpu_h,
        "effective_usd_per_gpu_h": b.total_usd / (n * billed_h),
        "gpu_hours": n * billed_h,
        "goodput": (billed_h - lost_h) / billed_h,
        "energy_kwh": kwh,
        "kg_co2e": kg,
        "energy_per_token_j": _per_token_j(kwh, tokens),
        "offer": price.offer,
        **price.capex,
    }
    if pool is not None:
        b.values["disaggregation"] = pool
        b.values["prefill_to_decode_ratio"] = pool["prefill_to_decode_ratio"]
    if day is not None:
        b.values["autoscale"] = day
        b.values["replica_hours_per_day"] = day["replica_hours"]
        b.values["billed_hours"] = billed_h
    if w.mig is not None:
        b.values["mig_profile"] = w.mig
    if w.time_slice is not None:
        b.values["time_slice"] = w.time_slice
    b.values.update(_instance_values(price, b))
    return b


def _service_plans(
    w: InferenceWorkload, res: Any, sysm: System, usd_per_gpu_h: float, eff: EfficiencyParams
) -> dict[str, Any]:
    """Disaggregation and autoscaled day of a service.

    :func:`aitco.perf.service.service_plans`, the function ``aitco infer`` calls.
    """
    if w.disaggregate is None and w.load_profile is None and w.autoscale is None:
        return {}
    if res.iteration is None:
        return {}
    return service_mod.service_plans(
        res.values, res.iteration, sysm, usd_per_gpu_h,
        input_tokens=float(res.extra["input_tokens"]),
        output_tokens=float(res.extra["output_tokens"]), qps=w.qps,
        slo_ttft_ms=w.slo_ttft_ms, slo_tpot_ms=w.slo_tpot_ms, disaggregate=w.disaggregate,
        load_profile=w.load_profile, autoscale=w.autoscale,
        prefix_cache_hit_rate=w.prefix_cache_hit_rate, efficiency=eff, field_prefix="workload.",
    )  # fmt: skip


def serving_held(run: _Run, serving: _Run) -> _Run:
    """Return the service's held hours (wall clock) with the fragmentation idle of ``run``."""
    return _Run(
        serving.gpus,
        serving.productive_h,
        serving.wall_h,
        {"fragmentation_idle_gpu_h": run.overhead.get("fragmentation_idle_gpu_h", 0.0)},
        serving.interruptions,
        serving.failure_share,
        serving.busy_fraction,
    )

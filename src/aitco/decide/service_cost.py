"""Price one serving option: size the service, then compose its items (the one-row TCO).

:func:`size_service` decides how many accelerators serve the load (the option's, the replicas
an SLO or the arrival rate needs, a disaggregated layout or an autoscaled day) and for how
many hours they are billed; :func:`price_service` prices that service with the items of
:data:`aitco.cost.tco.SERVING_LINES`. ``aitco compare`` calls both; ``aitco infer`` prices the
plan it estimated with :func:`price_service` and :meth:`ServiceSize.as_estimated`, so the two
commands give one ``usd_per_million_output_tokens`` for one plan and offer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.cost.breakdown import Breakdown
from aitco.cost.factors import CostFactors
from aitco.cost.pricing import OWNED, PAY_AS_USED, GpuHourPrice, slice_price
from aitco.cost.reliability import service_downtime
from aitco.decide.option_cost import (
    energy_note,
    energy_values,
    instance_values,
    num,
    option_name,
    option_rows,
    per_token_j,
    priced_option,
    quoted_price,
)
from aitco.decide.scenario import HardwareOption, InferenceWorkload, Scenario
from aitco.errors import AitcoError
from aitco.explain import Term
from aitco.perf import service as service_mod
from aitco.perf.efficiency import EfficiencyParams
from aitco.perf.inference import estimate_inference
from aitco.units import HOURS_PER_DAY, HOURS_PER_MONTH, MEGA, SECONDS_PER_HOUR

#: ``run(gpus, qps)``: the inference engine's estimate of the service on ``gpus`` accelerators
#: at ``qps`` requests/s (None: the workload's rate), memoised by the caller.
EngineRun = Callable[[int, float | None], Any]


def gpus_per_replica(v: dict[str, Any]) -> int:
    """Accelerators of one replica of an estimate: tp x pp x ep. [count]."""
    return int(v.get("tp", 1) or 1) * int(v.get("pp", 1) or 1) * int(v.get("ep", 1) or 1)


@dataclass
class ServiceSize:
    """A service as priced: its accelerators, replicas, load and billed hours.

    Attributes
    ----------
    res : InferenceResult
        The engine's estimate of the service at that size.
    values : dict
        Its values (latencies of a disaggregated layout replace the engine's).
    gpus, per_replica, replicas : int
        Accelerators (shares of a GPU under MIG or time-slicing), per replica, and replicas.
    qps, rps_capacity, busy : float
        Requests/s served, the capacity, and the busy share of the service. [1/s], [1/s], [-]
    hours, billed_h : float
        The service period, and the hours its accelerators are billed. [h]
    scaled : str
        How the size differs from the option's, in words ("" when it does not).
    pool, day : dict or None
        The disaggregated layout, or the autoscaled day, when planned.
    """

    res: Any
    values: dict[str, Any]
    gpus: int
    per_replica: int
    replicas: int
    qps: float
    rps_capacity: float
    busy: float
    hours: float
    billed_h: float
    scaled: str = ""
    pool: dict[str, Any] | None = None
    day: dict[str, Any] | None = None

    @classmethod
    def as_estimated(cls, w: InferenceWorkload, res: Any, gpus: int) -> ServiceSize:
        """Return the service the engine estimated, for the workload's period (no re-sizing)."""
        v = res.values
        util = num(v.get("utilization"))
        hours = w.months * HOURS_PER_MONTH
        return cls(
            res=res,
            values=v,
            gpus=gpus,
            per_replica=gpus_per_replica(v),
            replicas=int(v.get("replicas", 1) or 1),
            qps=w.qps if w.qps else (num(v.get("requests_per_s")) or 0.0),
            rps_capacity=num(v.get("max_qps")) or num(v.get("requests_per_s")) or 0.0,
            busy=min(1.0, util) if util is not None else 1.0,
            hours=hours,
            billed_h=hours,
        )


def service_plans(
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


def _chosen(pool: dict[str, Any]) -> dict[str, Any]:
    got: dict[str, Any] = pool[pool["chosen"]] or pool["disaggregated"]
    return got


def _scaled_gpus(
    w: InferenceWorkload, v: dict[str, Any], gpus: int, pool: Any, day: Any
) -> tuple[int, str]:
    """Accelerators the service needs, and why they differ from the option's ("" if not)."""
    per_replica = gpus_per_replica(v)
    g_slo = v.get("gpus_for_slo")
    if pool is not None:
        chosen = _chosen(pool)
        n = int(chosen["gpus"])
        return n, (
            f"{pool['chosen']} serving ({chosen['prefill_replicas']} prefill : "
            f"{chosen['decode_replicas']} decode replicas), {n} GPUs"
        )
    if day is not None:
        n = max(int(day["peak_replicas"]), 1) * per_replica
        return n, (
            f"autoscaled: peak {day['peak_replicas']} replicas, "
            f"{day['replica_hours']:.1f} replica-hours a day"
        )
    if w.qps and isinstance(g_slo, int | float) and g_slo > gpus:
        n = int(g_slo)
        return n, f"scaled from {gpus} to {n} GPUs to meet the SLO at {w.qps:g} req/s"
    if w.qps and v.get("saturated") and num(v.get("max_qps")):
        cap_per_replica = float(v["max_qps"]) / max(int(v.get("replicas", 1) or 1), 1)
        n = math.ceil(w.qps / cap_per_replica) * per_replica
        return n, f"scaled from {gpus} to {n} GPUs: {w.qps:g} req/s exceeds the capacity"
    return gpus, ""


def size_service(
    w: InferenceWorkload,
    opt: HardwareOption,
    run: EngineRun,
    sysm: System,
    usd_per_share_h: float,
    eff: EfficiencyParams,
) -> ServiceSize:
    """Size the service of option ``opt``: the accelerators and hours it is billed for.

    The option's accelerators, unless the workload plans a disaggregated layout or an
    autoscaled day (:func:`service_plans`), or its arrival rate needs more accelerators to meet
    the SLO or to keep up; the engine is re-run at the size priced (an autoscaled day: at its
    busiest hour on the peak replicas).
    """
    res = run(opt.gpus, None)
    plans = service_plans(w, res, sysm, usd_per_share_h, eff)
    pool, day = plans.get("disaggregation"), plans.get("autoscale")
    if pool is not None and w.disaggregate != "auto":  # a fixed PxD layout is priced as asked
        pool = {**pool, "chosen": "disaggregated"}
    n, scaled = _scaled_gpus(w, res.values, opt.gpus, pool, day)
    if n != opt.gpus and pool is None and day is None:
        res = run(n, None)
    elif day is not None:
        # latencies of the busiest hour: its load on the peak replicas (the autoscaler's target)
        res = run(n, max(float(q) for q in day["qps_by_hour"]) or None)
    size = ServiceSize.as_estimated(w, res, n)
    size.scaled, size.pool, size.day = scaled, pool, day
    if pool is not None:
        chosen = _chosen(pool)
        size.replicas = int(chosen["prefill_replicas"]) + int(chosen["decode_replicas"])
        size.rps_capacity = float(chosen["requests_per_s"])
        size.busy = min(1.0, size.qps / size.rps_capacity) if size.rps_capacity > 0 else 1.0
        e2e = chosen["ttft_s"] + (w.output_tokens - 1) * chosen["tpot_s"]
        size.values = {
            **size.values, "ttft_s": chosen["ttft_s"], "tpot_s": chosen["tpot_s"],
            "e2e_latency_s": e2e,
        }  # fmt: skip
    if day is not None:
        peak = max(int(day["peak_replicas"]), 1)
        size.replicas = peak
        size.rps_capacity = peak * float(day["requests_per_s_per_replica"])
        size.qps = float(np.mean(day["qps_by_hour"]))
        running = float(day["mean_replicas"]) * float(day["requests_per_s_per_replica"])
        size.busy = min(1.0, size.qps / running) if running > 0 else 0.0
        if opt.pricing in PAY_AS_USED:
            size.billed_h = size.hours * float(day["mean_replicas"]) / peak
    return size


def bill_service(
    price: GpuHourPrice, opt: HardwareOption, size: ServiceSize, sysm: System, w: InferenceWorkload,
    shares: int,
) -> GpuHourPrice:  # fmt: skip
    """Return the price of the service as sized: whole instances for its replicas, per share.

    A MIG or time-sliced service bills the whole GPUs of ``shares`` replicas each (``gpus``
    counts shares).
    """
    whole = math.ceil(size.gpus / shares)
    if price.reprice is not None:
        # the service rents whole instances for n accelerators in replicas of per_replica
        price = price.reprice(whole, max(size.per_replica // shares, 1))
    elif opt.pricing in OWNED:
        price = replace(
            price,
            instances=math.ceil(whole / sysm.devices_per_node),
            gpus_billed=whole,
            # the capital of the accelerators priced (a scaled service owns them, not opt.gpus)
            capex={k: x * whole / opt.gpus for k, x in price.capex.items()},
        )
    if shares > 1:
        price = slice_price(price, shares, w.mig, w.time_slice)
    return price


def _busy_share_of_hours(v: dict[str, Any], acc: Accelerator) -> float | None:
    """Return the engine's busy share of the hours (None: not estimated, or no board power).

    Serving power follows load (:func:`aitco.perf.serving.energy_per_token`): every hour at
    the idle draw, plus this share of the hours at the board power.
    """
    b_frac = num(v.get("busy_fraction"))
    if b_frac is None or not math.isfinite(b_frac) or not acc.board_power_w:
        return None
    return min(max(b_frac, 0.0), 1.0)


def price_service(
    scn: Scenario,
    w: InferenceWorkload,
    opt: HardwareOption,
    hardware: tuple[Accelerator, System, ModelArch],
    price: GpuHourPrice,
    fac: CostFactors,
    size: ServiceSize,
    *,
    shares: int = 1,
    one_off: bool = True,
) -> Breakdown:
    """Price a service held for its period (a one-row TCO).

    Parameters
    ----------
    scn, w, opt : Scenario, InferenceWorkload, HardwareOption
        The scenario (ops, data, compliance), the workload and the option.
    hardware : tuple
        The accelerator (a GPU share under MIG or time-slicing), its system and the model.
    price : GpuHourPrice
        The price of the service as sized (:func:`bill_service`).
    fac : CostFactors
        Cost factors.
    size : ServiceSize
        :func:`size_service`, or :meth:`ServiceSize.as_estimated`.
    shares : int
        GPU shares (MIG slices, time-slicing replicas) one GPU holds.
    one_off : bool
        Whether the one-off data costs go to this option (the first stage of a plan).

    Returns
    -------
    Breakdown
        The items; ``values`` with the latencies, ``usd_per_month``,
        ``usd_per_million_tokens`` and ``usd_per_million_output_tokens`` (total over the
        period's tokens) and the billing.
    """
    acc, sysm, _model = hardware
    n, billed_h = size.gpus, size.billed_h
    down = service_downtime(fac, n, size.per_replica, billed_h)
    # serving power follows load: the board power over the engine's busy share of the billed
    # hours (an autoscaled pay-as-used service runs only while its replicas run), the idle
    # draw over the rest; without it, the catalog's draw over the service's busy share
    share = _busy_share_of_hours(size.values, acc)
    rows = option_rows(
        "inference", scn, opt, acc, sysm, price, gpus=n, host_gpus=n / shares,
        productive_h=billed_h - float(down.lost_h), wall_h=billed_h,
        busy_h=billed_h * (size.busy if share is None else share),
        restart_h=float(down.restart_h), firmware_h=float(down.firmware_h),
        interruptions=float(down.interruptions), active_fraction=None if share is None else 1.0,
        storage_months=w.months, dataset_gb=scn.data.stored_gb or 0.0,
        period_days=size.hours / HOURS_PER_DAY, one_off=one_off,
        explain={"gpus_per_replica": size.per_replica,
                 "downtime_fraction": down.downtime_fraction},
    )  # fmt: skip
    label = option_name(opt) if n == opt.gpus else f"{option_name(opt)} (priced x{n})"
    kids = {"compute": service_terms(size, billed_h - float(down.lost_h))}
    b, table = priced_option(
        rows, fac, price, kids, name=label, kind="inference", hardware=opt.hardware,
        pricing=opt.pricing, gpus=n,
    )  # fmt: skip
    b.assumptions.append(energy_note(acc, table))
    if share is not None:
        board = float(acc.board_power_w or 0.0)
        idle_w = float(table.costs.idle_fraction[0]) * board
        b.assumptions.append(
            f"serving power per GPU: idle {idle_w:,.1f} W every hour + busy share {share:.4f}"
            f" x (board {board:,.0f} W - idle) = {idle_w + share * (board - idle_w):,.1f} W"
        )
    b.values = _service_values(w, size, price, b, table, float(down.lost_h))
    b.values.update(instance_values(price, b))
    b.values["usd_per_month_used"] = b.values["used_usd"] / w.months
    return b


def price_estimated(
    scn: Scenario,
    opt: HardwareOption,
    hardware: tuple[Accelerator, System, ModelArch],
    price: GpuHourPrice,
    fac: CostFactors,
    res: Any,
    *,
    shares: int = 1,
) -> Breakdown:
    """Price the service an engine estimate describes, as estimated (``aitco infer``).

    The same functions as ``aitco compare`` (:func:`bill_service`, :func:`price_service`) on
    :meth:`ServiceSize.as_estimated`: for one plan and offer the two commands give one total and
    one ``usd_per_million_output_tokens``.
    """
    w = scn.workload
    if not isinstance(w, InferenceWorkload):
        raise TypeError("price_estimated prices an inference workload")
    size = ServiceSize.as_estimated(w, res, opt.gpus)
    billed = bill_service(price, opt, size, hardware[1], w, shares)
    return price_service(scn, w, opt, hardware, billed, fac, size, shares=shares)


#: Requests simulated when a service plan is priced under Poisson arrivals (its P99 figures).
PLAN_SIMULATED_REQUESTS = 2000


def price_service_plan(
    catalog: Catalog,
    plan: dict[str, Any],
    *,
    months: float = 1.0,
    engine_fields: dict[str, Any] | None = None,
) -> tuple[Breakdown, Any] | None:
    """Price a service plan named by its replicas, as compare prices a service (one total).

    For the commands that choose a plan by replicas (``optimize``'s P99 check,
    ``api-vs-self-host``): the inference engine estimates ``replicas`` x ``gpus_per_replica``
    accelerators (tensor parallel within a replica, ``batch`` as its batch cap) at
    ``requests_per_s_needed`` under Poisson arrivals; :func:`price_estimated` prices it with the
    option's offer (``offer_id`` when given), whole instances and every item.

    Parameters
    ----------
    catalog : Catalog
        The catalog.
    plan : dict
        ``model``, ``hardware``, ``gpus_per_replica``, ``replicas``, ``precision``, ``batch``,
        ``input_tokens``, ``output_tokens``, ``requests_per_s_needed``, ``pricing``; optional
        ``offer_id`` and ``usd_per_gpu_hour`` (a price override).
    months : float
        Service period priced. [months]
    engine_fields : dict, optional
        Further :func:`~aitco.perf.inference.estimate_inference` fields of the service.

    Returns
    -------
    (Breakdown, InferenceResult) or None
        None when the plan cannot be priced (no price, no eligible offer) or does not fit.
    """
    gpr, replicas = int(plan["gpus_per_replica"]), int(plan["replicas"])
    model = catalog.resolve_model(str(plan["model"]))
    acc, sysm = catalog.hardware(str(plan["hardware"]))
    offer = plan.get("offer_id") or None
    opt = HardwareOption(
        hardware=str(plan["hardware"]), gpus=replicas * gpr, pricing=plan["pricing"],
        offer=offer, provider="any" if offer else None,
        usd_per_gpu_hour=plan.get("usd_per_gpu_hour"),
    )  # fmt: skip
    fac = CostFactors(catalog)
    price, sysm, _note = quoted_price(catalog, opt, acc, sysm, fac, unit_gpus=gpr)
    if price is None or price.reasons:
        return None
    qps = float(plan["requests_per_s_needed"])
    precision = str(plan["precision"])
    i_tok, o_tok = int(plan["input_tokens"]), int(plan["output_tokens"])
    try:
        res = estimate_inference(
            model, acc, sysm, replicas * gpr, precision=precision, qps=qps, tp=gpr,
            max_batch=int(plan["batch"]), num_requests=PLAN_SIMULATED_REQUESTS,
            input_tokens=i_tok, output_tokens=o_tok, **(engine_fields or {}),
        )  # fmt: skip
    except AitcoError:
        return None
    w = InferenceWorkload.model_construct(
        model=model.id, precision=precision, qps=qps, months=months, tp=gpr,  # type: ignore[arg-type]
        input_tokens=i_tok, output_tokens=o_tok,
    )  # fmt: skip
    scn = Scenario.model_construct(name="plan", workload=w, options=[opt])
    return price_estimated(scn, opt, (acc, sysm, model), price, fac, res), res


def service_terms(size: ServiceSize, served_h: float) -> list[Term]:
    """Return the explain chain of a service's compute: GPU-hours, GPUs, capacity, TTFT/TPOT.

    The engine's latency terms are the leaves (they add up to ``ttft_s`` and ``tpot_s``); a
    disaggregated layout or an autoscaled day is planned from them, so its chain stops at the
    replicas.
    """
    v = size.values
    latency: list[Term] = []
    if size.pool is None and size.day is None and hasattr(size.res, "to_estimate"):
        terms = size.res.to_estimate().terms
        for key in ("ttft", "tpot"):
            if num(v.get(f"{key}_s")) is None:
                continue
            latency.append(
                Term(
                    name=f"{key}_s",
                    value=float(v[f"{key}_s"]),
                    unit="s",
                    formula=f"sum of the {key.upper()} terms (aitco.perf.inference)",
                    children=[t for t in terms if t.name.startswith(f"{key}_")],
                )
            )
    cap = Term(
        name="requests_per_s_capacity",
        value=size.rps_capacity,
        unit="requests/s",
        formula="the replicas' saturation throughput at the estimated TTFT and TPOT",
        children=latency,
    )
    gpus = Term(
        name="total_gpus",
        value=float(size.gpus),
        unit="GPUs",
        formula="replicas x GPUs per replica, enough for the requests/s served",
        inputs={
            "replicas": size.replicas,
            "gpus_per_replica": size.per_replica,
            "requests_per_s": size.qps,
        },
        children=[cap],
    )
    return [
        Term(
            name="served_gpu_hours",
            value=size.gpus * served_h,
            unit="GPU h",
            formula="total_gpus x (billed hours - hours lost to restarts and firmware)",
            inputs={"billed_h": size.billed_h},
            children=[gpus],
        )
    ]


def _meets_slo(w: InferenceWorkload, v: dict[str, Any]) -> bool | None:
    """Whether the mean TTFT and TPOT meet the workload's objectives (None: no objective)."""
    slo_ttft_s, slo_tpot_s = w.slo_ttft_s, w.slo_tpot_s
    if slo_ttft_s is None and slo_tpot_s is None:
        return None
    ttft, tpot = num(v.get("ttft_s")), num(v.get("tpot_s"))
    if ttft is None or tpot is None or math.isnan(ttft) or math.isnan(tpot):
        return False
    ok_ttft = slo_ttft_s is None or ttft <= slo_ttft_s
    ok_tpot = slo_tpot_s is None or tpot <= slo_tpot_s
    return bool(ok_ttft and ok_tpot)


def _service_values(
    w: InferenceWorkload, size: ServiceSize, price: GpuHourPrice, b: Breakdown, table: Any,
    lost_h: float,
) -> dict[str, Any]:  # fmt: skip
    """Return the headline values of a priced service."""
    v, n, billed_h = size.values, size.gpus, size.billed_h
    kwh, kg = energy_values(table)
    seconds = size.hours * SECONDS_PER_HOUR
    tokens = size.qps * (w.input_tokens + w.output_tokens) * seconds
    out_tokens = size.qps * w.output_tokens * seconds
    values: dict[str, Any] = {
        "fits": bool(v.get("fits", True)),
        "replicas": size.replicas,
        "total_gpus": n,
        "horizon_months": w.months,
        "requests_per_s": size.qps,
        "requests_per_s_capacity": size.rps_capacity,
        "scaled": size.scaled or None,
        "meets_slo": _meets_slo(w, v),
        "utilization": size.busy,
        "ttft_s": num(v.get("ttft_s")),
        "tpot_s": num(v.get("tpot_s")),
        "e2e_latency_s": num(v.get("e2e_latency_s")),
        "tokens": tokens,
        "usd_per_month": b.total_usd / w.months,
        "usd_per_million_tokens": b.total_usd / tokens * MEGA if tokens else None,
        "usd_per_million_output_tokens": b.total_usd / out_tokens * MEGA if out_tokens else None,
        "price_usd_per_gpu_h": price.usd_per_gpu_h,
        "effective_usd_per_gpu_h": b.total_usd / (n * billed_h),
        "gpu_hours": n * billed_h,
        "goodput": (billed_h - lost_h) / billed_h,
        "energy_kwh": kwh,
        "kg_co2e": kg,
        "energy_per_token_j": per_token_j(kwh, tokens),
        "offer": price.offer,
        **price.capex,
    }
    if size.pool is not None:
        values["disaggregation"] = size.pool
        values["prefill_to_decode_ratio"] = size.pool["prefill_to_decode_ratio"]
    if size.day is not None:
        values["autoscale"] = size.day
        values["replica_hours_per_day"] = size.day["replica_hours"]
        values["billed_hours"] = billed_h
    if w.mig is not None:
        values["mig_profile"] = w.mig
    if w.time_slice is not None:
        values["time_slice"] = w.time_slice
    return values

"""The TCO: cost items composed, in order, into a breakdown that explains itself.

One composition prices every command's options: :func:`compose` takes :class:`CostRows` (a
sweep's configurations, or one option as the one-row case) and the
:class:`~aitco.cost.factors.CostFactors`, and prices each :class:`Line` of
:data:`TRAINING_LINES` or :data:`SERVING_LINES` with its function of :mod:`aitco.cost.items`.
A sweep sums the items of each row (:func:`items_usd`); ``aitco compare`` turns its one row into
a :class:`Breakdown` (:func:`add_to_breakdown`) whose :class:`Item` lines carry their USD value,
category, formula, inputs and sources, so ``--explain`` can show how each was reached;
:meth:`Breakdown.finalize` sets the shares and checks that the items add up to the total.
Multi-stage plans add breakdowns stage by stage with :func:`add_stages`.

The :class:`~aitco.cost.breakdown.Breakdown`, :class:`~aitco.cost.breakdown.Item` and
:func:`~aitco.cost.breakdown.add_stages` of :mod:`aitco.cost.breakdown` are re-exported here.

Adding a cost item: one function in :mod:`aitco.cost.items`, one :class:`Line` in the tables
below and, where it needs one, a catalog factor.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from aitco.cost import items, people
from aitco.cost.breakdown import CATEGORIES, Breakdown, Item, add_stages
from aitco.cost.factors import (
    ACTIVE_POWER_ID,
    ASYNC_STALL_ID,
    BYTES_PER_TOKEN_ID,
    CARBON_PRICE_ID,
    CHECKPOINT_WRITE_ID,
    COLOCATION_ID,
    CONVERSION_LOSS_ID,
    EMPLOYER_COST_ID,
    FAILURE_RATE_ID,
    FIRMWARE_ID,
    FRAGMENTATION_ID,
    FTE_IDS,
    IDLE_POWER_ID,
    MTTR_ID,
    NETWORK_FRACTION_ID,
    ON_CALL_IDS,
    OPS_ROLE_ID,
    RENTED_IDLE_ID,
    REPAIR_SCALE_ID,
    RESTART_ID,
    SPARES_ID,
    SUPPORT_ACCOUNT_OTHER_ID,
    SWITCH_POWER_ID,
    CostFactors,
)
from aitco.cost.runs import CostRows, RunCosts
from aitco.explain import Term
from aitco.units import DAYS_PER_MONTH, HOURS_PER_MONTH, WATTS_PER_KILOWATT

__all__ = [
    "CATEGORIES",
    "POWER_ITEMS",
    "SERVING_LINES",
    "SUPPORTED_SPEND_ITEMS",
    "TRAINING_LINES",
    "Breakdown",
    "CostRows",
    "Item",
    "ItemTable",
    "Line",
    "RunCosts",
    "add_stages",
    "add_to_breakdown",
    "compose",
    "items_usd",
    "lines_for",
]

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
    "rented_idle",
)
#: Power items of owned hardware (category ``power``), in breakdown order.
POWER_ITEMS = (
    "electricity_it_active",
    "electricity_it_idle",
    "power_conversion_loss",
    "cooling_pue_overhead",
)

Usd = Callable[[RunCosts], Any]
Mask = Callable[[RunCosts], Any]
Inputs = Callable[[RunCosts], dict[str, Any]]
Ids = Callable[[RunCosts, int], list[str]]


def _always(c: RunCosts) -> bool:
    return True


def _no_inputs(c: RunCosts) -> dict[str, Any]:
    return {}


def _no_ids(c: RunCosts, i: int) -> list[str]:
    return []


@dataclass(frozen=True)
class Line:
    """One cost item of a breakdown: how it is priced, where it applies and how it explains.

    Attributes
    ----------
    name, category : str
        Item name and one of :data:`CATEGORIES`.
    usd : callable
        ``usd(costs) -> array``: the item's dollars, from :mod:`aitco.cost.items`.
    formula : str
        The formula in words (``--explain``).
    applies : callable
        ``applies(costs) -> bool or bool array``: the rows that carry the item.
    inputs : callable
        ``inputs(costs) -> dict``: the values ``--explain`` shows (arrays or scalars).
    ids : callable
        ``ids(costs, row) -> list``: factor ids whose citations are the item's sources.
    price_sources : bool
        Whether the price's own sources (the offer, the purchase price) come first.
    note : callable, optional
        ``note(costs) -> str``: a caveat shown with the item.
    cites : callable, optional
        ``cites(costs, row) -> list``: citations beside the factors' (a measured catalog value).
    """

    name: str
    category: str
    usd: Usd
    formula: str | Callable[[RunCosts], str]
    applies: Mask = _always
    inputs: Inputs = _no_inputs
    ids: Ids = _no_ids
    price_sources: bool = False
    note: Callable[[RunCosts], str] | None = None
    cites: Callable[[RunCosts, int], list[str]] | None = None


# ----------------------------------------------------------------------------- line helpers
def _p(c: RunCosts) -> np.ndarray:
    return np.asarray(c.r.usd_per_gpu_h, dtype=float)


def _training(c: RunCosts) -> bool:
    return c.training


def _compute(c: RunCosts) -> np.ndarray:
    rent = items.rental_usd(c.r.gpus, c.r.productive_h, np.where(c.rented, _p(c), 0.0))
    return np.where(c.rented, rent, items.compute_usd(c.r.gpus, c.r.productive_h, _p(c)))


def _compute_inputs(c: RunCosts) -> dict[str, Any]:
    return {"gpus": c.r.gpus, "productive_h": c.r.productive_h, "usd_per_gpu_hour": _p(c)}


def _rel_inputs(c: RunCosts) -> dict[str, Any]:
    return {"gpus": c.r.gpus, "usd_per_gpu_hour": _p(c), **c.r.explain}


def _train_ids(c: RunCosts, i: int) -> list[str]:
    return [FAILURE_RATE_ID, NETWORK_FRACTION_ID, RESTART_ID, FIRMWARE_ID, CHECKPOINT_WRITE_ID]


def _serve_ids(c: RunCosts, i: int) -> list[str]:
    return [FAILURE_RATE_ID, RESTART_ID, FIRMWARE_ID]


def _lost(attr: str) -> Usd:
    return lambda c: items.lost_gpu_hours_usd(c.r.gpus, getattr(c.r, attr), _p(c))


def _frag_inputs(c: RunCosts) -> dict[str, Any]:
    f = c.fragmentation_f
    return {"held_gpu_h": c.held_gpu_h, "idle_fraction": f, "usd_per_gpu_hour": _p(c)}


def _kwh(c: RunCosts, key: str) -> np.ndarray:
    e = c.energy
    it = e["it_active_kwh"] + e["it_idle_kwh"]
    got = {
        "it_active": e["it_active_kwh"],
        "it_idle": e["it_idle_kwh"],
        "loss": e["input_kwh"] - it,
        "cooling": e["meter_kwh"] - e["input_kwh"],
    }
    return np.asarray(got[key], dtype=float)


def _busy_share(c: RunCosts) -> np.ndarray:
    """Return the busy share of the held hours. [fraction]."""
    wall = c.r.wall_h
    return np.where(wall > 0, c.r.busy_h / np.where(wall > 0, wall, 1.0), 0.0)


def _power_inputs(key: str) -> Inputs:
    def inputs(c: RunCosts) -> dict[str, Any]:
        return {
            "gpus": c.r.gpus, "tdp_w": c.r.tdp_w,
            "power_limit_w": c.r.power_limit_w,
            "active_fraction_of_tdp": c.active_fraction,
            "idle_fraction_of_tdp": c.idle_fraction, "idle_w": c.idle_fraction * c.r.tdp_w,
            "busy_share_of_hours": _busy_share(c),
            "nodes": c.r.host_nodes,
            "node_power_w": c.r.node_power_w, "switch_w_per_gpu": c.fac.switch_w_per_gpu,
            "busy_h": c.r.busy_h, "idle_h": c.idle_h, "conversion_loss": c.fac.conversion_loss,
            "pue": c.pue[1], "pue_factor": c.pue[0], "usd_per_kwh": c.usd_per_kwh[1],
            "kwh": _kwh(c, key),
        }  # fmt: skip

    return inputs


def _power_ids(c: RunCosts, i: int) -> list[str]:
    """Factor ids of the power items: the draw factors only where no engine or measure gives it."""
    return [
        *([ACTIVE_POWER_ID] if c.r.active_fraction is None else []),
        *([IDLE_POWER_ID] if not math.isfinite(float(c.r.idle_w[i])) else []),
        SWITCH_POWER_ID, CONVERSION_LOSS_ID, str(c.pue[0][i]), str(c.usd_per_kwh[0][i]),
    ]  # fmt: skip


def _power_line(name: str, key: str, formula: str) -> Line:
    return Line(
        name, "power", lambda c: items.electricity_usd(_kwh(c, key), c.usd_per_kwh[1]), formula,
        applies=lambda c: c.owned, inputs=_power_inputs(key), ids=_power_ids,
        cites=lambda c, i: [c.r.idle_w_source] if c.r.idle_w_source else [],
    )  # fmt: skip


def _colo_kw(c: RunCosts) -> np.ndarray:
    """Return the IT capacity a colocation contract provisions (accelerators at TDP). [kW]."""
    w = items.provisioned_it_w(
        c.r.gpus, np.nan_to_num(c.r.tdp_w), c.idle_fraction, c.r.host_nodes,
        c.r.node_power_w, c.fac.switch_w_per_gpu,
    )  # fmt: skip
    return np.asarray(w / WATTS_PER_KILOWATT, dtype=float)


def _colo_months(c: RunCosts) -> np.ndarray:
    return np.asarray((c.r.wall_h + c.frag_h) / HOURS_PER_MONTH, dtype=float)


def _staff_inputs(c: RunCosts) -> dict[str, Any]:
    ratio = c.r.gpus / people.GPUS_PER_STAFFING_UNIT * c.fte_per_1000
    out = {
        "gpus": c.r.gpus,
        "hours": c.r.wall_h,
        "fte_per_1000_gpus": c.fte_per_1000,
        "ratio_fte": ratio,
        "on_call_min_fte": c.min_fte,
        "staff_fte": np.maximum(ratio, c.min_fte),
        "wage_usd_per_hour": c.fac.value(OPS_ROLE_ID),
        "employer_cost_factor": c.fac.value(EMPLOYER_COST_ID),
        "usd_per_hour": c.labour_rate,
    }
    if np.any(c.owned):
        seats, prod_h, rota_gpus = (c.fac.value(i) for i in ON_CALL_IDS)
        rota_fte = float(people.on_call_fte(seats, prod_h))
        out["on_call_rota_fte"] = np.where(c.owned, rota_fte, math.nan)
        out["on_call_rota_gpus"] = np.where(c.owned, rota_gpus, math.nan)
    return out


def _staff_ids(c: RunCosts, i: int) -> list[str]:
    owned = bool(c.owned[i])
    return [FTE_IDS[owned], OPS_ROLE_ID, EMPLOYER_COST_ID, *(ON_CALL_IDS if owned else ())]


def _incident_inputs(c: RunCosts) -> dict[str, Any]:
    mttr = c.fac.mttr_staff_h
    return {"interruptions": c.r.interruptions, "mttr_staff_h": mttr, "usd_per_hour": c.labour_rate}


def _repair_inputs(c: RunCosts) -> dict[str, Any]:
    a = c.fac.repair_scale_per_node_doubling
    return {**_incident_inputs(c), "nodes": c.r.job_nodes, "scale_per_node_doubling": a}


def _supported_spend(c: RunCosts) -> np.ndarray:
    """Return the spend a support plan is charged on: the compute and reliability items."""
    spend = np.zeros(c.n)
    for k in SUPPORTED_SPEND_ITEMS:
        if k in c.done:
            spend = spend + c.done[k]
    return spend


def _support_usd(c: RunCosts) -> np.ndarray:
    spend = _supported_spend(c)
    months = items.support_billed_months(c.r.wall_h, c.term_h)
    other = c.support_account_other_usd_per_month
    out = np.zeros(c.n)
    for prov, sched in c.support.items():
        sel = (c.r.providers == prov) & c.rented
        if sched is not None and np.any(sel):
            breaks, rates, low, _ = sched
            out[sel] = items.cloud_support_usd(spend[sel], months[sel], breaks, rates, low, other)
    return out


def _support_inputs(c: RunCosts) -> dict[str, Any]:
    spend = _supported_spend(c)
    months = items.support_billed_months(c.r.wall_h, c.term_h)
    none: tuple[list[float], list[float], float, list[str]] = ([], [], 0.0, [])
    breaks, rates, low, _ = next((s for s in c.support.values() if s is not None), none)
    other = c.support_account_other_usd_per_month
    account = spend / months + other
    fee = people.monthly_fee_usd(account, breaks, rates, low) if breaks else np.zeros(c.n)
    return {
        "spend_usd": spend,
        "months": months,
        "monthly_spend_usd": spend / months,
        "account_other_usd_per_month": other,
        "account_usd_per_month": account,
        "account_fee_usd_per_month": fee,
        "account_support_rate": np.where(
            account > 0, fee / np.where(account > 0, account, 1.0), 0.0
        ),
        "tier_breaks_usd_per_month": breaks,
        "tier_rates": rates,
        "minimum_usd_per_month": low,
        "provider": c.r.providers,
    }


def _support_ids(c: RunCosts, i: int) -> list[str]:
    sched = c.support.get(str(c.r.providers[i]))
    return [*sched[3], SUPPORT_ACCOUNT_OTHER_ID] if sched is not None else []


def _data(c: RunCosts) -> Any:
    return c.r.data


def _one_off(attr: str) -> Mask:
    return lambda c: c.r.one_off and bool(getattr(c.r.data, attr))


def _transfer_tiers(c: RunCosts, kind: str) -> tuple[str, str] | None:
    """Return the factor ids of ``kind``'s monthly volume tiers when the catalog tables them."""
    ids = (f"transfer.tier-breaks-gb.{kind}", f"transfer.tier-usd-per-gb.{kind}")
    return ids if c.fac.has(ids[0]) and c.fac.has(ids[1]) else None


def _transfer_line(name: str, gb: str, kind: str, field_name: str) -> Line:
    """Return a transfer item: the provider's monthly volume tiers where tabled, else $/GB.

    With tiers, the period's volume is spread over its months (at least one) and each month's
    volume priced by the tiers (:func:`aitco.cost.items.tiered_transfer_usd`).
    """

    def months(c: RunCosts) -> Any:
        return np.maximum(1.0, c.r.storage_months)

    def usd(c: RunCosts) -> Any:
        k, v = getattr(c.r.data, kind), getattr(c.r.data, gb)
        tiers = _transfer_tiers(c, k)
        if tiers is not None:
            breaks, rates = (c.fac.curve(i) for i in tiers)
            return items.tiered_transfer_usd(v, months(c), breaks, rates)
        fid, p = c.transfer(k, field_name)
        return items.per_unit_usd(v, p, fid)

    def inputs(c: RunCosts) -> dict[str, Any]:
        v = getattr(c.r.data, gb)
        if _transfer_tiers(c, getattr(c.r.data, kind)) is not None:
            return {"gb": v, "months": months(c), "usd_per_gb": c.done[name] / v}
        return {"gb": v, "usd_per_gb": c.transfer(getattr(c.r.data, kind), field_name)[1]}

    def ids(c: RunCosts, i: int) -> list[str]:
        k = getattr(c.r.data, kind)
        tiers = _transfer_tiers(c, k)
        return list(tiers) if tiers is not None else [c.transfer(k, field_name)[0]]

    def note(c: RunCosts) -> str:
        tiers = _transfer_tiers(c, getattr(c.r.data, kind))
        if tiers is None:
            return ""
        breaks, rates = (c.fac.curve(i) for i in tiers)
        pairs = zip(breaks, rates, strict=False)
        return "tiers from (GB/month): " + ", ".join(f"{x:g} at ${r:g}/GB" for x, r in pairs)

    def formula(c: RunCosts) -> str:
        if _transfer_tiers(c, getattr(c.r.data, kind)) is not None:
            return "GB per month priced by the provider's volume tiers x months"
        return "GB x $/GB"

    return Line(name, "data", usd, formula, applies=_one_off(gb), inputs=inputs, ids=ids, note=note)


def _storage_inputs(attr: str) -> Inputs:
    return lambda c: {
        "gb": getattr(c.r, attr), "months": c.r.storage_months, "usd_per_gb_month": c.storage[1]
    }  # fmt: skip


def _retention_inputs(c: RunCosts) -> dict[str, Any]:
    k = c.r.compliance
    return {
        "gb_per_day": k.gb_per_day,
        "retention_days": k.retention_days,
        "period_days": c.r.period_days,
        "gb_months": k.gb_per_day * c.r.period_days * k.retention_days / DAYS_PER_MONTH,
        "usd_per_gb_month": c.retention_storage[1],
    }


def _carbon_applies(c: RunCosts) -> Any:
    return (c.carbon_usd_per_tonne > 0) & np.isfinite(c.energy["kg_co2e"])


# ----------------------------------------------------------------------------- the lines
_COMPUTE = Line(
    "compute",
    "compute",
    _compute,
    "gpus x productive hours x price per GPU-hour",
    inputs=_compute_inputs,
    price_sources=True,
)
_FAILURE = Line(
    "failure_rework",
    "reliability",
    lambda c: items.failure_rework_usd(
        c.r.gpus, c.r.rework_h, c.r.failure_share, c.network_fraction, _p(c)
    ),
    "gpus x interruptions(non-network failures) x checkpoint_interval/2 x price",
    applies=_training,
    ids=_train_ids,
    inputs=lambda c: {
        **_rel_inputs(c),
        "rework_h": c.r.rework_h,
        "failure_share": c.r.failure_share,
        "network_fraction": c.network_fraction,
    },
)
_NETWORK = Line(
    "network_rework",
    "reliability",
    lambda c: items.network_rework_usd(
        c.r.gpus, c.r.rework_h, c.r.failure_share, c.network_fraction, _p(c)
    ),
    "gpus x interruptions(network/topology) x checkpoint_interval/2 x price",
    applies=_training,
    ids=_train_ids,
    inputs=lambda c: {
        **_rel_inputs(c),
        "rework_h": c.r.rework_h,
        "network_fraction": c.network_fraction,
    },
)
_SPOT = Line(
    "spot_preemption_rework",
    "reliability",
    lambda c: items.spot_preemption_rework_usd(c.r.gpus, c.r.rework_h, c.r.failure_share, _p(c)),
    "gpus x spot preemptions x checkpoint_interval/2 x price",
    applies=lambda c: c.training and c.spot,
    ids=lambda c, i: [c.r.spot_rate_id, *_train_ids(c, i)],
    inputs=lambda c: {
        **_rel_inputs(c),
        "rework_h": c.r.rework_h,
        "spot_share": 1 - c.r.failure_share,
    },
)
_RESTART = Line(
    "restart_requeue",
    "reliability",
    _lost("restart_h"),
    "gpus x interruptions x restart hours x price",
    applies=_training,
    ids=_train_ids,
    inputs=lambda c: {
        **_rel_inputs(c),
        "interruptions": c.r.interruptions,
        "restart_h_each": c.fac.restart_h,
    },
)
_STALL = Line(
    "checkpoint_stall",
    "reliability",
    _lost("checkpoint_stall_h"),
    "gpus x (productive hours / interval) x save time x stall fraction x price",
    applies=_training,
    ids=lambda c, i: [*_train_ids(c, i), ASYNC_STALL_ID],
    inputs=lambda c: {**_rel_inputs(c), "stall_h": c.r.checkpoint_stall_h},
)
_FIRMWARE = Line(
    "firmware_downtime",
    "reliability",
    _lost("firmware_h"),
    "gpus x wall clock x (firmware downtime hours per year / hours per year) x price",
    applies=_training,
    ids=_train_ids,
    inputs=lambda c: {**_rel_inputs(c), "firmware_h": c.r.firmware_h},
)
_SERVE_RESTART = Line(
    "restart_requeue",
    "reliability",
    _lost("restart_h"),
    "failures (rate x GPU-hours) x GPUs per replica x restart hours x price",
    ids=_serve_ids,
    inputs=lambda c: {
        "interruptions": c.r.interruptions,
        "gpus_per_replica": c.r.explain.get("gpus_per_replica"),
        "restart_h": c.fac.restart_h,
        "usd_per_gpu_hour": _p(c),
    },
)
_SERVE_FIRMWARE = Line(
    "firmware_downtime",
    "reliability",
    _lost("firmware_h"),
    "gpus x hours x firmware downtime share x price",
    ids=_serve_ids,
    inputs=lambda c: {
        "gpus": c.r.gpus,
        "hours": c.r.wall_h,
        "downtime_fraction": c.r.explain.get("downtime_fraction"),
        "usd_per_gpu_hour": _p(c),
    },
)
_SPARES = Line(
    "hot_spares",
    "reliability",
    lambda c: items.hot_spares_usd(c.held_gpu_h, c.fac.spares_fraction, _p(c)),
    "held GPU-hours x spare share of the fleet x capital cost per GPU-hour",
    applies=lambda c: c.owned,
    ids=lambda c, i: [SPARES_ID],
    inputs=lambda c: {
        "held_gpu_h": c.held_gpu_h,
        "spares_fraction": c.fac.spares_fraction,
        "usd_per_gpu_hour": _p(c),
    },
)
_FRAGMENTATION = Line(
    "fragmentation_idle",
    "reliability",
    lambda c: items.fragmentation_idle_usd(c.frag_gpu_h, _p(c)),
    "held GPU-hours x f/(1-f) x price (capacity idle from scheduling fragmentation)",
    applies=lambda c: c.held,
    inputs=_frag_inputs,
    ids=lambda c, i: [FRAGMENTATION_ID],
)
_SERVE_FRAGMENTATION = replace(_FRAGMENTATION, formula="held GPU-hours x f/(1-f) x price")
_IDLE_INSTANCE = Line(
    "idle_instance_gpus",
    "compute",
    lambda c: items.idle_instance_gpus_usd(c.r.gpus_billed, c.r.gpus, c.r.wall_h, _p(c)),
    "(gpus billed - gpus used) x wall-clock hours x price per GPU-hour "
    "(the idle accelerators of whole instances)",
    applies=lambda c: c.rented & (c.r.gpus_billed > c.r.gpus),
    price_sources=True,
    inputs=lambda c: {
        "gpus_billed": c.r.gpus_billed,
        "gpus": c.r.gpus,
        "instances": c.r.instances,
        "wall_clock_h": c.r.wall_h,
        "usd_per_gpu_hour": _p(c),
    },
)
_RENTED_IDLE = Line(
    "rented_idle",
    "reliability",
    lambda c: items.rented_idle_usd(c.rented_idle_gpu_h, _p(c)),
    "gpus billed x wall-clock hours x f/(1-f) x price (pay-as-used instance time billed while"
    " the job does not run: set-up, waiting, tear-down; f observed, 0 by default)",
    applies=lambda c: c.rented_idle_gpu_h > 0,
    price_sources=True,
    inputs=lambda c: {
        "gpus_billed": c.r.gpus_billed,
        "wall_clock_h": c.r.wall_h,
        "idle_fraction": c.rented_idle_f,
        "idle_gpu_h": c.rented_idle_gpu_h,
        "usd_per_gpu_hour": _p(c),
    },
    ids=lambda c, i: [RENTED_IDLE_ID],
)
_COMMITTED = Line(
    "committed_term_unused",
    "compute",
    lambda c: items.committed_term_unused_usd(
        c.r.gpus_billed,
        c.r.wall_h + c.frag_h,
        np.where(c.committed, c.term_h, 1.0),
        c.r.reuse_fraction,
        _p(c),
    ),
    "gpus billed x (whole terms x term hours - hours held) x (1 - reuse fraction) x price",
    applies=lambda c: c.rented & c.committed,
    price_sources=True,
    inputs=lambda c: {
        "gpus_billed": c.r.gpus_billed,
        "term_h": c.term_h,
        "terms": c.terms["terms"],
        "held_h": c.r.wall_h + c.frag_h,
        "unused_h": c.terms["unused_h"],
        "committed_reuse_fraction": c.r.reuse_fraction,
        "usd_per_gpu_hour": _p(c),
    },
)
_POWER = (
    _power_line(
        "electricity_it_active",
        "it_active",
        "gpus x TDP x active fraction x busy hours (+ node and switch power) x $/kWh"
        " (a service: board power over its busy share of the hours)",
    ),
    _power_line(
        "electricity_it_idle",
        "it_idle",
        "gpus x TDP x idle fraction x idle hours (+ node and switch power) x $/kWh (a service:"
        " the hours it is not busy; restarts, stalls, fragmentation)",
    ),
    _power_line(
        "power_conversion_loss", "loss", "IT kWh x (1/(1 - loss) - 1) x $/kWh (PSU/UPS/PDU)"
    ),
    _power_line("cooling_pue_overhead", "cooling", "IT input kWh x (PUE - 1) x $/kWh"),
)
_COLOCATION = Line(
    "colocation",
    "facility",
    lambda c: items.colocation_usd(_colo_kw(c), c.fac.colocation_usd_per_kw_month, _colo_months(c)),
    "provisioned IT kW (accelerators at TDP, host, switches) x colocation $/kW-month x months held",
    applies=lambda c: c.colocation,
    ids=lambda c, i: [COLOCATION_ID],
    inputs=lambda c: {
        "it_kw": _colo_kw(c),
        "usd_per_kw_month": c.fac.colocation_usd_per_kw_month,
        "months": _colo_months(c),
    },
)
_STAFF = Line(
    "ops_staff",
    "people",
    lambda c: items.ops_staff_usd(c.r.gpus, c.r.wall_h, c.fte_per_1000, c.labour_rate, c.min_fte),
    "max(gpus/1000 x FTE per 1000 GPUs, on-call rota FTE x min(1, gpus / rota fleet)"
    " [owned]) x (hours/8766) x 2080 h x wage x employer-cost factor (rota FTE = seats x"
    " 8766 h / productive h per FTE)",
    inputs=_staff_inputs,
    ids=_staff_ids,
)
_INCIDENT = Line(
    "incident_response",
    "people",
    lambda c: items.incident_response_usd(c.r.interruptions, c.fac.mttr_staff_h, c.labour_rate),
    "interruptions x staff hours per incident x loaded $/h",
    applies=lambda c: c.r.repair_model == "per_incident",
    inputs=_incident_inputs,
    ids=lambda c, i: [MTTR_ID, OPS_ROLE_ID, EMPLOYER_COST_ID],
)
_REPAIR = Line(
    "repair_labour",
    "people",
    lambda c: items.repair_labour_usd(
        c.r.interruptions,
        c.fac.mttr_staff_h,
        c.labour_rate,
        c.r.job_nodes,
        c.fac.repair_scale_per_node_doubling,
    ),
    "interruptions x staff hours per incident x loaded $/h x (1 + alpha log2(nodes))"
    " (cluster-scale model)",
    applies=lambda c: c.r.repair_model == "cluster_scale",
    inputs=_repair_inputs,
    ids=lambda c, i: [MTTR_ID, REPAIR_SCALE_ID, OPS_ROLE_ID, EMPLOYER_COST_ID],
)
_SUPPORT = Line(
    "cloud_support",
    "people",
    _support_usd,
    "spend x account fee / account bill: the account billed spend/months held + its other"
    " spend a month; the fee = max(sum over brackets of rate x part of the bill in the"
    " bracket, monthly minimum) (provider support plan, per account and month)",
    applies=lambda c: c.has_support,
    inputs=_support_inputs,
    ids=_support_ids,
)
_DATA = (
    Line(
        "data_acquisition",
        "data",
        lambda c: c.r.data.acquisition_usd,
        "given",
        applies=_one_off("acquisition_usd"),
        inputs=lambda c: {"acquisition_usd": c.r.data.acquisition_usd},
    ),
    Line(
        "data_cleaning",
        "data",
        lambda c: items.per_unit_usd(
            c.r.data.raw_tb, c.r.data.cleaning_usd_per_tb, "data.cleaning_usd_per_tb"
        ),
        "raw TB x $/TB",
        applies=_one_off("raw_tb"),
        inputs=lambda c: {"raw_tb": c.r.data.raw_tb, "usd_per_tb": c.r.data.cleaning_usd_per_tb},
    ),
    Line(
        "data_labeling",
        "data",
        lambda c: items.per_unit_usd(
            c.r.data.labeled_items, c.r.data.labeling_usd_per_item, "data.labeling_usd_per_item"
        ),
        "items x $/item",
        applies=_one_off("labeled_items"),
        inputs=lambda c: {
            "items": c.r.data.labeled_items,
            "usd_per_item": c.r.data.labeling_usd_per_item,
        },
    ),
    Line(
        "dataset_storage",
        "data",
        lambda c: items.storage_usd(c.r.dataset_gb, c.r.storage_months, c.storage[1]),
        "dataset GB x months x $/GB-month",
        applies=lambda c: c.r.dataset_gb != 0,
        inputs=_storage_inputs("dataset_gb"),
        ids=lambda c, i: [c.storage[0], BYTES_PER_TOKEN_ID],
    ),
    Line(
        "checkpoint_storage",
        "data",
        lambda c: items.storage_usd(c.r.checkpoint_gb, c.r.storage_months, c.storage[1]),
        "checkpoints kept x checkpoint GB x months x $/GB-month",
        applies=lambda c: c.r.checkpoint_gb != 0,
        inputs=_storage_inputs("checkpoint_gb"),
        ids=lambda c, i: [c.storage[0]],
    ),
    _transfer_line("egress", "egress_gb", "egress_kind", "data.egress_kind"),
    _transfer_line(
        "cross_zone_transfer", "cross_zone_gb", "cross_zone_kind", "data.cross_zone_kind"
    ),
)
_COMPLIANCE = (
    Line(
        "retention",
        "compliance",
        lambda c: items.retention_usd(
            c.r.compliance.gb_per_day,
            c.r.compliance.retention_days,
            c.r.period_days,
            c.retention_storage[1],
        ),
        "GB/day x days produced x retention months x $/GB-month (each day's volume is kept"
        " the whole retention period, also after the run)",
        applies=lambda c: bool(c.r.compliance.gb_per_day and c.r.compliance.retention_days),
        inputs=_retention_inputs,
        ids=lambda c, i: [c.retention_storage[0]],
    ),
    Line(
        "audit_labour",
        "compliance",
        lambda c: items.audit_labour_usd(c.r.compliance.audit_hours, c.labour_rate),
        "audit hours x wage x employer-cost factor",
        applies=lambda c: bool(c.r.compliance.audit_hours),
        inputs=lambda c: {"audit_hours": c.r.compliance.audit_hours, "usd_per_hour": c.labour_rate},
        ids=lambda c, i: [OPS_ROLE_ID, EMPLOYER_COST_ID],
    ),
)
_CARBON = Line(
    "carbon_price",
    "carbon",
    lambda c: items.carbon_price_usd(np.nan_to_num(c.energy["kg_co2e"]), c.carbon_usd_per_tonne),
    "t CO2e x $/t",
    applies=_carbon_applies,
    ids=lambda c, i: [CARBON_PRICE_ID],
    inputs=lambda c: {"kg_co2e": c.energy["kg_co2e"], "usd_per_tonne": c.carbon_usd_per_tonne},
)

#: The items of a training run, in breakdown order. Add an item: one line here.
TRAINING_LINES: tuple[Line, ...] = (
    _COMPUTE, _FAILURE, _NETWORK, _SPOT, _RESTART, _STALL, _FIRMWARE, _SPARES, _FRAGMENTATION,
    _IDLE_INSTANCE, _RENTED_IDLE, _COMMITTED, *_POWER, _COLOCATION, _STAFF, _INCIDENT, _REPAIR,
    _SUPPORT, *_DATA, *_COMPLIANCE, _CARBON,
)  # fmt: skip
#: The items of a service held for a period, in breakdown order. Add an item: one line here.
SERVING_LINES: tuple[Line, ...] = (
    _COMPUTE, _SERVE_RESTART, _SERVE_FIRMWARE, _SPARES, _SERVE_FRAGMENTATION, _IDLE_INSTANCE,
    _COMMITTED, *_POWER, _COLOCATION, _STAFF, _INCIDENT, _REPAIR, _SUPPORT, *_DATA,
    *_COMPLIANCE, _CARBON,
)  # fmt: skip


def lines_for(kind: str) -> tuple[Line, ...]:
    """Return the item lines of ``kind`` (``"training"``, else a service)."""
    return TRAINING_LINES if kind == "training" else SERVING_LINES


# ----------------------------------------------------------------------------- composition
@dataclass
class ItemTable:
    """The items of *n* rows: each line's dollars (0 where it does not apply) and mask."""

    costs: RunCosts
    lines: tuple[Line, ...]
    usd: dict[str, np.ndarray]
    applies: dict[str, np.ndarray]

    @property
    def total_usd(self) -> np.ndarray:
        """Sum of the items of each row. [USD]."""
        return sum(self.usd.values(), np.zeros(self.costs.n))


def compose(rows: CostRows, fac: CostFactors, lines: tuple[Line, ...] | None = None) -> ItemTable:
    """Price every item of ``rows``, in order: the one TCO composition of every command.

    A line no row carries is neither priced nor does it read a factor; the others are priced
    over all rows and set to 0 where they do not apply.
    """
    c = RunCosts(rows, fac)
    use = lines_for(rows.kind) if lines is None else lines
    usd: dict[str, np.ndarray] = {}
    masks: dict[str, np.ndarray] = {}
    for line in use:
        mask = np.broadcast_to(np.asarray(line.applies(c), dtype=bool), (c.n,))
        masks[line.name] = mask
        if not mask.any():
            usd[line.name] = np.zeros(c.n)
            continue
        got = np.broadcast_to(np.asarray(line.usd(c), dtype=float), (c.n,))
        usd[line.name] = np.where(mask, got, 0.0)
        c.done[line.name] = usd[line.name]
    return ItemTable(c, use, usd, masks)


def items_usd(rows: CostRows, fac: CostFactors) -> dict[str, np.ndarray]:
    """Return every item's dollars over the rows (:func:`compose`), by item name. [USD]."""
    return compose(rows, fac).usd


def _at(v: Any, i: int) -> Any:
    a = np.asarray(v) if isinstance(v, np.ndarray) else v
    if isinstance(a, np.ndarray) and a.ndim >= 1 and a.shape[0] > i:
        return a[i].item() if hasattr(a[i], "item") else a[i]
    return a


def add_to_breakdown(
    b: Breakdown,
    table: ItemTable,
    i: int = 0,
    price: Any = None,
    children: dict[str, list[Term]] | None = None,
) -> Breakdown:
    """Add row ``i`` of ``table`` to ``b`` as items, with formulas, inputs and sources.

    ``price`` (:class:`aitco.cost.pricing.GpuHourPrice`): the option's price, whose parts split
    the ``compute`` item (``rental_<mode>``, or the parts of the owned price) and whose sources
    lead the compute items' sources. ``children``: the explain terms behind an item's hours, by
    line name (``compute``: the performance terms, from GPU-hours down to the kernel terms).
    """
    c = table.costs
    kids = children or {}
    for line in table.lines:
        if not table.applies[line.name][i]:
            continue
        inputs = {k: _at(v, i) for k, v in line.inputs(c).items()}
        srcs = list(price.sources) if (line.price_sources and price is not None) else []
        srcs += c.fac.sources(*(x for x in line.ids(c, i) if x))
        srcs += line.cites(c, i) if line.cites is not None else []
        terms = kids.get(line.name, [])
        if line.name == "compute" and price is not None:
            _compute_parts(b, c, i, price, (inputs, srcs, terms))
            continue
        usd = float(table.usd[line.name][i])
        note = line.note(c) if line.note is not None else ""
        formula = line.formula(c) if callable(line.formula) else line.formula
        b.add(line.name, usd, line.category, formula, inputs, srcs, note=note, terms=terms)
    return b


def _compute_parts(
    b: Breakdown, c: RunCosts, i: int, price: Any, explain: tuple[dict[str, Any], list[str], Any]
) -> None:
    """Add the compute item of one option, split by the parts of its price."""
    inputs, srcs, terms = explain
    gh = float(c.r.gpus[i] * c.r.productive_h[i])
    mode = str(c.r.modes[i])
    for part, per_h in price.parts.items():
        formula = "gpus x productive hours x price per GPU-hour"
        usd = (
            items.rental_usd(1.0, gh, per_h)
            if part == "rental"
            else items.compute_usd(1.0, gh, per_h)
        )
        if part != "rental":
            formula = f"gpus x productive hours x ({part} over the holding period / holding hours)"
        b.add(
            part if part != "rental" else f"rental_{mode}", float(usd), "compute", formula,
            {**inputs, "usd_per_gpu_hour": per_h, **price.inputs}, srcs, terms=terms,
        )  # fmt: skip

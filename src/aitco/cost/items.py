r"""The cost items: one function per item, arrays in, USD arrays out.

Each function prices one line of a TCO breakdown (:mod:`aitco.cost.tco` names them and composes
them in order) from arrays of equal or broadcastable shape: a sweep's rows, or one option as the
0-d case. They read no catalog and no scenario; their inputs are resolved by
:mod:`aitco.cost.factors` and :mod:`aitco.cost.pricing`, and the hours by
:mod:`aitco.cost.reliability`. Adding an item is one function here, one line in
:mod:`aitco.cost.tco` and, where it needs one, a catalog factor.

Symbols: :math:`g` accelerators used, :math:`p` price per accelerator-hour, :math:`P`
productive hours, :math:`W` wall-clock (held) hours, :math:`b` accelerators billed.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import carbon, checks, cloud, data, people, power, reliability
from aitco.units import HOURS_PER_MONTH, KG_PER_TONNE, SECONDS_PER_HOUR

F64 = np.ndarray


def _f(x: ArrayLike) -> F64:
    return np.asarray(x, dtype=float)


# ----------------------------------------------------------------------------------- compute
def compute_usd(gpus: ArrayLike, productive_h: ArrayLike, usd_per_gpu_h: ArrayLike) -> F64:
    r"""Compute: :math:`g\,P\,p` (a rental price, or one part of the owned price). [USD].

    A part of the owned price may be negative (technology-iteration risk when the market value
    ends above the book value); a rental price may not.
    """
    return _f(gpus) * _f(productive_h) * _f(usd_per_gpu_h)


def rental_usd(gpus: ArrayLike, productive_h: ArrayLike, usd_per_gpu_h: ArrayLike) -> F64:
    r"""Rented compute: :math:`g\,P\,p` with a non-negative price. [USD]."""
    return _f(cloud.rental_usd(_f(gpus) * _f(productive_h), usd_per_gpu_h))


def idle_instance_gpus_usd(
    gpus_billed: ArrayLike, gpus: ArrayLike, wall_h: ArrayLike, usd_per_gpu_h: ArrayLike
) -> F64:
    r"""Idle accelerators of whole instances: :math:`\max(b - g, 0)\,W\,p`. [USD]."""
    idle = np.maximum(_f(gpus_billed) - _f(gpus), 0.0)
    return _f(cloud.rental_usd(idle * _f(wall_h), usd_per_gpu_h))


def committed_terms(held_h: ArrayLike, term_h: ArrayLike) -> dict[str, F64]:
    """Whole committed terms that hold ``held_h`` hours, and their unused hours. [-], [h]."""
    held = _f(held_h)
    th = _f(term_h)
    terms = np.maximum(np.ceil(held / th), 1.0)
    return {"terms": terms, "unused_h": np.maximum(terms * th - held, 0.0)}


def committed_term_unused_usd(
    gpus_billed: ArrayLike,
    held_h: ArrayLike,
    term_h: ArrayLike,
    reuse_fraction: ArrayLike,
    usd_per_gpu_h: ArrayLike,
) -> F64:
    r"""Return the unused rest of whole committed terms, less reuse. [USD].

    :math:`b\,U\,(1-r)\,p`, with :math:`U` = whole terms x term hours - hours held
    (:func:`committed_terms`).
    """
    unused_h = committed_terms(held_h, term_h)["unused_h"]
    return _f(
        cloud.rental_usd(_f(gpus_billed) * unused_h * (1.0 - _f(reuse_fraction)), usd_per_gpu_h)
    )


def rented_idle_gpu_h(billed_gpu_h: ArrayLike, idle_fraction: ArrayLike) -> F64:
    r"""Rented accelerator-hours billed while the job does not run, :math:`b\,W f/(1-f)`. [GPU h].

    With :math:`f` the observed share of a pay-as-used instance's billed hours outside the job
    (set-up before the first step, waiting, tear-down after the last: ``utilization.rented-idle-
    fraction``) and :math:`b\,W` the accelerator-hours billed while it runs, the billed hours
    are :math:`b\,W/(1-f)`, of which :math:`f` idle.
    """
    f = checks.fraction(idle_fraction, "utilization.rented-idle-fraction", open_high=True)
    return _f(billed_gpu_h) * f / (1.0 - f)


def rented_idle_usd(idle_gpu_h: ArrayLike, usd_per_gpu_h: ArrayLike) -> F64:
    """Rented idle time: :func:`rented_idle_gpu_h` x price. [USD]."""
    return _f(cloud.rental_usd(_f(idle_gpu_h), usd_per_gpu_h))


# ----------------------------------------------------------------------------------- reliability
def failure_rework_usd(
    gpus: ArrayLike,
    rework_h: ArrayLike,
    failure_share: ArrayLike,
    network_fraction: ArrayLike,
    usd_per_gpu_h: ArrayLike,
) -> F64:
    r"""Work lost to non-network failures: :math:`g\,h_{rw}\,s_f (1 - f_{net})\,p`. [USD]."""
    lost = _f(gpus) * _f(rework_h) * _f(usd_per_gpu_h)
    return lost * _f(failure_share) * (1 - _f(network_fraction))


def network_rework_usd(
    gpus: ArrayLike,
    rework_h: ArrayLike,
    failure_share: ArrayLike,
    network_fraction: ArrayLike,
    usd_per_gpu_h: ArrayLike,
) -> F64:
    r"""Work lost to network/topology failures: :math:`g\,h_{rw}\,s_f f_{net}\,p`. [USD]."""
    lost = _f(gpus) * _f(rework_h) * _f(usd_per_gpu_h)
    return lost * _f(failure_share) * _f(network_fraction)


def spot_preemption_rework_usd(
    gpus: ArrayLike, rework_h: ArrayLike, failure_share: ArrayLike, usd_per_gpu_h: ArrayLike
) -> F64:
    r"""Work lost to spot preemptions: :math:`g\,h_{rw}(1 - s_f)\,p`. [USD]."""
    lost = _f(gpus) * _f(rework_h) * _f(usd_per_gpu_h)
    return lost * (1 - _f(failure_share))


def lost_gpu_hours_usd(gpus: ArrayLike, lost_h: ArrayLike, usd_per_gpu_h: ArrayLike) -> F64:
    r"""Paid hours that did no work: :math:`g\,h_{lost}\,p`. [USD].

    Prices ``restart_requeue`` (restart hours), ``checkpoint_stall`` (stall hours) and
    ``firmware_downtime`` (downtime hours), each with its own hours.
    """
    return _f(gpus) * _f(lost_h) * _f(usd_per_gpu_h)


def hot_spares_usd(
    held_gpu_h: ArrayLike, spares_fraction: ArrayLike, usd_per_gpu_h: ArrayLike
) -> F64:
    """Spare accelerators of an owned fleet: held GPU-hours x spare share x price. [USD]."""
    return _f(held_gpu_h) * _f(spares_fraction) * _f(usd_per_gpu_h)


def fragmentation_idle_gpu_h(held_gpu_h: ArrayLike, idle_fraction: ArrayLike) -> F64:
    """Held accelerator-hours idle from scheduling fragmentation, :math:`H f/(1-f)`. [GPU h]."""
    return _f(reliability.fragmentation_idle_h(held_gpu_h, idle_fraction))


def fragmentation_idle_usd(idle_gpu_h: ArrayLike, usd_per_gpu_h: ArrayLike) -> F64:
    """Idle held capacity: :func:`fragmentation_idle_gpu_h` x price. [USD]."""
    return _f(idle_gpu_h) * _f(usd_per_gpu_h)


# ----------------------------------------------------------------------------------- power
def energy_kwh(
    *,
    gpus: ArrayLike,
    tdp_w: ArrayLike,
    active_fraction: ArrayLike,
    idle_fraction: ArrayLike,
    nodes: ArrayLike,
    node_power_w: ArrayLike,
    switch_w_per_gpu: ArrayLike,
    busy_h: ArrayLike,
    idle_h: ArrayLike,
    loss: ArrayLike,
    pue: ArrayLike,
) -> dict[str, F64]:
    """Energy of runs along the power chain of :mod:`aitco.cost.power`. [kWh], [W].

    IT power busy and idle (:func:`aitco.cost.power.it_power_w`), times the busy and idle
    hours, then the conversion loss and the PUE (:func:`aitco.cost.power.facility_energy_kwh`).

    Returns
    -------
    dict of numpy.ndarray
        ``busy_it_w`` [W], ``it_active_kwh``, ``it_idle_kwh``, ``input_kwh`` (after the
        conversion loss) and ``meter_kwh`` (after the PUE). [kWh]
    """
    args = (active_fraction, idle_fraction, nodes, node_power_w, switch_w_per_gpu)
    busy_it_w = power.it_power_w(gpus, tdp_w, 1.0, *args)
    idle_it_w = power.it_power_w(gpus, tdp_w, 0.0, *args)
    it_active = power.energy_kwh(busy_it_w, busy_h)
    it_idle = power.energy_kwh(idle_it_w, idle_h)
    it_kwh = it_active + it_idle
    return {
        "busy_it_w": _f(busy_it_w),
        "it_active_kwh": _f(it_active),
        "it_idle_kwh": _f(it_idle),
        "input_kwh": _f(power.facility_energy_kwh(it_kwh, loss, 1.0)),
        "meter_kwh": _f(power.facility_energy_kwh(it_kwh, loss, pue)),
    }


def electricity_usd(kwh: ArrayLike, usd_per_kwh: ArrayLike) -> F64:
    """Electricity of ``kwh`` (IT busy, IT idle, conversion loss or cooling). [USD]."""
    return _f(power.electricity_usd(kwh, usd_per_kwh))


def provisioned_it_w(
    gpus: ArrayLike,
    tdp_w: ArrayLike,
    idle_fraction: ArrayLike,
    nodes: ArrayLike,
    node_power_w: ArrayLike,
    switch_w_per_gpu: ArrayLike,
) -> F64:
    """Return the IT capacity a colocation contract provisions: accelerators at TDP. [W].

    :func:`aitco.cost.power.it_power_w` fully busy at the full board power, plus the host and
    switch power: the power the racks must be provisioned for, whatever the average draw.
    """
    return _f(
        power.it_power_w(
            gpus, tdp_w, 1.0, 1.0, idle_fraction, nodes, node_power_w, switch_w_per_gpu
        )
    )


def colocation_usd(it_kw: ArrayLike, usd_per_kw_month: ArrayLike, months: ArrayLike) -> F64:
    """Colocation space and power: IT capacity kW x $/kW-month x months held. [USD]."""
    return _f(it_kw) * _f(usd_per_kw_month) * _f(months)


# ----------------------------------------------------------------------------------- people
def ops_staff_usd(
    gpus: ArrayLike,
    hours: ArrayLike,
    fte_per_1000_gpus: ArrayLike,
    usd_per_hour: ArrayLike,
    min_fte: ArrayLike,
) -> F64:
    """Operations staff (:func:`aitco.cost.people.ops_staff_usd`). [USD]."""
    return _f(people.ops_staff_usd(gpus, hours, fte_per_1000_gpus, usd_per_hour, min_fte))


def incident_response_usd(
    interruptions: ArrayLike, staff_h: ArrayLike, usd_per_hour: ArrayLike
) -> F64:
    """Incident labour, per-incident model: interruptions x staff hours x rate. [USD]."""
    return _f(people.incident_usd(interruptions, staff_h, usd_per_hour))


def repair_labour_usd(
    interruptions: ArrayLike,
    staff_h: ArrayLike,
    usd_per_hour: ArrayLike,
    nodes: ArrayLike,
    per_doubling: ArrayLike,
) -> F64:
    """Repair labour, cluster-scale model (:func:`aitco.cost.people.repair_labour_usd`). [USD]."""
    return _f(people.repair_labour_usd(interruptions, staff_h, usd_per_hour, nodes, per_doubling))


#: Shortest holding time a support share is computed over (a run of zero hours has no monthly
#: rate; its spend is zero too). [h]
MIN_SUPPORT_HOURS = 1.0 / SECONDS_PER_HOUR


def support_billed_months(wall_h: ArrayLike, term_h: ArrayLike) -> F64:
    """Return the months a run is held for its support fee: its wall clock, or its whole terms.

    A fraction of a month for a short run (the fee is the run's share of the account's month,
    :func:`cloud_support_usd`). ``term_h`` NaN: no committed term.
    """
    w = _f(wall_h)
    th = _f(term_h)
    has = np.isfinite(th) & (th > 0)
    safe = np.where(has, th, 1.0)
    billed = np.where(has, np.maximum(np.ceil(w / safe), 1.0) * safe, w)
    return _f(np.maximum(billed, MIN_SUPPORT_HOURS) / HOURS_PER_MONTH)


def cloud_support_usd(
    spend_usd: ArrayLike,
    months: ArrayLike,
    breaks_usd: list[float],
    rates: list[float],
    minimum_usd_per_month: float,
    account_other_usd_per_month: float = 0.0,
) -> F64:
    """Return a job's share of its account's support fee (one provider's schedule). [USD].

    :func:`aitco.cost.people.support_share_usd`: the spend at the account's average support
    rate, the account billed at the job's monthly rate plus its other spend.
    """
    got = people.support_share_usd(
        spend_usd, months, breaks_usd, rates, minimum_usd_per_month, account_other_usd_per_month
    )
    return _f(got)


# ----------------------------------------------------------------------------------- data
def storage_usd(gb: ArrayLike, months: ArrayLike, usd_per_gb_month: ArrayLike) -> F64:
    """Return the storage of data (the dataset, kept checkpoints): GB x months x $/GB-month."""
    return _f(data.storage_usd(gb, months, usd_per_gb_month))


def tiered_transfer_usd(
    gb: ArrayLike, months: ArrayLike, breaks_gb: list[float], usd_per_gb: list[float]
) -> F64:
    """Return a transfer priced by the provider's monthly volume tiers over its months. [USD].

    :func:`aitco.cost.data.tiered_transfer_usd` (internet egress tiers).
    """
    return _f(data.tiered_transfer_usd(gb, months, breaks_gb, usd_per_gb))


def per_unit_usd(quantity: ArrayLike, usd_per_unit: ArrayLike, field: str) -> F64:
    """One-off data work or transfer: quantity x $/unit (cleaning, labelling, egress). [USD]."""
    return _f(data.per_unit_usd(quantity, usd_per_unit, field))


def retention_usd(
    gb_per_day: ArrayLike,
    retention_days: ArrayLike,
    period_days: ArrayLike,
    usd_per_gb_month: ArrayLike,
) -> F64:
    """Retention of every day's records for the whole retention period. [USD]."""
    return _f(
        data.retention_committed_usd(gb_per_day, retention_days, period_days, usd_per_gb_month)
    )


def audit_labour_usd(audit_hours: ArrayLike, usd_per_hour: ArrayLike) -> F64:
    """Audit labour: hours x loaded rate. [USD]."""
    return _f(data.audit_labour_usd(audit_hours, usd_per_hour))


# ----------------------------------------------------------------------------------- carbon
def carbon_price_usd(kg_co2e: ArrayLike, usd_per_tonne: ArrayLike) -> F64:
    """Carbon price of emissions: t CO2e x $/t. [USD]."""
    return _f(kg_co2e) / KG_PER_TONNE * _f(usd_per_tonne)


def emissions_kg_co2e(meter_kwh: ArrayLike, kg_per_kwh: ArrayLike) -> F64:
    """Emissions of the energy at the meter (:func:`aitco.cost.carbon.emissions_kg_co2e`). [kg]."""
    return _f(carbon.emissions_kg_co2e(meter_kwh, kg_per_kwh))

"""Buy vs rent: months to break even between owning accelerators and each cloud pricing mode.

Owning is a cash flow: the capital expense at month 0 (accelerators, servers, network,
storage, installation, spares), then monthly operating costs (facility energy through the power
chain, colocation space and power, operations staff), and a resale value when the hardware is
sold. Renting is a monthly bill: on-demand and spot bill the hours used (the utilisation),
reserved terms bill every hour of the commitment, plus cloud operations staff and support.

The comparison is month by month over the horizon: the break-even month is the first month at
which the cumulative rent exceeds the cumulative net cost of owning *if the hardware were sold
that month*; NPVs discount both streams at the same rate; the break-even utilisation is the
utilisation at which the two NPVs are equal. Every factor comes from the catalog (ids below),
then the assumption preset, then the user's overrides, resolved by
:class:`aitco.cost.factors.CostFactors` as in ``aitco compare``; every line is itemised with its
formula and source, so a spreadsheet can rebuild it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import Accelerator, System
from aitco.cost import capex as capex_mod
from aitco.cost import finance, items, power, reliability
from aitco.cost.factors import CostFactors
from aitco.cost.pricing import rental_price
from aitco.decide.roi import monthly_rate
from aitco.errors import CatalogError, InputError
from aitco.units import HOURS_PER_MONTH, MONTHS_PER_YEAR, WATTS_PER_KILOWATT

RENT_MODES: tuple[str, ...] = ("on_demand", "reserved_1y", "reserved_3y", "spot")
#: Modes billed for every hour of the commitment (whatever the utilisation).
COMMITTED = ("reserved_1y", "reserved_3y")

#: Factor ids read from the catalog (a scenario's ``assumptions`` may override them).
FACTOR_IDS: dict[str, str] = {
    "server": "server.overhead-fraction",
    "network": "network.capex-fraction",
    "storage": "storage.capex-fraction",
    "install": "installation.fraction-of-capex",
    "spares": "spares.fraction",
    "horizon": "ownership.horizon-years",
    "rate": "finance.discount-rate",
    "loss": "power-conversion.loss",
    "idle": "idle-power.fraction-of-tdp",
    "active": "utilization-power.training-fraction-of-tdp",
    "switch": "network.switch-power-w-per-gpu",
    "colo": "facility.colocation-usd-per-kw-month",
    "fte_owned": "ops.fte-per-1000-gpus.owned",
    "fte_cloud": "ops.fte-per-1000-gpus.cloud",
    "sre": "labour.usd-per-hour.sre",
    "employer": "labour.employer-cost-factor",
    "seats": "ops.on-call-seats.owned",
    "prod_h": "labour.productive-hours-per-fte-year",
    "rota_gpus": "ops.on-call-rota-gpus",
    "account_other": "support.account-other-usd-per-month",
    "restart": "restart.hours",
}


def _source(fac: CostFactors, fid: str) -> str:
    """Return the citation of a factor (``id: where its value came from``)."""
    fac.raw(fid)
    return fac.sources(fid)[0]


@dataclass(frozen=True)
class _Rental:
    """A rental mode's price per accelerator used, and the offer that bills it."""

    usd_per_gpu_h: float
    provider: str | None
    offer_id: str | None
    instances: int


def _rent_price(
    cat: Catalog,
    acc: Accelerator,
    mode: str,
    region: str | None,
    gpus: int = 1,
    provider: str | None = None,
) -> _Rental | str:
    """Return the rental of ``mode`` (:func:`aitco.cost.pricing.rental_price`), or why not.

    Every mode from one home instance type, whole instances billed: the price is per
    accelerator *used* (the instances' price over ``gpus``).
    """
    try:
        p = rental_price(cat, acc, mode, gpus, provider=provider, region=region, where="rent")
    except CatalogError:
        return f"no {mode} offer for {acc.id} in the catalog"
    if p.reasons:
        return "; ".join(p.reasons)
    return _Rental(p.usd_per_gpu_h * p.gpus_billed / gpus, p.provider, p.offer, p.instances)


def buy_vs_rent(
    catalog: Catalog,
    hardware: str,
    gpus: int,
    *,
    utilization: float = 0.6,
    horizon_years: float | None = None,
    discount_rate: float | None = None,
    region: str = "us",
    price_region: str | None = None,
    provider: str | None = None,
    pue_id: str | None = None,
    colocation: bool = True,
    modes: tuple[str, ...] = RENT_MODES,
    prices: dict[str, float] | None = None,
    overrides: dict[str, float] | None = None,
    preset: str | None = None,
) -> dict[str, Any]:
    r"""Compare owning ``gpus`` accelerators with renting them in each pricing mode.

    Parameters
    ----------
    catalog : Catalog
        Accelerators, systems, offers and factors.
    hardware : str
        Accelerator or system id.
    gpus : int
        Accelerators needed. [count]
    utilization : float
        Share of hours the accelerators are busy (and rented on demand / spot). [0-1]
    horizon_years : float, optional
        Comparison horizon; default the ``ownership.horizon-years`` factor. [years]
    discount_rate : float, optional
        Annual discount rate; default ``finance.discount-rate``. [1/year]
    region : str
        Electricity region (``electricity.usd-per-kwh.<region>``).
    price_region : str, optional
        Cloud region for rental prices (default: cheapest anywhere).
    provider : str, optional
        Provider of the rental offers; ``"any"``: the cheapest eligible offer per mode; default:
        one home instance type for every mode (:func:`aitco.cost.offers.select_offer`).
    pue_id : str, optional
        PUE factor id (default ``pue.liquid`` for liquid-cooled systems, else ``pue.air``).
    colocation : bool
        Add a colocation fee per provisioned kW (``facility.colocation-usd-per-kw-month``).
    modes : tuple of str
        Rental modes compared.
    prices : dict, optional
        Rental price overrides ``{mode: usd_per_gpu_hour}``.
    overrides : dict, optional
        Factor overrides ``{factor_id: value}``, applied after the preset.
    preset : str, optional
        Assumption preset (catalog ``presets``), as ``aitco compare --preset``.

    Returns
    -------
    dict
        ``owned`` (capex, monthly opex, items), ``rent`` (per mode: monthly bill, items,
        ``break_even_month``, ``npv_usd``, ``owning_saves_usd``, ``break_even_utilization``) and
        ``months`` (cumulative series per option).

    Notes
    -----
    Per accelerator, with chip price *P* and the catalog fractions (server *s*, network *n*,
    storage *o*, installation *i*, spares *k*):

    .. math::

        \mathrm{capex} = (1+k)\,[P(1+s)(1+n+o)](1+i)

    Owned monthly opex :math:`= E + C + L`: energy
    :math:`E = P_{fac} \cdot 730.5\,\mathrm{h} \cdot e / 1000` with
    :math:`P_{fac} = P_{IT} / (1-\ell) \cdot \mathrm{PUE}` and
    :math:`P_{IT} = g\,W_{tdp}(u\,a + (1-u)\,d) + \text{nodes} \cdot W_{node} + g\,W_{sw}`;
    colocation :math:`C = c_{kW} \cdot P_{IT}^{peak}/1000`; staff
    :math:`L = g/1000 \cdot \mathrm{FTE} \cdot 730.5\,\mathrm{h} \cdot w`.
    Resale at month *t*: :math:`R(t) = \rho(t/12)\,(1+k)\,g\,P(1+s)` with :math:`\rho` the
    residual-value curve. Rent per month: :math:`g \cdot 730.5 \cdot p \cdot u` (on-demand,
    spot: :math:`\times(1 + \sigma\,t_{restart})`) or :math:`g \cdot 730.5 \cdot p` (reserved),
    plus cloud staff and support (a fraction of the bill).
    Break-even month: the first *t* with :math:`\sum_{\tau \le t} \mathrm{rent}_\tau \ge
    \mathrm{capex} + \sum_{\tau \le t} \mathrm{opex}_\tau - R(t)`.
    """
    if gpus < 1:
        raise InputError("--gpus", gpus, "an integer >= 1")
    if not 0 < utilization <= 1:
        raise InputError("--utilization", utilization, "a fraction in (0, 1]")
    for m in modes:
        if m not in RENT_MODES:
            raise InputError("--modes", m, f"one of {', '.join(RENT_MODES)}")
    acc, sysm = catalog.hardware(hardware, field="hardware")
    if acc.price is None:
        raise CatalogError(
            f"accelerators.{acc.id}.price",
            None,
            "a purchase price to price owning",
            hint="add it in a --catalog overlay",
        )
    fac = CostFactors(catalog, preset, dict(overrides or {}), where="overrides")
    horizon = float(
        horizon_years if horizon_years is not None else fac.value(FACTOR_IDS["horizon"])
    )
    rate = float(discount_rate if discount_rate is not None else fac.value(FACTOR_IDS["rate"]))
    if horizon <= 0:
        raise InputError("--horizon-years", horizon, "a horizon > 0")
    n_months = max(1, round(horizon * MONTHS_PER_YEAR))
    owned = _owned(acc, sysm, gpus, utilization, fac, region, pue_id, colocation)
    curve_id = fac.residual_curve_id(acc.id, acc.residual_class)
    curve = fac.curve(curve_id)
    t = np.arange(1, n_months + 1, dtype=float)
    resale = finance.residual_fraction(curve, t / MONTHS_PER_YEAR) * owned["resellable_usd"]
    own_cum = owned["capex_usd"] + owned["opex_usd_per_month"] * t - resale
    rm = monthly_rate(rate)
    disc = (1.0 + rm) ** -t
    npv_own = (
        owned["capex_usd"]
        + float(np.sum(owned["opex_usd_per_month"] * disc))
        - float(resale[-1] * disc[-1])
    )
    owned["npv_usd"] = npv_own
    owned["resale_end_usd"] = float(resale[-1])
    owned["residual_curve"] = curve_id
    owned["sources"].append(_source(fac, curve_id))
    rents: dict[str, Any] = {}
    months: dict[str, list[float]] = {"owned_cumulative_usd": own_cum.tolist()}
    for mode in modes:
        given = (prices or {}).get(mode)
        # a given price: the accelerators' own nodes are the instances, no provider
        rental: _Rental | str = (
            _Rental(float(given), None, None, math.ceil(gpus / sysm.devices_per_node))
            if given is not None
            else _rent_price(catalog, acc, mode, price_region, gpus, provider)
        )
        if isinstance(rental, str):
            rents[mode] = {"available": False, "reason": rental}
            continue
        src = "user override" if rental.offer_id is None else f"catalog offer {rental.offer_id}"
        r = _rent(mode, rental, gpus, utilization, fac)
        r["price_source"] = src
        cum = r["usd_per_month"] * t
        months[f"{mode}_cumulative_usd"] = cum.tolist()
        be = np.flatnonzero(cum >= own_cum)
        r["break_even_month"] = int(t[be[0]]) if be.size else None
        r["npv_usd"] = float(np.sum(r["usd_per_month"] * disc))
        r["owning_saves_usd"] = r["npv_usd"] - npv_own
        r["break_even_utilization"] = _break_even_u(
            acc,
            sysm,
            gpus,
            fac,
            region,
            pue_id,
            colocation,
            mode,
            rental,
            curve,
            n_months,
            rm,
        )
        rents[mode] = r
    best = min(
        [("owned", npv_own)]
        + [(m, r["npv_usd"]) for m, r in rents.items() if r.get("available", True)],
        key=lambda kv: kv[1],
    )
    return {
        "hardware": acc.id,
        "system": sysm.id,
        "gpus": gpus,
        "utilization": utilization,
        "horizon_months": n_months,
        "discount_rate": rate,
        "owned": owned,
        "rent": rents,
        "cheapest": best[0],
        "months": months,
    }


def _owned(
    acc: Accelerator,
    sysm: System,
    gpus: int,
    u: float,
    fac: CostFactors,
    region: str,
    pue_id: str | None,
    colocation: bool,
) -> dict[str, Any]:
    assert acc.price is not None
    ids = FACTOR_IDS
    chip = acc.price.usd
    fr = {k: fac.value(ids[k]) for k in ("server", "network", "storage", "install")}
    cp = capex_mod.capex_parts_usd(chip, fr["server"], fr["network"], fr["storage"], fr["install"])
    spares = fac.spares_fraction
    per_gpu = float(cp["capex_usd"]) * (1.0 + spares)
    nodes = float(power.host_share_nodes(gpus, sysm.devices_per_node))  # host shared by slot
    tdp = acc.board_power_w or 0.0  # the TDP, or the lower power limit it is run at
    pid = pue_id or ("pue.liquid" if sysm.cooling == "liquid" else "pue.air")
    pue = fac.value(pid)
    kwh_price_id = f"electricity.usd-per-kwh.{region}"
    usd_per_kwh = fac.value(kwh_price_id)
    # the measured idle draw where published, else the idle factor (as compare)
    idle = float(fac.idle_fraction_of_board(acc.idle_w, acc.board_power_w))
    # a month at the utilisation: busy hours at the active draw, the rest idle (cost.items)
    e = items.energy_kwh(
        gpus=gpus, tdp_w=tdp, active_fraction=fac.active_fraction_of_tdp,
        idle_fraction=idle, nodes=nodes, node_power_w=sysm.node_power_w,
        switch_w_per_gpu=fac.switch_w_per_gpu, busy_h=u * HOURS_PER_MONTH,
        idle_h=(1.0 - u) * HOURS_PER_MONTH, loss=fac.conversion_loss, pue=pue,
    )  # fmt: skip
    energy_kwh = float(e["meter_kwh"])
    it_w = float(e["it_active_kwh"] + e["it_idle_kwh"]) * WATTS_PER_KILOWATT / HOURS_PER_MONTH
    energy = float(items.electricity_usd(energy_kwh, usd_per_kwh))
    it_peak_w = float(
        items.provisioned_it_w(gpus, tdp, idle, nodes, sysm.node_power_w,
                               fac.switch_w_per_gpu)
    )  # fmt: skip
    colo = (
        float(items.colocation_usd(it_peak_w / WATTS_PER_KILOWATT,
                                   fac.colocation_usd_per_kw_month, 1.0))
        if colocation
        else 0.0
    )  # fmt: skip
    min_fte = float(fac.on_call_min_fte(gpus))
    fte = fac.fte_per_1000_gpus(owned=True)
    rate = fac.loaded_labour_rate()[0]
    staff = float(items.ops_staff_usd(gpus, HOURS_PER_MONTH, fte, rate, min_fte))
    held = gpus * (1 + spares)
    parts: list[tuple[str, Any, str, dict[str, Any]]] = [
        ("accelerators", chip, "g (1+k) P", {"chip_usd": chip}),
        ("servers", cp["server_usd"], "g (1+k) P s", {"server_fraction": fr["server"]}),
        ("network", cp["network_usd"], "g (1+k) P(1+s) n", {"network_fraction": fr["network"]}),
        ("storage", cp["storage_usd"], "g (1+k) P(1+s) o", {"storage_fraction": fr["storage"]}),
        ("installation", cp["installation_usd"], "(...) i", {"install_fraction": fr["install"]}),
    ]
    out_items = [_item(n, float(x) * held, "capex", f, inp) for n, x, f, inp in parts]
    out_items += [
        _item(
            "energy",
            energy,
            "opex_monthly",
            "P_IT/(1-loss) PUE 730.5 h e",
            {"it_power_w": it_w, "pue": pue, "usd_per_kwh": usd_per_kwh},
        ),
        _item(
            "colocation", colo, "opex_monthly", "c_kW P_IT_peak / 1000", {"it_peak_w": it_peak_w}
        ),
        _item(
            "operations_staff",
            staff,
            "opex_monthly",
            "max(g/1000 FTE, on-call rota FTE x min(1, g / rota fleet)) x 730.5 h / 8766 h"
            " x 2080 h x wage x employer-cost factor (rota FTE = seats x 8766 h / productive h)",
            {"fte_per_1000_gpus": fte, "on_call_min_fte": min_fte},
        ),
    ]
    keys = ("server", "network", "storage", "install", "spares", "loss", "idle", "active",
            "switch", "fte_owned", "sre", "employer", "seats", "prod_h", "rota_gpus")  # fmt: skip
    srcs = [_source(fac, ids[k]) for k in keys]
    srcs += [_source(fac, pid), _source(fac, kwh_price_id)]
    if colocation:
        srcs.append(_source(fac, ids["colo"]))
    prov = acc.provenance.get("price")
    if prov:
        srcs.insert(0, f"accelerators.{acc.id}.price: {prov.source.cite()}")
    return {
        "capex_usd": per_gpu * gpus,
        "capex_per_gpu_usd": per_gpu,
        "resellable_usd": (chip + float(cp["server_usd"])) * held,
        "opex_usd_per_month": energy + colo + staff,
        "energy_kwh_per_month": energy_kwh,
        "it_power_w": it_w,
        "items": out_items,
        "sources": srcs,
    }


def _rent(mode: str, rental: _Rental, gpus: int, u: float, fac: CostFactors) -> dict[str, Any]:
    """Return a month of renting in ``mode``: the items of :mod:`aitco.cost.items`."""
    ids = FACTOR_IDS
    price, provider = rental.usd_per_gpu_h, rental.provider
    busy = 1.0 if mode in COMMITTED else u
    billed_h = HOURS_PER_MONTH * busy
    compute = float(items.rental_usd(gpus, billed_h, price))
    rework = 0.0
    srcs = [_source(fac, ids[k]) for k in ("fte_cloud", "sre", "employer", "restart")]
    if mode == "spot":
        sid, sigma = fac.spot_rate_per_instance_h(provider, "provider")
        # every instance's preemption stops the job (compare's goodput): restart hours lost
        rate = float(reliability.job_interruption_rate_per_h(0.0, 0, sigma, rental.instances))
        rework = float(items.lost_gpu_hours_usd(gpus, rate * billed_h * fac.restart_h, price))
        srcs.append(_source(fac, sid))
    # the provider's support plan; a user-given price (no provider) is priced on AWS's plan
    key = (provider or "aws").lower()
    support = 0.0
    sup_in: dict[str, Any] = {"provider": key, "schedule": None}
    sched = fac.support_schedule(key)
    if sched is not None:
        breaks, rates, low, sup_ids = sched
        other = fac.support_account_other_usd_per_month
        support = float(items.cloud_support_usd(compute + rework, 1.0, breaks, rates, low, other))
        sup_in["schedule"] = {"tier_breaks_usd_per_month": breaks, "tier_rates": rates}
        sup_in["account_other_usd_per_month"] = other
        srcs += [_source(fac, i) for i in (*sup_ids, ids["account_other"])]
    fte = fac.fte_per_1000_gpus(owned=False)
    staff = float(items.ops_staff_usd(gpus, HOURS_PER_MONTH, fte, fac.loaded_labour_rate()[0], 0.0))
    return {
        "available": True,
        "price_usd_per_gpu_h": price,
        "billed_fraction_of_hours": busy,
        "usd_per_month": compute + rework + support + staff,
        "items": [
            _item(
                "compute", compute, "rent_monthly", "g 730.5 h p x billed fraction",
                {"usd_per_gpu_hour": price},
            ),
            _item(
                "spot_rework", rework, "rent_monthly",
                "g x (sigma x instances x billed hours) x t_restart x p",
                {"instances": rental.instances},
            ),
            _item(
                "support", support, "rent_monthly",
                "sum over brackets of rate x part of the monthly bill in the bracket (min fee)",
                sup_in,
            ),
            _item(
                "operations_staff", staff, "rent_monthly", "g/1000 FTE 730.5 h w",
                {"fte_per_1000_gpus": fte},
            ),
        ],
        "sources": srcs,
    }  # fmt: skip


def _break_even_u(
    acc: Accelerator,
    sysm: System,
    gpus: int,
    fac: CostFactors,
    region: str,
    pue_id: str | None,
    colo: bool,
    mode: str,
    rental: _Rental,
    curve: list[float],
    n_months: int,
    rm: float,
) -> float | None:
    """Utilisation at which owning and renting in ``mode`` have the same NPV (bisection)."""
    if mode in COMMITTED:
        return None  # reserved bills every hour: utilisation moves only the owned energy
    t = np.arange(1, n_months + 1, dtype=float)
    disc = (1.0 + rm) ** -t

    def gap(u: float) -> float:
        o = _owned(acc, sysm, gpus, u, fac, region, pue_id, colo)
        resale = (
            float(finance.residual_fraction(curve, n_months / MONTHS_PER_YEAR))
            * o["resellable_usd"]
        )
        npv_o = o["capex_usd"] + float(np.sum(o["opex_usd_per_month"] * disc)) - resale * disc[-1]
        npv_r = float(np.sum(_rent(mode, rental, gpus, u, fac)["usd_per_month"] * disc))
        return npv_r - npv_o

    lo, hi = 1e-6, 1.0
    g_lo, g_hi = gap(lo), gap(hi)
    if g_hi < 0:
        return None  # renting stays cheaper even at full use
    if g_lo >= 0:
        return 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if gap(mid) >= 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def _item(
    name: str, usd: float, category: str, formula: str, inputs: dict[str, Any]
) -> dict[str, Any]:
    return {
        "name": name,
        "usd": float(usd),
        "category": category,
        "formula": formula,
        "inputs": inputs,
    }

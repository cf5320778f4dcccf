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

from typing import Any

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import Accelerator, System
from aitco.cost import capex as capex_mod
from aitco.cost import finance, people, power
from aitco.cost.factors import CostFactors
from aitco.cost.offers import select_offer
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
    "restart": "restart.hours",
}


def _source(fac: CostFactors, fid: str) -> str:
    """Return the citation of a factor (``id: where its value came from``)."""
    fac.raw(fid)
    return fac.sources(fid)[0]


def _rent_price(
    cat: Catalog,
    acc: Accelerator,
    mode: str,
    region: str | None,
    gpus: int = 1,
    provider: str | None = None,
) -> tuple[float, str, str] | str:
    """``(usd per accelerator used per hour, provider, offer id)`` for ``mode``, or why not.

    The offer is chosen by :func:`aitco.cost.offers.select_offer` (as in ``aitco compare``):
    every mode from one home instance type, whole instances billed (the price is per
    accelerator *used*: the instances' price over ``gpus``).
    """
    c = select_offer(cat.offers_for(acc.id), mode, gpus, provider=provider, region=region)
    if c is None:
        return f"no {mode} offer for {acc.id} in the catalog"
    if not c.eligible:
        return "; ".join(c.reasons)
    return c.usd_per_hour_billed / gpus, c.provider, c.offer_id


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
        price = (prices or {}).get(mode)
        src, provider = "user override", None
        why = f"no {mode} offer for {acc.id} in the catalog"
        if price is None:
            found = _rent_price(catalog, acc, mode, price_region, gpus, provider)
            if isinstance(found, str):
                why = found
            else:
                price, provider, offer_id = found
                src = f"catalog offer {offer_id}"
        if price is None:
            rents[mode] = {"available": False, "reason": why}
            continue
        r = _rent(mode, float(price), gpus, utilization, fac, provider)
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
            float(price),
            curve,
            n_months,
            rm,
            provider,
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
    cp = capex_mod.capex_parts_usd(
        chip, fac.value(ids["server"]), fac.value(ids["network"]), fac.value(ids["storage"]),
        fac.value(ids["install"]),
    )  # fmt: skip
    server, network = float(cp["server_usd"]), float(cp["network_usd"])
    storage, install = float(cp["storage_usd"]), float(cp["installation_usd"])
    spares = fac.value(ids["spares"])
    per_gpu = float(cp["capex_usd"]) * (1.0 + spares)
    capex = per_gpu * gpus
    nodes = float(power.host_share_nodes(gpus, sysm.devices_per_node))  # host shared by slot
    tdp = acc.board_power_w or 0.0  # the TDP, or the lower power limit it is run at
    it_w = float(
        power.it_power_w(
            gpus,
            tdp,
            u,
            fac.value(ids["active"]),
            fac.value(ids["idle"]),
            nodes,
            sysm.node_power_w,
            fac.value(ids["switch"]),
        )
    )
    it_peak_w = float(
        power.it_power_w(
            gpus,
            tdp,
            1.0,
            1.0,
            fac.value(ids["idle"]),
            nodes,
            sysm.node_power_w,
            fac.value(ids["switch"]),
        )
    )
    pid = pue_id or ("pue.liquid" if sysm.cooling == "liquid" else "pue.air")
    pue = fac.value(pid)
    kwh_price_id = f"electricity.usd-per-kwh.{region}"
    fac_w = float(power.facility_power_w(it_w, fac.value(ids["loss"]), pue))
    energy_kwh = float(power.energy_kwh(fac_w, HOURS_PER_MONTH))
    energy = float(power.electricity_usd(energy_kwh, fac.value(kwh_price_id)))
    colo = fac.value(ids["colo"]) * it_peak_w / WATTS_PER_KILOWATT if colocation else 0.0
    min_fte = float(people.on_call_fte(fac.value(ids["seats"]), fac.value(ids["prod_h"])))
    staff = float(
        people.ops_staff_usd(
            gpus, HOURS_PER_MONTH, fac.value(ids["fte_owned"]), fac.loaded_labour_rate()[0], min_fte
        )
    )
    opex = energy + colo + staff
    items = [
        _item("accelerators", chip * gpus * (1 + spares), "capex", "g (1+k) P", {"chip_usd": chip}),
        _item(
            "servers",
            server * gpus * (1 + spares),
            "capex",
            "g (1+k) P s",
            {"server_fraction": fac.value(ids["server"])},
        ),
        _item(
            "network",
            network * gpus * (1 + spares),
            "capex",
            "g (1+k) P(1+s) n",
            {"network_fraction": fac.value(ids["network"])},
        ),
        _item(
            "storage",
            storage * gpus * (1 + spares),
            "capex",
            "g (1+k) P(1+s) o",
            {"storage_fraction": fac.value(ids["storage"])},
        ),
        _item(
            "installation",
            install * gpus * (1 + spares),
            "capex",
            "(...) i",
            {"install_fraction": fac.value(ids["install"])},
        ),
        _item(
            "energy",
            energy,
            "opex_monthly",
            "P_IT/(1-loss) PUE 730.5 h e",
            {"it_power_w": it_w, "pue": pue, "usd_per_kwh": fac.value(kwh_price_id)},
        ),
        _item(
            "colocation", colo, "opex_monthly", "c_kW P_IT_peak / 1000", {"it_peak_w": it_peak_w}
        ),
        _item(
            "operations_staff",
            staff,
            "opex_monthly",
            "max(g/1000 FTE, on-call seats x 8766 h / productive h) x 730.5 h / 8766 h"
            " x 2080 h x wage x employer-cost factor",
            {"fte_per_1000_gpus": fac.value(ids["fte_owned"]), "on_call_min_fte": min_fte},
        ),
    ]
    srcs = [
        _source(fac, ids[k])
        for k in (
            "server",
            "network",
            "storage",
            "install",
            "spares",
            "loss",
            "idle",
            "active",
            "switch",
            "fte_owned",
            "sre",
            "employer",
            "seats",
            "prod_h",
        )
    ]
    srcs += [_source(fac, pid), _source(fac, kwh_price_id)]
    if colocation:
        srcs.append(_source(fac, ids["colo"]))
    prov = acc.provenance.get("price")
    if prov:
        srcs.insert(0, f"accelerators.{acc.id}.price: {prov.source.cite()}")
    return {
        "capex_usd": capex,
        "capex_per_gpu_usd": per_gpu,
        "resellable_usd": (chip + server) * gpus * (1 + spares),
        "opex_usd_per_month": opex,
        "energy_kwh_per_month": energy_kwh,
        "it_power_w": it_w,
        "items": items,
        "sources": srcs,
    }


def _rent(
    mode: str, price: float, gpus: int, u: float, fac: CostFactors, provider: str | None = None
) -> dict[str, Any]:
    ids = FACTOR_IDS
    busy = 1.0 if mode in COMMITTED else u
    compute = gpus * HOURS_PER_MONTH * busy * price
    rework = 0.0
    srcs = [_source(fac, ids[k]) for k in ("fte_cloud", "sre", "employer", "restart")]
    if mode == "spot":
        sid, sigma = fac.spot_rate_per_instance_h(provider, "provider")
        rework = compute * sigma * fac.value(ids["restart"])
        srcs.append(_source(fac, sid))
    # the provider's support plan; a user-given price (no provider) is priced on AWS's plan
    key = (provider or "aws").lower()
    support = 0.0
    sup_in: dict[str, Any] = {"provider": key, "schedule": None}
    sched = fac.support_schedule(key)
    if sched is not None:
        breaks, rates, low, sup_ids = sched
        support = float(people.tiered_fee_usd(compute + rework, 1.0, breaks, rates, low))
        sup_in["schedule"] = {"tier_breaks_usd_per_month": breaks, "tier_rates": rates}
        srcs += [_source(fac, i) for i in sup_ids]
    staff = float(
        people.ops_staff_usd(
            gpus, HOURS_PER_MONTH, fac.value(ids["fte_cloud"]), fac.loaded_labour_rate()[0]
        )
    )
    monthly = compute + rework + support + staff
    return {
        "available": True,
        "price_usd_per_gpu_h": price,
        "billed_fraction_of_hours": busy,
        "usd_per_month": monthly,
        "items": [
            _item(
                "compute",
                compute,
                "rent_monthly",
                "g 730.5 h p x billed fraction",
                {"usd_per_gpu_hour": price},
            ),
            _item("spot_rework", rework, "rent_monthly", "compute sigma t_restart", {}),
            _item(
                "support",
                support,
                "rent_monthly",
                "sum over brackets of rate x part of the monthly bill in the bracket (min fee)",
                sup_in,
            ),
            _item(
                "operations_staff",
                staff,
                "rent_monthly",
                "g/1000 FTE 730.5 h w",
                {"fte_per_1000_gpus": fac.value(ids["fte_cloud"])},
            ),
        ],
        "sources": srcs,
    }


def _break_even_u(
    acc: Accelerator,
    sysm: System,
    gpus: int,
    fac: CostFactors,
    region: str,
    pue_id: str | None,
    colo: bool,
    mode: str,
    price: float,
    curve: list[float],
    n_months: int,
    rm: float,
    provider: str | None = None,
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
        npv_r = float(np.sum(_rent(mode, price, gpus, u, fac, provider)["usd_per_month"] * disc))
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

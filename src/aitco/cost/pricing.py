"""The price of an accelerator-hour: rented from the offer that bills the job, or owned.

One place prices an accelerator-hour for every command. A rented option takes the offer that
:func:`aitco.cost.offers.select_offer` chooses (eligibility, whole instances, one home instance
type for every term); a committed term (``reserved_1y``, ``reserved_3y``) is billed for whole
terms (:data:`COMMITTED_TERM_YEARS`); owned hardware (``owned``, ``colocation``) costs its capital
over the holding period (:func:`owned_price`: depreciation, technology-iteration risk and
financing of :mod:`aitco.cost.capex`). A MIG slice or a time-sliced share of a GPU pays its share
of every part (:func:`slice_price`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import (
    SPOT_RATE_PREFIX,
    Accelerator,
    CloudOffer,
    System,
    spot_rate_ids,
)
from aitco.cost import capex as capex_mod
from aitco.cost import finance
from aitco.cost import offers as offers_mod
from aitco.cost.factors import (
    DISCOUNT_RATE_ID,
    HORIZON_ID,
    USEFUL_LIFE_ID,
    CostFactors,
)
from aitco.errors import CatalogError, InputError, UnknownIdError
from aitco.units import HOURS_PER_YEAR

#: Pricing modes rented from a cloud offer.
RENTED = ("on_demand", "spot", "reserved_1y", "reserved_3y")
#: Pricing modes of owned hardware (``colocation``: owned hardware in rented space).
OWNED = ("owned", "colocation")
#: Modes that hold capacity whether or not it is busy, so scheduling fragmentation costs money.
HELD = ("owned", "colocation", "reserved_1y", "reserved_3y")
#: Pricing modes billed only for the hours a replica runs (an autoscaled service pays for the
#: replicas actually running; committed and owned capacity is held at the peak all period).
PAY_AS_USED = ("on_demand", "spot")
#: Length of a committed term by pricing mode. [years]
COMMITTED_TERM_YEARS: dict[str, float] = {"reserved_1y": 1.0, "reserved_3y": 3.0}
#: Region of a factor looked up by region when an option names none.
DEFAULT_REGION = "us"
#: Offers listed in a "no price" error before it says "..." (the full list: aitco catalog list).
MAX_OFFERS_SHOWN = 8
#: Company names users write for a provider id.
PROVIDER_ALIASES = {
    "amazon": "aws",
    "amazon-web-services": "aws",
    "ec2": "aws",
    "google": "gcp",
    "google-cloud": "gcp",
    "microsoft": "azure",
    "oracle": "oci",
}


def committed_term_h(mode: str) -> float:
    """Return the hours of one committed term of ``mode`` (NaN: no committed term). [h]."""
    years = COMMITTED_TERM_YEARS.get(mode)
    return math.nan if years is None else years * HOURS_PER_YEAR


@dataclass
class GpuHourPrice:
    """Price of an accelerator-hour, and what it is made of.

    Attributes
    ----------
    usd_per_gpu_h : float
        The price. [USD/(GPU h)]
    parts : dict of str to float
        Its parts: ``rental``, or ``depreciation``, ``tech_iteration_risk`` and ``financing``
        of owned hardware. [USD/(GPU h)]
    inputs, sources : dict, list of str
        What it was computed from, and the citations.
    provider, offer : str or None
        The offer that bills a rented option.
    gpus_per_instance, instances, gpus_billed : int
        Accelerators of one instance; whole instances rented and the accelerators they bill
        (owned: the nodes and accelerators used).
    capex : dict
        Capital of owned hardware (``capex_usd``, ``book_value_end_usd``...). [USD]
    reasons : list of str
        Why the offer is not eligible for the job (it then prices the option for reference).
    reprice : callable or None
        Re-select the offer for another accelerator count and unit (rented options).
    """

    usd_per_gpu_h: float
    parts: dict[str, float]
    inputs: dict[str, Any]
    sources: list[str]
    provider: str | None = None
    gpus_per_instance: int = 1
    offer: str | None = None
    capex: dict[str, float] = field(default_factory=dict)
    instances: int = 0
    gpus_billed: int = 0
    reasons: list[str] = field(default_factory=list)
    reprice: Callable[[int, int], GpuHourPrice] | None = None


def check_provider(
    cat: Catalog, acc: Accelerator, provider: str | None, where: str = "option"
) -> None:
    """Reject a ``provider`` the catalog does not know, or one that does not rent ``acc``."""
    if not provider or provider == offers_mod.ANY_PROVIDER:
        return
    known = {o.provider for o in cat.offers.values()}
    alias = PROVIDER_ALIASES.get(provider.lower())
    if provider not in known and alias in known:
        raise CatalogError(
            f"{where}.provider",
            provider,
            "a provider id of the catalog",
            hint=f"did you mean {alias!r}?",
        )
    if provider not in known:
        raise UnknownIdError("provider", provider, known, field=f"{where}.provider")
    renting = sorted({o.provider for o in cat.offers_for(acc.id)})
    if provider not in renting:
        raise CatalogError(
            f"{where}.provider",
            provider,
            f"a provider that rents {acc.id} ({', '.join(renting) or 'none'})",
            hint=f"choose one of these, or provider: {offers_mod.ANY_PROVIDER}",
        )


def rental_price(
    cat: Catalog,
    acc: Accelerator,
    term: str,
    gpus: int,
    *,
    unit_gpus: int | None = None,
    usd_per_gpu_hour: float | None = None,
    offer: str | None = None,
    provider: str | None = None,
    region: str | None = None,
    where: str = "option",
) -> GpuHourPrice:
    """Price of an accelerator-hour from the offer that bills the job (whole instances).

    Parameters
    ----------
    cat : Catalog
        Offers.
    acc : Accelerator
        The accelerator rented.
    term : str
        Pricing mode (one of :data:`RENTED`).
    gpus : int
        Accelerators used. [count]
    unit_gpus : int, optional
        Accelerators that must share one network (a training job: all; a service: a replica).
    usd_per_gpu_hour : float, optional
        A given price (no offer is selected; the accelerators used are billed).
    offer, provider, region : str, optional
        Narrow the offers to one, to a provider, to a region prefix.
    where : str
        Field prefix named in errors.

    Returns
    -------
    GpuHourPrice
        The price, its offer and the whole instances billed.
    """
    if usd_per_gpu_hour is not None:
        return GpuHourPrice(
            usd_per_gpu_hour,
            {"rental": usd_per_gpu_hour},
            {"usd_per_gpu_hour": usd_per_gpu_hour},
            [f"{where}.usd_per_gpu_hour (scenario)"],
            provider=provider if provider != offers_mod.ANY_PROVIDER else None,
            instances=gpus,
            gpus_billed=gpus,
        )
    cands: list[CloudOffer] = cat.offers_for(acc.id)
    if offer:
        if offer not in cat.offers:
            raise UnknownIdError("offer", offer, cat.offers, field=f"{where}.offer")
        cands = [cat.offers[offer]]
    check_provider(cat, acc, provider, where)
    choice = offers_mod.select_offer(
        cands, term, gpus, unit_gpus=unit_gpus, provider=provider, region=region
    )
    if choice is None:
        have = sorted({f"{o.id}:{p.term}" for o in cat.offers_for(acc.id) for p in o.prices})
        shown = ", ".join(have[:MAX_OFFERS_SHOWN]) + (
            ", ..." if len(have) > MAX_OFFERS_SHOWN else ""
        )
        raise CatalogError(
            f"{where}.pricing",
            term,
            f"a {term} price for {acc.id} in the offers (have: {shown or 'none'})",
            hint=f"give {where}.usd_per_gpu_hour, or another pricing mode",
        )
    o = cat.offers[choice.offer_id]
    per = choice.usd_per_gpu_hour
    prov = o.provenance.get("prices")
    src = [
        f"offer {o.id} {choice.term} {choice.region} ${choice.usd_per_instance_hour}/h "
        f"as of {choice.as_of}"
    ]
    if prov:
        src.append(prov.source.cite())
    return GpuHourPrice(
        per,
        {"rental": per},
        {
            "offer": o.id,
            "usd_per_instance_hour": choice.usd_per_instance_hour,
            "accelerators_per_instance": o.accelerators_per_instance,
            "region": choice.region,
        },
        src,
        provider=o.provider,
        gpus_per_instance=o.accelerators_per_instance,
        offer=o.id,
        instances=choice.instances,
        gpus_billed=choice.gpus_billed,
        reasons=list(choice.reasons),
    )


def owned_price(
    acc: Accelerator, fac: CostFactors, method: str = "straight_line", gpus: int = 1
) -> GpuHourPrice:
    """Capital cost of one owned accelerator-hour (the one owned price of every command).

    The capital of :func:`aitco.cost.capex.capex_parts_usd` over the holding period
    (:func:`aitco.cost.capex.ownership_usd_per_gpu_hour`): depreciation to the book value
    (``method``), the technology-iteration risk (book over market value) and financing.
    """
    if acc.price is None:
        raise CatalogError(
            f"accelerators.{acc.id}.price",
            None,
            "a purchase price to price owned hardware",
            hint="add price: {usd: ..., as_of: ...} in a --catalog overlay",
        )
    chip = acc.price.usd
    fr = {k: fac.value(fid) for k, fid in capex_mod.CAPEX_FACTORS.items()}
    for k, fid in capex_mod.CAPEX_FACTORS.items():
        if fr[k] < 0:
            raise InputError(fid, fr[k], "a value >= 0")
    cp = capex_mod.capex_parts_usd(chip, fr["server"], fr["network"], fr["storage"], fr["install"])
    capex = float(cp["capex_usd"])
    horizon = fac.value(HORIZON_ID)
    life = fac.value(USEFUL_LIFE_ID)
    rate = fac.value(DISCOUNT_RATE_ID)
    curve_id = fac.residual_curve_id(acc.id, acc.residual_class)
    curve = fac.curve(curve_id)
    book = float(finance.book_value_fraction(horizon, life, method=method))
    market = float(finance.residual_fraction(curve, horizon))
    per_h = capex_mod.ownership_usd_per_gpu_hour(capex, book, market, rate, horizon)
    parts = {k: per_h[k] for k in ("depreciation", "tech_iteration_risk", "financing")}
    sources = fac.sources(
        *capex_mod.CAPEX_FACTORS.values(), HORIZON_ID, USEFUL_LIFE_ID, DISCOUNT_RATE_ID, curve_id
    )
    prov = acc.provenance.get("price")
    if prov:
        sources.insert(0, f"accelerators.{acc.id}.price: {prov.source.cite()}")
    return GpuHourPrice(
        per_h["total"],
        parts,
        {
            "accelerator_usd": chip,
            "server_usd": float(cp["server_usd"]),
            "network_usd": float(cp["network_usd"]),
            "storage_usd": float(cp["storage_usd"]),
            "installation_usd": float(cp["installation_usd"]),
            "capex_usd_per_gpu": capex,
            "horizon_years": horizon,
            "useful_life_years": life,
            "discount_rate": rate,
            "book_value_fraction_end": book,
            "market_value_fraction_end": market,
            "depreciation": method,
        },
        sources,
        capex={
            "capex_usd": capex * gpus,
            "book_value_end_usd": capex * book * gpus,
            "market_value_end_usd": capex * market * gpus,
            "tech_iteration_risk_usd": capex * (book - market) * gpus,
        },
    )


def slice_price(
    price: GpuHourPrice, shares: int, profile: str | None, time_slice: int | None = None
) -> GpuHourPrice:
    """Price of one share of a GPU: every part of the GPU-hour over the shares one GPU holds.

    A share is a MIG slice, a time-slicing replica, or a time-sliced MIG slice.
    """
    share: dict[str, Any] = {}
    if profile is not None:
        share.update(mig_profile=profile, mig_slices_per_gpu=shares // (time_slice or 1))
    if time_slice is not None:
        share["time_slice"] = time_slice
    return GpuHourPrice(
        price.usd_per_gpu_h / shares,
        {k: x / shares for k, x in price.parts.items()},
        {**price.inputs, **share, "shares_per_gpu": shares},
        price.sources,
        provider=price.provider,
        gpus_per_instance=price.gpus_per_instance * shares,
        offer=price.offer,
        capex={k: x / shares for k, x in price.capex.items()},
        instances=price.instances,
        gpus_billed=price.gpus_billed * shares,
        reasons=price.reasons,
    )


def offer_system(cat: Catalog, acc: Accelerator, sysm: System, offer_id: str) -> System | None:
    """Return the system a rented offer runs on (its NICs and scale-out fabric), or None.

    None: the offer names no system of this accelerator (the hardware's own system applies).
    An instance with no published host power takes the matching node's host power.
    """
    offer_sys = cat.offers[offer_id].system
    if not (offer_sys and offer_sys in cat.systems):
        return None
    osys = cat.systems[offer_sys]
    if osys.accelerator != acc.id:
        return None
    if osys.node_power_w == 0 and sysm.node_power_w > 0:
        osys = osys.model_copy(update={"node_power_w": sysm.node_power_w})
    return osys


def spot_rates(fac: CostFactors) -> dict[str, float]:
    """Spot preemptions per instance-hour by provider (``default`` for the others). [1/h].

    Every ``spot-interruption.per-hour.<provider>`` factor, as
    :meth:`~aitco.cost.factors.CostFactors.spot_rate_per_instance_h` reads them one by one; a
    missing default is an error naming it.
    """
    out = {"default": fac.value(f"{SPOT_RATE_PREFIX}default")}
    out.update(
        (fid.removeprefix(SPOT_RATE_PREFIX), fac.value(fid))
        for fid in fac.catalog.factors
        if fid.startswith(SPOT_RATE_PREFIX)
    )
    return out


@dataclass(frozen=True)
class OfferBill:
    """What an offer bills a job: the price per accelerator-hour and the whole instances.

    ``price`` NaN: no eligible offer; ``offer_code`` -1: no offer (owned or a given price).
    """

    price: float
    gpus_billed: float
    instances: float
    offer_code: float
    spot_rate: float

    def as_tuple(self) -> tuple[float, float, float, float, float]:
        """Return ``(price, gpus_billed, instances, offer_code, spot_rate)``."""
        return (self.price, self.gpus_billed, self.instances, self.offer_code, self.spot_rate)


def offer_bill(
    offers: list[CloudOffer],
    mode: str,
    gpus: int,
    unit_gpus: int,
    *,
    given_price: float,
    devices_per_node: float,
    offer_ids: list[str],
    rates: dict[str, float],
    provider: str | None = None,
    region: str | None = None,
) -> OfferBill:
    """Bill of one (hardware, mode, region, gpus, unit) cell of a sweep's price table.

    A given price (``given_price`` not NaN), owned hardware or hardware without offers bill the
    accelerators used, by the node; a rented mode bills the whole instances of the offer
    :func:`aitco.cost.offers.select_offer` chooses (as :func:`rental_price` does for one option),
    NaN when none is eligible. ``rates``: :func:`spot_rates`.
    """
    default_spot = rates.get("default", math.nan) if mode == "spot" else 0.0
    if not np.isnan(given_price) or mode in OWNED or not offers:
        nodes = float(math.ceil(gpus / devices_per_node))
        return OfferBill(given_price, float(gpus), nodes, -1.0, default_spot)
    c = offers_mod.select_offer(
        offers, mode, gpus, unit_gpus=unit_gpus, provider=provider, region=region
    )
    if c is None or not c.eligible:
        return OfferBill(math.nan, float(gpus), math.nan, -1.0, 0.0)
    spot = 0.0
    if mode == "spot":  # the family's rate, else the provider's, else the default (as compare)
        inst = next((o.instance for o in offers if o.id == c.offer_id), None)
        keys = [f.removeprefix(SPOT_RATE_PREFIX) for f in spot_rate_ids(c.provider, inst)]
        spot = next((rates[k] for k in keys if k in rates), default_spot)
    code = float(offer_ids.index(c.offer_id))
    return OfferBill(c.usd_per_gpu_hour, float(c.gpus_billed), float(c.instances), code, spot)

r"""Dollars of one year: convert catalog prices with the CPI-U series shipped in the catalog.

Every purchase and rental price is in the US dollars of its ``usd_year`` (default: the year of
its ``as_of``). ``--usd-year Y`` restates them all in dollars of year Y:

.. math:: p_Y = p_y \, \frac{\mathrm{CPI}_Y}{\mathrm{CPI}_y}

with the CPI-U annual averages of the ``cpi-u.us.YYYY`` factors (BLS). A year past the last
one in the series uses the last value (no inflation assumed beyond it), and says so.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import OfferPrice, Price
from aitco.errors import InputError

#: Factor id prefix of the CPI-U annual averages.
CPI_PREFIX = "cpi-u.us."


def cpi_series(catalog: Catalog) -> dict[int, float]:
    """CPI-U index by year from the catalog's ``cpi-u.us.YYYY`` factors."""
    out: dict[int, float] = {}
    for fid, f in catalog.factors.items():
        tail = fid[len(CPI_PREFIX) :]
        if fid.startswith(CPI_PREFIX) and tail.isdigit() and not isinstance(f.value, list):
            out[int(tail)] = float(f.value)
    return dict(sorted(out.items()))


def cpi_year(series: dict[int, float], year: int, field: str = "--usd-year") -> int:
    """Return the series year used for ``year``: itself, or the last one for a later year."""
    if not series:
        raise InputError(field, year, "a catalog with the cpi-u.us.YYYY factors")
    first, last = min(series), max(series)
    if year < first:
        raise InputError(field, year, f"a year from {first} on (the CPI series starts there)")
    return min(year, last)


def usd_year_factor(series: dict[int, float], from_year: int, to_year: int) -> float:
    """Multiply dollars of ``from_year`` by this to get dollars of ``to_year``."""
    a = cpi_year(series, from_year, "usd_year")
    b = cpi_year(series, to_year)
    return series[b] / series[a]


def _price(p: Price, series: dict[int, float], year: int) -> Price:
    k = usd_year_factor(series, p.dollar_year, year)
    return p.model_copy(update={"usd": p.usd * k, "usd_year": year})


def _offer_price(p: OfferPrice, series: dict[int, float], year: int) -> OfferPrice:
    k = usd_year_factor(series, p.dollar_year, year)
    return p.model_copy(update={"usd_per_hour": p.usd_per_hour * k, "usd_year": year})


def in_usd_year(catalog: Catalog, year: int) -> Catalog:
    """Restate every purchase and rental price of the catalog in dollars of ``year``.

    Parameters
    ----------
    catalog : Catalog
        Loaded catalog (with the CPI factors).
    year : int
        Target year of the dollars.

    Returns
    -------
    Catalog
        A copy: accelerator and node prices and every offer price converted, ``usd_year`` set.
    """
    s = cpi_series(catalog)
    cpi_year(s, year)  # validates the year
    accs = {
        k: a.model_copy(update={"price": _price(a.price, s, year)}) if a.price else a
        for k, a in catalog.accelerators.items()
    }
    systems = {
        k: x.model_copy(update={"node_price": _price(x.node_price, s, year)}) if x.node_price else x
        for k, x in catalog.systems.items()
    }
    offers = {
        k: o.model_copy(update={"prices": [_offer_price(p, s, year) for p in o.prices]})
        for k, o in catalog.offers.items()
    }
    return dataclasses.replace(catalog, accelerators=accs, systems=systems, offers=offers)


def usd_year_note(catalog: Catalog, year: int) -> dict[str, Any]:
    """Describe what ``--usd-year`` did: target year, CPI year used, first year of the series."""
    s = cpi_series(catalog)
    used = cpi_year(s, year)
    note = f"prices restated in {year} US dollars with the CPI-U annual averages (BLS)" + (
        "" if used == year else f"; no CPI for {year} yet: {used} used (no inflation after)"
    )
    return {"usd_year": year, "cpi_year": used, "cpi_first_year": min(s), "note": note}

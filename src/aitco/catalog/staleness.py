"""Which catalog values are older than a cut-off, and which of them a comparison rests on.

A value's date is the date it applied: a price's ``as_of`` (accelerator, node, cloud offer,
token API), or for a factor the date of the source it came from. ``as_of_estimated`` marks a
date chosen by hand for an undated page; ``retrieved`` (when a price was read) is kept apart
from ``as_of`` and is never used as the value's age.

The one place that decides what is "stale" is :func:`stale_values`; :func:`stale_price_inputs`
applies the same rule to the prices a comparison used.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlparse

from aitco.catalog.loader import Catalog, _lookup_prov
from aitco.catalog.schema import KINDS, CloudOffer, OfferPrice, Price, Source

#: Default age, in months, beyond which a value is reported as stale.
DEFAULT_STALE_MONTHS = 12
#: Mean length of a month in days (365.2425 / 12), to turn a date difference into months.
DAYS_PER_MONTH = 30.436875

#: Kinds of dated value, in the order they are reported.
STALE_KINDS = ("cloud_price", "accelerator_price", "node_price", "api_price", "factor")
#: The kinds that are prices (``catalog check --max-age-months`` checks these).
PRICE_KINDS = ("cloud_price", "accelerator_price", "node_price", "api_price")

#: Pricing modes whose rate is the accelerator's purchase price rather than an offer's.
_OWNED_MODES = frozenset({"owned", "colocation"})


@dataclass(frozen=True)
class DatedValue:
    """One dated catalog value.

    Attributes
    ----------
    kind : str
        One of :data:`STALE_KINDS`.
    id : str
        Catalog id of the entry holding the value.
    field : str
        Field path inside the entry (``prices.3.usd_per_hour``, ``price.usd``, ``value``).
    value : float or None
        The value (USD for prices; the factor's value otherwise, None for curves).
    as_of : datetime.date
        Date the value applied.
    age_months : float
        Months between ``as_of`` and the reference day.
    as_of_estimated : bool
        Whether ``as_of`` was chosen by hand for an undated source.
    """

    kind: str
    id: str
    field: str
    value: float | None
    as_of: dt.date
    age_months: float
    as_of_estimated: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (dates as ISO strings, age rounded to 0.1 month)."""
        d = asdict(self)
        d["as_of"] = self.as_of.isoformat()
        d["age_months"] = round(self.age_months, 1)
        return d


def age_months(as_of: dt.date, today: dt.date) -> float:
    """Months from ``as_of`` to ``today`` (negative for a future date)."""
    return (today - as_of).days / DAYS_PER_MONTH


def reference_day(catalog: Catalog, today: dt.date | None = None) -> dt.date:
    """Return the day ages are measured at.

    ``today`` if given, else the catalog's ``--as-of`` day, else today's date.
    """
    return today or catalog.as_of or dt.date.today()


def _dated(
    kind: str, eid: str, fld: str, value: float | None, p: Price | OfferPrice | dt.date,
    today: dt.date,
) -> DatedValue:  # fmt: skip
    if isinstance(p, dt.date):
        return DatedValue(kind, eid, fld, value, p, age_months(p, today))
    return DatedValue(
        kind, eid, fld, value, p.as_of, age_months(p.as_of, today), bool(p.as_of_estimated)
    )


def dated_values(catalog: Catalog, *, today: dt.date | None = None) -> list[DatedValue]:
    """Every dated price and factor of the catalog with its age.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalog (with any overlays).
    today : datetime.date, optional
        Reference day (default: the catalog's ``as_of`` day, else today).

    Returns
    -------
    list of DatedValue
        Cloud prices, accelerator and node purchase prices, token-API prices and factors (the
        quotes in force: a ``price_history`` quote is history, not an input).
    """
    day = reference_day(catalog, today)
    out: list[DatedValue] = []
    for o in catalog.offers.values():
        for i, p in enumerate(o.prices):
            out.append(_dated("cloud_price", o.id, f"prices.{i}", p.usd_per_hour, p, day))
    for a in catalog.accelerators.values():
        if a.price is not None:
            out.append(_dated("accelerator_price", a.id, "price", a.price.usd, a.price, day))
    for s in catalog.systems.values():
        if s.node_price is not None:
            np_ = s.node_price
            out.append(_dated("node_price", s.id, "node_price", np_.usd, np_, day))
    for api in catalog.apis.values():
        out.append(_dated("api_price", api.id, "as_of", api.input_usd_per_mtok, api.as_of, day))
    for f in catalog.factors.values():
        prov = _lookup_prov(f.provenance, "value")
        if prov is None:
            continue
        val = None if isinstance(f.value, list) else float(f.value)
        out.append(_dated("factor", f.id, "value", val, prov.source.retrieved, day))
    return out


def stale_values(
    catalog: Catalog, *, stale_months: float = DEFAULT_STALE_MONTHS, today: dt.date | None = None
) -> list[DatedValue]:
    """Dated values older than ``stale_months`` months, oldest first."""
    rows = [v for v in dated_values(catalog, today=today) if v.age_months > stale_months]
    return sorted(rows, key=lambda v: (v.as_of, v.kind, v.id, v.field))


def stale_counts(values: Iterable[DatedValue]) -> dict[str, int]:
    """Count of values by kind, every kind of :data:`STALE_KINDS` present (0 if none)."""
    c = Counter(v.kind for v in values)
    return {k: c.get(k, 0) for k in STALE_KINDS}


def _used_offer_price(offer: CloudOffer, term: str, region: str | None) -> tuple[int, OfferPrice]:
    """Return the price record a comparison used: the cheapest per hour of its term/region."""
    cands = [
        (i, p)
        for i, p in enumerate(offer.prices)
        if p.term == term and (not region or p.region.startswith(region) or p.region == "all")
    ]
    cands = cands or [(i, p) for i, p in enumerate(offer.prices) if p.term == term]
    return min(cands, key=lambda ip: ip[1].usd_per_hour) if cands else (-1, offer.prices[0])


def price_inputs(
    catalog: Catalog,
    used: Sequence[tuple[str, str, str | None, str | None]],
    *,
    today: dt.date | None = None,
) -> list[dict[str, Any]]:
    """Every dated price a comparison rests on, oldest first (one record per price record).

    Parameters
    ----------
    catalog : Catalog
        The catalog the comparison was priced from.
    used : sequence of (hardware, pricing, offer, region)
        One tuple per priced option: hardware id, pricing mode, the offer id it rented (None
        for owned hardware or a scenario-given rate) and its region (None: any).
    today : datetime.date, optional
        Reference day (default: the catalog's ``as_of`` day, else today).

    Returns
    -------
    list of dict
        ``DatedValue.to_json()`` of each price (a cloud price adds its ``term`` and ``region``).
    """
    return [_record(v, extra) for v, extra in _inputs(catalog, used, today)]


def _record(v: DatedValue, extra: dict[str, Any]) -> dict[str, Any]:
    return {**v.to_json(), **extra}


def _inputs(
    catalog: Catalog,
    used: Sequence[tuple[str, str, str | None, str | None]],
    today: dt.date | None,
) -> list[tuple[DatedValue, dict[str, Any]]]:
    day = reference_day(catalog, today)
    seen: dict[tuple[str, str, str], tuple[DatedValue, dict[str, Any]]] = {}
    for hardware, pricing, offer_id, region in used:
        extra: dict[str, Any] = {}
        if offer_id and offer_id in catalog.offers:
            o = catalog.offers[offer_id]
            i, p = _used_offer_price(o, pricing, region)
            v = _dated("cloud_price", o.id, f"prices.{i}", p.usd_per_hour, p, day)
            extra = {"term": p.term, "region": p.region}
        elif pricing in _OWNED_MODES and hardware:
            acc = catalog.accelerators.get(hardware)
            if acc is None and hardware in catalog.systems:
                acc = catalog.accelerators.get(catalog.systems[hardware].accelerator)
            if acc is None or acc.price is None:
                continue
            v = _dated("accelerator_price", acc.id, "price", acc.price.usd, acc.price, day)
        else:
            continue
        seen[(v.kind, v.id, v.field)] = (v, extra)
    return sorted(seen.values(), key=lambda ve: (ve[0].as_of, ve[0].id, ve[0].field))


def stale_price_inputs(
    catalog: Catalog,
    used: Sequence[tuple[str, str, str | None, str | None]],
    *,
    stale_months: float = DEFAULT_STALE_MONTHS,
    today: dt.date | None = None,
) -> list[dict[str, Any]]:
    """Return the prices a comparison rests on that are older than ``stale_months``.

    Parameters are those of :func:`price_inputs`, with the cut-off age ``stale_months``.

    Returns
    -------
    list of dict
        One record per distinct stale price (``DatedValue.to_json()``; a cloud price adds its
        ``term`` and ``region``), oldest first. Options that rest on the same price record
        share one record (see :func:`unique_stale`).
    """
    return [
        _record(v, extra)
        for v, extra in _inputs(catalog, used, today)
        if v.age_months > stale_months
    ]


def oldest_price_input(
    catalog: Catalog,
    used: Sequence[tuple[str, str, str | None, str | None]],
    *,
    today: dt.date | None = None,
) -> dict[str, Any] | None:
    """Return the oldest price a comparison rests on, with its age.

    None when it rests on no catalog price (e.g. only scenario-given rates).
    """
    rows = _inputs(catalog, used, today)
    return _record(*rows[0]) if rows else None


def oldest_line(oldest: dict[str, Any] | None, label: str = "oldest price used") -> str:
    """One line naming the oldest price an answer rests on and its age ('' if none)."""
    if not oldest:
        return ""
    what = f"{oldest['id']} {oldest.get('term') or oldest['field']}"
    if oldest.get("region"):
        what += f" {oldest['region']}"
    est = ", date estimated" if oldest.get("as_of_estimated") else ""
    return f"{label}: {what} as of {oldest['as_of']}{est} ({oldest['age_months']:.1f} months old)"


def unique_stale(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stale-price records with one record per value, oldest first.

    A value is one price record of the catalog, identified by ``(kind, id, field)``; several
    options (or several comparisons of one run) that rest on it list it once.
    """
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in records:
        seen.setdefault((r["kind"], r["id"], r["field"]), r)
    return sorted(seen.values(), key=lambda r: (r["as_of"], r["id"], r["field"]))


def stale_line(stale: Sequence[dict[str, Any]], stale_months: float = DEFAULT_STALE_MONTHS) -> str:
    """One line saying which prices an answer rests on are older than the cut-off ('' if none).

    Each offer or part is named once; an offer whose answer rests on several of its price
    records (terms, regions) lists their terms and dates in its parentheses.
    """
    if not stale:
        return ""
    recs = unique_stale(stale)
    # id -> (as_of, date estimated) -> terms, in order of first appearance
    by_id: dict[str, dict[tuple[str, bool], list[str]]] = {}
    for s in recs:
        terms = by_id.setdefault(s["id"], {}).setdefault(
            (s["as_of"], bool(s.get("as_of_estimated"))), []
        )
        if s.get("term") and s["term"] not in terms:
            terms.append(s["term"])
    parts = [
        f"{i} ("
        + "; ".join(
            f"{', '.join(terms) + ' ' if terms else ''}{as_of}{', date estimated' if est else ''}"
            for (as_of, est), terms in dates.items()
        )
        + ")"
        for i, dates in by_id.items()
    ]
    return (
        f"stale inputs: the answer rests on {len(recs)} price(s) older than "
        f"{stale_months:g} months: {', '.join(parts)}"
    )


#: Entry fields that are labels, not values (not counted by :func:`home_page_values`).
_LABEL_FIELDS = frozenset({"id", "name", "note"})


def is_home_page(source: Source) -> bool:
    """Whether ``source`` cites only a site's home page (a URL with no path and no query).

    A source given as a document (no URL) is not a home page.
    """
    if not source.url:
        return False
    u = urlparse(source.url)
    return not u.path.strip("/") and not u.query


def home_page_values(catalog: Catalog) -> dict[str, int]:
    """Count of catalog values whose source is only a site's home page, by source key.

    Every value of every entry is counted once (labels excluded), as in ``aitco catalog
    show``; the keys are the sources to replace with the page that gives the value.
    """
    counts: Counter[str] = Counter()
    for kind in KINDS:
        for entry in catalog.kind(kind).values():
            for path in entry.values():
                if path in _LABEL_FIELDS:
                    continue
                prov = _lookup_prov(entry.provenance, path)
                if prov is not None and is_home_page(prov.source):
                    counts[prov.source.key] += 1
    return dict(counts.most_common())

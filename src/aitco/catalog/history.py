r"""Price history: several dated quotes per part and offer, their trend, and a catalog as of a date.

A part (accelerator), a node (system) and a cloud offer each hold the quote in force (``price``,
``node_price``, ``prices``: one per term and region) and earlier quotes in ``price_history`` /
``node_price_history``. This module is the one place that

* groups the quotes of an entry into series (one per offer term and region, one per part),
* fits the trend of a series, :func:`fit_decline`: a log-linear least-squares fit with one level
  per series and one shared rate,

  .. math::

      \ln p_{ij} = a_i - k\,t_{ij},\qquad
      \hat k = -\frac{\sum_{ij}(t_{ij}-\bar t_i)(\ln p_{ij}-\overline{\ln p}_i)}
                     {\sum_{ij}(t_{ij}-\bar t_i)^2}

  with :math:`t` in years, so :math:`e^{-k}` is the share of its price a part keeps each year;
* turns a part's fitted decline into its residual-value curve (:func:`residual_curve`: the
  resale value after :math:`y` years is :math:`e^{-ky}` of the purchase price, the price of the
  same part on the market :math:`y` years later), which replaces the assumed class curve
  (``residual-value.<class>``) for parts whose purchase quotes span at least
  :data:`MIN_FIT_SPAN_YEARS` (:func:`with_fitted_residuals`);
* prices the catalog as of a date (:func:`catalog_as_of`): each series keeps the latest quote
  dated on or before it, and the residual curves are refitted from those quotes only.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aitco.catalog.schema import (
    Accelerator,
    ApiPrice,
    CloudOffer,
    Factor,
    OfferPrice,
    Price,
    Provenance,
    Source,
    System,
)

#: The loaded catalog (:class:`aitco.catalog.loader.Catalog`, a frozen dataclass). The loader
#: calls this module, so the type is generic here rather than imported (no import cycle).
Catalog = TypeVar("Catalog")

#: Mean length of a year in days (Gregorian), to turn date differences into years.
DAYS_PER_YEAR = 365.2425
#: Shortest span of purchase quotes a residual-value decline is fitted from; a shorter history
#: keeps the assumed class curve (one price cut or one listing is not a trend).
MIN_FIT_SPAN_YEARS = 1.0
#: Years of the fitted residual-value curves (year 0..5, as the class curves of the factors).
RESIDUAL_CURVE_YEARS = 5
#: Factor id prefix of residual-value curves (``residual-value.<accelerator id>``).
RESIDUAL_PREFIX = "residual-value."


@dataclass(frozen=True)
class Quote:
    """One dated price of a series (USD per unit or per instance-hour)."""

    as_of: dt.date
    usd: float
    source: str | None = None
    estimated: bool = False
    #: Kind of a purchase price (list, street, listing, ...); a fit compares like with like.
    kind: str = ""


@dataclass(frozen=True)
class DeclineFit:
    """A fitted exponential price trend.

    Attributes
    ----------
    rate_per_year : float
        Continuous decline rate :math:`k` (positive: prices fall). [1/year]
    quotes : int
        Quotes the fit used.
    series : int
        Series with at least two dated quotes (each has its own level).
    span_years : float
        Longest span of one series. [years]
    first, last : datetime.date
        Earliest and latest quote used.
    """

    rate_per_year: float
    quotes: int
    series: int
    span_years: float
    first: dt.date
    last: dt.date

    @property
    def change_per_year(self) -> float:
        """Fractional price change per year, :math:`e^{-k}-1` (negative: prices fall)."""
        return math.exp(-self.rate_per_year) - 1.0


def _years(day: dt.date, ref: dt.date) -> float:
    return (day - ref).days / DAYS_PER_YEAR


def fit_decline(series: Iterable[Sequence[Quote]]) -> DeclineFit | None:
    """Fit one exponential decline rate to several price series (one level per series).

    Parameters
    ----------
    series : iterable of sequences of Quote
        Each a series of the same thing (an offer's term and region, a part's purchase price);
        quotes at or below 0 USD are left out.

    Returns
    -------
    DeclineFit or None
        None when no series has two quotes on different dates.

    Examples
    --------
    >>> d = dt.date
    >>> f = fit_decline([[Quote(d(2024, 1, 1), 100.0), Quote(d(2026, 1, 1), 81.0)]])
    >>> round(f.change_per_year, 3), f.quotes
    (-0.1, 2)
    """
    num = den = 0.0
    n = used = 0
    span = 0.0
    first: dt.date | None = None
    last: dt.date | None = None
    for s in series:
        qs = [q for q in s if q.usd > 0]
        if len({q.as_of for q in qs}) < 2:
            continue
        ref = min(q.as_of for q in qs)
        t = [_years(q.as_of, ref) for q in qs]
        y = [math.log(q.usd) for q in qs]
        tm, ym = sum(t) / len(t), sum(y) / len(y)
        num += sum((ti - tm) * (yi - ym) for ti, yi in zip(t, y, strict=True))
        den += sum((ti - tm) ** 2 for ti in t)
        n += len(qs)
        used += 1
        span = max(span, max(t))
        lo, hi = ref, max(q.as_of for q in qs)
        first = lo if first is None else min(first, lo)
        last = hi if last is None else max(last, hi)
    if not used or den <= 0 or first is None or last is None:
        return None
    return DeclineFit(-num / den, n, used, span, first, last)


def residual_curve(rate_per_year: float, years: int = RESIDUAL_CURVE_YEARS) -> list[float]:
    """Residual-value curve (fraction of the purchase price at the end of year 0..``years``).

    The market value of a part ``y`` years after purchase is the price the same part sells for
    then: :math:`e^{-ky}` of what was paid, for a fitted decline rate :math:`k`.

    Examples
    --------
    >>> residual_curve(math.log(2), 2)
    [1.0, 0.5, 0.25]
    """
    return [round(math.exp(-rate_per_year * y), 4) for y in range(years + 1)]


# --------------------------------------------------------------------------- series of an entry
def _quote(p: Price | OfferPrice, source: str | None) -> Quote:
    if isinstance(p, OfferPrice):
        return Quote(p.as_of, float(p.usd_per_hour), source, bool(p.as_of_estimated))
    return Quote(p.as_of, float(p.usd), source, bool(p.as_of_estimated), p.kind)


def _price_source(entry: Accelerator | System, path: str) -> str | None:
    prov = entry.provenance.get(path)
    return prov.source.key if prov is not None else None


def part_quotes(acc: Accelerator) -> list[Quote]:
    """Purchase quotes of an accelerator (``price`` and ``price_history``), oldest first."""
    out = [
        _quote(p, _price_source(acc, f"price_history.{i}")) for i, p in enumerate(acc.price_history)
    ]
    if acc.price is not None:
        out.append(_quote(acc.price, _price_source(acc, "price")))
    return sorted(out, key=lambda q: q.as_of)


def node_quotes(sysm: System) -> list[Quote]:
    """Quotes of a node price (``node_price`` and ``node_price_history``), oldest first."""
    out = [
        _quote(p, _price_source(sysm, f"node_price_history.{i}"))
        for i, p in enumerate(sysm.node_price_history)
    ]
    if sysm.node_price is not None:
        out.append(_quote(sysm.node_price, _price_source(sysm, "node_price")))
    return sorted(out, key=lambda q: q.as_of)


def offer_series(offer: CloudOffer) -> dict[tuple[str, str], list[Quote]]:
    """Quotes of an offer by (term, region), ``prices`` and ``price_history``, oldest first."""
    out: dict[tuple[str, str], list[Quote]] = {}
    for p in [*offer.price_history, *offer.prices]:
        out.setdefault((p.term, p.region), []).append(_quote(p, p.source))
    return {k: sorted(v, key=lambda q: q.as_of) for k, v in sorted(out.items())}


def entry_series(entry: Any) -> dict[str, list[Quote]]:
    """Every price series of a catalog entry, named (``on_demand us-east-1``, ``price``, ...)."""
    if isinstance(entry, CloudOffer):
        return {f"{t} {r}": qs for (t, r), qs in offer_series(entry).items()}
    if isinstance(entry, Accelerator):
        qs = part_quotes(entry)
        return {"price": qs} if qs else {}
    if isinstance(entry, System):
        qs = node_quotes(entry)
        return {"node_price": qs} if qs else {}
    return {}


def trend_json(name: str, quotes: Sequence[Quote]) -> dict[str, Any]:
    """JSON of one series: its quotes and the fitted change per year (None with one date)."""
    fit = fit_decline([quotes])
    first, last = quotes[0], quotes[-1]
    return {
        "series": name,
        "quotes": [
            {"as_of": q.as_of.isoformat(), "usd": q.usd, "source": q.source}
            | ({"as_of_estimated": True} if q.estimated else {})
            for q in quotes
        ],
        "first_usd": first.usd,
        "last_usd": last.usd,
        "change_fraction": round(last.usd / first.usd - 1.0, 4) if first.usd else None,
        "change_fraction_per_year": round(fit.change_per_year, 4) if fit is not None else None,
        "span_years": round(fit.span_years, 2) if fit is not None else 0.0,
    }


def price_trends(entry: Any) -> list[dict[str, Any]]:
    """Trend of every series of an entry with more than one quote (for ``catalog show``)."""
    return [trend_json(k, qs) for k, qs in entry_series(entry).items() if len(qs) > 1]


# --------------------------------------------------------------------------- fitted residuals
def fitted_residual(
    acc: Accelerator, *, until: dt.date | None = None
) -> tuple[DeclineFit, Factor] | None:
    """Fit the residual-value curve of ``acc`` from its purchase quotes (dated <= ``until``).

    Quotes are grouped by kind (list, street, listing, system share, ...), each kind a series
    with its own level, so a list price is never compared with a used-market price; the rate
    is shared. Returns None when no kind has quotes spanning :data:`MIN_FIT_SPAN_YEARS`, or the
    prices do not fall (a rising or flat history is not a decline to extrapolate: the class
    curve stays).
    """
    qs = [q for q in part_quotes(acc) if until is None or q.as_of <= until]
    by_kind: dict[str, list[Quote]] = {}
    for q in qs:
        by_kind.setdefault(q.kind, []).append(q)
    fit = fit_decline(by_kind.values())
    if fit is None or fit.span_years < MIN_FIT_SPAN_YEARS or fit.rate_per_year <= 0:
        return None
    keys = sorted({q.source for q in qs if q.source})
    src = Source(
        key=f"aitco-fit:{acc.id}",
        title=(
            f"aitco fit of the {acc.id} purchase-price history: {fit.quotes} dated quotes of "
            f"{fit.series} kind(s) "
            f"{fit.first}..{fit.last} ({', '.join(keys) or 'catalog'}), "
            f"{100 * fit.change_per_year:+.1f}%/year"
        ),
        document="aitco.catalog.history.fit_decline (log-linear least squares)",
        retrieved=fit.last,
    )
    curve = residual_curve(fit.rate_per_year)
    note = (
        f"FITTED: exp(-k*y), k = {fit.rate_per_year:.3f}/year from {fit.quotes} purchase quotes "
        f"over {fit.span_years:.1f} years (aitco.catalog.history)"
    )
    factor = Factor(
        id=f"{RESIDUAL_PREFIX}{acc.id}",
        name=f"Residual value curve, {acc.name or acc.id} (year 0..{RESIDUAL_CURVE_YEARS}), "
        "fitted from its price history",
        category="residual_value",
        value=curve,
        unit="fraction of purchase price",
        applies_to=acc.id,
        provenance={
            "value": Provenance(source=src, note=note),
            "unit": Provenance(source=src),
            "category": Provenance(source=src),
            "applies_to": Provenance(source=src),
            "name": Provenance(source=src),
        },
    )
    return fit, factor


def with_fitted_residuals(
    catalog: Catalog, *, keep: Iterable[str] = (), until: dt.date | None = None
) -> Catalog:
    """Replace assumed residual-value curves with curves fitted from each part's price history.

    Parameters
    ----------
    catalog : Catalog
        The loaded cat.
    keep : iterable of str
        Factor ids not to replace (given by a user overlay: the user's value wins).
    until : datetime.date, optional
        Fit only quotes dated on or before this day (``--as-of``).

    Returns
    -------
    Catalog
        A copy whose ``factors`` hold ``residual-value.<accelerator>`` fitted curves where a
        history allows a fit, and whose ``assumed_factors`` keep the curves they replaced
        (restored by :func:`catalog_as_of` when an earlier date allows no fit).
    """
    cat: Any = catalog
    kept = set(keep)
    factors = dict(cat.factors)
    assumed = dict(cat.assumed_factors)
    fitted: set[str] = set()
    for acc in cat.accelerators.values():
        fid = f"{RESIDUAL_PREFIX}{acc.id}"
        if fid in kept:
            continue
        res = fitted_residual(acc, until=until)
        if res is not None:
            if fid in factors and fid not in cat.fitted_factors and fid not in assumed:
                assumed[fid] = factors[fid]
            factors[fid] = res[1]
            fitted.add(fid)
        elif fid in cat.fitted_factors:  # an earlier date allows no fit: back to assumed
            if fid in assumed:
                factors[fid] = assumed[fid]
            else:
                factors.pop(fid, None)
    return dataclasses.replace(
        cat, factors=factors, assumed_factors=assumed, fitted_factors=frozenset(fitted)
    )


# --------------------------------------------------------------------------- as of a date
def _latest(quotes: Sequence[Price], day: dt.date) -> tuple[Price | None, list[Price]]:
    known = sorted((p for p in quotes if p.as_of <= day), key=lambda p: p.as_of)
    return (known[-1], known[:-1]) if known else (None, [])


def _offer_as_of(o: CloudOffer, day: dt.date) -> CloudOffer | None:
    by_key: dict[tuple[str, str], list[OfferPrice]] = {}
    for p in [*o.price_history, *o.prices]:
        if p.as_of <= day:
            by_key.setdefault((p.term, p.region), []).append(p)
    if not by_key:
        return None
    current, history = [], []
    for qs in by_key.values():
        qs.sort(key=lambda p: p.as_of)
        current.append(qs[-1])
        history.extend(qs[:-1])
    return o.model_copy(update={"prices": current, "price_history": history})


def _acc_as_of(a: Accelerator, day: dt.date) -> Accelerator:
    cur, hist = _latest([*a.price_history, *([a.price] if a.price else [])], day)
    return a.model_copy(update={"price": cur, "price_history": hist})


def _sys_as_of(s: System, day: dt.date) -> System:
    pool = [*s.node_price_history, *([s.node_price] if s.node_price else [])]
    cur, hist = _latest(pool, day)
    return s.model_copy(update={"node_price": cur, "node_price_history": hist})


def catalog_as_of(catalog: Catalog, day: dt.date) -> Catalog:
    """Price the catalog as of ``day``: each series keeps its latest quote dated on or before it.

    Offers with no quote by then are left out; a part or node with none has no price (an owned
    option then says so); token-API prices dated later are left out. Residual-value curves are
    refitted from the purchase quotes known on ``day``. ``Catalog.as_of`` is set, so staleness
    is measured at ``day`` too.
    """
    cat: Any = catalog
    offers = {k: o2 for k, o in cat.offers.items() if (o2 := _offer_as_of(o, day)) is not None}
    apis: dict[str, ApiPrice] = {k: a for k, a in cat.apis.items() if a.as_of <= day}
    out = dataclasses.replace(
        cat,
        accelerators={k: _acc_as_of(a, day) for k, a in cat.accelerators.items()},
        systems={k: _sys_as_of(s, day) for k, s in cat.systems.items()},
        offers=offers,
        apis=apis,
        as_of=day,
    )
    return with_fitted_residuals(out, keep=cat.user_factor_ids, until=day)

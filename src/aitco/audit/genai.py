"""Token-API prices from the ``genai-prices`` package (optional extra ``audit``), by request date.

genai-prices (pydantic/genai-prices, MIT) keeps the list prices of the LLM APIs with the date
each price applied, long-context tiers and cache read/write prices. When it is installed,
``aitco audit`` prices each request at the rate in force on its own timestamp and at the tier
its prompt length falls in, with cache writes at their premium; ``aitco api-prices`` shows its
current rates beside the shipped table. Without it, the shipped catalog table is used.

Tier rule (genai-prices ``TieredPrices``): crossing a tier's start applies that tier's price to
every token of the request ("cliff" pricing); the tier is chosen by the request's input tokens.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from aitco.audit.audit import AuditPrice
from aitco.audit.log import UsageRecord
from aitco.catalog.update import cached_genai_data

#: Name of the package on PyPI (and of the extra's requirement).
PACKAGE = "genai-prices"
#: Source page of the package's price data, cited by every price it gives.
SOURCE_URL = "https://github.com/pydantic/genai-prices"


#: UTC time the price data in use was fetched by ``aitco catalog update genai-prices`` (empty:
#: the data bundled with the package); filled once, when the package is first used.
_DATA_FETCHED: list[dt.datetime | None] = []


def module() -> Any:
    """Return the imported ``genai_prices`` module, or None when it is not installed.

    The first call hands genai-prices the ``data.json`` that ``aitco catalog update
    genai-prices`` cached, when there is one (genai-prices' own custom-snapshot mechanism), so
    audit prices come from the same data as the catalog overlay; else its bundled data is used.
    """
    try:
        import genai_prices  # optional dependency (extra "audit")
    except ImportError:
        return None
    if not _DATA_FETCHED:
        _DATA_FETCHED.append(_use_cached_data())
    return genai_prices


def _use_cached_data() -> dt.datetime | None:
    """Install the cached ``data.json`` as genai-prices' price data; its fetch time, or None."""
    f = cached_genai_data()
    if f is None:
        return None
    try:
        from genai_prices import data_snapshot
        from genai_prices.types import _providers_from_raw  # genai-prices' own parser

        providers = _providers_from_raw(json.loads(f.text()))
        data_snapshot.set_custom_snapshot(data_snapshot.DataSnapshot(providers, False))
    except Exception:  # a cache this version cannot read: keep the bundled data
        return None
    return f.retrieved_at


def version() -> str | None:
    """Installed genai-prices version (and the date of updated data in use), or None."""
    gp = module()
    if gp is None:
        return None
    fetched = _DATA_FETCHED[0] if _DATA_FETCHED else None
    v = str(getattr(gp, "__version__", "?"))
    return v + (f", data fetched {fetched.date()}" if fetched is not None else "")


def rate_usd_per_mtok(price: Any, input_tokens: int) -> float | None:
    """Price per million tokens of one price field at a request's input size (tier applied).

    Parameters
    ----------
    price : Decimal, TieredPrices or None
        A genai-prices ``ModelPrice`` field.
    input_tokens : int
        Input tokens of the request (they choose the tier). [tokens]
    """
    if price is None:
        return None
    tiers = getattr(price, "tiers", None)
    if tiers is None:
        return float(price)
    rate: Decimal = price.base
    for tier in sorted(tiers, key=lambda t: t.start, reverse=True):
        if input_tokens > tier.start:
            rate = tier.price
            break
    return float(rate)


@dataclass
class GenaiResolver:
    """Price each request at the genai-prices rate in force on its timestamp and tier.

    Calling it with a :class:`~aitco.audit.log.UsageRecord` returns an
    :class:`~aitco.audit.audit.AuditPrice`, or None when genai-prices does not know the model
    (the caller then falls back to the shipped table). Requests with the same rates share one
    price id, so the audit still sums integer tokens per price and prices them once.
    """

    provider: str | None = None
    _model_prices: dict[tuple[str, dt.date | None], Any] = field(default_factory=dict)
    _ids: dict[tuple[Any, ...], AuditPrice] = field(default_factory=dict)
    unknown_models: set[str] = field(default_factory=set)

    def model_price(self, model: str, when: dt.datetime | None) -> Any:
        """genai-prices ``PriceCalculation`` of ``model`` on ``when`` (None if unknown)."""
        key = (model, when.date() if when else None)
        if key not in self._model_prices:
            gp = module()
            calc = None
            if gp is not None and model not in self.unknown_models:
                try:
                    calc = gp.calc_price(
                        gp.Usage(input_tokens=1),
                        model_ref=model,
                        provider_id=self.provider,
                        genai_request_timestamp=when,
                    )
                except LookupError:
                    self.unknown_models.add(model)
            self._model_prices[key] = calc
        return self._model_prices[key]

    def __call__(self, rec: UsageRecord) -> AuditPrice | None:
        """Price of one request, or None."""
        if not rec.model:
            return None
        when = (
            dt.datetime.fromtimestamp(rec.created_s, tz=dt.UTC)
            if rec.created_s is not None
            else None
        )
        calc = self.model_price(rec.model, when)
        if calc is None:
            return None
        mp = calc.model_price
        n = rec.prompt_tokens
        p_in = rate_usd_per_mtok(mp.input_mtok, n)
        p_out = rate_usd_per_mtok(mp.output_mtok, n)
        if p_in is None or p_out is None:
            return None
        p_read = rate_usd_per_mtok(mp.cache_read_mtok, n)
        p_write = rate_usd_per_mtok(mp.cache_write_mtok, n)
        prov = calc.provider.id
        mid = calc.model.id
        rates = (prov, mid, p_in, p_out, p_read, p_write)
        hit = self._ids.get(rates)
        if hit is not None:
            return hit
        same = sum(1 for k in self._ids if k[:2] == (prov, mid))
        pid = f"genai:{prov}/{mid}" + (f"#{same + 1}" if same else "")
        day = when.date().isoformat() if when else dt.date.today().isoformat()
        price = AuditPrice(
            id=pid,
            provider=prov,
            model=mid,
            input_usd_per_mtok=p_in,
            output_usd_per_mtok=p_out,
            cached_input_usd_per_mtok=p_read,
            cache_write_usd_per_mtok=p_write,
            as_of=day,
            source=f"{PACKAGE} {version()} ({SOURCE_URL}): rate in force on {day}"
            + (f" at {n} input tokens (tiered)" if _tiered(mp) else ""),
            source_url=SOURCE_URL,
        )
        self._ids[rates] = price
        return price


def _tiered(mp: Any) -> bool:
    fields = (mp.input_mtok, mp.output_mtok, mp.cache_read_mtok, mp.cache_write_mtok)
    return any(getattr(f, "tiers", None) for f in fields)


def current_rates(model: str, provider: str | None = None) -> dict[str, float | None] | None:
    """Today's genai-prices base rates of a model (USD per million tokens), or None."""
    calc = GenaiResolver(provider).model_price(model, dt.datetime.now(tz=dt.UTC))
    if calc is None:
        return None
    mp = calc.model_price
    return {
        "input_usd_per_mtok": rate_usd_per_mtok(mp.input_mtok, 0),
        "cached_input_usd_per_mtok": rate_usd_per_mtok(mp.cache_read_mtok, 0),
        "cache_write_usd_per_mtok": rate_usd_per_mtok(mp.cache_write_mtok, 0),
        "output_usd_per_mtok": rate_usd_per_mtok(mp.output_mtok, 0),
    }


PriceAt = Callable[[UsageRecord], AuditPrice | None]

"""OpenAI organisation Usage API and Costs API exports: aggregate, price and reconcile.

The Usage API (``/v1/organization/usage/completions``) returns pages of time buckets whose
``results`` are ``organization.usage.completions.result`` objects (``input_tokens`` *including*
cached and cache-write tokens, ``input_cached_tokens``, ``output_tokens``,
``num_model_requests``, grouped by model/project/batch...). The Costs API
(``/v1/organization/costs``) returns ``organization.costs.result`` objects with ``amount{value,
currency}`` and ``line_item``. Either can be pasted into a log, one page per line, or saved as a
JSON file of pages.

These exports have no per-request detail, so the waste causes of :mod:`aitco.audit.audit` cannot
be computed from them; what they give is the billed totals, the cached share, and a
reconciliation of the Costs API amount against the usage priced with the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aitco.units import MEGA

USAGE_RESULT = "organization.usage.completions.result"
COSTS_RESULT = "organization.costs.result"


@dataclass
class UsageTotals:
    """Token totals of Usage API results, per model (``None`` model = not grouped)."""

    input_tokens: int = 0
    input_cached_tokens: int = 0
    input_cache_write_tokens: int = 0
    output_tokens: int = 0
    num_model_requests: int = 0
    buckets: int = 0

    def add(self, r: dict[str, Any]) -> None:
        """Add one ``organization.usage.completions.result``."""
        self.input_tokens += _nonneg(r, "input_tokens")
        self.input_cached_tokens += _nonneg(r, "input_cached_tokens")
        self.input_cache_write_tokens += _nonneg(r, "input_cache_write_tokens")
        self.output_tokens += _nonneg(r, "output_tokens")
        self.num_model_requests += _nonneg(r, "num_model_requests")


@dataclass
class ExportTotals:
    """What the export pages of a log add up to."""

    usage_by_model: dict[str, UsageTotals] = field(default_factory=dict)
    costs_by_currency: dict[str, float] = field(default_factory=dict)
    costs_by_line_item: dict[str, float] = field(default_factory=dict)
    usage_results: int = 0
    cost_results: int = 0
    other_results: int = 0
    bad_results: int = 0

    def add_page(self, page: dict[str, Any]) -> None:
        """Add a page (``object: page``) or a single bucket (``object: bucket``)."""
        buckets = page.get("data") if page.get("object") == "page" else [page]
        if not isinstance(buckets, list):
            self.bad_results += 1
            return
        for b in buckets:
            results = b.get("results") if isinstance(b, dict) else None
            if not isinstance(results, list):
                self.bad_results += 1
                continue
            for r in results:
                self._add_result(r)

    def _add_result(self, r: Any) -> None:
        if not isinstance(r, dict):
            self.bad_results += 1
            return
        kind = r.get("object")
        try:
            if kind == USAGE_RESULT:
                key = str(r.get("model") or "(all models)")
                self.usage_by_model.setdefault(key, UsageTotals()).add(r)
                self.usage_results += 1
            elif kind == COSTS_RESULT:
                amount = r.get("amount") or {}
                value = amount.get("value")
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(value)
                cur = str(amount.get("currency") or "usd").lower()
                self.costs_by_currency[cur] = self.costs_by_currency.get(cur, 0.0) + float(value)
                item = str(r.get("line_item") or "(no line item)")
                self.costs_by_line_item[item] = self.costs_by_line_item.get(item, 0.0) + float(
                    value
                )
                self.cost_results += 1
            else:
                self.other_results += 1
        except (ValueError, AttributeError, TypeError):
            self.bad_results += 1

    @property
    def empty(self) -> bool:
        """Whether no usage or cost result was read."""
        return self.usage_results == 0 and self.cost_results == 0

    def usage_total(self) -> UsageTotals:
        """Totals over every model."""
        t = UsageTotals()
        for u in self.usage_by_model.values():
            t.input_tokens += u.input_tokens
            t.input_cached_tokens += u.input_cached_tokens
            t.input_cache_write_tokens += u.input_cache_write_tokens
            t.output_tokens += u.output_tokens
            t.num_model_requests += u.num_model_requests
        return t

    def to_json(
        self,
        input_usd_per_mtok: float | None = None,
        cached_input_usd_per_mtok: float | None = None,
        output_usd_per_mtok: float | None = None,
    ) -> dict[str, Any]:
        r"""Totals, and with prices the expected cost and its gap to the Costs API amount.

        Notes
        -----
        .. math:: E = \frac{(I - C)\,p_i + C\\,p_c + O\\,p_o}{10^6}

        with :math:`I` input tokens (cached included), :math:`C` cached input tokens, :math:`O`
        output tokens and the prices :math:`p` per million tokens. ``gap_usd`` is the Costs API
        USD amount minus :math:`E`; it mixes every line item the Costs API reports (other
        models, fine-tuning, tools), so it is a prompt for a look, not proof of an error.
        """
        tot = self.usage_total()
        out: dict[str, Any] = {
            "usage_api": {
                "results": self.usage_results,
                "input_tokens": tot.input_tokens,
                "input_cached_tokens": tot.input_cached_tokens,
                "input_cache_write_tokens": tot.input_cache_write_tokens,
                "output_tokens": tot.output_tokens,
                "num_model_requests": tot.num_model_requests,
                "cached_share": (tot.input_cached_tokens / tot.input_tokens)
                if tot.input_tokens
                else None,
                "by_model": {
                    m: {
                        "input_tokens": u.input_tokens,
                        "input_cached_tokens": u.input_cached_tokens,
                        "output_tokens": u.output_tokens,
                        "num_model_requests": u.num_model_requests,
                    }
                    for m, u in self.usage_by_model.items()
                },
            },
            "costs_api": {
                "results": self.cost_results,
                "by_currency": dict(self.costs_by_currency),
                "by_line_item": dict(self.costs_by_line_item),
            },
            "bad_results": self.bad_results,
        }
        if (
            input_usd_per_mtok is not None
            and output_usd_per_mtok is not None
            and self.usage_results
        ):
            cached_p = (
                input_usd_per_mtok
                if cached_input_usd_per_mtok is None
                else cached_input_usd_per_mtok
            )
            expected = (
                (tot.input_tokens - tot.input_cached_tokens) * input_usd_per_mtok
                + tot.input_cached_tokens * cached_p
                + tot.output_tokens * output_usd_per_mtok
            ) / MEGA
            out["expected_usd_from_usage"] = expected
            if "usd" in self.costs_by_currency:
                out["gap_usd"] = self.costs_by_currency["usd"] - expected
        return out


def _nonneg(r: dict[str, Any], key: str) -> int:
    v = r.get(key)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
        raise ValueError(f"{key} = {v!r}")
    return int(v)

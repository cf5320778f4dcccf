"""Sanity of the token-API price catalog: sourced, dated, consistent."""

from __future__ import annotations

from aitco.catalog.loader import missing_provenance


def test_every_api_price_is_sourced_dated_and_consistent(catalog):
    assert len(catalog.apis) >= 15
    for a in catalog.apis.values():
        assert not missing_provenance(a), a.id
        assert a.id == f"{a.provider}/{a.id.split('/', 1)[1]}", a.id
        assert a.input_usd_per_mtok > 0, a.id
        assert a.output_usd_per_mtok >= a.input_usd_per_mtok * 0.5, a.id
        if a.cached_input_usd_per_mtok is not None:
            assert a.cached_input_usd_per_mtok < a.input_usd_per_mtok, a.id
        prov = a.provenance["input_usd_per_mtok"]
        assert prov.source.url, a.id
        # a price cannot be dated after the day its source was read
        assert a.as_of <= prov.source.retrieved, a.id


def test_providers_covered(catalog):
    providers = {a.provider for a in catalog.apis.values()}
    assert {
        "openai",
        "anthropic",
        "google",
        "deepseek",
        "mistral",
        "together",
        "fireworks",
    } <= providers

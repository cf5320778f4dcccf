"""``--usd-year``: prices restated in one year's dollars with the shipped CPI-U series."""

from __future__ import annotations

import json

import pytest

from aitco.catalog.currency import cpi_series, in_usd_year, usd_year_factor, usd_year_note
from aitco.errors import InputError


def test_series_is_shipped_and_sourced(catalog) -> None:
    s = cpi_series(catalog)
    assert min(s) <= 2017
    assert max(s) >= 2025
    assert s[2024] == pytest.approx(313.689)  # BLS CPI-U 2024 annual average
    for y in s:
        prov = catalog.factors[f"cpi-u.us.{y}"].provenance["value"]
        assert prov.source.url
        assert "bls.gov" in prov.source.url


def test_factor_and_round_trip(catalog) -> None:
    s = cpi_series(catalog)
    assert usd_year_factor(s, 2023, 2024) == pytest.approx(313.689 / 304.702)
    assert usd_year_factor(s, 2023, 2024) * usd_year_factor(s, 2024, 2023) == pytest.approx(1.0)
    assert usd_year_factor(s, 2024, 2024) == 1.0
    with pytest.raises(InputError, match="usd-year"):
        usd_year_factor(s, 2020, 1990)


def test_catalog_restated(catalog) -> None:
    c = in_usd_year(catalog, 2024)
    acc = catalog.accelerators["h100-sxm5-80gb"]
    assert acc.price is not None
    want = acc.price.usd * usd_year_factor(cpi_series(catalog), acc.price.as_of.year, 2024)
    got = c.accelerators["h100-sxm5-80gb"].price
    assert got is not None
    assert got.usd == pytest.approx(want)
    assert got.usd_year == 2024
    o = next(iter(catalog.offers.values()))
    p0, q0 = o.prices[0], c.offers[o.id].prices[0]
    s = cpi_series(catalog)
    assert q0.usd_per_hour == pytest.approx(
        p0.usd_per_hour * usd_year_factor(s, p0.as_of.year, 2024)
    )
    # a year past the series uses its last value and says so
    note = usd_year_note(catalog, max(s) + 1)
    assert note["cpi_year"] == max(s)
    assert "no CPI" in note["note"]


def test_compare_usd_year(capsys: pytest.CaptureFixture[str]) -> None:
    from aitco.cli.app import main

    def run(args: list[str]) -> dict:
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code in (0, None)
        return json.loads(capsys.readouterr().out)

    base = run(["compare", "--json"])
    old = run(["compare", "--json", "--usd-year", "2021"])
    assert old["usd_year"]["usd_year"] == 2021
    a = {o["name"]: o["total_usd"] for o in base["options"]}
    b = {o["name"]: o["total_usd"] for o in old["options"]}
    rented = [n for n in a if "on_demand" in n]
    assert rented
    assert all(b[n] < a[n] for n in rented)  # a 2025 price is fewer dollars of 2021

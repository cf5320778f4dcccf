"""Price history: dated quotes per part and offer, trends, --as-of, fitted residual curves,
the oldest price an answer rests on, and ``catalog check --max-age-months`` (issue 33)."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
from pathlib import Path

import pytest

from aitco.catalog.history import (
    MIN_FIT_SPAN_YEARS,
    Quote,
    catalog_as_of,
    fit_decline,
    price_trends,
    residual_curve,
)
from aitco.catalog.loader import load_catalog

D = dt.date

OVERLAY = """\
sources:
  test-quotes: {title: test quotes, url: 'https://example.org/prices', retrieved: 2026-11-01}
accelerators:
  - id: h100-sxm5-80gb
    source: test-quotes
    price: {usd: 20000, as_of: 2026-11-01, kind: street}
    price_history:
      - {value: {usd: 40000, as_of: 2023-11-01, kind: street}, source: test-quotes}
      - {value: {usd: 32000, as_of: 2024-11-01, kind: street}, source: test-quotes}
      - {value: {usd: 25000, as_of: 2025-11-01, kind: street}, source: test-quotes}
offers:
  - id: test-hist-h100
    source: test-quotes
    provider: testcloud
    instance: box8
    accelerator: h100-sxm5-80gb
    accelerators_per_instance: 8
    prices:
      - {term: on_demand, region: us, usd_per_hour: 16.0, as_of: 2026-11-01, source: test-quotes}
    price_history:
      - {term: on_demand, region: us, usd_per_hour: 32.0, as_of: 2024-11-01, source: test-quotes}
      - {term: on_demand, region: us, usd_per_hour: 24.0, as_of: 2025-11-01, source: test-quotes}
      - {term: spot, region: us, usd_per_hour: 9.0, as_of: 2025-11-01, source: test-quotes}
"""


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    f = tmp_path / "hist.yaml"
    f.write_text(OVERLAY, "utf-8")
    return f


def test_fit_recovers_a_known_decline() -> None:
    k = 0.2
    qs = [Quote(D(2020 + y, 1, 1), 1000 * math.exp(-k * (D(2020 + y, 1, 1) - D(2020, 1, 1)).days
                                                     / 365.2425)) for y in range(5)]  # fmt: skip
    other = [Quote(q.as_of, q.usd * 3) for q in qs[1:]]  # another level, same rate
    fit = fit_decline([qs, other])
    assert fit is not None
    assert fit.rate_per_year == pytest.approx(k, rel=1e-9)
    assert (fit.quotes, fit.series) == (9, 2)
    assert fit_decline([[Quote(D(2024, 1, 1), 5.0)]]) is None  # one date: no trend


def test_residual_curve_shape() -> None:
    c = residual_curve(0.3)
    assert c[0] == 1.0
    assert len(c) == 6
    assert all(b < a for a, b in itertools.pairwise(c))
    assert c[3] == pytest.approx(math.exp(-0.9), abs=1e-4)


def test_history_is_not_an_input_and_shows_as_a_trend(overlay: Path) -> None:
    cat = load_catalog([overlay], use_env=False)
    o = cat.offers["test-hist-h100"]
    assert [p.usd_per_hour for p in o.prices] == [16.0]  # the quote in force
    assert o.usd_per_accel_hour("on_demand") == 2.0
    assert o.usd_per_accel_hour("spot") is None  # a history-only term is not offered today
    trends = {t["series"]: t for t in price_trends(o)}
    od = trends["on_demand us"]
    assert [q["usd"] for q in od["quotes"]] == [32.0, 24.0, 16.0]
    assert od["change_fraction"] == -0.5
    assert -0.30 < od["change_fraction_per_year"] < -0.25  # halved in two years: -29%/year
    acc = price_trends(cat.accelerators["h100-sxm5-80gb"])
    assert [q["usd"] for q in acc[0]["quotes"]] == [40000, 32000, 25000, 20000]


def test_as_of_takes_the_quote_of_the_day(overlay: Path) -> None:
    cat = load_catalog([overlay], use_env=False)
    old = catalog_as_of(cat, D(2025, 12, 1))
    o = old.offers["test-hist-h100"]
    assert {(p.term, p.usd_per_hour) for p in o.prices} == {("on_demand", 24.0), ("spot", 9.0)}
    assert [p.usd_per_hour for p in o.price_history] == [32.0]
    assert old.accelerators["h100-sxm5-80gb"].price.usd == 25000  # type: ignore[union-attr]
    assert old.as_of == D(2025, 12, 1)
    # before any quote: the offer is not offered, the part has no price
    early = catalog_as_of(cat, D(2020, 1, 1))
    assert "test-hist-h100" not in early.offers
    assert early.accelerators["h100-sxm5-80gb"].price is None


def test_residual_curve_is_fitted_from_the_purchase_history(overlay: Path) -> None:
    cat = load_catalog([overlay], use_env=False)
    f = cat.factors["residual-value.h100-sxm5-80gb"]
    assert "residual-value.h100-sxm5-80gb" in cat.fitted_factors
    fit = fit_decline([[Quote(D(2023, 11, 1), 40000), Quote(D(2024, 11, 1), 32000),
                        Quote(D(2025, 11, 1), 25000), Quote(D(2026, 11, 1), 20000)]])  # fmt: skip
    assert fit is not None
    assert f.value == residual_curve(fit.rate_per_year)
    prov = f.provenance["value"]
    assert prov.source.key == "aitco-fit:h100-sxm5-80gb"
    assert prov.source.retrieved == D(2026, 11, 1)
    assert "FITTED" in (prov.note or "")
    # as of a day when the history spans less than the minimum: the assumed curve comes back
    short = catalog_as_of(cat, D(2024, 6, 1))
    assert "residual-value.h100-sxm5-80gb" not in short.fitted_factors
    assumed = cat.assumed_factors.get("residual-value.h100-sxm5-80gb")
    assert short.factors.get("residual-value.h100-sxm5-80gb") == assumed
    assert MIN_FIT_SPAN_YEARS >= 1.0


def test_a_users_residual_curve_wins(overlay: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "factors:\n  - id: residual-value.h100-sxm5-80gb\n    category: residual_value\n"
        "    value: [1.0, 0.5, 0.25]\n    unit: fraction of purchase price\n",
        "utf-8",
    )
    cat = load_catalog([overlay, mine], use_env=False)
    assert cat.factors["residual-value.h100-sxm5-80gb"].value == [1.0, 0.5, 0.25]
    assert "residual-value.h100-sxm5-80gb" not in cat.fitted_factors


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from aitco.cli.app import main

    with pytest.raises(SystemExit) as exc:
        main(args)
    return int(exc.value.code or 0), capsys.readouterr().out


@pytest.mark.integration  # runs the CLI over the live catalog
def test_show_prints_the_trend(overlay: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["--catalog", str(overlay), "catalog", "show", "test-hist-h100"], capsys)
    assert code == 0
    assert "price trend on_demand us" in " ".join(out.split())
    code, out = _run(
        ["--catalog", str(overlay), "catalog", "show", "test-hist-h100", "--json"], capsys
    )
    assert json.loads(out)["price_trends"][0]["series"] == "on_demand us"


@pytest.mark.integration  # runs the CLI over the live catalog
def test_compare_names_its_oldest_price_and_takes_as_of(
    overlay: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scn = tmp_path / "scn.yaml"
    scn.write_text(
        "name: hist\nworkload: {kind: training, model: gpt2-124m, tokens: 1.0e8}\n"
        "options:\n  - {hardware: h100-sxm5-80gb, gpus: 8, pricing: on_demand,"
        " offer: test-hist-h100}\n",
        "utf-8",
    )
    base = ["--catalog", str(overlay)]
    code, out = _run([*base, "compare", str(scn), "--json"], capsys)
    assert code == 0
    now = json.loads(out)
    assert now["oldest_price"]["id"] == "test-hist-h100"
    assert now["oldest_price"]["as_of"] == "2026-11-01"
    assert now["options"][0]["price_usd_per_gpu_h"] == pytest.approx(2.0)
    code, out = _run(["--as-of", "2025-12-01", *base, "compare", str(scn), "--json"], capsys)
    assert code == 0
    then = json.loads(out)
    assert then["options"][0]["price_usd_per_gpu_h"] == pytest.approx(3.0)
    assert then["oldest_price"]["as_of"] == "2025-11-01"
    assert then["oldest_price"]["age_months"] == pytest.approx(1.0, abs=0.1)  # at --as-of
    code, out = _run([*base, "compare", str(scn)], capsys)
    assert "oldest price used: test-hist-h100" in " ".join(out.split())


def test_bad_as_of_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from aitco.cli.app import main

    with pytest.raises(SystemExit) as exc:
        main(["--as-of", "2025-13-01", "catalog", "list", "offers"])
    assert exc.value.code == 2
    assert "--as-of" in capsys.readouterr().err


@pytest.mark.integration  # runs the CLI over the live catalog
def test_check_max_age_months_exits_nonzero(
    overlay: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(["catalog", "check", "--max-age-months", "600", "--json"], capsys)
    assert code == 0
    res = json.loads(out)
    assert res["ok"] is True
    assert res["over_max_age"] == 0
    assert res["oldest_price"]["as_of"] <= dt.date.today().isoformat()
    code, out = _run(["catalog", "check", "--max-age-months", "1", "--json"], capsys)
    assert code == 1
    res = json.loads(out)
    assert res["ok"] is False
    assert res["over_max_age"] > 0
    from aitco.cli.app import main

    with pytest.raises(SystemExit) as exc:
        main(["catalog", "check", "--max-age-months", "1"])
    assert exc.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # one error line on stderr (the table goes to stdout)
    assert err[0].startswith("error: --max-age-months 1: ")
    assert "older than that" in err[0]


def test_kinds_are_not_compared(tmp_path: Path) -> None:
    """A list price then a used-market price is not a decline: no fit, the class curve stays."""
    f = tmp_path / "kinds.yaml"
    f.write_text(
        "sources:\n  q: {title: q, url: 'https://example.org/q', retrieved: 2026-11-01}\n"
        "accelerators:\n  - id: h100-sxm5-80gb\n    source: q\n"
        "    price: {usd: 20000, as_of: 2026-11-01, kind: street}\n"
        "    price_history:\n"
        "      - {value: {usd: 40000, as_of: 2023-11-01, kind: list}, source: q}\n",
        "utf-8",
    )
    cat = load_catalog([f], use_env=False)
    assert "residual-value.h100-sxm5-80gb" not in cat.fitted_factors

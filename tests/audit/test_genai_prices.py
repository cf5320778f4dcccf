"""Audit and api-prices through genai-prices: rate by request date, long-context tier, cache writes.

The pricing logic is tested against a stand-in for the package (prices and dates chosen here),
so that the expected dollars are computed by hand; one test uses the real package when it is
installed. The existing audit tests run with the package hidden (tests/audit/conftest.py): the
offline fallback.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import types
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from aitco.audit import genai
from aitco.audit.audit import AuditPrice, audit_log
from aitco.cli.app import main

pytestmark = pytest.mark.genai

CUT = dt.datetime(2025, 9, 29, tzinfo=dt.UTC)  # the stand-in's price change
TIER_START = 200_000


@dataclass
class _Tier:
    start: int
    price: Decimal


@dataclass
class _Tiered:
    base: Decimal
    tiers: list[_Tier]


def _fake_module() -> types.ModuleType:
    """A stand-in genai_prices: model 'm1' costs 2/8 $/Mtok before CUT, 1/4 after; input above
    200k tokens at 3 $/Mtok (after CUT); cache read 0.1, cache write 1.25."""
    mod = types.ModuleType("genai_prices")
    mod.__version__ = "test"  # type: ignore[attr-defined]

    class Usage:
        def __init__(self, **kw: Any) -> None:
            self.kw = kw

    def calc_price(usage: Any, model_ref: str, **kw: Any) -> Any:
        if model_ref != "m1":
            raise LookupError(model_ref)
        when = kw.get("genai_request_timestamp")
        early = when is not None and when < CUT
        mp = types.SimpleNamespace(
            input_mtok=Decimal(2)
            if early
            else _Tiered(Decimal(1), [_Tier(TIER_START, Decimal(3))]),
            output_mtok=Decimal(8) if early else Decimal(4),
            cache_read_mtok=Decimal("0.1"),
            cache_write_mtok=Decimal("1.25"),
        )
        return types.SimpleNamespace(
            model_price=mp,
            provider=types.SimpleNamespace(id="p1"),
            model=types.SimpleNamespace(id="m1"),
        )

    mod.Usage = Usage  # type: ignore[attr-defined]
    mod.calc_price = calc_price  # type: ignore[attr-defined]
    return mod


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", _fake_module())


def _rec(i: int, when: dt.datetime, prompt: int, out: int, **usage: int) -> dict[str, Any]:
    return {
        "id": f"r{i}",
        "model": "m1",
        "created": int(when.timestamp()),
        "choices": [{"finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": out, **usage},
    }


def _write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", "utf-8")
    return p


def test_tier_rule() -> None:
    t = _Tiered(Decimal(1), [_Tier(100, Decimal(2)), _Tier(1000, Decimal(5))])
    assert genai.rate_usd_per_mtok(t, 100) == 1.0  # a tier applies above its start
    assert genai.rate_usd_per_mtok(t, 101) == 2.0
    assert genai.rate_usd_per_mtok(t, 5000) == 5.0
    assert genai.rate_usd_per_mtok(Decimal("0.5"), 10) == 0.5
    assert genai.rate_usd_per_mtok(None, 10) is None


def test_each_request_at_the_rate_of_its_date_and_tier(tmp_path: Path, fake: None) -> None:
    before = CUT - dt.timedelta(days=10)
    after = CUT + dt.timedelta(days=10)
    log = _write(
        tmp_path,
        [
            _rec(1, before, 1000, 100),
            _rec(2, after, 1000, 100),
            _rec(3, after, 300_000, 100),  # long-context tier
        ],
    )
    main_price = AuditPrice(id="x", provider="p1", model="m1", input_usd_per_mtok=99.0,
                            output_usd_per_mtok=99.0)  # fmt: skip
    res = audit_log(log, main_price, price_at=genai.GenaiResolver())
    want = (1000 * 2 + 100 * 8) + (1000 * 1 + 100 * 4) + (300_000 * 3 + 100 * 4)
    assert res.billed_usd == pytest.approx(want / 1e6, rel=1e-12)
    assert set(res.billed_by_price) == {"genai:p1/m1", "genai:p1/m1#2", "genai:p1/m1#3"}
    assert "x" not in res.billed_by_price  # the fallback price was never used


def test_cache_writes_pay_their_premium(tmp_path: Path, fake: None) -> None:
    after = CUT + dt.timedelta(days=1)
    # Anthropic usage: input excludes cache reads and writes
    row = {
        "id": "a",
        "model": "m1",
        "type": "message",
        "created": int(after.timestamp()),
        "usage": {"input_tokens": 100, "cache_read_input_tokens": 1000,
                  "cache_creation_input_tokens": 2000, "output_tokens": 10},
    }  # fmt: skip
    log = _write(tmp_path, [row])
    fallback = AuditPrice(id="x", provider="p1", model="m1", input_usd_per_mtok=1.0,
                          output_usd_per_mtok=4.0)  # fmt: skip
    res = audit_log(log, fallback, price_at=genai.GenaiResolver())
    want = 100 * 1 + 1000 * 0.1 + 2000 * 1.25 + 10 * 4
    assert res.billed_usd == pytest.approx(want / 1e6, rel=1e-12)
    # the fallback table bills cache writes at the input price
    res0 = audit_log(log, fallback)
    assert res0.billed_usd == pytest.approx((2100 * 1 + 1000 * 1 + 10 * 4) / 1e6, rel=1e-12)


def test_unknown_model_falls_back_to_the_table(tmp_path: Path, fake: None) -> None:
    row = _rec(1, CUT, 1000, 100)
    row["model"] = "gpt-4o-2024-08-06"
    log = _write(tmp_path, [row])
    table = AuditPrice(id="t", provider="openai", model="gpt-4o", input_usd_per_mtok=2.5,
                       output_usd_per_mtok=10.0)  # fmt: skip
    res = audit_log(log, table, price_at=genai.GenaiResolver())
    assert res.billed_usd == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6, rel=1e-12)


def test_cli_reports_the_price_source(
    tmp_path: Path, fake: None, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _write(tmp_path, [_rec(1, CUT + dt.timedelta(days=1), 1000, 100)])
    log.write_text(log.read_text("utf-8").replace('"m1"', '"gpt-4o-2024-08-06"'), "utf-8")
    with pytest.raises(SystemExit):
        main(["audit", str(log), "--json", "--tokenizer", "approx"])
    d = json.loads(capsys.readouterr().out)
    assert d["price_source"] == "genai-prices test"  # gpt-4o unknown to the stand-in: table
    assert d["billed_usd"] == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6, rel=1e-12)
    with pytest.raises(SystemExit):
        main(["audit", str(log), "--json", "--tokenizer", "approx", "--price-source", "catalog"])
    assert json.loads(capsys.readouterr().out)["price_source"] == "catalog"


def test_not_installed_is_a_clear_error_when_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    row = _rec(1, CUT, 1000, 100)
    row["model"] = "gpt-4o-2024-08-06"
    log = _write(tmp_path, [row])
    with pytest.raises(SystemExit) as exc:
        main(["audit", str(log), "--json", "--price-source", "genai-prices"])
    assert exc.value.code == 2
    assert "genai-prices" in capsys.readouterr().err


def test_real_package_matches_its_own_calculation(tmp_path: Path) -> None:
    gp = pytest.importorskip("genai_prices")
    when = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
    row = _rec(1, when, 300_000, 1000)
    row["model"] = "gemini-1.5-pro"
    log = _write(tmp_path, [row])
    ref = gp.calc_price(
        gp.Usage(input_tokens=300_000, output_tokens=1000),
        model_ref="gemini-1.5-pro",
        genai_request_timestamp=when,
    )
    fallback = AuditPrice(id="x", provider="google", model="g", input_usd_per_mtok=0.0,
                          output_usd_per_mtok=0.0)  # fmt: skip
    res = audit_log(log, fallback, price_at=genai.GenaiResolver())
    assert res.billed_usd == pytest.approx(float(ref.total_price), rel=1e-9)


def _table_only_log(tmp_path: Path) -> tuple[Path, float]:
    """A log of two models in the shipped table that genai-prices does not list, and its bill
    at the table's prices (computed here from the catalog entries)."""
    from aitco.catalog.loader import load_catalog

    cat = load_catalog(use_env=False)
    rows = []
    want = 0.0
    for i, (pid, model) in enumerate(
        [
            ("mistral/mistral-large-2", "mistral-large-2"),
            (
                "together/llama-3.1-70b-instruct-turbo",
                "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo",
            ),
        ]
    ):
        api = cat.apis[pid]
        row = _rec(i, CUT + dt.timedelta(days=i), 1200 + i, 300 + i)
        row["model"] = model
        rows.append(row)
        want += ((1200 + i) * api.input_usd_per_mtok + (300 + i) * api.output_usd_per_mtok) / 1e6
    return _write(tmp_path, rows), want


@pytest.mark.parametrize("installed", [False, True])
def test_table_models_audit_without_price_flag(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    installed: bool,
) -> None:
    """Models in the shipped table but not in genai-prices (or without the package) are priced
    per model from the table, with no --price, exit 0."""
    if installed:
        gp = pytest.importorskip("genai_prices")
        for m in ("mistral-large-2", "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo"):
            with pytest.raises(LookupError):  # the premise: genai-prices does not list them
                gp.calc_price(gp.Usage(input_tokens=1), model_ref=m)
    else:
        monkeypatch.setitem(sys.modules, "genai_prices", None)
    log, want = _table_only_log(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["audit", str(log), "--json", "--tokenizer", "approx"])
    assert exc.value.code in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert d["pricing"] == "per_model"
    assert d["billed_usd"] == pytest.approx(want, rel=1e-9)
    assert set(d["prices_used"]) == {
        "mistral/mistral-large-2",
        "together/llama-3.1-70b-instruct-turbo",
    }
    assert d["price_source"] == ("catalog" if not installed else f"genai-prices {gp.__version__}")

"""``aitco audit`` and ``aitco api-prices`` end to end."""

from __future__ import annotations

import json

import pytest

from aitco.catalog.loader import load_catalog
from aitco.cli.app import main
from aitco.cli.audit_cmd import model_matches


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else 0
    return code, out, err


def _log(tmp_path):
    rows = [
        {
            "id": "a1",
            "model": "gpt-4o-2024-08-06",
            "status": 500,
            "error": {"code": "server_error"},
            "usage": {"prompt_tokens": 1000, "completion_tokens": 200},
        },
        {
            "id": "a2",
            "model": "gpt-4o-2024-08-06",
            "retry_of": "a1",
            "choices": [{"finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 300},
        },
        "garbage line",
    ]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return p


def test_audit_json_contract(tmp_path, capsys):
    code, out, _ = run(
        [
            "audit",
            str(_log(tmp_path)),
            "--price",
            "openai/gpt-4o",
            "--json",
            "--tokenizer",
            "approx",
        ],
        capsys,
    )
    assert code == 0
    d = json.loads(out)
    for key in ("billed_tokens", "useful_tokens", "waste_usd", "waste_share", "causes"):
        assert key in d
    retry = next(c for c in d["causes"] if c["name"] == "retry")
    assert retry["tokens"] == 1200
    # catalog price of openai/gpt-4o: $2.50 in / $10 out per Mtok
    assert retry["usd"] == pytest.approx((1000 * 2.5 + 200 * 10.0) / 1e6, rel=1e-12)
    assert d["price"]["id"] == "openai/gpt-4o"
    assert d["price"]["as_of"]
    assert d["price"]["source"]
    assert d["skipped_lines"]["malformed"] == 1
    assert d["skipped_lines"]["malformed_examples"][0]["line"] == 3
    assert d["tokenizer"]["approximate"] is True
    assert "price_model_mismatch" not in d


def test_audit_guesses_the_price_from_the_log(tmp_path, capsys):
    code, out, _ = run(["audit", str(_log(tmp_path)), "--json", "--tokenizer", "approx"], capsys)
    assert code == 0
    assert json.loads(out)["price"]["id"] == "openai/gpt-4o"


def test_audit_table_output(tmp_path, capsys):
    code, out, _ = run(
        ["audit", str(_log(tmp_path)), "--price", "openai/gpt-4o", "--tokenizer", "approx"], capsys
    )
    assert code == 0
    assert "retry" in out
    assert "Worst requests" in out
    assert "malformed" in out


def test_unknown_price_exit_2_with_suggestions(tmp_path, capsys):
    code, _, err = run(["audit", str(_log(tmp_path)), "--price", "openai/gpt4o"], capsys)
    assert code == 2
    assert "openai/gpt-4o" in err
    assert "Traceback" not in err


def test_missing_log_exit_2(tmp_path, capsys):
    code, _, err = run(["audit", str(tmp_path / "nope.jsonl"), "--price", "openai/gpt-4o"], capsys)
    assert code == 2
    assert "LOG" in err


def test_api_prices_list(capsys):
    code, out, _ = run(["api-prices", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["count"] == len(load_catalog().apis)  # every entry of the catalog's table
    providers = {p["provider"] for p in d["prices"]}
    assert {"openai", "anthropic", "google", "deepseek", "mistral"} <= providers
    for p in d["prices"]:
        assert p["as_of"]
        assert p["source"]
    code, _, err = run(["api-prices", "--provider", "opnai"], capsys)
    assert code == 2
    assert "openai" in err


def test_model_matches_snapshots_only():
    assert model_matches("gpt-4o", "gpt-4o-2024-08-06")
    assert model_matches("claude-sonnet-4-5", "claude-sonnet-4-5-20250929")
    assert not model_matches("gpt-4o", "gpt-4o-mini")
    assert not model_matches("claude-sonnet-4", "claude-sonnet-4-5")


# --------------------------------------------------------------------------- self-hosting
def _timed_log(tmp_path, n=200, step_s=30):
    rows = [
        {
            "id": f"c{i}",
            "model": "gpt-4o-2024-08-06",
            "created": 1_700_000_000 + i * step_s,
            "choices": [{"finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 300},
        }
        for i in range(n)
    ]
    p = tmp_path / "timed.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


def test_traffic_from_created_times(tmp_path):
    from aitco.audit.audit import AuditPrice, audit_log
    from aitco.audit.tokenizers import ApproxTokenizer

    price = AuditPrice(
        id="t/m", provider="t", model="m", input_usd_per_mtok=2.5, output_usd_per_mtok=10.0
    )
    res = audit_log(_timed_log(tmp_path), price, ApproxTokenizer())
    tr = res.traffic()
    assert tr["span_s"] == 199 * 30
    assert tr["requests_per_s"] == pytest.approx(200 / (199 * 30))
    assert tr["mean_input_tokens"] == 1200
    assert tr["mean_output_tokens"] == 300
    billed = 200 * (1200 * 2.5 + 300 * 10.0) / 1e6
    assert tr["billed_usd_per_month"] == pytest.approx(billed / (199 * 30) * 365.25 / 12 * 86400)


def test_self_host_wiring_with_a_known_breakdown(tmp_path, monkeypatch):
    """The comparison arithmetic, with the TCO engine replaced by a known breakdown."""
    import aitco.decide.compare as cmp
    from aitco.audit.audit import AuditPrice, audit_log
    from aitco.audit.tokenizers import ApproxTokenizer
    from aitco.catalog.loader import load_catalog
    from aitco.cli.audit_cmd import self_host_comparison
    from aitco.cost.tco import Breakdown

    seen = {}

    class FakeComparison:
        def __init__(self, b):
            self.options = [b]

    def fake_compare(scn, cat):
        seen["workload"] = scn.workload
        seen["option"] = scn.options[0]
        b = Breakdown(name="x", kind="inference", gpus=8)
        b.add("compute_rent", 1000.0, "compute")
        b.finalize()
        b.values = {"usd_per_million_tokens": 2.0, "fits": True}
        return FakeComparison(b)

    monkeypatch.setattr(cmp, "compare", fake_compare)
    price = AuditPrice(
        id="t/m", provider="t", model="m", input_usd_per_mtok=2.5, output_usd_per_mtok=10.0
    )
    res = audit_log(_timed_log(tmp_path), price, ApproxTokenizer())
    cat = load_catalog(use_env=False)
    out = self_host_comparison(cat, res, "h100-sxm5-80gb", "llama-3.3-70b")
    w = seen["workload"]
    assert (w.input_tokens, w.output_tokens, w.months) == (1200, 300, 1.0)
    assert w.qps == pytest.approx(200 / (199 * 30))
    assert seen["option"].gpus == 8  # one node of the default system
    api_month = res.traffic()["billed_usd_per_month"]
    assert out["self_host_usd_per_month"] == pytest.approx(1000.0)
    assert out["api_usd_per_month"] == pytest.approx(api_month)
    assert out["self_host_to_api_ratio"] == pytest.approx(1000.0 / api_month)
    assert out["cheaper"] == ("self_host" if api_month > 1000.0 else "api")
    assert out["api_usd_per_million_tokens"] == pytest.approx((1200 * 2.5 + 300 * 10.0) / 1500)
    usd_per_request = (1200 * 2.5 + 300 * 10.0) / 1e6
    assert out["breakeven_requests_per_s"] == pytest.approx(
        1000.0 / (usd_per_request * 365.25 / 12 * 86400)
    )


def test_self_host_needs_model_and_span(tmp_path, capsys):
    code, _, err = run(
        [
            "audit",
            str(_timed_log(tmp_path)),
            "--price",
            "openai/gpt-4o",
            "--tokenizer",
            "approx",
            "--self-host",
            "h100-sxm5-80gb",
        ],
        capsys,
    )
    assert code == 2
    assert "--model" in err
    code, _, err = run(
        [
            "audit",
            str(_log(tmp_path)),
            "--price",
            "openai/gpt-4o",
            "--tokenizer",
            "approx",
            "--self-host",
            "h100-sxm5-80gb",
            "--model",
            "llama-3.3-70b",
        ],
        capsys,
    )
    assert code == 2
    assert "--period-days" in err
    code, _, err = run(
        [
            "audit",
            str(_timed_log(tmp_path)),
            "--price",
            "openai/gpt-4o",
            "--tokenizer",
            "approx",
            "--self-host",
            "h100-sxm",
            "--model",
            "llama-3.3-70b",
        ],
        capsys,
    )
    assert code == 2
    assert "h100-sxm5-80gb" in err


def test_self_host_end_to_end(tmp_path, capsys):
    """Real inference + TCO engines; skipped while the factor catalog lacks what they need."""
    from aitco.catalog.loader import load_catalog

    cat = load_catalog(use_env=False)
    needed = [
        "failure.interruptions-per-gpu-hour",
        "restart.hours",
        "power-conversion.loss",
        "pue.hyperscale",
    ]
    missing = [f for f in needed if f not in cat.factors]
    if missing:
        pytest.skip(f"factor catalog incomplete: {missing}")
    code, out, err = run(
        [
            "audit",
            str(_timed_log(tmp_path)),
            "--price",
            "openai/gpt-4o",
            "--tokenizer",
            "approx",
            "--self-host",
            "h100-sxm5-80gb",
            "--model",
            "llama-3.3-70b",
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    sh = json.loads(out)["self_host"]
    assert sh["self_host_usd_per_month"] > 0
    assert sh["api_usd_per_month"] > 0
    assert sh["cheaper"] in ("api", "self_host")


def test_mixed_models_priced_per_model_without_price(tmp_path, capsys):
    rows = [
        {
            "id": "a",
            "model": "gpt-4o-2024-08-06",
            "status": 500,
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100},
        },
        {
            "id": "b",
            "model": "gpt-4o-mini-2024-07-18",
            "status": 500,
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100},
        },
    ]
    p = tmp_path / "mixed.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, out, _ = run(["audit", str(p), "--json", "--tokenizer", "approx"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["pricing"] == "per_model"
    # catalog: gpt-4o $2.50/$10, gpt-4o-mini $0.15/$0.60 per Mtok
    expected = (1000 * 2.5 + 100 * 10.0 + 1000 * 0.15 + 100 * 0.6) / 1e6
    assert d["billed_usd"] == pytest.approx(expected, rel=1e-12)
    assert d["waste_usd"] == pytest.approx(expected, rel=1e-12)  # both failed, never retried
    assert set(d["prices_used"]) == {"openai/gpt-4o", "openai/gpt-4o-mini"}
    # with --price, one price for all, and the mismatch is reported
    code, out, _ = run(
        ["audit", str(p), "--json", "--tokenizer", "approx", "--price", "openai/gpt-4o"], capsys
    )
    d = json.loads(out)
    assert d["billed_usd"] == pytest.approx(2 * (1000 * 2.5 + 100 * 10.0) / 1e6, rel=1e-12)
    assert d["price_model_mismatch"] == ["gpt-4o-mini-2024-07-18"]


def test_unpriced_model_is_an_error_not_zero_dollars(tmp_path, capsys):
    rows = [
        {"id": "a", "model": "gpt-4o", "usage": {"prompt_tokens": 10, "completion_tokens": 1}},
        {
            "id": "b",
            "model": "some-unknown-model-7b",
            "usage": {"prompt_tokens": 10, "completion_tokens": 1},
        },
    ]
    p = tmp_path / "u.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, _, err = run(["audit", str(p), "--json", "--tokenizer", "approx"], capsys)
    assert code == 2
    assert "some-unknown-model-7b" in err
    assert "--price" in err

"""``aitco audit`` and ``aitco api-prices`` end to end."""

from __future__ import annotations

import json

import pytest

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
    assert d["count"] >= 15
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

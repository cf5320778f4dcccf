"""Audit of logs built with KNOWN retries, truncations, prompt cuts, padding and cache misses.

Every expected number below is worked out by hand from the log and the price, not read back from
the code: tokens must match exactly, dollars to floating-point rounding.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from aitco.audit.audit import (
    PRECEDENCE,
    AuditOptions,
    AuditPrice,
    audit_log,
    encoding_overhead_tokens,
    prompt_segments,
)
from aitco.audit.tokenizers import ApproxTokenizer

P_IN, P_C, P_OUT = 2.0, 0.5, 8.0  # USD per million tokens
PRICE = AuditPrice(
    id="test/model",
    provider="test",
    model="model",
    input_usd_per_mtok=P_IN,
    cached_input_usd_per_mtok=P_C,
    output_usd_per_mtok=P_OUT,
    batch_discount=0.5,
    context_window=4096,
    as_of="2026-01-01",
)
TOK = ApproxTokenizer()  # ceil(bytes / 4): exact arithmetic for hand-worked overheads


def usd(inp: int = 0, cached: int = 0, out: int = 0) -> float:
    return (inp * P_IN + cached * P_C + out * P_OUT) / 1e6


def chat(rid, prompt, completion, *, finish="stop", cached=None, **extra):
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    obj = {
        "id": rid,
        "object": "chat.completion",
        "model": "model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": finish}
        ],
        "usage": usage,
    }
    obj.update(extra)
    return obj


def write(path: Path, rows: list) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def causes(out: dict) -> dict:
    return {c["name"]: c for c in out["causes"]}


# --------------------------------------------------------------------------- retries
def test_retry_truncation_prompt_cut_and_failures_exact(tmp_path):
    rows = [
        # retry: a 500 that was billed, then repeated
        chat("a1", 1000, 200, status=500, error={"code": "server_error", "message": "boom"}),
        chat("a2", 1000, 300, retry_of="a1"),
        # truncation: cut at max_tokens, then regenerated
        chat("t1", 500, 100, finish="length"),
        chat("t2", 500, 400, retry_of="t1"),
        # prompt truncation: too long for the window, re-sent 1000 tokens shorter
        chat("p1", 3000, 0, status=400, error={"code": "context_length_exceeded"}),
        chat("p2", 2000, 100, retry_of="p1"),
        # a client timeout that was billed and never retried
        chat("x1", 800, 50, status=408),
        # a truncated output the client kept: not waste
        chat("k1", 300, 256, finish="length"),
    ]
    log = write(tmp_path / "log.jsonl", rows)
    out = audit_log(log, PRICE, TOK).to_json()
    c = causes(out)

    assert c["retry"]["tokens"] == 1200 + 850
    assert c["retry"]["count"] == 2
    assert c["retry"]["usd"] == pytest.approx(usd(1000, 0, 200) + usd(800, 0, 50), rel=1e-12)
    assert c["retry"]["timed_out"] == 1
    assert c["retry"]["failed_not_retried"] == 1

    assert c["truncation"]["tokens"] == 600
    assert c["truncation"]["usd"] == pytest.approx(usd(500, 0, 100), rel=1e-12)
    assert c["truncation"]["truncated_output_tokens"] == 100

    assert c["prompt_truncation"]["tokens"] == 3000
    assert c["prompt_truncation"]["dropped_prompt_tokens"] == 1000
    assert c["prompt_truncation"]["usd"] == pytest.approx(usd(3000), rel=1e-12)

    billed = sum(r["usage"]["total_tokens"] for r in rows)
    assert out["billed_tokens"] == billed
    assert out["waste_tokens"] == 1200 + 850 + 600 + 3000
    assert out["useful_tokens"] == billed - (1200 + 850 + 600 + 3000)
    billed_usd = sum(
        usd(r["usage"]["prompt_tokens"], 0, r["usage"]["completion_tokens"]) for r in rows
    )
    waste_usd = usd(1000, 0, 200) + usd(800, 0, 50) + usd(500, 0, 100) + usd(3000)
    assert out["billed_usd"] == pytest.approx(billed_usd, rel=1e-12)
    assert out["waste_usd"] == pytest.approx(waste_usd, rel=1e-12)
    assert out["waste_share"] == pytest.approx(waste_usd / billed_usd, rel=1e-12)

    rq = out["requests"]
    assert rq["attempts"] == 8
    assert rq["superseded_attempts"] == 3
    assert rq["logical_requests"] == 5
    assert rq["retry_amplification"] == pytest.approx(8 / 5)
    assert rq["token_amplification"] == pytest.approx(billed / (billed - (1200 + 850 + 600 + 3000)))
    assert rq["truncated_kept"] == 1
    assert rq["timed_out"] == 1
    # the worst example of each cause names its id and line
    assert c["prompt_truncation"]["examples"][0]["id"] == "p1"
    assert c["prompt_truncation"]["examples"][0]["line"] == 5
    assert c["retry"]["examples"][0]["id"] == "a1"  # $0.0036 > $0.002
    assert [e["id"] for e in c["retry"]["examples"]] == ["a1", "x1"]


def test_retry_chain_each_superseded_attempt_counted_once(tmp_path):
    rows = [
        chat("r1", 100, 10, status=503),
        chat("r2", 100, 10, status=503, retry_of="r1"),
        chat("r3", 100, 10, retry_of="r2"),
        chat("r4", 100, 10, retry_of="r2"),  # two repeats of the same attempt
        chat("r5", 100, 10, retry_of="missing-id"),
    ]
    out = audit_log(write(tmp_path / "l.jsonl", rows), PRICE, TOK).to_json()
    c = causes(out)
    assert c["retry"]["count"] == 2
    assert c["retry"]["tokens"] == 220
    assert out["requests"]["orphan_retries"] == 1
    assert out["requests"]["logical_requests"] == 3


def test_batch_pricing_halves_every_dollar(tmp_path):
    rows = [chat("a1", 1000, 200, status=500), chat("a2", 1000, 300, retry_of="a1")]
    log = write(tmp_path / "l.jsonl", rows)
    full = audit_log(log, PRICE, TOK).to_json()
    half = audit_log(log, PRICE, TOK, AuditOptions(batch=True)).to_json()
    assert half["waste_usd"] == pytest.approx(full["waste_usd"] / 2, rel=1e-12)
    assert half["billed_usd"] == pytest.approx(full["billed_usd"] / 2, rel=1e-12)
    assert half["waste_tokens"] == full["waste_tokens"]


# --------------------------------------------------------------------------- encoding overhead
def test_base64_and_padding_overhead_exact(tmp_path):
    raw = ("The invoice total is 1,234.56 USD; pay by Friday. " * 6)[:300]
    assert len(raw.encode()) == 300
    b64 = base64.b64encode(raw.encode()).decode()
    assert len(b64) == 400
    pad = " " * 128
    req = {
        "model": "model",
        "messages": [
            {"role": "system", "content": "You read documents."},
            {"role": "user", "content": f"Decode and summarise: {b64}"},
            {"role": "user", "content": [{"type": "text", "text": f"Form field:{pad}end"}]},
        ],
    }
    # hand count with ceil(bytes/4): base64 400 chars -> 100 tokens, decoded 300 bytes -> 75;
    # padding 128 spaces -> 32 tokens vs 1 for a single space.
    assert encoding_overhead_tokens(prompt_segments(req), TOK) == (25, 31)
    rows = [chat("e1", 2000, 10, request=req), chat("e2", 2000, 10, request=req, cached=1990)]
    out = audit_log(write(tmp_path / "l.jsonl", rows), PRICE, TOK).to_json()
    c = causes(out)["encoding_overhead"]
    # e1: 56 tokens; e2: capped at its 10 uncached prompt tokens (the rest was billed cached)
    assert c["tokens"] == 56 + 10
    assert c["count"] == 2
    assert c["base64_tokens"] == 25 + 10
    assert c["padding_tokens"] == 31
    assert c["usd"] == pytest.approx(usd(66), rel=1e-12)
    assert out["useful_tokens"] == out["billed_tokens"] - 66


def test_binary_base64_is_not_text_overhead():
    png = base64.b64encode(bytes(range(256)) * 2).decode()
    assert encoding_overhead_tokens([f"image: {png}"], TOK) == (0, 0)


def test_base64_overhead_with_real_bpe_exceeds_a_third():
    pytest.importorskip("tiktoken")
    from aitco.audit.tokenizers import bundled_bpe_path, load_bundled_bpe

    if bundled_bpe_path("o200k_base") is None:
        pytest.skip("bpe-openai (bundled rank files) not installed")
    tok = load_bundled_bpe("o200k_base")
    text = (
        "Quarterly revenue grew 12 percent while operating costs fell; the board approved it. " * 8
    )
    b64 = base64.b64encode(text.encode()).decode()
    b64_tok, _ = encoding_overhead_tokens([b64], tok)
    # base64 is 4/3 the bytes, and a BPE splits it far worse than English: overhead >> 1/3
    assert b64_tok == tok.count(b64) - tok.count(text)
    assert b64_tok > tok.count(text) / 3


# --------------------------------------------------------------------------- missed cache
def _cache_rows():
    system = ("lorem ipsum dolor sit amet " * 250)[:6000]

    def req(question):
        return {
            "model": "model",
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": question},
            ],
        }

    return [
        chat("c1", 1700, 5, request=req("A first question?"), created=1000),
        chat("c2", 1700, 5, request=req("B second question?"), created=1100),
        chat("c3", 1700, 5, request=req("C third question?"), created=1200, cached=1280),
        chat("c4", 1700, 5, request=req("D fourth, after the cache expired"), created=2000),
    ]


def test_missed_cache_exact(tmp_path):
    # common prefix "<system>" + 6000 chars + "\n<user>" = 6015 chars -> 11 chunks of 512 =
    # 5632 chars -> 1408 tokens (bytes/4) -> 11 blocks of 128 = 1408 cacheable tokens.
    out = audit_log(write(tmp_path / "l.jsonl", _cache_rows()), PRICE, TOK).to_json()
    c = causes(out)["missed_cache"]
    assert c["count"] == 2  # c2 (nothing cached) and c3 (1280 of 1408 cached); c4 expired
    assert c["tokens"] == 1408 + (1408 - 1280)
    assert c["usd"] == pytest.approx(1536 * (P_IN - P_C) / 1e6, rel=1e-12)
    assert c["tokens_are_waste"] is False
    assert out["useful_tokens"] == out["billed_tokens"]  # over-priced, not wasted
    assert out["waste_usd"] == pytest.approx(c["usd"], rel=1e-12)
    assert [e["id"] for e in c["examples"]] == ["c2", "c3"]


def test_missed_cache_without_ttl_counts_the_late_request(tmp_path):
    out = audit_log(
        write(tmp_path / "l.jsonl", _cache_rows()), PRICE, TOK, AuditOptions(cache_ttl_s=None)
    ).to_json()
    assert causes(out)["missed_cache"]["tokens"] == 1408 + 128 + 1408


def test_no_cache_discount_means_no_missed_cache(tmp_path):
    price = AuditPrice(
        id="x/y", provider="x", model="y", input_usd_per_mtok=2.0, output_usd_per_mtok=8.0
    )
    out = audit_log(write(tmp_path / "l.jsonl", _cache_rows()), price, TOK).to_json()
    assert causes(out)["missed_cache"]["tokens"] == 0


# --------------------------------------------------------------------------- robustness
def test_malformed_lines_counted_with_line_numbers(tmp_path):
    rows = [
        chat("ok1", 10, 5),
        "not json at all",
        "",
        "[1, 2, 3]",
        json.dumps(chat("neg", -5, 5)),
        '{"id": "cut", "usage": {"prompt_tokens": 1',
        json.dumps({"id": "nousage", "object": "chat.completion", "choices": []}),
        json.dumps(chat("cached-too-big", 10, 5, cached=50)),
        chat("ok2", 20, 5),
    ]
    out = audit_log(write(tmp_path / "l.jsonl", rows), PRICE, TOK).to_json()
    sk = out["skipped_lines"]
    assert sk["malformed"] == 5
    assert [m["line"] for m in sk["malformed_examples"]] == [2, 4, 5, 6, 8]
    assert sk["blank"] == 1
    assert sk["without_usage"] == 1
    assert sk["without_usage_lines"] == [7]
    assert out["billed_tokens"] == 15 + 25
    assert out["requests"]["attempts"] == 2


def test_provider_shapes_are_normalised(tmp_path):
    rows = [
        # Responses API, cut at max_output_tokens, then regenerated
        {
            "id": "resp_1",
            "object": "response",
            "status": "incomplete",
            "model": "model",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {
                "input_tokens": 400,
                "input_tokens_details": {"cached_tokens": 100},
                "output_tokens": 64,
                "output_tokens_details": {"reasoning_tokens": 60},
            },
        },
        {
            "id": "resp_2",
            "object": "response",
            "status": "completed",
            "model": "model",
            "retry_of": "resp_1",
            "usage": {"input_tokens": 400, "output_tokens": 300},
        },
        # Anthropic: input_tokens excludes cache reads and writes
        {
            "id": "msg_1",
            "type": "message",
            "model": "model",
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 50,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 200,
                "output_tokens": 20,
            },
        },
    ]
    out = audit_log(write(tmp_path / "l.jsonl", rows), PRICE, TOK).to_json()
    c = causes(out)
    assert c["truncation"]["tokens"] == 464
    assert c["truncation"]["usd"] == pytest.approx(usd(300, 100, 64), rel=1e-12)
    t = out["tokens"]
    assert t["prompt_tokens"] == 400 + 400 + 1250
    assert t["cached_tokens"] == 100 + 1000
    assert t["cache_write_tokens"] == 200
    assert t["reasoning_tokens"] == 60


def test_fixture_and_exports(fixtures_dir):
    out = audit_log(fixtures_dir / "openai_usage.jsonl", PRICE, TOK).to_json()
    assert out["billed_tokens"] == (14 + 37) + (14 + 50)
    assert out["skipped_lines"]["export_pages"] == 2
    assert out["skipped_lines"]["malformed"] == 0
    ex = out["exports"]
    assert ex["usage_api"]["input_tokens"] == 1000
    assert ex["usage_api"]["input_cached_tokens"] == 400
    assert ex["costs_api"]["by_currency"] == {"usd": 0.06}
    assert ex["expected_usd_from_usage"] == pytest.approx(usd(600, 400, 500), rel=1e-12)
    assert ex["gap_usd"] == pytest.approx(0.06 - usd(600, 400, 500), rel=1e-12)


def test_json_contract_keys(tmp_path):
    out = audit_log(write(tmp_path / "l.jsonl", [chat("a", 1, 1)]), PRICE, TOK).to_json()
    for key in ("billed_tokens", "useful_tokens", "waste_usd", "waste_share", "causes"):
        assert key in out
    assert [c["name"] for c in out["causes"]] == PRECEDENCE
    for c in out["causes"]:
        assert {"name", "tokens", "usd", "share", "count", "examples"} <= set(c)
    assert out["tokenizer"]["approximate"] is True
    assert out["price"]["as_of"] == "2026-01-01"


def test_export_only_json_file_is_billed_from_usage(tmp_path, fixtures_dir):
    pages = [
        json.loads(line)
        for line in (fixtures_dir / "openai_usage.jsonl").read_text().splitlines()[2:]
    ]
    f = tmp_path / "usage_export.json"
    f.write_text(json.dumps(pages, indent=2))  # pretty-printed, as saved from the API
    out = audit_log(f, PRICE, TOK).to_json()
    assert out["basis"] == "usage_api"
    assert out["billed_tokens"] == 1000 + 500
    assert out["billed_usd"] == pytest.approx(usd(600, 400, 500), rel=1e-12)
    assert out["waste_usd"] == 0
    assert out["skipped_lines"]["malformed"] == 0
    assert out["exports"]["costs_api"]["by_currency"] == {"usd": 0.06}


def test_gzipped_log_streams_the_same(tmp_path):
    import gzip

    rows = [chat("a1", 1000, 200, status=500), chat("a2", 1000, 300, retry_of="a1"), "bad line"]
    plain = write(tmp_path / "l.jsonl", rows)
    gz = tmp_path / "l.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = audit_log(plain, PRICE, TOK).to_json(), audit_log(gz, PRICE, TOK).to_json()
    assert a["waste_usd"] == b["waste_usd"]
    assert b["skipped_lines"]["malformed_examples"] == [
        {"line": 3, "reason": a["skipped_lines"]["malformed_examples"][0]["reason"]}
    ]
    bad = tmp_path / "cut.jsonl.gz"
    bad.write_bytes(gzip.compress(plain.read_bytes())[:20])
    from aitco.errors import ParseError

    with pytest.raises(ParseError):
        audit_log(bad, PRICE, TOK)


def test_unlogged_timeouts_estimated_only_on_request(tmp_path):
    req = {"model": "model", "messages": [{"role": "user", "content": "x" * 400}]}
    rows = [
        {"id": "to1", "status": 408, "error": {"message": "client timeout"}, "request": req},
        chat("to2", 110, 20, retry_of="to1", request=req),
    ]
    log = write(tmp_path / "l.jsonl", rows)
    plain = audit_log(log, PRICE, TOK).to_json()
    assert plain["skipped_lines"]["without_usage"] == 1
    assert causes(plain)["retry"]["tokens"] == 0
    est = audit_log(log, PRICE, TOK, AuditOptions(estimate_unlogged=True)).to_json()
    # "<user>" + 400 x -> 406 bytes -> ceil(406 / 4) = 102 tokens, billed at the input price
    assert causes(est)["retry"]["tokens"] == 102
    assert causes(est)["retry"]["usd"] == pytest.approx(usd(102), rel=1e-12)
    assert est["tokens"]["estimated_prompt_tokens"] == 102
    assert est["requests"]["estimated_attempts"] == 1
    assert est["requests"]["timed_out"] == 1


def test_context_overflow_not_retried_is_prompt_truncation(tmp_path):
    rows = [
        chat(
            "o1",
            5000,
            0,
            status=400,
            error={"code": "context_length_exceeded", "message": "too long"},
        ),
        chat(
            "o2",
            900,
            0,
            error={"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens"},
        ),
        chat("f1", 700, 0, status=500),
    ]
    out = audit_log(write(tmp_path / "l.jsonl", rows), PRICE, TOK).to_json()
    c = causes(out)
    assert c["prompt_truncation"]["count"] == 2
    assert c["prompt_truncation"]["tokens"] == 5900
    assert c["prompt_truncation"]["dropped_prompt_tokens"] == 5900
    assert c["retry"]["tokens"] == 700
    assert c["retry"]["failed_not_retried"] == 1

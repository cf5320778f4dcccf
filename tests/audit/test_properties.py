"""Properties of the audit on random logs: no double counting, bounds, linearity in prices."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitco.audit.audit import AuditPrice, audit_log
from aitco.audit.tokenizers import ApproxTokenizer

TOK = ApproxTokenizer()


@st.composite
def logs(draw):
    n = draw(st.integers(1, 25))
    rows = []
    for i in range(n):
        prompt = draw(st.integers(0, 5000))
        cached = draw(st.integers(0, prompt))
        row = {
            "id": f"r{i}",
            "choices": [{"finish_reason": draw(st.sampled_from(["stop", "length"]))}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": draw(st.integers(0, 2000)),
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }
        status = draw(st.sampled_from([None, 200, 408, 429, 500]))
        if status is not None:
            row["status"] = status
        if i and draw(st.booleans()):
            row["retry_of"] = f"r{draw(st.integers(0, i - 1))}"
        rows.append(row)
    return rows


def _run(rows, price):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "log.jsonl"
        p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        return audit_log(p, price, TOK).to_json()


PRICE = AuditPrice(
    id="t/m",
    provider="t",
    model="m",
    input_usd_per_mtok=3.0,
    cached_input_usd_per_mtok=0.3,
    output_usd_per_mtok=15.0,
)


@given(logs())
def test_waste_never_exceeds_the_bill(rows):
    out = _run(rows, PRICE)
    billed = sum(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in rows)
    assert out["billed_tokens"] == billed
    assert 0 <= out["waste_tokens"] <= billed
    assert out["useful_tokens"] == billed - out["waste_tokens"]
    assert 0 <= out["waste_usd"] <= out["billed_usd"] * (1 + 1e-12) + 1e-15
    assert sum(c["tokens"] for c in out["causes"] if c["tokens_are_waste"]) == out["waste_tokens"]


@given(logs())
def test_whole_attempt_causes_partition_superseded_and_failed(rows):
    out = _run(rows, PRICE)
    retried = {r["retry_of"] for r in rows if "retry_of" in r}
    failed = {r["id"] for r in rows if r.get("status", 200) >= 400}
    whole = [r for r in rows if r["id"] in retried or r["id"] in failed]
    by = {c["name"]: c for c in out["causes"]}
    tokens = sum(by[n]["tokens"] for n in ("prompt_truncation", "truncation", "retry"))
    count = sum(by[n]["count"] for n in ("prompt_truncation", "truncation", "retry"))
    assert tokens == sum(
        r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in whole
    )
    assert count == len(whole)
    assert out["requests"]["logical_requests"] == len(rows) - len(retried & {r["id"] for r in rows})


@given(logs(), st.floats(0.01, 100.0))
def test_dollars_are_linear_in_the_prices(rows, k):
    scaled = AuditPrice(
        id="t/m",
        provider="t",
        model="m",
        input_usd_per_mtok=3.0 * k,
        cached_input_usd_per_mtok=0.3 * k,
        output_usd_per_mtok=15.0 * k,
    )
    a, b = _run(rows, PRICE), _run(rows, scaled)
    assert b["billed_usd"] == pytest.approx(a["billed_usd"] * k, rel=1e-9, abs=1e-12)
    assert b["waste_usd"] == pytest.approx(a["waste_usd"] * k, rel=1e-9, abs=1e-12)
    assert b["waste_tokens"] == a["waste_tokens"]

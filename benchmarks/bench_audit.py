"""Speed and memory of ``aitco audit`` on a generated log of N lines.

Usage::

    python benchmarks/bench_audit.py [--lines 1000000] [--request-share 0.1] [--keep PATH]

The log mixes chat completions (5 % failed and retried, 3 % cut at max_tokens and regenerated,
1 % malformed lines, a share with the request body carrying a shared system prompt and some
base64 text). Prints lines/s and the peak resident memory of the process; run it at two sizes to
see that memory does not grow with the log (bounded by the prefix LRU and the retry map).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from aitco.audit.audit import AuditPrice, audit_log
from aitco.audit.tokenizers import resolve_tokenizer


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far. [MB]"""
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux
    return kb / 1024.0


def generate(path: Path, n: int, request_share: float, seed: int = 0) -> None:
    rng = random.Random(seed)
    system = "You are a careful assistant for invoices. " * 300  # ~13 kB shared prefix
    blob = base64.b64encode(("line item, amount, currency; " * 20).encode()).decode()
    with open(path, "w") as fh:
        i = 0
        while i < n:
            r = rng.random()
            p, o = rng.randint(200, 3000), rng.randint(10, 800)
            base = {
                "object": "chat.completion",
                "model": "gpt-4o-2024-08-06",
                "created": 1_700_000_000 + i,
            }
            if r < 0.01:
                fh.write('{"id": "broken", "usage": {"prompt_tokens": \n')
                i += 1
                continue
            if r < 0.06 and i + 1 < n:  # failed then retried
                fh.write(
                    json.dumps(
                        {
                            **base,
                            "id": f"r{i}",
                            "status": 503,
                            "usage": {"prompt_tokens": p, "completion_tokens": 0},
                        }
                    )
                    + "\n"
                )
                fh.write(
                    json.dumps(
                        {
                            **base,
                            "id": f"r{i}b",
                            "retry_of": f"r{i}",
                            "choices": [{"finish_reason": "stop"}],
                            "usage": {"prompt_tokens": p, "completion_tokens": o},
                        }
                    )
                    + "\n"
                )
                i += 2
                continue
            if r < 0.09 and i + 1 < n:  # truncated then regenerated
                fh.write(
                    json.dumps(
                        {
                            **base,
                            "id": f"t{i}",
                            "choices": [{"finish_reason": "length"}],
                            "usage": {"prompt_tokens": p, "completion_tokens": 256},
                        }
                    )
                    + "\n"
                )
                fh.write(
                    json.dumps(
                        {
                            **base,
                            "id": f"t{i}b",
                            "retry_of": f"t{i}",
                            "choices": [{"finish_reason": "stop"}],
                            "usage": {"prompt_tokens": p, "completion_tokens": o},
                        }
                    )
                    + "\n"
                )
                i += 2
                continue
            obj = {
                **base,
                "id": f"c{i}",
                "choices": [{"finish_reason": "stop"}],
                "usage": {"prompt_tokens": max(p, 1500), "completion_tokens": o},
            }
            if rng.random() < request_share:
                obj["request"] = {
                    "model": "gpt-4o",
                    "messages": [
                        {"role": "system", "content": system},
                        {
                            "role": "user",
                            "content": f"Question {i}: total of "
                            f"{blob if rng.random() < 0.3 else 'the attached'}?",
                        },
                    ],
                }
            fh.write(json.dumps(obj) + "\n")
            i += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--request-share", type=float, default=0.1)
    ap.add_argument("--tokenizer", default="o200k_base", help="o200k_base | approx | PATH")
    ap.add_argument("--keep", type=Path, default=None, help="write the log here and keep it")
    args = ap.parse_args(argv)
    path = args.keep or Path(tempfile.mkstemp(suffix=".jsonl")[1])
    t0 = time.perf_counter()
    generate(path, args.lines, args.request_share)
    gen_s = time.perf_counter() - t0
    size_mb = path.stat().st_size / 1e6
    try:
        tok = resolve_tokenizer(args.tokenizer)
    except Exception:  # fall back to the labelled estimate when bpe-openai is absent
        tok = resolve_tokenizer("approx")
    price = AuditPrice(
        id="openai/gpt-4o",
        provider="openai",
        model="gpt-4o",
        input_usd_per_mtok=2.5,
        cached_input_usd_per_mtok=1.25,
        output_usd_per_mtok=10.0,
    )
    rss0 = peak_rss_mb()
    t0 = time.perf_counter()
    res = audit_log(path, price, tok)
    dt = time.perf_counter() - t0
    out = res.to_json()
    if args.keep is None:
        os.unlink(path)
    print(f"log: {args.lines:,} lines, {size_mb:,.0f} MB (generated in {gen_s:.1f} s)")
    print(f"tokenizer: {out['tokenizer']['name']} (approximate={out['tokenizer']['approximate']})")
    print(f"audit: {dt:.1f} s -> {args.lines / dt:,.0f} lines/s, {size_mb / dt:,.1f} MB/s")
    print(f"peak RSS: {peak_rss_mb():,.0f} MB (before the audit: {rss0:,.0f} MB)")
    print(
        f"billed {out['billed_tokens']:,} tokens, waste ${out['waste_usd']:,.2f} "
        f"({out['waste_share']:.1%}); "
        f"malformed {out['skipped_lines']['malformed']:,}"
    )
    for c in out["causes"]:
        print(f"  {c['name']:<18} {c['count']:>9,} req {c['tokens']:>14,} tok ${c['usd']:>12,.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

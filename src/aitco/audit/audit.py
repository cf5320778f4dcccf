"""Bill audit of a token-API request log: billed vs useful tokens, and the waste per cause.

Every billed token is given to **at most one** cause, in this order of precedence (the first that
applies wins; see ``docs/audit.md`` for the full definitions):

1. ``prompt_truncation`` – an attempt that was retried with a *shorter* prompt (the client cut
   the prompt, typically to fit the context window, after this one was sent and billed), or that
   failed because its prompt did not fit the context window. The whole attempt is waste.
2. ``truncation`` – an attempt whose output stopped at the output-token limit
   (``finish_reason == "length"``) and that was generated again. The whole attempt is waste: its
   output was cut and its prompt is billed again by the regeneration.
3. ``retry`` – any other attempt that was retried (failed, timed out, or discarded by the client),
   and failed attempts that were billed and never retried. The whole attempt is waste.
4. ``encoding_overhead`` – in the calls that remain (the useful ones), prompt tokens that exist
   only because text was sent base64-encoded or padded: tokens(encoded) - tokens(decoded),
   measured by re-tokenising when the request is logged; capped at the uncached prompt.
5. ``missed_cache`` – in the useful calls, prompt-prefix tokens that repeat a prefix sent within
   the cache lifetime, long enough for the provider's prompt cache, but were billed at the full
   input price. These tokens were *useful*, only over-priced: their waste is the price gap
   ``(input - cached) price``, and they are not subtracted from ``useful_tokens``.

Dollars are accumulated as integer token counts per price class and priced once at the end, so
the totals are exact up to one floating-point rounding.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import itertools
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aitco.audit.exports import ExportTotals
from aitco.audit.log import LineStats, UsageRecord, is_export_page, read_log, scan_retries
from aitco.audit.tokenizers import ApproxTokenizer, TokenCounter
from aitco.catalog.schema import ApiPrice
from aitco.explain import Estimate, Term, dominant_term
from aitco.fileio import read_bytes
from aitco.units import DAYS_PER_MONTH, MEGA, SECONDS_PER_DAY

SECONDS_PER_MONTH = DAYS_PER_MONTH * SECONDS_PER_DAY

#: Shortest prompt the provider caches (OpenAI prompt-caching guide: "prompts of 1024 tokens or
#: longer"; Anthropic: 1024 tokens minimum cacheable prompt for Sonnet/Opus models).
CACHE_MIN_PREFIX_TOKENS = 1024
#: Granularity of cache hits beyond the minimum (OpenAI prompt-caching guide: "cache hits occur
#: in increments of 128 tokens").
CACHE_BLOCK_TOKENS = 128
#: Cache lifetime after last use (OpenAI: "typically 5 to 10 minutes of inactivity";
#: Anthropic default ephemeral TTL: 5 minutes). The shorter bound is used.
CACHE_TTL_S = 300.0
#: Characters per prefix-hash chunk: repeated prefixes are matched at this granularity.
PREFIX_CHUNK_CHARS = 512
#: Prefix hashes remembered (LRU); bounds the memory of the cache simulation (~100 B each).
MAX_PREFIX_ENTRIES = 200_000
#: Shortest run of base64 characters treated as an encoded payload (48 raw bytes).
BASE64_MIN_CHARS = 64
#: Shortest run of one repeated whitespace/NUL character treated as padding.
PADDING_MIN_RUN = 64
#: Share of printable characters a decoded payload needs to count as text (else it is binary,
#: e.g. an image, which providers bill as image tokens, not text).
TEXT_PRINTABLE_MIN = 0.95
#: Token counts of matched prefixes remembered (LRU), so a shared prefix is tokenised once.
MAX_MEMO_COUNTS = 10_000
#: Worst requests kept as examples per cause.
EXAMPLES_PER_CAUSE = 5

_B64_RE = re.compile(
    rf"[A-Za-z0-9+/]{{{BASE64_MIN_CHARS},}}={{0,2}}|[A-Za-z0-9_-]{{{BASE64_MIN_CHARS},}}={{0,2}}"
)
_PAD_RE = re.compile(rf"([ \t\x00])\1{{{PADDING_MIN_RUN - 1},}}")

CAUSES: dict[str, str] = {
    "prompt_truncation": "attempts retried with a shorter prompt (client cut the prompt to fit) or "
    "failed for exceeding the context window: the whole attempt",
    "truncation": "outputs cut at max_tokens (finish_reason 'length') and generated again: "
    "the whole attempt",
    "retry": "attempts that failed, timed out or were discarded and were billed: the whole attempt",
    "encoding_overhead": "prompt tokens added by base64 encoding or padding of text: "
    "tokens(encoded) - tokens(decoded)",
    "missed_cache": "repeated prompt prefixes (>= cache minimum, within the cache lifetime) billed "
    "at the full input price: priced at (input - cached) price",
}
PRECEDENCE = list(CAUSES)


@dataclass(frozen=True)
class AuditPrice:
    """The prices an audit uses, with where they came from.

    Attributes
    ----------
    input_usd_per_mtok, output_usd_per_mtok : float
        List prices. [USD / 1e6 tokens]
    cached_input_usd_per_mtok : float or None
        Price of cached input tokens; ``None`` when the provider has no prompt-cache discount.
        [USD / 1e6 tokens]
    batch_discount : float or None
        Fraction off with the batch API. [0-1]
    context_window : int or None
        Context window of the model. [tokens]
    """

    id: str
    provider: str
    model: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cached_input_usd_per_mtok: float | None = None
    batch_discount: float | None = None
    context_window: int | None = None
    as_of: str = ""
    source: str = ""
    source_url: str | None = None
    #: Price of cache-write input tokens where the provider charges a premium for them (None:
    #: billed at the input price). [USD / 1e6 tokens]
    cache_write_usd_per_mtok: float | None = None

    @classmethod
    def from_api_price(cls, p: ApiPrice) -> AuditPrice:
        """From a catalog :class:`~aitco.catalog.schema.ApiPrice` (with its provenance)."""
        prov = p.provenance.get("input_usd_per_mtok")
        if prov is None and p.provenance:
            prov = next(iter(p.provenance.values()))
        return cls(
            id=p.id,
            provider=p.provider,
            model=p.model,
            input_usd_per_mtok=p.input_usd_per_mtok,
            output_usd_per_mtok=p.output_usd_per_mtok,
            cached_input_usd_per_mtok=p.cached_input_usd_per_mtok,
            batch_discount=p.batch_discount,
            context_window=p.context_window,
            as_of=p.as_of.isoformat(),
            source=prov.source.cite() if prov else "",
            source_url=prov.source.url if prov else None,
        )

    @property
    def cached_or_input(self) -> float:
        """Price applied to cached tokens (the input price when there is no discount)."""
        return (
            self.input_usd_per_mtok
            if self.cached_input_usd_per_mtok is None
            else self.cached_input_usd_per_mtok
        )


@dataclass(frozen=True)
class AuditOptions:
    """Tunable assumptions of the audit (defaults cited at the module constants)."""

    cache_min_tokens: int = CACHE_MIN_PREFIX_TOKENS
    cache_block_tokens: int = CACHE_BLOCK_TOKENS
    cache_ttl_s: float | None = CACHE_TTL_S
    prefix_chunk_chars: int = PREFIX_CHUNK_CHARS
    max_prefix_entries: int = MAX_PREFIX_ENTRIES
    examples_per_cause: int = EXAMPLES_PER_CAUSE
    batch: bool = False
    #: Bill failed/timed-out calls logged without usage at their re-tokenised prompt (an
    #: estimate: output tokens generated before the client gave up are unknown and not counted).
    estimate_unlogged: bool = False


def price_usd(
    price: AuditPrice,
    input_tokens: int = 0,
    cached_tokens: int = 0,
    output_tokens: int = 0,
    saving_tokens: int = 0,
    *,
    cache_write_tokens: int = 0,
    batch: bool = False,
) -> float:
    r"""Dollars of token counts at one price [USD].

    Parameters
    ----------
    price : AuditPrice
        Prices per million tokens.
    input_tokens, cached_tokens, output_tokens : int
        Tokens billed at the uncached input, cached input and output prices. [tokens]
    saving_tokens : int
        Over-priced tokens, valued at the gap between input and cached prices. [tokens]
    cache_write_tokens : int
        Input tokens written to the prompt cache, at the cache-write price (the input price
        when the price has none). [tokens]
    batch : bool
        Apply the batch discount.

    Notes
    -----
    .. math:: W = f\,\frac{T_i p_i + T_c p_c + T_o p_o + T_s (p_i - p_c) + T_w p_w}{10^6}

    with :math:`f = 1 - d_{batch}` for batch pricing, else 1.
    """
    f = (1.0 - (price.batch_discount or 0.0)) if batch else 1.0
    p_i, p_c = price.input_usd_per_mtok, price.cached_or_input
    p_w = p_i if price.cache_write_usd_per_mtok is None else price.cache_write_usd_per_mtok
    return (
        f
        * (
            input_tokens * p_i
            + cached_tokens * p_c
            + output_tokens * price.output_usd_per_mtok
            + saving_tokens * (p_i - p_c)
            + cache_write_tokens * p_w
        )
        / MEGA
    )


def _bill_usd(price: AuditPrice, v: list[int], *, batch: bool) -> float:
    """Dollars of one ``billed_by_price`` row ``[input, cached, output, cache_write]``."""
    w = v[3] if len(v) > 3 else 0
    return price_usd(price, v[0], v[1], v[2], cache_write_tokens=w, batch=batch)


@dataclass
class CauseAcc:
    """Running totals of one cause: integer tokens per price and price class, count, examples.

    ``by_price`` maps a price id to ``[input, cached, output, saving]`` token counts, so that the
    dollars are priced once at the end (exact up to one rounding per price).
    """

    name: str
    by_price: dict[str, list[int]] = field(default_factory=dict)
    count: int = 0
    extra: dict[str, int] = field(default_factory=dict)
    _heap: list[tuple[float, int, dict[str, Any]]] = field(default_factory=list)

    def add(self, pid: str, inp: int = 0, cached: int = 0, out: int = 0, saving: int = 0) -> None:
        """Add token counts billed at price ``pid``."""
        v = self.by_price.setdefault(pid, [0, 0, 0, 0])
        v[0] += inp
        v[1] += cached
        v[2] += out
        v[3] += saving

    def _sum(self, i: int) -> int:
        return sum(v[i] for v in self.by_price.values())

    @property
    def input_tokens(self) -> int:
        """Tokens billed at the uncached input price [tokens]."""
        return self._sum(0)

    @property
    def cached_tokens(self) -> int:
        """Tokens billed at the cached input price [tokens]."""
        return self._sum(1)

    @property
    def output_tokens(self) -> int:
        """Tokens billed at the output price [tokens]."""
        return self._sum(2)

    @property
    def saving_tokens(self) -> int:
        """Over-priced tokens, valued at (input - cached) price [tokens]."""
        return self._sum(3)

    @property
    def tokens(self) -> int:
        """Tokens of this cause [tokens]."""
        return sum(sum(v) for v in self.by_price.values())

    @property
    def tokens_are_waste(self) -> bool:
        """Whether the tokens were not needed at all (False for over-priced useful tokens)."""
        return self.name != "missed_cache"

    def usd(self, prices: dict[str, AuditPrice], batch: bool = False) -> float:
        """Dollars of this cause, each token at the price of its request [USD]."""
        return sum(price_usd(prices[pid], *v, batch=batch) for pid, v in self.by_price.items())

    def add_example(self, usd: float, seq: int, ex: dict[str, Any], k: int) -> None:
        """Keep ``ex`` if it is among the ``k`` costliest of this cause."""
        item = (usd, -seq, ex)
        if len(self._heap) < k:
            heapq.heappush(self._heap, item)
        elif usd > self._heap[0][0]:
            heapq.heapreplace(self._heap, item)

    def examples(self) -> list[dict[str, Any]]:
        """Return the kept examples, costliest first."""
        return [ex for _u, _s, ex in sorted(self._heap, key=lambda t: (-t[0], -t[1]))]


# --------------------------------------------------------------------------- request text
def _content_texts(content: Any) -> Iterable[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                yield part
            elif isinstance(part, dict):
                for key in ("text", "input_text", "content"):
                    v = part.get(key)
                    if isinstance(v, str):
                        yield v
                    elif isinstance(v, list):
                        yield from _content_texts(v)


def prompt_segments(request: dict[str, Any]) -> list[str]:
    """Text of a request in the order the provider sees it (tools, system, messages/input).

    Works for Chat Completions (``messages``), Responses (``instructions``, ``input``) and
    Anthropic Messages (``system``, ``messages``) request bodies, and legacy ``prompt``.
    """
    segs: list[str] = []
    tools = request.get("tools")
    if tools:
        segs.append(json.dumps(tools, sort_keys=True, separators=(",", ":")))
    for key in ("system", "instructions"):
        segs.extend(f"<{key}>{t}" for t in _content_texts(request.get(key)))
    msgs = request.get("messages")
    if msgs is None:
        msgs = request.get("input")
    if isinstance(msgs, str):
        segs.append(msgs)
    elif isinstance(msgs, list):
        for m in msgs:
            if isinstance(m, dict):
                role = m.get("role", m.get("type", ""))
                segs.extend(f"<{role}>{t}" for t in _content_texts(m.get("content")))
            elif isinstance(m, str):
                segs.append(m)
    prompt = request.get("prompt")
    if isinstance(prompt, str):
        segs.append(prompt)
    return segs


def _decode_text(s: str) -> str | None:
    """Decode a base64 (standard or URL-safe) run if it is UTF-8 *text*; ``None`` otherwise."""
    body = s.rstrip("=")
    if len(body) % 4 == 1:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(
            padded, altchars=b"-_" if ("-" in body or "_" in body) else None, validate=True
        )
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not text:
        return None
    if text.isprintable():
        return text
    printable = sum(1 for ch in text if ch.isprintable() or ch in "\n\r\t")
    if printable / len(text) < TEXT_PRINTABLE_MIN:
        return None
    return text


_LONG_WORD_RE = re.compile(rf"\S{{{BASE64_MIN_CHARS},}}")
_PAD_PROBES = tuple(ch * PADDING_MIN_RUN for ch in " \t\x00")
#: Overheads of text segments already measured (system prompts repeat), keyed by tokenizer+hash.
_SEGMENT_MEMO: OrderedDict[tuple[str, str, bytes], tuple[int, int]] = OrderedDict()


def _segment_overhead(seg: str, tok: TokenCounter) -> tuple[int, int]:
    b64 = pad = 0
    # base64 runs hold no whitespace: look only inside long non-blank runs (found in C)
    for word in _LONG_WORD_RE.finditer(seg):
        for m in _B64_RE.finditer(word.group(0)):
            text = _decode_text(m.group(0))
            if text is not None:
                b64 += max(0, tok.count(m.group(0)) - tok.count(text))
    if any(probe in seg for probe in _PAD_PROBES):
        for m in _PAD_RE.finditer(seg):
            run = m.group(0)
            pad += max(0, tok.count(run) - tok.count(run[0]))
    return b64, pad


def encoding_overhead_tokens(segments: Iterable[str], tok: TokenCounter) -> tuple[int, int]:
    r"""Count the prompt tokens added by base64-encoded text and by padding runs.

    Parameters
    ----------
    segments : iterable of str
        Text of the request (:func:`prompt_segments`).
    tok : TokenCounter
        Tokenizer used for both the encoded and the decoded form.

    Returns
    -------
    base64_tokens, padding_tokens : int
        Overhead tokens. [tokens]

    Notes
    -----
    For each base64 run :math:`e` that decodes to UTF-8 text :math:`d`:
    :math:`\max(0, n(e) - n(d))`; for each run :math:`r` of one repeated blank character of
    length >= :data:`PADDING_MIN_RUN`: :math:`\max(0, n(r) - n(r_0))`, where :math:`n` counts
    tokens. Base64 maps 3 bytes to 4 characters, so even a tokenizer counting bytes sees
    +1/3; real BPEs, which split base64 into short pieces, see far more.
    """
    b64 = pad = 0
    for seg in segments:
        if len(seg) < BASE64_MIN_CHARS:
            continue
        digest = hashlib.blake2b(seg.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        key = (tok.name, tok.source, digest)
        hit = _SEGMENT_MEMO.get(key)
        if hit is None:
            hit = _segment_overhead(seg, tok)
            _SEGMENT_MEMO[key] = hit
            if len(_SEGMENT_MEMO) > MAX_MEMO_COUNTS:
                _SEGMENT_MEMO.popitem(last=False)
        b64 += hit[0]
        pad += hit[1]
    return b64, pad


class PrefixCache:
    """LRU memory of prompt-prefix hashes, to find prefixes the provider could have cached.

    The prompt text is cut into chunks of ``chunk_chars`` characters; the hash of every
    prefix ``chunks[0..i]`` is remembered with the time it was last sent, per model.
    """

    def __init__(self, chunk_chars: int, max_entries: int, ttl_s: float | None) -> None:
        self.chunk_chars = chunk_chars
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self._seen: OrderedDict[tuple[str, bytes], float] = OrderedDict()
        self._counts: OrderedDict[bytes, int] = OrderedDict()

    def _hashes(self, text: str) -> list[bytes]:
        out: list[bytes] = []
        h = b""
        for i in range(0, len(text), self.chunk_chars):
            h = hashlib.blake2b(
                h + text[i : i + self.chunk_chars].encode("utf-8"), digest_size=8
            ).digest()
            out.append(h)
        return out

    def match_and_insert(self, model: str, text: str, now_s: float | None) -> tuple[int, bytes]:
        """Find the longest prefix of ``text`` already sent (and alive); then remember ``text``.

        Returns
        -------
        matched_chars : int
            Length of the matched prefix, a multiple of the chunk size. [characters]
        matched_hash : bytes
            Hash of that prefix (``b""`` when nothing matched), a key for memoised counts.
        """
        hashes = self._hashes(text)
        matched = 0
        for i, h in enumerate(hashes):
            key = (model, h)
            t = self._seen.get(key)
            if t is None:
                break
            if self.ttl_s is not None and now_s is not None and t >= 0 and now_s - t > self.ttl_s:
                break
            matched = i + 1
        stamp = now_s if now_s is not None else -1.0
        for h in hashes:
            key = (model, h)
            self._seen[key] = stamp
            self._seen.move_to_end(key)
        while len(self._seen) > self.max_entries:
            self._seen.popitem(last=False)
        return min(len(text), matched * self.chunk_chars), hashes[matched - 1] if matched else b""

    def prefix_tokens(self, key: bytes, prefix: str, tok: TokenCounter) -> int:
        """Token count of a matched prefix, memoised by its hash (repeated prefixes repeat)."""
        n = self._counts.get(key)
        if n is None:
            n = tok.count(prefix)
            self._counts[key] = n
            if len(self._counts) > MAX_MEMO_COUNTS:
                self._counts.popitem(last=False)
        return n


# --------------------------------------------------------------------------- result
@dataclass
class AuditResult:
    """Everything the audit found; :meth:`to_json` is the public ``--json`` contract."""

    price: AuditPrice
    tokenizer: dict[str, Any]
    causes: dict[str, CauseAcc]
    stats: LineStats
    exports: ExportTotals
    prices: dict[str, AuditPrice] = field(default_factory=dict)
    billed_by_price: dict[str, list[int]] = field(default_factory=dict)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    attempts: int = 0
    superseded: int = 0
    failed: int = 0
    timed_out: int = 0
    truncated_kept: int = 0
    orphan_retries: int = 0
    with_request: int = 0
    models_seen: dict[str, int] = field(default_factory=dict)
    options: AuditOptions = field(default_factory=AuditOptions)
    first_created_s: float | None = None
    last_created_s: float | None = None
    basis: str = "requests"
    estimated_attempts: int = 0
    estimated_prompt_tokens: int = 0

    def traffic(self, period_s: float | None = None) -> dict[str, Any]:
        """Mean shape and rate of the billed traffic, for a self-hosting comparison.

        Parameters
        ----------
        period_s : float, optional
            Period the log covers. [s] Default: last minus first ``created`` time.

        Returns
        -------
        dict
            ``span_s``, ``requests_per_s`` (attempts / span), ``mean_input_tokens``,
            ``mean_output_tokens``, ``billed_usd_per_month`` (``None`` without a span).
        """
        span = period_s
        if span is None and self.first_created_s is not None and self.last_created_s is not None:
            span = self.last_created_s - self.first_created_s
        n = self.attempts
        ok = span is not None and span > 0
        return {
            "span_s": span,
            "attempts": n,
            "requests_per_s": n / span if ok and span else None,
            "mean_input_tokens": self.prompt_tokens / n if n else None,
            "mean_output_tokens": self.output_tokens / n if n else None,
            "billed_usd_per_month": self.billed_usd / span * SECONDS_PER_MONTH
            if ok and span
            else None,
        }

    @property
    def billed_tokens(self) -> int:
        """All billed input and output tokens of the per-request records [tokens]."""
        return self.prompt_tokens + self.output_tokens

    @property
    def billed_usd(self) -> float:
        """Bill of the per-request records, each at its catalog price [USD]."""
        if not self.billed_by_price:  # export-only: the totals at the main price
            return price_usd(
                self.price,
                self.prompt_tokens - self.cached_tokens,
                self.cached_tokens,
                self.output_tokens,
                batch=self.options.batch,
            )
        return sum(
            _bill_usd(self.prices[pid], v, batch=self.options.batch)
            for pid, v in self.billed_by_price.items()
        )

    @property
    def waste_tokens(self) -> int:
        """Tokens that were not needed at all, over-priced cache misses excluded [tokens]."""
        return sum(c.tokens for c in self.causes.values() if c.tokens_are_waste)

    @property
    def useful_tokens(self) -> int:
        """Billed tokens minus waste tokens [tokens]."""
        return self.billed_tokens - self.waste_tokens

    @property
    def waste_usd(self) -> float:
        """Dollars lost to every cause [USD]."""
        return sum(c.usd(self.prices, self.options.batch) for c in self.causes.values())

    def to_json(self) -> dict[str, Any]:
        """Return the audit as one JSON-ready dict (keys are the public ``--json`` contract)."""
        billed_usd = self.billed_usd
        billed_tok = self.billed_tokens
        logical = self.attempts - self.superseded
        retry_like = sum(
            self.causes[n].tokens for n in ("prompt_truncation", "truncation", "retry")
        )
        causes = []
        for name in PRECEDENCE:
            c = self.causes[name]
            usd = c.usd(self.prices, self.options.batch)
            entry: dict[str, Any] = {
                "name": name,
                "tokens": c.tokens,
                "usd": usd,
                "share": usd / billed_usd if billed_usd > 0 else 0.0,
                "token_share": c.tokens / billed_tok if billed_tok else 0.0,
                "count": c.count,
                "tokens_are_waste": c.tokens_are_waste,
                "definition": CAUSES[name],
                "examples": c.examples(),
            }
            entry.update(c.extra)
            causes.append(entry)
        p = self.price
        out: dict[str, Any] = {
            "billed_tokens": billed_tok,
            "useful_tokens": self.useful_tokens,
            "waste_tokens": self.waste_tokens,
            "billed_usd": billed_usd,
            "waste_usd": self.waste_usd,
            "waste_share": self.waste_usd / billed_usd if billed_usd > 0 else 0.0,
            "causes": causes,
            "precedence": PRECEDENCE,
            "basis": self.basis,
            "tokens": {
                "prompt_tokens": self.prompt_tokens,
                "cached_tokens": self.cached_tokens,
                "cache_write_tokens": self.cache_write_tokens,
                "output_tokens": self.output_tokens,
                "reasoning_tokens": self.reasoning_tokens,
                "estimated_prompt_tokens": self.estimated_prompt_tokens,
            },
            "requests": {
                "attempts": self.attempts,
                "logical_requests": logical,
                "superseded_attempts": self.superseded,
                "failed": self.failed,
                "timed_out": self.timed_out,
                "truncated_kept": self.truncated_kept,
                "orphan_retries": self.orphan_retries,
                "with_request_body": self.with_request,
                "estimated_attempts": self.estimated_attempts,
                "retry_amplification": self.attempts / logical if logical > 0 else None,
                "token_amplification": (billed_tok / (billed_tok - retry_like))
                if billed_tok - retry_like > 0
                else None,
            },
            "price": {
                "id": p.id,
                "provider": p.provider,
                "model": p.model,
                "input_usd_per_mtok": p.input_usd_per_mtok,
                "cached_input_usd_per_mtok": p.cached_input_usd_per_mtok,
                "output_usd_per_mtok": p.output_usd_per_mtok,
                "batch": self.options.batch,
                "batch_discount": p.batch_discount,
                "context_window": p.context_window,
                "as_of": p.as_of,
                "source": p.source,
                "source_url": p.source_url,
            },
            "prices_used": {
                pid: {
                    "provider": q.provider,
                    "model": q.model,
                    "input_usd_per_mtok": q.input_usd_per_mtok,
                    "cached_input_usd_per_mtok": q.cached_input_usd_per_mtok,
                    "output_usd_per_mtok": q.output_usd_per_mtok,
                    "as_of": q.as_of,
                    "source": q.source,
                    "cache_write_usd_per_mtok": q.cache_write_usd_per_mtok,
                    "billed_usd": _bill_usd(q, self.billed_by_price[pid], batch=self.options.batch),
                }
                for pid, q in self.prices.items()
                if pid in self.billed_by_price
            },
            "models_seen": dict(sorted(self.models_seen.items(), key=lambda kv: -kv[1])),
            "traffic": self.traffic(),
            "tokenizer": self.tokenizer,
            "skipped_lines": self.stats.to_json(),
            "assumptions": {
                "cache_min_tokens": self.options.cache_min_tokens,
                "cache_block_tokens": self.options.cache_block_tokens,
                "cache_ttl_s": self.options.cache_ttl_s,
                "cache_write_priced_as": "cache-write price where the price has one "
                "(genai-prices), else the input price",
            },
        }
        if not self.exports.empty:
            out["exports"] = self.exports.to_json(
                p.input_usd_per_mtok, p.cached_input_usd_per_mtok, p.output_usd_per_mtok
            )
        return out

    def to_estimate(self) -> Estimate:
        """Return the audit as an :class:`~aitco.explain.Estimate` (one term per cause)."""
        terms = []
        for name in PRECEDENCE:
            c = self.causes[name]
            terms.append(
                Term(
                    name=f"{name}_usd",
                    value=c.usd(self.prices, self.options.batch),
                    unit="USD",
                    formula="(T_in*p_in + T_c*p_c + T_out*p_out + T_sav*(p_in - p_c))/1e6",
                    inputs={
                        "input_tokens": c.input_tokens,
                        "cached_tokens": c.cached_tokens,
                        "output_tokens": c.output_tokens,
                        "saving_tokens": c.saving_tokens,
                        "count": c.count,
                    },
                    sources=[self.price.source] if self.price.source else [],
                    note=CAUSES[name],
                )
            )
        return Estimate(
            kind="audit",
            values=self.to_json(),
            terms=terms,
            dominant=dominant_term({t.name: t.value for t in terms if t.value > 0}),
            assumptions=[f"precedence: {' > '.join(PRECEDENCE)}"],
        )


# --------------------------------------------------------------------------- the audit
def _record_split(rec: UsageRecord) -> tuple[int, int, int]:
    """(uncached input, cached input, output) tokens of a record."""
    return rec.prompt_tokens - rec.cached_tokens, rec.cached_tokens, rec.output_tokens


#: Resolver of the price of a request from its model name (``None``: use the main price).
PriceResolver = Callable[[str | None], AuditPrice | None]


def audit_log(
    path: str | Path,
    price: AuditPrice,
    tokenizer: TokenCounter | None = None,
    options: AuditOptions | None = None,
    price_for: PriceResolver | None = None,
    price_at: Callable[[UsageRecord], AuditPrice | None] | None = None,
) -> AuditResult:
    """Audit a JSONL request log against a price (streaming, bounded memory).

    Parameters
    ----------
    path : path
        JSONL log (see :mod:`aitco.audit.log`); OpenAI Usage/Costs API pages may be mixed in.
    price : AuditPrice
        Prices to bill with (from the catalog: ``AuditPrice.from_api_price``).
    tokenizer : TokenCounter, optional
        Used for encoding overhead and prefix lengths; the labelled approximate counter when
        absent.
    options : AuditOptions, optional
        Cache minimum, block, lifetime; batch pricing; examples kept.
    price_for : callable, optional
        ``price_for(model) -> AuditPrice | None``: price each request at its own model's
        price (mixed-model logs); ``None`` falls back to ``price``. Called once per model.
    price_at : callable, optional
        ``price_at(record) -> AuditPrice | None``: price each request at the rate in force on
        its own timestamp and at its prompt's tier (see :mod:`aitco.audit.genai`); ``None``
        falls back to ``price_for`` and ``price``.

    Returns
    -------
    AuditResult
        Totals, causes and what was skipped.

    Notes
    -----
    Two streaming passes: the first reads only the lines with ``retry_of`` to learn which
    attempts were repeated (and the prompt length of their repeat); the second classifies
    each billed call. Memory is bounded by the number of retried attempts, the prefix-hash
    LRU (:data:`MAX_PREFIX_ENTRIES`) and the examples kept.
    """
    opts = options or AuditOptions()
    tok = tokenizer or ApproxTokenizer()
    retried, _n = scan_retries(path)
    seen_retried: set[str] = set()
    causes = {n: CauseAcc(n) for n in PRECEDENCE}
    for c in causes.values():
        c.extra = {}
    causes["retry"].extra = {"timed_out": 0, "failed_not_retried": 0, "discarded": 0}
    causes["prompt_truncation"].extra = {"dropped_prompt_tokens": 0}
    causes["truncation"].extra = {"truncated_output_tokens": 0}
    causes["encoding_overhead"].extra = {"base64_tokens": 0, "padding_tokens": 0}
    causes["missed_cache"].extra = {"cached_tokens_reported": 0}
    stats = LineStats()
    exports = ExportTotals()
    res = AuditResult(
        price=price,
        tokenizer={"name": tok.name, "approximate": tok.approximate, "source": tok.source},
        causes=causes,
        stats=stats,
        exports=exports,
        prices={price.id: price},
        options=opts,
    )
    by_model: dict[str | None, AuditPrice] = {}

    def price_of(model: str | None) -> AuditPrice:
        if price_for is None:
            return price
        p = by_model.get(model)
        if p is None:
            p = price_for(model) or price
            by_model[model] = p
            res.prices.setdefault(p.id, p)
        return p

    cache = PrefixCache(opts.prefix_chunk_chars, opts.max_prefix_entries, opts.cache_ttl_s)
    seq = itertools.count()
    k = opts.examples_per_cause
    batch = opts.batch

    def whole(c: CauseAcc, rec: UsageRecord, rp: AuditPrice, detail: dict[str, Any]) -> None:
        u, ca, o = _record_split(rec)
        c.add(rp.id, u, ca, o)
        c.count += 1
        usd = price_usd(rp, u, ca, o, batch=batch)
        c.add_example(
            usd,
            next(seq),
            {"id": rec.id, "line": rec.line_no, "tokens": u + ca + o, "usd": usd, **detail},
            k,
        )

    doc = _json_document(path, stats)
    items: Iterable[tuple[int, dict[str, Any] | UsageRecord]] = (
        doc if doc is not None else read_log(path, stats)
    )
    for _line_no, item in items:
        if isinstance(item, dict):
            exports.add_page(item)
            continue
        rec = item
        if not rec.has_usage:
            if not (opts.estimate_unlogged and rec.failed and rec.request is not None):
                continue
            # the provider billed the prompt of a call the client gave up on: estimate it
            rec.prompt_tokens = tok.count("\n".join(prompt_segments(rec.request)))
            rec.has_usage = True
            res.estimated_attempts += 1
            res.estimated_prompt_tokens += rec.prompt_tokens
        res.attempts += 1
        res.prompt_tokens += rec.prompt_tokens
        res.cached_tokens += rec.cached_tokens
        res.cache_write_tokens += rec.cache_write_tokens
        res.output_tokens += rec.output_tokens
        res.reasoning_tokens += rec.reasoning_tokens
        rp = (price_at(rec) if price_at is not None else None) or price_of(rec.model)
        res.prices.setdefault(rp.id, rp)
        bill = res.billed_by_price.setdefault(rp.id, [0, 0, 0, 0])
        writes = rec.cache_write_tokens if rp.cache_write_usd_per_mtok is not None else 0
        bill[0] += rec.prompt_tokens - rec.cached_tokens - writes
        bill[1] += rec.cached_tokens
        bill[2] += rec.output_tokens
        bill[3] += writes
        if rec.created_s is not None:
            if res.first_created_s is None or rec.created_s < res.first_created_s:
                res.first_created_s = rec.created_s
            if res.last_created_s is None or rec.created_s > res.last_created_s:
                res.last_created_s = rec.created_s
        if rec.model is not None and (rec.model in res.models_seen or len(res.models_seen) < 50):
            res.models_seen[rec.model] = res.models_seen.get(rec.model, 0) + 1
        res.failed += rec.failed
        res.timed_out += rec.timed_out
        if rec.request is not None:
            res.with_request += 1
        superseded = rec.id is not None and rec.id in retried
        useful = not superseded and not rec.failed
        # ---- the prefix cache sees every call that reached the provider
        missed_chars = 0
        missed_key = b""
        text = ""
        segs = prompt_segments(rec.request) if rec.request is not None else []
        cache_on = rp.cached_input_usd_per_mtok is not None and (
            rp.cached_input_usd_per_mtok < rp.input_usd_per_mtok
        )
        if cache_on and segs and rec.prompt_tokens >= opts.cache_min_tokens:
            text = "\n".join(segs)
            missed_chars, missed_key = cache.match_and_insert(rec.model or "", text, rec.created_s)
        if superseded:
            assert rec.id is not None
            seen_retried.add(rec.id)
            res.superseded += 1
            succ_prompt = retried[rec.id]
            if 0 <= succ_prompt < rec.prompt_tokens or rec.context_overflow:
                dropped = rec.prompt_tokens - succ_prompt if succ_prompt >= 0 else rec.prompt_tokens
                dropped = max(0, dropped)
                causes["prompt_truncation"].extra["dropped_prompt_tokens"] += dropped
                whole(
                    causes["prompt_truncation"],
                    rec,
                    rp,
                    {"dropped_prompt_tokens": dropped, "error": rec.error_code},
                )
            elif rec.truncated:
                causes["truncation"].extra["truncated_output_tokens"] += rec.output_tokens
                whole(causes["truncation"], rec, rp, {"output_tokens": rec.output_tokens})
            else:
                kind = "timed_out" if rec.timed_out else ("failed" if rec.failed else "discarded")
                if kind == "timed_out":
                    causes["retry"].extra["timed_out"] += 1
                elif kind == "discarded":
                    causes["retry"].extra["discarded"] += 1
                whole(
                    causes["retry"],
                    rec,
                    rp,
                    {"kind": kind, "status": rec.http_status, "error": rec.error_code},
                )
            continue
        if rec.context_overflow:  # sent, billed, and never answered: it did not fit
            causes["prompt_truncation"].extra["dropped_prompt_tokens"] += rec.prompt_tokens
            whole(
                causes["prompt_truncation"],
                rec,
                rp,
                {"dropped_prompt_tokens": rec.prompt_tokens, "error": rec.error_code},
            )
            continue
        if rec.failed:
            causes["retry"].extra["failed_not_retried"] += 1
            if rec.timed_out:
                causes["retry"].extra["timed_out"] += 1
            whole(
                causes["retry"],
                rec,
                rp,
                {"kind": "failed_not_retried", "status": rec.http_status, "error": rec.error_code},
            )
            continue
        assert useful
        if rec.truncated:
            res.truncated_kept += 1
        uncached = rec.prompt_tokens - rec.cached_tokens
        enc_tokens = 0
        if segs and uncached > 0:
            b64, pad = encoding_overhead_tokens(segs, tok)
            enc_tokens = min(b64 + pad, uncached)
            if enc_tokens > 0:
                c = causes["encoding_overhead"]
                c.add(rp.id, inp=enc_tokens)
                c.count += 1
                c.extra["base64_tokens"] += min(b64, enc_tokens)
                c.extra["padding_tokens"] += enc_tokens - min(b64, enc_tokens)
                usd = price_usd(rp, enc_tokens, batch=batch)
                c.add_example(
                    usd,
                    next(seq),
                    {
                        "id": rec.id,
                        "line": rec.line_no,
                        "tokens": enc_tokens,
                        "usd": usd,
                        "base64_tokens": b64,
                        "padding_tokens": pad,
                    },
                    k,
                )
        if missed_chars > 0:
            prefix_tokens = cache.prefix_tokens(missed_key, text[:missed_chars], tok)
            eligible = 0
            if prefix_tokens >= opts.cache_min_tokens:
                eligible = (prefix_tokens // opts.cache_block_tokens) * opts.cache_block_tokens
            missed = min(eligible - rec.cached_tokens, uncached - enc_tokens)
            if missed > 0:
                c = causes["missed_cache"]
                c.add(rp.id, saving=missed)
                c.count += 1
                c.extra["cached_tokens_reported"] += rec.cached_tokens
                usd = price_usd(rp, saving_tokens=missed, batch=batch)
                c.add_example(
                    usd,
                    next(seq),
                    {
                        "id": rec.id,
                        "line": rec.line_no,
                        "tokens": missed,
                        "usd": usd,
                        "repeated_prefix_tokens": prefix_tokens,
                        "cached_tokens_reported": rec.cached_tokens,
                    },
                    k,
                )
    res.orphan_retries = len(set(retried) - seen_retried)
    if res.attempts == 0 and exports.usage_results:
        # no per-request lines: bill the Usage API totals (no causes can be computed from them)
        tot = exports.usage_total()
        res.prompt_tokens = tot.input_tokens
        res.cached_tokens = tot.input_cached_tokens
        res.cache_write_tokens = tot.input_cache_write_tokens
        res.output_tokens = tot.output_tokens
        res.basis = "usage_api"
    return res


#: Largest whole-JSON export read in one piece (a page list, not a log). [bytes]
MAX_JSON_DOCUMENT_BYTES = 256 * 2**20


def _json_document(
    path: str | Path, stats: LineStats
) -> list[tuple[int, dict[str, Any] | UsageRecord]] | None:
    """Read a ``.json`` file holding one export page or a list of pages; ``None`` otherwise.

    A pretty-printed Usage/Costs API response saved as ``.json`` spans many lines, so it is read
    whole (it is small: aggregated buckets). Anything else is left to the JSONL reader.
    """
    p = Path(path)
    if p.suffix.lower() != ".json" or not p.is_file() or p.stat().st_size > MAX_JSON_DOCUMENT_BYTES:
        return None
    try:
        raw = read_bytes(p, field="LOG", limit=MAX_JSON_DOCUMENT_BYTES)
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    pages = doc if isinstance(doc, list) else [doc]
    if not pages or not all(is_export_page(x) for x in pages):
        return None
    stats.lines = len(raw.decode("utf-8", errors="replace").splitlines())
    stats.pages = len(pages)
    return [(1, x) for x in pages]

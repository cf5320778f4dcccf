"""Streaming reader of token-API request logs (JSONL), in bounded memory.

One JSON object per line: an API response as the provider returns it (OpenAI Chat Completions,
OpenAI Responses, Anthropic Messages, DeepSeek), optionally with the request beside it
(``request``) and the fields ``status`` (HTTP code) and ``retry_of`` (the ``id`` of the attempt it
repeats). Lines that are OpenAI Usage/Costs API pages (``{"object": "page", ...}``) are handed to
:mod:`aitco.audit.exports`.

A line that is not JSON, not an object, or whose usage numbers are not non-negative integers is
*malformed*: it is counted, its line number kept (the first :data:`MAX_LINE_NUMBERS_KEPT`), and
the audit goes on. A response without a ``usage`` object is *unbilled or unknown* and counted
separately. Nothing is kept per line beyond what the caller keeps.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aitco.errors import ParseError
from aitco.fileio import open_input
from aitco.limits import MAX_TOKENS

try:  # orjson is optional: several times faster on large logs
    import orjson

    def _loads(b: bytes) -> Any:
        return orjson.loads(b)

except ImportError:  # pragma: no cover - depends on the environment

    def _loads(b: bytes) -> Any:
        return json.loads(b)


#: Line numbers of malformed lines kept for the report (the count is always exact).
MAX_LINE_NUMBERS_KEPT = 100

#: HTTP codes that mean "the client gave up or the gateway timed out" (RFC 9110 408 and 504;
#: 499 is nginx's "client closed request").
TIMEOUT_HTTP_CODES = frozenset({408, 499, 504})

#: Error texts that mean "the prompt does not fit the context window" (OpenAI error code
#: ``context_length_exceeded`` and message "maximum context length"; Anthropic "prompt is too
#: long"; generic "context window").
CONTEXT_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "prompt is too long",
)


@dataclass(slots=True)
class UsageRecord:
    """One billed (or attempted) API call, normalised across providers.

    Attributes
    ----------
    line_no : int
        1-based line number in the log.
    id : str or None
        Response id (``chatcmpl-…``, ``resp_…``, ``msg_…``) or the log's own id.
    model : str or None
        Model name as the provider reported it.
    api : str
        ``chat``, ``responses``, ``anthropic`` or ``unknown``.
    prompt_tokens : int
        All billed input tokens, cached and cache-write tokens included. [tokens]
    cached_tokens : int
        Input tokens served from the provider's prompt cache. [tokens]
    cache_write_tokens : int
        Input tokens written to the cache (Anthropic ``cache_creation_input_tokens``). [tokens]
    output_tokens : int
        Billed output tokens, reasoning tokens included. [tokens]
    reasoning_tokens : int
        Hidden reasoning tokens (a part of ``output_tokens``). [tokens]
    truncated : bool
        The output stopped at the output-token limit (``finish_reason == "length"``, Responses
        ``incomplete_details.reason == "max_output_tokens"``, Anthropic ``stop_reason ==
        "max_tokens"``).
    failed : bool
        HTTP status >= 400, an ``error`` object, or a failed/cancelled response.
    timed_out : bool
        A failure that is a timeout (HTTP 408/499/504 or an error mentioning a timeout).
    context_overflow : bool
        A failure because the prompt did not fit the context window (OpenAI
        ``context_length_exceeded``, "maximum context length", Anthropic "prompt is too long").
    http_status : int or None
        HTTP status code when the log records it.
    error_code : str or None
        ``error.code`` or ``error.type``.
    retry_of : str or None
        Id of the attempt this call repeats.
    created_s : float or None
        Unix time of the call. [s]
    request : dict or None
        The request body, when logged.
    has_usage : bool
        Whether the line carried a usage object (otherwise billing is unknown).
    """

    line_no: int
    id: str | None
    model: str | None
    api: str
    prompt_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    truncated: bool = False
    failed: bool = False
    timed_out: bool = False
    context_overflow: bool = False
    http_status: int | None = None
    error_code: str | None = None
    retry_of: str | None = None
    created_s: float | None = None
    request: dict[str, Any] | None = None
    has_usage: bool = True

    @property
    def billed_tokens(self) -> int:
        """Input plus output tokens billed for this call [tokens]."""
        return self.prompt_tokens + self.output_tokens


@dataclass
class LineStats:
    """Counts of what the reader saw, with the line numbers of malformed lines."""

    lines: int = 0
    blank: int = 0
    records: int = 0
    pages: int = 0
    without_usage: int = 0
    malformed: int = 0
    malformed_lines: list[tuple[int, str]] = field(default_factory=list)
    without_usage_lines: list[int] = field(default_factory=list)

    def add_malformed(self, line_no: int, reason: str) -> None:
        """Count one malformed line, keeping its number and reason (the first few)."""
        self.malformed += 1
        if len(self.malformed_lines) < MAX_LINE_NUMBERS_KEPT:
            self.malformed_lines.append((line_no, reason))

    def to_json(self) -> dict[str, Any]:
        """Return the ``skipped_lines`` block of the audit JSON."""
        return {
            "total_lines": self.lines,
            "records": self.records,
            "export_pages": self.pages,
            "blank": self.blank,
            "malformed": self.malformed,
            "malformed_examples": [{"line": n, "reason": r} for n, r in self.malformed_lines],
            "without_usage": self.without_usage,
            "without_usage_lines": self.without_usage_lines,
            "line_numbers_kept_max": MAX_LINE_NUMBERS_KEPT,
        }


class MalformedLine(ValueError):
    """A line that cannot be read as an API response (its reason is the message)."""


def _int(d: dict[str, Any], key: str, where: str) -> int:
    v = d.get(key)
    if v is None:
        return 0
    ok = isinstance(v, int | float) and not isinstance(v, bool)
    if not (ok and 0 <= v <= MAX_TOKENS and float(v).is_integer()):  # NaN and inf fail too
        raise MalformedLine(
            f"{where}.{key} = {v!r} is not a non-negative integer of at most {MAX_TOKENS:g}"
        )
    return int(v)


def _seconds(v: Any) -> float | None:
    """Return a finite timestamp [s], else None (NaN, infinity, a 400-digit integer, text)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        x = float(v)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def _sub(d: dict[str, Any], key: str) -> dict[str, Any]:
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def _status(obj: dict[str, Any]) -> int | None:
    for key in ("status", "status_code", "http_status"):
        v = obj.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, str) and v.isdigit():
            return int(v)
    return None


def parse_response(obj: Any, line_no: int) -> UsageRecord:
    """Normalise one response object (see :class:`UsageRecord`).

    Raises
    ------
    MalformedLine
        The object is not a mapping or its usage numbers are invalid.
    """
    if not isinstance(obj, dict):
        raise MalformedLine(f"a JSON {type(obj).__name__}, not an object")
    wrapped = obj.get("response")
    body: dict[str, Any] = wrapped if isinstance(wrapped, dict) else obj
    usage = body.get("usage") if "usage" in body else obj.get("usage")
    rid = body.get("id", obj.get("id"))
    model = body.get("model", obj.get("model"))
    request = obj.get("request") if isinstance(obj.get("request"), dict) else None
    if model is None and request is not None:
        model = request.get("model")
    retry_of = obj.get("retry_of")
    if retry_of is not None and not isinstance(retry_of, str | int):
        raise MalformedLine(f"retry_of = {retry_of!r} is not an id")
    created = body.get("created", body.get("created_at", obj.get("created")))
    rec = UsageRecord(
        line_no=line_no,
        id=str(rid) if rid is not None else None,
        model=str(model) if model is not None else None,
        api="unknown",
        http_status=_status(obj),
        retry_of=str(retry_of) if retry_of is not None else None,
        created_s=_seconds(created),
        request=request,
    )
    # --- failure and timeout
    err = obj.get("error") if obj.get("error") is not None else body.get("error")
    text = ""
    if isinstance(err, dict):
        code = err.get("code") or err.get("type")
        rec.error_code = str(code) if code is not None else "error"
        text = " ".join(str(err.get(k, "")) for k in ("code", "type", "message"))
    elif isinstance(err, str) and err:
        rec.error_code = err
        text = err
    body_status = body.get("status")
    if rec.http_status is None and body is not obj:
        rec.http_status = _status(body)
    rec.failed = (
        (rec.http_status is not None and rec.http_status >= 400)
        or rec.error_code is not None
        or body_status in ("failed", "cancelled")
    )
    rec.timed_out = rec.failed and (
        (rec.http_status in TIMEOUT_HTTP_CODES)
        or "timeout" in text.lower()
        or "timed out" in text.lower()
    )
    if obj.get("timeout") is True:
        rec.failed = rec.timed_out = True
    low = text.lower() + " " + (rec.error_code or "").lower()
    rec.context_overflow = rec.failed and any(m in low for m in CONTEXT_OVERFLOW_MARKERS)
    # --- truncation at the output limit
    choices = body.get("choices")
    if isinstance(choices, list):
        rec.truncated = any(
            isinstance(c, dict) and c.get("finish_reason") == "length" for c in choices
        )
    if body.get("stop_reason") == "max_tokens":
        rec.truncated = True
    inc = body.get("incomplete_details")
    if (
        body_status == "incomplete"
        and isinstance(inc, dict)
        and inc.get("reason") == "max_output_tokens"
    ):
        rec.truncated = True
    # --- usage
    if not isinstance(usage, dict):
        if usage is not None:
            raise MalformedLine(f"usage = {usage!r} is not an object")
        rec.has_usage = False
        return rec
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        rec.api = "chat"
        rec.prompt_tokens = _int(usage, "prompt_tokens", "usage")
        rec.output_tokens = _int(usage, "completion_tokens", "usage")
        ptd = _sub(usage, "prompt_tokens_details")
        rec.cached_tokens = _int(ptd, "cached_tokens", "usage.prompt_tokens_details")
        rec.cache_write_tokens = _int(ptd, "cache_write_tokens", "usage.prompt_tokens_details")
        if "prompt_cache_hit_tokens" in usage:  # DeepSeek
            rec.cached_tokens = _int(usage, "prompt_cache_hit_tokens", "usage")
        ctd = _sub(usage, "completion_tokens_details")
        rec.reasoning_tokens = _int(ctd, "reasoning_tokens", "usage.completion_tokens_details")
    elif (
        "cache_read_input_tokens" in usage
        or "cache_creation_input_tokens" in usage
        or (body.get("type") == "message")
    ):
        rec.api = "anthropic"  # input_tokens excludes cache reads and writes
        uncached = _int(usage, "input_tokens", "usage")
        rec.cached_tokens = _int(usage, "cache_read_input_tokens", "usage")
        rec.cache_write_tokens = _int(usage, "cache_creation_input_tokens", "usage")
        rec.prompt_tokens = uncached + rec.cached_tokens + rec.cache_write_tokens
        rec.output_tokens = _int(usage, "output_tokens", "usage")
    elif "input_tokens" in usage or "output_tokens" in usage:
        rec.api = "responses"  # input_tokens includes cached tokens
        rec.prompt_tokens = _int(usage, "input_tokens", "usage")
        rec.output_tokens = _int(usage, "output_tokens", "usage")
        itd = _sub(usage, "input_tokens_details")
        rec.cached_tokens = _int(itd, "cached_tokens", "usage.input_tokens_details")
        rec.cache_write_tokens = _int(itd, "cache_write_tokens", "usage.input_tokens_details")
        otd = _sub(usage, "output_tokens_details")
        rec.reasoning_tokens = _int(otd, "reasoning_tokens", "usage.output_tokens_details")
    else:
        raise MalformedLine(
            "usage has none of prompt_tokens/completion_tokens/input_tokens/output_tokens"
        )
    if rec.cached_tokens > rec.prompt_tokens:
        raise MalformedLine(
            f"cached tokens ({rec.cached_tokens}) exceed the prompt tokens ({rec.prompt_tokens})"
        )
    return rec


def is_export_page(obj: Any) -> bool:
    """Whether a JSON object is an OpenAI Usage/Costs API page or bucket."""
    return isinstance(obj, dict) and obj.get("object") in ("page", "bucket")


def iter_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_no, raw_line)`` from a file, streaming (1-based line numbers).

    A ``.gz`` file is decompressed on the fly.
    """
    p = Path(path)
    raw = open_input(p, field="LOG", binary=True)  # a regular file only (no FIFO, no device)
    fh: Any = gzip.GzipFile(fileobj=raw, mode="rb") if p.suffix == ".gz" else raw
    try:
        with fh, raw:
            yield from enumerate(fh, start=1)
    except (OSError, EOFError) as exc:  # a corrupt or truncated .gz
        raise ParseError(str(p), f"cannot read the file ({exc})") from exc


def read_log(
    path: str | Path, stats: LineStats
) -> Iterator[tuple[int, dict[str, Any] | UsageRecord]]:
    """Stream a log: yields ``(line_no, record)`` for responses and ``(line_no, page)`` for exports.

    Malformed and blank lines are counted in ``stats`` and not yielded.
    """
    for line_no, raw in iter_lines(path):
        stats.lines += 1
        s = raw.strip()
        if not s:
            stats.blank += 1
            continue
        try:
            obj = _loads(s)
        except ValueError as exc:
            stats.add_malformed(line_no, f"not JSON ({str(exc)[:80]})")
            continue
        if is_export_page(obj):
            stats.pages += 1
            yield line_no, obj
            continue
        try:
            rec = parse_response(obj, line_no)
        except MalformedLine as exc:
            stats.add_malformed(line_no, str(exc))
            continue
        stats.records += 1
        if not rec.has_usage:
            stats.without_usage += 1
            if len(stats.without_usage_lines) < MAX_LINE_NUMBERS_KEPT:
                stats.without_usage_lines.append(line_no)
        yield line_no, rec


def scan_retries(path: str | Path) -> tuple[dict[str, int], int]:
    """First pass: for every id that some later call retries, the shortest retry prompt.

    Only lines that contain ``retry_of`` are parsed, so the pass costs one read of the file.
    Memory grows with the number of *retried* attempts, not with the log.

    Returns
    -------
    retried : dict
        ``{id: min prompt_tokens of the calls that retry it}`` (-1 when unknown). [tokens]
    n_retry_lines : int
        Number of lines that carry ``retry_of``.
    """
    retried: dict[str, int] = {}
    n = 0
    for line_no, raw in iter_lines(path):
        if b"retry_of" not in raw:
            continue
        try:
            obj = _loads(raw.strip())
            rec = parse_response(obj, line_no)
        except (ValueError, MalformedLine):
            continue
        if rec.retry_of is None or rec.retry_of == rec.id:  # a self-reference repeats nothing
            continue
        n += 1
        p = rec.prompt_tokens if rec.has_usage else -1
        old = retried.get(rec.retry_of)
        if old is None or old < 0 or (0 <= p < old):
            retried[rec.retry_of] = p
    return retried, n

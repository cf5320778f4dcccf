"""What a service served, from its token-API usage export or its request log (``--served``).

``aitco reconcile`` sets a service's bill beside the load it carried. The evidence is read with
the audit's readers, streaming: OpenAI organisation Usage API pages (``organization.usage.
completions.result`` in time buckets: ``num_model_requests``, ``input_tokens``,
``output_tokens``), one page per line or a ``.json`` file of pages, and request logs of API
responses (:func:`aitco.audit.log.read_log`: a response's ``created`` time and ``usage``; an
OpenAI-compatible server such as vLLM or SGLang answers in this shape). Both become hourly or
coarser buckets (:class:`aitco.calibrate.served_load.ServedAccumulator`).

Counted as served: successful responses with a usage object. Failed calls and calls without
usage are counted apart; a malformed line is skipped and counted with its line number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aitco.audit.audit import _json_document
from aitco.audit.exports import USAGE_RESULT, UsageTotals
from aitco.audit.log import LineStats, UsageRecord, read_log
from aitco.calibrate.parsers.base import ParseResult, SkipLog
from aitco.calibrate.served_load import ServedAccumulator
from aitco.errors import ParseError


def _add_page(acc: ServedAccumulator, page: dict[str, Any], line_no: int, skip: SkipLog) -> None:
    """Add the usage results of one Usage API page (or bucket) to ``acc``."""
    buckets = page.get("data") if page.get("object") == "page" else [page]
    if not isinstance(buckets, list):
        skip.add(line_no, "a page whose data is not a list of buckets")
        return
    for b in buckets:
        span = _bucket_span(b)
        results = b.get("results") if isinstance(b, dict) else None
        if span is None or not isinstance(results, list):
            skip.add(line_no, "a bucket without start_time < end_time and results")
            continue
        for r in results:
            if not isinstance(r, dict) or r.get("object") != USAGE_RESULT:
                continue  # Costs API results and other objects carry no load
            t = UsageTotals()
            try:
                t.add(r)
            except ValueError as exc:
                skip.add(line_no, f"usage result with a bad count ({exc})")
                continue
            acc.add_bucket(*span, t.num_model_requests, t.input_tokens, t.output_tokens)
            acc.count_model(r.get("model"), t.num_model_requests)


def _bucket_span(b: Any) -> tuple[int, int] | None:
    """Return a bucket's ``(start_time, end_time)`` in Unix seconds, or None when unreadable."""
    if not isinstance(b, dict):
        return None
    start, end = b.get("start_time"), b.get("end_time")
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    if isinstance(start, bool) or isinstance(end, bool) or end <= start:
        return None
    return start, end


def _add_response(acc: ServedAccumulator, rec: UsageRecord) -> None:
    if rec.failed:
        acc.failed += 1
    elif not rec.has_usage:
        acc.unbilled += 1
    else:
        acc.add_request(rec.created_s, rec.prompt_tokens, rec.output_tokens, rec.model)


def read_served(path: str | Path) -> ParseResult:
    """Read what a service served from a usage export or a request log.

    Parameters
    ----------
    path : str or pathlib.Path
        JSONL (Usage API pages, API responses, or both, one per line; ``.gz`` read on the fly)
        or a ``.json`` file of Usage API pages.

    Returns
    -------
    ParseResult
        Kind :data:`aitco.calibrate.served_load.SERVED_KIND`; one record per time bucket
        (``start_s``, ``end_s``, ``requests``, ``input_tokens``, ``output_tokens``).

    Raises
    ------
    aitco.errors.ParseError
        If the file holds no served request.
    """
    p = Path(path)
    stats = LineStats()
    acc = ServedAccumulator()
    skip = SkipLog()
    doc = _json_document(p, stats)
    for line_no, item in doc if doc is not None else read_log(p, stats):
        if isinstance(item, dict):
            _add_page(acc, item, line_no, skip)
        else:
            _add_response(acc, item)
    for n, why in stats.malformed_lines:
        skip.add(n, why)
    skip.count += stats.malformed - len(stats.malformed_lines)
    res = acc.result(str(p), lines_read=stats.lines, lines_ignored=stats.blank, skipped=skip)
    if not res.records and not acc.untimed:
        raise ParseError(
            str(p),
            "no served request: expected OpenAI Usage API pages (organization.usage.completions"
            ".result) or API responses with usage, one per line",
        )
    if acc.sources == {"usage_api", "request_log"}:
        res.meta["warning"] = (
            "the file holds usage-export buckets and request lines: both are counted (remove "
            "one if they describe the same traffic)"
        )
    return res

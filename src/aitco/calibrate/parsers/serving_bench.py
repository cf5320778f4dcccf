"""Serving benchmark results of vLLM and SGLang (JSON, JSONL or the console summary).

vLLM ``benchmark_serving.py`` / ``vllm bench serve`` and SGLang ``bench_serving`` results are read
as JSON, JSONL (``--append-result``, ``--output-file``) or the console summary block.

Every run becomes one record with normalised keys (units in the names): ``backend``, ``model``,
``completed``, ``failed``, ``duration_s``, ``request_rate``, ``max_concurrency``,
``total_input_tokens``, ``total_output_tokens``, ``request_throughput`` [req/s],
``output_throughput`` and ``total_token_throughput`` [tok/s], and
``{mean,median,std,p99,...}_{ttft,tpot,itl,e2el}_ms``; energy keys (``gpu_energy_j``,
``gpu_avg_power_w``, ``gpu_energy_per_output_token_j``) when present. vLLM's historical key
typo ``"request_goodput:"`` is read as ``request_goodput``; SGLang's ``e2e_latency`` becomes
``e2el``. Unknown keys are kept under ``extra``. Beside the tool's own names, each record also
carries the glossary names of aitco's estimates (:data:`GLOSSARY_KEYS`: ``requests_per_s``,
``output_tokens_per_s``, ``total_tokens_per_s``, ``ttft_s``, ``tpot_s``, ``e2e_latency_s`` from the
means, ``p50_*``/``p99_*`` from the median/p99 in seconds) so a run lines up with ``aitco infer``.

References
----------
.. [1] vLLM, ``benchmarks/benchmark_serving.py`` and ``vllm/benchmarks/serve.py``,
   https://github.com/vllm-project/vllm
.. [2] SGLang, ``python/sglang/bench_serving.py``, https://github.com/sgl-project/sglang
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_text
from aitco.calibrate.parsers.base import ParseResult, SkipLog, to_float
from aitco.errors import ParseError
from aitco.units import MS_PER_S

_LAT = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|e2e_latency)_ms$")
_NUMERIC = {
    "num_prompts",
    "completed",
    "failed",
    "duration",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "total_input_tokens",
    "total_output_tokens",
    "total_output_tokens_retokenized",
    "request_throughput",
    "request_goodput",
    "input_throughput",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "concurrency",
    "gpu_energy_j",
    "gpu_energy_duration_s",
    "gpu_avg_power_w",
    "gpu_energy_per_output_token_j",
}
_TEXT = {"backend", "model_id", "tokenizer_id", "date", "dataset_name", "endpoint_type", "label"}
#: Labels of the console summary block -> normalised key.
STDOUT_LABELS = {
    "backend": "backend",
    "successful requests": "completed",
    "failed requests": "failed",
    "benchmark duration (s)": "duration",
    "total input tokens": "total_input_tokens",
    "total generated tokens": "total_output_tokens",
    "total generated tokens (retokenized)": "total_output_tokens_retokenized",
    "request throughput (req/s)": "request_throughput",
    "request goodput (req/s)": "request_goodput",
    "input token throughput (tok/s)": "input_throughput",
    "output token throughput (tok/s)": "output_throughput",
    "peak output token throughput (tok/s)": "max_output_tokens_per_s",
    "total token throughput (tok/s)": "total_token_throughput",
    "traffic request rate": "request_rate",
    "maximum request concurrency": "max_concurrency",
    "max request concurrency": "max_concurrency",
    "concurrency": "concurrency",
}
#: Glossary name -> (tool's key, divisor): the same figures under aitco's names and units.
GLOSSARY_KEYS: dict[str, tuple[str, float]] = {
    "requests_per_s": ("request_throughput", 1.0),
    "output_tokens_per_s": ("output_throughput", 1.0),
    "total_tokens_per_s": ("total_token_throughput", 1.0),
    "ttft_s": ("mean_ttft_ms", MS_PER_S),
    "tpot_s": ("mean_tpot_ms", MS_PER_S),
    "e2e_latency_s": ("mean_e2el_ms", MS_PER_S),
    "p50_ttft_s": ("median_ttft_ms", MS_PER_S),
    "p99_ttft_s": ("p99_ttft_ms", MS_PER_S),
    "p50_tpot_s": ("median_tpot_ms", MS_PER_S),
    "p99_tpot_s": ("p99_tpot_ms", MS_PER_S),
    "p50_e2e_latency_s": ("median_e2el_ms", MS_PER_S),
    "p99_e2e_latency_s": ("p99_e2el_ms", MS_PER_S),
}
_STAT = re.compile(
    r"^(mean|median|std|p\d+(?:\.\d+)?)\s+(ttft|tpot|itl|e2el|e2e latency)\s*\(ms\)$", re.IGNORECASE
)


def _norm_key(k: str) -> str:
    k = k.strip().rstrip(":")
    m = _LAT.match(k)
    if m:
        metric = "e2el" if m.group(2) == "e2e_latency" else m.group(2)
        return f"{m.group(1)}_{metric}_ms"
    return k


def normalise_run(obj: dict[str, Any]) -> dict[str, Any]:
    """Normalise one benchmark result object (vLLM or SGLang) to the record keys above."""
    rec: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for raw_k, v in obj.items():
        k = _norm_key(str(raw_k))
        if k in _NUMERIC or (k.endswith("_ms") and _LAT.match(k)):
            if isinstance(v, str) and v.strip().lower() == "inf":
                rec[k] = float("inf")
            elif v is None:
                rec[k] = None
            else:
                x = to_float(v)
                if x is None and not isinstance(v, list):
                    extra[raw_k] = v
                else:
                    rec[k] = x
        elif k in _TEXT:
            rec[k] = v
        elif isinstance(v, list):
            extra[raw_k] = f"<list of {len(v)}>"  # per-request arrays (--save-detailed)
        else:
            extra[raw_k] = v
    if "duration" in rec:
        rec["duration_s"] = rec.pop("duration")
    if "model_id" in rec:
        rec["model"] = rec.pop("model_id")
    elif "model" in extra:
        rec["model"] = extra["model"]
    for name, (key, div) in GLOSSARY_KEYS.items():
        v = rec.get(key)
        if isinstance(v, float):
            rec[name] = v / div
    if extra:
        rec["extra"] = extra
    return rec


def _detect_backend(rec: dict[str, Any], raw: dict[str, Any]) -> str:
    b = str(rec.get("backend") or "").lower()
    if "sglang" in b:
        return "sglang"
    if "vllm" in b or "openai" in b:
        return "vllm"
    if any("e2e_latency" in k for k in raw) or "total_output_tokens_retokenized" in raw:
        return "sglang"
    return "vllm"


def _version(kind: str, raw: dict[str, Any]) -> str:
    if kind == "vllm":
        if "request_goodput:" in raw:
            return "vllm 2025 (request_goodput: key typo)"
        if "gpu_energy_j" in raw:
            return "vllm (with NVML energy)"
        if "endpoint_type" in raw or any(k.endswith("_e2el_ms") for k in raw):
            return "vllm (current keys)"
        return "vllm"
    if "request_throughput" in raw or "mean_ttft_ms" in raw:
        return "sglang (current keys)"
    return "sglang 2024 (subset of keys)"


def parse_serving(path: str | Path, *, kind: str | None = None) -> ParseResult:
    """Parse a vLLM or SGLang serving-benchmark result file.

    Parameters
    ----------
    path : str or pathlib.Path
        JSON (one object), JSONL (one object per run) or the console summary text.
    kind : {"vllm", "sglang"}, optional
        Expected backend; detected from the ``backend`` key otherwise.

    Returns
    -------
    ParseResult
        One record per run; ``summary`` describes the last run (``mean_ttft_ms``,
        ``output_throughput``, ...) plus ``n_runs``.

    Raises
    ------
    aitco.errors.ParseError
        If no benchmark result is found.
    """
    p = Path(path)
    with open_text(p) as fh:
        head = fh.read(8192)
    if head.lstrip().startswith("{"):
        records, raws, skipped, n = _parse_json_lines(p)
        fmt = "json" if n <= 1 else "jsonl"
    else:
        records, raws, skipped, n = _parse_stdout(p)
        fmt = "stdout summary"
    if not records:
        raise ParseError(str(p), "no serving benchmark result found (vLLM/SGLang JSON or summary)")
    detected = _detect_backend(records[-1], raws[-1])
    k = kind or detected
    res = ParseResult(
        kind=k,
        path=str(p),
        format=f"{detected}-bench-serving {fmt}",
        format_version=_version(detected, raws[-1])
        if fmt != "stdout summary"
        else f"{detected} console",
        records=records,
        lines_read=n,
        skipped=skipped,
    )
    last = records[-1]
    res.summary = {key: v for key, v in last.items() if key != "extra"}
    res.summary["n_runs"] = len(records)
    if kind and kind != detected:
        res.meta["warning"] = f"asked for {kind} but the file looks like {detected}"
    return res


def _parse_json_lines(
    p: Path,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], SkipLog, int]:
    skipped = SkipLog()
    with open_text(p) as fh:
        text = fh.read()
    try:
        doc = json.loads(text)
        objs: list[tuple[int, Any]] = (
            [(1, doc)] if isinstance(doc, dict) else list(enumerate(doc, 1))
        )
        n = 1 if isinstance(doc, dict) else len(objs)
    except json.JSONDecodeError:
        objs = []
        n = 0
        for n, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if not s:
                continue
            try:
                objs.append((n, json.loads(s)))
            except json.JSONDecodeError:
                skipped.add(n, "invalid JSON line", s)
    records = []
    raws = []
    for ln, o in objs:
        if not isinstance(o, dict):
            skipped.add(ln, "not a JSON object", str(o))
            continue
        rec = normalise_run(o)
        if not any(
            k in rec for k in ("completed", "output_throughput", "mean_ttft_ms", "median_ttft_ms")
        ):
            skipped.add(ln, "object has no benchmark result keys", json.dumps(o)[:120])
            continue
        records.append(rec)
        raws.append(o)
    return records, raws, skipped, n


def _parse_stdout(p: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], SkipLog, int]:
    skipped = SkipLog()
    records: list[dict[str, Any]] = []
    raws: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    pre: dict[str, Any] = {}
    n = 0
    with open_text(p) as fh:
        for n, line in enumerate(fh, 1):
            s = line.strip()
            if "Serving Benchmark Result" in s:
                cur = dict(pre)
                pre = {}
                continue
            if s.startswith("=====") and cur is not None:
                records.append(normalise_run(cur))
                raws.append(cur)
                cur = None
                continue
            if ":" not in s or s.startswith("-"):
                continue
            label, _, val = s.rpartition(":") if s.count(":") > 1 else s.partition(":")
            label = label.strip()
            val = val.strip()
            key = STDOUT_LABELS.get(label.lower())
            if key is None and (m := _STAT.match(label)):
                metric = "e2el" if m.group(2).lower() == "e2e latency" else m.group(2).lower()
                key = f"{m.group(1).lower()}_{metric}_ms"
            if key is None:
                continue
            target = cur if cur is not None else pre
            if key == "backend":
                target[key] = val
                continue
            x = to_float(val.split()[0]) if val else None
            if x is None and val.lower() not in ("none", "inf", "n/a"):
                skipped.add(n, f"value of '{label}' is not a number", s)
                continue
            target[key] = "inf" if val.lower() == "inf" else x
    if cur:  # summary block without the closing rule
        records.append(normalise_run(cur))
        raws.append(cur)
    return records, raws, skipped, n

"""Detect the format of a log or export from its first bytes (headers and labels).

``detect_kind(path)`` returns one of :data:`KINDS`; :func:`parse_any` dispatches to the parser.
Detection reads at most :data:`SNIFF_BYTES` from the start of the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_binary
from aitco.calibrate.parsers.base import ParseResult
from aitco.calibrate.parsers.codecarbon import parse_codecarbon
from aitco.calibrate.parsers.dcgm import parse_dcgm
from aitco.calibrate.parsers.focus import parse_focus
from aitco.calibrate.parsers.kineto import parse_kineto
from aitco.calibrate.parsers.nccl_tests import parse_nccl
from aitco.calibrate.parsers.nvidia_smi import parse_nvidia_smi
from aitco.calibrate.parsers.serving_bench import parse_serving
from aitco.calibrate.parsers.train_log import parse_train_log
from aitco.errors import InputError, ParseError

#: Bytes read from the start of a file to detect its format.
SNIFF_BYTES = 65536

#: Kinds accepted by ``aitco ingest``.
KINDS = (
    "nccl",
    "dcgm",
    "nvidia-smi",
    "trainlog",
    "vllm",
    "sglang",
    "focus",
    "codecarbon",
    "kineto",
)

PARSERS: dict[str, Callable[..., ParseResult]] = {
    "nccl": parse_nccl,
    "dcgm": parse_dcgm,
    "nvidia-smi": parse_nvidia_smi,
    "trainlog": parse_train_log,
    "vllm": lambda path, **kw: parse_serving(path, kind="vllm", **kw),
    "sglang": lambda path, **kw: parse_serving(path, kind="sglang", **kw),
    "focus": parse_focus,
    "codecarbon": parse_codecarbon,
    "kineto": parse_kineto,
}


def _head(p: Path) -> tuple[bytes, str]:
    try:
        with open_binary(p) as fh:  # a regular file only: a FIFO is refused, not waited on
            raw = fh.read(SNIFF_BYTES)
    except OSError as exc:
        raise ParseError(str(p), f"cannot read ({exc})") from exc
    return raw, raw.decode("utf-8", errors="replace")


def _json_kind(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    keys = set(obj)
    if "traceEvents" in keys:
        return "kineto"
    if "results" in keys and ("nccl_version" in keys or "average_bus_bandwidth" in keys):
        return "nccl"
    if "log_history" in keys or "train_runtime" in keys:
        return "trainlog"
    if (
        any("ttft" in k or "e2e_latency" in k or "e2el" in k for k in keys)
        or "output_throughput" in keys
    ):
        backend = str(obj.get("backend", "")).lower()
        if "sglang" in backend or "total_output_tokens_retokenized" in keys:
            return "sglang"
        return "vllm"
    step_keys = {
        "step_time_ms",
        "step_time_s",
        "tokens_per_s_per_gpu",
        "throughput(tps)",
        "mfu",
        "tflops",
    }
    if keys & step_keys:
        return "trainlog"
    return None


def detect_kind(path: str | Path) -> str:
    """Return the parser kind for ``path`` from its header or labels.

    Raises
    ------
    aitco.errors.ParseError
        If the format is not recognised.
    """
    p = Path(path)
    raw, text = _head(p)
    if raw[:4] == b"PAR1":
        return "focus"
    s = text.lstrip("\ufeff").lstrip()
    first = s.split("\n", 1)[0]
    if s.startswith("{") or s.startswith("["):
        try:
            obj = json.loads(s) if len(raw) < SNIFF_BYTES else None
        except json.JSONDecodeError:
            obj = None
        if obj is None:
            try:
                obj = json.loads(first)
            except json.JSONDecodeError:
                obj = None
        if isinstance(obj, list) and obj:
            obj = obj[0]
        kind = _json_kind(obj)
        if kind:
            return kind
        if '"traceEvents"' in s[:SNIFF_BYTES]:
            return "kineto"
    if "#Entity" in first or s.startswith("#Entity"):
        return "dcgm"
    if re.search(r"^(?:# (?:HELP|TYPE) )?DCGM_FI_\w+", s, re.M):
        return "dcgm"  # dcgm-exporter Prometheus text
    if (
        "# nThread" in text
        or "out-of-place" in text
        or "nccl-tests version" in text
        or ("busbw" in text and "algbw" in text)
    ):
        return "nccl"
    if "BilledCost" in first and "ChargePeriodStart" in first:
        return "focus"
    if "energy_consumed" in first and "duration" in first:
        return "codecarbon"
    if (
        "power.draw" in first
        or "utilization.gpu" in first
        or (first.startswith("index,") or (first.startswith("timestamp,") and "[" in first))
    ):
        return "nvidia-smi"
    if "Serving Benchmark Result" in text:
        return "sglang" if "sglang" in text.lower() and "backend:" in text.lower() else "vllm"
    if (
        "elapsed time per iteration" in text
        or "SamplesPerSec=" in text
        or ("step:" in text and "loss:" in text)
        or "samples/sec:" in text
    ):
        return "trainlog"
    raise ParseError(
        str(p),
        "format not recognised (give the kind explicitly: " + ", ".join(KINDS) + ")",
    )


def parse_any(path: str | Path, kind: str = "auto", **kwargs: Any) -> ParseResult:
    """Parse ``path`` with the parser for ``kind`` (``"auto"`` detects it)."""
    if kind == "auto":
        kind = detect_kind(path)
    fn = PARSERS.get(kind)
    if fn is None:
        raise InputError("KIND", kind, "one of auto, " + ", ".join(KINDS))
    return fn(path, **kwargs)

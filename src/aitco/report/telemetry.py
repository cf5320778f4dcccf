"""Utilisation and idle time per device, from telemetry parsed by :mod:`aitco.calibrate.parsers`.

``aitco report --telemetry FILE`` reads DCGM (``dcgmi dmon``) or ``nvidia-smi --query-gpu`` CSV
through :func:`aitco.calibrate.parsers.detect.parse_any` and draws what the parser measured: per
device, the time-weighted mean utilisation, the busy share (time at or above the idle
threshold) and the peak utilisation. The parsers aggregate in constant memory and keep no
time series, so the heatmap's columns are these measures, not time bins; a parser that adds a
``timeline`` (device -> utilisation per time bin) to its summary gets a device x time heatmap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aitco.calibrate.parsers.detect import parse_any
from aitco.errors import InputError
from aitco.units import PERCENT

#: Telemetry kinds that carry utilisation.
TELEMETRY_KINDS: tuple[str, ...] = ("dcgm", "nvidia-smi")
#: Utilisation field of each kind (percent) for the peak column.
PEAK_FIELDS: tuple[tuple[str, str], ...] = (("GPUTL", "%"), ("utilization.gpu", "%"))


def utilisation_from_summary(summary: dict[str, Any], source: str) -> dict[str, Any]:
    """Turn a telemetry parser's summary into the heatmap data of a report.

    Parameters
    ----------
    summary : dict
        ``ParseResult.summary`` of the DCGM or nvidia-smi parser.
    source : str
        File name shown in the caption.

    Returns
    -------
    dict
        ``matrix`` (devices x columns, fractions, NaN where unmeasured), ``devices``, ``times``
        (column labels), ``idle_threshold``, ``idle_fraction``, ``source``.
    """
    devices = summary.get("devices") or {}
    threshold = float(summary.get("idle_threshold", 0.3))
    timeline = summary.get("timeline")
    if isinstance(timeline, dict) and timeline:
        names = list(timeline)
        width = max(len(v) for v in timeline.values())
        matrix = [
            [*map(float, timeline[n]), *([math.nan] * (width - len(timeline[n])))] for n in names
        ]
        times = [str(i) for i in range(width)]
    else:
        names = list(devices)
        times = ["mean utilisation", f"busy share (>= {threshold:.0%})", "peak utilisation"]
        matrix = []
        for n in names:
            d = devices[n]
            mean = d.get("mean_utilization")
            idle_s, time_s = d.get("idle_time_s"), d.get("time_s")
            busy = 1.0 - idle_s / time_s if idle_s is not None and time_s else None
            peak = None
            for f, _unit in PEAK_FIELDS:
                st = (d.get("fields") or {}).get(f)
                if st and st.get("max") is not None:
                    peak = st["max"] / PERCENT
                    break
            matrix.append([math.nan if v is None else float(v) for v in (mean, busy, peak)])
    if not names:
        raise InputError("--telemetry", source, "telemetry with at least one device")
    if all(all(not math.isfinite(x) for x in row) for row in matrix):
        raise InputError(
            "--telemetry", source, "telemetry with a utilisation field (GPUTL or utilization.gpu)"
        )
    return {
        "matrix": matrix,
        "devices": names,
        "times": times,
        "idle_threshold": threshold,
        "idle_fraction": summary.get("idle_fraction"),
        "source": source,
    }


def utilisation_from_files(paths: Sequence[str | Path]) -> dict[str, Any]:
    """Parse telemetry files and stack their devices into one heatmap (file:device rows)."""
    parts = []
    for p in paths:
        res = parse_any(p)
        if res.kind not in TELEMETRY_KINDS:
            raise InputError(
                "--telemetry",
                str(p),
                f"a telemetry file ({', '.join(TELEMETRY_KINDS)})",
                hint=f"detected {res.kind}",
            )
        parts.append(utilisation_from_summary(res.summary, Path(p).name))
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    if any(u["times"] != first["times"] for u in parts):
        raise InputError("--telemetry", [str(p) for p in paths], "files with the same columns")
    return {
        "matrix": [row for u in parts for row in u["matrix"]],
        "devices": [f"{u['source']}:{d}" for u in parts for d in u["devices"]],
        "times": first["times"],
        "idle_threshold": first["idle_threshold"],
        "idle_fraction": None,
        "source": ", ".join(u["source"] for u in parts),
    }

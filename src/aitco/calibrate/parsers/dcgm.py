"""DCGM ``dcgmi dmon`` text output, streamed line by line in constant memory.

Layout (``dcgmi/DeviceMonitor.cpp``): a header ``#Entity  <short names...>``, a units line
``ID  <units...>`` (units aligned under their columns, empty where a field has none), then one
row per entity and sample: ``GPU 0  <values...>`` (the entity is two tokens). The two header lines
are re-printed every 14 rounds; ``N/A`` marks a missing value. The text has no timestamps, so
each sample stands for the sampling interval (``-d``, 1 s by default).

Fields are found by their short names: ``POWER``/``POWINST`` (board power, W), ``TOTEC``
(energy counter since boot, mJ), ``GPUTL`` (utilisation, %), ``GRACT``/``SMACT`` (profiling
activity, 0-1). Energy comes from ``TOTEC`` where present (resets handled), otherwise from
integrating power over time.

References
----------
.. [1] NVIDIA DCGM, ``dcgmi/DeviceMonitor.cpp`` and the field list ``dcgm_fields.h``,
   https://github.com/NVIDIA/DCGM
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_text
from aitco.calibrate.parsers._telemetry import (
    DEFAULT_IDLE_THRESHOLD,
    MJ_PER_J,
    TelemetryAggregator,
    add_si_fields,
)
from aitco.calibrate.parsers.base import ParseResult, SkipLog
from aitco.errors import ParseError
from aitco.units import PERCENT, ms_to_s  # GPUTL is a percentage

INF = float("inf")
#: Default ``dcgmi dmon -d`` sampling interval. [s]
DEFAULT_INTERVAL_S = 1.0

#: Short names of board power fields, in order of preference.
POWER_FIELDS = ("POWER", "POWINST", "PWR")
#: Short names of the energy counter field (mJ).
ENERGY_FIELDS = ("TOTEC",)
#: Utilisation fields: (name, divisor to a 0-1 fraction), in order of preference.
UTIL_FIELDS = (("GPUTL", PERCENT), ("GRACT", 1.0), ("SMACT", 1.0))
#: Units DCGM prints for fields whose units line may be missing.
KNOWN_UNITS = {"POWER": "W", "POWINST": "W", "TOTEC": "mJ", "TMPTR": "C", "MMTMP": "C"}
#: Units of fields that ``dcgmi dmon`` prints without one (its units line is blank for them), for
#: the SI statistics only (``fields_si``): utilisations in percent, frame buffer in MiB, clocks
#: in MHz. Source: NVIDIA DCGM field identifiers
#: (https://docs.nvidia.com/datacenter/dcgm/latest/dcgm-api/dcgm-api-field-ids.html) and the
#: dcgm-exporter counter descriptions (https://github.com/NVIDIA/dcgm-exporter, file
#: ``etc/default-counters.csv``: "GPU utilization (in %)", "Framebuffer memory used (in MiB)"),
#: retrieved 2026-12-02.
UNPRINTED_UNITS = {
    "GPUTL": "%",
    "MCUTL": "%",
    "FBUSD": "MiB",
    "FBFRE": "MiB",
    "SMCLK": "MHz",
    "MMCLK": "MHz",
}
#: Entity types that start a data row.
ENTITY_TYPES = ("GPU", "GPU-I", "GPU-CI", "Switch", "NvSwitch", "Link", "CPU", "Core", "CX", "VGPU")


def _units(units_line: str, header_line: str, fields: list[str]) -> dict[str, str]:
    """Units by column: each unit belongs to the header field whose column it falls in."""
    starts = []
    pos = header_line.index("#Entity") + len("#Entity")
    for f in fields:
        pos = header_line.index(f, pos)
        starts.append(pos)
        pos += len(f)
    out: dict[str, str] = {f: KNOWN_UNITS.get(f, "") for f in fields}
    toks = units_line.split()
    if not toks or toks[0] != "ID":
        return out
    search = units_line.index("ID") + 2
    for tok in toks[1:]:
        at = units_line.index(tok, search)
        search = at + len(tok)
        col = max((j for j, s in enumerate(starts) if s <= at + len(tok) - 1), default=None)
        if col is not None:
            out[fields[col]] = tok
    return out


def parse_dcgm(
    path: str | Path,
    *,
    interval_s: float = DEFAULT_INTERVAL_S,
    idle_threshold: float = DEFAULT_IDLE_THRESHOLD,
) -> ParseResult:
    """Parse ``dcgmi dmon`` output into per-device aggregates.

    Parameters
    ----------
    path : str or pathlib.Path
        The captured stdout (optionally ``.gz``).
    interval_s : float
        Sampling interval the capture used (``-d`` in ms / 1000). [s]
    idle_threshold : float
        Utilisation below which a sample counts as idle. [0-1]

    Returns
    -------
    ParseResult
        ``records`` is empty (telemetry is aggregated); ``summary`` has ``n_devices``,
        ``samples``, ``gpu_hours``, ``energy_j``, ``energy_source``, ``mean_power_w``,
        ``idle_fraction``, ``idle_gpu_hours`` and per-device field statistics (mean/min/max).

    Raises
    ------
    aitco.errors.ParseError
        If no ``#Entity`` header or no data row is found.
    """
    p = Path(path)
    with open_text(p) as fh:
        head = fh.read(4096)
    if _PROM_HINT.search(head) and "#Entity" not in head:
        return _parse_exporter(p, interval_s=interval_s, idle_threshold=idle_threshold)
    agg = TelemetryAggregator(idle_threshold)
    skipped = SkipLog()
    fields: list[str] | None = None
    header_line = ""
    units: dict[str, str] = {}
    expect_units = False
    headers = 0
    ignored = 0
    n = 0
    power_f = energy_f = None
    util_f: tuple[str, float] | None = None
    with open_text(p) as fh:
        for n, raw in enumerate(fh, 1):
            line = raw.rstrip("\r\n")
            if expect_units:
                expect_units = False
                if line.lstrip().startswith("ID"):
                    units = _units(line, header_line, fields or [])
                    continue
            toks = line.split()
            if not toks:
                continue
            if toks[0] == "#Entity":
                new = toks[1:]
                if new != fields:
                    fields = new
                    units = {f: KNOWN_UNITS.get(f, "") for f in fields}
                    power_f = next((f for f in POWER_FIELDS if f in fields), None)
                    energy_f = next((f for f in ENERGY_FIELDS if f in fields), None)
                    util_f = next(((f, d) for f, d in UTIL_FIELDS if f in fields), None)
                header_line = line
                expect_units = True
                headers += 1
                continue
            if toks[0] not in ENTITY_TYPES:
                ignored += 1
                continue
            if fields is None:
                skipped.add(n, "data row before any #Entity header", line)
                continue
            if len(toks) != len(fields) + 2 or not toks[1].isdecimal():
                skipped.add(n, f"expected {len(fields) + 2} tokens, got {len(toks)}", line)
                continue
            vals: dict[str, float] = {}
            bad = False
            for f, tok in zip(fields, toks[2:], strict=True):
                if tok == "N/A":
                    continue
                try:
                    x = float(tok)  # fast path; NaN and inf fail the range check below
                except ValueError:
                    bad = True
                    break
                if not -INF < x < INF:
                    bad = True
                    break
                vals[f] = x
            if bad:
                skipped.add(n, "non-numeric value", line)
                continue
            util = vals.get(util_f[0]) if util_f else None
            agg.add(
                f"{toks[0]} {toks[1]}",
                interval_s,
                vals,
                power_w=vals.get(power_f) if power_f else None,
                util=util / util_f[1] if util is not None and util_f else None,
                energy_counter_j=vals[energy_f] / MJ_PER_J
                if energy_f and energy_f in vals
                else None,
            )
    if fields is None:
        raise ParseError(str(p), "no '#Entity' header found: not dcgmi dmon output")
    if not agg.devices:
        raise ParseError(str(p), "dcgmi dmon header found but no data rows")
    summary: dict[str, Any] = agg.summary()
    add_si_fields(summary, {**UNPRINTED_UNITS, **{f: u for f, u in units.items() if u}})
    summary["fields"] = fields
    summary["units"] = units
    summary["interval_s"] = interval_s
    return ParseResult(
        kind="dcgm",
        path=str(p),
        format="dcgmi-dmon",
        format_version="dmon text (units line)" if any(units.values()) else "dmon text (no units)",
        summary=summary,
        lines_read=n,
        lines_ignored=ignored,
        skipped=skipped,
        meta={"headers_seen": headers},
    )


# --------------------------------------------------------------------------- dcgm-exporter
#: dcgm-exporter (Prometheus) metric names -> dmon short names used above.
EXPORTER_METRICS = {
    "DCGM_FI_DEV_POWER_USAGE": "POWER",
    "DCGM_FI_DEV_BOARD_POWER_WATTS": "POWER",
    "DCGM_FI_DEV_POWER_USAGE_INSTANT": "POWINST",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "TOTEC",
    "DCGM_FI_DEV_GPU_UTIL": "GPUTL",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "MCUTL",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "GRACT",
    "DCGM_FI_PROF_SM_ACTIVE": "SMACT",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "TENSO",
    "DCGM_FI_PROF_DRAM_ACTIVE": "DRAMA",
    "DCGM_FI_DEV_GPU_TEMP": "TMPTR",
    "DCGM_FI_DEV_FB_USED": "FBUSD",
}
_PROM_HINT = re.compile(r"^(?:# (?:HELP|TYPE) )?DCGM_FI_\w+", re.M)
_PROM_LINE = re.compile(r"^(DCGM_FI_\w+)(?:\{([^}]*)\})?\s+(\S+)(?:\s+(\d+))?\s*$")
_PROM_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _parse_exporter(p: Path, *, interval_s: float, idle_threshold: float) -> ParseResult:
    """Parse dcgm-exporter Prometheus text (one or more scrapes, optional ms timestamps).

    A device's sample is complete when one of its metrics repeats (the next scrape begins).
    """
    agg = TelemetryAggregator(idle_threshold)
    skipped = SkipLog()
    pending: dict[str, dict[str, float]] = {}
    pending_t: dict[str, float | None] = {}
    last_gap: dict[str, float] = {}
    seen: set[str] = set()
    n = ignored = 0

    def flush(dev: str, dt_s: float) -> None:
        vals = pending.pop(dev)
        pending_t.pop(dev, None)
        util = vals.get("GPUTL")
        agg.add(
            dev,
            dt_s,
            vals,
            power_w=vals.get("POWER", vals.get("POWINST")),
            util=util / PERCENT if util is not None else vals.get("GRACT"),
            energy_counter_j=vals["TOTEC"] / MJ_PER_J if "TOTEC" in vals else None,
        )

    with open_text(p) as fh:
        for n, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            m = _PROM_LINE.match(line)
            if not m:
                skipped.add(n, "not a Prometheus sample line", line)
                continue
            name = EXPORTER_METRICS.get(m.group(1))
            if name is None:
                ignored += 1
                continue
            try:
                x = float(m.group(3))
            except ValueError:
                skipped.add(n, "sample value is not a number", line)
                continue
            if not -INF < x < INF:
                skipped.add(n, "sample value is not finite", line)
                continue
            labels = dict(_PROM_LABEL.findall(m.group(2) or ""))
            gpu = labels.get("gpu", labels.get("device", "0"))
            host = labels.get("Hostname", labels.get("hostname", ""))
            dev = f"{host} GPU {gpu}" if host else f"GPU {gpu}"
            t = ms_to_s(int(m.group(4))) if m.group(4) else None  # Prometheus stamps are ms
            if dev in pending and name in pending[dev]:  # next scrape: close the previous sample
                t0 = pending_t.get(dev)
                gap = t - t0 if t is not None and t0 is not None else None
                if gap is not None and gap > 0:
                    last_gap[dev] = gap
                flush(dev, gap if gap is not None and gap > 0 else interval_s)
            pending.setdefault(dev, {})[name] = x
            pending_t.setdefault(dev, t)
            seen.add(name)
    for dev in list(pending):
        flush(dev, last_gap.get(dev, interval_s))
    if not agg.devices:
        raise ParseError(str(p), "no DCGM metrics found (dcgm-exporter / Prometheus text)")
    summary: dict[str, Any] = agg.summary()
    add_si_fields(summary, {**UNPRINTED_UNITS, **KNOWN_UNITS})
    summary["fields"] = sorted(seen)
    summary["units"] = {f: KNOWN_UNITS.get(f, "") for f in sorted(seen)}
    summary["interval_s"] = interval_s
    return ParseResult(
        kind="dcgm",
        path=str(p),
        format="dcgm-exporter",
        format_version="Prometheus text exposition",
        summary=summary,
        lines_read=n,
        lines_ignored=ignored,
        skipped=skipped,
    )

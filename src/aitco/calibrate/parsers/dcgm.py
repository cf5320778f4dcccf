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

from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_text
from aitco.calibrate.parsers._telemetry import DEFAULT_IDLE_THRESHOLD, MJ_PER_J, TelemetryAggregator
from aitco.calibrate.parsers.base import ParseResult, SkipLog
from aitco.errors import ParseError

INF = float("inf")
#: Default ``dcgmi dmon -d`` sampling interval. [s]
DEFAULT_INTERVAL_S = 1.0
#: Percent per unit fraction (``GPUTL`` is a percentage).
PERCENT = 100.0

#: Short names of board power fields, in order of preference.
POWER_FIELDS = ("POWER", "POWINST", "PWR")
#: Short names of the energy counter field (mJ).
ENERGY_FIELDS = ("TOTEC",)
#: Utilisation fields: (name, divisor to a 0-1 fraction), in order of preference.
UTIL_FIELDS = (("GPUTL", PERCENT), ("GRACT", 1.0), ("SMACT", 1.0))
#: Units DCGM prints for fields whose units line may be missing.
KNOWN_UNITS = {"POWER": "W", "POWINST": "W", "TOTEC": "mJ", "TMPTR": "C", "MMTMP": "C"}
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
        ``samples``, ``device_hours``, ``energy_j``, ``energy_source``, ``mean_power_w``,
        ``idle_fraction``, ``idle_device_hours`` and per-device field statistics (mean/min/max).

    Raises
    ------
    aitco.errors.ParseError
        If no ``#Entity`` header or no data row is found.
    """
    p = Path(path)
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

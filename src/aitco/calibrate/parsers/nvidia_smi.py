"""``nvidia-smi --query-gpu=... --format=csv`` output, streamed row by row in constant memory.

Columns are found by their query names in the header (``index, power.draw [W], timestamp``);
the bracketed unit is recorded. Values may carry units (``16.48 W``, ``0 %``, ``40960 MiB``) or
not (``nounits``); ``[N/A]`` and ``[Not Supported]`` are missing values. ``-l``/``-lms`` loops
print one row per GPU per tick, so rows are grouped per GPU and the time a sample stands for is
the gap to that GPU's previous timestamp; where timestamps do not increase (the fixture repeats
one timestamp) each sample stands for ``interval_s``. A file written with ``noheader`` needs
``columns=`` (the ``--query-gpu`` list).

References
----------
.. [1] NVIDIA, ``nvidia-smi --help-query-gpu`` (field names), and the System Management
   Interface documentation, which warns that the output is not guaranteed to stay compatible.
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_text
from aitco.calibrate.parsers._telemetry import (
    DEFAULT_IDLE_THRESHOLD,
    TelemetryAggregator,
    add_si_fields,
)
from aitco.calibrate.parsers.base import ParseResult, SkipLog, to_float
from aitco.errors import ParseError
from aitco.units import PERCENT, SECONDS_PER_HOUR  # utilization.gpu is a percentage

INF = float("inf")
#: Default loop interval (``-l 1``) used when timestamps do not advance. [s]
DEFAULT_INTERVAL_S = 1.0
#: Gaps longer than this between two samples of one GPU are treated as a capture break. [s]
MAX_GAP_S = SECONDS_PER_HOUR
#: Power columns, in order of preference (newer drivers add ``.average`` / ``.instant``).
POWER_COLUMNS = ("power.draw", "power.draw.average", "power.draw.instant")
#: Columns that identify a GPU, in order of preference.
ID_COLUMNS = ("index", "uuid", "pci.bus_id", "gpu_uuid", "gpu_bus_id")
UTIL_COLUMN = "utilization.gpu"
#: Columns holding text, not numbers.
TEXT_COLUMNS = frozenset(
    {
        "timestamp",
        "name",
        "uuid",
        "pci.bus_id",
        "driver_version",
        "serial",
        "index",
        "vbios_version",
        "gpu_name",
        "gpu_uuid",
        "gpu_bus_id",
        "pstate",
        "compute_mode",
        "persistence_mode",
    }
)
_MISSING = {"[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]", ""}
_TS_FORMATS = (
    "%Y/%m/%d %H:%M:%S.%f",
    "%Y/%m/%d %H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S.%f",
)


def _split_header(name: str) -> tuple[str, str]:
    name = name.strip()
    if name.endswith("]") and " [" in name:
        base, unit = name[:-1].split(" [", 1)
        return base.strip(), unit.strip()
    return name, ""


def _parse_ts(s: str) -> float | None:
    for fmt in _TS_FORMATS:
        try:
            return dt.datetime.strptime(s, fmt).timestamp()
        except ValueError:
            continue
    return None


def parse_nvidia_smi(
    path: str | Path,
    *,
    columns: list[str] | None = None,
    interval_s: float = DEFAULT_INTERVAL_S,
    idle_threshold: float = DEFAULT_IDLE_THRESHOLD,
) -> ParseResult:
    """Parse an ``nvidia-smi --query-gpu --format=csv`` capture into per-GPU aggregates.

    Parameters
    ----------
    path : str or pathlib.Path
        The CSV (optionally ``.gz``).
    columns : list of str, optional
        Query field names, for files written with ``noheader``.
    interval_s : float
        Sampling interval, used where timestamps do not advance. [s]
    idle_threshold : float
        Utilisation below which a sample counts as idle. [0-1]

    Returns
    -------
    ParseResult
        ``summary`` as for DCGM: ``n_devices``, ``samples``, ``gpu_hours``, ``energy_j``
        (integrated power), ``mean_power_w``, ``idle_fraction``, per-GPU field statistics, plus
        ``columns``/``units`` and ``timestamps_increasing``.

    Raises
    ------
    aitco.errors.ParseError
        If no header (and no ``columns``) or no data row is found.
    """
    p = Path(path)
    agg = TelemetryAggregator(idle_threshold)
    skipped = SkipLog()
    n = 0
    ignored = 0
    names: list[str] | None = None
    units: dict[str, str] = {}
    version = "csv"
    if columns:
        names = [c.strip() for c in columns]
        version = "csv noheader"
    pending: dict[str, tuple[float | None, _Sample]] = {}
    last_gap: dict[str, float] = {}
    ts_cache: tuple[str, float | None] = ("", None)
    non_increasing = 0
    idx_col = pow_col = util_col = ts_col = None
    header_raw: list[str] | None = None
    numeric_cols: list[tuple[int, str]] = []
    with open_text(p) as fh:
        reader = csv.reader(fh, skipinitialspace=True)
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                n = reader.line_num
                skipped.add(n, f"CSV error: {exc}")
                continue
            n = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if names is None:
                parsed = [_split_header(c) for c in row]
                names = [a for a, _ in parsed]
                units = {a: u for a, u in parsed}
                header_raw = [c.strip() for c in row]
                if _looks_data(row) or not any(
                    "." in a or a in ID_COLUMNS or a == "timestamp" for a in names
                ):
                    raise ParseError(
                        str(p),
                        "no nvidia-smi header row (pass columns= for a noheader capture)",
                        line=n,
                    )
                version = "csv (units in values)" if any(units.values()) else "csv nounits"
                continue
            if header_raw is not None and [c.strip() for c in row] == header_raw:
                continue  # the header repeated (several captures concatenated)
            if idx_col is None:
                idx_col = next((names.index(c) for c in ID_COLUMNS if c in names), -1)
                pow_col = next((names.index(c) for c in POWER_COLUMNS if c in names), -1)
                util_col = names.index(UTIL_COLUMN) if UTIL_COLUMN in names else -1
                ts_col = names.index("timestamp") if "timestamp" in names else -1
                numeric_cols = [(i, c) for i, c in enumerate(names) if c not in TEXT_COLUMNS]
            if len(row) != len(names):
                skipped.add(n, f"expected {len(names)} fields, got {len(row)}", ",".join(row))
                continue
            vals: dict[str, float] = {}
            bad = False
            for i, c in numeric_cols:
                cell = row[i].strip()
                if cell in _MISSING:
                    continue
                head, _, rest = cell.partition(" ")
                try:
                    x: float | None = float(head)
                except ValueError:
                    x = None
                if (
                    x is None
                    or not -INF < x < INF
                    or (rest and not (rest.isalpha() or rest == "%"))
                ):
                    x = to_float(cell)  # slow path: separators, odd units
                if x is None:
                    bad = True
                    break
                vals[c] = x
            if bad:
                skipped.add(n, "non-numeric value in a numeric column", ",".join(row))
                continue
            dev = row[idx_col].strip() if idx_col is not None and idx_col >= 0 else "0"
            dev = f"GPU {dev}" if dev.isdecimal() else dev
            util = vals.get(UTIL_COLUMN) if util_col is not None and util_col >= 0 else None
            sample = (
                vals,
                vals.get(names[pow_col]) if pow_col is not None and pow_col >= 0 else None,
                util / PERCENT if util is not None else None,
            )
            t: float | None = None
            if ts_col is not None and ts_col >= 0:
                ts = row[ts_col].strip()
                if ts != ts_cache[0]:
                    ts_cache = (ts, _parse_ts(ts))
                t = ts_cache[1]
                if t is None:
                    skipped.add(n, "unreadable timestamp", ",".join(row))
                    continue
            # left-rectangle rule: a sample stands for the gap to the same GPU's next sample,
            # so it is added when that next sample arrives (one pending sample per GPU)
            prev = pending.get(dev)
            if prev is not None:
                gap = t - prev[0] if t is not None and prev[0] is not None else None
                if gap is not None and 0 < gap <= MAX_GAP_S:
                    last_gap[dev] = gap
                    dt_s = gap
                else:
                    if t is not None:
                        non_increasing += 1
                    dt_s = interval_s
                _flush(agg, dev, dt_s, prev[1])
            pending[dev] = (t, sample)
    for dev, (_, sample) in pending.items():
        _flush(agg, dev, last_gap.get(dev, interval_s), sample)
    if names is None:
        raise ParseError(str(p), "empty file: no nvidia-smi header")
    if not agg.devices:
        raise ParseError(str(p), "nvidia-smi header found but no data rows")
    summary: dict[str, Any] = agg.summary()
    add_si_fields(summary, units)
    summary["columns"] = names
    summary["units"] = units
    summary["interval_s"] = interval_s
    summary["timestamps_increasing"] = non_increasing == 0
    summary["non_increasing_timestamps"] = non_increasing
    return ParseResult(
        kind="nvidia-smi",
        path=str(p),
        format="nvidia-smi-query-csv",
        format_version=version,
        summary=summary,
        lines_read=n,
        lines_ignored=ignored,
        skipped=skipped,
    )


_Sample = tuple[dict[str, float], float | None, float | None]


def _flush(agg: TelemetryAggregator, dev: str, dt_s: float, sample: _Sample) -> None:
    vals, power_w, util = sample
    agg.add(dev, dt_s, vals, power_w=power_w, util=util)


def _looks_data(row: list[str]) -> bool:
    """Tell whether a row is data (first cell a number or a GPU UUID), not a header."""
    first = row[0].strip()
    return first.isdecimal() or first.startswith("GPU-")

"""CodeCarbon ``emissions.csv``: energy (kWh), emissions (kg CO2e) and duration per run.

Columns are found by name, so the v2 set (with ``pue`` and ``tracking_mode``) and the v3 set
(adds ``experiment_id``, ``water_consumed``, ``*_utilization_percent``, ``ram_used_gb``, ``wue``)
both parse. The version comes from the ``codecarbon_version`` column where present, else from the
column set. Rows are streamed (one per run or per periodic flush).

References
----------
.. [1] CodeCarbon, ``codecarbon/output_methods/emissions_data.py``,
   https://github.com/mlco2/codecarbon
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_text
from aitco.calibrate.parsers.base import CsvRows, ParseResult, SkipLog, to_float
from aitco.errors import ParseError
from aitco.units import SECONDS_PER_HOUR, WATTS_PER_KILOWATT

REQUIRED = ("duration", "energy_consumed")
NUMERIC = (
    "duration",
    "emissions",
    "emissions_rate",
    "cpu_power",
    "gpu_power",
    "ram_power",
    "cpu_energy",
    "gpu_energy",
    "ram_energy",
    "energy_consumed",
    "water_consumed",
    "gpu_count",
    "cpu_count",
    "pue",
    "wue",
    "cpu_utilization_percent",
    "gpu_utilization_percent",
    "ram_utilization_percent",
    "ram_used_gb",
    "ram_total_size",
)
TEXT = (
    "timestamp",
    "project_name",
    "run_id",
    "experiment_id",
    "country_iso_code",
    "region",
    "cloud_provider",
    "cloud_region",
    "gpu_model",
    "cpu_model",
    "tracking_mode",
    "codecarbon_version",
)
#: Column names CodeCarbon 3.x added (used to tell versions apart when the version is missing).
V3_COLUMNS = {"water_consumed", "wue", "experiment_id", "gpu_utilization_percent"}
#: Normalised names with units: CodeCarbon's energy columns are kWh, power W, emissions kg.
RENAME = {
    "duration": "duration_s",
    "emissions": "kg_co2e",
    "energy_consumed": "energy_kwh",
    "cpu_energy": "cpu_energy_kwh",
    "gpu_energy": "gpu_energy_kwh",
    "ram_energy": "ram_energy_kwh",
    "cpu_power": "cpu_power_w",
    "gpu_power": "gpu_power_w",
    "ram_power": "ram_power_w",
    "water_consumed": "water_l",
    "emissions_rate": "kg_co2e_per_s",
}


def parse_codecarbon(path: str | Path) -> ParseResult:
    """Parse a CodeCarbon ``emissions.csv``.

    Parameters
    ----------
    path : str or pathlib.Path
        The CSV file.

    Returns
    -------
    ParseResult
        One record per row (``duration_s``, ``energy_kwh``, ``gpu_energy_kwh``,
        ``kg_co2e``, ``pue``, ``gpu_count``, ...); ``summary`` has the totals
        ``energy_kwh``, ``gpu_energy_kwh``, ``kg_co2e``, ``duration_s``, the mean
        ``gpu_power_w`` and the versions seen.

    Raises
    ------
    aitco.errors.ParseError
        If the header lacks ``duration`` / ``energy_consumed`` or there are no rows.
    """
    p = Path(path)
    skipped = SkipLog()
    records: list[dict[str, Any]] = []
    versions: set[str] = set()
    with open_text(p) as fh:
        rows = CsvRows(fh, str(p), REQUIRED, "CodeCarbon file", skipped)
        header = rows.header
        for row in rows:
            raw = dict(zip(header, row, strict=True))
            rec: dict[str, Any] = {}
            for c in NUMERIC:
                if c in raw:
                    rec[RENAME.get(c, c)] = to_float(raw[c])
            for c in TEXT:
                if raw.get(c):
                    rec[c] = raw[c]
            if rec.get("duration_s") is None or rec.get("energy_kwh") is None:
                skipped.add(
                    rows.line_num,
                    "duration or energy_consumed is not a number",
                    ",".join(row)[:120],
                )
                continue
            if rec.get("codecarbon_version"):
                versions.add(str(rec["codecarbon_version"]))
            records.append(rec)
    if not records:
        raise ParseError(str(p), "CodeCarbon header found but no rows")
    v3 = bool(V3_COLUMNS & set(header))
    fmt_version = ("v3 column set" if v3 else "v2 column set") + (
        f" (codecarbon {', '.join(sorted(versions))})" if versions else ""
    )

    def total(k: str) -> float | None:
        vals = [r[k] for r in records if r.get(k) is not None]
        return sum(vals) if vals else None

    dur = total("duration_s") or 0.0
    gpu_e = total("gpu_energy_kwh")
    summary = {
        "runs": len(records),
        "duration_s": dur,
        "energy_kwh": total("energy_kwh"),
        "gpu_energy_kwh": gpu_e,
        "cpu_energy_kwh": total("cpu_energy_kwh"),
        "ram_energy_kwh": total("ram_energy_kwh"),
        "kg_co2e": total("kg_co2e"),
        "mean_gpu_power_w": gpu_e * WATTS_PER_KILOWATT * SECONDS_PER_HOUR / dur
        if gpu_e is not None and dur
        else None,
        "pue": records[-1].get("pue"),
        "gpu_count": records[-1].get("gpu_count"),
        "gpu_model": records[-1].get("gpu_model"),
        "tracking_mode": records[-1].get("tracking_mode"),
        "codecarbon_versions": sorted(versions),
    }
    return ParseResult(
        kind="codecarbon",
        path=str(p),
        format="codecarbon-emissions-csv",
        format_version=fmt_version,
        records=records,
        summary=summary,
        lines_read=rows.line_num,
        skipped=skipped,
    )

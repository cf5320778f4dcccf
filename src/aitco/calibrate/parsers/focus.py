"""FinOps FOCUS billing exports (CSV or Parquet): costs and the $/accelerator-hour paid.

Billed, effective and list cost are totalled with the accelerator-hours bought, which gives the
$/accelerator-hour actually paid.

CSV files are streamed row by row (constant memory) with the standard ``csv`` module, so each
malformed row is counted with its line number; Parquet files, and CSV files above
:data:`DUCKDB_MIN_BYTES`, are aggregated inside DuckDB without loading the rows into Python.
Columns are found by their FOCUS names; nulls may be the literal ``NULL`` or empty strings.
The FOCUS version is inferred from the columns (1.1 added ``ServiceSubcategory``,
``CapacityReservationId``, ``SkuMeter``...; 1.2 added ``InvoiceId``, ``BillingAccountType``...).

Accelerator rows are recognised from ``ChargeDescription``/``SkuId``/``ResourceType`` text naming
a GPU instance family (see :data:`GPU_INSTANCE_ACCELERATORS`) or the word GPU; their
``ConsumedQuantity`` in hours times accelerators per instance gives accelerator-hours.

References
----------
.. [1] FinOps Foundation, FOCUS specification v1.0-v1.2 (CC BY 4.0),
   https://github.com/FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec
.. [2] AWS, "Amazon EC2 accelerated computing instances" (GPUs per instance type), retrieved
   2026-11, https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_binary, open_text
from aitco.calibrate.parsers.base import CsvRows, ParseResult, SkipLog, to_float
from aitco.errors import ParseError

#: CSV files larger than this are aggregated with DuckDB instead of row by row. [B]
DUCKDB_MIN_BYTES = 256 * 2**20
#: Units of ``ConsumedUnit``/``PricingUnit`` that mean hours.
HOUR_UNITS = {"hours", "hour", "hrs", "hr", "h", "instance hours", "instance-hours"}

#: Accelerators per instance for common GPU instance types (AWS docs [2]; Azure/GCP docs for
#: the ND/a2/a3 families). Keys are matched as whole words in the charge text, lowercase.
GPU_INSTANCE_ACCELERATORS: dict[str, int] = {
    "p5.48xlarge": 8,
    "p5e.48xlarge": 8,
    "p5en.48xlarge": 8,
    "p4d.24xlarge": 8,
    "p4de.24xlarge": 8,
    "p3.2xlarge": 1,
    "p3.8xlarge": 4,
    "p3.16xlarge": 8,
    "g5.xlarge": 1,
    "g5.2xlarge": 1,
    "g5.4xlarge": 1,
    "g5.8xlarge": 1,
    "g5.16xlarge": 1,
    "g5.12xlarge": 4,
    "g5.24xlarge": 4,
    "g5.48xlarge": 8,
    "g6.xlarge": 1,
    "g6.12xlarge": 4,
    "g6.48xlarge": 8,
    "g6e.xlarge": 1,
    "g6e.12xlarge": 4,
    "g6e.48xlarge": 8,
    "a2-highgpu-1g": 1,
    "a2-highgpu-8g": 8,
    "a2-ultragpu-8g": 8,
    "a3-highgpu-8g": 8,
    "a3-megagpu-8g": 8,
    "standard_nd96asr_v4": 8,
    "standard_nd96amsr_a100_v4": 8,
    "standard_nd96isr_h100_v5": 8,
    "bm.gpu.h100.8": 8,
    "bm.gpu.a100-v2.8": 8,
}
_GPU_WORD = re.compile(r"\bgpus?\b", re.IGNORECASE)

REQUIRED = ("BilledCost", "ChargePeriodStart")
V11_COLUMNS = {
    "ServiceSubcategory",
    "CapacityReservationId",
    "SkuMeter",
    "SkuPriceDetails",
    "CommitmentDiscountQuantity",
}
V12_COLUMNS = {
    "InvoiceId",
    "BillingAccountType",
    "PricingCurrency",
    "SubAccountType",
    "PricingCurrencyEffectiveCost",
}
_NULLS = {"", "NULL", "null", "None"}


def focus_version(columns: set[str]) -> str:
    """FOCUS version implied by the column set."""
    if columns & V12_COLUMNS:
        return "FOCUS 1.2"
    if columns & V11_COLUMNS:
        return "FOCUS 1.1"
    return "FOCUS 1.0"


def accelerators_in(text: str) -> tuple[str | None, int]:
    """Return the GPU instance named in ``text`` and its accelerators per instance (0 if none).

    Examples
    --------
    >>> accelerators_in("$1.624 per On Demand Linux g5.4xlarge Instance Hour")
    ('g5.4xlarge', 1)
    """
    low = text.lower()
    for inst, n in GPU_INSTANCE_ACCELERATORS.items():
        if re.search(rf"(?<![\w.-]){re.escape(inst)}(?![\w.-])", low):
            return inst, n
    if _GPU_WORD.search(text):
        return None, 1
    return None, 0


class _Totals:
    def __init__(self) -> None:
        self.rows = 0
        self.billed = 0.0
        self.effective = 0.0
        self.listed = 0.0
        self.contracted = 0.0
        self.by_category: dict[str, float] = {}
        self.by_provider: dict[str, float] = {}
        self.currencies: set[str] = set()
        self.acc_hours = 0.0
        self.acc_billed = 0.0
        self.acc_effective = 0.0
        self.acc_list = 0.0
        self.acc_rows = 0
        self.instances: dict[str, float] = {}
        self.period: list[str] = []

    def add(self, row: dict[str, str | None]) -> None:
        def num(k: str) -> float:
            x = to_float(row.get(k))
            return x if x is not None else 0.0

        self.rows += 1
        billed = num("BilledCost")
        eff = num("EffectiveCost")
        self.billed += billed
        self.effective += eff
        self.listed += num("ListCost")
        self.contracted += num("ContractedCost")
        cat = (row.get("ChargeCategory") or "null").strip().title()
        self.by_category[cat] = self.by_category.get(cat, 0.0) + billed
        prov = (row.get("ProviderName") or "null").strip()
        self.by_provider[prov] = self.by_provider.get(prov, 0.0) + billed
        if row.get("BillingCurrency"):
            self.currencies.add(str(row["BillingCurrency"]))
        for k in ("ChargePeriodStart", "ChargePeriodEnd"):
            v = row.get(k)
            if v:
                self.period.append(v)
                if len(self.period) > 2:
                    self.period = [min(self.period), max(self.period)]
        if cat != "Usage":
            return
        text = " ".join(
            str(row.get(k) or "")
            for k in ("ChargeDescription", "SkuId", "ResourceType", "SkuMeter")
        )
        inst, per = accelerators_in(text)
        if not per:
            return
        unit = (row.get("ConsumedUnit") or row.get("PricingUnit") or "").strip().lower()
        qty = to_float(row.get("ConsumedQuantity"))
        if qty is None:
            qty = to_float(row.get("PricingQuantity"))
        if unit not in HOUR_UNITS or qty is None:
            return
        self.acc_rows += 1
        self.acc_hours += qty * per
        self.acc_billed += billed
        self.acc_effective += eff
        self.acc_list += num("ListCost")
        key = inst or "gpu"
        self.instances[key] = self.instances.get(key, 0.0) + qty

    def summary(self) -> dict[str, Any]:
        h = self.acc_hours
        return {
            "n_rows": self.rows,
            "billed_cost_usd": self.billed,
            "effective_cost_usd": self.effective,
            "list_cost_usd": self.listed,
            "contracted_cost_usd": self.contracted,
            "savings_vs_list_usd": self.listed - self.effective,
            "billed_by_category_usd": self.by_category,
            "billed_by_provider_usd": self.by_provider,
            "currencies": sorted(self.currencies),
            "charge_period_start": min(self.period) if self.period else None,
            "charge_period_end": max(self.period) if self.period else None,
            "accelerator_rows": self.acc_rows,
            "gpu_hours": h,
            "accelerator_billed_usd": self.acc_billed,
            "accelerator_effective_usd": self.acc_effective,
            "billed_cost_usd_per_gpu_h": self.acc_billed / h if h else None,
            "effective_cost_usd_per_gpu_h": self.acc_effective / h if h else None,
            "list_cost_usd_per_gpu_h": self.acc_list / h if h else None,
            "instance_hours": self.instances,
        }


def parse_focus(path: str | Path, *, engine: str = "auto") -> ParseResult:
    """Parse a FOCUS billing export and total its costs and accelerator-hours.

    Parameters
    ----------
    path : str or pathlib.Path
        FOCUS CSV (optionally ``.gz``) or Parquet file.
    engine : {"auto", "csv", "duckdb"}
        ``auto`` streams CSV with the ``csv`` module and uses DuckDB for Parquet and for CSV
        files above :data:`DUCKDB_MIN_BYTES`.

    Returns
    -------
    ParseResult
        ``summary`` with ``billed_cost_usd``, ``effective_cost_usd``, ``list_cost_usd``, costs by
        ``ChargeCategory`` and provider, ``gpu_hours`` (accelerator-hours) and the billed /
        effective / list cost per accelerator-hour (``billed_cost_usd_per_gpu_h``...); no per-row
        records are kept.

    Raises
    ------
    aitco.errors.ParseError
        If the file has no FOCUS columns or no rows.
    """
    p = Path(path)
    with open_binary(p) as fb:  # a regular file only (DuckDB is then handed the same path)
        magic = fb.read(4)
    is_parquet = magic == b"PAR1"
    if (
        engine == "duckdb"
        or is_parquet
        or (engine == "auto" and p.stat().st_size > DUCKDB_MIN_BYTES)
    ):
        return _parse_duckdb(p, is_parquet)
    return _parse_csv(p)


def _parse_csv(p: Path) -> ParseResult:
    skipped = SkipLog()
    tot = _Totals()
    with open_text(p) as fh:
        rows = CsvRows(fh, str(p), REQUIRED, "FOCUS export", skipped)
        cols = rows.header
        for row in rows:
            rec = {c: (None if v in _NULLS else v) for c, v in zip(cols, row, strict=True)}
            if rec.get("BilledCost") is not None and to_float(rec["BilledCost"]) is None:
                skipped.add(rows.line_num, "BilledCost is not a number", ",".join(row)[:120])
                continue
            tot.add(rec)
        n = rows.line_num
    if tot.rows == 0:
        raise ParseError(str(p), "FOCUS header found but no rows")
    return ParseResult(
        kind="focus",
        path=str(p),
        format="focus-csv",
        format_version=focus_version(set(cols)),
        summary=tot.summary(),
        lines_read=n,
        skipped=skipped,
        meta={"engine": "csv", "columns": len(cols)},
    )


def _parse_duckdb(p: Path, is_parquet: bool) -> ParseResult:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - duckdb is in the calibrate extra
        raise ParseError(
            str(p), "reading Parquet or large CSV needs duckdb (pip install aitco[calibrate])"
        ) from exc
    con = duckdb.connect()
    path_sql = str(p).replace("'", "''")
    src = (
        f"read_parquet('{path_sql}')"
        if is_parquet
        else f"read_csv('{path_sql}', header=true, all_varchar=true, nullstr=['NULL',''], "
        "ignore_errors=true, store_rejects=true)"
    )
    try:
        cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()]
    except duckdb.Error as exc:
        raise ParseError(str(p), f"DuckDB could not read the file ({exc})") from exc
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise ParseError(str(p), f"not a FOCUS export: missing column(s) {', '.join(missing)}")
    want = [
        c
        for c in (
            "BilledCost",
            "EffectiveCost",
            "ListCost",
            "ContractedCost",
            "ChargeCategory",
            "ProviderName",
            "BillingCurrency",
            "ChargePeriodStart",
            "ChargePeriodEnd",
            "ChargeDescription",
            "SkuId",
            "ResourceType",
            "SkuMeter",
            "ConsumedUnit",
            "PricingUnit",
            "ConsumedQuantity",
            "PricingQuantity",
        )
        if c in cols
    ]
    sel = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' for c in want)
    tot = _Totals()
    # group identical (category, provider, text, unit) rows in SQL, stream the groups to Python
    group_cols = [
        c
        for c in want
        if c
        not in (
            "BilledCost",
            "EffectiveCost",
            "ListCost",
            "ContractedCost",
            "ConsumedQuantity",
            "PricingQuantity",
            "ChargePeriodStart",
            "ChargePeriodEnd",
        )
    ]
    gsel = ", ".join(f'"{c}"' for c in group_cols)
    sums = ", ".join(
        f'SUM(TRY_CAST("{c}" AS DOUBLE)) AS "{c}"'
        for c in (
            "BilledCost",
            "EffectiveCost",
            "ListCost",
            "ContractedCost",
            "ConsumedQuantity",
            "PricingQuantity",
        )
        if c in want
    )
    period = ", ".join(
        f'{fn}("{c}") AS "{c}"'
        for fn, c in (("MIN", "ChargePeriodStart"), ("MAX", "ChargePeriodEnd"))
        if c in want
    )
    bad_cost = '"BilledCost" IS NOT NULL AND TRY_CAST("BilledCost" AS DOUBLE) IS NULL'
    q = (
        f"SELECT {gsel}, {sums}, {period}, COUNT(*) AS n FROM (SELECT {sel} FROM {src}) "
        f"WHERE NOT ({bad_cost}) GROUP BY {gsel}"
    )
    n_rows = 0
    try:
        cur = con.execute(q)
        names = [d[0] for d in cur.description]
        while batch := cur.fetchmany(10_000):
            for r in batch:
                row = dict(zip(names, r, strict=True))
                n_rows += int(row.pop("n"))
                tot.add({k: (None if v is None else str(v)) for k, v in row.items()})
        bad = con.execute(
            f"SELECT COUNT(*) FROM (SELECT {sel} FROM {src}) WHERE {bad_cost}"
        ).fetchone()
        rejects = int(bad[0]) if bad else 0
        if not is_parquet:
            try:
                rej = con.execute("SELECT COUNT(DISTINCT line) FROM reject_errors").fetchone()
                rejects += int(rej[0]) if rej else 0
            except duckdb.Error:
                pass
    except duckdb.Error as exc:
        raise ParseError(str(p), f"DuckDB query failed ({exc})") from exc
    finally:
        con.close()
    summary = tot.summary()
    summary["n_rows"] = n_rows
    if n_rows == 0:
        raise ParseError(str(p), "FOCUS file has no rows")
    skipped = SkipLog()
    skipped.count = rejects
    return ParseResult(
        kind="focus",
        path=str(p),
        format="focus-parquet" if is_parquet else "focus-csv",
        format_version=focus_version(set(cols)),
        summary=summary,
        lines_read=n_rows,
        skipped=skipped,
        meta={"engine": "duckdb", "columns": len(cols)},
    )

"""A FOCUS bill read into line groups, in memory bounded by the number of distinct charges.

:func:`read_bill` streams a FinOps FOCUS export (CSV, optionally gzip-compressed, or Parquet) and
sums its rows into :class:`LineGroup` s: one per distinct charge (provider, account, currency,
charge category, service, SKU, description, unit, pricing category, region) and scope status.
Nothing per row is kept, so a bill of millions of rows takes the memory of its distinct charges,
plus one number per charge period for the accelerator rows (the GPUs billed at once, hour by
hour, which :mod:`aitco.decide.reconcile` compares with the planned count).

Two engines give the same groups:

* ``csv``: the standard ``csv`` module, row by row, pure Python (the core install); each
  malformed row is counted with its line number;
* ``duckdb``: the aggregation runs inside DuckDB (``pip install 'aitco[calibrate]'``), used for
  Parquet and, with ``engine="auto"``, for CSV files above
  :data:`aitco.calibrate.parsers.focus.DUCKDB_MIN_BYTES`.

Scope
-----
A :class:`BillScope` says which rows belong to the planned run: the provider of the planned
option, optionally a billing (or sub-) account, a charge period and resource tags. Rows outside
it are not dropped: they are summed into groups whose ``scope`` names why (``"other provider"``,
``"other account"``, ``"outside period"``, ``"other resources (tags)"``), so a report can list
them. Tags select resource rows only; a row without a ``ResourceId`` (a support fee, a tax, a
credit) is account-level and stays in scope.

References
----------
.. [1] FinOps Foundation, FOCUS specification v1.0-v1.2 (CC BY 4.0),
   https://github.com/FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec (columns ``BilledCost``,
   ``ConsumedQuantity``, ``ChargePeriodStart``, ``Tags``...).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_binary, open_text
from aitco.calibrate.parsers.base import CsvRows, SkipLog, to_float
from aitco.calibrate.parsers.focus import (
    DUCKDB_MIN_BYTES,
    HOUR_UNITS,
    REQUIRED,
    accelerators_in,
    focus_version,
)
from aitco.errors import InputError, ParseError
from aitco.units import SECONDS_PER_HOUR

#: Columns whose values make a line group (a distinct charge).
GROUP_FIELDS = (
    "ProviderName",
    "BillingAccountId",
    "SubAccountId",
    "BillingCurrency",
    "ChargeCategory",
    "ServiceCategory",
    "ServiceName",
    "SkuId",
    "ChargeDescription",
    "ResourceType",
    "ConsumedUnit",
    "PricingUnit",
    "PricingCategory",
    "RegionId",
)
#: Columns summed over a group.
SUM_FIELDS = ("BilledCost", "EffectiveCost", "ListCost", "ConsumedQuantity", "PricingQuantity")
#: Scope status of rows that belong to the planned run.
IN_SCOPE = ""
#: Provider names in bills (lowercase prefixes) by the provider ids of the catalog offers.
PROVIDER_ALIASES: dict[str, tuple[str, ...]] = {
    "aws": ("aws", "amazon"),
    "azure": ("azure", "microsoft"),
    "gcp": ("gcp", "google"),
    "oci": ("oci", "oracle"),
    "lambda": ("lambda",),
    "coreweave": ("coreweave",),
    "runpod": ("runpod",),
    "digitalocean": ("digitalocean", "digital ocean"),
    "cudo": ("cudo",),
    "hotaisle": ("hotaisle", "hot aisle"),
}
#: Distinct charge-period texts whose normal form is cached by the pure-Python engine.
TIME_CACHE_SIZE = 100_000
#: Distinct ``Tags`` texts whose parsed form is cached by the pure-Python engine.
TAG_CACHE_SIZE = 4096
#: Memory DuckDB may use for one bill (its buffer pool; the aggregation spills beyond it).
DUCKDB_MEMORY_LIMIT = "512MB"
#: Rows fetched from DuckDB at a time.
DUCKDB_BATCH_ROWS = 10_000
_NULLS = {"", "NULL", "null", "None"}
INF = float("inf")
_STORAGE_UNITS = ("gb-mo", "gb-month", "gib-mo", "gib-month", "gb month")
_KINDS = ("gpu_compute", "storage", "network", "support", "tax", "credit", "other")


def provider_id(name: str | None) -> str:
    """Catalog provider id of a bill's ``ProviderName`` (its lowercase text when not known).

    Examples
    --------
    >>> provider_id("Amazon Web Services, Inc.")
    'aws'
    >>> provider_id("Microsoft")
    'azure'
    """
    low = (name or "").strip().lower()
    for pid, prefixes in PROVIDER_ALIASES.items():
        if any(low.startswith(p) for p in prefixes):
            return pid
    return low


def normal_time(s: str | None) -> str:
    """``ChargePeriodStart`` text as ``YYYY-MM-DDTHH:MM:SS`` (UTC offset and fraction dropped)."""
    if not s:
        return ""
    t = s.strip().replace(" ", "T", 1)
    return t[:19]


def period_hours(start: str, end: str) -> float | None:
    """Hours from ``start`` to ``end`` (normalised times), or None when unreadable."""
    try:
        a = dt.datetime.fromisoformat(start)
        b = dt.datetime.fromisoformat(end)
    except ValueError:
        return None
    h = (b - a).total_seconds() / SECONDS_PER_HOUR
    return h if h > 0 else None


@dataclass(frozen=True)
class BillScope:
    """Which rows of a bill belong to the planned run.

    Attributes
    ----------
    provider : str, optional
        Catalog provider id of the planned option (``"aws"``); rows of others are out of scope.
    account : str, optional
        ``BillingAccountId`` or ``SubAccountId`` the run was billed to.
    start, end : str, optional
        Charge period kept: rows whose ``ChargePeriodStart`` is in ``[start, end)`` (ISO dates
        or times).
    tags : mapping of str to str
        Resource tags that mark the run's resources (every one must match).
    instances : mapping of str to int
        GPU instance types (lowercase) and their accelerators per instance, beyond
        :data:`aitco.calibrate.parsers.focus.GPU_INSTANCE_ACCELERATORS` (the catalog's offers).
    """

    provider: str | None = None
    account: str | None = None
    start: str | None = None
    end: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    instances: Mapping[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: what the scope keeps."""
        parts = []
        if self.provider:
            parts.append(f"provider {self.provider}")
        if self.account:
            parts.append(f"account {self.account}")
        if self.start or self.end:
            parts.append(f"charge period [{self.start or '...'}, {self.end or '...'})")
        if self.tags:
            parts.append("tags " + ", ".join(f"{k}={v}" for k, v in self.tags.items()))
        return "; ".join(parts) or "every row"


@dataclass
class LineGroup:
    """The rows of one distinct charge, summed.

    Attributes
    ----------
    key : dict of str to str
        The :data:`GROUP_FIELDS` values ("" when null).
    scope : str
        ``""`` in scope, else why not (``"other provider"``...).
    account_level : bool
        The rows have no ``ResourceId`` (support, tax, credit...).
    kind : str
        ``gpu_compute``, ``storage``, ``network``, ``support``, ``tax``, ``credit`` or ``other``.
    instance : str, optional
        GPU instance type named by the charge (``p5.48xlarge``).
    accelerators_per_instance : int
        Accelerators per billed instance (0: not an accelerator charge).
    billed_usd, effective_usd, list_usd : float
        Sums of ``BilledCost``, ``EffectiveCost``, ``ListCost``. [USD]
    quantity : float
        Sum of ``ConsumedQuantity`` (``PricingQuantity`` where consumed is null), in ``unit``.
    rows : int
        Rows summed.
    start, end : str
        First ``ChargePeriodStart`` and last ``ChargePeriodEnd`` (normalised).
    """

    key: dict[str, str]
    scope: str = IN_SCOPE
    account_level: bool = False
    kind: str = "other"
    instance: str | None = None
    accelerators_per_instance: int = 0
    billed_usd: float = 0.0
    effective_usd: float = 0.0
    list_usd: float = 0.0
    quantity: float = 0.0
    rows: int = 0
    start: str = ""
    end: str = ""

    @property
    def unit(self) -> str:
        """Unit of ``quantity`` (``ConsumedUnit``, else ``PricingUnit``)."""
        return self.key.get("ConsumedUnit") or self.key.get("PricingUnit") or ""

    @property
    def gpu_hours(self) -> float:
        """Return the accelerator-hours billed [h] (instance-hours x accelerators per instance)."""
        return self.quantity * self.accelerators_per_instance if self.kind == "gpu_compute" else 0.0

    @property
    def label(self) -> str:
        """Short human name: the description, else service and SKU."""
        k = self.key
        return k.get("ChargeDescription") or " ".join(
            x for x in (k.get("ServiceName"), k.get("SkuId"), k.get("ChargeCategory")) if x
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (key fields, sums, kind and scope)."""
        k = self.key
        return {
            "label": self.label,
            "kind": self.kind,
            "scope": self.scope or "in scope",
            "provider": k.get("ProviderName"),
            "account": k.get("BillingAccountId"),
            "sub_account": k.get("SubAccountId"),
            "currency": k.get("BillingCurrency"),
            "charge_category": k.get("ChargeCategory"),
            "service": k.get("ServiceName"),
            "sku": k.get("SkuId"),
            "instance": self.instance,
            "unit": self.unit,
            "quantity": self.quantity,
            "billed_usd": self.billed_usd,
            "effective_usd": self.effective_usd,
            "list_usd": self.list_usd,
            "rows": self.rows,
            "charge_period_start": self.start or None,
            "charge_period_end": self.end or None,
            "account_level": self.account_level,
        }


def classify(
    key: Mapping[str, str], instances: Mapping[str, int] | None = None
) -> tuple[str, str | None, int]:
    """Kind of a charge, and the GPU instance and accelerators per instance it names.

    ``instances`` (instance type -> accelerators) is searched before the built-in table.

    Returns
    -------
    tuple
        ``(kind, instance, accelerators_per_instance)``; ``kind`` is one of ``gpu_compute``
        (a usage charge in hours naming a GPU instance or the word GPU), ``storage`` (service
        category Storage or a GB-month unit), ``network`` (Networking or data transfer),
        ``support``, ``tax``, ``credit`` or ``other``.
    """
    cat = key.get("ChargeCategory", "").strip().lower()
    if cat == "tax":
        return "tax", None, 0
    if cat == "credit":
        return "credit", None, 0
    service = f"{key.get('ServiceName', '')} {key.get('ServiceCategory', '')}".lower()
    desc = key.get("ChargeDescription", "").lower()
    unit = (key.get("ConsumedUnit") or key.get("PricingUnit") or "").strip().lower()
    text = " ".join(key.get(k, "") for k in ("ChargeDescription", "SkuId", "ResourceType"))
    if cat in ("usage", "purchase", "") and unit in HOUR_UNITS:
        low = text.lower()
        for name, n in (instances or {}).items():
            if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", low):
                return "gpu_compute", name, n
        inst, per = accelerators_in(text)
        if per:
            return "gpu_compute", inst, per
    if "support" in service or " support" in f" {desc}":
        return "support", None, 0
    if "storage" in service or any(u in unit for u in _STORAGE_UNITS):
        return "storage", None, 0
    if "network" in service or "data transfer" in desc or "egress" in desc:
        return "network", None, 0
    return "other", None, 0


class _Aggregator:
    """Sums rows (or pre-grouped rows) into line groups and GPU-hours per charge period."""

    def __init__(self, instances: Mapping[str, int] | None = None) -> None:
        self.instances = dict(instances or {})
        self.groups: dict[tuple[Any, ...], LineGroup] = {}
        self.kinds: dict[tuple[str, ...], tuple[str, str | None, int]] = {}
        #: GPU-hours of in-scope accelerator rows per (instance, start, end) charge period.
        self.gpu_slots: dict[tuple[str, str, str], float] = {}
        self.rows = 0
        self.currencies: set[str] = set()
        self.providers: set[str] = set()
        self.accounts: set[str] = set()
        self.start = ""
        self.end = ""

    def add(
        self,
        key: tuple[str, ...],
        scope: str,
        account_level: bool,
        sums: tuple[float, float, float, float],
        rows: int,
        start: str,
        end: str,
    ) -> None:
        """Add ``rows`` rows of charge ``key`` (in :data:`GROUP_FIELDS` order)."""
        gk = (key, scope, account_level)
        g = self.groups.get(gk)
        if g is None:
            kd = dict(zip(GROUP_FIELDS, key, strict=True))
            kind = self.kinds.get(key)
            if kind is None:
                kind = self.kinds[key] = classify(kd, self.instances)
            g = self.groups[gk] = LineGroup(
                key=kd,
                scope=scope,
                account_level=account_level,
                kind=kind[0],
                instance=kind[1],
                accelerators_per_instance=kind[2],
                start=start,
                end=end,
            )
            if kd["BillingCurrency"]:
                self.currencies.add(kd["BillingCurrency"])
            if kd["ProviderName"]:
                self.providers.add(kd["ProviderName"])
            if kd["BillingAccountId"]:
                self.accounts.add(kd["BillingAccountId"])
        g.billed_usd += sums[0]
        g.effective_usd += sums[1]
        g.list_usd += sums[2]
        g.quantity += sums[3]
        g.rows += rows
        self.rows += rows
        if start and (not g.start or start < g.start):
            g.start = start
        if end and end > g.end:
            g.end = end
        if start and (not self.start or start < self.start):
            self.start = start
        if end and end > self.end:
            self.end = end
        if scope == IN_SCOPE and g.kind == "gpu_compute" and start and end:
            slot = (g.instance or "", start, end)
            self.gpu_slots[slot] = self.gpu_slots.get(slot, 0.0) + sums[3] * (
                g.accelerators_per_instance
            )


@dataclass
class Bill:
    """A FOCUS bill read into line groups (see the module docstring).

    Attributes
    ----------
    path : str
        The file read.
    format_version : str
        FOCUS version implied by the columns.
    engine : str
        ``csv`` or ``duckdb``.
    rows : int
        Rows summed (every row, in scope or not).
    skipped : SkipLog
        Malformed rows (not a number where a cost is, wrong number of fields).
    groups : list of LineGroup
        Every charge, in scope and out of it.
    gpu_slots : dict
        In-scope accelerator-hours per ``(instance, start, end)`` charge period. [h]
    currencies, providers, accounts : list of str
        Distinct ``BillingCurrency``, ``ProviderName`` and ``BillingAccountId`` values.
    start, end : str
        First and last charge period times of the whole bill.
    scope : BillScope
        The scope the rows were sorted by.
    """

    path: str
    format_version: str
    engine: str
    rows: int
    skipped: SkipLog
    groups: list[LineGroup]
    gpu_slots: dict[tuple[str, str, str], float]
    currencies: list[str]
    providers: list[str]
    accounts: list[str]
    start: str
    end: str
    scope: BillScope

    def in_scope(self) -> list[LineGroup]:
        """Return the groups that belong to the planned run."""
        return [g for g in self.groups if g.scope == IN_SCOPE]

    def out_of_scope(self) -> list[LineGroup]:
        """Return the groups outside the scope (listed, never dropped)."""
        return [g for g in self.groups if g.scope != IN_SCOPE]


def read_bill(path: str | Path, scope: BillScope | None = None, *, engine: str = "auto") -> Bill:
    """Read a FOCUS bill into line groups, sorted into in-scope and out-of-scope rows.

    Parameters
    ----------
    path : str or pathlib.Path
        FOCUS CSV (optionally ``.gz``) or Parquet.
    scope : BillScope, optional
        Which rows belong to the planned run (default: every row).
    engine : {"auto", "csv", "duckdb"}
        ``auto``: DuckDB for Parquet and for CSV above ``DUCKDB_MIN_BYTES`` when it is installed,
        the pure-Python CSV reader otherwise.

    Returns
    -------
    Bill

    Raises
    ------
    aitco.errors.ParseError
        If the file is missing, has no FOCUS columns or no rows.
    aitco.errors.InputError
        If ``engine`` is unknown, or DuckDB is needed (Parquet, ``engine="duckdb"``) and missing.
    """
    if engine not in ("auto", "csv", "duckdb"):
        raise InputError("--engine", engine, "auto, csv or duckdb")
    p = Path(path)
    sc = scope or BillScope()
    with open_binary(p, field="BILL") as fb:  # a regular file only (DuckDB gets the same path)
        is_parquet = fb.read(4) == b"PAR1"
    use_duckdb = engine == "duckdb" or is_parquet
    if engine == "auto" and not is_parquet and p.stat().st_size > DUCKDB_MIN_BYTES:
        use_duckdb = _has_duckdb()
    if use_duckdb:
        return _read_duckdb(p, sc, is_parquet)
    return _read_csv(p, sc)


def _has_duckdb() -> bool:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


class _TagCheck:
    """Whether a row's ``Tags`` JSON holds every wanted tag (parsed texts cached, bounded)."""

    def __init__(self, tags: Mapping[str, str]) -> None:
        self.tags = dict(tags)
        self.cache: dict[str, bool] = {}

    def __call__(self, text: str | None) -> bool:
        if not self.tags:
            return True
        if not text:
            return False
        hit = self.cache.get(text)
        if hit is not None:
            return hit
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            obj = None
        ok = isinstance(obj, dict) and all(
            str(obj.get(k)) == v if obj.get(k) is not None else False for k, v in self.tags.items()
        )
        if len(self.cache) >= TAG_CACHE_SIZE:
            self.cache.clear()
        self.cache[text] = ok
        return ok


def _scope_status(
    sc: BillScope,
    provider: str,  # a catalog provider id (provider_id of ProviderName)
    account: str,
    sub_account: str,
    start: str,
    account_level: bool,
    tags_ok: bool,
) -> str:
    if sc.provider and provider != sc.provider:
        return "other provider"
    if sc.account and sc.account not in (account, sub_account):
        return "other account"
    if sc.tags and not account_level and not tags_ok:
        return "other resources (tags)"
    if sc.start and start and start < normal_time(sc.start):
        return "outside period"
    if sc.end and start and start >= normal_time(sc.end):
        return "outside period"
    return IN_SCOPE


def _read_csv(p: Path, sc: BillScope) -> Bill:
    skipped = SkipLog()
    agg = _Aggregator(sc.instances)
    check_tags = _TagCheck(sc.tags)
    with open_text(p) as fh:
        rows = CsvRows(fh, str(p), REQUIRED, "FOCUS export", skipped)
        cols = rows.header
        idx = {c: i for i, c in enumerate(cols)}
        gi = [idx.get(c) for c in GROUP_FIELDS]
        si = [idx.get(c) for c in SUM_FIELDS]
        i_start, i_end = idx.get("ChargePeriodStart"), idx.get("ChargePeriodEnd")
        i_res, i_tags = idx.get("ResourceId"), idx.get("Tags")
        nulls = _NULLS
        cols_at = [
            i if i is not None else len(cols) for i in (*gi, *si, i_start, i_end, i_res, i_tags)
        ]
        pick = itemgetter(*cols_at)
        ng, ns = len(gi), len(SUM_FIELDS)
        o = ng + ns
        times: dict[str, str] = {}
        providers: dict[str, str] = {}
        for row in rows:
            row.append("")  # the value of a column the export does not have
            vals = [v if v not in nulls else "" for v in pick(row)]
            nums = [0.0] * ns
            bad = False
            for j in range(ns):
                raw = vals[ng + j]
                if not raw:
                    continue
                try:
                    x: float | None = float(raw)
                except ValueError:
                    x = to_float(raw)  # thousands separators, a unit
                if x is None or x != x or x in (INF, -INF):
                    skipped.add(rows.line_num, f"{SUM_FIELDS[j]} is not a number", raw[:60])
                    bad = True
                    break
                nums[j] = x
            if bad:
                continue
            key = tuple(v.strip() for v in vals[:ng])
            start = times.get(vals[o])
            if start is None:
                start = times[vals[o]] = normal_time(vals[o])
            end = times.get(vals[o + 1])
            if end is None:
                end = times[vals[o + 1]] = normal_time(vals[o + 1])
            account_level = not vals[o + 2].strip()
            tags_ok = account_level or check_tags(vals[o + 3].strip() or None)
            prov = providers.get(key[0])
            if prov is None:
                prov = providers[key[0]] = provider_id(key[0])
            status = _scope_status(sc, prov, key[1], key[2], start, account_level, tags_ok)
            qty = nums[3] if vals[ng + 3] else nums[4]
            agg.add(key, status, account_level, (nums[0], nums[1], nums[2], qty), 1, start, end)
            if len(times) > TIME_CACHE_SIZE:
                times.clear()
    if agg.rows == 0:
        raise ParseError(str(p), "FOCUS header found but no readable rows")
    return _bill(p, agg, skipped, focus_version(set(cols)), "csv", sc)


def _bill(
    p: Path, agg: _Aggregator, skipped: SkipLog, version: str, engine: str, sc: BillScope
) -> Bill:
    return Bill(
        path=str(p),
        format_version=version,
        engine=engine,
        rows=agg.rows,
        skipped=skipped,
        groups=list(agg.groups.values()),
        gpu_slots=agg.gpu_slots,
        currencies=sorted(agg.currencies),
        providers=sorted(agg.providers),
        accounts=sorted(agg.accounts),
        start=agg.start,
        end=agg.end,
        scope=sc,
    )


def _read_duckdb(p: Path, sc: BillScope, is_parquet: bool) -> Bill:
    try:
        import duckdb
    except ImportError as exc:
        raise InputError(
            "--bill",
            str(p),
            "a CSV FOCUS export (reading Parquet, or --engine duckdb, needs DuckDB: "
            "pip install 'aitco[calibrate]')",
        ) from exc
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # stdout carries --json
    # bounded memory: DuckDB's buffer pool is capped (it spills to a temporary folder beyond it)
    # and rows need not keep their order
    con.execute(f"SET memory_limit = '{DUCKDB_MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = false")
    path_sql = str(p).replace("'", "''")
    # FOCUS CSV is comma-separated with double quotes; strict_mode=false (DuckDB >= 1.2) also
    # reads files whose rows end in \n and \r\n alike
    csv_opts = (
        f"read_csv('{path_sql}', header=true, all_varchar=true, nullstr=['NULL',''], "
        "delim=',', quote='\"', escape='\"', ignore_errors=true, store_rejects=true"
    )
    src = f"read_parquet('{path_sql}')" if is_parquet else csv_opts + ", strict_mode=false)"
    try:
        try:
            cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()]
        except duckdb.Error as exc:
            if is_parquet or "strict_mode" not in str(exc):
                raise
            src = csv_opts + ")"  # an older DuckDB
            cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()]
        missing = [c for c in REQUIRED if c not in cols]
        if missing:
            raise ParseError(str(p), f"not a FOCUS export: missing column(s) {', '.join(missing)}")
        agg = _Aggregator(sc.instances)
        skipped = SkipLog()
        for rec in _duckdb_groups(con, src, cols, sc):
            agg.add(*rec)
        bad = con.execute(f"SELECT COUNT(*) FROM {src} WHERE {_bad_cost_sql(cols)}").fetchone()
        skipped.count = int(bad[0]) if bad else 0
        if not is_parquet:
            try:
                rej = con.execute("SELECT COUNT(DISTINCT line) FROM reject_errors").fetchone()
                skipped.count += int(rej[0]) if rej else 0
            except duckdb.Error:
                pass
    except duckdb.Error as exc:
        raise ParseError(str(p), f"DuckDB could not read the bill ({exc})") from exc
    finally:
        con.close()
    if agg.rows == 0:
        raise ParseError(str(p), "FOCUS file has no readable rows")
    return _bill(p, agg, skipped, focus_version(set(cols)), "duckdb", sc)


def _col(cols: list[str], c: str) -> str:
    """Return the SQL of column ``c`` as a trimmed string ('' when absent or null)."""
    if c not in cols:
        return "''"
    return f"COALESCE(TRIM(CAST(\"{c}\" AS VARCHAR)), '')"


def _num(cols: list[str], c: str) -> str:
    return f'TRY_CAST("{c}" AS DOUBLE)' if c in cols else "NULL"


def _bad_cost_sql(cols: list[str]) -> str:
    checks = [
        f'("{c}" IS NOT NULL AND TRY_CAST("{c}" AS DOUBLE) IS NULL)'
        for c in SUM_FIELDS
        if c in cols
    ]
    return " OR ".join(checks) or "FALSE"


def _time_sql(cols: list[str], c: str) -> str:
    return f"SUBSTR(REPLACE({_col(cols, c)}, ' ', 'T'), 1, 19)"


def _duckdb_groups(con: Any, src: str, cols: list[str], sc: BillScope) -> Iterator[tuple[Any, ...]]:
    """Yield ``_Aggregator.add`` arguments for each (charge, scope, charge period) group."""
    params: list[Any] = []
    conds: list[tuple[str, str]] = []
    if sc.provider:
        prefixes = PROVIDER_ALIASES.get(sc.provider, (sc.provider,))
        like = " OR ".join("LOWER(provider) LIKE ?" for _ in prefixes)
        params += [f"{x}%" for x in prefixes]
        conds.append((f"NOT ({like})", "other provider"))
    if sc.account:
        conds.append(("NOT (account = ? OR sub_account = ?)", "other account"))
        params += [sc.account, sc.account]
    if sc.tags:
        if "Tags" in cols:
            tag_ok = " AND ".join(
                "COALESCE(CASE WHEN json_valid(tags) THEN json_extract_string(tags, ?) END = ?, "
                "FALSE)"
                for _ in sc.tags
            )
            for k, v in sc.tags.items():
                params += ['$."' + k.replace('"', '\\"') + '"', v]
        else:
            tag_ok = "FALSE"
        conds.append((f"(NOT account_level AND NOT ({tag_ok}))", "other resources (tags)"))
    if sc.start:
        conds.append(("(start_t <> '' AND start_t < ?)", "outside period"))
        params.append(normal_time(sc.start))
    if sc.end:
        conds.append(("(start_t <> '' AND start_t >= ?)", "outside period"))
        params.append(normal_time(sc.end))
    status = (
        "CASE " + " ".join(f"WHEN {c} THEN '{why}'" for c, why in conds) + " ELSE '' END"
        if conds
        else "''"
    )
    keys = ", ".join(f"{_col(cols, c)} AS k{i}" for i, c in enumerate(GROUP_FIELDS))
    qty = f"COALESCE({_num(cols, 'ConsumedQuantity')}, {_num(cols, 'PricingQuantity')}, 0)"
    inner = (
        f"SELECT {keys}, {_col(cols, 'ProviderName')} AS provider, "
        f"{_col(cols, 'BillingAccountId')} AS account, "
        f"{_col(cols, 'SubAccountId')} AS sub_account, "
        f"{_col(cols, 'ResourceId')} = '' AS account_level, "
        f"{_col(cols, 'Tags') if 'Tags' in cols else 'NULL'} AS tags, "
        f"{_time_sql(cols, 'ChargePeriodStart')} AS start_t, "
        f"{_time_sql(cols, 'ChargePeriodEnd')} AS end_t, "
        f"COALESCE({_num(cols, 'BilledCost')}, 0) AS billed, "
        f"COALESCE({_num(cols, 'EffectiveCost')}, 0) AS eff, "
        f"COALESCE({_num(cols, 'ListCost')}, 0) AS lst, {qty} AS qty "
        f"FROM {src} WHERE NOT ({_bad_cost_sql(cols)})"
    )
    kcols = ", ".join(f"k{i}" for i in range(len(GROUP_FIELDS)))
    q = (
        f"SELECT {kcols}, {status} AS scope, account_level, start_t, end_t, SUM(billed), "
        f"SUM(eff), SUM(lst), SUM(qty), COUNT(*) FROM ({inner}) "
        f"GROUP BY ALL"
    )
    cur = con.execute(q, params)
    n = len(GROUP_FIELDS)
    while batch := cur.fetchmany(DUCKDB_BATCH_ROWS):
        for r in batch:
            key = tuple(str(x) for x in r[:n])
            scope, account_level, start, end = r[n], bool(r[n + 1]), r[n + 2], r[n + 3]
            sums = tuple(float(x or 0.0) for x in r[n + 4 : n + 8])
            yield key, scope, account_level, sums, int(r[n + 8]), start, end

"""Import SkyPilot's public cloud catalogs (``vms.csv``) as an overlay of instance offers.

SkyPilot (github.com/skypilot-org/skypilot-catalog) keeps one ``vms.csv`` per cloud with the
instance type, its accelerators, host shape, on-demand and spot price per zone. The column order
differs by cloud and schema version, so columns are read by header name. Two layouts are read:

* SkyPilot's own (``InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, Price,
  SpotPrice, Region, AvailabilityZone``), one file per cloud (the cloud from ``--provider``, the
  file name ``skypilot_vms_<cloud>_v7.csv`` or its folder ``<cloud>/vms.csv``);
* aitco's reference snapshot (``shared/reference/skypilot/gpu_offers.csv``: ``provider,
  instance_type, accelerator, accelerators_per_instance, vcpus, memory_gib, region, ...``).

Zones are collapsed per region (the lowest price of each kind over the region's zones), and each
(cloud, instance type) becomes one offer at instance granularity with its shape and a price per
term and region. Accelerator names go through :data:`ACCELERATOR_ALIASES` (one table; a name can
mean another part at some clouds, see :data:`PROVIDER_ALIASES` and :data:`INSTANCE_HINTS`).
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import CloudOffer, OfferPrice
from aitco.errors import InputError
from aitco.fileio import open_input

#: Bytes in a GiB over bytes in a GB (SkyPilot gives host memory in GiB; the catalog in GB).
GB_PER_GIB = 1.073741824
#: Spot values SkyPilot's fetchers write where a cloud has no spot price.
_NO_PRICE_SENTINELS = (0.0, 99999999.0)

#: SkyPilot accelerator name -> catalog accelerator id; None: the part is not in the catalog
#: (its rows are skipped and counted). The default meaning of a name; see PROVIDER_ALIASES.
ACCELERATOR_ALIASES: dict[str, str | None] = {
    "A10": "a10",
    "A10G": "a10g",
    "A100": "a100-sxm4-40gb",  # 40 GB at AWS p4d, GCP a2-highgpu, Lambda, Vast, OCI
    "A100-80GB": "a100-sxm4-80gb",
    "A100-80G": "a100-sxm4-80gb",
    "A100-80GB-SXM": "a100-sxm4-80gb",
    "A16": None,
    "A30": None,
    "A40": "a40",
    "A4000": None,
    "A4500": None,
    "A5000": None,
    "A6000": None,
    "A800": None,
    "B200": "b200",
    "GH200": None,
    "H100": "h100-sxm5-80gb",
    "H100-SXM": "h100-sxm5-80gb",
    "H100-NVL": "h100-nvl-94gb",
    "H100-MEGA": "h100-sxm5-80gb",
    "H200": "h200-sxm-141gb",
    "H200-SXM": "h200-sxm-141gb",
    "L4": "l4",
    "L40": None,
    "L40S": "l40s",
    "MI300X": "mi300x",
    "P100": None,
    "RTX2000Ada": None,
    "RTX3060": None,
    "RTX3070": None,
    "RTX3080": None,
    "RTX3080Ti": None,
    "RTX3090": None,
    "RTX4000-Ada": None,
    "RTX4000Ada": None,
    "RTX4070Ti": None,
    "RTX4080": None,
    "RTX4090": "rtx-4090",
    "RTX5090": None,
    "RTX6000": None,  # Quadro RTX 6000 (Turing), not the RTX 6000 Ada
    "RTX6000-Ada": "rtx-6000-ada",
    "RTX6000Ada": "rtx-6000-ada",
    "RTXA4000": None,
    "RTXA4500": None,
    "RTXA5000": None,
    "RTXA6000": None,
    "RTXPro6000": None,
    "T4": None,
    "Trainium": "trainium1",
    "V100": None,  # the 16 GB part (AWS p3, Lambda, OCI); the catalog has the 32 GB SXM2 only
    "V100-32GB": "v100-sxm2-32gb",
    "V100-32G": "v100-sxm2-32gb",
}

#: (cloud, name) -> catalog id where a cloud uses a name for another part (snapshot README).
PROVIDER_ALIASES: dict[tuple[str, str], str | None] = {
    ("mithril", "A100"): "a100-sxm4-80gb",  # a100-80gb.sxm.*
    ("cudo", "A100"): "a100-pcie-80gb",  # 80 GB PCIe
    ("cudo", "H100"): "h100-nvl-94gb",  # Cudo's H100 is the NVL part; H100-SXM is separate
    ("runpod", "A100-80GB"): "a100-pcie-80gb",  # A100-80GB-SXM is separate
    ("runpod", "H100"): "h100-pcie-80gb",  # H100-SXM and H100-NVL are separate
}

#: Instance-name hints applied in order: (regex on the lower-case instance, id, new id).
#: PrimeIntellect names 40 and 80 GB A100s both 'A100' (only the instance says 80GB);
#: 'NVLINK' in a name is the fabric, not the NVL part.
_NVL = r"nvl(?!ink)"
INSTANCE_HINTS: tuple[tuple[str, str, str | None], ...] = (
    (r"80gb?", "a100-sxm4-40gb", "a100-sxm4-80gb"),
    (_NVL, "h100-sxm5-80gb", "h100-nvl-94gb"),
    (_NVL, "h100-pcie-80gb", "h100-nvl-94gb"),
    (_NVL, "h200-sxm-141gb", None),  # H200 NVL: not in the catalog
    (r"pcie?", "h100-sxm5-80gb", "h100-pcie-80gb"),
    (r"pcie?", "a100-sxm4-80gb", "a100-pcie-80gb"),
    (r"pcie?", "a100-sxm4-40gb", None),  # A100 40 GB PCIe: not in the catalog
)

#: TPU slice name -> (catalog id, whether the size suffix counts TensorCores, 2 per chip).
#: Per GCP naming, v2/v3/v4/v5p suffixes count TensorCores, v5litepod/v6e suffixes count chips.
TPU_SLICES: dict[str, tuple[str | None, bool]] = {
    "v2": (None, True),
    "v3": (None, True),
    "v4": ("tpu-v4", True),
    "v5p": ("tpu-v5p", True),
    "v5litepod": ("tpu-v5e", False),
    "v6e": ("tpu-v6e", False),
}
_TENSORCORES_PER_CHIP = 2
_TPU_RE = re.compile(r"^tpu-(v\d+[a-z]*)-(\d+)$")

#: SkyPilot cloud name -> catalog provider id where they differ.
PROVIDERS = {"vast": "vastai", "do": "digitalocean"}
#: Clouds whose catalog writes placeholder host shapes (not the real vCPUs/memory).
_PLACEHOLDER_SHAPES = frozenset({"vastai"})

_SKYPILOT_COLS = {
    "instance": "InstanceType",
    "accelerator": "AcceleratorName",
    "count": "AcceleratorCount",
    "vcpus": "vCPUs",
    "memory_gib": "MemoryGiB",
    "od": "Price",
    "spot": "SpotPrice",
    "region": "Region",
    "zone": "AvailabilityZone",
}
_SNAPSHOT_COLS = {
    "provider": "provider",
    "instance": "instance_type",
    "accelerator": "accelerator",
    "count": "accelerators_per_instance",
    "vcpus": "vcpus",
    "memory_gib": "memory_gib",
    "od": "on_demand_usd_per_instance_h",
    "spot": "spot_usd_per_instance_h",
    "region": "region",
    "zone": "availability_zone",
    "commit": "source_commit",
    "path": "source_path",
}
_REQUIRED = ("instance", "accelerator", "count", "region", "od")


@dataclass(frozen=True)
class Row:
    """One instance type in one zone, as read (prices per instance-hour, None where blank)."""

    provider: str
    instance: str
    accelerator: str
    count: float
    vcpus: float | None
    memory_gib: float | None
    region: str
    od_usd_per_h: float | None
    spot_usd_per_h: float | None
    file: str
    line: int
    commit: str = ""


@dataclass
class ImportResult:
    """Offers built from SkyPilot rows, and what was left out and why."""

    offers: list[CloudOffer] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    rows_read: int = 0
    regions: int = 0
    spot_above_on_demand: int = 0
    merged: int = 0
    newer_kept: int = 0
    superseded: int = 0

    def skip(self, reason: str, rows: int = 1) -> None:
        """Count ``rows`` rows left out for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + rows


def resolve_accelerator(provider: str, name: str, instance: str) -> tuple[str | None, int]:
    """Catalog accelerator id of a SkyPilot accelerator name, and the chips it stands for.

    Parameters
    ----------
    provider : str
        Catalog provider id (``aws``, ``gcp``, ``runpod``, ...).
    name : str
        SkyPilot ``AcceleratorName`` (``A100-80GB``, ``H100``, ``tpu-v5p-8``, ...).
    instance : str
        Instance type (some clouds say the variant only there, e.g. ``..._80GB_...``).

    Returns
    -------
    (str or None, int)
        The catalog id (None: the part is not in the catalog) and, for a TPU slice, the number
        of chips in the slice (0 otherwise: use the row's accelerator count).

    Raises
    ------
    InputError
        ``name`` is in no alias table (add it to :data:`ACCELERATOR_ALIASES`).
    """
    tpu = _TPU_RE.match(name)
    if tpu:
        gen, size = tpu.group(1), int(tpu.group(2))
        if gen not in TPU_SLICES:
            raise InputError("AcceleratorName", name, f"a TPU generation in {sorted(TPU_SLICES)}")
        acc, cores = TPU_SLICES[gen]
        return acc, max(1, size // _TENSORCORES_PER_CHIP if cores else size)
    if (provider, name) in PROVIDER_ALIASES:
        acc = PROVIDER_ALIASES[(provider, name)]
    elif name in ACCELERATOR_ALIASES:
        acc = ACCELERATOR_ALIASES[name]
    else:
        raise InputError(
            "AcceleratorName",
            name,
            "a name in aitco.catalog.skypilot.ACCELERATOR_ALIASES (add it there)",
        )
    low = instance.lower()
    for hint, frm, to in INSTANCE_HINTS:
        if acc == frm and re.search(hint, low):
            acc = to
    return acc, 0


def _float(raw: str | None, where: str, col: str) -> float | None:
    if raw is None or not raw.strip():
        return None
    try:
        return float(raw)
    except ValueError as exc:
        raise InputError(col, raw, "a number", hint=where) from exc


def _provider_from_path(path: Path) -> str | None:
    m = re.search(r"vms_([a-z0-9]+)_v\d+", path.name.lower())
    if m:
        return m.group(1)
    if path.name.lower() == "vms.csv" and path.parent.name:
        return path.parent.name.lower()
    return None


def read_rows(path: Path, provider: str | None = None) -> list[Row]:
    """Read a SkyPilot ``vms.csv`` (or the reference snapshot) by header name.

    Parameters
    ----------
    path : Path
        The CSV file.
    provider : str, optional
        The cloud of a SkyPilot file (default: from its file or folder name).

    Returns
    -------
    list of Row
        One row per CSV line with an instance type and an on-demand or spot price.
    """
    try:  # a regular file only: a FIFO or device is refused at once
        fh = open_input(path, field="FILE", newline="")
    except OSError as exc:
        raise InputError("FILE", str(path), "a readable SkyPilot vms.csv") from exc
    with fh:
        return parse_rows(fh, str(path), provider or _provider_from_path(path))


def parse_rows(lines: Iterable[str], label: str, provider: str | None) -> list[Row]:
    """Parse the lines of a SkyPilot ``vms.csv`` (or the reference snapshot) by header name.

    Parameters
    ----------
    lines : iterable of str
        The CSV text, line by line (a file, or ``text.splitlines(keepends=True)``).
    label : str
        Name of the file in messages and notes (a path, or ``<cloud>/vms.csv``).
    provider : str or None
        The cloud of a SkyPilot file (the snapshot names its cloud on each row).

    Returns
    -------
    list of Row
        One row per CSV line.
    """
    name = _label(label)
    reader = csv.DictReader(lines)
    header = set(reader.fieldnames or [])
    cols = _SNAPSHOT_COLS if "instance_type" in header else _SKYPILOT_COLS
    missing = [cols[k] for k in _REQUIRED if cols[k] not in header]
    if missing:
        raise InputError(
            "FILE",
            label,
            f"a SkyPilot vms.csv with the columns {', '.join(missing)} (header: "
            f"{', '.join(sorted(header)) or 'none'})",
        )
    if "provider" not in cols and not provider:
        raise InputError("--provider", None, f"the cloud of {name} (e.g. --provider aws)")
    rows = []
    for i, rec in enumerate(reader, start=2):
        where = f"{name} line {i}"
        cloud = (rec.get(cols.get("provider", ""), "") or provider or "").lower()
        cloud = PROVIDERS.get(cloud, cloud)
        acc_name = (rec.get(cols["accelerator"]) or "").strip()
        inst = (rec.get(cols["instance"]) or "").strip()
        if not inst and _TPU_RE.match(acc_name):
            inst = acc_name  # GCP TPU rows: the slice is the instance
        count = _float(rec.get(cols["count"]), where, cols["count"]) or 0.0
        spot = _float(rec.get(cols["spot"]), where, cols["spot"])
        rows.append(
            Row(
                provider=cloud,
                instance=inst,
                accelerator=acc_name,
                count=count,
                vcpus=_float(rec.get(cols["vcpus"]), where, cols["vcpus"]),
                memory_gib=_float(rec.get(cols["memory_gib"]), where, cols["memory_gib"]),
                region=(rec.get(cols["region"]) or "").strip(),
                od_usd_per_h=_float(rec.get(cols["od"]), where, cols["od"]),
                spot_usd_per_h=None if spot in _NO_PRICE_SENTINELS else spot,
                file=label,
                line=i,
                commit=(rec.get(cols.get("commit", ""), "") or "").strip(),
            )
        )
    return rows


def _label(file: str) -> str:
    """Short name of a file in notes: ``aws/vms.csv`` for SkyPilot's layout, else the name."""
    p = Path(file)
    return f"{p.parent.name}/{p.name}" if p.name.lower() == "vms.csv" and p.parent.name else p.name


def offer_id(provider: str, instance: str) -> str:
    """Catalog id of a cloud's instance type: ``<provider>-<instance>``, lowercase, hyphenated."""
    raw = f"{provider}-{instance}".lower().replace("_", "-").replace(" ", "-").replace(":", "-")
    out = re.sub(r"[^a-z0-9._/+-]", "", raw)
    return re.sub(r"-{2,}", "-", out)


def _min(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return min(vals) if vals else None


def build_offers(
    rows: Sequence[Row],
    *,
    source_keys: dict[str, str],
    as_of: dt.date,
    as_of_estimated: bool,
    catalog: Catalog | None = None,
    skip_unknown_names: bool = False,
) -> ImportResult:
    """Offers at instance granularity: zones collapsed per region, both price kinds.

    Parameters
    ----------
    rows : sequence of Row
        Rows from :func:`read_rows`.
    source_keys : dict
        File path -> source key the prices cite.
    as_of : datetime.date
        Date the prices applied (SkyPilot files are undated: the caller's date).
    as_of_estimated : bool
        Whether ``as_of`` was chosen by hand.
    catalog : Catalog, optional
        The catalog to merge into: an offer it has for the same cloud and instance keeps its id,
        and for each (term, region) the newer of the two prices is kept; the price it displaces
        joins the offer's ``price_history``.
    skip_unknown_names : bool
        Skip (and count) rows whose accelerator name is in no alias table instead of raising
        (``catalog update``: a live catalog can list parts added after this release).

    Returns
    -------
    ImportResult
        The offers, and the rows left out by reason.
    """
    res = ImportResult(rows_read=len(rows))
    groups: dict[tuple[str, str], dict[str, list[Row]]] = {}
    for r in rows:
        if not r.instance or r.instance.startswith("gpu-only-"):
            res.skip("GPU-only price without a host VM")
            continue
        if r.od_usd_per_h is None and r.spot_usd_per_h is None:
            res.skip("no price")
            continue
        groups.setdefault((r.provider, r.instance), {}).setdefault(r.region, []).append(r)
    known = catalog.accelerators if catalog is not None else None
    existing = {(o.provider, o.instance): o for o in catalog.offers.values()} if catalog else {}
    for (cloud, inst), by_region in sorted(groups.items()):
        first = next(iter(by_region.values()))[0]
        n_rows = sum(len(rs) for rs in by_region.values())
        try:
            acc, chips = resolve_accelerator(cloud, first.accelerator, inst)
        except InputError:
            if not skip_unknown_names:
                raise
            res.skip(f"accelerator name not in the alias table: {first.accelerator}", n_rows)
            continue
        if acc is None:
            res.skip(f"accelerator not in the catalog: {first.accelerator}", n_rows)
            continue
        if known is not None and acc not in known:
            res.skip(f"alias to an unknown accelerator id: {acc}", n_rows)
            continue
        count = chips or round(first.count)
        if count < 1:
            res.skip("no accelerator count", n_rows)
            continue
        prices: list[OfferPrice] = []
        for region, rs in sorted(by_region.items()):
            od = _min(r.od_usd_per_h for r in rs)
            spot = _min(r.spot_usd_per_h for r in rs)
            commit = next((r.commit for r in rs if r.commit), "")
            src = source_keys[rs[0].file]
            base = f"SkyPilot {_label(rs[0].file)} line {rs[0].line}"
            base += f" @{commit[:8]}" if commit else ""
            base += f"; min over {len(rs)} zone(s)" if len(rs) > 1 else ""
            common: dict[str, Any] = {
                "region": region or "all",
                "as_of": as_of,
                "as_of_estimated": as_of_estimated,
                "source": src,
            }
            if od is not None:
                prices.append(OfferPrice(term="on_demand", usd_per_hour=od, note=base, **common))
            if spot is not None:
                note = base
                if od is not None and spot > od:
                    res.spot_above_on_demand += 1
                    note += "; spot above on-demand in the source (kept as is)"
                prices.append(OfferPrice(term="spot", usd_per_hour=spot, note=note, **common))
            res.regions += 1
        if not prices:
            res.skip("no price")
            continue
        old = existing.get((cloud, inst))
        history: list[OfferPrice] = []
        if old is not None:
            prices = _newer(old, prices, res)
            kept = {id(p) for p in prices}
            history = [*old.price_history, *(p for p in old.prices if id(p) not in kept)]
        vcpus = first.vcpus if first.vcpus and cloud not in _PLACEHOLDER_SHAPES else None
        mem = first.memory_gib if first.memory_gib and cloud not in _PLACEHOLDER_SHAPES else None
        res.offers.append(
            CloudOffer(
                id=old.id if old is not None else offer_id(cloud, inst),
                name=f"{cloud} {inst}",
                provider=cloud,
                instance=inst,
                accelerator=acc,
                system=old.system if old is not None else None,
                accelerators_per_instance=count,
                vcpus=round(vcpus) if vcpus else (old.vcpus if old else None),
                host_memory_gb=round(mem * GB_PER_GIB, 1) if mem else None,
                cluster_network=old.cluster_network if old is not None else None,
                max_instances=old.max_instances if old is not None else None,
                prices=prices,
                price_history=history,
            )
        )
    return res


def _newer(old: CloudOffer, new: list[OfferPrice], res: ImportResult) -> list[OfferPrice]:
    """Union of an offer's prices, the newer ``as_of`` winning per (term, region).

    A price with a hand-chosen (estimated) date replaces only another estimated one, and is not
    added at all when the offer has a price of its term with a known, later date.
    """
    res.merged += 1
    out = {(p.term, p.region): p for p in old.prices}
    # the newest known (not estimated) date of each term: the offer was repriced then (e.g. AWS
    # cut P4/P5 prices in June 2025), so an estimated-date price older than it is not added
    known: dict[str, dt.date] = {}
    for p in old.prices:
        if not p.as_of_estimated and p.as_of > known.get(p.term, dt.date.min):
            known[p.term] = p.as_of
    for p in new:
        if p.as_of_estimated and p.as_of < known.get(p.term, dt.date.min):
            res.superseded += 1
            continue
        cur = out.get((p.term, p.region))
        # a hand-chosen date never displaces a price whose date is known
        beats = cur is not None and p.as_of > cur.as_of
        beats = beats and (not p.as_of_estimated or cur is None or cur.as_of_estimated)
        if cur is None or beats:
            if cur is not None:
                res.newer_kept += 1
            out[(p.term, p.region)] = p
    return list(out.values())


def overlay_document(
    files: Sequence[Path],
    *,
    provider: str | None = None,
    as_of: dt.date | None = None,
    as_of_estimated: bool = False,
    catalog: Catalog | None = None,
) -> tuple[dict[str, Any], ImportResult]:
    """Read SkyPilot CSVs and return a catalog overlay (``sources`` + ``offers``) and a summary.

    Each file becomes a source (its name, path and date); without ``as_of`` the prices are dated
    by the file's modification day and marked ``as_of_estimated`` (SkyPilot files are undated).
    """
    rows: list[Row] = []
    sources: dict[str, dict[str, Any]] = {}
    keys: dict[str, str] = {}
    for f in files:
        file_rows = read_rows(f, provider)
        rows.extend(file_rows)
        try:
            day = dt.date.fromtimestamp(f.stat().st_mtime)
        except OSError:  # pragma: no cover - read_rows has read it
            day = dt.date.today()
        key = "skypilot-file-" + re.sub(r"[^a-z0-9]+", "-", f.stem.lower()).strip("-")
        keys[str(f)] = key
        clouds = sorted({r.provider for r in file_rows})
        sources[key] = {
            "title": f"SkyPilot catalog file {f.name} ({', '.join(clouds)}; "
            f"{len(file_rows)} rows; imported by aitco catalog import skypilot)",
            "document": str(f),
            "retrieved": day,
            "note": "SkyPilot vms.csv files carry no date; prices dated "
            + (
                f"{as_of} ({'estimated' if as_of_estimated else 'given'})"
                if as_of
                else f"{day} (file date, estimated)"
            ),
        }
    when = as_of or max((s["retrieved"] for s in sources.values()), default=dt.date.today())
    return _document(
        rows,
        sources,
        keys,
        as_of=when,
        as_of_estimated=as_of is None or as_of_estimated,
        catalog=catalog,
    )


def _document(
    rows: Sequence[Row],
    sources: dict[str, dict[str, Any]],
    keys: dict[str, str],
    *,
    as_of: dt.date,
    as_of_estimated: bool,
    catalog: Catalog | None,
    skip_unknown_names: bool = False,
    defined: Catalog | None = None,
) -> tuple[dict[str, Any], ImportResult]:
    """Build the overlay (``sources`` + ``offers``) of rows read from SkyPilot files.

    One path for ``catalog import skypilot`` (local files) and ``catalog update skypilot``.
    """
    res = build_offers(
        rows,
        source_keys=keys,
        as_of=as_of,
        as_of_estimated=as_of_estimated,
        catalog=catalog,
        skip_unknown_names=skip_unknown_names,
    )
    # an offer is written in full unless the catalog the overlay is read over defines it
    # (``defined``: the catalog without the file being replaced, when that differs)
    base = defined if defined is not None else catalog
    shipped = base.offers if base is not None else {}
    new_keys = set(keys.values())
    offers = [_offer_yaml(o, shipped.get(o.id), new_keys) for o in res.offers]
    return {"sources": sources, "offers": offers}, res


#: Schema version of the SkyPilot catalog layout read by ``catalog update skypilot``.
SKYPILOT_SCHEMA = "v7"
#: Public raw copy of the SkyPilot catalog repository (its default branch), as SkyPilot itself
#: reads it (``sky/skylet/constants.py``: ``HOSTED_CATALOG_DIR_URL`` is this + ``/catalogs``;
#: SkyPilot's S3 mirror ``https://skypilot-catalog.s3.us-east-1.amazonaws.com`` has the layout too).
SKYPILOT_BASE_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master"
#: SkyPilot clouds read by default: those aitco ships offers for that publish a v7 ``vms.csv``
#: (others, e.g. azure, oci, nebius, shadeform, primeintellect: ``--clouds``).
DEFAULT_CLOUDS = ("aws", "gcp", "lambda", "runpod", "cudo", "vast")


def catalog_url(base_url: str, cloud: str) -> str:
    """URL of a cloud's ``vms.csv`` under a SkyPilot catalog base URL."""
    return f"{base_url.rstrip('/')}/catalogs/{SKYPILOT_SCHEMA}/{cloud}/vms.csv"


def fetched_document(
    files: Sequence[tuple[str, str, str, dt.datetime]],
    *,
    catalog: Catalog | None = None,
    defined: Catalog | None = None,
) -> tuple[dict[str, Any], ImportResult]:
    """Overlay of SkyPilot ``vms.csv`` files fetched from a server (``catalog update``).

    Parameters
    ----------
    files : sequence of (cloud, url, text, retrieved_at)
        Each file's SkyPilot cloud name, URL, CSV text and UTC retrieval time.
    catalog : Catalog, optional
        The catalog to merge into (same rules as :func:`overlay_document`).
    defined : Catalog, optional
        The catalog the overlay will be read over, when it differs from ``catalog`` (an update
        that replaces an overlay merges its prices, but must define its offers again).

    Returns
    -------
    (dict, ImportResult)
        The overlay and its summary. Every price is dated with the day its file was retrieved
        (SkyPilot's files carry no date; its fetchers refresh them from the clouds' price lists);
        accelerator names that no alias table knows are skipped and counted, not an error.
    """
    rows: list[Row] = []
    sources: dict[str, dict[str, Any]] = {}
    keys: dict[str, str] = {}
    days: dict[str, dt.date] = {}
    for cloud, url, text, when in files:
        label = f"{cloud}/vms.csv"
        file_rows = parse_rows(text.splitlines(keepends=True), label, cloud)
        rows.extend(file_rows)
        key = "skypilot-update-" + re.sub(r"[^a-z0-9]+", "-", cloud.lower()).strip("-")
        keys[label] = key
        days[label] = when.date()
        sources[key] = {
            "title": f"SkyPilot catalog {SKYPILOT_SCHEMA} {label} ({len(file_rows)} rows), "
            "as retrieved by aitco catalog update skypilot",
            "url": url,
            "retrieved": when.date(),
            "note": f"retrieved {when.isoformat()}; SkyPilot's fetchers refresh the file from the "
            "cloud's price list and the file carries no date: its prices are dated the day "
            "they were retrieved",
        }
    by_day: dict[dt.date, list[Row]] = {}
    for r in rows:
        by_day.setdefault(days[r.file], []).append(r)
    if len(by_day) <= 1:
        day = next(iter(by_day), dt.date.today())
        return _document(
            rows, sources, keys, as_of=day, as_of_estimated=False, catalog=catalog,
            skip_unknown_names=True, defined=defined,
        )  # fmt: skip
    # files cached on different days (--offline): each cloud's prices keep their own day
    doc: dict[str, Any] = {"sources": sources, "offers": []}
    total = ImportResult()
    for day, rs in sorted(by_day.items()):
        part, res = _document(
            rs, sources, keys, as_of=day, as_of_estimated=False, catalog=catalog,
            skip_unknown_names=True, defined=defined,
        )  # fmt: skip
        doc["offers"].extend(part["offers"])
        _add(total, res)
    return doc, total


def _add(total: ImportResult, res: ImportResult) -> None:
    total.offers.extend(res.offers)
    for why, n in res.skipped.items():
        total.skip(why, n)
    total.rows_read += res.rows_read
    total.regions += res.regions
    total.spot_above_on_demand += res.spot_above_on_demand
    total.merged += res.merged
    total.newer_kept += res.newer_kept
    total.superseded += res.superseded


_SHAPE = ("vcpus", "host_memory_gb")


def _offer_yaml(o: CloudOffer, old: CloudOffer | None, new_keys: set[str]) -> dict[str, Any]:
    """YAML form of an offer; for one the catalog has, only its prices and missing shape."""
    d = o.model_dump(mode="python", exclude={"provenance"}, exclude_none=True)
    if old is not None:
        d = {"id": o.id} | {k: d[k] for k in _SHAPE if k in d and getattr(old, k) is None}
    new_src = next((p.source for p in o.prices if p.source in new_keys), None)
    d["source"] = new_src or o.prices[0].source
    d["prices"] = [_price_yaml(p) for p in o.prices]
    d.pop("price_history", None)
    if o.price_history:
        d["price_history"] = [_price_yaml(p) for p in o.price_history]
    return d


def _price_yaml(p: OfferPrice) -> dict[str, Any]:
    return p.model_dump(mode="python", exclude_none=True, exclude_defaults=True) | {
        "term": p.term,
        "region": p.region,
        "source": p.source,
    }

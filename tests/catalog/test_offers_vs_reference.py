"""Every shipped offer price traces back to a row of shared/reference/cloud-prices.csv."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

PROVIDERS = {
    "AWS": "aws", "GCP": "gcp", "Azure": "azure", "Lambda": "lambda", "RunPod": "runpod",
    "Hot Aisle": "hotaisle", "DigitalOcean": "digitalocean", "Oracle OCI": "oci",
    "Cudo Compute": "cudo", "Vast.ai": "vastai", "Salad": "salad", "CoreWeave": "coreweave",
    "Spheron": "spheron",
}  # fmt: skip


@pytest.fixture(scope="module")
def rows(fixtures_dir: Path) -> list[dict[str, str]]:
    path = fixtures_dir / "reference" / "cloud-prices.csv"
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"\d+\.\d+|\d+", text)]


#: Dated sources of the 2026 refresh (issue 33): a price citing one of them is traced to that
#: source (its own URL and date), not to the reference CSV.
REFRESH_SOURCES = frozenset(
    {
        "gpu-price-index-2026-10-10",
        "ai-infra-index-2026-03-16",
        "techbytes-lambda-2026-05",
        "vantage-aws-2025-11",
        "cyclenerd-gcp-pricing-2026-07-30",
        "digitalocean-droplet-pricing-2026-05",
    }
)


def test_every_offer_price_is_in_the_reference(catalog, rows) -> None:
    by_instance: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in rows:
        by_instance.setdefault((PROVIDERS[r["provider"]], r["instance"].strip()), []).append(r)
    for o in catalog.offers.values():
        if o.provenance["provider"].source.key != "aitco-shared-reference":
            continue  # not imported from the CSV
        cands = by_instance.get((o.provider, o.instance))
        assert cands, f"{o.id}: no reference row for {o.provider} {o.instance}"
        for p in [*o.prices, *o.price_history]:
            if p.source in REFRESH_SOURCES:
                continue
            if p.term in ("on_demand", "spot"):
                col = "on_demand_usd_per_hour" if p.term == "on_demand" else "spot_usd_per_hour"
                vals = [float(r[col]) for r in cands if r[col]]
            else:  # committed prices are quoted in the notes, per instance or per accelerator
                vals = [
                    v * k
                    for r in cands
                    for v in _numbers(r["notes"])
                    for k in (1, o.accelerators_per_instance)
                ]
            assert any(abs(v - p.usd_per_hour) < 1e-6 for v in vals), (o.id, p.term, p.usd_per_hour)


#: reference-CSV instance names the catalog spells as the cloud does (issue 13: whole-instance
#: prices from the SkyPilot reference replaced the CSV's GPU-only rows)
RENAMED = {"g2-standard (L4 x8)": "g2-standard-96"}


def test_every_mapped_reference_row_is_imported(catalog, rows) -> None:
    offers = {(o.provider, o.instance) for o in catalog.offers.values()}
    skipped = {"B300", "RTX-A6000", "GH200"}  # accelerators not in the catalog
    for r in rows:
        if r["accelerator"] in skipped:
            continue
        inst = RENAMED.get(r["instance"].strip(), r["instance"].strip())
        assert (PROVIDERS[r["provider"]], inst) in offers, r["instance"]

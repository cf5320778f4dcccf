from __future__ import annotations

from pathlib import Path

import pytest

from aitco.catalog.loader import catalog_json, load_catalog, missing_provenance
from aitco.catalog.schema import KINDS
from aitco.errors import CatalogError, UnknownIdError


def test_every_value_has_source_and_date(catalog):
    missing = {}
    for kind in KINDS:
        for eid, entry in catalog.kind(kind).items():
            gaps = missing_provenance(entry)
            if gaps:
                missing[f"{kind}.{eid}"] = gaps
    assert not missing, f"values without a source and date: {missing}"


def test_show_lists_source_and_date(catalog):
    data = catalog_json(catalog.accelerator("h100-sxm5-80gb"))
    fields = {r["field"]: r for r in data["values"]}
    assert fields["memory_gb"]["value"] == 80
    for row in data["values"]:
        assert row["source"], row
        assert row["retrieved"], row


def test_unknown_id_suggests_closest(catalog):
    with pytest.raises(UnknownIdError) as exc:
        catalog.accelerator("h100-sxm5")
    assert "h100-sxm5-80gb" in str(exc.value)


def test_overlay_overrides_value_and_becomes_source(tmp_path: Path):
    f = tmp_path / "mine.yaml"
    f.write_text(
        "kind: accelerators\nentries:\n  - id: h100-sxm5-80gb\n    tdp_w: 650\n", encoding="utf-8"
    )
    cat = load_catalog([f], use_env=False)
    acc = cat.accelerator("h100-sxm5-80gb")
    assert acc.tdp_w == 650
    assert acc.provenance["tdp_w"].source.document == str(f.resolve())
    # untouched values keep their original source
    assert acc.provenance["memory_gb"].source.key != acc.provenance["tdp_w"].source.key


def test_overlay_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    f = tmp_path / "env.yaml"
    f.write_text(
        "factors:\n  - id: my.factor\n    category: other\n    value: 0.5\n    unit: fraction\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("AITCO_CATALOG", str(f))
    assert load_catalog().factor("my.factor").value == 0.5


def test_bad_overlay_names_file_field_value(tmp_path: Path):
    f = tmp_path / "bad.yaml"
    text = "kind: accelerators\nentries:\n  - id: h100-sxm5-80gb\n    memory_gb: -3\n"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(CatalogError) as exc:
        load_catalog([f], use_env=False)
    msg = str(exc.value)
    assert "bad.yaml" in msg
    assert "memory_gb" in msg
    assert "-3" in msg
    assert "greater than 0" in msg

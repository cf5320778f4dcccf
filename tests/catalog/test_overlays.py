"""User overlays add offers, factors and models; each value they set is sourced to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitco.catalog.loader import load_catalog, missing_provenance
from aitco.errors import CatalogError, UnknownIdError


def test_overlay_adds_an_offer_with_its_own_source(tmp_path: Path) -> None:
    f = tmp_path / "quote.yaml"
    f.write_text(
        """
kind: offers
sources:
  my-quote: {title: "Reseller quote 42", document: "quotes/42.pdf", retrieved: 2026-11-30}
entries:
  - id: acme-h100x8
    provider: acme
    instance: h100x8
    accelerator: h100-sxm5-80gb
    system: hgx-h100-8
    accelerators_per_instance: 8
    prices:
      - {term: reserved_1y, region: us, usd_per_hour: 16.0, as_of: 2026-11-30, source: my-quote}
""",
        encoding="utf-8",
    )
    cat = load_catalog([f], use_env=False)
    o = cat.offers["acme-h100x8"]
    assert o.usd_per_accel_hour("reserved_1y") == pytest.approx(2.0)
    assert o in cat.offers_for("h100-sxm5-80gb")
    assert o.provenance["prices.0.usd_per_hour"].source.key == "my-quote"
    assert o.provenance["provider"].source.document == str(f.resolve())
    assert not missing_provenance(o)


def test_overlay_price_with_unknown_source_key_is_rejected(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(
        "kind: offers\nentries:\n  - id: x-1\n    provider: x\n    instance: i\n"
        "    accelerator: l4\n    accelerators_per_instance: 1\n    prices:\n"
        "      - {term: spot, region: us, usd_per_hour: 0.1, as_of: 2026-01-01, source: nope}\n",
        encoding="utf-8",
    )
    with pytest.raises(UnknownIdError) as exc:
        load_catalog([f], use_env=False)
    assert "nope" in str(exc.value)


def test_overlay_overrides_a_factor(tmp_path: Path) -> None:
    f = tmp_path / "power.yaml"
    f.write_text(
        "kind: factors\nentries:\n  - id: electricity.usd-per-kwh.us\n    value: 0.05\n",
        encoding="utf-8",
    )
    cat = load_catalog([f], use_env=False)
    fac = cat.factor("electricity.usd-per-kwh.us")
    assert fac.value == 0.05
    assert fac.provenance["value"].source.document == str(f.resolve())
    assert fac.provenance["unit"].source.key == "ycharts-eia-industrial-2025"  # untouched value


def test_overlay_negative_price_names_file_field_value(tmp_path: Path) -> None:
    f = tmp_path / "neg.yaml"
    f.write_text(
        "kind: accelerators\nentries:\n  - id: l4\n"
        "    price: {usd: -5, as_of: 2026-01-01, kind: list}\n",
        encoding="utf-8",
    )
    with pytest.raises(CatalogError) as exc:
        load_catalog([f], use_env=False)
    msg = str(exc.value)
    assert "neg.yaml" in msg
    assert "price.usd" in msg
    assert "-5" in msg


def test_model_yaml_path_resolves(tmp_path: Path, catalog) -> None:
    f = tmp_path / "tiny.yaml"
    f.write_text(
        "id: tiny-llama-like\nn_layers: 2\nd_model: 256\nn_heads: 4\nd_ff: 688\nvocab_size: 1000\n",
        encoding="utf-8",
    )
    m = catalog.resolve_model(str(f))
    assert m.id == "tiny-llama-like"
    assert not missing_provenance(m)


def test_overlay_wrong_type_and_unknown_dtype(tmp_path: Path) -> None:
    f = tmp_path / "typ.yaml"
    f.write_text("kind: accelerators\nentries:\n  - id: l4\n    memory_gb: eighty\n", "utf-8")
    with pytest.raises(CatalogError) as exc:
        load_catalog([f], use_env=False)
    assert "memory_gb" in str(exc.value)
    assert "eighty" in str(exc.value)
    g = tmp_path / "dtype.yaml"
    g.write_text("kind: accelerators\nentries:\n  - id: l4\n    peak_tflops: {fp9: 3}\n", "utf-8")
    with pytest.raises(CatalogError, match="fp9"):
        load_catalog([g], use_env=False)


def test_cli_overlay_bad_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aitco.cli.app import main

    f = tmp_path / "neg.yaml"
    f.write_text(
        "kind: offers\nentries:\n  - id: aws-g6.xlarge\n    prices:\n"
        "      - {term: on_demand, region: us, usd_per_hour: -1, as_of: 2026-01-01,"
        " source: vantage-aws-2026}\n",
        "utf-8",
    )
    with pytest.raises(SystemExit) as exc:
        main(["catalog", "check", str(f)])
    _, err = capsys.readouterr()
    assert exc.value.code == 2
    assert "Traceback" not in err
    assert "usd_per_hour" in err

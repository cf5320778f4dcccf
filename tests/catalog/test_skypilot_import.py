"""``aitco catalog import skypilot``: SkyPilot catalogs -> offers that compare uses (issue 13)."""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path

import pytest
import yaml

from aitco.catalog.loader import builtin_overlays, load_catalog
from aitco.catalog.schema import CloudOffer, OfferPrice
from aitco.catalog.skypilot import (
    ACCELERATOR_ALIASES,
    PROVIDER_ALIASES,
    ImportResult,
    _newer,
    overlay_document,
    read_rows,
    resolve_accelerator,
)
from aitco.errors import InputError

DATA = Path(__file__).parent / "data"
#: (provider, accelerator, instance_type) of every row of shared/reference/skypilot/gpu_offers.csv
NAMES = DATA / "skypilot_snapshot_names.csv"


@pytest.fixture(scope="module")
def fixtures() -> list[Path]:
    """Copies of shared/fixtures/skypilot_vms_{aws,lambda}_v7.csv."""
    return sorted(DATA.glob("skypilot_vms_*_v7.csv"))


def _names(path: Path) -> set[tuple[str, str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return {(r["provider"], r["accelerator"], r["instance_type"]) for r in csv.DictReader(fh)}


def test_names_list_is_the_snapshots(shared_dir: Path) -> None:
    assert _names(shared_dir / "reference" / "skypilot" / "gpu_offers.csv") == _names(NAMES)


def test_every_snapshot_name_has_an_alias(catalog) -> None:
    """Each accelerator name of the snapshot resolves: to a catalog id, or to 'not in catalog'."""
    names = _names(NAMES)
    assert len({n for _p, n, _i in names}) > 60
    for provider, name, inst in sorted(names):
        acc, _chips = resolve_accelerator(provider, name, inst)
        assert acc is None or acc in catalog.accelerators, (provider, name, inst, acc)
    for acc in [*ACCELERATOR_ALIASES.values(), *PROVIDER_ALIASES.values()]:
        assert acc is None or acc in catalog.accelerators, acc


@pytest.mark.parametrize(
    ("provider", "name", "instance", "want"),
    [
        ("aws", "A100", "p4d.24xlarge", "a100-sxm4-40gb"),  # AWS A100 = 40 GB
        ("lambda", "A100", "gpu_8x_a100", "a100-sxm4-40gb"),
        ("mithril", "A100", "a100-80gb.sxm.8x", "a100-sxm4-80gb"),  # 80 GB at Mithril
        ("cudo", "A100", "epyc-genoa-a100-pcie_8x96v192gb", "a100-pcie-80gb"),
        ("primeintellect", "A100", "x__8xA100_80GB__1", "a100-sxm4-80gb"),
        ("primeintellect", "A100", "x__8xA100_40GB__1", "a100-sxm4-40gb"),
        ("aws", "A100-80GB", "p4de.24xlarge", "a100-sxm4-80gb"),
        ("runpod", "A100-80GB", "1x_A100-80GB_SECURE", "a100-pcie-80gb"),
        ("runpod", "A100-80GB-SXM", "1x_A100-80GB-SXM_SECURE", "a100-sxm4-80gb"),
        ("aws", "H100", "p5.48xlarge", "h100-sxm5-80gb"),
        ("lambda", "H100", "gpu_1x_h100_pcie", "h100-pcie-80gb"),
        ("runpod", "H100", "1x_H100_SECURE", "h100-pcie-80gb"),
        ("runpod", "H100-SXM", "1x_H100-SXM_SECURE", "h100-sxm5-80gb"),
        ("runpod", "H100-NVL", "1x_H100-NVL_SECURE", "h100-nvl-94gb"),
        ("cudo", "H100", "epyc-genoa-h100-nvl-pcie_1x12v24gb", "h100-nvl-94gb"),
        ("shadeform", "H200", "boostrun_H200-sxm5x8-NVLINK", "h200-sxm-141gb"),  # NVLINK != NVL
        ("aws", "V100", "p3.2xlarge", None),  # 16 GB part: not in the catalog
        ("aws", "V100-32GB", "p3dn.24xlarge", "v100-sxm2-32gb"),
    ],
)
def test_alias_traps(provider: str, name: str, instance: str, want: str | None) -> None:
    assert resolve_accelerator(provider, name, instance)[0] == want


@pytest.mark.parametrize(
    ("name", "want", "chips"),
    [("tpu-v5p-8", "tpu-v5p", 4), ("tpu-v4-64", "tpu-v4", 32), ("tpu-v6e-8", "tpu-v6e", 8),
     ("tpu-v5litepod-16", "tpu-v5e", 16), ("tpu-v3-8", None, 4)],
)  # fmt: skip
def test_tpu_slices_count_chips(name: str, want: str | None, chips: int) -> None:
    assert resolve_accelerator("gcp", name, name) == (want, chips)


def test_unknown_name_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="ACCELERATOR_ALIASES"):
        resolve_accelerator("aws", "X9000", "x9.large")


def test_columns_are_read_by_header(tmp_path: Path, fixtures: list[Path]) -> None:
    """The same file with its columns in another order gives the same rows."""
    aws = next(f for f in fixtures if "aws" in f.name)
    with open(aws, encoding="utf-8", newline="") as fh:
        recs = list(csv.DictReader(fh))
    cols = list(reversed(list(recs[0])))
    shuffled = tmp_path / "skypilot_vms_aws_v7.csv"
    with open(shuffled, "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(recs)
    a = [(r.instance, r.region, r.od_usd_per_h, r.spot_usd_per_h) for r in read_rows(aws)]
    b = [(r.instance, r.region, r.od_usd_per_h, r.spot_usd_per_h) for r in read_rows(shuffled)]
    assert a == b
    assert a  # the fixture is not empty


def test_missing_column_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "skypilot_vms_aws_v7.csv"
    f.write_text("InstanceType,Region\np5.48xlarge,us-east-1\n", "utf-8")
    with pytest.raises(InputError, match="AcceleratorName"):
        read_rows(f)


def test_fixtures_import(fixtures: list[Path], catalog) -> None:
    doc, res = overlay_document(fixtures, as_of=dt.date(2025, 6, 1), catalog=catalog)
    offers = {o.id: o for o in res.offers}
    p5 = offers["aws-p5.48xlarge"]
    # zones collapsed: one price per term and region; both kinds for AWS
    keys = [(p.term, p.region) for p in p5.prices]
    assert len(keys) == len(set(keys))
    assert {p.term for p in p5.prices} >= {"on_demand", "spot"}
    # a new offer carries its shape and cites the file
    assert "lambda-gpu-4x-a100" not in catalog.offers  # a shape the shipped catalog lacks
    new = offers["lambda-gpu-4x-a100"]
    assert new.accelerator == "a100-sxm4-40gb"
    assert new.accelerators_per_instance == 4
    assert new.vcpus == 120
    assert new.host_memory_gb == pytest.approx(800 * 1.073741824, rel=1e-3)
    assert {p.region for p in new.prices} >= {"us-east-1", "europe-central-1"}
    assert all(p.source == "skypilot-file-skypilot-vms-lambda-v7" for p in new.prices)
    assert not [p for p in new.prices if p.term == "spot"]  # Lambda has no spot
    src = doc["sources"]["skypilot-file-skypilot-vms-lambda-v7"]
    assert "skypilot_vms_lambda_v7.csv" in src["title"]
    assert res.skipped  # A6000, GH200, ... are counted, not dropped silently


def test_newer_price_wins_estimated_never_displaces_known() -> None:
    def price(day: str, usd: float, *, est: bool) -> OfferPrice:
        return OfferPrice(
            term="on_demand", region="us", usd_per_hour=usd, as_of=dt.date.fromisoformat(day),
            as_of_estimated=est, source="s",
        )  # fmt: skip

    old = CloudOffer(
        id="x-a", provider="x", instance="a", accelerator="l4", accelerators_per_instance=1,
        prices=[price("2025-03-01", 1.0, est=False)],
    )  # fmt: skip
    res = ImportResult()
    assert _newer(old, [price("2025-06-01", 2.0, est=False)], res)[0].usd_per_hour == 2.0
    assert _newer(old, [price("2025-06-01", 2.0, est=True)], res)[0].usd_per_hour == 1.0
    assert _newer(old, [price("2024-06-01", 2.0, est=False)], res)[0].usd_per_hour == 1.0
    # an estimated price for another region, older than the offer's known repricing: left out
    other = price("2025-02-01", 3.0, est=True).model_copy(update={"region": "eu"})
    assert [p.region for p in _newer(old, [other], res)] == ["us"]
    assert res.superseded == 1


def test_cli_import_then_compare_uses_it(
    tmp_path: Path, fixtures: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from aitco.cli.app import main

    out = tmp_path / "offers.yaml"
    args = ["catalog", "import", "skypilot", *map(str, fixtures), "-o", str(out), "--json"]
    with pytest.raises(SystemExit) as exc:
        main([*args, "--as-of", "2026-11-01"])
    assert exc.value.code in (0, None)
    summary = json.loads(capsys.readouterr().out)
    assert summary["offers_new"] >= 1
    assert summary["rows_read"] == sum(len(read_rows(f)) for f in fixtures)
    doc = yaml.safe_load(out.read_text("utf-8"))
    assert any(o["id"] == "lambda-gpu-4x-a100" for o in doc["offers"])

    cat = load_catalog([out], use_env=False)
    new = cat.offers["lambda-gpu-4x-a100"]
    assert new.provenance["prices.0.source"].source.title.startswith(
        "SkyPilot catalog file skypilot_vms_lambda_v7.csv"
    )
    scn = tmp_path / "scn.yaml"
    scn.write_text(
        "name: imported\nworkload: {kind: training, model: gpt2-124m, tokens: 1.0e8}\n"
        "options:\n  - {hardware: a100-sxm4-40gb, gpus: 4, pricing: on_demand,"
        " offer: lambda-gpu-4x-a100}\n",
        "utf-8",
    )
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(scn), "--json", "--catalog", str(out)])
    assert exc.value.code in (0, None)
    res = json.loads(capsys.readouterr().out)
    opt = res["options"][0]
    assert opt["offer"] == "lambda-gpu-4x-a100"
    want = new.usd_per_accel_hour("on_demand")
    assert opt["price_usd_per_gpu_h"] == pytest.approx(want)
    assert res["stale_inputs"] == []  # dated 2026-11-01: not stale


def test_shipped_overlay_loads_by_name(catalog) -> None:
    assert "skypilot-2025" in builtin_overlays()
    cat = load_catalog(["skypilot-2025"], use_env=False)
    providers = {o.provider for o in cat.offers.values()}
    assert providers - {o.provider for o in catalog.offers.values()} >= {"nebius", "mithril"}
    assert len(cat.offers) > len(catalog.offers) + 500

"""The shipped catalog data: contract ids present, sane physical values, dated prices, CLI views."""

from __future__ import annotations

import datetime as dt
import itertools
import json

import pytest

from aitco.cli.app import main

REQUIRED_ACCELERATORS = {
    "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-80gb", "h100-sxm5-80gb", "h100-pcie-80gb",
    "h800-sxm5-80gb", "h200-sxm-141gb", "b200", "gb200", "l40s", "l4", "a10g", "rtx-6000-ada",
    "rtx-4090", "mi300x", "mi325x", "gaudi2", "gaudi3", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e",
    "inferentia2", "trainium2", "jetson-agx-orin-64gb", "v100-sxm2-32gb",
}  # fmt: skip
FAMILIES = {
    "nvidia-volta", "nvidia-ampere", "nvidia-ada", "nvidia-hopper", "nvidia-blackwell",
    "nvidia-blackwell-rtx", "nvidia-orin", "amd-cdna3", "amd-cdna4", "intel-gaudi", "google-tpu",
    "aws-neuron",
}  # fmt: skip
#: Accelerators of 2025-26 price lists the catalog must carry (issue 31).
REQUIRED_2026_ACCELERATORS = {
    "mi350x", "mi355x", "b300", "gb300", "tpu-v7", "trainium3", "rtx-pro-6000-blackwell-server",
    "h20", "h200-nvl-141gb", "gh200-96gb",
}  # fmt: skip
#: Parts whose vendor states a low-precision rate more than twice the BF16 one (not sparsity):
#: Trainium3 runs MXFP8/MXFP4 at 2,517 TFLOP/s against 671 BF16 (AWS Neuron documentation).
LOWP_RATIO_EXCEPTIONS = {"trainium3"}
REQUIRED_FACTORS = {
    "electricity.usd-per-kwh.us", "electricity.usd-per-kwh.eu", "electricity.usd-per-kwh.cn",
    "electricity.usd-per-kwh.us-ia", "pue.air", "pue.liquid", "pue.hyperscale",
    "pue.industry-average", "power-conversion.loss", "idle-power.fraction-of-tdp",
    "utilization-power.training-fraction-of-tdp", "carbon.kg-per-kwh.us", "carbon.kg-per-kwh.eu",
    "carbon.kg-per-kwh.cn", "residual-value.datacenter-gpu", "residual-value.datacenter-gpu-pcie",
    "residual-value.workstation-gpu", "residual-value.edge", "useful-life.years",
    "failure.interruptions-per-gpu-hour", "failure.network-interruption-fraction", "restart.hours",
    "spot-interruption.per-hour.aws", "storage.usd-per-gb-month.s3-standard",
    "storage.usd-per-gb-month.s3-ia", "storage.usd-per-gb-month.glacier-deep",
    "storage.usd-per-gb-month.gcs-standard", "storage.usd-per-gb-month.azure-hot",
    "transfer.usd-per-gb.internet-egress-aws", "transfer.usd-per-gb.internet-egress-gcp",
    "transfer.usd-per-gb.internet-egress-azure", "transfer.usd-per-gb.cross-az-aws",
    "labour.usd-per-hour.sre", "labour.usd-per-hour.ml-engineer",
    "labour.usd-per-hour.datacenter-tech", "support.tier-rates.aws",
    "fragmentation.idle-fraction", "firmware.downtime-hours-per-year", "finance.discount-rate",
    "facility.colocation-usd-per-kw-month", "network.capex-fraction", "server.overhead-fraction",
}  # fmt: skip
#: Highest dense (non-sparse) BF16 peak of any shipped device (GB200: 2.5 PFLOP/s). [TFLOP/s]
MAX_DENSE_BF16_TFLOPS = 2600.0
#: Highest unidirectional scale-up bandwidth per device (NeuronLink-v4 of Trainium3: 2.56 TB/s
#: per device, 1,280 GB/s per direction; NVLink 5: 900 GB/s). [GB/s]
MAX_SCALE_UP_GB_S = 1300.0


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else 0
    return code, out, err


# ----------------------------------------------------------------------------- CLI views
def test_cli_lists_every_required_accelerator(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["catalog", "list", "accelerators", "--json"], capsys)
    assert code == 0
    ids = {e["id"] for e in json.loads(out)["entries"]}
    assert ids >= REQUIRED_ACCELERATORS, sorted(REQUIRED_ACCELERATORS - ids)


def test_cli_show_h100_every_value_sourced_and_dated(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["catalog", "show", "h100-sxm5-80gb", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    fields = {r["field"]: r for r in data["values"]}
    expected = [
        "peak_tflops.bf16", "peak_tflops.fp8", "memory_gb", "hbm_bandwidth_gb_s",
        "scale_up_bandwidth_gb_s", "tdp_w", "launch_year", "price.usd", "price.as_of",
    ]  # fmt: skip
    for f in expected:
        assert f in fields, f
    for row in data["values"]:
        assert row["source"], row
        dt.date.fromisoformat(row["retrieved"])


def test_cli_show_offer_prices_sourced(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["catalog", "show", "aws-p5.48xlarge", "--json"], capsys)
    assert code == 0
    rows = {r["field"]: r for r in json.loads(out)["values"]}
    assert rows["prices.0.usd_per_hour"]["value"] > 0
    assert rows["prices.0.usd_per_hour"]["source_key"] == rows["prices.0.source"]["value"]


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["catalog", "show", "mi300"], "mi300x"),
        (["catalog", "show", "llama3-8b"], "llama-3-8b"),
        (["catalog", "list", "gpus"], "accelerators"),
    ],
)
def test_cli_bad_input_exit_2_with_suggestion(
    args: list[str], expect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(args, capsys)
    assert code == 2
    assert "Traceback" not in err
    assert expect in err


# ----------------------------------------------------------------------------- accelerators
def test_accelerators_physically_sane(catalog) -> None:
    for a in catalog.accelerators.values():
        assert a.family in FAMILIES, a.id
        pk = a.peak_tflops
        assert pk, a.id
        if "bf16" in pk:
            assert pk["bf16"] <= MAX_DENSE_BF16_TFLOPS, f"{a.id}: bf16 {pk['bf16']} looks sparse"
        for lo, hi in (("fp32", "bf16"), ("bf16", "fp8"), ("fp8", "fp4")):
            if lo in pk and hi in pk:
                assert pk[lo] <= pk[hi] * 1.0001, f"{a.id}: {lo} > {hi}"
        if "fp8" in pk and "bf16" in pk and a.id not in LOWP_RATIO_EXCEPTIONS:
            # vendor figures are not exact doubles (Gaudi2 865/432, L40S 733/362); sparse = 4x
            assert pk["fp8"] <= 2.05 * pk["bf16"], f"{a.id}: fp8 more than 2x bf16 (sparse?)"
        if a.scale_up_bandwidth_gb_s is not None:
            assert a.scale_up_bandwidth_gb_s <= MAX_SCALE_UP_GB_S, a.id
        assert a.memory_gb <= 300, a.id
        if a.idle_w is not None and a.tdp_w is not None:
            assert a.idle_w < a.tdp_w, a.id


def test_2026_accelerators_present_with_sources(catalog) -> None:
    for aid in REQUIRED_2026_ACCELERATORS:
        a = catalog.accelerators[aid]
        for key in ("peak_tflops.bf16", "memory_gb", "hbm_bandwidth_gb_s"):
            src = a.provenance[key].source
            assert src.url or src.document, (aid, key)
            assert src.retrieved is not None, (aid, key)
        system = catalog.systems[a.default_system]
        assert system.accelerator == aid


def test_block_scaled_formats_have_their_element_peak(catalog) -> None:
    from aitco.units import BLOCK_SCALED_FORMATS

    for a in catalog.accelerators.values():
        for fmt in a.block_scaled_formats:
            assert BLOCK_SCALED_FORMATS[fmt][0] in a.peak_tflops, (a.id, fmt)


def test_accelerator_defaults_resolve(catalog) -> None:
    for a in catalog.accelerators.values():
        assert a.default_system in catalog.systems, a.id
        _acc, system = catalog.hardware(a.id)
        assert system.accelerator == a.id
        assert f"residual-value.{a.residual_class}" in catalog.factors, a.id


def test_prices_positive_and_dated(catalog) -> None:
    today = dt.date.today()
    for a in catalog.accelerators.values():
        if a.price is not None:
            assert a.price.usd > 0, a.id
            assert dt.date(2015, 1, 1) <= a.price.as_of <= today, a.id
    for s in catalog.systems.values():
        if s.node_price is not None:
            assert s.node_price.usd > 0, s.id


# ----------------------------------------------------------------------------- systems
def test_systems_consistent(catalog) -> None:
    for s in catalog.systems.values():
        assert s.accelerator in catalog.accelerators, s.id
        assert s.scale_up_domain >= s.devices_per_node, s.id
        if s.intra_node_fabric == "pcie":
            assert s.intra_node_bandwidth_gb_s <= 64, f"{s.id}: PCIe faster than Gen5 x16"


# ----------------------------------------------------------------------------- offers
def test_offers_priced_dated_and_resolvable(catalog) -> None:
    providers = {o.provider for o in catalog.offers.values()}
    assert {"aws", "gcp", "azure"} <= providers
    assert len(providers - {"aws", "gcp", "azure"}) >= 3
    terms = {p.term for o in catalog.offers.values() for p in o.prices}
    assert {"on_demand", "spot", "reserved_1y", "reserved_3y"} <= terms
    for o in catalog.offers.values():
        assert o.accelerator in catalog.accelerators, o.id
        assert o.system is None or o.system in catalog.systems, o.id
        for p in o.prices:
            assert p.usd_per_hour > 0, o.id
            assert p.source in catalog.sources, (o.id, p.source)
            assert dt.date(2020, 1, 1) <= p.as_of <= dt.date.today(), o.id
            per_accel = p.usd_per_hour / o.accelerators_per_instance
            assert 0.05 <= per_accel <= 25.0, f"{o.id}: {per_accel} USD/accel-h"
        od = o.usd_per_accel_hour("on_demand")
        spot = o.usd_per_accel_hour("spot")
        if od is not None and spot is not None:
            assert spot < od, f"{o.id}: spot not cheaper than on-demand"


# ----------------------------------------------------------------------------- factors
def test_required_factors_present(catalog) -> None:
    missing = REQUIRED_FACTORS - set(catalog.factors)
    assert not missing, sorted(missing)


def test_factor_ranges_and_curves(catalog) -> None:
    for f in catalog.factors.values():
        if isinstance(f.value, list) and f.id.startswith("transfer.tier-usd-per-gb."):
            # egress tiers: prices per GB, falling with volume after a free allowance
            paid = [x for x in f.value if x > 0]
            assert all(0 <= x < 1 for x in f.value), f.id
            assert all(b <= a for a, b in itertools.pairwise(paid)), f.id
            breaks = catalog.factors[f.id.replace("tier-usd-per-gb", "tier-breaks-gb")].value
            assert len(breaks) == len(f.value), f.id
            continue
        if isinstance(f.value, list) and f.id.startswith(
            ("support.tier-breaks-usd.", "transfer.tier-breaks-gb.")
        ):
            # support fee brackets: lower bounds of the monthly spend, increasing from 0
            assert f.value[0] == 0, f.id
            assert all(b > a for a, b in zip(f.value, f.value[1:], strict=False)), f.id
            continue
        if isinstance(f.value, list):
            assert f.value[0] == pytest.approx(1.0) or f.category != "residual_value", f.id
            assert all(b <= a for a, b in zip(f.value, f.value[1:], strict=False)), f.id
            assert all(0 <= x <= 1 for x in f.value), f.id
            continue
        if f.low is not None:
            assert f.low <= f.value, f.id
        if f.high is not None:
            assert f.value <= f.high, f.id
        if f.unit == "fraction":
            assert 0 <= f.value <= 1, f.id
        if f.category == "pue":
            assert 1.0 <= f.value < 3.0, f.id


def test_sources_have_title_and_location(catalog) -> None:
    for key, s in catalog.sources.items():
        assert s.title, key
        assert s.url or s.document, key


def test_every_entry_renders_with_sources(catalog) -> None:
    """``catalog show`` material exists for every entry of every kind (each row sourced, dated)."""
    from aitco.catalog.loader import catalog_json
    from aitco.catalog.schema import KINDS

    for kind in KINDS:
        for entry in catalog.kind(kind).values():
            rows = catalog_json(entry)["values"]
            assert rows, entry.id
            for row in rows:
                assert row["source"], (entry.id, row["field"])
                assert row["retrieved"], (entry.id, row["field"])


def test_offer_terms_unique_per_region(catalog) -> None:
    for o in catalog.offers.values():
        keys = [(p.term, p.region) for p in o.prices]
        assert len(keys) == len(set(keys)), o.id


def test_only_tpus_fuse_elementwise_work_into_matmuls_and_say_where_from(catalog) -> None:
    fused = {a.id for a in catalog.accelerators.values() if a.elementwise_fused_into_matmul}
    assert fused == {a.id for a in catalog.accelerators.values() if a.kind == "tpu"}
    assert "tpu-v5e" in fused
    prov = catalog.hardware("tpu-v5e")[0].provenance["elementwise_fused_into_matmul"]
    assert "tensorflow-performance-guide" in str(prov)


def test_hbm2e_h100_variant_differs_from_the_sxm5_part_only_in_memory_and_power(catalog) -> None:
    """torchtitan's Grand Teton H100 (HBM2e, 2.4 TB/s, 500 W) is its own entry, not the 80 GB
    HBM3 part: same die (peaks, SMs, NVLink), less bandwidth, sourced."""
    sxm, _ = catalog.hardware("h100-sxm5-80gb")
    hbm2e, node = catalog.hardware("h100-sxm5-94gb-hbm2e")
    assert hbm2e.peak_tflops == sxm.peak_tflops
    assert hbm2e.compute_units == sxm.compute_units
    assert hbm2e.hbm_bandwidth_gb_s == pytest.approx(2410.0)
    assert hbm2e.hbm_bandwidth_gb_s < sxm.hbm_bandwidth_gb_s
    assert node.accelerator == hbm2e.id
    assert "2604.11391" in str(hbm2e.provenance["hbm_bandwidth_gb_s"])


def test_matmul_ceilings_are_measured_shares_of_the_peak(catalog) -> None:
    """Measured matmul rates (MAMF) sit below the dense peak; fp8 without its own
    measurement takes the bf16 share; an accelerator with none has no ceiling."""
    mi300x = catalog.hardware("mi300x")[0]
    assert mi300x.matmul_ceiling("bf16") == pytest.approx(668.4 / 1307.4)
    assert mi300x.matmul_ceiling("fp8") == mi300x.matmul_ceiling("bf16")
    h100 = catalog.hardware("h100-sxm5-80gb")[0]
    assert h100.matmul_ceiling("fp8") < h100.matmul_ceiling("bf16") < 1.0
    assert catalog.hardware("tpu-v6e")[0].matmul_ceiling("bf16") is None
    for acc in catalog.accelerators.values():
        for dtype, tflops in acc.matmul_tflops.items():
            assert dtype in acc.peak_tflops, (acc.id, dtype)
            assert tflops <= acc.peak_tflops[dtype], (acc.id, dtype)
            assert f"matmul_tflops.{dtype}" in acc.provenance, (acc.id, dtype)

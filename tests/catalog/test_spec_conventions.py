"""Dense-vs-sparse and per-direction-vs-bidirectional: where the catalog states which (issue 13).

Datasheets mix structured-sparsity peaks with dense ones and quote link bandwidth either per
direction or summed over both. The catalog holds dense peaks and per-direction bandwidths; this
test lists the fields where it says so, and pins the values that were (or are easily) read the
wrong way.
"""

from __future__ import annotations

import pytest

from aitco.catalog.schema import Accelerator, System

#: field -> (model, words its description must contain)
CONVENTIONS = {
    "peak_tflops": (Accelerator, "dense"),
    "scale_up_bandwidth_gb_s": (Accelerator, "one direction"),
    "intra_node_bandwidth_gb_s": (System, "one direction"),
    "scale_out_bandwidth_gb_s": (System, "one direction"),
}


@pytest.mark.parametrize("field", sorted(CONVENTIONS))
def test_the_schema_states_the_convention(field: str) -> None:
    model, words = CONVENTIONS[field]
    desc = model.model_fields[field].description or ""
    assert words in desc.lower(), f"{model.__name__}.{field}: {desc!r} does not say {words!r}"


#: (accelerator, dtype) -> dense peak from the vendor datasheet (the sparse figure is twice it)
DENSE_PEAKS = {
    ("h100-sxm5-80gb", "bf16"): 989.4,  # sparse 1,979
    ("h100-sxm5-80gb", "fp8"): 1978.9,  # sparse 3,958
    ("a100-sxm4-80gb", "bf16"): 312.0,  # sparse 624
    ("b200", "bf16"): 2250.0,  # sparse 4,500
    ("b200", "fp4"): 9000.0,  # sparse 18,000
    ("mi300x", "bf16"): 1307.4,  # sparse 2,614.9
    ("l40s", "bf16"): 362.0,  # sparse 733
}


@pytest.mark.parametrize(("acc_id", "dtype"), sorted(DENSE_PEAKS))
def test_peaks_are_dense(catalog, acc_id: str, dtype: str) -> None:
    got = catalog.accelerators[acc_id].peak_tflops[dtype]
    assert got == pytest.approx(DENSE_PEAKS[(acc_id, dtype)], rel=0.01)


#: accelerator -> (per-direction GB/s, what the vendor page states)
PER_DIRECTION = {
    "tpu-v5p": (600.0, "1,200 GB/s bidirectional ICI per chip"),
    "tpu-v6e": (400.0, "800 GB/s bidirectional ICI per chip"),
    "tpu-v5e": (200.0, "1,600 Gbps ICI per chip, one direction"),
    "h100-sxm5-80gb": (450.0, "NVLink 4: 900 GB/s bidirectional"),
    "b200": (900.0, "NVLink 5: 1,800 GB/s bidirectional"),
    "a100-sxm4-80gb": (300.0, "NVLink 3: 600 GB/s bidirectional"),
}


@pytest.mark.parametrize("acc_id", sorted(PER_DIRECTION))
def test_scale_up_is_per_direction(catalog, acc_id: str) -> None:
    want, _stated = PER_DIRECTION[acc_id]
    acc = catalog.accelerators[acc_id]
    assert acc.scale_up_bandwidth_gb_s == pytest.approx(want)
    # the node built from it carries the same per-direction figure
    sysm = catalog.systems[acc.default_system]
    assert sysm.intra_node_bandwidth_gb_s == pytest.approx(want)


def test_b200_memory_bandwidth_is_the_hgx_figure(catalog) -> None:
    """HGX B200: 62 TB/s over 8 GPUs = 7.7 TB/s each; 8 TB/s is the GB200 part's."""
    assert catalog.accelerators["b200"].hbm_bandwidth_gb_s == pytest.approx(7700.0)
    assert catalog.accelerators["gb200"].hbm_bandwidth_gb_s == pytest.approx(8000.0)

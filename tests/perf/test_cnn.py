"""CNN workloads (ResNet-50) on the roofline: catalog entry, batch scaling, ``aitco infer``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aitco.catalog.loader import load_catalog
from aitco.errors import InputError
from aitco.perf.cnn import cnn_batch
from aitco.perf.efficiency import DEFAULT_EFFICIENCY as E
from aitco.perf.roofline import kernel_time_s


@pytest.fixture(scope="module")
def cat():
    return load_catalog(use_env=False)


def test_resnet50_entry_is_sourced_and_counts_macs_twice(cat) -> None:
    m = cat.cnn_models["resnet-50"]
    assert m.params == 25_557_032
    assert m.flops_per_inference == pytest.approx(2 * 4.09e9)
    for f in ("params", "flops_per_inference", "activation_elements_per_inference"):
        assert m.provenance[f].source.url


def test_batch_scaling_turns_compute_bound(cat) -> None:
    m, acc = cat.cnn_models["resnet-50"], cat.accelerators["a100-sxm4-80gb"]
    r = cnn_batch(m, acc, [1, 2, 4, 8, 16, 32, 64])
    assert np.all(np.diff(r["latency_s"]) > 0)
    assert np.all(np.diff(r["inferences_per_s"]) > 0)
    # weights are read once per batch: intensity rises with the batch and crosses the ridge
    assert r["bound"][0] == "memory"
    assert r["bound"][-1] == "compute"
    assert np.all(np.diff(r["arithmetic_intensity_flop_per_byte"]) > 0)


def test_latency_is_the_roofline_plus_launches(cat) -> None:
    m, acc = cat.cnn_models["resnet-50"], cat.accelerators["h100-sxm5-80gb"]
    r = cnn_batch(m, acc, [16])
    bytes_moved = m.params * 2 + 2 * 16 * m.activation_elements_per_inference * 2
    roof = kernel_time_s(
        16 * m.flops_per_inference, bytes_moved, acc.peak_tflops["bf16"], acc.hbm_bandwidth_gb_s,
        E.gemm_for(acc.family), E.hbm,
    )  # fmt: skip
    assert r["latency_s"][0] == pytest.approx(float(roof) + r["launch_s"][0])
    assert r["launch_s"][0] > 0


def test_int8_is_faster_than_bf16_at_large_batch(cat) -> None:
    m, acc = cat.cnn_models["resnet-50"], cat.accelerators["h100-sxm5-80gb"]
    bf = cnn_batch(m, acc, [64], precision="bf16")["inferences_per_s"][0]
    i8 = cnn_batch(m, acc, [64], precision="int8")["inferences_per_s"][0]
    assert i8 > bf


def test_bad_batch_names_the_flag(cat) -> None:
    with pytest.raises(InputError) as e:
        cnn_batch(cat.cnn_models["resnet-50"], cat.accelerators["l4"], [0])
    assert "--batch" in str(e.value)


def test_infer_cli_prices_a_cnn(capsys: pytest.CaptureFixture[str]) -> None:
    from aitco.cli.app import main

    with pytest.raises(SystemExit) as ei:
        main(["infer", "--model", "resnet-50", "--hardware", "l4", "--batch", "32",
              "--usd-per-gpu-hour", "0.8", "--json"])  # fmt: skip
    assert int(ei.value.code or 0) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "cnn"
    assert out["batch"] == 32
    assert out["usd_per_million_inferences"] == pytest.approx(
        0.8 / 3600 / out["inferences_per_s"] * 1e6
    )
    assert out["latency_s"] == pytest.approx(32 / out["inferences_per_s"])

"""Number formats as training and serving run them (issue 31): native, scaled, emulated."""

from __future__ import annotations

from typing import Any

import pytest

from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.errors import InputError
from aitco.perf.iteration import resolve_precisions, weight_bytes_per_element
from aitco.perf.memory import weight_bytes_per_param
from aitco.perf.precision import (
    FP4_TRAINING_BF16_LINEAR_SHARE,
    TRAIN_FORMATS,
    blended_linear_peak_tflops,
    resolve_training_format,
    serving_weight_bytes,
)
from aitco.perf.training import estimate_training
from aitco.perf.training_model import FP8_CAST_BYTES


def _acc(aid: str, peaks: dict[str, float], formats: list[str] | None = None) -> Accelerator:
    return Accelerator(
        id=aid, vendor="test", family="nvidia-blackwell", peak_tflops=peaks, memory_gb=180,
        hbm_bandwidth_gb_s=8000, launch_year=2025, block_scaled_formats=formats or [],
        tdp_w=1000, compute_units=148,
    )  # fmt: skip


BLACKWELL = _acc(
    "bw", {"bf16": 2250, "fp8": 4500, "fp6": 4500, "fp4": 9000, "int8": 4500},
    ["mxfp8", "mxfp6", "mxfp4", "nvfp4"],
)  # fmt: skip
HOPPER = _acc("hp", {"bf16": 989, "fp8": 1979, "int8": 1979})
CDNA4 = _acc("cd", {"bf16": 2516, "fp8": 5033, "fp4": 10066}, ["mxfp8", "mxfp4"])
AMPERE = _acc("am", {"bf16": 312, "int8": 624})
SYSTEM = System(
    id="s", accelerator="bw", devices_per_node=8, intra_node_fabric="nvswitch",
    intra_node_bandwidth_gb_s=900, scale_out_bandwidth_gb_s=50, nics_per_node=8,
)  # fmt: skip
MODEL = ModelArch(
    id="m", n_layers=16, d_model=2048, n_heads=16, n_kv_heads=8, d_ff=8192, vocab_size=32000
)


@pytest.mark.parametrize(
    ("acc", "fmt", "mode", "gemm"),
    [
        (BLACKWELL, "nvfp4", "native", "fp4"),
        (BLACKWELL, "mxfp8", "native", "fp8"),
        (HOPPER, "fp8", "native", "fp8"),
        (HOPPER, "mxfp8", "scaled-in-software", "fp8"),  # DeepSeek-style blockwise FP8
        (HOPPER, "nvfp4", "emulated", "bf16"),  # no FP4 tensor cores
        (CDNA4, "mxfp4", "native", "fp4"),
        (CDNA4, "nvfp4", "emulated", "bf16"),  # FP4 units, but only E8M0 block scales
        (AMPERE, "fp8", "emulated", "bf16"),
        (AMPERE, "int8", "native", "int8"),
        (AMPERE, "bf16", "16-bit", "bf16"),
    ],
)
def test_native_scaled_or_emulated(acc: Accelerator, fmt: str, mode: str, gemm: str) -> None:
    rf = resolve_training_format(acc, fmt)
    assert (rf.mode, rf.gemm_dtype) == (mode, gemm)
    assert bool(rf.note) == (mode in ("emulated", "scaled-in-software"))


def test_unknown_training_format_names_the_flag() -> None:
    with pytest.raises(InputError, match="--precision"):
        resolve_training_format(HOPPER, "fp3")


def test_bytes_per_format() -> None:
    # storage with block scales: E8M0 per 32 for MX, E4M3 per 16 for NVFP4
    assert serving_weight_bytes("mxfp8") == pytest.approx(1 + 1 / 32)
    assert serving_weight_bytes("nvfp4") == pytest.approx(0.5 + 1 / 16)
    assert serving_weight_bytes("mxfp4") == pytest.approx(0.5 + 1 / 32)
    assert weight_bytes_per_element("nvfp4") == serving_weight_bytes("nvfp4")
    # training weights: 16-bit + quantised caches (FP8 one, MXFP8 row- and column-wise, NVFP4
    # one 2D-scaled copy, INT8 quantised on the fly)
    assert weight_bytes_per_param("bf16", "full") == 2.0
    assert weight_bytes_per_param("fp8", "full") == 3.0
    assert weight_bytes_per_param("mxfp8", "full") == pytest.approx(2 + 2 * (1 + 1 / 32))
    assert weight_bytes_per_param("nvfp4", "full") == pytest.approx(2 + 0.5 + 1 / 16)
    assert weight_bytes_per_param("int8", "full") == 2.0


def test_cast_bytes_keep_fp8_and_double_when_emulated() -> None:
    assert resolve_training_format(HOPPER, "fp8").cast_bytes_per_element() == FP8_CAST_BYTES
    native = resolve_training_format(BLACKWELL, "nvfp4").cast_bytes_per_element()
    emulated = resolve_training_format(HOPPER, "nvfp4").cast_bytes_per_element()
    assert native == pytest.approx(2 + (0.5 + 1 / 16))
    assert emulated == pytest.approx(2 * native)
    assert resolve_training_format(HOPPER, "bf16").cast_bytes_per_element() == 0.0


def test_fp4_recipe_keeps_a_bf16_share() -> None:
    rf = resolve_training_format(BLACKWELL, "nvfp4")
    h = FP4_TRAINING_BF16_LINEAR_SHARE
    assert TRAIN_FORMATS["nvfp4"].bf16_linear_share == h
    expected = 1 / ((1 - h) / 9000 + h / 2250)
    assert blended_linear_peak_tflops(BLACKWELL, rf) == pytest.approx(expected)
    assert blended_linear_peak_tflops(HOPPER, resolve_training_format(HOPPER, "fp8")) == 1979


def _tps(acc: Accelerator, precision: str) -> float:
    system = SYSTEM.model_copy(update={"accelerator": acc.id})
    r = estimate_training(
        MODEL, acc, system, 8, seq_len=4096, global_batch=64, precision=precision,
        plan={"tp": 1, "pp": 1, "dp": 8, "zero": 1, "micro_batch": 2, "recompute": "none"},
    )  # fmt: skip
    return float(r.values["tokens_per_s_per_gpu"])


def test_training_speed_follows_the_formats() -> None:
    """Same plan: native NVFP4 > MXFP8 > BF16 on Blackwell; emulated formats lose to BF16."""
    assert _tps(BLACKWELL, "nvfp4") > _tps(BLACKWELL, "mxfp8") > _tps(BLACKWELL, "bf16")
    assert _tps(HOPPER, "nvfp4") < _tps(HOPPER, "bf16")
    assert _tps(AMPERE, "fp8") < _tps(AMPERE, "bf16")
    assert _tps(AMPERE, "int8") > _tps(AMPERE, "bf16")


def test_emulated_run_saves_no_activation_memory() -> None:
    plan = {"tp": 1, "pp": 1, "dp": 8, "zero": 1, "micro_batch": 2, "recompute": "none"}
    kw: dict[str, Any] = {"seq_len": 4096, "global_batch": 64, "plan": plan}
    sys_a = SYSTEM.model_copy(update={"accelerator": "am"})
    bf = estimate_training(MODEL, AMPERE, sys_a, 8, precision="bf16", **kw)
    em = estimate_training(MODEL, AMPERE, sys_a, 8, precision="fp8", **kw)
    assert em.values["precision_mode"] == "emulated"
    assert em.memory_terms_gb["activations"] == pytest.approx(bf.memory_terms_gb["activations"])
    assert em.memory_terms_gb["weights"] > bf.memory_terms_gb["weights"]  # the fp8 cache
    nat = estimate_training(MODEL, HOPPER, SYSTEM, 8, precision="fp8", **kw)
    hb = estimate_training(MODEL, HOPPER, SYSTEM, 8, precision="bf16", **kw)
    assert nat.memory_terms_gb["activations"] < hb.memory_terms_gb["activations"]


def test_serving_block_formats() -> None:
    p = resolve_precisions(BLACKWELL, "nvfp4", None)
    assert (p.compute, p.kv, p.notes) == ("fp4", "fp8", ())
    h = resolve_precisions(HOPPER, "nvfp4", None)
    assert h.compute == "bf16"
    assert "weight-only" in h.notes[0]
    c = resolve_precisions(CDNA4, "mxfp4", None)
    assert c.compute == "fp4"
    s = resolve_precisions(HOPPER, "mxfp8", None)
    assert s.compute == "fp8"
    assert "software" in s.notes[0]
    with pytest.raises(InputError, match="--precision"):
        resolve_precisions(HOPPER, "fp3", None)

"""The kernel shape constants are fitted to the bundled published kernel benchmarks."""

from __future__ import annotations

import pandas as pd
import pytest

from aitco.perf.efficiency import DEFAULT_EFFICIENCY, KERNEL_FIT_DEFAULTS
from aitco.validation.kernels import (
    GEMM_FIT_MIN_FLOPS,
    _data,
    elementwise_rows,
    fit_attention_seq,
    fit_elementwise,
    fit_gemm_shape,
    fit_kernel_defaults,
    gemm_rows,
)


def test_defaults_are_the_fit_of_the_bundled_tables() -> None:
    refit = fit_kernel_defaults()
    assert set(refit) == set(KERNEL_FIT_DEFAULTS)
    for key, value in refit.items():
        assert KERNEL_FIT_DEFAULTS[key] == pytest.approx(value, rel=0.01), key
    e = DEFAULT_EFFICIENCY
    assert e.gemm_tile_fixed_s == KERNEL_FIT_DEFAULTS["gemm_tile_fixed_s"]
    assert (
        e.attention_block_fixed_for("nvidia-blackwell")
        == (KERNEL_FIT_DEFAULTS["attention_block_fixed_s.cudnn"])
    )
    assert (
        e.attention_block_fixed_for("nvidia-ampere")
        == (KERNEL_FIT_DEFAULTS["attention_block_fixed_s.fa2"])
    )
    assert e.elementwise_hbm_for("fused") == KERNEL_FIT_DEFAULTS["elementwise_hbm.fused"]
    assert e.elementwise_hbm_for("eager") == KERNEL_FIT_DEFAULTS["elementwise_hbm.eager"]
    assert e.elementwise_hbm_for("framework") == e.elementwise_hbm


def test_gemm_law_fits_training_sized_gemms() -> None:
    fit = fit_gemm_shape()
    assert fit.n_rows >= 100
    assert fit.median_ape < 0.03
    assert fit.p90_ape < 0.07
    # every fitted table reaches a physical share of its dense peak
    fractions = [v for k, v in fit.params.items() if k.startswith("fraction.")]
    assert len(fractions) == 3
    assert all(0.5 < f <= 1.0 for f in fractions)
    assert fit.excluded > 0  # small, latency-bound GEMMs and the sm_90 FP8 table are left out


def test_attention_law_fits_each_kernel() -> None:
    fits = fit_attention_seq()
    for kernel in ("fa2", "fa3", "cudnn"):
        assert fits[kernel].median_ape < 0.07, kernel
        assert 10.0 < fits[kernel].params["attention_seq_half"] < 1000.0
        assert 0.1e-6 < fits[kernel].params["attention_block_fixed_s"] < 10e-6
        assert 0.1e-6 < fits[kernel].params["attention_block_fixed_s"] < 10e-6
        # backward kernels reach less of the peak than forward ones (FA3 paper, Figs. 5-6)
        assert fits[kernel].params["fraction.bwd"] < fits[kernel].params["fraction.fwd"]


def test_benchmark_rows_carry_their_source() -> None:
    g = _data("gemm_benchmarks_raw.csv")
    assert {"repo", "path", "commit"} <= set(g.columns)
    assert g[["repo", "path", "commit"]].notna().all().all()
    assert (g["commit"].str.len() == 40).all()
    a = _data("attention_kernels.csv")
    assert a[["source", "locator"]].notna().all().all()
    rows = gemm_rows()
    assert (2 * rows.b * rows.m * rows.n * rows.k >= GEMM_FIT_MIN_FLOPS).sum() >= 100
    assert isinstance(rows, pd.DataFrame)


def test_gemm_law_carries_to_mi300x_held_out() -> None:
    """OpenXLA's MI300X rows, never fitted: the NVIDIA-fitted law with one level fitted."""
    from aitco.validation.kernels import check_gemm_held_out

    fit = check_gemm_held_out()
    assert fit is not None
    assert fit.n_rows >= 20
    assert fit.median_ape < 0.15  # 11.8% when written (2026-12-03)
    assert 0.2 < fit.params["fraction.gfx942:bf16"] <= 1.0
    assert fit_gemm_shape().n_rows == 148  # the MI300X rows do not enter the shared fit


def test_elementwise_fraction_of_one_row_by_hand() -> None:
    """Liger's RMSNorm forward on A100 SXM4 80GB, 2,048 x 32,768 bf16: read and write the
    tensor once (268 MB) in 0.1822 ms against the catalog's 2,039 GB/s."""
    d = elementwise_rows()
    r = d[
        (d.kernel_name == "rms_norm") & (d.kernel_provider == "liger") & (d.x_value == 32768)
    ].iloc[0]
    ideal = 2 * 2048 * 32768 * 2
    assert r.ideal_bytes == ideal
    assert r.hbm_fraction == pytest.approx(ideal / (r.time_ms_p50 * 1e-3) / 2039e9, rel=1e-9)
    assert r.hbm_fraction == pytest.approx(0.722, abs=0.002)
    assert (d.ideal_bytes >= 128e6).all()  # well above L2: HBM-bound, not launch-bound
    assert d[["repo", "path", "commit"]].notna().all().all()
    assert (d["commit"].str.len() == 40).all()


def test_elementwise_styles_fit_and_check_the_end_to_end_level() -> None:
    """Fused one-pass kernels reach a stable, high share of HBM bandwidth; eager modules a
    lower, scattered one; Megatron-Core's own modules land near the end-to-end fitted
    ``elementwise_hbm`` (an independent check of that fit, which never saw these rows)."""
    fits = fit_elementwise()
    fused, eager, framework = fits["fused"], fits["eager"], fits["framework"]
    assert fused.n_rows >= 20
    assert eager.n_rows >= 15
    assert framework.n_rows >= 4
    assert fused.median_ape < 0.10
    assert 0.7 < fused.params["elementwise_hbm"] < 0.95
    assert eager.params["elementwise_hbm"] < framework.params["elementwise_hbm"]
    assert framework.params["elementwise_hbm"] < fused.params["elementwise_hbm"]
    e2e = DEFAULT_EFFICIENCY.elementwise_hbm
    assert framework.params["elementwise_hbm"] == pytest.approx(e2e, rel=0.15)

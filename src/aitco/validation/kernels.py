"""Fit and check the kernel shape laws of :mod:`aitco.perf.kernels` on published benchmarks.

Three tables in ``aitco/validation/data`` (sources in its README):

- ``gemm_benchmarks_raw.csv``: OpenXLA's measured GEMM throughput by (b, m, n, k) and data
  type on H100 (``sm_90``) and B200 (``sm_100_B200``), transcribed from the two OpenXLA files
  the rows name (repository, path, commit).
- ``attention_kernels.csv``: FlashAttention-2, FlashAttention-3 and cuDNN attention
  throughput on H100 by sequence length (FlashAttention-3 paper, Figs. 5-6; pytorch/benchmark
  PR 2391).
- ``elementwise_kernels.csv``: forward timings of norm and activation kernels on A100 and H100
  by kernel style (fused Triton, eager PyTorch / Hugging Face, Megatron-Core modules) from
  Liger-Kernel's published benchmark data; :func:`fit_elementwise` fits one fraction of HBM
  bandwidth per style.

:func:`fit_gemm_shape` fits ``gemm_tile_fixed_s`` and ``gemm_latency_s`` (shared by every
table: the short-K half length of each part follows from the fixed tile time and its SM rate)
and one large-GEMM fraction per table; :func:`fit_attention_seq` fits
``attention_block_fixed_s`` per kernel generation with one forward and one backward fraction
per kernel. Both minimise the squared log error with ``scipy.optimize.least_squares``.
:func:`fit_kernel_defaults` returns the constants
:data:`aitco.perf.efficiency.KERNEL_FIT_DEFAULTS` holds (a test refits them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.optimize import least_squares

from aitco.catalog.loader import load_catalog
from aitco.perf.efficiency import KERNEL_FIT_DEFAULTS
from aitco.perf.kernels import (
    attention_seq_efficiency,
    attention_seq_half,
    gemm_k_half,
    gemm_time_s,
)
from aitco.units import GIGA

#: OpenXLA table keys -> (catalog accelerator, its SM count, from the catalog's sources).
GEMM_TABLE_HARDWARE: dict[str, str] = {
    "sm_90": "h100-sxm5-80gb",
    "sm_100_B200": "b200",
    "gfx942": "mi300x",
}
#: OpenXLA data-type keys -> aitco precisions (f32 is TF32 on the tensor cores: left out, no
#: training run uses it).
GEMM_DTYPES: dict[str, str] = {
    "bf16xbf16->bf16": "bf16",
    "f8e4m3fnxf8e4m3fn->bf16": "fp8",
}
#: Smallest GEMM fitted [FLOP]: 2 x 2048^3, the size of a training GEMM (one micro-batch of
#: thousands of tokens times layers 2k-30k wide is 10^10-10^12 FLOP). Below it the tables
#: measure launch-latency-bound kernels (256-wide tiles on 132-148 SMs, a few microseconds)
#: that this law does not describe (median error 13% when they are included).
GEMM_FIT_MIN_FLOPS = 2.0 * 2048.0**3
#: Tables left out whole: OpenXLA's sm_90 FP8 rows reach 2.4 PFLOP/s, above the H100's dense
#: FP8 peak (1,979 TFLOP/s), and its gfx942 (MI300X) FP8 rows at most 3.8% of the MI300X's FP8
#: peak (no native FP8 matrix path in that build): neither measures a dense FP8 GEMM as the
#: catalog defines it.
GEMM_TABLES_EXCLUDED: tuple[str, ...] = ("sm_90:fp8", "gfx942:fp8")
#: Parts (table keys) kept out of the fit of the shared constants and used as an independent
#: check of the law on another vendor (:func:`check_gemm_held_out`): OpenXLA's MI300X (gfx942)
#: rows, with the CU count of the catalog and only the large-GEMM level fitted.
GEMM_KEYS_HELD_OUT: tuple[str, ...] = ("gfx942",)
#: Kernels whose sequence law is fitted.
ATTENTION_KERNELS: tuple[str, ...] = ("fa2", "fa3", "cudnn")
#: Milliseconds per second (Liger-Kernel reports times in ms).
MS_PER_S = 1000.0
#: Elementwise kernel styles of ``elementwise_kernels.csv``: ``fused`` (hand-written Triton
#: kernels, one pass: Liger-Kernel), ``eager`` (PyTorch / Hugging Face modules op by op) and
#: ``framework`` (Megatron-Core's own modules; a check of the end-to-end ``elementwise_hbm``,
#: not a constant the model takes from here).
ELEMENTWISE_STYLES: tuple[str, ...] = ("fused", "eager", "framework")


@dataclass(frozen=True)
class KernelFit:
    """Result of one kernel-law fit.

    Attributes
    ----------
    params : dict of str to float
        Fitted constants (shared law constants and per-table fractions).
    n_rows : int
        Measurements fitted.
    median_ape, p90_ape : float
        Median and 90th percentile absolute error of the fitted law, as fractions. [0-1]
    excluded : int
        Rows left out (above the dense peak: not a physical measurement).
    """

    params: dict[str, float]
    n_rows: int
    median_ape: float
    p90_ape: float
    excluded: int = 0


def _data(name: str) -> pd.DataFrame:
    path = resources.files("aitco.validation") / "data" / name
    with resources.as_file(path) as p:
        return pd.read_csv(p)


def _hardware() -> dict[str, tuple[float, dict[str, float]]]:
    """SM count and dense peaks [TFLOP/s] of each GEMM table's accelerator (catalog)."""
    cat = load_catalog()
    out = {}
    for key, acc_id in GEMM_TABLE_HARDWARE.items():
        acc = cat.accelerators[acc_id]
        out[key] = (
            float(acc.compute_units or 0),
            {k: float(v) for k, v in acc.peak_tflops.items()},
        )
    return out


def gemm_rows() -> pd.DataFrame:
    """Return the GEMM table rows aitco fits, with the accelerator's peak and SM count per row."""
    d = _data("gemm_benchmarks_raw.csv")
    d = d[d["dtype"].isin(GEMM_DTYPES) & d["table_key"].isin(GEMM_TABLE_HARDWARE)].copy()
    d = d.drop_duplicates(["table_key", "b", "m", "n", "k", "dtype"])
    hw = _hardware()
    d["precision"] = d["dtype"].map(GEMM_DTYPES)
    d["compute_units"] = [hw[t][0] for t in d["table_key"]]
    d["peak_tflops"] = [
        hw[t][1].get(p, np.nan) for t, p in zip(d["table_key"], d["precision"], strict=True)
    ]
    d["table"] = d["table_key"] + ":" + d["precision"]
    return d.dropna(subset=["peak_tflops"]).reset_index(drop=True)


def _stats(log_res: NDArray[np.float64]) -> tuple[float, float]:
    ape = np.abs(np.expm1(log_res))
    return float(np.median(ape)), float(np.percentile(ape, 90))


@cache
def fit_gemm_shape() -> KernelFit:
    """Fit ``gemm_tile_fixed_s``, ``gemm_latency_s`` and one large-GEMM fraction per table.

    Only GEMMs of at least :data:`GEMM_FIT_MIN_FLOPS` and tables not in
    :data:`GEMM_TABLES_EXCLUDED`; the rows left out are counted (``excluded``).
    """
    d = gemm_rows()
    size = 2.0 * d["b"] * d["m"] * d["n"] * d["k"]
    held_out = d["table_key"].isin(GEMM_KEYS_HELD_OUT)
    keep = (size >= GEMM_FIT_MIN_FLOPS) & ~d["table"].isin(GEMM_TABLES_EXCLUDED) & ~held_out
    above = ~keep & ~held_out  # left out (held-out tables are counted by their own check)
    d = d[keep].reset_index(drop=True)
    tables = sorted(d["table"].unique())
    idx = d["table"].map({t: i for i, t in enumerate(tables)}).to_numpy()
    b, m, n, k = (d[c].to_numpy(dtype=float) for c in ("b", "m", "n", "k"))
    flops = 2.0 * b * m * n * k
    peak = d["peak_tflops"].to_numpy() * 1e12
    cu = d["compute_units"].to_numpy()
    obs = d["flops_per_s"].to_numpy(dtype=float)

    def model(x: NDArray[np.float64]) -> NDArray[np.float64]:
        tile_ns, lat_us = x[0], x[1]
        frac = x[2:][idx]
        t = np.empty_like(obs)
        for c in np.unique(cu):  # wave quantization needs a scalar SM count
            sel = cu == c
            for pk in np.unique(peak[sel]):
                s2 = sel & (peak == pk)
                k_half = gemm_k_half(tile_ns * 1e-9, float(pk), float(c))
                t[s2] = gemm_time_s(
                    m[s2], n[s2], k[s2], peak[s2] * frac[s2], float(c), k_half,
                    lat_us * 1e-6, b[s2],
                )  # fmt: skip
        return flops / t

    x0 = np.r_[1000.0, 5.0, np.full(len(tables), 0.8)]
    lo = np.r_[0.0, 0.0, np.full(len(tables), 0.05)]
    hi = np.r_[1e5, 100.0, np.full(len(tables), 1.0)]
    r = least_squares(lambda x: np.log(obs / model(x)), x0, bounds=(lo, hi))
    med, p90 = _stats(np.log(obs / model(r.x)))
    params = {"gemm_tile_fixed_s": float(r.x[0]) * 1e-9, "gemm_latency_s": float(r.x[1]) * 1e-6}
    params.update({f"fraction.{t}": float(v) for t, v in zip(tables, r.x[2:], strict=True)})
    return KernelFit(params, len(d), med, p90, int(above.sum()))


def check_gemm_held_out() -> KernelFit | None:
    """Predict the held-out parts (:data:`GEMM_KEYS_HELD_OUT`) with the shipped law.

    ``gemm_tile_fixed_s`` and ``gemm_latency_s`` are those fitted on the NVIDIA tables
    (:func:`fit_gemm_shape`); only one large-GEMM level per table is fitted here (what the
    end-to-end fits and the measured matmul ceilings set in the model), so the error measures
    how well the shape law carries to another vendor's part. ``None`` when no row is bundled.
    """
    d = gemm_rows()
    size = 2.0 * d["b"] * d["m"] * d["n"] * d["k"]
    d = d[
        (size >= GEMM_FIT_MIN_FLOPS)
        & d["table_key"].isin(GEMM_KEYS_HELD_OUT)
        & ~d["table"].isin(GEMM_TABLES_EXCLUDED)
    ]
    d = d.reset_index(drop=True)
    if d.empty:
        return None
    shared = fit_gemm_shape().params
    tables = sorted(d["table"].unique())
    idx = d["table"].map({t: i for i, t in enumerate(tables)}).to_numpy()
    b, m, n, k = (d[c].to_numpy(dtype=float) for c in ("b", "m", "n", "k"))
    peak = d["peak_tflops"].to_numpy() * 1e12
    cu = float(d["compute_units"].iloc[0])
    obs = d["flops_per_s"].to_numpy(dtype=float)
    base = np.empty_like(obs)  # time at a level of 1 (the law's shape and latency only)
    for pk in np.unique(peak):
        sel = peak == pk
        k_half = gemm_k_half(shared["gemm_tile_fixed_s"], float(pk), cu)
        base[sel] = gemm_time_s(m[sel], n[sel], k[sel], peak[sel], cu, k_half, 0.0, b[sel])

    def model(x: NDArray[np.float64]) -> NDArray[np.float64]:
        t = base / x[idx] + shared["gemm_latency_s"]
        return 2.0 * b * m * n * k / t

    r = least_squares(
        lambda x: np.log(obs / model(x)),
        np.full(len(tables), 0.5),
        bounds=(np.full(len(tables), 0.05), np.full(len(tables), 1.0)),
    )
    med, p90 = _stats(np.log(obs / model(r.x)))
    params = {f"fraction.{t}": float(v) for t, v in zip(tables, r.x, strict=True)}
    return KernelFit(params, len(d), med, p90, 0)


def attention_rows() -> pd.DataFrame:
    """Return the attention-kernel rows with the accelerator's bf16 dense peak."""
    d = _data("attention_kernels.csv")
    cat = load_catalog()
    d["peak_tflops"] = [float(cat.accelerators[a].peak_tflops[p]) for a, p in
                        zip(d["accelerator"], d["dtype"], strict=True)]  # fmt: skip
    return d


#: Head dim of every row of ``attention_kernels.csv`` (the FlashAttention-3 paper's figures).
HEAD_DIM = 128.0


@cache
def fit_attention_seq() -> dict[str, KernelFit]:
    """Fit ``attention_block_fixed_s`` (and a forward and backward fraction) per kernel."""
    d = attention_rows()
    cat = load_catalog()
    units = {
        kernel: float(
            cat.accelerators[d[d["kernel"] == kernel]["accelerator"].iloc[0]].compute_units or 0
        )
        for kernel in ATTENTION_KERNELS
    }
    out = {}
    for kernel in ATTENTION_KERNELS:
        x = d[d["kernel"] == kernel]
        s = x["seq_len"].to_numpy(dtype=float)
        causal = x["causal"].to_numpy() == 1
        bwd = (x["pass"] == "bwd").to_numpy()
        peak = x["peak_tflops"].to_numpy()
        obs = x["tflops"].to_numpy(dtype=float)
        # keys per query at half rate per microsecond of fixed block time (one part, one head dim)
        per_us = attention_seq_half(1e-6, float(peak[0]) * 1e12, units[kernel], HEAD_DIM)

        def model(p: NDArray[np.float64], s: Any = s, causal: Any = causal, bwd: Any = bwd,
                  peak: Any = peak, per_us: float = per_us) -> NDArray[np.float64]:  # fmt: skip
            law = np.where(
                causal,
                attention_seq_efficiency(s, True, p[0] * per_us),
                attention_seq_efficiency(s, False, p[0] * per_us),
            )
            return peak * np.where(bwd, p[2], p[1]) * law

        r = least_squares(
            lambda p, obs=obs, model=model: np.log(obs / model(p)),
            [1.0, 0.5, 0.5],
            bounds=([0.0, 0.01, 0.01], [1e5, 1.0, 1.0]),
        )
        med, p90 = _stats(np.log(obs / model(r.x)))
        out[kernel] = KernelFit(
            {
                "attention_block_fixed_s": float(r.x[0]) * 1e-6,
                "attention_seq_half": float(r.x[0] * per_us),
                "fraction.fwd": float(r.x[1]),
                "fraction.bwd": float(r.x[2]),
            },
            len(x),
            med,
            p90,
        )
    return out


def elementwise_rows() -> pd.DataFrame:
    """Return the elementwise benchmark rows with the fraction of HBM bandwidth each reaches.

    ``hbm_fraction`` is the row's ideal bytes (each input read once, each output written once,
    from the benchmark's stated shapes: ``scripts/extract_liger_elementwise.py``) over its
    median time and the catalog's HBM bandwidth of the part. [0-1]
    """
    d = _data("elementwise_kernels.csv")
    cat = load_catalog()
    bw = {a: float(cat.accelerators[a].hbm_bandwidth_gb_s) for a in d["accelerator"].unique()}
    d["hbm_bandwidth_gb_s"] = d["accelerator"].map(bw)
    time_s = d["time_ms_p50"] / MS_PER_S
    d["hbm_fraction"] = d["ideal_bytes"] / time_s / (d["hbm_bandwidth_gb_s"] * GIGA)
    return d


@cache
def fit_elementwise() -> dict[str, KernelFit]:
    """Fit one fraction of HBM bandwidth per elementwise kernel style.

    The level minimising the squared log error of the rows of a style (their geometric mean);
    the errors are those of each row against it (kernels and parts pooled).
    """
    d = elementwise_rows()
    out = {}
    for style in ELEMENTWISE_STYLES:
        f = d.loc[d["style"] == style, "hbm_fraction"].to_numpy(dtype=float)
        if f.size == 0:
            continue
        level = float(np.exp(np.mean(np.log(f))))
        med, p90 = _stats(np.log(f / level))
        out[style] = KernelFit({"elementwise_hbm": level}, int(f.size), med, p90)
    return out


@cache
def fit_kernel_defaults() -> dict[str, float]:
    """Refit the constants of :data:`aitco.perf.efficiency.KERNEL_FIT_DEFAULTS`, refitted."""
    g = fit_gemm_shape().params
    a = fit_attention_seq()
    return {
        "gemm_tile_fixed_s": g["gemm_tile_fixed_s"],
        "gemm_latency_s": g["gemm_latency_s"],
        "attention_block_fixed_s.fa2": a["fa2"].params["attention_block_fixed_s"],
        "attention_block_fixed_s.fa3": a["fa3"].params["attention_block_fixed_s"],
        "attention_block_fixed_s.cudnn": a["cudnn"].params["attention_block_fixed_s"],
        **{
            f"elementwise_hbm.{k}": v.params["elementwise_hbm"]
            for k, v in fit_elementwise().items()
            if k != "framework"
        },
    }


def validate_kernels() -> dict[str, Any]:
    """Fit the kernel laws on the bundled benchmarks and compare with the shipped constants.

    Returns
    -------
    dict
        ``gemm`` and ``attention`` (one entry per kernel): measurements fitted and left out,
        median and p90 absolute error (fractions), fitted constants (``params``);
        ``gemm_held_out``: the same for the MI300X table predicted with the NVIDIA-fitted law
        (levels only fitted; ``None`` without rows);
        ``constants``: each constant the model uses
        (:data:`aitco.perf.efficiency.KERNEL_FIT_DEFAULTS`), shipped beside refitted.
    """

    def row(fit: KernelFit) -> dict[str, Any]:
        return {
            "rows": fit.n_rows,
            "excluded": fit.excluded,
            "median_ape": fit.median_ape,
            "p90_ape": fit.p90_ape,
            "params": fit.params,
        }

    refit = fit_kernel_defaults()
    held_out = check_gemm_held_out()
    return {
        "gemm": row(fit_gemm_shape()),
        "gemm_held_out": None if held_out is None else row(held_out),
        "attention": [{"kernel": k, **row(v)} for k, v in fit_attention_seq().items()],
        "elementwise": [{"style": k, **row(v)} for k, v in fit_elementwise().items()],
        "constants": [
            {"name": k, "shipped": v, "refit": refit[k]} for k, v in KERNEL_FIT_DEFAULTS.items()
        ],
    }

"""Training model against published runs (ground truth copied into aitco/validation/data).

Budgets: the issue's targets, 10% median and 25% p90 absolute percentage error on tokens/s/GPU
over the throughput rows the defaults were fitted on (``data/training.csv``; measured 2026-12-02:
7.9% and 20.7%); the rows of new sources (``data/training_new_sources.csv``) are checked in
``test_training_new_sources.py`` and reported out of sample. docs/training.md reports the
exact figures, the held-out check and the worst rows. The predictions use only specs, the
published layout and the global efficiencies: the last test changes every published outcome
and checks the predictions do not move.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aitco.validation.training import (
    CV_MAX_NFEV,
    DATA_CSV,
    THROUGHPUT_SCOPES,
    coverage,
    cross_validate,
    load_rows,
    map_hardware,
    results_frame,
    select_rows,
    source_group,
    summary,
    validate_training,
)

#: The issue's targets (see module docstring).
MEDIAN_APE_BUDGET = 0.10
P90_APE_BUDGET = 0.25
#: Rows that cannot be predicted must stay few and must each say why.
MAX_SKIPPED = 3


@pytest.fixture(scope="module")
def results(catalog):
    return validate_training(catalog=catalog)


def test_error_budget(results, tmp_path: Path) -> None:
    s = summary(select_rows(results, "fitted"))
    results_frame(results).to_csv(tmp_path / "training_errors.csv", index=False)
    assert s["median_ape"] <= MEDIAN_APE_BUDGET, s
    assert s["p90_ape"] <= P90_APE_BUDGET, s
    # no bias hiding behind a symmetric error: the mean log ratio is near zero
    assert abs(s["mean_log_ratio"]) < 0.05


def test_every_row_is_accounted_for(results) -> None:
    df = load_rows()  # the fitted rows and the rows of new sources
    want = set(df[df.run_scope.isin(THROUGHPUT_SCOPES)].id)
    assert {r.row_id for r in results} == want
    skipped = [r for r in results if r.skipped]
    assert len(skipped) <= MAX_SKIPPED
    assert all(r.skipped.strip() for r in skipped)
    for r in results:
        if not r.skipped:
            assert math.isfinite(r.predicted)
            assert r.predicted > 0


def test_interval_covers_most_in_sample_residuals(results) -> None:
    # the interval comes from the leave-one-source-out residuals, wider than the in-sample ones
    assert coverage(select_rows(results, "fitted")) >= 0.80


def test_source_groups() -> None:
    assert source_group("github.com/NVIDIA/Megatron-LM README 'x' (Jul 2024)") == (
        "github.com/nvidia/megatron-lm"
    )
    assert source_group("The Llama 3 Herd of Models (arXiv 2407.21783)") == "arxiv:2407.21783"
    a = source_group("Narayanan et al. 2021 (SC21), Table 2")
    b = source_group("Narayanan et al. 2021, Efficient Large-Scale ... (SC21)")
    assert a == b == "narayanan 2021"


@pytest.fixture(scope="module")
def cv_all(catalog):
    """Leave-one-source-out predictions of every bundled throughput row (one run, minutes)."""
    return cross_validate(catalog=catalog, max_nfev=CV_MAX_NFEV)


@pytest.mark.refit
def test_interval_covers_80_percent_of_cross_validated_residuals(cv_all) -> None:
    """Each row predicted by a fit that never saw its source; the 80% interval of the defaults
    must cover 75-85% of those residuals (issue 16) over every bundled row, new sources
    included, and at least 80% of the rows the NVIDIA efficiencies were fitted on."""
    done = [r for r in cv_all if not r.skipped]
    assert len(done) >= 160
    assert {r.source_group for r in done} >= {"narayanan 2021", "github.com/mosaicml/llm-foundry"}
    assert 0.75 <= coverage(cv_all) <= 0.85
    assert coverage(select_rows(cv_all, "fitted")) >= 0.80


@pytest.mark.refit
def test_accelerators_without_runs_of_their_own_are_predicted_from_their_matmul_ceiling(
    cv_all,
) -> None:
    """AMD rows held out (no AMD row in any fold's fit) land within 15% median: their GEMM
    efficiency is the measured MAMF ceiling times the share the NVIDIA families reach; with
    the shared default GEMM fraction they were 20% too fast (2026-12-03)."""
    amd = [r for r in cv_all if not r.skipped and "rocm" in r.source_group]
    assert len(amd) >= 10
    assert float(np.median([r.ape for r in amd])) <= 0.15


def test_published_outcomes_do_not_feed_the_prediction(catalog, tmp_path: Path) -> None:
    df = pd.read_csv(DATA_CSV)
    keep = df[df.id.isin(["T052", "T064", "T082", "T092", "T109"])].copy()
    a = tmp_path / "a.csv"
    b = tmp_path / "b.csv"
    keep.to_csv(a, index=False)
    changed = keep.copy()
    for col in ("tokens_per_s_per_gpu", "tflops_per_gpu", "mfu_pct", "hfu_pct", "step_time_s",
                "gpu_hours", "wall_clock_hours"):  # fmt: skip
        changed[col] = changed[col] * 1.37
    changed.to_csv(b, index=False)
    ra = {r.row_id: r.predicted for r in validate_training(a, catalog)}
    rb = {r.row_id: r.predicted for r in validate_training(b, catalog)}
    assert ra == pytest.approx(rb, rel=1e-12)
    assert len(ra) == 5


def test_default_share_of_the_matmul_ceiling_is_the_derived_one(catalog) -> None:
    """The default is what the fitted families' rows give (documented derivation)."""
    from aitco.perf.efficiency import DEFAULT_EFFICIENCY
    from aitco.validation.training import gemm_share_of_ceiling, throughput_cases

    share = gemm_share_of_ceiling(DEFAULT_EFFICIENCY, catalog, throughput_cases(None, catalog))
    assert share == pytest.approx(DEFAULT_EFFICIENCY.training_gemm_share_of_ceiling, abs=0.005)


@pytest.mark.refit
def test_tpu_rows_held_out_are_within_10_percent(cv_all) -> None:
    """The TPU rows (one source, MaxText) held out: no TPU row in their fold's fit, so what
    brings them within 10% median is physics from the catalog (the measured matmul share and
    XLA's fusion of elementwise work into the matmuls); 16% before the fusion (2026-12-03)."""
    tpu = [r for r in cv_all if not r.skipped and "maxtext" in r.source_group
           and re.search(r"\bv(4|5e|5p)-\d", r.label)]  # fmt: skip
    assert len(tpu) >= 40
    assert float(np.median([r.ape for r in tpu])) <= 0.10


def test_torchtitan_hbm2e_h100_rows_map_to_their_own_part() -> None:
    """'H100 (96GB HBM2e, 500W)' is not the 80 GB HBM3 SXM5 part the other H100 rows use."""
    assert map_hardware("H100 (96GB HBM2e, 500W)") == "h100-sxm5-94gb-hbm2e"
    assert map_hardware("H100 (94/95GB HBM2e, lower TDP)") == "h100-sxm5-94gb-hbm2e"
    assert map_hardware("H100-80GB (DGX H100)") == "h100-sxm5-80gb"


def test_a_family_without_fitted_rows_keeps_no_tp_overlap_of_its_own(catalog) -> None:
    """The per-family TP overlap a fold could not constrain is dropped (no leak of the start)."""
    from aitco.perf.efficiency import DEFAULT_EFFICIENCY
    from aitco.validation.training import _drop_unseen_overlap, throughput_cases

    all_cases = throughput_cases(None, catalog)
    family = {c.row_id: catalog.hardware(c.accelerator)[0].family for c in all_cases}
    cases = [c for c in all_cases if family[c.row_id] != "google-tpu"]
    tpu_cases = [c for c in all_cases if family[c.row_id] == "google-tpu"]
    eff = DEFAULT_EFFICIENCY.with_overrides({"tp_overlap_by_family": {"google-tpu": 0.9}})
    assert _drop_unseen_overlap(eff, cases, catalog).tp_overlap_by_family == {}
    assert tpu_cases
    kept = _drop_unseen_overlap(eff, cases + tpu_cases, catalog)
    assert kept.tp_overlap_by_family == {"google-tpu": 0.9}


def test_stack_options_come_from_the_stated_framework(catalog) -> None:
    """llm.c's fused loss kernel, C step loop, hand-fused elementwise kernels and cuBLASLt
    GEMMs (priced at the measured matmul ceiling), and
    TinyLlama's fused kernels (its README lists fused norms, SwiGLU, rotary and cross-entropy),
    are stated by their frameworks; rows of other stacks keep the defaults."""
    from aitco.validation.training import run_case, stack_options_of

    rows = load_rows()
    fw = rows["framework"].astype(str)
    llmc = rows[fw.str.contains("llm.c", regex=False)]
    assert len(llmc) >= 3
    for _, r in llmc.iterrows():
        assert stack_options_of(r) == {
            "loss_kernel": "fused", "host_loop": "native", "elementwise_kernels": "fused",
            "gemm_level": "ceiling",
        }  # fmt: skip
        case = run_case(r, catalog)
        assert case.plan["loss_kernel"] == "fused"
        assert case.plan["elementwise_kernels"] == "fused"
        assert case.plan["gemm_level"] == "ceiling"
    tiny = rows[rows["model"].astype(str).str.contains("TinyLlama", regex=False)]
    assert len(tiny) == 1
    assert stack_options_of(tiny.iloc[0]) == {
        "loss_kernel": "fused",
        "elementwise_kernels": "fused",
    }
    other = rows[~fw.str.contains("llm.c", regex=False) & ~fw.str.contains("fused kernels")]
    assert all(stack_options_of(r) == {} for _, r in other.iterrows())

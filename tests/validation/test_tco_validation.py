"""``aitco validate tco`` prices the same ideal run as ``aitco validate training``."""

from __future__ import annotations

import pytest

from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.validation.tco import ASSUMED_GPUS, validate_full_runs
from aitco.validation.training import load_rows, predict_case, run_case


def test_full_runs_have_one_ideal_figure(catalog) -> None:
    """The throughput-only GPU-hours (or wall clock) of every full run that states its cluster
    size are ``validate training``'s predictions to the digit; the rows without it are
    predicted on the assumed cluster and say so."""
    res = validate_full_runs(catalog)
    rows = load_rows().set_index("id", drop=False)
    compared = 0
    for r in res["rows"]:
        row = rows.loc[r["id"]]
        if row.isna()["num_accelerators"]:
            assert r["gpus"] == ASSUMED_GPUS
            assert f"gpus assumed {ASSUMED_GPUS}" in r["notes"]
            continue
        want = predict_case(run_case(row, catalog), catalog, DEFAULT_EFFICIENCY).predicted
        assert r["gpu_hours_throughput_only"] == pytest.approx(want, rel=1e-12), r["id"]
        assert r["gpu_hours_predicted"] >= r["gpu_hours_throughput_only"]  # goodput <= 1
        compared += 1
    assert compared >= 8

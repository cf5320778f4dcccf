"""Serving rows from sources no fit has used (issue 31, item 7): MLPerf Inference v6.0 closed.

``inference_unseen.csv`` is predicted, never fitted: the fits read ``read_rows(_ALL)`` (the
shared copy and the new sources), and leave-one-source-out refits never train on it. The bounds
below are regression guards; the figures and the misses are in docs/validation.md.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from aitco.validation.inference import (
    _ALL,
    LATENCY,
    LATENCY_AT_MEASURED_LOAD,
    LATENCY_BELOW_LOW_LOAD,
    LOW_LOAD,
    THROUGHPUT,
    default_csv,
    measured_capacities,
    new_sources_csv,
    read_rows,
    row_set_ids,
    source_group,
    unseen_csv,
    validate,
)


@pytest.fixture(scope="module")
def unseen_rows() -> list[dict[str, str]]:
    return read_rows(unseen_csv())


def test_unseen_sources_are_new(fixtures_dir, unseen_rows) -> None:
    with open(fixtures_dir / "groundtruth" / "inference.csv", encoding="utf-8", newline="") as fh:
        used = {source_group(r) for r in csv.DictReader(fh)}
    used |= {source_group(r) for r in read_rows(new_sources_csv())}
    used_locators = " ".join(r["source_locator"] for r in read_rows(new_sources_csv()))
    assert len(unseen_rows) >= 60
    for r in unseen_rows:
        assert source_group(r) not in used, r["id"]
        assert r["source_locator"].startswith("https://github.com/mlcommons/inference_results_v6.0")
        assert "inference_results_v6.0" not in used_locators
        assert r["precision"]
        assert r["hardware"]
        assert r["model"]


def test_unseen_rows_cover_the_2026_parts_precisions_and_moe(unseen_rows) -> None:
    hw = {r["hardware"] for r in unseen_rows}
    assert {"B300-SXM-270GB", "GB300-288GB", "MI355X-288GB", "MI350X-288GB"} <= hw
    assert {"RTX-PRO-6000-Blackwell-Server", "H200-NVL-141GB"} <= hw
    assert {"NVFP4", "MXFP4", "FP8"} <= {r["precision"] for r in unseen_rows}
    assert "DeepSeek-R1" in {r["model"] for r in unseen_rows}  # a large-EP MoE
    assert max(int(r["num_accelerators"]) for r in unseen_rows) >= 288


def test_no_fit_reads_the_unseen_rows(unseen_rows) -> None:
    fit_ids = {r["id"] for r in read_rows(_ALL)}
    assert not fit_ids & {r["id"] for r in unseen_rows}
    assert row_set_ids("unseen") == {r["id"] for r in unseen_rows}
    assert row_set_ids("fitted") == {r["id"] for r in read_rows(default_csv())}


def test_server_rows_find_their_measured_capacity(unseen_rows) -> None:
    cap = measured_capacities(unseen_rows)
    servers = [r for r in unseen_rows if "server" in r["scenario"].lower()]
    from aitco.validation.inference import _system_key

    found = [r for r in servers if _system_key(r) in cap]
    assert len(found) >= 0.8 * len(servers)
    for r in found:  # MLPerf Server runs at or below its Offline throughput
        assert float(r["requests_per_s"]) <= 1.1 * cap[_system_key(r)]


@pytest.mark.slow
def test_unseen_rows_are_answered_and_scored_two_ways(unseen_rows) -> None:
    rep = validate(unseen_csv())
    ids = {r["id"] for r in unseen_rows}
    scored = {c.row_id for c in rep.comparisons}
    assert scored | {i for i, _ in rep.skipped} | {s[0] for s in rep.saturated} == ids
    assert not rep.skipped  # every case can be expressed
    e = rep.errors(THROUGHPUT)
    assert e.size >= 60
    assert float(np.median(e)) <= 0.25  # regression guard (docs/validation.md has the figures)
    s = rep.summary()
    assert s[LATENCY_AT_MEASURED_LOAD]["n"] > 0
    assert s[LATENCY_BELOW_LOW_LOAD]["n"] > 0
    for c in rep.comparisons:
        if c.kind == LATENCY_AT_MEASURED_LOAD:
            assert c.measured_load is not None
            assert c.measured_load < 1.0
    below = [c for c in rep.comparisons if c.kind == LATENCY and c.measured_load is not None
             and c.measured_load < LOW_LOAD]  # fmt: skip
    assert all(c.measured_load < LOW_LOAD for c in below)

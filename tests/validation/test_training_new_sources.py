"""Training rows from new sources (``aitco/validation/data/training_new_sources.csv``).

Published runs from sources that are not in ``shared/groundtruth/``: every row must carry a
source a reader can open and a locator, must be answered by the model (no row skipped for a
missing feature) and must come from a source that the shared ground truth (kept apart for
independent checks) does not hold. The out-of-sample error on these rows is reported in
``aitco/validation/data/README.md`` and by ``aitco validate training --rows new``.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest

from aitco.cli.app import main
from aitco.errors import InputError
from aitco.validation.training import (
    DATA_CSV,
    NEW_SOURCES_CSV,
    THROUGHPUT_SCOPES,
    hybrid_shard_devices,
    load_rows,
    map_hardware,
    row_set_ids,
    select_rows,
    source_group,
    validate_training,
)

#: A source a reader can open: a web address (scheme optional) with a host and a path.
URL = re.compile(r"^(https?://)?([a-z0-9-]+\.)+[a-z]{2,}/\S+", re.IGNORECASE)
#: The issue's floor on the number of new rows.
MIN_NEW_ROWS = 50


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def new_rows() -> list[dict[str, str]]:
    return _read(NEW_SOURCES_CSV)


@pytest.fixture(scope="module")
def new_results(catalog):
    return validate_training(NEW_SOURCES_CSV, catalog)


def test_schema_and_ids(new_rows) -> None:
    with open(DATA_CSV, encoding="utf-8") as fh:
        header = fh.readline()
    with open(NEW_SOURCES_CSV, encoding="utf-8") as fh:
        assert fh.readline() == header  # same columns, same order
    ids = [r["id"] for r in new_rows]
    assert len(ids) >= MIN_NEW_ROWS
    assert len(set(ids)) == len(ids)
    assert not set(ids) & {r["id"] for r in _read(DATA_CSV)}


def test_every_row_has_a_source_url_and_locator(new_rows) -> None:
    for r in new_rows:
        assert URL.match(r["source"]), (r["id"], r["source"])
        assert r["source_locator"].strip(), r["id"]
        assert r["reliability"] in ("A", "B", "C"), r["id"]
        assert r["run_scope"] in THROUGHPUT_SCOPES, r["id"]
        assert float(r["tokens_per_s_per_gpu"]) > 0, r["id"]


def test_derived_values_say_how(new_rows) -> None:
    """A per-GPU figure computed from a total or from TFLOP/s states its formula."""
    for r in new_rows:
        if "tokens_per_s_per_gpu" in r["derived_fields"]:
            assert "=" in r["derived_fields"], r["id"]
    maxtext = [r for r in new_rows if "maxtext" in r["source"].lower()]
    assert maxtext
    assert all(r["tflops_per_gpu"] and "tokens_per_s_per_gpu" in r["derived_fields"]
               for r in maxtext)  # fmt: skip


def _assert_apart(new_rows: list[dict[str, str]], kept: list[dict[str, str]]) -> None:
    sources = {r["source"] for r in kept}
    groups = {source_group(r["source"]) for r in kept}
    for r in new_rows:
        assert r["source"] not in sources, r["id"]
        assert source_group(r["source"]) not in groups, (r["id"], source_group(r["source"]))


def test_new_sources_are_not_in_the_shared_ground_truth(new_rows, fixtures_dir) -> None:
    _assert_apart(new_rows, _read(fixtures_dir / "groundtruth" / "training.csv"))


def test_new_sources_are_not_in_the_fitted_rows(new_rows) -> None:
    _assert_apart(new_rows, _read(DATA_CSV))


def test_every_new_row_is_answered(new_rows, new_results) -> None:
    assert {r.row_id for r in new_results} == {r["id"] for r in new_rows}
    skipped = {r.row_id: r.skipped for r in new_results if r.skipped}
    assert not skipped, skipped
    for r in new_results:
        assert math.isfinite(r.predicted), r.row_id
        assert r.predicted > 0, r.row_id
        assert r.target == "tokens_per_s_per_gpu", r.row_id


def test_new_rows_cover_other_accelerator_families(new_results, catalog) -> None:
    """TPU, Gaudi and AMD rows are answered, not only NVIDIA ones."""
    families = {
        catalog.hardware(map_hardware(r["hardware"]))[0].family for r in _read(NEW_SOURCES_CSV)
    }
    assert any("tpu" in f for f in families), families
    assert any("gaudi" in f for f in families), families
    assert any(f.startswith("amd-") for f in families), families


def _amd_benchmark_flops_per_token(seq_len: int, vocab: int, window: int | None) -> float:
    """FLOPs per token of AMD-AIG-AIMA/pytorch-training-benchmark ``llama.py`` / ``mistral.py``."""
    n_layers, d_model, d_ff, n_heads, n_kv = 32, 4096, 14336, 32, 8  # Llama 3.1 8B = Mistral 7B
    head_dim = d_model // n_heads
    per_layer = 6 * d_ff * d_model + 2 * d_model * (n_heads + 2 * n_kv) * head_dim
    per_layer += 2 * d_model * n_heads * head_dim
    weights = 3 * (per_layer * n_layers + 2 * d_model * vocab)
    span = seq_len if window is None else min(window, seq_len)
    return weights + 12 * n_layers * span * n_heads * head_dim  # attention not halved


def test_amd_rows_reproduce_from_the_published_tflops(new_rows, catalog) -> None:
    """Tokens/s of the MI300X/MI325X rows = published TFLOP/s / the benchmark's FLOPs per token."""
    amd = [r for r in new_rows if "rocm/pytorch-training" in r["source"]]
    assert len(amd) == 12
    assert {map_hardware(r["hardware"]) for r in amd} == {"mi300x", "mi325x"}
    for r in amd:
        mistral = "Mistral" in r["model"]
        # the benchmark's Mistral config: vocab 32000, 1024-token window (its catalog entry too)
        if mistral:
            assert catalog.models["amd-bench-mistral-7b-w1024"].sliding_window == 1024
        flops = _amd_benchmark_flops_per_token(
            int(r["seq_len"]), 32000 if mistral else 128256, 1024 if mistral else None
        )
        tok = float(r["tflops_per_gpu"]) * 1e12 / flops
        assert float(r["tokens_per_s_per_gpu"]) == pytest.approx(tok, abs=0.06), r["id"]


def test_bundled_rows_are_both_files() -> None:
    df = load_rows()
    assert len(df) == len(_read(DATA_CSV)) + len(_read(NEW_SOURCES_CSV))
    assert row_set_ids("new") == {r["id"] for r in _read(NEW_SOURCES_CSV)}
    assert row_set_ids("fitted") == {r["id"] for r in _read(DATA_CSV)}
    assert row_set_ids("all") is None


def test_select_rows_and_bad_row_set(new_results) -> None:
    assert select_rows(new_results, "fitted") == []
    assert select_rows(new_results, "new") == new_results
    with pytest.raises(InputError, match="rows"):
        row_set_ids("newest")


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return (exc.value.code if isinstance(exc.value.code, int) else 0), out, err


def test_cli_reports_the_new_rows_apart(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["validate", "training", "--rows", "new", "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["row_set"] == "new"
    ids = {r["row_id"] for r in d["rows_table"]}
    assert ids == {r["id"] for r in _read(NEW_SOURCES_CSV)}
    assert d["predicted"] == len(ids)
    assert d["skipped"] == 0
    assert d["by_row_set"]["new"]["predicted"] == len(ids)
    assert d["by_row_set"]["fitted"]["predicted"] >= 45


def test_cli_rejects_a_row_set_with_a_csv(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["validate", "training", str(DATA_CSV), "--rows", "new"], capsys)
    assert code != 0
    assert "--rows" in out + err


@pytest.mark.parametrize(
    ("row_id", "shard_devices"),
    [
        ("N002", 64),  # 2x v4-128: FSDP inside each 64-chip slice, DP across 2 slices
        ("N012", 256),  # 32x v5e-256
        ("N030", 256),  # 32x v5e-256 with TP16: the slice still bounds the FSDP group
        ("N048", 8),  # 2x A3: FSDP inside a VM, dcn_data_parallelism 2
        ("N055", None),  # torchtitan FSDP over 128 GPUs: fully sharded, not hybrid
        ("N095", None),  # no parallelism stated
    ],
)
def test_hybrid_sharding_is_read_from_the_rows(row_id: str, shard_devices: int | None) -> None:
    df = load_rows(NEW_SOURCES_CSV)
    row = df[df["id"] == row_id].iloc[0]
    assert hybrid_shard_devices(row, int(row["num_accelerators"])) == shard_devices


def test_multi_slice_rows_are_not_bound_by_fsdp_over_dcn(new_results) -> None:
    """MaxText v5e multi-slice and A3 multi-VM: FSDP stays on ICI/NVLink (compute-bound)."""
    ids = {f"N{i:03d}" for i in (*range(8, 13), *range(14, 19), *range(20, 25), *range(48, 52))}
    rows = [r for r in new_results if r.row_id in ids]
    assert len(rows) == len(ids)
    assert all(r.dominant == "compute_s" for r in rows), [(r.row_id, r.dominant) for r in rows]

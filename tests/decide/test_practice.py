"""Published practice: one table read by `aitco train` and `aitco compare` alike.

`aitco train` picks, among plans within the interval of the fastest, the one nearest to
published layouts (issue 16 item 6); compare must price the same plan, or the two commands give
different GPU-hours for the same workload (they differed by 6-16% before 2026-12-03).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aitco.catalog.loader import load_catalog, shipped_data_dir
from aitco.cli.app import main
from aitco.decide.practice import (
    PUBLISHED_RUNS_CSV,
    practice_for,
    read_published_runs,
    write_published_runs,
)
from aitco.validation.training import published_runs


def test_shipped_table_is_current(tmp_path: Path) -> None:
    """Regenerate with `python scripts/gen_published_runs.py` when this fails.

    The shipped table comes from the shipped catalog (not the test library).
    """
    fresh = tmp_path / "runs.csv"
    live = load_catalog(use_env=False, data_dir=shipped_data_dir())
    write_published_runs(published_runs(live), fresh)
    assert fresh.read_text(encoding="utf-8") == PUBLISHED_RUNS_CSV.read_text(encoding="utf-8")
    runs = read_published_runs()
    assert len(runs) >= 160
    assert any(r.layout == (8, 16, 1, 1) for r in runs)  # Llama 3 405B, TP8 PP16


def test_practice_lookup() -> None:
    p = practice_for(70e9, "nvidia-hopper", "bf16")
    assert p is not None
    assert 0 < p.best_mfu < 1
    assert p.layouts
    assert practice_for(70e9, "no-such-family", "bf16") is None


def test_a_moe_model_follows_moe_runs_only() -> None:
    """Dense layouts (EP 1) are no practice for a MoE model: on Hopper, where the table has no
    MoE run, a 671B MoE model gets no evidence; on Blackwell it follows the DeepSeek-V3 run."""
    dense = practice_for(671e9, "nvidia-hopper", "fp8")
    assert dense is not None
    assert all(lay[3] == 1 for lay in dense.layouts)
    assert practice_for(671e9, "nvidia-hopper", "fp8", moe=True) is None
    moe = practice_for(671e9, "nvidia-blackwell", "fp8", moe=True)
    assert moe is not None
    assert any(lay[3] > 1 for lay in moe.layouts)
    assert "DeepSeek" in moe.source


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code in (0, None)
    return json.loads(capsys.readouterr().out)


def test_train_and_compare_price_the_same_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 70B run on 64 H100, where the practice rule picks a plan slower than the fastest."""
    scn = tmp_path / "s.yaml"
    scn.write_text(
        """name: same-plan
workload: {kind: training, model: llama-3.1-70b, tokens: 1.0e+11, seq_len: 8192,
           global_batch: 128}
options:
  - {hardware: h100-sxm5-80gb, gpus: 64, pricing: on_demand, provider: any}
""",
        encoding="utf-8",
    )
    t = _json(["train", "--model", "llama-3.1-70b", "--hardware", "h100-sxm5-80gb", "--gpus",
               "64", "--tokens", "1e11", "--seq-len", "8192", "--global-batch", "128", "--json"],
              capsys)  # fmt: skip
    c = _json(["compare", str(scn), "--json"], capsys)["options"][0]
    assert c["tokens_per_s_per_gpu"] == pytest.approx(t["tokens_per_s_per_gpu"], rel=1e-9)
    assert c["mfu"] == pytest.approx(t["mfu"], rel=1e-9)

"""Expert and context parallelism in an engine training sweep (`workload.plan.ep` / `cp`).

A MoE model's cost depends on how its experts are sharded; the sweep takes the same plan fields
as `aitco train --ep/--cp`, prices each configuration as `aitco compare` prices that plan (same
total), and marks the plans `aitco train` refuses (EP on a dense model, EP not dividing the
experts or DP, CP not dividing the sequence) with a reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aitco.cli.app import main


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), (json.loads(out) if out.strip().startswith("{") else {}), err


def _sweep(model: str, grid: dict[str, str], evaluator: str = "engine") -> str:
    lines = "\n".join(f"    {k}: [{v}]" for k, v in grid.items())
    return f"""sweep:
  kind: training
  evaluator: {evaluator}
  workload: {{model: {model}, tokens: 1.0e+10, seq_len: 4096, global_batch: 256}}
  option: {{provider: any}}
  grid:
{lines}
  objective: total_usd
"""


def _compare(tmp_path: Path, capsys, plan: str) -> dict:
    """`aitco compare` of the sweep's Mixtral workload on 64 H100 with ``plan`` (YAML flow)."""
    scn = tmp_path / "scn.yaml"
    scn.write_text(
        "name: moe\nworkload:\n  kind: training\n  model: mixtral-8x7b\n  tokens: 1.0e+10\n"
        f"  seq_len: 4096\n  global_batch: 256\n  plan: {plan}\n"
        "options:\n  - {hardware: h100-sxm5-80gb, gpus: 64, pricing: on_demand, provider: any}\n"
    )
    code, comp, err = _run(["compare", str(scn), "--json"], capsys)
    assert code == 0, err
    return comp["options"][0]


GRID = {
    "option.hardware": "h100-sxm5-80gb",
    "option.gpus": "64",
    "option.pricing": "on_demand",
    "workload.plan.tp": "1, 2",
    "workload.plan.pp": "1",
    "workload.plan.micro_batch": "2",
    "workload.plan.zero": "3",
    "workload.plan.recompute": "selective",
}


def test_expert_parallel_plans_are_priced_as_compare_prices_them(tmp_path: Path, capsys) -> None:
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep("mixtral-8x7b", {**GRID, "workload.plan.ep": "1, 8"}))
    code, out, err = _run(["sweep", str(sw), "--json"], capsys)
    assert code == 0, err
    rows = {(r["tp"], r["ep"]): r for r in out["top"]}
    assert (1, 8) in rows
    assert (1, 1) not in rows  # every expert on every GPU: the activations do not fit
    assert any("memory" in r for r in out["invalid_reasons"])
    # sharding the experts 8 ways instead of gathering them all (ZeRO-3) is much faster
    assert rows[(2, 8)]["step_time_s"] < 0.5 * rows[(2, 1)]["step_time_s"]
    best = rows[(1, 8)]
    c = _compare(
        tmp_path,
        capsys,
        "{tp: 1, pp: 1, cp: 1, ep: 8, micro_batch: 2, zero: 3, recompute: selective}",
    )
    assert best["total_usd"] == pytest.approx(c["total_usd"], rel=1e-9)
    assert best["offer_id"] == c["offer_id"]


def test_plans_train_refuses_are_marked(tmp_path: Path, capsys) -> None:
    sw = tmp_path / "sweep.yaml"
    # a dense model with EP 2, and CP 3 not dividing 4,096 tokens
    sw.write_text(_sweep("llama-3.1-8b", {**GRID, "workload.plan.ep": "1, 2",
                                          "workload.plan.cp": "1, 3"}))  # fmt: skip
    code, out, err = _run(["sweep", str(sw), "--json"], capsys)
    assert code == 0, err
    assert any(r.startswith("plan: cp must divide seq_len") for r in out["invalid_reasons"])
    assert {(r["ep"], r["cp"]) for r in out["top"]} == {(1, 1)}


def test_the_fast_screen_does_not_take_ep(tmp_path: Path, capsys) -> None:
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep("mixtral-8x7b", {**GRID, "workload.plan.ep": "1, 8"}, evaluator="fast"))
    code, _, err = _run(["sweep", str(sw)], capsys)
    assert code == 2
    assert "workload.plan.ep" in err
    assert "Traceback" not in err


def test_schedules_are_swept_and_priced_as_compare_prices_them(tmp_path: Path, capsys) -> None:
    """DualPipe and Megatron's EP overlap as sweep keys: each plan priced as `compare` prices
    it; the plans their constraints exclude (DualPipe at pp 1, EP overlap at ep 1) marked."""
    grid = {**GRID, "workload.plan.tp": "1", "workload.plan.pp": "1, 2",
            "workload.plan.ep": "1, 8", "workload.plan.zero": "1",
            "workload.plan.micro_batch": "1",
            "workload.plan.pipeline_schedule": "1f1b, dualpipe",
            "workload.plan.ep_comm_overlap": "false, true"}  # fmt: skip
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep("mixtral-8x7b", grid))
    code, out, err = _run(["sweep", str(sw), "--json"], capsys)
    assert code == 0, err
    assert any(r.startswith("plan: dualpipe needs") for r in out["invalid_reasons"])
    rows = {(r["pp"], r["ep"], r["pipeline_schedule"], r["ep_comm_overlap"]): r for r in out["top"]}
    assert (1, 1, "dualpipe", False) not in rows
    assert (2, 8, "1f1b", True) not in rows  # EP overlap at pp 2 needs interleaving (vp > 1)
    dual = rows[(2, 8, "dualpipe", False)]
    assert dual["step_time_s"] < rows[(2, 8, "1f1b", False)]["step_time_s"]
    c = _compare(
        tmp_path,
        capsys,
        "{tp: 1, pp: 2, cp: 1, ep: 8, micro_batch: 1, zero: 1, "
        "recompute: selective, pipeline_schedule: dualpipe}",
    )
    assert dual["total_usd"] == pytest.approx(c["total_usd"], rel=1e-9)

"""`aitco compare`, `aitco sweep` and `aitco optimize` give the same total for the same plan.

Issue 12 item 1, one test per pricing mode: a training plan pinned to one parallel plan (so the
sweep's plan model and compare's engine run the same plan) is priced by the three commands
(``--json``, ``provider: any``: the cheapest eligible offer); ``total_usd`` must agree to 1e-9
relative. Owned hardware is not yet shared: the sweep prices the owned accelerator-hour with
its energy folded in and has no power items (docs/tco.md), so that mode is a strict xfail
that fails loudly once the two agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aitco.cli.app import main

PLAN = {"tp": 2, "pp": 1, "micro_batch": 1, "zero": 1, "recompute": "selective"}
WORKLOAD = "{model: llama-3-8b, tokens: 1.0e+10, seq_len: 2048, global_batch: 256}"


def _scenario(mode: str) -> str:
    plan = ", ".join(f"{k}: {v}" for k, v in PLAN.items())
    return f"""name: one-total
workload:
  kind: training
  model: llama-3-8b
  tokens: 1.0e+10
  seq_len: 2048
  global_batch: 256
  precision: bf16
  plan: {{{plan}}}
options:
  - {{hardware: h100-sxm5-80gb, gpus: 16, pricing: {mode}, provider: any}}
"""


def _sweep(mode: str) -> str:
    grid = "\n".join(f"    workload.plan.{k}: [{v}]" for k, v in PLAN.items())
    return f"""sweep:
  kind: training
  evaluator: engine
  workload: {WORKLOAD}
  option: {{provider: any}}
  grid:
    option.hardware: [h100-sxm5-80gb]
    option.gpus: [16]
    option.pricing: [{mode}]
    workload.precision: [bf16]
{grid}
  objective: total_usd
"""


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    assert exc.value.code in (0, None), err
    return json.loads(out)


def _totals(mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[float]:
    scn, sw = tmp_path / "scn.yaml", tmp_path / "sweep.yaml"
    scn.write_text(_scenario(mode))
    sw.write_text(_sweep(mode))
    comp = _run(["compare", str(scn), "--json"], capsys)["options"][0]
    assert comp["feasible"], comp["infeasible_reasons"]
    swept = _run(["sweep", str(sw), "--json"], capsys)["top"][0]
    opt = _run(["optimize", str(sw), "--json"], capsys)["top"][0]
    assert swept["offer_id"] == opt["offer_id"] == comp["offer_id"]
    return [comp["total_usd"], swept["total_usd"], opt["total_usd"]]


@pytest.mark.parametrize("mode", ["on_demand", "spot", "reserved_1y"])
def test_compare_sweep_optimize_same_total(mode, tmp_path, capsys):
    c, s, o = _totals(mode, tmp_path, capsys)
    assert s == pytest.approx(c, rel=1e-9)
    assert o == pytest.approx(c, rel=1e-9)


def test_compare_sweep_optimize_same_total_owned(tmp_path, capsys):
    c, s, o = _totals("owned", tmp_path, capsys)
    assert s == pytest.approx(c, rel=1e-9)
    assert o == pytest.approx(c, rel=1e-9)

"""ZeRO-Offload in `aitco sweep` / `aitco optimize`: one mode per sweep, compare's total.

A 13B full fine-tune on one 80 GB accelerator fits only with the optimizer in host memory; the
sweep's engine evaluator must price it as `aitco compare` does (same plan, same total), mark the
configurations the offload cannot run on (a system without host-memory figures, a ZeRO stage
below the mode's) with a reason, and refuse offload where it is not modelled.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aitco.cli.app import main

PLAN = {"tp": 1, "pp": 1, "micro_batch": 1, "zero": 1, "recompute": "selective"}
WORKLOAD = (
    "{model: llama-2-13b, tokens: 1.0e+8, seq_len: 4096, global_batch: 8, "
    "plan: {offload: optimizer}}"
)


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    code = int(exc.value.code or 0)
    return code, (json.loads(out) if out.strip().startswith("{") else {}), err


def _sweep(grid: dict[str, str], evaluator: str = "engine", workload: str = WORKLOAD) -> str:
    lines = "\n".join(f"    {k}: [{v}]" for k, v in grid.items())
    return f"""sweep:
  kind: training
  evaluator: {evaluator}
  workload: {workload}
  option: {{provider: any}}
  grid:
{lines}
  objective: total_usd
"""


BASE_GRID = {
    "option.hardware": "a100-sxm4-80gb",
    "option.gpus": "1",
    "option.pricing": "on_demand",
    **{f"workload.plan.{k}": str(v) for k, v in PLAN.items()},
}


def test_sweep_and_optimize_price_offload_as_compare_does(tmp_path: Path, capsys) -> None:
    plan = ", ".join(f"{k}: {v}" for k, v in {**PLAN, "offload": "optimizer"}.items())
    scn = tmp_path / "scn.yaml"
    scn.write_text(
        "name: offload\nworkload:\n  kind: training\n  model: llama-2-13b\n  tokens: 1.0e+8\n"
        f"  seq_len: 4096\n  global_batch: 8\n  plan: {{{plan}}}\n"
        "options:\n  - {hardware: a100-sxm4-80gb, gpus: 1, pricing: on_demand, provider: any}\n"
    )
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep(BASE_GRID))
    code, comp, err = _run(["compare", str(scn), "--json"], capsys)
    assert code == 0, err
    c = comp["options"][0]
    assert c["feasible"], c["infeasible_reasons"]
    code, swept, err = _run(["sweep", str(sw), "--json"], capsys)
    assert code == 0, err
    assert swept["offload"] == "optimizer"
    code, opt, err = _run(["optimize", str(sw), "--json"], capsys)
    assert code == 0, err
    s, o = swept["top"][0], opt["top"][0]
    assert s["offer_id"] == o["offer_id"] == c["offer_id"]
    assert s["total_usd"] == pytest.approx(c["total_usd"], rel=1e-9)
    assert o["total_usd"] == pytest.approx(c["total_usd"], rel=1e-9)


def test_offload_changes_the_sweep(tmp_path: Path, capsys) -> None:
    """Without offload the 13B full fine-tune does not fit one 80 GB device; with it, it does."""
    without = tmp_path / "without.yaml"
    without.write_text(
        _sweep(BASE_GRID, workload=WORKLOAD.replace(", plan: {offload: optimizer}", ""))
    )
    with_ = tmp_path / "with.yaml"
    with_.write_text(_sweep(BASE_GRID))
    _, off, _ = _run(["sweep", str(without), "--json"], capsys)
    _, on, _ = _run(["sweep", str(with_), "--json"], capsys)
    assert off["offload"] == "none"
    assert off["feasible"] == 0
    assert any("memory" in r for r in off["invalid_reasons"])
    assert on["feasible"] == 1


def test_configurations_the_offload_cannot_run_on_are_marked(tmp_path: Path, capsys) -> None:
    grid = {**BASE_GRID, "option.hardware": "a100-sxm4-80gb, l40s", "workload.plan.zero": "0, 1"}
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep(grid))
    code, out, err = _run(["sweep", str(sw), "--json"], capsys)
    assert code == 0, err
    reasons = out["invalid_reasons"]
    assert any(r.startswith("offload: the system gives no host memory") for r in reasons)
    assert any(r.startswith("offload: ZeRO stage below") for r in reasons)
    assert {(r["hardware"], r["zero"]) for r in out["top"]} == {("a100-sxm4-80gb", 1)}


@pytest.mark.parametrize(
    ("evaluator", "grid_extra", "field"),
    [
        ("fast", {}, "workload.plan.offload"),
        ("engine", {"workload.plan.offload": "optimizer, none"}, "grid.workload.plan.offload"),
    ],
)
def test_offload_where_not_modelled_is_an_error(
    tmp_path: Path, capsys, evaluator: str, grid_extra: dict[str, str], field: str
) -> None:
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep({**BASE_GRID, **grid_extra}, evaluator=evaluator))
    code, _, err = _run(["sweep", str(sw)], capsys)
    assert code == 2
    assert field in err
    assert "Traceback" not in err


def test_an_unknown_offload_mode_is_an_error(tmp_path: Path, capsys) -> None:
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep(BASE_GRID, workload=WORKLOAD.replace("optimizer", "nvme")))
    code, _, err = _run(["sweep", str(sw)], capsys)
    assert code == 2
    assert "workload.plan.offload = 'nvme'" in err
    assert "one of none, optimizer, params" in err
    assert "Traceback" not in err


def test_nvme_offload_in_a_sweep_needs_the_nodes_nvme_figures(tmp_path: Path, capsys) -> None:
    """ZeRO-Infinity to NVMe (ZeRO-3): the A100 node states its drives and prices; the L40S
    node does not, and its configurations are marked, as `aitco train` refuses them."""
    wl = WORKLOAD.replace("offload: optimizer", "offload: optimizer-nvme")
    grid = {**BASE_GRID, "option.hardware": "a100-sxm4-80gb, l40s", "workload.plan.zero": "1, 3"}
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep(grid, workload=wl))
    code, out, err = _run(["sweep", str(sw), "--json"], capsys)
    assert code == 0, err
    reasons = out["invalid_reasons"]
    assert any("nvme_read_gb_s" in r for r in reasons)
    assert any(r.startswith("offload: ZeRO stage below") for r in reasons)
    assert {(r["hardware"], r["zero"]) for r in out["top"]} == {("a100-sxm4-80gb", 3)}


STACK_PLAN = {
    **PLAN,
    "elementwise_kernels": "fused",
    "loss_kernel": "fused",
    "gemm_level": "ceiling",
}
STACK_WORKLOAD = (
    "{model: llama-3.2-1b, tokens: 1.0e+9, seq_len: 4096, global_batch: 64, "
    "plan: {elementwise_kernels: fused, loss_kernel: fused, gemm_level: ceiling}}"
)
STACK_GRID = {
    "option.hardware": "h100-sxm5-80gb",
    "option.gpus": "8",
    "option.pricing": "on_demand",
    **{f"workload.plan.{k}": str(v) for k, v in PLAN.items()},
}


def test_sweep_prices_stack_options_as_compare_does(tmp_path: Path, capsys) -> None:
    """Fused elementwise and loss kernels and GEMMs at the matmul ceiling as sweep base values:
    the same total as `compare` of the scenario with that plan, cheaper than the default."""
    plan = ", ".join(f"{k}: {v}" for k, v in STACK_PLAN.items())
    scn = tmp_path / "scn.yaml"
    scn.write_text(
        "name: stack\nworkload:\n  kind: training\n  model: llama-3.2-1b\n  tokens: 1.0e+9\n"
        f"  seq_len: 4096\n  global_batch: 64\n  plan: {{{plan}}}\n"
        "options:\n  - {hardware: h100-sxm5-80gb, gpus: 8, pricing: on_demand, provider: any}\n"
    )
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep(STACK_GRID, workload=STACK_WORKLOAD))
    code, comp, err = _run(["compare", str(scn), "--json"], capsys)
    assert code == 0, err
    code, swept, err = _run(["sweep", str(sw), "--json"], capsys)
    assert code == 0, err
    assert swept["stack"] == {
        "elementwise_kernels": "fused", "loss_kernel": "fused", "gemm_level": "ceiling"
    }  # fmt: skip
    assert swept["top"][0]["total_usd"] == pytest.approx(comp["options"][0]["total_usd"], rel=1e-9)
    plain = tmp_path / "plain.yaml"
    plain.write_text(_sweep(STACK_GRID, workload=STACK_WORKLOAD.replace(
        ", plan: {elementwise_kernels: fused, loss_kernel: fused, gemm_level: ceiling}", ""
    )))  # fmt: skip
    code, base, err = _run(["sweep", str(plain), "--json"], capsys)
    assert code == 0, err
    assert base["stack"] == {}
    assert swept["top"][0]["total_usd"] < base["top"][0]["total_usd"]


@pytest.mark.parametrize(
    ("evaluator", "grid_extra", "workload", "field"),
    [
        ("fast", {}, STACK_WORKLOAD, "workload.plan.elementwise_kernels"),
        (
            "engine",
            {"workload.plan.loss_kernel": "fused, unfused"},
            STACK_WORKLOAD,
            "grid.workload.plan.loss_kernel",
        ),
        (
            "engine",
            {},
            STACK_WORKLOAD.replace("elementwise_kernels: fused", "elementwise_kernels: compiled"),
            "workload.plan.elementwise_kernels = 'compiled'",
        ),
    ],
)
def test_stack_options_where_not_modelled_are_errors(
    tmp_path: Path, capsys, evaluator: str, grid_extra: dict[str, str], workload: str, field: str
) -> None:
    sw = tmp_path / "sweep.yaml"
    sw.write_text(_sweep({**STACK_GRID, **grid_extra}, evaluator=evaluator, workload=workload))
    code, _, err = _run(["sweep", str(sw)], capsys)
    assert code == 2
    assert field in err
    assert "Traceback" not in err

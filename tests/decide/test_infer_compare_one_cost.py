"""`aitco infer` and `aitco compare` give one cost per token for one plan and offer (issue 34).

Both price the service with the same functions (:func:`aitco.decide.option_cost.option_price`,
:func:`aitco.decide.service_cost.bill_service` and ``price_service``, the items of
:mod:`aitco.cost.tco`): a plan that ``compare`` does not re-size (no arrival rate, or a rate the
replica carries) must give the same ``usd_per_million_output_tokens``, total per hour and offer.
Before, ``infer`` charged the GPU rent alone, split by prefill time (0.257 vs 0.314).
"""

from __future__ import annotations

import json

import pytest

from aitco.cli.app import main

MODEL, HW = "llama-3-8b", "h100-sxm5-80gb"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    assert exc.value.code in (0, None), err
    return json.loads(out)


CASES = [
    # (infer flags, scenario workload lines, option lines)
    (["--concurrency", "32"], "  concurrency: 32\n", ""),
    (["--mode", "offline", "--gpus", "2", "--tp", "2"], "  mode: offline\n  tp: 2\n", ""),
    (["--qps", "2", "--num-requests", "400"], "  qps: 2.0\n", ""),
    (["--concurrency", "16", "--usd-per-gpu-hour", "3.1"], "  concurrency: 16\n",
     "    usd_per_gpu_hour: 3.1\n"),
    (["--concurrency", "8", "--precision", "fp8", "--mig", "3g.40gb"],
     "  concurrency: 8\n  precision: fp8\n  mig: 3g.40gb\n", ""),
]  # fmt: skip


@pytest.mark.parametrize(("flags", "workload", "option"), CASES)
def test_infer_and_compare_price_one_plan_alike(flags, workload, option, tmp_path, capsys):
    gpus = flags[flags.index("--gpus") + 1] if "--gpus" in flags else "1"
    inf = _run(["infer", "--model", MODEL, "--hardware", HW, *flags, "--json"], capsys)
    scn = tmp_path / "s.yaml"
    scn.write_text(
        f"name: one-plan\nworkload:\n  kind: inference\n  model: {MODEL}\n{workload}"
        f"options:\n  - hardware: {HW}\n    gpus: {gpus}\n    pricing: on_demand\n{option}"
    )
    comp = _run(["compare", str(scn), "--json"], capsys)
    opt = comp["options"][0]
    assert opt["total_gpus"] == int(gpus)  # compare priced the plan as given (no re-sizing)
    for key in ("usd_per_million_output_tokens", "usd_per_million_tokens", "usd_per_month"):
        assert inf[key] == pytest.approx(opt[key], rel=1e-9), key
    assert inf["usd_per_h"] == pytest.approx(opt["total_usd"] / 730.5, rel=1e-9)
    assert inf["gpu_usd_per_h"] == pytest.approx(opt["price_usd_per_gpu_h"], rel=1e-12)
    assert inf["offer_id"] == opt["offer_id"]
    assert inf["tco"]["total_usd"] == pytest.approx(opt["total_usd"], rel=1e-12)

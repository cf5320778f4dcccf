"""``aitco infer`` serving flags (issue 15) through the CLI entry point."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from aitco.cli.app import main

BASE = ["infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "1"]


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ei:
        main(args)
    out = capsys.readouterr()
    return int(ei.value.code or 0), out.out, out.err


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    code, out, err = _run([*BASE, *args, "--json"], capsys)
    assert code == 0, err
    return dict(json.loads(out))


def test_explain_json_terms_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(["--concurrency", "64", "--prefix-cache-hit-rate", "0.5", "--scheduler-steps", "4",
               "--max-batched-tokens", "2048", "--explain"], capsys)  # fmt: skip
    terms = d["explain"]["terms"]
    for key in ("ttft", "tpot"):
        total = math.fsum(t["value"] for t in terms if t["name"].startswith(key + "_"))
        assert total == pytest.approx(d[f"{key}_s"], rel=1e-9)
    assert d["prefix_cache_hit_rate"] == 0.5
    assert d["scheduler_steps"] == 4
    assert d["max_batched_tokens"] == 2048


def test_cost_per_token_and_price(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(["--mode", "offline", "--usd-per-gpu-hour", "2.0"], capsys)
    tokens_in = d["total_tokens_per_s"] - d["output_tokens_per_s"]
    # the split shares the whole cost per hour (every TCO item, not the GPU rent alone)
    out_tps = d["output_tokens_per_s"]
    usd_s = (d["usd_per_million_input_tokens"] * tokens_in
             + d["split_usd_per_million_output_tokens"] * out_tps) / 1e6  # fmt: skip
    assert usd_s * 3600 == pytest.approx(d["usd_per_h"])
    assert d["usd_per_h"] > 2.0  # the rent, plus operations staff and the other items
    assert d["gpu_usd_per_h"] == 2.0
    # the whole cost over the output tokens
    assert d["usd_per_million_output_tokens"] == pytest.approx(
        d["usd_per_h"] / 3600 / d["output_tokens_per_s"] * 1e6, rel=1e-9
    )
    assert sum(i["usd"] for i in d["tco"]["items"]) == pytest.approx(d["tco"]["total_usd"])


def test_contiguous_kv_lowers_concurrency(capsys: pytest.CaptureFixture[str]) -> None:
    paged = _json(["--mode", "offline"], capsys)
    cont = _json(["--mode", "offline", "--kv-allocation", "contiguous"], capsys)
    assert cont["max_concurrency"] < paged["max_concurrency"]
    assert cont["usd_per_million_output_tokens"] > paged["usd_per_million_output_tokens"]


def test_disaggregate_and_autoscale(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    d = _json(["--qps", "4", "--num-requests", "200", "--slo-tpot-ms", "40",
               "--disaggregate", "auto", "--load-profile", "diurnal",
               "--autoscale", "target-util=0.7,min=0,max=16"], capsys)  # fmt: skip
    assert d["disaggregation"]["chosen"] in ("aggregated", "disaggregated")
    a = d["autoscale"]
    assert len(a["replicas_by_hour"]) == 24
    assert a["usd_per_month"] <= a["fixed_replicas_usd_per_month"]
    prof = tmp_path / "load.csv"
    prof.write_text(
        "hour,qps\n" + "".join(f"{h},{1.0 if 8 <= h < 20 else 0.0}\n" for h in range(24))
    )
    f = _json(["--load-profile", str(prof), "--disaggregate", "1x1"], capsys)
    assert f["autoscale"]["replicas_by_hour"][2] == 0.0
    assert f["disaggregation"]["prefill_to_decode_ratio"] == "1:1"


def test_mig_slice(capsys: pytest.CaptureFixture[str]) -> None:
    full = _json(["--precision", "fp8"], capsys)
    mig = _json(["--precision", "fp8", "--mig", "3g.40gb"], capsys)
    assert mig["mig_profile"] == "3g.40gb"
    assert mig["hardware"] == "h100-sxm5-80gb"
    assert mig["tpot_s"] > full["tpot_s"]
    assert mig["gpu_usd_per_h"] == pytest.approx(full["gpu_usd_per_h"] / 2)


def test_time_slice(capsys: pytest.CaptureFixture[str]) -> None:
    """Two replicas time-slicing one GPU: each half the price, slower when both are busy,
    and less room for the KV cache (each engine holds its own weights in half the memory)."""
    full = _json(["--precision", "fp8"], capsys)
    half = _json(["--precision", "fp8", "--time-slice", "2"], capsys)
    assert half["time_slice"] == 2
    assert half["hardware"] == "h100-sxm5-80gb"
    assert half["gpu_usd_per_h"] == pytest.approx(full["gpu_usd_per_h"] / 2)
    assert full["tpot_s"] < half["tpot_s"] <= 2 * full["tpot_s"]
    assert half["kv_capacity_tokens"] < full["kv_capacity_tokens"] / 2
    # alone on the GPU the replica runs at full rates: faster than contended, and no faster
    # than the whole GPU (it has only half the memory)
    alone = half["uncontended"]
    assert full["tpot_s"] <= alone["tpot_s"] * (1 + 1e-9) < half["tpot_s"]
    assert "uncontended" not in full
    both = _json(["--precision", "fp8", "--mig", "3g.40gb", "--time-slice", "2"], capsys)
    assert both["gpu_usd_per_h"] == pytest.approx(full["gpu_usd_per_h"] / 4)
    assert "time-sliced by 2" in both["price_source"]
    code, _, err = _run([*BASE, "--time-slice", "16"], capsys)  # 5 GB each: 8B weights do not fit
    assert code == 2
    assert "fewer --time-slice replicas" in err


@pytest.mark.parametrize(
    "args",
    [
        ["--time-slice", "0"],
        ["--time-slice", "2", "--gpus", "2"],
        ["--time-slice", "2", "--hardware", "tpu-v5e"],
        ["--prefix-cache-hit-rate", "1.5"],
        ["--scheduler-steps", "0"],
        ["--disaggregate", "3y2"],
        ["--autoscale", "speed=2"],
        ["--mig", "1g.10gb", "--gpus", "2"],
        ["--mig", "1g.10gb", "--hardware", "l4"],
        ["--load-profile", "nope.csv"],
    ],
)
def test_bad_serving_flags_are_one_line_errors(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run([*BASE, *args], capsys)
    assert code == 2
    assert "Traceback" not in err
    assert err.strip().count("\n") == 0

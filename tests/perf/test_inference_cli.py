"""``aitco infer`` and ``aitco validate inference`` through the CLI entry point."""

from __future__ import annotations

import json

import pytest

from aitco.cli.app import main

KEYS = (
    "ttft_s", "tpot_s", "e2e_latency_s", "output_tokens_per_s", "total_tokens_per_s",
    "requests_per_s", "max_concurrency", "kv_cache_gb", "weights_gb", "fits",
)  # fmt: skip
QPS_KEYS = ("p50_ttft_s", "p99_ttft_s", "p50_tpot_s", "p99_tpot_s", "p99_e2e_latency_s")


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ei:
        main(args)
    out = capsys.readouterr()
    return int(ei.value.code or 0), out.out, out.err


def test_infer_json_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ["infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "1",
         "--precision", "fp8", "--input-tokens", "1000", "--output-tokens", "500", "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    d = json.loads(out)
    for k in KEYS:
        assert k in d
    assert d["fits"] is True
    assert d["output_tokens_per_s"] > 0
    assert d["interval"]["output_tokens_per_s"][0] < d["output_tokens_per_s"]


def test_infer_qps_slo_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ["infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "2",
         "--tp", "1", "--qps", "10", "--slo-ttft-ms", "500", "--slo-tpot-ms", "50",
         "--num-requests", "1000", "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    d = json.loads(out)
    for k in KEYS + QPS_KEYS + ("replicas_for_slo",):
        assert k in d
    assert d["replicas_for_slo"] >= 1


def test_infer_offline_table_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ["infer", "--model", "llama-3.1-8b", "--hardware", "a100-sxm4-80gb", "--mode", "offline",
         "--explain"],
        capsys,
    )  # fmt: skip
    assert code == 0
    assert "output tokens/s" in out
    assert "Dominant term" in out


def test_infer_model_that_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(
        ["infer", "--model", "llama-3.1-405b", "--hardware", "h100-sxm5-80gb", "--gpus", "1"],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert "GB per GPU" in err
    assert "tp" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "extra",
    [
        ["--gpus", "3", "--tp", "2"],
        ["--batch", "4", "--qps", "2"],
        ["--qps", "-1"],
        ["--precision", "fp7"],
        ["--hardware", "h100"],
    ],
)
def test_infer_bad_input_exit_2(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb"]
    # later flags override earlier ones in click, so the bad value wins
    code, _, err = _run([*args, *extra], capsys)
    assert code == 2
    assert "Traceback" not in err


def test_infer_saturation_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ["infer", "--model", "llama-3.1-8b", "--hardware", "l4", "--qps", "500",
         "--num-requests", "500", "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    d = json.loads(out)
    assert d["saturated"] is True
    assert d["p99_ttft_s"] is None


@pytest.mark.usefixtures("live_catalog_data")  # validation measures the shipped catalog
def test_validate_inference_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["validate", "inference"], capsys)
    assert code == 0
    assert "median APE" in out
    assert "p90 APE" in out
    assert "I058" in out  # unmapped rows are listed, not dropped


@pytest.mark.usefixtures("live_catalog_data")  # validation measures the shipped catalog
def test_validate_inference_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["validate", "inference", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["offline_throughput"]["n"] >= 20
    assert {s["id"] for s in d["skipped"]} >= {"I058", "I059"}
    # the predicted load of each load-row latency figure (how well conditioned it is)
    loads = {r["id"]: r["offered_load"] for r in d["rows_table"] if r["metric"] == "ttft_ms_median"}
    assert loads
    assert all(0.0 < v < 1.0 for v in loads.values())
    lat_kinds = ("latency", "latency_at_measured_load")
    assert all(r["offered_load"] is None for r in d["rows_table"] if r["kind"] not in lat_kinds)
    # issue 31: load relative to the same system's measured capacity, and the two latency views
    rel = [r for r in d["rows_table"] if r["kind"] == "latency_at_measured_load"]
    assert rel
    assert all(0.0 < r["measured_load"] < 1.0 for r in rel)
    assert d["latency_at_measured_load"]["n"] == len(rel)
    assert d["latency_below_80pct_load"]["n"] > 0
    assert set(d["by_row_set"]) == {"all", "fitted", "new", "unseen"}


def test_infer_trace_counts_malformed_lines(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "trace.csv"
    p.write_text(
        "arrival_s,input_tokens,output_tokens\n0,100,50\n0.1,200,80\nbad,1,1\n0.3,150,-6\n"
        "0.5,120,40\n"
    )
    code, out, _ = _run(
        ["infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--trace", str(p),
         "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    d = json.loads(out)
    assert d["trace_malformed_lines"] == [4, 5]
    assert d["p99_ttft_s"] is not None
    bad = tmp_path / "bad.csv"
    bad.write_text("time,in\n1,2\n")
    code, _, err = _run(
        ["infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--trace", str(bad)],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert "arrival_s" in err


def test_infer_calibration_profile_changes_the_answer(
    tmp_path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from aitco.calibrate.profile import CalibrationProfile, save_profile
    from aitco.perf.efficiency import DEFAULT_EFFICIENCY

    slow = DEFAULT_EFFICIENCY.with_overrides({"decode_hbm": 0.45})
    p = save_profile(CalibrationProfile(efficiency=slow), tmp_path / "prof.yaml")
    args = ["infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--json"]
    _, base, _ = _run(args, capsys)
    code, cal, _ = _run([*args, "--calibration", str(p)], capsys)
    assert code == 0
    # batch-1 decode is weight-bound: half the bandwidth fraction, a much slower TPOT
    assert json.loads(cal)["tpot_s"] > 1.4 * json.loads(base)["tpot_s"]


def test_infer_power_limit_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """A 400 W cap on a 700 W H100: the memory-bound decode step barely slows, the prefill (compute)
    does, and the power drawn - hence the energy per token - falls with the cap."""
    args = ["infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "1",
            "--concurrency", "16", "--json"]  # fmt: skip
    code, out, _ = _run(args, capsys)
    assert code == 0
    free = json.loads(out)
    code, out, _ = _run([*args, "--power-limit-w", "400"], capsys)
    assert code == 0
    capped = json.loads(out)
    assert free["tpot_s"] < capped["tpot_s"] < 1.05 * free["tpot_s"]
    assert capped["ttft_s"] > 1.05 * free["ttft_s"]
    assert capped["power_w"] <= 400.0  # one GPU draws at most its limit
    assert capped["power_w"] < free["power_w"]
    assert capped["energy_per_token_j"] < free["energy_per_token_j"]

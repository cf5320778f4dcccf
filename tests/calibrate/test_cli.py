"""aitco ingest / calibrate / actual-vs-estimate / probe: JSON contract and clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aitco.calibrate.profile import load_profile
from aitco.cli.app import main

DATA = Path(__file__).parent / "data"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else 0
    return code, out, err


def test_ingest_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        [
            "ingest",
            "auto",
            str(DATA / "nccl_all_gather_pre213.txt"),
            str(DATA / "dcgm_power_energy.txt"),
            "--json",
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    assert [f["kind"] for f in doc["files"]] == ["nccl", "dcgm"]
    assert doc["skipped_lines"] == 2
    assert doc["files"][0]["summary"]["bus_bandwidth_plateau_gb_s"] == pytest.approx(75.52)
    assert doc["files"][0]["skipped_lines"]["lines"][0]["line"] == 13
    assert "records" not in doc["files"][0]


def test_ingest_records_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["ingest", "trainlog", str(DATA / "steps.jsonl"), "--json", "--records"], capsys
    )
    assert code == 0
    assert len(json.loads(out)["files"][0]["records"]) == 4
    code, out, err = run(["ingest", "kineto", str(DATA / "kineto_trace.json")], capsys)
    assert code == 0
    assert "exposed_comm_fraction" in out
    assert "skipped line" in err


@pytest.mark.parametrize(
    "args",
    [
        ["ingest", "nosuchkind", "x.txt"],
        ["ingest", "dcgm", str(DATA / "steps.jsonl")],
        ["ingest", "auto", "/nonexistent/file.log"],
        ["ingest", "dcgm", str(DATA / "dcgm_power_energy.txt"), "--interval-s", "-1"],
        ["ingest", "dcgm", str(DATA / "dcgm_power_energy.txt"), "--idle-threshold", "3"],
        [
            "calibrate",
            str(DATA / "steps.jsonl"),
            "-o",
            "/tmp/never.yaml",
            "--hardware",
            "h100-sxm5-80gb",
        ],
        [
            "calibrate",
            str(DATA / "codecarbon_run.csv"),
            "-o",
            "/tmp/never.yaml",
            "--hardware",
            "h100-sxm5-80gb",
        ],
        ["probe", "--backend", "cuda"],
    ],
)
def test_bad_input_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(args, capsys)
    assert code == 2
    assert "Traceback" not in err
    assert "error" in err


def test_calibrate_writes_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "profile.yaml"
    code, out, _ = run(
        ["calibrate", str(DATA / "nccl_v217_dup_header.txt"), "-o", str(out_file), "--json"], capsys
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["warnings"] == []  # a plausible fit: written without --force (issue 18)
    prof = load_profile(out_file)
    assert prof.accelerator == "h200-sxm-141gb"  # inferred from 'NVIDIA H200'
    assert "intra_node_link" in prof.fitted
    assert prof.efficiency.intra_node_link == pytest.approx(doc["params"]["intra_node_link"])
    assert prof.measurements["bus_bandwidth_plateau_gb_s"] == pytest.approx(282.32)
    # the profile is accepted by the training CLI
    code, out, _ = run(
        [
            "train",
            "--model",
            "llama-3-8b",
            "--hardware",
            "h200-sxm-141gb",
            "--gpus",
            "8",
            "--calibration",
            str(out_file),
            "--json",
        ],
        capsys,
    )
    assert code == 0
    assert json.loads(out)["step_time_s"] > 0


def test_calibrate_from_training_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "p.yaml"
    code, out, _ = run(
        [
            "calibrate",
            str(DATA / "steps.jsonl"),
            "-o",
            str(out_file),
            "--hardware",
            "h100-sxm5-80gb",
            "--model",
            "llama-3-8b",
            "--gpus",
            "8",
            "--seq-len",
            "2048",
            "--global-batch",
            "16",
            "--tp",
            "1",
            "--pp",
            "1",
            "--dp",
            "8",
            "--params",
            "gemm",
            "--json",
            "--force",  # the synthetic log's own "mfu" (0.5) does not match llama-3-8b (0.19)
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    assert any("the log reports MFU" in w for w in doc["warnings"])
    assert list(doc["params"]) == ["gemm:nvidia-hopper"]
    assert doc["measurements"]["step_time_s"] == pytest.approx(1.005)


def test_actual_vs_estimate_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        [
            "actual-vs-estimate",
            str(DATA / "megatron_primus.txt"),
            str(DATA / "kineto_trace.json"),
            "--model",
            "llama-3-8b",
            "--hardware",
            "h100-sxm5-80gb",
            "--gpus",
            "8",
            "--seq-len",
            "2048",
            "--usd-per-gpu-hour",
            "2.0",
            "--json",
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    rows = {r["item"]: r for r in doc["rows"]}
    for item in ("step_time_s", "tokens_per_s_per_gpu", "mfu", "comm_time_s", "energy_kwh", "usd"):
        assert item in rows
    assert rows["step_time_s"]["actual"] == pytest.approx(13.17)
    assert rows["tokens_per_s_per_gpu"]["actual"] == pytest.approx(4976.0)
    assert rows["step_time_s"]["ratio"] == pytest.approx(rows["step_time_s"]["estimate"] / 13.17)
    assert rows["comm_time_s"]["actual"] == pytest.approx(200e-6)
    assert rows["usd"]["estimate"] == pytest.approx(rows["gpu_hours"]["estimate"] * 2.0)
    assert "explain" in doc
    chain = doc["loss_chain"]  # from the Kineto split scaled to the logged step
    assert chain[0]["item"] == "ideal_at_peak"
    assert sum(r["time_s"] for r in chain) == pytest.approx(13.17)
    by = {r["item"]: r for r in chain}
    assert by["exposed_communication"]["share_of_step"] == pytest.approx(0.2)
    assert by["idle"]["share_of_step"] == pytest.approx(0.25)


def test_actual_vs_estimate_timers_chain(
    fixtures_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = fixtures_dir / "deepspeed_megatron_log.txt"
    code, out, _ = run(
        [
            "actual-vs-estimate",
            str(log),
            "--model",
            "llama-2-7b",
            "--hardware",
            "a100-sxm4-80gb",
            "--gpus",
            "8",
            "--seq-len",
            "2048",
            "--global-batch",
            "32",
            "--json",
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    by = {r["item"]: r for r in doc["loss_chain"]}
    assert by["optimizer"]["time_s"] == pytest.approx(1.17251)
    assert by["exposed_communication"]["time_s"] == pytest.approx(0.1626)
    assert by["data_loading"]["time_s"] == pytest.approx(0.00083)
    rows = {r["item"]: r for r in doc["rows"]}
    assert rows["step_time_s"]["actual"] == pytest.approx(4.1031)
    assert rows["mfu_reported_by_framework"]["actual"] == pytest.approx(112.9 / 312.0)


def test_probe_numpy_writes_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "probe.yaml"
    code, out, _ = run(
        [
            "probe",
            "--backend",
            "numpy",
            "--size",
            "128",
            "--copy-mb",
            "4",
            "--repeats",
            "1",
            "-o",
            str(out_file),
            "--json",
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["backend"] == "numpy"
    assert doc["matmul_tflops"]["fp32"] > 0
    assert doc["memory_bandwidth_gb_s"] > 0
    prof = load_profile(out_file)
    assert prof.probe is not None
    assert prof.probe.matmul_size == 128


def test_ingest_idle_cost(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        [
            "ingest",
            "nvidia-smi",
            str(DATA / "nvidia_smi_util.csv"),
            "--usd-per-gpu-hour",
            "3.6",
            "--json",
        ],
        capsys,
    )
    assert code == 0
    s = json.loads(out)["files"][0]["summary"]
    assert s["idle_cost_usd"] == pytest.approx(10 / 3600 * 3.6)  # GPU 1 idle for 10 s


def test_probe_then_calibrate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aitco.calibrate.profile import CalibrationProfile, ProbeResult, save_profile

    probe_file = tmp_path / "probe.yaml"
    save_profile(
        CalibrationProfile(
            probe=ProbeResult(
                device="NVIDIA H100 80GB HBM3",
                backend="torch-cuda",
                matmul_tflops={"bf16": 700.0},
                memory_bandwidth_gb_s=2800.0,
                matmul_size=8192,
            )
        ),
        probe_file,
    )
    out_file = tmp_path / "p.yaml"
    code, _, _ = run(
        [
            "calibrate",
            str(probe_file),
            "-o",
            str(out_file),
            "--hardware",
            "h100-sxm5-80gb",
            "--params",
            "gemm,hbm",
            "--json",
        ],
        capsys,
    )
    assert code == 0
    prof = load_profile(out_file)
    assert prof.efficiency.hbm == pytest.approx(2800 / 3350, rel=1e-4)
    assert prof.efficiency.gemm_for("nvidia-hopper") == pytest.approx(700 / 989.4, rel=1e-3)

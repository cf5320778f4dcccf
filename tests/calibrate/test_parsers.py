"""Parsers on the real fixtures in tests/fixtures and on our own small fixtures.

Numbers are checked, not only that parsing ran.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from aitco.calibrate.parsers.codecarbon import parse_codecarbon
from aitco.calibrate.parsers.dcgm import parse_dcgm
from aitco.calibrate.parsers.detect import detect_kind, parse_any
from aitco.calibrate.parsers.focus import accelerators_in, parse_focus
from aitco.calibrate.parsers.kineto import parse_kineto
from aitco.calibrate.parsers.nccl_tests import parse_nccl
from aitco.calibrate.parsers.nvidia_smi import parse_nvidia_smi
from aitco.calibrate.parsers.serving_bench import parse_serving
from aitco.calibrate.parsers.train_log import parse_train_log
from aitco.errors import ParseError

DATA = Path(__file__).parent / "data"
approx = pytest.approx


@pytest.fixture
def fx(fixtures_dir: Path) -> Path:
    return fixtures_dir


# ----------------------------------------------------------------------------- nccl-tests
def test_nccl_fixture_plateau_not_average(fx: Path) -> None:
    r = parse_nccl(fx / "nccl_all_reduce_perf.txt")
    s = r.summary
    assert r.format_version.startswith("2.13-2.16")
    assert len(r.records) == 31
    assert s["bus_bandwidth_plateau_gb_s"] == approx(338.82)
    assert s["plateau_size_bytes"] == 8589934592
    assert s["algbw_at_plateau_gb_s"] == approx(180.71)
    assert s["avg_bus_bandwidth_gb_s"] == approx(70.742)
    assert s["n_ranks"] == 16
    assert s["n_nodes"] == 2
    assert s["gpu_model"] == "NVIDIA H100 80GB HBM3"
    assert s["collective"] == "all_reduce"
    assert s["latency_us"] == approx(122.3)
    assert s["out_of_bounds_values"] == 0
    big = r.records[-2]
    assert big["oop_time_us"] == approx(24361)  # printed without decimals
    assert big["ip_busbw_gb_s"] == approx(330.51)
    assert r.skipped.count == 0


def test_nccl_pre_213_layout_and_bad_line() -> None:
    r = parse_nccl(DATA / "nccl_all_gather_pre213.txt")
    assert r.format_version.startswith("pre-2.13")
    assert len(r.records) == 8
    assert r.skipped.count == 1
    assert r.skipped.first[0][0] == 13  # line number of the garbage row
    assert r.summary["bus_bandwidth_plateau_gb_s"] == approx(75.52)
    assert r.summary["collective"] == "all_gather"
    assert r.summary["gpu_model"] == "A100-SXM4-80GB"
    assert r.records[0]["oop_wrong"] == 0.0


def test_nccl_217_banner_and_duplicated_header() -> None:
    r = parse_nccl(DATA / "nccl_v217_dup_header.txt")
    assert r.format_version.startswith("2.17.6")
    assert r.meta["headers_seen"] == 2
    assert r.summary["n_ranks"] == 4
    assert r.summary["n_nodes"] == 1
    assert r.summary["bus_bandwidth_plateau_gb_s"] == approx(282.32)
    assert r.summary["latency_us"] == approx(11.9)


def test_nccl_json() -> None:
    r = parse_nccl(DATA / "nccl_results.json")
    assert r.format == "nccl-tests-json"
    assert r.format_version == "json v3"
    assert r.summary["bus_bandwidth_plateau_gb_s"] == approx(323.97)
    assert r.summary["n_ranks"] == 16
    assert r.summary["n_nodes"] == 2
    assert r.summary["avg_bus_bandwidth_gb_s"] == approx(236.27)
    assert r.skipped.count == 1


def test_nccl_gzip(tmp_path: Path) -> None:
    src = DATA / "nccl_v217_dup_header.txt"
    dst = tmp_path / "log.txt.gz"
    with open(src, "rb") as a, gzip.open(dst, "wb") as b:
        shutil.copyfileobj(a, b)
    assert parse_nccl(dst).summary["bus_bandwidth_plateau_gb_s"] == approx(282.32)


# ----------------------------------------------------------------------------- DCGM
def test_dcgm_power_fixture(fx: Path) -> None:
    r = parse_dcgm(fx / "dcgmi_dmon.txt")
    s = r.summary
    assert s["fields"] == ["GPUTL", "MCUTL", "POWER", "TMPTR", "ESVTL", "EDVTL", "FBUSD"]
    assert s["units"]["POWER"] == "W"
    assert s["units"]["TMPTR"] == "C"
    g0 = s["devices"]["GPU 0"]
    assert g0["samples"] == 5
    assert g0["fields"]["POWER"]["min"] == approx(20.891)
    assert g0["fields"]["POWER"]["max"] == approx(20.986)
    assert s["mean_power_w"] == approx((3 * 20.891 + 2 * 20.986) / 5)
    assert s["energy_j"] == approx(3 * 20.891 + 2 * 20.986)  # 1 s per sample, integrated
    assert s["energy_source"] == "integrated-power"
    assert s["idle_fraction"] == approx(1.0)  # GPUTL 0 %
    assert g0["fields"]["TMPTR"]["mean"] == approx(22)


def test_dcgm_profiling_na_and_multigpu(fx: Path) -> None:
    r = parse_dcgm(fx / "dcgmi_dmon_profiling.txt")
    f = r.summary["devices"]["GPU 0"]["fields"]
    assert f["PCITX"]["n"] == 3  # the two N/A samples are missing, not malformed
    assert f["PCITX"]["mean"] == approx((498948 + 449138 + 548740) / 3)
    assert r.skipped.count == 0
    m = parse_dcgm(fx / "dcgmi_dmon_multigpu.txt")
    assert m.summary["n_devices"] == 4
    assert m.summary["devices"]["GPU 3"]["samples"] == 3
    assert m.summary["devices"]["GPU 0"]["fields"]["NVLTX"]["max"] == approx(20779220484)


def test_dcgm_energy_counter_reset_and_idle() -> None:
    r = parse_dcgm(DATA / "dcgm_power_energy.txt", interval_s=1.0)
    s = r.summary
    assert r.skipped.count == 1
    assert r.skipped.first[0][0] == 9
    assert r.meta["headers_seen"] == 2
    assert s["units"]["TOTEC"] == "mJ"
    g0, g1 = s["devices"]["GPU 0"], s["devices"]["GPU 1"]
    assert g0["energy_j"] == approx(2000.0)  # TOTEC delta: 2e6 mJ
    assert g1["energy_j"] == approx(450.0)  # 300 J, reset, +50 J, +100 J
    assert g1["energy_counter_resets"] == 1
    assert s["energy_source"] == "counter"
    assert s["idle_devices"] == ["GPU 1"]
    assert g1["idle_time_s"] == approx(6.0)
    assert s["idle_fraction"] == approx(0.5)


# ----------------------------------------------------------------------------- nvidia-smi
def test_nvidia_smi_fixture(fx: Path) -> None:
    r = parse_nvidia_smi(fx / "nvidia_smi_query.csv")
    s = r.summary
    assert s["units"]["power.draw"] == "W"
    assert s["samples"] == 11
    assert s["devices"]["GPU 0"]["fields"]["power.draw"]["min"] == approx(16.48)
    assert s["devices"]["GPU 0"]["fields"]["power.draw"]["max"] == approx(71.83)
    assert s["mean_power_w"] == approx(413.04 / 11)
    assert s["timestamps_increasing"] is False  # one timestamp repeated: fall back to interval


def test_nvidia_smi_util_timestamps_and_bad_rows() -> None:
    r = parse_nvidia_smi(DATA / "nvidia_smi_util.csv")
    s = r.summary
    assert [ln for ln, _, _ in r.skipped.first] == [6, 11]
    assert s["timestamps_increasing"] is True
    assert s["devices"]["GPU 0"]["time_s"] == approx(10.0)  # 5 samples, 2 s apart
    assert s["energy_j"] == approx(650 * 10 + 90 * 10)
    assert s["idle_devices"] == ["GPU 1"]
    assert s["idle_fraction"] == approx(0.5)
    assert s["devices"]["GPU 1"]["fields"]["memory.used"]["mean"] == approx(1000)


def test_nvidia_smi_noheader_needs_columns(tmp_path: Path) -> None:
    f = tmp_path / "nh.csv"
    f.write_text("0, 100.0, 50\n0, 200.0, 60\n")
    with pytest.raises(ParseError, match="columns="):
        parse_nvidia_smi(f)
    r = parse_nvidia_smi(f, columns=["index", "power.draw", "utilization.gpu"])
    assert r.summary["mean_power_w"] == approx(150.0)
    assert r.format_version == "csv noheader"


# ----------------------------------------------------------------------------- training logs
def test_megatron_fixture(fx: Path) -> None:
    r = parse_train_log(fx / "megatron_log.txt")
    assert r.format == "megatron-lm"
    assert "--log-throughput" in r.format_version
    assert [x["step"] for x in r.records] == [43, 44, 45]
    assert r.records[0]["step_time_s"] == approx(5.4449)
    assert r.records[0]["reported_tflops_per_gpu"] == approx(239.8)
    assert r.records[0]["consumed_samples"] == 5504
    assert r.records[2]["loss"] == approx(1.834162)
    assert r.summary["step_time_s"] == approx(5.5338)  # median
    assert r.summary["reported_tflops_per_gpu"] == approx(236.0)
    assert r.summary["global_batch"] == 128
    assert r.summary["train_iters"] == 100


def test_megatron_legacy_fixture(fx: Path) -> None:
    r = parse_train_log(fx / "megatron_log_legacy.txt")
    assert "legacy" in r.format_version
    assert r.records[1]["step_time_s"] == approx(87.8716)
    assert r.summary["global_batch"] == 1024
    assert r.summary["reported_tflops_per_gpu"] is None


def test_deepspeed_megatron_fixture(fx: Path) -> None:
    r = parse_train_log(fx / "deepspeed_megatron_log.txt")
    assert r.format == "deepspeed+megatron-deepspeed"
    assert len(r.records) == 1  # the DeepSpeed and Megatron lines of step 34 are merged
    rec = r.records[0]
    assert rec["step"] == 34
    assert rec["reported_tflops_per_gpu"] == approx(112.9)
    assert rec["step_time_s"] == approx(4.1031)
    assert rec["samples_per_s_running_avg"] == approx(7.864669709950182)
    assert rec["memory_per_gpu_gb"] == approx(59.65)
    t = r.summary["timers_ms"]
    assert t["megatron"]["optimizer"] == approx(1172.51)
    assert t["megatron"]["batch_generator"] == approx(0.83)
    assert t["deepspeed"]["backward_allreduce"] == approx(162.60)


def test_deepspeed_legacy_fixture(fx: Path) -> None:
    r = parse_train_log(fx / "deepspeed_log_legacy.txt")
    assert "legacy" in r.format_version
    assert [x["samples_per_s"] for x in r.records] == approx([83.48609168106144, 83.73838805358588])
    assert r.summary["skipped_steps"] == 2


def test_torchtitan_fixture(fx: Path) -> None:
    r = parse_train_log(fx / "torchtitan_log.txt")
    assert r.format == "torchtitan"
    assert len(r.records) == 4
    a, _, c, _ = r.records
    assert a["tokens_per_s_per_gpu"] == approx(10050)  # thousands separator
    assert a["mfu"] == approx(0.1399)
    assert a["reported_tflops_per_gpu"] == approx(314.71)
    assert a["memory_per_gpu_gb"] == approx(66.91 * 2**30 / 1e9)
    assert c["step"] == 3  # [rank0]: prefix stripped
    assert c["tokens_per_s_per_gpu"] == approx(30768)


def test_hf_trainer_state_fixture(fx: Path) -> None:
    r = parse_train_log(fx / "hf_trainer_state.json")
    s = r.summary
    assert r.format == "hf-trainer"
    assert "no final entry" in r.format_version
    assert s["n_steps"] == 3
    assert s["n_evals"] == 2
    assert s["global_step"] == 2800
    assert s["total_flos"] == approx(7.124293413922406e16)
    assert s["last_num_tokens"] == approx(11424256)
    assert s["eval_loss"] == approx(1.1219322681427002)
    assert s["has_final_entry"] is False


def test_hf_final_entry(tmp_path: Path) -> None:
    f = tmp_path / "train_results.json"
    f.write_text(
        '{"epoch": 1.0, "total_flos": 1e18, "train_loss": 1.5, "train_runtime": 3600.0,'
        ' "train_samples_per_second": 10.0, "train_steps_per_second": 0.5}'
    )
    r = parse_train_log(f)
    assert r.summary["train_runtime_s"] == approx(3600)
    assert r.summary["step_time_s"] == approx(2.0)


def test_primus_megatron_and_bad_line() -> None:
    r = parse_train_log(DATA / "megatron_primus.txt")
    assert r.skipped.count == 1
    assert r.skipped.first[0][0] == 4
    assert r.records[1]["step_time_s"] == approx(13.1)  # current, not the running average
    assert r.records[1]["tokens_per_s_per_gpu"] == approx(5002.9)
    # step 1 (warm-up) is excluded from the medians
    assert r.summary["step_time_s"] == approx(13.17)
    assert r.summary["reported_tflops_per_gpu"] == approx(399.1)


def test_generic_jsonl() -> None:
    r = parse_train_log(DATA / "steps.jsonl")
    assert r.format == "jsonl"
    assert r.skipped.count == 1
    assert r.skipped.first[0][0] == 4
    assert r.lines_ignored == 1  # the checkpoint event
    assert r.summary["step_time_s"] == approx(1.005)  # median of steps 2, 3, 5 (step 1 = warm-up)
    assert r.summary["mfu"] == approx(0.4975)


# ----------------------------------------------------------------------------- serving
def test_vllm_json_fixture(fx: Path) -> None:
    r = parse_serving(fx / "vllm_benchmark_serving.json")
    s = r.summary
    assert r.kind == "vllm"
    assert "typo" in r.format_version
    assert s["mean_ttft_ms"] == approx(54.577085783294024)
    assert s["p99_itl_ms"] == approx(34.210415409961556)
    assert s["output_throughput"] == approx(2249.247363167692)
    assert s["completed"] == 300
    assert s["duration_s"] == approx(36.034275877000255)
    assert "request_goodput" in s
    assert s["request_goodput"] is None
    assert r.records[0]["extra"]["gpu"] == "4xNVIDIA_L40S"
    # the same figures under aitco infer's names and units
    assert s["ttft_s"] == approx(0.054577085783294024)
    assert s["p99_tpot_s"] == approx(s["p99_tpot_ms"] / 1e3)
    assert s["requests_per_s"] == s["request_throughput"]
    assert s["output_tokens_per_s"] == s["output_throughput"]


def test_vllm_stdout_fixture_matches_json(fx: Path) -> None:
    a = parse_serving(fx / "vllm_benchmark_serving_stdout.txt").summary
    b = parse_serving(fx / "vllm_benchmark_serving.json").summary
    for k in (
        "mean_ttft_ms",
        "median_tpot_ms",
        "p99_itl_ms",
        "output_throughput",
        "total_token_throughput",
    ):
        assert a[k] == approx(b[k], abs=0.006), k
    assert a["completed"] == 300
    assert a["total_output_tokens"] == 81050
    assert a["request_rate"] == approx(10.0)


def test_sglang_fixture(fx: Path) -> None:
    r = parse_serving(fx / "sglang_bench_serving.jsonl")
    assert r.kind == "sglang"
    assert len(r.records) == 2
    first = r.records[0]
    assert first["median_ttft_ms"] == approx(85.74514742940664)
    assert first["mean_e2el_ms"] == approx(7840.616212638561)  # e2e_latency -> e2el
    assert first["output_throughput"] == approx(537.4142851849319)
    assert r.summary["completed"] == 1200


def test_vllm_current_jsonl_with_energy() -> None:
    r = parse_serving(DATA / "vllm_current.jsonl")
    assert r.skipped.count == 1
    assert r.skipped.first[0][0] == 2
    a = r.records[0]
    assert a["request_rate"] == float("inf")
    assert a["gpu_energy_j"] == approx(35000)
    assert a["p99_e2el_ms"] == approx(7000)
    assert a["failed"] == 2
    assert r.records[1]["mean_e2el_ms"] == approx(3900)


# ----------------------------------------------------------------------------- FOCUS
def test_focus_fixture(fx: Path) -> None:
    r = parse_focus(fx / "focus_billing_sample.csv")
    s = r.summary
    assert r.format_version == "FOCUS 1.0"
    assert s["n_rows"] == 7
    billed = 0.0000008 + 1.624 + 0.480884264 - 2.6137 + 0.012 + 0.000015 + 0.192
    assert s["billed_cost_usd"] == approx(billed)
    assert s["billed_by_category_usd"]["Credit"] == approx(-2.6137)
    assert s["gpu_hours"] == approx(1.296111)  # g5.4xlarge: 1 A10G
    assert s["billed_cost_usd_per_gpu_h"] == approx(1.624)
    assert s["effective_cost_usd_per_gpu_h"] == approx(2.0 / 1.296111)


def test_focus_csv_duckdb_parquet_agree(tmp_path: Path) -> None:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    a = parse_focus(DATA / "focus_gpu.csv")
    b = parse_focus(DATA / "focus_gpu.csv", engine="duckdb")
    assert a.skipped.count == 2
    assert a.format_version == "FOCUS 1.1"
    assert a.summary["gpu_hours"] == approx(20.0)  # 2.5 h of p5.48xlarge x 8
    assert a.summary["billed_cost_usd_per_gpu_h"] == approx(12.29)
    for k in ("billed_cost_usd", "effective_cost_usd", "gpu_hours", "n_rows"):
        assert b.summary[k] == approx(a.summary[k]), k
    pq_path = tmp_path / "f.parquet"
    table = pacsv.read_csv(
        DATA.parent.parent.parent / "tests/calibrate/data/focus_gpu.csv",
        parse_options=pacsv.ParseOptions(invalid_row_handler=lambda row: "skip"),
    )
    pq.write_table(table, pq_path)
    c = parse_focus(pq_path)
    assert c.format == "focus-parquet"
    assert c.summary["gpu_hours"] == approx(20.0)


def test_accelerators_in() -> None:
    assert accelerators_in("p5.48xlarge") == ("p5.48xlarge", 8)
    assert accelerators_in("Standard - E3 - Memory") == (None, 0)
    assert accelerators_in("NVIDIA GPU hour") == (None, 1)


# ----------------------------------------------------------------------------- CodeCarbon, Kineto
def test_codecarbon_fixtures(fx: Path) -> None:
    r = parse_codecarbon(fx / "codecarbon_emissions.csv")
    assert r.format_version.startswith("v2")
    assert r.summary["energy_kwh"] == approx(0.0004047892176375 + 0.0001418904712555)
    assert r.summary["duration_s"] == approx(355.46638011932373 + 98.54818415641785)
    assert r.summary["pue"] == approx(1.0)
    v3 = parse_codecarbon(fx / "codecarbon_emissions_v3_header.csv")
    assert v3.format_version.startswith("v3")
    assert v3.records[0]["water_l"] == approx(0.1)
    assert v3.summary["energy_kwh"] == approx(0.00057442898176)


def test_codecarbon_own() -> None:
    r = parse_codecarbon(DATA / "codecarbon_run.csv")
    assert r.skipped.count == 1
    assert r.summary["gpu_energy_kwh"] == approx(5.6)
    assert r.summary["mean_gpu_power_w"] == approx(2800.0)


def test_kineto_split_adds_up() -> None:
    r = parse_kineto(DATA / "kineto_trace.json")
    s = r.summary
    assert s["n_steps"] == 2
    assert s["step_time_s"] == approx(1e-3)
    assert s["compute_s"] == approx(500e-6)  # union of two overlapping kernels
    assert s["comm_s"] == approx(300e-6)
    assert s["overlapped_comm_s"] == approx(100e-6)
    assert s["exposed_comm_s"] == approx(200e-6)
    assert s["exposed_memcpy_s"] == approx(50e-6)
    assert s["idle_s"] == approx(250e-6)
    total = (
        s["compute_fraction"]
        + s["exposed_comm_fraction"]
        + s["exposed_memcpy_fraction"]
        + s["idle_fraction"]
    )
    assert total == approx(1.0)
    assert r.skipped.count == 1


# ----------------------------------------------------------------------------- detection, errors
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("nccl_all_reduce_perf.txt", "nccl"),
        ("dcgmi_dmon.txt", "dcgm"),
        ("dcgmi_dmon_multigpu.txt", "dcgm"),
        ("nvidia_smi_query.csv", "nvidia-smi"),
        ("megatron_log.txt", "trainlog"),
        ("megatron_log_legacy.txt", "trainlog"),
        ("deepspeed_megatron_log.txt", "trainlog"),
        ("deepspeed_log_legacy.txt", "trainlog"),
        ("torchtitan_log.txt", "trainlog"),
        ("hf_trainer_state.json", "trainlog"),
        ("vllm_benchmark_serving.json", "vllm"),
        ("vllm_benchmark_serving_stdout.txt", "vllm"),
        ("sglang_bench_serving.jsonl", "sglang"),
        ("focus_billing_sample.csv", "focus"),
        ("codecarbon_emissions.csv", "codecarbon"),
        ("codecarbon_emissions_v3_header.csv", "codecarbon"),
    ],
)
def test_detect_every_fixture(fx: Path, name: str, kind: str) -> None:
    assert detect_kind(fx / name) == kind
    parse_any(fx / name)  # and it parses


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("nccl_all_gather_pre213.txt", "nccl"),
        ("nccl_results.json", "nccl"),
        ("dcgm_power_energy.txt", "dcgm"),
        ("nvidia_smi_util.csv", "nvidia-smi"),
        ("megatron_primus.txt", "trainlog"),
        ("steps.jsonl", "trainlog"),
        ("vllm_current.jsonl", "vllm"),
        ("focus_gpu.csv", "focus"),
        ("codecarbon_run.csv", "codecarbon"),
        ("kineto_trace.json", "kineto"),
    ],
)
def test_detect_own_fixtures(name: str, kind: str) -> None:
    assert detect_kind(DATA / name) == kind


@pytest.mark.parametrize(
    "fn",
    [
        parse_nccl,
        parse_dcgm,
        parse_nvidia_smi,
        parse_train_log,
        parse_serving,
        parse_focus,
        parse_codecarbon,
        parse_kineto,
    ],
)
def test_unusable_file_is_parse_error(tmp_path: Path, fn) -> None:
    f = tmp_path / "junk.txt"
    f.write_text("hello\nworld\n")
    with pytest.raises(ParseError):
        fn(f)
    with pytest.raises(ParseError, match="no such file"):
        fn(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ParseError):
        fn(empty)


def test_trainlog_bounded_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import aitco.calibrate.parsers.train_log as tl

    monkeypatch.setattr(tl, "MAX_RECORDS_KEPT", 10)
    f = tmp_path / "long.jsonl"
    f.write_text(
        "".join(f'{{"step": {i}, "step_time_ms": {1000 + i % 3}}}\n' for i in range(1, 1001))
    )
    r = parse_train_log(f)
    assert len(r.records) == 10
    assert r.summary["n_steps"] == 1000
    assert r.summary["last_step"] == 1000
    assert r.summary["step_time_s"] == approx(1.001)  # median over all 999 steady-state steps
    assert "only the first 10" in r.meta["note"]


def test_dcgm_exporter_prometheus_text() -> None:
    r = parse_dcgm(DATA / "dcgm_exporter.prom")
    s = r.summary
    assert r.format == "dcgm-exporter"
    assert r.skipped.count == 1
    assert r.skipped.first[0][0] == 19
    assert r.lines_ignored == 1  # XID errors: not a field we aggregate
    g0, g1 = s["devices"]["node-1 GPU 0"], s["devices"]["node-1 GPU 1"]
    assert g0["samples"] == 2
    assert g0["time_s"] == approx(60.0)  # 30 s between scrapes (ms timestamps)
    assert g0["energy_j"] == approx(19500.0)  # TOTEC delta in mJ
    assert g1["energy_j"] == approx(2700.0)
    assert s["idle_devices"] == ["node-1 GPU 1"]
    assert g0["fields"]["POWER"]["mean"] == approx(650.0)
    assert detect_kind(DATA / "dcgm_exporter.prom") == "dcgm"


def test_telemetry_fields_si_beside_the_printed_units(fixtures_dir: Path) -> None:
    """``fields`` keep the printed unit (%, MiB); ``fields_si`` hold fractions, bytes, watts."""
    s = parse_nvidia_smi(DATA / "nvidia_smi_util.csv").summary
    g1 = s["devices"]["GPU 1"]
    assert s["units"]["memory.used"] == "MiB"
    assert g1["fields"]["memory.used"]["mean"] == approx(1000)  # the public key, as printed
    assert g1["fields_si"]["memory.used_bytes"]["mean"] == approx(1000 * 2**20)
    assert g1["fields_si"]["utilization.gpu_fraction"]["max"] == approx(0.05)
    assert g1["fields"]["utilization.gpu"]["max"] == approx(5)
    assert g1["fields_si"]["power.draw_w"]["n"] == g1["fields"]["power.draw"]["n"]
    # the utilisation summary, a fraction, agrees with the SI field
    assert g1["mean_utilization"] == approx(g1["fields_si"]["utilization.gpu_fraction"]["mean"])
    d = parse_dcgm(fixtures_dir / "dcgmi_dmon.txt").summary["devices"]["GPU 0"]
    assert d["fields_si"]["POWER_w"]["min"] == approx(20.891)
    assert set(d["fields_si"]) >= {"GPUTL_fraction", "FBUSD_bytes", "TMPTR_c"}
    assert not any(k.startswith(("ESVTL", "EDVTL")) for k in d["fields_si"])  # unit unknown

"""``aitco train`` and ``aitco validate training``: the public JSON contract and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aitco.cli.app import main

ISSUE_KEYS = ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
              "hardware_tflops_per_gpu", "mfu", "hfu", "memory_per_gpu_gb", "fits", "gpu_hours",
              "wall_clock_h", "plan", "interval")  # fmt: skip
BASE = ["train", "--model", "gpt2-124m", "--hardware", "h100-sxm5-80gb", "--gpus", "8"]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else 0
    return code, out, err


def test_train_json_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*BASE, "--tokens", "1e9", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    for k in ISSUE_KEYS:
        assert k in d, k
    assert set(d["plan"]) >= {"tp", "pp", "cp", "ep", "dp", "zero", "micro_batch", "recompute"}
    assert 0 < d["mfu"] < 1
    assert d["fits"] is True
    lo, hi = d["interval"]["tokens_per_s_per_gpu"]
    assert lo < d["tokens_per_s_per_gpu"] < hi


def test_train_explicit_plan_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*BASE, "--tp", "2", "--pp", "2", "--micro-batch", "4", "--zero", "1",
                        "--recompute", "selective", "--global-batch-tokens", "1048576",
                        "--explain"], capsys)  # fmt: skip
    assert code == 0
    assert "Dominant term" in out
    assert "bubble_s" in out
    assert "tp_comm_s" in out
    assert "80% range" in out


def test_train_explicit_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*BASE, "--tp", "4", "--seq-len", "1024", "--global-batch", "64",
                        "--json"], capsys)  # fmt: skip
    assert code == 0
    d = json.loads(out)
    assert d["plan"]["tp"] == 4
    assert d["plan"]["dp"] == 2
    assert d["plan"]["pp"] == 1


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--tp", "5", "--dp", "1"], "attention heads"),
        (["--tp", "2", "--pp", "2", "--dp", "4"], "equal to --gpus"),
        (["--pp", "64", "--dp", "1", "--gpus", "64"], "number of layers"),
        (["--plan", "manual"], "--plan"),
        (["--global-batch", "8", "--global-batch-tokens", "100"], "not both"),
    ],
)
def test_train_bad_plans_exit_2(
    extra: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run([*BASE, *extra], capsys)
    assert code == 2
    assert "Traceback" not in err
    assert needle in err.replace("\n", " ")


def test_train_dtype_the_hardware_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["train", "--model", "gpt2-124m", "--hardware", "a100-sxm4-80gb", "--gpus", "8",
            "--precision", "fp8"]  # fmt: skip
    code, out, _ = run(args, capsys)
    assert code == 0  # emulated (issue 31): quantise/dequantise around 16-bit GEMMs, said so
    assert "emulated" in out
    assert "fp8" in out


def test_train_not_fitting_says_by_how_much(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*BASE, "--gpus", "1", "--micro-batch", "512", "--global-batch", "512",
                        "--dp", "1", "--recompute", "none"], capsys)  # fmt: skip
    assert code == 0
    assert "infeasible" in out
    assert "GB over" in out


@pytest.mark.usefixtures("live_catalog_data")  # validation measures the shipped catalog
def test_validate_training_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", "training", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["predicted"] >= 45
    assert d["rows"] == d["predicted"] + d["skipped"]
    assert all(r["skipped"] or r["ape"] >= 0 for r in d["rows_table"])


@pytest.mark.usefixtures("live_catalog_data")  # validation measures the shipped catalog
def test_validate_training_custom_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aitco.validation.training import DATA_CSV

    lines = DATA_CSV.read_text(encoding="utf-8").splitlines()
    header = lines[0]
    keep = [ln for ln in lines[1:] if ln.startswith(("T092,", "T104,"))]
    f = tmp_path / "two.csv"
    f.write_text("\n".join([header, *keep]) + "\n", encoding="utf-8")
    code, out, _ = run(["validate", "training", str(f)], capsys)
    assert code == 0
    assert "T092" in out
    assert "T104" in out
    assert "median APE" in out


def test_validate_training_missing_csv(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["validate", "training", "/nonexistent.csv"], capsys)
    assert code == 2
    assert "CSV" in err


def test_train_calibration_profile_changes_the_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aitco.calibrate.profile import CalibrationProfile, save_profile
    from aitco.perf.efficiency import DEFAULT_EFFICIENCY

    slow = DEFAULT_EFFICIENCY.with_overrides({"gemm": {"nvidia-hopper": 0.3}})
    path = save_profile(CalibrationProfile(efficiency=slow), tmp_path / "p.yaml")
    args = [*BASE, "--tp", "1", "--micro-batch", "1", "--json"]
    _, out_default, _ = run(args, capsys)
    code, out_cal, _ = run([*args, "--calibration", str(path)], capsys)
    assert code == 0
    # only the GEMM terms slow down (attention, element-wise, communication and the fixed
    # per-step overhead do not): gpt2-124m's step is ~1.28x longer, well beyond noise
    assert json.loads(out_cal)["step_time_s"] > 1.2 * json.loads(out_default)["step_time_s"]


def test_train_hf_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
        "intermediate_size": 4096, "num_attention_heads": 16, "num_key_value_heads": 4,
        "num_hidden_layers": 8, "vocab_size": 32000, "max_position_embeddings": 4096,
        "hidden_act": "silu", "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
    }  # fmt: skip
    f = tmp_path / "config.json"
    f.write_text(json.dumps(cfg), encoding="utf-8")
    code, out, _ = run(["train", "--model", str(f), "--hardware", "h100-sxm5-80gb", "--gpus", "1",
                        "--method", "qlora", "--json"], capsys)  # fmt: skip
    assert code == 0
    d = json.loads(out)
    assert d["method"] == "qlora"
    assert d["fits"] is True


def test_train_prints_the_default_batch_and_its_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["train", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb",
                        "--gpus", "8", "--json"], capsys)  # fmt: skip
    assert code == 0
    d = json.loads(out)
    assert d["batch_rule"].startswith("default")
    assert d["global_batch_tokens"] == d["global_batch"] * d["seq_len"]
    assert d["global_batch_tokens"] > 2**20  # the law gives ~4M tokens for 8B, not the old 1M
    assert d["batch_caps_dp"] is False
    code, out, _ = run(["train", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb",
                        "--gpus", "64", "--global-batch", "4"], capsys)  # fmt: skip
    assert code == 0
    assert "batch caps data parallelism" in out
    assert "(given)" in out


def test_train_plan_carries_the_published_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    # GPT-3 175B on 384 A100 (issue 16): the searched MFU is checked against Megatron's runs
    code, out, _ = run(["train", "--model", "gpt3-175b", "--hardware", "a100-sxm4-80gb",
                        "--gpus", "384", "--global-batch", "1536", "--json"], capsys)  # fmt: skip
    assert code == 0
    d = json.loads(out)
    assert 0.2 < d["published_best_mfu"] < 0.5
    assert isinstance(d["beyond_published_evidence"], bool)
    assert d["beyond_published_evidence"] is (d["interval"]["mfu"][0] > d["published_best_mfu"])


@pytest.mark.usefixtures("live_catalog_data")  # validation measures the shipped catalog
def test_validate_training_cv_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aitco.validation.training import DATA_CSV

    lines = DATA_CSV.read_text(encoding="utf-8").splitlines()
    keep = [ln for ln in lines[1:] if ln.startswith(("T064,", "T065,", "T092,", "T104,"))]
    f = tmp_path / "four.csv"
    f.write_text("\n".join([lines[0], *keep]) + "\n", encoding="utf-8")
    code, out, _ = run(["validate", "training", str(f), "--cv", "group", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["cv"] == "group"
    assert d["predicted"] == 4
    assert {g["source_group"] for g in d["by_source_group"]} == {
        "github.com/nvidia/megatron-lm",
        "github.com/mosaicml/llm-foundry",
    }
    assert 0.0 <= d["interval_coverage"] <= 1.0
    assert d["in_sample"]["predicted"] == 4
    assert all(r["source_group"] for r in d["rows_table"])


def test_train_shard_devices_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """--shard-devices keeps ZeRO-3 state inside groups: more optimizer memory per GPU."""
    args = ["train", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "64",
            "--fsdp", "--tp", "1", "--pp", "1", "--micro-batch", "1", "--json"]  # fmt: skip
    _, full, _ = run(args, capsys)
    code, hybrid, _ = run([*args, "--shard-devices", "8"], capsys)
    assert code == 0
    f, h = json.loads(full), json.loads(hybrid)
    assert f["plan"]["shard_devices"] is None
    assert h["plan"]["shard_devices"] == 8
    ratio = h["memory_split_gb"]["optimizer"] / f["memory_split_gb"]["optimizer"]
    assert ratio == pytest.approx(64 / 8, rel=1e-6)


def test_train_shard_devices_must_divide_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([*BASE, "--shard-devices", "3"], capsys)
    assert code == 2
    assert "--shard-devices" in err
    assert "divisor" in err


def test_train_offload_fits_a_13b_full_fine_tune_on_one_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ZeRO-Offload (issue 16): Llama 2 13B, full fine-tuning on one A100 80GB does not fit on
    the device alone; with the optimizer on the CPU it does, and the offload costs time."""
    args = ["train", "--model", "llama-2-13b", "--hardware", "a100-sxm4-80gb", "--gpus", "1",
            "--seq-len", "4096", "--global-batch", "8", "--json"]  # fmt: skip
    _, plain, _ = run(args, capsys)
    code, off, _ = run([*args, "--offload", "optimizer"], capsys)
    assert code == 0
    p, o = json.loads(plain), json.loads(off)
    assert p["fits"] is False
    assert o["fits"] is True
    assert o["plan"]["offload"] == "optimizer"
    assert p["plan"]["offload"] == "none"
    assert o["plan"]["zero"] >= 1
    assert o["time_split_s"]["offload_s"] > 0
    assert o["time_split_s"]["optimizer_s"] == 0
    assert p["time_split_s"] == {}  # infeasible: no step time (one verdict, issue 31)
    assert p["tokens_per_s"] is None
    assert p["feasible"] is False
    assert "GB over the 80 GB" in p["infeasible_reason"]
    assert sum(o["time_split_s"].values()) == pytest.approx(o["step_time_s"], rel=1e-9)
    # 13B x (12 B of Adam states + 4 B fp32 gradients) in host memory
    assert o["host_memory_per_gpu_gb"] == pytest.approx(13.0e9 * 16 / 1e9, rel=0.05)
    assert o["memory_split_gb"]["optimizer"] == 0


def test_train_offload_params_needs_zero3(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([*BASE, "--offload", "params", "--zero", "2"], capsys)
    assert code == 2
    assert "--offload" in err
    assert "ZeRO stage >= 3" in err


def test_train_offload_needs_host_figures(capsys: pytest.CaptureFixture[str]) -> None:
    """A node whose catalog entry gives no host memory cannot be priced with offload."""
    code, _, err = run(["train", "--model", "gpt2-124m", "--hardware", "l40s", "--gpus", "1",
                        "--offload", "optimizer"], capsys)  # fmt: skip
    assert code == 2
    assert "--offload" in err
    assert "host_memory_gb" in err


def test_train_nvme_offload_holds_a_70b_optimizer_on_the_drives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Llama 3.1 70B on one 8x H100 node (ZeRO-3): with the optimizer states on the node's
    NVMe, host memory keeps only the gradient buffer, and the step pays for the swaps."""
    args = ["train", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--gpus", "8",
            "--seq-len", "4096", "--global-batch", "64", "--zero", "3", "--json"]  # fmt: skip
    _, cpu, _ = run([*args, "--offload", "optimizer"], capsys)
    code, nv, err = run([*args, "--offload", "optimizer-nvme", "--explain"], capsys)
    assert code == 0, err
    c, n = json.loads(cpu), json.loads(nv)
    assert n["plan"]["offload"] == "optimizer-nvme"
    assert n["nvme_per_gpu_gb"] > n["host_memory_per_gpu_gb"] > 0
    assert n["host_memory_per_gpu_gb"] < c["host_memory_per_gpu_gb"]
    assert n["time_split_s"]["offload_s"] > c["time_split_s"]["offload_s"]
    assert sum(n["time_split_s"].values()) == pytest.approx(n["step_time_s"], rel=1e-9)
    # --json --explain carries the terms with their inputs, as `aitco infer` does
    terms = {t["name"]: t for t in n["explain"]["terms"]}
    assert terms["offload_s"]["inputs"]["nvme_read_gb_s"] == 54.4
    assert "explain" not in c
    code, _, err = run(["train", "--model", "llama-3.1-8b", "--hardware", "dgx1-v100-8",
                        "--gpus", "8", "--zero", "3", "--precision", "fp16", "--offload",
                        "params-nvme"], capsys)  # fmt: skip
    assert code == 2
    assert "nvme_capacity_gb" in err


def test_train_dualpipe_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-V3's own layout (PP16, EP64, ZeRO-1 DP, FP8) on 2,048 H800: with DualPipe its
    EP all-to-alls hide under the paired chunks and the bubble shrinks, so it is faster than
    the same layout under 1F1B; the plan names its schedule; an odd pipeline is refused."""
    args = ["train", "--model", "deepseek-v3", "--hardware", "hgx-h800-8", "--gpus", "2048",
            "--tokens", "14.8e12", "--seq-len", "4096", "--precision", "fp8", "--tp", "1",
            "--pp", "16", "--ep", "64", "--zero", "1", "--json"]  # fmt: skip
    code, out, _ = run([*args, "--pipeline-schedule", "dualpipe"], capsys)
    assert code == 0
    dual = json.loads(out)
    code, out, _ = run(args, capsys)
    assert code == 0
    one = json.loads(out)
    assert dual["plan"]["pipeline_schedule"] == "dualpipe"
    assert one["plan"]["pipeline_schedule"] == "1f1b"
    assert dual["gpu_hours"] < 0.7 * one["gpu_hours"]
    assert dual["fits"]
    code, _, err = run([*args[:-1], "--pp", "1", "--tp", "8", "--ep", "8",
                        "--pipeline-schedule", "dualpipe"], capsys)  # fmt: skip
    assert code == 2
    assert "--pipeline-schedule" in err
    assert "even pp" in err.replace("\n", " ")


def test_train_power_limit_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """--power-limit-w 500 on a 700 W H100: fewer tokens/s (compute clocks x 0.894), same
    nominal MFU denominator (so MFU falls with throughput)."""
    args = ["train", "--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "8",
            "--tokens", "1e9", "--tp", "1", "--zero", "3", "--json"]  # fmt: skip
    code, out, _ = run(args, capsys)
    assert code == 0
    free = json.loads(out)
    code, out, _ = run([*args, "--power-limit-w", "500"], capsys)
    assert code == 0
    capped = json.loads(out)
    ratio = capped["tokens_per_s_per_gpu"] / free["tokens_per_s_per_gpu"]
    assert (5 / 7) ** (1 / 3) < ratio < 1.0
    assert capped["mfu"] / free["mfu"] == pytest.approx(ratio)


def test_train_names_stack_options_away_from_the_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The text output says which stack options differ from the fitted defaults (and says
    nothing when none does); the JSON plan carries them; a bad style exits 2."""
    code, out, _ = run([*BASE, "--elementwise-kernels", "fused", "--host-loop", "native"], capsys)
    assert code == 0
    assert "stack: elementwise kernels fused, step loop native" in out
    code, out, _ = run(BASE, capsys)
    assert code == 0
    assert "stack:" not in out
    code, out, _ = run([*BASE, "--elementwise-kernels", "eager", "--json"], capsys)
    assert json.loads(out)["plan"]["elementwise_kernels"] == "eager"
    code, _, err = run([*BASE, "--elementwise-kernels", "compiled"], capsys)
    assert code == 2
    assert "--elementwise-kernels" in err
    code, out, _ = run([*BASE, "--gemm-level", "ceiling", "--json"], capsys)
    assert code == 0
    assert json.loads(out)["plan"]["gemm_level"] == "ceiling"
    code, out, _ = run([*BASE, "--gemm-level", "ceiling"], capsys)
    assert "stack: GEMM level ceiling" in out
    code, _, err = run([*BASE, "--gemm-level", "peak"], capsys)
    assert code == 2
    assert "--gemm-level" in err

"""Extract LLM rows of MLPerf Inference v6.0 (closed) for aitco's unseen-source validation set.

Reads, from a git copy of the v6.0 results repository (the ``mlcommons/inference_results_v6.0``
layout; the copy used on 2026-12-04 was ``github.com/gbeezybez/inference_results_v6.0`` at
commit 232fbf9), each ``closed/<org>/results/<system>/<benchmark>/<scenario>/performance/run_1/
mlperf_log_summary.txt`` of the LLM benchmarks below, the system's ``systems/<system>.json``
(accelerator, accelerators per node, nodes, framework) and the scenario's ``measurements.json``
(weight data type), and prints CSV rows in the schema of
``src/aitco/validation/data/inference.csv``.

Mean prompt lengths are the dataset means of the MLPerf datasets (``DATASET_INPUT_MEAN``); mean
output lengths are each run's own (tokens per second over samples per second of its log).

Usage::

    python scripts/extract_mlperf_inference_v60.py /path/to/inference_results_v6.0 > rows.csv
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

#: Benchmark directory -> (catalog model name in the CSV, params total B, active B).
BENCHMARKS: dict[str, tuple[str, float, float]] = {
    "llama2-70b-99": ("Llama 2 70B", 69.0, 69.0),
    "deepseek-r1": ("DeepSeek-R1", 671.0, 37.0),
    "llama3.1-405b": ("Llama 3.1 405B Instruct", 405.0, 405.0),
    "llama3_1-405b": ("Llama 3.1 405B Instruct", 405.0, 405.0),
    "llama3.1-8b": ("Llama 3.1 8B Instruct", 8.0, 8.0),
    "llama3_1-8b": ("Llama 3.1 8B Instruct", 8.0, 8.0),
}

#: Mean prompt tokens of each benchmark's dataset: computed from the per-sample token lengths
#: in github.com/openshift-psap/performance-dashboard ``mlperf-data/summaries/<benchmark>.csv``
#: (commit 7100702; the MLCommons datasets tokenised with each model's tokenizer):
#: llama2-70b-99 24,576 samples, deepseek-r1 4,388, llama3-1-405b 8,313,
#: llama3-1-8b-datacenter 13,368.
DATASET_INPUT_MEAN: dict[str, float] = {
    "Llama 2 70B": 222.3,
    "DeepSeek-R1": 803.8,
    "Llama 3.1 405B Instruct": 9428.6,
    "Llama 3.1 8B Instruct": 870.7,
}

#: Accelerator names of the system descriptions -> the hardware names of the validation CSV.
HARDWARE: tuple[tuple[str, str], ...] = (
    ("GB300", "GB300-288GB"),
    ("GB200", "GB200-186GB"),
    ("B300", "B300-SXM-270GB"),
    ("B200", "B200-180GB"),
    ("H200-NVL", "H200-NVL-141GB"),
    ("H200 NVL", "H200-NVL-141GB"),
    ("H200", "H200-SXM-141GB"),
    ("RTX PRO 6000", "RTX-PRO-6000-Blackwell-Server"),
    ("RTXPro6000", "RTX-PRO-6000-Blackwell-Server"),
    ("MI355X", "MI355X-288GB"),
    ("MI350X", "MI350X-288GB"),
    ("MI325X", "MI325X-256GB"),
    ("MI300X", "MI300X-192GB"),
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _num(text: str, label: str) -> float | None:
    m = re.search(re.escape(label) + r"\s*:\s*([0-9.eE+-]+)", text)
    return float(m.group(1)) if m else None


def _hardware(name: str) -> str | None:
    for key, hw in HARDWARE:
        if key.lower() in name.lower():
            return hw
    return None


def _engine(system: dict[str, str], org: str, sys_dir: str) -> str:
    fw = f"{system.get('framework', '')} {system.get('other_software_stack', '')}".lower()
    if "_trt" in sys_dir.lower() or "tensorrt" in fw:
        return "TensorRT-LLM"
    if "sglang" in fw:
        return "SGLang"
    if "vllm" in fw or "rocm" in fw or org in ("AMD", "RedHat"):
        return "vLLM v1"
    return "unknown"


def _precision(weights: str, hw: str) -> str:
    w = weights.lower()
    if "fp4" in w:
        return "MXFP4" if hw.startswith("MI3") else "NVFP4"
    if "fp8" in w:
        return "FP8"
    return weights.upper() or "unknown"


#: Benchmark directory -> file name of its harness config (NVIDIA's code layout).
CONFIG_NAMES = {"llama3.1-405b": "llama3_1-405b", "llama3.1-8b": "llama3_1-8b"}


def _stated_setup(repo: Path, org: str, sys_dir: str, bench: str, scen: str) -> dict[str, str]:
    """Parallel layout, batch cap and KV dtype a submitter's own harness config states.

    NVIDIA-code submissions keep ``closed/<org>/configs/<system>/<scenario>/<benchmark>.py``;
    the first value of each field is taken (a few configs hold several variants).
    """
    name = CONFIG_NAMES.get(bench, bench)
    for d in (sys_dir, re.sub(r"_TRT$", "", sys_dir)):
        try:
            text = _git(repo, "show", f"HEAD:closed/{org}/configs/{d}/{scen}/{name}.py")
        except subprocess.CalledProcessError:
            continue
        out = {"config": f"closed/{org}/configs/{d}/{scen}/{name}.py"}
        for key, pat in (
            ("tp", r"tensor_parallelism:\s*(\d+)"),
            ("pp", r"pipeline_parallelism:\s*(\d+)"),
            ("ep", r"moe_expert_parallelism:\s*(\d+)"),
            ("batch", r"'(?:" + re.escape(bench) + "|" + re.escape(name) + r")':\s*(\d+)"),
            ("kv", r"'kv_cache_dtype':\s*'(\w+)'"),
            ("tokens", r"'max_num_tokens':\s*(\d+)"),
            ("attention_dp", r"'enable_attention_dp':\s*(True|False)"),
        ):
            m = re.search(pat, text)
            if m:
                out[key] = m.group(1)
        return out
    return {}


def rows(repo: Path) -> list[dict[str, str]]:
    """Rows of every LLM Offline/Server performance log of the repository's closed division."""
    files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    pat = re.compile(
        r"closed/([^/]+)/results/([^/]+)/([^/]+)/(Offline|Server)/performance/run_1/"
        r"mlperf_log_summary\.txt$"
    )
    commit = _git(repo, "rev-parse", "HEAD").strip()
    out: list[dict[str, str]] = []
    for f in files:
        m = pat.match(f)
        if not m or m.group(3) not in BENCHMARKS:
            continue
        org, sys_dir, bench, scen = m.groups()
        try:
            system = json.loads(_git(repo, "show", f"HEAD:closed/{org}/systems/{sys_dir}.json"))
        except (subprocess.CalledProcessError, json.JSONDecodeError):
            continue
        acc_name = str(system.get("accelerator_model_name", ""))
        hw = _hardware(acc_name)
        n_node = int(system.get("accelerators_per_node") or 0)
        if hw is None or n_node == 0 or " and " in acc_name or "power_cap" in sys_dir.lower():
            continue  # CPU-only, mixed-accelerator and power-capped systems are left out
        gpus = n_node * int(system.get("number_of_nodes") or 1)
        m_n = re.search(r"x(\d+)(?:_TRT)?$", sys_dir) or re.match(r"(\d+)x", sys_dir)
        if m_n and int(m_n.group(1)) <= gpus:  # the system name counts the GPUs used
            gpus = int(m_n.group(1))
        base = f"closed/{org}/results/{sys_dir}/{bench}/{scen}"
        try:
            meas = json.loads(_git(repo, "show", f"HEAD:{base}/measurements.json"))
        except (subprocess.CalledProcessError, json.JSONDecodeError):
            meas = {}
        text = _git(repo, "show", f"HEAD:{f}")
        if "Result is : VALID" not in text:
            continue
        model, p_tot, p_act = BENCHMARKS[bench]
        if scen == "Offline":
            tps, sps = _num(text, "Tokens per second"), _num(text, "Samples per second")
        else:
            tps = _num(text, "Completed tokens per second")
            sps = _num(text, "Completed samples per second")
        if not tps or not sps:
            continue
        prec = _precision(str(meas.get("weight_data_types", "")), hw)
        setup = _stated_setup(repo, org, sys_dir, bench, scen)
        par = " ".join(f"{k}{setup[k]}" for k in ("tp", "pp", "ep") if k in setup)
        stated = "; ".join(
            x for x in (
                f"harness config {setup['config']}" if setup else "",
                f"max_num_seqs={setup['batch']}" if "batch" in setup else "",
                f"kv_cache_dtype={setup['kv']}" if "kv" in setup else "",
                f"max_num_batched_tokens={setup['tokens']}" if "tokens" in setup else "",
                "attention data parallel" if setup.get("attention_dp") == "True" else "",
            ) if x
        )  # fmt: skip
        engine = _engine(system, org, sys_dir)
        if engine == "unknown" and hw.startswith("MI3"):
            engine = "vLLM v1 (assumed: AMD's MLPerf harness runs vLLM)"
        row = {
            "model": model,
            "params_total_b": f"{p_tot:g}",
            "params_active_b": f"{p_act:g}",
            "engine": engine,
            "hardware": hw,
            "num_accelerators": str(gpus),
            "parallelism": par,
            "precision": prec,
            "scenario": f"MLPerf {scen}",
            "workload": f"MLPerf Inference v6.0 {bench} dataset",
            "input_len": f"{DATASET_INPUT_MEAN[model]:g}",
            "output_len": f"{tps / sps:.1f}",
            "output_tokens_per_s": f"{tps:g}",
            "output_tokens_per_s_per_gpu": f"{tps / gpus:.1f}",
            "requests_per_s": f"{sps:g}",
            "reliability": "A",
            "source": f"MLPerf Inference v6.0 closed, {org}",
            "source_locator": (
                f"https://github.com/mlcommons/inference_results_v6.0/blob/main/{f} "
                f"(read from the copy github.com/gbeezybez/inference_results_v6.0 at {commit[:10]})"
            ),
            "derived_fields": (
                "output_len=tokens_per_s/samples_per_s; output_tokens_per_s_per_gpu=tokens_per_s/"
                "accelerators; input_len=dataset mean (performance-dashboard summary)"
            ),
            "notes": (
                f"system {sys_dir} ({system.get('system_name', '')}); framework "
                f"{system.get('framework', '')}; weights {meas.get('weight_data_types', '?')}"
                + (f"; {stated}" if stated else "")
            ),
        }
        if scen == "Server":
            row["request_rate_rps"] = f"{_num(text, 'Scheduled samples per second') or sps:g}"
            for key, label in (
                ("ttft_ms_median", "50.00 percentile first token latency (ns)"),
                ("ttft_ms_p99", "99.00 percentile first token latency (ns)"),
                ("tpot_ms_median", "50.00 percentile time to output token (ns)"),
                ("tpot_ms_p99", "99.00 percentile time to output token (ns)"),
                ("e2e_latency_ms_median", "50.00 percentile latency (ns)"),
            ):
                v = _num(text, label)
                if v is not None:
                    row[key] = f"{v / 1e6:.2f}"
        out.append(row)
    return out


def main(argv: list[str]) -> int:
    """Print the rows as CSV (header of the bundled inference CSV, ids U001...)."""
    repo = Path(argv[1])
    header = (
        (Path(__file__).resolve().parents[1] / "src/aitco/validation/data/inference.csv")
        .read_text(encoding="utf-8")
        .splitlines()[0]
        .split(",")
    )
    w = csv.DictWriter(sys.stdout, fieldnames=header, lineterminator="\n")
    w.writeheader()
    for i, r in enumerate(rows(repo), 1):
        w.writerow({k: r.get(k, "") for k in header} | {"id": f"U{i:03d}"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

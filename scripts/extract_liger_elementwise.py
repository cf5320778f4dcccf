"""Extract the elementwise-kernel rows aitco fits from Liger-Kernel's published benchmark data.

Usage::

    python scripts/extract_liger_elementwise.py LIGER_CSV COMMIT > \
        src/aitco/validation/data/elementwise_kernels.csv

``LIGER_CSV`` is ``benchmark/data/all_benchmark_data.csv`` of ``linkedin/Liger-Kernel`` at
``COMMIT``. Kept: forward-pass speed rows of the normalisation and activation kernels whose
bytes follow from the benchmark's stated shapes (RMSNorm, LayerNorm, fused add + RMSNorm,
SwiGLU on Megatron's fused gate/up tensor, ReLU^2) on the A100 SXM4 80GB and H100 SXM
(catalog parts), with at least :data:`MIN_BYTES` ideal bytes (well above the 40-50 MB L2 so
the rows measure HBM, not launch latency or cache). The ideal bytes are each input read once
and each output written once (the model's byte count, ``ELEMENTWISE_RW``); the fit in
``aitco.validation.kernels`` divides them by the time and the catalog's HBM bandwidth.
"""

from __future__ import annotations

import csv
import json
import sys

#: Smallest ideal traffic kept [B] (A100 L2 40 MB, H100 L2 50 MB: NVIDIA datasheets).
MIN_BYTES = 128e6
GPUS = {"NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb", "NVIDIA H100 80GB HBM3": "h100-sxm5-80gb"}
#: Provider -> kernel style. ``liger_rms_norm`` in the fused-add benchmark is an eager PyTorch
#: add followed by Liger's RMSNorm (a mixed style whose bytes are not the fused op's): left out.
STYLES = {
    "liger": "fused",
    "liger_in_place": "fused",
    "liger_fused_add_rms_norm": "fused",
    "huggingface": "eager",
    "torch": "eager",
    "megatron": "framework",
}
DTYPE_BYTES = {"torch.bfloat16": 2, "torch.float32": 4}


def ideal_bytes(kernel: str, x: float, cfg: dict) -> tuple[float, str] | None:
    """Ideal HBM bytes of one forward call and the data type (None: kernel not used)."""
    if kernel in ("rms_norm", "layer_norm", "relu_squared"):  # read x [M, H], write y
        dt = cfg["dtype"]
        return 2 * cfg["M"] * x * DTYPE_BYTES[dt], dt
    if kernel == "fused_add_rms_norm":  # read x and the residual, write y and the new residual
        dt = cfg["dtype"]
        return 4 * cfg["M"] * x * DTYPE_BYTES[dt], dt
    if kernel == "megatron_rms_norm":  # bf16 (benchmark script), input [S, B, H]
        return 2 * cfg["S"] * cfg["B"] * x * 2, "torch.bfloat16"
    if kernel == "megatron_swiglu":  # bf16, read [S, B, 2F] (gate and up), write [S, B, F]
        return 3 * cfg["S"] * cfg["B"] * x * 2, "torch.bfloat16"
    return None


def main(path: str, commit: str) -> None:
    """Write the kept rows of Liger's CSV at ``path`` (read at ``commit``) to stdout as CSV."""
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow([
        "kernel_name", "kernel_provider", "style", "gpu_name", "accelerator", "dtype", "x_name",
        "x_value", "extra_benchmark_config_str", "ideal_bytes", "time_ms_p50", "liger_version",
        "timestamp", "repo", "path", "commit",
    ])  # fmt: skip
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["metric_name"] != "speed" or r["kernel_operation_mode"] != "forward":
                continue
            if r["gpu_name"] not in GPUS or r["kernel_provider"] not in STYLES:
                continue
            mixed = r["kernel_provider"] == "liger_rms_norm"  # eager add + Liger RMSNorm
            if r["kernel_name"] == "fused_add_rms_norm" and mixed:
                continue
            got = ideal_bytes(r["kernel_name"], float(r["x_value"]),
                              json.loads(r["extra_benchmark_config_str"] or "{}"))  # fmt: skip
            if got is None or got[0] < MIN_BYTES:
                continue
            out.writerow([
                r["kernel_name"], r["kernel_provider"], STYLES[r["kernel_provider"]],
                r["gpu_name"], GPUS[r["gpu_name"]], got[1], r["x_name"], r["x_value"],
                r["extra_benchmark_config_str"], f"{got[0]:.0f}", r["y_value_50"],
                r["liger_version"], r["timestamp"], "linkedin/Liger-Kernel",
                "benchmark/data/all_benchmark_data.csv", commit,
            ])  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

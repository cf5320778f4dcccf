"""``aitco ingest``, ``aitco calibrate``, ``aitco actual-vs-estimate`` and ``aitco probe``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from aitco.calibrate.parsers.base import ParseResult
from aitco.calibrate.parsers.detect import KINDS, parse_any
from aitco.cli.render import console, err_console, fmt, print_json, table
from aitco.errors import InputError

#: Summary keys shown in the human-readable ingest table, per kind (all are in ``--json``).
SHOWN: dict[str, tuple[str, ...]] = {
    "nccl": (
        "collective",
        "n_ranks",
        "n_nodes",
        "gpu_model",
        "bus_bandwidth_plateau_gb_s",
        "plateau_size_bytes",
        "avg_bus_bandwidth_gb_s",
        "latency_us",
    ),
    "dcgm": (
        "n_devices",
        "samples",
        "device_hours",
        "mean_power_w",
        "energy_j",
        "energy_source",
        "idle_fraction",
    ),
    "nvidia-smi": (
        "n_devices",
        "samples",
        "device_hours",
        "mean_power_w",
        "energy_j",
        "idle_fraction",
        "timestamps_increasing",
    ),
    "trainlog": (
        "framework",
        "n_steps",
        "step_time_s",
        "tflops_per_gpu",
        "tokens_per_s_per_gpu",
        "samples_per_s",
        "mfu",
        "loss",
        "global_batch",
        "total_flos",
    ),
    "vllm": (
        "backend",
        "model",
        "completed",
        "duration_s",
        "request_throughput",
        "output_throughput",
        "mean_ttft_ms",
        "median_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "mean_itl_ms",
    ),
    "sglang": (
        "backend",
        "completed",
        "duration_s",
        "output_throughput",
        "median_ttft_ms",
        "median_itl_ms",
        "mean_e2el_ms",
        "n_runs",
    ),
    "focus": (
        "rows",
        "billed_cost_usd",
        "effective_cost_usd",
        "list_cost_usd",
        "accelerator_hours",
        "billed_usd_per_accelerator_hour",
        "effective_usd_per_accelerator_hour",
    ),
    "codecarbon": (
        "runs",
        "duration_s",
        "energy_kwh",
        "gpu_energy_kwh",
        "emissions_kg_co2e",
        "pue",
    ),
    "kineto": (
        "n_steps",
        "n_devices",
        "step_time_s",
        "compute_fraction",
        "exposed_comm_fraction",
        "exposed_memcpy_fraction",
        "idle_fraction",
    ),
}


def _print_result(r: ParseResult) -> None:
    rows: list[list[Any]] = [["format", f"{r.format} ({r.format_version})"]]
    rows.append(
        [
            "lines read / ignored / skipped",
            f"{r.lines_read:,} / {r.lines_ignored:,} / {r.skipped.count:,}",
        ]
    )
    for k in SHOWN.get(r.kind, tuple(r.summary)):
        if k in r.summary and not isinstance(r.summary[k], dict | list):
            v = r.summary[k]
            rows.append([k, v if isinstance(v, str) else fmt(v)])
    console.print(table(f"{r.kind}: {r.path}", ["quantity", "value"], rows))
    for line, reason, text in r.skipped.first[:10]:
        err_console.print(f"  skipped line {line}: {reason}: {text}", highlight=False, markup=False)
    if r.skipped.count > 10:
        err_console.print(f"  ... {r.skipped.count - 10} more skipped lines (see --json)")


def ingest(
    kind: Annotated[str, typer.Argument(help="Format: " + ", ".join(KINDS) + ", or auto.")],
    files: Annotated[list[Path], typer.Argument(help="Log or export files.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    records: Annotated[
        bool, typer.Option("--records", help="Include per-row records in --json.")
    ] = False,
    interval_s: Annotated[
        float | None,
        typer.Option("--interval-s", help="Telemetry sampling interval [s] (dcgm, nvidia-smi)."),
    ] = None,
    idle_threshold: Annotated[
        float, typer.Option("--idle-threshold", help="Utilisation below which a GPU is idle [0-1].")
    ] = 0.30,
) -> None:
    """Parse logs and exports: nccl-tests, DCGM, nvidia-smi, training logs, vLLM, FOCUS, ..."""
    if kind != "auto" and kind not in KINDS:
        raise InputError("KIND", kind, "one of auto, " + ", ".join(KINDS))
    if not 0 <= idle_threshold <= 1:
        raise InputError("--idle-threshold", idle_threshold, "a fraction in [0, 1]")
    results = []
    for f in files:
        from aitco.calibrate.parsers.detect import detect_kind

        k = detect_kind(f) if kind == "auto" else kind
        kw: dict[str, Any] = {}
        if k in ("dcgm", "nvidia-smi"):
            kw["idle_threshold"] = idle_threshold
            if interval_s is not None:
                if interval_s <= 0:
                    raise InputError("--interval-s", interval_s, "a positive number of seconds")
                kw["interval_s"] = interval_s
        results.append(parse_any(f, k, **kw))
    if as_json:
        print_json(
            {
                "files": [r.to_json(with_records=records) for r in results],
                "skipped_lines": sum(r.skipped.count for r in results),
            }
        )
        return
    for r in results:
        _print_result(r)


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add the calibration commands to the ``aitco`` app."""
    app.command("ingest")(ingest)

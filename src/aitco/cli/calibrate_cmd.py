"""``aitco ingest``, ``aitco calibrate``, ``aitco actual-vs-estimate`` and ``aitco probe``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from aitco.calibrate.parsers.base import ParseResult
from aitco.calibrate.parsers.detect import KINDS, parse_any
from aitco.cli.render import console, err_console, fmt, print_explain, print_json, table
from aitco.errors import AitcoError, InputError
from aitco.fileio import check_output, unrecorded

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
        "gpu_hours",
        "mean_power_w",
        "energy_j",
        "energy_source",
        "idle_fraction",
        "idle_cost_usd",
    ),
    "nvidia-smi": (
        "n_devices",
        "samples",
        "gpu_hours",
        "mean_power_w",
        "energy_j",
        "idle_fraction",
        "idle_cost_usd",
        "timestamps_increasing",
    ),
    "trainlog": (
        "framework",
        "n_steps",
        "step_time_s",
        "reported_tflops_per_gpu",
        "tokens_per_s_per_gpu",
        "samples_per_s",
        "mfu",
        "loss",
        "global_batch",
        "total_flos",
        "global_step",
        "max_steps",
        "last_loss",
        "eval_loss",
        "last_num_tokens",
        "train_runtime_s",
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
        "n_rows",
        "billed_cost_usd",
        "effective_cost_usd",
        "list_cost_usd",
        "gpu_hours",
        "billed_cost_usd_per_gpu_h",
        "effective_cost_usd_per_gpu_h",
    ),
    "codecarbon": (
        "runs",
        "duration_s",
        "energy_kwh",
        "gpu_energy_kwh",
        "kg_co2e",
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


#: Options shared by ``calibrate`` and ``actual-vs-estimate`` (and ``--json`` by every command).
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
TpOpt = Annotated[
    int | None, typer.Option("--tp", help="Tensor parallel degree of the run.", min=1)
]
PpOpt = Annotated[
    int | None, typer.Option("--pp", help="Pipeline parallel degree of the run.", min=1)
]
CpOpt = Annotated[
    int | None, typer.Option("--cp", help="Context parallel degree of the run.", min=1)
]
EpOpt = Annotated[
    int | None, typer.Option("--ep", help="Expert parallel degree of the run.", min=1)
]
DpOpt = Annotated[int | None, typer.Option("--dp", help="Data parallel degree of the run.", min=1)]
ZeroOpt = Annotated[
    int | None, typer.Option("--zero", help="ZeRO stage 0-3 of the run.", min=0, max=3)
]
PrecisionOpt = Annotated[
    str, typer.Option("--precision", help="Training/serving dtype (bf16, fp16, fp8, ...).")
]


def ingest(
    kind: Annotated[str, typer.Argument(help="Format: " + ", ".join(KINDS) + ", or auto.")],
    files: Annotated[list[Path], typer.Argument(help="Log or export files.")],
    as_json: JsonOpt = False,
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
    usd_per_gpu_hour: Annotated[
        float | None,
        typer.Option("--usd-per-gpu-hour", help="Price of a GPU-hour, for the idle cost [USD/h]."),
    ] = None,
) -> None:
    """Parse logs and exports: nccl-tests, DCGM, nvidia-smi, training logs, vLLM, FOCUS, ..."""
    if kind != "auto" and kind not in KINDS:
        raise InputError("KIND", kind, "one of auto, " + ", ".join(KINDS))
    if not 0 <= idle_threshold <= 1:
        raise InputError("--idle-threshold", idle_threshold, "a fraction in [0, 1]")
    if interval_s is not None and interval_s <= 0:
        raise InputError("--interval-s", interval_s, "a positive number of seconds")
    results = []
    errors: list[dict[str, str]] = []
    for f in files:
        try:
            results.append(_ingest_one(f, kind, idle_threshold, interval_s, usd_per_gpu_hour))
        except (AitcoError, OSError, UnicodeError) as exc:
            if len(files) == 1:
                raise
            errors.append({"path": str(f), "error": _error_text(exc)})
    if as_json:
        out: dict[str, Any] = {
            "files": [r.to_json(with_records=records) for r in results],
            "skipped_lines": sum(r.skipped.count for r in results),
        }
        if errors:
            out["errors"] = errors
        print_json(out)
    else:
        for r in results:
            _print_result(r)
    for e in errors:  # every file is reported; the run fails if one could not be read
        err_console.print(f"[bold red]error:[/bold red] {e['error']}", highlight=False, markup=True)
    if errors:
        raise typer.Exit(2)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"{exc.filename}: {exc.strerror}"
    if isinstance(exc, UnicodeError):
        return f"not UTF-8 text ({exc})"
    return str(exc)


def _ingest_one(
    f: Path,
    kind: str,
    idle_threshold: float,
    interval_s: float | None,
    usd_per_gpu_hour: float | None,
) -> ParseResult:
    """Parse one file for ``ingest`` (idle cost added for telemetry when a price is given)."""
    from aitco.calibrate.parsers.detect import detect_kind

    k = detect_kind(f) if kind == "auto" else kind
    kw: dict[str, Any] = {}
    if k in ("dcgm", "nvidia-smi"):
        kw["idle_threshold"] = idle_threshold
        if interval_s is not None:
            kw["interval_s"] = interval_s
    r = parse_any(f, k, **kw)
    idle_h = r.summary.get("idle_gpu_hours") if k in ("dcgm", "nvidia-smi") else None
    if idle_h is not None and usd_per_gpu_hour is not None:
        r.summary["idle_cost_usd"] = idle_h * usd_per_gpu_hour
    return r


#: Parsed kinds whose observations constrain efficiency parameters.
FITTABLE_KINDS = ("nccl", "trainlog", "vllm", "sglang")


def _parse_all(files: list[Path]) -> list[ParseResult]:
    from aitco.calibrate.parsers.detect import detect_kind

    out = []
    for f in files:
        kind, _, path = (
            str(f).partition(":")
            if ":" in str(f) and str(f).split(":", 1)[0] in KINDS
            else ("auto", "", str(f))
        )
        p = Path(path)
        out.append(parse_any(p, detect_kind(p) if kind == "auto" else kind))
    return out


def _plan(**degrees: int | None) -> dict[str, Any] | None:
    given = {k: v for k, v in degrees.items() if v is not None}
    return given or None


def _resolve_hardware(
    cat: Any, hardware: str | None, results: list[ParseResult]
) -> tuple[Any, Any, str]:
    from aitco.calibrate.observations import guess_accelerator

    if hardware:
        acc, system = cat.hardware(hardware, field="--hardware")
        return acc, system, f"--hardware {hardware}"
    names = [
        str(
            r.summary.get("gpu_model")
            or ((r.records[0].get("extra") or {}) if r.records else {}).get("gpu")
            or ""
        )
        for r in results
        if r.records or r.summary
    ]
    accs = list(cat.kind("accelerators").values())
    for n in names:
        acc = guess_accelerator(n, accs) if n else None
        if acc is not None:
            acc, system = cat.hardware(acc.id, field="--hardware")
            return acc, system, f"inferred from device name {n!r}"
    raise InputError(
        "--hardware", None, "an accelerator or system id", hint="the logs do not name a known GPU"
    )


def calibrate(
    files: Annotated[list[Path], typer.Argument(help="Logs (auto-detected; or KIND:FILE).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Profile YAML to write.")],
    hardware: Annotated[
        str | None, typer.Option("--hardware", help="Accelerator or system id (else inferred).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model of the training logs.")
    ] = None,
    gpus: Annotated[
        int | None, typer.Option("--gpus", help="Accelerators of the training run.", min=1)
    ] = None,
    seq_len: Annotated[
        int | None, typer.Option("--seq-len", help="Sequence length.", min=1)
    ] = None,
    global_batch: Annotated[
        int | None, typer.Option("--global-batch", help="Global batch (sequences).", min=1)
    ] = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    cp: CpOpt = None,
    ep: EpOpt = None,
    dp: DpOpt = None,
    zero: ZeroOpt = None,
    precision: PrecisionOpt = "bf16",
    params: Annotated[
        str, typer.Option("--params", help="Comma-separated parameters to fit.")
    ] = "gemm,hbm,intra_node_link,scale_out_link,decode_hbm,serving_overhead_s",
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write the profile even when the fit is implausible (a parameter at a bound, "
            "above its physical maximum, or an MFU that disagrees with the log).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fit the efficiency parameters to your logs and write a calibration profile."""
    from aitco.calibrate import measurements as meas
    from aitco.calibrate.fit import EfficiencyFit, fit_warnings, fitted_mfu, profile_from_fit
    from aitco.calibrate.observations import from_nccl, from_probe, from_serving, from_trainlog
    from aitco.calibrate.profile import load_profile, save_profile
    from aitco.cli import state

    check_output(output, field="-o")  # never one of the logs read, --force or not
    probes = [f for f in files if f.suffix in (".yaml", ".yml")]
    results = _parse_all([f for f in files if f not in probes])
    if not probes and not any(r.kind in FITTABLE_KINDS for r in results):
        kinds = ", ".join(sorted({r.kind for r in results})) or "none"
        raise InputError(
            "FILE",
            ", ".join(str(f) for f in files),
            "at least one nccl-tests result or training log to fit "
            f"(or a serving benchmark or probe profile); got {kinds}, which are measured by "
            "`aitco ingest` but constrain no parameter",
        )
    cat = state.catalog()
    acc, system, how = _resolve_hardware(cat, hardware, results)
    obs = []
    measured: dict[str, float] = {}
    notes = [f"accelerator {acc.id} ({how}), system {system.id}"]
    for f in probes:  # profiles written by `aitco probe` on this accelerator
        prof_in = load_profile(f)
        if prof_in.probe is None:
            raise InputError("FILE", str(f), "a profile with probe results (from aitco probe)")
        obs += from_probe(prof_in.probe.model_dump(), acc, source=str(f))
    for r in results:
        if r.kind == "nccl":
            obs += from_nccl(r, acc, system)
            bb = meas.bus_bandwidth(r.summary, system)
            measured["bus_bandwidth_plateau_gb_s"] = bb["bus_bandwidth_plateau_gb_s"]
            measured["comm_amplification"] = bb["comm_amplification"]
            measured["busbw_to_link_ratio"] = bb["busbw_to_link_ratio"]
        elif r.kind == "trainlog":
            if not (model and gpus and seq_len):
                raise InputError(
                    "--model/--gpus/--seq-len",
                    None,
                    "the run's model, GPU count and sequence length",
                    file=r.path,
                    hint="needed to fit step times from a training log",
                )
            arch = cat.resolve_model(model, field="--model")
            obs += from_trainlog(
                r,
                arch,
                acc,
                system,
                gpus=gpus,
                seq_len=seq_len,
                global_batch=global_batch,
                plan=_plan(tp=tp, pp=pp, cp=cp, ep=ep, dp=dp, zero=zero),
                precision=precision,
            )
            tt = meas.training_throughput(
                r.summary,
                gpus=gpus,
                seq_len=seq_len,
                global_batch=global_batch,
                model=arch,
                acc=acc,
                precision=precision,
            )
            for k in ("step_time_s", "tokens_per_s_per_gpu", "mfu", "mfu_from_log"):
                if tt.get(k) is not None:
                    measured[k] = float(tt[k])
        elif r.kind in ("vllm", "sglang"):
            if not (model and gpus):
                raise InputError(
                    "--model/--gpus",
                    None,
                    "the served model and GPU count",
                    file=r.path,
                    hint="needed to fit serving latencies",
                )
            arch = cat.resolve_model(model, field="--model")
            obs += from_serving(r, arch, acc, system, gpus=gpus, tp=tp, precision=precision)
            for k in ("mean_ttft_ms", "mean_tpot_ms", "output_throughput"):
                if isinstance(r.summary.get(k), int | float):
                    measured[f"{r.kind}_{k}"] = float(r.summary[k])
        elif r.kind in ("dcgm", "nvidia-smi"):
            for k in ("mean_power_w", "idle_fraction", "energy_j"):
                if r.summary.get(k) is not None:
                    measured[f"{r.kind}_{k}"] = float(r.summary[k])
        elif r.kind == "focus":
            for k in ("billed_cost_usd_per_gpu_h", "effective_cost_usd_per_gpu_h"):
                if r.summary.get(k) is not None:
                    measured[k] = float(r.summary[k])
        else:
            notes.append(f"{r.path}: {r.kind} results are measured but not used by the fit")
    if not obs:
        raise InputError(
            "FILE",
            [str(f) for f in files],
            "at least one nccl-tests result or training log to fit",
        )
    fit = EfficiencyFit(params=[p.strip() for p in params.split(",") if p.strip()]).fit(obs)
    mfu_fit = fitted_mfu(fit, measured.get("mfu"))
    if mfu_fit is not None:
        measured["mfu_fitted"] = mfu_fit
    warnings = fit_warnings(fit, measured)
    if warnings and not force:
        raise InputError(
            "fit",
            "implausible",
            f"a plausible fit ({warnings[0]}"
            + (f"; {len(warnings) - 1} more" if len(warnings) > 1 else "")
            + "); no profile written, pass --force to write it anyway",
        )
    notes += [f"warning: {w}" for w in warnings]
    profile = profile_from_fit(
        fit,
        accelerator=acc.id,
        family=acc.family,
        sources=[r.path for r in results] + [str(f) for f in probes],
        measurements=measured,
        notes=notes,
    )
    save_profile(profile, output)
    if as_json:
        print_json(
            {
                "profile": str(output),
                "params": fit.params_,
                "residuals": fit.residuals_.tolist(),
                "fitted": {k: v.model_dump() for k, v in profile.fitted.items()},
                "measurements": measured,
                "mfu_observed": measured.get("mfu_from_log"),
                "mfu_fitted": measured.get("mfu_fitted"),
                "warnings": warnings,
                "notes": profile.notes,
                "observations": [o.to_json() for o in obs],
            }
        )
        return
    rows = [
        [k, v.default, v.value, v.n_observations, v.residual_rms] for k, v in profile.fitted.items()
    ]
    console.print(
        table(
            f"Calibration written to {output}",
            ["parameter", "default", "fitted", "obs", "rms log-resid"],
            rows,
        )
    )
    if "mfu_fitted" in measured:
        log_mfu = measured.get("mfu_from_log")
        shown = f"{log_mfu:.3g}" if log_mfu is not None else "not reported"
        console.print(f"  MFU: observed (log) {shown}, fitted {measured['mfu_fitted']:.3g}")
    for n in profile.notes:
        console.print(f"  - {n}", highlight=False, markup=False)


def actual_vs_estimate_cmd(
    files: Annotated[
        list[Path], typer.Argument(help="Logs of the run (auto-detected; or KIND:FILE).")
    ],
    model: Annotated[str, typer.Option("--model", help="Model id, config.json or YAML.")],
    hardware: Annotated[str, typer.Option("--hardware", help="Accelerator or system id.")],
    gpus: Annotated[int, typer.Option("--gpus", help="Accelerators.", min=1)],
    seq_len: Annotated[int, typer.Option("--seq-len", help="Sequence length.", min=1)],
    global_batch: Annotated[
        int | None,
        typer.Option("--global-batch", help="Global batch (sequences; else from the log).", min=1),
    ] = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    cp: CpOpt = None,
    ep: EpOpt = None,
    dp: DpOpt = None,
    zero: ZeroOpt = None,
    precision: PrecisionOpt = "bf16",
    calibration: Annotated[
        str | None, typer.Option("--calibration", help="Calibration profile YAML.")
    ] = None,
    usd_per_gpu_hour: Annotated[
        float | None, typer.Option("--usd-per-gpu-hour", help="Price per accelerator-hour [USD/h].")
    ] = None,
    n_steps: Annotated[
        int | None, typer.Option("--steps", help="Steps the energy/cost items cover.", min=1)
    ] = None,
    as_json: JsonOpt = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show the terms.")] = False,
) -> None:
    """Compare the model's estimate for a run with what its logs show, item by item."""
    from aitco.calibrate.actual_vs_estimate import actual_vs_estimate
    from aitco.calibrate.profile import load_profile
    from aitco.cli import state
    from aitco.perf.efficiency import DEFAULT_EFFICIENCY

    results = _parse_all(files)
    cat = state.catalog()
    arch = cat.resolve_model(model, field="--model")
    acc, system = cat.hardware(hardware, field="--hardware")
    by: dict[str, dict[str, Any]] = {}
    for r in results:
        key = "telemetry" if r.kind in ("dcgm", "nvidia-smi") else r.kind
        by[key] = r.summary
    gb = global_batch or (by.get("trainlog") or {}).get("global_batch")
    if not gb:
        raise InputError(
            "--global-batch", None, "the global batch in sequences (the log does not print it)"
        )
    try:
        pf = cat.factor_value("utilization-power.training-fraction-of-tdp")
    except Exception:  # the factor is optional
        pf = None
    est = actual_vs_estimate(
        model=arch,
        acc=acc,
        system=system,
        gpus=gpus,
        seq_len=seq_len,
        global_batch=int(gb),
        trainlog=by.get("trainlog"),
        kineto=by.get("kineto"),
        telemetry=by.get("telemetry"),
        focus=by.get("focus"),
        plan=_plan(tp=tp, pp=pp, cp=cp, ep=ep, dp=dp, zero=zero),
        precision=precision,
        efficiency=load_profile(calibration).efficiency if calibration else DEFAULT_EFFICIENCY,
        n_steps=n_steps,
        usd_per_accelerator_hour=usd_per_gpu_hour,
        power_fraction_of_tdp=float(pf) if isinstance(pf, int | float) else None,
    )
    if as_json:
        print_json(est.to_json())
        return
    rows = [
        [
            r["item"],
            r["unit"],
            r["actual"],
            r["estimate"],
            f"{100.0 * r['error_fraction']:+.1f}%" if r["error_fraction"] is not None else "-",
            r["actual_source"],
        ]
        for r in est.values["rows"]
    ]
    console.print(
        table(
            "Actual vs estimate",
            ["item", "unit", "actual", "estimate", "error", "actual from"],
            rows,
        )
    )
    if explain:
        print_explain(est)


def probe(
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the results into this profile YAML."),
    ] = None,
    hardware: Annotated[
        str | None,
        typer.Option("--hardware", help="Catalog id of this accelerator (for fractions)."),
    ] = None,
    size: Annotated[int, typer.Option("--size", help="Square matmul size.", min=64)] = 4096,
    copy_mb: Annotated[
        int, typer.Option("--copy-mb", help="Buffer copied for bandwidth [MiB].", min=1)
    ] = 256,
    repeats: Annotated[
        int, typer.Option("--repeats", help="Timed repetitions (best kept).", min=1)
    ] = 5,
    backend: Annotated[str, typer.Option("--backend", help="auto, torch or numpy.")] = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Measure achievable matmul TFLOP/s and memory bandwidth here (PyTorch, else numpy)."""
    from aitco.calibrate.fit import EfficiencyFit
    from aitco.calibrate.observations import from_probe
    from aitco.calibrate.probe import run_probe, torch_available, with_fractions
    from aitco.calibrate.profile import CalibrationProfile, ParamFit, load_profile, save_profile
    from aitco.cli import state

    if backend not in ("auto", "torch", "numpy"):
        raise InputError("--backend", backend, "auto, torch or numpy")
    if backend == "torch" and not torch_available():
        raise InputError("--backend", backend, "PyTorch installed", hint="use --backend numpy")
    res = run_probe(matmul_size=size, copy_bytes=copy_mb * 2**20, repeats=repeats, backend=backend)
    acc = None
    if hardware:
        acc, _ = state.catalog().hardware(hardware, field="--hardware")
        res = with_fractions(res, acc.peak_tflops, acc.hbm_bandwidth_gb_s)
    if output is not None:
        check_output(output, field="-o")
        with unrecorded():  # the profile updated in place is the output, not an input
            prof = load_profile(output) if output.exists() else CalibrationProfile()
        update: dict[str, Any] = {"probe": res}
        if acc is not None:
            obs = from_probe(res.model_dump(), acc, source=f"aitco probe ({res.backend})")
            if obs:
                fit = EfficiencyFit(params=("gemm", "hbm"), base=prof.efficiency).fit(obs)
                fitted = dict(prof.fitted)
                for k, v in fit.params_.items():
                    fitted[k] = ParamFit(
                        value=v, default=fit._value(prof.efficiency, k), n_observations=1
                    )
                update.update(
                    efficiency=fit.efficiency_, fitted=fitted, accelerator=acc.id, family=acc.family
                )
        save_profile(prof.model_copy(update=update), output)
    if as_json:
        print_json(res.model_dump() | ({"profile": str(output)} if output else {}))
        return
    rows: list[list[Any]] = [
        [f"matmul {k}", v, "TFLOP/s", res.gemm_fraction.get(k)]
        for k, v in res.matmul_tflops.items()
    ]
    rows.append(["memory copy", res.memory_bandwidth_gb_s, "GB/s", res.hbm_fraction])
    console.print(
        table(
            f"Probe on {res.device} ({res.backend})",
            ["measurement", "value", "unit", "fraction of peak"],
            rows,
        )
    )


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add the calibration commands to the ``aitco`` app."""
    app.command("ingest")(ingest)
    app.command("calibrate")(calibrate)
    app.command("actual-vs-estimate")(actual_vs_estimate_cmd)
    app.command("probe")(probe)

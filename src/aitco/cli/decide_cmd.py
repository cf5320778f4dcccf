"""Decision commands of the ``aitco`` CLI.

``roi``, ``breakeven``, ``buy-vs-rent``, ``api-vs-self-host``, ``arbitrage``, ``sweep``,
``optimize``, ``fit-score`` and ``levers``.

Every command is thin: it parses flags, calls :mod:`aitco.decide`, and renders a rich table or,
with ``--json``, one JSON object.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aitco.cli.render import PRICING_MODES, console, fmt, print_explain, print_json, table
from aitco.errors import InputError
from aitco.limits import DEFAULT_MAX_SWEEP_POINTS

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
ExplainOpt = Annotated[bool, typer.Option("--explain", help="Show how the numbers were reached.")]


# --------------------------------------------------------------------------- roi / breakeven
def roi_cmd(
    roi_file: Annotated[
        str | None,
        typer.Argument(
            metavar="[ROI_FILE]", help="ROI YAML for the monthly time series (examples/roi_*.yaml)."
        ),
    ] = None,
    monthly_savings_usd: Annotated[
        float | None, typer.Option(help="Savings (or gross profit) per month. [USD/month]")
    ] = None,
    monthly_cost_usd: Annotated[
        float | None, typer.Option(help="Spend per month. [USD/month]")
    ] = None,
    horizon_months: Annotated[
        int | None, typer.Option(help="Override the horizon of ROI_FILE.")
    ] = None,
    tornado_swing: Annotated[
        float, typer.Option(help="Relative swing of each input in the tornado analysis.")
    ] = 0.2,
    tornado_metric: Annotated[
        str, typer.Option(help="Metric of the tornado analysis.")
    ] = "npv_usd",
    json_out: JsonOpt = False,
    explain: ExplainOpt = False,
) -> None:
    """Monthly ROI = (savings - spend) / spend; ROI_FILE: series, payback, NPV, IRR, tornado."""
    from aitco.decide import roi

    if roi_file is None:
        if monthly_savings_usd is None or monthly_cost_usd is None:
            raise InputError(
                "--monthly-savings-usd/--monthly-cost-usd",
                None,
                "both flags, or a ROI_FILE",
                hint="e.g. aitco roi --monthly-savings-usd 128000 --monthly-cost-usd 42000",
            )
        est = roi.roi_estimate(monthly_savings_usd, monthly_cost_usd)
        if json_out:
            print_json(est.to_json())
            return
        v = est.values
        console.print(
            table(
                "Monthly ROI",
                ["quantity", "value"],
                [
                    ["monthly savings [USD]", v["monthly_savings_usd"]],
                    ["monthly cost [USD]", v["monthly_cost_usd"]],
                    ["net per month [USD]", v["net_monthly_usd"]],
                    [
                        "roi_monthly (net / cost of the month)",
                        f"{v['roi_monthly']:.4f} ({100.0 * v['roi_monthly']:.1f} %)",
                    ],
                ],
            )
        )
        if explain:
            print_explain(est)
        return
    from aitco.cli import state

    inp = roi.RoiInputs.from_yaml(roi_file)
    inp, priced = roi.with_scenario_costs(inp, state.catalog(), file=roi_file)
    updates: dict[str, Any] = {}
    if monthly_savings_usd is not None:
        updates["monthly_savings_usd"] = monthly_savings_usd
    if monthly_cost_usd is not None:
        updates["monthly_cost_usd"] = monthly_cost_usd
    if horizon_months is not None:
        updates["horizon_months"] = horizon_months
    if updates:
        inp = roi.RoiInputs.from_dict({**inp.model_dump(), **updates}, file=roi_file)
    res = roi.roi_series(inp)
    res["tornado"] = roi.tornado(inp, metric=tornado_metric, swing=tornado_swing)
    res["priced_from_scenarios"] = priced
    if json_out:
        print_json(res)
        return
    from rich.markup import escape

    for w in res["warnings"]:  # a project that loses money says so first
        console.print(f"[bold red]WARNING:[/bold red] {escape(w)}", highlight=False)
    rows = [
        [
            str(r["month"]),
            r["savings_usd"],
            r["spend_usd"],
            r["net_usd"],
            r["cumulative_usd"],
            r["roi"],
        ]
        for r in res["months"]
    ]
    console.print(
        table(
            f"Monthly ROI over {res['horizon_months']} months",
            ["month", "savings [USD]", "spend [USD]", "net [USD]", "cumulative [USD]", "ROI"],
            rows,
        )
    )
    console.print(
        table(
            f"Summary over {res['horizon_months']} months "
            f"(discount rate {res['discount_rate']:.1%}/yr)",
            ["name", "quantity", "value"],
            [[k, label, text] for k, label, text in roi.summary_text_rows(res)],
        )
    )
    if res["irr_null_reason"]:
        console.print(f"irr_monthly is none: {res['irr_null_reason']}", highlight=False)
    elif len(res["irr_roots_monthly"]) > 1:
        roots = ", ".join(f"{100.0 * r:.2f} %" for r in res["irr_roots_monthly"])
        console.print(
            f"the cash flows change sign more than once: the NPV is zero at {roots} a month; "
            "irr_monthly is the smallest non-negative rate (numpy-financial's choice)",
            highlight=False,
        )
    console.print(
        table(
            f"Tornado: {tornado_metric} for ±{tornado_swing:.0%} on each input",
            ["input", "base", f"{tornado_metric} low", f"{tornado_metric} high", "range"],
            [
                [b["input"], b["base_value"], b["metric_low"], b["metric_high"], b["range"]]
                for b in res["tornado"]
            ],
        )
    )


def breakeven_cmd(
    roi_file: Annotated[
        str | None,
        typer.Argument(
            metavar="[ROI_FILE]", help="ROI YAML: break-even calls for each month's spend."
        ),
    ] = None,
    fixed_cost_usd: Annotated[
        float | None, typer.Option(help="Fixed cost per month. [USD/month]")
    ] = None,
    price_per_call_usd: Annotated[float | None, typer.Option(help="Price per call. [USD]")] = None,
    gross_margin: Annotated[float | None, typer.Option(help="Gross margin per call. [0-1]")] = None,
    days_per_month: Annotated[
        float, typer.Option(help="Days per month for calls_per_day (365.25/12).")
    ] = 30.4375,
    json_out: JsonOpt = False,
    explain: ExplainOpt = False,
) -> None:
    """Break-even volume: fixed cost / (price x margin) -> calls per month and per day."""
    from aitco.decide import roi

    if roi_file is not None:
        from aitco.cli import state

        inp = roi.RoiInputs.from_yaml(roi_file)
        inp, _ = roi.with_scenario_costs(inp, state.catalog(), file=roi_file)
        price = price_per_call_usd if price_per_call_usd is not None else inp.price_per_call_usd
        margin = gross_margin if gross_margin is not None else inp.gross_margin
        if price is None or margin is None:
            raise InputError(
                "price_per_call_usd/gross_margin",
                None,
                "both, in ROI_FILE or as flags",
                file=roi_file,
            )
        series = roi.roi_series(inp)
        spend = [m["spend_usd"] for m in series["months"]]
        calls = roi.breakeven_series(spend, price, margin)
        per_day = roi.calls_per_day(calls, days_per_month)
        out: dict[str, Any] = {
            "price_per_call_usd": price,
            "gross_margin": margin,
            "calls_per_month": float(calls.mean()),
            "calls_per_day": float(per_day.mean()),
            "max_calls_per_month": float(calls.max()),
            "months": [
                {
                    "month": i + 1,
                    "spend_usd": s,
                    "calls_per_month": float(c),
                    "calls_per_day": float(d),
                }
                for i, (s, c, d) in enumerate(zip(spend, calls, per_day, strict=True))
            ],
        }
        if json_out:
            print_json(out)
            return
        console.print(
            table(
                "Break-even volume by month",
                ["month", "spend [USD]", "calls/month", "calls/day"],
                [
                    [str(m["month"]), m["spend_usd"], m["calls_per_month"], m["calls_per_day"]]
                    for m in out["months"]
                ],
            )
        )
        return
    missing = [
        n
        for n, v in (
            ("--fixed-cost-usd", fixed_cost_usd),
            ("--price-per-call-usd", price_per_call_usd),
            ("--gross-margin", gross_margin),
        )
        if v is None
    ]
    if missing:
        raise InputError(", ".join(missing), None, "a value (or give a ROI_FILE)")
    assert fixed_cost_usd is not None
    assert price_per_call_usd is not None
    assert gross_margin is not None
    est = roi.breakeven_estimate(fixed_cost_usd, price_per_call_usd, gross_margin, days_per_month)
    if json_out:
        print_json(est.to_json())
        return
    v = est.values
    console.print(
        table(
            "Break-even volume",
            ["quantity", "value"],
            [
                ["margin per call [USD]", v["margin_per_call_usd"]],
                ["calls per month", v["calls_per_month"]],
                ["calls per day", v["calls_per_day"]],
            ],
        )
    )
    if explain:
        print_explain(est)


# --------------------------------------------------------------------------- sweep / optimize
def _parse_grid(items: list[str] | None) -> dict[str, list[Any]]:
    """``key=v1,v2`` flags -> grid entries (numbers parsed, 'none' -> None)."""
    grid: dict[str, list[Any]] = {}
    for item in items or []:
        if "=" not in item:
            raise InputError("--grid", item, "KEY=V1,V2,... (e.g. gpus=8,16,32)")
        key, raw = item.split("=", 1)
        vals: list[Any] = []
        for tok in raw.split(","):
            tok = tok.strip()
            if tok == "":
                continue
            if tok.lower() in ("none", "null"):
                vals.append(None)
                continue
            try:
                num = float(tok)
                vals.append(
                    int(num) if num.is_integer() and "." not in tok and "e" not in tok else num
                )
            except ValueError:
                vals.append(tok)
        grid[key.strip()] = vals
    return grid


def _load_spec(spec_file: str | None, grid: list[str] | None, overrides: dict[str, Any]) -> Any:
    from aitco.decide.sweep import SweepSpec

    if spec_file is None:
        raise InputError("SWEEP_FILE", None, "a sweep YAML (see examples/sweep_*.yaml)")
    spec = SweepSpec.from_yaml(spec_file)
    g = _parse_grid(grid)
    upd = {k: v for k, v in overrides.items() if v is not None}
    if g:
        upd["grid"] = {**spec.grid, **g}
    if upd:
        spec = SweepSpec.from_dict({**spec.model_dump(), **upd}, file=spec_file)
    return spec


def _progress(enabled: bool) -> Any:
    from contextlib import nullcontext

    if not enabled:
        return nullcontext(None)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from aitco.cli.render import err_console

    return Progress(
        TextColumn("[bold]sweep[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("chunks"),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    )


def _run_sweep(
    spec: Any,
    backend: str,
    scheduler: str | None,
    workers: int | None,
    parquet: str | None,
    show_progress: bool,
    optimize: bool,
    max_points: int = DEFAULT_MAX_SWEEP_POINTS,
) -> Any:
    from aitco.cli import state
    from aitco.decide import optimize as opt
    from aitco.decide import sweep as sw

    cat = state.catalog()
    if backend not in ("local", "dask"):
        raise InputError("--backend", backend, "local or dask")
    with _progress(show_progress) as prog:
        cb = None
        if prog is not None:
            task = prog.add_task("sweep", total=None)

            def cb(done: int, total: int) -> None:
                prog.update(task, completed=done, total=total)

        kw: dict[str, Any] = {
            "backend": backend,
            "scheduler": scheduler,
            "workers": workers,
            "progress": cb,
            "max_points": max_points,
        }
        if optimize:
            return opt.optimize(spec, cat, **kw)
        return sw.sweep(spec, cat, parquet_dir=parquet, **kw)


def _show_rows(
    title: str, rows: list[dict[str, Any]], swept: list[str], metrics: list[str]
) -> None:
    if not rows:
        console.print(f"{title}: none")
        return
    keys = [c.rsplit(".", 1)[-1] for c in swept]
    # keys equal in every shown row go to the caption: the table keeps what distinguishes rows
    same = [k for k in keys if len({str(r.get(k)) for r in rows}) == 1 and len(rows) > 1]
    cols = [k for k in keys if k not in same] + metrics
    caption = ", ".join(f"{k}={rows[0].get(k)}" for k in same) or None
    console.print(
        table(
            title,
            cols,
            [
                [r.get(c) if isinstance(r.get(c), int | float) else str(r.get(c)) for c in cols]
                for r in rows
            ],
            caption=f"all rows: {caption}" if caption else None,
        )
    )


SweepFile = Annotated[
    str | None, typer.Argument(metavar="SWEEP_FILE", help="Sweep YAML (examples/sweep_*.yaml).")
]
GridOpt = Annotated[
    list[str] | None,
    typer.Option("--grid", help="Override/add a swept key: KEY=V1,V2 (repeatable)."),
]
BackendOpt = Annotated[str, typer.Option("--backend", help="local or dask.")]
SchedOpt = Annotated[
    str | None, typer.Option("--scheduler", help="Dask scheduler address (tcp://host:8786).")
]
WorkersOpt = Annotated[
    int | None, typer.Option("--workers", help="Dask LocalCluster workers (default 2).")
]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")]
MaxPointsOpt = Annotated[
    int,
    typer.Option(
        "--max-points",
        help="Most plans evaluated: a larger grid is refused up front (use sample: or raise it).",
    ),
]


def sweep_cmd(
    spec_file: SweepFile = None,
    grid: GridOpt = None,
    sample: Annotated[int | None, typer.Option(help="Random sample of N configurations.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the random sample.")] = None,
    top_k: Annotated[int | None, typer.Option(help="Rows kept.")] = None,
    objective: Annotated[
        str | None, typer.Option(help="Metric minimised ('-' prefix maximises).")
    ] = None,
    chunk_size: Annotated[int | None, typer.Option(help="Configurations per chunk.")] = None,
    backend: BackendOpt = "local",
    scheduler: SchedOpt = None,
    workers: WorkersOpt = None,
    parquet: Annotated[
        str | None, typer.Option(help="Write every row to DIR/part-*.parquet.")
    ] = None,
    csv: Annotated[str | None, typer.Option(help="Write the top-K table to a CSV file.")] = None,
    show_progress: ProgressOpt = True,
    max_points: MaxPointsOpt = DEFAULT_MAX_SWEEP_POINTS,
    json_out: JsonOpt = False,
) -> None:
    """Sweep a grid (or a random sample) of plans with the vectorised models; top-K and Pareto."""
    from aitco.fileio import check_output, check_output_dir

    if csv:  # before any work: never an input of this command, never a device or a folder
        check_output(csv, field="--csv")
    if parquet:
        check_output_dir(parquet, field="--parquet")
    spec = _load_spec(
        spec_file,
        grid,
        {
            "sample": sample,
            "seed": seed,
            "top_k": top_k,
            "objective": objective,
            "chunk_size": chunk_size,
        },
    )
    res = _run_sweep(
        spec, backend, scheduler, workers, parquet, show_progress and not json_out, False,
        max_points,
    )  # fmt: skip
    if csv:
        from pathlib import Path

        from aitco.fileio import write_atomic

        write_atomic(Path(csv), res.top.to_csv(index=False), field="--csv")
    out = res.to_json()
    if json_out:
        print_json(out)
        return
    swept = out["swept_keys"]
    metric_cols = [out["objective"].lstrip("-"), *[m.lstrip("-") for m in out["pareto_metrics"]]]
    metric_cols = list(dict.fromkeys(metric_cols))
    console.print(
        f"{out['evaluated']:,} configurations ({out['valid']:,} valid, "
        f"{out['feasible']:,} feasible) "
        f"in {out['elapsed_s']:.2f} s on {out['backend']} "
        f"({fmt(out['configs_per_s'])} configs/s)",
        highlight=False,
    )
    if out.get("offload", "none") != "none":
        console.print(f"every configuration with ZeRO-Offload: {out['offload']}", highlight=False)
    if out.get("stack"):
        stack = ", ".join(f"{k} {v}" for k, v in out["stack"].items())
        console.print(f"every configuration with {stack}", highlight=False)
    for reason, n in out["invalid_reasons"].items():
        console.print(f"  [dim]{n:,} × {reason}[/dim]", highlight=False)
    _show_rows(f"Top {len(out['top'])} by {out['objective']}", out["top"], swept, metric_cols)
    _show_rows(
        f"Pareto front ({' vs '.join(out['pareto_metrics'])})", out["pareto"], swept, metric_cols
    )


def optimize_cmd(
    spec_file: SweepFile = None,
    grid: GridOpt = None,
    deadline_h: Annotated[float | None, typer.Option(help="Max wall clock (training). [h]")] = None,
    budget_usd: Annotated[
        float | None, typer.Option(help="Max total cost (training). [USD]")
    ] = None,
    max_gpus: Annotated[int | None, typer.Option(help="Max accelerators in use.")] = None,
    max_ttft_s: Annotated[float | None, typer.Option(help="Max TTFT (serving). [s]")] = None,
    max_tpot_s: Annotated[float | None, typer.Option(help="Max TPOT (serving). [s]")] = None,
    max_usd_per_million_output_tokens: Annotated[
        float | None, typer.Option(help="Max $ per million output tokens (serving). [USD/Mtok]")
    ] = None,
    allowed_clouds: Annotated[
        str | None, typer.Option(help="Comma-separated providers allowed.")
    ] = None,
    allowed_regions: Annotated[
        str | None, typer.Option(help="Comma-separated regions allowed.")
    ] = None,
    allowed_pricing: Annotated[
        str | None,
        typer.Option(help=f"Comma-separated pricing modes allowed, of: {PRICING_MODES}."),
    ] = None,
    backend: BackendOpt = "local",
    scheduler: SchedOpt = None,
    workers: WorkersOpt = None,
    show_progress: ProgressOpt = True,
    max_points: MaxPointsOpt = DEFAULT_MAX_SWEEP_POINTS,
    json_out: JsonOpt = False,
) -> None:
    """Cheapest plan meeting the constraints, and the cost-vs-time (or cost-vs-latency) front."""
    from aitco.decide import optimize as opt

    spec = _load_spec(spec_file, grid, {})

    def split(x: str | None) -> list[str] | None:
        return None if x is None else [t.strip() for t in x.split(",") if t.strip()]

    spec = opt.with_constraints(
        spec,
        max_wall_clock_h=deadline_h,
        max_total_usd=budget_usd,
        max_gpus=max_gpus,
        max_ttft_s=max_ttft_s,
        max_tpot_s=max_tpot_s,
        max_usd_per_million_output_tokens=max_usd_per_million_output_tokens,
        allowed_providers=split(allowed_clouds),
        allowed_regions=split(allowed_regions),
        allowed_pricing=split(allowed_pricing),
    )
    out = _run_sweep(
        spec, backend, scheduler, workers, None, show_progress and not json_out, True, max_points
    )
    if json_out:
        print_json(out)
        if out["status"] != "optimal":
            _say_infeasible(out)
            raise typer.Exit(2)
        return
    if out["status"] == "infeasible_at_p99":
        _say_infeasible(out)
        raise typer.Exit(2)
    if out["status"] != "optimal":
        _say_infeasible(out)
        _show_rows(
            "Closest plan",
            out.get("closest", []),
            out["swept_keys"],
            [b["metric"] for b in out.get("binding", []) if "metric" in b],
        )
        raise typer.Exit(2)
    metric_cols = list(
        dict.fromkeys(
            [out["objective"].lstrip("-"), *[m.lstrip("-") for m in out["pareto_metrics"]]]
        )
    )
    _show_rows("Cheapest feasible plan", [out["best"]], out["swept_keys"], metric_cols)
    _show_rows(
        f"Pareto front ({' vs '.join(out['pareto_metrics'])})",
        out["pareto"],
        out["swept_keys"],
        metric_cols,
    )


def _say_infeasible(out: dict[str, Any]) -> None:
    """Print the one ``error:`` line of an optimisation with no feasible plan (exit 2)."""
    from rich.markup import escape

    from aitco.cli.render import err_console
    from aitco.decide import optimize as opt

    if out["status"] == "infeasible_at_p99":
        n = len(out.get("p99_checks", []))
        msg = (
            f"infeasible at P99: none of the {n} cheapest plans meeting the bounds at steady "
            "state meets them at P99 under Poisson arrivals"
        )
    else:
        msg = f"infeasible: {opt.infeasible_message(out)}"
    err_console.print(f"[bold red]error:[/bold red] {escape(msg)}", highlight=False, soft_wrap=True)


# --------------------------------------------------------------------------- buy vs rent
def _yaml_args(path: str | None, section: str) -> dict[str, Any]:
    """Keyword arguments from a YAML file (top level or under ``section:``)."""
    if path is None:
        return {}
    from aitco.fileio import load_yaml
    from aitco.limits import check_tree

    data = load_yaml(path, field="FILE")
    check_tree(data, file=path)  # the ranges of the flags of the same name (limits.py)
    if isinstance(data, dict) and isinstance(data.get(section), dict):
        data = data[section]
    if not isinstance(data, dict):
        raise InputError(section, type(data).__name__, "a mapping", file=path)
    return data


def _coerce(args: dict[str, Any], kinds: dict[str, type], file: str | None) -> None:
    """Convert YAML scalars to numbers in place (YAML 1.1 reads ``5.0e9`` as a string)."""
    for k, typ in kinds.items():
        v = args.get(k)
        if v is None:
            continue
        if isinstance(v, bool):  # ``gpus: true`` is not one GPU
            raise InputError(k, v, "a number, not true/false", file=file)
        try:
            num = float(v)
        except (TypeError, ValueError) as exc:
            raise InputError(k, v, "a number", file=file) from exc
        if typ is int:
            if not num.is_integer():
                raise InputError(k, v, "an integer", file=file)
            args[k] = int(num)
        else:
            args[k] = num


def _check_keys(args: dict[str, Any], allowed: list[str], file: str | None) -> None:
    import difflib

    for k in args:
        if k not in allowed:
            close = difflib.get_close_matches(k, allowed, n=2)
            raise InputError(
                k,
                args[k],
                f"a known key ({', '.join(allowed)})",
                file=file,
                hint=f"did you mean {', '.join(map(repr, close))}?" if close else None,
            )


def buy_vs_rent_cmd(
    file: Annotated[
        str | None,
        typer.Argument(
            metavar="[FILE]", help="YAML with the inputs (examples/buy_vs_rent_*.yaml)."
        ),
    ] = None,
    hardware: Annotated[str | None, typer.Option(help="Accelerator or system id.")] = None,
    gpus: Annotated[int | None, typer.Option(help="Accelerators needed.")] = None,
    utilization: Annotated[float | None, typer.Option(help="Share of hours busy. [0-1]")] = None,
    horizon_years: Annotated[float | None, typer.Option(help="Horizon (default: catalog).")] = None,
    discount_rate: Annotated[
        float | None, typer.Option(help="Annual rate (default: catalog).")
    ] = None,
    region: Annotated[
        str | None, typer.Option(help="Electricity region (us, eu, cn, us-ia...).")
    ] = None,
    price_region: Annotated[
        str | None, typer.Option(help="Cloud region of the rental prices.")
    ] = None,
    no_colocation: Annotated[
        bool, typer.Option("--no-colocation", help="Own facility: no colo fee.")
    ] = False,
    provider: Annotated[
        str | None,
        typer.Option(
            help="Provider of the rental offers ('any': the cheapest eligible offer per mode; "
            "default: one home instance type for every mode)."
        ),
    ] = None,
    preset: Annotated[
        str | None, typer.Option("--preset", help="Assumption preset (see `aitco preset list`).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Owning vs renting (on-demand, reserved, spot): break-even month, NPV, break-even use."""
    from aitco.cli import state
    from aitco.decide.buy_vs_rent import buy_vs_rent

    args = _yaml_args(file, "buy_vs_rent")
    allowed = [
        "hardware",
        "gpus",
        "utilization",
        "horizon_years",
        "discount_rate",
        "region",
        "price_region",
        "provider",
        "pue_id",
        "colocation",
        "modes",
        "prices",
        "overrides",
        "preset",
    ]
    _check_keys(args, allowed, file)
    _coerce(
        args,
        {"gpus": int, "utilization": float, "horizon_years": float, "discount_rate": float},
        file,
    )
    flags = {
        "hardware": hardware,
        "gpus": gpus,
        "utilization": utilization,
        "horizon_years": horizon_years,
        "discount_rate": discount_rate,
        "region": region,
        "price_region": price_region,
        "provider": provider,
        "preset": preset,
    }
    args.update({k: v for k, v in flags.items() if v is not None})
    if no_colocation:
        args["colocation"] = False
    if "modes" in args:
        args["modes"] = tuple(args["modes"])
    args.setdefault("hardware", "h100-sxm5-80gb")
    args.setdefault("gpus", 64)
    cat = state.catalog()  # a flag, else the file's key: an unknown one is an error (did you mean)
    cat.check_provider(args.get("provider"), field="--provider" if provider else "provider")
    cat.check_price_region(
        args.get("price_region"), field="--price-region" if price_region else "price_region"
    )
    res = buy_vs_rent(cat, **args)
    if json_out:
        print_json(res)
        return
    o = res["owned"]
    console.print(
        f"[bold]{res['gpus']} x {res['hardware']}[/bold] at {res['utilization']:.0%} use over "
        f"{res['horizon_months']} months, discount {res['discount_rate']:.1%}/yr",
        highlight=False,
    )
    rows = [["owned", "-", o["capex_usd"], o["opex_usd_per_month"], o["npv_usd"], "-", "-"]]
    for mode, r in res["rent"].items():
        if not r.get("available", True):
            rows.append([mode, r["reason"], None, None, None, None, None])
            continue
        bem = r["break_even_month"]
        beu = r["break_even_utilization"]
        rows.append(
            [
                mode,
                r["price_usd_per_gpu_h"],
                0.0,
                r["usd_per_month"],
                r["npv_usd"],
                str(bem) if bem is not None else "never",
                f"{beu:.0%}" if beu is not None else "-",
            ]
        )
    console.print(
        table(
            "Buy vs rent",
            [
                "option",
                "$/GPU-h",
                "capex [USD]",
                "monthly [USD]",
                "NPV [USD]",
                "break-even month",
                "break-even use",
            ],
            rows,
        )
    )
    console.print(f"cheapest over the horizon: [bold]{res['cheapest']}[/bold]")


# --------------------------------------------------------------------------- API vs self-host
def api_vs_self_host_cmd(
    file: Annotated[
        str | None,
        typer.Argument(
            metavar="[FILE]", help="YAML with the inputs (examples/api_vs_self_host*.yaml)."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Open model to self-host.")] = None,
    volume_tokens_per_month: Annotated[
        float | None, typer.Option(help="Tokens (in+out) per month.")
    ] = None,
    requests_per_day: Annotated[
        float | None, typer.Option(help="Requests per day (instead of tokens).")
    ] = None,
    input_tokens: Annotated[int | None, typer.Option(help="Mean prompt length. [tokens]")] = None,
    output_tokens: Annotated[int | None, typer.Option(help="Mean output length. [tokens]")] = None,
    cached_fraction: Annotated[
        float | None, typer.Option(help="Share of input from the prompt cache.")
    ] = None,
    batch_api: Annotated[
        bool, typer.Option("--batch-api", help="Apply the APIs' batch discount.")
    ] = False,
    api: Annotated[
        list[str] | None, typer.Option("--api", help="API id (repeatable; default all).")
    ] = None,
    hardware: Annotated[
        list[str] | None, typer.Option("--hardware", help="Self-host hardware (repeatable).")
    ] = None,
    pricing: Annotated[
        str | None,
        typer.Option(help=f"Pricing of the self-hosted GPUs: {PRICING_MODES}."),
    ] = None,
    max_ttft_s: Annotated[
        float | None, typer.Option(help="TTFT objective for self-hosting. [s]")
    ] = None,
    max_tpot_s: Annotated[
        float | None, typer.Option(help="TPOT objective for self-hosting. [s]")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """$/Mtok of managed APIs vs self-hosting at your volume; the volume where self-hosting wins."""
    from aitco.cli import state
    from aitco.decide.api_vs_self_host import api_vs_self_host

    args = _yaml_args(file, "api_vs_self_host")
    allowed = [
        "model",
        "volume_tokens_per_month",
        "requests_per_day",
        "input_tokens",
        "output_tokens",
        "cached_fraction",
        "batch_api",
        "apis",
        "hardware",
        "pricing",
        "precisions",
        "max_ttft_s",
        "max_tpot_s",
        "prices",
        "load_check",
    ]
    _check_keys(args, allowed, file)
    _coerce(
        args,
        {
            "volume_tokens_per_month": float,
            "requests_per_day": float,
            "input_tokens": int,
            "output_tokens": int,
            "cached_fraction": float,
            "max_ttft_s": float,
            "max_tpot_s": float,
        },
        file,
    )
    flags = {
        "model": model,
        "volume_tokens_per_month": volume_tokens_per_month,
        "requests_per_day": requests_per_day,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_fraction": cached_fraction,
        "apis": api,
        "hardware": hardware,
        "pricing": pricing,
        "max_ttft_s": max_ttft_s,
        "max_tpot_s": max_tpot_s,
    }
    args.update({k: v for k, v in flags.items() if v is not None})
    if batch_api:
        args["batch_api"] = True
    for k in ("hardware", "precisions"):
        if k in args:
            args[k] = tuple(args[k])
    args.setdefault("model", "llama-3.1-70b")
    if "requests_per_day" not in args:
        args.setdefault("volume_tokens_per_month", 1e9)
    res = api_vs_self_host(state.catalog(), **args)
    _genai_rates(res["apis"])
    if json_out:
        print_json(res)
        return
    vol = res["volume_tokens_per_month"]
    console.print(
        f"self-hosting [bold]{res['model']}[/bold] at {fmt(vol)} tokens/month "
        f"({res['input_tokens']} in / {res['output_tokens']} out per request)",
        highlight=False,
    )
    sh = res.get("self_host")
    if sh:
        console.print(
            f"  cheapest plan: {sh['replicas']} x {sh['gpus_per_replica']} {sh['hardware']} "
            f"{sh['precision']} "
            f"batch {sh['batch']} -> {sh['usd_per_million_tokens']:.3g} $/Mtok "
            f"(TTFT {1e3 * sh['ttft_s']:.3g} ms, TPOT {1e3 * sh['tpot_s']:.3g} ms, "
            f"{sh['utilization']:.0%} busy)",
            highlight=False,
        )
    rows = [
        [
            r["api"],
            r["usd_per_million_tokens"],
            r.get("api_usd_per_month"),
            r.get("self_host_usd_per_month"),
            r["break_even_tokens_per_month"],
            "self-host" if r.get("self_host_wins") else "API",
        ]
        for r in res["apis"]
    ]
    console.print(
        table(
            "API vs self-host",
            [
                "API",
                "$/Mtok",
                "API $/month",
                "self-host $/month",
                "break-even tokens/month",
                "cheaper",
            ],
            rows,
        )
    )
    if sh and sh.get("usd_per_million_input_tokens") is not None:
        tok = [
            [r["api"], r["provider"], r["model"], r["input_usd_per_million_tokens"],
             r["output_usd_per_million_tokens"], r["price_source"]]
            for r in res["apis"]
        ]  # fmt: skip
        tok.append([
            "self-host (allocation)", sh["hardware"], res["model"],
            sh["usd_per_million_input_tokens"], sh["split_usd_per_million_output_tokens"],
            "aitco: every rented hour",
        ])  # fmt: skip
        tok.append([
            "self-host (usage)", sh["hardware"], res["model"],
            sh["usage_usd_per_million_input_tokens"], sh["usage_usd_per_million_output_tokens"],
            "aitco: busy hours only",
        ])  # fmt: skip
        console.print(
            table(
                "Per million input / output tokens",
                ["API", "provider", "model", "$/M input", "$/M output", "source"],
                tok,
            )
        )
    console.print(f"[dim]{res['note']}[/dim]")


def _genai_rates(rows: list[dict[str, Any]]) -> None:
    """Today's genai-prices list rates beside the catalog's, when genai-prices is installed."""
    from aitco.audit import genai

    if genai.module() is None:
        return
    for r in rows:
        try:
            rates = genai.current_rates(r["model"], r["provider"])
        except (LookupError, ValueError):  # a provider genai-prices does not know: no rates
            rates = None
        r["genai_input_usd_per_million_tokens"] = rates and rates["input_usd_per_mtok"]
        r["genai_output_usd_per_million_tokens"] = rates and rates["output_usd_per_mtok"]


# --------------------------------------------------------------------------- arbitrage
def arbitrage_cmd(
    trace: Annotated[
        str,
        typer.Argument(
            metavar="PRICE_TRACE", help="CSV: timestamp, offer, usd_per_hour[, gpus, ...]."
        ),
    ],
    gpus: Annotated[int, typer.Option(help="Fleet size kept running.")] = 8,
    threshold_usd_per_gpu_hour: Annotated[
        float | None,
        typer.Option(help="Use an offer only at or below this price (default: fallback)."),
    ] = None,
    fallback_usd_per_gpu_hour: Annotated[
        float | None, typer.Option(help="On-demand fallback price (default: max seen).")
    ] = None,
    tokens_per_s_per_gpu: Annotated[
        float, typer.Option(help="Output tokens/s of one working GPU.")
    ] = 1000.0,
    restart_h: Annotated[float, typer.Option(help="Work lost per start or preemption. [h]")] = 0.25,
    baseline: Annotated[
        str | None, typer.Option(help="Offer of the single-offer baseline.")
    ] = None,
    gpus_per_replica: Annotated[
        int,
        typer.Option(
            help="Accelerators of one replica (they share a network: an offer whose instances "
            "are smaller needs a cluster network, as in compare).",
            min=1,
        ),
    ] = 1,
    json_out: JsonOpt = False,
) -> None:
    """Simulate a price-threshold spot/multi-cloud placement policy vs a single-offer baseline."""
    from aitco.cli import state
    from aitco.decide.arbitrage import arbitrage

    res = arbitrage(
        trace,
        gpus_per_replica=gpus_per_replica,
        catalog=state.catalog(),
        gpus=gpus,
        threshold_usd_per_gpu_hour=threshold_usd_per_gpu_hour,
        fallback_usd_per_gpu_hour=fallback_usd_per_gpu_hour,
        tokens_per_s_per_gpu=tokens_per_s_per_gpu,
        restart_h=restart_h,
        baseline=baseline,
    )
    if json_out:
        print_json(res)
        return
    console.print(
        f"{res['n_rows']} price rows, {len(res['offers'])} offers, {res['trace_h']:.0f} h; "
        f"fleet of {res['gpus']} GPUs; threshold {res['threshold_usd_per_gpu_h']:.3g} $/GPU-h, "
        f"fallback {res['fallback_usd_per_gpu_h']:.3g} $/GPU-h",
        highlight=False,
    )
    rows = []
    for name, r in [("policy", res["policy"])] + [
        (f"only {o}", v) for o, v in res["baselines"].items()
    ]:
        rows.append(
            [
                name,
                r["total_usd"],
                r["effective_usd_per_gpu_h"],
                r["usd_per_million_tokens"],
                r["lost_gpu_hours"],
                r["starts"],
                r["preemptions"],
            ]
        )
    console.print(
        table(
            "Arbitrage",
            ["placement", "cost [USD]", "$/GPU-h", "$/Mtok", "lost GPU-h", "starts", "preemptions"],
            rows,
        )
    )
    for why in res["ineligible_offers"].values():  # each reason names its offer
        console.print(f"[yellow]left out[/yellow] {why}", highlight=False)
    sv = res["savings_vs_baseline"]
    console.print(
        f"vs baseline [bold]{res['baseline_offer']}[/bold]: "
        + (f"{sv:.1%} cheaper per million tokens" if sv is not None else "n/a"),
        highlight=False,
    )


# --------------------------------------------------------------------------- fit score
def fit_score_cmd(
    model: Annotated[str, typer.Option(help="Model id or config.json path.")] = "llama-3.1-70b",
    hardware: Annotated[
        list[str] | None, typer.Option("--hardware", help="Accelerator/system id (repeatable).")
    ] = None,
    kind: Annotated[str, typer.Option(help="inference or training.")] = "inference",
    precision: Annotated[str, typer.Option(help="Data type.")] = "bf16",
    gpus: Annotated[
        int | None, typer.Option(help="Accelerators available (default: one node).")
    ] = None,
    input_tokens: Annotated[int, typer.Option(help="Prompt length (serving). [tokens]")] = 2048,
    output_tokens: Annotated[int, typer.Option(help="Output length (serving). [tokens]")] = 512,
    seq_len: Annotated[int, typer.Option(help="Sequence length (training). [tokens]")] = 4096,
    batch: Annotated[int | None, typer.Option(help="Concurrent sequences / micro-batch.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Model-hardware fit: memory, KV bandwidth, MoE interconnect, topology, precision."""
    from aitco.cli import state
    from aitco.decide.fit_score import fit_score

    cat = state.catalog()
    hws = hardware or ["h100-sxm5-80gb", "h200-sxm-141gb", "a100-sxm4-80gb", "mi300x", "l40s", "l4"]
    results = [
        fit_score(
            cat,
            model,
            h,
            kind=kind,
            precision=precision,
            gpus=gpus,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            seq_len=seq_len,
            batch=batch,
        )
        for h in hws
    ]
    results.sort(key=lambda r: -r["overall"])
    if json_out:
        print_json(
            results[0] if len(results) == 1 else {"model": model, "kind": kind, "results": results}
        )
        return
    dims = list(results[0]["dimensions"])
    console.print(
        table(
            f"Fit of {model} ({kind}, {precision})",
            ["hardware", "overall", *dims],
            [
                [r["hardware"], r["overall"], *[r["dimensions"][d]["score"] for d in dims]]
                for r in results
            ],
        )
    )
    for r in results:
        console.print(
            f"[bold]{r['hardware']}[/bold] (x{r['gpus']}): weakest = {r['weakest']}",
            highlight=False,
        )
        for d, v in r["dimensions"].items():
            console.print(f"  {d} {v['score']:.2f}: {v['reason']}", highlight=False)


# --------------------------------------------------------------------------- levers
def levers_cmd(
    scenario_file: Annotated[
        str, typer.Argument(metavar="SCENARIO", help="Scenario YAML (examples/levers_*.yaml).")
    ],
    option: Annotated[
        str | None, typer.Option(help="Option label to work on (default: first).")
    ] = None,
    fine_tune_tokens: Annotated[
        float, typer.Option(help="Tokens of the fine-tuning alternative to pre-training.")
    ] = 2.0e9,
    json_out: JsonOpt = False,
) -> None:
    """Rank savings levers: fp8, plan, fused kernels, recompute, spot, LoRA, quantise, region."""
    from aitco.cli import state
    from aitco.decide.levers import levers, time_added
    from aitco.decide.scenario import Scenario

    res = levers(
        Scenario.from_yaml(scenario_file),
        state.catalog(),
        option=option,
        fine_tune_tokens=fine_tune_tokens,
    )
    if json_out:
        print_json(res)
        return
    b = res["base"]
    tkey = "wall_clock_days" if res["kind"] == "training" else "e2e_latency_s"
    if not b.get("feasible", True):  # the answer first: the option as given cannot run
        console.print(
            f"[bold red]{res['option']} cannot run as given[/bold red]: "
            + "; ".join(b.get("infeasible_reasons", [])),
            highlight=False,
        )
    console.print(
        f"[bold]{res['option']}[/bold]: {fmt(b['total_usd'])} USD, {tkey} {fmt(b.get(tkey))}",
        highlight=False,
    )
    rows = []
    for lv in res["levers"]:
        if lv.get("applicable"):
            rows.append(
                [
                    lv["lever"],
                    lv["usd_saved"],
                    f"{lv['saved_fraction']:.0%}" if lv["saved_fraction"] is not None else "-",
                    time_added(lv),
                    lv["risk"],
                    lv["change"] + (" (makes it feasible)" if lv.get("makes_feasible") else ""),
                ]
            )
        else:
            rows.append([lv["lever"], "-", "-", "-", lv["risk"], f"n/a: {lv['reason']}"])
    console.print(
        table(
            "Savings levers",
            ["lever", "saved [USD]", "saved", f"{tkey} added", "risk", "change"],
            rows,
        )
    )


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add the decision commands to the ``aitco`` app."""
    app.command("roi")(roi_cmd)
    app.command("breakeven")(breakeven_cmd)
    app.command("sweep")(sweep_cmd)
    app.command("optimize")(optimize_cmd)
    app.command("buy-vs-rent")(buy_vs_rent_cmd)
    app.command("api-vs-self-host")(api_vs_self_host_cmd)
    app.command("arbitrage")(arbitrage_cmd)
    app.command("fit-score")(fit_score_cmd)
    app.command("levers")(levers_cmd)

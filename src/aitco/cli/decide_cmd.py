"""Decision commands of the ``aitco`` CLI.

``roi``, ``breakeven``, ``buy-vs-rent``, ``api-vs-self-host``, ``arbitrage``, ``sweep``,
``optimize``, ``fit-score`` and ``levers``.

Every command is thin: it parses flags, calls :mod:`aitco.decide`, and renders a rich table or,
with ``--json``, one JSON object.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aitco.cli.render import console, fmt, print_explain, print_json, table
from aitco.errors import InputError

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
                    ["ROI", f"{v['roi']:.4f} ({v['roi_percent']:.1f} %)"],
                ],
            )
        )
        if explain:
            print_explain(est)
        return
    inp = roi.RoiInputs.from_yaml(roi_file)
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
    res["roi"] = res["mean_monthly_roi"]
    if json_out:
        print_json(res)
        return
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
    pb = res["payback_months"]
    console.print(
        f"payback: {fmt(pb) if pb is not None else 'not within the horizon'} months · "
        f"NPV @ {res['discount_rate']:.1%}/yr: {fmt(res['npv_usd'])} USD · "
        f"IRR: {fmt(res['irr_annual'])} /yr · cumulative ROI: {fmt(res['cumulative_roi'])}",
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
        inp = roi.RoiInputs.from_yaml(roi_file)
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


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add the decision commands to the ``aitco`` app."""
    app.command("roi")(roi_cmd)
    app.command("breakeven")(breakeven_cmd)

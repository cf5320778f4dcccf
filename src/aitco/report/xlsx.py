"""The ROI workbook: inputs, live monthly formulas, payback, NPV, IRR, break-even and charts.

The workbook is the spreadsheet form of :func:`aitco.decide.roi.roi_series`: each monthly row
holds the same formulas (traffic factor, savings, infrastructure, labour, iterations, spend,
net, cumulative, ROI, break-even calls) as live Excel formulas over a named inputs sheet, so a
manager can change an input and watch payback and NPV move. ``tests/report/test_xlsx.py``
recalculates the workbook with a formula engine and checks it against aitco's own functions.

Sheets
------
``Inputs``
    One value per row (named cells, yellow = editable), and labour by role.
``Monthly``
    One row per month, ``MAX(horizon, DEFAULT_ROWS)`` rows; months past the horizon are blank.
``Summary``
    Flat ROI, cumulative ROI, payback month, NPV, IRR, break-even calls per month and per day,
    and two charts, the cumulative net cash flow and the monthly ROI, each on its own value
    axis crossed by the month axis at zero.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aitco.cost.finance import PAYBACK_LOSES_AGAIN, PAYBACK_NEGATIVE_NPV, PAYBACK_NEVER
from aitco.decide import roi
from aitco.decide.roi import FTE_HOURS_PER_MONTH, ROI_SUMMARY, RoiInputs
from aitco.errors import InputError
from aitco.fileio import write_atomic
from aitco.report.model import OptionView, ReportData
from aitco.units import DAYS_PER_MONTH

#: Monthly rows written when the horizon is shorter, so that a user can lengthen it. [months]
DEFAULT_ROWS = 120

#: Labour roles the inputs sheet has room for.
LABOUR_ROWS = 6

#: Paid hours of one FTE per month: :data:`aitco.decide.roi.FTE_HOURS_PER_MONTH`
#: (52 weeks x 40 h / 12). [h/FTE-month]
FTE_HOURS_PER_MONTH_DEFAULT = FTE_HOURS_PER_MONTH


@dataclass
class WorkbookInputs:
    """Values written into the inputs sheet (the fields of ``aitco.decide.roi.RoiInputs``).

    Attributes
    ----------
    horizon_months : int
        Months simulated. [month]
    monthly_savings_usd : float
        Benefit in month 1 at the base traffic. [USD/month]
    monthly_cost_usd : float
        Fixed running cost per month. [USD/month]
    variable_cost_usd : float
        Running cost that scales with traffic, at month-1 traffic. [USD/month]
    traffic_growth_per_month : float
        Compound monthly change of traffic; negative values are a decay. [1/month]
    savings_scale_with_traffic : bool
        Whether the benefit scales with traffic.
    labour : dict
        Role -> ``(fte, usd_per_hour)``. [FTE], [USD/h]
    upfront_usd : float
        Investment at month 0. [USD]
    iteration_cost_usd : float
        Cost of one model iteration. [USD]
    iteration_months : int
        Months between iterations (0 = none). [month]
    discount_rate : float
        Annual discount rate. [1/year]
    price_per_call_usd : float
        Price per call, for break-even volumes. [USD/call]
    gross_margin : float
        Gross margin per call. [0-1]
    notes : list of str
        Where the values came from (written on the inputs sheet).
    """

    horizon_months: int = 36
    monthly_savings_usd: float = 0.0
    monthly_cost_usd: float = 0.0
    variable_cost_usd: float = 0.0
    traffic_growth_per_month: float = 0.0
    savings_scale_with_traffic: bool = True
    labour: dict[str, tuple[float, float]] = field(default_factory=dict)
    upfront_usd: float = 0.0
    iteration_cost_usd: float = 0.0
    iteration_months: int = 0
    discount_rate: float = 0.10
    price_per_call_usd: float = 0.0
    gross_margin: float = 0.0
    fte_hours_per_month: float = FTE_HOURS_PER_MONTH_DEFAULT
    days_per_month: float = DAYS_PER_MONTH
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_roi_inputs(cls, inp: RoiInputs, notes: list[str] | None = None) -> WorkbookInputs:
        """Copy a validated :class:`aitco.decide.roi.RoiInputs`."""
        return cls(
            horizon_months=inp.horizon_months,
            monthly_savings_usd=inp.monthly_savings_usd,
            monthly_cost_usd=inp.monthly_cost_usd,
            variable_cost_usd=inp.variable_cost_usd,
            traffic_growth_per_month=inp.traffic_growth_per_month,
            savings_scale_with_traffic=inp.savings_scale_with_traffic,
            labour={k: (r.fte, r.usd_per_hour) for k, r in inp.labour.items()},
            upfront_usd=inp.upfront_usd,
            iteration_cost_usd=inp.iteration_cost_usd,
            iteration_months=inp.iteration_months,
            discount_rate=inp.discount_rate,
            price_per_call_usd=inp.price_per_call_usd or 0.0,
            gross_margin=inp.gross_margin or 0.0,
            notes=list(notes or []),
        )

    def check(self) -> None:
        """Raise :class:`~aitco.errors.InputError` for values the formulas cannot take."""
        if not 1 <= self.horizon_months <= 600:
            raise InputError(
                "horizon_months", self.horizon_months, "a whole number of months in 1..600"
            )
        if len(self.labour) > LABOUR_ROWS:
            raise InputError("labour", list(self.labour), f"at most {LABOUR_ROWS} roles")
        for name in (
            "monthly_savings_usd",
            "monthly_cost_usd",
            "variable_cost_usd",
            "upfront_usd",
            "iteration_cost_usd",
            "price_per_call_usd",
        ):
            if getattr(self, name) < 0:
                raise InputError(name, getattr(self, name), "a value >= 0")
        if not 0 <= self.gross_margin <= 1:
            raise InputError("gross_margin", self.gross_margin, "a fraction in [0, 1]")
        if self.traffic_growth_per_month <= -1:
            raise InputError(
                "traffic_growth_per_month", self.traffic_growth_per_month, "a rate > -1"
            )
        if self.discount_rate <= -1:
            raise InputError("discount_rate", self.discount_rate, "an annual rate > -1")
        if self.iteration_months < 0:
            raise InputError("iteration_months", self.iteration_months, "a number of months >= 0")


# Inputs sheet: (defined name, label, unit, attribute, note)
_INPUT_ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    ("horizon_months", "Horizon", "months", "horizon_months", "months simulated"),
    (
        "monthly_savings_usd",
        "Savings in month 1",
        "USD/month",
        "monthly_savings_usd",
        "benefit (savings or gross profit) at month-1 traffic",
    ),
    (
        "monthly_cost_usd",
        "Fixed running cost",
        "USD/month",
        "monthly_cost_usd",
        "infrastructure that does not scale with traffic",
    ),
    (
        "variable_cost_usd",
        "Variable running cost (month 1)",
        "USD/month",
        "variable_cost_usd",
        "cost that scales with traffic",
    ),
    (
        "traffic_growth_per_month",
        "Traffic growth (negative = decay)",
        "1/month",
        "traffic_growth_per_month",
        "compound monthly change of volume",
    ),
    (
        "savings_scale_with_traffic",
        "Savings scale with traffic",
        "1 = yes, 0 = no",
        "savings_scale_with_traffic",
        "",
    ),
    (
        "upfront_usd",
        "Up-front investment (month 0)",
        "USD",
        "upfront_usd",
        "build, integration, initial training",
    ),
    (
        "iteration_cost_usd",
        "Cost of one model iteration",
        "USD",
        "iteration_cost_usd",
        "re-training / fine-tuning / evaluation",
    ),
    ("iteration_months", "Months between iterations", "months", "iteration_months", "0 = none"),
    ("discount_rate", "Discount rate", "1/year", "discount_rate", "annual, for NPV"),
    (
        "price_per_call_usd",
        "Price per call",
        "USD/call",
        "price_per_call_usd",
        "for break-even volume",
    ),
    ("gross_margin", "Gross margin per call", "fraction", "gross_margin", "for break-even volume"),
    (
        "fte_hours_per_month",
        "Paid hours per FTE-month",
        "h",
        "fte_hours_per_month",
        "2080 h/year / 12 (52 weeks x 40 h)",
    ),
    ("days_per_month", "Days per month", "days", "days_per_month", "365.25 / 12"),
)

#: Number formats: money with "$" and a leading minus, percentages, months, calls.
USD_FORMAT = '"$"#,##0;-"$"#,##0'
USD_CENTS_FORMAT = '"$"#,##0.00;-"$"#,##0.00'
PCT_FORMAT = "0.0%"
RATE_FORMAT = "0.00%"
MONTHS_FORMAT = '0.0 "months"'
CALLS_FORMAT = "#,##0"

# Monthly columns, in order (header, number format)
_MONTH_COLS: tuple[tuple[str, str], ...] = (
    ("month", "0"),
    ("traffic_factor", "0.000"),
    ("savings_usd", USD_FORMAT),
    ("infra_usd", USD_FORMAT),
    ("labour_usd", USD_FORMAT),
    ("iteration_usd", USD_FORMAT),
    ("spend_usd", USD_FORMAT),
    ("net_usd", USD_FORMAT),
    ("cumulative_usd", USD_FORMAT),
    ("roi", PCT_FORMAT),
    ("discounted_net_usd", USD_FORMAT),
    ("payback_candidate_months", "0.00"),
    ("calls_per_month", CALLS_FORMAT),
    ("loses_again_candidate_month", "0"),
)
_COL = {name: chr(ord("A") + i) for i, (name, _fmt) in enumerate(_MONTH_COLS)}

#: The start of the no-payback text of a cash flow that turns negative again (the month follows).
_LOSES_AGAIN_PREFIX = PAYBACK_LOSES_AGAIN.removesuffix("{month}")

#: Break-even rows of the summary, the names of ``aitco breakeven ROI_FILE --json``.
BREAKEVEN_SUMMARY: tuple[tuple[str, str, str], ...] = (
    ("calls_per_month", "break-even calls per month (mean over the horizon)", "calls/month"),
    ("max_calls_per_month", "break-even calls per month (highest month)", "calls/month"),
    ("calls_per_day", "break-even calls per day (mean)", "calls/day"),
)


def _summary_keys() -> tuple[str, ...]:
    return tuple(k for k, _l, _u in ROI_SUMMARY) + tuple(k for k, _l, _u in BREAKEVEN_SUMMARY)


#: Keys of the summary rows, top to bottom (row 4 on): the names ``aitco roi FILE`` and
#: ``aitco breakeven FILE`` print (:data:`aitco.decide.roi.ROI_SUMMARY`, then break-even).
SUMMARY_KEYS: tuple[str, ...] = _summary_keys()

#: Example inputs of ``aitco roi-template`` without ``--roi``: the seed ROI example,
#: ``examples/roi_support_bot.yaml`` (a test checks that the two agree).
EXAMPLE_SOURCE = "examples/roi_support_bot.yaml"


def example_inputs() -> WorkbookInputs:
    """Return the inputs of :data:`EXAMPLE_SOURCE` (a customer-support assistant)."""
    return WorkbookInputs(
        horizon_months=36,
        monthly_savings_usd=128000.0,
        monthly_cost_usd=18000.0,
        variable_cost_usd=9000.0,
        traffic_growth_per_month=-0.01,
        savings_scale_with_traffic=True,
        labour={"sre": (0.5, 95.0), "ml-engineer": (1.0, 110.0)},
        upfront_usd=450000.0,
        iteration_cost_usd=60000.0,
        iteration_months=6,
        discount_rate=0.10,
        price_per_call_usd=0.85,
        gross_margin=0.62,
        notes=[
            f"Example inputs from {EXAMPLE_SOURCE} (a customer-support assistant): "
            "replace the yellow cells with your own."
        ],
    )


def _roi_inputs(w: WorkbookInputs) -> RoiInputs:
    """Return the :class:`aitco.decide.roi.RoiInputs` the workbook's formulas compute with."""
    scale = w.fte_hours_per_month / FTE_HOURS_PER_MONTH
    return RoiInputs(
        horizon_months=w.horizon_months,
        monthly_savings_usd=w.monthly_savings_usd,
        monthly_cost_usd=w.monthly_cost_usd,
        variable_cost_usd=w.variable_cost_usd,
        traffic_growth_per_month=w.traffic_growth_per_month,
        savings_scale_with_traffic=w.savings_scale_with_traffic,
        labour={
            k: {"fte": fte, "usd_per_hour": rate * scale} for k, (fte, rate) in w.labour.items()
        },
        upfront_usd=w.upfront_usd,
        iteration_cost_usd=w.iteration_cost_usd,
        iteration_months=w.iteration_months,
        discount_rate=w.discount_rate,
        price_per_call_usd=w.price_per_call_usd or None,
        gross_margin=w.gross_margin or None,
    )


def _finite_or(value: Any, empty: Any = "") -> Any:
    """Return a cached cell value: the number, or ``empty`` for None/NaN (text in the cell)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return empty
    return value


def workbook_values(inputs: WorkbookInputs) -> dict[str, Any]:
    """Values of the summary cells, by key, as aitco computes them (:func:`roi_series`).

    These are stored as the cached results of the workbook's formulas, so that a spreadsheet
    shows them on open without recalculating, and they are what ``aitco roi FILE --json`` and
    ``aitco breakeven FILE --json`` print for the same inputs.
    """
    res = roi.roi_series(_roi_inputs(inputs))
    out = {k: _finite_or(res.get(k)) for k, _l, _u in roi.ROI_SUMMARY}
    if out["payback_months"] == "":
        out["payback_months"] = res["payback_null_reason"] or PAYBACK_NEVER
    for k in ("breaks_even_month", "loses_again_month"):
        if out[k] == "":
            out[k] = "none"
    out["_warning"] = (
        f"WARNING: the project loses money (NPV or net below zero); payback: "
        f"{out['payback_months']}"
        if res["loses_money"]
        else ""
    )
    for k in ("irr_monthly", "irr_annual"):
        if out[k] == "":
            out[k] = "none"
    calls = [m["calls_per_month"] for m in res["months"] if "calls_per_month" in m]
    out["calls_per_month"] = sum(calls) / len(calls) if calls else ""
    out["max_calls_per_month"] = max(calls) if calls else ""
    out["calls_per_day"] = out["calls_per_month"] / inputs.days_per_month if calls else ""
    out["_series"] = res
    return out


def roi_workbook_bytes(inputs: WorkbookInputs) -> bytes:
    r"""Build the ROI workbook in memory.

    Parameters
    ----------
    inputs : WorkbookInputs
        Values for the inputs sheet.

    Returns
    -------
    bytes
        The ``.xlsx`` file.

    Notes
    -----
    Row *t* of ``Monthly`` (t = 1..T, T = horizon) computes, as in
    :func:`aitco.decide.roi.roi_series`::

        g_t   = (1 + growth)^(t-1)
        S_t   = S * IF(scale, g_t, 1)
        C_t   = C_fixed + C_var * g_t + sum(FTE * hours * rate) + IF(k>0 AND MOD(t-1,k)=0, I, 0)
        ROI_t = (S_t - C_t) / C_t
        K_t   = -U + sum_{i<=t} (S_i - C_i)

    NPV discounts month *t* by :math:`(1+r_m)^t` with :math:`r_m = (1+r)^{1/12}-1`; IRR is the
    spreadsheet ``IRR`` over ``[-U, S_1-C_1, ...]`` started from aitco's IRR (when the flows
    change sign more than once the NPV has several zeros; aitco reports the smallest
    non-negative one); payback is the first month with :math:`K_t \ge 0`, interpolated
    linearly within the month; break-even calls are :math:`C_t / (p \cdot m)`.

    Every formula is stored with its value as aitco computes it (the cached result), so any
    spreadsheet shows the numbers on open; recalculating gives the same values. The summary
    and its chart print on one landscape page.
    """
    import xlsxwriter

    inputs.check()
    values = workbook_values(inputs)
    res = values.pop("_series")
    months = res["months"]
    horizon = inputs.horizon_months
    labour_rows = [fte * rate * inputs.fte_hours_per_month for fte, rate in inputs.labour.values()]
    labour_m = sum(labour_rows)
    rm = res["discount_rate_monthly"]

    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    wb.set_properties({"title": "aitco ROI workbook", "comments": "Written by aitco"})
    bold = wb.add_format({"bold": True})
    title = wb.add_format({"bold": True, "font_size": 14})
    edit_fmts: dict[str, Any] = {}

    def edit(num_format: str) -> Any:
        if num_format not in edit_fmts:
            edit_fmts[num_format] = wb.add_format(
                {"bg_color": "#FFF2CC", "border": 1, "num_format": num_format}
            )
        return edit_fmts[num_format]

    note_fmt = wb.add_format({"italic": True, "font_color": "#666666"})
    hdr = wb.add_format({"bold": True, "bg_color": "#DDEBF7", "border": 1})
    input_formats = {
        "USD/month": USD_FORMAT,
        "USD": USD_FORMAT,
        "USD/call": USD_CENTS_FORMAT,
        "fraction": RATE_FORMAT,
        "1/month": RATE_FORMAT,
        "1/year": RATE_FORMAT,
        "months": "0",
        "h": "0.00",
        "days": "0.0000",
    }

    # ------------------------------------------------------------------ Inputs
    ws = wb.add_worksheet("Inputs")
    ws.set_column("A:A", 36)
    ws.set_column("B:B", 16)
    ws.set_column("C:C", 16)
    ws.set_column("D:D", 50)
    ws.write("A1", "Your inputs: replace the yellow cells with your own", title)
    ws.write("A2", "; ".join(inputs.notes) if inputs.notes else "", note_fmt)
    ws.write_row("A3", ["input", "value", "unit", "note"], hdr)
    row = 3
    for name, label, unit, attr, note in _INPUT_ROWS:
        val: Any = getattr(inputs, attr)
        if isinstance(val, bool):
            val = int(val)
        ws.write(row, 0, label)
        ws.write_number(row, 1, float(val), edit(input_formats.get(unit, "General")))
        ws.write(row, 2, unit)
        ws.write(row, 3, note, note_fmt)
        wb.define_name(name, f"=Inputs!$B${row + 1}")
        row += 1
    row += 1
    ws.write(row, 0, "Operations labour by role", bold)
    row += 1
    ws.write_row(row, 0, ["role", "FTE", "USD per hour", "USD per month"], hdr)
    row += 1
    first_lab = row
    roles = list(inputs.labour.items())
    usd_fmt = wb.add_format({"num_format": USD_FORMAT})
    for i in range(LABOUR_ROWS):
        r = first_lab + i
        if i < len(roles):
            role, (fte, rate) = roles[i]
            ws.write(r, 0, role, edit("General"))
            ws.write_number(r, 1, float(fte), edit("0.00"))
            ws.write_number(r, 2, float(rate), edit(USD_CENTS_FORMAT))
        else:
            ws.write_blank(r, 0, None, edit("General"))
            ws.write_blank(r, 1, None, edit("0.00"))
            ws.write_blank(r, 2, None, edit(USD_CENTS_FORMAT))
        ws.write_formula(
            r,
            3,
            f"=N(B{r + 1})*N(C{r + 1})*fte_hours_per_month",
            usd_fmt,
            labour_rows[i] if i < len(roles) else 0,
        )
    last_lab = first_lab + LABOUR_ROWS - 1
    row = last_lab + 1
    ws.write(row, 0, "Labour per month", bold)
    ws.write_formula(
        row,
        3,
        f"=SUM(D{first_lab + 1}:D{last_lab + 1})",
        wb.add_format({"num_format": USD_FORMAT, "bold": True}),
        labour_m,
    )
    wb.define_name("labour_usd_per_month", f"=Inputs!$D${row + 1}")
    row += 1
    ws.write(row, 0, "Monthly discount rate", bold)
    ws.write_formula(
        row, 1, "=(1+discount_rate)^(1/12)-1", wb.add_format({"num_format": "0.0000%"}), rm
    )
    wb.define_name("discount_rate_monthly", f"=Inputs!$B${row + 1}")
    ws.set_landscape()
    ws.fit_to_pages(1, 1)
    ws.print_area(0, 0, row, 3)

    # ------------------------------------------------------------------ Monthly
    n_rows = max(horizon, DEFAULT_ROWS)
    wm = wb.add_worksheet("Monthly")
    wm.set_column("A:A", 7)
    wm.set_column("B:M", 14)
    wm.freeze_panes(1, 1)
    wm.write_row(0, 0, [c for c, _f in _MONTH_COLS], hdr)
    fmts = {c: wb.add_format({"num_format": f}) for c, f in _MONTH_COLS}
    c = _COL
    for i in range(n_rows):
        r = i + 2  # 1-based sheet row
        t = i + 1
        guard = f"{t}<=horizon_months"
        prev_cum = "-upfront_usd" if t == 1 else f"{c['cumulative_usd']}{r - 1}"
        cells = {
            "traffic_factor": f"(1+traffic_growth_per_month)^({c['month']}{r}-1)",
            "savings_usd": (
                f"monthly_savings_usd*IF(savings_scale_with_traffic=1,{c['traffic_factor']}{r},1)"
            ),
            "infra_usd": f"monthly_cost_usd+variable_cost_usd*{c['traffic_factor']}{r}",
            "labour_usd": "labour_usd_per_month",
            "iteration_usd": (
                f"IF(AND(iteration_months>0,MOD({c['month']}{r}-1,MAX(iteration_months,1))=0),"
                "iteration_cost_usd,0)"
            ),
            "spend_usd": f"{c['infra_usd']}{r}+{c['labour_usd']}{r}+{c['iteration_usd']}{r}",
            "net_usd": f"{c['savings_usd']}{r}-{c['spend_usd']}{r}",
            "cumulative_usd": f"{prev_cum}+{c['net_usd']}{r}",
            "roi": f'IF({c["spend_usd"]}{r}>0,{c["net_usd"]}{r}/{c["spend_usd"]}{r},"")',
            "discounted_net_usd": f"{c['net_usd']}{r}/(1+discount_rate_monthly)^{c['month']}{r}",
            "payback_candidate_months": (
                f"IF(AND({c['cumulative_usd']}{r}>=0,{prev_cum}<0),"
                f"IF({c['net_usd']}{r}<=0,{c['month']}{r},"
                f'{c["month"]}{r}-1+(-({prev_cum}))/{c["net_usd"]}{r}),"")'
            ),
            "calls_per_month": (
                f"IF(price_per_call_usd*gross_margin>0,"
                f'{c["spend_usd"]}{r}/(price_per_call_usd*gross_margin),"")'
            ),
            # the month the cumulative cash flow is negative again after it broke even
            "loses_again_candidate_month": (
                f"IF(AND({c['cumulative_usd']}{r}<0,OR(AND(upfront_usd<=0,"
                f"{c['net_usd']}$2>=0),COUNT({c['payback_candidate_months']}$1:"
                f'{c["payback_candidate_months"]}{r - 1})>0)),{c["month"]}{r},"")'
            ),
        }
        cached = _month_values(months[i], i, months, inputs.upfront_usd, rm) if t <= horizon else {}
        wm.write_formula(i + 1, 0, f'=IF({guard},{t},"")', fmts["month"], cached.get("month", ""))
        for j, (name, _f) in enumerate(_MONTH_COLS[1:], start=1):
            wm.write_formula(
                i + 1, j, f'=IF({guard},{cells[name]},"")', fmts[name], cached.get(name, "")
            )
    last = n_rows + 1
    # cash flows for IRR: month 0 then months 1..T (blank past the horizon)
    wm.write(0, 14, "cash_flow_usd", hdr)
    wm.write_formula(1, 14, "=-upfront_usd", fmts["net_usd"], -inputs.upfront_usd)
    for i in range(n_rows):
        wm.write_formula(
            i + 2,
            14,
            f'=IF({i + 1}<=horizon_months,{c["net_usd"]}{i + 2},"")',
            fmts["net_usd"],
            months[i]["net_usd"] if i < horizon else "",
        )
    wm.set_column("O:O", 14)
    wm.set_landscape()
    wm.fit_to_pages(1, 0)
    wm.repeat_rows(0)
    wm.print_area(0, 0, horizon + 1, 14)

    def rng(col: str) -> str:
        return f"Monthly!${_COL[col]}$2:${_COL[col]}${last}"

    # ------------------------------------------------------------------ Summary
    su = wb.add_worksheet("Summary")
    su.set_column("A:A", 20)
    su.set_column("B:B", 16)
    su.set_column("C:C", 12)
    su.set_column("D:D", 48)
    su.set_column("E:E", 54)
    su.write("A1", "aitco ROI workbook: summary (live formulas over the Inputs sheet)", title)
    su.write(
        "A2",
        "Names as printed by aitco roi FILE and aitco breakeven FILE; inputs on the Inputs sheet.",
        note_fmt,
    )
    su.write_row("A3", ["name", "value", "unit", "quantity", "formula"], hdr)
    fmt_by_unit = {
        "ratio": wb.add_format({"num_format": PCT_FORMAT, "bold": True}),
        "1/month": wb.add_format({"num_format": RATE_FORMAT, "bold": True}),
        "1/year": wb.add_format({"num_format": PCT_FORMAT, "bold": True}),
        "USD": wb.add_format({"num_format": USD_FORMAT, "bold": True}),
        "months": wb.add_format({"num_format": MONTHS_FORMAT, "bold": True}),
        "calls/month": wb.add_format({"num_format": CALLS_FORMAT, "bold": True}),
        "calls/day": wb.add_format({"num_format": CALLS_FORMAT, "bold": True}),
    }
    total_spend = f"(SUM({rng('spend_usd')})+upfront_usd)"
    formulas: dict[str, tuple[str, str]] = {
        "roi_horizon": (
            f'=IF({total_spend}>0,(SUM({rng("savings_usd")})-{total_spend})/{total_spend},"")',
            "(sum S_t - sum C_t - U) / (sum C_t + U)",
        ),
        "roi_monthly_mean": (
            f'=IFERROR(AVERAGE({rng("roi")}),"")',
            "mean over the months of (S_t - C_t) / C_t",
        ),
        "npv_usd": (
            f"=-upfront_usd+SUM({rng('discounted_net_usd')})",
            "-U + sum (S_t - C_t) / (1 + r_m)^t",
        ),
        "irr_monthly": (
            f"=IFERROR(IRR(Monthly!$O$2:$O${last + 1}"
            + (f",{values['irr_monthly']!r}" if isinstance(values["irr_monthly"], float) else "")
            + '),"none")',
            "NPV of [-U, S_1 - C_1, ...] = 0 (search starts at aitco's IRR)",
        ),
        "irr_annual": (
            '=IF(ISNUMBER(irr_monthly),(1+irr_monthly)^12-1,"none")',
            "(1 + irr_monthly)^12 - 1",
        ),
        "payback_months": (
            f'=IF(NOT(ISNUMBER(breaks_even_month)),"{PAYBACK_NEVER}",'
            f'IF(ISNUMBER(loses_again_month),"{_LOSES_AGAIN_PREFIX}"&TEXT(loses_again_month,"0"),'
            f'IF(npv_usd<0,"{PAYBACK_NEGATIVE_NPV}",breaks_even_month)))',
            "breaks_even_month, when the cumulative net stays >= 0 and the NPV >= 0",
        ),
        "total_savings_usd": (f"=SUM({rng('savings_usd')})", "sum S_t"),
        "total_spend_usd": (f"={total_spend}", "sum C_t + U"),
        "net_usd": (f"=SUM({rng('savings_usd')})-{total_spend}", "sum S_t - sum C_t - U"),
        "breaks_even_month": (
            f"=IF(AND(upfront_usd<=0,Monthly!{_COL['net_usd']}2>=0),0,"
            f'IF(COUNT({rng("payback_candidate_months")})=0,"none",'
            f"MIN({rng('payback_candidate_months')})))",
            "first month with cumulative net >= 0, linear within the month",
        ),
        "loses_again_month": (
            f'=IF(COUNT({rng("loses_again_candidate_month")})=0,"none",'
            f"MIN({rng('loses_again_candidate_month')}))",
            "first month after it with cumulative net < 0",
        ),
        "calls_per_month": (
            f'=IFERROR(AVERAGE({rng("calls_per_month")}),"")',
            "mean of C_t / (price x margin)",
        ),
        "max_calls_per_month": (
            f'=IF(COUNT({rng("calls_per_month")})>0,MAX({rng("calls_per_month")}),"")',
            "highest C_t / (price x margin)",
        ),
        "calls_per_day": (
            '=IF(ISNUMBER(calls_per_month),calls_per_month/days_per_month,"")',
            "calls_per_month / days per month",
        ),
    }

    rows = list(ROI_SUMMARY) + list(BREAKEVEN_SUMMARY)
    for k, (key, label, unit) in enumerate(rows):
        r = 3 + k
        formula, words = formulas[key]
        su.write(r, 0, key, bold)
        su.write_formula(r, 1, formula, fmt_by_unit[unit], values[key])
        su.write(r, 2, unit)
        su.write(r, 3, label)
        su.write(r, 4, words, note_fmt)
        wb.define_name(key, f"=Summary!$B${r + 1}")
    last_summary_row = 3 + len(rows)
    # a project that loses money says so under the figures (empty otherwise)
    warn_fmt = wb.add_format({"bold": True, "font_color": "#B00020"})
    su.write_formula(
        last_summary_row,
        0,
        '=IF(OR(npv_usd<0,net_usd<0),"WARNING: the project loses money (NPV or net below zero);'
        ' payback: "&payback_months,"")',
        warn_fmt,
        values["_warning"],
    )
    last_summary_row += 1

    # charts: the cumulative net and the monthly ROI, each on its own value axis so that the
    # month axis crosses it at zero (a secondary axis cannot keep its zero on the month axis
    # once a user edits an input and Excel rescales)
    horizon_last = horizon + 1
    months = f"=Monthly!$A$2:$A${horizon_last}"
    chart = wb.add_chart({"type": "line"})
    chart.add_series(
        {
            "name": "cumulative net [USD]",
            "categories": months,
            "values": f"=Monthly!$I$2:$I${horizon_last}",
            "line": {"color": "#1f77b4", "width": 2.25},
        }
    )
    chart.set_title({"name": "Cumulative net cash flow"})
    chart.set_x_axis({"name": "month", "label_position": "low"})
    chart.set_y_axis({"name": "cumulative net [USD]", "num_format": USD_FORMAT, "crossing": 0})
    chart.set_legend({"none": True})
    roi_chart = wb.add_chart({"type": "line"})
    roi_chart.add_series(
        {
            "name": "monthly ROI",
            "categories": months,
            "values": f"=Monthly!${_COL['roi']}$2:${_COL['roi']}${horizon_last}",
            "line": {"color": "#ff7f0e", "width": 2.25},
        }
    )
    roi_chart.set_title({"name": "Monthly ROI"})
    roi_chart.set_x_axis({"name": "month", "label_position": "low"})
    roi_chart.set_y_axis({"name": "monthly ROI", "num_format": "0%", "crossing": 0})
    roi_chart.set_legend({"none": True})
    chart_row = last_summary_row + 1
    chart_rows = 30  # two charts of 300 px, 15 rows of 20 px each
    chart.set_size({"width": 900, "height": 300})
    roi_chart.set_size({"width": 900, "height": 300})
    su.insert_chart(chart_row, 0, chart)
    su.insert_chart(chart_row + chart_rows // 2, 0, roi_chart)
    su.set_landscape()
    su.fit_to_pages(1, 1)
    su.center_horizontally()
    su.print_area(0, 0, chart_row + chart_rows, 4)
    su.activate()
    wb.close()
    return buf.getvalue()


def _month_values(
    row: Mapping[str, Any], i: int, months: list[Any], upfront_usd: float, rate_monthly: float
) -> dict[str, Any]:
    """Return the cached values of one monthly row (from :func:`aitco.decide.roi.roi_series`)."""
    prev = -upfront_usd if i == 0 else months[i - 1]["cumulative_usd"]
    cum = row["cumulative_usd"]
    net = row["net_usd"]
    payback: Any = ""
    if cum >= 0 and prev < 0:
        payback = float(row["month"]) if net <= 0 else row["month"] - 1 + (-prev) / net
    out = {k: row[k] for k in ("month", *(n for n, _f in _MONTH_COLS[1:9]))}
    out["roi"] = _finite_or(row["roi"])
    out["discounted_net_usd"] = net / (1.0 + rate_monthly) ** row["month"]
    out["payback_candidate_months"] = payback
    out["calls_per_month"] = row.get("calls_per_month", "")
    seen = any(m["cumulative_usd"] >= 0 for m in months[:i]) or (
        upfront_usd <= 0 and months[0]["net_usd"] >= 0
    )
    out["loses_again_candidate_month"] = row["month"] if cum < 0 and seen else ""
    return out


def write_roi_workbook(path: str | Path, inputs: WorkbookInputs) -> Path:
    """Write the ROI workbook atomically to ``path`` (see :func:`roi_workbook_bytes`)."""
    p = Path(path)
    if p.suffix.lower() != ".xlsx":
        raise InputError("-o", str(path), "a path ending in .xlsx")
    write_atomic(p, roi_workbook_bytes(inputs), field="-o")
    return p


def inputs_from_mapping(data: Mapping[str, Any], *, file: str | None = None) -> WorkbookInputs:
    """Validate ROI inputs with :class:`aitco.decide.roi.RoiInputs` and copy them."""
    inp = RoiInputs.from_dict(dict(data), file=file)
    return WorkbookInputs.from_roi_inputs(inp, notes=[f"inputs from {file}"] if file else [])


def fill_from_option(
    inputs: WorkbookInputs, option: OptionView, scenario: Mapping[str, Any]
) -> None:
    """Fill the running or up-front cost of ``inputs`` from a compared option.

    Parameters
    ----------
    inputs : WorkbookInputs
        Updated in place; a note says where the value came from.
    option : aitco.report.model.OptionView
        The option (usually the cheapest of the comparison).
    scenario : mapping
        The scenario as a dict (its workload kind decides).

    Notes
    -----
    A serving workload's cost per month (``usd_per_month``, else ``total_usd / months``) becomes
    ``monthly_cost_usd``; a training run's ``total_usd`` becomes ``upfront_usd``.
    """
    wl = scenario.get("workload") or {}
    if wl.get("kind") == "inference":
        months = float(wl.get("months", 1.0))
        per_month = option.values.get("usd_per_month")
        if isinstance(per_month, int | float):
            inputs.monthly_cost_usd = float(per_month)
            how = f"usd_per_month of {option.name}"
        else:
            inputs.monthly_cost_usd = option.total_usd / months
            how = f"total {option.total_usd:,.0f} USD / {months:g} months of {option.name}"
        inputs.notes.append(
            f"monthly_cost_usd = {inputs.monthly_cost_usd:,.0f} USD: {how} "
            "(cheapest option of the scenario, aitco compare)"
        )
    else:
        inputs.upfront_usd = option.total_usd
        inputs.notes.append(
            f"upfront_usd = total {option.total_usd:,.0f} USD of {option.name} "
            "(cheapest option of the scenario, aitco compare)"
        )


def fill_from_comparison(inputs: WorkbookInputs, data: Any) -> OptionView | None:
    """Fill ``inputs`` from the comparison's cheapest option; say so when there is none.

    Parameters
    ----------
    inputs : WorkbookInputs
        Updated in place (:func:`fill_from_option`), or given a note naming the verdict.
    data : aitco.report.model.ReportData
        The report of the comparison (its ``cheapest`` and ``verdict``).

    Returns
    -------
    OptionView or None
        The option used; None when no option is feasible (the running cost is left as it was).
    """
    cheap = next((o for o in data.options if data.cheapest and o.name == data.cheapest), None)
    if cheap is None:
        inputs.notes.append(
            f"running cost not filled from the comparison: {data.verdict or 'no feasible option'}"
        )
        return None
    fill_from_option(inputs, cheap, data.scenario)
    return cheap


def workbook_for(data: ReportData, inputs: WorkbookInputs | None = None) -> WorkbookInputs:
    """Return the ROI workbook's inputs for a compared scenario (one path for CLI and web).

    The inputs (default: :func:`example_inputs`) with the running or up-front cost of the
    comparison's cheapest option (:func:`fill_from_comparison`): what ``aitco roi-template
    SCENARIO`` writes and what the web app's "ROI workbook" button downloads. With no feasible
    option, nothing is filled and a note gives the comparison's verdict.
    """
    out = example_inputs() if inputs is None else inputs
    fill_from_comparison(out, data)
    return out

"""The ROI workbook: inputs, live monthly formulas, payback, NPV, IRR, break-even and a chart.

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
    and a chart of the cumulative net cash flow and the monthly ROI.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aitco.errors import InputError
from aitco.units import DAYS_PER_MONTH, MONTHS_PER_YEAR

if TYPE_CHECKING:  # pragma: no cover
    from aitco.decide.roi import RoiInputs
    from aitco.report.model import OptionView

#: Monthly rows written when the horizon is shorter, so that a user can lengthen it. [months]
DEFAULT_ROWS = 120

#: Labour roles the inputs sheet has room for.
LABOUR_ROWS = 6

#: Paid hours of one FTE per month, the same convention as :mod:`aitco.decide.roi`
#: (52 weeks x 40 h / 12). [h/FTE-month]
FTE_HOURS_PER_MONTH_DEFAULT = 2080.0 / MONTHS_PER_YEAR


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

# Monthly columns, in order (header, number format)
_MONTH_COLS: tuple[tuple[str, str], ...] = (
    ("month", "0"),
    ("traffic_factor", "0.0000"),
    ("savings_usd", "#,##0"),
    ("infra_usd", "#,##0"),
    ("labour_usd", "#,##0"),
    ("iteration_usd", "#,##0"),
    ("spend_usd", "#,##0"),
    ("net_usd", "#,##0"),
    ("cumulative_usd", "#,##0"),
    ("roi", "0.00%"),
    ("discounted_net_usd", "#,##0"),
    ("payback_candidate_months", "0.00"),
    ("calls_per_month", "#,##0"),
)
_COL = {name: chr(ord("A") + i) for i, (name, _fmt) in enumerate(_MONTH_COLS)}

#: Summary cells: (label, unit, formula, number format, JSON key of ``roi_series``/roi commands)
SUMMARY_KEYS: tuple[str, ...] = (
    "roi",
    "cumulative_roi",
    "payback_months",
    "npv_usd",
    "irr_monthly",
    "irr_annual",
    "total_savings_usd",
    "total_spend_usd",
    "calls_per_month",
    "calls_per_day",
)


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

    NPV discounts month *t* by :math:`(1+r_m)^t` with :math:`r_m = (1+r)^{1/12}-1`; IRR is Excel's
    ``IRR`` over ``[-U, S_1-C_1, ...]``; payback is the first month with :math:`K_t \ge 0`,
    interpolated linearly within the month; break-even calls are
    :math:`C_t / (p \cdot m)`.
    """
    import xlsxwriter

    inputs.check()
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    bold = wb.add_format({"bold": True})
    title = wb.add_format({"bold": True, "font_size": 14})
    edit = wb.add_format({"bg_color": "#FFF2CC", "border": 1})
    edit_pct = wb.add_format({"bg_color": "#FFF2CC", "border": 1, "num_format": "0.00%"})
    note_fmt = wb.add_format({"italic": True, "font_color": "#666666"})
    hdr = wb.add_format({"bold": True, "bg_color": "#DDEBF7", "border": 1})

    # ------------------------------------------------------------------ Inputs
    ws = wb.add_worksheet("Inputs")
    ws.set_column("A:A", 36)
    ws.set_column("B:B", 16)
    ws.set_column("C:C", 16)
    ws.set_column("D:D", 50)
    ws.write("A1", "aitco ROI workbook: inputs (yellow cells are editable)", title)
    ws.write_row("A3", ["input", "value", "unit", "note"], hdr)
    row = 3
    for name, label, unit, attr, note in _INPUT_ROWS:
        val: Any = getattr(inputs, attr)
        if isinstance(val, bool):
            val = int(val)
        fmt = edit_pct if unit in ("fraction", "1/month", "1/year") else edit
        ws.write(row, 0, label)
        ws.write_number(row, 1, float(val), fmt)
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
    for i in range(LABOUR_ROWS):
        r = first_lab + i
        if i < len(roles):
            role, (fte, rate) = roles[i]
            ws.write(r, 0, role, edit)
            ws.write_number(r, 1, float(fte), edit)
            ws.write_number(r, 2, float(rate), edit)
        else:
            ws.write_blank(r, 0, None, edit)
            ws.write_blank(r, 1, None, edit)
            ws.write_blank(r, 2, None, edit)
        ws.write_formula(
            r,
            3,
            f"=N(B{r + 1})*N(C{r + 1})*fte_hours_per_month",
            wb.add_format({"num_format": "#,##0"}),
        )
    last_lab = first_lab + LABOUR_ROWS - 1
    row = last_lab + 1
    ws.write(row, 0, "Labour per month", bold)
    ws.write_formula(
        row,
        3,
        f"=SUM(D{first_lab + 1}:D{last_lab + 1})",
        wb.add_format({"num_format": "#,##0", "bold": True}),
    )
    wb.define_name("labour_usd_per_month", f"=Inputs!$D${row + 1}")
    row += 1
    ws.write(row, 0, "Monthly discount rate", bold)
    ws.write_formula(
        row, 1, "=(1+discount_rate)^(1/12)-1", wb.add_format({"num_format": "0.0000%"})
    )
    wb.define_name("discount_rate_monthly", f"=Inputs!$B${row + 1}")
    row += 2
    for n in inputs.notes:
        ws.write(row, 0, n, note_fmt)
        row += 1

    # ------------------------------------------------------------------ Monthly
    n_rows = max(inputs.horizon_months, DEFAULT_ROWS)
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
        }
        wm.write_formula(i + 1, 0, f'=IF({guard},{t},"")', fmts["month"])
        for j, (name, _f) in enumerate(_MONTH_COLS[1:], start=1):
            wm.write_formula(i + 1, j, f'=IF({guard},{cells[name]},"")', fmts[name])
    last = n_rows + 1
    # cash flows for IRR: month 0 then months 1..T (blank past the horizon)
    wm.write(0, 14, "cash_flow_usd", hdr)
    wm.write_formula(1, 14, "=-upfront_usd", fmts["net_usd"])
    for i in range(n_rows):
        wm.write_formula(
            i + 2, 14, f'=IF({i + 1}<=horizon_months,{c["net_usd"]}{i + 2},"")', fmts["net_usd"]
        )
    wm.set_column("O:O", 14)

    def rng(col: str) -> str:
        return f"Monthly!${_COL[col]}$2:${_COL[col]}${last}"

    # ------------------------------------------------------------------ Summary
    su = wb.add_worksheet("Summary")
    su.set_column("A:A", 38)
    su.set_column("B:B", 18)
    su.set_column("C:C", 14)
    su.set_column("D:D", 60)
    su.write("A1", "aitco ROI workbook: summary (live formulas)", title)
    su.write_row("A3", ["quantity", "value", "unit", "formula"], hdr)
    usd = wb.add_format({"num_format": "#,##0", "bold": True})
    ratio = wb.add_format({"num_format": "0.0000", "bold": True})
    months_fmt = wb.add_format({"num_format": "0.00", "bold": True})
    summary: tuple[tuple[str, str, str, str, Any, str], ...] = (
        (
            "roi",
            "Monthly ROI, flat form",
            "ratio",
            '=IF(monthly_cost_usd>0,(monthly_savings_usd-monthly_cost_usd)/monthly_cost_usd,"")',
            ratio,
            "(S - C) / C",
        ),
        (
            "cumulative_roi",
            "Cumulative ROI over the horizon",
            "ratio",
            f"=IF(SUM({rng('spend_usd')})+upfront_usd>0,(SUM({rng('savings_usd')})-SUM({rng('spend_usd')})-upfront_usd)"
            f'/(SUM({rng("spend_usd")})+upfront_usd),"")',
            ratio,
            "(sum S - sum C - U) / (sum C + U)",
        ),
        (
            "payback_months",
            "Payback",
            "months",
            f"=IF(AND(upfront_usd<=0,Monthly!{_COL['net_usd']}2>=0),0,"
            f'IF(COUNT({rng("payback_candidate_months")})=0,"not within horizon",'
            f"MIN({rng('payback_candidate_months')})))",
            months_fmt,
            "first month with cumulative net >= 0, linear within the month",
        ),
        (
            "npv_usd",
            "Net present value",
            "USD",
            f"=-upfront_usd+SUM({rng('discounted_net_usd')})",
            usd,
            "-U + sum (S_t - C_t) / (1 + r_m)^t",
        ),
        (
            "irr_monthly",
            "Internal rate of return, monthly",
            "1/month",
            f'=IFERROR(IRR(Monthly!$O$2:$O${last + 1}),"none")',
            ratio,
            "IRR of [-U, S_1 - C_1, ...]",
        ),
        (
            "irr_annual",
            "Internal rate of return, annual",
            "1/year",
            '=IF(ISNUMBER(irr_monthly),(1+irr_monthly)^12-1,"none")',
            ratio,
            "(1 + IRR_m)^12 - 1",
        ),
        (
            "total_savings_usd",
            "Total savings over the horizon",
            "USD",
            f"=SUM({rng('savings_usd')})",
            usd,
            "sum S_t",
        ),
        (
            "total_spend_usd",
            "Total spend over the horizon",
            "USD",
            f"=SUM({rng('spend_usd')})+upfront_usd",
            usd,
            "sum C_t + U",
        ),
        (
            "calls_per_month",
            "Break-even calls per month (month-1 spend)",
            "calls/month",
            f'=IF(price_per_call_usd*gross_margin>0,Monthly!{_COL["spend_usd"]}2/(price_per_call_usd*gross_margin),"")',
            usd,
            "C_1 / (price x margin)",
        ),
        (
            "calls_per_day",
            "Break-even calls per day",
            "calls/day",
            '=IF(ISNUMBER(calls_per_month),calls_per_month/days_per_month,"")',
            usd,
            "calls per month / days per month",
        ),
    )
    for k, (key, label, unit, formula, f, words) in enumerate(summary):
        r = 3 + k
        su.write(r, 0, label)
        su.write_formula(r, 1, formula, f)
        su.write(r, 2, unit)
        su.write(r, 3, words, note_fmt)
        wb.define_name(key, f"=Summary!$B${r + 1}")

    # chart: cumulative net (line) and monthly ROI (secondary axis)
    horizon_last = inputs.horizon_months + 1
    chart = wb.add_chart({"type": "line"})
    chart.add_series(
        {
            "name": "cumulative net [USD]",
            "categories": f"=Monthly!$A$2:$A${horizon_last}",
            "values": f"=Monthly!$I$2:$I${horizon_last}",
            "line": {"color": "#1f77b4", "width": 2.25},
        }
    )
    roi_line = wb.add_chart({"type": "line"})
    roi_line.add_series(
        {
            "name": "monthly ROI",
            "categories": f"=Monthly!$A$2:$A${horizon_last}",
            "values": f"=Monthly!${_COL['roi']}$2:${_COL['roi']}${horizon_last}",
            "y2_axis": True,
            "line": {"color": "#ff7f0e", "dash_type": "dash"},
        }
    )
    chart.combine(roi_line)
    chart.set_title({"name": "Cumulative net cash flow and monthly ROI"})
    chart.set_x_axis({"name": "month"})
    chart.set_y_axis({"name": "USD", "num_format": "#,##0"})
    roi_line.set_y2_axis({"name": "ROI", "num_format": "0%"})
    chart.set_size({"width": 760, "height": 380})
    su.insert_chart("A16", chart)
    wb.close()
    return buf.getvalue()


def write_roi_workbook(path: str | Path, inputs: WorkbookInputs) -> Path:
    """Write the ROI workbook atomically to ``path`` (see :func:`roi_workbook_bytes`)."""
    from aitco.decide.scenario import write_atomic

    p = Path(path)
    if p.suffix.lower() != ".xlsx":
        raise InputError("-o", str(path), "a path ending in .xlsx")
    write_atomic(p, roi_workbook_bytes(inputs))
    return p


def inputs_from_mapping(data: Mapping[str, Any], *, file: str | None = None) -> WorkbookInputs:
    """Validate ROI inputs with :class:`aitco.decide.roi.RoiInputs` and copy them."""
    from aitco.decide.roi import RoiInputs

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

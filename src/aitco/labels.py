"""Human labels (with units) of the JSON keys a person sees as table headers or axis titles.

One table shared by the terminal tables, the HTML and Markdown reports, the charts and the web
app, next to the glossary (``docs/glossary.md`` defines each key; this table only says how a key
is titled on screen). A test checks that every key a surface shows as a header has a label here.
"""

from __future__ import annotations

#: Display label of each key: plain words, the unit in brackets where the value has one.
LABELS: dict[str, str] = {
    # option headline values
    "name": "Option",
    "option": "Option",
    "total_usd": "Total [$]",
    "wall_clock_days": "Time to finish",
    "wall_clock_h": "Time to finish",
    "usd_per_month": "Cost per month [$/month]",
    "usd_per_month_used": "Used share per month [$/month]",
    "used_usd": "Used share [$]",
    "committed_term_unused_usd": "Unused commitment [$]",
    "p99_e2e_latency_s": "p99 end-to-end latency [s]",
    "e2e_latency_s": "End-to-end latency [s]",
    "p99_ttft_s": "p99 time to first token [ms]",
    "p50_ttft_s": "Median time to first token [ms]",
    "p50_tpot_s": "Median time per output token [ms]",
    "p99_tpot_s": "p99 time per output token [ms]",
    "ttft_s": "Time to first token [ms]",
    "tpot_s": "Time per output token [ms]",
    "usd_per_million_tokens": "Cost per million tokens [$/M tokens]",
    "usd_per_million_output_tokens": "Cost per million output tokens [$/M tokens]",
    "gpu_hours": "GPU-hours [GPU-h]",
    "goodput": "Goodput [% of time useful]",
    "energy_kwh": "Energy [kWh]",
    "kg_co2e": "Emissions [kg CO2e]",
    "tokens_per_s": "Throughput [tokens/s]",
    "tokens_per_s_per_gpu": "Throughput per GPU [tokens/s]",
    "price_usd_per_gpu_h": "Price per GPU-hour [$/GPU-h]",
    "effective_usd_per_gpu_h": "Effective cost per GPU-hour [$/GPU-h]",
    "feasible": "Feasible",
    "infeasible_reasons": "Why not feasible",
    "instances": "Instances",
    "gpus_billed": "GPUs billed",
    "offer_id": "Offer",
    "gpus": "GPUs",
    "hardware": "Hardware",
    "pricing": "Pricing",
    "latency_s": "Latency [s]",
    "mfu": "Model FLOPs utilisation [%]",
    "memory_per_gpu_gb": "Memory needed per GPU [GB]",
    "memory_capacity_gb": "Memory usable per GPU [GB]",
    # itemised breakdown columns
    "item": "Cost item",
    "category": "Category",
    "usd": "Cost [$]",
    "share": "Share of total [%]",
    "formula": "Formula",
    "inputs": "Inputs",
    "sources": "Sources",
    # ROI
    "payback_months": "Payback [months]",
    "npv_usd": "Net present value [$]",
    "irr_annual": "Internal rate of return [%/year]",
    "cumulative_roi": "Cumulative ROI [%]",
    "total_savings_usd": "Total savings [$]",
    "total_spend_usd": "Total spend [$]",
    "cumulative_usd": "Cumulative net cash flow [$]",
    "month": "Month",
}

#: Keys whose SI value reads in another unit on every surface (tables, cards, charts): the
#: latency of a token in milliseconds. JSON keeps the SI value (``ttft_s`` in seconds); a
#: surface shows ``value x scale`` under the label's unit. Key -> (unit, scale).
DISPLAY_UNITS: dict[str, tuple[str, float]] = {
    f"{stat}{what}_s": ("ms", 1e3)
    for stat in ("", "p50_", "p90_", "p95_", "p99_", "mean_", "median_")
    for what in ("ttft", "tpot", "itl")
}

#: Shorter labels for the summary cards, where the unit is in the value ($, h, days).
SHORT_LABELS: dict[str, str] = {
    "total_usd": "Total",
    "wall_clock_days": "Time to finish",
    "usd_per_month": "Per month",
    "usd_per_million_tokens": "Per million tokens",
}

#: Keys whose values are fractions 0-1, shown as percentages.
FRACTION_KEYS: frozenset[str] = frozenset(
    {"goodput", "share", "mfu", "irr_annual", "cumulative_roi", "utilization", "utilisation"}
)

#: Unit words of the key suffixes, for keys not in :data:`LABELS` (longest suffix first).
_SUFFIX_UNITS: tuple[tuple[str, str], ...] = (
    ("_usd_per_gpu_h", "$/GPU-h"),
    ("_usd_per_h", "$/h"),
    ("_tokens_per_s", "tokens/s"),
    ("_kg_co2e", "kg CO2e"),
    ("_tflops", "TFLOP/s"),
    ("_gb_s", "GB/s"),
    ("_months", "months"),
    ("_days", "days"),
    ("_usd", "$"),
    ("_kwh", "kWh"),
    ("_gb", "GB"),
    ("_ms", "ms"),
    ("_s", "s"),
    ("_h", "h"),
    ("_w", "W"),
)


def label(key: str) -> str:
    """Return the display label of ``key``: :data:`LABELS`, else words and the unit of its suffix.

    Examples
    --------
    >>> label("wall_clock_days")
    'Time to finish'
    >>> label("checkpoint_interval_h")
    'Checkpoint interval [h]'
    """
    if key in LABELS:
        return LABELS[key]
    base, unit = key, ""
    for suffix, u in _SUFFIX_UNITS:
        if key.endswith(suffix) and len(key) > len(suffix):
            base, unit = key[: -len(suffix)], u
            break
    unit = DISPLAY_UNITS[key][0] if key in DISPLAY_UNITS else unit
    words = base.replace("_", " ").strip()
    words = words[:1].upper() + words[1:]
    return f"{words} [{unit}]" if unit else words


def display_scale(key: str) -> float:
    """Factor from the SI value of ``key`` to its display unit (1 unless in DISPLAY_UNITS).

    Examples
    --------
    >>> display_scale("ttft_s"), display_scale("e2e_latency_s"), label("mean_itl_s")
    (1000.0, 1.0, 'Mean itl [ms]')
    """
    return DISPLAY_UNITS[key][1] if key in DISPLAY_UNITS else 1.0


def short_label(key: str) -> str:
    """Return the card label of ``key`` (:data:`SHORT_LABELS`, else :func:`label`)."""
    return SHORT_LABELS.get(key, label(key))


def category_label(category: str) -> str:
    """Display name of a cost category (``compute`` -> ``Compute``)."""
    return category.replace("_", " ").capitalize()

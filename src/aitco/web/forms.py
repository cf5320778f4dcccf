"""What the web form may send, in the form's words: plausible ranges, field labels, priceable pairs.

The API validates a scenario exactly as the CLI does (``Scenario.from_dict``).
This module adds what only a web form needs: ranges beyond which an input is a typo rather than a
plan (a 1e30-token run, 1e9 GPUs, NaN), the label of each field as the form shows it (so that an
error reads "GPUs (option 2) must be a whole number", not ``options.1.gpus``), and the pricing
modes each hardware can actually be priced with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aitco.cost.offers import ANY_PROVIDER, select_offer
from aitco.cost.pricing import OWNED as OWNED_PRICING
from aitco.errors import InputError, UnknownIdError
from aitco.limits import MAX_RUN_DAYS

if TYPE_CHECKING:
    from aitco.catalog.loader import Catalog
    from aitco.decide.scenario import Scenario


@dataclass(frozen=True)
class Range:
    """Plausible closed range of a form field and what it counts."""

    low: float
    high: float
    unit: str
    why: str


#: Plausible range of each numeric field the form sends (beyond it the input is refused with 422).
#: The upper ends are generous: 1e16 tokens is ~700x the 15e12 tokens of Llama 3 (Meta, 2024,
#: https://ai.meta.com/blog/meta-llama-3/); 1e6 GPUs is ~10x the largest announced clusters.
PLAUSIBLE: dict[str, Range] = {
    "workload.tokens": Range(1, 1e16, "tokens", "about 700x the largest published training run"),
    "workload.seq_len": Range(1, 1e7, "tokens", "a 10-million-token context"),
    "workload.global_batch": Range(1, 1e8, "sequences", "1e8 sequences per step"),
    "workload.input_tokens": Range(1, 1e7, "tokens", "a 10-million-token prompt"),
    "workload.output_tokens": Range(1, 1e7, "tokens", "10 million generated tokens"),
    "workload.qps": Range(0, 1e6, "requests/s", "a million requests per second"),
    "workload.months": Range(0, 120, "months", "ten years of service"),
    "options[].gpus": Range(1, 1e6, "GPUs", "about 10x the largest announced cluster"),
    "workload.slo_ttft_ms": Range(0.001, 3.6e6, "ms", "an hour to the first token"),
    "workload.slo_tpot_ms": Range(0.001, 6e4, "ms", "a minute per output token"),
    "compliance.gb_per_day": Range(0, 1e6, "GB/day", "a petabyte a day"),
    "compliance.retention_days": Range(0, 36525, "days", "a hundred years"),
}

#: Longest run an option may take before it is marked not feasible. [days] (limits.py)
MAX_PLAUSIBLE_DAYS = MAX_RUN_DAYS

#: (form input name, label) of each scenario field the form edits.
FORM_FIELDS: dict[str, tuple[str, str]] = {
    "name": ("name", "Name"),
    "workload.kind": ("kind", "Kind"),
    "workload.model": ("model", "Model"),
    "workload.precision": ("precision", "Precision"),
    "workload.tokens": ("tokens", "Tokens"),
    "workload.seq_len": ("seq_len", "Sequence length"),
    "workload.global_batch": ("global_batch", "Global batch"),
    "workload.input_tokens": ("input_tokens", "Input tokens"),
    "workload.output_tokens": ("output_tokens", "Output tokens"),
    "workload.qps": ("qps", "Requests/s"),
    "workload.months": ("months", "Months"),
    "options[].hardware": ("hardware", "Hardware"),
    "options[].gpus": ("gpus", "GPUs"),
    "options[].pricing": ("pricing", "Pricing"),
    "options[].provider": ("provider", "Provider"),
    "workload.slo_ttft_ms": ("slo_ttft_ms", "TTFT target"),
    "workload.slo_tpot_ms": ("slo_tpot_ms", "TPOT target"),
    "compliance.gb_per_day": ("log_gb_per_day", "Request logs kept"),
    "compliance.retention_days": ("log_retention_days", "Logs kept for"),
    "--precision": ("precision", "Precision"),
}

#: Pydantic's phrases and how the form says them.
_PHRASES: tuple[tuple[str, str], ...] = (
    ("Input should be a valid integer", "a whole number"),
    ("Input should be a valid number", "a number"),
    ("Input should be greater than or equal to", "at least"),
    ("Input should be greater than", "more than"),
    ("Input should be less than or equal to", "at most"),
    ("Input should be a finite number", "a finite number"),
    ("Field required", "a value"),
    ("Input should be", "one of"),
)

_OPTION_FIELD = re.compile(r"^options(?:\[(\d+)\]|\.(\d+))(?:\.(\w+))?")


def _walk(o: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(o, Mapping):
        for k, v in o.items():
            yield from _walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path, o


def _generic(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


def check_plausible(body: Any) -> None:
    """Refuse non-finite numbers anywhere and numbers outside :data:`PLAUSIBLE`.

    Raises
    ------
    InputError
        Naming the field (``workload.tokens``, ``options[1].gpus``), the value and the range.
    """
    for path, v in _walk(body):
        if isinstance(v, bool) or not isinstance(v, int | float):
            continue
        if not math.isfinite(v):
            raise InputError(path, str(v), "a finite number")
        rng = PLAUSIBLE.get(_generic(path))
        if rng is not None and not rng.low <= v <= rng.high:
            raise InputError(
                path,
                v,
                f"between {rng.low:g} and {rng.high:g} {rng.unit}",
                hint=f"the upper end is {rng.why}",
            )


def form_field(field: str) -> dict[str, Any]:
    """Where an error's field is on the form: ``{input, row, label}`` (row 0-based or None).

    Examples
    --------
    >>> form_field("options.1.gpus")
    {'input': 'gpus', 'row': 1, 'label': 'GPUs (option 2)'}
    >>> form_field("workload.tokens")
    {'input': 'tokens', 'row': None, 'label': 'Tokens'}
    """
    m = _OPTION_FIELD.match(field)
    if m:
        row = int(m.group(1) or m.group(2))
        sub = m.group(3) or "hardware"
        name, lab = FORM_FIELDS.get(f"options[].{sub}", (sub, sub.replace("_", " ")))
        return {"input": name, "row": row, "label": f"{lab} (option {row + 1})"}
    if field in FORM_FIELDS:
        name, lab = FORM_FIELDS[field]
        return {"input": name, "row": None, "label": lab}
    tail = field.rsplit(".", 1)[-1].lstrip("-")
    for name, lab in FORM_FIELDS.values():
        if name == tail:
            return {"input": name, "row": None, "label": lab}
    return {"input": None, "row": None, "label": field}


def plain_expected(expected: str) -> str:
    """Say pydantic's expectation in the form's words ("Input should be a valid integer")."""
    out = expected
    for a, b in _PHRASES:
        out = out.replace(a, b)
    return out


def form_message(err: Mapping[str, Any]) -> str:
    """Return one sentence for a person, e.g. ``GPUs (option 2) must be at least 1 (got 0).``."""
    where = form_field(str(err.get("field", "")))
    value = err.get("value")
    got = "empty" if value in (None, "", "None") else f"got {value}"
    text = f"{where['label']} must be {plain_expected(str(err.get('expected', '')))} ({got})."
    hint = str(err.get("hint") or "")
    if hint and form_can_follow(hint):
        first = hint.split(" ", 1)[0]
        is_id = any(ch.isdigit() or ch == "-" for ch in first)  # an id keeps its case
        text += f" {hint if is_id else hint[:1].upper() + hint[1:]}."
    return text


def form_can_follow(hint: str) -> bool:
    """Return False when a hint names a CLI flag or a scenario field the form does not have."""
    if re.search(r"(^|\s)--\w", hint) or "aitco " in hint:
        return False
    inputs = {name for name, _label in FORM_FIELDS.values()}
    for m in re.finditer(r"options\[\d+\]\.(\w+)|workload\.(\w+)", hint):
        if (m.group(1) or m.group(2)) not in inputs:
            return False
    return True


def _accelerator_id(catalog: Any, hw_id: str) -> str:
    if hw_id in catalog.systems:
        return str(getattr(catalog.systems[hw_id], "accelerator", hw_id))
    return hw_id


def _has_purchase_price(catalog: Any, hw_id: str) -> bool:
    acc = catalog.accelerators.get(_accelerator_id(catalog, hw_id))
    sysm = catalog.systems.get(hw_id)
    return (acc is not None and acc.price is not None) or (
        sysm is not None and getattr(sysm, "price", None) is not None
    )


def priceable_pricing(catalog: Any, hw_id: str, modes: list[str]) -> list[str]:
    """Pricing modes ``hw_id`` can be priced with by some offer, and owned modes with a price."""
    terms = {p.term for o in catalog.offers_for(_accelerator_id(catalog, hw_id)) for p in o.prices}
    owned = _has_purchase_price(catalog, hw_id)
    return [m for m in modes if m in terms or (owned and m in OWNED_PRICING)]


def providers_for(catalog: Any, hw_id: str) -> list[str]:
    """Return the providers with an offer of ``hw_id``'s accelerator, sorted."""
    return sorted({o.provider for o in catalog.offers_for(_accelerator_id(catalog, hw_id))})


def pricing_check(
    catalog: Any, hw_id: str, gpus: int, provider: str | None, modes: list[str]
) -> dict[str, str]:
    """Why each pricing mode cannot price ``gpus`` x ``hw_id`` on ``provider`` ("" when it can).

    The offer is chosen by :func:`aitco.cost.offers.select_offer`, the function ``compare``
    prices with, so the form offers exactly what the comparison can price: a mode is refused
    when no offer sells it, when the provider's home instance type does not sell it (on-demand,
    spot and committed come from one instance type unless the provider is ``any``), or when no
    offer can hold the job (a multi-node job needs a cluster network). Owned modes need a
    purchase price.

    Parameters
    ----------
    catalog : aitco.catalog.loader.Catalog
        The catalog.
    hw_id : str
        Accelerator or system id.
    gpus : int
        Accelerators of the option (of one replica for a service). [count]
    provider : str or None
        ``None`` or ``""``: one home instance type of any provider; ``"any"``: the cheapest
        offer of any provider for each mode; else a provider id.
    modes : list of str
        Pricing modes to check.

    Returns
    -------
    dict
        Mode -> reason it cannot be priced, ``""`` when it can.
    """
    out: dict[str, str] = {}
    offers = catalog.offers_for(_accelerator_id(catalog, hw_id))
    prov = provider or None
    if prov not in (None, ANY_PROVIDER):
        offers = [o for o in offers if o.provider == prov]
    n = max(1, int(gpus))
    for mode in modes:
        if mode in OWNED_PRICING:
            ok = _has_purchase_price(catalog, hw_id)
            out[mode] = "" if ok else f"no purchase price for {hw_id} in the catalog"
            continue
        choice = select_offer(offers, mode, n, unit_gpus=n, provider=prov)
        if choice is None:
            where = f" from {prov}" if prov not in (None, ANY_PROVIDER) else ""
            out[mode] = f"no {mode.replace('_', ' ')} price for {hw_id}{where}"
        elif not choice.eligible:
            out[mode] = "; ".join(choice.reasons)
        else:
            out[mode] = ""
    return out


@dataclass(frozen=True)
class FormRow:
    """One row of the page's option table: hardware, GPUs, provider and the pricing modes ticked.

    A row stands for one option per ticked mode (``hardware xGPUS mode``); the provider applies
    to the rented modes (``""``: one home instance type of any provider).
    """

    hardware: str
    gpus: int
    provider: str
    pricing: tuple[str, ...]


def form_rows(scenario: Any) -> list[FormRow]:
    """Group a scenario's options into the page's rows (hardware, GPUs, provider of rented modes).

    Options that name an offer, a region or a price override cannot be shown on the form.

    Raises
    ------
    InputError
        An option the form has no field for.
    """
    rows: dict[tuple[str, int], tuple[str, list[str]]] = {}
    for k, opt in enumerate(scenario.options):
        extra = [f for f in ("offer", "region", "usd_per_gpu_hour") if getattr(opt, f) is not None]
        if extra:
            raise InputError(f"options[{k}].{extra[0]}", getattr(opt, extra[0]), "no such field")
        key = (opt.hardware, opt.gpus)
        provider, modes = rows.get(key, ("", []))
        if opt.pricing not in OWNED_PRICING and opt.provider:
            rented = [m for m in modes if m not in OWNED_PRICING]
            if rented and provider != opt.provider:
                raise InputError(
                    f"options[{k}].provider", opt.provider, f"{provider or 'none'} (as its row)"
                )
            provider = opt.provider
        rows[key] = (provider, [*modes, opt.pricing])
    return [FormRow(hw, n, prov, tuple(modes)) for (hw, n), (prov, modes) in rows.items()]


def options_from_rows(rows: list[FormRow]) -> list[dict[str, Any]]:
    """Return the scenario options of the page's rows, as ``app.js`` builds them."""
    return [
        {
            "hardware": r.hardware,
            "gpus": r.gpus,
            "pricing": mode,
            **({"provider": r.provider} if r.provider and mode not in OWNED_PRICING else {}),
        }
        for r in rows
        if r.hardware
        for mode in r.pricing
    ]


def check_web_scenario(scen: Scenario, catalog: Catalog) -> None:
    """Refuse what a web request may not ask of the server: reading files.

    The CLI accepts a model as a ``config.json``/YAML path, a calibration profile path and a
    load profile CSV path; a web request may only name catalog ids and send a load profile as
    its 24 hourly rates, so that no request makes the server open its own files. The fields
    are those of :meth:`Scenario.file_references` (the one list of path-like fields).

    Raises
    ------
    InputError
        A path-like field is set (a model that is not a catalog id: with the closest ids).
    """
    for where, value in scen.file_references(catalog.models):
        if where.endswith(".model"):
            raise UnknownIdError("model", value, catalog.models, field=where)
        what = "a load profile as 24 hourly rates or 'diurnal'" if "load_profile" in where else ""
        raise InputError(
            where,
            value,
            f"{what or 'no file path'} in a web request (the server reads no files)",
            hint=f"use the CLI: aitco compare SCENARIO (with {where.rsplit('.', 1)[-1]}: FILE)",
        )

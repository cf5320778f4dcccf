"""``aitco audit LOG.jsonl --price PROVIDER/MODEL``: where a token-API bill goes to waste.

Also ``aitco api-prices``: the token-API price catalog with dates and sources.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from aitco.audit import genai
from aitco.audit.audit import (
    SECONDS_PER_MONTH,
    AuditOptions,
    AuditPrice,
    AuditResult,
    audit_log,
)
from aitco.audit.log import iter_lines, parse_response
from aitco.audit.tokenizers import resolve_tokenizer
from aitco.catalog.loader import Catalog
from aitco.catalog.schema import ApiPrice
from aitco.cli import state
from aitco.cli.render import (
    PRICING_MODES,
    console,
    err_console,
    fmt,
    print_explain,
    print_json,
    table,
)
from aitco.errors import InputError, UnknownIdError
from aitco.fileio import check_input_file
from aitco.limits import MAX_TOKENS, first_non_finite
from aitco.units import MEGA, SECONDS_PER_DAY

#: Lines read to guess the model when ``--price`` is not given.
_SNIFF_LINES = 1000


def _short_model(name: str) -> str:
    return name.lower().rsplit("/", 1)[-1]


_SNAPSHOT_RE = re.compile(r"^[-@](\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|v\d+(:\d+)?)$")


def model_matches(price_model: str, seen_model: str) -> bool:
    """Whether a model name from a log is the catalog model or a dated snapshot of it.

    ``gpt-4o-2024-08-06`` matches ``gpt-4o``; ``gpt-4o-mini`` and ``claude-sonnet-4-5`` do not
    match ``gpt-4o`` and ``claude-sonnet-4``.
    """
    p, s = _short_model(price_model), _short_model(seen_model)
    return s == p or (s.startswith(p) and _SNAPSHOT_RE.match(s[len(p) :]) is not None)


def resolve_price(cat: Catalog, spec: str) -> ApiPrice:
    """Find a catalog API price by id (``openai/gpt-4o``) or, failing that, by unique model name."""
    if spec in cat.apis:
        return cat.apis[spec]
    by_model = [a for a in cat.apis.values() if _short_model(a.model) == _short_model(spec)]
    if len(by_model) == 1:
        return by_model[0]
    raise UnknownIdError("API price", spec, cat.apis, field="--price")


def infer_price(cat: Catalog, log: Path) -> ApiPrice:
    """Guess the catalog price from the first model named in the log (longest name match)."""
    for i, (line_no, raw) in enumerate(iter_lines(log)):
        if i >= _SNIFF_LINES:
            break
        try:
            rec = parse_response(json.loads(raw), line_no)
        except Exception:
            continue
        if not rec.model:
            continue
        hits = [a for a in cat.apis.values() if model_matches(a.model, rec.model)]
        if hits:
            return max(hits, key=lambda a: len(a.model))
        raise InputError(
            "--price",
            None,
            f"a PROVIDER/MODEL id (the log's model {rec.model!r} is not in the API price catalog)",
            hint="see `aitco api-prices`",
        )
    raise InputError(
        "--price",
        None,
        "a PROVIDER/MODEL id (no model named in the log)",
        hint="see `aitco api-prices`",
    )


_PRICE_SOURCES = ("auto", "genai-prices", "catalog")


def _genai_resolver(source: str) -> genai.GenaiResolver | None:
    """Return the genai-prices resolver for ``--price-source`` (None: the shipped table)."""
    if source not in _PRICE_SOURCES:
        raise InputError("--price-source", source, f"one of {', '.join(_PRICE_SOURCES)}")
    if source == "catalog":
        return None
    if genai.module() is None:
        if source == "genai-prices":
            raise InputError(
                "--price-source",
                source,
                "genai-prices installed (pip install 'aitco[audit]'), or --price-source catalog",
            )
        return None
    return genai.GenaiResolver()


def _catalog_resolver(cat: Catalog) -> Callable[[str | None], AuditPrice | None]:
    """Price each request at its own model's catalog price; a model with none is an error."""

    def resolve(model: str | None) -> AuditPrice | None:
        if model is None:
            return None
        hits = [a for a in cat.apis.values() if model_matches(a.model, model)]
        if not hits:
            raise InputError(
                "model",
                model,
                "a model with a price in the API catalog (a request would otherwise be priced "
                "at another model's price)",
                hint="pass --price PROVIDER/MODEL to price every request at one price, or add "
                "the model with --catalog",
            )
        return AuditPrice.from_api_price(max(hits, key=lambda a: len(a.model)))

    return resolve


def _render(out: dict[str, Any]) -> None:
    p = out["price"]
    tok = out["tokenizer"]
    console.print(
        f"[bold]Bill audit[/bold] at [cyan]{p['id']}[/cyan] "
        f"(${fmt(p['input_usd_per_mtok'])} in / ${fmt(p['cached_input_usd_per_mtok'])} cached / "
        f"${fmt(p['output_usd_per_mtok'])} out per Mtok{', batch' if p['batch'] else ''}; "
        f"as of {p['as_of']})",
        highlight=False,
    )
    used = out.get("prices_used", {})
    if out.get("pricing") == "per_model" and len(used) > 1:
        for pid, q in used.items():
            console.print(
                f"  priced per model: [cyan]{pid}[/cyan] ${fmt(q['input_usd_per_mtok'])} / "
                f"${fmt(q['cached_input_usd_per_mtok'])} / ${fmt(q['output_usd_per_mtok'])} "
                f"(as of {q['as_of']}): billed ${q['billed_usd']:,.4f}",
                highlight=False,
            )
    elif p.get("source"):
        console.print(f"  [dim]price source: {p['source']}[/dim]", highlight=False)
    label = " [yellow](APPROXIMATE)[/yellow]" if tok["approximate"] else ""
    console.print(
        f"  [dim]tokenizer: {tok['name']}{label} — {tok['source']}[/dim]", highlight=False
    )
    rows = []
    for c in out["causes"]:
        rows.append(
            [
                c["name"] + ("" if c["tokens_are_waste"] else " *"),
                c["count"],
                c["tokens"],
                f"{c['token_share']:.1%}",
                f"${c['usd']:,.4f}",
                f"{c['share']:.1%}",
            ]
        )
    rows.append(
        [
            "[bold]total waste[/bold]",
            "",
            out["waste_tokens"],
            "",
            f"${out['waste_usd']:,.4f}",
            f"{out['waste_share']:.1%}",
        ]
    )
    console.print(
        table(
            f"Billed {fmt(out['billed_tokens'])} tokens (${out['billed_usd']:,.4f}); "
            f"useful {fmt(out['useful_tokens'])}",
            ["cause", "requests", "tokens", "of tokens", "USD", "of bill"],
            rows,
            caption="* over-priced, not wasted: repeated prefixes billed at full input price "
            "(not subtracted from useful tokens)",
        )
    )
    rq = out["requests"]
    console.print(
        f"Attempts {fmt(rq['attempts'])} for {fmt(rq['logical_requests'])} requests: "
        f"retry amplification {fmt(rq['retry_amplification'])}x, "
        f"token amplification {fmt(rq['token_amplification'])}x; "
        f"failed {fmt(rq['failed'])} (timed out {fmt(rq['timed_out'])}); "
        f"outputs truncated and kept {fmt(rq['truncated_kept'])}",
        highlight=False,
    )
    worst = sorted(
        ((c["name"], e) for c in out["causes"] for e in c["examples"]), key=lambda t: -t[1]["usd"]
    )[:8]
    if worst:
        console.print(
            table(
                "Worst requests",
                ["cause", "line", "id", "tokens", "USD"],
                [
                    [n, str(e["line"]), str(e["id"]), e["tokens"], f"${e['usd']:,.6f}"]
                    for n, e in worst
                ],
            )
        )
    sk = out["skipped_lines"]
    if sk["malformed"] or sk["without_usage"]:
        lines = ", ".join(str(m["line"]) for m in sk["malformed_examples"][:10])
        console.print(
            f"[yellow]Skipped {sk['malformed']} malformed line(s)[/yellow]"
            + (f" (lines {lines}{', ...' if sk['malformed'] > 10 else ''})" if lines else "")
            + f"; {sk['without_usage']} response(s) without usage (billing unknown).",
            highlight=False,
        )
    if out.get("price_model_mismatch"):
        console.print(
            f"[yellow]Warning: the log names other models than {p['model']}: "
            f"{', '.join(out['price_model_mismatch'][:5])}[/yellow]",
            highlight=False,
        )
    sh = out.get("self_host")
    if sh:
        console.print(
            table(
                f"Self-hosting {sh['model']} on {sh['total_gpus']} x {sh['accelerator']} "
                f"({sh['pricing']})",
                ["", "API (billed)", "self-hosted"],
                [
                    ["USD per month", sh["api_usd_per_month"], sh["self_host_usd_per_month"]],
                    [
                        "USD per million tokens",
                        sh["api_usd_per_million_tokens"],
                        sh["self_host_usd_per_million_tokens"],
                    ],
                ],
                caption=f"{sh['note']}; cheaper: {sh['cheaper']}; break-even at "
                f"{fmt(sh['breakeven_requests_per_s'])} req/s (capacity "
                f"{fmt(sh['requests_per_s_capacity'])} req/s)"
                + (f"; {sh['scaled']}" if sh.get("scaled") else ""),
            )
        )
    ex = out.get("exports")
    if ex:
        u = ex["usage_api"]
        console.print(
            f"Usage API export: {fmt(u['input_tokens'])} input "
            f"({fmt(u['input_cached_tokens'])} cached), "
            f"{fmt(u['output_tokens'])} output tokens, {fmt(u['num_model_requests'])} requests; "
            f"Costs API: {ex['costs_api']['by_currency']}"
            + (
                f"; usage priced ${ex['expected_usd_from_usage']:,.4f}"
                if "expected_usd_from_usage" in ex
                else ""
            ),
            highlight=False,
        )


def audit_cmd(
    log: Annotated[
        Path,
        typer.Argument(
            metavar="LOG.jsonl", help="JSONL of API responses (and/or Usage/Costs API pages)."
        ),
    ],
    price: Annotated[
        str | None,
        typer.Option(
            "--price",
            metavar="PROVIDER/MODEL",
            help="API price id (see `aitco api-prices`); when absent, each request is priced "
            "at its own model's catalog price.",
        ),
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            "--tokenizer",
            metavar="PATH",
            help="Local tokenizer.json / .tiktoken file, or o200k_base|cl100k_base|approx.",
        ),
    ] = None,
    batch: Annotated[
        bool, typer.Option("--batch", help="Price at the batch-API discount.")
    ] = False,
    cache_ttl_s: Annotated[
        float,
        typer.Option(
            "--cache-ttl-s",
            help="Prompt-cache lifetime assumed for missed-cache savings, in seconds "
            "(0 = no limit).",
        ),
    ] = 300.0,
    estimate_unlogged: Annotated[
        bool,
        typer.Option(
            "--estimate-unlogged",
            help="Bill failed/timed-out calls logged without usage at their re-tokenised prompt "
            "(an estimate; needs the request in the log).",
        ),
    ] = False,
    self_host: Annotated[
        str | None,
        typer.Option(
            "--self-host",
            metavar="HARDWARE",
            help="Also price serving the same traffic on this accelerator/system id.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Open model to self-host (catalog id or config.json)."),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option("--gpus", min=1, help="GPUs to self-host on (default: one node)."),
    ] = None,
    pricing: Annotated[
        str,
        typer.Option(
            "--pricing",
            help=f"Pricing of the self-hosted GPUs: {PRICING_MODES}.",
        ),
    ] = "on_demand",
    period_days: Annotated[
        float | None,
        typer.Option(
            "--period-days", help="Days the log covers (default: from its created times)."
        ),
    ] = None,
    price_source: Annotated[
        str,
        typer.Option(
            "--price-source",
            help="auto (genai-prices when installed, else the shipped table), genai-prices "
            "or catalog. genai-prices prices each request at the rate in force on its date, "
            "at its prompt's long-context tier, with cache-write premiums (per-model mode).",
        ),
    ] = "auto",
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show how each cause was priced.")
    ] = False,
) -> None:
    """Audit a token-API bill: billed vs useful tokens and the waste per cause."""
    check_input_file(log, field="LOG")  # a regular file: no FIFO, no device
    if cache_ttl_s < 0:
        raise InputError("--cache-ttl-s", cache_ttl_s, "a non-negative number of seconds")
    cat = state.catalog()
    # an empty --price is an id like any other (and unknown), not "no --price"
    api = resolve_price(cat, price) if price is not None else infer_price(cat, log)
    ap = AuditPrice.from_api_price(api)
    tok = resolve_tokenizer(tokenizer, model=api.model)
    opts = AuditOptions(
        batch=batch, cache_ttl_s=cache_ttl_s or None, estimate_unlogged=estimate_unlogged
    )
    if batch and not api.batch_discount:
        err_console.print(
            f"[yellow]{api.id} has no batch discount in the catalog; list prices used[/yellow]"
        )
    resolver = None if price else _catalog_resolver(cat)
    price_at = None if price else _genai_resolver(price_source)
    res = audit_log(log, ap, tok, opts, price_for=resolver, price_at=price_at)
    out = res.to_json()
    _check_read_something(log, out)
    out["pricing"] = "single" if price else "per_model"
    out["price_source"] = (
        f"{genai.PACKAGE} {genai.version()}" if price_at is not None else "catalog"
    )
    mismatch = [m for m in out["models_seen"] if not model_matches(api.model, m)]
    if mismatch and price:
        out["price_model_mismatch"] = mismatch
    if self_host:
        if period_days is not None and period_days <= 0:
            raise InputError("--period-days", period_days, "a positive number of days")
        period_s = period_days * SECONDS_PER_DAY if period_days is not None else None
        out["self_host"] = self_host_comparison(
            cat, res, self_host, model, gpus=gpus, pricing=pricing, period_s=period_s
        )
    if json_out:
        print_json(out)
        return
    _render(out)
    if explain:
        print_explain(res.to_estimate())


def _check_read_something(log: Path, out: dict[str, Any]) -> None:
    """Refuse an audit that parsed no record, or whose totals overflowed (exit 2, one line)."""
    sk = out["skipped_lines"]
    if not sk["records"] and not sk["export_pages"]:
        raise InputError(
            "LOG",
            str(log),
            "a JSONL log of API responses with usage (no line parsed: "
            f"{sk['total_lines']} lines, {sk['malformed']} malformed, {sk['blank']} blank)",
        )
    bad = first_non_finite(out)
    if bad is not None:
        raise InputError(
            bad[0],
            bad[1],
            f"a finite total: a usage count in {log} is out of range "
            f"(at most {MAX_TOKENS:g} tokens)",
        )


#: Shortest log span a request rate is derived from (a shorter log needs --period-days).
MIN_SPAN_S = 60.0


def self_host_comparison(
    cat: Catalog,
    res: AuditResult,
    hardware: str,
    model: str | None,
    *,
    gpus: int | None = None,
    pricing: str = "on_demand",
    period_s: float | None = None,
) -> dict[str, Any]:
    """Price serving the log's billed traffic on ``hardware`` against the API bill, per month.

    The traffic is the billed one (every attempt, at the mean prompt and output lengths of the
    log, at attempts / span requests per second): the client's retries and truncations happen
    whoever serves it. The self-hosted side is priced by :func:`aitco.decide.compare.compare`
    (inference engine + TCO items) for one month; prefix caching on the self-hosted side is not
    modelled, so its cost is an upper bound in that respect.
    """
    if model is None:
        raise InputError(
            "--model",
            None,
            "an open model to serve with --self-host (catalog id or config.json)",
            hint="e.g. --model llama-3.3-70b",
        )
    tr = res.traffic(period_s)
    if tr["span_s"] is None or tr["span_s"] < MIN_SPAN_S or not tr["requests_per_s"]:
        raise InputError(
            "--period-days",
            None,
            "the period the log covers (the log's created times span "
            f"{tr['span_s'] or 0:.0f} s, too short to derive a request rate)",
        )
    from aitco.decide.compare import compare
    from aitco.decide.scenario import HardwareOption, InferenceWorkload, Scenario

    acc, sysm = cat.hardware(hardware, field="--self-host")
    cat.resolve_model(model, field="--model")
    n = gpus or sysm.devices_per_node
    scn = Scenario(
        name="self-host",
        workload=InferenceWorkload(
            model=model,
            input_tokens=max(1, round(tr["mean_input_tokens"])),
            output_tokens=max(1, round(tr["mean_output_tokens"])),
            qps=tr["requests_per_s"],
            months=1.0,
        ),
        options=[HardwareOption(hardware=hardware, gpus=n, pricing=pricing)],
    )
    b = compare(scn, cat).options[0]
    api_month = tr["billed_usd_per_month"]
    useful_month = api_month * (1 - res.to_json()["waste_share"]) if api_month else None
    host_month = b.total_usd
    top = sorted(b.items, key=lambda i: -i.usd)[:6]
    # request rate at which the API bill would equal this self-hosted month (same GPUs)
    usd_per_request = res.billed_usd / res.attempts if res.attempts else None
    capacity = b.values.get("requests_per_s_capacity")
    breakeven = host_month / (usd_per_request * SECONDS_PER_MONTH) if usd_per_request else None
    return {
        "hardware": hardware,
        "accelerator": acc.id,
        "model": model,
        "pricing": pricing,
        "total_gpus": b.gpus,
        "fits": b.values.get("fits"),
        "scaled": b.values.get("scaled"),
        "utilization": b.values.get("utilization"),
        "traffic": tr,
        "self_host_usd_per_month": host_month,
        "api_usd_per_month": api_month,
        "api_useful_usd_per_month": useful_month,
        "self_host_usd_per_million_tokens": b.values.get("usd_per_million_tokens"),
        "api_usd_per_million_tokens": res.billed_usd / res.billed_tokens * MEGA
        if res.billed_tokens
        else None,
        "cheaper": "self_host" if api_month and host_month < api_month else "api",
        "self_host_to_api_ratio": host_month / api_month if api_month else None,
        "breakeven_requests_per_s": breakeven,
        "requests_per_s_capacity": capacity,
        "breakeven_within_capacity": (breakeven <= capacity)
        if breakeven is not None and isinstance(capacity, int | float)
        else None,
        "top_items": [{"name": i.name, "usd": i.usd, "category": i.category} for i in top],
        "note": "same billed traffic, one month; self-hosted prefix caching not modelled",
    }


def api_prices_cmd(
    provider: Annotated[str | None, typer.Option("--provider", help="Only this provider.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List token-API prices (per million tokens) with their date and source."""
    cat = state.catalog()
    live = genai.module() is not None
    rows = []
    for a in sorted(cat.apis.values(), key=lambda a: a.id):
        if provider and a.provider != provider:
            continue
        ap = AuditPrice.from_api_price(a)
        rows.append(
            {
                "id": a.id,
                "provider": a.provider,
                "model": a.model,
                "input_usd_per_mtok": a.input_usd_per_mtok,
                "cached_input_usd_per_mtok": a.cached_input_usd_per_mtok,
                "output_usd_per_mtok": a.output_usd_per_mtok,
                "batch_discount": a.batch_discount,
                "context_window": a.context_window,
                "as_of": a.as_of.isoformat(),
                "source": ap.source,
                "genai_prices": genai.current_rates(a.model, a.provider) if live else None,
            }
        )
    if provider and not rows:
        raise UnknownIdError(
            "API provider", provider, {a.provider for a in cat.apis.values()}, field="--provider"
        )
    if json_out:
        print_json(
            {
                "count": len(rows),
                "price_source": f"{genai.PACKAGE} {genai.version()}" if live else "catalog",
                "prices": rows,
            }
        )
        return
    cols = [
        "id",
        "input_usd_per_mtok",
        "cached_input_usd_per_mtok",
        "output_usd_per_mtok",
        "batch_discount",
        "context_window",
        "as_of",
    ]
    t = table(
        f"Token-API prices (USD per million tokens, {len(rows)})",
        ["id", "input", "cached", "output", "batch off", "context", "as of"],
        [[r[c] for c in cols] for r in rows],
        caption="`aitco catalog show ID` prints every value with its source",
    )
    t.columns[0].no_wrap = True
    console.print(t)


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``audit`` and ``api-prices``."""
    app.command("audit")(audit_cmd)
    app.command("api-prices")(api_prices_cmd)

"""``aitco catalog list|show|sources|check|import``: browse, check and extend the catalog."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import yaml

from aitco.catalog import remote
from aitco.catalog import update as upd
from aitco.catalog.history import catalog_as_of, price_trends
from aitco.catalog.loader import catalog_json, load_catalog
from aitco.catalog.schema import KINDS, Entry
from aitco.catalog.skypilot import DEFAULT_CLOUDS, SKYPILOT_BASE_URL, overlay_document
from aitco.catalog.staleness import (
    DEFAULT_STALE_MONTHS,
    PRICE_KINDS,
    dated_values,
    home_page_values,
    oldest_line,
    stale_counts,
    stale_values,
)
from aitco.cli import state
from aitco.cli.render import console, print_json, table
from aitco.errors import InputError, UnknownIdError
from aitco.fileio import check_output, update_in_place, write_atomic

catalog_app = typer.Typer(
    help="Browse the catalog: every value with its source and date.", no_args_is_help=True
)

_SUMMARY: dict[str, tuple[str, ...]] = {
    "accelerators": (
        "vendor",
        "memory_gb",
        "hbm_bandwidth_gb_s",
        "peak_tflops.bf16",
        "tdp_w",
        "launch_year",
    ),
    "systems": (
        "accelerator",
        "devices_per_node",
        "intra_node_fabric",
        "intra_node_bandwidth_gb_s",
        "scale_out_bandwidth_gb_s",
    ),
    "offers": ("provider", "instance", "accelerator", "accelerators_per_instance"),
    "models": ("family", "n_layers", "d_model", "n_heads", "vocab_size", "published_params_b"),
    "factors": ("category", "value", "unit", "region"),
    "apis": ("provider", "model", "input_usd_per_mtok", "output_usd_per_mtok", "as_of"),
    "presets": ("description",),
}
_ALIASES = {k.rstrip("s"): k for k in KINDS} | {
    "clouds": "offers",
    "api": "apis",
    "hardware": "accelerators",
}


def _kind(kind: str) -> str:
    k = _ALIASES.get(kind, kind)
    if k not in KINDS:
        raise UnknownIdError("catalog kind", kind, list(KINDS), field="KIND")
    return k


def _summary(entry: Entry, kind: str) -> dict[str, Any]:
    vals = entry.values()
    row: dict[str, Any] = {"id": entry.id, "name": entry.name}
    for col in _SUMMARY[kind]:
        row[col] = vals.get(col)
    if kind == "offers":
        row["prices"] = [p.model_dump(mode="json") for p in entry.prices]  # type: ignore[attr-defined]
    return row


@catalog_app.command("list")
def list_cmd(
    kind: Annotated[str, typer.Argument(help=f"One of: {', '.join(KINDS)}.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the entries of one kind."""
    k = _kind(kind)
    cat = state.catalog()
    entries = list(cat.kind(k).values())
    rows = [_summary(e, k) for e in entries]
    if json_out:
        print_json({"kind": k, "count": len(rows), "entries": rows})
        return
    cols = ["id", *_SUMMARY[k]]
    console.print(table(f"{k} ({len(rows)})", cols, [[r.get(c) for c in cols] for r in rows]))


@catalog_app.command("show")
def show_cmd(
    entry_id: Annotated[str, typer.Argument(metavar="ID", help="Any catalog id.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show every value of one entry with its source and date."""
    cat = state.catalog()
    kind, entry = cat.find(entry_id)
    data = catalog_json(entry)
    data["kind"] = kind
    trends = price_trends(entry)
    if trends:
        data["price_trends"] = trends
    if json_out:
        print_json(data)
        return
    rows = [
        [
            r["field"],
            _short(r["value"]),
            r["source_key"] or "-",
            r["retrieved"] or "-",
            r["note"] or "",
        ]
        for r in data["values"]
    ]
    console.print(
        table(
            f"{entry.id} ({kind}) {entry.name}",
            ["field", "value", "source", "retrieved", "note"],
            rows,
        )
    )
    for t in trends:
        console.print(_trend_line(t), highlight=False)
    keys = sorted({r["source_key"] for r in data["values"] if r["source_key"]})
    for key in keys:
        console.print(f"  [dim]{key}[/dim]: {cat.sources[key].cite()}", highlight=False)


def _usd(x: float) -> str:
    """Format a price of a trend: cents below $1,000, whole dollars above."""
    return f"${x:,.0f}" if x >= 1000 else f"${x:,.4g}"


def _trend_line(t: dict[str, Any]) -> str:
    """One line of a price series: its dated quotes and the fitted change per year."""
    quotes = " -> ".join(f"{_usd(q['usd'])} ({q['as_of']})" for q in t["quotes"])
    rate = t["change_fraction_per_year"]
    fit = f"; trend {rate:+.1%}/year over {t['span_years']:.1f} years" if rate is not None else ""
    return f"price trend {t['series']}: {quotes}: {t['change_fraction']:+.1%}{fit}"


def _short(v: Any) -> str:
    s = str(v)
    return s if len(s) <= 60 else s[:57] + "..."


@catalog_app.command("sources")
def sources_cmd(
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the bibliography the catalog cites."""
    cat = state.catalog()
    rows = [s.model_dump(mode="json") for s in cat.sources.values()]
    if json_out:
        print_json({"count": len(rows), "sources": rows})
        return
    console.print(
        table(
            "sources",
            ["key", "title", "retrieved"],
            [[r["key"], r["title"], r["retrieved"]] for r in rows],
        )
    )


@catalog_app.command("check")
def check_cmd(
    files: Annotated[
        list[str] | None, typer.Argument(help="Overlay YAML files to validate (optional).")
    ] = None,
    stale_months: Annotated[
        float,
        typer.Option(
            "--stale-months",
            min=0,
            help="List prices and factors older than this many months, by kind.",
        ),
    ] = DEFAULT_STALE_MONTHS,
    max_age_months: Annotated[
        float | None,
        typer.Option(
            "--max-age-months",
            min=0,
            help="Exit 1 when any price (cloud, accelerator, node, token API) is older than this "
            "many months: a check for CI pipelines.",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Validate overlay files against the schema and list the values older than N months."""
    files = files or []
    cat = load_catalog([*state.overlays(), *files])
    day = state.as_of()
    if day is not None:
        cat = catalog_as_of(cat, day)
    counts = {k: len(cat.kind(k)) for k in KINDS}
    stale = stale_values(cat, stale_months=stale_months)
    by_kind = stale_counts(stale)
    dated = stale_counts(dated_values(cat))
    estimated = sum(1 for v in stale if v.as_of_estimated)
    home = home_page_values(cat)
    prices = sorted((v for v in dated_values(cat) if v.kind in PRICE_KINDS), key=lambda v: v.as_of)
    oldest = prices[0].to_json() if prices else None
    too_old = (
        [v for v in prices if v.age_months > max_age_months] if max_age_months is not None else []
    )
    if json_out:
        print_json(
            {
                "ok": not too_old,
                "files": files,
                "counts": counts,
                "stale_months": stale_months,
                "stale_counts": by_kind,
                "dated_counts": dated,
                "stale": [v.to_json() for v in stale],
                "home_page_values": sum(home.values()),
                "home_page_sources": [{"source_key": k, "count": n} for k, n in home.items()],
                "oldest_price": oldest,
                "max_age_months": max_age_months,
                "over_max_age": len(too_old),
            }
        )
        if too_old:
            _fail_max_age(too_old, max_age_months)
        return
    if files:
        console.print(
            f"[green]ok[/green]: {', '.join(files)} valid; catalog now has "
            + ", ".join(f"{v} {k}" for k, v in counts.items())
        )
    rows = [
        [v.kind, v.id, v.field, v.as_of.isoformat() + ("*" if v.as_of_estimated else ""),
         f"{v.age_months:.0f}"]
        for v in stale
    ]  # fmt: skip
    console.print(
        table(
            f"values older than {stale_months:g} months ({len(stale)})",
            ["kind", "id", "field", "as_of", "months"],
            rows,
        )
    )
    console.print(
        "stale by kind: "
        + ", ".join(f"{k} {by_kind[k]} of {dated[k]}" for k in by_kind)
        + f"; {estimated} with a hand-chosen date (*)",
        highlight=False,
    )
    if home:
        console.print(
            f"{sum(home.values())} value(s) cite only a site's home page: "
            + ", ".join(f"{k} ({n})" for k, n in home.items()),
            highlight=False,
        )
    if oldest:
        console.print(oldest_line(oldest, "oldest price in the catalog"), highlight=False)
    if too_old:
        _fail_max_age(too_old, max_age_months)


def _fail_max_age(too_old: list[Any], max_age_months: float | None) -> NoReturn:
    """One ``error:`` line on stderr and exit 1: prices older than ``--max-age-months``."""
    typer.echo(
        f"error: --max-age-months {max_age_months:g}: {len(too_old)} price(s) older than that, "
        f"the oldest {too_old[0].age_months:.0f} months ({too_old[0].kind} {too_old[0].id}); "
        "refresh them (aitco catalog update, docs/catalog.md)",
        err=True,
    )
    raise typer.Exit(1)


class _NoAliasDumper(yaml.SafeDumper):
    """Safe YAML dumper that writes repeated values out (no ``&id001`` anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


import_app = typer.Typer(
    help="Import public price catalogs as an overlay of offers (use it with --catalog FILE).",
    no_args_is_help=True,
)
catalog_app.add_typer(import_app, name="import")


def _date(raw: str | None) -> dt.date | None:
    if raw is None:
        return None
    try:
        return dt.date.fromisoformat(raw)
    except ValueError as exc:
        raise InputError("--as-of", raw, "a date YYYY-MM-DD") from exc


@import_app.command("skypilot")
def import_skypilot_cmd(
    files: Annotated[
        list[str], typer.Argument(help="SkyPilot vms.csv files (or the reference snapshot).")
    ],
    out: Annotated[
        str, typer.Option("-o", "--output", help="Overlay YAML to write (offers + sources).")
    ],
    provider: Annotated[
        str | None,
        typer.Option("--provider", help="Cloud of the files (default: from the file name)."),
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="Date the prices applied, YYYY-MM-DD (default: the file date, marked estimated).",
        ),
    ] = None,
    as_of_estimated: Annotated[
        bool,
        typer.Option(
            "--as-of-estimated", help="Mark the --as-of date as chosen by hand (undated files)."
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Read SkyPilot catalog CSVs into an overlay of instance offers, zones collapsed per region."""
    check_output(out, field="-o")  # never one of the CSVs or overlays read, never a device
    paths = [Path(f) for f in files]
    when = _date(as_of)
    doc, res = overlay_document(
        paths,
        provider=provider,
        as_of=when,
        as_of_estimated=as_of_estimated,
        catalog=state.catalog(),
    )
    text = (
        "# aitco catalog import skypilot "
        + " ".join(files)
        + "\n"
        + yaml.dump(doc, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True, width=110)
    )
    write_atomic(Path(out), text, field="-o")
    load_catalog([*state.overlays(), out])  # the overlay validates (one-line error otherwise)
    skipped = [
        {"reason": why, "rows": n}
        for why, n in sorted(res.skipped.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    summary: dict[str, Any] = {
        "output": out,
        "files": files,
        "rows_read": res.rows_read,
        "offers": len(res.offers),
        "offers_new": len(res.offers) - res.merged,
        "offers_merged": res.merged,
        "prices_newer_kept": res.newer_kept,
        "prices_superseded": res.superseded,
        "regions": res.regions,
        "spot_above_on_demand": res.spot_above_on_demand,
        "skipped": skipped,
    }
    if json_out:
        print_json(summary)
        return
    console.print(
        f"wrote {out}: {summary['offers']} offers ({summary['offers_new']} new, "
        f"{res.merged} merged into shipped offers, {res.newer_kept} newer prices kept, "
        f"{res.superseded} older than a known repricing left out) from "
        f"{res.rows_read} rows, {res.regions} instance-regions; "
        f"{res.spot_above_on_demand} spot prices above on-demand (kept, noted)",
        highlight=False,
    )
    for sk in skipped:
        console.print(f"  skipped {sk['rows']} rows: {sk['reason']}", highlight=False)
    console.print(f"use it with: aitco compare --catalog {out}", highlight=False)


update_app = typer.Typer(
    help="Fetch the public price catalogs into a dated overlay (use it with --catalog FILE or "
    "AITCO_CATALOG).",
    no_args_is_help=True,
)
catalog_app.add_typer(update_app, name="update")

_OutOpt = Annotated[
    str, typer.Option("-o", "--output", help="Overlay YAML to write (replaced atomically).")
]
_OfflineOpt = Annotated[
    bool,
    typer.Option(
        "--offline",
        help="Use the copies cached by the last update (no network); prices keep the date "
        "they were fetched.",
    ),
]


def _update_done(res: upd.UpdateResult, out: str, header: str, json_out: bool) -> None:
    overlays = upd.base_overlays(Path(out), state.overlays(), with_out=False)
    upd.commit(res, Path(out), header, overlays)
    summary = {"output": out, **res.summary, "cache_dir": str(remote.cache_dir())}
    if json_out:
        print_json(summary)
        return
    when = ", ".join(sorted({f.retrieved_at.isoformat() for f in res.files}))
    origin = "cached copies fetched" if any(f.from_cache for f in res.files) else "fetched"
    if summary["source"] == "skypilot":
        console.print(
            f"wrote {out}: {summary['offers']} offers ({summary['offers_new']} new, "
            f"{summary['offers_merged']} merged into catalog offers, "
            f"{summary['prices_newer_kept']} newer prices kept, older ones in price_history) "
            f"from {summary['rows_read']} rows of {', '.join(summary['clouds'])} "
            f"({origin} {when})",
            highlight=False,
        )
        for sk in summary["skipped"]:
            console.print(f"  skipped {sk['rows']} rows: {sk['reason']}", highlight=False)
    else:
        console.print(
            f"wrote {out}: {len(summary['apis_refreshed'])} API prices refreshed, "
            f"{len(summary['apis_added'])} added ({origin} {when}); not in genai-prices: "
            f"{', '.join(summary['apis_not_in_genai_prices']) or 'none'}",
            highlight=False,
        )
    console.print(
        f"use it with: aitco --catalog {out} ... (or AITCO_CATALOG={out})", highlight=False
    )


@update_app.command("skypilot")
def update_skypilot_cmd(
    out: _OutOpt,
    clouds: Annotated[
        str | None,
        typer.Option(
            "--clouds",
            help="Comma-separated SkyPilot clouds (default: "
            + ",".join(DEFAULT_CLOUDS)
            + "; others e.g. azure, oci, nebius, shadeform).",
        ),
    ] = None,
    base_url: Annotated[
        str,
        typer.Option(
            "--base-url",
            help="Server with SkyPilot's layout <base-url>/catalogs/v7/<cloud>/vms.csv "
            "(default: the public SkyPilot catalog repository).",
        ),
    ] = SKYPILOT_BASE_URL,
    offline: _OfflineOpt = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Fetch SkyPilot's cloud catalogs into offers dated the day they were retrieved."""
    names = upd.parse_clouds(clouds)
    target = Path(out)
    update_in_place(target)  # the overlay this command refreshes may be one it reads
    res = upd.update_skypilot(
        names,
        base_url=base_url,
        offline=offline,
        catalog=load_catalog(upd.base_overlays(target, state.overlays()), use_env=False),
        defined=load_catalog(
            upd.base_overlays(target, state.overlays(), with_out=False), use_env=False
        ),
    )
    header = f"aitco catalog update skypilot --clouds {','.join(names)} --base-url {base_url}"
    _update_done(res, out, header, json_out)


@update_app.command("genai-prices")
def update_genai_cmd(
    out: _OutOpt,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Where genai-prices' data.json is read (default: the URL genai-prices' own "
            "updater reads).",
        ),
    ] = None,
    providers: Annotated[
        str | None,
        typer.Option(
            "--providers",
            help="Also add every model of these genai-prices providers (comma-separated, e.g. "
            "openai,anthropic); without it only the catalog's API prices are refreshed.",
        ),
    ] = None,
    offline: _OfflineOpt = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Fetch genai-prices' token-API prices (for audit and api-vs-self-host)."""
    provs = [p.strip() for p in (providers or "").split(",") if p.strip()]
    target = Path(out)
    update_in_place(target)  # the overlay this command refreshes may be one it reads
    res = upd.update_genai_prices(
        url=url,
        offline=offline,
        catalog=load_catalog(upd.base_overlays(target, state.overlays()), use_env=False),
        providers=provs,
        defined=load_catalog(
            upd.base_overlays(target, state.overlays(), with_out=False), use_env=False
        ),
    )
    header = f"aitco catalog update genai-prices --url {res.summary['url']}"
    _update_done(res, out, header, json_out)


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add the ``catalog`` command group."""
    app.add_typer(catalog_app, name="catalog")

"""``aitco catalog update``: fetch the public price catalogs and write a dated overlay.

Two sources, one procedure (fetch every file, parse, build the overlay, validate it, then keep
the files in the cache and write the overlay, each atomically; any failure before the end
leaves every file as it was):

* :func:`update_skypilot`: SkyPilot's ``<base>/catalogs/v7/<cloud>/vms.csv`` files, turned into
  offers by :func:`aitco.catalog.skypilot.fetched_document` (the name mapping and merge rules of
  ``catalog import skypilot``), every price dated the day its file was retrieved;
* :func:`update_genai_prices`: the ``data.json`` genai-prices publishes (the file its own
  ``UpdatePrices`` fetches), turned into token-API prices (``apis``) that ``audit`` and
  ``api-vs-self-host`` read. The cached copy is also what :mod:`aitco.audit.genai` hands to
  the genai-prices package, so per-request audit prices use the same data.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from aitco.catalog import remote, skypilot
from aitco.catalog.loader import Catalog, env_paths, load_catalog
from aitco.errors import InputError
from aitco.fileio import write_atomic

#: The file genai-prices' own updater fetches (``genai_prices.update_prices.DEFAULT_UPDATE_URL``
#: in genai-prices 0.2.x); read directly so the core install does not need the package.
GENAI_PRICES_URL = (
    "https://raw.githubusercontent.com/pydantic/genai-prices/refs/heads/main/prices/new_data/v2/"
    "data.json"
)
#: Catalog provider id -> genai-prices provider id, where they differ.
GENAI_PROVIDERS: dict[str, str] = {}
_ID_RE = re.compile(r"[^a-z0-9._/+-]+")


def genai_url() -> str:
    """genai-prices' own update URL when the package is installed, else :data:`GENAI_PRICES_URL`."""
    try:
        from genai_prices.update_prices import DEFAULT_UPDATE_URL  # optional (extra "audit")
    except ImportError:
        return GENAI_PRICES_URL
    return str(DEFAULT_UPDATE_URL)


def genai_cache_path(url: str) -> Path:
    """Where the genai-prices ``data.json`` fetched from ``url`` is cached."""
    return remote.cache_dir() / "genai-prices" / remote.url_key(url) / "data.json"


def skypilot_cache_path(base_url: str, cloud: str) -> Path:
    """Where a SkyPilot cloud's ``vms.csv`` fetched under ``base_url`` is cached."""
    return (
        remote.cache_dir()
        / "skypilot"
        / remote.url_key(base_url)
        / skypilot.SKYPILOT_SCHEMA
        / cloud
        / "vms.csv"
    )


def parse_clouds(raw: str | None) -> list[str]:
    """Cloud names of ``--clouds`` (comma-separated; default :data:`skypilot.DEFAULT_CLOUDS`)."""
    if raw is None:
        return list(skypilot.DEFAULT_CLOUDS)
    clouds = [c.strip().lower() for c in raw.split(",") if c.strip()]
    bad = [c for c in clouds if not re.fullmatch(r"[a-z0-9_-]+", c)]
    if not clouds or bad:
        raise InputError(
            "--clouds", raw, "comma-separated SkyPilot cloud names, e.g. aws,gcp,lambda"
        )
    return list(dict.fromkeys(clouds))


@dataclass
class UpdateResult:
    """What an update fetched and wrote."""

    document: dict[str, Any]
    files: list[remote.Fetched]
    summary: dict[str, Any] = field(default_factory=dict)


def update_skypilot(
    clouds: Sequence[str],
    *,
    base_url: str = skypilot.SKYPILOT_BASE_URL,
    offline: bool = False,
    catalog: Catalog | None = None,
    defined: Catalog | None = None,
) -> UpdateResult:
    """Fetch SkyPilot ``vms.csv`` files (or their cached copies) and build the offer overlay.

    ``catalog`` is merged into (its prices join ``price_history`` where newer ones replace
    them); ``defined`` is the catalog the overlay will be read over (see
    :func:`aitco.catalog.skypilot.fetched_document`). Nothing is written here: :func:`commit`
    keeps the files and the overlay once it validates.
    """
    files = [
        remote.fetch(
            skypilot.catalog_url(base_url, c), skypilot_cache_path(base_url, c), offline=offline
        )
        for c in clouds
    ]
    doc, res = skypilot.fetched_document(
        [(c, f.url, f.text(), f.retrieved_at) for c, f in zip(clouds, files, strict=True)],
        catalog=catalog,
        defined=defined,
    )
    summary: dict[str, Any] = {
        "source": "skypilot",
        "base_url": base_url,
        "clouds": list(clouds),
        "retrieved": {c: f.retrieved_at.isoformat() for c, f in zip(clouds, files, strict=True)},
        "from_cache": offline,
        "rows_read": res.rows_read,
        "offers": len(res.offers),
        "offers_new": len(res.offers) - res.merged,
        "offers_merged": res.merged,
        "prices_newer_kept": res.newer_kept,
        "regions": res.regions,
        "spot_above_on_demand": res.spot_above_on_demand,
        "skipped": [
            {"reason": why, "rows": n}
            for why, n in sorted(res.skipped.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
    }
    return UpdateResult(doc, files, summary)


# --------------------------------------------------------------------------- genai-prices
def _match(clause: Any, name: str) -> bool:
    """Evaluate a genai-prices ``match`` clause (equals, starts_with, ..., or, and)."""
    if not isinstance(clause, dict):
        return False
    n = name.lower()
    for key, val in clause.items():
        if key == "or" and isinstance(val, list):
            return any(_match(c, name) for c in val)
        if key == "and" and isinstance(val, list):
            return all(_match(c, name) for c in val)
        if not isinstance(val, str):
            return False
        v = val.lower()
        if key == "equals":
            return n == v
        if key == "starts_with":
            return n.startswith(v)
        if key == "ends_with":
            return n.endswith(v)
        if key == "contains":
            return v in n
        if key == "regex":
            try:
                return re.search(val, name) is not None
            except re.error:
                return False
    return False


def _rate(v: Any) -> tuple[float | None, bool]:
    """Read a price field as USD per million tokens (tiered: its base price), and if tiered."""
    if isinstance(v, bool) or v is None:
        return None, False
    if isinstance(v, int | float):
        return float(v), False
    if isinstance(v, dict) and isinstance(v.get("base"), int | float):
        return float(v["base"]), bool(v.get("tiers"))
    return None, False


def _current_prices(prices: Any, day: dt.date) -> tuple[dict[str, Any] | None, dt.date | None]:
    """Return the price set in force on ``day`` and the date it started (None: undated).

    genai-prices tries conditional prices last to first; the last one active wins, and the first
    one applies when none is. Time-of-day prices (off-peak discounts) are not list prices.
    """
    if isinstance(prices, dict):
        return prices, None
    if not isinstance(prices, list) or not prices:
        return None, None
    chosen: tuple[dict[str, Any] | None, dt.date | None] | None = None
    for cp in prices:
        if not isinstance(cp, dict) or not isinstance(cp.get("prices"), dict):
            continue
        c = cp.get("constraint")
        if c is None:
            chosen = (cp["prices"], None)
        elif isinstance(c, dict) and "start_date" in c:
            try:
                start = dt.date.fromisoformat(str(c["start_date"]))
            except ValueError:
                continue
            if start <= day:
                chosen = (cp["prices"], start)
    if chosen is None:
        first = prices[0]
        return (first.get("prices"), None) if isinstance(first, dict) else (None, None)
    return chosen


def _find_model(models: list[Any], name: str) -> dict[str, Any] | None:
    exact = [m for m in models if isinstance(m, dict) and m.get("id") == name]
    if exact:
        return exact[0]
    hits = [m for m in models if isinstance(m, dict) and _match(m.get("match"), name)]
    return hits[0] if hits else None


def genai_document(
    data: Any,
    *,
    url: str,
    retrieved_at: dt.datetime,
    catalog: Catalog,
    providers: Sequence[str] = (),
    defined: Catalog | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Token-API price overlay from genai-prices ``data.json`` (a list of providers).

    Every API price the catalog has is refreshed where genai-prices knows its model (matched by
    id, else by genai-prices' own ``match`` rules); with ``providers``, every model of those
    providers is added too (``<provider>/<model id>``). A price is dated by its genai-prices
    ``start_date`` where it has one, else by the day the data was retrieved.

    Returns
    -------
    (dict, dict)
        The overlay (``sources`` + ``apis``) and a summary (refreshed, added, unmatched ids).
    """
    if not isinstance(data, list) or not all(isinstance(p, dict) for p in data):
        raise InputError("data.json", url, "genai-prices provider data (a JSON list of providers)")
    day = retrieved_at.date()
    by_provider = {str(p.get("id")): p for p in data}
    key = "genai-prices-data"
    sources = {
        key: {
            "title": "genai-prices (pydantic/genai-prices, MIT) price data: list prices of LLM "
            "APIs per million tokens, as retrieved by aitco catalog update genai-prices",
            "url": url,
            "retrieved": day,
            "note": f"retrieved {retrieved_at.isoformat()}; a price with a genai-prices "
            "start_date is dated by it, others by the retrieval day",
        }
    }
    entries: list[dict[str, Any]] = []
    refreshed: list[str] = []
    unmatched: list[str] = []
    done: set[tuple[str, str]] = set()

    base = defined if defined is not None else catalog

    def entry(api_id: str, prov: str, model: dict[str, Any], old: Any) -> dict[str, Any] | None:
        prices, start = _current_prices(model.get("prices"), day)
        if prices is None:
            return None
        inp, t_in = _rate(prices.get("input_mtok"))
        out, t_out = _rate(prices.get("output_mtok"))
        if inp is None or out is None:
            return None
        cached, _ = _rate(prices.get("cache_read_mtok"))
        tier = "; base tier (a higher price applies above a prompt-length threshold)"
        note = f"genai-prices model {model.get('id')}" + (tier if t_in or t_out else "")
        if old is not None:
            note += (
                f"; was {old.input_usd_per_mtok:g}/{old.output_usd_per_mtok:g} "
                f"(catalog, as of {old.as_of})"
            )
        e: dict[str, Any] = {
            "id": api_id,
            "source": key,
            "input_usd_per_mtok": {"value": inp, "note": note},
            "output_usd_per_mtok": out,
            "as_of": {
                "value": start or day,
                "note": "genai-prices start_date" if start else "retrieval day (undated price)",
            },
        }
        if api_id not in base.apis:  # not defined under the overlay: write it in full
            e = {"id": api_id, "source": key, "name": str(model.get("name") or model.get("id")),
                 "provider": prov, "model": str(model.get("id"))} | e  # fmt: skip
        if cached is not None:
            e["cached_input_usd_per_mtok"] = cached
        if isinstance(model.get("context_window"), int) and model["context_window"] > 0:
            e["context_window"] = model["context_window"]
        return e

    for api in sorted(catalog.apis.values(), key=lambda a: a.id):
        gp = by_provider.get(GENAI_PROVIDERS.get(api.provider, api.provider))
        model = _find_model(gp.get("models") or [], api.model) if gp else None
        e = entry(api.id, api.provider, model, api) if model is not None else None
        if e is None:
            unmatched.append(api.id)
            continue
        entries.append(e)
        refreshed.append(api.id)
        done.add((api.provider, str(model.get("id")) if model else ""))
    added: list[str] = []
    for prov in providers:
        gp = by_provider.get(GENAI_PROVIDERS.get(prov, prov))
        if gp is None:
            raise InputError(
                "--providers",
                prov,
                f"a genai-prices provider id ({', '.join(sorted(by_provider))})",
            )
        for model in gp.get("models") or []:
            if not isinstance(model, dict) or (prov, str(model.get("id"))) in done:
                continue
            api_id = _ID_RE.sub("-", f"{prov}/{model.get('id')}".lower()).strip("-")
            if api_id in catalog.apis or api_id in added:
                continue
            e = entry(api_id, prov, model, None)
            if e is not None:
                entries.append(e)
                added.append(api_id)
    doc = {"sources": sources, "apis": entries}
    summary = {
        "source": "genai-prices",
        "url": url,
        "retrieved": retrieved_at.isoformat(),
        "apis_refreshed": refreshed,
        "apis_added": added,
        "apis_not_in_genai_prices": unmatched,
    }
    return doc, summary


def update_genai_prices(
    *,
    url: str | None = None,
    offline: bool = False,
    catalog: Catalog,
    providers: Sequence[str] = (),
    defined: Catalog | None = None,
) -> UpdateResult:
    """Fetch genai-prices ``data.json`` (or its cached copy) and build the API price overlay."""
    src = url or genai_url()
    f = remote.fetch(src, genai_cache_path(src), offline=offline)
    try:
        data = json.loads(f.text())
    except json.JSONDecodeError as exc:
        raise InputError("data.json", src, f"JSON ({exc.msg} at line {exc.lineno})") from exc
    doc, summary = genai_document(
        data,
        url=src,
        retrieved_at=f.retrieved_at,
        catalog=catalog,
        providers=providers,
        defined=defined,
    )
    summary["from_cache"] = offline
    return UpdateResult(doc, [f], summary)


def cached_genai_data(url: str | None = None) -> remote.Fetched | None:
    """Return the cached genai-prices ``data.json`` (:func:`update_genai_prices`), or None."""
    src = url or genai_url()
    return remote.cached(src, genai_cache_path(src))


class _NoAliasDumper(yaml.SafeDumper):
    """Safe YAML dumper that writes repeated values out (no ``&id001`` anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def overlay_text(doc: dict[str, Any], header: str) -> str:
    """YAML text of an overlay, after a ``# ...`` header line."""
    body = yaml.dump(doc, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True, width=110)
    return f"# {header}\n{body}"


def base_overlays(out: Path, given: Sequence[str], *, with_out: bool = True) -> list[str]:
    """Return the overlays an update merges into: ``AITCO_CATALOG``'s and ``given``.

    ``out`` itself is left out while it does not exist yet (``AITCO_CATALOG`` may name the file
    being created), and always with ``with_out=False`` (the catalog the new overlay will be
    read over, as it replaces ``out``).
    """
    target = out.expanduser().resolve()
    keep = []
    for p in [*env_paths(), *given]:
        is_out = Path(p).expanduser().resolve() == target
        if not is_out or (with_out and Path(p).expanduser().exists()):
            keep.append(p)
    return keep


def commit(result: UpdateResult, out: Path, header: str, overlays: Sequence[str]) -> None:
    """Validate the overlay, then keep the fetched files in the cache and write ``out``.

    The overlay is validated (loaded over the catalog and ``overlays``) from a scratch copy
    before anything is written; each write is atomic, so a failure leaves ``out`` and the
    cache as they were.
    """
    if not out.parent.is_dir():
        raise InputError("--output", str(out), "a file in an existing directory")
    text = overlay_text(result.document, header)
    with tempfile.TemporaryDirectory(prefix="aitco-update-") as tmp:
        probe = Path(tmp) / "overlay.yaml"
        write_atomic(probe, text)
        load_catalog([*overlays, str(probe)], use_env=False)  # overlays: AITCO_CATALOG's too
    remote.store(result.files)
    write_atomic(out, text)

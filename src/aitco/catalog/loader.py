"""Read the built-in catalog YAML, overlay user files, validate and cache.

File format
-----------
Each YAML file is one document::

    kind: accelerators          # one of aitco.catalog.schema.KINDS
    source: mleng               # optional default source key for bare values in this file
    sources:                    # optional; merged into the bibliography (data/sources.yaml)
      mleng: {title: "...", url: "...", retrieved: 2026-08-22}
    entries:
      - id: h100-sxm5-80gb
        source: mleng           # default source for this entry's bare values
        memory_gb: 80           # bare value: takes the entry's source
        hbm_bandwidth_gb_s: {value: 3350, source: nvidia-h100-datasheet, note: "HBM3"}

The built-in data folder can be replaced as a whole by ``AITCO_CATALOG_DATA`` (a folder with the
same layout and a ``sources.yaml``), e.g. the hand-picked test catalog library the tests read
(``tests/fixtures/catalog``).

A user overlay (``--catalog FILE`` or ``AITCO_CATALOG``, paths separated by ``os.pathsep``) has
the same shape, or holds several kinds at once (``accelerators: [...]``, ``models: [...]``). An
overlay entry whose id exists is merged into it; each value it sets gets the overlay file as its
source unless the overlay names another.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from aitco.catalog import history
from aitco.catalog.hf_config import model_from_hf_config
from aitco.catalog.provenance import file_source
from aitco.catalog.schema import (
    KINDS,
    Accelerator,
    ApiPrice,
    CloudOffer,
    CnnModel,
    Entry,
    Factor,
    ModelArch,
    Preset,
    Provenance,
    Source,
    System,
)
from aitco.errors import CatalogError, InputError, UnknownIdError
from aitco.fileio import check_dates, check_input_file, load_yaml
from aitco.limits import check_tree, check_value, factor_range

ENV_VAR = "AITCO_CATALOG"
#: Environment variable naming a folder that replaces the built-in ``catalog/data`` folder.
DATA_ENV_VAR = "AITCO_CATALOG_DATA"
_LEAF_KEYS = {"value", "source", "note", "unit"}
E = TypeVar("E", bound=Entry)


def read_yaml(path: Path, *, field: str = "path") -> Any:
    """Read a catalog YAML file (:func:`aitco.fileio.load_yaml`); errors are CatalogErrors."""
    return load_yaml(path, field=field, error=CatalogError)


@dataclass
class _Raw:
    """An entry as read: the unwrapped values and the source key of each value."""

    data: dict[str, Any]
    prov: dict[str, tuple[str, str | None]]
    file: str


def _is_leaf(v: Any) -> bool:
    return isinstance(v, dict) and "value" in v and set(v) <= _LEAF_KEYS


def _unwrap(
    node: Any,
    default_src: str | None,
    path: str,
    prov: dict[str, tuple[str, str | None]],
    where: str,
) -> Any:
    """Strip ``{value, source, note}`` wrappers, recording each leaf's source in ``prov``."""
    if _is_leaf(node):
        src = node.get("source", default_src)
        if src is None:
            raise CatalogError(path, node.get("value"), "a value with a source", file=where)
        prov[path] = (str(src), node.get("note"))
        return node["value"]
    if isinstance(node, dict):
        own = node.get("source") if isinstance(node.get("source"), str) else None
        src = own or default_src
        if not node and path and src is not None:  # an empty mapping is a value too
            prov[path] = (src, None)
        out = {}
        for k, v in node.items():
            sub = f"{path}.{k}" if path else str(k)
            if k == "source" and path:
                out[k] = v
                if isinstance(v, str):  # a record's own source key (e.g. a price) is its provenance
                    prov[sub] = (v, None)
                continue
            out[k] = _unwrap(v, src, sub, prov, where)
        return out
    if isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        return [_unwrap(x, default_src, f"{path}.{i}", prov, where) for i, x in enumerate(node)]
    if default_src is None:
        raise CatalogError(path, node, "a value with a source (give 'source:')", file=where)
    prov[path] = (default_src, None)
    return node


def _parse_source(key: str, raw: Any, where: str) -> Source:
    if not isinstance(raw, dict):
        raise CatalogError(f"sources.{key}", raw, "a mapping with title and retrieved", file=where)
    try:
        return Source(key=key, **raw)
    except ValidationError as exc:
        raise _validation_error(exc, where, f"sources.{key}", raw) from exc


def _validation_error(exc: ValidationError, where: str, prefix: str, raw: Any) -> CatalogError:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    value: Any = raw
    for p in err["loc"]:
        in_dict = isinstance(value, dict) and p in value
        in_list = isinstance(value, list) and isinstance(p, int) and p < len(value)
        if in_dict or in_list:
            value = value[p]
        else:
            value = err.get("input")
            break
    field_path = f"{prefix}.{loc}" if loc else prefix
    return CatalogError(field_path, value, err["msg"].removeprefix("Value error, "), file=where)


def _documents(doc: Any, where: str) -> list[tuple[str, list[Any], str | None]]:
    """Split a YAML document into ``(kind, entries, default_source)`` parts."""
    if not isinstance(doc, dict):
        raise CatalogError("document", type(doc).__name__, "a mapping", file=where)
    default = doc.get("source")
    if "kind" in doc:
        kind = doc["kind"]
        if kind not in KINDS and kind != "sources":
            raise CatalogError("kind", kind, f"one of {', '.join(KINDS)}", file=where)
        entries = doc.get("entries", [])
        if not isinstance(entries, list):
            raise CatalogError("entries", type(entries).__name__, "a list of entries", file=where)
        return [(kind, entries, default)] if kind != "sources" else []
    parts = []
    for key, val in doc.items():
        if key in ("sources", "source"):
            continue
        if key not in KINDS:
            raise CatalogError(key, "...", f"a catalog kind ({', '.join(KINDS)})", file=where)
        if not isinstance(val, list):
            raise CatalogError(key, type(val).__name__, "a list of entries", file=where)
        parts.append((key, val, default))
    return parts


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


@dataclass(frozen=True)
class Catalog:
    """The validated catalog: every kind keyed by id, plus the bibliography.

    Use :func:`load_catalog` to build one.
    """

    accelerators: dict[str, Accelerator]
    systems: dict[str, System]
    offers: dict[str, CloudOffer]
    models: dict[str, ModelArch]
    factors: dict[str, Factor]
    apis: dict[str, ApiPrice]
    presets: dict[str, Preset]
    sources: dict[str, Source]
    files: tuple[str, ...] = field(default_factory=tuple)
    cnn_models: dict[str, CnnModel] = field(default_factory=dict)
    #: Day the prices were taken as of (``--as-of``; None: the quotes in force today).
    as_of: dt.date | None = None
    #: Factor ids set by a user overlay (never replaced by a fitted curve).
    user_factor_ids: frozenset[str] = frozenset()
    #: Residual-value factor ids fitted from price history (aitco.catalog.history).
    fitted_factors: frozenset[str] = frozenset()
    #: The assumed curves the fitted ones replaced, by factor id.
    assumed_factors: dict[str, Factor] = field(default_factory=dict)

    # ------------------------------------------------------------------ lookup
    def kind(self, kind: str) -> dict[str, Entry]:
        """All entries of ``kind`` (``'accelerators'``, ``'models'``, ...)."""
        if kind not in KINDS:
            raise UnknownIdError("catalog kind", kind, KINDS, field="KIND")
        table: dict[str, Entry] = getattr(self, kind)
        return table

    def get(self, kind: str, entry_id: str, *, field: str = "id") -> Entry:
        """Entry ``entry_id`` of ``kind``; unknown ids raise with the closest valid ids."""
        table = self.kind(kind)
        if entry_id in table:
            return table[entry_id]
        raise UnknownIdError(kind.rstrip("s"), entry_id, table, field=field)

    def find(self, entry_id: str) -> tuple[str, Entry]:
        """Find an id in any kind; returns ``(kind, entry)``."""
        for kind in KINDS:
            table = self.kind(kind)
            if entry_id in table:
                return kind, table[entry_id]
        every = [i for k in KINDS for i in self.kind(k)]
        raise UnknownIdError("catalog", entry_id, every, field="ID")

    def accelerator(self, entry_id: str, *, field: str = "hardware") -> Accelerator:
        """Accelerator by id."""
        return self._typed(self.accelerators, "accelerator", entry_id, field)

    def system(self, entry_id: str, *, field: str = "system") -> System:
        """System by id."""
        return self._typed(self.systems, "system", entry_id, field)

    def factor(self, entry_id: str, *, field: str = "factor") -> Factor:
        """Factor by id."""
        return self._typed(self.factors, "factor", entry_id, field)

    def factor_value(self, entry_id: str) -> float:
        """Scalar value of a factor (raises if the factor is a curve)."""
        f = self.factor(entry_id)
        if isinstance(f.value, list):
            raise CatalogError(f"factors.{entry_id}", f.value, "a scalar factor")
        return float(f.value)

    def hardware(self, hw_id: str, *, field: str = "hardware") -> tuple[Accelerator, System]:
        """Resolve a hardware id (an accelerator or a system id) to ``(accelerator, system)``."""
        if hw_id in self.systems:
            sysm = self.systems[hw_id]
            return self.accelerator(sysm.accelerator, field=f"systems.{hw_id}.accelerator"), sysm
        if hw_id in self.accelerators:
            acc = self.accelerators[hw_id]
            if acc.default_system and acc.default_system in self.systems:
                return acc, self.systems[acc.default_system]
            for s in self.systems.values():
                if s.accelerator == hw_id:
                    return acc, s
            raise CatalogError(field, hw_id, "an accelerator with a system (node) in the catalog")
        raise UnknownIdError("hardware", hw_id, [*self.accelerators, *self.systems], field=field)

    def check_provider(self, name: str | None, *, field: str = "--provider") -> None:
        """Refuse a cloud provider no offer names (``any`` is every provider); did-you-mean."""
        known = {o.provider for o in self.offers.values()}
        if name is not None and name != "any" and name not in known:
            raise UnknownIdError("provider", name, [*known, "any"], field=field)

    def check_price_region(self, name: str | None, *, field: str = "--price-region") -> None:
        """Refuse a cloud region no offer is priced in; did-you-mean."""
        known = {p.region for o in self.offers.values() for p in o.prices if p.region}
        if name is not None and name not in known:
            raise UnknownIdError("region", name, known, field=field)

    def check_region(self, name: str | None, *, field: str = "region") -> None:
        """Refuse a region that no offer, factor or region prefix knows; did-you-mean.

        A scenario option's ``region`` narrows the offers to a region prefix and picks the
        regional factors (electricity, carbon), so any of those is a known region.
        """
        if name is None:
            return
        known = {p.region for o in self.offers.values() for p in o.prices if p.region}
        known |= {f.region for f in self.factors.values() if f.region}
        if not any(k == name or k.startswith(name) for k in known):
            raise UnknownIdError("region", name, known, field=field)

    def offers_for(self, accelerator_id: str) -> list[CloudOffer]:
        """Cloud offers of an accelerator."""
        return [o for o in self.offers.values() if o.accelerator == accelerator_id]

    def resolve_model(self, spec: str | Path, *, field: str = "model") -> ModelArch:
        """Resolve a model: a catalog id, a Hugging Face ``config.json`` path or a model YAML."""
        s = str(spec)
        if s in self.models:
            return self.models[s]
        p = Path(s).expanduser()
        if p.suffix.lower() == ".json" or p.name == "config.json":
            if not os.path.exists(p):
                raise InputError(field, s, "a catalog model id or an existing config.json path")
            check_input_file(p, field=field)  # a regular file: no FIFO, device or folder
            return model_from_hf_config(p)
        if p.suffix.lower() in (".yaml", ".yml"):
            if not os.path.exists(p):
                raise InputError(field, s, "a catalog model id or an existing model YAML path")
            check_input_file(p, field=field)
            return _model_from_yaml(p)
        raise UnknownIdError("model", s, self.models, field=field)

    def _typed(self, table: dict[str, E], kind: str, entry_id: str, field: str) -> E:
        if entry_id in table:
            return table[entry_id]
        raise UnknownIdError(kind, entry_id, table, field=field)


def _model_from_yaml(path: Path) -> ModelArch:
    doc = read_yaml(path, field="model")
    if isinstance(doc, dict) and "entries" in doc:
        entries = doc["entries"]
        if not entries:
            raise CatalogError("entries", [], "one model entry", file=str(path))
        doc = entries[0]
    if not isinstance(doc, dict):
        raise CatalogError("document", type(doc).__name__, "a model mapping", file=str(path))
    src = _overlay_source(path)
    prov: dict[str, tuple[str, str | None]] = {}
    data = _unwrap({k: v for k, v in doc.items() if k != "source"}, src.key, "", prov, str(path))
    data.setdefault("id", path.stem.lower().replace("_", "-"))
    provenance = {k: Provenance(source=src, note=n) for k, (_s, n) in prov.items()}
    try:
        return ModelArch(**data, provenance=provenance)
    except ValidationError as exc:
        raise _validation_error(exc, str(path), "model", data) from exc


def _overlay_source(path: Path) -> Source:
    return file_source(path, f"user file {path.name}")


def shipped_data_dir() -> Path:
    """Return the ``catalog/data`` folder shipped with aitco."""
    return Path(str(resources.files("aitco.catalog") / "data"))


def builtin_data_dir(data_dir: str | Path | None = None) -> Path:
    """Return the folder the built-in catalog is read from.

    Parameters
    ----------
    data_dir : path, optional
        A folder with the layout of ``catalog/data`` (kind folders and ``sources.yaml``).
        Without it, ``AITCO_CATALOG_DATA`` when set, else :func:`shipped_data_dir`.

    Raises
    ------
    CatalogError
        The folder named has no ``sources.yaml``.
    """
    field = "data_dir"
    if data_dir is None:
        data_dir = os.environ.get(DATA_ENV_VAR, "").strip() or None
        field = DATA_ENV_VAR
    if data_dir is None:
        return shipped_data_dir()
    root = Path(data_dir).expanduser()
    if not (root / "sources.yaml").is_file():
        raise CatalogError(
            field, str(data_dir), "a catalog data folder holding sources.yaml and kind folders"
        )
    return root


def _builtin_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.yaml") if p.name != "sources.yaml")


def builtin_overlays() -> dict[str, Path]:
    """Named overlays shipped with aitco (``--catalog NAME``), e.g. ``skypilot-2025``."""
    root = Path(str(resources.files("aitco.catalog") / "overlays"))
    return {p.stem: p for p in sorted(root.glob("*.yaml"))} if root.is_dir() else {}


def resolve_overlay(path: str | Path) -> str:
    """Return an overlay path, or the shipped overlay of that name when no such file exists."""
    p = str(path)
    if not os.path.exists(p):
        named = builtin_overlays().get(p)
        if named is not None:
            return str(named)
    return p


def env_paths() -> list[str]:
    """Overlay paths from the ``AITCO_CATALOG`` environment variable."""
    raw = os.environ.get(ENV_VAR, "")
    return [p for p in raw.split(os.pathsep) if p.strip()]


def load_catalog(
    extra_paths: Sequence[str | Path] = (),
    *,
    use_env: bool = True,
    data_dir: str | Path | None = None,
) -> Catalog:
    """Load the built-in catalog, overlaid with user files.

    Parameters
    ----------
    extra_paths : sequence of path
        User overlay YAML files, applied in order after those of ``AITCO_CATALOG``.
    use_env : bool
        Whether to apply the ``AITCO_CATALOG`` overlays.
    data_dir : path, optional
        Folder replacing the built-in data (see :func:`builtin_data_dir`; ``AITCO_CATALOG_DATA``
        applies whatever ``use_env`` says, as it replaces the built-in data, not an overlay).

    Returns
    -------
    Catalog
        Validated entries with their provenance.

    Raises
    ------
    CatalogError
        A file, field path, value and expectation for the first invalid value found.
    """
    paths = [resolve_overlay(p) for p in [*(env_paths() if use_env else []), *extra_paths]]
    for p in paths:  # a regular file (no FIFO, device or folder), recorded as an input
        check_input_file(p, field="--catalog")
    stamps = tuple((p, _mtime(p)) for p in paths)
    return _load_cached(str(builtin_data_dir(data_dir)), stamps)


def _mtime(p: str) -> float:
    try:
        return os.stat(p).st_mtime
    except OSError:
        return -1.0


@functools.lru_cache(maxsize=16)
def _load_cached(root: str, stamps: tuple[tuple[str, float], ...]) -> Catalog:
    return _load(Path(root), [Path(p) for p, _ in stamps])


def _load(root: Path, overlays: Iterable[Path]) -> Catalog:
    sources: dict[str, Source] = {}
    sources_file = root / "sources.yaml"
    src_doc = read_yaml(sources_file) or {}
    for key, raw in (src_doc.get("sources") or {}).items():
        sources[key] = _parse_source(key, raw, str(sources_file))

    raws: dict[str, dict[str, _Raw]] = {k: {} for k in KINDS}
    builtin = _builtin_files(root)
    for path in builtin:
        _read_file(path, raws, sources, overlay=False)
    overlays = list(overlays)
    for path in overlays:
        _read_file(path, raws, sources, overlay=True)

    built: dict[str, Any] = {}
    for kind, table in raws.items():
        cls = KINDS[kind]
        built[kind] = {}
        for eid, raw in table.items():
            provenance: dict[str, Provenance] = {}
            for fpath, (skey, note) in raw.prov.items():
                if skey not in sources:
                    raise UnknownIdError(
                        "source", skey, sources, field=f"{kind}.{eid}.{fpath}.source"
                    )
                provenance[fpath] = Provenance(source=sources[skey], note=note)
            try:
                built[kind][eid] = cls(**raw.data, provenance=provenance)
            except ValidationError as exc:
                raise _validation_error(exc, raw.file, f"{kind}.{eid}", raw.data) from exc
            except TypeError as exc:
                raise CatalogError(f"{kind}.{eid}", "...", str(exc), file=raw.file) from exc
    over_files = {str(p) for p in overlays}
    user_factors = frozenset(k for k, r in raws["factors"].items() if r.file in over_files)
    cat = Catalog(
        **built,
        sources=sources,
        files=tuple(str(p) for p in [*builtin, *overlays]),
        user_factor_ids=user_factors,
    )
    return history.with_fitted_residuals(cat, keep=user_factors)


def _read_file(
    path: Path, raws: dict[str, dict[str, _Raw]], sources: dict[str, Source], *, overlay: bool
) -> None:
    where = str(path)
    doc = read_yaml(path, field="--catalog" if overlay else "path")
    if doc is None:
        return
    if overlay:  # a user's file: the ranges of limits.py, and no date after today
        check_tree(doc, file=where, error=CatalogError)  # NaN/inf, negative or absurd numbers
        check_dates(doc, file=where, error=CatalogError)
    if not isinstance(doc, dict):
        raise CatalogError("document", type(doc).__name__, "a mapping", file=where)
    for key, raw in (doc.get("sources") or {}).items():
        sources[key] = _parse_source(key, raw, where)
    file_default = doc.get("source")
    over_src: Source | None = None
    if overlay:
        over_src = _overlay_source(path)
        sources[over_src.key] = over_src
        if file_default is None:
            file_default = over_src.key
    for kind, entries, _ in _documents(doc, where):
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or "id" not in entry:
                raise CatalogError(
                    f"{kind}.entries.{i}", entry, "a mapping with an 'id'", file=where
                )
            eid = str(entry["id"])
            default = entry.get("source", file_default)
            prov: dict[str, tuple[str, str | None]] = {}
            # unwrap field by field: an entry is never itself a {value: ...} leaf, even when its
            # only field is a factor's ``value``
            data = {
                k: _unwrap(v, default, str(k), prov, f"{where} ({kind}.{eid})")
                for k, v in entry.items()
                if k not in ("id", "source")
            }
            data["id"] = eid
            rng = factor_range(eid) if kind == "factors" and overlay else None
            if rng is not None:  # a factor's physical range (a PUE of 1e6 is a typo)
                for x in (
                    data["value"] if isinstance(data.get("value"), list) else [data.get("value")]
                ):
                    check_value(f"{kind}.{eid}.value", x, rng=rng, file=where, error=CatalogError)
            if eid in raws[kind]:
                if not overlay:
                    raise CatalogError(
                        f"{kind}.{eid}", eid, "a unique id (defined twice)", file=where
                    )
                old = raws[kind][eid]
                merged_prov = dict(old.prov)
                merged_prov.update(prov)
                raws[kind][eid] = _Raw(_deep_merge(old.data, data), merged_prov, where)
            else:
                raws[kind][eid] = _Raw(data, prov, where)


def catalog_json(entry: Entry) -> dict[str, Any]:
    """Every value of an entry with its unit-carrying name, source and date (for ``show``)."""
    rows = []
    for path, value in entry.values().items():
        if path in ("id", "name", "note"):
            continue
        prov = _lookup_prov(entry.provenance, path)
        rows.append(
            {
                "field": path,
                "value": value if _jsonable(value) else str(value),
                "source": prov.source.cite() if prov else None,
                "source_key": prov.source.key if prov else None,
                "retrieved": prov.source.retrieved.isoformat() if prov else None,
                "note": prov.note if prov else None,
            }
        )
    return {"id": entry.id, "name": entry.name, "kind": type(entry).__name__, "values": rows}


def _lookup_prov(prov: dict[str, Provenance], path: str) -> Provenance | None:
    """Provenance of ``path`` or of its closest recorded parent (e.g. a whole price record)."""
    p = path
    while True:
        if p in prov:
            return prov[p]
        if "." not in p:
            return None
        p = p.rsplit(".", 1)[0]


def _jsonable(v: Any) -> bool:
    try:
        json.dumps(v)
    except TypeError:
        return False
    return True


def missing_provenance(entry: Entry) -> list[str]:
    """Field paths of ``entry`` that have no source with a date (should be empty)."""
    out = []
    for path in entry.values():
        if path in ("id",):
            continue
        prov = _lookup_prov(entry.provenance, path)
        if prov is None or prov.source.retrieved is None:
            out.append(path)
    return out

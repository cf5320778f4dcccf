"""nccl-tests results: the stdout table of ``*_perf`` (every layout) and the ``-J`` JSON file.

Columns are found by the header line (``#  size  count  type  redop  root  time  algbw  busbw
#wrong ...``), never by position, so the three stdout layouts parse the same way:

* before 2.13: ``size count type redop time algbw busbw error`` (no ``root``; ``error`` a float);
* 2.13-2.16: ``... root time algbw busbw #wrong`` twice (out-of-place, in-place);
* 2.17+: a ``# nccl-tests version`` banner, optional timestamp and per-iteration columns.

The summary gives the bus-bandwidth *plateau* (the best bus bandwidth at the largest message
sizes, what calibration needs), the ``# Avg bus bandwidth`` footer (an average over every size,
latency-bound ones included, so much lower), the small-message latency, the GPU model, the rank
and node counts.

References
----------
.. [1] NVIDIA, nccl-tests ``doc/PERFORMANCE.md`` (busbw = algbw * 2(n-1)/n for all-reduce) and
   ``src/util.cu`` (table and JSON layout), https://github.com/NVIDIA/nccl-tests
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_text
from aitco.calibrate.parsers.base import ParseResult, SkipLog, is_number, to_float
from aitco.errors import ParseError

#: Sizes whose log2 is within this many steps of the largest size count as the plateau region
#: (the top three doublings of a ``-f 2`` sweep).
PLATEAU_LOG2_SPAN = 2.0
#: Message size below which a collective is latency-bound; its time estimates the latency. [B]
SMALL_MESSAGE_BYTES = 1024

_RANK = re.compile(
    r"#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$"
)
_VERSION = re.compile(r"#\s*nccl-tests version\s+(\S+)(.*)$")
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)\s*(\S*)")
_COLLECTIVE = re.compile(r"#\s*Collective test (?:starting|concluded):\s*(\S+)")
_NTHREAD = re.compile(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)")
_COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "broadcast",
    "reduce",
    "sendrecv",
    "gather",
    "scatter",
    "hypercube",
)

#: Columns that belong to each out-of-place / in-place block.
_BLOCK_COLS = ("time", "algbw", "busbw", "#wrong", "error", "i_min", "i_max", "i_p99", "i_cv%")


def _collective_from_name(name: str) -> str | None:
    low = name.lower()
    for c in _COLLECTIVES:
        if c in low or c.replace("_", "") in low:
            return c
    return None


def _header_layout(tokens: list[str]) -> tuple[list[str], list[list[str]]] | None:
    """Split header tokens into the shared prefix and per-block column names."""
    if "size" not in tokens or "time" not in tokens or "busbw" not in tokens:
        return None
    first = tokens.index("time")
    prefix = tokens[:first]
    blocks: list[list[str]] = []
    cur: list[str] = []
    for t in tokens[first:]:
        if t == "time" and cur:
            blocks.append(cur)
            cur = []
        cur.append(t)
    if cur:
        blocks.append(cur)
    return prefix, blocks


def parse_nccl(path: str | Path, *, collective: str | None = None) -> ParseResult:
    """Parse an nccl-tests stdout log or ``-J`` JSON result.

    Parameters
    ----------
    path : str or pathlib.Path
        The log (``.txt``/``.log``, optionally ``.gz``) or JSON file.
    collective : str, optional
        Collective name (``"all_reduce"``); detected from the banner or file name when omitted.

    Returns
    -------
    ParseResult
        One record per message size and type with ``size_bytes``, ``count``, ``dtype``, ``redop``,
        ``oop_time_us``, ``oop_algbw_gb_s``, ``oop_busbw_gb_s``, ``oop_wrong`` and the ``ip_*``
        in-place equivalents; the summary holds ``bus_bandwidth_plateau_gb_s``,
        ``plateau_size_bytes``, ``avg_bus_bandwidth_gb_s`` (footer), ``latency_us``,
        ``n_ranks``, ``n_nodes``, ``gpu_model``.

    Raises
    ------
    aitco.errors.ParseError
        If the file has no results table.
    """
    p = Path(path)
    with open_text(p) as fh:
        head = fh.read(4096)
    if head.lstrip().startswith("{"):
        return _parse_json(p, collective)
    return _parse_stdout(p, collective)


def _parse_stdout(p: Path, collective: str | None) -> ParseResult:
    skipped = SkipLog()
    records: list[dict[str, Any]] = []
    meta: dict[str, Any] = {}
    ranks: dict[int, tuple[str, str]] = {}
    layout: tuple[list[str], list[list[str]]] | None = None
    headers_seen = 0
    version = None
    avg_busbw = None
    oob = None
    n_lines = 0
    ignored = 0
    coll = collective
    has_error_col = False
    with open_text(p) as fh:
        for n_lines, raw in enumerate(fh, 1):
            line = raw.rstrip("\r\n")
            s = line.strip()
            if not s:
                continue
            if s.startswith("#"):
                body = s.lstrip("#").split()
                lay = _header_layout(body)
                if lay is not None:
                    if layout is not None and lay != layout:
                        meta.setdefault("layout_changes", 0)
                        meta["layout_changes"] += 1
                    layout = lay
                    headers_seen += 1
                    has_error_col = "error" in body
                    continue
                if m := _RANK.match(s):
                    ranks[int(m.group(1))] = (m.group(4), m.group(7).strip())
                elif m := _VERSION.match(s):
                    version = m.group(1)
                    meta["version_banner"] = s.lstrip("# ").strip()
                elif m := _AVG.match(s):
                    avg_busbw = to_float(m.group(1))
                elif m := _OOB.match(s):
                    oob = int(m.group(1))
                elif m := _COLLECTIVE.match(s):
                    coll = coll or _collective_from_name(m.group(1)) or m.group(1)
                elif m := _NTHREAD.match(s):
                    meta.update(
                        n_threads=int(m.group(1)),
                        n_gpus_per_process=int(m.group(2)),
                        min_bytes=int(m.group(3)),
                        max_bytes=int(m.group(4)),
                    )
                else:
                    ignored += 1
                continue
            if layout is None:
                ignored += 1
                continue
            rec = _row(s.split(), layout)
            if rec is None:
                skipped.add(n_lines, "row does not match the header columns", line)
                continue
            records.append(rec)
    if not records:
        raise ParseError(
            str(p), "no nccl-tests result rows found (expected a '#  size  count ...' header)"
        )
    if version:
        fmt_version = f"{version} (2.17+ layout)"
    elif has_error_col:
        fmt_version = "pre-2.13 (error column, no root)"
    elif layout is not None and "root" in layout[0]:
        fmt_version = "2.13-2.16 (root + #wrong columns)"
    else:
        fmt_version = "unknown layout"
    coll = coll or _collective_from_name(p.name)
    meta["headers_seen"] = headers_seen
    if headers_seen > 1:
        meta["note"] = "header printed more than once (one per process: nccl-tests#107)"
    hosts = sorted({h for h, _ in ranks.values()})
    models = sorted({m for _, m in ranks.values() if m})
    res = ParseResult(
        kind="nccl",
        path=str(p),
        format="nccl-tests-stdout",
        format_version=fmt_version,
        records=records,
        lines_read=n_lines,
        lines_ignored=ignored,
        skipped=skipped,
        meta=meta,
    )
    res.summary = _summary(
        records,
        collective=coll,
        n_ranks=len(ranks) or None,
        n_nodes=len(hosts) or None,
        gpu_model=models[0] if models else None,
        avg_busbw=avg_busbw,
        out_of_bounds=oob,
    )
    return res


def _row(tokens: list[str], layout: tuple[list[str], list[list[str]]]) -> dict[str, Any] | None:
    prefix, blocks = layout
    need = len(prefix) + sum(len(b) for b in blocks)
    if len(tokens) < need:
        return None
    rec: dict[str, Any] = {}
    i = 0
    for name in prefix:
        tok = tokens[i]
        i += 1
        if name == "size":
            if not tok.isdecimal():
                return None
            rec["size_bytes"] = int(tok)
        elif name == "count":
            if not tok.isdecimal():
                return None
            rec["count"] = int(tok)
        elif name == "type":
            rec["dtype"] = tok
        elif name == "redop":
            rec["redop"] = tok
        elif name == "root":
            rec["root"] = int(tok) if tok.lstrip("-").isdecimal() else None
        else:
            rec[name] = tok
    for b, cols in enumerate(blocks):
        pre = "oop" if b == 0 else ("ip" if b == 1 else f"b{b}")
        for name in cols:
            tok = tokens[i]
            i += 1
            if name in ("time", "algbw", "busbw"):
                if not is_number(tok):
                    if tok == "N/A":
                        rec[f"{pre}_{_UNIT_NAME[name]}"] = None
                        continue
                    return None
                rec[f"{pre}_{_UNIT_NAME[name]}"] = float(tok)
            elif name in ("#wrong", "error"):
                v = to_float(tok)
                rec[f"{pre}_wrong"] = v if v is not None else tok
            elif name in _BLOCK_COLS:
                rec[f"{pre}_{name.rstrip('%')}"] = to_float(tok)
            else:
                rec[f"{pre}_{name}"] = tok
    if "size_bytes" not in rec or (
        rec.get("oop_busbw_gb_s") is None and rec.get("ip_busbw_gb_s") is None
    ):
        return None
    if len(tokens) > need:
        rec["extra"] = " ".join(tokens[need:])
    return rec


_UNIT_NAME = {"time": "time_us", "algbw": "algbw_gb_s", "busbw": "busbw_gb_s"}


def _best_busbw(r: dict[str, Any]) -> float:
    vals = [r.get("oop_busbw_gb_s"), r.get("ip_busbw_gb_s")]
    return max((v for v in vals if v is not None), default=0.0)


def _summary(
    records: list[dict[str, Any]],
    *,
    collective: str | None,
    n_ranks: int | None,
    n_nodes: int | None,
    gpu_model: str | None,
    avg_busbw: float | None,
    out_of_bounds: int | None,
) -> dict[str, Any]:
    import math

    sizes = [r["size_bytes"] for r in records if r["size_bytes"] > 0]
    max_size = max(sizes) if sizes else 0
    plateau_rows = [
        r
        for r in records
        if r["size_bytes"] > 0
        and math.log2(max_size) - math.log2(r["size_bytes"]) <= PLATEAU_LOG2_SPAN
    ]
    best = max(plateau_rows, key=_best_busbw) if plateau_rows else max(records, key=_best_busbw)
    oop = best.get("oop_busbw_gb_s")
    blk = "oop" if oop is not None and oop >= (best.get("ip_busbw_gb_s") or 0.0) else "ip"
    small = [
        t
        for r in records
        if r["size_bytes"] <= SMALL_MESSAGE_BYTES
        for t in (r.get("oop_time_us"), r.get("ip_time_us"))
        if t is not None
    ]
    wrong = sum(
        int(v)
        for r in records
        for v in (r.get("oop_wrong"), r.get("ip_wrong"))
        if isinstance(v, float) and v > 0 and v == int(v)
    )
    return {
        "collective": collective,
        "n_sizes": len(records),
        "max_size_bytes": max_size,
        "bus_bandwidth_plateau_gb_s": _best_busbw(best),
        "plateau_size_bytes": best["size_bytes"],
        "algbw_at_plateau_gb_s": best.get(f"{blk}_algbw_gb_s"),
        "time_at_plateau_us": best.get(f"{blk}_time_us"),
        "avg_bus_bandwidth_gb_s": avg_busbw,
        "latency_us": min(small) if small else None,
        "n_ranks": n_ranks,
        "n_nodes": n_nodes,
        "gpu_model": gpu_model,
        "wrong_values": wrong,
        "out_of_bounds_values": out_of_bounds,
    }


def _parse_json(p: Path, collective: str | None) -> ParseResult:
    try:
        with open_text(p) as fh:
            doc = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ParseError(str(p), f"invalid JSON ({exc.msg})", line=exc.lineno) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ParseError(str(p), "not an nccl-tests JSON result (no 'results' list)")
    skipped = SkipLog()
    records: list[dict[str, Any]] = []
    for i, r in enumerate(doc["results"]):
        rec = _json_row(r)
        if rec is None:
            skipped.add(i + 1, "result entry without size and bus bandwidth", json.dumps(r)[:120])
        else:
            records.append(rec)
    if not records:
        raise ParseError(str(p), "nccl-tests JSON has no usable results")
    dev_raw = doc.get("devices")
    devices: list[Any] = dev_raw if isinstance(dev_raw, list) else []
    hosts = sorted(
        {str(d.get("hostname")) for d in devices if isinstance(d, dict) and d.get("hostname")}
    )
    models = sorted(
        {str(d.get("device_info") or d.get("device")) for d in devices if isinstance(d, dict)}
        - {"None"}
    )
    avg = doc.get("average_bus_bandwidth")
    avg_bw = to_float(avg.get("bandwidth")) if isinstance(avg, dict) else to_float(avg)
    oob = doc.get("out_of_bounds")
    coll = collective or _collective_from_name(str(doc.get("args", "")) + " " + p.name)
    if coll is None and isinstance(records[0].get("experiment_name"), str):
        coll = _collective_from_name(records[0]["experiment_name"])
    res = ParseResult(
        kind="nccl",
        path=str(p),
        format="nccl-tests-json",
        format_version=f"json v{doc.get('version', '?')}",
        records=records,
        lines_read=len(doc["results"]),
        skipped=skipped,
        meta={"nccl_version": doc.get("nccl_version"), "config": doc.get("config")},
    )
    cfg_raw = doc.get("config")
    cfg: dict[str, Any] = cfg_raw if isinstance(cfg_raw, dict) else {}
    res.summary = _summary(
        records,
        collective=coll,
        n_ranks=len(devices) or (int(cfg["ngpus"]) if isinstance(cfg.get("ngpus"), int) else None),
        n_nodes=len(hosts) or None,
        gpu_model=models[0] if models else None,
        avg_busbw=avg_bw,
        out_of_bounds=int(oob["count"])
        if isinstance(oob, dict) and isinstance(oob.get("count"), int)
        else None,
    )
    return res


def _json_row(r: Any) -> dict[str, Any] | None:
    if not isinstance(r, dict):
        return None
    size = r.get("size")
    if not isinstance(size, int | float) or isinstance(size, bool) or size < 0:
        return None
    rec: dict[str, Any] = {
        "size_bytes": int(size),
        "count": r.get("count"),
        "dtype": r.get("type"),
        "redop": r.get("redop"),
        "root": r.get("root"),
    }
    if r.get("experiment_name"):
        rec["experiment_name"] = r["experiment_name"]
    for key, pre in (("out_of_place", "oop"), ("in_place", "ip")):
        blk = r.get(key)
        if not isinstance(blk, dict):
            continue
        t = blk.get("time", blk.get("cpu_time"))
        rec[f"{pre}_time_us"] = to_float(t)
        rec[f"{pre}_algbw_gb_s"] = to_float(blk.get("alg_bw"))
        rec[f"{pre}_busbw_gb_s"] = to_float(blk.get("bus_bw"))
        rec[f"{pre}_wrong"] = to_float(blk.get("nwrong"))
    if rec.get("oop_busbw_gb_s") is None and rec.get("ip_busbw_gb_s") is None:
        return None
    return rec

r"""PyTorch profiler (Kineto) Chrome-trace JSON: split step time into its parts.

The parts are compute, communication, memory copies and idle.

GPU activity is read from complete events (``"ph": "X"``) by category: ``kernel`` events are
communication when their name is a collective kernel (``nccl``/``rccl``, e.g.
``ncclDevKernel_AllReduce_Sum_bf16_RING_LL``) and compute otherwise; ``gpu_memcpy`` and
``gpu_memset`` are memory copies. The analysed window runs from the first to the last
``ProfilerStep#N`` annotation (the whole GPU activity span when there is none). Per device, with
interval unions so overlapping streams are not double counted:

.. math::

    T_{window} = C + (M_{comm} \setminus C) + (M_{copy} \setminus (C \cup M_{comm})) + T_{idle}

so the four parts (compute, exposed communication, exposed copies, idle) add up to the window;
overlapped communication (hidden behind compute) is reported separately. Times in the trace are
microseconds.

Events are streamed with ``ijson`` when it is installed (the ``[calibrate]`` extra), so memory
holds the GPU intervals, not the document: a 200 MB trace no longer needs twice its size. Without
``ijson`` the whole JSON is loaded (``json.load``).

References
----------
.. [1] PyTorch, ``torch.profiler`` and Kineto trace format,
   https://github.com/pytorch/kineto ; HTA (Holistic Trace Analysis) temporal breakdown,
   https://github.com/facebookresearch/HolisticTraceAnalysis
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

try:  # streaming parser (optional): events one at a time instead of the whole document
    import ijson
except ImportError:  # pragma: no cover - exercised only without the [calibrate] extra
    ijson = None

from aitco.calibrate._io import open_binary, open_text
from aitco.calibrate.parsers.base import ParseResult, SkipLog, to_float
from aitco.errors import ParseError
from aitco.units import US_PER_S

_COMM = re.compile(r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|alltoall|sendrecv", re.I)
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_COPY_CATS = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
_KERNEL_CATS = {"kernel", "Kernel"}

Intervals = list[tuple[float, float]]


def _union(iv: Intervals) -> Intervals:
    iv = sorted(iv)
    out: Intervals = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _length(iv: Intervals) -> float:
    return sum(b - a for a, b in iv)


def _intersection(a: Intervals, b: Intervals) -> float:
    i = j = 0
    tot = 0.0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            tot += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


def _clip(iv: Intervals, lo: float, hi: float) -> Intervals:
    return [(max(a, lo), min(b, hi)) for a, b in iv if b > lo and a < hi]


def _open_binary(p: Path) -> IO[bytes]:
    return open_binary(p)  # the same errors as the other parsers; regular files only


def _first_byte(fh: IO[bytes]) -> bytes:
    while (b := fh.read(1)) and b.isspace():
        pass
    return b


def _events(p: Path, head: dict[str, Any]) -> Iterator[Any]:
    """Return the trace's events, streamed (``ijson``) or loaded; fill ``head``.

    ``head`` receives the top-level ``schemaVersion`` and ``distributedInfo``. When streaming,
    they are read from the start of the file up to ``traceEvents`` (where Kineto writes them).

    Raises
    ------
    aitco.errors.ParseError
        When the file is not JSON or has no ``traceEvents`` list.
    """
    if ijson is None:
        try:
            with open_text(p) as fh:
                doc = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ParseError(str(p), f"invalid JSON ({exc.msg})", line=exc.lineno) from exc
        events = doc.get("traceEvents") if isinstance(doc, dict) else doc
        if not isinstance(events, list):
            raise ParseError(str(p), "no 'traceEvents' list: not a Chrome/Kineto trace")
        if isinstance(doc, dict):
            head.update({k: doc[k] for k in HEAD_KEYS if k in doc})
        return iter(events)
    with _open_binary(p) as fh:
        first = _first_byte(fh)
    if first not in (b"{", b"["):
        raise ParseError(str(p), "invalid JSON (expected an object or a list)", line=1)
    if first == b"{":
        _read_head(p, head)
    return _stream(p, "traceEvents.item" if first == b"{" else "item")


#: Top-level keys of a Kineto trace kept in the result's ``meta``/``format_version``.
HEAD_KEYS = ("schemaVersion", "distributedInfo")


def _read_head(p: Path, head: dict[str, Any]) -> None:
    """Read the top-level keys before ``traceEvents`` (stops there: cheap on a large trace)."""
    with _open_binary(p) as fh:
        try:
            for key, value in ijson.kvitems(_until_events(fh), "", use_float=True):
                if key in HEAD_KEYS:
                    head[key] = value
        except ijson.JSONError:
            pass  # the truncated prefix ends mid-document; the keys before it are kept


def _until_events(fh: IO[bytes]) -> IO[bytes]:
    """Return the bytes of ``fh`` before its ``"traceEvents"`` key, closed as an object."""
    buf = b""
    while chunk := fh.read(1 << 16):
        buf += chunk
        cut = buf.find(b'"traceEvents"')
        if cut >= 0:
            return io.BytesIO(buf[:cut] + b'"_": 0}')
        if len(buf) > HEAD_BYTES_MAX:
            break
    return io.BytesIO(b"{}")


#: Largest prefix searched for the top-level keys before ``traceEvents``. [B]
HEAD_BYTES_MAX = 1 << 22


def _stream(p: Path, prefix: str) -> Iterator[Any]:
    n = 0
    with _open_binary(p) as fh:
        try:
            for n, e in enumerate(ijson.items(fh, prefix, use_float=True), start=1):  # noqa: B007
                yield e
        except ijson.JSONError as exc:
            raise ParseError(str(p), f"invalid JSON ({exc})") from exc
    if n == 0 and prefix != "item":
        raise ParseError(str(p), "no 'traceEvents' list: not a Chrome/Kineto trace")


def parse_kineto(path: str | Path) -> ParseResult:
    """Parse a Kineto/Chrome trace and break the profiled steps down by activity.

    Parameters
    ----------
    path : str or pathlib.Path
        The ``*.pt.trace.json`` file (optionally ``.gz``).

    Returns
    -------
    ParseResult
        One record per GPU device with ``compute_s``, ``comm_s``, ``exposed_comm_s``,
        ``overlapped_comm_s``, ``memcpy_s``, ``exposed_memcpy_s``, ``idle_s``, ``window_s``;
        ``summary`` gives ``n_steps``, ``step_time_s`` and the per-step split
        ``compute_s``/``exposed_comm_s``/``exposed_memcpy_s``/``idle_s`` averaged over devices,
        with the matching ``*_fraction`` of step time.

    Raises
    ------
    aitco.errors.ParseError
        If the JSON has no ``traceEvents`` or no GPU activity.
    """
    p = Path(path)
    doc: dict[str, Any] = {}  # the top-level keys other than traceEvents
    events = _events(p, doc)
    n_events = 0
    skipped = SkipLog()
    steps: dict[int, tuple[float, float]] = {}
    per_dev: dict[str, dict[str, Intervals]] = {}
    names: dict[str, float] = {}
    for i, e in enumerate(events):
        n_events = i + 1
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        ts = to_float(e.get("ts"))
        dur = to_float(e.get("dur"))
        if ts is None or dur is None or dur < 0:
            skipped.add(i + 1, "complete event without numeric ts/dur", str(e)[:120])
            continue
        name = str(e.get("name", ""))
        cat = str(e.get("cat", ""))
        if m := _STEP.match(name):
            steps[int(m.group(1))] = (ts, ts + dur)
            continue
        if cat in _KERNEL_CATS:
            kind = "comm" if _COMM.search(name) else "compute"
        elif cat in _COPY_CATS:
            kind = "memcpy"
        else:
            continue
        args_raw = e.get("args")
        args: dict[str, Any] = args_raw if isinstance(args_raw, dict) else {}
        dev = str(args.get("device", e.get("pid", "0")))
        per_dev.setdefault(dev, {"compute": [], "comm": [], "memcpy": []})[kind].append(
            (ts, ts + dur)
        )
        if kind == "comm":
            names[name.split("(")[0]] = names.get(name.split("(")[0], 0.0) + dur / US_PER_S
    if not per_dev:
        raise ParseError(str(p), "trace has no GPU kernel or memcpy events")
    if steps:
        lo = min(a for a, _ in steps.values())
        hi = max(b for _, b in steps.values())
        n_steps = len(steps)
    else:
        lo = min(a for d in per_dev.values() for lst in d.values() for a, _ in lst)
        hi = max(b for d in per_dev.values() for lst in d.values() for _, b in lst)
        n_steps = 1
    window = hi - lo
    if window <= 0:
        raise ParseError(str(p), "trace window has zero length")
    records: list[dict[str, Any]] = []
    for dev, kinds in sorted(per_dev.items()):
        comp = _union(_clip(kinds["compute"], lo, hi))
        comm = _union(_clip(kinds["comm"], lo, hi))
        copy = _union(_clip(kinds["memcpy"], lo, hi))
        c = _length(comp)
        comm_len = _length(comm)
        overlap = _intersection(comm, comp)
        cc = _union(comp + comm)
        copy_len = _length(copy)
        exposed_copy = copy_len - _intersection(copy, cc)
        busy = _length(_union(cc + copy))
        records.append(
            {
                "device": dev,
                "window_s": window / US_PER_S,
                "compute_s": c / US_PER_S,
                "comm_s": comm_len / US_PER_S,
                "overlapped_comm_s": overlap / US_PER_S,
                "exposed_comm_s": (comm_len - overlap) / US_PER_S,
                "memcpy_s": copy_len / US_PER_S,
                "exposed_memcpy_s": exposed_copy / US_PER_S,
                "idle_s": (window - busy) / US_PER_S,
            }
        )
    nd = len(records)

    def mean_per_step(k: str) -> float:
        return float(sum(r[k] for r in records)) / nd / n_steps

    step_s = window / US_PER_S / n_steps
    summary: dict[str, Any] = {
        "n_steps": n_steps,
        "n_devices": nd,
        "step_time_s": step_s,
        "from_profiler_steps": bool(steps),
    }
    for k in (
        "compute_s",
        "exposed_comm_s",
        "exposed_memcpy_s",
        "idle_s",
        "comm_s",
        "overlapped_comm_s",
        "memcpy_s",
    ):
        summary[k] = mean_per_step(k)
    for k in ("compute_s", "exposed_comm_s", "exposed_memcpy_s", "idle_s"):
        summary[k.replace("_s", "_fraction")] = summary[k] / step_s
    summary["comm_kernels_s"] = dict(sorted(names.items(), key=lambda kv: -kv[1])[:10])
    version = (
        f"schemaVersion {doc.get('schemaVersion')}"
        if isinstance(doc, dict) and "schemaVersion" in doc
        else "chrome trace"
    )
    return ParseResult(
        kind="kineto",
        path=str(p),
        format="kineto-chrome-trace",
        format_version=version,
        records=records,
        summary=summary,
        lines_read=n_events,
        skipped=skipped,
        meta={"distributedInfo": doc.get("distributedInfo")}
        if isinstance(doc, dict) and "distributedInfo" in doc
        else {},
    )

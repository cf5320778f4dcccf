"""Training logs of several frameworks, normalised to one step-record shape.

Supported: Megatron-LM, Megatron-DeepSpeed/DeepSpeed, torchtitan, HF ``trainer_state.json`` and
generic JSONL step records.

Text logs are streamed line by line; each line is matched by its labels (never by position):

* Megatron-LM ``training_log``: `` | ``-separated ``key: value`` pairs (``iteration 43/ 100``,
  ``elapsed time per iteration (ms): 5444.9`` (Primus: ``13100.0/13240.9`` = current/avg),
  ``throughput per GPU (TFLOP/s/GPU)``, ``tokens per GPU (tokens/s/GPU)``, ``global batch
  size``, ``consumed samples``, ``lm loss``), with an optional ``[timestamp]`` prefix;
* Megatron-DeepSpeed: ``samples/sec: 7.799 | iteration 34/ 10000 | ... | approx flops per GPU:
  112.9TFLOPS``; timer lines ``time (ms) | forward: ... | optimizer: ... | batch generator: ...``;
* DeepSpeed ``timer.py``: ``epoch=0/micro_step=34/global_step=34, RunningAvgSamplesPerSec=...,
  CurrSamplesPerSec=..., MemAllocated=...GB`` (<= 0.6: ``0/40, SamplesPerSec=...``);
* torchtitan ``metrics.py``: ``step: 4  loss: 7.6  memory: 66.91GiB(37.51%)  tps: 10,050
  tflops: 314.71  mfu: 13.99%`` (``tps`` is per device; ANSI colours and ``[rank0]:`` prefixes
  are stripped);
* JSONL: one JSON object per line with step keys (``step``/``iteration``, ``step_time_ms`` or
  ``step_time_s``, ``tokens_per_s_per_gpu``, ``tflops``, ``mfu``, ``loss``; TensorBoard/W&B
  names such as ``throughput(tps)``, ``mfu(%)``, ``time_metrics/end_to_end(s)`` also).

``trainer_state.json`` (and ``train_results.json``/``all_results.json``) is read as JSON.

Every step record uses these keys where known: ``step``, ``step_time_s``,
``reported_tflops_per_gpu`` (the framework's own FLOP count), ``tokens_per_s_per_gpu``,
``samples_per_s``, ``mfu`` (0-1), ``loss``, ``global_batch``, ``consumed_samples``,
``memory_per_gpu_gb`` (as the framework reports it), ``timestamp``, and ``timers_ms``
(Megatron/DeepSpeed timers).
"""

from __future__ import annotations

import json
import re
import statistics
from array import array
from pathlib import Path
from typing import Any

from aitco.calibrate._io import open_text
from aitco.calibrate.parsers.base import ParseResult, SkipLog, strip_ansi, to_float
from aitco.errors import ParseError
from aitco.units import GIB, GIGA, MS_PER_S, PERCENT, TERA

#: Step records kept as dicts (the numbers of every step are kept in compact arrays).
MAX_RECORDS_KEPT = 100_000
#: Per-step numbers whose steady-state medians the summary reports.
SERIES_KEYS = (
    "step_time_s",
    "reported_tflops_per_gpu",
    "tokens_per_s_per_gpu",
    "tokens_per_s",
    "samples_per_s",
    "mfu",
    "loss",
    "memory_per_gpu_gb",
)
#: Steps numbered up to this are excluded from the steady-state medians (compilation, warm-up).
WARMUP_STEPS = 1

_PREFIX = re.compile(r"^(?:\[(?:rank|default)\d+\]:\s*)+")
_TS = re.compile(r"^\s*\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)\]")
_ITER = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)")
_TITAN = re.compile(r"\bstep:\s*(\d+)\s+loss:")
_TITAN_KV = re.compile(r"(\w+):\s*([^\s]+(?:\([^)]*\))?)")
_DS_NEW = re.compile(
    r"epoch=(\d+)/micro_step=(\d+)/global_step=(\d+),\s*RunningAvgSamplesPerSec=([^,]+),"
    r"\s*CurrSamplesPerSec=([^,]+),\s*MemAllocated=([^,]+?)GB,\s*MaxMemAllocated=([^,\s]+?)GB"
)
_DS_OLD = re.compile(
    r"\b(\d+)/(\d+),\s*SamplesPerSec=([^,]+),\s*MemAllocated=([^,]+?)GB,\s*MaxMemAllocated=([^,\s]+?)GB"
)
_DS_STEP = re.compile(r"\bstep=(\d+),\s*skipped=(\d+)")
_LOGGING_TS = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[,.]?\d*\]")
_TITAN_TS = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[,.]\d+")

#: Generic JSON step keys -> (normalised key, factor to the normalised unit).
JSON_KEYS: dict[str, tuple[str, float]] = {
    "step": ("step", 1.0),
    "iteration": ("step", 1.0),
    "iter": ("step", 1.0),
    "global_step": ("step", 1.0),
    "_step": ("step", 1.0),
    "step_time_ms": ("step_time_s", 1 / MS_PER_S),
    "iteration_time_ms": ("step_time_s", 1 / MS_PER_S),
    "elapsed_time_per_iteration_ms": ("step_time_s", 1 / MS_PER_S),
    "step_time_s": ("step_time_s", 1.0),
    "step_time": ("step_time_s", 1.0),
    "iteration_time": ("step_time_s", 1.0),
    "time_metrics/end_to_end(s)": ("step_time_s", 1.0),
    "tokens_per_s_per_gpu": ("tokens_per_s_per_gpu", 1.0),
    "tokens_per_sec_per_gpu": ("tokens_per_s_per_gpu", 1.0),
    "tps": ("tokens_per_s_per_gpu", 1.0),
    "throughput(tps)": ("tokens_per_s_per_gpu", 1.0),
    "throughput/device/tokens_per_sec": ("tokens_per_s_per_gpu", 1.0),
    "tokens_per_s": ("tokens_per_s", 1.0),
    "tokens_per_sec": ("tokens_per_s", 1.0),
    "throughput/tokens_per_sec": ("tokens_per_s", 1.0),
    "samples_per_s": ("samples_per_s", 1.0),
    "samples_per_sec": ("samples_per_s", 1.0),
    "throughput/samples_per_sec": ("samples_per_s", 1.0),
    "tflops": ("reported_tflops_per_gpu", 1.0),
    "tflops_per_gpu": ("reported_tflops_per_gpu", 1.0),
    "throughput/device/flops_per_sec": ("reported_tflops_per_gpu", 1.0 / TERA),
    "device/flops_per_sec": ("reported_tflops_per_gpu", 1.0 / TERA),
    "mfu": ("mfu", 1.0),
    "throughput/device/mfu": ("mfu", 1.0),
    "device/mfu": ("mfu", 1.0),
    "mfu(%)": ("mfu", 1 / PERCENT),
    "mfu_pct": ("mfu", 1 / PERCENT),
    "loss": ("loss", 1.0),
    "lm_loss": ("loss", 1.0),
    "train/loss": ("loss", 1.0),
    "global_batch_size": ("global_batch", 1.0),
    "global_batch": ("global_batch", 1.0),
    "seq_len": ("seq_len", 1.0),
    "gpus": ("gpus", 1.0),
    "world_size": ("gpus", 1.0),
    "data_loading_s": ("data_loading_s", 1.0),
    "memory/max_reserved(GiB)": ("memory_per_gpu_gb", GIB / GIGA),
}


def _kv_pairs(line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for seg in line.split("|"):
        seg = seg.strip()
        if ":" in seg:
            k, _, v = seg.rpartition(":")
            out[k.strip().lower()] = v.strip()
    return out


def _megatron(line: str) -> dict[str, Any] | None:
    m = _ITER.search(line)
    if not m:
        return None
    kv = _kv_pairs(line)
    rec: dict[str, Any] = {"step": int(m.group(1)), "train_iters": int(m.group(2))}
    if ts := _TS.match(line):
        rec["timestamp"] = ts.group(1)
    et = kv.get("elapsed time per iteration (ms)")
    if et is not None:
        cur = to_float(et.split("/")[0])
        if cur is None:
            return None
        rec["step_time_s"] = cur / MS_PER_S
    for key, name in (
        ("throughput per gpu (tflop/s/gpu)", "reported_tflops_per_gpu"),
        ("approx flops per gpu", "reported_tflops_per_gpu"),
        ("tflops", "reported_tflops_per_gpu"),
        ("tokens per gpu (tokens/s/gpu)", "tokens_per_s_per_gpu"),
        ("samples/sec", "samples_per_s"),
        ("global batch size", "global_batch"),
        ("consumed samples", "consumed_samples"),
        ("consumed tokens", "consumed_tokens"),
        ("lm loss", "loss"),
        ("lm_loss", "loss"),
        ("learning rate", "learning_rate"),
        ("grad norm", "grad_norm"),
        ("number of skipped iterations", "skipped_iterations"),
        ("number of nan iterations", "nan_iterations"),
    ):
        if key in kv and name not in rec:
            x = to_float(kv[key].split("/")[0])
            if x is not None:
                rec[name] = x
    if (
        "step_time_s" not in rec
        and "reported_tflops_per_gpu" not in rec
        and "samples_per_s" not in rec
    ):
        return None
    return rec


def _timers(line: str) -> dict[str, float] | None:
    if "time (ms)" not in line:
        return None
    _, _, rest = line.partition("time (ms)")
    out: dict[str, float] = {}
    for seg in rest.split("|"):
        k, sep, v = seg.partition(":")
        if not sep:
            continue
        x = to_float(v)
        if x is not None:
            out[k.strip().replace(" ", "_").replace("-", "_")] = x
    return out or None


def _titan(line: str) -> dict[str, Any] | None:
    m = _TITAN.search(line)
    if not m:
        return None
    rec: dict[str, Any] = {"step": int(m.group(1))}
    body = line[m.start() :]
    for k, v in _TITAN_KV.findall(body):
        if k == "loss":
            rec["loss"] = to_float(v)
        elif k == "grad_norm":
            rec["grad_norm"] = to_float(v)
        elif k == "memory":
            gib = to_float(v.split("(")[0])
            rec["memory_per_gpu_gb"] = gib * GIB / GIGA if gib is not None else None
        elif k in ("tps", "wps"):
            rec["tokens_per_s_per_gpu"] = to_float(v)
        elif k == "tflops":
            rec["reported_tflops_per_gpu"] = to_float(v)
        elif k == "mfu":
            x = to_float(v)
            rec["mfu"] = x / PERCENT if x is not None else None
    if ts := _TITAN_TS.search(line[: m.start()]):
        rec["timestamp"] = ts.group(1)
    if rec.get("tokens_per_s_per_gpu") is None and rec.get("loss") is None:
        return None
    return rec


def _deepspeed(line: str) -> tuple[dict[str, Any], str] | None:
    ts = _LOGGING_TS.match(line)
    if m := _DS_NEW.search(line):
        rec: dict[str, Any] = {
            "step": int(m.group(3)),
            "micro_step": int(m.group(2)),
            "samples_per_s_running_avg": to_float(m.group(4)),
            "samples_per_s": to_float(m.group(5)),
            "memory_per_gpu_gb": to_float(m.group(6)),
            "max_memory_per_gpu_gb": to_float(m.group(7)),
        }
        ver = "timer.py ThroughputTimer (>=0.7)"
    elif m := _DS_OLD.search(line):
        rec = {
            "epoch": int(m.group(1)),
            "step": int(m.group(2)),
            "samples_per_s": to_float(m.group(3)),
            "memory_per_gpu_gb": to_float(m.group(4)),
            "max_memory_per_gpu_gb": to_float(m.group(5)),
        }
        ver = "timer.py legacy (<=0.6)"
    else:
        return None
    if rec["samples_per_s"] is None:
        return None
    if ts:
        rec["timestamp"] = ts.group(1)
    return rec, ver


def _json_record(obj: dict[str, Any]) -> dict[str, Any] | None:
    rec: dict[str, Any] = {}
    for k, v in obj.items():
        spec = JSON_KEYS.get(k)
        if spec is None:
            continue
        x = to_float(v)
        if x is None:
            continue
        name, factor = spec
        rec.setdefault(name, x * factor)
    if "step" in rec:
        rec["step"] = int(rec["step"])
    keys = set(rec) - {"step"}
    if not keys & {
        "step_time_s",
        "tokens_per_s_per_gpu",
        "tokens_per_s",
        "reported_tflops_per_gpu",
        "mfu",
        "samples_per_s",
        "loss",
    }:
        return None
    return rec


def parse_train_log(path: str | Path) -> ParseResult:
    """Parse a training log of any supported framework into normalised step records.

    Parameters
    ----------
    path : str or pathlib.Path
        A text log (optionally ``.gz``), a JSONL of step records, or a ``trainer_state.json``.

    Returns
    -------
    ParseResult
        One record per logged step (keys listed in the module docstring); ``summary`` holds
        ``framework``, ``n_steps``, ``first_step``/``last_step``, the steady-state medians
        ``step_time_s``, ``reported_tflops_per_gpu``, ``tokens_per_s_per_gpu``, ``samples_per_s``,
        ``mfu``, the mean ``timers_ms`` and ``global_batch``.

    Raises
    ------
    aitco.errors.ParseError
        If no step record of any known framework is found.
    """
    p = Path(path)
    with open_text(p) as fh:
        head = fh.read(4096)
    stripped = head.lstrip()
    if stripped.startswith("{") and (
        not _first_line_is_object(head) or '"train_runtime"' in head or '"log_history"' in head
    ):
        return _parse_trainer_state(p)
    return _parse_lines(p)


def _first_line_is_object(head: str) -> bool:
    first = head.lstrip().split("\n", 1)[0].strip()
    try:
        return isinstance(json.loads(first), dict)
    except json.JSONDecodeError:
        return False


def _parse_lines(p: Path) -> ParseResult:
    skipped = SkipLog()
    steps = _Steps()
    add = steps.add
    frameworks: dict[str, str] = {}
    timers: dict[str, list[dict[str, float]]] = {}

    ds_steps: dict[int, int] = {}
    ignored = 0
    n = 0
    with open_text(p) as fh:
        for n, raw in enumerate(fh, 1):
            line = _PREFIX.sub("", strip_ansi(raw.rstrip("\r\n")))
            s = line.strip()
            if not s:
                continue
            if s.startswith("{"):
                try:
                    obj = json.loads(s)
                except json.JSONDecodeError:
                    skipped.add(n, "invalid JSON line", s)
                    continue
                if not isinstance(obj, dict):
                    skipped.add(n, "JSON line is not an object", s)
                    continue
                rec = _json_record(obj)
                if rec is None:
                    ignored += 1
                    continue
                add(rec)
                frameworks.setdefault("jsonl", "jsonl step records")
                continue
            if "iteration" in s and "|" in s:
                rec = _megatron(s)
                if rec is None:
                    skipped.add(
                        n, "Megatron iteration line without a readable time or throughput", s
                    )
                    continue
                if "samples/sec" in s or "approx flops per gpu" in s.lower():
                    frameworks.setdefault(
                        "megatron-deepspeed", "samples/sec + approx flops per GPU"
                    )
                else:
                    ver = (
                        "2024+ ([timestamp] prefix)"
                        if "timestamp" in rec
                        else "legacy (no timestamp)"
                    )
                    if "reported_tflops_per_gpu" in rec:
                        ver += ", --log-throughput"
                    frameworks.setdefault("megatron-lm", ver)
                add(rec)
                continue
            if "time (ms)" in s:
                t = _timers(s)
                if t is None:
                    skipped.add(n, "timer line without values", s)
                else:
                    group = "deepspeed" if ("rank=" in s or "log_dist" in s) else "megatron"
                    timers.setdefault(group, []).append(t)
                continue
            if "step:" in s and "loss:" in s:
                rec = _titan(s)
                if rec is None:
                    skipped.add(n, "torchtitan metrics line without loss or tps", s)
                    continue
                frameworks.setdefault("torchtitan", "metrics.py console line")
                add(rec)
                continue
            if "SamplesPerSec=" in s:
                got = _deepspeed(s)
                if got is None:
                    skipped.add(n, "DeepSpeed throughput line not readable", s)
                    continue
                rec, ver = got
                frameworks.setdefault("deepspeed", ver)
                add(rec)
                continue
            if m := _DS_STEP.search(s):
                ds_steps[int(m.group(1))] = int(m.group(2))
                continue
            ignored += 1
    steps.close()
    records = steps.kept
    if not steps.n:
        raise ParseError(
            str(p), "no training step records found (Megatron, DeepSpeed, torchtitan, JSONL)"
        )
    framework = "+".join(frameworks) if frameworks else "unknown"
    res = ParseResult(
        kind="trainlog",
        path=str(p),
        format=framework,
        format_version="; ".join(f"{k}: {v}" for k, v in frameworks.items()),
        records=records,
        lines_read=n,
        lines_ignored=ignored,
        skipped=skipped,
    )
    res.summary = steps.summary(framework)
    if steps.n > len(records):
        res.meta["records_kept"] = len(records)
        res.meta["note"] = f"only the first {len(records):,} of {steps.n:,} step records are kept"
    if timers:
        res.summary["timers_ms"] = {
            group: {
                k: statistics.fmean([t[k] for t in lst if k in t])
                for k in sorted({k for t in lst for k in t})
            }
            for group, lst in timers.items()
        }
    if ds_steps:
        res.summary["skipped_steps"] = max(ds_steps.values())
    return res


class _Steps:
    """Step records in bounded memory.

    The first :data:`MAX_RECORDS_KEPT` are kept as dicts; every step's numbers go to compact
    arrays for the medians.
    """

    def __init__(self) -> None:
        self.kept: list[dict[str, Any]] = []
        self.last: dict[str, Any] | None = None
        self.n = 0
        self.series = {k: array("d") for k in SERIES_KEYS}
        self.first_step: int | None = None
        self.last_step: int | None = None
        self.global_batch: float | None = None
        self.train_iters: int | None = None

    def add(self, rec: dict[str, Any]) -> None:
        """Add a step record, merged into the previous one when both are the same step."""
        if self.last is not None and "step" in rec and self.last.get("step") == rec["step"]:
            for k, v in rec.items():
                self.last.setdefault(k, v)
            return
        self._finish()
        self.last = rec

    def _finish(self) -> None:
        r = self.last
        if r is None:
            return
        self.last = None
        self.n += 1
        step = r.get("step")
        if isinstance(step, int):
            self.first_step = step if self.first_step is None else min(self.first_step, step)
            self.last_step = step if self.last_step is None else max(self.last_step, step)
        warm = isinstance(step, int) and 0 < step <= WARMUP_STEPS
        for k, arr in self.series.items():
            v = r.get(k)
            if not warm and isinstance(v, int | float) and not isinstance(v, bool):
                arr.append(float(v))
        if isinstance(r.get("global_batch"), int | float):
            self.global_batch = r["global_batch"]
        if "train_iters" in r:
            self.train_iters = r["train_iters"]
        if len(self.kept) < MAX_RECORDS_KEPT:
            self.kept.append(r)

    def close(self) -> None:
        """Finish the last record."""
        self._finish()

    def summary(self, framework: str) -> dict[str, Any]:
        """Steady-state medians and run facts."""
        out: dict[str, Any] = {
            "framework": framework,
            "n_steps": self.n,
            "first_step": self.first_step,
            "last_step": self.last_step,
        }
        for k, arr in self.series.items():
            out[k] = statistics.median(arr) if arr else None
        out["global_batch"] = int(self.global_batch) if self.global_batch else None
        out["train_iters"] = self.train_iters
        return out


def _parse_trainer_state(p: Path) -> ParseResult:
    try:
        with open_text(p) as fh:
            doc = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ParseError(str(p), f"invalid JSON ({exc.msg})", line=exc.lineno) from exc
    if not isinstance(doc, dict):
        raise ParseError(str(p), "expected a JSON object (trainer_state.json)")
    skipped = SkipLog()
    if "log_history" in doc:
        hist = doc["log_history"]
        if not isinstance(hist, list):
            raise ParseError(str(p), "log_history is not a list")
        fmt_version = "trainer_state.json"
    elif "train_runtime" in doc:
        hist = [doc]
        fmt_version = "train_results.json / all_results.json"
    else:
        rec = _json_record(doc)
        if rec is None:
            raise ParseError(str(p), "JSON object has no log_history, train_runtime or step keys")
        hist = [doc]
        fmt_version = "single JSON step record"
    train: list[dict[str, Any]] = []
    evals: list[dict[str, Any]] = []
    final: dict[str, Any] | None = None
    for i, e in enumerate(hist):
        if not isinstance(e, dict):
            skipped.add(i + 1, "log_history entry is not an object", str(e))
            continue
        if "train_runtime" in e:
            final = e
        elif any(k.startswith("eval_") for k in e):
            evals.append(e)
        elif "loss" in e or "step" in e:
            rec = {
                k: e[k]
                for k in (
                    "step",
                    "loss",
                    "learning_rate",
                    "grad_norm",
                    "epoch",
                    "num_tokens",
                    "mean_token_accuracy",
                )
                if k in e
            }
            train.append(rec)
        else:
            skipped.add(i + 1, "unrecognised log_history entry", json.dumps(e)[:120])
    has_final = final is not None
    fmt_version += " (final train_runtime entry)" if has_final else " (checkpoint: no final entry)"
    summary: dict[str, Any] = {
        "framework": "hf-trainer",
        "n_steps": len(train),
        "n_evals": len(evals),
        "global_step": doc.get("global_step"),
        "max_steps": doc.get("max_steps"),
        "epoch": doc.get("epoch"),
        "train_batch_size": doc.get("train_batch_size"),
        "total_flos": to_float(doc.get("total_flos")),
        "num_input_tokens_seen": doc.get("num_input_tokens_seen"),
        "last_loss": train[-1].get("loss") if train else None,
        "last_num_tokens": next(
            (r["num_tokens"] for r in reversed(train) if "num_tokens" in r), None
        ),
        "best_metric": doc.get("best_metric"),
        "eval_loss": evals[-1].get("eval_loss") if evals else None,
        "has_final_entry": has_final,
    }
    if final is not None:
        rt = to_float(final.get("train_runtime"))
        summary.update(
            train_runtime_s=rt,
            train_samples_per_s=to_float(final.get("train_samples_per_second")),
            train_steps_per_s=to_float(final.get("train_steps_per_second")),
            tokens_per_s=to_float(final.get("train_tokens_per_second")),
            train_loss=to_float(final.get("train_loss")),
        )
        if summary["total_flos"] is None:
            summary["total_flos"] = to_float(final.get("total_flos"))
        sps = summary["train_steps_per_s"]
        summary["step_time_s"] = 1 / sps if sps else None
    if not train and final is None and not evals:
        raise ParseError(str(p), "trainer state has no usable log_history entries")
    return ParseResult(
        kind="trainlog",
        path=str(p),
        format="hf-trainer",
        format_version=fmt_version,
        records=train + evals,
        summary=summary,
        lines_read=len(hist),
        skipped=skipped,
    )

"""Fuzzing the doors that are not flags (issue 37): hostile values inside the files a command reads.

Each :class:`Door` writes one input file from a known-good template with one field set to a
hostile value *as a person types it* (YAML ``1e19`` or ``true``, JSON ``NaN`` or a 400-digit
integer, a CSV cell ``inf``), runs the command in-process (``harness.check``) and judges it by
the harness's rules plus three of the issue's own:

- every input file is byte-identical afterwards (:data:`OUTPUT_EQUALS_INPUT` cases write their
  output onto an input, and must be refused);
- a ``--json`` answer reports no option above ``ABSURD_TOTAL_USD`` as feasible;
- nothing runs past ``harness``'s caller's time bound (the callers time each case).

Doors: scenario fields (training and inference), catalog overlay fields and dates, Hugging Face
``config.json`` fields, ``--trace`` CSV rows, price-trace rows, audit log rows, training-log
rows, and outputs equal to inputs. Used by ``tests/fuzz/test_cli_fuzz.py`` (a bounded draw) and
``benchmarks/fuzz_cli.py`` (every door x every value).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness

EXAMPLES = harness.EXAMPLES
DATA = harness.DATA
#: A total above this, reported as feasible, is a problem (issue 37's "absurd totals"). [USD]
ABSURD_TOTAL_USD = 1e15

#: Hostile YAML scalars, written as a person would type them.
YAML_VALUES = (".nan", ".inf", "-.inf", "-1", "0", "1e19", "1.0e300", "1e-320", "1e308", "true",
               "99999999999999999999999", "'1e19'", "[1, 2]", "{a: 1}", "null", "''",
               "2025-13-45", "2099-01-01", "-0.0", "0x7fffffffffffffff", "&a [*a]")  # fmt: skip
#: Hostile JSON values (Python's json module reads NaN and Infinity).
JSON_VALUES = ("NaN", "Infinity", "-Infinity", "-1", "0", "1e400", "1" + "0" * 400, "true",
               "null", '"x"', "[]", "{}", "1e-320", "2.5")  # fmt: skip
#: Hostile CSV cells.
CSV_VALUES = ("nan", "inf", "-inf", "-1", "0", "1e300", "1e-320", "", "x", "1" + "0" * 400)

_MARK = "__HOSTILE__"


@dataclass(frozen=True)
class Door:
    """A file a command reads, one of its fields, and how to run the command on it."""

    name: str
    field: str
    values: tuple[str, ...]
    make: Callable[[Path, str, str], tuple[list[str], list[Path]]]


# ----------------------------------------------------------------------------- templates
def _set(doc: Any, dotted: str, value: Any) -> Any:
    """Set ``a.b[0].c`` in a parsed document (creating mappings on the way)."""
    parts = dotted.replace("]", "").replace("[", ".").split(".")
    node = doc
    for p in parts[:-1]:
        key: Any = int(p) if p.isdigit() else p
        if isinstance(node, dict) and key not in node:
            node[key] = {}
        node = node[key]
    last: Any = int(parts[-1]) if parts[-1].isdigit() else parts[-1]
    node[last] = value
    return doc


def _yaml_with(template: Path, dotted: str, raw: str) -> str:
    import yaml

    doc = yaml.safe_load(template.read_text(encoding="utf-8"))
    text = yaml.safe_dump(_set(doc, dotted, _MARK), sort_keys=False)
    return text.replace(_MARK, raw)


def _scenario(template: Path, command: str = "compare") -> Any:
    def make(tmp: Path, dotted: str, raw: str) -> tuple[list[str], list[Path]]:
        p = tmp / "scenario.yaml"
        p.write_text(_yaml_with(template, dotted, raw), encoding="utf-8")
        return [command, str(p), "--json"], [p]

    return make


OVERLAY = """\
kind: accelerators
sources:
  mine: {title: my prices, retrieved: 2025-06-01}
entries:
  - id: h100-sxm5-80gb
    source: mine
    tdp_w: 700
    memory_gb: 80
    hbm_bandwidth_gb_s: 3350
    peak_tflops: {bf16: 989}
"""
FACTOR = """\
kind: factors
sources:
  mine: {title: my facility, retrieved: 2025-06-01}
entries:
  - {id: pue.air, source: mine, category: power, unit: ratio, value: 1.3}
"""


def _overlay(template: str, train: bool = True) -> Any:
    def make(tmp: Path, dotted: str, raw: str) -> tuple[list[str], list[Path]]:
        import yaml

        doc = yaml.safe_load(template)
        p = tmp / "overlay.yaml"
        p.write_text(
            yaml.safe_dump(_set(doc, dotted, _MARK), sort_keys=False).replace(_MARK, raw),
            encoding="utf-8",
        )
        if train:
            args = ["train", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb", "--gpus",
                    "8", "--tokens", "1e9", "--json", "--catalog", str(p)]  # fmt: skip
        else:
            args = ["buy-vs-rent", "--hardware", "h100-sxm5-80gb", "--gpus", "8", "--json",
                    "--catalog", str(p)]  # fmt: skip
        return args, [p]

    return make


HF_CONFIG = {
    "model_type": "llama",
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 8192,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
    "rms_norm_eps": 1e-5,
}


def _hf_config(tmp: Path, key: str, raw: str) -> tuple[list[str], list[Path]]:
    d = tmp / "model"
    d.mkdir()
    p = d / "config.json"
    p.write_text(json.dumps({**HF_CONFIG, key: _MARK}).replace(f'"{_MARK}"', raw))
    args = ["train", "--model", str(p), "--hardware", "h100-sxm5-80gb", "--gpus", "8",
            "--tokens", "1e9", "--json"]  # fmt: skip
    return args, [p]


def _trace(tmp: Path, column: str, raw: str) -> tuple[list[str], list[Path]]:
    cols = ("arrival_s", "input_tokens", "output_tokens")
    rows = [("0", "100", "50"), ("0.5", "120", "40"), ("1.0", "90", "60")]
    bad = tuple(raw if c == column else v for c, v in zip(cols, rows[0], strict=True))
    p = tmp / "trace.csv"
    p.write_text(",".join(cols) + "\n" + "\n".join(",".join(r) for r in [*rows, bad]) + "\n")
    args = ["infer", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb", "--trace", str(p),
            "--json"]  # fmt: skip
    return args, [p]


PRICE_COLUMNS = ("timestamp", "offer", "usd_per_hour", "gpus", "capacity_gpus", "interrupted")


def _price_trace(tmp: Path, column: str, raw: str) -> tuple[list[str], list[Path]]:
    rows = [
        ("2026-03-02T00:00:00Z", "a-spot", "19.7", "8", "64", "0"),
        ("2026-03-02T00:00:00Z", "b-spot", "1.5", "1", "12", "0"),
        ("2026-03-02T01:00:00Z", "a-spot", "18.2", "8", "64", "1"),
        ("2026-03-02T01:00:00Z", "b-spot", "1.6", "1", "12", "0"),
    ]
    i = PRICE_COLUMNS.index(column)
    rows[2] = tuple(raw if k == i else v for k, v in enumerate(rows[2]))
    p = tmp / "trace.csv"
    p.write_text(",".join(PRICE_COLUMNS) + "\n" + "\n".join(",".join(r) for r in rows) + "\n")
    return ["arbitrage", str(p), "--gpus", "8", "--json"], [p]


AUDIT_RECORD = {
    "id": "x",
    "object": "chat.completion",
    "created": 1730000000,
    "model": "gpt-4o-2024-08-06",
    "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}


def _audit(tmp: Path, dotted: str, raw: str) -> tuple[list[str], list[Path]]:
    rec = json.dumps(_set(json.loads(json.dumps(AUDIT_RECORD)), dotted, _MARK))
    p = tmp / "log.jsonl"
    good = json.dumps(AUDIT_RECORD)
    p.write_text("\n".join([good, rec.replace(f'"{_MARK}"', raw), good]) + "\n")
    return ["audit", str(p), "--price", "openai/gpt-4o", "--json"], [p]


def _steps(tmp: Path, key: str, raw: str) -> tuple[list[str], list[Path]]:
    lines = (DATA / "steps.jsonl").read_text().splitlines()
    rec = json.loads(lines[2])
    rec[key] = _MARK
    lines.insert(3, json.dumps(rec).replace(f'"{_MARK}"', raw))
    p = tmp / "steps.jsonl"
    p.write_text("\n".join(lines) + "\n")
    args = ["actual-vs-estimate", str(p), "--model", "llama-3-8b", "--hardware",
            "h100-sxm5-80gb", "--gpus", "8", "--seq-len", "2048", "--global-batch", "16",
            "--json"]  # fmt: skip
    return args, [p]


# ----------------------------------------------------------------------------- outputs = inputs
def _copy(src: Path, tmp: Path, name: str) -> Path:
    dst = tmp / name
    shutil.copy(src, dst)
    return dst


def _out_is_in(tmp: Path, which: str, how: str) -> tuple[list[str], list[Path]]:
    """A writer command whose output path is one of its inputs (by name, link or hard link)."""
    if which == "sweep --csv":
        src = _copy(EXAMPLES / "sweep_training.yaml", tmp, "s.yaml")
        args = ["sweep", str(src), "--sample", "3", "--no-progress", "--csv", "<out>"]
    elif which == "calibrate -o":
        src = _copy(DATA / "nccl_results.json", tmp, "log.json")
        args = ["calibrate", str(src), "-o", "<out>", "--force"]
    elif which == "report -o":
        src = _copy(EXAMPLES / "default.yaml", tmp, "r.md")
        args = ["report", str(src), "-o", "<out>"]
    elif which == "roi-template -o":
        src = _copy(EXAMPLES / "roi_support_bot.yaml", tmp, "roi.xlsx")
        args = ["roi-template", "--roi", str(src), "-o", "<out>"]
    else:  # an overlay read by every command
        src = tmp / "ov.yaml"
        src.write_text("kind: accelerators\nentries: []\n")
        args = ["calibrate", str(DATA / "nccl_results.json"), "--catalog", str(src), "-o",
                "<out>", "--force"]  # fmt: skip
    out = src
    if how == "symlink":
        out = tmp / ("link" + src.suffix)
        out.symlink_to(src)
    elif how == "hardlink":
        out = tmp / ("hard" + src.suffix)
        out.hardlink_to(src)
    return [str(out) if a == "<out>" else a for a in args], [src]


def _output_door(tmp: Path, which: str, how: str) -> tuple[list[str], list[Path]]:
    return _out_is_in(tmp, which, how)


# ----------------------------------------------------------------------------- the doors
TRAINING = EXAMPLES / "default.yaml"
SERVING = EXAMPLES / "inference-llama3-8b-chat.yaml"

DOORS: list[Door] = [
    *(Door("scenario", f, YAML_VALUES, _scenario(TRAINING)) for f in (
        "workload.tokens", "workload.seq_len", "workload.global_batch", "options[0].gpus",
        "options[0].usd_per_gpu_hour", "options[0].power_limit_w", "data.egress_gb",
        "data.acquisition_usd", "compliance.retention_days", "assumptions.pue.air",
        "options[0].committed_reuse_fraction", "ops.checkpoints_kept",
    )),
    *(Door("serving scenario", f, YAML_VALUES, _scenario(SERVING)) for f in (
        "workload.qps", "workload.months", "workload.input_tokens", "workload.output_tokens",
        "workload.slo_ttft_ms", "workload.prefix_cache_hit_rate", "workload.load_profile",
        "workload.time_slice", "options[0].gpus",
    )),
    *(Door("overlay", f, YAML_VALUES, _overlay(OVERLAY)) for f in (
        "entries[0].tdp_w", "entries[0].memory_gb", "entries[0].hbm_bandwidth_gb_s",
        "entries[0].peak_tflops.bf16", "sources.mine.retrieved",
    )),
    Door("factor overlay", "entries[0].value", YAML_VALUES, _overlay(FACTOR, train=False)),
    *(Door("config.json", k, JSON_VALUES, _hf_config) for k in (
        "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "intermediate_size", "vocab_size", "max_position_embeddings", "rope_theta",
    )),
    *(Door("trace row", c, CSV_VALUES, _trace) for c in (
        "arrival_s", "input_tokens", "output_tokens",
    )),
    *(Door("price-trace row", c, CSV_VALUES, _price_trace) for c in PRICE_COLUMNS[1:]),
    *(Door("audit row", f, JSON_VALUES, _audit) for f in (
        "usage.prompt_tokens", "usage.completion_tokens", "created", "model",
    )),
    *(Door("training-log row", k, JSON_VALUES, _steps) for k in (
        "step_time_ms", "tokens_per_s_per_gpu", "mfu", "step",
    )),
    *(Door("output = input", w, ("same path", "symlink", "hardlink"), _output_door) for w in (
        "sweep --csv", "calibrate -o", "report -o", "roi-template -o", "--catalog overlay",
    )),
]  # fmt: skip


def cases() -> list[tuple[Door, str]]:
    """Every door with every hostile value."""
    return [(d, v) for d in DOORS for v in d.values]


def _digests(paths: list[Path]) -> dict[Path, str | None]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None for p in paths}


def run_case(door: Door, value: str, tmp: Path) -> harness.Outcome:
    """Run one door case; the outcome's ``problem`` names what went wrong, if anything."""
    args, inputs = door.make(tmp, door.field, value)
    before = _digests(inputs)
    o = harness.check(args)
    if o.problem is not None:
        return o
    if _digests(inputs) != before:
        return harness.Outcome(args, o.exit_code, f"an input file changed ({door.name})")
    if door.name == "output = input" and o.exit_code != 2:
        return harness.Outcome(args, o.exit_code, "an output equal to an input was not refused")
    if o.exit_code == 0 and "--json" in args and o.stdout:
        bad = _absurd_feasible(json.loads(o.stdout))
        if bad:
            return harness.Outcome(args, o.exit_code, f"absurd total reported feasible: {bad}")
    return o


def _absurd_feasible(doc: Any) -> str | None:
    """A ``{total_usd > ABSURD_TOTAL_USD, feasible: true}`` anywhere in a JSON answer."""
    if isinstance(doc, dict):
        tot = doc.get("total_usd")
        if isinstance(tot, int | float) and tot > ABSURD_TOTAL_USD and doc.get("feasible", True):
            return f"{doc.get('name', '?')}: total_usd {tot:g}"
        for v in doc.values():
            hit = _absurd_feasible(v)
            if hit:
                return hit
    elif isinstance(doc, list):
        for v in doc:
            hit = _absurd_feasible(v)
            if hit:
                return hit
    return None

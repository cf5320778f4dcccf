"""Fuzz every log parser: no crash, no hang; a ParseError or a count of skipped lines.

Inputs are built from real lines of each format (our fixtures), mutated (truncated, characters
replaced, numbers swapped for junk), shuffled, and mixed with arbitrary text and bytes.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitco.calibrate.parsers.base import ParseResult
from aitco.calibrate.parsers.detect import PARSERS, detect_kind, parse_any
from aitco.errors import ParseError

DATA = Path(__file__).resolve().parents[1] / "calibrate" / "data"
#: A parse of a few kB must finish well within this. [s]
MAX_PARSE_S = 5.0

SAMPLES: dict[str, str] = {
    "nccl": "nccl_v217_dup_header.txt",
    "dcgm": "dcgm_power_energy.txt",
    "nvidia-smi": "nvidia_smi_util.csv",
    "trainlog": "megatron_primus.txt",
    "vllm": "vllm_current.jsonl",
    "sglang": "vllm_current.jsonl",
    "focus": "focus_gpu.csv",
    "codecarbon": "codecarbon_run.csv",
    "kineto": "kineto_trace.json",
}
EXTRA_LINES = [
    (DATA / "steps.jsonl").read_text().splitlines(),
    (DATA / "nccl_all_gather_pre213.txt").read_text().splitlines(),
    (DATA / "dcgm_exporter.prom").read_text().splitlines(),
]


def _lines(kind: str) -> list[str]:
    return (DATA / SAMPLES[kind]).read_text().splitlines()


@st.composite
def mutated_line(draw: st.DrawFn, pool: list[str]) -> str:
    line = draw(st.sampled_from(pool))
    op = draw(st.sampled_from(["keep", "truncate", "replace", "junk_number", "insert"]))
    if op == "truncate" and line:
        return line[: draw(st.integers(0, len(line)))]
    if op == "replace" and line:
        i = draw(st.integers(0, len(line) - 1))
        return line[:i] + draw(st.characters()) + line[i + 1 :]
    if op == "junk_number":
        return line.replace(
            "0",
            draw(st.sampled_from(["", "x", "N/A", "-", "1e999", ",", "nan", "\u00b2", "\u0663"])),
        )
    if op == "insert":
        return line + draw(st.text(max_size=20))
    return line


def document(kind: str) -> st.SearchStrategy[str]:
    pool = _lines(kind)
    other = [ln for lst in EXTRA_LINES for ln in lst]
    line = st.one_of(mutated_line(pool), st.sampled_from(other), st.text(max_size=80))
    return st.lists(line, max_size=40).map("\n".join)


def _check(fn: Callable[[Path], ParseResult], text: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "input.log"
        if isinstance(text, bytes):
            f.write_bytes(text)
        else:
            f.write_text(text, encoding="utf-8", errors="surrogatepass")
        t0 = time.perf_counter()
        message = ""
        try:
            res = fn(f)
        except ParseError as exc:
            message = str(exc)
            assert message, "a ParseError must say what is wrong"
        else:
            assert isinstance(res, ParseResult)
            assert res.skipped.count >= len(res.skipped.first)
            res.to_json()  # serialisable
        assert time.perf_counter() - t0 < MAX_PARSE_S


@pytest.mark.parametrize("kind", sorted(PARSERS))
@given(data=st.data())
def test_parser_never_crashes(kind: str, data: st.DataObject) -> None:
    text = data.draw(document(kind))
    _check(PARSERS[kind], text)


@pytest.mark.parametrize("kind", sorted(PARSERS))
@given(blob=st.binary(max_size=2000))
def test_parser_survives_bytes(kind: str, blob: bytes) -> None:
    _check(PARSERS[kind], blob)


@given(data=st.data())
def test_auto_detect_never_crashes(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(sorted(SAMPLES)))
    text = data.draw(document(kind))
    _check(lambda p: parse_any(p, "auto"), text)


def test_detect_kind_of_empty(tmp_path: Path) -> None:
    f = tmp_path / "empty"
    f.write_text("")
    with pytest.raises(ParseError):
        detect_kind(f)

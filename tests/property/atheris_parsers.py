"""Coverage-guided fuzzing of one parser with atheris (optional; not collected by pytest).

Usage::

    pip install atheris
    python tests/property/atheris_parsers.py KIND [-runs=20000] [-max_len=4096] [corpus_dir]

KIND is a parser kind (nccl, dcgm, nvidia-smi, trainlog, vllm, sglang, focus, codecarbon,
kineto). The seed corpus is our fixture of that format. Every input is written to a temporary
file and parsed; a ParseError is an accepted outcome, any other exception is a crash.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from aitco.calibrate.parsers.detect import PARSERS
    from aitco.errors import ParseError

SEEDS = {
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


def main() -> None:
    kind = sys.argv[1]
    parse = PARSERS[kind]
    tmp = Path(tempfile.mkdtemp()) / "input.log"
    corpus = Path(tempfile.mkdtemp())
    seed = Path(__file__).resolve().parents[1] / "calibrate" / "data" / SEEDS[kind]
    (corpus / "seed").write_bytes(seed.read_bytes()[:4096])

    def one(data: bytes) -> None:
        tmp.write_bytes(data)
        with contextlib.suppress(ParseError):  # a clear error is an accepted outcome
            parse(tmp)

    atheris.Setup([sys.argv[0], *sys.argv[2:], str(corpus)], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

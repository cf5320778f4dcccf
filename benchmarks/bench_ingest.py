"""Speed and memory of the telemetry parsers (``dcgmi dmon`` and ``nvidia-smi`` CSV).

Usage::

    python benchmarks/bench_ingest.py                      # 200,000 lines per format
    python benchmarks/bench_ingest.py --lines 5000000      # the 5-million-line target
    python benchmarks/bench_ingest.py --lines 5000000 --no-tracemalloc

Generates each file in a temporary directory (8 GPUs, a reprinted DCGM header every 14 rounds,
0.1 % malformed lines, power/energy/utilisation fields), parses it, and prints lines/s and the
memory used: the tracemalloc peak of Python allocations during the parse (a second, slower pass),
and the process peak RSS. Run it at two sizes to see that memory does not grow with the file:
the parsers keep per-GPU running statistics only.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from aitco.calibrate.parsers.base import ParseResult
from aitco.calibrate.parsers.dcgm import parse_dcgm
from aitco.calibrate.parsers.nvidia_smi import parse_nvidia_smi

GPUS = 8
HEADER_EVERY = 14
BAD_EVERY = 1000


def peak_rss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 2**20 if sys.platform == "darwin" else r / 2**10


def write_dcgm(path: Path, lines: int) -> int:
    rnd = random.Random(0)
    hdr = (
        "#Entity   POWER             TOTEC                  GPUTL        SMACT        FBUSD\n"
        "ID        W                 mJ                                               \n"
    )
    energy = [10**9] * GPUS
    n = 0
    rounds = 0
    with open(path, "w") as fh:
        buf = []
        while n < lines:
            if rounds % HEADER_EVERY == 0:
                buf.append(hdr)
                n += 2
            for g in range(GPUS - 1, -1, -1):
                p = 300 + rnd.random() * 400
                energy[g] += int(p * 1000)
                if n % BAD_EVERY == 0:
                    buf.append(f"GPU {g}     {p:.3f}\n")
                else:
                    buf.append(
                        f"GPU {g}     {p:<17.3f} {energy[g]:<22d} {rnd.randint(0, 100):<12d} "
                        f"{rnd.random():<12.3f} {rnd.randint(1000, 80000)}\n"
                    )
                n += 1
            rounds += 1
            if len(buf) > 10000:
                fh.writelines(buf)
                buf.clear()
        fh.writelines(buf)
    return n


def write_nvidia_smi(path: Path, lines: int) -> int:
    rnd = random.Random(1)
    n = 1
    with open(path, "w") as fh:
        fh.write("timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]\n")
        buf = []
        t = 0
        while n < lines:
            ts = f"2026/11/02 {10 + t // 3600 % 12:02d}:{t // 60 % 60:02d}:{t % 60:02d}.000"
            for g in range(GPUS):
                if n % BAD_EVERY == 0:
                    buf.append(f"{ts}, {g}, [N/A\n")
                else:
                    buf.append(
                        f"{ts}, {g}, {rnd.randint(0, 100)} %, {rnd.randint(1000, 80000)} MiB, "
                        f"{300 + rnd.random() * 400:.2f} W\n"
                    )
                n += 1
            t += 1
            if len(buf) > 10000:
                fh.writelines(buf)
                buf.clear()
        fh.writelines(buf)
    return n


def measure(
    name: str, fn: Callable[[Path], ParseResult], path: Path, lines: int, traced: bool
) -> None:
    size_mb = path.stat().st_size / 2**20
    t0 = time.perf_counter()
    res = fn(path)
    dt = time.perf_counter() - t0
    line = (
        f"{name:<11} {lines:>11,} lines  {size_mb:8.1f} MB  {dt:7.2f} s  "
        f"{lines / dt:>11,.0f} lines/s  "
        f"skipped {res.skipped.count:,}  devices {res.summary['n_devices']}"
    )
    if traced:
        tracemalloc.start()
        fn(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        line += f"  tracemalloc peak {peak / 2**20:.2f} MB"
    print(line + f"  process peak RSS {peak_rss_mb():.0f} MB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--lines", type=float, default=200_000, help="lines per file (5e6 for the target)"
    )
    ap.add_argument("--no-tracemalloc", action="store_true", help="skip the traced memory pass")
    ap.add_argument("--only", choices=("dcgm", "nvidia-smi"), help="benchmark one format only")
    ap.add_argument("--keep", type=Path, default=None, help="write the files here and keep them")
    args = ap.parse_args()
    lines = int(args.lines)
    with tempfile.TemporaryDirectory() as d:
        out = args.keep or Path(d)
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        dcgm = out / "dmon.txt"
        smi = out / "smi.csv"
        n1 = write_dcgm(dcgm, lines) if args.only != "nvidia-smi" else 0
        n2 = write_nvidia_smi(smi, lines) if args.only != "dcgm" else 0
        dt = time.perf_counter() - t0
        print(f"generated 2 files in {dt:.1f} s (process peak RSS {peak_rss_mb():.0f} MB)")
        if n1:
            measure("dcgmi dmon", parse_dcgm, dcgm, n1, not args.no_tracemalloc)
        if n2:
            measure("nvidia-smi", parse_nvidia_smi, smi, n2, not args.no_tracemalloc)


if __name__ == "__main__":
    main()

"""``aitco probe``: measure achievable matmul TFLOP/s per data type and memory bandwidth locally.

With PyTorch installed the probe runs on its accelerator (CUDA/ROCm, else the CPU through
torch); without it, numpy on the CPU (float64 and float32 matmuls through the BLAS, and a large
array copy). Each measurement is the best of ``repeats`` timed runs after a warm-up, which is
what "achievable" means for a roofline: the sustained peak of a large, well-shaped kernel.

Notes
-----
A square matmul of size :math:`n` performs :math:`2n^3` FLOPs; a copy of :math:`B` bytes moves
:math:`2B` bytes (read + write). TFLOP/s = :math:`2n^3 / t / 10^{12}`, GB/s = :math:`2B/t/10^9`.

References
----------
.. [1] S. Williams, A. Waterman and D. Patterson, "Roofline: an insightful visual performance
   model for multicore architectures", Commun. ACM 52(4), 2009.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from aitco.calibrate.profile import ProbeResult
from aitco.units import GIGA, TERA

#: Default square matmul size (large enough to be compute-bound on CPUs and GPUs).
DEFAULT_MATMUL_SIZE = 4096
#: Default buffer copied for the bandwidth test. [B]
DEFAULT_COPY_BYTES = 256 * 2**20
#: Timed repetitions per measurement (the best is kept).
DEFAULT_REPEATS = 5
#: FLOPs per multiply-add.
FLOPS_PER_FMA = 2
#: A copy reads and writes each byte.
COPY_TRAFFIC_FACTOR = 2
#: numpy dtypes probed on the CPU, by aitco dtype name.
NUMPY_DTYPES = {"fp32": np.float32}
#: torch dtypes probed, by aitco dtype name (tf32 = fp32 with TF32 tensor cores allowed).
TORCH_DTYPES = ("fp32", "tf32", "bf16", "fp16")


def _best(fn: Callable[[], Any], repeats: int, sync: Callable[[], None] = lambda: None) -> float:
    fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


def probe_numpy(
    *,
    matmul_size: int = DEFAULT_MATMUL_SIZE,
    copy_bytes: int = DEFAULT_COPY_BYTES,
    repeats: int = DEFAULT_REPEATS,
    dtypes: Sequence[str] = tuple(NUMPY_DTYPES),
) -> ProbeResult:
    """Measure matmul TFLOP/s and copy bandwidth on the CPU with numpy."""
    rng = np.random.default_rng(0)
    out: dict[str, float] = {}
    for name in dtypes:
        dt = NUMPY_DTYPES.get(name)
        if dt is None:
            continue
        a = rng.standard_normal((matmul_size, matmul_size)).astype(dt)
        b = rng.standard_normal((matmul_size, matmul_size)).astype(dt)
        c = np.empty_like(a)

        def mm(a: np.ndarray = a, b: np.ndarray = b, c: np.ndarray = c) -> None:
            np.matmul(a, b, out=c)

        t = _best(mm, repeats)
        out[name] = FLOPS_PER_FMA * float(matmul_size) ** 3 / t / TERA
    n = max(copy_bytes // 8, 1)
    src = np.ones(n, dtype=np.float64)
    dst = np.empty_like(src)
    t = _best(lambda: np.copyto(dst, src), repeats)
    bw = COPY_TRAFFIC_FACTOR * src.nbytes / t / GIGA
    return ProbeResult(
        device="cpu",
        backend="numpy",
        matmul_tflops=out,
        memory_bandwidth_gb_s=bw,
        matmul_size=matmul_size,
        copy_bytes=int(src.nbytes),
    )


def probe_torch(
    *,
    matmul_size: int = DEFAULT_MATMUL_SIZE,
    copy_bytes: int = DEFAULT_COPY_BYTES,
    repeats: int = DEFAULT_REPEATS,
    dtypes: Sequence[str] = TORCH_DTYPES,
    device: str | None = None,
) -> ProbeResult:  # pragma: no cover - needs torch, checked on a GPU machine
    """Measure matmul TFLOP/s per dtype and copy bandwidth with PyTorch."""
    import torch

    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    is_cuda = dev.startswith("cuda")
    sync = torch.cuda.synchronize if is_cuda else (lambda: None)
    name = torch.cuda.get_device_name(0) if is_cuda else "cpu"
    tmap = {
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
    }
    out: dict[str, float] = {}
    for dname in dtypes:
        dt = tmap.get(dname)
        if dt is None:
            continue
        if is_cuda:
            torch.backends.cuda.matmul.allow_tf32 = dname == "tf32"
        elif dname in ("tf32", "fp16"):
            continue
        a = torch.randn(matmul_size, matmul_size, device=dev, dtype=dt)
        b = torch.randn(matmul_size, matmul_size, device=dev, dtype=dt)

        def mm(a: Any = a, b: Any = b) -> None:
            torch.matmul(a, b)

        t = _best(mm, repeats, sync)
        out[dname] = FLOPS_PER_FMA * float(matmul_size) ** 3 / t / TERA
    if is_cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
    n = max(copy_bytes // 4, 1)
    src = torch.ones(n, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    t = _best(lambda: dst.copy_(src), repeats, sync)
    bw = COPY_TRAFFIC_FACTOR * n * 4 / t / GIGA
    return ProbeResult(
        device=name,
        backend="torch-cuda" if is_cuda else "torch-cpu",
        matmul_tflops=out,
        memory_bandwidth_gb_s=bw,
        matmul_size=matmul_size,
        copy_bytes=n * 4,
    )


def torch_available() -> bool:
    """Whether PyTorch can be imported."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def run_probe(
    *,
    matmul_size: int = DEFAULT_MATMUL_SIZE,
    copy_bytes: int = DEFAULT_COPY_BYTES,
    repeats: int = DEFAULT_REPEATS,
    backend: str = "auto",
) -> ProbeResult:
    """Run the probe with PyTorch when available (``backend="auto"``), numpy otherwise."""
    if backend == "torch" or (backend == "auto" and torch_available()):
        return probe_torch(matmul_size=matmul_size, copy_bytes=copy_bytes, repeats=repeats)
    return probe_numpy(matmul_size=matmul_size, copy_bytes=copy_bytes, repeats=repeats)


def with_fractions(
    probe: ProbeResult, peak_tflops: dict[str, float], hbm_bandwidth_gb_s: float
) -> ProbeResult:
    """Add achieved / catalog-peak fractions to a probe result."""
    gf = {k: v / peak_tflops[k] for k, v in probe.matmul_tflops.items() if peak_tflops.get(k)}
    return probe.model_copy(
        update={
            "gemm_fraction": gf,
            "hbm_fraction": (probe.memory_bandwidth_gb_s / hbm_bandwidth_gb_s)
            if probe.memory_bandwidth_gb_s and hbm_bandwidth_gb_s
            else None,
        }
    )

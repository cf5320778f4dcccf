"""Measure one accelerator the way the catalog and the validation set need it (run on a GPU host).

Writes one JSON file with:

- ``matmul``: the best achieved TFLOP/s per data type over a sweep of GEMM shapes (the
  "maximum achievable matmul FLOPS" method of Stas Bekman's mamf-finder: the max over shapes,
  each the median of timed runs after warm-up), for bf16, fp16, tf32 and fp8 (e4m3, via
  ``torch._scaled_mm``), with the shape that reached it;
- ``hbm``: device-to-device copy bandwidth (bytes read + written) and a read-only reduction;
- ``gemv``: a batch-1 bf16 matrix-vector product on a weight much larger than L2 (the decode
  regime of serving): achieved bytes/s;
- ``power``: board power from ``nvidia-smi`` sampled while idle (no kernels running, context
  created) and during a sustained bf16 GEMM loop, with the enforced power limit;
- ``training``: tokens/s of GPT-2-style models (Hugging Face ``transformers``, bf16 autocast,
  SDPA attention, fused AdamW, eager) at a fixed micro-batch and sequence length, with peak
  memory.

Only PyTorch, transformers and nvidia-smi are needed (aitco itself is not imported, so the
script runs under the GPU host's own Python). Usage::

    python scripts/device_probe.py --out probe.json [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import threading
import time
from typing import Any

import torch

TERA = 1e12
GIGA = 1e9
#: GEMM edge sizes swept (every M x N x K combination of these).
GEMM_SIZES = (2048, 4096, 6144, 8192, 12288, 16384)
#: Timed runs per GEMM shape after warm-up.
GEMM_REPEATS = 10
GEMM_WARMUP = 3
#: Bytes per buffer of the copy and reduction tests.
HBM_BYTES = 4 * 2**30
#: Weight of the batch-1 GEMV (rows x cols, bf16): 8192 x 28672 = a 70B-class MLP projection.
GEMV_SHAPE = (28672, 8192)
#: nvidia-smi sampling period. [ms]
POWER_PERIOD_MS = 100


def _nvsmi(query: str) -> list[str]:
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=False,
    )
    return [s.strip() for s in out.stdout.strip().split(",")]


class PowerSampler:
    """Sample board power in a background thread with ``nvidia-smi``."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(ValueError, IndexError):
                self.samples.append(float(_nvsmi("power.draw")[0]))
            time.sleep(POWER_PERIOD_MS / 1000)

    def __enter__(self) -> PowerSampler:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()

    def summary(self) -> dict[str, float]:
        """Median, 10th/90th percentile and maximum of the samples, in W."""
        s = sorted(self.samples)
        if not s:
            return {}
        return {
            "n": len(s),
            "median_w": statistics.median(s),
            "p10_w": s[len(s) // 10],
            "p90_w": s[(9 * len(s)) // 10],
            "max_w": s[-1],
        }


def _time_cuda(fn: Any, repeats: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1000)
    return statistics.median(times)


def gemm_sweep(dtype: str, sizes: tuple[int, ...]) -> dict[str, Any]:
    """Achieved TFLOP/s of every M x N x K of ``sizes`` for one dtype, and the best."""
    best: dict[str, Any] = {"tflops": 0.0}
    rows = []
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    for m in sizes:
        for n in sizes:
            for k in sizes:
                if dtype == "fp8":
                    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
                    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
                    one = torch.tensor(1.0, device="cuda")

                    def fn(a: Any = a, b: Any = b, one: Any = one) -> None:
                        torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

                else:
                    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[
                        dtype
                    ]
                    a = torch.randn(m, k, device="cuda", dtype=dt)
                    b = torch.randn(k, n, device="cuda", dtype=dt)

                    def fn(a: Any = a, b: Any = b) -> None:
                        torch.matmul(a, b)

                t = _time_cuda(fn, GEMM_REPEATS, GEMM_WARMUP)
                tf = 2.0 * m * n * k / t / TERA
                rows.append([m, n, k, round(tf, 1)])
                if tf > best["tflops"]:
                    best = {"tflops": round(tf, 1), "m": m, "n": n, "k": k}
                del a, b
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.empty_cache()
    return {"best": best, "shapes": rows}


def hbm() -> dict[str, float]:
    """Device copy (read + write) and read-only reduction bandwidth, in GB/s."""
    n = HBM_BYTES // 2
    src = torch.ones(n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)

    def copy(src: Any = src, dst: Any = dst) -> None:
        dst.copy_(src)

    def read(src: Any = src) -> None:
        src.sum(dtype=torch.float32)

    t_copy = _time_cuda(copy, 20, 3)
    t_sum = _time_cuda(read, 20, 3)
    del src, dst, copy, read
    torch.cuda.empty_cache()
    return {
        "copy_gb_s": round(2 * HBM_BYTES / t_copy / GIGA, 1),
        "read_gb_s": round(HBM_BYTES / t_sum / GIGA, 1),
        "buffer_bytes": HBM_BYTES,
    }


def gemv() -> dict[str, Any]:
    """Batch-1 bf16 GEMV on a weight much larger than L2: weight bytes read per second."""
    rows, cols = GEMV_SHAPE
    w = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(cols, 1, device="cuda", dtype=torch.bfloat16)
    t = _time_cuda(lambda: w @ x, 50, 5)
    nbytes = rows * cols * 2
    return {"shape": [rows, cols], "read_gb_s": round(nbytes / t / GIGA, 1), "time_s": t}


def power(seconds_idle: float, seconds_load: float) -> dict[str, Any]:
    """Board power idle (context created, no kernels) and under a sustained bf16 GEMM loop."""
    info = _nvsmi("name,power.limit,power.default_limit,clocks.max.sm,clocks.max.mem")
    torch.cuda.synchronize()
    time.sleep(2.0)
    with PowerSampler() as idle:
        time.sleep(seconds_idle)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    n_mm = 0
    t0 = time.perf_counter()
    with PowerSampler() as load:
        while time.perf_counter() - t0 < seconds_load:
            for _ in range(50):
                a @ b
            n_mm += 50
            torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    clocks_after = _nvsmi("clocks.sm,clocks.mem,temperature.gpu")
    return {
        "nvidia_smi": dict(
            zip(
                ["name", "power_limit_w", "default_power_limit_w", "max_sm_mhz", "max_mem_mhz"],
                info,
                strict=False,
            )
        ),
        "idle": idle.summary(),
        "gemm_load": load.summary(),
        "gemm_load_tflops": round(2 * 8192**3 * n_mm / dt / TERA, 1),
        "clocks_after_load": clocks_after,
    }


def training(models: list[tuple[str, int, int, int, int]], seq: int, steps: int) -> list[dict]:
    """Tokens/s and peak memory of GPT-2-style models trained eagerly in bf16."""
    from transformers import GPT2Config, GPT2LMHeadModel

    out = []
    for name, n_layer, n_embd, n_head, micro_batch in models:
        cfg = GPT2Config(
            n_layer=n_layer,
            n_embd=n_embd,
            n_head=n_head,
            n_positions=seq,
            vocab_size=50304,
            attn_implementation="sdpa",
        )
        model = GPT2LMHeadModel(cfg).cuda()
        params = sum(p.numel() for p in model.parameters())
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        x = torch.randint(0, 50304, (micro_batch, seq), device="cuda")
        torch.cuda.reset_peak_memory_stats()

        def step(model: Any = model, opt: Any = opt, x: Any = x) -> None:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=x, labels=x).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        for _ in range(3):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / steps
        out.append(
            {
                "model": name,
                "n_layer": n_layer,
                "d_model": n_embd,
                "n_head": n_head,
                "params": params,
                "seq_len": seq,
                "micro_batch": micro_batch,
                "step_time_s": dt,
                "tokens_per_s": micro_batch * seq / dt,
                "peak_memory_gb": torch.cuda.max_memory_allocated() / GIGA,
                "stack": "HF transformers GPT2LMHeadModel, eager, bf16 autocast, SDPA, "
                "fused AdamW, tied embeddings",
            }
        )
        del model, opt, x
        torch.cuda.empty_cache()
    return out


def main() -> None:
    """Run every section, saving the JSON after each."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="small sweep (a smoke test)")
    args = ap.parse_args()
    sizes = (2048, 4096) if args.quick else GEMM_SIZES
    res: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
        "memory_bytes": torch.cuda.get_device_properties(0).total_memory,
        "driver": _nvsmi("driver_version")[0],
    }

    def save() -> None:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)

    def section(key: str, fn: Any, *a: Any) -> None:
        try:
            res[key] = fn(*a)
        except Exception as exc:  # one failed section must not lose the others
            res[key] = {"error": f"{type(exc).__name__}: {exc}"}
        save()
        print(key, "done", flush=True)

    section("power", power, 5 if args.quick else 20, 5 if args.quick else 30)
    section("hbm", hbm)
    section("gemv", gemv)
    res["matmul"] = {}
    for dt in ("bf16", "fp8", "fp16", "tf32"):
        try:
            res["matmul"][dt] = gemm_sweep(dt, sizes)
        except Exception as exc:
            res["matmul"][dt] = {"error": f"{type(exc).__name__}: {exc}"}
        save()
        print(dt, res["matmul"][dt].get("best"), flush=True)
    models = [
        ("gpt2-124m", 12, 768, 12, 16),
        ("gpt2-350m", 24, 1024, 16, 16),
        ("gpt2-774m", 36, 1280, 20, 8),
        ("gpt2-1.5b", 48, 1600, 25, 8),
    ]
    section(
        "training", training, models[:1] if args.quick else models, 1024, 5 if args.quick else 20
    )
    print(json.dumps({k: v for k, v in res.items() if k != "matmul"}, indent=1))


if __name__ == "__main__":
    main()

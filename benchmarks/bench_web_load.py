"""Load test of the web app on localhost: N concurrent clients for T seconds, no errors allowed.

Serves the app (the real engine) with ``aitco web --host 127.0.0.1 --port <free port>`` in a
child process (``--in-process`` serves it from a thread of this process instead, sharing its
GIL with the clients), then runs ``--clients`` asyncio clients (httpx) for ``--seconds``;
each client loops over a mix of requests: the page, the pick-lists, ``POST /api/v1/compare`` (JSON)
with a handful of scenarios (so both cache hits and fresh comparisons happen), and the htmx
fragment.
Reports requests/s, p50/p99 latency and every non-2xx/connection error; exits 1 on any error.

Usage::

    python benchmarks/bench_web_load.py [--clients 50] [--seconds 30] [--json]

Bounded: at most ``--clients`` x ``--max-requests-per-client`` requests, and ``--seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

MAX_CLIENTS = 200
MAX_SECONDS = 120


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(base: str, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"aitco web exited with status {proc.returncode}")
        try:
            if httpx.get(base + "/api/v1/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit("aitco web did not become healthy in time")


def _scenarios() -> list[dict[str, Any]]:
    base = {
        "kind": "training",
        "model": "gpt2-1.02b",
        "tokens": 2e10,
        "seq_len": 2048,
        "global_batch": 256,
    }
    hw = [("a100-sxm4-80gb", 64), ("h100-sxm5-80gb", 32), ("l40s", 48), ("h200-sxm-141gb", 16)]
    out = []
    for k in range(8):
        a, b = hw[k % 4], hw[(k + 1) % 4]
        out.append(
            {
                "name": f"load {k}",
                "workload": {**base, "tokens": 1e10 * (1 + k)},
                "options": [
                    {"hardware": a[0], "gpus": a[1], "pricing": "on_demand"},
                    {"hardware": b[0], "gpus": b[1], "pricing": "spot" if k % 2 else "owned"},
                ],
            }
        )
    return out


async def _client(
    base: str,
    stop_at: float,
    max_requests: int,
    lat: list[float],
    errors: list[str],
    counts: dict[str, int],
    seed: int,
) -> None:
    import httpx

    scen = _scenarios()
    async with httpx.AsyncClient(base_url=base, timeout=30.0) as c:
        for i in range(max_requests):
            if time.perf_counter() >= stop_at:
                return
            kind = ("page", "catalog", "compare", "compare", "fragment")[(i + seed) % 5]
            t0 = time.perf_counter()
            try:
                if kind == "page":
                    r = await c.get("/")
                elif kind == "catalog":
                    r = await c.get("/api/v1/catalog")
                else:
                    body = scen[(i * 7 + seed) % len(scen)]
                    headers = {"HX-Request": "true"} if kind == "fragment" else {}
                    r = await c.post("/api/v1/compare", json=body, headers=headers)
                ok = 200 <= r.status_code < 300
                if not ok:
                    errors.append(f"{kind}: HTTP {r.status_code} {r.text[:200]}")
            except Exception as exc:  # every failure counts as an error
                errors.append(f"{kind}: {type(exc).__name__}: {exc}")
            lat.append(time.perf_counter() - t0)
            counts[kind] = counts.get(kind, 0) + 1


async def _run(base: str, clients: int, seconds: float, max_requests: int) -> dict[str, Any]:
    lat: list[float] = []
    errors: list[str] = []
    counts: dict[str, int] = {}
    t0 = time.perf_counter()
    stop_at = t0 + seconds
    await asyncio.gather(
        *(
            _client(base, stop_at, max_requests, lat, errors, counts, seed)
            for seed in range(clients)
        )
    )
    wall = time.perf_counter() - t0
    q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else [float("nan")] * 99
    return {
        "clients": clients,
        "seconds": round(wall, 2),
        "requests": len(lat),
        "errors": len(errors),
        "error_samples": errors[:5],
        "requests_per_s": round(len(lat) / wall, 1),
        "p50_latency_s": round(q[49], 4),
        "p99_latency_s": round(q[98], 4),
        "max_latency_s": round(max(lat), 4) if lat else None,
        "by_kind": counts,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--max-requests-per-client", type=int, default=100_000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--in-process", action="store_true", help="serve from a thread of this process")
    a = ap.parse_args()
    if not 1 <= a.clients <= MAX_CLIENTS or not 0 < a.seconds <= MAX_SECONDS:
        ap.error(f"--clients in 1..{MAX_CLIENTS} and --seconds in (0, {MAX_SECONDS}]")

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    if a.in_process:
        import uvicorn

        from aitco.web.app import create_app

        server = uvicorn.Server(
            uvicorn.Config(
                create_app(), host="127.0.0.1", port=port, log_level="warning", backlog=1024
            )
        )
        th = threading.Thread(target=server.run, daemon=True)
        th.start()
        while not server.started:
            time.sleep(0.05)

        def stop() -> None:
            server.should_exit = True
            th.join(timeout=10)
    else:
        cmd = [
            sys.executable,
            "-m",
            "aitco.cli.app",
            "web",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        _wait_healthy(base, proc)

        def stop() -> None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    try:
        res = asyncio.run(_run(base, a.clients, a.seconds, a.max_requests_per_client))
    finally:
        stop()
    res["server"] = "thread" if a.in_process else "child process"
    if a.json:
        print(json.dumps(res, indent=2))
    else:
        print(
            f"{res['clients']} clients, {res['seconds']} s: {res['requests']} requests, "
            f"{res['errors']} errors, {res['requests_per_s']} req/s, "
            f"p50 {1000 * res['p50_latency_s']:.1f} ms, p99 {1000 * res['p99_latency_s']:.1f} ms "
            f"(max {1000 * res['max_latency_s']:.1f} ms); by kind {res['by_kind']}"
        )
        for e in res["error_samples"]:
            print("  error:", e)
    return 1 if res["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())

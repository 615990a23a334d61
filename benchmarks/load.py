"""Load on loopback: 50 concurrent clients against `runlocal serve`'s /api/v1/check.

Starts the real server (uvicorn, one process) on 127.0.0.1, then 50 asyncio clients each send
requests back to back for a fixed time over a mix of catalog models, devices and contexts, and
prints p50/p99 latency, throughput and errors. Target: p99 < 50 ms, no errors.
Run: python benchmarks/load.py [seconds] [clients]
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import time

import httpx

MODELS = ["llama-3.1-8b", "qwen3-8b", "mistral-7b-v0.3", "gemma-3-12b", "qwen3-30b-a3b", "llama-3.3-70b"]
DEVICES = ["rtx-4090", "rtx-3090", "rtx-4060-ti-16gb", "m3-max-64gb", "h100-sxm"]
CONTEXTS = [4096, 8192, 32768]


def start_server(port: int) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RUNLOCAL_HOME": os.environ.get("RUNLOCAL_HOME", "/tmp/runlocal-load")}
    proc = subprocess.Popen([sys.executable, "-m", "runlocal.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v1/runtimes", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not start")


async def client(base: str, combos, stop_at: float, latencies: list[float], errors: list[str]) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as c:
        while time.perf_counter() < stop_at:
            model, gpu, ctx = next(combos)
            t0 = time.perf_counter()
            try:
                r = await c.get("/api/v1/check", params={"model": model, "gpu": gpu, "ctx": ctx, "quant": "Q4_K_M"})
                if r.status_code != 200:
                    errors.append(f"{r.status_code} {r.text[:100]}")
            except httpx.HTTPError as e:
                errors.append(repr(e))
            latencies.append(time.perf_counter() - t0)


async def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20
    n_clients = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    port = 8765
    proc = start_server(port)
    try:
        base = f"http://127.0.0.1:{port}"
        combos = itertools.cycle(list(itertools.product(MODELS, DEVICES, CONTEXTS)))
        latencies: list[float] = []
        errors: list[str] = []
        stop_at = time.perf_counter() + seconds
        t0 = time.perf_counter()
        await asyncio.gather(*(client(base, combos, stop_at, latencies, errors) for _ in range(n_clients)))
        wall = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    lat = sorted(latencies)
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000  # noqa: E731
    print(f"clients        {n_clients}  duration {wall:.1f} s  requests {len(lat)}")
    print(f"throughput     {len(lat) / wall:.0f} req/s")
    print(f"latency        p50 {p(0.50):.1f} ms   p99 {p(0.99):.1f} ms   mean {statistics.mean(lat) * 1000:.1f} ms")
    print(f"errors         {len(errors)}" + (f"  first: {errors[0]}" if errors else ""))
    print(f"target p99 < 50 ms, no errors: {'PASS' if p(0.99) < 50 and not errors else 'FAIL'}")


if __name__ == "__main__":
    asyncio.run(main())

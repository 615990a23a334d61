"""Load on loopback: 50 concurrent clients against `runlocal serve`'s /api/v1/check.

Starts the real server (`runlocal serve`: uvicorn, one process) on 127.0.0.1. A first pass asks
every (model, device, context) combination once and reports that cold latency (each plan is
computed then). With --catalog, a fresh server is asked once for every catalog model (default runtime and
context, one RTX 4090) and the cold p50/p99/worst of those answers is printed with the worst ten
(issue 16: p99 ≤ 300 ms). Then 50 clients each send requests back to back (a closed loop: a client waits for
its answer before the next request) for a fixed time over the same mix, and it prints p50/p99
latency, throughput and errors. Target: p99 < 50 ms with 50 clients, no errors.

Run: python benchmarks/load.py [seconds] [clients]       python benchmarks/load.py --catalog
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import time
from urllib.parse import urlencode

from runlocal.testing.serve import free_port, start_serve

MODELS = ["llama-3.1-8b", "qwen3-8b", "mistral-7b-v0.3", "gemma-3-12b", "qwen3-30b-a3b", "llama-3.3-70b"]
DEVICES = ["rtx-4090", "rtx-3090", "rtx-4060-ti-16gb", "m3-max-64gb", "h100-sxm"]
CONTEXTS = [4096, 8192, 32768]


def start_server(port: int, home: str):
    return start_serve(port, home, timeout_s=30)


def paths() -> list[str]:
    return [f"/api/v1/check?{urlencode({'model': m, 'gpu': g, 'ctx': c, 'quant': 'Q4_K_M'})}"
            for m, g, c in itertools.product(MODELS, DEVICES, CONTEXTS)]


# The load clients speak HTTP/1.1 over one kept-alive asyncio connection each, written here: on a
# 2-core machine shared with the server, httpx's own per-request cost would be most of what is measured.
async def get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> int:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), None)
    if length is None:
        raise RuntimeError("no Content-Length in the answer")
    await reader.readexactly(length)
    return status


async def client(port: int, combos, stop_at: float, latencies: list[float], errors: list[str]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.perf_counter() < stop_at:
            path = next(combos)
            t0 = time.perf_counter()
            try:
                status = await get(reader, writer, path)
                if status != 200:
                    errors.append(f"HTTP {status} for {path}")
            except (OSError, asyncio.IncompleteReadError, RuntimeError) as e:
                errors.append(repr(e))
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            latencies.append(time.perf_counter() - t0)
    finally:
        writer.close()


def pct(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))] * 1000


async def catalog_cold() -> None:
    """One request per catalog model to a fresh server, one at a time: every answer is a cold plan."""
    import tempfile

    from runlocal.model import catalog

    port = free_port()
    timed: list[tuple[float, str]] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory() as home:
        proc = start_server(port, home)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for alias in catalog.aliases():
                path = f"/api/v1/check?{urlencode({'model': alias, 'gpu': 'rtx-4090'})}"
                t0 = time.perf_counter()
                status = await get(reader, writer, path)
                timed.append((time.perf_counter() - t0, alias))
                if status != 200:
                    errors.append(f"HTTP {status} for {alias}")
            writer.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    cold = sorted(t for t, _ in timed)
    print(f"catalog cold   {len(cold)} models, one request each to a fresh server (RTX 4090, default runtime and "
          f"context): p50 {pct(cold, 0.5):.0f} ms   p99 {pct(cold, 0.99):.0f} ms   worst {cold[-1] * 1000:.0f} ms")
    for t, alias in sorted(timed, reverse=True)[:10]:
        print(f"    {t * 1000:8.0f} ms  {alias}")
    print(f"errors         {len(errors)}" + (f"  first: {errors[0]}" if errors else ""))
    print(f"target p99 ≤ 300 ms: {'PASS' if pct(cold, 0.99) <= 300 and not errors else 'FAIL'}")


async def main() -> None:
    if "--catalog" in sys.argv:
        await catalog_cold()
        return
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20
    n_clients = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    import tempfile

    port = free_port()
    with tempfile.TemporaryDirectory() as home:
        proc = start_server(port, home)
        try:
            all_paths = paths()
            cold: list[float] = []
            errors: list[str] = []
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for path in all_paths:
                t0 = time.perf_counter()
                if await get(reader, writer, path) != 200:
                    errors.append(f"cold {path}")
                cold.append(time.perf_counter() - t0)
            writer.close()
            combos = itertools.cycle(all_paths)
            latencies: list[float] = []
            stop_at = time.perf_counter() + seconds
            t0 = time.perf_counter()
            await asyncio.gather(*(client(port, combos, stop_at, latencies, errors) for _ in range(n_clients)))
            wall = time.perf_counter() - t0
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    cold.sort()
    lat = sorted(latencies)
    print(f"cold pass      {len(cold)} distinct requests, one at a time: p50 {pct(cold, 0.5):.1f} ms, "
          f"max {cold[-1] * 1000:.1f} ms (each plan computed once, then cached)")
    print(f"clients        {n_clients}  duration {wall:.1f} s  requests {len(lat)}")
    print(f"throughput     {len(lat) / wall:.0f} req/s")
    print(f"latency        p50 {pct(lat, 0.50):.1f} ms   p99 {pct(lat, 0.99):.1f} ms   "
          f"mean {statistics.mean(lat) * 1000:.1f} ms")
    print(f"errors         {len(errors)}" + (f"  first: {errors[0]}" if errors else ""))
    print(f"target p99 < 50 ms, no errors: {'PASS' if pct(lat, 0.99) < 50 and not errors else 'FAIL'}")


if __name__ == "__main__":
    asyncio.run(main())

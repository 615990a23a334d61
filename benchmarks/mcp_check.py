"""`runlocal mcp` from an agent's side: a fresh server process over stdio, timed with the SDK's own client.

Prints, per run (median over runs): the time to a ready session (process start + imports + handshake), the first
(cold) `check` tool call in that process, and a second call with other settings (warm), next to the CLI's
`runlocal check --json` as a fresh process for the same question. The fast-planning target for a cold check is
the CLI's (benchmarks/startup.py: ≤ 300 ms); the tool call is compared with it here, not asserted.
Run: python benchmarks/mcp_check.py [alias] [runs]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def one_session(env: dict[str, str], alias: str) -> tuple[float, float, float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "runlocal.cli", "mcp"], env=env)
    t0 = time.perf_counter()
    async with Client(params) as client:
        ready = time.perf_counter() - t0
        t1 = time.perf_counter()
        cold = await client.call_tool("check", {"model": alias, "gpu": "rtx-4090", "ctx": 8192})
        t2 = time.perf_counter()
        warm = await client.call_tool("check", {"model": alias, "gpu": "rtx-3090", "ctx": 16384})
        t3 = time.perf_counter()
        assert not cold.is_error and not warm.is_error, (cold.content, warm.content)
    return ready, t2 - t1, t3 - t2


def main() -> None:
    alias = sys.argv[1] if len(sys.argv) > 1 else "llama-3.1-8b"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cli = [sys.executable, "-m", "runlocal.cli", "check", alias, "--gpu", "rtx-4090", "--ctx", "8192", "--json"]
    subprocess.run(cli, check=True, capture_output=True, env=env)          # warm the OS file cache once
    cli_times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cli, check=True, capture_output=True, env=env)
        cli_times.append(time.perf_counter() - t0)
    rows = [anyio.run(one_session, env, alias) for _ in range(runs)]
    ready, cold, warm = (statistics.median(col) for col in zip(*rows))
    print(f"question            check {alias} --gpu rtx-4090 --ctx 8192 (stdio, the SDK's Client)")
    print(f"runs                {runs}")
    print(f"session ready       {ready * 1000:.0f} ms   (spawn + imports + initialize)")
    print(f"cold check call     {cold * 1000:.0f} ms   (first tool call in a fresh server; "
          f"min {min(r[1] for r in rows) * 1000:.0f}, max {max(r[1] for r in rows) * 1000:.0f})")
    print(f"warm check call     {warm * 1000:.0f} ms   (second call, other settings)")
    print(f"CLI check process   {statistics.median(cli_times) * 1000:.0f} ms   (runlocal check --json, fresh process)")
    print(f"cold call within the CLI's 300 ms target: {'yes' if cold <= 0.3 else 'no'}")


if __name__ == "__main__":
    main()

"""`runlocal mcp` from an agent's side: a fresh server process over stdio, timed with the SDK's own client.

Prints (medians over runs): the time to a ready session (process start + the SDK's imports + initialize); the
first (cold) `check` tool call in that process, once sent the moment the session is ready and once after
tools/list and a 2 s pause, as an agent calls it (the server plans one catalog model in the background as it
starts, so the planner is loaded by then); a second call with other settings; and the CLI's `runlocal check --json`
as a fresh process for the same question, whose target is 200 ms (issue 16) on an idle 2-core machine (benchmarks/startup.py).
Figures, not assertions.   Run: python benchmarks/mcp_check.py [alias] [runs]
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


async def one_session(env: dict[str, str], alias: str, pause: float) -> tuple[float, float, float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "runlocal.cli", "mcp"], env=env)
    t0 = time.perf_counter()
    async with Client(params) as client:
        ready = time.perf_counter() - t0
        if pause:                               # as an agent does: read the tool list, think, then call
            await client.list_tools()
            await anyio.sleep(pause)
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
    at_once = [anyio.run(one_session, env, alias, 0.0) for _ in range(runs)]
    after_list = [anyio.run(one_session, env, alias, PAUSE_S) for _ in range(runs)]
    ready, cold, warm = (statistics.median(col) for col in zip(*at_once))
    cold_listed = statistics.median(r[1] for r in after_list)
    cli_median = statistics.median(cli_times)
    print(f"question            check {alias} --gpu rtx-4090 --ctx 8192 (stdio, the SDK's Client)")
    print(f"runs                {runs}")
    print(f"session ready       {ready * 1000:.0f} ms   (spawn + the SDK's imports + initialize)")
    print(f"cold check call     {cold * 1000:.0f} ms   (first tool call, sent the moment the session is ready; "
          f"min {min(r[1] for r in at_once) * 1000:.0f}, max {max(r[1] for r in at_once) * 1000:.0f})")
    print(f"cold check call     {cold_listed * 1000:.0f} ms   (first tool call after tools/list and {PAUSE_S:g} s, "
          "as an agent calls it)")
    print(f"warm check call     {warm * 1000:.0f} ms   (second call, other settings)")
    print(f"CLI check process   {cli_median * 1000:.0f} ms   (runlocal check --json, a fresh process: the 200 ms target)")
    print(f"cold call / CLI process: {cold / cli_median:.2f} (at once), {cold_listed / cli_median:.2f} (after listing)")


PAUSE_S = 2.0


if __name__ == "__main__":
    main()

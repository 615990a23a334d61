"""`runlocal serve` under the requests of issue 15, on loopback: status classes, and a cheap request's latency
while slow plans run.

Starts the real server (default policy: aliases and Hub ids only; --plan-workers 2, --plan-deadline 5) and:
1. sends every hostile request of the list below once (the former 500s, local paths — one a readable model
   folder, answered 200 by a server that reads it —, URLs to a loopback
   listener, each to the API's planning endpoints and to the site's pages that plan: Will it run?, Best GPU,
   Compare, Cost) and counts the answers by status class, and the connections the listener received;
2. starts uncached heavy plans (DeepSeek-V3 and 70B models through llama.cpp and Ollama's partial offload, each
   at a different context so none is cached), several at once, and meanwhile times GET /api/v1/models.
Target: every hostile request 4xx, 0 connections; heavy plans 503 (Retry-After) past the deadline instead of
holding the server; the cheap request answered meanwhile (p50 under 100 ms on a shared 2-core machine; 6 ms idle).

Run: python benchmarks/server_safety.py [heavy requests]   (0: the hostile requests only)
"""

from __future__ import annotations

import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter

import httpx

from runlocal.testing.serve import free_port, start_serve


def start_server(port: int, home: str):
    return start_serve(port, home, "--plan-workers", "2", "--plan-deadline", "5", timeout_s=60)


def planted_model(folder: str) -> str:
    """A readable model folder (a small Llama config.json) outside anything the server allows: a server that
    reads it answers 200 with a plan instead of 4xx, which the status classes show."""
    import json
    import os

    path = os.path.join(folder, "planted-model")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
                   "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
                   "intermediate_size": 512, "vocab_size": 1000}, f)
    return path


def hostile_requests(listener_port: int, planted: str) -> list[tuple[str, str, dict]]:
    url = f"http://127.0.0.1:{listener_port}/m.gguf"
    m = "llama-3.1-8b"
    reqs = [
        ("POST", "/api/v1/check", {"json": {"model": m, "kv_cache": "fp8"}}),
        ("GET", "/api/v1/check", {"params": {"model": m, "kv_cache": "fp8"}}),
        ("POST", "/api/v1/check", {"json": {"model": "x" * 300}}),
        ("GET", "/api/v1/check", {"params": {"model": m, "ctx": str(10**30)}}),
        ("GET", "/api/v1/check", {"params": {"model": m, "n_gpu_layers": "-3"}}),
        ("GET", "/api/v1/check", {"params": {"model": m, "runtime": "r" * 100}}),
        ("POST", "/api/v1/check", {"content": b'{"model": "llama-3.1-8b", "gpu_memory_utilization": NaN}',
                                   "headers": {"content-type": "application/json"}}),
        ("GET", "/api/v1/best", {"params": {"model": m, "budget": "Infinity"}}),
        ("DELETE", f"/api/v1/benchmarks/{10**30}", {}),
    ]
    for model in (planted, "/etc/shadow", "/etc/passwd", "/no/such/file.gguf", "~/.ssh/id_rsa", "../config.json", url,
                  f"http://localhost:{listener_port}/x", "http://169.254.169.254/latest/meta-data/"):
        reqs += [("POST", "/api/v1/check", {"json": {"model": model}}),
                 ("GET", "/api/v1/check", {"params": {"model": model}}),
                 ("POST", "/api/v1/curve", {"json": {"model": model}}),
                 ("GET", "/api/v1/best", {"params": {"model": model}}),
                 ("GET", "/api/v1/compare", {"params": {"devices": "rtx-4090", "model": model}}),
                 ("GET", "/api/v1/cost", {"params": {"gpu": "rtx-4090", "model": model}}),
                 # the site's pages plan on the same server, under the same read policy
                 ("GET", "/", {"params": {"gpu": "rtx-4090", "model": model}}),
                 ("GET", "/best", {"params": {"model": model}}),
                 ("GET", "/compare", {"params": {"d": "rtx-4090", "model": model}}),
                 ("GET", "/cost", {"params": {"gpu": "rtx-4090", "model": model}})]
    return reqs


def listener():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.1)
    seen = {"n": 0, "stop": False}

    def run():
        while not seen["stop"]:
            try:
                conn, _ = sock.accept()
                seen["n"] += 1
                conn.close()
            except OSError:
                pass
    threading.Thread(target=run, daemon=True).start()
    return sock, seen


def main() -> None:
    heavy_n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as home:
        proc = start_server(port, home)
        sock, seen = listener()
        try:
            with httpx.Client(base_url=base, timeout=60) as c:
                answers = Counter()
                reqs = hostile_requests(sock.getsockname()[1], planted_model(home))
                for method, path, kw in reqs:
                    answers[f"{c.request(method, path, **kw).status_code // 100}xx"] += 1
                time.sleep(0.3)
            print(f"hostile requests: {len(reqs)}; answers by class: {dict(sorted(answers.items()))}; "
                  f"connections to the loopback listener: {seen['n']}")
            if heavy_n <= 0:
                return

            heavy = [("deepseek-v3", "llama.cpp"), ("llama-3.3-70b", "ollama"), ("llama-3.1-70b", "ollama"),
                     ("qwen3-32b", "ollama")]
            statuses: list[int] = []
            slow_s: list[float] = []

            def plan(i: int) -> None:
                model, runtime = heavy[i % len(heavy)]
                t = time.monotonic()
                r = httpx.get(base + "/api/v1/check", timeout=120,
                              params={"model": model, "runtime": runtime, "gpu": "rtx-4090", "ctx": 8192 + 256 * i})
                statuses.append(r.status_code)
                slow_s.append(time.monotonic() - t)

            threads = [threading.Thread(target=plan, args=(i,)) for i in range(heavy_n)]
            for t in threads:
                t.start()
            cheap: list[float] = []
            with httpx.Client(base_url=base, timeout=10) as c:
                while any(t.is_alive() for t in threads):
                    t0 = time.monotonic()
                    assert c.get("/api/v1/models").status_code == 200
                    cheap.append((time.monotonic() - t0) * 1000)
                    time.sleep(0.05)
            for t in threads:
                t.join()
            cheap.sort()
            print(f"heavy plans: {heavy_n} at once; answers {dict(Counter(statuses))}; slowest answer "
                  f"{max(slow_s):.1f} s")
            print(f"GET /api/v1/models meanwhile: {len(cheap)} requests, p50 {statistics.median(cheap):.1f} ms, "
                  f"p99 {cheap[int(len(cheap) * 0.99) - 1 if len(cheap) > 1 else 0]:.1f} ms, max {cheap[-1]:.1f} ms")
        finally:
            seen["stop"] = True
            sock.close()
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()

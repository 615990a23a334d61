#!/usr/bin/env python3
"""The site's page weight and time to the first verdict, on a warm `runlocal serve` and in Debian's headless
Chromium (Playwright), the way a visitor meets it.

  page weight        bytes of each page's HTML plus the CSS, JS and icon it loads (raw, and gzip -6 as a
                     compressing proxy would send them); /docs and /redoc are listed apart (third-party bundles)
  first verdict      from navigation start to the verdict badge on screen, for check pages whose plan the server
                     has not computed yet, median and worst of 9; and the same again for answers already planned
                     (the server's cache). Two clocks: the browser's own (navigation start to first contentful
                     paint: the verdict is in the server-rendered HTML, so it is on screen at first paint) and
                     the wall clock around Playwright (adds the driver's round trips and polling)
  in-place verdict   a runtime change in the form (JavaScript fetches the new page) to the new verdict

Target: first verdict ≤ 500 ms after load on the 2-core machine.

  python benchmarks/site.py [--runs 9]
"""
from __future__ import annotations

import argparse
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["/", "/best", "/guides", "/compare", "/cost", "/errors", "/errors/cuda-oom-load", "/errors/diagnose",
         "/models", "/models/llama-3.1-8b", "/hardware", "/hardware/rtx-4090", "/benchmarks", "/benchmarks/submit",
         "/methodology", "/glossary", "/api"]
GUIDES = ["/guides/best-laptop", "/guides/best-mac", "/guides/best-used-gpu", "/guides/best-budget-gpu",
          "/guides/16-vs-24-gb", "/guides/cuda-vs-rocm", "/guides/best-gpu-for-ollama"]
TARGET_MS = 500


def start_server(port: int, db: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RUNLOCAL_SITE_WARM_GUIDES": "1"}   # as a public site
    proc = subprocess.Popen([sys.executable, "-m", "runlocal.cli", "serve", "--port", str(port), "--db", db], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    import httpx

    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/glossary", timeout=2)
            return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start: " + proc.stderr.read().decode()[-2000:])


def page_weight(base: str, path: str, client) -> tuple[int, int]:
    html = client.get(base + path).content
    assets = set(re.findall(rb'(?:href|src)="(/static/[^"]+)"', html))
    raw, packed = len(html), len(gzip.compress(html, 6))
    for a in assets:
        body = client.get(base + a.decode()).content
        raw, packed = raw + len(body), packed + len(gzip.compress(body, 6))
    return raw, packed


def first_paint(page) -> float:
    """performance's first-contentful-paint of the page, in ms from navigation start (polled here: the page's
    Content-Security-Policy refuses the string predicates wait_for_function polls with)."""
    for _ in range(200):
        t = page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0")
        if t:
            return t
        time.sleep(0.01)
    raise SystemExit("no first-contentful-paint entry after 2 s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    import httpx
    from playwright.sync_api import sync_playwright

    from runlocal.testing.browser import CHROMIUM_FLAGS, chromium_path, free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_server(port, f"sqlite:///{tmp}/b.sqlite3")
        try:
            with httpx.Client(timeout=300) as client:
                for path in PAGES + GUIDES:             # warm: imports, catalogs, the sweep's lines, the guides
                    client.get(base + path)
                time.sleep(3)        # the server's warm-up thread ends with a full garbage collection: let it end
                print(f"{'page':28s} {'bytes':>9s} {'gzip':>8s}")
                for path in PAGES + ["/docs", "/redoc"]:
                    raw, packed = page_weight(base, path, client)
                    print(f"{path:28s} {raw:>9,d} {packed:>8,d}")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                # a new tab's first page also starts Chromium's renderer for the site and fetches the CSS/JS:
                # timed apart, then the runs below are a visitor's next answers
                t0 = time.perf_counter()
                page.goto(f"{base}/?model=llama-3.1-8b&gpu=rtx-4090&n=1&ctx=5000", wait_until="commit")
                page.wait_for_selector("#result .badge")
                new_tab = (time.perf_counter() - t0) * 1000
                new_tab_byte, new_tab_sent = page.evaluate(
                    "(n => [n.responseStart, n.requestStart])(performance.getEntriesByType('navigation')[0])")
                fresh, cached, inplace = [], [], []
                ttfb: dict[int, list[float]] = {id(fresh): [], id(cached): []}
                paint: dict[int, list[float]] = {id(fresh): [], id(cached): []}
                for i in range(a.runs):
                    query = {"model": "llama-3.1-8b", "gpu": "rtx-4090", "n": "1", "ctx": str(6000 + 256 * i)}
                    for times in (fresh, cached):       # the same URL twice: planned, then answered from cache
                        t0 = time.perf_counter()
                        page.goto(f"{base}/?{urlencode(query)}", wait_until="commit")
                        page.wait_for_selector("#result .badge")
                        times.append((time.perf_counter() - t0) * 1000)
                        # the server's share: navigation start to the first byte of the page
                        ttfb[id(times)].append(page.evaluate(
                            "performance.getEntriesByType('navigation')[0].responseStart"))
                        paint[id(times)].append(first_paint(page))
                    t0 = time.perf_counter()
                    page.select_option("#runtime", "vllm" if i % 2 == 0 else "sglang")
                    page.wait_for_function("rt => document.querySelector('#result .verdict-line span:last-child')"
                                           ".textContent.includes(rt)", arg="vllm" if i % 2 == 0 else "sglang")
                    inplace.append((time.perf_counter() - t0) * 1000)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print()
    print(f"{'a new tab, new plan (wall, via Playwright)':46s} {new_tab:6.0f} ms   (first byte {new_tab_byte:.0f} ms, "
          f"of which {new_tab_byte - new_tab_sent:.0f} ms after the request was sent)")
    for name, times in (("first verdict, new plan", fresh), ("first verdict, cached plan", cached)):
        p = paint[id(times)]
        print(f"{name + ' (browser: paint)':46s} median {statistics.median(p):6.0f} ms   worst {max(p):6.0f} ms   "
              f"(n={len(p)}; first byte {statistics.median(ttfb[id(times)]):4.0f} ms; "
              f"target ≤ {TARGET_MS} ms: {'met' if max(p) <= TARGET_MS else 'NOT met'}, worst case)")
        print(f"{'':46s} each: {' '.join(f'{t:.0f}' for t in p)}; first byte each: "
              f"{' '.join(f'{t:.0f}' for t in ttfb[id(times)])}")
    for name, times in (("first verdict, new plan", fresh), ("first verdict, cached plan", cached),
                        ("in-place verdict (runtime change)", inplace)):
        med = statistics.median(times)
        print(f"{name + ' (wall, via Playwright)':46s} median {med:6.0f} ms   worst {max(times):6.0f} ms   "
              f"(n={len(times)}; each: {' '.join(f'{t:.0f}' for t in times)})")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Every page the site's directories link to, each loaded cold: its time to answer, wall and CPU.

Cold: the app is built once and warmed as `runlocal serve` warms it at start (site.warm_caches without the
guides: the catalog sweep's memory lines, the page templates), then each page is requested in a child forked from
that process, so every page meets the server's caches empty and no page warms the next (review19 #13 crawled one
server: later pages found what earlier ones had planned). The links are read from the seed pages below (the
navigation, the directories and the guides), same-site only, without /api/, /static/, /docs and /redoc; each seed
is read in a child too.

Prints the count, median / p90 / worst of wall time and of the process's CPU time (all its threads), and the slowest
pages. The machine is shared: wall time is what a visitor waits, CPU time what the page cost.

  python benchmarks/pages.py [--match SUBSTRING] [--slowest 10] [--html DIR] [--rows FILE] [--profile URL]
  python benchmarks/pages.py --same DIR_BEFORE DIR_AFTER     # the pages' HTML, timing text aside, compared

--html DIR keeps each page's HTML (for --same, before and after a change); --profile URL prints cProfile's top
functions (cumulative) of that one page, cold.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ["/", "/best", "/compare", "/cost", "/guides", "/errors", "/errors/diagnose", "/models", "/hardware",
         "/benchmarks", "/benchmarks/submit", "/methodology", "/glossary", "/api", "/guides/best-laptop",
         "/guides/best-mac", "/guides/best-used-gpu", "/guides/best-budget-gpu", "/guides/16-vs-24-gb",
         "/guides/cuda-vs-rocm", "/guides/best-gpu-for-ollama"]
SKIP = ("/api/", "/static/", "/docs", "/redoc", "/openapi.json")
# text that says how long something took, or when: not part of a page's answer
TIMING = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z?|\b\d+(\.\d+)? ms\b")


def build_app():
    """The app as `runlocal serve` builds it, with its start-up warm-up done (site.warm_caches; the guides' left off,
    as by default)."""
    from runlocal.api.app import create_app
    from runlocal.web.site import warm_caches

    tmp = tempfile.mkdtemp(prefix="runlocal-pages-")
    app = create_app(store_url=f"sqlite:///{tmp}/b.sqlite3", cors_origins=[])
    warm_caches()
    return app


def in_child(fn, *args):
    """fn(*args) in a process forked from this one (its caches as they are now, thrown away after); its JSON result."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:            # the child: answer, then leave without running the parent's exit handlers
        os.close(read)
        try:
            data = json.dumps(fn(*args)).encode()
        except BaseException as e:  # noqa: BLE001 — reported by the parent
            data = json.dumps({"error": repr(e)}).encode()
        with os.fdopen(write, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def fetch(app, url: str, keep: str | None = None, profile: bool = False) -> dict:
    from fastapi.testclient import TestClient

    client = TestClient(app, raise_server_exceptions=False)
    profilers: list = []
    if profile:         # every thread's: the page plans on the planning pool's threads, the event loop on another
        import cProfile
        import threading

        def start(*_):
            profilers.append(cProfile.Profile())
            profilers[-1].enable()

        threading.setprofile(start)
        start()
    wall, cpu = time.perf_counter(), time.process_time()
    r = client.get(url, follow_redirects=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    out = {"url": url, "status": r.status_code, "wall": wall, "cpu": cpu}
    if profilers:
        import io
        import pstats

        text = io.StringIO()
        pstats.Stats(*profilers, stream=text).sort_stats("cumulative").print_stats(60)
        out["profile"] = text.getvalue()
    if keep:
        name = hashlib.sha1(url.encode()).hexdigest()[:16] + ".html"
        Path(keep, name).write_text(f"<!-- {url} -->\n" + TIMING.sub("TIME", r.text))
    else:
        out["links"] = sorted(set(re.findall(r'href="(/[^"#]*)', r.text)))
    return out


def links(app) -> list[str]:
    found: dict[str, None] = dict.fromkeys(SEEDS)
    for seed in SEEDS:
        for href in in_child(fetch, app, seed).get("links", []):
            href = href.replace("&amp;", "&")
            if not href.startswith("//") and not href.startswith(SKIP):
                found.setdefault(href)
    return list(found)


def same(before: str, after: str) -> int:
    a, b = ({p.name: p.read_text() for p in Path(d).glob("*.html")} for d in (before, after))
    differ = [n for n in sorted(set(a) & set(b)) if a[n] != b[n]]
    for n in differ:
        print("differs:", a[n].splitlines()[0])
    print(f"{len(set(a) & set(b))} pages in both, {len(differ)} differ; only before {len(set(a) - set(b))}, "
          f"only after {len(set(b) - set(a))} (a run with --match keeps some pages only)")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--match", default="", help="only the pages whose URL holds this")
    ap.add_argument("--slowest", type=int, default=10)
    ap.add_argument("--html", help="keep each page's HTML in this folder (timing text replaced)")
    ap.add_argument("--profile", help="cProfile one page, cold")
    ap.add_argument("--rows", help="write every page's figures (url, status, wall, cpu) to this JSON file")
    ap.add_argument("--same", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two --html folders")
    a = ap.parse_args()
    if a.same:
        return same(*a.same)
    sys.setswitchinterval(0.001)           # as `runlocal serve` sets it (api/app.create_app_from_environment)
    app = build_app()
    if a.profile:
        print(in_child(fetch, app, a.profile, None, True)["profile"])
        return 0
    urls = [u for u in links(app) if a.match in u]
    if a.html:
        Path(a.html).mkdir(parents=True, exist_ok=True)
    rows = []
    t0 = time.perf_counter()
    for url in urls:
        rows.append(in_child(fetch, app, url, a.html))
    if a.rows:
        Path(a.rows).write_text(json.dumps([{k: r.get(k) for k in ("url", "status", "wall", "cpu", "error")}
                                            for r in rows], indent=1))
    bad = [r for r in rows if "error" in r or r["status"] >= 500]
    rows = [r for r in rows if "error" not in r]
    wall, cpu = sorted(r["wall"] for r in rows), sorted(r["cpu"] for r in rows)

    def stats(xs):
        return (f"median {statistics.median(xs):6.3f} s   p90 {xs[int(0.9 * (len(xs) - 1))]:6.3f} s   "
                f"worst {xs[-1]:6.3f} s   over 1 s: {sum(x > 1 for x in xs)}")

    print(f"{len(rows)} pages, each cold ({time.perf_counter() - t0:.0f} s in all; load average "
          f"{os.getloadavg()[0]:.1f} at the end)")
    print(f"wall  {stats(wall)}")
    print(f"cpu   {stats(cpu)}")
    print(f"\nthe slowest {a.slowest} (wall):")
    for r in sorted(rows, key=lambda r: -r["wall"])[:a.slowest]:
        print(f"  {r['wall']:6.3f} s wall  {r['cpu']:6.3f} s cpu  {r['status']}  {r['url']}")
    for r in bad:
        print("failed:", r)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

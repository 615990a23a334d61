#!/usr/bin/env python3
"""Saves what the accuracy benchmarks print into src/runlocal/web/data/accuracy.json, for the site's
Methodology page: the page shows this output as printed, never figures typed by hand.

Each benchmark runs as its own process (as a user would run it); from its stdout the block the README
quotes is kept. Rerun after a planner change:

  python benchmarks/site_tables.py            # writes the file and prints what it kept
  python benchmarks/site_tables.py --check    # exit 1 if the saved file differs from a fresh run
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

from runlocal.web.accuracy import BENCHMARKS, kept

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "runlocal" / "web" / "data" / "accuracy.json"


def run_all() -> list[dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = []
    for title, script, first, last in BENCHMARKS:
        proc = subprocess.run([sys.executable, str(ROOT / script)], capture_output=True, text=True, env=env, check=False,
                              cwd=ROOT, timeout=1800)
        if proc.returncode != 0:
            raise SystemExit(f"{script} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        out.append({"title": title, "command": f"python {script}", "text": kept(proc.stdout, first, last)})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    tables = run_all()
    if a.check:
        saved = json.loads(OUT.read_text()) if OUT.exists() else {}
        same = saved.get("tables") == tables
        print("saved tables match a fresh run" if same else "saved tables differ from a fresh run: rerun without --check")
        return 0 if same else 1
    doc = {"generated_by": "python benchmarks/site_tables.py", "generated_at": date.today().isoformat(),
           "tables": tables}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    for t in tables:
        print(f"== {t['title']} ({t['command']})\n{t['text']}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

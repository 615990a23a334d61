#!/usr/bin/env python3
"""The hostile-file corpus (runlocal/testing/hostile_corpus.py) through `runlocal check` (and `runlocal snapshot`), one
child process per case.

Each child runs under a 1 GiB address-space limit; its peak RSS and CPU time come from os.wait4. A case is
clean when the child exits 2 with exactly one line on stderr ("error: …") and no traceback. Prints one row
per case (with --verbose) and the figures the README's reliability section quotes: cases, clean, the
slowest and the largest case.

    PYTHONPATH=src python3 benchmarks/hostile_files.py [--verbose] [--workers 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from runlocal.testing import hostile_corpus as corpus

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    env.pop("RUNLOCAL_DEBUG", None)
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        paths = corpus.build(Path(tmp))
        jobs = [(name, ["check", str(path), "--gpu", "rtx-4090"]) for name, path in paths.items()]
        jobs += [(f"{name} --runtime {rt}", ["check", str(paths[name]), "--gpu", "rtx-4090", "--runtime", rt])
                 for name in ("config-llama-num_key_value_heads-0", "config-llama-max_position_embeddings-1")
                 for rt in ("vllm", "sglang", "ollama", "transformers")]
        jobs += [(name, ["snapshot", str(make(Path(tmp)))]) for name, make in corpus.snapshot_cases().items()]
        with ThreadPoolExecutor(args.workers) as pool:
            outcomes = list(pool.map(lambda job: corpus.run_cli(job[0], job[1], env=env), jobs))
    bad = [o for o in outcomes if not o.clean]
    for o in outcomes if args.verbose else bad:
        line = (o.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        print(f"{'ok ' if o.clean else 'BAD'} {o.name:48s} rc={o.returncode} cpu {o.cpu_s:4.1f}s wall {o.wall_s:4.1f}s "
              f"rss {o.peak_rss_mb:5.0f} MB  {line[:140]}")
    slow = max(outcomes, key=lambda o: o.cpu_s)
    big = max(outcomes, key=lambda o: o.peak_rss_mb)
    print(f"hostile files: {len(outcomes)} cases ({len(paths)} model files, their runtime variants, "
          f"{len(corpus.snapshot_cases())} snapshots), "
          f"{len(outcomes) - len(bad)} clean (exit 2, one line, no traceback)")
    print(f"  slowest: {slow.cpu_s:.2f} s CPU ({slow.wall_s:.1f} s wall) {slow.name}")
    print(f"  largest: {big.peak_rss_mb:.0f} MB peak RSS {big.name} (address space limited to "
          f"{corpus.AS_LIMIT >> 20} MiB)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

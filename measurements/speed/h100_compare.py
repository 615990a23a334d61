#!/usr/bin/env python3
"""Measured llama.cpp speed on the H100 (h100_llamacpp_own.jsonl) against `runlocal check`'s prediction.

Decode: the planner reports decode at half the context, so tg128 after a 512-token prompt (KV length
512..639, mean 576) is compared with `--ctx 1152` (midpoint 576) and plain tg128 (KV 0..127, mean 64) with
`--ctx 128`.  Prefill: pp512 against `--ctx 4096` (the context the measurement used).  Prints a markdown table.

Usage: python measurements/speed/h100_compare.py [h100_llamacpp_own.jsonl]
"""
from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
CTX_FOR_TEST = {"pp512": 4096, "tg128@d512": 1152, "tg128": 128}
KEY_FOR_TEST = {"pp512": "prefill_tokens_per_s", "tg128@d512": "decode_tokens_per_s", "tg128": "decode_tokens_per_s"}


@cache
def check(model: str, ctx: int) -> dict:
    exe = Path(sys.executable).with_name("runlocal")
    out = subprocess.run([str(exe), "check", model, "--gpu", "h100", "--quant", "Q4_0", "--ctx", str(ctx), "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    path = Path(argv[0]) if argv else HERE / "h100_llamacpp_own.jsonl"
    recs = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    print("| model | GGUF GiB | runlocal weights GiB | test | measured t/s | predicted t/s (ctx) | error |")
    print("|---|---:|---:|---|---:|---:|---:|")
    errs: dict[str, list[float]] = {}
    for r in recs:
        t = r["test"]
        if t not in CTX_FOR_TEST:
            continue
        d = check(r["model"], CTX_FOR_TEST[t])
        p = d["speed"][KEY_FOR_TEST[t]]
        e = p / r["tokens_per_s"] - 1
        errs.setdefault(t, []).append(abs(e))
        print(f"| {r['model']} | {r['model_gib']:.2f} | {d['model']['weights_bytes'] / 2**30:.2f} | {t} | "
              f"{r['tokens_per_s']:.1f} | {p:.1f} ({CTX_FOR_TEST[t]}) | {e:+.1%} |")
    for t, v in errs.items():
        v = sorted(v)
        print(f"\n{t}: median |error| {v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2:.1%}"
              f" over {len(v)} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())

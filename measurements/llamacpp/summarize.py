#!/usr/bin/env python3
"""Print markdown tables summarising data/<backend>.jsonl (used for README.md).

  python summarize.py data/cpu.jsonl
"""
from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def kv_total(r):
    return sum(v for k, v in r.get("buffers", {}).items() if " KV" in k or k.endswith(" RS"))


def kv_text(r):
    b = r.get("buffers", {})
    parts = []
    for k, v in b.items():
        if " KV" in k or k.endswith(" RS"):
            tag = k.split(" ", 1)[1]
            parts.append(f"{v:g}" if tag == "KV" else f"{v:g} {tag.replace('KV ', '').strip('()')}")
    return " + ".join(parts)


def compute(r):
    return sum(v for k, v in r.get("buffers", {}).items() if "compute" in k)


def output(r):
    return sum(v for k, v in r.get("buffers", {}).items() if "output" in k)


def find(recs, **kw):
    for r in recs:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def main(path):
    recs = load(path)
    by_model = defaultdict(list)
    for r in recs:
        by_model[r["model"]].append(r)

    print("| model (dims of) | arch | records | ok | refused | skipped |")
    print("|---|---|---|---|---|---|")
    for m, rs in by_model.items():
        c = Counter("ok" if r.get("ok") else r.get("stage", "?") for r in rs)
        print(f"| {m} ({rs[0]['model_repo']}) | {rs[0]['arch']} | {len(rs)} | {c['ok']} | {c['context']} | {c['skipped']} |")
    print()
    base = dict(n_seq_max=1, n_ubatch=512, n_batch=2048, kv_unified=False, swa_full=False)
    print("MiB as logged. KV = KV/RS buffers (f16 unless stated; SWA models: global + SWA); "
          "compute = compute buffer(s); n_seq 1, n_ubatch 512 unless stated.\n")
    print("| model | n_ctx | KV f16 | KV q8_0 | KV q4_0 | compute FA on | compute FA off | "
          "compute FA on, ub 1024 | KV f16, 4 seqs | compute FA on, 4 seqs | output 1 / 4 seqs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m, rs in by_model.items():
        for n_ctx in (4096, 16384, 65536):
            def g(**kw):
                return find(rs, ok=True, n_ctx_requested=n_ctx, **{**base, **kw})
            on = g(type_k="f16", type_v="f16", flash_attn="on")
            off = g(type_k="f16", type_v="f16", flash_attn="off")
            q8 = g(type_k="q8_0", type_v="q8_0", flash_attn="on")
            q4 = g(type_k="q4_0", type_v="q4_0", flash_attn="on")
            ub = g(type_k="f16", type_v="f16", flash_attn="on", n_ubatch=1024)
            s4 = g(type_k="f16", type_v="f16", flash_attn="on", n_seq_max=4)
            cell = lambda r, f: (f(r) if isinstance(f(r), str) else f"{f(r):g}") if r else "–"
            print(f"| {m} | {n_ctx} | {cell(on, kv_text)} | {cell(q8, kv_text)} | {cell(q4, kv_text)} | "
                  f"{cell(on, compute)} | {cell(off, compute)} | {cell(ub, compute)} | {cell(s4, kv_text)} | "
                  f"{cell(s4, compute)} | {cell(on, output)} / {cell(s4, output)} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/cpu.jsonl")

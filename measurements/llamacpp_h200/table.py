"""The short table h200_run.sh prints last: the flash-attention pairs (pp512 and tg32 t/s, fa 0 / fa 1) and the
buffer records per architecture.  python table.py OUT_DIR"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def main(out: Path) -> None:
    fa = out / "h200_fa_depth.jsonl"
    recs = [json.loads(x) for x in fa.read_text().splitlines() if x.strip()] if fa.exists() else []
    by: dict = defaultdict(dict)
    for r in recs:
        by[(r["model"], r["depth"])][(r["test"][:2], r["fa"])] = r["tokens_per_s"]
    print(f"{'model':16} {'depth':>6} {'pp fa0':>8} {'pp fa1':>8} {'ratio':>6} {'tg fa0':>7} {'tg fa1':>7}")
    for (m, d), v in by.items():
        pp0, pp1 = v.get(("pp", 0)), v.get(("pp", 1))
        tg0, tg1 = v.get(("tg", 0)), v.get(("tg", 1))
        ratio = f"{pp0 / pp1:6.3f}" if pp0 and pp1 else "     -"
        print(f"{m:16} {d:6d} {pp0 or 0:8.0f} {pp1 or 0:8.0f} {ratio} {tg0 or 0:7.1f} {tg1 or 0:7.1f}")
    ar = out / "h200_archs.jsonl"
    arecs = [json.loads(x) for x in ar.read_text().splitlines() if x.strip()] if ar.exists() else []
    cnt: dict = defaultdict(lambda: [0, 0])
    for r in arecs:
        cnt[r.get("arch")][0 if r.get("ok") else 1] += 1
    print("archs: " + ", ".join(f"{a} {ok}/{ok + bad}" for a, (ok, bad) in cnt.items()))
    if arecs:
        r = next((x for x in arecs if x.get("nvml_used_model_mib") is not None), None)
        if r:
            print(f"NVML: start {r['nvml_used_start_mib']} init {r['nvml_used_init_mib']} before first load "
                  f"{r['nvml_used_before_load_mib']} after {r['nvml_used_model_mib']} MiB; model {r['model_buffers']}")
        dec = [x for x in arecs if x.get("decode")]
        if dec:
            d = dec[0]
            print(f"first decode ({d['model']}): ctx {d.get('nvml_used_ctx_mib')} -> after batch "
                  f"{d['decode'].get('nvml_used_after_batch_mib')} -> after free {d.get('nvml_used_after_free_mib')} MiB")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

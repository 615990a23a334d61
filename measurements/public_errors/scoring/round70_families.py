"""Round 70's misses other than the out-of-memory line with no phase stated, counted by family over every tuning text
(session 21, diagnose21c; issue #18 point 4, step 3). Written and committed before any rule; reads the tuning part only
(never next/ nor held_out/). Each group is a signal a family carries, not one text's string:

- PyTorch's figures read as fragmentation (cuda_oom.fragmented: the ask above the free memory, within free + the
  unused cache, the cache at least as much unused as in tensors) where the refused block is a quarter of the card or
  more (the size phase.py's evidence 4 reads as an input's activations, not a weight tensor) — round 70's 50.64 GiB
  ask on an 80 GB A100 at a 23k-token prompt was answered fragmentation;
- a KV cache's constructor allocating its tensors at start-up in exllamav2 (ExLlamaV2Cache*( / create_state_tensors
  in a frame) — round 70's 34B exl2 on a T4 was answered "phase not stated";
- a weight's shape refused on load: mlx's "Expected shape (…) but received shape (…) for parameter", PyTorch's
  load_state_dict "size mismatch for", any "shape mismatch" — round 70's mlx-lm one was answered unknown.
Run from the worktree: PYTHONPATH=$PWD/src python3 measurements/public_errors/scoring/round70_families.py
"""

from __future__ import annotations

import re
from collections import Counter

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.cuda_oom import fragmented
from runlocal.evidence import public_errors

EXL2_CACHE = re.compile(r"ExLlamaV2Cache\w*\(|create_state_tensors")
SHAPE = {
    "mlx: Expected shape (...) but received shape (...) for parameter": re.compile(
        r"Expected shape \([^)]*\) but received shape \([^)]*\)"),
    "PyTorch load_state_dict: size mismatch for": re.compile(r"size mismatch for"),
    "shape mismatch (any)": re.compile(r"shape mismatch", re.I),
}


def main() -> None:
    tuning, _ = public_errors.split(public_errors.load_records())
    groups: dict[str, Counter] = {}
    for r in tuning:
        text = r["text"]
        d = diagnose_text(text)
        f = d.extracted or {}
        answer = (r["label"], d.category)
        req, total = f.get("requested_bytes"), f.get("total_bytes")
        if fragmented(f):
            big = "ask >= 1/4 of the card" if req and total and req >= 0.25 * total else "ask < 1/4 of the card"
            groups.setdefault(f"PyTorch's figures read as fragmentation, {big}", Counter())[answer] += 1
        if EXL2_CACHE.search(text):
            groups.setdefault("exllamav2 KV cache constructor in a frame", Counter())[answer] += 1
        for name, pattern in SHAPE.items():
            if pattern.search(text):
                groups.setdefault(name, Counter())[answer] += 1
    for name, counts in groups.items():
        print(f"{name}: {sum(counts.values())} tuning texts (label -> answer's category: texts)")
        for (label, category), n in sorted(counts.items()):
            print(f"  {label:24s} -> {category:26s} {n}")


if __name__ == "__main__":
    main()

"""The tuning texts answered "out-of-memory, phase not stated" (classify.PHASE_UNSTATED_ID), counted by label and by the
run signals a fine-tuning or generation paste could carry (session 20, diagnose20b: the count behind its tuning on
rounds 64-65's misses; the same 148 texts before and after that tuning, compared per text): a traceback's frames (backward, optimizer step, trainer step, decoding loop, forward), a trainer's log lines
(loss, step counter, epoch, a progress bar past 0), torchrun's [rankN]: prefix, a text of more than one line, and
PyTorch's own figures (reserved but unallocated over allocated). Reads the tuning part only (never next/ nor held_out/).
Run from the worktree: PYTHONPATH=$PWD/src python3 measurements/public_errors/scoring/phase_unstated_count.py
"""

from __future__ import annotations

import collections
import re

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.classify import PHASE_UNSTATED_ID
from runlocal.evidence import public_errors

SIGNALS = {
    "rank prefix": r"^\W{0,2}rank\d+\]?:",
    "backward frame": r"\.backward\(|in backward\b|autograd",
    "optimizer step": r"optimizer\.step|torch[/\\]optim[/\\]|_multi_tensor_|_single_tensor_",
    "trainer step": r"trainer\.train|_inner_training_loop|training_step|train_step|compute_loss",
    "decoding loop": r"\bin (?:sample|_sample|greedy_search|beam_search)\b|generation[/\\]utils",
    "forward frame": r"in forward\b|_call_impl\b",
    "loss line": r"\bloss\W{0,3}[:=]?\s*\d",
    "step counter": r"\bstep\s*\d+\s*/\s*\d+|\bsteps?:\s*\d",
    "epoch": r"\bepoch\b",
    "progress past 0": r"\b[1-9]\d*/\d+\s*\[",
}


def main() -> None:
    tuning, _ = public_errors.split(public_errors.load_records())
    unstated = [r for r in tuning if (d := diagnose_text(r["text"])).entry is not None
                and d.entry.id == PHASE_UNSTATED_ID]
    labels = collections.Counter(r["label"] for r in unstated)
    print(f"{len(unstated)} of {len(tuning)} tuning texts answered phase not stated; by label: {dict(labels)}")
    for name, pattern in SIGNALS.items():
        hits = collections.Counter(r["label"] for r in unstated if re.search(pattern, r["text"], re.I | re.M))
        print(f"  {name:16s} {dict(hits) or 0}")
    lines = collections.Counter(r["label"] for r in unstated if len([x for x in r["text"].splitlines() if x.strip()]) > 1)
    print(f"  {'more than 1 line':16s} {dict(lines)}")
    for label in ("cuda_oom_load", "cuda_oom_long_context"):
        ratios = []
        for r in unstated:
            figures = diagnose_text(r["text"]).extracted
            allocated, cached = figures.get("allocated_bytes"), figures.get("reserved_unallocated_bytes")
            if r["label"] == label and allocated and cached is not None:
                ratios.append(cached / allocated)
        ratios.sort()
        shown = ", ".join(f"{x:.3f}" for x in ratios)
        print(f"  reserved-unallocated / allocated, {label} ({len(ratios)} with both figures): {shown}")


if __name__ == "__main__":
    main()

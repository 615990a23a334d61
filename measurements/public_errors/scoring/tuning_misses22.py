"""The tuning misses by family (session 22, diagnose22; issue #18 point 4), after round 71 joined tuning. Reads the
tuning part only (never next/ nor held_out/). Prints (1) every tuning miss other than the out-of-memory line answered
"phase not stated" (those are counted in phase_unstated_signals22.txt and phase_unstated_load_forms22.txt), grouped by
label -> answer, with its runtime, family and the line diagnose matched; (2) for each signal two or more of those misses
share, every tuning text carrying it by label -> answer: a signal can become a rule only where the texts answered
right that carry it would not move; (3) the run forms read in the run-labelled phase-unstated texts that phase.RUN does
not read, counted the same way.
Run from the worktree: PYTHONPATH=$PWD/src python3 measurements/public_errors/scoring/tuning_misses22.py
"""

from __future__ import annotations

import re
from collections import Counter

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.classify import PHASE_UNSTATED_ID
from runlocal.diagnose.cuda_oom import fragmented
from runlocal.evidence import public_errors

SHARED = {
    "vLLM's 'Error in model execution' with an out-of-memory": r"Error in model execution",
    "a vLLM forward frame with an out-of-memory": r"(?s)vllm.*in forward|in forward.*vllm",
    "vLLM's start-up profile frames (profile_run, determine_num_available_blocks)":
        r"profile_run|determine_num_available_blocks|_initialize_kv_caches",
    "a bare 'CUDA error: out of memory'": r"\ACUDA error: out of memory\s*\Z",
    "a bare 'llama runner process has terminated'": r"\AError: llama runner process has terminated\s*\Z",
    "XLA's 'Ran out of memory in memory space hbm'": r"memory space hbm",
    "OpenCL / OpenVINO's CL_OUT_OF_RESOURCES": r"OUT_OF_RESOURCES",
    "SYCL / Level Zero's PI_ERROR / UR_RESULT": r"PI_ERROR|UR_RESULT_ERROR",
    "Vulkan's ErrorOutOfDeviceMemory": r"OutOfDeviceMemory",
    "a bare MemoryError": r"^MemoryError\s*$",
    "std::bad_alloc": r"bad_alloc",
    "JavaScript's RangeError": r"RangeError",
    "ggml's pinned-memory warning": r"of pinned memory",
    "an app's own guard ('Not enough RAM', 'requires ~X MB GPU memory but only')":
        r"not enou?g?h (?:v?ram|memory)|requires ~?\d+\s*MB GPU memory",
}
RUN_FORMS = {
    "rotary embedding math (rotate_half, apply_rotary)": r"rotate_half|apply_rotary",
    "the user reducing the batch (a batch size said in prose)":
        r"reduc\w* (?:the )?batch|batch size of \d|smaller batch|batch[_ ]size\s*(?:=|to|of)\s*\d",
    "a document being processed ('ERROR processing', 'Failed to add to collection')":
        r"error processing|failed to add to collection",
    "an op dispatched (torch/_ops.py __call__)": r"_ops\.py.*__call__|in __call__\s*$",
    "a kernel chosen by heuristic (lmdeploy)": r"feasible kernel|dispatch by heuristic",
    "said to happen often (often, 经常)": r"经常|often|frequently|occasionally",
    "'when I run it' / 'running the code'": r"\bwhen (?:i )?run(?:ning)? (?:it|the code|this)\b",
}


def _by_answer(answered: list[tuple[dict, str, str | None]], pattern: str) -> str:
    compiled = re.compile(pattern, re.I | re.M)
    seen = Counter(f"{r['label']} -> {category}" for r, category, _ in answered if compiled.search(r["text"]))
    return "; ".join(f"{k} {n}" for k, n in seen.most_common()) or "none"


def main() -> None:
    tuning, _ = public_errors.split(public_errors.load_records())
    answered = []
    for r in tuning:
        d = diagnose_text(r["text"])
        answered.append((r, d.entry.category if d.entry else "unknown", d.entry.id if d.entry else None))
    misses = [(r, c, e) for r, c, e in answered if c != r["label"] and e != PHASE_UNSTATED_ID]
    unstated = sum(1 for r, c, e in answered if c != r["label"] and e == PHASE_UNSTATED_ID)
    print(f"{len(tuning)} tuning texts; misses: {len(misses) + unstated} ({unstated} answered 'phase not stated', "
          f"{len(misses)} others)\n\n(1) the other misses, by label -> answer")
    groups = Counter(f"{r['label']} -> {c}" for r, c, _ in misses)
    for group, n in groups.most_common():
        print(f"  {group} ({n})")
        for r, c, _ in misses:
            if f"{r['label']} -> {c}" == group:
                line = diagnose_text(r["text"]).matched_line or r["text"].strip().splitlines()[0]
                print(f"    {r['id'][:44]:44s} {r['runtime'][:14]:14s} {line[:110]!r}")
    print("\n(2) signals shared by two or more of them, over every tuning text (label -> answer: texts)")
    for name, pattern in SHARED.items():
        print(f"  {name}: {_by_answer(answered, pattern)}")
    frag = Counter(f"{r['label']} -> {c}" for r, c, _ in answered if fragmented(diagnose_text(r["text"]).extracted))
    print("  PyTorch's figures that cuda_oom.fragmented reads as fragmentation (ragflow, the 50.64 GiB ask): "
          + ("; ".join(f"{k} {n}" for k, n in frag.most_common()) or "none"))
    print("\n(3) run forms phase.RUN does not read, over every tuning text (label -> answer: texts)")
    for name, pattern in RUN_FORMS.items():
        print(f"  {name}: {_by_answer(answered, pattern)}")


if __name__ == "__main__":
    main()

"""The signals still unused for an out-of-memory line whose phase the text does not state (session 22, diagnose22;
issue #18 point 4: 15 of the 20 public held-out misses since session 20 are this line). Counted BEFORE any rule.

Population: every tuning text labelled the load (cuda_oom_load) or the run (cuda_oom_long_context) that diagnose answers
"phase not stated" (classify.PHASE_UNSTATED_ID); read from the tuning part only (never next/ nor held_out/). For each
signal: how many of those load and run texts carry it, and — to see whether its direction holds where diagnose already
reads a phase — how many of ALL tuning texts labelled the load / the run carry it. A signal can move the answer without
turning any tuning text wrong only where the phase-unstated texts that carry it are all of one phase; with a base of
about 70 % load, n load texts and no run text happen by chance with probability 0.7^n (printed), so a one-phase count
needs n >= 9 to beat chance at 5 %, and a mechanism, to be worth a rule.

What earlier counts (phase_unstated_count.py, phase_unstated_signals.py) did not test, and this one does:
- the ask against the card's total capacity in finer buckets (>= 10 %), against the free memory, and the two sizes
  PyTorch's rounding makes common (20.00 MiB: any request of 1-10 MB; 2.00 MiB: any of <= 1 MB);
- "already allocated" against "reserved": the unused cache as a share of what PyTorch holds in four buckets and in
  bytes, and memory the process holds outside PyTorch ("Including non-PyTorch memory, this process has X in use");
- the ask as one logits buffer (k x vocab x 2 or 4 bytes, k >= 2 rows) and as one KV block (a power-of-two length x
  a KV width x 2 bytes, K or V or both) — with the caveat that PyTorch prints the size after rounding it up to a
  multiple of 2 MiB (c10/cuda/CUDACachingAllocator.cpp, malloc's message: "Tried to allocate ", format_size(alloc_size),
  alloc_size from get_allocation_size), so an exact-size identity is only as good as that rounding;
- stack frames of generate / forward / backward still present;
- batch and sequence words, image words, server words, a multi-GPU card index;
- a second out-of-memory after a first success (two failing lines, "works the first time", "after a few requests").
Run from the worktree: PYTHONPATH=$PWD/src python3 measurements/public_errors/scoring/phase_unstated_signals22.py
"""

from __future__ import annotations

import re
from collections.abc import Callable

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.classify import PHASE_UNSTATED_ID
from runlocal.evidence import public_errors

MIB, GIB = 2**20, 2**30
LOAD, RUN = "cuda_oom_load", "cuda_oom_long_context"
# config.json vocab_size of Llama 1-2 / Mistral (32000), Llama 3 (128256), Qwen 2-2.5 (151936 / 152064), GPT-2 (50257),
# GPT-NeoX (50280), Gemma (256000), Phi-3 (32064); KV widths: kv_heads x head_dim of common decoders (8 x 128 = 1024,
# 32 x 128 = 4096, 40 x 128 = 5120, 4 x 128 = 512, 2 x 128 = 256)
VOCAB = (32000, 32064, 50257, 50280, 128256, 151936, 152064, 256000)
KV_WIDTH = (256, 512, 1024, 2048, 4096, 5120, 8192)
HIDDEN = (2048, 2560, 3072, 3584, 4096, 5120, 6656, 7168, 8192)
TOLERANCE = 0.011 * MIB  # PyTorch prints two decimals of the unit


def _words(pattern: str) -> Callable[[dict, dict], bool]:
    compiled = re.compile(pattern, re.I | re.M)
    return lambda rec, fig: compiled.search(rec["text"]) is not None


def _ratio(fig: dict, top: str, bottom: str) -> float | None:
    a, b = fig.get(top), fig.get(bottom)
    return a / b if a is not None and b else None


def _between(value: float | None, low: float, high: float) -> bool:
    return value is not None and low <= value < high


def _logits(asked: float | None) -> bool:
    """k x vocab x (2 or 4) bytes for k >= 2 rows that is not a hidden width (that would be a weight: vocab x hidden)."""
    if not asked:
        return False
    for vocab in VOCAB:
        for width in (2, 4):
            rows = round(asked / (vocab * width))
            if rows >= 2 and rows not in HIDDEN and abs(asked - rows * vocab * width) < TOLERANCE:
                return True
    return False


def _embedding(asked: float | None) -> bool:
    """vocab x hidden x (2 or 4) bytes: one embedding or lm_head matrix."""
    if not asked:
        return False
    return any(abs(asked - v * h * w) < TOLERANCE for v in VOCAB for h in HIDDEN for w in (2, 4))


def _kv_block(asked: float | None) -> bool:
    """A power-of-two length (512 .. 131072) x a KV width x 2 bytes, times 1 (K or V) or 2 (K and V)."""
    if not asked:
        return False
    return any(abs(asked - length * width * 2 * kv) < TOLERANCE
               for length in (2**p for p in range(9, 18)) for width in KV_WIDTH for kv in (1, 2))


def _non_pytorch(fig: dict) -> float | None:
    used, held = fig.get("process_used_bytes"), fig.get("allocated_bytes")
    cached = fig.get("reserved_unallocated_bytes") or 0
    return used - held - cached if used is not None and held is not None else None


def _oom_lines(rec: dict) -> int:
    """Lines that say out of memory, a traceback's repeated message lines (the same text twice) counted once."""
    lines = {x.strip() for x in rec["text"].splitlines() if re.search(r"out of memory|OutOfMemoryError", x, re.I)}
    return len(lines)


RUN_FRAMES = r"in (?:generate|_?sample|greedy_search|beam_search)\b|in forward\b|_call_impl|backward|autograd"
SIGNALS: list[tuple[str, str, Callable[[dict, dict], bool]]] = [
    ("ask", "ask 10-25 % of the card", lambda r, f: _between(_ratio(f, "requested_bytes", "total_bytes"), 0.10, 0.25)),
    ("ask", "ask >= 10 % of the card", lambda r, f: _between(_ratio(f, "requested_bytes", "total_bytes"), 0.10, 9)),
    ("ask", "ask > 10 x the free memory", lambda r, f: _between(_ratio(f, "requested_bytes", "free_bytes"), 10, 1e12)),
    ("ask", "ask 1-10 x the free memory", lambda r, f: _between(_ratio(f, "requested_bytes", "free_bytes"), 1, 10)),
    ("ask", "free >= ask (something other than a full card)",
     lambda r, f: _between(_ratio(f, "requested_bytes", "free_bytes"), 0, 1)),
    ("ask", "ask printed 20.00 MiB (a 1-10 MB request, rounded)", _words(r"Tried to allocate 20\.00 MiB")),
    ("ask", "ask printed 2.00 MiB (a <= 1 MB request, rounded)", _words(r"Tried to allocate 2\.00 MiB")),
    ("ask", "ask = vocab x hidden x 2|4 bytes (an embedding / lm_head matrix)",
     lambda r, f: _embedding(f.get("requested_bytes"))),
    ("ask", "ask = k x vocab x 2|4 bytes, k >= 2 (a logits buffer)", lambda r, f: _logits(f.get("requested_bytes"))),
    ("ask", "ask = 2^n tokens x KV width x 2 bytes (a KV block)", lambda r, f: _kv_block(f.get("requested_bytes"))),
    ("held", "PyTorch holds >= 95 % of the card",
     lambda r, f: _between(_ratio(f, "allocated_bytes", "total_bytes"), 0.95, 9)),
    ("held", "unused cache < 1 % of allocated",
     lambda r, f: _between(_ratio(f, "reserved_unallocated_bytes", "allocated_bytes"), 0, 0.01)),
    ("held", "unused cache 1-5 % of allocated",
     lambda r, f: _between(_ratio(f, "reserved_unallocated_bytes", "allocated_bytes"), 0.01, 0.05)),
    ("held", "unused cache 5-10 % of allocated",
     lambda r, f: _between(_ratio(f, "reserved_unallocated_bytes", "allocated_bytes"), 0.05, 0.10)),
    ("held", "unused cache >= 10 % of allocated",
     lambda r, f: _between(_ratio(f, "reserved_unallocated_bytes", "allocated_bytes"), 0.10, 1e12)),
    ("held", "unused cache < 64 MiB", lambda r, f: _between(f.get("reserved_unallocated_bytes"), 0, 64 * MIB)),
    ("held", "unused cache 64 MiB - 1 GiB", lambda r, f: _between(f.get("reserved_unallocated_bytes"), 64 * MIB, GIB)),
    ("held", "unused cache >= 1 GiB", lambda r, f: _between(f.get("reserved_unallocated_bytes"), GIB, 1e15)),
    ("held", "non-PyTorch memory in the process >= 1 GiB", lambda r, f: _between(_non_pytorch(f), GIB, 1e15)),
    ("held", "non-PyTorch memory in the process < 1 GiB", lambda r, f: _between(_non_pytorch(f), -1e15, GIB)),
    ("frames", "a generate / forward / backward frame", _words(RUN_FRAMES)),
    ("frames", "a .generate( / .forward( / .backward( call", _words(r"\.(?:generate|forward|backward)\(")),
    ("words", "batch words (batch, batch_size, bs=)", _words(r"\bbatch|\bbs\s*=")),
    ("words", "sequence words (seq_len, max_length, max_new_tokens, context length, n_ctx, tokens, prompt)",
     _words(r"seq(?:uence)?[_ ]?len|max_(?:new_)?(?:length|tokens)|context (?:length|window|size)|\bn_?ctx\b"
            r"|num_ctx|\btokens?\b|\bprompt")),
    ("words", "image words (image, resolution, video, frames, pixels, 512x512)",
     _words(r"\bimages?\b|resolution|\bvideo|\bframes\b|pixels?|\b\d{3,4}\s*[x×]\s*\d{3,4}\b")),
    ("words", "server words (request, API, endpoint, uvicorn, POST, 500)",
     _words(r"\brequests?\b|\bAPI\b|endpoint|uvicorn|\bPOST\b|\b500\b")),
    ("words", "a card other than GPU 0 / cuda:0 named", _words(r"\bGPU [1-9]\b|cuda:[1-9]")),
    ("again", "two or more out-of-memory lines", lambda r, f: _oom_lines(r) >= 2),
    ("again", "a first success said (first time, worked before, after a few / several, again, sometimes)",
     _words(r"first (?:time|run|request|few)|second (?:time|run|request)|worked (?:before|fine|well)|works? fine"
            r"|after (?:a (?:few|while)|several|some|\d+) |\bagain\b|sometimes|random(?:ly)?|after (?:a )?while")),
    ("again", "memory said to grow (leak, grows, increasing, accumulat)",
     _words(r"\bleak|grow(?:s|ing)\b|increas(?:es|ing)|accumulat")),
    # the "load only" signals of phase_unstated_signals.txt (session 21) other than the parameter count diagnose21c
    # adopted, recounted now that the texts naming a count are answered the load
    ("again21", "a weight dtype named (fp32 / fp16 / bf16 / int8 / 4-bit / GPTQ / AWQ / exl2 / bpw)",
     _words(r"\b(?:fp32|float32|fp16|float16|bf16|bfloat16|int8|8-?bit|int4|4-?bit|gptq|awq|exl2|\d(?:\.\d+)?\s*bpw)\b")),
    ("again21", "inference / infer (a word)", _words(r"\binfer(?:ence|ring)?\b|推理")),
    ("again21", "LoRA / PEFT / adapter", _words(r"lora|\bpeft\b|\badapter")),
]


def _count(texts: list[tuple[dict, dict]], test: Callable[[dict, dict], bool]) -> tuple[int, int]:
    return (sum(test(r, f) for r, f in texts if r["label"] == LOAD), sum(test(r, f) for r, f in texts if r["label"] == RUN))


def main() -> None:
    tuning, _ = public_errors.split(public_errors.load_records())
    every, unstated = [], []
    for r in tuning:
        if r["label"] not in (LOAD, RUN):
            continue
        d = diagnose_text(r["text"])
        every.append((r, d.extracted))
        if d.entry is not None and d.entry.id == PHASE_UNSTATED_ID:
            unstated.append((r, d.extracted))
    n_load, n_run = _count(unstated, lambda r, f: True)
    e_load, e_run = _count(every, lambda r, f: True)
    print(f"{len(unstated)} tuning texts labelled the load or the run answered 'phase not stated': {n_load} load, "
          f"{n_run} run; all tuning texts so labelled: {e_load} load, {e_run} run")
    print(f"\n{'group':6s} {'signal':92s} {'load':>4s} {'run':>4s}  {'all load':>8s} {'all run':>7s}  one phase?")
    share = n_load / (n_load + n_run)
    for group, name, test in SIGNALS:
        a, b = _count(unstated, test)
        all_load, all_run = _count(every, test)
        if a and not b:
            verdict = f"load only (chance {share ** a:.3f})"
        elif b and not a:
            verdict = f"run only (chance {(1 - share) ** b:.3f})"
        else:
            verdict = ""
        print(f"{group:6s} {name:92s} {a:4d} {b:4d}  {all_load:8d} {all_run:7d}  {verdict}")


if __name__ == "__main__":
    main()

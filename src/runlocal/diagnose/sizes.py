"""The sizes a log line states, read as evidence: a size no machine has (a wrapped or garbage integer, not a lack of
memory), and a size needed stated above a size available (the log's own figures say it did not fit). Split from
signals.py (session 11, diagnose21) to keep it under ~800 lines; the rules are unchanged, and signals imports both
functions from here."""

from __future__ import annotations

import re

__all__ = ["UNIT", "device_memory_full", "exceeds_memory_budget", "needs_more_than_has", "process_at_memory_limit",
           "size_overflow"]

# a size no machine has (an exabyte, 10^18 bytes, and above): a negative or wrapped integer printed as a size (MLX's
# "Unable to allocate 8446744063349813240 bytes" from an int32 index overflow), whether in digits or in words
# ("Tried to allocate more than 1EB memory"), not a lack of memory
_HUGE = 10 ** 18
# ... or the program saying so: a size or index computation that overflowed ("Storage size calculation overflowed")
_OVERFLOW_WORDS = re.compile(r"\b(?:size|storage|index|integer|int(?:32|64)|numel|shape)\w*\W{1,3}(?:calculation\W{1,3})?"
                             r"overflow(?:ed|s)?\b")
_LONG_NUMBER = re.compile(r"\d{7}|\d\s*[pe]i?b\b")
# a figure that starts a word: not the tail of a request id ("cmpl-c5d9a1eb", "cmpl-524629eb" are no exabytes)
_SIZE_STATED = re.compile(r"(?<![\w.-])([\d.]+)\s*([kmgtpe]i?b|bytes)\b")
_BARE_SIZE = re.compile(r"\bsize(?: of| =|:)? (\d{19,})\b")  # a size in bytes without the unit
# one block of host memory of a tebibyte or more, in bytes ("Fail to alloc memory of 4131529007104 size, error code is
# 12", PaddleNLP#7231 and #8208 for a small extraction model on a CPU): no workstation has it, and RAM is handed out
# tensor by tensor, so a single request that size is a size computed wrong (a shape from bad input, a wrapped int),
# not a model too big. Only on the host: a GPU's attention over a long input does ask for hundreds of GiB at once
_HOST_BLOCK = re.compile(r"\balloc\w*\s+(?:memory\s+)?(?:of\s+)?(?:size\s+)?(\d{13,})\b")
_HOST_BLOCK_NAMED = re.compile(r"error code(?: is)? 12\b|\[?errno\W{0,2}12\b|\benomem\b|\bcpu|defaultcpuallocator"
                               r"|\bhost\b|cannot allocate memory")
_TIB = 1 << 40
# ... the same for an array MATLAB refuses by its maximum array size preference ("Requested 274877907008x174
# (178176.0GB) array exceeds maximum array size preference", asets-matlab-maxflow#2: a MEX binding's garbled sizes):
# MATLAB's arrays live in host RAM, so one of a tebibyte or more is a size computed wrong; a real data set's array
# below it (Suite2P#172's 131.3 GB) is the machine's RAM run short (round 38, session 13, diagnose31)
_MATLAB_ARRAY = re.compile(r"\(([\d.]+)\s*([kmgtpe]i?b)\) array exceeds maximum array size preference")
# -- the numbers: a line that states what was needed and what there was, the first larger ("requires 50986 MB which
# is close to the maximum recommended size of 49152 MB"): the log's own figures say it did not fit
_SIZE = r"([\d.]+)\s*([kmgt]i?b|bytes)\b"
_NEED_VS_HAVE = re.compile(r"(?:requires?|needs?|required|requested|asked for)\D{0,30}?" + _SIZE
                           + r".{0,120}?(?:available|maximum|max|limit|recommended|free|capacity|ceiling|cap\b|budget)\D{0,30}?"
                           + _SIZE)
# ... or the same in bytes with the unit said once ("requires 56405524864 bytes of scratch space, but only 47590277120 is
# available", TensorRT's builder): the second figure is in the first one's unit
_NEED_VS_ONLY = re.compile(r"(?:requires?|needs?|required|requested)\D{0,30}?(\d+)\s*bytes\b.{0,80}?\bonly (\d+)"
                           r"(?:\s*bytes)? (?:is |are |were )?(?:available|free|left)")
# ... or both with units, the second before the word that says it is what there is ("needs 45 GB but only 24 GB of
# VRAM is available")
_NEED_BUT_ONLY = re.compile(r"(?:requires?|needs?|required|requested)\D{0,30}?" + _SIZE + r".{0,60}?\bonly "
                            + _SIZE + r"[\w ]{0,30}?\b(?:available|free|left)\b")
UNIT = {"b": 1, "bytes": 1, "kb": 1e3, "kib": 1 << 10, "mb": 1e6, "mib": 1 << 20, "gb": 1e9, "gib": 1 << 30,
         "tb": 1e12, "tib": 1 << 40, "pb": 1e15, "pib": 1 << 50, "eb": 1e18, "eib": 1 << 60}



def needs_more_than_has(low: str) -> bool:
    """Whether the line states a size needed above a size available (both with units)."""
    if not any(w in low for w in ("requir", "need", "request", "asked")):
        return False
    m = _NEED_VS_HAVE.search(low) or _NEED_BUT_ONLY.search(low)
    if not m:
        only = _NEED_VS_ONLY.search(low)
        return only is not None and int(only.group(1)) > int(only.group(2)) > 0
    need = float(m.group(1)) * UNIT.get(m.group(2), 0)
    have = float(m.group(3)) * UNIT.get(m.group(4), 0)
    return need > have > 0


# a process's memory stated beside the limit it runs under ("Process memory: 3.70 GB -- Worker memory limit: 4.00 GB",
# Dask's worker, distributed/worker_memory.py): past 80 % of it Dask's worker pauses (distributed.yaml,
# worker.memory.pause: 0.80) and at 95 % its nanny ends the worker (terminate: 0.95) — the host's memory of that
# process has run short (ert#2831, round 36, session 12, diagnose30)
_PROCESS_VS_LIMIT = re.compile(r"\b(?:process|resident|rss) memory:?\s*" + _SIZE + r".{0,40}?\bmemory limit:?\s*" + _SIZE)
AT_LIMIT = 0.80


def process_at_memory_limit(low: str) -> bool:
    """Whether the line states a process's memory at 80 % or more of the memory limit it runs under."""
    m = _PROCESS_VS_LIMIT.search(low) if "memory limit" in low else None
    if m is None:
        return False
    used = float(m.group(1)) * UNIT.get(m.group(2), 0)
    limit = float(m.group(3)) * UNIT.get(m.group(4), 0)
    return limit > 0 and used >= AT_LIMIT * limit


# a card's memory use stated as a share of its capacity, as a percentage and/or as used of total ("Effective GPU memory
# usage: 99.55% (11.688 GiB/11.741 GiB)", CUDA.jl's memory status, src/memory.jl): at 98 % or more nothing is left to
# give, so a failed allocation the program said it would retry after freeing memory was not survived (CUDA.jl#2197:
# round 37, session 13, diagnose31). Not a KV cache's or a pool's usage ("GPU KV cache usage: 99.8%", vLLM's
# scheduler): a pool sized at start-up is meant to fill
_DEVICE_USAGE = re.compile(r"\b(?:gpu|device|cuda|vram|video)\b(?:(?!cache|pool|kv)[\w ]){0,12}?memory usage:?\s*"
                           r"(?:([\d.]+)\s*%)?\s*(?:\(\s*" + _SIZE + r"\s*/\s*" + _SIZE + r"\s*\))?")
DEVICE_FULL = 0.98


def device_memory_full(low: str) -> bool:
    """Whether the line states a card's memory use at 98 % or more of its capacity (a percentage or used / total)."""
    m = _DEVICE_USAGE.search(low) if "memory usage" in low else None
    if m is None:
        return False
    if m.group(1) is not None:
        return float(m.group(1)) >= 100 * DEVICE_FULL
    if m.group(2) is None:
        return False
    used = float(m.group(2)) * UNIT.get(m.group(3), 0)
    total = float(m.group(4)) * UNIT.get(m.group(5), 0)
    return total > 0 and used >= DEVICE_FULL * total


# a line of the kernel's memory cgroup report ("memory+swap: usage 0kB, limit 9007199254740988kB, failcnt 0",
# mm/memcontrol.c): its huge limit is the counter's "no limit" (PAGE_COUNTER_MAX pages), not a size anything asked for
_CGROUP_COUNTER = re.compile(r"(?:memory|memory\+swap|swap|kmem|kmem\.tcp): usage \d+kb, limit \d+kb")


def size_overflow(low: str) -> bool:
    """Whether the line states one size of an exabyte or more (no machine has it: the size is a wrapped integer), one
    block of host memory of a tebibyte or more, or says that a size computation overflowed."""
    if _OVERFLOW_WORDS.search(low):
        return True
    if "size preference" in low and (m := _MATLAB_ARRAY.search(low)) \
            and float(m.group(1)) * UNIT.get(m.group(2), 0) >= _TIB:
        return True
    if not _LONG_NUMBER.search(low) or ("limit" in low and _CGROUP_COUNTER.search(low)):
        return False  # 10^18 needs 19 digits in bytes, 10 in GB, 7 in TB
    if any(int(n) >= _HUGE for n in _BARE_SIZE.findall(low)):
        return True
    if (m := _HOST_BLOCK.search(low)) and int(m.group(1)) >= _TIB and _HOST_BLOCK_NAMED.search(low):
        return True
    for num, unit in _SIZE_STATED.findall(low):
        try:
            if float(num) * UNIT.get(unit, 0) >= _HUGE:
                return True
        except ValueError:
            continue
    return False


# a runtime's own memory budget refusing a model larger than it, the model's size before the budget's ("Model
# 'Qwen3.5-4B' (9.11GB) exceeds max-model-memory (7.20GB)", oMLX's server, omlx#199, round 46): the budget is the
# memory the runtime lets models use, the log's own figures say the model does not fit it — a memory refusal made
# before any allocation, whatever the budget's setting is called (signals.line_entry: the runtime's refusal entry)
_EXCEEDS_BUDGET = re.compile(r"\(?([\d.]+)\s*([kmgt]i?b)\)?\s+exceeds?\s+(?:the\s+)?(?:[\w.-]+\s+)?[\w.-]*mem(?:ory)?"
                             r"[\w.-]*(?:\s+(?:budget|limit))?\s*[(:=]?\s*([\d.]+)\s*([kmgt]i?b)\b")


def exceeds_memory_budget(low: str) -> bool:
    """Whether the line states a model's size exceeding a named memory budget or limit, with the budget's size below
    it. The thing refused must be a model or its weights: a request body over a server's memory limit (an HTTP 413),
    an upload over a cache limit or a kernel's data over the GPU's per-block shared memory are not the model not
    fitting (review15c)."""
    if ("shared memory" in low or not ("model" in low or "weight" in low)
            or any(w in low for w in ("request", "body", "upload", "payload"))):
        return False
    m = _EXCEEDS_BUDGET.search(low) if "exceed" in low and "mem" in low else None
    if m is None:
        return False
    size = float(m.group(1)) * UNIT.get(m.group(2), 0)
    budget = float(m.group(3)) * UNIT.get(m.group(4), 0)
    return size > budget > 0

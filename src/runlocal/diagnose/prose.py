"""Lack-of-memory signals said in a writer's prose rather than printed by a program: a device's out-of-memory written
with hyphens or as an "overflow", a kill by the operating system named without the word memory, a card said to be
used up by something else, and "a memory error" said in words that name no memory. Read by signals.line_entry.
Split from signals.py (session 10, diagnose17) to keep it under ~800 lines; written from round 21's misses, each with
look-alikes in tests/unit/test_diagnose_round21.py."""

from __future__ import annotations

import re

__all__ = ["DEVICE_OOM_SAID", "SHM_SAID", "device_memory_said_full",
           "GPU_USED_UP", "USED_UP_WORDS", "KILLED_BY_OS", "killed_by_os", "memory_error_in_words",
           "FREEING_BUG", "BARE_NOT_ENOUGH_MEMORY", "DISK_FULL", "size_questioned", "VERSION_REGRESSION",
           "ALLOCATION_SHOWN"]

# a device's out-of-memory in words other than a program's: hyphenated ("CUDA out-of-memory when running plain LLaVA
# inference", LLaVA#1917; "I had encountered CUDA out-of-memory", LLaVA-NeXT#431) or called an overflow of its memory
# ("I ran into a CUDA memory overflow error", mPLUG-Owl#22; Chinese writers' 显存溢出 translated). Only with the
# device named: "out-of-memory killer" and "buffer overflow" / "integer overflow" are other things
DEVICE_OOM_SAID = re.compile(r"\b(?:cuda|gpu|vram|hip|xpu|device)[ -]out-of-memory\b"
                             r"|\b(?:cuda|gpu|vram|video|device) memory overflow\b")
# ... or said to have filled up, as the writer's finding ("It turns out my gpu memory was getting full", mmaction2#493
# under a cuDNN error, round 30, session 11, diagnose26): the card ran out. Not a question or a condition ("Does CUDA
# malloc fail when VRAM is full?", round 24's look-alike): those say nothing happened
_DEVICE_MEMORY_FULL = re.compile(r"\b(?:(?:cuda|gpu|video|device) memory|vram)\s+(?:was|is|were|got|gets|became|becomes)"
                                 r"\s+(?:getting\s+|completely\s+|totally\s+)?full\b(?![^.!\n]{0,80}\?)")
_CONDITION_BEFORE = re.compile(r"\b(?:when|whenever|if|whether|until|once|before|unless)\b[^.,;!?\n]{0,30}$")


def device_memory_said_full(low: str) -> bool:
    """Whether a lower-cased line states, as a finding, that a card's memory filled up (not asks or supposes it)."""
    m = _DEVICE_MEMORY_FULL.search(low)
    return m is not None and not _CONDITION_BEFORE.search(low[:m.start()])
# the operating system named as what ended the program ("killed by os when running mac m3max and 128G", grok-1#277):
# the kernel ends a process for its memory (Linux's OOM killer, macOS/iOS jetsam); not when the line names another
# reason (a watchdog, a time or CPU limit, a signal the user sent, heat)
KILLED_BY_OS = re.compile(r"\bkilled by (?:the )?(?:os|macos|linux|kernel|operating system)\b")
_OTHER_KILL_REASON = re.compile(r"watchdog|time ?out|time limit|\bcpu\b|thermal|\bheat|\buser\b|ctrl|sigterm|sigint"
                                r"|\bsignal \d|crash")
# a card said to be used up already by someone else, in prose ("I had misspelled CUDA_VISIBLE_DEVICES and it was
# still running on a GPU that was consumed already", sglang#465): another job holds its memory. "busy" is left out:
# CUDA's "device(s) is/are busy or unavailable" is exclusive compute mode, not memory
GPU_USED_UP = re.compile(r"\b(?:gpus?|cards?|devices?)\b(?: (?:that|which))? (?:was|were|is|are|had been|has been)"
                         r" (?:already )?(?:consumed|occupied|used up|fully used|taken)\b")
# "Memory Error" said in words (a title: "LLaVA-NeXT-Video 7B with stride=1 Memory Error"), not Python's MemoryError
# exception written as one word: it names no memory, so another line that does (a CUDA out-of-memory) says which
USED_UP_WORDS = ("consumed", "occupied", "used up", "fully used", "taken")  # GPU_USED_UP needs one (a cheap gate)
_MEMORY_ERROR_WORDS = re.compile(r"(?<![\w.])memory (?:allocation )?error\b")
_PYTHON_MEMORY_ERROR = re.compile(r"(?<![\w.])memoryerror\b")


def killed_by_os(low: str) -> bool:
    """Whether a lower-cased line says the operating system killed the program, and names no other reason."""
    return bool(KILLED_BY_OS.search(low)) and not _OTHER_KILL_REASON.search(low)


def memory_error_in_words(low: str) -> bool:
    """Whether the line says "memory error" in words and not Python's MemoryError (a weaker host-RAM reading)."""
    return bool(_MEMORY_ERROR_WORDS.search(low)) and not _PYTHON_MEMORY_ERROR.search(low)


# a bug in freeing memory said in a log or a thread: glibc's heap checks, a sanitizer's report, or a workaround that
# removes calls to a free function ("As a workaround, you can remove the calls to `ggml_allocr_free`", llama.cpp#4928,
# round 23's miss). Beside C++'s std::bad_alloc it says the allocator's books were corrupted, not that RAM ran out
# (session 10, diagnose19); not when denied ("not a double free", "no use-after-free")
FREEING_BUG = re.compile(r"(?<!not a )(?<!no )(?:double[ -]free|freed twice|use[ -]after[ -]free|heap corruption"
                         r"|remov\w* (?:the |all )?calls? to `?\w*(?:free|release|dealloc)\w*)")
# "Not enough memory" with no device, host or figure named: SGLang's own words when the KV pool cannot be sized at
# scheduler start-up (model_runner.py, "RuntimeError: Not enough memory. Please try to increase
# --mem-fraction-static."), as a user repeats it in a title (sglang#4895, round 23's miss). PyTorch says "out of memory"
BARE_NOT_ENOUGH_MEMORY = re.compile(r"\bnot enough memory\b(?![^\n]{0,60}\b(?:cuda|gpu|vram|device|ram|host|system|"
                                    r"cpu|disk|swap|to (?:load|allocate)|for (?:the )?(?:model|weights))\b)")

# -- round 25's misses (session 11, diagnose21) --
# a full disk said by the operating system: POSIX's ENOSPC ("No space left on device", os error 28), Windows'
# ERROR_DISK_FULL ("There is not enough space on the disk.", os error 112). Not a memory-backed filesystem (/dev/shm,
# tmpfs): "No space left on device" there is no disk; where SHM_SAID names the shared-memory mount it is that mount's
# size, answered as a Bus error beside it is (classify's SHM_MOUNT_ID; session 11's diagnose27 settled the tension
# diagnose26 left)
DISK_FULL = re.compile(r"no space left on device|not enough space on the disk|\bos error (?:28|112)\b|\benospc\b")
DISK_IS_MEMORY = re.compile(r"/dev/shm|\bshm\b|shared memory|tmpfs")
# the shared-memory mount named as what ran short, beside a worker killed by a Bus error (SIGBUS): PyTorch's own hint
# ("dataloader's workers are out of shared memory. Please try to raise your shared memory limit", "insufficient shared
# memory (shm)", torch/utils/data/_utils/signal_handling.py), the mount itself (df's "/dev/shm" line) or its setting
# (--shm-size). A container sizes /dev/shm on its own (Docker: 64 MB), so the mount, not the RAM, ran out: round 30's
# STCN#132, pytorch#5040, mmsegmentation#1356 (session 11, diagnose26). A GPU kernel's "shared memory" is another
# thing (signals._KERNEL_LIMIT) and names no mount
SHM_SAID = re.compile(r"out of shared memory|insufficient shared memory|shared memory limit|/dev/shm|\bshm\b"
                      r"|shm[-_]size")
# the writer asking whether the size the program asked for is really needed ("Or does one need to have 130gb free for
# allocation?", radius2#12 under Rust's "memory allocation of 137421126912 bytes failed"; the maintainer: it should never
# need that much): the writer doubts the figure, and a request the program should not have made is a bug, not a
# machine short of memory. Read only as a question, and only beside a refused request of about that size
_SIZE_QUESTION = re.compile(r"\b(?:does|do|would|should|must|will)\s+(?:one|i|it|we|you|this|that)\s+(?:really\s+)?"
                            r"(?:need|require)\s+(?:to\s+have\s+)?(?:~|about\s+|around\s+)?(\d+(?:\.\d+)?)\s*([kmgt])i?b\b"
                            r"[^?\n]{0,60}\?")
_POWER = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def size_questioned(low: str) -> float | None:
    """The size in bytes that a line asks whether one really needs, or None."""
    m = _SIZE_QUESTION.search(low) if "?" in low else None
    return float(m.group(1)) * _POWER[m.group(2)] if m else None


# a version named as what changed ("[Regression v0.0.101] Cannot load model", "since version 0.0.101 I can no longer
# load my model", "downgrading to 0.3.26 fixes this", "(current beta — but not current stable)", "models that were
# loading fine before"): the same machine and model, only the runtime's version differs. Beside a runtime's own refusal
# that shows no allocation (a check's "Not enough free memory to load model", "Not enough RAM"), the check is what
# regressed, not the memory (ogam#495, lmstudio-bug-tracker#1021, jan#4583; round 17 and 9 texts, tuned on by
# diagnose21). A device's own allocation failure after an upgrade stays memory (ALLOCATION_SHOWN): a new version may
# really use more (llama.cpp#21692's extra 700 MB per GPU)
VERSION_REGRESSION = re.compile(r"\bregression\b|\bsince (?:version |v)\d|\bdowngrad\w*\b[^.\n]{0,40}\b(?:fix|solv|work)"
                                r"|\b(?:beta|nightly|canary)\b[^.\n]{0,30}\bbut not\b[^.\n]{0,20}\bstable\b"
                                r"|\b(?:were|was) (?:loading|working|running) fine before\b|\bno longer (?:load|start|run)")
ALLOCATION_SHOWN = re.compile(r"alloc|cuda error|outofmemoryerror|tried to|buffer|killed|\d(?:\.\d+)?\s*[kmgt]i?b\b")

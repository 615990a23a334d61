"""Name the failure in a log: stream its lines, match the knowledge base, pick what killed it.

Precedence (how one answer is chosen when several entries match)
----------------------------------------------------------------
1. Every line is matched against every entry's signatures (case-insensitive, one line at a time).
   The match with the highest ``priority`` wins; on a tie the *earliest* line wins, because the
   first error of a given rank is the root and later ones are its echoes (other workers, retries).
2. Priorities are banded so that the bands, not the order in the log, decide:

   ====== ===================================================================================
   85-100 specific capacity failures (vLLM KV cache / utilization, SGLang pool, Ollama RAM,
          kernel OOM killer, llama.cpp buffers, Metal, accelerate offload)
   70-75  generic out-of-memory messages (PyTorch CUDA/HIP ``OutOfMemoryError``)
   60-65  not-memory errors that look like memory problems (no kernel image, old driver,
          bf16 on old GPUs, illegal memory access, tokenizer, trust_remote_code, gated repo)
   40-55  symptoms and warnings that name no cause (vLLM ``EngineDeadError``, a bare
          ``Killed``, llama.cpp "failed to create context", SGLang retraction warnings)
   ====== ===================================================================================

   So a capacity failure anywhere in the log beats a not-memory error: an error *before* the
   OOM was survived (the process went on), and one *after* it is usually a consequence of it.
   A not-memory error beats a symptom: "engine dead" after an illegal memory access is reported
   as the illegal memory access.
3. A generic CUDA out-of-memory error is then refined (:func:`refine_cuda_oom`):

   * ``fragmentation`` first when the failed request exceeded free memory but would have fitted in
     free + "reserved by PyTorch but unallocated", and that unused part is at least what the tensors
     hold (PyTorch's own "reserved >> allocated"; its allocator frees every segment holding no tensor
     before it raises, so a smaller unused part is the ordinary slack of a full card), whatever the phase;
   * ``cuda_oom_long_context`` when, outside a loading phase, the single failed request is
     ≥ 25 % of the card (weights load tensor by tensor; only activations of a long sequence come in
     blocks that large);
   * ``cuda_oom_load`` when the lines around it (40 before, 25 after) show a loading or start-up
     phase: ``from_pretrained``, ``load_state_dict``, ``load_weights``, ``profile_run``, sampler
     warm-up, CUDA-graph capture, ``torch.load``…;
   * ``cuda_oom_long_context`` when they show generation instead: ``generate``, attention,
     ``past_key_value``, ``execute_model``, the engine's step loop, prefill, HTTP completion requests…;
   * otherwise ``cuda_oom_load`` (the message alone cannot tell; start-up is the common case).

   Before all of these, an out-of-memory whose own figures show an empty device (nothing allocated or reserved,
   the request below the capacity, no small free figure) is one allocation above the device's single-allocation
   limit, not a full memory (``notmem-single-allocation-cap``: Intel XPU's 4 GiB cap).
   Two runtime rules come first: in a llama.cpp/Ollama/LM Studio log a generic CUDA OOM (one that
   is not PyTorch's own message) is a ggml
   allocation failure (``llamacpp_alloc_fail``) — unless the model was said to have loaded and a run came after it
   (a request received, a generation): then it is refined by its phase like any other — and in a log where vLLM also reported
   ``EngineDeadError`` the OOM killed a serving engine (``vllm_engine_dead``).
4. Nothing matched: if the log states an error (an exception, "cannot load", a crash, a failed check) and no line
   anywhere says memory ran short (out of memory, a failed allocation, a kill, "not enough RAM", a size needed above
   one available; a hedge or advice does not count), the answer is ``not_memory``, titled "Not a memory failure:"
   and the error line (``notmem-application-error``); an error that names no memory in a log that does say memory
   ran short elsewhere is not called ``not_memory`` for it. A shell's bare ``Killed`` (the best match being the
   bare kill) that comes at most ``KILL_AFTER_ERROR_LINES`` lines after an error line, in a log that says nothing
   else of memory, is the runtime ending its own processes after that error (``notmem-killed-after-error``, titled
   with that error). A full disk said before a bare "out of memory" (no size, device or allocator on its line) is the
   disk, and a refusal that shows no allocation in a log whose writer names a version as what changed is the
   runtime's check regressing: both are answered as application errors naming that line (round 25's misses, session
   11). A paste that states no error and no lack of memory but carries llama.cpp's warning that its build has no GPU
   backend is answered with that warning (``notmem-cpu-only-build``, llamacpp_common.py). Otherwise: category
   ``unknown``.

Matching one line against the knowledge base and the signals (the index, the gate, the per-line cache) is in
:mod:`.line_match`; the answer an entry and its line become (the Diagnosis record, its title and fixes, ggml_vulkan's
per-buffer cap read under a memory answer) in :mod:`.answer`.

Memory stays bounded: lines are capped at 64 KiB, only 40 recent lines are kept (lower-cased, cut
to 2 KiB) for context, and figures are extracted on the fly (:mod:`.extract`).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from typing import Any

from . import allocators, kb, last_resort, llamacpp_common, ollama_sizing, prose, runtimes, signals, small_card
from .allocator_status import allocator_status_said, figures_show_room
from .answer import (
    APPLICATION_ERROR_ID,
    KILLED_AFTER_ERROR_ID,
    NAMES_THE_ERROR_IDS,
    Diagnosis,
    answer_for,
    entry_fixes,
    names_the_error,
)
from .cuda_oom import (
    FRAMEWORK_OOM_LINE,
    named_encoder_weights,
    names_billions,
    names_parameter_count,
    one_allocation_refused,
    phase_stated,
    refine_cuda_oom,
)
from .extract import MAX_LINE, Extractor
from .line_match import _advice_removed, _any_gate, _facts_of_line, _index, _line_entry
from .not_memory import TERMINATED_JOB, TIME_LIMIT_SET
from .phase import REQUEST_WRAPPER, SERVING, progress_phase
from .runtimes import GGML_RUNTIMES, normalize_runtime
from .sizes import device_memory_full

__all__ = ["Diagnosis", "Scanner", "refine_cuda_oom", "normalize_runtime"]

GENERIC_OOM_IDS = frozenset({"cuda-oom-load", "pytorch-fragmentation"})
ENGINE_DEAD_ID = "vllm-engine-dead"
GGML_OOM_ID = "llamacpp-cuda-malloc"
SURVIVED_WARNING_ID = "notmem-survived-warning"
DEVICE_FULL_LINES = 10  # a statement of the card's memory full this near a memory warning speaks of it
POOL_FULL_ID = "sglang-kv-pool-full"
POOL_HAS_ROOM_ID = "notmem-pool-has-room"
BAD_FILE_ID = "notmem-bad-model-file"
HOST_RAM_ID = "host-ram-alloc"
CRASH_ID = "notmem-crash-signal"
SGLANG_FRACTION_ID = "sglang-mem-fraction-static"
_FREEING_WORDS = ("double", "twice", "after", "call")  # what prose.FREEING_BUG needs beside "free"
# a scheduler's own figures next to its "out of memory": what was asked for and what it says was free (SGLang's
# "Try to allocate 148 tokens." / "Avaliable tokens: 2048", its spelling, schedule_batch.py)
_POOL_ASKED = re.compile(r"allocate (\d+) tokens")
_POOL_FREE = re.compile(r"\bava\w{0,4}ble tokens:? (\d+)")
# a decode step's refusal counts requests, not tokens: SGLang's and sglang-jax's alloc_paged_token_slots_decode print
# "Try to allocate {len(seq_lens)} tokens" while each request may need a whole page (len(seq_lens) x page_size), so
# more tokens available than "asked" is no room (sglang-jax#622: 168 requests, 3,200 tokens free, fixed by PR#624's
# page-aligned admission; sglang#4602: 148 requests at --page-size 64)
_DECODE_POOL = re.compile(r"\bdecode out of memory\b")
_FIGURE_OR_DEVICE = re.compile(r"\d|cuda|gpu|vram|device|metal|hip|alloc|buffer|torch|tensor")
_BYTES_REFUSED = re.compile(r"(\d{7,}) bytes")  # a host allocation's size in bytes (Rust's "memory allocation of N bytes")
# Python's MemoryError raised by a read() of a length the program took from the file: the length was garbage (a
# corrupt or foreign file), no machine has that much memory to give
_READ_CALL = re.compile(r"\.read\(")
# a Python traceback's frame line ('  File "x.py", line 12, in f'); the line after it, indented deeper under the same
# prefix, is the source line that ran. What it calls counts (vLLM's "raise_if_cache_size_invalid(…"); the exception
# it catches and the strings it compares are not a message ("except torch.cuda.OutOfMemoryError:",
# 'if "out of memory" in str(e):')
_FRAME = re.compile(r'^(.*?)file "[^"]*", line \d+, in ')
_NOT_RUN_IN_SOURCE = re.compile(r"\bexcept\b.*|(['\"]).*?\1")
# ggml's CUDA error footer ("current device: 0, in function stream at …") naming a function that allocates nothing,
# right under an out-of-memory line: the code came from a call that needs no model memory
_ALLOCATING = re.compile(r"alloc|pool|buffer")
# ... and the statement under that footer, when it calls HIP's runtime: ggml_cuda_error prints the error, the footer,
# then the failed statement as CUDA_CHECK stringified it (ggml-cuda.cu: "CUDA error: %s" / "  current device: %d, in
# function %s at %s:%d" / "  %s"). A ROCm build compiles the same source with cudaMalloc defined as hipMalloc, which
# the stringified statement shows; builds before GGML_CUDA_NAME (early 2024, Ollama 0.1.x) still say "CUDA error"
# (ollama#3765, round 49: "hipMalloc((void **) &ptr, look_ahead_size)" under a CUDA error in function alloc)
_HIP_STATEMENT = re.compile(r"^\s*hip[a-z]\w*\s*\(")
ROCM_OOM_ID = "rocm-hip-oom"
OOM_NOT_FROM_ALLOC_ID = "notmem-oom-not-from-allocation"
BARE_KILL_ID = "process-killed"
PINNED_ID = "pinned-host-oom"
SMALL_HOST_ALLOCATION_ID = "notmem-small-host-allocation"
ALLOCATOR_STATUS_ID = "notmem-allocator-status-with-room"  # allocator_status.py
FREE_RAM_TIMES_REQUEST = 20  # free RAM said to be this many times a refused host block: the block was no lack of RAM
PINNED_CALL_LINES = 4  # a generic OOM this many lines after a pinned allocation's call was raised by that call
SINGLE_ALLOCATION_CAP_ID = "notmem-single-allocation-cap"
# answers whose title is the error line itself: the error names what failed, and it is not memory
# answers while which the scanner still watches for error lines and for words of memory running short
_WATCHING_IDS = NAMES_THE_ERROR_IDS | {BARE_KILL_ID}
# a bare "Killed" this many lines or fewer after an error line (blank lines count) is read as following that error
KILL_AFTER_ERROR_LINES = 5
PRIMARY = {"cuda_oom_load": "cuda-oom-load", "cuda_oom_long_context": "cuda-oom-long-context",
           "fragmentation": "pytorch-fragmentation", "vllm_engine_dead": ENGINE_DEAD_ID}

CONTEXT_BEFORE = 40
CONTEXT_AFTER = 25
CONTEXT_LINE_MAX = 2048
MATCHED_LINE_MAX = 500
STOPPED_ID = "notmem-stopped"
# bash's job report of a SIGTERM (not_memory.TERMINATED_JOB): yields to a kill signature
BARE_TERMINATED = re.compile(rf"\s*{TERMINATED_JOB}\b")
SHM_MOUNT_ID = "notmem-shared-memory-mount"
FIT_ABORTED_ID = "llamacpp-fit-aborted"
PIPELINE_RETRY_ID = "notmem-pipeline-retry"
DRIVER_PANIC_ID = "notmem-gpu-driver-panic"
NO_GPU_BUILD_ID = "notmem-cpu-only-build"
RUNNER_EXIT_ID = "notmem-runner-exit-status"
RUNNER_OOM_ID = "ollama-runner-cuda-oom"
HOST_RAM_SAID_ID = "host-ram-said-short"
WEIGHTS_ALLOC_ID = "llamacpp-weights-alloc"
# a generic out-of-memory whose log states no phase (cuda_oom.phase_stated): its answer says so and gives the fixes of
# the load and of a request, unless a serving engine that reserves its memory at start-up is named — vLLM (the worker
# profiles a forward pass, then takes gpu_memory_utilization's share for KV blocks before serving), SGLang
# (mem_fraction_static's pool, ModelRunner.init_memory_pool), TensorRT-LLM (the KV cache manager sized from
# free_gpu_memory_fraction when the executor is built), TGI (warmup fills max_batch_total_tokens): there the start-up
# is the common case, as the first-sight count in cuda_oom says (39 load, 5 run)
PHASE_UNSTATED_ID = "cuda-oom-phase-unstated"
# the same with the failing line printed by a framework other than PyTorch (cuda_oom.FRAMEWORK_OOM_LINE): the run
FRAMEWORK_STEP_ID = "framework-oom-phase-unstated"
START_UP_RESERVERS = frozenset({"vllm", "sglang", "tensorrt-llm", "tgi"})

_RUNTIME_SCAN_ALL = 5000  # every line is checked for runtime names up to here, then only gated lines
_TORCH_OOM = re.compile(r"tried to allocate|outofmemoryerror|total capacity|reserved by pytorch", re.I)


class Scanner:
    """The streaming core of :func:`diagnose_lines`: ``feed`` lines, then ``finish``."""

    def __init__(self, runtime: str | None = None) -> None:
        self.runtime = normalize_runtime(runtime)
        self.index = _index()
        self.extractor = Extractor()
        self.ring: deque[str] = deque(maxlen=CONTEXT_BEFORE)
        self.best: tuple[int, kb.Entry, int, str] | None = None
        self.after = 0
        self.loading = self.running = self.loaded = self.async_allocator = self.at_start = False
        self.cpu_allocator = False  # the code around a generic out-of-memory names a CPU allocator (allocators.py)
        self.js_code = False  # ... or JavaScript code (allocators.JS_CODE): the engine's heap, when no runtime is named
        self.js_on_gpu = False  # ... or a script's GPU backend (allocators.JS_ON_GPU), which outweighs a script's frame
        self.js_error = False  # the chosen line is JavaScript's own out-of-memory (allocators.JS_ERROR)
        self.js_frames = False  # ... and the lines after it, so far, are its stack frames (allocators.JS_FRAME)
        self.load_over_before = False  # the load said to be over after the last load line before the failing one
        self.load_after_loaded = False  # a load line after the one that said the load was over
        self.woken: str | None = None  # a wake-up from sleep mode named around a generic out-of-memory (its entry)
        self.line_phase: str | None = None
        self.engine_dead = False
        # the last memory match on a warning line, held back: an error line after it makes it the cause; an
        # ordinary line after it (the program went on) or a named resource limit makes it survived
        self.warned: tuple[kb.Entry, int, str] | None = None
        self.survived = False
        self.warned_ring: tuple[str, ...] = ()  # the lines kept up to that warning: its phase, if it turns out the cause
        self.device_full_at: int | None = None  # the last line stating the card's memory full (sizes.device_memory_full)
        self.overflow: tuple[kb.Entry, int, str] | None = None  # a size no machine has, stated anywhere in the log
        self.runtimes_seen: dict[str, int] = {}
        self.failed_runtime: str | None = None  # the one runtime named where the writer says memory ran out
        self.oom_not_from_alloc: int | None = None  # the line number of an out-of-memory line that footer disowns
        self.freeing_bug = False  # a line says memory was freed wrongly (double free, a workaround removing free calls)
        self.disk_full: tuple[int, str] | None = None  # the first line saying the disk is full (prose.DISK_FULL)
        self.shm_said = False  # a line names the shared-memory mount as what ran short (prose.SHM_SAID)
        self.shm_full: tuple[int, str] | None = None  # "No space left on device" on that mount (its line)
        self.size_doubted: float | None = None  # a size the writer asks whether one really needs (prose.size_questioned)
        self.regression: tuple[int, str] | None = None  # the first line naming a version as what changed (prose)
        self.weights_at_most: float | None = None  # the named model's largest weights (cuda_oom.named_encoder_weights)
        self.billions_named = False                # a model named by its size in billions: the encoder caps nothing
        self.parameter_count_named = False         # a parameter count said (cuda_oom.PARAMETER_COUNT): the load's sign
        # for the answer of last resort: the first line that states an error, and whether any line says memory ran short
        self.error_line: tuple[int, str] | None = None
        self.memory_said = False
        # for a bare kill after an error: the last error line before it, and the first bare kill (which is not
        # counted as memory said: whether it was a lack of memory is the question)
        self.last_error_line: tuple[int, str] | None = None
        self.kill_line: int | None = None
        self.tracebacks = last_resort.TracebackReader()  # each Python traceback's own error line, by its lines
        self.kill_seen: tuple[kb.Entry, int, str] | None = None  # the first kill signature (SIGKILL, 137) and its line
        self.time_limit_at: int | None = None  # a limit on the running time stated before any kill (TIME_LIMIT_SET)
        self.memory_beside_kill = False  # a line says memory ran short in other words than a kill's
        self.memory_use_low = self.exit_137 = False  # see last_resort.MEMORY_USE_LOW
        self.free_ram_said: float | None = None  # free RAM stated in the writer's prose (last_resort.free_ram_said)
        self.n = 0
        self.frame_prefix: str | None = None  # what came before 'File "…"' on the line before, if it was a frame
        self.pinned_at = 0  # the last line that makes a pinned host allocation (signals.PINNED_CALL)
        self.pinned_oom = False  # a generic out-of-memory came right after it
        self.hip_statement = False  # ggml's CUDA error under the chosen line names a HIP call (_HIP_STATEMENT)
        self.allocator_status = False  # an allocator's non-memory CUDA status before the chosen line
        self.fit_over = False  # llama.cpp's --fit projected more than the devices have free (llamacpp_common.py)
        self.cuda_message = False  # a CUDA error with its message (small_card.py)
        self.no_gpu_build: tuple[int, str] | None = None  # llama.cpp's CPU-only build warning (llamacpp_common)
        self.pp_retry = llamacpp_common.PipelineRetry()  # libllama's compute-buffer retry, and what came after it
        self.said = small_card.WriterFigures()  # the card's or Mac's memory, the model's billions and bits, as stated
        self._any_gate = _any_gate(self.index)

    def feed(self, line: str) -> None:
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        self.n += 1
        low = line.lower()
        if self.warned is not None and not self.survived and line.strip():
            self.survived = signals.went_on_after_warning(low, self.n - self.warned[1])
        if self.after:
            self._context(low)
            self.after -= 1
        self.ring.append(low[:CONTEXT_LINE_MAX])
        self.tracebacks.feed(self.n, line, low)
        if self.frame_prefix is not None and low.startswith(self.frame_prefix + "  "):
            cut = len(self.frame_prefix)
            line = low = low[:cut] + _NOT_RUN_IN_SOURCE.sub(" ", low[cut:])
        self.frame_prefix = m.group(1) if 'file "' in low and (m := _FRAME.match(low)) else None
        if (kept := signals.negated_oom_removed(line, low)) is not line:
            line, low = kept, kept.lower()  # "so it is not OOM problem": the user ruled it out
        if not self.freeing_bug and (("free" in low and any(w in low for w in _FREEING_WORDS)) or "heap c" in low):
            self.freeing_bug = bool(prose.FREEING_BUG.search(low))  # substrings first: a serving log says "free" a lot
        # the answers that call an error "not memory" for naming none need to know whether any line says memory ran
        # short; nothing else does, so this is watched only while nothing or only such an answer has matched
        if last_resort.LAST_RESORT_GATE.search(low):
            if self.best is None or self.best[1].id in _WATCHING_IDS:
                self._watch(line, low)
            if not self.memory_beside_kill:
                self.memory_beside_kill = last_resort.says_memory_ran_short(_advice_removed(low).replace("killed", ""))
        if self.time_limit_at is None and self.kill_seen is None and ("limit" in low or "timeout" in low) \
                and TIME_LIMIT_SET.search(low):
            self.time_limit_at = self.n
        if self.n <= _RUNTIME_SCAN_ALL:  # the writer's prose, in a paste (not deep in a long serving log)
            self._prose(line, low)
        self._resources_full(line, low)
        if not self._any_gate.search(low):
            return
        self.extractor.feed(line, low)
        if any(w in low for w in llamacpp_common.GATE_WORDS):
            self._ggml_words(line, low)
        if self.n <= _RUNTIME_SCAN_ALL or self.index.gate.search(low):
            for rt in runtimes.named_in(low):
                self.runtimes_seen[rt] = self.runtimes_seen.get(rt, 0) + 1
        if self.failed_runtime is None and self.n <= _RUNTIME_SCAN_ALL and ("oom" in low or "out of memory" in low):
            self.failed_runtime = runtimes.runtime_of_oom_clause(low)
        found, severity, dead, footer_fn = _facts_of_line(line, low)
        matches = list(found)
        by_signal = kb.get(_line_entry(low, self.runtime or self.detected_runtime()) or "")
        if by_signal is not None and by_signal.id in signals.LINE_VETO:
            matches = [by_signal]  # the line's own figure rules out what its words suggest
        elif by_signal is not None and all(e.id != by_signal.id for e in matches):
            matches.append(by_signal)
        if dead:
            self.engine_dead = True
        if by_signal is not None and by_signal.id in signals.LINE_VETO and self.overflow is None:
            self.overflow = (by_signal, self.n, line[:MATCHED_LINE_MAX])
        if severity == "warning" and any(e.category in kb.MEMORY_CATEGORIES for e in matches):
            memory = max((e for e in matches if e.category in kb.MEMORY_CATEGORIES), key=lambda e: e.priority)
            self.warned, self.survived = (memory, self.n, line[:MATCHED_LINE_MAX]), signals.names_resource_limit(low)
            self.warned_ring = tuple(self.ring)
            matches = [e for e in matches if e.category not in kb.MEMORY_CATEGORIES]
        if footer_fn is not None and len(self.ring) >= 2 and "out of memory" in self.ring[-2] \
                and not _ALLOCATING.search(footer_fn):
            self.oom_not_from_alloc = self.n - 1
        if low.strip() == "memoryerror" and any(_READ_CALL.search(prev) for prev in list(self.ring)[-4:-1]):
            bad_file = kb.get(BAD_FILE_ID)
            matches = [bad_file] if bad_file is not None else matches
        if matches:
            if self.pinned_at and self.n - self.pinned_at <= PINNED_CALL_LINES \
                    and any(e.id in GENERIC_OOM_IDS or e.id == GGML_OOM_ID for e in matches):
                self.pinned_oom = True
            self._consider(matches, line, low)
        if severity == "error" and self.warned is not None and self.warned[1] < self.n:
            entry, n, warned_line = self.warned  # an error after the warning: the warning was its cause
            self.warned = None
            self._consider([entry], warned_line, warned_line.lower(), line_no=n)

    def _resources_full(self, line: str, low: str) -> None:
        """Where the log says a resource is full or pinned (feed): the disk, the shared-memory mount, a pinned-memory
        call, a device's memory usage at its limit."""
        if self.disk_full is None and ("no space" in low or "space on the disk" in low or "os error" in low
                                       or "enospc" in low) \
                and prose.DISK_FULL.search(low) and not prose.DISK_IS_MEMORY.search(low):
            self.disk_full = (self.n, line[:MATCHED_LINE_MAX])
        elif self.shm_full is None and "no space" in low and prose.DISK_FULL.search(low) and prose.SHM_SAID.search(low):
            self.shm_full = (self.n, line[:MATCHED_LINE_MAX])  # ENOSPC on the shared-memory mount: the mount is full
        if "pin" in low and signals.PINNED_CALL.search(low):
            self.pinned_at = self.n
        if not self.shm_said and ("shm" in low or "shared memory" in low):
            self.shm_said = bool(prose.SHM_SAID.search(low))
        if "usage" in low and device_memory_full(low):
            self.device_full_at = self.n

    def _ggml_words(self, line: str, low: str) -> None:
        """llama.cpp's common warnings (llamacpp_common.py) and whether a CUDA error came with its message."""
        if "fit params" in low or "projected to use" in low:
            self._fit(line, low)
        if self.no_gpu_build is None and "compiled with gpu" in low and llamacpp_common.no_gpu_build(low):
            self.no_gpu_build = (self.n, line[:MATCHED_LINE_MAX])
        if not self.cuda_message and "cuda error" in low:
            self.cuda_message = small_card.CUDA_MESSAGE.search(low) is not None
        if llamacpp_common.pipeline_retry(low):
            self.pp_retry.seen(self.n, line[:MATCHED_LINE_MAX])

    def _fit(self, line: str, low: str) -> None:
        """llama.cpp's --fit: a projection above the free memory, then the fit giving up, is a load that goes on
        short of memory (llamacpp_common.py); the give-up is logged as a warning, so it is taken here, not held back."""
        over = llamacpp_common.projection_over_free(low)
        if over is not None:
            self.fit_over = over
        elif llamacpp_common.fit_succeeded(low):
            self.fit_over = False
        elif self.fit_over and llamacpp_common.fit_aborted(low) and (entry := kb.get(FIT_ABORTED_ID)) is not None:
            self._consider([entry], line, low)

    def _prose(self, line: str, low: str) -> None:
        """What the writer's prose says near the top of a paste: memory use called low, exit code 137, free RAM
        stated, a size doubted, a version named as the change, a BERT-family model named."""
        if (("low" in low or "normal" in low or "fine" in low or " ok" in low)
                and last_resort.MEMORY_USE_LOW.search(low)):
            self.memory_use_low = True
        if "137" in low and last_resort.EXIT_137.search(low):
            self.exit_137 = True
        if "free" in low and (said := last_resort.free_ram_said(low)) is not None:
            self.free_ram_said = max(said, self.free_ram_said or 0.0)
        if self.size_doubted is None:
            self.size_doubted = prose.size_questioned(low)
        if self.regression is None and prose.VERSION_REGRESSION.search(low):
            self.regression = (self.n, line[:MATCHED_LINE_MAX])
        if self.weights_at_most is None:
            self.weights_at_most = named_encoder_weights(low)
        self.billions_named = self.billions_named or names_billions(low)
        self.parameter_count_named = self.parameter_count_named or names_parameter_count(low)
        self.said.read(low)

    def _watch(self, line: str, low: str) -> None:
        """Note the error lines and whether this line says memory ran short (for the answers that call an error
        that names no memory "not memory")."""
        bare_kill = last_resort.is_bare_kill(low)
        if bare_kill and self.kill_line is None:
            self.kill_line = self.n
        if not bare_kill and last_resort.states_error(low):
            if self.error_line is None:
                self.error_line = (self.n, line[:MATCHED_LINE_MAX])
            if self.kill_line is None and signals.severity_of_line(low) == "error":
                self.last_error_line = (self.n, line[:MATCHED_LINE_MAX])
        if not self.memory_said and not bare_kill and last_resort.says_memory_ran_short(low):
            # a guess or a piece of advice ("most likely due to out of memory", "if you're running out of
            # VRAM") is not a report that memory ran short
            self.memory_said = last_resort.says_memory_ran_short(_advice_removed(low))

    def _context(self, low: str) -> None:
        if self.after and self.best is not None and self.n - self.best[2] == 2 and "hip" in low \
                and "current device:" in self.ring[-1] and _HIP_STATEMENT.match(low):
            self.hip_statement = True  # the failed statement under ggml's error footer: a ROCm build (_HIP_STATEMENT)
        if signals.PACKAGE_LINE.match(low):
            return  # an environment listing's line ("vllm-flash-attn 2.6.1"): what is installed, not a phase
        if self.woken is None:
            self.woken = signals.woken_by(low)
        if signals.LOAD.search(low):
            self.loading = True
        if signals.RUN.search(low) or ("kobold" in low and REQUEST_WRAPPER.search(low)):
            self.running = True
        if signals.LOADED.search(low) and not (self.after and SERVING.search(low)):  # a log line: before it only
            self.loaded = True
        if (counted := progress_phase(low)) == "run":  # a progress bar: the phase of what its label counts
            self.running = True
        elif counted == "load":
            self.loading = True
        if "backend:cudamallocasync" in low.replace(" ", ""):  # PyTorch's setting, not a runtime's own cudaMallocAsync
            self.async_allocator = True
        if "cpu" in low and allocators.CPU_ALLOCATOR.search(low):
            self.cpu_allocator = True
        if self.js_error:
            self._script_context(low)
        if "cl" in low and allocators.OPENCL.search(low):
            self.running = True  # OpenCL allocates a buffer when a command that uses it runs (allocators.OPENCL)
        if allocators.DATA_ALLOCATOR.search(low) or ("self." in low and allocators.LAYER_ON_ACTIVATION.search(low)):
            self.running = True  # faiss holds data, not weights; a layer applied to an activation is the forward pass

    def _script_context(self, low: str) -> None:
        """Around JavaScript's own out-of-memory: its frames, read only while they follow it line by line, say a
        script asked (the engine's heap, host RAM); a GPU, a device or a GPU / LLM binding named on any line of the
        window says the card's memory did (allocators.JS_ON_GPU)."""
        if allocators.JS_ON_GPU.search(low) or signals.names_gpu(low):
            self.js_on_gpu = True  # a script's GPU backend asked: the card's memory, whatever other frames say
        if self.js_frames and allocators.JS_FRAME.match(low):
            if allocators.JS_CODE.search(low):
                self.js_code = True  # a script asked: the JavaScript engine's heap, in host RAM
        else:
            self.js_frames = False  # the frames ended: what follows is another program's output

    def _consider(self, matches: list[kb.Entry], line: str, low: str, line_no: int | None = None) -> None:
        if any(e.id == ENGINE_DEAD_ID for e in matches):
            self.engine_dead = True
        if any(e.category in kb.MEMORY_CATEGORIES for e in matches):
            self.pp_retry.memory_said(line_no or self.n)
        top = max(matches, key=lambda e: e.priority)
        if self.kill_seen is None and top.category == "oom_killer":
            self.kill_seen = (top, line_no or self.n, line[:MATCHED_LINE_MAX])
        if self.best is not None and top.priority <= self.best[0]:
            return
        priority = top.priority
        if top.id == HOST_RAM_ID and "outofmemoryexception" in low and self._directx_named(low):
            top = kb.get("cuda-oom-load") or top  # the card's E_OUTOFMEMORY, as .NET names it (allocators.CLR_OOM)
        self.best = (priority, top, line_no or self.n, line[:MATCHED_LINE_MAX])
        self._phase_from(self.ring, low, top.id in GENERIC_OOM_IDS or top.id == GGML_OOM_ID)

    def _phase_from(self, lines: Iterable[str], low: str, generic: bool) -> None:
        """Forget what the lines around an earlier choice said, and read the phase, allocator and wake-up of the
        chosen line `low` from `lines` (the 40 kept up to and including it): for a line `_consider` takes and for a
        warning that `_settle` finds was the failure (review13 finding 7: one reset for both). Only a generic or
        ggml out-of-memory reads its lines; ggml's too, for a run after its load (_ran_after_load)."""
        self.loading = self.running = self.loaded = self.async_allocator = self.cpu_allocator = self.at_start = False
        self.js_code = self.js_on_gpu = self.js_frames = self.hip_statement = False
        self.js_error = bool(allocators.JS_ERROR.search(low))
        self.woken = None
        self.line_phase = signals.phase_of_line(low)
        self.after = 0
        self.load_over_before = self.load_after_loaded = False
        kept = tuple(lines)
        self.allocator_status = allocator_status_said(kept)  # allocator_status.py
        if not generic:
            return
        self.at_start = llamacpp_common.cuda_status_at_start(kept)  # CUDA's start, not memory (4.)
        last_load = last_loaded = -1
        for i, ctx in enumerate(kept):
            self._context(ctx)
            if signals.LOADED.search(ctx):
                last_loaded = i
            elif signals.LOAD.search(ctx):
                last_load = i
        # the program said its load was over ("Initialization Finished") after its last load line and before
        # this one: what failed came after the load (MiniGPT4-video#44), unless this line names the load itself
        self.load_over_before = last_load < last_loaded < len(kept) - 1
        # ... or a load line came after the one saying the load was over (the weights loaded, then the KV cache
        # is allocated): start-up went on, and the over-said load does not make the failure the run
        self.load_after_loaded = last_load > last_loaded >= 0
        if self.line_phase == "run" and signals.LOAD.search(low):
            self.loaded = True  # the load in one clause, the out-of-memory with the run in another (phase.py)
        self.js_frames = self.js_error  # a script's frames are read from the next line on (_script_context)
        self.after = CONTEXT_AFTER

    def _directx_named(self, low: str) -> bool:
        """Whether this .NET out-of-memory line comes with DirectML, Direct3D or a GPU named on it or on the lines
        kept before it: then it is the card's E_OUTOFMEMORY, not the CLR's managed heap (allocators.CLR_OOM)."""
        return bool(allocators.CLR_OOM.search(low)) and any(
            allocators.DIRECTX_GPU.search(ctx) or signals.names_gpu(ctx) for ctx in (*self.ring, low))

    def _settle(self) -> None:
        """Apply the log-wide signals: a memory warning that the program went on after (or that names a resource
        limit) was survived, not the failure; one that ends the log is read as the failure, as before; a size no
        machine has, stated anywhere, is the cause of the allocation failures around it."""
        if self.warned is not None:
            entry, n, line = self.warned
            # a failed allocation the program went on after is survived, unless the card is said full beside it:
            # then nothing was freed for the retry to use (sizes.device_memory_full)
            full = self.device_full_at is not None and abs(self.device_full_at - n) <= DEVICE_FULL_LINES
            if self.survived and not full:
                entry = kb.get(SURVIVED_WARNING_ID) or entry
            if self.best is None or entry.priority > self.best[0]:
                self.best = (entry.priority, entry, n, line)
                # its phase from its own words ("step failed") and the lines up to it, as for any chosen line
                self._phase_from(self.warned_ring, line.lower(), entry.id in GENERIC_OOM_IDS or entry.id == GGML_OOM_ID)
        if self.overflow is not None and self.best is not None and self.best[1].category in kb.MEMORY_CATEGORIES:
            entry, n, line = self.overflow
            self.best = (entry.priority, entry, n, line)
        if (self.best is not None and self.best[1].category in kb.MEMORY_CATEGORIES
                and self.oom_not_from_alloc is not None and "out of memory" in self.best[3].lower()):
            disowned = kb.get(OOM_NOT_FROM_ALLOC_ID)
            if disowned is not None:
                self.best = (disowned.priority, disowned, self.best[2], self.best[3])
        self._settle_said_elsewhere()
        self._settle_small_card()
        self._settle_pipeline_retry()
        self._settle_stop_beside_kill()
        if (self.best is not None and self.best[1].id == POOL_FULL_ID and not _DECODE_POOL.search(self.best[3].lower())
                and self._pool_had_room()):
            room = kb.get(POOL_HAS_ROOM_ID)
            if room is not None:
                self.best = (room.priority, room, self.best[2], self.best[3])

    def _ggml_weights_said(self, entry: kb.Entry, line: str, runtime: str | None) -> kb.Entry:
        """An allocation error a ggml runtime showed while loading, as its user words it: the weights' buffer (ggml
        allocates each buffer whole), not the kernel killing the process."""
        if entry.id == HOST_RAM_SAID_ID and runtime in GGML_RUNTIMES and self.line_phase == "load" \
                and prose.memory_error_in_words(line.lower()):
            return kb.get(WEIGHTS_ALLOC_ID) or entry
        return entry

    def _settle_small_card(self) -> None:
        """The writer's figures (small_card.py): ggml's bare "CUDA error" abort ending a runner's exit, on a card below the
        model named, is the card's memory; macOS's GPU-driver bookkeeping panic, on a Mac that holds it, is not memory."""
        if self.best is None:
            return
        low = self.best[3].lower()
        if (self.best[1].id == RUNNER_EXIT_ID and not self.cuda_message and small_card.cuda_abort_ends_exit(low)
                and self.said.card_below_model() and (oom := kb.get(RUNNER_OOM_ID)) is not None):
            self.best = (oom.priority, oom, self.best[2], self.best[3])
        elif (self.best[1].category in kb.MEMORY_CATEGORIES and small_card.refcount_panic(low)
              and self.said.mac_holds_model() and (panic := kb.get(DRIVER_PANIC_ID)) is not None):
            self.best = (panic.priority, panic, self.best[2], self.best[3])

    def _settle_stop_beside_kill(self) -> None:
        """bash's bare "Terminated" job line names SIGTERM, but a paste that also carries a kill signature (exit 137,
        "Killed", SIGKILL) was ended by that kill, which the kernel's OOM killer sends: the kill outranks the stop
        (review20b finding 1; "Terminated" then "Exit Code: 137" was oom_killer before round 63's stop rule)."""
        if (self.best is not None and self.best[1].id == STOPPED_ID and self.kill_seen is not None
                and BARE_TERMINATED.match(self.best[3].lower())):
            kill, n, line = self.kill_seen
            self.best = (kill.priority, kill, n, line)

    def _settle_pipeline_retry(self) -> None:
        """A memory failure said before libllama's compute-buffer retry without pipeline parallelism, in a log going on
        after the retry with no memory said short again, was recovered from (llamacpp_common.py, 3.)."""
        if (self.best is not None and self.best[1].category in kb.MEMORY_CATEGORIES
                and (retry := self.pp_retry.recovered(self.best[2], self.n, self.ring)) is not None
                and (entry := kb.get(PIPELINE_RETRY_ID)) is not None):
            self.best = (entry.priority, entry, *retry)

    def _settle_said_elsewhere(self) -> None:
        """Round 23's misses (session 10, diagnose19): what another line of the log says about the chosen one. C++'s
        std::bad_alloc in a log that says memory was freed wrongly is that bug's symptom, not RAM running out; a bare
        "Not enough memory" chosen before the log named its runtime is, in an SGLang log, SGLang's KV-pool sizing."""
        if self.best is None:
            return
        low = self.best[3].lower()
        if self.best[1].id == HOST_RAM_ID and ((self.freeing_bug and "bad_alloc" in low) or self._size_doubted(low)):
            crash = kb.get(CRASH_ID)
            if crash is not None:
                self.best = (crash.priority, crash, self.best[2], self.best[3])
        elif (self.best[1].id in GENERIC_OOM_IDS and self.detected_runtime() == "sglang"
                and prose.BARE_NOT_ENOUGH_MEMORY.search(low)):
            pool = kb.get(SGLANG_FRACTION_ID)
            if pool is not None:
                self.best = (pool.priority, pool, self.best[2], self.best[3])

    def _size_doubted(self, low: str) -> bool:
        """Whether the writer asked if one really needs about the size that this host allocation line says was
        refused (within a quarter either way: "130gb" for 137421126912 bytes)."""
        asked = [int(n) for n in _BYTES_REFUSED.findall(low)]
        return self.size_doubted is not None and any(0.8 <= n / self.size_doubted <= 1.25 for n in asked)

    def _pool_had_room(self) -> bool:
        """Whether the lines kept around a scheduler's pool out-of-memory state more free tokens than it asked for."""
        asked = free = None
        for low in self.ring:
            if asked is None and (m := _POOL_ASKED.search(low)):
                asked = int(m.group(1))
            if free is None and (m := _POOL_FREE.search(low)):
                free = int(m.group(1))
        return asked is not None and free is not None and free >= asked

    def detected_runtime(self) -> str | None:
        """The runtime the log comes from: Ollama if named at all (it embeds llama.cpp's lines), else the
        most-named one, where names of transformers count half (every Python runtime imports it)."""
        return runtimes.most_named(self.runtimes_seen)

    def finish(self) -> Diagnosis:
        figures = self.extractor.result()
        detected = self.detected_runtime()
        if detected:
            figures.setdefault("runtime", detected)
        runtime = self.runtime or detected
        self._settle()
        if self.shm_full is not None and (self.best is None or self.best[1].id in NAMES_THE_ERROR_IDS):
            # "No space left on device" on the shared-memory mount, no memory failure matched: the mount's size, as a
            # Bus error beside it says (SHM_MOUNT_ID), not the disk nor the host's RAM
            entry = kb.get(SHM_MOUNT_ID)
            assert entry is not None
            return Diagnosis(category=entry.category, entry=entry, title=entry.title, cause=entry.cause,
                             fixes=tuple(entry_fixes(entry, runtime)), extracted=figures, matched_line=self.shm_full[1],
                             line_number=self.shm_full[0], runtime=runtime)
        if self.best is not None and self.best[1].id in NAMES_THE_ERROR_IDS and self.memory_said:
            self.best = None  # an error that names no memory, in a log that says elsewhere that memory ran short
        elif self.best is None and self.error_line is not None and not self.memory_said:
            return self._application_error(figures, runtime)
        elif self._killed_after_error():
            return self._application_error(figures, runtime, KILLED_AFTER_ERROR_ID, self.last_error_line)
        elif self._disk_full_first():
            return self._application_error(figures, runtime, APPLICATION_ERROR_ID, self.disk_full)
        elif self._refusal_regressed():
            return self._application_error(figures, runtime, APPLICATION_ERROR_ID, self.regression)
        elif self.best is None and self.no_gpu_build is not None and not self.memory_said:
            # no failure stated, and llama.cpp says its build has no GPU backend: why the GPU goes unused
            return self._application_error(figures, runtime, NO_GPU_BUILD_ID, self.no_gpu_build)
        if self.best is None:
            return self._nothing_failed_by_name(figures, runtime)
        _, entry, line_no, line = self.best
        if (self.memory_use_low and self.exit_137 and entry.category in kb.MEMORY_CATEGORIES
                and not last_resort.PROGRAM_OOM.search(line.lower())):
            entry = kb.get(STOPPED_ID) or entry
        if entry.id == BARE_KILL_ID and self.time_limit_at is not None and not self.memory_beside_kill:
            entry = kb.get(STOPPED_ID) or entry  # killed after a time limit was set, nothing else said of memory
        if entry.id == HOST_RAM_ID and llamacpp_common.LIBLLAMA_BAD_ALLOC.search(line.lower()):
            entry = kb.get(llamacpp_common.GGML_BUFFER_ID) or entry  # libllama's own C++ allocation refused
        if entry.id == BARE_KILL_ID and self.shm_said and "bus error" in line.lower():
            entry = kb.get(SHM_MOUNT_ID) or entry  # SIGBUS, not SIGKILL: a full /dev/shm (prose.SHM_SAID)
        entry = self._ggml_weights_said(entry, line, runtime)
        if self.allocator_status and entry.category in kb.MEMORY_CATEGORIES \
                and figures_show_room(figures):
            entry = kb.get(ALLOCATOR_STATUS_ID) or entry
        req = figures.get("requested_bytes")
        if (self.free_ram_said and req and figures.get("device") == "CPU" and entry.category in kb.MEMORY_CATEGORIES
                and self.free_ram_said >= FREE_RAM_TIMES_REQUEST * req):
            entry = kb.get(SMALL_HOST_ALLOCATION_ID) or entry  # a host block far smaller than the RAM said free
        if entry.id == GGML_OOM_ID or (self.hip_statement and entry.id in GENERIC_OOM_IDS):
            entry = self._ggml_oom(entry, line, runtime)
        if self.pinned_oom and entry.id in GENERIC_OOM_IDS | {GGML_OOM_ID}:
            entry = kb.get(PINNED_ID) or entry  # the out-of-memory came from pinning host memory (signals.PINNED_CALL)
        elif entry.id in GENERIC_OOM_IDS and (self.cpu_allocator or self._script_asked(runtime)) \
                and not signals.names_gpu(line.lower()):
            entry = kb.get(HOST_RAM_ID) or entry  # a CPU plugin's allocator refused it: the host's RAM
        elif entry.id in GENERIC_OOM_IDS and one_allocation_refused(figures):
            entry = kb.get(SINGLE_ALLOCATION_CAP_ID) or entry
        elif entry.id in GENERIC_OOM_IDS:
            entry, runtime = self._generic_oom(entry, line, runtime, figures)
        if entry.id in NAMES_THE_ERROR_IDS:
            line_no, line = self._error_of_traceback((line_no, line))
        return answer_for(entry, line, line_no, figures, runtime)

    def _generic_oom(self, entry: kb.Entry, line: str, runtime: str | None,
                     figures: dict[str, Any]) -> tuple[kb.Entry, str | None]:
        """A generic out-of-memory line refined (finish): ggml's, a woken device's, a dead engine's, or a CUDA phase's
        answer; and the runtime that failed, where the clause that says memory ran out names another."""
        failed = None if self.runtime else self.failed_runtime
        if runtime in GGML_RUNTIMES and failed is not None and failed not in GGML_RUNTIMES:
            runtime = failed  # the clause that says memory ran out names another runtime: that one failed
        if runtime in GGML_RUNTIMES and not _TORCH_OOM.search(line) and not self._ran_after_load():
            entry = kb.get(GGML_OOM_ID) or entry
        elif self.woken is not None:
            entry = kb.get(self.woken) or entry
        elif self.engine_dead:
            entry = kb.get(ENGINE_DEAD_ID) or entry
        else:
            after_load = self.load_over_before and self.line_phase != "load"
            phase_args = (figures, self.loading, self.running or after_load, self.line_phase,
                          (self.loaded or after_load) and not self.load_after_loaded, self.async_allocator,
                          None if self.billions_named else self.weights_at_most)
            category = refine_cuda_oom(*phase_args)
            entry = kb.get(PRIMARY[category]) or entry
            if category == "cuda_oom_load" and runtime not in START_UP_RESERVERS and not phase_stated(*phase_args) \
                    and not self.parameter_count_named:
                # neither phase said (a parameter count named is the load's sign: cuda_oom.PARAMETER_COUNT): both
                # phases' fixes, the run first where another framework printed the line
                unstated = FRAMEWORK_STEP_ID if FRAMEWORK_OOM_LINE.search(line) else PHASE_UNSTATED_ID
                entry = kb.get(unstated) or entry
        return entry, runtime

    def _error_of_traceback(self, error_line: tuple[int, str]) -> tuple[int, str]:
        """The line an answer that names the error is titled with: a traceback's header names none, so its own
        exception line, where the paste holds it, and so does a frame's source line ('raise ValueError(f"…")', matched
        by a signature) inside that traceback (last_resort.TracebackReader)."""
        return self.tracebacks.error_of(error_line[0]) or error_line

    def _ggml_oom(self, entry: kb.Entry, line: str, runtime: str | None) -> kb.Entry:
        """What a line read as ggml's device allocation failure (or a generic one over ggml's error footer) is, by the
        log around it: PyTorch's (a bare CUDA error in a Python runtime's log), CUDA's start-up status, ROCm's (the
        failed statement under ggml's error footer is a HIP call), or a run after the load (refined by its phase in
        finish)."""
        if runtime in signals.PYTHON_RUNTIMES and signals.is_bare_cuda_error(line.lower()):
            entry = kb.get("cuda-oom-load") or entry  # read as ggml's, but the log is PyTorch's (its CUDA error tail)
        if entry.id == GGML_OOM_ID and self.at_start:  # CUDA's status before its device list (llamacpp_common, 4.)
            return kb.get(llamacpp_common.CUDA_INIT_ID) or entry
        if self.hip_statement:
            return kb.get(ROCM_OOM_ID) or entry  # ggml's CUDA source built for ROCm (_HIP_STATEMENT)
        if entry.id == GGML_OOM_ID and self._ran_after_load():
            return kb.get("cuda-oom-load") or entry  # a generic out-of-memory, refined by its phase in finish
        return entry

    def _script_asked(self, runtime: str | None) -> bool:
        """Whether JavaScript code asked for the memory (allocators.JS_CODE) and nothing says a card's backend or a
        native runtime did: an app's script frames around a native runtime's refusal (LM Studio's llmworker.js over
        llama.cpp's "unable to allocate") speak of the app, not of what allocated."""
        return self.js_code and not self.js_on_gpu and runtime is None

    def _ran_after_load(self) -> bool:
        """Whether the model was said to have loaded ("The models load fine") and a run (a request, a generation)
        was said around the out-of-memory, with no load after that and none on its line: then the run asked for the
        memory, even in a ggml log where an out-of-memory is otherwise its allocation failure while it places the
        weights (llama.cpp#13085, round 29, session 11)."""
        return self.loaded and self.running and not self.load_after_loaded and self.line_phase != "load"

    def _killed_after_error(self) -> bool:
        """Whether the answer so far is a bare kill (SIGKILL, no OOM killer named) that came after an error line, in
        a log where nothing else says memory ran short: a runtime ending its own processes after that error."""
        return (self.best is not None and self.best[1].id == BARE_KILL_ID and not self.memory_said
                and self.kill_line is not None and self.last_error_line is not None
                and self.kill_line - self.last_error_line[0] <= KILL_AFTER_ERROR_LINES)

    def _disk_full_first(self) -> bool:
        """Whether the disk was said to be full before the memory failure chosen, and that failure is a bare "out of
        memory" (no size, no device, no allocator on its line): the full disk is what failed (vibe#1168: "There is not
        enough space on the disk. (os error 112)", then a helper's "fatal error: out of memory"; on Windows the commit
        limit is RAM plus a page file on that disk), not the memory."""
        if self.disk_full is None or self.best is None or self.best[1].category not in kb.MEMORY_CATEGORIES:
            return False
        low = self.best[3].lower()
        return self.disk_full[0] < self.best[2] and "out of memory" in low and not _FIGURE_OR_DEVICE.search(low)

    def _refusal_regressed(self) -> bool:
        """Whether the writer names a runtime version as what changed, and the log's lack of memory is only a refusal
        that shows no allocation (none matched, or a memory answer whose line names no allocator, size or kill):
        the runtime's check regressed (prose.VERSION_REGRESSION)."""
        if self.regression is None:
            return False
        if self.best is None:
            return self.memory_said
        return self.best[1].category in kb.MEMORY_CATEGORIES and not prose.ALLOCATION_SHOWN.search(self.best[3].lower())

    def _nothing_failed_by_name(self, figures: dict[str, Any], runtime: str | None) -> Diagnosis:
        """No line matched: Ollama's offload line, if it says the layers did not all fit (ollama_sizing: a memory
        answer, or not a failure when the runner started after it), else unknown."""
        if (sizing := ollama_sizing.sizing_entry(figures)) and (entry := kb.get(sizing)):
            return Diagnosis(category=entry.category, entry=entry, title=entry.title, cause=entry.cause,
                             fixes=tuple(entry_fixes(entry, runtime or "ollama")), extracted=figures, runtime=runtime)
        return Diagnosis(
            category="unknown", entry=None, title="No known failure found in this log",
            cause=f"None of the {len(kb.load_entries())} known failures matched. Paste the lines "
                  "around the first error (the traceback and the line before it), or search the list "
                  "with `runlocal errors WORDS`.",
            fixes=(), extracted=figures, runtime=runtime)

    def _application_error(self, figures: dict[str, Any], runtime: str | None, entry_id: str = APPLICATION_ERROR_ID,
                           error_line: tuple[int, str] | None = None) -> Diagnosis:
        """Not a memory failure, and the answer names what the error names: nothing matched, the log states an
        error and no line says memory ran short (its first error line), or a bare kill followed an error (the
        error before the kill)."""
        entry = kb.get(entry_id)
        error_line = error_line or self.error_line
        assert entry is not None and error_line is not None, entry_id
        line_no, line = self._error_of_traceback(error_line)
        return Diagnosis(category=entry.category, entry=entry, title=names_the_error(line), cause=entry.cause,
                         fixes=tuple(entry_fixes(entry, runtime)), extracted=figures, matched_line=line,
                         line_number=line_no, runtime=runtime)

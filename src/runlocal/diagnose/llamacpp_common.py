"""Two warnings of llama.cpp's common library (common/), which every llama.cpp tool and server links, read for what
they say about a failure.

1. The parameter fitting (``--fit``, on by default since late 2025; llama-fit-params prints its result): whether a
log shows the fit giving up on a model its own projection says does not fit.

common/fit.cpp first projects the memory the load would use with the given parameters
("projected to use P MiB of device memory vs. F MiB of free device memory", a total over the devices when there are
several) and, when that leaves less than the target margin (1024 MiB by default), reduces the context and then the
layers on the GPUs. When the user has set what it would change (``-ngl``, ``-ot`` / ``--cpu-moe`` tensor overrides,
``--tensor-split``, ``-sm row``), it throws a ``common_params_fit_exception`` ("…already set by user, abort"), which
``common_fit_params`` catches and logs as a warning — "failed to fit params to free device memory: …" — and the load
goes on with the parameters as given. So:

* an abort after a projection above the free memory (P > F) is a load that goes on needing more than the devices
  have: its allocation fails later (the compute buffer, the last one, or the weights), or on Windows spills into
  shared memory. That is a lack of memory even when the paste stops before the allocation's own error;
* an abort after a projection within the free memory (only the margin short) may well load: no signal;
* a fit that succeeds ("successfully fit params"), or the projection alone (llama-fit-params before it reduces
  anything), names no failure: a look-alike;
* "encountered an error while trying to fit params" is another exception (a model that does not load): not this.

2. A build without a GPU backend: common/arg.cpp warns "not compiled with GPU offload support, --gpu-layers option
will be ignored" (older builds: "--n-gpu-layers option") when -ngl is given to a CPU-only build, and the model then
runs on the CPU — llama.cpp's own CI logs print it on healthy CPU runs. It is no failure by itself, so it answers only
a paste that states no error and no lack of memory (the user asking why the GPU is not used): not memory, the build.

3. Not common/ but libllama, which it links: the compute buffers retried without pipeline parallelism. With several
devices, src/llama-context.cpp (sched_reserve) reserves the compute buffers with pipeline parallelism (several copies);
when that graph_reserve fails it logs "compute buffer allocation failed, retrying without pipeline parallelism" as a
warning, rebuilds the scheduler with one copy and reserves again, and throws "failed to allocate compute pp buffers"
only if that fails too. So a refused compute buffer before the retry line, with the log going on after it and no
refusal after it, was recovered from (llama.cpp PR#26297's comment, round 42): not the failure. A log that stops at the
retry line says nothing of the outcome.

4. Not common/ either, but every older llama.cpp tool's start: CUDA's status before ggml's device list. In builds of
2023 (``main`` of build 1233, 98311c4), ``main`` prints its banner ("main: build = …", "main: seed = …"; "Log start"
before them) and then initialises the backend, where ggml_init_cublas (ggml-cuda.cu) calls cudaGetDeviceCount under
CUDA_CHECK *before* it prints "ggml_init_cublas: found N CUDA devices". An error status printed right after the
banner ("CUDA error 2 at ggml-cuda.cu:5509: out of memory", status 2 being cudaErrorMemoryAllocation) therefore came
while CUDA counted the devices, before any model memory was asked for: CUDA failing to start (a toolkit or driver
problem), not a lack of memory (llama.cpp#3221, the maintainer: "failing during initialization while enumerating the
devices, before any allocations are actually made"; #3199, the same error from a bare ``./main`` with no model).
Newer builds say the same failure in words ("ggml_cuda_init: failed to initialize CUDA: …", not_memory.py).

5. libllama's own word that an allocation failed, with the allocator's line absent (``verbose=False``) or cut off:
llama_decode's status -2 and the loader's "mmap failed: Cannot allocate memory" (``allocation_status``, below); and
C++'s std::bad_alloc caught and logged by a libllama function under its own name (``LIBLLAMA_BAD_ALLOC``, below).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# the words of the lines the scanner reads for these (classify.Scanner._ggml_words; "cuda error" for small_card.py)
GATE_WORDS = ("fit params", "projected to use", "compiled with gpu", "cuda error", "pipeline parallelism")

# the projection's own line (common_params_fit_impl / llama_params_fit_impl), both spellings of the free side
_PROJECTED = re.compile(r"projected to use (\d+) mib of device memory vs\. (?:a total of )?(\d+) mib of free")
_ABORTED = "failed to fit params to free device memory"  # LOG_WRN's words for common_params_fit_exception
_SUCCEEDED = "successfully fit params"


def projection_over_free(low: str) -> bool | None:
    """For a projection line: whether the projected use is above the free memory (True) or within it (False);
    None for any other line."""
    m = _PROJECTED.search(low) if "projected to use" in low else None
    return None if m is None else int(m.group(1)) > int(m.group(2))


def fit_aborted(low: str) -> bool:
    """Whether the line is the fit giving up (a user-set parameter it may not change), after which the load goes on."""
    return _ABORTED in low


def fit_succeeded(low: str) -> bool:
    return _SUCCEEDED in low


_NO_GPU_BUILD = "not compiled with gpu offload support"


def no_gpu_build(low: str) -> bool:
    """Whether the line is llama.cpp's warning that the build has no GPU backend (its -ngl is ignored)."""
    return _NO_GPU_BUILD in low


_PIPELINE_RETRY = "retrying without pipeline parallelism"


def pipeline_retry(low: str) -> bool:
    """Whether the line is libllama's retry of its compute buffers without pipeline parallelism."""
    return _PIPELINE_RETRY in low


class PipelineRetry:
    """The retry line's place in a log (its number and text), and whether memory was said short after it."""

    def __init__(self) -> None:
        self.at: tuple[int, str] | None = None
        self.failed = False

    def seen(self, n: int, line: str) -> None:
        self.at, self.failed = (n, line), False

    def memory_said(self, n: int) -> None:
        if self.at is not None and n > self.at[0]:
            self.failed = True  # the retry without pipeline parallelism was refused too

    def recovered(self, failure_at: int, lines: int, kept: Sequence[str]) -> tuple[int, str] | None:
        """The retry line when a memory failure at line ``failure_at`` came before it and the log (``lines`` long, its
        last lines ``kept``) went on after it with no memory said short again; None otherwise."""
        if self.at is None or self.failed or failure_at > self.at[0]:
            return None
        after = lines - self.at[0]  # lines printed after the retry; more than are kept: it went on
        went_on = after >= len(kept) or any(line.strip() for line in list(kept)[len(kept) - after:])
        return self.at if after > 0 and went_on else None


CUDA_INIT_ID = "notmem-cuda-init"
# the start-up banner of a llama.cpp example (examples/main: LOG_TEE("%s: build = %d (%s)"), "%s: seed  = %u"), and
# common/log.h's first line, "Log start"
_BANNER = re.compile(r"^\W{0,40}(?:main: (?:build|seed)\s*=|log start\s*$)")


def cuda_status_at_start(kept: Sequence[str]) -> bool:
    """Whether the nearest non-blank line before the last of ``kept`` (the failing line, lower-cased) is a llama.cpp
    tool's start-up banner: nothing — not ggml's device list — came between the start and the CUDA error (4.)."""
    before = [line for line in list(kept)[:-1] if line.strip()]
    return bool(before) and _BANNER.match(before[-1]) is not None


# llama_decode's status -2, as llama.cpp logs it ("llama_decode: failed to decode, ret = -2") or a binding raises it
# (llama-cpp-python's _internals.py: "llama_decode returned -2"): llama-context.cpp's decode returns -2 when
# output_reserve cannot allocate the output buffer ("could not reserve space for batch with N outputs") or the
# scheduler cannot allocate the batch's compute graph (GGML_STATUS_ALLOC_FAILED), and for a memory module that cannot
# prepare the batch; 1 is "could not find a KV slot", -1 an invalid batch, -3 a compute that failed (GGML_STATUS_FAILED),
# 2 an abort (llama.h; llama-cpp-python 0.3.36's vendored llama.cpp): only -2 says an allocation failed
_DECODE_ALLOC_FAILED = re.compile(r"\bllama_decode returned -2\b|\bfailed to decode, ret = -2\b")
# llama.cpp's loader line ("llama_model_load: error loading model: %s", llama.cpp) carrying the mapping's refusal
# of memory: llama-mmap.cpp throws "mmap failed: %s" with strerror(errno), ENOMEM being "Cannot allocate memory".
# llama.cpp's own load of the weights failed for memory, as "error loading model: unable to allocate CPU buffer" does
# (the tuning set labels every such loader line a llama.cpp allocation failure); "mmap failed: No such device" is not
_LOADER_REFUSED_MEMORY = re.compile(r"\bmmap failed: (?:cannot allocate memory|out of memory)|\bmmap failed:.*\benomem\b")


def allocation_status(low: str) -> str | None:
    """The llama.cpp entry a lower-cased line's own status or loader line proves an allocation failed by, or None:
    llama_decode's -2 (the batch's output or compute buffer), the loader's mapping refused memory (the weights)."""
    if "decode" in low and _DECODE_ALLOC_FAILED.search(low):
        return "llamacpp-compute-buffer"
    if "error loading model" in low and _LOADER_REFUSED_MEMORY.search(low):
        return "llamacpp-weights-alloc"
    return None


# C++'s std::bad_alloc caught by a libllama entry point and logged under that function's name: llama_model_quantize
# catches any std::exception and logs LLAMA_LOG_ERROR("%s: failed to quantize: %s\n", __func__, err.what())
# (ggml-org/llama.cpp src/llama-quant.cpp), so "llama_model_quantize: failed to quantize: std::bad_alloc" is the
# quantizer's own buffers (its read and work vectors) refused by the heap — llama.cpp's allocation, not a Python
# program's (numpy's "Unable to allocate … for an array" beside a llama.cpp log stays the host's RAM: round 62's
# scores-array text, round 73's m04). The host-RAM answer chosen for the bad_alloc becomes ggml's buffer answer
# (round 73's m03; the produced rounds' rule labels a llama.cpp allocation refused — weights, KV cache, LoRA buffers,
# the quantizer's buffers — llamacpp_alloc_fail: measurements/public_errors/round73_make/RULE.md)
LIBLLAMA_BAD_ALLOC = re.compile(r"\bllama_[a-z_]+: .*\bbad_alloc\b")
GGML_BUFFER_ID = "llamacpp-cuda-malloc"

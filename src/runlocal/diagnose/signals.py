"""Generic signals in one log line: what was asked for, by which allocator, and why it failed.

The knowledge base (``kb``) recognises messages it has seen. This module recognises the *kind* of line
whatever its exact wording, so that a runtime's new phrasing, a wrapper's re-wording or a fork's log still
lands in the right family. A line is read for four things, each a small vocabulary rather than a message:

* **lack of memory**: an allocation that failed *because there was no room* ("out of memory", "not enough
  memory", "insufficient VRAM", CUDA_ERROR_OUT_OF_MEMORY, "failed to allocate …", "buffer is nil"…);
* **the allocator and device** that failed: ggml (llama.cpp and everything built on it), Metal, HIP/ROCm,
  pinned host memory, PyTorch's caching allocator;
* **a reason that is not memory**, which overrides the above on the same line: an allocation of pinned
  memory that fails with "no CUDA-capable device is detected" or "invalid argument" is a driver or device
  problem, not a full memory (CUDA runtime API error strings, cuda_runtime_api.h ``cudaGetErrorString``);
* **how the process ended**: killed by SIGKILL (the kernel's OOM killer in its many spellings: a bare
  ``Killed``, ``zsh: killed``, ``exit code 137`` = 128 + SIGKILL, Kubernetes ``OOMKilled``), refused up front
  by a runtime's own memory check (Ollama, LM Studio), a runner that exited with a Windows NTSTATUS or a
  plain exit status (not a signal), or an installer's exit code.

:func:`line_entry` turns those into the id of the knowledge-base entry that explains the failure; the
scanner (``classify``) weighs it like a knowledge-base match, by the entry's priority band.
"""

from __future__ import annotations

import re

from . import llamacpp_common, prose, runtimes
from .not_memory import EXIT_IS_KILL, MLOCK, not_memory_reason
from .phase import LOAD, LOADED, PACKAGE_LINE, RUN, phase_of_line  # noqa: F401  (re-exported: classify reads signals.LOAD …)
from .sizes import exceeds_memory_budget, needs_more_than_has, process_at_memory_limit, size_overflow

__all__ = ["CJK", "GATE_WORDS", "HEDGE", "LINE_VETO", "MISSING_NAME", "PYTHON_RUNTIMES", "QUESTION_HEDGE",
           "cublas_status", "engine_dead", "is_bare_cuda_error", "line_entry", "names_gpu", "negated_oom_removed", "woken_by",
           "phase_of_line", "severity_of_line"]

# -- lack of memory ------------------------------------------------------------------------------
# Chinese, Japanese and Korean characters (kana, CJK ideographs, hangul, full-width forms): words written against
# them have no space around them, and Python counts them as word characters (so \b finds no edge there)
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef"
_OOM = re.compile(
    r"out of (?:(?:application|system|unified|gpu|device|host|video|process) )?memory"  # macOS: "application memory"
    r"|insufficient (?:device |gpu |system )?(?:memory|vram|ram)|not enough (?:device |gpu )?"
    r"(?:memory|vram)|cannot allocate memory|memory allocation fail|cuda_error_out_of_memory|cudaerrormemoryallocation"
    r"|hiperroroutofmemory|allocation on device|would exceed allowed memory|exceeds? (?:the )?available (?:gpu )?memory"
    r"|out_?of_?(?:device|host)_?memory"  # Vulkan VK_ERROR_OUT_OF_DEVICE_MEMORY / vk::…ErrorOutOfDeviceMemory
    # TensorRT "Error Code 2: OutOfMemory", also written against Chinese text ("也会OutOfMemory。", where \b finds no
    # edge); "… could not be allocated"
    r"|(?<![a-z0-9_])outofmemory(?![a-z0-9_])|could not be allocated"
    # XLA's allocator refusal with its "Out" left on the line before (a paste wrapped inside "Resource exhausted: Out
    # of memory while trying to allocate 5520758552 bytes", jax#788): the refusal's own words and size
    r"|^\W*of memory while trying to allocate \d+"
    # OpenCL's CL_MEM_OBJECT_ALLOCATION_FAILURE (-4, "failure to allocate memory for buffer object", Khronos cl.h),
    # as tinygrad's and other OpenCL backends print it
    r"|mem_object_allocation_failure"
    # one allocation above the device's largest buffer (Metal maxBufferLength, Vulkan maxMemoryAllocationSize)
    r"|(?:larger|greater) than (?:the )?(?:buffer )?maximum|maximum allowed buffer size"
    r"|not enough \w+ memory"  # any device's word: "not enough Metal memory", "not enough XPU memory"
    # "space" on a device, not in a buffer or a context pool the code sized (ggml's arena words are "in the buffer",
    # "in the context's memory pool"): exllamav2's "Insufficient space in device allocation"
    r"|(?:insufficient|not enough) (?:free )?space (?:in|on|for) (?:the )?(?:device|gpu|vram|cuda)\b"
    # macOS kernel panic inside the GPU driver's memory manager (IOGPUMemory.cpp) under unified-memory pressure
    r"|panic\b.{0,200}\biogpumemory"
    # a report that says only "OOM" (an issue title: "… OOM error (L20)", "12 GB OOM"), not the killer's oom-kill /
    # oom_score words; PyTorch's exception named inside another's ("RayTaskError(OutOfMemoryError)")
    r"|(?:^|\s)oom(?:\s+error\b|\s*$|[\s.,:;!)](?![-_ ]?(?:kill|score|reaper|adj)))|outofmemoryerror"
    # ... or written against Chinese, Japanese or Korean text, which puts no space around it ("反而OOM了")
    r"|(?<=[" + CJK + r"])oom(?![a-z0-9_])|(?<![a-z0-9_])oom(?=[" + CJK + r"])"
    r"|more memory than (?:the |what )?(?:\w+ )?(?:has|is available|available)"
    # OpenVINO's GPU plugin (clDNN / intel_gpu) when a device buffer cannot be created: CL_MEM_OBJECT_ALLOCATION_FAILURE,
    # CL_OUT_OF_RESOURCES, CL_OUT_OF_HOST_MEMORY or CL_INVALID_BUFFER_SIZE from the allocation are all thrown as "out of
    # GPU resources" (clDNN memory_pool.cpp, allocate_memory; immich#13674, round 33)
    r"|out of (?:gpu|device) resources")
# a model said not to fit where it was loaded ("when it is not able to fully load a model in the GPU VRAM"); read only
# on a line that names VRAM or GPU memory
_NOT_LOADED_IN_VRAM = re.compile(
    r"(?:not able|unable|fails?|failed|failing) to (?:fully )?(?:load|fit) (?:an? |the )?(?:\w+ )?models? (?:in|into|on)"
    r" (?:the )?(?:gpu'?s? )?(?:vram|gpu memory)\b")
_ALLOC_FAIL = re.compile(
    r"failed to allocate|unable to allocate|could not allocate|alloc(?:ation)? failed|malloc failed|buffer is nil"
    r"|allocation of size \d+ failed"
    r"|failed to create (?:llama_)?context"
    r"|error allocating\b"  # GPT4All / ggml-vulkan: "Error allocating vulkan memory"
    # a crash or exception that names an allocating function as where it came from ("unhandled exception from
    # ggml_vk_allocate in llama_kv_cache_init"): the allocation is what failed
    r"|(?:exception|crash\w*|abort\w*) (?:from|in|at) \w*(?:_allocate|_malloc|_alloc)\b")

# an allocator call that failed, whatever error string the driver attached to it (MLX's CUDA backend reports a
# device that is full as "cudaMallocManaged failed: an illegal memory access was encountered"): the allocation is
# what failed, and the string is a sticky error from before it
# ... also as a title says it ("CUDA malloc fails on newly supported models": round 24's ollama#3711, diagnose20)
# ... or with the verb first, as faiss's GPU allocator words it ("Failed to cudaMalloc 16000000000 bytes",
# faiss/gpu/utils/MemorySpace.cpp; "could not cudaMalloc 4000000 bytes!", its older StackDeviceMemory): the call that
# failed is the device's allocator, the same failure (faiss#648, #108, round 34, session 12, diagnose29)
_ALLOCATOR_CALL_FAILED = re.compile(r"\b(?:cuda|hip)\w* ?malloc\w*(?:\([^)]*\))? fail(?:s|ed)\b"
                                    r"|\b(?:failed to|could not|unable to|cannot|can't) (?:cuda|hip)\w*malloc\w*\b")
# the C library's malloc, not a device allocator's (cudaMalloc, hipMalloc, ggml_…_malloc): "fatal: Out of memory,
# malloc failed (tried to allocate 1073741824 bytes)" (git's xmalloc) is the computer's RAM
_C_MALLOC = re.compile(r"(?<![\w.:])(?:malloc|calloc|realloc)(?:\(\))? (?:failed|returned null)\b")
# ... and mmap, the process's address space whoever calls it ("unable to mmap 40000000000 bytes: Cannot allocate memory",
# llama.cpp's llama_mmap when the model file is mapped)
_MMAP_FAILED = re.compile(r"\b(?:unable to|failed to|could not|cannot) mmap\b|\bmmap(?:\(\))? failed\b")
# ... and a runtime's own check refusing a pool of the host's RAM in those words: SGLang's hierarchical KV cache
# ("Not enough host memory available. Requesting 40.00 GB but only have 44.87 GB free", mem_cache/memory_pool_host.py,
# measured with psutil.virtual_memory().available; sglang PR #8102, round 50). Not "out of host memory": OpenCL's,
# Vulkan's and SYCL's result codes (host-ram-alloc's and llamacpp-cuda-malloc's own signatures read those)
_HOST_POOL_SHORT = re.compile(r"\b(?:not enough|insufficient) (?:host|system|cpu) memory\b")
# ggml's CUDA_CHECK prints "CUDA error: out of memory" at the start of its line (ggml-cuda.cu ggml_cuda_error);
# PyTorch's own CUDA errors come as "RuntimeError: CUDA error: …" or "torch.cuda.OutOfMemoryError"
_GGML_CUDA_ERROR = re.compile(r"^\W*cuda error:? (?:\d+ )?(?:at \S+ )?out of memory")
PYTHON_RUNTIMES = frozenset({"transformers", "pytorch", "vllm", "sglang", "tgi", "tensorrt-llm", "mlx"})
# an assertion that a buffer pointer is not NULL (ggml's GGML_ASSERT(ctx->mem_buffer != NULL) after malloc): the
# allocation returned nothing, so the memory it asked for was not there
_NULL_BUFFER = re.compile(r"\b\w*(?:buf|buffer|mem|data|ptr|alloc)\w*\s*!=\s*(?:null|nullptr)\b")
# ggml asserting a bare pointer right after allocating it (ctransformers' llama.cpp:453 "GGML_ASSERT: …: data"): the
# allocation returned nothing (round 24's ctransformers#189; session 10, diagnose20)
_BARE_POINTER_ASSERT = re.compile(r"ggml_assert[:(]\s*(?:\S+:\d+:\s*)?(?:\w+(?:->|\.))?"
                                  r"(?:data|addr|buf|buffer|ptr)\)?(?: failed)?\s*$")
_GPU_NAMED = re.compile(r"\bcuda|metal(?<![\w-]metal)|\bvulkan|\bhip\b|\brocm|\bvram\b|\bgpus?\b"
                        r"|\b[rg]tx ?\d{3,4}|geforce|radeon")  # a card named by its model ("RTX3060")
# CUDA's "out of memory" said only as its number: the driver API's CUresult 2 (CUDA_ERROR_OUT_OF_MEMORY) or the
# runtime's cudaError 2 (cudaErrorMemoryAllocation), both "2" in cuda.h / driver_types.h, on a line that names an
# allocating call (torch_memory_saver's "CUresult error result=2 … func=cu_mem_create")
_CUDA_CODE_2 = re.compile(r"\b(?:curesult|cudaerror(?:_t)?|cuda(?:_| )error)\b\D{0,25}?(?<![\w.])2(?![\w.])")
_ALLOCATING_CALL = re.compile(r"\bcu_?mem_?(?:create|alloc|map)|\bcumem\w*|malloc|\balloc\w*")
# Python's MemoryError (or "a memory error") named in a sentence ("fails to load with MemoryError", "I have a memory
# error of 80 percent"), not a memory *fault* (ECC, a corrupt or illegal access: the hardware or the code, not size)
# ... also "a memory allocation error" said in prose (koboldcpp#2330: "displaying something like a memory allocation
# error in the console")
_MEMORY_ERROR_SAID = re.compile(r"(?<![\w.])memory ?(?:allocation )?error\b")
# free memory said to be below a share of the card ("fails when available GPU memory is below 90%"): vLLM's
# gpu_memory_utilization (0.9 by default) or SGLang's mem_fraction_static asks for that share of the whole card free
_BELOW_SHARE = re.compile(r"(?:available|free) (?:gpu |device |cuda )?(?:memory|vram) (?:is |was )?"
                          r"(?:below|under|less than|lower than|<)\s*\d+(?:\.\d+)?\s*%")
# a memory error that is none: negated ("not getting any memory error anymore"), fixed (a commit title), or cffi's
# "Cannot allocate write+execute memory for ffi.callback()" (the OS forbids W^X pages: SELinux, hardened kernels)
_SHARE_OWNER = re.compile(r"vllm|sglang|utili[sz]ation|mem[_-]fraction")
_MEMORY_FAULT = re.compile(r"\becc\b|uncorrect|illegal|access|segment|parity|corrupt|\bbit ?flip"
                           r"|\b(?:no|not|never|without|any)\b(?:\W+\w+){0,3}?\W+memory ?(?:allocation )?error"
                           r"|\bfix(?:ed|es|ing)?\b"
                           r"|write\s*\+\s*execute|ffi\.callback")

# an out-of-memory said not to be one ("The memory uses about 40G, so it is not OOM problem", "isn't an out of memory
# error", 不是显存不足): the user ruled it out; the words are removed from the line before any signal reads it. Up to two
# words may stand between the negation and the OOM ("not really an OOM"); "without" is left out ("cannot run it
# without OOM" reports one)
_NEGATED_OOM = re.compile(
    r"(?i)\b(?:not|isn'?t|wasn'?t|aren'?t|no|never|nor)\b(?:\s+(?!only\b|just\b)[\w']+){0,2}?\s+(?:an?\s+)?"
    r"(?:oom|out[ -]of[ -](?:\w+ )?memory)\b(?:[ -](?:problems?|issues?|errors?|cases?))?"
    r"|(?:不是|并非|并不是|没有)\s*(?:oom|显存不足|内存不足|爆显存|显存溢出|内存溢出)")


def negated_oom_removed(line: str, low: str) -> str:
    """The line without an out-of-memory it says is not one (the same object if it says none)."""
    if "oom" not in low and "out of" not in low and "out-of" not in low and "显存" not in low and "内存" not in low:
        return line
    kept = _NEGATED_OOM.sub(" ", line)
    return line if kept == line else kept


# -- host RAM: what ran out is the computer's own memory (or Windows' commit limit = RAM + page file) -------
# PyTorch's CPU allocator (c10/core/impl/alloc_cpu.cpp), ENOMEM (errno 12), the C++ runtime, LLVM, and Windows
# ERROR_COMMITMENT_LIMIT (1455, "The paging file is too small", also raised while mapping a large DLL), and the
# resource-exhaustion detector's event (Event Viewer, source Resource-Exhaustion-Detector, event 2004)
_HOST_ALLOC = re.compile(
    r"defaultcpuallocator|alloc_cpu\.cpp|error code 12 \(cannot allocate memory\)|std::bad_alloc"
    # errno 12 (ENOMEM) as Python's OSError prints it ("OSError: [Errno 12] Cannot allocate memory", raised by fork(),
    # mmap() or faulthandler.enable() in a scheduler's child process) or as C code logs a system call's errno ("ioctl …
    # (IOCTL_KGSL_GPUOBJ_ALLOC) failed: errno 12 Out of memory", a phone's GPU driver, whose memory is the phone's RAM:
    # mlc-ai/mlc-llm#112, round 51, diagnose51): the kernel refused host memory
    r"|\berrno[ :=]*12\b|\benomem\b"
    # ... and as Rust's std::io::Error prints an OS error ("Cannot allocate memory (os error 12)": its Display is
    # "{strerror} (os error {code})"), as safetensors' safe_open (Rust, mapping the file with memmap2) raises it into
    # Python as MemoryError: the host refused the mapping, never a card (a cap on the address space, round 62)
    r"|\bos error 12\b"
    # PaddlePaddle's CPU allocator ("(ResourceExhausted) Fail to alloc memory of 2147483648 size, error code is 12")
    r"|fail(?:ed)? to alloc\w*\b.{0,80}error code(?: is)? 12\b"
    # NumPy's allocation of an array in RAM ("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.50 GiB for
    # an array with shape (60000, 15000) and data type float32"): host memory, never a GPU's
    r"|arraymemoryerror|for an array with shape"
    # ... and its older spelling, without the size (NumPy before 1.17: "MemoryError: Unable to allocate array with
    # shape (11490542,) and data type float64", numpy/core/src/multiarray/ctors.c), the same refusal of host RAM
    r"|unable to allocate array with shape"
    # ONNX Runtime's arena refusing a node whose name carries the NCHWc layout ("running Conv node. Name:'347_nchwc'"):
    # the NCHWc transformer rewrites nodes for the CPU execution provider only (onnxruntime/core/optimizer/
    # nchwc_transformer.cc, MLAS's blocked layout), so the arena that refused is the CPU's: host RAM
    # (chineseocr_lite#355, round 30, session 11, diagnose26)
    r"|_nchwc\b.{0,300}\bbfc_?arena"
    r"|llvm error: out of memory|paging file is too small|(?:os ?error|winerror) 1455\b|页面文件太小"
    # Windows' resource-exhaustion event and its popup ("Windows successfully diagnosed a low virtual memory
    # condition", "Windows - Out of Virtual Memory"): the commit limit (RAM + page file) was reached
    r"|low virtual memory condition|out of virtual memory|(?:low|running low) on virtual memory"
    # the JVM's heap, capped by -Xmx inside the machine's RAM ("java.lang.OutOfMemoryError: Java heap space", "GC
    # overhead limit exceeded"): a Java program's objects live in host memory, never on a card (ocular#10, PathLSTM#20,
    # mlr#1009: round 35, session 12, diagnose29)
    r"|java heap space|gc overhead limit exceeded"
    # R's allocator refusing a vector ("Error: cannot allocate vector of size 401.6 MB", src/main/memory.c,
    # allocVector): R's objects live in the session's heap in host RAM; also as users misspell it ("can not allocate
    # vector") (infinityFlow#5, SAM#45, CelliD#7: round 36, session 12, diagnose30)
    r"|\bcan(?:not|'t| not) allocate (?:a )?vector of size\b")
# a host runtime's own refusal, read only on a line that carries one of _HOST_RUNTIME_WORDS (like _HOST_ALLOCATION_WORDS
# below: kept out of _HOST_ALLOC, which every gated line of a serving log reaches)
_HOST_RUNTIME_WORDS = ("heap", "too large", "runtime:", "outofmemoryexception", "exhausted", "until oom",
                       "size preference")
_HOST_RUNTIME_REFUSAL = re.compile(
    # a JavaScript engine's heap: V8 ends the process when its heap cannot grow ("FATAL ERROR: CALL_AND_RETRY_LAST
    # Allocation failed - JavaScript heap out of memory", "Reached heap limit Allocation failed - …", v8/src/heap,
    # node::OOMErrorHandler): a script's objects and ArrayBuffers live in the engine's heap in host RAM, as the JVM's do
    # (nsfwjs#886: round 37, session 13, diagnose31)
    r"\bjavascript heap out of memory\b|\breached heap limit\b"
    # a memory circuit breaker refusing a request before the heap it guards runs out (Elasticsearch / OpenSearch:
    # "CircuitBreakingException: [parent] Data too large, data for [<transport_request>] would be [32207069102/29.9gb],
    # which is larger than the limit of [32194822144/29.9gb]", ChildMemoryCircuitBreaker / HierarchyCircuitBreakerService:
    # each breaker's limit is a share of the JVM heap, inside host RAM) (elasticsearch#36987, #23258, helm-charts#356:
    # round 37, session 13, diagnose31). Not a request refused for its size alone (HTTP 413, Kafka's
    # RecordTooLargeException) nor an open circuit breaker of a resilience library: those name no memory
    r"|circuit_?breaking_?exception\W.{0,80}?\bdata too large\b"
    # -- host runtimes' own refusals (round 38's misses, session 13, diagnose31) --
    # Go's runtime failing to map more heap ("fatal error: runtime: out of memory", runtime.throw from sysMap /
    # mheap.grow, runtime/mem_linux.go): a Go program's heap is host memory (kunpeng#57, tls-observatory#377); not
    # a CUDA runtime's error ("CUDA runtime error: out of memory" has no colon after "runtime")
    r"|(?:^|fatal error:\s*)runtime: out of memory\b"
    # Android's runtime (ART) refusing a Java allocation ("java.lang.OutOfMemoryError: Failed to allocate a 361332168
    # byte allocation with 8388608 free bytes and 164MB until OOM", art/runtime/gc/heap.cc ThrowOutOfMemoryError): the
    # app's Java heap, capped by its growth limit inside the phone's RAM (onnxruntime-inference-examples#183)
    r"|\bbyte allocation with \d+ free bytes\b.{0,40}\buntil oom\b"
    # .NET's CLR refusing the managed heap ("System.OutOfMemoryException: Exception of type
    # 'System.OutOfMemoryException' was thrown", a Dictionary resizing): host memory (machinelearning-modelbuilder#665,
    # Product-Recommendations#18)
    r"|\bsystem\.outofmemoryexception\b"
    # PHP's memory_limit ("Allowed memory size of 134217728 bytes exhausted (tried to allocate 81513688 bytes)",
    # Zend/zend_alloc.c): a script's share of host memory, set in php.ini (faved#4, tmi-cluster#20, PA1815#10)
    r"|\ballowed memory size of \d+ bytes exhausted\b"
    # MATLAB refusing an array larger than its preference, which defaults to the machine's RAM ("Requested
    # 1024x1024x16800 (131.3GB) array exceeds maximum array size preference", Suite2P#172); an impossible size in the
    # same words (a wrapped integer) is caught first by its figure (sizes.size_overflow)
    r"|\barray exceeds maximum array size preference\b")
# thrust's bad_alloc (XGBoost's and RAPIDS' device vectors) carries the device's error in its message ("std::bad_alloc:
# cudaErrorMemoryAllocation: out of memory", thrust/system/detail/bad_alloc.h): the exception's type is C++'s, the
# allocation that failed the card's (xgboost#8484, round 36, session 12, diagnose30)
_DEVICE_BAD_ALLOC = re.compile(r"bad_alloc\W{1,3}(?:cuda|hip)error\w*")
# (read only on a line that says "allocation": every line of a serving log that passes the gate reaches _HOST_ALLOC)
_HOST_ALLOCATION_WORDS = re.compile(
    # Rust's global allocator refusing a request: the standard library's default alloc error hook prints "memory
    # allocation of {size} bytes failed" and aborts (library/std/src/alloc.rs, default_alloc_error_hook); a Rust
    # program's GPU memory comes through its driver bindings instead (cudarc's DriverError(CUDA_ERROR_OUT_OF_MEMORY))
    r"\bmemory allocation of \d+ bytes failed"
    # C++'s std::bad_alloc as Microsoft's runtime words its what() ("RuntimeError: bad allocation", a Windows build)
    r"|\bbad allocation\b")

# -- allocator / device --------------------------------------------------------------------------
# "metal" as a word of its own, not inside a hyphenated or underscored name: Tenstorrent's SDK is "tt-metal"
# (paths /tt-metal/tt_metal/…) and has nothing to do with Apple's Metal; ggml's own file names still count. Metal's
# API types are "MTL" and a name (MTLBuffer, MTLCommandBuffer); "MTL" alone is Intel's Meteor Lake ("MTL iGPU")
_METAL = re.compile(r"metal(?<![\w-]metal)(?![\w-])|ggml[_-]metal|\bmtl[a-z]\w*|kiogpu|iogpu|\[metal"
                    r"|\bmps\b"  # PyTorch's MPS allocator
                    r"|maximum recommended size|recommendedmaxworkingset")  # MLX's warning against Metal's working set
_HIP = re.compile(r"\bhip\b|hipmalloc|\brocm\d*\b")
# an AMD GPU named on the out-of-memory line itself (not its CPUs): outside ggml (whose Vulkan backend also runs on
# AMD cards) the allocator is ROCm's
_AMD_GPU = re.compile(r"\bamd\b(?!\W{1,3}(?:ryzen|epyc|threadripper|athlon|cpu))|\bradeon\b|\bgfx\d{3,4}\b")
# macOS: libc++abi is Apple's C++ runtime (Linux prints libstdc++'s "terminate called after throwing"); a GPU
# allocation that fails there is Metal's, whichever library (MLX, llama.cpp) aborted
_MACOS = re.compile(r"libc\+\+abi|\.dylib\b|\bdarwin\b"
                    # the user names the machine: every Mac with a GPU runtime allocates from unified memory
                    r"|\bmac(?:os| ?book(?: air| pro)?| mini| studio)?\b|apple silicon|\bm[1-5] (?:pro|max|ultra)\b"
                    # macOS's own dialog when memory is exhausted: "Your system has run out of application memory"
                    r"|\bapplication memory\b")
_PINNED = re.compile(r"pinned (?:host )?memory|host_malloc|mallochost|cuda_host|pin_memory")
_GGML = re.compile(r"ggml|llama_|\bllm_load|load_tensors|\.gguf|gallocr|koboldcpp|llamafile|\bcublas\b.*\bvram\b"
                   r"|\bvulkan\d|vulkan memory"
                   # vulkan.hpp's C++ names (vk::Result::eErrorOutOfDeviceMemory, vk::OutOfDeviceMemoryError), which
                   # ggml-vulkan uses; other Vulkan programs (TVM/MLC) print the C API's VK_ERROR_OUT_OF_DEVICE_MEMORY
                   r"|erroroutofdevicememory|outofdevicememoryerror"
                   r"|\bblk\.\d+\.|\bsycl\d*\b|level_zero")  # ggml's device names and GGUF tensor names
_TORCH = re.compile(r"tried to allocate|outofmemoryerror|reserved by pytorch|total capacity")

# -- how the process ended -----------------------------------------------------------------------
_KILL_KERNEL = re.compile(
    r"killed process \d+|oom[-_ ]kill|oom_reaper|memory cgroup out of memory|oomkilled"
    r"|node running low on memory|out of memory: kill"
    # a container's memory limit (cgroup): "RAM usage exceeded the container limit (8Gi)", "exceeded its memory limit"
    r"|exceed(?:ed|ing) (?:the |its )?(?:container(?:'s)? |pod(?:'s)? |cgroup )?memory limit"
    # ... a cluster manager's: YARN's NodeManager kills a container whose process tree passes its allocation
    # ("Container killed by YARN for exceeding memory limits. 7.2 GB of 4.2 GB virtual memory used",
    # ContainersMonitorImpl), Dask's nanny restarts a worker past its budget ("Worker exceeded 95% memory budget.
    # Restarting", distributed/nanny.py: memory_terminate_fraction 0.95): both act on the host's memory of a
    # process, as the kernel's killer does (TensorFlowOnSpark#134, #426, jetstream#336, distributed#2130: round 36)
    r"|exceeded \d+% memory budget"
    r"|exceeded the (?:container|pod|cgroup)(?:'s)? limit"
    # user-space OOM killers that act before the kernel does (earlyoom, systemd-oomd)
    r"|\bearlyoom\b.{0,60}\b(?:sigterm|sigkill|low memory)|systemd-oomd|\boomd\b.{0,40}\bkill")
# the kernel's report of a memory cgroup at its limit (mm/memcontrol.c, mem_cgroup_print_oom_meminfo: "memory: usage
# 131072kB, limit 131072kB, failcnt 15691"), printed by the OOM killer for a container or pod; usage at the limit is
# the cgroup's OOM (triton-inference-server#4154, round 28). "memory+swap" and "kmem" lines of the same report state
# other counters, often unlimited
_CGROUP_REPORT = re.compile(r"(?<![+\w])memory: usage (\d+)kb, limit (\d+)kb")


def cgroup_at_limit(low: str) -> bool:
    """Whether the line is a memory cgroup's OOM report with its usage at (or over) its limit."""
    m = _CGROUP_REPORT.search(low) if "kb, limit" in low else None  # substring first: serving logs say "usage" a lot
    return m is not None and int(m.group(1)) >= int(m.group(2)) > 0


# an out-of-memory said together with the program being killed for it, in a user's words ("OOM异常，自动kill程序了"
# "OOM, the program was killed automatically", "OOM and got killed"): the kernel's OOM killer, not an allocator's error
# (an allocator that fails raises in the process; only the killer kills it). "OOM, so I killed the server" is not:
# the kill must be automatic or passive
_OOM_THEN_KILLED = re.compile(
    r"(?<![a-z])oom(?![a-z])[^.!?。\n]{0,16}?(?:自动|被|got |gets |was |been |auto(?:matically)?[- ]?)(?:kill|杀)")
# SIGKILL's exit status (137 = 128 + 9) on a line that names the host's memory or a container ("with CPU (64GB ram)
# container exits with error code 137"): the kernel's or the container's cgroup OOM killer sent it (docker inspect
# shows OOMKilled); a stop from outside (docker stop, a timeout) is read by _STOPPED first
_HOST_KILL_137 = re.compile(r"(?:exit\w*|error|return\w*) (?:with )?(?:error )?(?:code|status)[ :=]*137\b")
_HOST_NAMED = re.compile(r"\bram\b|\bcpu\b|system memory|host memory|\bcontainer\b|\bpod\b|内存")
# the system said to run out of memory ("加载7B模型的时候，系统会OOM" "the system OOMs while loading", "the system ran
# out of memory"): the computer's RAM, whatever else the line names
_SYSTEM_OOM = re.compile(r"(?:系统|\bsystem\b)\s*(?:会|就|直接|will |would |went |goes |is |was |then )?\s*"
                         r"(?:oom(?![a-z])|out of memory|ran out of memory|runs out of memory|内存不足)"
                         # ... or the out-of-memory said to be the host's ("The OOM was for CPU RAM",
                         # llm-compressor#1183; "out of memory on the host", "OOM in system RAM")
                         r"|(?:(?<![a-z])oom(?![a-z])|out of memory)\s*(?:was |is |happen\w* )?(?:for|of|in|on) (?:the )?"
                         r"(?:cpu|host|system)(?: ?(?:ram|memory))?\b")
# an out-of-memory said of a machine named by its RAM ("apply_delta out of memory, is there a way to apply on a 64GB
# machine", FastChat#1332): a computer's size is its RAM (a card is named as one), so the host ran short; not when the
# line names a card or CUDA ("CUDA out of memory on a 64GB machine" is the card's)
_MACHINE_OOM = re.compile(r"(?:(?<![a-z])oom(?![a-z])|out of memory)[^.!?\n]{0,80}?\b(?:on|with|in|for) "
                          r"(?:an? |my |the |this |our )?\d+ ?gb(?: of)?(?: ram| memory)? "
                          r"(?:machine|server|host|computer|pc|desktop|laptop|workstation)\b")
# a kill whose own line gives a lack of memory as its reason ("2 Workers (tasks / actors) killed due to memory pressure
# (OOM)", Ray's raylet, src/ray/raylet/node_manager.cc; "killed because the node is low on memory"): only a monitor of
# the machine's memory kills for it — the kernel's OOM killer, Ray's memory monitor (it reads the node's RAM use against
# memory_usage_threshold, ray-core/scheduling/ray-oom-prevention), earlyoom — while a device allocator that fails
# raises in the process. So it is the host's RAM, unless the line names a GPU (WMPO#3, round 32, session 12)
_KILLED_FOR_MEMORY = re.compile(r"\bkilled\b[^.;\n]{0,20}?\b(?:due to|because(?: of)?|for|after)\b[^.;\n]{0,30}?"
                                r"(?:memory pressure|\blow (?:on )?memory|(?:insufficient|not enough|lack of|out of) "
                                r"(?:\w+ )?(?:memory|ram)\b|(?<![a-z])oom(?![a-z_-]))")
# a pinned (page-locked) host allocation being made: PyTorch's ``.pin_memory(`` / ``pin_memory(data, device)`` in a
# traceback frame, CUDA's cudaHostAlloc / cudaMallocHost. A CUDA out-of-memory raised by it is the host's page-locked
# memory running short (capped far below RAM under Windows and WSL), not the card (mixtral-offloading#18: "VRAM usage
# never goes above 6.5gb" while ``pin_memory(self.device)`` raised "CUDA error: out of memory")
PINNED_CALL = re.compile(r"\bpin_memory\(|cudahostalloc|cudamallochost")
# the OS of a phone or a Mac ends an app for its memory (iOS jetsam: "has been killed by the operating system
# because it is using too much memory"): the same act as the Linux OOM killer, by another kernel. Also Apple's resource
# exception with its memory subtype ("EXC_RESOURCE (RESOURCE_TYPE_MEMORY: high watermark memory limit exceeded)
# (limit=6144 MB)": the process crossed the memory limit the system sets it, after which iOS ends it — Apple's
# developer documentation, xcode/exc_resource and "Reducing your app's memory use"), and a debugger's word that the
# app was ended for its memory (Xcode: "Terminated due to memory issue"), not for a memory access fault
# (ml-explore/mlx-swift-lm#209, mlc-ai/mlc-llm#713: round 51, session 16, diagnose51)
_KILL_OS = re.compile(r"killed by the (?:operating )?system\b.{0,80}\bmemory|\bjetsam\b|\bexc_resource\b.{0,40}\bmemory\b"
                      r"|\bterminated (?:due to|because of|for)\b[^.;\n]{0,20}?\bmemory (?:issue|pressure|limit|use|usage)\b")
# SIGKILL as a word, not inside a name: DeepSpeed's launcher calls its own sigkill_handler(signal.SIGTERM, None)
# after any child fails (deepspeed/launcher/launch.py), which says nothing of how the child ended
_KILL_SIGNAL = re.compile(
    r"^\s*killed\s*$|^\s*killed (?:while|during|when|after|at|in)\b"  # "Killed while loading weight"
    r"|\bkilled\s*$|zsh: killed|\bkilled: 9\b|^\s*(?:\[\d+\]\s+)?\d+\s+killed\s|\]\s+\d+\s+killed\s"
    r"|\s\d+ killed\s+\S|line \d+:\s*\d+\s+killed\b|signal: killed|\bsigkill\b|exit(?:ed)? (?:with )?(?:code|status)[ :=]*137\b"
    r"|\berror code 137\b"
    # GCC's driver when a compiler pass died of SIGKILL ("c++: fatal error: Killed signal terminated program
    # cc1plus", gcc.c: "%s signal terminated program %s" with strsignal(SIGKILL)): the kernel ended the compiler,
    # which a parallel build's memory does (SparseOcc#16, lc0#1395: round 36, session 12, diagnose30)
    r"|\bkilled signal terminated program\b"
    r"|exitcode\s*:\s*(?:-9|137)\b|\(exit code 137\)|(?:died|exit code|status)\s*[:=(]?\s*-9\b"  # -9: SIGKILL
    # "Killed" as a word wherever it stands: quoted in a sentence or a title ('gets "Killed" during Compiling', 'ends
    # with "Killed" every time'), the kernel's "Killed process" with its pid cut off, next to CJK text
    # ("模型加载Killed了"), or said of the process ("it immediately be killed", "got killed")
    r"|[\"'“‘`]killed[\"'”’`]|\bkilled process\b|(?<=[\u3040-\u30ff\u4e00-\u9fff])killed|killed(?=[\u3040-\u30ff\u4e00-\u9fff])"
    r"|\b(?:be|been|being|gets?|getting|got|was|is) killed\b"
    # ... or with the reason after it ("trtllm-build killed due to insufficient memory"): the process was ended from
    # outside, which a full GPU never does (an allocator that fails raises an error in the process)
    r"|\bkilled (?:due to|because of|because|for lack of)\b")
# a kill whose own line names what asked for it — Ctrl-C, SIGTERM, a scheduler's time limit, a cancellation, a
# health check — is that cause: the OOM killer sends SIGKILL and says so (signal(7); mm/oom_kill.c)
_STOPPED = re.compile(
    r"ctrl[- +]?c\b|\^c\b|keyboardinterrupt|\bsigint\b|\bsigterm\b|time ?limit|timed out|\btimeout\b|cancel"
    # a container stopped from outside: docker stop / kubectl delete send SIGTERM, then SIGKILL (137) after the grace
    r"|docker (?:stop|kill|restart)\b|kubectl delete|grace period|\bstopped by\b"
    # ... or the reason written after the kill, when it is not memory ("killed due to an unhandled exception")
    r"|\bkilled (?:due to|because(?: of)?)\b(?!.{0,60}(?:memor|\boom\b|\bram\b|vram|swap|resource))"
    r"|preempt|health ?check|by (?:the )?user\b|\bmanually\b")
_REFUSAL = re.compile(
    r"requires? more (?:system )?memory|too large for (?:this|the|your) (?:system|machine|computer|device)"
    r"|request too large for system"
    r"|not enough (?:system )?(?:resources|memory|ram) to (?:load|run)|insufficient system resources"
    r"|memory layout cannot be allocated|requires approximately .* of memory")
# exo's planner when no ring of nodes has the model's size free ("No cycles found with sufficient memory",
# master/placement.py get_instance_placements after filter_cycles_by_memory); its dashboard says "no placement for model"
_PLACEMENT_REFUSAL = re.compile(r"no cycles found with sufficient memory|no placement (?:found )?for (?:the |this )?model")
# ... or saying the model does not fit in a memory ("About 10 GB of this model does not fit in GPU memory and would
# run from system RAM", Unsloth Studio's check before it loads): the runtime's own sizing refused, nothing was asked
# of an allocator; a warning that says so and goes on is held back like any warning (classify)
_FIT_REFUSAL = re.compile(r"\b(?:does not|doesn't|do not|don't|did not|didn't) have enough (?:\w+ )?(?:memory|vram|ram)\b"
                          r"|\b(?:does not|doesn't|do not|don't|will not|won't|cannot|can't|would not) fit (?:in|into|on)"
                          r" (?:the )?(?:\w+ )?(?:memory|ram|vram)\b")
# a scheduler naming its own phase as out of memory: SGLang's token pool ("Prefill out of memory", "Decode out of
# memory", python/sglang/srt/managers/schedule_batch.py), not a device allocator
_POOL_PHASE_OOM = re.compile(r"\b(?:prefill|decode) out of memory(?! happened)")  # "happened": a retraction
# ... SGLang's retraction: before each decode step the scheduler checks that the KV token pool has room for one more
# token per running request (ScheduleBatch.check_decode_mem: token_to_kv_pool_allocator.available_size()); when it
# has not, it pushes requests back to the queue and logs "Decode out of memory happened. #retracted_reqs: N"
# (python/sglang/srt/managers/scheduler.py update_running_batch). The KV pool filled, no device allocation failed,
# and the server goes on (SGLang's hyperparameter-tuning guide: raise --schedule-conservativeness if frequent)
_RETRACTION = re.compile(r"\b(?:prefill|decode) out of memory happened|#retracted_reqs\b")
# a GPU kernel whose launch configuration asks for more per-block resources than the hardware has: Triton's compiler
# raises OutOfResources(self.metadata.shared, max_shared, "shared memory") when a kernel's tile needs more shared
# memory per block than the GPU offers ("out of resource: shared memory, Required: 196608, Hardware limit: 65536.
# Reducing block sizes or `num_stages` may help.", triton/compiler/compiler.py _init_handles); PyTorch's inductor
# raises the same words under OutOfMemoryError (TORCH_CHECK_WITH(OutOfMemoryError, …, "out of resource: ", funcName,
# " Required: ", …, " Hardware limit:", …)); CUDA's cudaErrorLaunchOutOfResources is "too many resources requested
# for launch" (registers or threads per block). The size is fixed by the kernel's configuration, not by the model or
# the free memory: nothing ran short, the kernel does not fit this GPU's per-block limit.
_KERNEL_LIMIT = re.compile(r"out of resources?:\s*[\w ]+?,?\s*required:?\s*\d+,?\s*hardware limit:?\s*\d+"
                           r"|\boutofresources\b|too many resources requested for launch|launchoutofresources"
                           # TensorRT-LLM's masked multi-head attention kernel: "Sequence Length is too long for the
                           # MMHA kernel (not enough shared memory)" (decoderMaskedMultiheadAttentionLaunch.h)
                           r"|not enough shared memory\b")
# XLA's on-chip memories of a TPU core (vmem, its vector memory; smem, its scalar memory), which a kernel's blocks use as
# scratch under a scoped limit per kernel: "Ran out of memory in memory space vmem while allocating on stack for
# %kv_cache_update…" (sglang-jax#408, round 42), XLA's error E1001 (CompileTimeScopedVmemOom: "Scoped allocation
# with size 19.85M and limit 16.00M exceeded scoped vmem limit"; its documented example "Allocation (size=134217728)
# would exceed memory (size=67108864) :: #allocation25 [… space=vmem, … tag = 'scoped memory for …']", openxla/xla
# docs/errors/error_1001.md). A kernel's block setting, not the device's memory, which XLA names "memory space hbm"
# (E1000, docs/errors/error_1000.md) and which stays memory
_ON_CHIP_SCRATCH = re.compile(r"memory space [vs]mem\b|\bspace\s*=\s*[vs]mem\b|scopedvmemoom|scoped vmem limit")
# ... or a line that names the scheduler's token/request pool it could not allocate from (SGLang's req_to_token_pool,
# token_to_kv_pool, alloc_req_slots in python/sglang/srt/mem_cache): the pool is full, not the device
_NAMED_POOL = re.compile(r"\b\w*(?:token|req)\w*_pool\b|\balloc_req_slots\b")
# vLLM's sleep mode (vllm/device_allocator/cumem.py, CuMemAllocator): sleep() unmaps the weights and KV cache and
# wake_up() maps them back; an out-of-memory there means something else (the trainer that shares the GPU in RL
# frameworks) took the memory meanwhile, which is what --gpu-memory-utilization leaves room for. cuMemCreate /
# cuMemSetAccess (CUDA's driver API, used by ggml's VMM pool) are other allocators and do not match.
# SGLang's counterpart for the same RL frameworks is resume_memory_occupation (release_memory_occupation puts it to
# sleep; python/sglang/srt/entrypoints/engine.py): an out-of-memory while resuming is the same case (gpu-held-by-other-process).
_VLLM_WAKE_UP = re.compile(r"cumem_allocator|device_allocator[/\\]cumem|\bcumem\.py\b|\bwake_up\b")
_SGLANG_RESUME = re.compile(r"\bresume_memory_occupation\b")
# the memory is held by another process on the same GPU, said in words: SGLang's start-up check ("The memory capacity is
# unbalanced. Some GPUs may be occupied by other processes.", python/sglang/srt/utils.py get_available_gpu_memory's
# caller: min free across ranks < 0.9 × this rank's) and the same words from other runtimes
_OTHER_PROCESS = re.compile(r"(?:occupied|used|taken|held) by (?:an)?other process(?:es)?\b"
                            r"|memory capacity is unbalanced")
# ... on a line about a GPU or its memory, not a port or a file that another process holds
_HELD_WHAT = re.compile(r"memor|vram|\bgpus?\b|\bcuda\b|device")
_NOT_MEMORY_HELD = re.compile(r"\bport\b|address|socket|\bfile\b|\block\b")
# TensorRT's builder skipping one optimisation tactic whose scratch space does not fit ("Tactic Device request: 66048MB
# Available: 32510MB. Device memory is insufficient to use tactic.", "Skipping tactic 0 due to insufficient memory"):
# a warning the builder goes on after, choosing another tactic; it is not what stops a build
_TACTIC_SKIPPED = re.compile(r"insufficient to use tactic|skipping tactic\b")
# an allocation that failed on a line that says the program takes another way ("failed to allocate 2 MB hugepage,
# falling back to regular pages", "… pinned memory, falling back to pageable memory"): it went on, this is not the end
_FALLS_BACK = re.compile(r"\bfall(?:ing|s)? ?back\b|\bcontinuing (?:without|anyway|with)\b")
# a failed check that the memory used or allocated stays under a capacity, printed as its condition
# ("GGML_ASSERT: llama.cpp:3107: vram_allocated_bytes < vram_capacity", PowerInfer's VRAM budget): the allocation
# would have gone over what the device has; an assertion marker or a "file:line:" prefix says it is a check that failed
_CAPACITY_CHECK = re.compile(r"\b\w*alloc\w*\s*(?:\+\s*\w+\s*)?<=?\s*\w*(?:capacity|limit|budget|avail\w*|free)\w*")
_CHECK_FAILED = re.compile(r"assert|\.\w{1,4}:\d+:\s")
_ENGINE_DEAD = re.compile(
    r"enginedeaderror|engine (?:is )?(?:already )?dead|enginecore encountered an issue|background loop has errored"
    r"|engine core proc \S+ died")
# accelerate's own words for weights that did not fit on the GPU(s) or in RAM and were placed on disk ("Please use
# the `disk_offload` function instead", accelerate's function name as a whole word: transformers 5's from_pretrained
# frame echoes its own variable ``loading_info, disk_offload_index = cls._load_pretrained_model(`` in every load's
# traceback, modeling_utils.py, whatever failed under it)
_OFFLOAD = re.compile(r"fp32_cpu_offload|dispatched on the cpu or the disk|offload_(?:folder|dir)\b|disk_offload\b"
                      r"|offload(?:ed)?\b[\w ]{0,30}\bto (?:the )?disk")
# a paged-attention server's start-up sizing of its KV pool: "not enough … memory for KV cache", a negative budget
_KV_BUDGET = re.compile(r"not enough \w* ?memory for (?:the )?kv[ _-]?cache|kv_budget=-\d"
                        r"|\bno (?:\w+ )?memory (?:left )?for (?:the )?kv[ _-]?cache")  # SGLang: "leave no GPU memory for…"
# a negative or empty KV budget stated in words, with no out-of-memory message: vLLM's profile line ("the rest of the
# memory reserved for KV Cache is -1.05GiB", vllm/worker/worker.py) or its block count ("# cuda blocks: 0")
_KV_NEGATIVE = re.compile(r"reserved for (?:the )?kv[ _-]?cache is -\d|#\s*(?:cuda|gpu) blocks:\s*0\b")
#: entries a line's own figures (a size no machine has) or its memory space (a TPU core's scratch, not the device's
#: memory) prove, which replace whatever the same line's words matched in the knowledge base
LINE_VETO = frozenset({"notmem-size-overflow", "notmem-kernel-scratch"})


def line_veto(low: str) -> str | None:
    """The LINE_VETO entry the line proves, whatever its words (a MemoryError, an out-of-memory), or None."""
    if size_overflow(low):  # a size no machine has
        return "notmem-size-overflow"
    if "mem" in low and _ON_CHIP_SCRATCH.search(low):  # a TPU kernel's on-chip scratch, not the device's memory
        return "notmem-kernel-scratch"
    return None
# a guess that memory may be the cause ("resulted in crash … most likely due to out of memory"): the program does
# not know; the rest of the line is read without it (classify._advice_removed cuts it)
HEDGE = re.compile(r"\b(?:most likely|probably|possibly|perhaps|maybe|presumably) (?:due to|caused by|because of|an?|the"
                   r"|out of)\b|\bmight (?:be|have)\b|\byou should\b"
                   # the writer's own guess ("Note: my platform is orin 32G, I guess root cause is insufficient memory")
                   r"|\bi (?:guess|think|suspect|believe|assume|wonder)\b(?!,? so\b)")
# a lack of memory asked as a question ("(out of vram?)", ColabFold's "Could not predict X. Not Enough GPU memory?
# RESOURCE_EXHAUSTED: …"): the question is a guess and is removed, but only up to its question mark — what follows
# is a new sentence, and may be the program's own refusal (ColabFold#186, round 34, session 12, diagnose29)
QUESTION_HEDGE = re.compile(r"\b(?:out of|not enough|insufficient|low on) (?:\w+ )?(?:memory|vram|ram)\s*\?")
# a feature that needs a setting the run did not give (llama-server's "tools param requires --jinja flag", a chat
# template that fails to render): a configuration error, not memory
_CONFIG = re.compile(r"requires? (?:the )?--[\w-]+(?: flag| option| argument)\b|\bjinja\b|chat[ _]template")
_VLLM_KV_SIZING = re.compile(r"raise_if_cache_size_invalid|check_enough_kv_cache_memory")

# a name the code looked up and did not find ("module 'torch.cuda' has no attribute 'OutOfMemoryError'", "cannot
# import name 'OutOfMemoryError'"): a library too old to have that class, not the failure the class stands for;
# classify reads the line without the name
MISSING_NAME = re.compile(r"(?:has no attribute|cannot import name|no module named)\s+['\"`]?[\w.]+['\"`]?")

# -- a program's last words that are not about memory: an exception, a failed assertion, a panic. Used only when
# nothing else in the log matched (see notmem-other-error): a log that ends in such an error and says nothing of
# memory did not run out of it.
_TERMINAL_ERROR = re.compile(
    r"(?:error|exception)(?:: |\()(?!\s*$)|ggml_assert\(|assertion .{0,80} failed|\bpanic: |segmentation fault"
    r"|\bfatal error\b|\bpanicked at\b"  # Rust: "thread 'main' panicked at src/main.rs:406:19"
    r"|terminate called after throwing|terminating due to uncaught exception"  # an uncaught C++ exception
    r"|\berror=\\*\"(?!\s*\\*\")"  # a structured log's error="…" field (Ollama, Go slog)
    # a start-up that states its reason ("Model failed to start: Could not load engine …: … is not set yet!")
    r"|(?:failed to start|could not load \w+)[^:]{0,60}: \S"
    r"|\b(?:loading|load|initiali[sz]ation|start-?up) failed\b"  # a failure report whose cause was only guessed
    r"|^\s*assertionerror\s*$"  # Python's bare AssertionError: an assert with no message
    # ggml's abort: ggml_abort prints the source file and line, then GGML_ABORT's message ("%s:%d: ", ggml/src/ggml.c;
    # "tools/mtmd/clip.cpp:4391: Unknown projector type", Atomic Chat's llama.cpp, round 56), whatever its words. Not a
    # compiler's diagnostic, which puts a column after the line ("x.cpp:12:5: warning: …")
    r"|^\W*[\w./\\-]+\.(?:c|cc|cpp|cu|m|mm):\d+: (?!(?:warning|note)\b)\S")
_SOURCE_LINE_WORDS = (".c:", ".cc:", ".cpp:", ".cu:", ".m:", ".mm:")  # the abort's file and line (_TERMINAL_ERROR)
_TERMINAL_WORDS = ("error", "exception", "assert", "panic", "segmentation", "failed to start", "could not load",
                   "terminat", " failed", *_SOURCE_LINE_WORDS)
# a failed assertion: the program checked its own invariant (ggml's GGML_ASSERT, and llama.cpp's own LLAMA_ASSERT
# before it, "LLAMA_ASSERT: %s:%d: %s" — llama.cpp's llama.cpp, mid-2023; SciSharp/LLamaSharp#21, round 51). Memory
# words in it are about a buffer the program sized itself (ggml's "not enough space in the buffer", "largest block
# available"), a bug, unless it asserts that an allocator call returned memory (then _ALLOC_FAIL / _OOM words are on
# the line)
_ASSERTION = re.compile(r"(?:ggml|llama)_assert|\bassert(?:ion)?\b.{0,120}\bfailed\b|\bfailed assertion\b")

# -- severity: how the program itself rated the line. A warning is something it went on after; an error line
# (an exception, an abort, a fatal message) is what stopped it
_WARNING_MARK = re.compile(r"^\s*w\d{4} |\[w\]|\blevel=warn|\b\w*warning\b:|^\W*(?:\S+\s+){0,4}?\[?warn(?:ing)?\b")
_ERROR_MARK = re.compile(r"error\b|\[e\]|\bfatal\b|\bcritical\b|exception|traceback|\babort|\bpanic|segmentation fault"
                         r"|\bassert|\bkilled\b|terminat")
_MEMORY_WORDS = re.compile(r"memor|alloc|\boom\b|vram|\bram\b|buffer|\bkilled\b")


#: words that must occur in a line for any signal to fire (the scanner's cheap gate)
GATE_WORDS = frozenset({
    "flag provided", "unrecognized argument", "unexpected argument", "invalid value", "no such option",
    "memory", "oom", "allocat", "vram", "nil", "killed", "sigkill", "137", "-9", "device", "ptx", "kernel image",
    "driver", "illegal", "assert", "bounds", "operation not supported", "kv cache", "memory slot", "terminated",
    "exit", "install", "connection", "nccl", "resources", "too large", "layout", "dead", "engine", "offload",
    "dispatched", "cache_size", "kv_cache", "create context", "create llama_context", "malloc", "alloc",
    "gpus are available", "setup failed", "shared object", "undefined symbol", "libcudart", "native library",
    "cuda binary", "crashed", "0xc000001d", "-1073741795", "sigill", "command buffer", "commandbuffer", "death signal",
    "memory pool", "requires", "required", "requested", "error", "exception", "ggml_assert", "assertion", "panic",
    "segmentation fault", "busy or unavailable", "unable to load kernel", "or newer", "__global__", "outofmemory",
    "could not be allocated", "maximum", "leak detected", "failed to start", "could not load",
    "require", "ceiling", "paging file", "1455", "页面文件", "defaultcpuallocator", "bad_alloc", "hsa_status",
    "alignedallocator", "in region", "current device", "panicked", "iogpumemory", "architecture", "devicelost",
    "device_lost", "device lost", "terminat", "earlyoom", "oomd", "blocks: 0", "jinja", "template",
    "requires --", "require --", "overflow", "consumed", "occupied", "slot", "abort", "fatal", "traceback", "warn", "[w]",
    *_SOURCE_LINE_WORDS,
    "sigsegv", "signal 11", "signal (11)", "139", "134", "double free", "free()", "corrupted", "sigabrt",
    "iot instruction", "0xc0000005", "access violation", "crash", "detected", "devices found", "initialize cuda",
    "end of file", "magic", "gguf", "ggml file", "wrong size",
    "received shape", "no such file", "does not exist", "unable to load model",
    "no file named", "model from path", "mlock", "virtuallock", "more memory than", "!= null", "!=null", "underflow",
    "jetsam", " fit in", " fit on", "wake_up", "appear to have", "retracted_reqs", "projector", "keyboardinterrupt",
    "address already in use", "eaddrinuse", "socket address", "套接字地址",
    "out of resource", "no such ",  # ("resources" above already lets "too many resources", "OutOfResources" in)
    "other process", "tactic", "enomem", "asynchronously reported", "cuda_launch_blocking", "mmap",
    "container limit", "pod limit", "cgroup limit", "cublas", "placement", "failed to decode",
})

# -- phase markers -------------------------------------------------------------------------------
# (in .phase: LOAD, RUN, LOADED and phase_of_line, the words that tell start-up from a run; imported above)



def severity_of_line(low: str) -> str | None:
    """"warning", "error" or None for one lower-cased line, by the program's own marker: a warning marker
    (warning:, [W], W1125, level=WARN, UserWarning:) that comes before any error word makes the line a warning."""
    warning = _WARNING_MARK.search(low[:160])
    error = _ERROR_MARK.search(low)
    if warning and (error is None or warning.start() <= error.start()):
        return "warning"
    return "error" if error else None


_RESOURCE_LIMIT = re.compile(r"\brlimit_\w+|\bulimit -\w")
_ADVICE_LINE = re.compile(r"^\W*(?:try|consider|please|use|set|hint|note)\b|\bif you\b")


def names_resource_limit(low: str) -> bool:
    """Whether the line names a per-process resource limit (RLIMIT_MLOCK, `ulimit -l`): an allocation refused
    against a limit someone set, not against the memory the machine has."""
    return bool(_RESOURCE_LIMIT.search(low))


def went_on_after_warning(low: str, lines_after: int) -> bool:
    """Whether a line printed ``lines_after`` lines after a memory warning shows the program going on past it: an
    ordinary line (neither warning nor error, nor advice that belongs to the warning), or a resource limit named
    just after it (llama.cpp's "Try increasing RLIMIT_MLOCK" under its mlock warning)."""
    if lines_after <= 2 and names_resource_limit(low):
        return True
    return severity_of_line(low) is None and not _ADVICE_LINE.search(low)


def woken_by(low: str) -> str | None:
    """The entry for a runtime putting its memory back after sleeping (vLLM's wake_up, SGLang's
    resume_memory_occupation), named on a line near an out-of-memory: what another process took meanwhile."""
    if _VLLM_WAKE_UP.search(low):
        return "vllm-gpu-memory-utilization"
    if _SGLANG_RESUME.search(low):
        return "gpu-held-by-other-process"
    return None


def names_gpu(low: str) -> bool:
    """Whether the line names a GPU (CUDA, Metal, Vulkan, HIP/ROCm, VRAM, a card by its model)."""
    return bool(_GPU_NAMED.search(low))


def is_bare_cuda_error(low: str) -> bool:
    """Whether the line is a bare "CUDA error: out of memory" (ggml's CUDA_CHECK prints it so, and so does PyTorch
    after "RuntimeError: "), naming no ggml function or file of its own."""
    return bool(_GGML_CUDA_ERROR.search(low)) and not _GGML.search(low)


def engine_dead(low: str) -> bool:
    return bool(_ENGINE_DEAD.search(low))


# a cuBLAS call's status said as a number, in a log or in prose ("cublasSgemmStridedBatched … status 15",
# "返回的status错误码为15"): cublasStatus_t in cublas_api.h — 3 is CUBLAS_STATUS_ALLOC_FAILED (memory); the others
# (1 not initialized, 7 invalid value, 8 arch mismatch, 13 execution failed, 14 internal error, 15 not supported …)
# are a library, build or argument failure
_CUBLAS_STATUS = re.compile(r"cublas\w*[^\n]{0,80}?status[^\d\n]{0,12}?(\d{1,2})(?!\d)")
CUBLAS_STATUS_ALLOC_FAILED = 3


def cublas_status(low: str) -> int | None:
    """The cuBLAS status number a line states, or None."""
    m = _CUBLAS_STATUS.search(low) if "cublas" in low else None
    return int(m.group(1)) if m else None


def _memory_entry(low: str, runtime: str | None) -> str:
    """The entry for a lack-of-memory line, by the device and allocator it names (then the log's runtime, unless the
    clause that says memory ran out names another runtime: runtimes.runtime_of_oom_clause)."""
    failed = runtimes.runtime_of_oom_clause(low)
    if failed is not None and failed not in runtimes.GGML_RUNTIMES:
        runtime = failed
    if (_MMAP_FAILED.search(low) or (_C_MALLOC.search(low) and not _GGML.search(low))
            or _HOST_POOL_SHORT.search(low)) and not _GPU_NAMED.search(low):
        return "host-ram-alloc"
    if _METAL.search(low) or (_MACOS.search(low) and not _HIP.search(low)):
        return "metal-oom"
    if _PINNED.search(low):
        return "pinned-host-oom"
    if _HIP.search(low):
        return "rocm-hip-oom"
    if _TORCH.search(low):
        return "cuda-oom-load"
    if _GGML.search(low) or runtime in ("llama.cpp", "ollama", "lmstudio") or (
            _GGML_CUDA_ERROR.search(low) and runtime not in PYTHON_RUNTIMES):
        return "llamacpp-cuda-malloc"
    if _AMD_GPU.search(low):
        return "rocm-hip-oom"
    if runtime == "mlx" and "cuda" not in low:
        return "metal-oom"  # MLX allocates from Metal (unified memory) unless it runs on its CUDA backend
    return "cuda-oom-load"


def _host_ran_out(low: str) -> bool:
    """An OOM said with an automatic kill, the system (or a machine named by its RAM) said to run out, SIGKILL's 137
    on a line naming the host, or a kill whose reason is a lack of memory (no GPU named) (each regex behind a
    substring it needs: these run on every line that passes the gate)."""
    return bool((("kill" in low or "杀" in low) and "oom" in low and _OOM_THEN_KILLED.search(low))
                or (("system" in low or "系统" in low or "cpu" in low or "host" in low) and _SYSTEM_OOM.search(low))
                or ("137" in low and _HOST_KILL_137.search(low) and _HOST_NAMED.search(low) and not _STOPPED.search(low))
                or ("gb" in low and _MACHINE_OOM.search(low) and not _GPU_NAMED.search(low))
                or ("killed" in low and _KILLED_FOR_MEMORY.search(low) and not _GPU_NAMED.search(low))
                or process_at_memory_limit(low))


def _host_allocator_refused(low: str) -> bool:
    """A host allocator's refusal on the line (not thrust's bad_alloc that carries a device's error)."""
    return bool((_HOST_ALLOC.search(low) and not ("bad_alloc" in low and _DEVICE_BAD_ALLOC.search(low)))
                or ("allocation" in low and _HOST_ALLOCATION_WORDS.search(low))
                or (any(w in low for w in _HOST_RUNTIME_WORDS) and _HOST_RUNTIME_REFUSAL.search(low)))


def _no_lack_of_memory_named(low: str, runtime: str | None) -> str | None:
    """For a line that states no lack of memory: the entry its other words name (a cuBLAS status other than
    ALLOC_FAILED, a configuration, a known reason that is not memory, a failed assertion), or None."""
    status = cublas_status(low)
    if status is not None and status != CUBLAS_STATUS_ALLOC_FAILED:
        return "notmem-other-error"
    if _CONFIG.search(low):
        return "notmem-config"
    reason = not_memory_reason(low)
    if reason and not (reason == "notmem-runner-exit-status" and EXIT_IS_KILL.search(low)):
        return reason
    if _BARE_POINTER_ASSERT.search(low):
        return "llamacpp-weights-alloc"
    if _ASSERTION.search(low) and _NULL_BUFFER.search(low):
        return _memory_entry(low, runtime) if _GPU_NAMED.search(low) else "host-ram-null-buffer"
    if _ASSERTION.search(low) and not _ALLOC_FAIL.search(low):
        return "notmem-other-error"
    return None


def _oom_said(low: str) -> bool:
    """The line says a device ran out of memory, in one of the ways the runtimes say it."""
    return bool(_OOM.search(low)) or ("malloc" in low and bool(_ALLOCATOR_CALL_FAILED.search(low))) or (
        ("vram" in low or "gpu memory" in low) and bool(_NOT_LOADED_IN_VRAM.search(low))) or (
        "2" in low and bool(_CUDA_CODE_2.search(low)) and bool(_ALLOCATING_CALL.search(low))) or (
        ("out-of" in low or "overflow" in low) and bool(prose.DEVICE_OOM_SAID.search(low))) or (
        " full" in low and prose.device_memory_said_full(low))


def line_entry(low: str, runtime: str | None = None) -> str | None:
    """The knowledge-base entry one lower-cased line points to by its signals, or None.

    ``runtime`` is the runtime the log names so far (it decides only between allocators that the line itself
    does not name)."""
    oom = _oom_said(low)
    if (veto := line_veto(low)) is not None:  # the line's figure or memory space rules its words out (LINE_VETO)
        return veto
    if (said := llamacpp_common.allocation_status(low)) is not None:  # llama.cpp's own status or loader line
        return said
    if "%" in low and _BELOW_SHARE.search(low) and (runtime in ("vllm", "sglang") or _SHARE_OWNER.search(low)):
        return "sglang-mem-fraction-static" if runtime == "sglang" else "vllm-gpu-memory-utilization"
    if not oom and "error" in low and _MEMORY_ERROR_SAID.search(low) and not _MEMORY_FAULT.search(low):
        if _GPU_NAMED.search(low):
            return _memory_entry(low, runtime)
        # "Memory Error" in words names no memory: the host's, unless another line says which (prose.py)
        return "host-ram-said-short" if prose.memory_error_in_words(low) else "host-ram-alloc"
    if _KILL_KERNEL.search(low) or _host_ran_out(low) or cgroup_at_limit(low):
        return "linux-oom-killer"
    if _KILL_OS.search(low) or ("killed by" in low and prose.killed_by_os(low)):
        return "os-killed-for-memory"
    if _host_allocator_refused(low):
        return "host-ram-alloc"
    if _REFUSAL.search(low) or (("placement" in low or "cycles" in low) and _PLACEMENT_REFUSAL.search(low)):
        return "lmstudio-guardrail" if runtime == "lmstudio" else "ollama-system-memory"
    if _FIT_REFUSAL.search(low) or ("exceed" in low and exceeds_memory_budget(low)):  # a budget below the model
        return {"lmstudio": "lmstudio-guardrail", "ollama": "ollama-system-memory"}.get(runtime or "",
                                                                                       "runtime-memory-refusal")
    if _RETRACTION.search(low):
        return "sglang-retraction"
    if MLOCK.search(low):
        return "notmem-survived-warning"  # whatever its words ("not enough memory to mlock"): the load goes on
    if _KERNEL_LIMIT.search(low):
        return "notmem-kernel-resource-limit"
    if _TACTIC_SKIPPED.search(low) and not _KILL_SIGNAL.search(low):
        return "notmem-survived-warning"
    if ((_OTHER_PROCESS.search(low) or (any(w in low for w in prose.USED_UP_WORDS) and prose.GPU_USED_UP.search(low)))
            and _HELD_WHAT.search(low)
            and not _NOT_MEMORY_HELD.search(low)):
        return "gpu-held-by-other-process"
    if not oom and _CAPACITY_CHECK.search(low) and _CHECK_FAILED.search(low):
        oom = True
    if _POOL_PHASE_OOM.search(low):
        return "sglang-kv-pool-full"
    if _OFFLOAD.search(low):
        return "accelerate-dispatched-cpu-disk"
    if not oom and (reason := _no_lack_of_memory_named(low, runtime)) is not None:
        return reason
    if _KILL_SIGNAL.search(low):
        return "notmem-stopped" if _STOPPED.search(low) and not _MEMORY_WORDS.search(low.replace("killed", "")) \
            else "process-killed"
    if not oom and needs_more_than_has(low):
        oom = True
    if oom and _NAMED_POOL.search(low):
        return "sglang-kv-pool-full"
    if (oom and _KV_BUDGET.search(low)) or _KV_NEGATIVE.search(low) or (
            runtime == "sglang" and _KV_BUDGET.search(low)):
        return "sglang-mem-fraction-static" if runtime == "sglang" else "vllm-no-kv-blocks"
    if (oom or _ALLOC_FAIL.search(low)) and _FALLS_BACK.search(low):
        return "notmem-survived-warning"
    if oom or _ALLOC_FAIL.search(low):
        if "failed to create" in low and not oom:
            return "llamacpp-context-failed"
        if _VLLM_WAKE_UP.search(low):
            return "vllm-gpu-memory-utilization"
        if _SGLANG_RESUME.search(low):
            return "gpu-held-by-other-process"
        return _memory_entry(low, runtime)
    if _VLLM_KV_SIZING.search(low):
        return "vllm-no-kv-blocks"
    if "command buffer" in low and _METAL.search(low) and re.search(r"command buffer \d+ failed with status 5", low):
        return "metal-oom"  # MTLCommandBufferStatusError; llama.cpp logs it when the GPU ran out (PR #6987)
    if _ENGINE_DEAD.search(low):
        return "vllm-engine-dead"
    if (any(w in low for w in _TERMINAL_WORDS) and _TERMINAL_ERROR.search(low)
            and not _MEMORY_WORDS.search(low)):
        return "notmem-other-error"
    return None

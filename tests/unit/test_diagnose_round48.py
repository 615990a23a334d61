"""Round 48's misses (session 15, diagnose49), tuned on once round 50 was collected and round 48 joined tuning.

- ggml's Vulkan backend refusing one buffer above the driver's per-allocation cap is not the device out of memory:
  ggml-vulkan.cpp ggml_vk_create_buffer throws vk::OutOfDeviceMemoryError("Requested buffer size exceeds device
  memory allocation limit") when ``size > device->max_memory_allocation_size`` (maxMemoryAllocationSize, or
  Maintenance4's maxBufferSize: "device buffer size limit" since llama.cpp PR #16354), before the driver is asked and
  whatever the device has free. "ErrorOutOfDeviceMemory" is only the exception's type. The Vulkan maintainer says so
  in llama.cpp#15009 (a 4.43 GiB compute buffer on a 128 GB Strix Halo). The answer is notmem-vulkan-allocation-cap
  (not_memory), and its fixes stay the cap's own (device_fixes.vulkan_cap_fixes; test_diagnose_review14.py).
- vllm-backport#94 (a ~245k-token prefill read as fragmentation) stays a miss: its pasted text has no phase word and
  the reporter's analysis is only in the thread (docs/diagnosis.md). Since session 16 (fragrule) its figures no
  longer meet the fragmentation rule (PyTorch's "reserved >> allocated"), so it reads as the no-evidence load.

Each test quotes the public paste (measurements/public_errors/round48.jsonl, URL beside it); the contrasts are the
neighbouring messages that must keep their answer.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

# https://github.com/ggml-org/llama.cpp/issues/15009 (Qwen3-30B-A3B Q8 at 70k context, llama.cpp Vulkan, Strix Halo)
LLAMACPP_15009 = (
    "llama_kv_cache_unified:    Vulkan0 KV buffer size =  6564.00 MiB\n"
    "llama_kv_cache_unified: size = 6564.00 MiB ( 70016 cells,  48 layers,  1/ 1 seqs), K (f16): 3282.00 MiB, V (f16):"
    " 3282.00 MiB\n"
    "ggml_vulkan: Device memory allocation of size 4757131264 failed.\n"
    "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory\n"
    "ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 4757131264\n"
    "graph_reserve: failed to allocate compute buffers\n"
    "llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers\n")
# https://github.com/ggml-org/llama.cpp/issues/18160 (an 8.15 GiB compute buffer on a Renoir iGPU; PR #16354's wording)
LLAMACPP_18160 = (
    "ggml_vulkan: Requested buffer size exceeds device buffer size limit: ErrorOutOfDeviceMemory\n"
    "ggml_gallocr_reserve_n_impl: failed to allocate Vulkan0 buffer of size 8753520640\n"
    "graph_reserve: failed to allocate compute buffers\n"
    "llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers\n")


def test_vulkan_cap_on_one_buffer_is_not_the_device_out_of_memory():
    d = diagnose_text(LLAMACPP_15009)
    assert d.category == "not_memory" and d.entry is not None and d.entry.id == "notmem-vulkan-allocation-cap"
    # 4757131264 B / 2**30 = 4.43 GiB, above a 4 GiB (4294967296 B) cap and far below the 128 GB the APU shares
    assert 4294967296 < 4757131264 < 128e9
    doc = with_computed_fixes(d)
    # the cap's own fixes, with the log's size: 4757131264 B = 4.43 GiB; the compute buffer's knob, -ub 512 halved
    assert "per-allocation limit" in doc["fixes"][0]["title"] and "4.43 GiB" in doc["fixes"][0]["title"]
    assert any("-ub 256" in f["command"] for f in doc["fixes"])


def test_the_later_buffer_size_wording_is_the_same_cap():
    d = diagnose_text(LLAMACPP_18160)
    assert d.category == "not_memory"
    doc = with_computed_fixes(d)
    assert "maxBufferSize" in doc["fixes"][0]["effect"] and "8.15 GiB" in doc["fixes"][0]["title"]  # 8753520640 B


def test_contrast_the_driver_refusing_the_allocation_stays_memory():
    # the same allocation refused by vkAllocateMemory itself (no cap line): the device's memory
    text = LLAMACPP_15009.replace(
        "Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory",
        "vk::Device::allocateMemory: ErrorOutOfDeviceMemory")
    assert diagnose_text(text).category == "llamacpp_alloc_fail"


def test_contrast_the_pinned_host_buffer_warning_is_not_the_cap():
    # ggml survives it (falls back to plain host memory), so the compute buffer's failure below is the device's
    text = ("ggml_vulkan: Failed to allocate pinned memory (Requested buffer size exceeds device buffer size limit: "
            "ErrorOutOfDeviceMemory)\n" + LLAMACPP_15009.split("ggml_vulkan: Device memory", 1)[0]
            + "ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 4757131264\n"
            "llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers\n")
    assert diagnose_text(text).category == "llamacpp_alloc_fail"


# review15d: the cap line must not turn a real shortage into "not memory"
VK_38_GIB_ON_8 = (
    "ggml_vulkan: 0 = AMD Radeon RX 6600 (RADV NAVI23) (radv) | uma: 0 | fp16: 1 | warp size: 64\n"
    "llama_model_load_from_file_impl: using device Vulkan0 (AMD Radeon RX 6600 (RADV NAVI23)) - 8176 MiB free\n"
    "load_tensors: offloaded 81/81 layers to GPU\n"
    "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory\n"
    "alloc_tensor_range: failed to allocate Vulkan0 buffer of size 40802189312\n"
    "llama_model_load: error loading model: unable to allocate Vulkan0 buffer\n")
VK_THEN_CUDA = (
    "$ ./llama-server -m model.gguf -ngl 99 --device Vulkan0\n"
    "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory\n"
    "alloc_tensor_range: failed to allocate Vulkan0 buffer of size 4563402752\n"
    "-- tried the CUDA build instead --\n"
    "$ ./llama-server -m model.gguf -ngl 99\n"
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 30720.00 MiB on device 0: cudaMalloc failed: out of memory\n"
    "alloc_tensor_range: failed to allocate CUDA0 buffer of size 32212254720\n"
    "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n")


def test_contrast_a_buffer_larger_than_the_free_memory_stays_memory():
    # 40,802,189,312 B (38 GiB) against the 8,176 MiB (8.0 GiB) the log says is free: short of memory whatever the
    # cap check threw first
    assert 40802189312 > 8176 * 2**20
    assert diagnose_text(VK_38_GIB_ON_8).category == "llamacpp_alloc_fail"


def test_contrast_another_backends_failed_buffer_in_the_same_paste_stays_memory():
    # the paste's last failure is a CUDA build's cudaMalloc out of memory on CUDA0, not the Vulkan cap
    assert diagnose_text(VK_THEN_CUDA).category == "llamacpp_alloc_fail"

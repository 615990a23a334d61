"""Round 50's misses (session 16, diagnose50), tuned on once round 52 was collected and round 50 joined tuning.

- ggml-backend.cpp's preconditions on a tensor read or written (ggml_backend_tensor_set / _get and their async forms:
  GGML_ASSERT(buf != NULL && "tensor buffer not set"), GGML_ASSERT(tensor->data != NULL && "tensor not allocated"))
  are not a host allocation returning NULL: the caller used a tensor no allocator placed. llama.cpp PR #25584 fixes
  one (a view's init skipped after a buffer split at the backend's max_size). notmem-other-error, titled with the
  assert; a buffer that did fail to allocate says so in ggml's own line, which still wins.
- SGLang's hierarchical KV cache refuses its host pool in its own words ("Not enough host memory available.
  Requesting 40.00 GB but only have 44.87 GB free", mem_cache/memory_pool_host.py, psutil.virtual_memory): the host's
  RAM, host-ram-alloc (oom_killer, the corpus's category for host RAM refused), not the GPU's memory.

Each test quotes the public paste (measurements/public_errors/round50.jsonl, URL beside it); the contrasts are the
neighbouring messages that must keep their answer.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

# https://github.com/ggml-org/llama.cpp/pull/25584 (a tester's comment: Vulkan on a Strix Halo, 1M context)
LLAMACPP_PR_25584 = (
    "[60225] 2.51.532.931 I slot print_timing: id  3 | task 0 | prompt processing, n_tokens =  34163, progress = 0.99,"
    " t = 156.67 s / 218.05 tokens per second\n"
    '[60225] /work/llama.cpp/ggml/src/ggml-backend.cpp:348: GGML_ASSERT(tensor->data != NULL && "tensor not '
    'allocated") failed\n'
    "[60225] /llama/libggml-base.so.0(+0x1c20b)[0x7ba75897420b]\n"
    "[60225] /llama/libggml-base.so.0(ggml_print_backtrace+0x21c)[0x7ba75897468c]\n"
    "[60225] /llama/libggml-base.so.0(ggml_abort+0x15b)[0x7ba75897486b]\n")
# https://github.com/sgl-project/sglang/pull/8102 (the PR's description: the start-up message with HiCache enabled)
SGLANG_PR_8102 = ("ValueError: Not enough host memory available. Requesting 40.00 GB but only have 44.87 GB free. "
                  "Please reduce the size of the hierarchical cache.\n")


def test_ggml_backends_tensor_not_allocated_assert_is_not_memory():
    d = diagnose_text(LLAMACPP_PR_25584)
    assert d.category == "not_memory" and d.entry is not None and d.entry.id == "notmem-other-error"
    assert "tensor not allocated" in d.title


def test_the_buffer_not_set_precondition_is_the_same():
    text = LLAMACPP_PR_25584.replace('tensor->data != NULL && "tensor not allocated"',
                                     'buf != NULL && "tensor buffer not set"')
    assert diagnose_text(text).category == "not_memory"


def test_contrast_a_bare_null_pointer_assert_stays_a_failed_allocation():
    # a pointer asserted right after a malloc, with no "tensor not allocated" message: the allocation returned nothing
    text = LLAMACPP_PR_25584.replace('GGML_ASSERT(tensor->data != NULL && "tensor not allocated")',
                                     "GGML_ASSERT(data != NULL)")
    assert diagnose_text(text).category == "oom_killer"


def test_contrast_a_buffer_that_failed_to_allocate_before_the_assert_is_memory():
    # ggml's allocator saying the buffer failed, then the tensor it should have held asserted: the allocation failed
    text = ("ggml_backend_vk_buffer_type_alloc_buffer: failed to allocate Vulkan0 buffer of size 4294967296\n"
            + LLAMACPP_PR_25584)
    assert diagnose_text(text).category == "llamacpp_alloc_fail"


def test_sglangs_host_pool_refusal_is_the_hosts_ram():
    d = diagnose_text(SGLANG_PR_8102)
    assert d.category == "oom_killer" and d.entry is not None and d.entry.id == "host-ram-alloc"
    # 40.00 GB asked against 44.87 GB free: SGLang keeps 10 GiB (10.74 GB) of the host's RAM in reserve, so
    # 44.87 - 10.74 = 34.13 GB < 40.00 GB
    assert 44.87 - 10 * 1.073741824 < 40.00


def test_contrast_not_enough_gpu_memory_stays_the_cards():
    text = SGLANG_PR_8102.replace("host memory", "GPU memory")
    assert diagnose_text(text).category != "oom_killer"


def test_contrast_sycls_out_of_host_memory_code_stays_the_devices():
    # Level Zero reports device allocations that do not fit as out of host memory too (llamacpp-cuda-malloc's note)
    text = "Native API failed. Native API returns: -6 (PI_ERROR_OUT_OF_HOST_MEMORY) -6 (PI_ERROR_OUT_OF_HOST_MEMORY)\n"
    assert diagnose_text(text).category == "llamacpp_alloc_fail"

"""Round 24's misses, fixed by general signals (session 10, diagnose20): each rule with a paste a user would write and
the look-alikes pasted beside it. Round 24 is tuning data since round 26 was collected."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text


def test_out_of_memory_after_many_calls_to_a_served_model_is_the_run():
    # the user's own words: the model loaded, served for a while, then ran out
    pasted = ("Initially, the GPU memory usage starts at just a few gigabytes. However, after running hundreds of "
              "calls, the memory consumption gradually increases to over 40GB, eventually resulting in an OOM "
              "(Out of Memory) error.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"
    chinese = "启动 qwen-7b 模型时占用显存 13G，但是调用服务后，就显存溢出了 CUDA out of memory"
    assert diagnose_text(chinese).category == "cuda_oom_long_context"


def test_out_of_memory_while_starting_the_server_is_still_the_load():
    # look-alike: no call was made; the server ran out while loading the weights
    pasted = ("Loading checkpoint shards: 40%|████      | 2/5\n"
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity "
              "of 23.65 GiB of which 1.10 GiB is free.")
    assert diagnose_text(pasted).category == "cuda_oom_load"
    # "after 3 retries" counts attempts, not calls served
    assert diagnose_text("after 3 retries: CUDA out of memory while loading the model").category == "cuda_oom_load"


def test_a_prefill_chunk_setting_echoed_at_start_up_is_not_the_run():
    # WebLLM prints its settings, then the device refuses the allocation for the KV cache: the load
    pasted = ("llm_chat.ts:150 Using prefillChunkSize:  1024\n"
              "llm_chat.ts:180 Using maxWindowLength:  4096\n"
              "llm_chat.ts:202 Using Paged KVCache\n"
              "vkAllocateMemory failed with VK_ERROR_OUT_OF_DEVICE_MEMORY")
    assert diagnose_text(pasted).category == "cuda_oom_phase_unstated"


def test_out_of_device_memory_during_prefill_is_still_the_run():
    # look-alike: the same refusal while a prompt's prefill runs
    pasted = ("INFO: prefill 2048 tokens of request 7\n"
              "vkAllocateMemory failed with VK_ERROR_OUT_OF_DEVICE_MEMORY")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_ggml_asserting_a_bare_pointer_after_allocating_it_is_ggml_s_allocation_failure():
    # ctransformers' bundled llama.cpp asserts the buffer it just allocated ("GGML_ASSERT(data)")
    pasted = (r"Unclear error: GGML_ASSERT: D:\a\ctransformers\ctransformers\models\ggml/llama.cpp:453: data" "\n"
              "I get this error sometimes when loading a model.")
    assert diagnose_text(pasted).category == "llamacpp_alloc_fail"
    assert diagnose_text("GGML_ASSERT(data) failed").category == "llamacpp_alloc_fail"


def test_ggml_asserting_a_size_or_a_shape_is_still_a_bug():
    # look-alikes: an assertion about a size or a shape, or a bare "false", is not an allocation that returned nothing
    for line in ("GGML_ASSERT: ggml.c:4411: ggml_nelements(a) == ne0*ne1",
                 "GGML_ASSERT: ggml.c:9349: data_size",
                 "GGML_ASSERT: /src/ggml.c:123: false"):
        assert diagnose_text(line).category == "not_memory", line


def test_a_title_saying_cuda_malloc_fails_over_a_log_with_no_failure_line_is_the_allocation():
    # Ollama's issue title says what failed; the log pasted under it stops before the failure
    pasted = ("CUDA malloc fails on newly supported models in 0.1.32 (dual-GPU setup with 72GB VRAM and 128GB RAM)\n"
              "llm_load_tensors: offloading 39 repeating layers to GPU\n"
              "llm_load_tensors: offloaded 39/41 layers to GPU\n"
              "llm_load_tensors:        CPU buffer size = 70752.49 MiB\n"
              "llm_load_tensors:      CUDA0 buffer size = 45460.59 MiB")
    assert diagnose_text(pasted).category == "llamacpp_alloc_fail"


def test_asking_whether_cuda_malloc_fails_is_not_a_report_that_it_did():
    # look-alike: a question, with no failure in the log
    assert diagnose_text("Does CUDA malloc fail when VRAM is full?").category == "not_memory"

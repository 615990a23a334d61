"""Round 44's misses (session 15, diagnose45), tuned on once round 46 was collected and round 44 joined tuning.

Four signals, each read off what the runtime's own message means rather than its words:

- vLLM's "Error in memory profiling. Initial free memory A, current free memory B" is an assertion that free memory
  FELL while vLLM profiled (V1 gpu_worker.determine_available_memory asserts init free > free after the profile; the
  older worker asserted used-before < used-after): it fires only when free memory stayed or grew — not a shortage.
- a KV-cache budget printed below zero ("Available KV cache memory: -0.87 GiB") is what vLLM's
  check_enough_kv_cache_memory refuses with "No available memory for the cache blocks" (available_memory <= 0).
- a pinned host allocation refused with a CUDA status other than "out of memory" (status 803, "system has unsupported
  display driver / cuda driver combination") is the driver's refusal, as "invalid argument" already was.
- llama.cpp's CLIP loader refusing a projector type ("don't support projector with: …") is the file's kind.

Each test quotes the public paste it comes from (measurements/public_errors/round44.jsonl, URL beside it); the
contrasts are the neighbouring messages that must keep their answer.
"""

from __future__ import annotations

import re

import pytest

from runlocal.diagnose import diagnose_text

# https://github.com/modelscope/ms-swift/issues/3241 (GRPO on Ascend 910B starting vLLM inside the trainer)
SWIFT_3241 = ("[rank0]: AssertionError: Error in memory profiling. Initial free memory 58247258112, current free "
              "memory 58247516160. This happens when the NPU memory was not properly cleaned up before initializing "
              "the vLLM instance.\n")
# https://github.com/vllm-project/vllm/issues/56830 (a co-tenant releases 8 GiB during vLLM 0.29's start-up profile)
VLLM_56830 = ("AssertionError: Error in memory profiling. Initial free memory 82.94 GiB,\n"
              "current free memory 90.17 GiB. This happens when other processes sharing the\n"
              "same container release GPU memory while vLLM is profiling during initialization.\n"
              "To fix this, ensure consistent GPU memory allocation or isolate vLLM in its own\n"
              "container.\n")
# https://github.com/vllm-project/vllm-ascend/issues/9372 (Qwen3-14B on a 32 GB virtual NPU)
ASCEND_9372 = ("Loading model weights took 27.5376 GB\n"
               "Available KV cache memory: -0.87 GiB\n")
# https://github.com/ollama/ollama/issues/5517 (4 x Tesla M40, driver 535.161.08)
OLLAMA_5517 = ("ggml_cuda_host_malloc: failed to allocate 2560.00 MiB of pinned memory: system has unsupported display "
               "driver / cuda driver combination\n"
               "llama_kv_cache_init:        CPU KV buffer size =  2560.00 MiB\n"
               "llama_new_context_with_model: KV self size  = 2560.00 MiB, K (f16): 1280.00 MiB, V (f16): 1280.00 MiB\n"
               "ggml_cuda_host_malloc: failed to allocate 2.45 MiB of pinned memory: system has unsupported display "
               "driver / cuda driver combination\n")
# https://github.com/ollama/ollama/issues/4925 (the title, quoting llama.cpp's clip loader)
OLLAMA_4925 = "clip_model_load: don't support projector with: currently\n"


def _figures(text: str) -> tuple[float, float]:
    initial, current = re.findall(r"(?:initial|current) free memory ([\d.]+)", text.replace("\n", " "), re.I)
    return float(initial), float(current)


@pytest.mark.parametrize("text", [SWIFT_3241, VLLM_56830])
def test_vllms_profiling_assertion_is_free_memory_that_grew_not_a_shortage(text):
    initial, current = _figures(text)
    # by hand: 58,247,516,160 - 58,247,258,112 = 258,048 bytes more free; 90.17 - 82.94 = 7.23 GiB more free
    assert current > initial
    d = diagnose_text(text)
    assert d.category == "not_memory"
    assert d.entry.id == "notmem-vllm-profiling-free-grew"


def test_the_older_used_memory_wording_of_the_assertion_is_not_memory_either():
    # vLLM's older worker: assert baseline used < used after profiling ("Initial used memory …, currently used memory …")
    text = ("AssertionError: Error in memory profiling. Initial used memory 5000000000, currently used memory "
            "4800000000. This happens when the GPU memory was not properly cleaned up before initializing the vLLM "
            "instance.\n")
    assert diagnose_text(text).category == "not_memory"


@pytest.mark.parametrize("text, category", [
    # vLLM V1's start-up check when another process holds the card (gpu_worker.init_device): a real shortage
    ("ValueError: Free memory on device (10.5/23.6 GiB) on startup is less than desired GPU memory utilization (0.9, "
     "21.24 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n", "vllm_gpu_util"),
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
     "initializing the engine.\n", "vllm_no_kv_blocks"),
])
def test_vllms_real_start_up_shortages_keep_their_answers(text, category):
    assert diagnose_text(text).category == category


def test_a_negative_kv_cache_budget_is_vllms_no_room_for_cache_blocks():
    # by hand: 27.54 GB of weights on a 32 GB NPU leaves about 4.5 GB before activations and the runtime's share;
    # the printed budget is below zero, which check_enough_kv_cache_memory refuses (available_memory <= 0)
    assert float(re.search(r"memory: (-?[\d.]+) GiB", ASCEND_9372).group(1)) < 0
    assert diagnose_text(ASCEND_9372).category == "vllm_no_kv_blocks"


def test_a_positive_kv_cache_budget_alone_is_no_failure():
    # vLLM logs its budget on every start (vllm-57475's paste shows "Available KV cache memory: 2.97 GiB" before
    # its real error): alone it names nothing
    text = "INFO 05-01 10:00:00 gpu_worker.py:220] Available KV cache memory: 2.97 GiB\n"
    assert diagnose_text(text).category == "unknown"


def test_pinned_memory_refused_for_a_driver_mismatch_is_not_memory():
    # a 2.45 MiB pinned buffer refused on a machine with 4 x 24 GB cards: no size could be short
    assert diagnose_text(OLLAMA_5517).category == "not_memory"


@pytest.mark.parametrize("status, category", [
    ("out of memory", "llamacpp_alloc_fail"),  # cudaErrorMemoryAllocation: the memory was short
    ("invalid argument", "not_memory"),          # the OS / WSL refusing to pin (round 25's rule, unchanged)
])
def test_pinned_memory_with_other_statuses_keeps_its_answer(status, category):
    text = f"ggml_cuda_host_malloc: failed to allocate 2560.00 MiB of pinned memory: {status}\n"
    assert diagnose_text(text).category == category


def test_an_unsupported_projector_is_the_files_kind_not_memory():
    assert diagnose_text(OLLAMA_4925).category == "not_memory"


def test_a_projector_that_ran_out_of_memory_is_still_memory():
    # the same clip loader, its weights refused by cudaMalloc: a lack of VRAM
    text = ("clip_model_load: model size:     595.50 MB\n"
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 595.50 MiB on device 0: cudaMalloc failed: out of "
            "memory\n")
    assert diagnose_text(text).category == "llamacpp_alloc_fail"


# https://github.com/QwenLM/Qwen3-VL/issues/1044 (vLLM serving Qwen2.5-VL-32B at TP 4 on four RTX 4090s): the reporter's
# sentence, "ran ten images in a row (not concurrently) and got", then PyTorch's out-of-memory
QWEN_VL_1044_SAID = "连续执行10张图片（不是并发）就报\n"
TORCH_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 450.00 MiB. GPU 0 has a total capacity of "
             "23.64 GiB of which 337.69 MiB is free. Process 16557 has 23.30 GiB memory in use. Of the allocated memory "
             "20.08 GiB is allocated by PyTorch, with 57.88 MiB allocated in private pools (e.g., CUDA Graphs), and "
             "600.17 MiB is reserved by PyTorch but unallocated.\n")


def test_inputs_served_one_after_another_before_the_oom_make_it_the_run():
    assert diagnose_text(QWEN_VL_1044_SAID + TORCH_OOM).category == "cuda_oom_long_context"
    assert diagnose_text("The server died after 5 requests in a row:\n" + TORCH_OOM).category == "cuda_oom_long_context"


def test_the_same_oom_without_the_count_keeps_its_answer():
    # nothing says the model had loaded: the corpus's PyTorch OOM with no phase word stays the load
    assert diagnose_text(TORCH_OOM).category == "cuda_oom_phase_unstated"

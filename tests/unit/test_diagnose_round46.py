"""Round 46's misses (session 15, diagnose47), tuned on once round 48 was collected and round 46 joined tuning.

Each signal is read off what the runtime's own message means rather than its words:

- an out-of-memory line whose own figures show the card had room (free at least half the card and a hundred times
  the block asked), under an allocator's earlier CUDA status that is not out of memory (vLLM's cumem allocator
  "CUDA Error: invalid argument at …/cumem_allocator.cpp"), is that allocator's failure, not a shortage
  (diagnose/allocator_status.py).
- a runtime's own memory budget refusing a model larger than it ("Model 'X' (9.11GB) exceeds max-model-memory
  (7.20GB)", oMLX) is a memory refusal: the budget is memory the runtime is allowed, and the model does not fit it.

Each test quotes the public paste it comes from (measurements/public_errors/round46.jsonl, URL beside it); the
contrasts are the neighbouring messages that must keep their answer.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text

GiB = 2**30

# https://github.com/modelscope/ms-swift/issues/9613 (GRPO with vLLM colocated in sleep mode, an 80 GB card)
_TORCH_OOM_9613 = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 7 has a total capacity "
                   "of 79.11 GiB of which 66.43 GiB is free. Including non-PyTorch memory, this process has 0 bytes "
                   "memory in use. Of the allocated memory 8.51 GiB is allocated by PyTorch, and 856.16 MiB is "
                   "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                   "PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
                   "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n")
MSSWIFT_9613 = ("CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:119\n"
                "    return func(*args, **kwargs)\n"
                "           ^^^^^^^^^^^^^^^^^^^^^\n" + _TORCH_OOM_9613)
# https://github.com/pytorch/pytorch/issues/175431 (rocm.jsonl: a HIP OOM with 203 GiB free, labelled memory)
PYTORCH_175431 = ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 MiB. GPU 7 has a total capacity of "
                  "287.98 GiB of which 203.49 GiB is free. Of the allocated memory 68.63 GiB is allocated by PyTorch, "
                  "and 14.93 GiB is reserved by PyTorch but unallocated.\n")


def test_an_allocators_invalid_argument_beside_a_card_with_room_is_not_memory():
    # the OOM line's own figures: 66.43 GiB free of 79.11 GiB (84 %) for a 20 MiB block (3,401 times it)
    assert 66.43 / 79.11 > 0.5 and 66.43 * 1024 / 20 > 100
    d = diagnose_text(MSSWIFT_9613)
    assert d.category == "not_memory"
    assert d.entry is not None and d.entry.id == "notmem-allocator-status-with-room"


def test_the_same_oom_line_alone_stays_memory():
    # without the allocator's status line nothing says which call failed: the figures alone decide nothing
    assert diagnose_text(_TORCH_OOM_9613).category != "not_memory"


def test_a_hip_oom_with_room_and_no_allocator_status_keeps_its_memory_answer():
    assert diagnose_text(PYTORCH_175431).category == "rocm_oom"


def test_the_allocator_status_beside_a_full_card_stays_memory():
    # the same status line, then an OOM whose figures show the card full (1.2 GiB free of 79.11 for 2 GiB)
    text = ("CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:119\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 7 has a total capacity of "
            "79.11 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.90 GiB memory in "
            "use. Of the allocated memory 76.51 GiB is allocated by PyTorch, and 256.16 MiB is reserved by PyTorch "
            "but unallocated.\n")
    assert diagnose_text(text).category != "not_memory"


def test_an_allocators_out_of_memory_status_is_no_other_status():
    text = "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:119\n" + _TORCH_OOM_9613
    assert diagnose_text(text).category != "not_memory"


# https://github.com/jundot/omlx/issues/199 (oMLX's server refusing Qwen3.5-4B under its max-model-memory setting)
OMLX_199 = 'Error: {"detail":"Model \'Qwen3.5-4B\' (9.11GB) exceeds max-model-memory (7.20GB)"}\n'


def test_a_runtimes_memory_budget_below_the_model_is_a_memory_refusal():
    # the line's own figures: the model 9.11 GB against a budget of 7.20 GB
    assert 9.11 > 7.20
    d = diagnose_text(OMLX_199)
    assert d.category != "not_memory" and d.entry is not None
    assert d.entry.id == "runtime-memory-refusal"  # the runtime's own sizing: nothing was allocated


def test_the_budget_refusal_under_lm_studio_is_its_guardrail():
    # the same refusal by a runtime that has its own entry for its sizing (signals._FIT_REFUSAL's table)
    assert diagnose_text(OMLX_199, runtime="lmstudio").entry.id == "lmstudio-guardrail"


def test_a_model_below_the_budget_is_no_refusal_by_the_figures():
    text = 'Error: {"detail":"Model \'Qwen3.5-0.8B\' (1.61GB) exceeds max-model-memory (7.20GB)"}\n'
    assert diagnose_text(text).category == "not_memory"


def test_a_buffer_over_the_devices_allocation_limit_keeps_its_answer():
    # Vulkan's per-allocation cap names no budget's size: not read as this refusal
    line = "vk::Device::allocateMemory: ErrorOutOfDeviceMemory Requested buffer size exceeds device memory allocation limit\n"
    assert diagnose_text(line).entry.id != "runtime-memory-refusal"


# https://github.com/xorbitsai/inference/issues/3837 (a reranker served by Xinference, long texts)
XINFERENCE_3837 = ("2025-07-23 17:52:16,704 xinference.core.model 9021 ERROR    Model actor is out of memory, model id: "
                   "v2m3-0, error: CUDA out of memory. Tried to allocate 1.76 GiB. GPU 0 has a total capacity of 15.70 "
                   "GiB of which 1.14 GiB is free. Process 1925473 has 7.72 GiB memory in use. Process 1936697 has 6.82 "
                   "GiB memory in use. Of the allocated memory 6.32 GiB is allocated by PyTorch, and 1.13 GiB is reserved "
                   "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n")
# https://github.com/TavernAI/TavernAI-v1/issues/15 (TavernAI relaying KoboldAI's API error object)
TAVERNAI_15 = ("    msg: 'KoboldAI ran out of memory: CUDA out of memory. Tried to allocate 26.00 MiB (GPU 0; 14.76 GiB "
               "total capacity; 13.65 GiB already allocated; 9.88 MiB free; 13.85 GiB reserved in total by PyTorch) If "
               "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
               "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF',\n"
               "    type: 'out_of_memory.gpu.cuda'\n")


def test_xinferences_model_actor_oom_is_a_request():
    # xinference/core/model.py logs "Model actor is out of memory" from the wrappers of its request calls; by the
    # figures 1.14 GiB free + 1.13 GiB unused cache = 2.27 GiB would hold the 1.76 GiB block once but not twice
    assert 1.14 + 1.13 < 2 * 1.76
    assert diagnose_text(XINFERENCE_3837).category == "cuda_oom_long_context"


def test_the_same_oom_line_without_the_actor_is_not_read_as_a_request():
    line = XINFERENCE_3837.split("error: ", 1)[1]
    assert diagnose_text(line).category != "cuda_oom_long_context"


def test_koboldais_api_oom_relayed_by_tavernai_is_a_request():
    # KoboldAI's API answers its generate endpoint's OOM with "KoboldAI ran out of memory: …" (aiserver.py)
    assert diagnose_text(TAVERNAI_15).category == "cuda_oom_long_context"



def test_koboldais_oom_line_without_its_api_wrapper_keeps_the_load():
    # the same PyTorch figures with no request said (phase.py's default for no evidence is the load)
    line = TAVERNAI_15.split("memory: ", 1)[1].split("',")[0] + "\n"
    assert diagnose_text(line).category == "cuda_oom_phase_unstated"


# https://github.com/SeanScripts/ComfyUI-PixtralLlamaMolmoVision/issues/8 (a 217-frame batch to Pixtral in ComfyUI)
COMFYUI_PIXTRAL_8 = ("Loading Pixtral model: pixtral-12b-nf4\n"
                     "Batch of torch.Size([217, 852, 480, 3]) images\n"
                     "Prompt tokens: 8\n"
                     "!!! Exception during processing !!! Allocation on device\n")
# https://github.com/ggml-org/llama.cpp/pull/14939 (llama-perplexity with the CUDA VMM pool)
LLAMACPP_14939 = ("perplexity: tokenizing the input ..\n"
                  "perplexity: tokenization took 274.506 ms\n"
                  "perplexity: calculating perplexity over 565 chunks, n_ctx=512, batch_size=2048, n_seq=4\n"
                  "CUDA error: out of memory\n"
                  "  current device: 0, in function alloc at /app/ggml/src/ggml-cuda/ggml-cuda.cu:453\n"
                  "  cuMemCreate(&handle, reserve_size, &prop, 0)\n"
                  "/app/ggml/src/ggml-cuda/ggml-cuda.cu:81: CUDA error\n")


def test_a_tokenised_prompt_after_the_load_is_the_run():
    assert diagnose_text(COMFYUI_PIXTRAL_8).category == "cuda_oom_long_context"


def test_the_same_node_without_its_prompt_line_stays_the_load():
    text = COMFYUI_PIXTRAL_8.replace("Prompt tokens: 8\n", "")
    assert diagnose_text(text).category == "cuda_oom_load"  # a parameter count named: the load's sign (diagnose21c)


def test_llama_perplexitys_pass_over_chunks_is_the_run():
    assert diagnose_text(LLAMACPP_14939).category == "cuda_oom_long_context"


def test_the_same_ggml_oom_during_the_tokenising_keeps_ggmls_answer():
    # tokenising comes before the pass; no line says the context was made
    text = LLAMACPP_14939.replace(
        "perplexity: calculating perplexity over 565 chunks, n_ctx=512, batch_size=2048, n_seq=4\n", "")
    assert diagnose_text(text).category == "llamacpp_alloc_fail"


@pytest.mark.parametrize("line", [
    "413 Request Entity Too Large: request body 12 MB exceeds the memory limit: 10 MB",
    "upload size 600 MB exceeds the cache memory limit of 512 MB",
    "tensor data 96 KB exceeds shared memory limit: 48 KB",
    "error: request body 12 MB exceeds the memory limit: 10 MB (model qwen3)",   # review15d: "model" elsewhere
])
def test_a_size_over_a_memory_limit_that_is_not_a_model_is_not_the_model_not_fitting(line):
    # review15c: the budget signal needs the thing refused to be a model (omlx#199's "Model 'X' (9.11GB) exceeds
    # max-model-memory (7.20GB)"); a request body, an upload or a kernel's shared memory over a limit is not that
    from runlocal.diagnose.sizes import exceeds_memory_budget
    assert not exceeds_memory_budget(line.lower())
    assert exceeds_memory_budget(OMLX_199.lower())

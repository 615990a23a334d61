"""Round 45's misses (session 15, diagnose46), tuned on once round 47 was collected and round 45 joined tuning.

Each signal is read off what the runtime's own message means rather than its words:

- PyTorch's ``NVML_SUCCESS == r INTERNAL ASSERT FAILED at …CUDACachingAllocator.cpp`` is raised while the caching
  allocator writes its out-of-memory message: reportProcessMemoryInfo asks NVML for the running processes to print
  "Including non-PyTorch memory, this process has …", and asserts NVML_SUCCESS (c10/cuda/CUDACachingAllocator.cpp),
  which fails on a MIG slice — the assert stands in for the OOM.
- a prompt cut or dropped for its length is a setting, not memory: Ollama's runner "truncating input prompt"
  limit=<num_ctx> (runner/llamarunner/runner.go), vLLM's scheduler "Input prompt (N tokens) is too long and exceeds
  limit of M" (vllm/core/scheduler.py, the prompt limit is max_model_len or max_num_batched_tokens).
- Ollama's "insufficient VRAM to load any model layers" is its scheduler's sizing (llm/memory.go EstimateGPULayers):
  no layer fits the free VRAM, so the model goes to system RAM.
- ggml's buffer-type allocator is known by its function's name, ggml_backend_<device>_buffer_type_alloc_buffer, also
  when a quote lost its first letter.

Each test quotes the public paste it comes from (measurements/public_errors/round45.jsonl, URL beside it); the
contrasts are the neighbouring messages that must keep their answer.
"""

from __future__ import annotations

import re

import pytest

from runlocal.diagnose import diagnose_text

# https://github.com/pytorch/pytorch/issues/112377 (Llama-2-13B moved to an A800 MIG 3g.40gb slice; the title)
PYTORCH_112377 = ('RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "/opt/conda/conda-bld/pytorch_1695392020201/'
                  'work/c10/cuda/CUDACachingAllocator.cpp":1154, please report a bug to PyTorch.\n')
# https://github.com/vllm-project/vllm/issues/13209 (vLLM 0.7.2, a 32,889-token prompt under a 2,048-token budget)
VLLM_13209 = ("INFO 02-13 07:19:11 async_llm_engine.py:211] Added request chatcmpl-59c408fd038b4931bcaa80f61817574b.\n"
              "WARNING 02-13 07:19:11 scheduler.py:949] Input prompt (32889 tokens) is too long and exceeds limit of "
              "2048\n"
              "INFO 02-13 07:19:11 async_llm_engine.py:179] Finished request chatcmpl-59c408fd038b4931bcaa80f61817574b.\n")
# https://github.com/ollama/ollama/issues/10368 (RAGFlow's embedding requests to llama3.2:3b)
OLLAMA_10368 = ('time=2025-04-22T11:21:46.411Z level=INFO source=server.go:619 msg="llama runner started in 0.25 '
                'seconds"\n'
                '[GIN] 2025/04/22 - 11:21:46 | 200 |  444.455595ms |    10.130.41.81 | POST     "/api/embeddings"\n'
                'time=2025-04-22T11:21:47.546Z level=WARN source=runner.go:131 msg="truncating input prompt" '
                'limit=2048 prompt=5065 keep=5 new=2048\n')
# https://github.com/ollama/ollama/issues/7208 (the title, quoting the scheduler's log words)
OLLAMA_7208 = "insufficient VRAM to load any model layers\n"
# https://github.com/ggml-org/llama.cpp/issues/5057 (OpenCL on a Poco X3, -ngl 23; the quote lost its leading 'g')
LLAMACPP_5057 = ('"gml_backend_opencl_buffer_type_alloc_buffer: failed to allocate 1048.51 MiB"\n\n'
                 "i was just running this on cell phone poco x3, snapdragon 732G , 6gb ram, works fine with ngl 15 but "
                 "offloading to gpu doesnt help, the fastest inference is if ngl is 0, any idea why?\n")


def test_the_nvml_assert_inside_pytorchs_oom_message_is_the_oom():
    # the thread: 13B parameters in fp32 are 13e9 x 4 B = 52 GB against a 40 GB slice; the assert hides that OOM
    assert 13e9 * 4 / 1e9 > 40
    d = diagnose_text(PYTORCH_112377)
    assert d.category == "cuda_oom_phase_unstated"


def test_the_same_assert_after_a_request_is_the_run():
    text = PYTORCH_112377 + "It happens during generation of the second request, after the model loaded.\n"
    assert diagnose_text(text).category == "cuda_oom_long_context"


@pytest.mark.parametrize("text", [
    # NVML asserts outside the caching allocator are not on the out-of-memory path
    'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../torch/csrc/cuda/Module.cpp":120, please report a '
    "bug to PyTorch.\n",
    # an assert in the caching allocator that is not NVML's
    'RuntimeError: CUDA driver error: invalid argument\nINTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp"'
    ":830\n",
])
def test_other_internal_asserts_stay_not_memory(text):
    assert diagnose_text(text).category == "not_memory"


def test_a_prompt_over_vllms_limit_is_a_setting_not_memory():
    prompt, limit = (int(x) for x in re.search(r"\((\d+) tokens\) .* limit of (\d+)", VLLM_13209).groups())
    assert prompt > limit  # 32,889 > 2,048: a count of tokens above a setting, nothing allocated
    d = diagnose_text(VLLM_13209)
    assert d.category == "not_memory" and d.entry.id == "notmem-context-full"


def test_ollama_truncating_a_prompt_to_num_ctx_is_a_setting_not_memory():
    d = diagnose_text(OLLAMA_10368)
    assert d.category == "not_memory" and d.entry.id == "notmem-context-full"


def test_a_kv_cache_oom_after_the_truncation_is_still_memory():
    # the same runner, a request whose KV buffer could not be allocated: a lack of VRAM wins over the warning
    text = OLLAMA_10368 + ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 2048.00 MiB on device 0: cudaMalloc "
                           "failed: out of memory\n")
    assert diagnose_text(text).category in {"llamacpp_alloc_fail", "cuda_oom_long_context"}


def test_ollamas_no_layer_fits_is_its_sizing_for_lack_of_vram():
    assert diagnose_text(OLLAMA_7208).category == "ollama_system_memory"


def test_ollamas_cuda_oom_keeps_its_answer():
    # a real allocation refused by CUDA, not the scheduler's sizing: stays a CUDA / ggml out-of-memory
    text = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: cudaMalloc failed: out of memory\n"
    assert diagnose_text(text).category == "llamacpp_alloc_fail"


def test_ggmls_buffer_allocator_without_its_first_letter_is_still_ggml():
    d = diagnose_text(LLAMACPP_5057)
    assert d.category == "llamacpp_alloc_fail" and d.entry.id == "llamacpp-cuda-malloc"


def test_other_failed_to_allocate_lines_keep_their_answers():
    # a PyTorch-style "failed to allocate" with no ggml function name does not become ggml's
    assert diagnose_text("RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 7.79 GiB total "
                         "capacity)\n").category == "cuda_oom_phase_unstated"


# https://github.com/noonghunna/club-3090/issues/16 (vLLM V1 serving on a 24 GB RTX 3090; the OOM, then the API server)
CLUB_3090_16 = ("(EngineCore pid=112) ERROR 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory. "
                "Tried to allocate 50.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 21.75 MiB is free. "
                "Including non-PyTorch memory, this process has 23.50 GiB memory in use. Of the allocated memory 22.88 "
                "GiB is allocated by PyTorch, with 24.00 MiB allocated in private pools (e.g., CUDA Graphs), and 275.38 "
                "MiB is reserved by PyTorch but unallocated.\n"
                "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] AsyncLLM output_handler failed.\n"
                "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] Traceback (most recent call last):\n")
# https://github.com/ollama/ollama/issues/6741 (llama3.1:70b at num_ctx 131072; the reporter's sentence)
OLLAMA_6741 = ("Not only it doesn't fit 96Gb (offloading only 10 layers out of 81), but processing actual ~128k request "
               "crashes with `CUDA error: out of memory` on 160Gb (will all layers offloaded)\n")


def test_vllms_output_handler_losing_the_engine_makes_the_oom_the_run():
    # the handler streams the outputs of a started engine; 50 MiB asked with 21.75 MiB free on a full card
    assert diagnose_text(CLUB_3090_16).category == "cuda_oom_long_context"


def test_the_same_oom_without_the_api_servers_line_stays_the_load():
    first_line = CLUB_3090_16.splitlines()[0] + "\n"
    assert diagnose_text(first_line).category == "cuda_oom_load"


def test_an_engine_that_failed_to_start_stays_the_load():
    text = CLUB_3090_16.splitlines()[0] + "\nRuntimeError: Engine core initialization failed. See root cause above.\n"
    assert diagnose_text(text).category == "cuda_oom_load"


def test_a_request_of_a_stated_size_in_k_tokens_is_the_run():
    assert diagnose_text(OLLAMA_6741).category == "cuda_oom_long_context"


def test_the_bare_ggml_cuda_oom_keeps_its_answer():
    # nothing about a request: ggml-cuda's bare error keeps the answer it had before this change (not the run)
    assert diagnose_text("CUDA error: out of memory\n").category == "llamacpp_alloc_fail"


# https://github.com/ollama/ollama/issues/10765 (a small vision model on a 3.2 GiB-free laptop GPU; the line as
# rick-github re-pasted it, wrapped)
OLLAMA_10765 = ('May 19 10:50:36 vladlen32230 ollama[1995]: time=2025-05-19T10:50:36.626+05:00 level=INFO '
                'source=server.go:168\n'
                ' msg=offload library=cuda layers.requested=-1 layers.model=35 layers.offload=0 layers.split=""\n'
                ' memory.available="[3.2 GiB]" memory.gpu_overhead="0 B" memory.required.full="2.6 GiB"\n'
                ' memory.required.partial="0 B" memory.required.kv="254.0 MiB" memory.required.allocations="[0 B]"\n'
                ' memory.weights.total="2.3 GiB" memory.weights.repeating="1.8 GiB" memory.weights.nonrepeating='
                '"525.0 MiB"\n'
                ' memory.graph.full="517.0 MiB" memory.graph.partial="1.0 GiB" projector.weights="795.9 MiB"\n'
                ' projector.graph="1.0 GiB"\n')
# https://github.com/ollama/ollama/issues/10739 (llama4:scout, an 11.4 GiB-free card and 62.6 GiB of RAM)
OLLAMA_10739 = ('May 16 17:44:49 Debian ollama[6012]: time=2025-05-16T17:44:49.187+02:00 level=INFO source=server.go:168 '
                'msg=offload\n'
                ' library=cuda layers.requested=-1 layers.model=49 layers.offload=4 layers.split="" '
                'memory.available="[11.4 GiB]"\n'
                ' memory.gpu_overhead="0 B" memory.required.full="68.3 GiB" memory.required.partial="10.9 GiB" '
                'memory.required.kv="2.2 GiB"\n'
                ' memory.required.allocations="[10.9 GiB]" memory.weights.total="60.6 GiB" memory.weights.repeating='
                '"59.8 GiB"\n'
                ' memory.weights.nonrepeating="809.3 MiB" memory.graph.full="2.0 GiB" memory.graph.partial="2.0 GiB"\n'
                ' projector.weights="1.6 GiB" projector.graph="0 B"\n'
                'May 16 17:44:49 Debian ollama[6012]: time=2025-05-16T17:44:49.091+02:00 level=INFO source=server.go:135\n'
                ' msg="system memory" total="62.6 GiB" free="59.1 GiB" free_swap="215.1 MiB"\n')
# round 2's ollama#5669: the same kind of line with every layer placed (33 of 33 on a 15.9 GiB card)
ALL_PLACED = ('time=2024-07-13T12:06:59.126+02:00 level=INFO source=memory.go:309 msg="offload to rocm" '
              'layers.requested=-1 layers.model=33 layers.offload=33 layers.split="" memory.available="[15.9 GiB]" '
              'memory.required.full="6.2 GiB" memory.required.partial="6.2 GiB" memory.required.kv="1.0 GiB"\n')


@pytest.mark.parametrize("text", [OLLAMA_10765, OLLAMA_10739])
def test_ollamas_offload_line_with_layers_left_off_is_its_sizing_for_lack_of_vram(text):
    model, placed = (int(x) for x in re.search(r"layers\.model=(\d+) layers\.offload=(\d+)", text).groups())
    assert placed < model  # by the line: 0 of 35, 4 of 49
    d = diagnose_text(text)
    assert d.category == "ollama_system_memory" and d.entry.id == "ollama-layers-left-off"


def test_every_layer_placed_says_nothing():
    assert diagnose_text(ALL_PLACED).category == "unknown"


def test_num_gpu_set_below_the_layers_is_the_users_split():
    text = OLLAMA_10765.replace("layers.requested=-1", "layers.requested=10")
    assert diagnose_text(text).category == "unknown"


def test_offload_to_cpu_is_no_gpu_at_all():
    # round 2's ollama#8571 line without its kill: layers.requested=0 on the CPU library
    text = ('time=2025-01-29T06:36:08.360-05:00 level=INFO source=memory.go:356 msg="offload to cpu" '
            'layers.requested=0 layers.model=62 layers.offload=0 layers.split="" memory.available="[50.1 GiB]"\n')
    assert diagnose_text(text).category == "unknown"


def test_a_crash_after_the_offload_line_keeps_its_answer():
    # round 6's ollama#7618 shape: the runner's segfault names the failure, whatever the sizing said
    text = (OLLAMA_10765 + "llama runner process has terminated: signal: segmentation fault (core dumped)\n")
    assert diagnose_text(text).category == "not_memory"


# https://github.com/sgl-project/sglang-jax/issues/622 (fixed the same day by sglang-jax PR#624, page-aligned admission)
SGLANG_JAX_622 = ("[2026-01-05 06:12:41] Prefill batch. #new-seq: 1, #new-token: 1024, #cached-token: 0, token usage: "
                  "0.98, #running-req: 167, #queue-req: 88, \n"
                  "[2026-01-05 06:12:41] Decode out of memory. Try to lower your batch size.\n"
                  "Try to allocate 168 tokens.\n"
                  "Available tokens: 3200 (available_size=3200 + evictable_size=0)\n\n"
                  "[2026-01-05 06:12:41] Scheduler hit an exception: Traceback (most recent call last):\n")


def test_a_decode_steps_pool_oom_counts_requests_not_tokens():
    # alloc_paged_token_slots_decode asks one page per running request: 168 requests need 168 x page_size tokens,
    # more than the 3,200 free at any page size above 19 (3,200 / 168 = 19.05)
    assert 168 * 20 > 3200
    assert diagnose_text(SGLANG_JAX_622).category == "sglang_kv_overflow"


def test_a_prefills_pool_oom_with_room_by_its_figures_stays_not_memory():
    # the prefill path's count is the tokens to extend: more free than asked is still read as the pool's accounting
    text = SGLANG_JAX_622.replace("Decode out of memory", "Prefill out of memory")
    assert diagnose_text(text).category == "not_memory"

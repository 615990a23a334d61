"""Round 23's misses (session 10, tuning since diagnose19), fixed by what the words mean rather than by the threads'
strings: a process out of file descriptors ("Too many open files") is not memory even when what it was creating
"failed to allocate"; C++'s std::bad_alloc in a log that says memory was freed wrongly (a double free, a workaround
that removes free calls) is that bug, not RAM running out; and a bare "Not enough memory" in an SGLang log is SGLang's
KV-pool sizing at start-up, not a generic CUDA out-of-memory. Each test pastes what a user would and reads
`runlocal diagnose`'s answer; beside each rule, its look-alikes pasted by hand.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

# -- file descriptors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("said", [
    # a C++ serving front end under a concurrency benchmark: the slot it was creating "failed to allocate"
    "[LLMController] Failed to create session: Failed to allocate slot id: All attempts have failed\n"
    "Too many open files",
    # Python's wording, under an HTTP load test
    "OSError: [Errno 24] Too many open files: '/proc/self/fd'\nfailed to create context",
    # Go's accept loop (Ollama and friends)
    "http: Accept error: accept tcp 127.0.0.1:11434: accept4: too many open files; retrying in 1s",
])
def test_too_many_open_files_is_a_descriptor_limit_not_memory(said):
    answer = diagnose_text(said)
    assert answer.category == "not_memory"
    assert "file descriptors" in answer.title


@pytest.mark.parametrize("said", [
    # a real out-of-memory in the same log still wins: the capacity failure outranks the descriptor limit
    "Too many open files\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.65 GiB of which 1.10 GiB is free.",
    "llama_kv_cache_init: failed to allocate buffer for kv cache\nllama_new_context_with_model: "
    "llama_kv_cache_init() failed for self-attention cache\nToo many open files",
])
def test_a_memory_failure_beside_too_many_open_files_is_still_memory(said):
    assert diagnose_text(said).category in MEMORY_CATEGORIES


def test_the_context_failure_alone_is_still_read_as_memory():
    # the descriptor limit is what turns "failed to create" into not-memory, not the words around it
    said = "llama_init_from_gpt_params: error: failed to create context with model 'model.gguf'"
    assert diagnose_text(said).category == "llamacpp_alloc_fail"


# -- std::bad_alloc from a freeing bug ------------------------------------------------------------------------------


@pytest.mark.parametrize("said", [
    # a maintainer's reply pasted under the crash: the workaround removes the free calls (a free-twice bug)
    "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n"
    "This looks like the bug in the allocator; as a workaround, remove the calls to `ggml_allocr_free` for now",
    # glibc's own heap check printed beside it
    "free(): double free detected in tcache 2\nterminate called after throwing an instance of 'std::bad_alloc'\n"
    "  what():  std::bad_alloc\nAborted (core dumped)",
    "ASAN: heap-use-after-free on address 0x602000000010\nterminate called after throwing an instance of "
    "'std::bad_alloc'",
])
def test_bad_alloc_beside_a_freeing_bug_is_the_bug(said):
    answer = diagnose_text(said)
    assert answer.category == "not_memory"


@pytest.mark.parametrize("said", [
    # plain bad_alloc on an 8 GB server: RAM
    "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\nAborted\n"
    "I read that this error appears when there is no more RAM available (8gb RAM server).",
    # the freeing words denied
    "terminate called after throwing an instance of 'std::bad_alloc'\nValgrind says it is not a double free; "
    "htop shows RAM at 100 %",
    # "free" as in free memory is not a freeing bug
    "terminate called after throwing an instance of 'std::bad_alloc'\nfree -h shows 0.5Gi free of 8Gi",
])
def test_plain_bad_alloc_stays_the_computers_ram(said):
    assert diagnose_text(said).category == "oom_killer"


# -- SGLang's "Not enough memory" -----------------------------------------------------------------------------------


def test_sglangs_bare_not_enough_memory_at_start_up_is_its_kv_pool():
    said = ("[Bug] Not enough memory\n"
            "I'm running a Gemma3 27b model with 4-bit quantization. Why isn't 24GB of Gpu memory sufficient?\n"
            "[2025-03-29 18:18:34 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1999, in '
            "run_scheduler_process\n"
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker.py", line 74, in __init__')
    answer = diagnose_text(said)
    assert answer.category == "sglang_kv_overflow"
    assert "mem_fraction_static" in answer.title or "mem-fraction-static" in str(answer.fixes)


@pytest.mark.parametrize(("said", "category"), [
    # the same words in a vLLM log are not SGLang's pool
    ("Not enough memory\n(EngineCore_DP0 pid=1) ERROR [core.py:708] vllm/v1/engine/core.py EngineCoreProc",
     "sglang_kv_overflow"),
    # an SGLang log whose own line is PyTorch's CUDA out-of-memory while loading weights stays that
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 23.6 GiB "
     "of which 200 MiB is free.\n  File \"/sgl-workspace/sglang/python/sglang/srt/model_loader/loader.py\", "
     "line 381, in load_model", "sglang_kv_overflow"),
])
def test_not_enough_memory_elsewhere_is_not_sglangs_pool(said, category):
    assert diagnose_text(said).category != category

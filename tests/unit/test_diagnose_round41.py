"""Round 41's miss (session 14, diagnose42), fixed by a knowledge-base signature and tested with the user's paste and
the look-alikes beside it. The paste is the thread's own title (measurements/public_errors/round41.jsonl,
ollama-16968); the look-alikes are the corpus's own lines (round7.jsonl llama.cpp-15139, round15.jsonl llamafile-501,
round16.jsonl textgen-1235) behind the same wrapper's words, and ggml's and Ollama's messages as their sources print
them (ggml-backend.cpp, ollama llm/status.go), with the figures worked out in the comments.

Ollama's llama-server runner reports "llama-server reported out-of-memory during startup: <the engine's last error>"
when the engine's error holds one of its out-of-memory words ("failed to allocate", "out of memory", …), and ggml's
ggml_backend_cpu_buffer_type_alloc_buffer prints one message only, "failed to allocate buffer of size N", when malloc
returns NULL. A paste cut inside "failed to allocate" after such a report is ggml's buffer refused (llamacpp-cuda-malloc,
llamacpp_alloc_fail). The wrapper's words alone do not overrule the figures: a size that is an overflow, or a small
host buffer beside far more free RAM, stays not memory; so does the same wrapper over an error that is not memory.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

WRAPPER = ("500 Internal Server Error: llama-server startup failed before projector CPU offload retry: "
           "llama-server reported out-of-memory during startup: ")
# ollama#16968 as pasted: the title ends mid-word
OLLAMA_16968 = WRAPPER + "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allo"


def test_the_wrappers_out_of_memory_over_a_cut_ggml_allocator_line_is_ggmls_buffer_refused():
    d = diagnose_text(OLLAMA_16968)
    assert d.category == "llamacpp_alloc_fail"
    assert d.entry is not None and d.entry.id == "llamacpp-cuda-malloc"


@pytest.mark.parametrize("cut", ["failed", "failed to", "failed to a", "failed to allocat", "error: failed to al"])
def test_the_allocator_line_cut_anywhere_inside_failed_to_allocate_is_the_same(cut):
    text = WRAPPER + "ggml_backend_cpu_buffer_type_alloc_buffer: " + cut
    assert diagnose_text(text).category == "llamacpp_alloc_fail"


def test_the_same_report_unhyphenated_through_a_python_client_is_the_same():
    # ollama-python raises the server's error with its status code appended
    text = ("ollama._types.ResponseError: llama-server reported out of memory during startup: "
            "ggml_backend_cuda_buffer_type_alloc_buffer: failed to a (status code: 500)")
    assert diagnose_text(text).category == "llamacpp_alloc_fail"


def test_the_same_wrapper_over_an_error_that_is_not_memory_is_not_memory():
    # look-alike: the runner's start-up failure names an architecture the engine does not know
    text = ("500 Internal Server Error: llama-server startup failed before projector CPU offload retry: "
            "error loading model: error loading model architecture: unknown model architecture: 'gemma4'")
    assert diagnose_text(text).category == "not_memory"


def test_the_wrappers_out_of_memory_over_an_overflowed_size_is_not_memory():
    # look-alike: llama.cpp-15139's allocator line (round 7) behind the wrapper, whose substring test reads "failed to
    # allocate" as out of memory; the size is 2**64 - 2048 bytes, a negative size wrapped around, no real request
    assert 2 ** 64 - 2048 == 18446744073709549568
    text = WRAPPER + "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 18446744073709549568"
    assert diagnose_text(text).category not in MEMORY_CATEGORIES


def test_the_wrappers_out_of_memory_over_a_small_host_buffer_beside_free_ram_is_not_memory():
    # look-alike: llamafile-501's lines (round 15) behind the wrapper: an 84,940,832-byte (81 MiB) host buffer refused
    # with "more then 12GByte of free ram" said, 81 MiB being 0.7 % of 12 GB: the runtime, not a lack of RAM
    assert 84940832 / 2 ** 20 < 81.1 and 84940832 / 12e9 < 0.008
    text = ("llamafile crashes, this is the log I have more then 12GByte of free ram\n"
            + WRAPPER + "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 84940832\n"
            "ggml_gallocr_reserve_n: failed to allocate CPU buffer of size 84940800\n"
            "llama_new_context_with_model: failed to allocate compute buffers\n")
    assert diagnose_text(text).category not in MEMORY_CATEGORIES


def test_out_of_memory_hyphenated_in_a_setting_that_prevents_it_is_not_memory():
    # look-alike: textgen-1235 (round 16): the hyphenated words in a purpose clause, the report is of a setting
    text = ("--gpu-memory Not working\n"
            "Adding --gpu-memory 6 dose not change how much GPU memory is being used.\n"
            "Auto-assiging --gpu-memory 7 for your GPU to try to prevent out-of-memory errors.\n")
    assert diagnose_text(text).category not in MEMORY_CATEGORIES

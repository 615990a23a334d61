"""Rounds 52 and 53's misses (session 17, diagnose52), tuned on once rounds 54 and 55 had been scored.

- PyTorch asserts "NVML_SUCCESS == r" in one place: reportProcessMemoryInfo in c10/cuda/CUDACachingAllocator.cpp, which
  builds the "Process N has X memory in use" part of the out-of-memory message from NVML (c10/cuda/driver_api.cpp
  asserts only that NVML's symbols exist). So "NVML_SUCCESS == r INTERNAL ASSERT FAILED" (TORCH_INTERNAL_ASSERT's
  format: the condition, then "INTERNAL ASSERT FAILED at <file>") is an out-of-memory whose message could not be
  built, with or without the file on the same line (round 52's NVIDIA forum thread: a Jetson, whose driver has no
  NVML, the file on the next line). Other internal asserts of that file, and a program's own NVML assert, are not.
- A backtrace frame in an abort function (gdb's "in ggml_abort ()", glibc's "(ggml_abort+0x15b)", "__GI_abort")
  states that the program aborted: with no line saying memory ran short it is an application error, as a GGML_ASSERT
  line is (llama.cpp#25191: an input's buffer left unallocated, a backtrace with no error line). A ggml CUDA
  out-of-memory that aborts the same way keeps its answer.
- Round 53's miss (trl#4237, a PyTorch OOM in a CI training step, no phase in the text) now gets the phase-unstated
  answer with the run's fixes beside the load's (test_diagnose_phase_unstated.py); its category stays the load.

Each test quotes the public paste (measurements/public_errors/round52*.jsonl, URL beside it).
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text

# https://forums.developer.nvidia.com/t/pytorch-cudacachingallocator-nvml-assertion-when-sharing-cuda-context-with-llama-cpp-on-orin-nano-8-gb-jetpack-6-2-2/370049
NVFORUM_370049 = ('RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at\n'
                  '"/opt/pytorch/pytorch/c10/cuda/CUDACachingAllocator.cpp":838\n')
# https://github.com/ggml-org/llama.cpp/issues/25191 (the first frames of the reporter's gdb backtrace)
LLAMACPP_25191 = (
    "#4  0x00007f3ca0151c3b in ggml_print_backtrace () from /home/bestbug/Documents/llama-vulkan/llama-b9849/"
    "libggml-base.so.0\n"
    "#5  0x00007f3ca0151dd2 in ggml_abort () from /home/bestbug/Documents/llama-vulkan/llama-b9849/libggml-base.so.0\n"
    "#6  0x00007f3ca0169670 in ggml_backend_buffer_get_type () from /home/bestbug/Documents/llama-vulkan/llama-b9849/"
    "libggml-base.so.0\n"
    "#7  0x00007f3ca01696fd in ggml_backend_buffer_is_host () from /home/bestbug/Documents/llama-vulkan/llama-b9849/"
    "libggml-base.so.0\n"
    "#8  0x00007f3c9f12e1d7 in llama_kv_cache::set_input_k_rot(ggml_tensor*) const () from /home/bestbug/Documents/"
    "llama-vulkan/llama-b9849/libllama.so.0\n")


def test_pytorchs_nvml_assert_is_its_out_of_memory_with_the_file_on_the_next_line():
    d = diagnose_text(NVFORUM_370049)
    assert d.category == "cuda_oom_phase_unstated"


@pytest.mark.parametrize("text", [
    # another internal assert of the same file: a check of the allocator's own state, not its out-of-memory path
    'RuntimeError: !block->expandable_segment_ INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":2401,'
    " please report a bug to PyTorch.\n",
    # a program's own assert on an NVML call (C's assert format), not PyTorch's message
    "main: nvtest.cpp:42: int main(): Assertion `NVML_SUCCESS == result' failed.\nAborted (core dumped)\n",
])
def test_other_asserts_stay_not_memory(text):
    assert diagnose_text(text).category == "not_memory"


def test_a_backtrace_through_an_abort_with_no_memory_said_is_not_memory():
    d = diagnose_text(LLAMACPP_25191)
    assert d.category == "not_memory" and "ggml_abort" in d.title


def test_a_ggml_out_of_memory_that_aborts_keeps_its_answer():
    # ggml's CUDA error footer and its abort frame: the line that says memory ran out decides
    text = ("CUDA error: out of memory\n"
            "  current device: 0, in function ggml_cuda_pool_malloc at ggml-cuda.cu:400\n"
            "  cudaMalloc((void **) &ptr, look_ahead_size)\n"
            "#5  0x00007f3ca0151dd2 in ggml_abort () from libggml-base.so.0\n")
    assert diagnose_text(text).category == "llamacpp_alloc_fail"

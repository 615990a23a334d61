"""Round 51's misses (session 16, diagnose51), tuned on once round 53 was collected and round 51 joined tuning.

- Apple's resource exception with its memory subtype ("EXC_RESOURCE (RESOURCE_TYPE_MEMORY: high watermark memory
  limit exceeded) (limit=6144 MB)") is the process crossing the memory limit the system sets it, after which iOS ends
  it (Apple's developer documentation: xcode/exc_resource, "MEMORY: The process crossed a memory limit imposed by the
  system"; "Reducing your app's memory use": once an app exceeds this limit, iOS terminates it); Xcode's "Terminated
  due to memory issue" is the debugger saying the OS ended the app for its memory. Both os-killed-for-memory
  (oom_killer), as jetsam's own words already were. The CPU subtype and a termination for a signal or a memory access
  fault are not.
- errno 12 (ENOMEM) as C code logs a system call's errno ("ioctl … failed: errno 12 Out of memory") is the kernel
  refusing memory, as Python's "[Errno 12]" already was: host-ram-alloc (oom_killer). A phone's GPU driver (Adreno's
  KGSL) allocates the GPU's objects from the phone's RAM. Another errno on the same call is not memory.
- llama.cpp's own assertion macro before GGML_ASSERT, "LLAMA_ASSERT: %s:%d: %s" (llama.cpp's llama.cpp, mid-2023), is
  a failed assertion as GGML_ASSERT is: notmem-other-error when no allocation failure is on the line.
- "does not support" states a refusal ("400 codellama:latest does not support tools": Ollama refusing a model whose
  template has no tools, relayed as openai-node's APIError prints it, `${status} ${msg}`): an error that names
  something other than memory, notmem-application-error, when nothing in the log says memory ran short.

Each test quotes the public paste (measurements/public_errors/round51.jsonl, URL beside it); the contrasts are the
neighbouring messages that must keep their answer.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text

# https://github.com/ml-explore/mlx-swift-lm/issues/209 (a SwiftUI sample app, Gemma 4, an input over ~5000 characters)
MLXSWIFTLM_209 = "Task 1: EXC_RESOURCE (RESOURCE_TYPE_MEMORY: high watermark memory limit exceeded) (limit=6144 MB)\n"
# https://github.com/mlc-ai/mlc-llm/issues/713 (a comment: MLC LLM's iOS API in the commenter's own app)
MLCLLM_713 = ("The app \u201cTestRP\u201d on iPhone quit unexpectedly.\n"
              "Message from debugger: Terminated due to memory issue\n")
# https://github.com/mlc-ai/mlc-llm/issues/112 (a comment: MLCChat on Android, the Adreno driver's log)
MLCLLM_112 = (
    "W Adreno-GSL: <gsl_ldd_control:549>: ioctl fd 58 code 0xc0300945 (IOCTL_KGSL_GPUOBJ_ALLOC) failed: errno 12 Out"
    " of memory\n"
    "E Adreno-GSL: <gsl_memory_alloc_pure:2354>: GSL MEM ERROR: kgsl_sharedmem_alloc ioctl failed.\n"
    "E libc++abi: terminating with uncaught exception of type tvm::runtime::InternalError:\n")
# https://github.com/SciSharp/LLamaSharp/issues/21 (a model converted by a newer llama.cpp than the bundled one)
LLAMASHARP_21 = "LLAMA_ASSERT: ...\\development\\llama\\llama.cpp\\llama.cpp:904: false\n"
# https://github.com/cline/cline/issues/460 (Ollama's HTTP 400 body, relayed by the extension)
CLINE_460 = "400 codellama:latest does not support tools\n"


@pytest.mark.parametrize("text", [MLXSWIFTLM_209, MLCLLM_713], ids=["exc_resource_memory", "xcode_memory_issue"])
def test_apples_memory_limit_and_xcodes_memory_termination_are_the_os_ending_the_app(text):
    d = diagnose_text(text)
    assert d.category == "oom_killer" and d.entry is not None and d.entry.id == "os-killed-for-memory"


@pytest.mark.parametrize("text", [
    # the CPU subtype of the same exception (Apple's xcode/exc_resource: "CPU and CPU_FATAL: a thread … used too
    # much CPU"): a resource limit that is not memory
    "Thread 1: EXC_RESOURCE (RESOURCE_TYPE_CPU: 90 seconds cpu time over 180 seconds exceeds limit of 50%)\n",
    # terminated for a signal, or for a bad access: the words "memory" or "terminated" alone say no lack of memory
    "Message from debugger: Terminated due to signal 9\n",
    "Message from debugger: Terminated due to memory access fault\n",
])
def test_other_resource_limits_and_terminations_are_not_read_as_memory(text):
    assert diagnose_text(text).category != "oom_killer"


def test_errno_12_from_a_drivers_system_call_is_the_kernel_refusing_memory():
    d = diagnose_text(MLCLLM_112)
    assert d.category == "oom_killer" and d.entry is not None and d.entry.id == "host-ram-alloc"
    assert "errno 12" in (d.matched_line or "")


def test_another_errno_on_the_same_call_is_not_memory():
    other = MLCLLM_112.replace("errno 12 Out of memory", "errno 22 Invalid argument")
    assert diagnose_text(other).category == "not_memory"


def test_pythons_errno_12_keeps_its_answer():
    d = diagnose_text("OSError: [Errno 12] Cannot allocate memory\n")
    assert d.category == "oom_killer" and d.entry is not None and d.entry.id == "host-ram-alloc"


def test_llamas_own_assert_is_read_as_ggmls():
    d = diagnose_text(LLAMASHARP_21)
    assert d.category == "not_memory" and d.entry is not None and d.entry.id == "notmem-other-error"
    ggml = diagnose_text(LLAMASHARP_21.replace("LLAMA_ASSERT", "GGML_ASSERT"))
    assert (ggml.category, ggml.entry and ggml.entry.id) == (d.category, d.entry.id)


def test_a_model_that_does_not_support_a_feature_is_not_memory():
    d = diagnose_text(CLINE_460)
    assert d.category == "not_memory" and d.entry is not None and d.entry.id == "notmem-application-error"


@pytest.mark.parametrize("text, expected", [
    # the refusal beside a device out of memory: the out-of-memory line says memory ran short, and wins
    (CLINE_460 + "CUDA error: out of memory\n", "llamacpp_alloc_fail"),
    # Ollama's sizing refusal with its HTTP status (server/sched.go's "model requires more system memory"): memory
    ("500 model requires more system memory (12.3 GiB) than is available (8.0 GiB)\n", "ollama_system_memory"),
])
def test_a_status_line_that_says_memory_keeps_its_memory_answer(text, expected):
    assert diagnose_text(text).category == expected

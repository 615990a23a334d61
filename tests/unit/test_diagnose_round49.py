"""Round 49's misses (session 16, diagnose50), tuned on once round 51 was collected and round 49 joined tuning.

- ggml's CUDA source built for ROCm names its failed call: ggml_cuda_error prints the error, the footer ("current
  device: N, in function F at FILE:LINE") and then the statement CUDA_CHECK stringified. In a ROCm build cudaMalloc is
  defined as hipMalloc, so the statement reads "hipMalloc(…)"; builds before GGML_CUDA_NAME (early 2024, Ollama 0.1.x)
  still print "CUDA error". ollama#3765 is that: the answer is rocm_oom (as "ROCm error: out of memory" already was),
  and its fixes are ggml's (fewer layers), not PyTorch's HIP allocator setting.
- DeepSeek-Coder-V2#17 (a full 24 GB card read as fragmentation) stayed a miss here: its one line has 3.69 GiB
  reserved but unallocated under a 20 MiB request. Since session 16 (fragrule) fragmentation needs PyTorch's own
  "reserved >> allocated", and 3.69 GiB beside 19.78 GiB of tensors is the load (test_diagnose_fragrule.py).
- vllm PR#2666 (start-up profiling read as a request) stays a miss: the paste starts mid-frame in an activation's
  forward, and no line names the profiling (docs/diagnosis.md).

Each test quotes the public paste (measurements/public_errors/round49.jsonl, URL beside it); the contrasts are the
neighbouring messages that must keep their answer.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

# https://github.com/ollama/ollama/issues/3765 (llama3:70b q2_K on a 24 GB AMD GPU, Ollama's ROCm build, April 2024)
OLLAMA_3765 = (
    "Error: an unknown error was encountered while running the model CUDA error: out of memory\n"
    "  current device: 0, in function alloc at /go/src/github.com/ollama/ollama/llm/llama.cpp/ggml-cuda.cu:233\n"
    "  hipMalloc((void **) &ptr, look_ahead_size)\n"
    'GGML_ASSERT: /go/src/github.com/ollama/ollama/llm/llama.cpp/ggml-cuda.cu:60: !"CUDA error"\n')


def test_ggml_cuda_error_over_a_hip_call_is_rocm_out_of_memory():
    d = diagnose_text(OLLAMA_3765)
    assert d.category == "rocm_oom" and d.entry is not None and d.entry.id == "rocm-hip-oom"
    doc = with_computed_fixes(d, runtime="ollama")
    commands = " ".join(f["command"] for f in doc["fixes"])
    assert "num_gpu" in commands                       # ggml's remedy: fewer layers on the card
    assert "PYTORCH_HIP_ALLOC_CONF" not in commands     # PyTorch's allocator setting; ggml does not read it


def test_contrast_the_same_error_over_cudamalloc_stays_ggmls_allocation():
    # the CUDA build's statement: ggml's pool allocation on an NVIDIA card, as before
    cuda = OLLAMA_3765.replace("hipMalloc(", "cudaMalloc(")
    assert diagnose_text(cuda).category == "llamacpp_alloc_fail"


def test_contrast_a_hip_call_not_under_the_footer_changes_nothing():
    # a hipMalloc line elsewhere (a source excerpt pasted after the log) is not the failed statement
    lines = OLLAMA_3765.splitlines()
    moved = "\n".join([lines[0], lines[1], lines[3], "", "  hipMalloc((void **) &ptr, look_ahead_size)"]) + "\n"
    assert diagnose_text(moved).category == "llamacpp_alloc_fail"


def test_contrast_a_footer_naming_no_allocator_stays_not_memory():
    # ggml's footer naming a function that allocates nothing (a stream call): the status came from elsewhere, even in
    # a ROCm build (legacy-rocm-build#5902's shape, round 8)
    stream = ("ROCm error: out of memory\n"
              "  current device: 0, in function stream at //ml/backend/ggml/ggml/src/ggml-cuda/common.cuh:1027\n"
              "  hipStreamCreateWithFlags(&streams[device][stream], 0x01)\n")
    assert diagnose_text(stream).category == "not_memory"


def test_the_later_rocm_wording_was_already_rocm():
    later = OLLAMA_3765.replace("CUDA error: out of memory", "ROCm error: out of memory")
    assert diagnose_text(later).category == "rocm_oom"

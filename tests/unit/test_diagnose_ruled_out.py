"""Errors that are not a lack of memory although they sit next to memory words (session 10, round 18's misses, now
tuning): an out-of-memory the user rules out ("so it is not OOM problem"), a cuBLAS status number said in prose,
bitsandbytes' CUDA-library check, ggml's scratch pool, an error said in Chinese with memory said to be enough. Each
test pastes what a user would and reads `runlocal diagnose`'s answer; the look-alike of each rule (the same words
reporting a real out-of-memory) stays memory.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES


@pytest.mark.parametrize("said", [
    "kernel.cu(73): an illegal memory access was encountered. The memory uses about 40G, so it is not OOM problem.",
    "RuntimeError: CUDA error: an illegal memory access was encountered (this is not an out of memory error, "
    "nvidia-smi shows 20 GB free)",
    "CUDA error: an illegal memory access was encountered\n这不是显存不足的问题，显存还剩很多",
])
def test_an_oom_the_user_rules_out_is_not_memory(said):
    assert diagnose_text(said).category == "not_memory"


@pytest.mark.parametrize("said", [
    "No OOM on 0.4.0, but OOM on 0.5.0 with the same command",
    "RuntimeError: CUDA error: out of memory\nI am not sure why this happens on a 24 GB card",
    "It is not only OOM: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "cannot run this model without OOM on my 3090",
])
def test_an_oom_still_reported_next_to_a_negation_is_memory(said):
    assert diagnose_text(said).category in MEMORY_CATEGORIES


@pytest.mark.parametrize("said", [
    # fastllm#47: cublasStatus_t 15 is CUBLAS_STATUS_NOT_SUPPORTED (cublas_api.h); the thread's fix was the build
    "cuda运行出错\nFastllmCudaBatchMatMul函数中调用的cublasSgemmStridedBatched，返回的status错误码为15,导致无法进行推理。",
    "cublasGemmEx failed with status 7 (CUBLAS_STATUS_INVALID_VALUE)",
])
def test_a_cublas_status_other_than_alloc_failed_is_not_memory(said):
    assert diagnose_text(said).category == "not_memory"


def test_cublas_status_3_alloc_failed_is_memory():
    assert diagnose_text("cublasCreate failed with status 3 (CUBLAS_STATUS_ALLOC_FAILED)").category in MEMORY_CATEGORIES


def test_bitsandbytes_cuda_library_check_is_an_install_problem():
    said = ("Inspect the output of the command and see if you can locate CUDA libraries. You might need to add them\n"
            "        to your LD_LIBRARY_PATH. If you suspect a bug, please take the information from python -m bitsandbytes")
    d = diagnose_text(said)
    assert d.category == "not_memory" and "compiled extension" in d.title


def test_ggml_scratch_pool_is_a_size_the_program_chose():
    said = ("ggml_new_tensor_impl: not enough space in the scratch memory pool (needed 1357824000, available "
            "1342177280)")
    assert diagnose_text(said).category == "not_memory"


def test_an_error_said_in_chinese_with_memory_enough_is_not_memory():
    said = ("最新版GPU编译后，使用fastllm_pytools直接加载flm模型会报错，status=7\n"   # "loading the flm model errors"
            "GPU：V100，显存32G，加载报错时显存足够")                              # "VRAM was enough at the error"
    assert diagnose_text(said).category == "not_memory"


def test_an_error_said_in_chinese_with_memory_short_stays_memory_or_unknown():
    said = "加载模型报错，显存不够用"   # "loading the model errors, VRAM not enough"
    assert diagnose_text(said).category != "not_memory"


# -- the host's memory, not the card's: the process killed for it --------------------------------------------------

@pytest.mark.parametrize("said", [
    # text-generation-webui#1799: the prose mentions CUDA, but the failure posted is the container killed on the CPU path
    "Error code 137 when loading RWKV-4-RAVEN model\nwith GPU (24gb) I get out of memory errors from cuda)\n"
    "with CPU (64GB ram)  container exits with error code 137",
    # RWKV-Runner#185: "OOM, the program was killed automatically … loading the 7B the system OOMs"
    "OOM异常，自动kill程序了\n显卡是6G，加载7B模型的时候，系统会OOM，CPU直接跑满",
    "While loading the 70B the system ran out of memory and everything froze",
])
def test_the_host_killed_or_out_of_memory_is_the_oom_killer(said):
    assert diagnose_text(said).category == "oom_killer"


@pytest.mark.parametrize("said, category", [
    # the user killed it after a CUDA OOM: still the card
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\nOOM, so I killed the server and "
     "restarted it", "cuda_oom_phase_unstated"),
    # a container stopped from outside: 137 after docker stop is not a lack of memory
    ("docker stop llm: container exited with code 137", "not_memory"),
    # a system named next to a CUDA OOM is a description of the machine
    ("Operating system: Ubuntu 22.04, 64 GB RAM\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
     "20.00 MiB", "cuda_oom_phase_unstated"),
])
def test_kill_and_system_words_that_are_not_the_host_running_out(said, category):
    assert diagnose_text(said).category == category


# -- round 17's leftovers: a runtime's refusal and a model said not to fit, in their own words ---------------------

@pytest.mark.parametrize("said", [
    # exo's dashboard; its planner raises "No cycles found with sufficient memory" (master/placement.py)
    "click send after typing message.....\"no placement for model \" shows up",
    "ValueError: No cycles found with sufficient memory",
])
def test_exo_refusing_a_placement_is_the_runtime_refusing_for_memory(said):
    assert diagnose_text(said).category == "ollama_system_memory"


def test_localai_failing_where_the_model_does_not_fit_in_vram_is_llamacpp_allocation():
    # LocalAI#5257: the backend's error is an RPC cancel; the user says what it was
    said = ("ERR [llama-cpp] Failed loading model, trying with fallback 'llama-cpp-fallback', error: failed to load model "
            "with internal loader: could not load model: rpc error: code = Canceled desc = \n"
            "when is not able to fully load a model in the GPU VRAM, the first one was erroring out")
    assert diagnose_text(said).category == "llamacpp_alloc_fail"


@pytest.mark.parametrize("said", [
    "failed to load model into the GPU: CUDA error: no kernel image is available for execution on the device",
    "ERR [llama-cpp] could not load model: rpc error: code = Unavailable desc = connection refused",
])
def test_a_failed_load_that_names_no_vram_shortfall_is_not_memory(said):
    assert diagnose_text(said).category == "not_memory"

"""Memory failures said in other words than a runtime's own message (a driver's error number, OpenCL's code name, a
Python exception named in a sentence, free memory below a share in words, the phase in Chinese prose), and the
look-alikes those words must not reach. Each test pastes what a user would and reads `runlocal diagnose`'s answer.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text, kb


def test_cuda_driver_result_2_from_an_allocating_call_is_out_of_memory():
    # torch_memory_saver (SGLang's weight/KV pool allocator) prints the driver API's CUresult as a number;
    # 2 is CUDA_ERROR_OUT_OF_MEMORY (cuda.h)
    log = ("Facing `[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
           "func=cu_mem_create line=103` when serving a 32B model with TP=1")
    d = diagnose_text(log)
    assert d.category == "cuda_oom_load"  # a parameter count named: the load's sign (diagnose21c)


@pytest.mark.parametrize("log", [
    # result 1 is CUDA_ERROR_INVALID_VALUE: an argument, not memory
    "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103",
    # error 222 is CUDA_ERROR_UNSUPPORTED_PTX_VERSION (a toolchain newer than the driver), not 2
    "CUDA error 222 at ggml-cuda.cu:1234: the provided PTX was compiled with an unsupported toolchain",
])
def test_other_cuda_numbers_are_not_memory(log):
    assert diagnose_text(log).category == "not_memory"


def test_opencl_mem_object_allocation_failure_is_out_of_memory():
    # CL_MEM_OBJECT_ALLOCATION_FAILURE (-4): OpenCL could not allocate a buffer object (Khronos cl.h)
    log = ("LLaMa MEM_OBJECT_ALLOCATION_FAILURE when start\n"
           "loading 260 ram used: 12.08 GB:  80%|███▍ | 260/323\n"
           "  File \"extra/utils.py\", line 125, in load_single_weight\n")
    # the frame in load_single_weight is read as the load since session 22 (diagnose22; "phase not stated" before)
    assert diagnose_text(log).category == "cuda_oom_load"


def test_memoryerror_named_in_a_sentence_about_a_gpu_is_memory():
    log = "The 5-bit model spills onto my second GPU and then fails to load with MemoryError."
    assert diagnose_text(log).category == "cuda_oom_phase_unstated"


def test_memoryerror_named_in_a_sentence_without_a_gpu_is_host_ram():
    log = "Converting the checkpoint on my laptop dies with a MemoryError halfway through."
    d = diagnose_text(log)
    assert d.entry is not None and d.entry.id == "host-ram-alloc"


@pytest.mark.parametrize("log", [
    "nvidia-smi reports an uncorrectable ECC memory error on GPU 0, then the server crashes",
    "RuntimeError: CUDA error: an illegal memory access was encountered (memory error in the kernel)",
])
def test_a_memory_fault_is_not_a_lack_of_memory(log):
    assert diagnose_text(log).category == "not_memory"


def test_free_memory_below_vllms_share_said_in_words_is_the_utilization():
    log = ("Deployment with vLLM default parameters fails when available GPU memory is below 90%\n"
           "ERROR [core.py:700] EngineCore failed to start.\n")
    assert diagnose_text(log).category == "vllm_gpu_util"


def test_a_long_prompt_in_chinese_prose_is_the_run_not_the_load():
    # "requests return empty ... if the prompt is more complex the result is empty; the log shows CUDA OOM"
    log = ("用lmdeploy部署模型后请求返回为空\n"
           "如果prompt较为复杂，返回结果就是空值。\n"
           "日志中显示 \"CUDA runtime error: out of memory\"\n")
    assert diagnose_text(log).category == "cuda_oom_long_context"


def test_a_longer_prompt_in_english_prose_is_the_run():
    log = "Short questions work, but with longer prompts the server logs CUDA out of memory and returns nothing"
    assert diagnose_text(log).category == "cuda_oom_long_context"


def test_advice_to_prevent_out_of_memory_is_not_a_report_of_it():
    # text-generation-webui's own start-up line, in a report that a flag does nothing
    log = ("--gpu-memory Not working\n"
           "Adding --gpu-memory 6 does not change how much GPU memory is being used.\n"
           "Auto-assiging --gpu-memory 7 for your GPU to try to prevent out-of-memory errors.\n")
    assert diagnose_text(log).category == "not_memory"


@pytest.mark.parametrize("log", [
    # pasted by hand while checking the new words for reach: negated, a fix's title, cffi's W^X refusal, the host
    "I am not getting any memory error anymore after the update, but the model answers in Chinese.",
    "Fixed MemoryError in tokenizer when vocab is large",
    "MemoryError: Cannot allocate write+execute memory for ffi.callback(). You might be running on a system "
    "that prevents this.",
    "The system becomes unresponsive when available memory is below 5% and the app crashes",
])
def test_the_new_words_do_not_reach_look_alikes(log):
    assert diagnose_text(log).category not in kb.MEMORY_CATEGORIES


def test_a_purpose_clause_is_cut_to_its_sentence_not_the_line():
    log = "I set --gpu-memory 10 to help prevent OOM but still get RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert diagnose_text(log).category == "cuda_oom_phase_unstated"


TRT_BUILD = ("trtllm-build --checkpoint_dir ./ckpt --output_dir ./engine --max_num_tokens 128000 --max_batch_size 64\n"
             "[TRT] [E] Error Code 2: OutOfMemory: requires 56405524864 bytes of scratch space, but only 47590277120 "
             "is available. Try increasing the workspace size with IBuilderConfig::setMemoryPoolLimit()\n")


def test_tensorrt_scratch_shortfall_is_sized_from_the_logs_own_numbers():
    from runlocal.diagnose.fixes import with_computed_fixes

    d = diagnose_text(TRT_BUILD)
    assert d.category == "cuda_oom_load" and d.runtime == "tensorrt-llm"
    first = with_computed_fixes(d)["fixes"][0]
    # 47,590,277,120 / 56,405,524,864 = 0.8437 of the scratch fits: 128,000 × 0.8437 = 107,995 → 107,776 (÷ 256)
    assert first["command"] == "trtllm-build ... --max_num_tokens 107776"
    assert "8.21 GiB short" in first["effect"]


def test_tensorrt_scratch_shortfall_without_the_command_scales_the_batch_or_says_the_figure():
    from runlocal.diagnose.fixes import with_computed_fixes

    only_batch = TRT_BUILD.replace("--max_num_tokens 128000 ", "")
    assert with_computed_fixes(diagnose_text(only_batch))["fixes"][0]["command"] == \
        "trtllm-build ... --max_batch_size 53"  # 64 × 0.8437 = 54.0 → 53 (floor of 53.99)
    no_command = TRT_BUILD.split("\n", 1)[1]
    assert "8.21 GiB short" in with_computed_fixes(diagnose_text(no_command))["fixes"][0]["effect"]


def test_a_memory_allocation_error_said_in_prose_is_memory():
    # koboldcpp#2330: 4 GB of RAM, the loader fails "with something like a memory allocation error"
    log = ("koboldcpp-1.114.1 crashes when loading the model, displaying something like a memory allocation error in "
           "the console. RAM: 4 GB DDR4.")
    assert diagnose_text(log).category in kb.MEMORY_CATEGORIES
    # negated or fixed, it is no report
    assert diagnose_text("no memory allocation error anymore after the update, but now: ValueError: unknown "
                         "architecture").category == "not_memory"
    assert diagnose_text("Fixed memory allocation error in the allocator (#123)").category not in kb.MEMORY_CATEGORIES

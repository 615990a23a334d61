"""Round 22's misses (session 10, tuning since diagnose18), fixed by what the words mean rather than by the threads'
strings: host memory said in a GPU API's or a browser's own words (OpenCL/Vulkan "out of host memory", V8's "Array
buffer allocation failed"), SYCL's own bare allocation failure in a C++ program, Android's low-memory killer logging a
kill, and a served model called a number of times before its out-of-memory (the run, not the allocator's layout).
Each test pastes what a user would and reads `runlocal diagnose`'s answer; beside each rule, its look-alikes pasted by
hand.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

# -- host memory in a GPU API's or a browser's words -----------------------------------------------------------------


@pytest.mark.parametrize("said", [
    # MediaPipe's LLM inference on Android, its OpenCL driver out of the phone's RAM while building the GPU program
    "Failed to load GPU model with the Error - Failed to build program executable - Out of host memoryPass\n"
    "Android 14, MediaPipe version 0.10.14, LLMInference",
    # Vulkan's result code for the same
    "vkAllocateMemory failed with VK_ERROR_OUT_OF_HOST_MEMORY",
    "clBuildProgram failed: CL_OUT_OF_HOST_MEMORY",
])
def test_out_of_host_memory_from_a_gpu_api_is_the_computers_ram(said):
    answer = diagnose_text(said)
    assert answer.category == "oom_killer"
    assert "RAM" in answer.title


def test_a_browsers_array_buffer_refused_is_the_browsers_ram_not_the_gpu():
    said = ("Web fails to instantiate Gemma 3n even with sufficient RAM\n"
            "MediaPipe Tasks SDK version 0.10.23, LLM Inference, JavaScript\n"
            'Gemma 3n E2B fails to create (LlmInference.createFromOptions) with "RangeError: Array buffer allocation '
            'failed" with 8GB ram (4-5GB free)')
    assert diagnose_text(said).category == "oom_killer"


@pytest.mark.parametrize("said", [
    "It is not out of host memory: clEnqueueNDRangeKernel returned CL_INVALID_KERNEL_ARGS",  # ruled out in words
    "RangeError: Invalid array length\n    at new Float32Array (<anonymous>)",           # a bad size, not memory
    "RangeError: Array buffer allocation failed? No - TypeError: Cannot read properties of undefined (reading 'data')",
])
def test_other_javascript_and_opencl_errors_are_not_host_memory(said):
    assert diagnose_text(said).category != "oom_killer"


# -- SYCL's own allocation failure in a C++ program (ggml's SYCL backend, ipex-llm's llama.cpp) -----------------------

def test_sycl_native_api_out_of_memory_in_a_llamacpp_build_is_a_ggml_allocation_failure():
    said = ("intelanalytics/ipex-llm-inference-cpp-xpu:2.2.0 docker image causes memory issue with intel arc a380\n"
            "Native API failed. Native API returns: -6 (PI_ERROR_OUT_OF_HOST_MEMORY) -6 (PI_ERROR_OUT_OF_HOST_MEMORY)")
    assert diagnose_text(said).category == "llamacpp_alloc_fail"


def test_pytorch_xpu_raising_the_same_through_python_is_not_called_a_ggml_failure():
    said = ("  File \"/usr/lib/python3/site-packages/torch/nn/modules/linear.py\", line 114, in forward\n"
            "RuntimeError: Native API failed. Native API returns: -6 (PI_ERROR_OUT_OF_HOST_MEMORY) "
            "-6 (PI_ERROR_OUT_OF_HOST_MEMORY)")
    assert diagnose_text(said).category != "llamacpp_alloc_fail"


@pytest.mark.parametrize("said", [
    "Native API failed. Native API returns: -2 (PI_ERROR_DEVICE_NOT_AVAILABLE) -2 (PI_ERROR_DEVICE_NOT_AVAILABLE)",
    "Native API failed. Native API returns: -30 (PI_ERROR_INVALID_VALUE) -30 (PI_ERROR_INVALID_VALUE)",
])
def test_other_sycl_results_are_not_memory(said):
    assert diagnose_text(said).category not in MEMORY_CATEGORIES


# -- Android's low-memory killer ---------------------------------------------------------------------------------------

def test_lmkd_killing_apps_as_the_first_prompt_is_submitted_is_the_phone_out_of_ram():
    said = ("v0.4.0-rc2 Android Demo App for Llama crashing on Pixel 8 when first prompt submitted\n"
            "2024-09-25 10:24:19.378   495-495   lowmemorykiller         lmkd                                 I  "
            "Kill 'com.google.android.apps.scone' (15964), uid 10137, oom_score_adj 500 to free 92212kB rss, 33036kB "
            "swap; reason: low watermark is breached and swap is low (712kB < 389076kB)")
    assert diagnose_text(said).category == "oom_killer"


def test_the_old_in_kernel_lowmemorykiller_is_the_phone_out_of_ram():
    said = "<6>[ 8123.4567] lowmemorykiller: Killing 'com.example.llama' (8812), adj 0,"
    assert diagnose_text(said).category == "oom_killer"


@pytest.mark.parametrize("said", [
    # lmkd's own start-up and connection notices, and ActivityManager trimming cached apps: no kill for memory
    "03-01 10:00:01.000   495   495 I lowmemorykiller: Using psi monitors for memory pressure detection\n"
    "E/AndroidRuntime: FATAL EXCEPTION: main\njava.lang.UnsatisfiedLinkError: dlopen failed: library "
    "\"libexecutorch.so\" not found",
    "E lmkd: Failed to read /proc/pressure/memory: No such file or directory\n"
    "E/AndroidRuntime: java.lang.IllegalStateException: Model file not found at /data/local/tmp/llama/model.pte",
])
def test_lmkd_notices_that_are_no_kill_are_not_the_phone_out_of_ram(said):
    assert diagnose_text(said).category not in MEMORY_CATEGORIES


# -- a served model called many times before its out-of-memory: the run -----------------------------------------------

CALLED_MANY_TIMES = (
    "访问次数多了以后显存不释放\n"
    "刚开始启动只有大概17g显存的占用，访问了大概100次，显存就大概跑到23g了。使用api server的部署方式。\n"
    "大概每50-100次就会遇到下面这个报错，torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.51 GiB "
    "(GPU 0; 23.65 GiB total capacity; 17.10 GiB already allocated; 2.61 GiB free; 20.28 GiB reserved in total by "
    "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.")


def test_an_oom_after_a_served_model_was_called_a_hundred_times_is_the_run():
    assert diagnose_text(CALLED_MANY_TIMES).category == "cuda_oom_long_context"


def test_the_same_figures_with_no_calls_counted_are_not_the_allocators_layout():
    # the figures alone: 3.18 GiB cached unused beside 17.10 GiB of tensors (reserved = 1.19 x allocated, not PyTorch's
    # ">>"), so with no phase said the answer is the no-evidence default, the load
    said = CALLED_MANY_TIMES.split("\n")[-1].replace("大概每50-100次就会遇到下面这个报错，", "")
    assert diagnose_text(said).category == "cuda_oom_phase_unstated"


@pytest.mark.parametrize("said", [
    "重试3次还是报错，torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB "
    "total capacity; 21.10 GiB already allocated; 1.01 GiB free; 21.30 GiB reserved in total by PyTorch)",
    "运行了3次都报错，加载模型时 torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
    "23.65 GiB total capacity; 21.10 GiB already allocated; 1.01 GiB free; 21.30 GiB reserved in total by PyTorch)",
])
def test_retrying_or_rerunning_a_script_is_not_requests_to_a_served_model(said):
    # "retried 3 times" / "ran it 3 times, each failed while loading": no request counted, so no run — the first
    # states no phase (cuda_oom_phase_unstated since diagnose21b), the second the load (加载模型时)
    assert diagnose_text(said).category == ("cuda_oom_load" if "加载模型时" in said else "cuda_oom_phase_unstated")

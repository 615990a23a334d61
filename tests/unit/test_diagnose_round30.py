"""Round 30's misses (session 11, diagnose26), each fixed by a signal and tested with the user's paste and the
look-alikes beside it: a DataLoader worker's Bus error where the log names the shared-memory mount, ONNX Runtime's
arena refusing a node of the CPU-only NCHWc layout, a card's memory said to have filled up under a cuDNN error, and a
workflow said to fail during its execution. Pastes are the threads' own lines (measurements/public_errors/round30.jsonl).
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

MEMORY = {"cuda_oom_load", "cuda_oom_long_context", "oom_killer", "llamacpp_alloc_fail", "fragmentation"}


# -- a Bus error beside a full /dev/shm: the container's mount, not memory --------------------------------------------

def test_a_dataloader_bus_error_that_names_shared_memory_is_the_mount_not_memory():
    # STCN#132, as pasted: PyTorch's own hint names shared memory on the same line
    pasted = ("RuntimeError: DataLoader worker (pid 46794) is killed by signal: Bus error. It is possible that "
              "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.")
    got = diagnose_text(pasted)
    assert got.category == "not_memory"
    assert got.entry is not None and got.entry.id == "notmem-shared-memory-mount"
    assert any("shm-size" in f["command"] for f in got.fixes)


def test_the_mount_said_on_another_line_df_output_counts_too():
    # pytorch#5040: the kill, then the writer's `df -h` showing /dev/shm at 96 %
    pasted = ("RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error.\n"
              "tmpfs                 24G   23G  1.1G  96% /dev/shm")
    assert diagnose_text(pasted).category == "not_memory"


def test_a_bare_bus_error_with_no_mount_named_stays_the_host_s_memory():
    # look-alike: NeuralClassifier#3 (the maintainer: insufficient memory) — nothing names shared memory
    assert diagnose_text("DataLoader worker (pid 13176) is killed by signal: Bus error").category == "oom_killer"


def test_a_plain_kill_beside_dev_shm_and_a_kernel_s_shared_memory_are_not_the_mount():
    # look-alikes: SIGKILL (not SIGBUS) stays the OOM killer even if /dev/shm is mentioned; a GPU kernel's
    # per-block shared memory is its own limit
    killed = "$ df -h /dev/shm\nshm 64M 0 64M 0% /dev/shm\n$ python train.py\nKilled"
    assert diagnose_text(killed).category == "oom_killer"
    kernel = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 196608, "
              "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.")
    got = diagnose_text(kernel)
    assert got.entry is not None and got.entry.id == "notmem-kernel-resource-limit"


# -- ONNX Runtime's arena on a CPU-only NCHWc node: host RAM ----------------------------------------------------------

def test_onnx_runtime_refusing_an_nchwc_node_is_host_memory():
    # chineseocr_lite#355: an OCR request to the web service; the node name carries the CPU provider's NCHWc layout
    pasted = ("2021-07-08 01:27:55.7944269 [E:onnxruntime:, sequential_executor.cc:339 "
              "onnxruntime::SequentialExecutor::Execute] Non-zero status code returned while running Conv node. "
              "Name:'347_nchwc' Status Message: D:\\a\\_work\\1\\s\\onnxruntime\\core\\framework\\bfc_arena.cc:330 "
              "onnxruntime::BFCArena::AllocateRawInternal Failed to allocate memory for requested buffer of size "
              "285081600\n2021-07-08:01:27:55,801 ERROR    [web.py:1793] Uncaught exception POST /api/tr-run/")
    assert diagnose_text(pasted).category == "oom_killer"


def test_the_same_arena_on_a_plain_node_stays_the_gpu_and_an_impossible_size_stays_a_bug():
    # look-alikes: triton-inference-server#4023's arena on an ordinary node (the GPU's, shared by several models), and
    # an NCHWc node asked for exabytes (a corrupt shape, onnxruntime#22702's kind)
    gpu = ("2022-03-08 19:50:57.703709351 [E:onnxruntime:, sequential_executor.cc:339 Execute] Non-zero status code "
           "returned while running Conv node. Name:'StatefulPartitionedCall/model/convOneParticle/conv1d' Status "
           "Message: /workspace/onnxruntime/onnxruntime/core/framework/bfc_arena.cc:330 void* "
           "onnxruntime::BFCArena::AllocateRawInternal(size_t, bool) Failed to allocate memory for requested buffer "
           "of size 54566400")
    assert diagnose_text(gpu).category in ("cuda_oom_load", "cuda_oom_long_context")
    huge = ("Non-zero status code returned while running Conv node. Name:'12_nchwc' Status Message: "
            "/onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 onnxruntime::BFCArena::AllocateRawInternal "
            "Failed to allocate memory for requested buffer of size 4585490524328388608")
    assert diagnose_text(huge).category == "not_memory"


# -- a card's memory said full under a cuDNN error: the run's out-of-memory -------------------------------------------

def test_a_cudnn_error_the_writer_found_to_be_a_full_gpu_is_memory_at_the_run():
    # mmaction2#493: the error line, then the commenter's finding and fix
    pasted = ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
              "non-contiguous input\nIt turns out my gpu memory was getting full. Decreased the videos_per_gpu=32 to "
              "10 in the config file and it passed that error.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_full_gpu_asked_or_supposed_and_a_bare_cudnn_error_are_not_memory():
    # look-alikes: a question (round 24's), a condition, and the cuDNN error with no finding beside it
    assert diagnose_text("Does CUDA malloc fail when VRAM is full?").category == "not_memory"
    supposed = ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.\n"
                "I wonder what happens if the GPU memory is full, but it is at 3 GB of 24 GB here")
    assert diagnose_text(supposed).category not in MEMORY
    bare = ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
            "non-contiguous input")
    assert diagnose_text(bare).category == "not_memory"


# -- a workflow failing during its execution: the run -----------------------------------------------------------------

def test_a_workflow_that_fails_during_execution_is_the_run():
    # ComfyUI#6856, as the writer put it
    pasted = ("The same workflow may occasionally encounter errors during execution:torch.OutOfMemoryError: "
              "Allocation on device")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_library_s_execution_banner_is_no_run():
    # look-alike: TVM prints "An error occurred during the execution of TVM" over any error, a load's too
    # (mlc-llm#38: the chat module initialising when Vulkan ran out)
    pasted = ("Initializing the chat module...\n"
              "[16:56:46] D:\\a\\utils\\utils\\tvm\\src\\runtime\\vulkan\\vulkan_buffer.cc:61:\n"
              "An error occurred during the execution of TVM.\n"
              "  Check failed: (__e == VK_SUCCESS) is false: Vulkan Error, code=-2: VK_ERROR_OUT_OF_DEVICE_MEMORY")
    # not the run; since session 22 (diagnose22) the chat module's "Initializing" line is read as the load, which is
    # mlc-llm#38's label (it had been answered "phase not stated")
    assert diagnose_text(pasted).category == "cuda_oom_load"

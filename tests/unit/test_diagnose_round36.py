"""Round 36's misses (session 12, diagnose30), each fixed by a signal and tested with the user's paste and the
look-alikes beside it: R's allocator refusing a vector is the host's memory; a cluster manager that ends a process for
its memory (YARN's container limit, Dask's nanny and its worker's memory stated at its limit) acts as the kernel's OOM
killer does; GCC's driver reporting that SIGKILL ended the compiler is a kill; thrust's bad_alloc that carries a CUDA
error is the card's; XGBoost's tree updaters and boosting rounds are training (the run). Pastes are the threads' own
lines (measurements/public_errors/round36.jsonl). One stays unanswered (docs/diagnosis.md): cupy#1912's refusal in a
Chainer program carries no phase word.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.sizes import process_at_memory_limit

MEMORY = {"oom_killer", "cuda_oom_load", "cuda_oom_long_context"}


# -- R's allocator is host memory ----------------------------------------------------------------------------------

def test_r_cannot_allocate_vector_while_fitting_is_host_ram():
    # infinityFlow#5, as pasted: the linear and polynomial models being fitted
    pasted = ("I am now in the training session and constantly get this error during the _Linear and polynomial "
              "models_ part.\n_Error: cannot allocate vector of size 401.6 MB._")
    assert diagnose_text(pasted).category == "oom_killer"


def test_r_refusal_misspelt_by_the_user_is_host_ram():
    # SAM#45, as pasted ("can not"), quoted inside the user's sentence
    pasted = ("I am new to R and working with samr package.\n"
              "I am getting this error \" can not allocate vector of size 20.3Mb\" after running SAM")
    assert diagnose_text(pasted).category == "oom_killer"


def test_rs_long_vector_limit_is_not_memory():
    # look-alike: R refusing a vector longer than 2^31 - 1 elements is a build limit, not a lack of memory
    assert diagnose_text("Error: long vectors not supported yet: memory.c:3451").category not in MEMORY


# -- a cluster manager ending a process for its memory -------------------------------------------------------------

def test_yarn_container_killed_for_exceeding_memory_limits_is_the_killer():
    # TensorFlowOnSpark#134, as pasted
    pasted = ("17/11/25 18:23:24 ERROR YarnClusterScheduler: Lost executor 9 on harrisburg.cs.colostate.edu: Container "
              "killed by YARN for exceeding memory limits. 7.2 GB of 4.2 GB virtual memory used. Consider boosting "
              "spark.yarn.executor.memoryOverhead.")
    assert diagnose_text(pasted).category == "oom_killer"


def test_yarn_container_killed_on_request_is_not_memory():
    # look-alike: the ApplicationMaster ending a container on request (exit 143 = SIGTERM) says nothing of memory
    pasted = ("Container killed by the ApplicationMaster.\nContainer killed on request. Exit code is 143\n"
              "Container exited with a non-zero exit code 143")
    assert diagnose_text(pasted).category not in MEMORY


def test_dask_nanny_restarting_a_worker_past_its_memory_budget_is_the_killer():
    # distributed#2130, as pasted: a worker with a 3 GB limit
    pasted = ("distributed.worker - INFO -                Memory:                    3.00 GB\n"
              "distributed.worker - INFO -         Registered to:   tcp://100.97.252.8:37343\n"
              "distributed.nanny - WARNING - Worker exceeded 95% memory budget. Restarting")
    assert diagnose_text(pasted).category == "oom_killer"


def test_dask_worker_memory_at_its_limit_is_host_ram():
    # ert#2831, as pasted: 3.70 GB of a 4.00 GB limit (92 %, past Dask's 80 % pause fraction)
    pasted = ("distributed.worker - WARNING - Memory use is high but worker has no data to store to disk.  Perhaps "
              "some other process is leaking memory?  Process memory: 3.70 GB -- Worker memory limit: 4.00 GB")
    assert diagnose_text(pasted).category == "oom_killer"


def test_dask_worker_memory_well_below_its_limit_is_not_called_memory():
    # look-alike by the numbers: the same warning at 30 % of the limit
    line = ("distributed.worker - warning - memory use is high but worker has no data to store to disk.  perhaps "
            "some other process is leaking memory?  process memory: 1.20 gb -- worker memory limit: 4.00 gb")
    assert not process_at_memory_limit(line)
    assert diagnose_text(line).category not in MEMORY


def test_a_bare_worker_restart_is_not_called_memory():
    # look-alike: a restart with no reason given
    assert diagnose_text("distributed.nanny - WARNING - Restarting worker").category not in MEMORY


# -- a compiler killed --------------------------------------------------------------------------------------------

def test_gcc_reporting_cc1plus_killed_is_a_kill():
    # lc0#1395, as pasted: a ninja build; with -j 1 it went further
    pasted = "c++: fatal error: Killed signal terminated program cc1plus\nninja: build stopped: subcommand failed."
    assert diagnose_text(pasted).category == "oom_killer"


def test_a_compiler_crash_or_a_missing_header_is_not_memory():
    # look-alikes: a segmentation fault in the compiler, a header not found
    crash = "c++: internal compiler error: Segmentation fault signal terminated program cc1plus"
    header = "cc1plus: fatal error: cuda_runtime.h: No such file or directory\ncompilation terminated."
    assert diagnose_text(crash).category == "not_memory"
    assert diagnose_text(header).category == "not_memory"


# -- XGBoost on a GPU: the card's, during training ----------------------------------------------------------------

def test_thrust_bad_alloc_carrying_a_cuda_error_is_the_card_in_training():
    # xgboost#8484, as pasted: gpu_hist on a Tesla P100, 32 MiB refused with 7.75 MiB free
    pasted = ("../src/tree/updater_gpu_hist.cu:784: Exception in gpu_hist: [11:01:50] "
              "../src/c_api/../data/../common/device_helpers.cuh:431: Memory allocation error on worker 0: "
              "std::bad_alloc: cudaErrorMemoryAllocation: out of memory\n- Free memory: 8126464\n"
              "- Requested memory: 33554432")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_plain_bad_alloc_stays_host_ram():
    # look-alike: C++'s bad_alloc with no device named is the host's allocator
    pasted = ("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n"
              "Aborted (core dumped)")
    assert diagnose_text(pasted).category == "oom_killer"


def test_xgboost_gpu_updater_out_of_memory_before_a_boosting_round_is_the_run():
    # xgboost#2019, as pasted (the order of the lines is the reporter's)
    pasted = ("CUDA error: build/xgboost/src/xgboost/plugin/updater_gpu/src/device_helpers.cuh(386): out of memory\n"
              "[12:16:29] /src/xgblib.cc:284: initializing model\n[12:16:29] /src/xgblib.cc:296: boosting round 0")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_gpu_hist_check_that_fails_is_not_memory():
    # look-alike: the same updater failing a check on its bins
    pasted = ("xgboost.core.XGBoostError: [10:21:33] ../src/tree/updater_gpu_hist.cu:781: Exception in gpu_hist: "
              "[10:21:33] ../src/tree/updater_gpu_hist.cu:700: Check failed: n_bins <= 256")
    assert diagnose_text(pasted).category not in MEMORY


def test_a_cuda_refusal_while_loading_a_model_stays_the_load():
    # look-alike for the phase: a model's load, no updater or boosting round
    pasted = ("model = AutoModelForCausalLM.from_pretrained(path, device_map=\"cuda\")\n"
              "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB")
    assert diagnose_text(pasted).category == "cuda_oom_load"

"""Rounds 56-59's misses (session 19, diagnose19), tuned on once they had been scored (once, together, in session 18:
scoring/round56_59_first_run.txt) and moved to tuning.

- DeepSpeed ZeRO-3's parameter coordinator (deepspeed/runtime/zero/partitioned_param_coordinator.py) gathers a
  submodule's partitioned weights in fetch_sub_module, which only the module hooks pre_sub_module_forward_function /
  pre_sub_module_backward_function call (deepspeed/runtime/zero/parameter_offload.py): a module is running its forward
  or backward pass, the run. A load under ZeRO-3 partitions each weight as it is made (zero.Init's _post_init_method,
  partition_parameters.py) without the coordinator, and stays the load.
- A run's own log line printing the input's length as a key and its value ("rung: tokens=1 seqlen=128"): the size of
  what is being computed, the run. A configured maximum ("max_seq_len=4096") is not read.
- TensorRT-LLM's KV block manager with no free block ("Can't allocate new blocks. No free blocks left.",
  kvCacheManager.cpp allocateBlock; its memory docs call it an out-of-memory of a paged KV cache too small for the
  batch): the KV pool sized at start-up, exhausted by running requests (tensorrt-llm-kv-blocks). Another assertion of
  that file (mNextBlocks.empty(), NVIDIA/TensorRT-LLM#699, a corpus look-alike) stays not memory.

The four other phase misses of these rounds are PyTorch's message alone (a docs page, a model discussion, two files):
nothing in their text states the phase, and they keep the phase-unstated answer (test_diagnose_phase_unstated.py).
Each test quotes a public paste (measurements/public_errors/round5[6-9]*.jsonl, URL beside it); the expected answer
is the collector's label, from the thread or file around the paste; each contrast keeps the paste's allocator line.
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text

ALLOCATOR_LINE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1002.00 MiB. GPU 0 has a total capacity"
                  " of 79.14 GiB of which 785.50 MiB is free. Including non-PyTorch memory, this process has 78.36 GiB "
                  "memory in use. Of the allocated memory 76.66 GiB is allocated by PyTorch, and 671.56 MiB is reserved "
                  "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                  "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n")
_SITE = '  File "/n/home08/xiaominli/.conda/envs/NPO/lib/python3.11/site-packages/'
# https://github.com/XuHuang441/Multi-player-Nash-Policy-Optimization/blob/db5fcb8d5ac20a5576659430de254ffac64e543f/
# TDPO_server/sbatch_logs/12897566.err (round 58): a ZeRO-3 training job's log, labelled the run
TDPO_12897566 = (
    _SITE + 'deepspeed/runtime/zero/partitioned_param_coordinator.py", line 471, in __all_gather_params\n'
    "    self.__all_gather_params_(nonquantized_params, forward, quantize=self.zero_quantized_weights)\n"
    + _SITE + 'deepspeed/runtime/zero/partitioned_param_coordinator.py", line 500, in __all_gather_params_\n'
    "    handle = param_group[0].all_gather_coalesced(param_group, quantize=quantize)\n"
    + _SITE + 'deepspeed/utils/nvtx.py", line 20, in wrapped_fn\n'
    "    ret_val = func(*args, **kwargs)\n"
    + _SITE + 'deepspeed/runtime/zero/partition_parameters.py", line 1254, in all_gather_coalesced\n'
    "    param_buffer = torch.empty(\n" + ALLOCATOR_LINE)
# contrast: the same allocator line under zero.Init while from_pretrained builds the model (each weight partitioned as
# it is made: partition_parameters.py's _post_init_method), no coordinator frame
ZERO3_INIT_LOAD = (
    _SITE + 'transformers/modeling_utils.py", line 3832, in from_pretrained\n'
    "    model = cls(config, *model_args, **model_kwargs)\n"
    + _SITE + 'deepspeed/runtime/zero/partition_parameters.py", line 511, in wrapper\n'
    "    self._post_init_method(module)\n"
    + _SITE + 'deepspeed/runtime/zero/partition_parameters.py", line 1085, in _post_init_method\n'
    "    param.partition()\n" + ALLOCATOR_LINE)

# https://github.com/pjordanandrsn/experts4bit-qlora/blob/2810f3cccb0a20fba06b6d70980387d93d243bcf/bench/
# mxfp4-arena-train/receipts-284b-fp8/run.txt (round 58): a QLoRA training ladder's step, labelled the run
LADDER_FP8 = (
    "[2026-08-14T11:30:56Z]   rung: tokens=1 seqlen=128 (total 128 tokens)\n"
    '  File "/usr/local/lib/python3.12/dist-packages/experts4bit_qlora/formats/mxfp4.py", line 95, in dequantize_mxfp4\n'
    "    out[:, 0::2] = lut[(blk & 0x0F).int()]  # low nibble\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 16.00 MiB. GPU 0 has a total capacity of 23.55 GiB "
    "of which 11.31 MiB is free. Including non-PyTorch memory, this process has 23.49 GiB memory in use. Of the "
    "allocated memory 23.21 GiB is allocated by PyTorch, and 20.45 MiB is reserved by PyTorch but unallocated. If "
    "reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
    "[2026-08-14T11:32:20Z]   rung tokens=1 seqlen=128 -> exit 1\n")

# https://nvidia.github.io/TensorRT-LLM/reference/memory.html#kv-cache-tensor (round 56): the docs' own quote
TRTLLM_DOCS = "Can't allocate new blocks. No free blocks left\n"
# https://github.com/NVIDIA/TensorRT-LLM/issues/694 (the reporter's first error line; the thread: a batch the KV cache
# could not hold once the engine was built for a larger max_batch_size)
TRTLLM_694 = ("[TensorRT-LLM][ERROR] [TensorRT-LLM][ERROR] Assertion failed: Can't allocate new blocks. No free blocks "
              "left. (/home/jenkins/agent/workspace/LLM/main/L0_PostMerge/llm/cpp/tensorrt_llm/batch_manager/"
              "kvCacheManager.cpp:362)\n")
# the newer wording, one pool per attention window (kvCacheManager.cpp WindowBlockManager::allocateBlock)
TRTLLM_WINDOW = ("[TensorRT-LLM][ERROR] Assertion failed: Can't allocate new blocks for window size 4096. No free "
                 "blocks left.\n")
# https://github.com/NVIDIA/TensorRT-LLM/issues/699 (tuning, labelled not memory): another assertion of the same file
TRTLLM_699 = ("[TensorRT-LLM][ERROR] Assertion failed: mNextBlocks.empty() (/home/jenkins/agent/workspace/LLM/main/"
              "L0_PostMerge/llm/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:160)\n")


def test_zero3_coordinator_gathering_for_a_submodule_is_the_run():
    assert diagnose_text(TDPO_12897566).category == "cuda_oom_long_context"


def test_zero3_partitioning_weights_as_from_pretrained_makes_them_stays_the_load():
    d = diagnose_text(ZERO3_INIT_LOAD)
    assert d.category == "cuda_oom_load" and d.entry is not None and d.entry.id == "cuda-oom-load"


def test_the_allocator_line_alone_still_states_no_phase():
    d = diagnose_text(ALLOCATOR_LINE)
    assert d.category == "cuda_oom_phase_unstated" and d.entry is not None and d.entry.id == "cuda-oom-phase-unstated"


def test_a_run_logging_its_inputs_length_is_the_run():
    assert diagnose_text(LADDER_FP8).category == "cuda_oom_long_context"


@pytest.mark.parametrize("config_line", [
    "[INFO] engine config: max_seq_len=4096 max_batch_size=8\n",
    "config: max_seq_length = 2048\n",
])
def test_a_configured_maximum_length_is_not_an_input_being_run(config_line):
    d = diagnose_text(config_line + ALLOCATOR_LINE)
    assert d.category == "cuda_oom_phase_unstated" and d.entry is not None and d.entry.id == "cuda-oom-phase-unstated"


@pytest.mark.parametrize("text", [TRTLLM_DOCS, TRTLLM_694, TRTLLM_WINDOW])
def test_tensorrt_llm_with_no_free_kv_block_is_its_pool_exhausted_by_running_requests(text):
    d = diagnose_text(text)
    assert d.category == "cuda_oom_long_context" and d.entry is not None and d.entry.id == "tensorrt-llm-kv-blocks"


def test_another_kv_cache_manager_assertion_stays_not_memory():
    assert diagnose_text(TRTLLM_699).category == "not_memory"


# https://github.com/AtomicBot-ai/Atomic-Chat/issues/44 (round 56, labelled not memory): the app's bundled llama.cpp
# aborting on a projector type it does not know. ggml_abort prints "%s:%d: " (file, line) then GGML_ABORT's message
# (ggml/src/ggml.c), so the line is the program's own abort whatever its words
ATOMIC_CHAT_44 = "tools/mtmd/clip.cpp:4391: Unknown projector type\n"


def test_ggmls_abort_line_with_no_memory_said_is_not_memory():
    d = diagnose_text(ATOMIC_CHAT_44)
    assert d.category == "not_memory" and d.entry is not None and d.entry.id == "notmem-other-error"


@pytest.mark.parametrize("text, expected", [
    # a compiler's diagnostic puts a column after the line: no abort, nothing stated as failing at run time
    ("src/clip.cpp:4391:12: warning: unused variable 'n' [-Wunused-variable]\n", "unknown"),
    # the same abort form saying what ran short stays the memory failure (ggml's CUDA error, its own entry)
    ("/ggml/src/ggml-cuda/ggml-cuda.cu:96: CUDA error: out of memory\n", "llamacpp_alloc_fail"),
])
def test_the_source_line_form_does_not_override_what_the_line_says(text, expected):
    assert diagnose_text(text).category == expected

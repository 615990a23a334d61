"""Round 42's misses (session 15, diagnose43), each fixed by a signal — the runtime's own recovery, the memory space
XLA names, a start-up setting, the time a server ran, the writer's figures — and tested with the paste it comes from
(measurements/public_errors/round42.jsonl) and the public texts beside it that the same signal must leave alone. Each
test names the thread or source file its text is quoted from; the figures are worked out in the comments.

Section 6 (diagnose44, session 15): llama.cpp#3221 (build 1233's "CUDA error 2 at ggml-cuda.cu:5509: out of memory"
before any allocation, a look-alike by its maintainer's word), left by diagnose43 because llama.cpp#3199 (more2.jsonl),
the same text, build and reporter, was labelled a ggml allocation failure; #3199's own thread shows the error from a
bare ./main with no model, so it was relabelled a look-alike, and both are read by where the error came: right after
the program's banner, before ggml's device list (llamacpp_common.py, 4.).
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES
from runlocal.diagnose.phase import phase_of_line
from runlocal.diagnose.small_card import WriterFigures
from runlocal.hardware.unified_memory import apple_default_working_set

# -- 1. llama.cpp's compute buffers retried without pipeline parallelism ------------------------------------------
# https://github.com/ggml-org/llama.cpp/pull/26297 (a comment, August 2026): llama-server on three cards, --fit off
PR_26297_REFUSAL = (
    "1.06.520.077 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 51748.72 MiB on device 1: cudaMalloc failed:"
    " out of memory\n"
    "1.06.520.084 E ggml_gallocr_reserve_n_impl: failed to allocate CUDA1 buffer of size 54262464512\n"
    "1.06.520.086 E graph_reserve: failed to allocate compute buffers\n"
    "1.06.520.107 W sched_reserve: compute buffer allocation failed, retrying without pipeline parallelism\n")
PR_26297_WENT_ON = "1.07.304.130 I srv    load_model: initializing, n_slots = 1, n_ctx_slot = 50176, kv_unified = 'false'\n"


def test_a_compute_buffer_refused_then_retried_without_pipeline_parallelism_and_the_load_going_on_is_not_memory():
    d = diagnose_text(PR_26297_REFUSAL + PR_26297_WENT_ON)
    assert d.category == "not_memory"
    assert d.entry is not None and d.entry.id == "notmem-pipeline-retry"
    assert d.matched_line is not None and "retrying without pipeline parallelism" in d.matched_line


@pytest.mark.parametrize("tail", ["", "\n\n"])
def test_a_paste_that_stops_at_the_retry_says_nothing_of_its_outcome_and_stays_memory(tail):
    assert diagnose_text(PR_26297_REFUSAL + tail).category == "llamacpp_alloc_fail"


@pytest.mark.parametrize("after", [
    # src/llama-context.cpp (sched_reserve): the retry's own graph_reserve fails, and it throws
    "1.07.100.000 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 25874.36 MiB on device 1: cudaMalloc "
    "failed: out of memory\n1.07.100.001 E graph_reserve: failed to allocate compute buffers\n",
    "llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers\n",
    # ... or the token-generation graph reserved after it does ("failed to allocate compute tg buffers")
    "llama_init_from_model: failed to initialize the context: failed to allocate compute tg buffers\n",
])
def test_the_retry_refused_too_is_memory(after):
    assert diagnose_text(PR_26297_REFUSAL + after + PR_26297_WENT_ON).category == "llamacpp_alloc_fail"


def test_a_refusal_after_a_retry_that_had_worked_is_memory():
    # the retry went on, then the run asked for more: the later refusal is the failure, not the recovered one
    text = PR_26297_REFUSAL + PR_26297_WENT_ON + (
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 0: cudaMalloc failed: out of "
        "memory\n")
    assert diagnose_text(text).category in MEMORY_CATEGORIES


# -- 2. XLA's memory space: a TPU core's on-chip scratch (vmem) is not the device's memory (hbm) ---------------------
# https://github.com/sgl-project/sglang-jax/issues/408 (the title and the error line)
SGLANG_JAX_408 = (
    "large num_slices_per_block may cause update kv cache kernel OOM\n"
    '  File "/home/gcpuser/sky_workdir/sglang-jax/python/sgl_jax/srt/mem_cache/memory_pool.py", line 777, in '
    "update_fused_kv_cache_vectorized\n"
    "    kv_cache = kv_cache_update(\n"
    "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while allocating on stack "
    "for %kv_cache_update.1 = bf16[710080,64,128]{2,1,0:T(8,128)(2,1)} custom-call(%select_n.2, %copy-done.1, "
    '%copy-done, %copy.5), custom_call_target="tpu_custom_call"\n')


def test_a_kernel_out_of_vmem_is_its_block_setting_not_memory_whatever_the_title_says():
    d = diagnose_text(SGLANG_JAX_408)
    assert d.category == "not_memory"
    assert d.entry is not None and d.entry.id == "notmem-kernel-scratch"


def test_xlas_documented_scoped_vmem_refusal_is_not_memory():
    # openxla/xla docs/errors/error_1001.md, its error log example (E1001, "HBM and Vmem OOM", compile time)
    text = ("XlaRuntimeError: RESOURCE_EXHAUSTED: Allocation (size=134217728) would exceed memory (size=67108864) :: "
            "#allocation25 [shape = 'u8[134217728]{0}', space=vmem, size = 0x8000000, tag = 'scoped memory for "
            "ragged_latency_optimized_all_gather_lhs_contracting_gated_matmul_kernel.2'] :: "
            "ragged_latency_optimized_all_gather_lhs_contracting_gated_matmul_kernel.2")
    assert diagnose_text(text).category == "not_memory"


@pytest.mark.parametrize("text", [
    # openxla/xla docs/errors/error_1000.md (E1000, the program needs more HBM than the TPU has)
    "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 49.34G of 32.00G "
    "hbm. Exceeded hbm capacity by 17.34G.",
    # https://github.com/tensorflow/tpu/issues/385 (round 35)
    "Status code: Resource exhausted [9x]\n  Compilation failure: Ran out of memory in memory space hbm. Used 8.38G of "
    "8.00G hbm. Exceeded hbm capacity by 385.25M.",
])
def test_the_same_words_with_hbm_are_the_device_running_out(text):
    assert diagnose_text(text).category in MEMORY_CATEGORIES


# -- 3. vLLM's limit on multimodal items per prompt sizes its start-up profile run --------------------------------
# https://github.com/vllm-project/vllm/issues/22173 (the title and two lines of the workers' traceback)
VLLM_22173_FRAMES = (
    '(VllmWorkerProcess pid=42876) ERROR 08-04 16:54:59 [multiproc_worker_utils.py:238]   File "******/miniconda3/'
    'envs/qwen25vl.train.vlm0901/lib/python3.10/site-packages/vllm/worker/model_runner.py", line 1843, in '
    "execute_model\n"
    "(VllmWorkerProcess pid=42876) ERROR 08-04 16:54:59 [multiproc_worker_utils.py:238]     "
    "hidden_or_intermediate_states = model_executable(\n")


def test_an_out_of_memory_said_with_limit_mm_per_prompt_is_the_start_up_profile_run():
    title = ('[Bug]: 0.9.0.1:CUDA out of memory when setting limit_mm_per_prompt={"image":10,"video":1} with '
             "Qwen2.5-VL-72B-GPTQ-Int4\n")
    assert diagnose_text(title + VLLM_22173_FRAMES).category == "cuda_oom_load"
    assert phase_of_line(title.lower()) == "load"
    assert phase_of_line("vllm serve qwen2.5-vl --limit-mm-per-prompt image=10") == "load"  # the CLI's spelling


def test_the_same_frames_without_the_setting_are_read_as_the_run_as_before():
    # execute_model alone is the engine's step (the profile run goes through it too, so only the setting tells)
    title = "[Bug]: 0.9.0.1:CUDA out of memory with Qwen2.5-VL-72B-GPTQ-Int4\n"
    assert diagnose_text(title + VLLM_22173_FRAMES).category == "cuda_oom_long_context"


# -- 4. a server said to have run for minutes or hours: loaded and serving ------------------------------------------
# https://github.com/ggml-org/llama.cpp/issues/22638 (the reporter's summary quoting the error)
LLAMA_22638 = ("`llama-server` crashes with `CUDA error: out of memory` inside `ggml_cuda_graph_evaluate_and_capture` "
               "→ `cudaGraphInstantiate(...)` after running ~30 min to ~3 h of varied unique prompts (different content "
               "each request — no cache reuse possible).")


def test_ggmls_cuda_out_of_memory_after_a_server_ran_for_half_an_hour_is_the_run():
    assert diagnose_text(LLAMA_22638).category == "cuda_oom_long_context"


@pytest.mark.parametrize("words", ["after running for 2 hours", "after running about 45 minutes",
                                   "after running ~3 h", "after running 90 mins"])
def test_a_duration_run_is_the_run(words):
    assert phase_of_line(words) == "run"


def test_the_same_error_without_a_duration_stays_ggmls_allocation():
    # ggml's CUDA out-of-memory with nothing said of a run: its allocation failure while it places the weights
    text = LLAMA_22638.split(" after running")[0]
    assert diagnose_text(text).category == "llamacpp_alloc_fail"


def test_running_a_number_of_something_else_is_no_duration():
    assert phase_of_line("after running 3 tests the build passed") is None


# -- 5. macOS's IOGPUMemory panic: the writer's figures decide -------------------------------------------------------
PANIC = ('panic(cpu 7 caller 0xfffffe004418be28): "completeMemory() prepare count underflow" @IOGPUMemory.cpp:550\n'
         "Debugger message: panic\n")


def test_the_driver_panic_on_a_mac_that_holds_the_model_is_not_memory():
    # https://github.com/jundot/omlx/issues/862: a 9B model at 6 bits on a 16 GB Mac mini. Weights 9e9 × (6 + 0.5) / 8
    # = 7.31e9 bytes; the default working set of 16 GiB is 2/3 of it, 11.45e9 bytes: held with room
    assert 9e9 * 6.5 / 8 == 7.3125e9 and apple_default_working_set(16 << 30) == 11453246122
    d = diagnose_text("mac mini m4 ,16g , run MLX-Qwopus3.5-9B-v3-6bit\n" + PANIC)
    assert d.category == "not_memory"
    assert d.entry is not None and d.entry.id == "notmem-gpu-driver-panic"


def test_the_driver_panic_with_a_model_inside_a_large_macs_working_set_is_not_memory():
    # https://github.com/ml-explore/mlx/issues/3346 (a reference count underflow in IOGPU.kext, the reporter's words):
    # a 122B model at 4 bits, 122e9 × 4.5 / 8 = 68.6e9 bytes, on a 96 GB M3 Ultra, 3/4 of 96 GiB = 77.3e9 bytes
    assert 122e9 * 4.5 / 8 < apple_default_working_set(96 << 30)
    text = ("Hardware: Mac Studio, Apple M3 Ultra, 96 GB Unified Memory\n"
            "Model: Qwen3.5-122B-A10B-Vision-MLX-Mixed-4bit (~50GB VRAM)\n" + PANIC)
    assert diagnose_text(text).category == "not_memory"


def test_the_driver_panic_with_a_model_above_the_working_set_stays_memory():
    # https://github.com/exo-explore/exo/issues/1972 ("Core 93% wired" before the panic): an 80B model at 4 bits,
    # 80e9 × 4.5 / 8 = 45.0e9 bytes, on a 48 GB Mac mini M4 Pro, 3/4 of 48 GiB = 38.7e9 bytes: over
    assert 80e9 * 4.5 / 8 > apple_default_working_set(48 << 30)
    text = ("A Mac mini M4 Pro with 48 GB unified memory, on an earlier macOS, hard-panicked\n"
            "Loaded model: mlx-community/Qwen3-Coder-Next-4bit (80B-A3B-MoE, 4-bit, ~45.6 GB on disk)\n" + PANIC)
    assert diagnose_text(text).category == "metal_oom"


@pytest.mark.parametrize("said", [
    "",  # https://github.com/jundot/omlx/issues/1372 (round 4): the panic alone
    "mac mini m4 ,16g , run MLX-Qwopus3.5-9B\n",  # no bits
    "run MLX-Qwopus3.5-9B-v3-6bit\n",  # no Mac memory
])
def test_the_driver_panic_without_all_three_figures_stays_memory(said):
    assert diagnose_text(said + PANIC).category == "metal_oom"


def test_the_writers_figures_are_read_from_their_words():
    said = WriterFigures()
    for line in ("mac mini m4 ,16g , run mlx-qwopus3.5-9b-v3-6bit", "debugger message: panic"):
        said.read(line)
    assert (said.mac_ram_gib, said.fewest_billions, said.most_billions, said.bits) == (16.0, 9.0, 9.0, 6.0)
    assert said.mac_holds_model()


def test_the_driver_panic_with_a_draft_model_beside_a_large_one_stays_memory():
    # review15: a 0.5B draft model named beside a 32B must not make the Mac "hold the model": 32e9 × 4.5 / 8 = 18.0e9
    # bytes against a 16 GB Mac's 11.45e9-byte working set
    assert 32e9 * 4.5 / 8 > apple_default_working_set(16 << 30)
    text = ("Mac mini M4 16GB, mlx_lm.server with Qwen2.5-32B-Instruct-4bit and draft model "
            "Qwen2.5-0.5B-Instruct-4bit\n" + PANIC)
    assert diagnose_text(text).category == "metal_oom"


def test_the_driver_panic_with_weights_filling_the_working_set_stays_memory():
    # review15: a 14B at 6 bits on 16 GB is 14e9 × 6.5 / 8 = 11.375e9 bytes, 99 % of the 11.45e9-byte working set —
    # no room for its KV cache: above the 90 % a plan calls "fits", so the panic is not taken as the driver's alone
    assert 0.9 * apple_default_working_set(16 << 30) < 14e9 * 6.5 / 8 <= apple_default_working_set(16 << 30)
    assert diagnose_text("mac mini m4 ,16g , run MLX-Qwen3-14B-6bit\n" + PANIC).category == "metal_oom"


# -- 6. CUDA's status right after the banner, before ggml's device list: CUDA failing to start, not memory -----------
# https://github.com/ggml-org/llama.cpp/issues/3221 (build 1233): the maintainer, pointing at ggml-cuda.cu#L5509 of
# 98311c4: "failing during initialization while enumerating the devices, before any allocations are actually made"
ISSUE_3221 = ("./main -m /data/text-generation-webui/models/DeciLM-6b-instruct/DeciLM-6b-instruct_q2.gguf\n"
              "Log start\nmain: build = 1233 (98311c4)\nmain: seed  = 1694898033\n\n")
CUDA_ERROR_5509 = "CUDA error 2 at /data/llama.cpp/ggml-cuda.cu:5509: out of memory\ncurrent device: 1\n"


def test_a_cuda_out_of_memory_status_right_after_the_banner_is_cuda_failing_to_start():
    d = diagnose_text(ISSUE_3221 + CUDA_ERROR_5509)
    assert d.category == "not_memory"
    assert d.entry is not None and d.entry.id == "notmem-cuda-init"


def test_the_same_error_from_a_bare_main_with_no_model_is_the_same_start_up_failure():
    # https://github.com/ggml-org/llama.cpp/issues/3199 (its opening post): "./main" alone, no model, same error
    text = "(textgen) [root@pve0 bin]# ./main\nLog start\nmain: build = 1233 (98311c4)\nmain: seed  = 1694805687\n\n"
    assert diagnose_text(text + CUDA_ERROR_5509.replace("device: 1", "device: 0")).category == "not_memory"


def test_the_same_status_after_the_device_list_stays_memory():
    # ggml_init_cublas prints "found N CUDA devices" once cudaGetDeviceCount has worked: an error after that list came
    # later, from an allocation (https://github.com/TabbyML/tabby/issues/726: 'Default parallelism = 4 caused OOM')
    devices = "ggml_init_cublas: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6\n\n"
    assert diagnose_text(ISSUE_3221.rstrip("\n") + "\n" + devices + CUDA_ERROR_5509).category == "llamacpp_alloc_fail"
    # https://github.com/QwenLM/qwen.cpp/issues/55: two A800s listed, then the 72B model's CUDA error 2
    qwen = ("root@cs:/home# ./qwen.cpp/build/bin/main -m qwen72b-ggml.bin --tiktoken qwen-72b-raw/qwen.tiktoken -i\n"
            "ggml_init_cublas: found 2 CUDA devices:\n  Device 0: NVIDIA A800 80GB PCIe, compute capability 8.0\n"
            "  Device 1: NVIDIA A800 80GB PCIe, compute capability 8.0\n\n"
            "CUDA error 2 at /home/qwen.cpp/third_party/ggml/src/ggml-cuda.cu:7196: out of memory\ncurrent device: 0\n")
    assert diagnose_text(qwen).category == "llamacpp_alloc_fail"


def test_a_paste_cut_after_the_command_line_is_no_start_and_stays_memory():
    # https://github.com/ggml-org/llama.cpp/issues/1230 (pinned.jsonl): the command, then the error; the lines between
    # (the banner, the model's loading) were left out, so nothing says the error came before an allocation
    text = ("./main -ngl 20 --ctx_size 2048 -n 2048 -c 2048 --temp 0.7 --top_k 40 --top_p 0.5\n"
            "WSL: CUDA error 2 at ggml-cuda.cu:359: out of memory\n")
    assert diagnose_text(text).category in MEMORY_CATEGORIES

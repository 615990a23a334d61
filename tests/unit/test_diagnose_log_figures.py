"""Fixes computed from the figures a pasted log states (tests start from the user's paste in the thread named)."""

from __future__ import annotations

import re

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

# vllm-project/vllm#25837: vLLM on a 4 GiB card whose desktop already holds some of it
PASTE_25837 = """\
(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718]   File "/home/vmejia/projects/loreal/loreal-dipi/.venv/\
lib/python3.10/site-packages/vllm/v1/worker/gpu_worker.py", line 180, in init_device
(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718]     raise ValueError(
(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718] ValueError: Free memory on device (3.22/4.0 GiB) on \
startup is less than desired GPU memory utilization (0.9, 3.6 GiB). Decrease GPU memory utilization or reduce GPU \
memory used by other processes."""


def test_vllm_startup_refusal_gets_the_largest_share_that_was_free():
    doc = with_computed_fixes(diagnose_text(PASTE_25837))
    assert doc["category"] == "vllm_gpu_util"
    first = doc["fixes"][0]
    # 3.22 of 4.0 GiB free: vLLM starts when utilization x total <= free, so 0.80 is the largest two-digit share
    assert first["command"] == "vllm serve MODEL --gpu-memory-utilization 0.80"
    for fix in doc["fixes"]:   # and no fix asks for more than was free (the old advice raised it to 0.95)
        m = re.search(r"--gpu-memory-utilization ([\d.]+)", fix["command"])
        assert m is None or float(m.group(1)) * 4.0 <= 3.22


# ollama/ollama#8734: deepseek-r1:671b on Ollama 0.5.7, refused before loading
PASTE_8734 = """\
[GIN] 2025/01/31 - 20:48:18 | 200 |     117.056µs |       127.0.0.1 | HEAD     "/"
[GIN] 2025/01/31 - 20:48:18 | 200 |   17.354684ms |       127.0.0.1 | POST     "/api/show"
time=2025-01-31T20:48:19.586Z level=INFO source=server.go:104 msg="system memory" total="1690.2 GiB" \
free="358.4 GiB" free_swap="7.8 GiB"
time=2025-01-31T20:48:19.587Z level=WARN source=server.go:136 msg="model request too large for system" \
requested="391.0 GiB" available=393216983040 total="1690.2 GiB" free="358.4 GiB" swap="7.8 GiB"
time=2025-01-31T20:48:19.587Z level=INFO source=sched.go:428 msg="NewLlamaServer failed" \
model=/root/.ollama/models/blobs/sha256-9801e7fce27dbf3d0bfb468b7b21f1d132131a546dfc43e50518631b8b1800a9 \
error="model requires more system memory (391.0 GiB) than is available (366.2 GiB)"
[GIN] 2025/01/31 - 20:48:19 | 500 |  1.394289898s |       127.0.0.1 | POST     "/api/generate"
Error: model requires more system memory (391.0 GiB) than is available (366.2 GiB)"""


def test_ollama_system_memory_refusal_is_sized_by_the_logs_shortfall():
    doc = with_computed_fixes(diagnose_text(PASTE_8734))
    assert doc["category"] == "ollama_system_memory"
    first, second = doc["fixes"][:2]
    # 391.0 - 366.2 = 24.8 GiB short; Ollama's "available" is the 358.4 GiB free plus the 7.8 GiB of free swap
    assert first["title"] == "Free at least 24.8 GiB of RAM, then load again"
    assert "358 GiB free RAM + 7.8 GiB free swap" in first["effect"]
    assert "ollama stop" in first["command"]
    assert "shrink by 24.8 GiB (6% of the estimate)" in second["effect"]
    assert "--ram 366G" in second["effect"]


def test_sglang_unbalanced_capacity_reads_how_much_the_least_free_gpu_lacks():
    # SGLang at TP 2, one card shared with a notebook: its balance check prints both ranks' free memory (GiB)
    paste = ("[2025-03-20 10:02:11 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
             "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
             "min_per_gpu_memory=16.28, local_gpu_memory=46.81, local_gpu_memory * 0.9=42.129\n")
    doc = with_computed_fixes(diagnose_text(paste))
    assert doc["category"] == "vllm_gpu_util"
    first = doc["fixes"][0]
    # 46.81 - 16.28 = 30.53 GiB less free on the other card: what someone else holds there (or a smaller card)
    assert first["title"].startswith("Free 30.5 GiB on the least free GPU")
    assert "42.1 GiB" in first["effect"]


def test_cuda_malloc_async_set_in_the_log_is_the_setting_to_undo():
    # theroyallab/tabbyAPI#381: the server sets PyTorch's allocator backend itself
    paste = ('[BUG] "backend:cudaMallocAsync" cause OOM\n'
             "torch.OutOfMemoryError: Allocation on device on 2x4090. Because this code in main.py\n"
             '`os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"`\n')
    doc = with_computed_fixes(diagnose_text(paste))
    assert doc["category"] == "fragmentation"
    first = doc["fixes"][0]
    assert "unset PYTORCH_CUDA_ALLOC_CONF" in first["command"]
    assert "backend:cudaMallocAsync" in first["effect"]


# figures of a cache holding more unused than in tensors (reserved = 2.8 x allocated): PyTorch's own ">>" criterion
_STRANDED = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
             "23.55 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 22.44 GiB memory in "
             "use. Of the allocated memory 5.20 GiB is allocated by PyTorch, and 9.40 GiB is reserved by PyTorch but "
             "unallocated.")


def test_expandable_segments_already_on_is_not_suggested_again():
    paste = "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n" + _STRANDED
    doc = with_computed_fixes(diagnose_text(paste))
    assert doc["category"] == "fragmentation"
    assert all(f["command"] != "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" for f in doc["fixes"])
    # nor empty_cache as a computed fix: the allocator ran the same release (release_cached_blocks) before it raised
    assert all(f["command"] != "torch.cuda.empty_cache()" for f in doc["fixes"])


def test_pytorchs_own_advice_is_not_a_setting_the_user_made():
    # PyTorch's message suggests expandable segments; the user did not set them, so that stays the fix
    paste = _STRANDED + (" If reserved but unallocated memory is large try setting "
                         "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
    doc = with_computed_fixes(diagnose_text(paste))
    assert doc["category"] == "fragmentation"
    assert doc["fixes"][0]["command"] == "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    assert "9.4 GiB" in doc["fixes"][0]["effect"] and "2 GiB" in doc["fixes"][0]["effect"]
    # the current wording: a PyTorch that has expandable segments, so no upgrade is asked for
    assert not doc["fixes"][0]["title"].startswith("Upgrade")


def test_the_fix_names_the_variable_every_release_reads():
    # pytorch#183387: PyTorch 2.9.1 ignores expandable_segments under the new PYTORCH_ALLOC_CONF and reads it only under
    # PYTORCH_CUDA_ALLOC_CONF (karpathy/autoresearch#588 measured 2.11.0 reading both), so no fix, for any runtime,
    # sets it under the new name
    for runtime in (None, "pytorch", "transformers"):
        doc = with_computed_fixes(diagnose_text(_STRANDED, runtime), runtime)
        assert doc["fixes"][0]["command"] == "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
        assert not any("PYTORCH_ALLOC_CONF=expandable" in f["command"] for f in doc["fixes"])


# -- a long input's fix from the log's own figures (session 10): the input length the user states and the block
# PyTorch refused give the input that fits in what was free

def test_a_long_input_oom_with_its_length_gets_the_input_that_fits():
    # ChatGLM3#1294: a ~30k-token text, 20.18 GiB refused with 11.25 GiB free
    log = ("chatglm3-6b-32k处理长文本时，out of memory\n"
           "print(len(ids)) #长度大约为30k\n"
           "generated_ids = model.generate(input_ids=input_ids, max_new_tokens=16, do_sample=False)\n"
           "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.18 GiB (GPU 0; 79.35 GiB total "
           "capacity; 46.59 GiB already allocated; 11.25 GiB free; 66.82 GiB reserved in total by PyTorch)")
    doc = with_computed_fixes(diagnose_text(log))
    assert doc["category"] == "cuda_oom_long_context"
    first = doc["fixes"][0]
    # 30,000 × 11.25 / 20.18 = 16,724 → 16,720 (rounded down to 16): the block grows at least linearly
    assert first["title"] == "Cut the input to 16,720 tokens"
    assert "max_length=16720" in first["command"]


def test_lightllm_gets_its_own_input_cap():
    log = ("We deploy llama30b with lightllm; a 6k-token prompt fails\n"
           "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of "
           "79.15 GiB of which 1.00 GiB is free.")
    doc = with_computed_fixes(diagnose_text(log, runtime="lightllm"), "lightllm")   # --runtime lightllm
    assert doc["category"] == "cuda_oom_long_context"
    assert "--max_req_input_len 1488" in doc["fixes"][0]["command"]   # 6,000 × 1 / 4 = 1,500 → 1,488


def test_generated_token_counts_are_not_the_input():
    log = ("Output generated in 6.34 seconds (12 tokens/s, 100 tokens, context 2048)\n"
           "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "23.65 GiB of which 1.00 GiB is free.")
    doc = with_computed_fixes(diagnose_text(log))
    assert not any(f["title"].startswith("Cut the input") for f in doc["fixes"])

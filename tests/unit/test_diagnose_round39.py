"""Round 39's miss (session 13, diagnose32), fixed by a signal and tested with the user's paste and the look-alikes
beside it: MLX's Metal allocator refusing past its resource limit is memory even when the "[metal::malloc]" tag is not
pasted — the user said it in the issue's title ("Resource limit (499000) exceeded with mlx_lm.server distributed")
over a traceback that stops before its final error line. Pastes are the threads' own lines
(measurements/public_errors/round39.jsonl, more.jsonl).
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

# mlx-lm#831, as pasted: the title, the reporter's sentence, then the server thread's traceback (no final line)
MLX_LM_831 = (
    "Resource limit (499000) exceeded with mlx_lm.server distributed.\n"
    "Memory is under control, sometimes same commands work other times I get following exception.\n"
    "Exception in thread Thread-2 (_generate):\n"
    "Traceback (most recent call last):\n"
    '  File "/Users/ifioravanti/github/mlx-lm/mlx_lm/server.py", line 803, in _generate\n'
    "    responses = batch_generator.next()\n"
    '  File "/Users/ifioravanti/github/mlx-lm/mlx_lm/generate.py", line 1260, in next\n'
    "    return self._next()\n"
    '  File "/Users/ifioravanti/github/mlx-lm/mlx_lm/generate.py", line 1217, in _next\n'
    "    mx.async_eval(batch.y, batch.logprobs)")


def test_metal_resource_limit_said_in_a_title_over_a_cut_traceback_is_metal_memory():
    assert diagnose_text(MLX_LM_831).category == "metal_oom"


def test_metal_resource_limit_with_its_tag_is_still_metal_memory():
    # mlx-lm#1672, as pasted
    assert diagnose_text("    RuntimeError: [metal::malloc] Resource limit (499000) exceeded.").category == "metal_oom"


def test_metal_resource_limit_named_in_another_servers_title_is_metal_memory():
    # mlx-openai-server#188's title, without the tag
    title = "Metal resource limit (499000) exceeded with large prompts - needs mx.clear_cache()"
    assert diagnose_text(title).category == "metal_oom"


def test_the_same_traceback_without_the_title_names_no_lack_of_memory():
    # look-alike: the traceback alone (no limit, no allocator) says nothing of memory
    traceback_only = MLX_LM_831.split("\n", 2)[2]
    assert diagnose_text(traceback_only).category not in MEMORY_CATEGORIES


def test_a_metal_gpu_timeout_is_not_memory():
    # look-alike: Metal's command buffer failing for a timeout, not Insufficient Memory
    pasted = ("libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command buffer "
              "execution failed: Caused GPU Timeout Error (00000002:kIOGPUCommandBufferCallbackErrorTimeout)")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_a_kernels_shared_memory_resource_is_not_memory():
    # look-alike: Triton's "out of resource" is a kernel's shared memory per block, fixed by the GPU
    pasted = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 196608, "
              "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.")
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_other_limits_exceeded_are_not_memory():
    # look-alikes: Ollama's hedge about "resource limitations", an API's rate limit, a file-handle limit, EAGAIN
    for pasted in (
            "Error: model runner has unexpectedly stopped, this may be due to resource limitations or an internal "
            "error, check ollama server logs for details",
            'openai.RateLimitError: Error code: 429 - {"error": {"message": "Rate limit exceeded"}}',
            "Resource limit exceeded: too many open files (ulimit -n 256) while loading mlx_lm shards",
            "BlockingIOError: [Errno 11] Resource temporarily unavailable"):
        assert diagnose_text(pasted).category not in MEMORY_CATEGORIES, pasted

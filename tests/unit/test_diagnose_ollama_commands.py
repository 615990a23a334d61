"""An Ollama log's fixes are Ollama's settings, never llama-server flags (session 15, mends15).

Ollama's own source says which option is which llama-server flag (ollama/ollama fb30760, v0.33.0-rc2,
llm/llama_server.go): startLlamaServer passes ``-c num_ctx × parallel`` (line 375) and ``-ngl num_gpu`` (line 405);
appendBatchArgs passes num_batch as both ``-b`` and ``-ub`` (line 591). Before v0.30 its runner set
``n_ubatch = num_batch`` (llama/llama.go NewContextParams at 49a9c9b). So halving llama.cpp's -ub is halving
num_batch, halving -c is halving num_ctx × parallel, and -ngl is num_gpu. Each is set as a Modelfile PARAMETER
(docs/modelfile.mdx; num_batch / num_gpu are api/types.go Runner options).

The logs are Ollama-shaped: one line of Ollama's server log (ollama/ollama#13029, a Vulkan build) over the Vulkan
lines of ggml-org/llama.cpp#12728 (compute buffer) and review14's v1.txt (weights), which Ollama's runner prints as
they are.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

OLLAMA_LINE = ('time=2025-11-09T12:11:53.212-03:00 level=INFO source=server.go:653 msg="loading model" '
               '"model layers"=37 requested=-1\n')
VULKAN_COMPUTE = OLLAMA_LINE + """\
llama_context: n_seq_max     = 1
llama_context: n_ctx         = 8192
llama_context: n_ubatch      = 512
ggml_vulkan: Device memory allocation of size 2166360064 failed.
ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory
ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 2166360064
llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers
"""
VULKAN_KV = OLLAMA_LINE + """\
llama_context: n_seq_max     = 2
llama_context: n_ctx         = 16384
ggml_vulkan: Device memory allocation of size 2147483648 failed.
ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory
llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache
"""
VULKAN_WEIGHTS = OLLAMA_LINE + """\
load_tensors: offloaded 20/37 layers to GPU
ggml_vulkan: Device memory allocation of size 4404019200 failed.
ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory
llama_model_load: error loading model: unable to allocate Vulkan0 buffer
"""
# review14's 1.txt with less free memory: 9000 MiB free − 8142.25 MiB of weights − 1024 MiB margin < 0
NO_ROOM = """\
llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 3060) - 9000 MiB free
load_tensors: offloaded 41/41 layers to GPU
load_tensors:        CUDA0 model buffer size =  8142.25 MiB
llama_kv_cache:      CUDA0 KV buffer size =  6400.00 MiB
alloc_tensor_range: failed to allocate CUDA0 buffer of size 6710886400
llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache
"""
LLAMACPP_FLAGS = ("llama-server", " -ub ", " -ngl ", " -c ", "--version")


def answer(text: str, runtime: str | None = None) -> dict:
    return with_computed_fixes(diagnose_text(text, runtime=runtime), runtime)


def commands(doc: dict) -> list[str]:
    return [f["command"] for f in doc["fixes"]]


def no_llamacpp_command(doc: dict) -> None:
    bad = [c for c in commands(doc) if any(flag in c for flag in LLAMACPP_FLAGS)]
    assert not bad, bad


def test_vulkan_cap_on_the_compute_buffer_halves_ollamas_num_batch():
    doc = answer(VULKAN_COMPUTE)
    assert doc["extracted"]["runtime"] == "ollama"
    no_llamacpp_command(doc)
    # the log's n_ubatch 512 is Ollama's num_batch (-ub num_batch): half is 256
    assert "PARAMETER num_batch 256" in commands(doc)[1], commands(doc)
    assert "ollama create" in commands(doc)[1]
    assert any(c.startswith("ollama -v") for c in commands(doc))  # the old wording: a build before the splitting PRs


def test_vulkan_cap_on_the_kv_cache_halves_num_ctx_of_one_sequence():
    doc = answer(VULKAN_KV)
    no_llamacpp_command(doc)
    # n_ctx 16384 = num_ctx × 2 sequences (-c num_ctx × parallel), so num_ctx was 8192: half is 4096
    assert "PARAMETER num_ctx 4096" in commands(doc)[1], commands(doc)


def test_vulkan_cap_on_the_weights_keeps_fewer_layers_with_num_gpu():
    doc = answer(VULKAN_WEIGHTS)
    no_llamacpp_command(doc)
    assert "PARAMETER num_gpu N" in commands(doc)[1] and "N ≤ 20 ×" in commands(doc)[1], commands(doc)


def test_the_same_paste_without_ollama_keeps_llama_server_commands():
    doc = answer(VULKAN_COMPUTE.replace(OLLAMA_LINE, ""))
    assert "llama-server -m MODEL.gguf -ub 256" in commands(doc), commands(doc)


def test_no_room_for_the_kv_cache_names_num_gpu_on_ollama():
    effect = answer(NO_ROOM, runtime="ollama")["fixes"][0]["effect"]
    assert "offload fewer layers (num_gpu)" in effect and "-ngl" not in effect, effect
    assert "offload fewer layers (-ngl)" in answer(NO_ROOM)["fixes"][0]["effect"]


def test_a_long_input_on_ollama_is_cut_with_num_ctx_not_a_tokenizer_line():
    from runlocal.diagnose.fixes import long_input_fixes

    # 32,768 tokens asked for a 4 GiB block with 1 GiB free: 32,768 × 1/4 = 8,192 tokens fit (a multiple of 16)
    ex = {"input_tokens": 32768, "requested_bytes": 4 << 30, "free_bytes": 1 << 30}
    command = long_input_fixes(ex, "ollama")[0]["command"]
    assert "PARAMETER num_ctx 8192" in command and "ollama create" in command, command
    assert "tokenizer" not in command

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
    # the old wording (a build before the splitting PRs): the fix is to update Ollama, the way docs/linux.mdx
    # "Updating" says ("Update Ollama by running the install script again"); `ollama -v` only says which one runs
    update = next(f for f in doc["fixes"] if f["title"].startswith("Update Ollama"))
    assert update["command"].startswith("curl -fsSL https://ollama.com/install.sh | sh"), update
    assert "`ollama -v` shows" in update["command"] and not any(c.startswith("ollama -v") for c in commands(doc))


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


# -- one knob, one fix: the knowledge base's Ollama lines for a knob the log's numbers already set give way ------
# Ollama's source says which option is which flag (module docstring): num_batch is -ub, num_ctx and
# OLLAMA_CONTEXT_LENGTH are -c (one sequence's, × OLLAMA_NUM_PARALLEL), num_gpu is -ngl.
def knobs_set(doc: dict) -> list[str]:
    """Each fix's knob, in Ollama's words as a reader sees them (one fix may set several)."""
    import re

    words = re.compile(r"num_batch|num_ctx|OLLAMA_CONTEXT_LENGTH|num_gpu|OLLAMA_FLASH_ATTENTION")
    same = {"OLLAMA_CONTEXT_LENGTH": "num_ctx"}
    return [k for c in commands(doc) for k in {same.get(w, w) for w in words.findall(c)}]


def test_the_computed_num_batch_replaces_the_knowledge_bases_options_line():
    doc = answer(VULKAN_COMPUTE)
    # before: 'PARAMETER num_batch 256' (computed) and '"options": {"num_batch": 256}' (the KB's) both printed
    assert knobs_set(doc).count("num_batch") == 1, commands(doc)
    assert not any('"num_batch"' in c for c in commands(doc))
    # the KB's "Use a smaller context" says OLLAMA_CONTEXT_LENGTH=8192, and the log's n_ctx is 8192 on one
    # sequence: not smaller, so not a fix
    assert "num_ctx" not in knobs_set(doc), commands(doc)


def test_the_computed_num_ctx_replaces_the_knowledge_bases_context_length_line():
    doc = answer(VULKAN_KV)
    # before: 'PARAMETER num_ctx 4096' then 'OLLAMA_CONTEXT_LENGTH=N ollama serve'
    assert knobs_set(doc).count("num_ctx") == 1, commands(doc)
    # the KV cache's own other knobs stay: a q8_0 cache is 34/64 of f16 (ggml type traits), one sequence of two
    # is half the cells
    assert any("OLLAMA_KV_CACHE_TYPE=q8_0" in c for c in commands(doc))
    assert any(c.startswith("OLLAMA_NUM_PARALLEL=1") for c in commands(doc))


def test_flash_attention_alone_leaves_a_kv_cache_as_large_so_it_is_no_fix_for_a_kv_cap():
    from runlocal.diagnose.device_fixes import reads_cap_as_capacity
    from runlocal.diagnose.fixes import _flags

    fa = "OLLAMA_FLASH_ATTENTION=1 ollama serve"
    # the KV cache's bytes are n_ctx × layers × (K + V) per cell whatever the attention kernel: FA does not shrink it
    assert reads_cap_as_capacity(fa, _flags(fa), frozenset(), {"kv_alloc_failed": True})
    # the compute buffer without FA holds the KQ scores (n_kv × n_ubatch × heads), which FA does not materialize
    assert not reads_cap_as_capacity(fa, _flags(fa), frozenset(), {"compute_alloc_failed": True})


def test_ollama_spellings_read_as_the_llama_server_flags_they_set():
    from runlocal.diagnose.fixes import _flags

    assert _flags("printf 'FROM MODEL\\nPARAMETER num_batch 256\\n' > Modelfile && "
                  "ollama create MODEL-batch256 -f Modelfile") == {"-ub"}   # -f Modelfile is no knob
    assert _flags('"options": {"num_batch": 256}') == {"-ub"}
    assert _flags("OLLAMA_CONTEXT_LENGTH=8192 ollama serve") == _flags("PARAMETER num_ctx 4096") == {"-c"}
    assert _flags('/set parameter num_gpu 20   # or "options": {"num_gpu": 20}') == {"-ngl"}
    # a line that also turns a knob no computed fix sets is never taken for one that only sets -c
    assert _flags("OLLAMA_CONTEXT_LENGTH=4096 OLLAMA_NUM_PARALLEL=1 ollama serve") == {"-c", "-np"}
    assert _flags("llama-server -m MODEL.gguf -ub 256") == {"-m", "-ub"}


def test_check_and_diagnose_write_the_modelfile_the_same_way():
    from runlocal.diagnose.ollama_fixes import modelfile

    # docs/modelfile.mdx: "FROM <model name>" and "PARAMETER <parameter> <parametervalue>", then
    # `ollama create <name> -f <Modelfile>`; test_runtime_ollama.py::test_command checks check's line the same way
    assert modelfile("num_gpu", 46, "gpu46") == (
        "printf 'FROM MODEL\\nPARAMETER num_gpu 46\\n' > Modelfile && ollama create MODEL-gpu46 -f Modelfile")


# -- a compute buffer that failed with every layer on the GPU: the layers to move, from the log's own figures -----
# Built from real Ollama log lines (measurements/public_errors/round39.jsonl ollama-3683, ollama/ollama#3683: the
# llm_load_tensors / llama_kv_cache_init / ggml_gallocr_reserve_n lines of Ollama's runner) with review15's figures:
# 49/49 layers, 6,697 MiB (6.54 GiB) of weights and 4,096 MiB of KV cache on CUDA0, a 1,495 MiB (1.46 GiB) compute
# buffer refused, 11.5 GiB available by Ollama's own discovery line, and Ollama's terminal error.
COMPUTE_49 = """\
time=2025-03-01T10:00:00.000Z level=INFO source=types.go:130 msg="inference compute" id=GPU-1 library=cuda \
variant=v12 compute=8.9 driver=12.4 name="NVIDIA GeForce RTX 4070 Ti SUPER" total="16.0 GiB" available="11.5 GiB"
llm_load_tensors: offloading 48 repeating layers to GPU
llm_load_tensors: offloading non-repeating layers to GPU
llm_load_tensors: offloaded 49/49 layers to GPU
llm_load_tensors:        CPU buffer size =   787.50 MiB
llm_load_tensors:      CUDA0 buffer size =  6697.00 MiB
llama_new_context_with_model: n_ctx      = 8192
llama_kv_cache_init:      CUDA0 KV buffer size =  4096.00 MiB
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1495.00 MiB on device 0: cudaMalloc failed: out of memory
ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 1567621120
llama_new_context_with_model: failed to allocate compute buffers
Error: llama runner process has terminated: cudaMalloc failed: out of memory
"""


def test_a_compute_buffer_short_by_x_moves_x_over_bytes_per_layer_layers_not_29():
    doc = answer(COMPUTE_49)
    no_llamacpp_command(doc)
    # by hand, in MiB: weights + KV + compute = 6697 + 4096 + 1495 = 12288 on CUDA0. Ollama's "available" is
    # measured before the runner starts, and Ollama reserves 457 MiB of each CUDA GPU for the runner's own context
    # (discover/gpu.go cudaMinimumMemory), so 11.5 × 1024 − 457 = 11319 can be used: short 12288 − 11319 = 969.
    # One layer holds (6697 + 4096) / 49 = 220.27 of weights and KV; 969 / 220.27 = 4.4 → 5 layers move:
    # num_gpu 49 − 5 = 44 (the knowledge base's placeholder said 20, i.e. 29 layers off)
    assert commands(doc)[0].startswith("printf 'FROM MODEL\\nPARAMETER num_gpu 44\\n' > Modelfile"), commands(doc)
    assert "969 MiB more" in doc["fixes"][0]["effect"] and "220 MiB" in doc["fixes"][0]["effect"]
    # the KB's "/set parameter num_gpu 20" sets the same knob, so the computed line replaces it
    assert not any("num_gpu 20" in c for c in commands(doc)), commands(doc)


def test_llama_cpps_own_free_figure_needs_no_reserve_and_gives_ngl_without_ollama():
    # llama.cpp's "using device CUDA0 (…) - N MiB free" (review14's 1.txt) is measured by the runner itself, after
    # its context exists: 6697 + 4096 + 1495 − 11776 = 512 MiB short; 512 / 220.27 = 2.3 → 3 layers: -ngl 46
    text = COMPUTE_49.split("\n", 1)[1].replace(
        "llm_load_tensors: offloading 48", "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce "
        "RTX 4070 Ti SUPER) - 11776 MiB free\nllm_load_tensors: offloading 48").replace(
        "Error: llama runner process has terminated: cudaMalloc failed: out of memory\n", "")
    doc = answer(text, runtime="llama.cpp")
    assert "llama-server -m MODEL.gguf -ngl 46" in commands(doc), commands(doc)
    assert "512 MiB more" in doc["fixes"][0]["effect"]

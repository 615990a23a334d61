"""`runlocal diagnose` reads the release a paste names and answers in that release's terms.

Each test starts from what a user pasted into a public issue (the thread is named above it); the expected
commands are worked out here from the paste's own numbers, not read back from the code.
"""

from __future__ import annotations

from pathlib import Path

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.extract import extract_lines
from runlocal.diagnose.fixes import llamacpp_context_fixes, runtime_spec, with_computed_fixes

ROOT = Path(__file__).resolve().parents[2]

# basalam/product-catalog-generator#10: the error, then the versions the user listed
VLLM_027_PASTE = """\
ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV \
cache (3664). Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine.

python=3.10.12
transformers==4.36.2
torch==2.1.2
vllm==0.2.7"""

# hiyouga/LlamaFactory#7234: the System Info block, then the error (the title)
VLLM_073_PASTE = """\
- PyTorch version: 2.5.1+cu124 (GPU)
- Transformers version: 4.49.0
- GPU type: NVIDIA GeForce RTX 4090
- vLLM version: 0.7.3
The model's max seq len (128000) is larger than the maximum number of tokens that can be stored in KV cache \
(78336). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initiali"""


def test_a_vllm_0_2_7_user_gets_commands_that_release_runs():
    doc = with_computed_fixes(diagnose_text(VLLM_027_PASTE))
    assert doc["category"] == "vllm_no_kv_blocks"
    assert "vllm 0.2.7" in doc["extracted"]["runtime_release"]
    # the largest 256-multiple under the 3,664-token pool, in the entry point 0.2.7 has (`vllm serve` came in 0.5.2)
    assert doc["fixes"][0]["command"] == (
        "python -m vllm.entrypoints.openai.api_server --model MODEL --max-model-len 3584")
    commands = " ".join(f["command"] for f in doc["fixes"])
    assert "vllm serve" not in commands
    assert "--kv-cache-dtype" not in commands       # no fp8 KV cache before v0.3.0


def test_a_vllm_0_7_3_user_gets_vllm_serve_and_an_fp8_cache():
    doc = with_computed_fixes(diagnose_text(VLLM_073_PASTE))
    assert doc["category"] == "vllm_no_kv_blocks"
    assert doc["fixes"][0]["command"] == f"vllm serve MODEL --max-model-len {78336 // 256 * 256}"
    fp8 = next(f for f in doc["fixes"] if "--kv-cache-dtype" in f["command"])
    assert "--kv-cache-dtype fp8 " in fp8["command"]
    assert runtime_spec("vllm", doc["extracted"]) == "vllm==0.7.3"   # the re-plan uses 0.7.3's rules


def _kv_failure_on(config_line: str) -> dict:
    """The figures of a real llama.cpp KV-cache failure (tests/data/llamacpp_kv_fail_cpu.log: n_ctx 1048576 on a
    Llama-3-8B-shaped GGUF trained for 8192) as an Ollama runner would log them, after the server config line
    that Ollama release printed."""
    log = (ROOT / "tests/data/llamacpp_kv_fail_cpu.log").read_text(encoding="utf-8").splitlines()
    figures = extract_lines([config_line, *log])
    assert figures["kv_alloc_failed"] and figures["n_ctx_train"] == 8192
    return figures


def test_ollama_0_5_7_has_no_context_variable_so_the_fix_is_a_modelfile():
    # ollama/ollama#9221, v0.5.7's server config: OLLAMA_KV_CACHE_TYPE is there, OLLAMA_CONTEXT_LENGTH is not
    line = ('2025/02/20 16:32:58 routes.go:1187: INFO server config env="map[CUDA_VISIBLE_DEVICES: '
            'GPU_DEVICE_ORDINAL: HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION: HTTPS_PROXY: HTTP_PROXY: NO_PROXY: '
            'OLLAMA_DEBUG:false OLLAMA_FLASH_ATTENTION:false OLLAMA_GPU_OVERHEAD:0 OLLAMA_HOST:http://192.168.242.247:'
            '11434 OLLAMA_INTEL_GPU:false OLLAMA_KEEP_ALIVE:5m0s OLLAMA_KV_CACHE_TYPE: OLLAMA_LLM_LIBRARY: '
            'OLLAMA_LOAD_TIMEOUT:5m0s OLLAMA_MAX_LOADED_MODELS:0 OLLAMA_MAX_QUEUE:512 OLLAMA_NUM_PARALLEL:0]"')
    fix = llamacpp_context_fixes(_kv_failure_on(line), "ollama")[0]
    assert "PARAMETER num_ctx 8192" in fix["command"] and "ollama create" in fix["command"]
    assert "OLLAMA_CONTEXT_LENGTH" not in fix["command"]


def test_ollama_that_prints_its_context_variable_gets_it():
    # ollama/ollama#9509 (2025-03-05): OLLAMA_CONTEXT_LENGTH:2048 in the printed server config
    line = ('2025-03-05 08:19:02 2025/03/05 06:19:02 routes.go:1215: INFO server config env="map[CUDA_VISIBLE_DEVICES: '
            'OLLAMA_CONTEXT_LENGTH:2048 OLLAMA_DEBUG:false OLLAMA_FLASH_ATTENTION:false OLLAMA_KV_CACHE_TYPE: '
            'OLLAMA_NUM_PARALLEL:0]"')
    fix = llamacpp_context_fixes(_kv_failure_on(line), "ollama")[0]
    assert fix["command"] == "OLLAMA_CONTEXT_LENGTH=8192 ollama serve"


def test_a_llama_cpp_build_line_sets_the_release_the_plan_uses():
    # ggml-org/llama.cpp#3199: "main: build = 1233 (98311c4)" opens the user's paste
    figures = extract_lines(["Log start", "main: build = 1233 (98311c4)", "main: seed  = 1694805687"])
    assert runtime_spec("llama.cpp", figures) == "llama.cpp==b1233"


def test_a_jan_user_gets_the_model_file_the_log_names():
    # janhq/jan#8236 (Jan 0.8.1, llama.cpp b9387): llama-server names the file in "loading model '…'"
    paste = """\
INFO [llamacpp-router stdout] [45979] 0.00.116.142 I srv load_model: loading model \
'/home/iwr/.local/share/Jan/data/llamacpp/models/Jan-v3.5-4B-Q4_K_XL/model.gguf'
INFO [llamacpp-router stdout] [45979] 0.01.047.215 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 36864.00 \
MiB on device 0: cudaMalloc failed: out of memory
INFO [llamacpp-router stdout] [45979] 0.01.047.220 E alloc_tensor_range: failed to allocate CUDA0 buffer of size \
38654705664
INFO [llamacpp-router stdout] [45979] 0.01.048.446 E llama_init_from_model: failed to initialize the context: \
failed to allocate buffer for kv cache"""
    doc = with_computed_fixes(diagnose_text(paste))
    assert doc["category"] == "llamacpp_alloc_fail"
    gguf = "/home/iwr/.local/share/Jan/data/llamacpp/models/Jan-v3.5-4B-Q4_K_XL/model.gguf"
    commands = [f["command"] for f in doc["fixes"] if f["command"].startswith("llama-server")]
    assert commands and all(f"-m {gguf} " in c for c in commands)

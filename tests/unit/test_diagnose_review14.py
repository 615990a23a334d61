"""review14's diagnose findings (6, 7, 9, 9b), each tested on the paste the reviewer ran (copied literally here).

6: llama-server's -c is the KV cache of all slots together (src/llama-context.cpp: n_ctx_seq = n_ctx / n_seq_max, or
   one unified stream of n_ctx cells), so "-np 1" shrinks nothing; without n_ctx the context fix is a share, not 8192.
7: MLX's "Insufficient Memory" command buffer and "[malloc] Unable to allocate" are the working set (metal-oom); its
   "Resource limit (N) exceeded" is a count of live buffers (mlx/backend/metal/allocator.cpp, device_info.cpp).
9: a runtime the text does not name is said to be a guess, and each runtime's command says whose it is.
9b: ROCm's out-of-memory names rocm-smi, not nvidia-smi; Vulkan's per-allocation cap is not the card's capacity
   (ggml-vulkan.cpp ggml_vk_create_buffer); an empty paste is refused (exit 2).
"""

from __future__ import annotations

import json

import asking

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.extract import extract_lines
from runlocal.diagnose.fixes import with_computed_fixes

MiB = 1 << 20

# /tmp/review14/dx/1b.txt
KV_WITH_NCTX = """\
llama_context: n_ctx         = 32768
llama_context: n_seq_max     = 4
llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 3060) - 11806 MiB free
load_tensors: offloading 40 repeating layers to GPU
load_tensors: offloaded 41/41 layers to GPU
load_tensors:        CUDA0 model buffer size =  8142.25 MiB
llama_kv_cache:      CUDA0 KV buffer size =  6400.00 MiB
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 6400.00 MiB on device 0: cudaMalloc failed: out of memory
alloc_tensor_range: failed to allocate CUDA0 buffer of size 6710886400
llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache
"""
# /tmp/review14/dx/1.txt: the same log without its n_ctx lines
KV_WITHOUT_NCTX = "\n".join(KV_WITH_NCTX.splitlines()[2:]) + "\n"
# /tmp/review14/dx/2.txt
TORCH_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of "
             "23.55 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 22.42 GiB memory in "
             "use. Of the allocated memory 21.80 GiB is allocated by PyTorch, and 187.45 MiB is reserved by PyTorch but "
             "unallocated.\n")
# /tmp/review14/dx/5.txt
ILLEGAL_ACCESS = """\
RuntimeError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
"""
# /tmp/review14/dx/9.txt
MLX_INSUFFICIENT = ("[mlx] libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command "
                    "buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n")
# /tmp/review14/dx/11.txt
NCCL_OOM = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
            "1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
            "ncclUnhandledCudaError: Call to CUDA function failed.\n"
            "Last error:\n"
            "Cuda failure 'out of memory'\n")
# /tmp/review14/dx/v1.txt
VULKAN_WEIGHTS = """\
ggml_vulkan: Device memory allocation of size 4404019200 failed.
ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory
llama_model_load: error loading model: unable to allocate Vulkan0 buffer
"""
# /tmp/review14/dx/v4.txt
HIP_OOM = ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.98 "
           "GiB of which 1.02 GiB is free. Of the allocated memory 21.50 GiB is allocated by PyTorch, and 1.10 GiB is "
           "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
           "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n")
# ggml-org/llama.cpp#12728 (the compute buffer over the cap, with -ctk q8_0)
VULKAN_COMPUTE = """\
ggml_vulkan: Device memory allocation of size 2166360064 failed.
ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory
ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 2166360064
llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers
"""
# ggml-org/llama.cpp#18160 (a build with PR #16354's wording: it already splits its buffers)
VULKAN_COMPUTE_NEW = """\
ggml_vulkan: Requested buffer size exceeds device buffer size limit: ErrorOutOfDeviceMemory
ggml_gallocr_reserve_n_impl: failed to allocate Vulkan0 buffer of size 8753520640
graph_reserve: failed to allocate compute buffers
llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers
"""


def run_cli(*args: str, stdin: str):
    return asking.run_cli(*args, stdin=stdin.encode(), text=False)


def answer(text: str, runtime: str | None = None) -> dict:
    return with_computed_fixes(diagnose_text(text, runtime=runtime), runtime)


def commands(doc: dict) -> list[str]:
    return [f["command"] for f in doc["fixes"]]


# -- finding 6: llama.cpp's KV cache -------------------------------------------------------------------------

def test_kv_fix_with_n_ctx_is_the_largest_context_and_never_fewer_slots():
    doc = answer(KV_WITH_NCTX)
    # by hand: 6400 MiB / 32768 tokens = 200 KiB per token; 11806 − 8142.25 − 1024 (llama.cpp's fit margin) =
    # 2639.75 MiB → 2639.75 × 1024 / 200 = 13,515.5 tokens, padded down to 256 → 13,312
    assert commands(doc)[0] == "llama-server -m MODEL.gguf -c 13312"
    # -c is the total over all slots: -np 1 with the same -c allocates the same 6400 MiB
    assert not any("-np" in c for c in commands(doc)), commands(doc)


def test_kv_fix_without_n_ctx_is_a_share_of_the_context_not_a_constant():
    doc = answer(KV_WITHOUT_NCTX)
    first = doc["fixes"][0]
    # 2639.75 MiB of room for a 6400 MiB cache: 0.4124… → at most 41 % of the context; q8_0 (34 of 64 bytes):
    # 2639.75 / (6400 × 34/64) = 0.776… → 77 %
    assert "41%" in first["title"] and "N ≤ 0.41 × the -c that failed" in first["command"]
    assert "does not state n_ctx" in first["title"]
    assert "N ≤ 0.77 × the -c that failed" in doc["fixes"][1]["command"]
    assert not any("8192" in c or "-np" in c for c in commands(doc)), commands(doc)


def test_fewer_parallel_requests_stays_an_ollama_fix():
    # Ollama sizes the cache as num_ctx × OLLAMA_NUM_PARALLEL, so there the fix does shrink it
    doc = answer(KV_WITH_NCTX, runtime="ollama")
    assert "OLLAMA_NUM_PARALLEL=1 ollama serve" in commands(doc)


# -- finding 7: MLX's three allocator errors -------------------------------------------------------------------

def test_mlx_insufficient_memory_is_the_working_set_not_one_buffer():
    d = diagnose_text(MLX_INSUFFICIENT)
    assert d.category == "metal_oom" and d.entry is not None and d.entry.id == "metal-oom"
    assert "buffer limit" not in d.title and "wire" in d.cause
    assert d.runtime == "mlx"  # "[METAL] Command buffer execution failed" is MLX's wording (mlx device.cpp)


def test_mlx_resource_limit_is_a_count_of_buffers():
    d = diagnose_text("RuntimeError: [metal::malloc] Resource limit (499000) exceeded.")
    assert d.category == "metal_oom" and d.entry is not None and d.entry.id == "mlx-metal-resource-limit"
    assert "499,000" in d.cause and "Bytes are not what ran out" in d.cause


def test_mlx_single_buffer_limit_keeps_its_entry():
    d = diagnose_text("RuntimeError: [metal::malloc] Attempting to allocate 137438953472 bytes which is greater than "
                      "the maximum allowed buffer size of 77309411328 bytes.")
    assert d.entry is not None and d.entry.id == "mlx-metal-malloc"
    assert (d.extracted["requested_bytes"], d.extracted["max_buffer_bytes"]) == (137438953472, 77309411328)


# -- finding 9b: the vendor's tool, Vulkan's per-allocation cap, an empty paste ------------------------------------

def test_rocm_oom_names_rocm_smi_not_nvidia_smi():
    doc = answer(HIP_OOM)
    assert doc["category"] == "rocm_oom"
    assert commands(doc)[0].startswith("rocm-smi --showpids")
    # 2.00 GiB asked, 1.02 GiB free: 0.98 GiB = 1003.5 MiB short
    assert "1004 MiB more than was free" in doc["fixes"][0]["effect"]
    assert not any("nvidia-smi" in c for c in commands(doc)), commands(doc)


def test_cuda_oom_keeps_nvidia_smi():
    assert answer(TORCH_OOM)["fixes"][0]["command"].startswith("nvidia-smi")


def test_vulkan_cap_on_the_weights_is_not_the_cards_capacity():
    doc = answer(VULKAN_WEIGHTS)
    # ggml_vk_create_buffer's check of one buffer against the cap, before the driver is asked: not the device's
    # memory (diagnose49, llama.cpp#15009's maintainer answer; test_diagnose_round48.py), with the cap's own fixes
    assert doc["category"] == "not_memory"
    first = doc["fixes"][0]
    assert "per-allocation limit" in first["title"] and "4.1 GiB" in first["title"]  # 4404019200 B = 4.10 GiB
    assert first["command"].startswith("vulkaninfo")
    # the knowledge base's constant "-ngl 20" and "MODEL-Q4_K_M.gguf -ngl 99" read it as capacity: replaced
    assert not any("-ngl 20" in c or "-ngl 99" in c and "Q4_K_M" in c for c in commands(doc)), commands(doc)
    assert any("newer llama.cpp build" in f["title"] for f in doc["fixes"])


def test_vulkan_cap_on_the_compute_buffer_halves_the_micro_batch():
    doc = answer(VULKAN_COMPUTE)
    assert "-ub 256" in commands(doc)[1]  # llama.cpp's default -ub 512, halved
    assert not any("-ngl" in c for c in commands(doc)), commands(doc)


def test_vulkan_cap_in_a_build_that_already_splits_does_not_ask_for_a_newer_build():
    doc = answer(VULKAN_COMPUTE_NEW)
    assert "maxBufferSize" in doc["fixes"][0]["effect"] and "8.15 GiB" in doc["fixes"][0]["title"]
    assert not any("newer llama.cpp build" in f["title"] for f in doc["fixes"])


def test_a_pinned_host_buffer_over_the_limit_is_not_the_cap():
    # a warning ggml survives: it falls back to plain host memory (ggml-vulkan.cpp "Failed to allocate pinned memory")
    ex = extract_lines(["ggml_vulkan: Failed to allocate pinned memory (Requested buffer size exceeds device buffer "
                        "size limit: ErrorOutOfDeviceMemory)"])
    assert "vk_allocation_cap_exceeded" not in ex


def test_empty_paste_is_refused_through_the_cli():
    r = run_cli("diagnose", "-", stdin="")
    assert r.returncode == 2 and b"empty" in r.stderr and not r.stdout


# -- finding 9: a runtime the text does not name ----------------------------------------------------------------

def test_pytorch_error_tail_is_not_called_transformers_as_if_read():
    doc = answer(ILLEGAL_ACCESS)
    assert doc["runtime_note"].startswith("transformers is a guess")
    assert "transformers_named" not in doc["extracted"]
    r = run_cli("diagnose", "-", stdin=ILLEGAL_ACCESS)
    out = r.stdout.decode()
    assert r.returncode == 0 and "runtime=transformers" not in out and "Runtime: transformers is a guess" in out


def test_transformers_named_in_the_text_is_no_guess():
    doc = answer('model = AutoModelForCausalLM.from_pretrained("x")\n' + ILLEGAL_ACCESS)
    assert "runtime_note" not in doc and doc["extracted"]["runtime"] == "transformers"


def test_no_runtime_named_says_whose_commands_they_are():
    for text in (TORCH_OOM, NCCL_OOM):
        doc = answer(text)
        assert "names no runtime" in doc["runtime_note"] and "vLLM's" in doc["runtime_note"]
        vllm = [f for f in doc["fixes"] if f["command"].startswith("vllm ")]
        assert vllm and all("vLLM's command (the text names no runtime)" in f["effect"] for f in vllm)


def test_a_runtime_given_by_the_user_is_no_guess():
    doc = answer(TORCH_OOM, runtime="vllm")
    assert "runtime_note" not in doc
    assert not any("names no runtime" in f["effect"] for f in doc["fixes"])


def test_json_carries_the_note():
    r = run_cli("diagnose", "-", "--json", stdin=NCCL_OOM)
    assert r.returncode == 0 and "names no runtime" in json.loads(r.stdout)["runtime_note"]


def test_api_refuses_a_blank_text_and_returns_the_note(tmp_path):
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}"))
    r = client.post("/api/v1/diagnose", json={"text": " \n\t\n"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "text"]
    r = client.post("/api/v1/diagnose", json={"text": ILLEGAL_ACCESS})
    assert r.status_code == 200 and r.json()["runtime_note"].startswith("transformers is a guess")

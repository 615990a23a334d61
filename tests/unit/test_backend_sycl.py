"""`--backend sycl` (llama.cpp on Intel GPUs): what ggml-sycl allocates differently, from its source."""

from asking import check_json

# Qwen2.5-0.5B: 24 layers, 2 KV heads × 64 = 128 elements per K (and V) row. A q8_0 row of 128 elements is
# 4 blocks of 34 bytes = 136 B. ggml-sycl's get_alloc_size (ggml/src/ggml-sycl/ggml-sycl.cpp
# ggml_backend_sycl_buffer_type_get_alloc_size) adds ggml_row_size(q8_0, 512 - 128 % 512) = 12 blocks = 408 B to
# every quantized tensor whose row is not a multiple of MATRIX_ROW_PADDING (512, ggml-sycl/presets.hpp): one K and
# one V tensor per layer. Vulkan's get_alloc_size is ggml_nbytes: no padding.
LAYERS, CELLS, ROW, PAD = 24, 4096, 136, 408


def kv_on(backend: str) -> int:
    plan = check_json("qwen2.5-0.5b", "--gpu", "arc a770", "--backend", backend, "--ctx", "4096",
                      "--cache-type-k", "q8_0", "--cache-type-v", "q8_0", "-np", "1")
    gpu = next(d for d in plan["memory"]["devices"] if d["kind"] == "gpu")
    return gpu["kv_cache"]


def test_sycl_pads_quantized_kv_rows_as_its_get_alloc_size_does():
    # "How much KV does llama.cpp's SYCL build allocate for a q8_0 cache on my Arc A770?"
    assert kv_on("sycl") == LAYERS * 2 * (CELLS * ROW + PAD)


def test_vulkan_on_the_same_card_does_not_pad():
    assert kv_on("vulkan") == LAYERS * 2 * CELLS * ROW


def test_the_plan_says_what_sycl_counts_and_what_it_does_not():
    plan = check_json("llama-3.1-8b", "--gpu", "arc a770", "--backend", "sycl", "--ctx", "8192")
    step = next(s for s in plan["explain"] if s["label"] == "backend")
    assert step["value"] == "sycl"
    assert "padded to 512" in step["formula"] and "PR #27629" in step["formula"]
    # no CUDA context on an Intel card: the GPU overhead is what the driver needs, not counted
    gpu = next(d for d in plan["memory"]["devices"] if d["kind"] == "gpu")
    assert gpu["overhead"] == 0


def test_the_posted_a770_gpt_oss_log_is_planned_as_logged():
    # ggml-org/llama.cpp#17643 (build 7195): `llama-server -m gpt-oss-20b-MXFP4.gguf -fa 0 -ngl 999` on an Arc A770
    # logged SYCL0 KV 96.00 + 24.00 MiB (4,096 full cells and 1,024 sliding-window cells, 4 sequences in one stream)
    # and a 563.39 MiB SYCL0 compute buffer
    from runlocal.evidence import public_logs, public_scores

    rec = next(r for r in public_logs.load_sycl() if r["source_url"].endswith("/17643"))
    assert rec["logged"]["kv_buffers"]["SYCL0"] == 96.0 + 24.0
    row = public_scores.llamacpp_rows([rec])[0]
    assert row["kv_reason"] is None and row["kv"] == (120.0, 120.0)
    logged, planned = row["compute_gpu"]
    assert logged == 563.39 and abs(planned / logged - 1) < 0.03
    plan = check_json("gpt-oss-20b", "--gpu", "arc a770", "--backend", "sycl", "-c", "1024", "-np", "4",
                      "--kv-unified", "-fa", "off", "--runtime", "llama.cpp==b7195")
    gpu = next(d for d in plan["memory"]["devices"] if d["kind"] == "gpu")
    assert gpu["kv_cache"] == 120 * 2**20

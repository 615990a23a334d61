"""Speed rules of single llama.cpp backends that the shared formulas of hardware/speed.py do not carry.

MoE prefill on SYCL and Vulkan is not modelled. hardware/speed.py prices a prompt at 2 FLOPs per active weight and one
fitted share of the device's peak per class and backend — a dense matmul's rate. A prompt batch of a mixture of experts
runs its expert matrices through MUL_MAT_ID instead, and on these two backends that runs far below a dense matmul, by an
amount the source does not reduce to one formula with constants the public records can pin:

- ggml-sycl (ggml/src/ggml-sycl/ggml-sycl.cpp ggml_sycl_mul_mat_id, the prompt branch, ne12 > 1): it copies the routed
  expert ids to the host and waits on the queue, then for each expert that received tokens runs a gather kernel, one
  ggml_sycl_mul_mat over that expert's rows (a separate dequantize-and-GEMM per expert) and a scatter kernel, one after
  another — n_experts small GEMMs and a host round trip per layer, so the cost is set by launches and synchronisation, not
  by FLOPs. The one public record: an Arc Pro B60 ran Qwen3.6-35B-A3B at 373.5 prompt tokens/s where the dense formula
  gives 3,440 (9.2×; llama.cpp issue #22413, build 9159; measurements/speed/held_out/round2.jsonl).
- ggml-vulkan (ggml/src/ggml-vulkan/ggml-vulkan.cpp, the mul_mm_id pipelines): one dispatch over every expert matrix,
  each expert's tiles multiplying only the tokens routed to it — about prompt × n_active / n_experts rows, fewer than a
  tile holds, so tiles run part-empty (PR #18352 "preprocess mul_mat_id experts and discard workgroups more quickly",
  PR #15546 "mul_mat_id coopmat2 optimizations" tune exactly this). Records: an RTX 5090 ran Qwen3-30B-A3B, DeepSeek-V2-Lite
  and gpt-oss-20b at 4.0×, 3.4× and 3.0× below the dense formula (PR #15546; measurements/speed/backends_2025.jsonl, kept
  as outliers): one card, three models, three different shortfalls — no constant to fit.

A plan on these backends therefore prints no prefill figure for a MoE model and its --explain says why, rather than a
number 3–9× too high. CUDA, ROCm and Metal keep the dense formula: not assessed here (the H100 CUDA MoE records, ~3× below
it, are outliers in measurements/speed/h100_llamacpp_own.jsonl).
"""

from __future__ import annotations

MOE_PREFILL_UNMODELLED = {
    "sycl": ("ggml-sycl runs a prompt's expert matmuls (MUL_MAT_ID) as one dequantize-and-GEMM per expert after a host "
             "copy of the routing ids: launch- and sync-bound, not FLOP-bound (B60 Qwen3.6-35B-A3B: 373.5 measured vs "
             "3,440 by the dense formula, llama.cpp #22413)"),
    "vulkan": ("ggml-vulkan multiplies each expert only by the tokens routed to it (mul_mm_id), tiles part-empty; an "
               "RTX 5090 ran three MoE models 3.0–4.0× below the dense formula (llama.cpp PR #15546)"),
}


def moe_prefill_gap(n_experts: int, backend: str | None) -> str | None:
    """Why the prefill of a mixture-of-experts model (``n_experts`` > 0) is not predicted on ``backend``; None when it
    is (a dense model, or a backend whose MoE prefill the dense formula covers)."""
    if not n_experts:
        return None
    why = MOE_PREFILL_UNMODELLED.get(backend or "")
    return f"not modelled for a mixture of experts on {backend}: {why}" if why else None

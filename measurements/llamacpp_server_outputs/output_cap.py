"""How much of llama.cpp's compute buffer the prompt graph's logits take, traced by runlocal's ggml-alloc simulation:
every n_ubatch token an output (the C API's default, n_outputs_max = n_batch, what runlocal models and what its
measured records used) against llama-server's cap since ggml-org/llama.cpp PR #23861 ("llama: limit max outputs of
llama_context", 2026-06-01) and PR #23988: tools/server/server-context.cpp server_n_outputs_max() =
max(1, min(n_batch, n_parallel × (1 + speculative n_max))), so the prompt graph is reserved with n_parallel output
rows. Run: PYTHONPATH=src python measurements/llamacpp_server_outputs/output_cap.py
"""

from __future__ import annotations

from runlocal.model.catalog import lookup
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes.ggml import sched, simulate_compute_cuda

MiB = 1 << 20
_ORIGINAL = sched.built_graph


def gpu_compute(model_id: str, quant: str, n_kv: int, n_seqs: int, cap: int | None) -> float:
    model = gguf_view(lookup(model_id), quant)

    def capped(m, p, n_tokens, seqs, n_out):
        return _ORIGINAL(m, p, n_tokens, seqs, min(n_out, cap) if cap else n_out)

    sched.built_graph = capped
    try:
        out = simulate_compute_cuda(model, 512, n_kv, True, n_gpu_layers=-1, n_seqs=n_seqs)
    finally:
        sched.built_graph = _ORIGINAL
    return out["CUDA0 compute"] / MiB


def main() -> None:
    print("GPU compute buffer, -ub 512, flash attention, every layer offloaded, 4 slots (-np auto), 8,192 cells")
    for model_id, quant in (("qwen3-8b", "Q4_K_M"), ("qwen3-30b-a3b", "Q4_K_M"), ("llama-3.1-8b", "Q4_K_M"),
                            ("gemma-3-12b", "Q4_K_M")):
        every = gpu_compute(model_id, quant, 8192, 4, None)
        server = gpu_compute(model_id, quant, 8192, 4, 4)
        print(f"{model_id:16} all 512 outputs {every:7.1f} MiB   llama-server (4 outputs) {server:7.1f} MiB   "
              f"ratio {every / server:.2f}")


if __name__ == "__main__":
    main()

"""Which weights the CPU backend repacks (ggml/src/ggml-cpu/repack.cpp), and so keeps on the CPU under --no-host.

llama.cpp picks a CPU-held weight's buffer type from src/llama-model.cpp make_cpu_buft_list, "ACCEL -> GPU host ->
CPU extra -> CPU": with a GPU present its host buffer type (CUDA_Host; the plain CPU buffer, CPU_Mapped, under mmap)
comes first and takes every weight, so ggml-backend's scheduler offloads a large batch's matmul on it to the GPU with
a copy of the weight (ggml_backend_sched_backend_id_from_cur: op offload needs ggml_backend_buffer_is_host).
``--no-host`` (common/arg.cpp: "bypass host buffer allowing extra buffers to be used", params.no_host →
llama_model_params.no_host) leaves the host buffer type out of that list, so a weight the CPU's extra buffer type
accepts goes to CPU_REPACK. That buffer type has no is_host (repack.cpp ggml_backend_cpu_repack_buffer_type), so the
scheduler never offloads an op on it: the matmul runs on the CPU, its activations are copied to the host and back,
and no copy of the weight enters a GPU's compute buffer. Weights the CPU does not repack fall to the plain CPU buffer
(a host buffer) and are offloaded as before.

select_weight_buft asks the CPU device whether it runs the weight's op with the weight in CPU_REPACK: repack.cpp
extra_buffer_type::supports_op accepts MUL_MAT of a 2-D weight and MUL_MAT_ID of a 3-D one (the experts) with f32
activations, when ggml_repack_get_optimal_repack_type has a layout for the weight's type and row count on this CPU.
That depends on the CPU's features, so the plan assumes one (ASSUMED_CPU); the layouts, as read in
ggml-org/llama.cpp ggml/src/ggml-cpu/repack.cpp (ggml_repack_get_optimal_repack_type, 2026):
  x86-64 AVX2:      Q4_0, Q4_K, IQ4_NL, MXFP4 with ne[1] % 8 == 0
  x86-64 AVX-512:   the same and Q2_K (ne[1] % 8)
  ARM NEON dotprod: Q4_0, Q8_0, MXFP4 (ne[1] % 4), Q4_K, Q5_K, Q6_K (ne[1] % 8), IQ4_NL (ne[1] % 4)
On this machine (AVX-512) llama-cpp-python 0.3.36's llama.cpp repacks exactly the AVX-512 set:
measurements/llamacpp_nohost (tests/accuracy/test_llamacpp_nohost_real.py). Token and position embeddings are read by
GET_ROWS, which the extra buffer type does not take, so they never repack. Pure computation, no I/O.
"""

from __future__ import annotations

from .types import Tensor

# (types, the row count's multiple) per CPU feature set: ggml_repack_get_optimal_repack_type's branches
REPACKED: dict[str, dict[str, int]] = {
    "avx2": {"q4_0": 8, "q4_k": 8, "iq4_nl": 8, "mxfp4": 8},
    "avx512": {"q4_0": 8, "q4_k": 8, "iq4_nl": 8, "mxfp4": 8, "q2_k": 8},
    "arm-dotprod": {"q4_0": 4, "q4_k": 8, "q5_k": 8, "q6_k": 8, "iq4_nl": 4, "mxfp4": 4, "q8_0": 4},
}
# What a --no-host plan assumes of the host CPU: x86-64 with AVX2, the common host of a discrete GPU (an AVX-512 CPU
# also repacks Q2_K; an ARM host more types). Said in the plan's compute step.
ASSUMED_CPU = "avx2"
CPU_WORDS = {"avx2": "an x86-64 CPU with AVX2", "avx512": "an x86-64 CPU with AVX-512",
             "arm-dotprod": "an ARM CPU with dotprod"}

_GET_ROWS_WEIGHTS = ("token_embd", "position_embd", "per_layer_token_embd", "token_types")


def repacked(t: Tensor, cpu: str = ASSUMED_CPU) -> bool:
    """Whether the CPU backend takes this weight into CPU_REPACK when it is offered (--no-host, a CPU-only run):
    a matrix (2-D, MUL_MAT) or a stack of experts (3-D, MUL_MAT_ID) of a type with a layout on ``cpu`` and a row
    count that layout divides."""
    multiple = REPACKED[cpu].get(t.type.lower())
    if multiple is None or t.ne[1] % multiple:
        return False
    dims = 3 if t.ne[2] > 1 else 2 if t.ne[1] > 1 else 1
    if t.ne[3] > 1 or dims == 1:
        return False
    name = t.name.split(".", 2)[-1] if t.name.startswith("blk.") else t.name
    return not name.startswith(_GET_ROWS_WEIGHTS)


def host_buffer(cpu: str = ASSUMED_CPU):
    """For the scheduler (sched._sched_split): whether a weight held on the host is in a host buffer (so its large
    ops are offloaded) under --no-host — every weight the CPU does not repack."""
    return lambda t: not repacked(t, cpu)

"""What the ggml graph model (runtimes/ggml/) covers, answered without importing it: whether a model's compute
buffers are simulated, the scheduler's copy count under pipeline parallelism and --n-cpu-moe's tensor overrides.

Every llama.cpp plan asks these before the compute table (runtimes/compute_table.py) answers the simulation, so they
live here, where a plan the table answers loads none of the graph package (its 22 modules: 4–5 ms of a check
with bytecode, ~30 ms without; tests/integration/test_light_imports.py). ggml/arch.supported reads the same tensor
checks with its own BUILDERS, and tests/unit/test_ggml_scope.py walks every catalog model through both. Pure
computation, no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memo import IdMemo

if TYPE_CHECKING:
    from ..model.spec import ModelSpec

# the architectures runtimes/ggml/ has a builder for: the keys of ggml.BUILDERS (arch.py and its arch_*.py modules;
# tests/unit/test_ggml_scope.py holds the two equal)
SIMULATED_ARCHS = frozenset({
    "llama", "qwen3", "qwen3moe", "phi3", "gemma2", "gemma3", "gpt-oss", "deepseek2", "granitehybrid", "qwen2",
    "granite", "granitemoe",                                              # arch.py
    "qwen35", "qwen35moe", "qwen3next",                                   # arch_hybrid.py
    "nemotron_h", "nemotron_h_moe", "jamba", "falcon-h1", "mamba",        # arch_ssm.py
    "glm4moe", "minimax-m2", "dbrx", "qwen2moe",                          # arch_moe.py
    "olmo", "olmo2", "gemma", "smollm3", "glm4", "stablelm",              # arch_dense.py
    "llama4",                                                             # arch_swa.py
    "gemma4",                                                             # arch_gemma.py
    "qwen2vl", "qwen3vl", "qwen3vlmoe",                                   # arch_vl.py
    "command-r", "cohere2", "phi2", "gptneox", "falcon",                  # arch_parallel.py
})
# the gated delta-net hybrids (ggml/arch_hybrid.py's builders): a build before b8301 traces them unfused
DELTA_NET_ARCHS = ("qwen3next", "qwen35", "qwen35moe")

# tensors a builder needs beyond the common ones: deepseek2's MLA graph reads wkv_b split in two, as
# convert_hf_to_gguf writes it since 2025 (an older file's attn_kv_b, or a checkpoint viewed as GGUF, is not built)
REQUIRED_TENSORS = {"deepseek2": "blk.0.attn_k_b.weight"}
# the projections the delta-net builders read, by GGUF name: each linear-attention layer's (one alternative of
# _LINEAR beside _COMMON) and each full-attention layer's (src/models/qwen35.cpp, qwen35moe.cpp, qwen3next.cpp)
_LINEAR = {"qwen35": (("attn_qkv", "attn_gate", "ssm_beta", "ssm_alpha"),),
           "qwen35moe": (("attn_qkv", "attn_gate", "ssm_beta", "ssm_alpha"),),
           "qwen3next": (("attn_qkv", "attn_gate", "ssm_ba"), ("ssm_in", "ssm_ba"))}
_COMMON = ("ssm_conv1d", "ssm_dt", "ssm_a", "ssm_norm", "ssm_out")
_ATTENTION = ("attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm")

PIPELINE_COPIES = 4   # ggml/CMakeLists.txt GGML_SCHED_MAX_COPIES: the scheduler's copies under pipeline parallelism
# common/common.h LLM_FFN_EXPS_REGEX: what --n-cpu-moe N keeps in host memory, for each of the first N layers
FFN_EXPS_REGEX = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"


def n_cpu_moe_overrides(n: int) -> tuple[tuple[str, int | None], ...]:
    """common/arg.cpp --n-cpu-moe N (llm_add_n_cpu_ffn_overrides): one CPU override per layer below N."""
    return tuple((f"blk\\.{i}{FFN_EXPS_REGEX}", None) for i in range(n))


def supported(model: ModelSpec) -> bool:
    """The graph is simulated: the architecture has a builder (SIMULATED_ARCHS) and the tensors carry the GGUF names
    it reads. Kept per model object: every plan of llama.cpp asks (llamacpp_compute.size_compute), and the answer
    walks every tensor's name (a hybrid's every layer's: ~0.4 ms for qwen3.5-397b, ~60 times in one check)."""
    return _SUPPORTED.get(model, None, lambda: model.family in SIMULATED_ARCHS and builder_reads(model))


def builder_reads(model: ModelSpec) -> bool:
    """The tensors carry the names the model's builder reads: the token embedding, REQUIRED_TENSORS' and, for a
    delta-net hybrid, delta_net_buildable's."""
    names = {t.name for t in model.tensors}
    return ("token_embd.weight" in names and REQUIRED_TENSORS.get(model.family, "token_embd.weight") in names
            and (model.family not in DELTA_NET_ARCHS or delta_net_buildable(model)))


def delta_net_buildable(model: ModelSpec) -> bool:
    """The delta-net builders read what the converter writes: at least one full-attention layer (build_inp_mem_hybrid's
    KV inputs span the attention layers) and one delta-net layer, each with its projections by their GGUF names."""
    names = {t.name.rsplit(".", 1)[0] if t.name.endswith((".weight", ".bias")) else t.name for t in model.tensors}
    kinds = {la.attention is None for la in model.layers}
    if kinds != {True, False}:
        return False
    for il, la in enumerate(model.layers):
        need: tuple[tuple[str, ...], ...] = (_ATTENTION,) if la.attention is not None else tuple(
            _COMMON + alt for alt in _LINEAR[model.family])
        if la.recurrent is None and la.attention is None:
            return False
        if la.attention is None and (la.recurrent is None or not la.recurrent.state_elems):
            return False
        if not any(all(f"blk.{il}.{n}" in names for n in alt) for alt in need):
            return False
    return True


_SUPPORTED = IdMemo(256)

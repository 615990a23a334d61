"""runtimes/ggml_scope.py answers, without importing the graph package, what runtimes/ggml/ would: whether a model's
graph is simulated, the scheduler's copy count, --n-cpu-moe's overrides. Held equal to the package here, on every
catalog model, so a builder added to ggml/ without its architecture in SIMULATED_ARCHS fails."""

from __future__ import annotations

from dataclasses import replace

from runlocal.model import catalog
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes import ggml, ggml_scope
from runlocal.runtimes.ggml import arch_hybrid


def test_the_architectures_are_the_builders():
    assert ggml_scope.SIMULATED_ARCHS == set(ggml.BUILDERS)
    assert set(ggml_scope.DELTA_NET_ARCHS) == set(arch_hybrid.BUILDERS)
    assert ggml.PIPELINE_COPIES == ggml_scope.PIPELINE_COPIES == 4      # ggml/CMakeLists.txt GGML_SCHED_MAX_COPIES


def test_every_catalog_model_is_answered_as_the_graph_package_answers():
    """Each catalog model's GGUF view at Q4_K_M and at Q8_0 (the specs llamacpp_compute.size_compute asks about),
    and its checkpoint spec (no GGUF names: never simulated), through both."""
    asked = simulated = 0
    for alias in catalog.aliases():
        spec = catalog.lookup(alias)
        for model in (spec, gguf_view(spec, "Q4_K_M"), gguf_view(spec, "Q8_0")):
            if model is None:
                continue
            asked += 1
            light = ggml_scope.supported(model)
            assert light == ggml.supported(model), (alias, model.family)
            simulated += light
    assert asked > 600 and 400 < simulated < asked          # both answers occur


def test_a_missing_tensor_is_answered_alike():
    """Cases the catalog holds only one way: a delta-net hybrid with one layer's projection gone, a model without its
    token embedding; and an architecture with no builder."""
    view = gguf_view(catalog.lookup("qwen3-next-80b-a3b"), "Q4_K_M")
    assert view is not None and ggml_scope.supported(view)
    cut = replace(view, tensors=tuple(t for t in view.tensors if t.name != "blk.0.ssm_out.weight"))
    no_embd = replace(view, tensors=tuple(t for t in view.tensors if t.name != "token_embd.weight"))
    other = replace(view, family="rwkv7")
    for model in (cut, no_embd, other):
        assert not ggml_scope.supported(model) and not ggml.supported(model)


def test_n_cpu_moe_overrides_are_llama_cpps():
    # common/arg.cpp llm_add_n_cpu_ffn_overrides: "blk\\." + i + LLM_FFN_EXPS_REGEX, buffer type CPU, per layer < N
    assert ggml_scope.n_cpu_moe_overrides(2) == ((r"blk\.0\.ffn_(up|down|gate|gate_up)_(ch|)exps", None),
                                                 (r"blk\.1\.ffn_(up|down|gate|gate_up)_(ch|)exps", None))
    assert ggml.n_cpu_moe_overrides is ggml_scope.n_cpu_moe_overrides

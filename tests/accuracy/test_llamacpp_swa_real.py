"""Sliding windows as real llama.cpp applies them (issue 18): a catalog model's config, shrunk to a few layers
and a small width but keeping its architecture, window and layer pattern, is written as the zero-weight GGUF the
converter would make and loaded by llama-cpp-python; the planner's KV cells, SWA pattern and KV bytes for the same
config (the catalog / config.json path, not the GGUF reader) must be what llama.cpp logged."""

from __future__ import annotations

import copy

import pytest
from zero_gguf import load_with_llamacpp, write_zero_gguf

from runlocal.model.catalog import aliases, find_entry, lookup
from runlocal.model.hf_config import spec_from_config
from runlocal.quant.gguf_mix import gguf_arch, gguf_view
from runlocal.runtimes.base import Settings, Target
from runlocal.runtimes.llamacpp import LlamaCpp, context_sizes, swa_cells
from runlocal.runtimes.llamacpp_swa import as_llamacpp_loads
from runlocal.weights import estimate

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")

N_CTX = 32768
MiB = 1 << 20
SMALL = {"hidden_size": 256, "intermediate_size": 512, "intermediate_size_mlp": 512, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 512, "moe_intermediate_size": 128}


def shrunk_config(alias: str, n_layers: int) -> dict:
    """The catalog config with small dimensions; architecture, window and layer pattern kept."""
    config = copy.deepcopy(find_entry(alias)["config"])
    text = config.get("text_config", config)
    for key, value in SMALL.items():
        if key in text or key == "head_dim":
            text[key] = value
    text["num_hidden_layers"] = n_layers
    for key in ("num_local_experts", "num_experts"):
        if key in text:
            text[key] = 4
    if "num_experts_per_tok" in text:
        text["num_experts_per_tok"] = min(2, text["num_experts_per_tok"])
    if "layer_types" in text:
        text["layer_types"] = text["layer_types"][:n_layers]
    return config


def converter_keys(spec, config: dict, arch: str) -> dict:
    """The metadata convert_hf_to_gguf.py writes that llama.cpp's load_arch_hparams reads for these architectures
    (tokenizer "none" + vocab_size: llama.cpp makes dummy tokens)."""
    text = config.get("text_config", config)
    head_dim = text.get("head_dim") or spec.hidden_size // spec.n_heads
    kv = {"{arch}.block_count": spec.n_layers, "{arch}.context_length": spec.max_position_embeddings or N_CTX,
          "{arch}.embedding_length": spec.hidden_size, "{arch}.feed_forward_length": text["intermediate_size"],
          "{arch}.attention.head_count": spec.n_heads, "{arch}.attention.head_count_kv": text["num_key_value_heads"],
          "{arch}.attention.key_length": head_dim, "{arch}.attention.value_length": head_dim,
          "{arch}.attention.layer_norm_rms_epsilon": 1e-5, "{arch}.rope.dimension_count": head_dim,
          "{arch}.vocab_size": spec.vocab_size, "tokenizer.ggml.model": "none"}
    if text.get("sliding_window") and arch != "llama4":
        kv["{arch}.attention.sliding_window"] = int(text["sliding_window"])   # Mistral v0.1's GGUFs carry it too
    if arch == "cohere2":
        kv |= {"{arch}.attention.layer_norm_epsilon": 1e-5, "{arch}.logit_scale": 0.25}
    if spec.n_experts:
        kv |= {"{arch}.expert_count": spec.n_experts, "{arch}.expert_used_count": spec.n_experts_active,
               "{arch}.expert_feed_forward_length": text.get("moe_intermediate_size", text["intermediate_size"])}
    if arch == "llama4":
        kv["{arch}.interleave_moe_layer_step"] = text.get("interleave_moe_layer_step", 1)
    return kv


def planned_and_loaded(alias: str, n_layers: int, tmp_path):
    config = shrunk_config(alias, n_layers)
    spec = spec_from_config(config, id=alias, source=f"catalog:{alias}")
    arch = gguf_arch(spec)
    view = gguf_view(spec, "F16")
    path = write_zero_gguf(tmp_path / f"{alias}.gguf", arch, converter_keys(spec, config, arch),
                           [(t.name, t.shape) for t in view.tensors])
    log = load_with_llamacpp(path, N_CTX)
    settings = Settings(ctx=N_CTX, parallel=1, flash_attn="off", n_gpu_layers=0, fit=False, quant="F16")
    alloc = LlamaCpp().allocate(spec, estimate(spec, "F16"), settings, [Target("CPU", "cpu", 64 << 30)])
    return spec, log, alloc


def test_mistral_v01_window_is_not_applied_by_llamacpp(tmp_path):
    """Mistral-7B-v0.1 converts to arch 'llama', whose llama.cpp code has no sliding window: n_swa 0, every layer
    caches all 32,768 cells; the planner's KV for the catalog config is that, not the 4,096 window."""
    spec, log, alloc = planned_and_loaded("mistral-7b-v0.1", 2, tmp_path)
    assert {a.window for a in spec.attention_layers} == {4096}          # the config does carry the window
    assert log.n_swa == 0 and log.is_swa == (False, False)
    assert log.caches == {"full": (N_CTX, 2, log.caches["full"][2])}
    assert alloc.devices[0].kv_cache == log.total_bytes
    assert any(s.label == "sliding window" for s in alloc.steps)


def test_mistral_7b_catalog_kv_at_32k_is_4_gib():
    """The full-size catalog model: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 B × 32,768 cells = 4 GiB."""
    spec = lookup("mistral-7b-v0.1")
    alloc = LlamaCpp().allocate(spec, estimate(spec, "Q4_K_M"),
                                Settings(ctx=N_CTX, parallel=1, n_gpu_layers=0, fit=False),
                                [Target("CPU", "cpu", 64 << 30)])
    assert alloc.devices[0].kv_cache == 32 * 8 * 128 * 2 * 2 * N_CTX == 4 << 30


# every catalog architecture whose config has sliding-window layers, with enough layers for its pattern
WINDOWED = {}
for _alias in aliases():
    _spec = lookup(_alias)
    if any(a.kind == "sliding" for a in _spec.attention_layers):
        WINDOWED.setdefault(gguf_arch(_spec), _alias)
PATTERN_LAYERS = {"gemma3": 6, "cohere2": 4, "llama4": 4, "gpt-oss": 4, "gemma2": 4}


def test_the_windowed_catalog_architectures_are_known():
    # a new windowed architecture in the catalog must be added to the real-load test below
    assert set(WINDOWED) == {"llama", "phi3", "gemma2", "gemma3", "cohere2", "gpt-oss", "llama4"}


@pytest.mark.parametrize("arch", sorted(WINDOWED))
def test_windows_match_real_llamacpp(arch, tmp_path):
    alias = WINDOWED[arch]
    spec, log, alloc = planned_and_loaded(alias, PATTERN_LAYERS.get(arch, 2), tmp_path)
    loaded = as_llamacpp_loads(spec)
    planned_swa = tuple(la.attention.kind == "sliding" for la in loaded.layers if la.attention)
    assert planned_swa == log.is_swa, f"{alias}: SWA pattern"
    windows = {a.window for a in loaded.attention_layers if a.kind == "sliding"}
    assert windows == ({log.n_swa} if log.n_swa else set())
    c = context_sizes(N_CTX, 1, 512, 512, False, total=N_CTX)
    expected = {"full": (N_CTX, planned_swa.count(False))}
    if any(planned_swa):
        expected["swa"] = (swa_cells(c, log.n_swa, False), planned_swa.count(True))
    assert {k: v[:2] for k, v in log.caches.items()} == expected, alias
    assert abs(alloc.devices[0].kv_cache - log.total_bytes) <= 0.01 * MiB, alias     # the log rounds to 0.01 MiB

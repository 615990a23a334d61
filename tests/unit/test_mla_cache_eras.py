"""What a llama.cpp build (or an Ollama release, through the llama.cpp it runs) caches of an MLA layer (DeepSeek V2/V3,
R1, Kimi K2: llama.cpp arch deepseek2), era by era, each checked against a public log or the runtime's own source with
the arithmetic written out:

* before PR #12801 (b5061 and older; Ollama before v0.6.7): MLA run as MHA, every head's K (qk_nope + qk_rope) and V
  (v_head_dim) — ollama/ollama#9248's log;
* PR #12801 to PR #19067 (b5331 … b7437; Ollama v0.6.7 – v0.24.0): the latent (kv_lora_rank + qk_rope) as K and its
  kv_lora_rank part stored again as V — ik_llama.cpp PR #394's mainline b5331 log (measurements/public_logs);
* PR #19067 on (the modelled build, Ollama v0.30+): the latent K alone, V a view of it.

And the file decides before the build: a GGUF without {arch}.attention.key_length_mla (converted before PR #12801) is
an ordinary K/V model in every build (src/llama-model.cpp reads the key as optional "for compatibility with existing
DeepSeek V2 and V2.5 GGUFs"; hparams.is_mla() is false without it).
"""

from __future__ import annotations

import gguf
import pytest
from factories import F32, _add

from runlocal.check import CheckRequest, check
from runlocal.evidence.public_logs import load_llamacpp
from runlocal.model.catalog import lookup
from runlocal.model.gguf import read_gguf
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes import get_runtime
from runlocal.runtimes import llamacpp_layout as layout
from runlocal.runtimes.versions import llamacpp_mla_cache, ollama_mla_cache, parse_version

MiB = 1 << 20


def _kv_bytes(model: str, runtime: str, ctx: int) -> tuple[int, int, list]:
    plan, _ = check(CheckRequest(model=model, runtime=runtime, gpu="h100", ctx=str(ctx), parallel=1,
                                 use_measurements=False))
    a = plan.allocation
    return sum(d.kv_cache for d in a.devices), a.kv_bytes_per_token, list(plan.steps)


def test_before_pr_12801_every_head_is_cached_as_ollama_9248_logged():
    # ollama/ollama#9248 (DeepSeek-R1 671B, Feb 2025, Ollama's vendored llama.cpp): kv_size 8192,
    # "KV self size = 39040.00 MiB, K (f16): 23424.00 MiB, V (f16): 15616.00 MiB".
    # By hand, from the config (61 layers, 128 heads, qk_nope 128 + qk_rope 64 = 192, v_head_dim 128):
    #   K = 61 × 128 × 192 × 2 B × 8192 = 24,561,844,224 B = 23,424 MiB
    #   V = 61 × 128 × 128 × 2 B × 8192 = 16,374,562,816 B = 15,616 MiB
    assert 61 * 128 * 192 * 2 * 8192 == 23424 * MiB and 61 * 128 * 128 * 2 * 8192 == 15616 * MiB
    assert layout.mla_head_widths(lookup("deepseek-r1")) == (128, 192, 128)
    total, per_token, steps = _kv_bytes("deepseek-r1", "llama.cpp==b4500", 8192)
    assert total == (23424 + 15616) * MiB
    assert per_token == 61 * (128 * 192 + 128 * 128) * 2
    mla = next(s for s in steps if s.label == "MLA cache")
    assert mla.value == "heads" and "PR #12801" in mla.source and "K 128 × 192" in mla.formula


def test_between_pr_12801_and_19067_the_latent_is_cached_twice_as_b5331_logged():
    # ik_llama.cpp PR #394, a mainline llama.cpp log (build: 5331 (33eff402)) of DeepSeek-V3-0324 at 16,384 cells:
    # "n_head_kv = 1, n_embd_head_k = 576, n_embd_head_v = 512", K (f16) 1098.00 MiB, V (f16) 976.00 MiB. By hand:
    #   K = 61 × (512 + 64) × 2 B × 16384 = 1,151,336,448 B = 1,098 MiB;  V = 61 × 512 × 2 B × 16384 = 976 MiB
    rec = next(r for r in load_llamacpp() if r["source_url"].endswith("ik_llama.cpp/pull/394"))
    assert rec["llama_cpp_build"].startswith("build: 5331") and rec["settings"]["kv_size"] == 16384
    k_mib, v_mib = rec["logged"]["kv_k_mib"], rec["logged"]["kv_v_mib"]
    assert (61 * 576 * 2 * 16384, 61 * 512 * 2 * 16384) == (k_mib * MiB, v_mib * MiB)
    total, per_token, steps = _kv_bytes("deepseek-v3", "llama.cpp==b5331", 16384)
    assert total == (k_mib + v_mib) * MiB
    assert per_token == 61 * (576 + 512) * 2
    mla = next(s for s in steps if s.label == "MLA cache")
    assert mla.value == "kv" and "assumed" not in mla.source


def test_from_pr_19067_the_latent_alone_and_current_plans_unchanged():
    # DeepSeek-V2-Lite, 27 layers: K = 27 × (512 + 64) × 2 B = 31,104 B per token, no V (PR #19067, "V-less cache")
    current, current_per_token, current_steps = _kv_bytes("deepseek-v2-lite", "llama.cpp", 32768)
    assert current_per_token == 27 * 576 * 2 == 31104 and current == 31104 * 32768
    assert not any(s.label == "MLA cache" for s in current_steps)       # the current build's plan names no era
    named, named_per_token, steps = _kv_bytes("deepseek-v2-lite", "llama.cpp==b9500", 32768)
    assert (named, named_per_token) == (current, current_per_token)
    assert next(s for s in steps if s.label == "MLA cache").value == "k"


@pytest.mark.parametrize("build,era,assumed", [
    (3000, "heads", False), (5061, "heads", False),     # b5061: issue #12817, filed while PR #12801 was in review
    (5200, "kv", True), (5331, "kv", False), (7437, "kv", False),   # b7437: ollama's vendored ec98e2002 allocates V
    (8000, "k", True), (9452, "k", False), (10864, "k", False),
])
def test_llamacpp_builds_by_era(build, era, assumed):
    got, why = llamacpp_mla_cache(parse_version("llama.cpp", f"b{build}"))
    assert got == era and f"b{build}" in why and ("assumed" in why) == assumed


@pytest.mark.parametrize("release,era", [
    # ollama/ollama at each tag: v0.6.6 vendors 71e90e881, whose src/llama-hparams.h has no n_embd_head_k_mla;
    # v0.6.7 vendors 2016f07bd, which has it (PR #12801); v0.24.0's ec98e2002 (b7437) still allocates V for every
    # layer (src/llama-kv-cache.cpp: ggml_new_tensor_3d(ctx, type_v, n_embd_v_gqa, …)); v0.30.0 builds b9452
    ("0.5.8", "heads"), ("0.6.6", "heads"), ("0.6.7", "kv"), ("0.24.0", "kv"), ("0.30.0", "k"), ("0.32.15", "k"),
])
def test_ollama_releases_by_the_llamacpp_they_run(release, era):
    assert ollama_mla_cache(parse_version("ollama", release))[0] == era
    planner = get_runtime(f"ollama=={release}")
    assert planner.mla_cache == era


@pytest.mark.parametrize("alias,heads", [("deepseek-v2-lite", 16), ("deepseek-v3", 128), ("kimi-k2", 64)])
def test_head_widths_from_the_checkpoint_and_from_its_gguf_names(alias, heads):
    # every one: qk_nope_head_dim 128 + qk_rope_head_dim 64 = 192, v_head_dim 128 (config.json)
    spec = lookup(alias)
    assert layout.mla_head_widths(spec) == (heads, 192, 128)
    view = gguf_view(spec, "Q4_K_M")        # kv_b split into attn_k_b / attn_v_b, as convert_hf_to_gguf.py writes
    assert view is not None and layout.mla_head_widths(view) == (heads, 192, 128)


def _deepseek2_gguf(path, *, mla_keys: bool):
    """A DeepSeek-V2-Lite-shaped deepseek2 GGUF header (27 layers, 16 heads, kv_lora_rank 512, qk_rope 64): converted
    after PR #12801 (``mla_keys``: one 576/512 K/V head, key_length_mla 192, attn_k_b/attn_v_b) or before it (16 heads
    of key_length 192 / value_length 128, a fused attn_kv_b)."""
    q = gguf.GGMLQuantizationType.Q8_0
    w = gguf.GGUFWriter(str(path), "deepseek2")
    w.add_block_count(27)
    w.add_embedding_length(2048)
    w.add_head_count(16)
    w.add_head_count_kv(1 if mla_keys else 16)
    w.add_key_length(576 if mla_keys else 192)
    w.add_value_length(512 if mla_keys else 128)
    if mla_keys:
        w.add_uint32("deepseek2.attention.key_length_mla", 192)
        w.add_uint32("deepseek2.attention.value_length_mla", 128)
    w.add_uint32("deepseek2.attention.kv_lora_rank", 512)
    w.add_rope_dimension_count(64)
    w.add_context_length(163840)
    w.add_feed_forward_length(1024)
    w.add_file_type(7)
    w.add_token_list([f"tok{i}" for i in range(256)])
    _add(w, "token_embd.weight", (256, 2048), q)
    _add(w, "output.weight", (256, 2048), q)
    for i in range(27):
        _add(w, f"blk.{i}.attn_q.weight", (16 * 192, 2048), q)
        _add(w, f"blk.{i}.attn_kv_a_mqa.weight", (576, 2048), q)
        _add(w, f"blk.{i}.attn_kv_a_norm.weight", (512,), F32)
        if mla_keys:     # ne [nope, kv_lora, n_head] and [kv_lora, v, n_head], written outermost first
            _add(w, f"blk.{i}.attn_k_b.weight", (16, 512, 128), q)
            _add(w, f"blk.{i}.attn_v_b.weight", (16, 128, 512), q)
        else:
            _add(w, f"blk.{i}.attn_kv_b.weight", (16 * 256, 512), q)
        _add(w, f"blk.{i}.attn_output.weight", (2048, 16 * 128), q)
        _add(w, f"blk.{i}.ffn_up.weight", (1024, 2048), q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    return read_gguf(path)


def test_a_gguf_converted_before_pr_12801_caches_every_head_in_every_build(tmp_path):
    # 16 heads × (192 + 128) × 2 B × 27 layers = 276,480 B per token, whatever the build (no key_length_mla)
    old = _deepseek2_gguf(tmp_path / "old.gguf", mla_keys=False)
    assert {a.kind for a in old.attention_layers} == {"full"}
    for era in (layout.MLA_CACHE_HEADS, layout.MLA_CACHE_KV, layout.MLA_CACHE_K):
        assert layout.kv_per_token(old, "f16", "f16", mla_cache=era) == 16 * (192 + 128) * 2 * 27 == 276480


def test_a_gguf_with_the_mla_keys_follows_the_build(tmp_path):
    new = _deepseek2_gguf(tmp_path / "new.gguf", mla_keys=True)
    assert {a.kind for a in new.attention_layers} == {"mla"}
    assert layout.mla_head_widths(new) == (16, 192, 128)
    per_token = {era: layout.kv_per_token(new, "f16", "f16", mla_cache=era)
                 for era in (layout.MLA_CACHE_HEADS, layout.MLA_CACHE_KV, layout.MLA_CACHE_K)}
    # 27 layers × 2 B × (16 × (192 + 128) | 576 + 512 | 576)
    assert per_token == {"heads": 276480, "kv": 27 * (576 + 512) * 2, "k": 27 * 576 * 2}
    assert per_token["kv"] == 58752 and per_token["k"] == 31104


@pytest.mark.parametrize("release,per_token", [
    # DeepSeek-V2-Lite, 27 layers × 2 B × (16 heads × (192 + 128) | 576 + 512 | 576)
    ("0.5.8", 27 * 16 * (192 + 128) * 2), ("0.6.7", 27 * (576 + 512) * 2), ("0.30.0", 27 * 576 * 2),
])
def test_an_ollama_plan_caches_as_its_llamacpp_and_says_so(release, per_token):
    total, planned, steps = _kv_bytes("deepseek-v2-lite", f"ollama=={release}", 32768)
    assert planned == per_token and total == per_token * 32768
    mla = next(s for s in steps if s.label == "MLA cache")
    assert mla.source.startswith(f"Ollama {release}")

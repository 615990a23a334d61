"""Every catalog model against the real llama.cpp (issue 18, point 6).

A user asks "how much KV cache and recurrent state will llama.cpp set up for <catalog model> at this context?"
and runlocal answers from the model's config.json. Here each catalog entry's config, shrunk to one period of
its layer pattern (runlocal.evidence.converter_meta: real width, heads, KV heads, head size, window, MLA ranks
and SSM sizes; narrow feed-forward, few experts, small vocabulary), is written as the zero-weight GGUF the
converter would make (its tensors as runlocal's GGUF view names them, its metadata as convert_hf_to_gguf.py
writes it) and loaded by llama-cpp-python 0.3.36 on the CPU. What llama.cpp logs (n_swa, each layer's is_swa,
each KV cache's cells, layers and size, the recurrent state's size) must be what the planner computes for the
same shrunk config through the catalog / config.json path. New catalog entries are covered automatically; the
only skip is an architecture the converter cannot write for llama.cpp.

All GGUFs are written once per session (sparse files: no disk) and loaded in one child process.
"""

from __future__ import annotations

import json

import pytest

from runlocal.evidence.catalog_gguf import shrunk_spec, write_gguf
from runlocal.evidence.llamacpp_load import LoadLog, load_with_llamacpp
from runlocal.model.catalog import aliases, find_entry, lookup
from runlocal.model.spec import ModelSpec
from runlocal.quant.gguf_mix import gguf_arch
from runlocal.runtimes.arch_support import llamacpp_loads
from runlocal.runtimes.base import Settings, Target
from runlocal.runtimes.llamacpp import LlamaCpp, context_sizes, swa_cells
from runlocal.runtimes.llamacpp_swa import as_llamacpp_loads
from runlocal.weights import estimate

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
gguf = pytest.importorskip("gguf", reason="gguf-py is not installed")

MiB = 1 << 20
# HF classes convert_hf_to_gguf.py has no text-model class for (conversion/__init__.py TEXT_MODEL_MAP), and why
NO_CONVERTER = {
    "MllamaForConditionalGeneration": "no TEXT_MODEL_MAP entry in convert_hf_to_gguf.py (conversion/__init__.py): "
                                      "there is no llama.cpp GGUF of Llama 3.2 Vision to compare",
}


def not_convertible(alias: str) -> str | None:
    """Why this catalog model has no GGUF the real llama.cpp could load (None: it has one)."""
    spec = lookup(alias)
    if gguf_arch(spec) is not None:
        return None
    return NO_CONVERTER.get(spec.architecture, f"{spec.architecture}: no GGUF architecture known for model_type "
                                               f"'{spec.family}' (quant/gguf_mix.py _ARCH_BY_MODEL_TYPE)")


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, tuple[ModelSpec, object, int]]:
    """One GGUF per distinct shrunk config: catalog siblings that share a config (Thinking / Base / deduplicated
    releases) share its file and its load, and are checked against the same log."""
    out = tmp_path_factory.mktemp("catalog-gguf")
    by_config: dict[str, tuple[ModelSpec, object, int]] = {}
    files = {}
    for a in aliases():
        if not_convertible(a) is not None:
            continue
        key = json.dumps(find_entry(a)["config"], sort_keys=True)
        if key not in by_config:
            by_config[key] = write_gguf(a, out)
        files[a] = by_config[key]
    return files


@pytest.fixture(scope="session")
def loaded(built) -> dict[str, tuple[ModelSpec, LoadLog, int]]:
    logs = load_with_llamacpp(list(dict.fromkeys((path, n_ctx) for _, path, n_ctx in built.values())))
    return {a: (spec, logs[str(path)], n_ctx) for a, (spec, path, n_ctx) in built.items()}


def planned_buffers(spec: ModelSpec, n_ctx: int, swa_full: bool = False, n_seq: int = 1,
                    unified: bool = False) -> tuple[ModelSpec, int, int]:
    """(the view llama.cpp loads, planned KV bytes, planned recurrent-state bytes) on the CPU for n_ctx cells in
    all over n_seq sequences (llama-server -c n_ctx -np n_seq)."""
    settings = Settings(ctx=n_ctx // n_seq, parallel=n_seq, quant="F16").with_(
        flash_attn="off", n_gpu_layers=0, fit=False, swa_full=swa_full, kv_unified=unified)
    _, bufs, _, _ = LlamaCpp().buffers(spec, estimate(spec, "F16"), settings, [Target("CPU", "cpu", 64 << 30)])
    return as_llamacpp_loads(spec), sum(b.kv for b in bufs), sum(b.rs for b in bufs)


@pytest.mark.parametrize("alias", aliases())
def test_catalog_model_memory_matches_real_llamacpp(alias, loaded):
    if (why := not_convertible(alias)) is not None:
        pytest.skip(why)
    spec, log, n_ctx = loaded[alias]
    if log.error and "unknown model architecture" in log.text:
        # by architecture, with the first llama.cpp build that can (data/arch_support.json), not a silent pass
        arch = gguf_arch(spec) or "?"
        _, first, why = llamacpp_loads(0, arch)
        pytest.skip(f"llama-cpp-python 0.3.36's llama.cpp cannot load architecture '{arch}'; first build that can: "
                    f"{first or 'not recorded'} ({why})")
    assert log.error is None, f"{alias}: llama.cpp refused the converter's GGUF: {log.error}\n{log.text[-1500:]}"
    view, kv_bytes, rs_bytes = planned_buffers(spec, n_ctx)

    # which layers slide, and by how much (llama.cpp: n_swa and each layer's is_swa); a KV-shared layer (Gemma 4's
    # last num_kv_shared_layers: no cache of its own, llama.cpp hparams.has_kv false) slides as its layer_types entry
    shrunk = shrunk_spec(alias)[1]
    types = (shrunk.get("text_config") or shrunk).get("layer_types") or []
    planned_swa = tuple(la.attention.kind == "sliding" if la.attention is not None
                        else la.recurrent is None and i < len(types) and types[i] == "sliding_attention"
                        for i, la in enumerate(view.layers))
    assert planned_swa == log.is_swa, f"{alias}: SWA pattern"
    assert {a.window for a in view.attention_layers if a.kind == "sliding"} == ({log.n_swa} if log.n_swa else set())

    # the KV caches: cells and layers of the full and the sliding-window cache
    c = context_sizes(n_ctx, 1, 512, 512, False, total=n_ctx)
    n_attn = [la.attention for la in view.layers if la.attention is not None]
    expected = {}
    if any(a.kind != "sliding" for a in n_attn):
        expected["full"] = (c.n_ctx_seq, sum(a.kind != "sliding" for a in n_attn))
    if any(a.kind == "sliding" for a in n_attn):
        expected["swa"] = (swa_cells(c, log.n_swa, False), sum(a.kind == "sliding" for a in n_attn))
    assert {k: v[:2] for k, v in log.caches.items()} == expected, alias
    assert abs(kv_bytes - log.kv_bytes) <= 0.006 * MiB * len(log.caches), alias    # the log rounds to 0.01 MiB

    # the recurrent state (Mamba, Mamba-2, gated delta-net layers): one f32 conv + SSM state per sequence
    assert (rs_bytes > 0) == (log.recurrent is not None), f"{alias}: recurrent state planned {rs_bytes} B"
    assert abs(rs_bytes - log.rs_bytes) <= 0.012 * MiB, f"{alias}: recurrent state {rs_bytes} vs {log.rs_bytes}"


def test_mistral_v01_window_is_not_applied_by_llamacpp(loaded):
    """Mistral-7B-v0.1 (config sliding_window 4096) converts to arch 'llama', whose llama.cpp code has no sliding
    window: n_swa 0, every layer caches all 8,192 cells; the planner's KV is that, not the 4,096 window."""
    spec, log, n_ctx = loaded["mistral-7b-v0.1"]
    assert {a.window for a in spec.attention_layers} == {4096}          # the config does carry the window
    assert n_ctx == 8192 and log.n_swa == 0 and not any(log.is_swa)
    assert log.caches["full"][:2] == (8192, 2)
    _, kv_bytes, _ = planned_buffers(spec, n_ctx)
    assert kv_bytes == log.kv_bytes == 2 * 8 * 128 * 2 * 2 * 8192        # 2 layers × 8 KV heads × 128 × K,V × f16


def test_mistral_7b_catalog_kv_at_32k_is_4_gib():
    """The full-size catalog model: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 B × 32,768 cells = 4 GiB."""
    spec = lookup("mistral-7b-v0.1")
    alloc = LlamaCpp().allocate(spec, estimate(spec, "Q4_K_M"),
                                Settings(ctx=32768, parallel=1).with_(n_gpu_layers=0, fit=False),
                                [Target("CPU", "cpu", 64 << 30)])
    assert alloc.devices[0].kv_cache == 32 * 8 * 128 * 2 * 2 * 32768 == 4 << 30
    assert any(s.label == "sliding window" for s in alloc.steps)


def test_every_windowed_and_recurrent_architecture_is_covered(loaded):
    """The kinds point 6 names all occur among the models loaded: windows llama.cpp applies (gemma2/3, cohere2,
    gpt-oss, llama4, OLMo 3 on olmo2), windows it drops (Mistral on 'llama', Phi-3), MLA, Mamba, Mamba-2 (Nemotron-H
    too) and delta-net hybrids."""
    logs = {a: log for a, (_, log, _) in loaded.items()}
    assert {gguf_arch(lookup(a)) for a, log in logs.items() if log.n_swa} >= {
        "gemma2", "gemma3", "cohere2", "gpt-oss", "llama4", "olmo2"}
    assert {gguf_arch(lookup(a)) for a, log in logs.items() if log.recurrent} >= {
        "mamba", "jamba", "granitehybrid", "falcon-h1", "qwen3next", "qwen35", "qwen35moe", "nemotron_h",
        "nemotron_h_moe"}


def test_qwen35_mtp_block_gets_no_kv_cache(tmp_path):
    """Qwen3.5 GGUFs converted with the MTP block (the converter's default) load with n_layer 4 of n_layer_all 5
    and the same single full-attention KV layer and recurrent state as without it: the planner, which leaves the
    MTP layer out of the KV layout, holds for both kinds of file."""
    spec, path, n_ctx = write_gguf("qwen3.5-27b", tmp_path, mtp=True)
    log = load_with_llamacpp([(path, n_ctx)])[str(path)]
    assert log.error is None and "n_layer_all           = 5" in log.text
    _, kv_bytes, rs_bytes = planned_buffers(spec, n_ctx)
    assert log.caches["full"][:2] == (n_ctx, 1)
    assert abs(kv_bytes - log.kv_bytes) <= 0.006 * MiB and abs(rs_bytes - log.rs_bytes) <= 0.012 * MiB


def test_glm45_mtp_block_gets_no_kv_cache(tmp_path):
    """GLM-4.5 GGUFs carry the MTP layer past num_hidden_layers (conversion/glm.py Glm4MoeModel: block_count +
    num_nextn_predict_layers, nextn_predict_layers); llama.cpp loads them with n_layer 2 of n_layer_all 3 for the
    shrunk GLM-4.5-Air and caches only the 2 decoder layers, as the planner (which leaves the MTP layer out) does."""
    spec, path, n_ctx = write_gguf("glm-4.5-air", tmp_path, mtp=True)
    log = load_with_llamacpp([(path, n_ctx)])[str(path)]
    assert log.error is None and "n_layer_all           = 3" in log.text
    _, kv_bytes, _ = planned_buffers(spec, n_ctx)
    assert log.caches["full"][:2] == (n_ctx, 2) and kv_bytes == log.kv_bytes


def test_swa_full_keeps_every_window_layer_at_the_whole_context(built, loaded):
    """llama-server --swa-full: the sliding-window layers keep all n_ctx cells (src/llama-kv-cache-iswa.cpp); one
    model per windowed architecture, loaded again with swa_full, against the planner's --swa-full KV bytes."""
    windowed: dict[str, str] = {}
    for alias, (_, log, _) in loaded.items():
        if log.n_swa:
            windowed.setdefault(str(gguf_arch(lookup(alias))), alias)
    assert len(windowed) >= 5
    logs = load_with_llamacpp([(built[a][1], built[a][2]) for a in windowed.values()], swa_full=True)
    for alias in windowed.values():
        spec, path, n_ctx = built[alias]
        log = logs[str(path)]
        assert log.error is None and log.caches["swa"][0] == n_ctx, alias
        _, kv_bytes, _ = planned_buffers(spec, n_ctx, swa_full=True)
        assert abs(kv_bytes - log.kv_bytes) <= 0.012 * MiB, alias


@pytest.mark.parametrize("unified", [False, True], ids=["streams", "unified"])
def test_four_sequences_split_or_share_the_caches_as_llamacpp_does(built, loaded, unified):
    """-np 4: without --kv-unified each sequence gets its own stream of n_ctx / 4 cells (its window, for a
    sliding layer) and its own recurrent state; with it one stream holds all four windows
    (src/llama-context.cpp, llama-kv-cache-iswa.cpp, llama-memory-recurrent.cpp). One model per windowed or
    recurrent architecture, against the planner's -np 4 bytes."""
    picked: dict[str, str] = {}
    for alias, (_, log, _) in loaded.items():
        if log.n_swa or log.recurrent:
            picked.setdefault(str(gguf_arch(lookup(alias))), alias)
    assert len(picked) >= 10
    jobs = [(built[a][1], 4 * built[a][2], 4, unified) for a in picked.values()]
    logs = load_with_llamacpp(jobs)
    for alias in picked.values():
        spec, path, n_ctx = built[alias]
        log = logs[str(path)]
        assert log.error is None, alias
        _, kv_bytes, rs_bytes = planned_buffers(spec, 4 * n_ctx, n_seq=4, unified=unified)
        assert abs(kv_bytes - log.kv_bytes) <= 0.012 * MiB, f"{alias}: KV {kv_bytes} vs {log.kv_bytes}"
        assert abs(rs_bytes - log.rs_bytes) <= 0.012 * MiB, f"{alias}: recurrent {rs_bytes} vs {log.rs_bytes}"

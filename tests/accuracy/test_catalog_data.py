"""The embedded model catalog's data (src/runlocal/data/models.json).

Checks the file's shape, that every config is a real transformers config (no remote code), and that the
model it describes, built on the meta device, has the published parameter count (within 0.5%).
The exact count runlocal computes itself is tested against the same figures elsewhere.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from importlib import resources

import pytest

MODELS_JSON = resources.files("runlocal.data").joinpath("models.json")


def _strict_constant(name: str):
    raise ValueError(f"models.json must be strict JSON, found {name}")


DOC = json.loads(MODELS_JSON.read_text(encoding="utf-8"), parse_constant=_strict_constant)
ENTRIES = DOC["models"]
IDS = [e["alias"] for e in ENTRIES]

TOLERANCE = 0.005

# Families the catalog must cover (one alias each is enough to prove the family is there).
REQUIRED = [
    "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b",
    "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b", "llama-3.3-70b", "llama-4-scout", "llama-4-maverick",
    "llama-3.2-11b-vision",
    "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b",
    "qwen2.5-coder-32b", "qwen2.5-vl-7b",
    "qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b", "qwen3-30b-a3b",
    "qwen3-235b-a22b", "qwen3-next-80b-a3b",
    "mistral-7b-v0.1", "mistral-7b-v0.3", "mistral-nemo-12b", "mistral-small-24b", "mixtral-8x7b", "mixtral-8x22b",
    "gemma-2-2b", "gemma-2-9b", "gemma-2-27b", "gemma-3-1b", "gemma-3-4b", "gemma-3-12b", "gemma-3-27b",
    "phi-3-mini", "phi-3-medium", "phi-4", "phi-4-mini",
    "granite-3.3-8b", "granite-4.0-h-tiny",
    "gpt-oss-20b", "gpt-oss-120b",
    "deepseek-v2-lite", "deepseek-v3", "deepseek-r1", "deepseek-r1-distill-qwen-7b", "deepseek-r1-distill-llama-8b",
    "kimi-k2", "jamba-mini-1.5", "falcon-h1-7b", "falcon3-7b", "mamba-2.8b", "command-r", "command-r7b",
    "smollm2-1.7b", "smollm3-3b", "olmo-2-7b",
    # #18: the models public logs named that could not be resolved offline, and each family's other sizes
    "llama-2-7b-base", "codellama-7b", "codellama-13b", "codellama-34b", "codellama-70b", "qwen1.5-1.8b",
    "qwen1.5-4b", "qwen1.5-7b", "qwen1.5-14b", "qwen1.5-32b", "qwen1.5-72b", "qwen1.5-110b", "qwen1.5-moe-a2.7b",
    "qwen2-0.5b", "qwen2-1.5b", "qwen2-7b", "qwen2-72b", "qwen2.5-coder-7b", "qwen2.5-math-7b", "qwen2.5-vl-3b", "qwq-32b",
    "qwen3-4b-2507", "qwen3-235b-a22b-2507", "qwen3.5-122b-a10b", "qwen3.5-397b-a17b", "qwen3.6-35b-a3b",
    "codestral-22b", "mistral-large-2407", "mistral-7b-v0.2", "devstral-small-2507", "mathstral-7b",
    "gemma-2b", "gemma-7b", "phi-1.5", "phi-2", "phi-3.5-mini", "phi-4-reasoning", "deepseek-v2", "deepseek-v2.5",
    "deepseek-coder-v2", "deepseek-coder-1.3b", "deepseek-v3.1", "kimi-k2-0905", "falcon3-1b", "falcon3-10b",
    "tinyllama-1.1b", "smollm-135m", "smollm2-360m", "olmo-2-32b", "aya-23-8b", "granite-3.1-1b-a400m",
    "jamba-large-1.5", "mamba-130m",
    # #18 session 7: the architectures the planners gained (GPT-NeoX, StableLM, OLMo 1/3, Falcon, Qwen3-VL, GLM-4.5,
    # MiniMax M2, Nemotron-H) and the public-log names among them (GLM-4.5-Air, Pythia)
    "pythia-70m", "pythia-1b", "pythia-12b", "stablelm-base-alpha-7b", "stablelm-3b-4e1t", "olmo-1b", "olmo-7b",
    "falcon-7b", "falcon-40b", "falcon-180b", "qwen3-vl-8b", "qwen3-vl-30b-a3b", "glm-4.5-air", "glm-4.6",
    "minimax-m2.5", "olmo-3-7b", "nemotron-h-56b", "nemotron-3-nano-30b-a3b", "falcon-h1-0.5b",
    # #18 session 16: models the outcome records (measurements/outcomes) named that the catalog lacked
    "qwen3.5-0.8b", "qwen3.5-2b", "qwen3.5-4b", "qwen3.5-9b", "qwen3-coder-next", "ministral-8b",
]

# Hub safetensors totals that are not comparable with the loaded model because the checkpoint stores
# lm_head.weight separately although tie_word_embeddings is true (documented in each entry's note).
# The difference must be exactly one vocab x hidden matrix.
DUPLICATED_LM_HEAD_HUB_TOTAL = {
    "qwen3-0.6b": 751_632_384,
    "qwen3-1.7b": 2_031_739_904,
}


# Hub safetensors totals that also store a multi-token-prediction (MTP) block transformers does not build
# (Qwen3.5: mtp.fc, mtp.pre_fc_norm_hidden/_embedding, mtp.norm and mtp.layers.0, a full-attention decoder layer
# sharing the embedding and LM head). Totals as recorded in AlexsJones/llmfit scripts/scrape_hf_models.py. The
# difference must be exactly that block: one full-attention layer of the built model + fc (2h -> h) + 3 norms.
MTP_HUB_TOTAL = {
    "qwen3.5-27b": 27_781_427_952,
    "qwen3.5-35b-a3b": 35_951_822_704,
}


# Qwen3.5 sizes with no exact Hub total offline: the Hub's safetensors totals as AlexsJones/llmfit MODELS.md (@3f44fd3)
# prints them, rounded (873M, 2.3B, 4.7B, 9.7B). The built model plus the MTP block (as for MTP_HUB_TOTAL) must round
# to the same figure: a wrong width, layer count or vision tower moves it off.
MTP_HUB_TOTAL_ROUNDED = {
    "qwen3.5-0.8b": (873, 1e6),
    "qwen3.5-2b": (2.3, 1e9),
    "qwen3.5-4b": (4.7, 1e9),
    "qwen3.5-9b": (9.7, 1e9),
}


def _norm(name: str) -> str:
    # the catalog's own lookup normalisation (runlocal.model.catalog._norm)
    return re.sub(r"[^a-z0-9.]", "", name.lower())


# ---------------------------------------------------------------- shape of the file


def test_schema_and_size():
    assert DOC["schema"] == 1
    assert len(ENTRIES) >= 300


def test_required_families_present():
    missing = sorted(set(REQUIRED) - set(IDS))
    assert not missing, f"catalog lacks {missing}"


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_entry_fields(entry):
    assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", entry["alias"]), entry["alias"]
    assert isinstance(entry.get("aliases", []), list)
    for a in entry.get("aliases", []):
        assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", a), a
    assert re.fullmatch(r"[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+", entry["repo_id"]), entry["repo_id"]
    assert isinstance(entry["params_source"], str) and entry["params_source"].strip()
    pub = entry["published_params"]
    assert pub is None or (isinstance(pub, int) and not isinstance(pub, bool) and pub > 0)
    if pub is None:
        assert entry.get("note"), "an entry without a published count must say why in its note"
    cfg = entry["config"]
    assert isinstance(cfg.get("model_type"), str) and cfg["model_type"]
    assert isinstance(cfg.get("architectures"), list) and cfg["architectures"]
    assert "auto_map" not in cfg, "configs must not point at remote code"
    for key in ("transformers_version", "_name_or_path"):
        assert key not in cfg


def test_aliases_unique():
    seen: dict[str, str] = {}
    for e in ENTRIES:
        names = [e["alias"], *e.get("aliases", [])]
        assert len(names) == len(set(names)), f"{e['alias']} repeats an alias"
        for n in names:
            assert n not in seen, f"alias {n!r} is used by {seen[n]} and {e['alias']}"
            seen[n] = e["alias"]


def test_lookup_names_unambiguous():
    """Every name catalog lookup indexes (alias, aliases, repo id, repo name) leads to one entry."""
    owner: dict[str, str] = {}
    for e in ENTRIES:
        names = {e["alias"], *e.get("aliases", []), e["repo_id"], e["repo_id"].split("/")[-1]}
        for key in {_norm(n) for n in names}:
            assert owner.setdefault(key, e["alias"]) == e["alias"], (
                f"{key!r} would find both {owner[key]} and {e['alias']}")
    repos = [e["repo_id"] for e in ENTRIES]
    assert len(repos) == len(set(repos))


def test_quantized_repos_keep_quantization_config():
    by = {e["alias"]: e for e in ENTRIES}
    for alias in ("gpt-oss-20b", "gpt-oss-120b"):
        assert by[alias]["config"]["quantization_config"]["quant_method"] == "mxfp4"
    for alias in ("deepseek-v3", "deepseek-r1", "kimi-k2"):
        q = by[alias]["config"]["quantization_config"]
        assert q["quant_method"] == "fp8" and q["weight_block_size"] == [128, 128]


def test_remote_code_models_are_stored_as_native_types():
    kimi = next(e for e in ENTRIES if e["alias"] == "kimi-k2")
    assert kimi["config"]["model_type"] == "deepseek_v3"
    assert "kimi_k2" in kimi["note"]


def test_multimodal_configs_are_nested():
    for e in ENTRIES:
        arch = e["config"]["architectures"][0]
        if arch.endswith("ForConditionalGeneration"):
            assert isinstance(e["config"].get("vision_config"), dict), e["alias"]
            if e["config"]["model_type"] != "qwen2_5_vl":  # Qwen2.5-VL keeps the text fields at top level
                assert isinstance(e["config"].get("text_config"), dict), e["alias"]


def test_catalog_loads_through_runlocal():
    from runlocal.model import catalog

    catalog.load_entries.cache_clear()
    catalog._index.cache_clear()
    assert len(catalog.load_entries()) == len(ENTRIES)
    assert catalog.find_entry("Llama-3.1-8B-Instruct")["alias"] == "llama-3.1-8b"
    assert catalog.find_entry("meta-llama/Llama-3.1-8B-Instruct")["alias"] == "llama-3.1-8b"
    assert catalog.find_entry("qwen3-30b-a3b")["repo_id"] == "Qwen/Qwen3-30B-A3B"


# ---------------------------------------------------------------- real transformers configs and models


def _transformers():
    return pytest.importorskip("transformers", reason="transformers is not installed (pip install -e '.[test]')")


def _config(entry):
    transformers = _transformers()
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    cfg = dict(entry["config"])
    model_type = cfg.pop("model_type")
    if model_type not in CONFIG_MAPPING_NAMES:
        pytest.skip(f"transformers {transformers.__version__} has no model type {model_type!r} (needs 5.x)")
    if model_type == "dbrx":
        # DBRX's published config writes clip_qkv 8 and moe_normalize_expert_weights 1 as integers; transformers
        # 5.24's strict DbrxAttentionConfig / DbrxFFNConfig take floats (the same values)
        cfg["attn_config"] = {**cfg["attn_config"], "clip_qkv": float(cfg["attn_config"]["clip_qkv"])}
        cfg["ffn_config"] = {**cfg["ffn_config"],
                             "moe_normalize_expert_weights": float(cfg["ffn_config"]["moe_normalize_expert_weights"])}
    return transformers.AutoConfig.for_model(model_type, **cfg)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_config_builds_without_remote_code(entry):
    config = _config(entry)
    assert config.model_type == entry["config"]["model_type"]


def _build_on_meta(entry):
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
    transformers = _transformers()
    config = _config(entry)
    arch = entry["config"]["architectures"][0]
    auto = (transformers.AutoModelForImageTextToText if arch.endswith("ForConditionalGeneration")
            else transformers.AutoModelForCausalLM)
    with torch.device("meta"):
        model = auto.from_config(config)
    assert type(model).__name__ == arch, f"{auto.__name__} built {type(model).__name__}, config names {arch}"
    return model


@cache
def _meta_count(config_json: str) -> int:
    """Parameters of the model a config builds on the meta device, once per distinct config (catalog siblings
    such as Thinking / Base / deduplicated releases share one config)."""
    return sum(p.numel() for p in _build_on_meta({"config": json.loads(config_json)}).parameters())


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_meta_model_matches_published_count(entry):
    if entry["alias"] in MTP_HUB_TOTAL or entry["alias"] in MTP_HUB_TOTAL_ROUNDED:
        model = _build_on_meta(entry)
        built = sum(p.numel() for p in model.parameters())
    else:
        built = _meta_count(json.dumps(entry["config"], sort_keys=True))
    pub = entry["published_params"]
    if entry["alias"] in DUPLICATED_LM_HEAD_HUB_TOTAL:
        cfg = entry["config"]
        assert cfg["tie_word_embeddings"] is True
        assert built + cfg["vocab_size"] * cfg["hidden_size"] == DUPLICATED_LM_HEAD_HUB_TOTAL[entry["alias"]]
    if entry["alias"] in MTP_HUB_TOTAL:
        text = entry["config"]["text_config"]
        h = text["hidden_size"]
        full = text["layer_types"].index("full_attention")
        layer = sum(p.numel() for p in model.model.language_model.layers[full].parameters())
        assert built + layer + 2 * h * h + 3 * h == MTP_HUB_TOTAL[entry["alias"]]
    if entry["alias"] in MTP_HUB_TOTAL_ROUNDED:
        text = entry["config"]["text_config"]
        h = text["hidden_size"]
        full = text["layer_types"].index("full_attention")
        layer = sum(p.numel() for p in model.model.language_model.layers[full].parameters())
        shown, unit = MTP_HUB_TOTAL_ROUNDED[entry["alias"]]
        digits = 0 if unit == 1e6 else 1
        assert round((built + layer + 2 * h * h + 3 * h) / unit, digits) == shown, entry["alias"]
    if pub is None:
        return
    assert math.isclose(built, pub, rel_tol=TOLERANCE), (
        f"{entry['alias']}: built {built:,} vs published {pub:,} ({(built - pub) / pub:+.3%})")

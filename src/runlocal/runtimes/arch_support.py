"""Can the named build load the model's architecture? `--runtime llama.cpp==b5000` or `ollama==0.12.0` with a model
whose architecture came later is refused, with the first build / release known to load it, not planned.

data/arch_support.json (measurements/arch_support/make_arch_support.py) holds, per architecture the catalog uses:
for llama.cpp the newest build known without its name in src/llama-arch.cpp's LLM_ARCH_NAMES (``without``), the oldest
known with it (``with``) and, where a public text pins it, the first (``first``); for Ollama before v0.30.0 the first
release whose vendored llama.cpp names it or whose Go engine registers it, read back to ``ollama_oldest_read``
(v0.3.14: older releases pin llama.cpp as a submodule, not in ollama/ollama's tree). llama.cpp's loader throws "unknown model
architecture: '<name>'" for any other (src/llama-model.cpp load_arch). A build between ``without`` and ``with``, or
older than ``with`` where nothing older was read, is planned, and the answer says in a note that it is not known whether
it loads the model (unchecked_note). Unversioned runtimes (the current release) are not checked, but for an
architecture no llama.cpp build loads at all (NO_LLAMA_CPP), refused under llama.cpp, Ollama v0.30+ and mlx-lm whatever
the build, and for an HF architecture vLLM dropped (VLLM_LAST), refused under vLLM past its last release, the current
one included; an architecture the table does not hold is not checked either, and a named build says so in the same note.
One dict lookup per plan: nothing of the planner's own work (compute table, memos) moves.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from .versions import OLLAMA_LLAMA_SERVER_FROM, RuntimeVersion, ollama_llama_cpp, parse_version, release3

TABLE = "arch_support.json"
CANNOT_LOAD = "the build cannot load the model"   # a refused plan's speed["not_predicted"]
LOADER = "llama.cpp src/llama-model.cpp: \"unknown model architecture: '{arch}'\""
# docs/linux.mdx "Installing specific versions": curl -fsSL https://ollama.com/install.sh | OLLAMA_VERSION=0.5.7 sh
OLLAMA_INSTALL = "curl -fsSL https://ollama.com/install.sh | OLLAMA_VERSION={v} sh"
# vLLM (review19 finding 4): the first release that serves each HF model_type the catalog uses most. A release before it
# stops at load with "Model architectures ['X'] are not supported for now" (vllm/model_executor/models/registry.py;
# quoted in vllm-project/vllm issue #5953). Each from a maintainer's or a release's own words:
VLLM_FIRST: dict[str, tuple[str, str]] = {
    # ArcticInference issue #168: "the lowest vLLM version that supports GPT OSS is 0.10.1" (vllm PR #22259 shipped it
    # as the 0.10.1+gptoss wheel; runpod worker-vllm PR #207: 0.10.0 cannot load gpt_oss)
    "gpt_oss": ("0.10.1", "vllm-project/vllm PR #22259; snowflakedb/ArcticInference issue #168"),
    # vllm issue #17327 (simon-mo, 2025-04-28): "vLLM v0.8.4 and higher natively supports all Qwen3 and Qwen3MoE models"
    "qwen3": ("0.8.4", "vllm-project/vllm issue #17327"),
    "qwen3_moe": ("0.8.4", "vllm-project/vllm issue #17327"),
    # vllm PR #14971 (2025-03-17) tags Gemma 3 "given the 0.8.0 release"; issue #14696 (2025-03-12): the released vLLM
    # then could not load model type gemma3; bentoml/BentoVLLM PR #111: "waiting for vllm 0.8.0"
    "gemma3": ("0.8.0", "vllm-project/vllm PR #14971, issue #14696"),
    "gemma3_text": ("0.8.0", "vllm-project/vllm PR #14971, issue #14696"),
    # kubeai-project/kubeai PR #495 "Llama 4 support and vLLM 0.8.3" (Llama 4 came out 2025-04-05, v0.8.3 on 04-06)
    "llama4": ("0.8.3", "kubeai-project/kubeai PR #495"),
    # deepseek-ai/DeepSeek-V3 PR #9 (simon-mo, 2024-12-27): "vLLM v0.6.5 supports Deepseek V3"; vllm issue #11559
    # (a maintainer) says since v0.6.6: the earlier is used, so no release that may load it is refused
    "deepseek_v3": ("0.6.5", "deepseek-ai/DeepSeek-V3 PR #9; vllm-project/vllm issue #11559"),
    # the 0.6.2 sdist's vllm/model_executor/models/__init__.py:104 registers MllamaForConditionalGeneration, 0.6.1.post2's
    # has no Mllama (measurements/vllm_gone/releases.txt); vllm-project/vllm PR #8811, issue #8826 (`vllm serve
    # meta-llama/Llama-3.2-11B-Vision-Instruct` on 0.6.2)
    "mllama": ("0.6.2", "vllm-project/vllm PR #8811, issue #8826"),
}

# vLLM: the last release that serves an HF architecture a later release dropped, for each the catalog uses, keyed by
# the config's architectures[0] as registry.py keys it. From measurements/vllm_gone (gone.txt, 38 sdists 0.9.2–0.33.0):
# vllm/model_executor/models/registry.py _PREVIOUSLY_SUPPORTED_MODELS lists it with that release in every release
# from ``dropped`` on, and none of them has it in its own tables. Of the catalog's architectures only Mllama is listed.
VLLM_LAST: dict[str, dict[str, str]] = {
    "MllamaForConditionalGeneration": {
        "last": "0.10.2", "dropped": "0.11.0",
        # PR #24907 removed the V0 encoder-decoder models but Whisper; registry.py:343 in 0.11.0, :857 in 0.33.0
        "source": ("vllm/model_executor/models/registry.py _PREVIOUSLY_SUPPORTED_MODELS "
                   "{\"MllamaForConditionalGeneration\": \"0.10.2\"} (0.11.0 :343 … 0.33.0 :857; vllm-project/vllm "
                   "PR #24907)"),
        # inspect_model_cls tries the Transformers backend (_try_resolve_transformers) before _raise_for_unsupported
        # with --model-impl auto (0.10.1–0.33.0); transformers' MllamaPreTrainedModel is _supports_attention_backend
        # (4.52 on), so the fallback takes it as TransformersForMultimodalLM, which sizes an image through the
        # processor's _get_num_multimodal_tokens — MllamaProcessor has none (transformers 4.55–5.23 read;
        # huggingface/transformers#41749): vllm-project/vllm#27198 (0.11.0, transformers 4.57.1) stops there.
        "server": ("with the default --model-impl auto its Transformers-backend fallback takes the architecture "
                   "first and start-up stops with \"AttributeError: 'MllamaProcessor' object has no attribute "
                   "'_get_num_multimodal_tokens'\" (vllm-project/vllm#27198 on 0.11.0; huggingface/transformers#41749"
                   "); with --model-impl vllm: \"Model architecture MllamaForConditionalGeneration was supported in "
                   "vLLM until v0.10.2, and is not supported anymore.\""),
        "others": ("transformers 4.45 or later (--runtime transformers plans it), mlx-vlm on Apple silicon "
                   "(mlx_vlm/models/mllama), Ollama v0.4.0–v0.24.0 (its own engine)"),
    },
}


# Architectures no llama.cpp build loads, by the name the model's HF config (model_type) and its GGUF
# (general.architecture, as Ollama's own converter writes it) share. Refused for every llama.cpp build and for Ollama
# from v0.30.0 (llama-server runs every GGML model, OLLAMA_LLAMA_SERVER_FROM), whatever the memory says; and under
# --runtime mlx where mlx-lm has no model for it (`mlx_lm`).
NO_LLAMA_CPP: dict[str, dict[str, str]] = {
    "mllama": {
        # ggml-org/llama.cpp src/llama-arch.cpp LLM_ARCH_NAMES (read at 00395eb2, a 2026 tree with gemma4 and
        # deepseek4) names no "mllama"; load_arch then throws (ggml-org/llama.cpp#14951, b6019, a leafspark GGUF);
        # convert_hf_to_gguf.py has no class for the checkpoint (#9663, 2024-09-27; #13805, 2025-05-26)
        "llama_cpp": ("no llama.cpp build names the 'mllama' architecture (src/llama-arch.cpp LLM_ARCH_NAMES), so "
                      "its loader stops with \"unknown model architecture: 'mllama'\" (ggml-org/llama.cpp#14951), and "
                      "convert_hf_to_gguf.py makes no GGUF of it: \"Model MllamaForConditionalGeneration is not "
                      "supported\" (ggml-org/llama.cpp#9663, #13805)"),
        # Ollama v0.30.4 (#16490), v0.30.5 (#16547), v0.34.1 (#18486, after a fresh pull): "llama-server process has
        # terminated: exit status 1: error loading model: unknown model architecture: 'mllama'"
        "ollama": ("its llama-server stops with \"error loading model: unknown model architecture: 'mllama'\" "
                   "(ollama/ollama#16490 on v0.30.4, #16547 on v0.30.5, #18486 on v0.34.1 after a fresh pull): from "
                   "v0.30.0 llama-server runs every GGML model, and no llama.cpp build names 'mllama'"),
        # ollama/ollama PR #6963 brought it (#7300: v0.3.14 lacks it); the Go engine registers mllama through v0.22.0
        # (data/ollama_engine.json), the map unchanged to v0.24.0, the last release before v0.30.0; a user on
        # v0.32.0 went back to v0.24.0 to run it (Troyanovsky/llama-vision-image-tagger#2)
        "ollama_first": "0.4.0", "ollama_last": "0.24.0",
        "ollama_source": "ollama/ollama PR #6963, issue #7300; data/ollama_engine.json",
        # transformers: src/transformers/models/mllama (MllamaForConditionalGeneration, from 4.45.0, the release
        # with Llama 3.2). vLLM: from v0.6.2 (vllm-project/vllm#8826, 2024-09-25: `vllm serve
        # meta-llama/Llama-3.2-11B-Vision-Instruct`) to v0.10.2: vllm/model_executor/models/registry.py
        # _PREVIOUSLY_SUPPORTED_MODELS {"MllamaForConditionalGeneration": "0.10.2"}, "was supported in vLLM until
        # v0.10.2, and is not supported anymore" (PR #24907 removed the V0 encoder-decoder models but Whisper).
        # mlx-vlm: mlx_vlm/models/mllama (Blaizzy/mlx-vlm at 9b13f522, 2026-08-22); mlx-lm has no
        # mlx_lm/models/mllama.py (ml-explore/mlx-lm at d78bf58e): "Model type mllama not supported." (mlx-lm#321)
        # mlx-lm picks mlx_lm.models.<model_type> (mlx_lm/utils.py _get_classes, MODEL_REMAPPING has no mllama)
        "mlx_lm": ("mlx-lm has no mllama model (no mlx_lm/models/mllama.py, read at d78bf58e, after v0.31.3), so its "
                   "loader stops with \"Model type mllama not supported.\" (mlx_lm/utils.py; ml-explore/mlx-lm#321)"),
        "loads": ("transformers 4.45 or later (--runtime transformers plans it), vLLM 0.6.2–0.10.2 (v0.11 dropped "
                  "it: \"was supported in vLLM until v0.10.2\", vllm/model_executor/models/registry.py), mlx-vlm on "
                  "Apple silicon (mlx_vlm/models/mllama; mlx-lm has no mllama)"),
    },
}
NO_BUILD_LOADS = "no build of the runtime loads the model"   # speed["not_predicted"] of a NO_LLAMA_CPP refusal
# how a refusal no setting of its runtime gets past names the runtimes that do run it (render's "No fix" line says
# "another runtime" for such a refusal, not "more or larger devices")
OTHER_RUNTIMES = "Runtimes that load it"


def no_release_loads(runtime: str, version_text: str | None, arch: str | None) -> bool:
    """Whether no update of this runtime loads ``arch`` (a NO_LLAMA_CPP architecture under llama.cpp, or under Ollama
    v0.30+; a VLLM_LAST architecture — the HF class — under a vLLM release past its last): the answer's "no fix" says
    another runtime or an older release, not "update it"."""
    if runtime == "vllm":
        return vllm_dropped(version_text, arch) is not None
    if (arch or "") not in NO_LLAMA_CPP or runtime not in ("llama.cpp", "ollama", "mlx"):
        return False
    return (runtime in ("llama.cpp", "mlx") or version_text is None
            or parse_version(runtime, version_text).at_least(*OLLAMA_LLAMA_SERVER_FROM))


def config_never_loads(runtime: str, version_text: str | None, config: dict) -> bool:
    """no_release_loads for a model's HF config: vLLM's table is keyed by the architecture class (architectures[0]),
    the others by model_type."""
    arch = (config.get("architectures") or [None])[0] if runtime == "vllm" else config.get("model_type")
    return no_release_loads(runtime, version_text, arch)


def no_build_loads(runtime: str, version_text: str | None, arch: str | None) -> tuple[str | None, str]:
    """(the refusal when ``arch`` is one no llama.cpp build loads — every llama.cpp build, an Ollama release from
    v0.30.0 or the current one, an Ollama release before the first that loaded it —, else None; the --explain line,
    "" when the architecture is not one of them or the runtime is neither)."""
    row = NO_LLAMA_CPP.get(arch or "")
    if row is None or runtime not in ("llama.cpp", "ollama", "mlx"):
        return None, ""
    if runtime == "mlx":        # runlocal's MLX plans are mlx-lm's (runtimes/mlx.py)
        return f"mlx-lm cannot load this model: {row['mlx_lm']}. {OTHER_RUNTIMES}: {row['loads']}", row["mlx_lm"]
    if runtime == "llama.cpp":
        build = f"llama.cpp b{parse_version(runtime, version_text).key[0]}" if version_text else "llama.cpp"
        return (f"{build} cannot load this model: {row['llama_cpp']}. {OTHER_RUNTIMES}: {row['loads']}, "
                f"Ollama v{row['ollama_first']}–v{row['ollama_last']} (its own engine)"), f"'{arch}': {row['llama_cpp']}"
    version = parse_version(runtime, version_text) if version_text else None
    first, last = row["ollama_first"], row["ollama_last"]
    if version is not None and _key(first) <= version.key[:3] and not version.at_least(*OLLAMA_LLAMA_SERVER_FROM):
        return None, f"Ollama {version.text} loads '{arch}' (v{first}–v{last}: {row['ollama_source']})"
    who = f"Ollama {version.text}" if version else "Ollama (the current release, v0.30 or later)"
    if version is not None and version.key[:3] < _key(first):
        why = f"'{arch}' first loaded by Ollama v{first} ({row['ollama_source']})"
        return (f"{who} cannot load this model: {why}. Update Ollama: {OLLAMA_INSTALL.format(v=last)} (v{first}–"
                f"v{last} load it; from v0.30.0 its llama-server does not)"), why
    return (f"{who} cannot load this model: {row['ollama']}. Ollama v{first}–v{last} load it (its own engine: "
            f"{row['ollama_source']}): {OLLAMA_INSTALL.format(v=last)}; or another runtime: {row['loads']}"), (
        f"'{arch}' under Ollama v0.30+: {row['ollama']}")


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    from importlib.resources import files

    return json.loads(files("runlocal.data").joinpath(TABLE).read_text(encoding="utf-8"))


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def llamacpp_loads(build: int, arch: str) -> tuple[bool | None, str, str]:
    """(True: known to load, False: known not to, None: assumed to or not checked; the first build known to load it, as
    words; what is known and where it was read)."""
    row = _table()["llama_cpp"].get(arch)
    if row is None:
        return None, "", f"'{arch}' is not in runlocal's table of architectures (data/{TABLE}): not checked"
    first, without, with_ = row.get("first"), row["without"], row["with"]
    if row.get("since_gguf"):     # named by every build that reads a GGUF (make_arch_support.py SINCE_GGUF)
        return True, "every GGUF build", f"'{arch}' known to every GGUF build ({row['source']})"
    pr = f" ({row['pr']})" if row.get("pr") else ""
    can = (f"b{first}{pr}" if first else
           f"a build after b{without}{pr}" + (f"; b{with_} has it" if with_ else "") if without is not None else "")
    if (first and build < first) or (without is not None and build <= without):
        return False, can, f"'{arch}' first loaded by {can}: {row['source']}"
    if with_ is not None and build < with_ and not first:
        return None, can, (f"'{arch}'{pr} assumed known to b{build}: b{without} lacks it, b{with_} has it "
                           f"({row['source']})" if without else
                           f"'{arch}' known by b{with_}; older builds not checked ({row['source']})")
    return True, can, f"'{arch}' known to b{build}{pr} ({row['source']})"


def unchecked_note(runtime: str, version_text: str | None, arch: str | None) -> str | None:
    """The plain-output note for a named build the table cannot vouch for (llamacpp_loads None): older than the
    oldest build known to hold the architecture, or between the newest known without it and the oldest known with it.
    Said on the answer, not only under --explain (review17 finding 2): such a build may stop with the loader's
    "unknown model architecture" where the plan gives a memory verdict."""
    if version_text is None or not arch or runtime not in ("llama.cpp", "ollama"):
        return None
    version = parse_version(runtime, version_text)
    absent = (f"'{arch}' is not in runlocal's table of architectures (data/{TABLE}), so whether this build loads the "
              "model is not checked")
    if runtime == "ollama":
        if not version.at_least(*OLLAMA_LLAMA_SERVER_FROM):   # vendored era: the Ollama rows decide (_ollama)
            return f"Ollama {version.text}: {absent}" if arch not in _table()["ollama"] else None
        build, _ = ollama_llama_cpp(version)
        who = f"Ollama {version.text} (llama-server at b{build})"
    else:
        build, who = version.key[0], f"llama.cpp b{version.key[0]}"
    row = _table()["llama_cpp"].get(arch)
    if row is None:     # the least known case of all (review17c finding 3): said, not left silent
        return f"{who}: {absent}"
    if build is None or llamacpp_loads(build, arch)[0] is not None:
        return None
    pr = f" ({row['pr']})" if row.get("pr") else ""
    known = (f"b{row['without']} lacks it and b{row['with']} has it{pr}" if row["without"] is not None else
             f"known by b{row['with']}{pr}; older builds not checked")
    return (f"{who} and the '{arch}' architecture: {known}, so whether this build loads the model is not known "
            f"here (llama.cpp b{row['with']} or later does; data/{TABLE})")


def model_arch(spec) -> str | None:
    """The model's GGUF architecture: a catalog model's from the shipped names table, a GGUF file's
    general.architecture; None where neither says (an uncatalogued Hub checkpoint: not checked)."""
    from ..quant.gguf_names_table import catalog_arch

    arch = catalog_arch(spec)
    if arch is None and spec.architecture == spec.family:       # a GGUF file's general.architecture
        arch = spec.architecture
    return arch or None


def planner_refusal(spec, planner) -> tuple[str | None, str, str | None]:
    """(refusal, --explain words, architecture) for the planner's named build (``planner.version``), as
    arch_refusal; ("", None) words when the planner names no build of llama.cpp or Ollama. An architecture no
    llama.cpp build loads (NO_LLAMA_CPP) is refused for llama.cpp and Ollama whether a build is named or not."""
    version = getattr(planner, "version", None)
    if planner.name == "vllm" and vllm_dropped(version, spec.architecture):   # named or the current release
        return (*vllm_gone_refusal(version, spec.architecture), spec.architecture)
    never = model_arch(spec) or spec.family
    if never in NO_LLAMA_CPP and planner.name in ("llama.cpp", "ollama", "mlx"):    # any build, named or not
        refused, how = no_build_loads(planner.name, version, never)
        return refused, how, never
    if version is None or planner.name not in ("llama.cpp", "ollama", "vllm"):
        return None, "", None
    if planner.name == "vllm":             # vLLM reads the HF config's model_type, not a GGUF architecture
        refused, how = arch_refusal("vllm", version, spec.family)
        return refused, how, spec.family
    arch = model_arch(spec)
    refused, how = arch_refusal(planner.name, version, arch)
    return refused, how or ("the model's GGUF architecture is not known here (not a catalog model or a GGUF file): "
                            "not checked"), arch


def arch_refusal(runtime: str, version_text: str | None, arch: str | None) -> tuple[str | None, str]:
    """(why the named build cannot load ``arch`` — the verdict's reason, with the first build / release that can and
    how to update —, or None; the --explain line: what was checked and where it was read)."""
    if version_text is None or not arch or runtime not in ("llama.cpp", "ollama", "vllm"):
        return None, ""
    version = parse_version(runtime, version_text)
    if runtime == "vllm":
        return _vllm(version, arch)
    if runtime == "ollama":
        return _ollama(version, arch)
    ok, can, how = llamacpp_loads(version.key[0], arch)
    if ok is not False:
        return None, how
    build = _table()["llama_cpp"][arch].get("first") or _table()["llama_cpp"][arch]["with"]
    return (f"llama.cpp b{version.key[0]} cannot load this model: {LOADER.format(arch=arch)}. First loaded by {can}. "
            f"Update llama.cpp: b{build} or later (https://github.com/ggml-org/llama.cpp/releases/tag/b{build}; from "
            "source: git pull, then rebuild)"), how


def vllm_dropped(version_text: str | None, architecture: str | None) -> dict[str, str] | None:
    """The VLLM_LAST row when this vLLM release (None: the current one, 0.33.0) is past the last that serves
    ``architecture`` (the HF class), else None."""
    row = VLLM_LAST.get(architecture or "")
    if row is None:
        return None
    if version_text is not None and release3(parse_version("vllm", version_text).key) <= release3(_key(row["last"])):
        return None
    return row


def vllm_gone_refusal(version_text: str | None, architecture: str) -> tuple[str, str]:
    """(the refusal of a vLLM release past the last that serves ``architecture``, naming that release and the
    runtimes that load it; the --explain line)."""
    row = VLLM_LAST[architecture]
    who = f"vLLM {version_text}" if version_text else "vLLM (the current release)"
    how = f"'{architecture}' served up to vLLM {row['last']}, dropped in {row['dropped']}: {row['source']}"
    return (f"{who} cannot load this model: vLLM {row['dropped']} dropped {architecture} ({row['source']}); "
            f"{row['server']} — the last release that loads it: pip install 'vllm=={row['last']}' (plan it: "
            f"--runtime vllm=={row['last']}); or another runtime: {row['others']}"), how


def _vllm(version: RuntimeVersion, model_type: str) -> tuple[str | None, str]:
    row = VLLM_FIRST.get(model_type)
    if row is None:
        return None, f"model type '{model_type}' is not in runlocal's table of vLLM releases: not checked"
    first, source = row
    if version.key[:3] >= _key(first):
        return None, f"vLLM {version.text} serves '{model_type}' (from v{first}: {source})"
    return (f"vLLM {version.text} cannot load this model: \"Model architectures [...] are not supported for now\" "
            f"(vllm/model_executor/models/registry.py; model type '{model_type}'). First served by vLLM {first} "
            f"({source}). Update vLLM: pip install 'vllm>={first}'"), f"'{model_type}' first served by v{first}: {source}"


def _ollama(version: RuntimeVersion, arch: str) -> tuple[str | None, str]:
    if version.at_least(*OLLAMA_LLAMA_SERVER_FROM):
        build, _ = ollama_llama_cpp(version)
        ok, can, how = llamacpp_loads(build or 0, arch)
        if ok is False:
            return (f"Ollama {version.text} (llama-server at b{build}) cannot load this model: "
                    f"{LOADER.format(arch=arch)}. First loaded by llama.cpp {can}. Update Ollama: "
                    "curl -fsSL https://ollama.com/install.sh | sh"), how
        return None, f"Ollama {version.text}: llama-server at b{build}: {how}"
    row = _table()["ollama"].get(arch)
    if row is None:
        return None, f"'{arch}' is not in runlocal's table of architectures (data/{TABLE}): not checked"
    first = row["first"]
    if first is not None and version.key[:3] >= _key(first):
        # the Go engine reads Ollama's own library GGUFs; a community GGUF of a name this release's vendored llama.cpp
        # lacks fails there (ollama/ollama PR #15899: Ollama 0.23.2, "unknown model architecture: 'qwen35'"):
        # vendored_first is the first release from which every vendored copy names it (make_arch_support.py)
        vendored = row.get("vendored_first")
        only_go = vendored is None or version.key[:3] < _key(vendored)
        return None, (f"Ollama {version.text} loads '{arch}' ({row['how']}, since v{first}: {row['source']})"
                      + (f"; through its Go engine only: Ollama's library model loads, a community GGUF ('{arch}') "
                         f"does not (this release's vendored llama.cpp lacks the name"
                         + (f"; it has it from v{vendored}" if vendored else "") + ": ollama/ollama PR #15899)"
                         if only_go else ""))
    oldest = _table()["ollama_oldest_read"]
    if first is not None and version.key[:3] < _key(oldest) and _key(first) <= _key(oldest):
        # the oldest release read loads it: whether an older one did is not read (review19 finding 4: where the
        # oldest release read lacks it, so does every older one, and the refusal below is given)
        return None, (f"Ollama {version.text} is older than the releases read (v{oldest}; older ones pin llama.cpp "
                      f"as a submodule whose tree ollama/ollama does not hold): '{arch}' not checked")
    can, at = (f"v{first} ({row['how']})", first) if first else ("v0.30.0 (llama-server)", "0.30.0")
    how = (f"neither Ollama {version.text}'s vendored llama.cpp (LLM_ARCH_NAMES) nor its Go engine "
           f"(model/models) names '{arch}'; first loaded by {can}: {row['source']}")
    return (f"Ollama {version.text} cannot load this model: {LOADER.format(arch=arch)} (neither its vendored llama.cpp "
            f"nor its Go engine knows it). First loaded by Ollama {can}. Update Ollama: "
            f"{OLLAMA_INSTALL.format(v=at)} (without OLLAMA_VERSION: the newest)"), how

"""What a printed command pulls, and the quant users download: Ollama library tags, GGUF repos,
mlx-community conversions, the user's own path — so a command runs as pasted.

Facts come from two cited data files: ``data/ollama_tags.json`` (the Ollama library's tag names per
catalog model, https://ollama.com/library/<name>/tags, and GGUF repos Ollama and llama-server can pull)
and ``data/mlx_repos.json`` (https://huggingface.co/mlx-community conversions). Pure lookups, no I/O
beyond reading the package's data files.
"""

from __future__ import annotations

import json
import re
import shlex
from functools import cache
from importlib import resources
from typing import Any

from ..model.spec import ModelSpec

GGUF_DEFAULT = "Q4_K_M"      # the default tag of the Ollama library and llama-server's -hf (common/arg.cpp)
GGUF_RUNTIMES = frozenset({"llama.cpp", "ollama"})
# Quant names as users type them → the llama.cpp file type they mean (llama-quantize's names, tools/quantize).
# "mxfp4" is gpt-oss's published format: MXFP4 experts, Q8_0 elsewhere — llama-quantize's MXFP4_MOE.
GGUF_SPELLINGS = {"MXFP4": "MXFP4_MOE", "FP16": "F16", "FLOAT16": "F16", "BFLOAT16": "BF16", "FP32": "F32"}


@cache
def _data(name: str) -> dict[str, Any]:
    return json.loads(resources.files("runlocal.data").joinpath(name).read_text(encoding="utf-8"))


def catalog_alias(model: ModelSpec) -> str | None:
    return model.source.removeprefix("catalog:") if model.source.startswith("catalog:") else None


def ollama_entry(model: ModelSpec) -> dict[str, Any] | None:
    alias = catalog_alias(model)
    return _data("ollama_tags.json")["models"].get(alias) if alias else None


def gguf_quant(quant: str) -> str:
    """A quant as a user spells it (q4_k_m, mxfp4, fp16) → llama.cpp's file type name (Q4_K_M, MXFP4_MOE, F16)."""
    q = quant.strip().upper()
    return GGUF_SPELLINGS.get(q, q)


def ollama_quant_suffix(quant: str) -> str:
    """llama.cpp's type name → the Ollama library's spelling in tags: q4_K_M, q8_0, fp16, bf16."""
    q = gguf_quant(quant)
    if q in ("F16", "BF16", "F32"):
        return {"F16": "fp16", "BF16": "bf16", "F32": "fp32"}[q]
    return q[0].lower() + q[1:]


def library_tags(entry: dict[str, Any]) -> dict[str, str]:
    """llama.cpp type → full library tag (name:tag) for one catalog entry (empty when the library has none)."""
    if not entry.get("library"):
        return {}
    if "tags" in entry:
        return {q: f"{entry['library']}:{t}" for q, t in entry["tags"].items()}
    quants = _data("ollama_tags.json")["quant_sets"][entry["quants"]]
    return {q: f"{entry['library']}:{entry['tag'].format(q=ollama_quant_suffix(q))}" for q in quants}


def default_quant(model: ModelSpec, runtime: str) -> tuple[str, str] | None:
    """The quant people download for this model on this runtime, and why; None: plan the checkpoint as stored."""
    if runtime == "mlx":
        repo = mlx_repo(model, "mlx-4bit")
        return ("mlx-4bit", f"the published 4-bit conversion people download ({repo})") if repo else None
    if runtime not in GGUF_RUNTIMES:
        return None
    entry = ollama_entry(model)
    if entry and "tags" in entry and GGUF_DEFAULT not in entry["tags"]:
        quant = next(iter(entry["tags"]))       # e.g. gpt-oss: its one published format
        where = f"{entry['library']}:{entry['tags'][quant]}"
        if entry.get("hf"):
            where += f" and {entry['hf']}"
        return quant, f"the format the model is published in ({where})"
    return GGUF_DEFAULT, "the default tag of the Ollama library and the usual download"


def _local_dir(model: ModelSpec) -> str | None:
    """The folder a local model was read from, as the user can paste it (./mymodel, not mymodel)."""
    src = model.source
    if not src or re.match(r"^(catalog|hub|hf|https?):", src):
        return None
    folder = src.rsplit("/", 1)[0] if src.endswith(".json") else src
    if not folder or folder == src and src.endswith(".json"):
        folder = "."
    if not folder.startswith(("/", ".", "~")):
        folder = "./" + folder
    return folder


def serve_path(model: ModelSpec, quant: str | None = None) -> str:
    """What vLLM, SGLang, transformers and mlx-lm load: the user's own folder, else the Hub repo id — or, for a
    quant that names a published checkpoint's format (data/published_checkpoints.json), that checkpoint's repo."""
    local = _local_dir(model) if not model.source.endswith(".gguf") else None
    if local:
        return shlex.quote(local)
    published = published_checkpoint(model, quant) if quant else None
    if published and published["format"] == quant:
        return str(published["repo"])
    if quant in CALIBRATED and (model.file_quant or "").split("-")[0] != quant:
        return f"./{(model.repo_id or model.id).split('/')[-1]}-{CALIBRATED[quant]}"    # the folder the user makes
    return model.repo_id or model.id


def serve_args(model: ModelSpec, quant: str | None) -> list[str]:
    """vLLM's and SGLang's model argument and quantization flag: a published checkpoint is loaded as stored (its
    config.json names the method); fp8 with none published is quantized at load (--quantization fp8)."""
    path = serve_path(model, quant)
    entry = published_checkpoint(model, quant) if quant else None
    published = bool(entry and entry["format"] == quant and path == entry["repo"])
    online = (quant or "").lower() in ("fp8", "fp8_e4m3") and not (model.file_quant or "").lower().startswith("fp8")
    if vllm_bnb_at_load(quant) and not stored_as(model, str(quant)):
        return [path, "--quantization", "bitsandbytes"]    # in-flight 4-bit (docs features/quantization/bnb)
    return [path] + (["--quantization", "fp8"] if online and not published else [])


BNB_4BIT = frozenset({"nf4", "fp4"})        # the 4-bit layouts vLLM's in-flight bitsandbytes makes


def canonical_quant(quant: str) -> str:
    """A quant as quant/formats.py names it (bnb-4bit → nf4, awq-int4 → awq)."""
    from ..quant.formats import ALIASES

    return ALIASES.get(quant.strip().lower(), quant.strip().lower())


def stored_as(model: ModelSpec, quant: str) -> bool:
    """The checkpoint is stored in this format, so any engine that reads its config loads it as stored."""
    return bool(model.file_quant) and canonical_quant(quant) == canonical_quant(str(model.file_quant))


def vllm_bnb_at_load(quant: str | None) -> bool:
    """--quant nf4 / fp4 on vLLM: bitsandbytes 4-bit made at load (--quantization bitsandbytes, docs
    features/quantization/bnb)."""
    return bool(quant) and canonical_quant(str(quant)) in BNB_4BIT


# --- published quantized checkpoints for vLLM and SGLang (data/published_checkpoints.json) ---------------------
# --quant as users spell it → the formats it may name, least loss first
FP8_FORMATS = ("fp8-block", "fp8-channel", "fp8")
# NVIDIA's ModelOpt export (hf_quant_config.json quant_algo NVFP4) first, then compressed-tensors nvfp4-pack-quantized
NVFP4_FORMATS = ("modelopt-nvfp4", "ct-nvfp4")
QUANT_FAMILIES = {"fp8": FP8_FORMATS, "fp8_e4m3": FP8_FORMATS, "fp8-block": FP8_FORMATS, "fp8-channel": FP8_FORMATS,
                  "awq": ("awq",), "awq-int4": ("awq",), "awq-4bit": ("awq",), "gptq": ("gptq",),
                  "gptq-int4": ("gptq",), "gptq-4bit": ("gptq",), "int4": ("awq", "gptq", "w4a16"),
                  "w4a16": ("w4a16",), "nvfp4": NVFP4_FORMATS, "modelopt-nvfp4": NVFP4_FORMATS,
                  "modelopt_fp4": NVFP4_FORMATS, "ct-nvfp4": NVFP4_FORMATS}
POOLED_RUNTIMES = ("vllm", "sglang")
# formats made with calibration data (AutoAWQ, GPTQ / llm-compressor; NVFP4's activation global scales by ModelOpt or
# llm-compressor), which vLLM cannot produce at load
CALIBRATED = {"awq": "AWQ", "gptq": "GPTQ-Int4", "w4a16": "W4A16", "ct-nvfp4": "NVFP4"}


def published_checkpoints(model: ModelSpec) -> list[dict[str, Any]]:
    """The catalog model's published quantized checkpoints that vLLM and SGLang load as stored, each with its repo,
    format (a quant/formats.py key), label and source; empty for a model not in the table."""
    alias = catalog_alias(model)
    doc = _data("published_checkpoints.json")
    return [{**e, "label": doc["formats"][e["format"]]["label"]} for e in doc["models"].get(alias or "", [])]


def published_checkpoint(model: ModelSpec, quant: str | None) -> dict[str, Any] | None:
    """The published checkpoint a --quant names (fp8 → the FP8 repo, awq → the AWQ repo), or None."""
    q = (quant or "").lower()
    formats = QUANT_FAMILIES.get(q, (q,))
    return next((e for f in formats for e in published_checkpoints(model) if e["format"] == f), None)


# Kernels' GPUs (vLLM docs "FP8 W8A8": FP8 compute on compute capability ≥ 8.9, weight-only W8A16 through FP8 Marlin
# from 7.5 — https://docs.vllm.ai/en/stable/features/quantization/fp8/; vllm/model_executor/layers/quantization:
# awq.py AWQConfig.get_min_capability 75, awq_marlin.py / gptq_marlin.py 80 (Marlin repacks the int4 weights in
# place: the same bytes), gptq.py GPTQConfig.get_min_capability 60, compressed_tensors/schemes/
# compressed_tensors_wNa16.py CompressedTensorsWNA16.get_min_capability 80 "ampere and up")
MIN_CAPABILITY = {"fp8": 7.5, "awq": 7.5, "gptq": 6.0, "w4a16": 8.0}
# NVFP4 (ModelOpt and compressed-tensors): FP4 tensor-core GEMMs on Blackwell, compute capability ≥ 10.0 (sm_100,
# sm_120: vllm quantization/utils/quant_utils.py cutlass_fp4_supported). Below it vLLM runs the same bytes weight-only
# on the FP4 Marlin kernel (utils/marlin_utils_fp4.py is_fp4_marlin_supported: capability ≥ 80; "Your GPU does not have
# native support for FP4 computation … Weight-only FP4 compression will be used leveraging the Marlin kernel"), which
# came with vllm-project/vllm PR #17687 (merged 2025-05-09: first in v0.9.0; PR #18000 moved compressed-tensors'
# FP4 weight-only path onto it). SGLang, read in its wheels (measurements/sglang_versions/wheels.txt), by format:
# - ModelOpt (modelopt_fp4): ModelOptFp4Config.get_min_capability 100 in 0.4.6 – 0.5.11 (0.5.11 layers/quantization/
#   modelopt_quant.py:1142; model_loader/loader.py:244 raises "The quantization method modelopt_fp4 is not supported for
#   the current GPU. Minimum capability: 100. Current capability: 90."; absent before 0.4.6); 80 from 0.5.13 (:1205),
#   where --fp4-gemm-backend auto is "marlin" on (8, 0) ≤ capability < (10, 0) (layers/quantization/fp4_utils.py:153)
#   and the MoE falls back to Marlin there too (modelopt_quant.py:1688 use_marlin_fallback) — weight-only. (A first
#   Marlin fallback, PR #19652, was reverted by PR #22047 before any read release.)
# - compressed-tensors NVFP4 (w4a4): CompressedTensorsW4A4Fp4.get_min_capability 100, and below it "Current platform
#   does not support w4a4 nvfp4 quantization." (0.5.7 compressed_tensors.py:476 … 0.5.21 :726); from 0.5.23 served
#   weight-only via FP4 Marlin ("NVFP4 w4a4 requires compute capability >= 10.0; serving this checkpoint weight-only via
#   FP4 Marlin instead", compressed_tensors.py:778, the MoE :970; CompressedTensorsW4A16Fp4.get_min_capability 80,
#   schemes/compressed_tensors_w4a16_nvfp4.py:137).
NVFP4_NATIVE = 10.0
NVFP4_MARLIN = 8.0
NVFP4_MARLIN_VLLM_FROM = (0, 9, 0)
# (the first SGLang release serving the format on FP4 Marlin below 10.0, where its refusal before is read, its words)
SGLANG_NVFP4_MARLIN_FROM: dict[str, tuple[tuple[int, ...], str, str]] = {
    "modelopt-nvfp4": ((0, 5, 13), "0.5.11 model_loader/loader.py:244, modelopt_quant.py:1142",
                       "The quantization method modelopt_fp4 is not supported for the current GPU. Minimum capability: "
                       "100. Current capability: {cap}."),
    "ct-nvfp4": ((0, 5, 23), "0.5.21 compressed_tensors.py:726", "Current platform does not support w4a4 nvfp4 "
                 "quantization."),
}


@cache
def gpu_compute_capability(gpu_name: str) -> str | None:
    """The catalog's compute capability of a GPU named as a plan's target ("NVIDIA H100 80GB HBM3 #0" too)."""
    from ..hardware.catalog import load_devices

    name = re.sub(r" #\d+$", "", gpu_name)
    return next((d.compute_capability for d in load_devices() if d.name == name), None)


@cache
def gpu_gfx_target(gpu_name: str) -> str | None:
    """The catalog's ROCm target (gfx1100 …) of an AMD GPU named as a plan's target (vLLM's ROCm checks by release:
    runtimes/vllm_rocm.py)."""
    from ..hardware.catalog import load_devices

    name = re.sub(r" #\d+$", "", gpu_name)
    return next((d.gfx_target for d in load_devices() if d.name == name), None)


def _nvfp4_check(quant: str, compute_capability: str, runtime: str,
                 release: tuple[int, ...] | None) -> tuple[str | None, str | None]:
    """(refusal, note) for NVFP4 weights on a GPU of this compute capability in this engine and release."""
    cc = float(compute_capability)
    if cc >= NVFP4_NATIVE:
        return None, None
    if runtime == "sglang":
        first, where, words = SGLANG_NVFP4_MARLIN_FROM[quant.lower()]
        if release is not None and release < first:
            return (f"NVFP4 weights ({quant}) need compute capability ≥ {NVFP4_NATIVE:g} in SGLang before "
                    f"{'.'.join(map(str, first))} (its FP4 Marlin fallback came then); this GPU has {compute_capability}: "
                    f"\"{words.format(cap=round(cc * 10))}\" (sglang {where})"), None
    elif release is not None and release < NVFP4_MARLIN_VLLM_FROM:
        return (f"NVFP4 weights ({quant}) need compute capability ≥ {NVFP4_NATIVE:g} in vLLM before 0.9.0 (its FP4 Marlin "
                f"fallback came with PR #17687); this GPU has {compute_capability}"), None
    if cc < NVFP4_MARLIN:
        engine = "SGLang (FP4 Marlin, get_min_capability 80" if runtime == "sglang" else \
            "vLLM (FP4 Marlin, is_fp4_marlin_supported"
        return (f"NVFP4 weights ({quant}) need compute capability ≥ {NVFP4_MARLIN:g} in {engine}; native FP4 from "
                f"{NVFP4_NATIVE:g}); this GPU has {compute_capability}"), None
    return None, (f"NVFP4 weights run weight-only (FP4 Marlin) on compute capability {compute_capability}: FP4 compute "
                  f"needs ≥ {NVFP4_NATIVE:g} (Blackwell) — the same bytes, slower prefill")


def kernel_check(quant: str | None, gpu_name: str, runtime: str = "vllm",
                 release: str | None = None) -> tuple[str | None, str | None]:
    """(the engine's refusal, a note) for weights in ``quant`` on this GPU (NVIDIA parts in the catalog; AMD parts under
    vLLM by their ROCm target; else none);
    ``release`` is the vLLM / SGLang release named (None: the current one)."""
    compute_capability = gpu_compute_capability(gpu_name) if quant else None
    if quant and runtime == "vllm" and not compute_capability and (gfx := gpu_gfx_target(gpu_name)):
        from .versions import parse_version
        from .vllm_rocm import rocm_kernel_check

        return rocm_kernel_check(quant, gfx, parse_version("vllm", release).key if release else None)
    if not quant or not compute_capability:
        return None, None
    if quant.lower() in NVFP4_FORMATS:
        from .versions import parse_version

        key = parse_version(runtime, release).key if release and runtime in ("vllm", "sglang") else None
        return _nvfp4_check(quant, compute_capability, runtime, key)
    if runtime != "vllm":
        return None, None
    family = "fp8" if quant.lower().startswith("fp8") else quant.lower() if quant.lower() in MIN_CAPABILITY else None
    if family is None:
        return None, None
    cc = float(compute_capability)
    if cc < MIN_CAPABILITY[family]:
        return (f"{family.upper()} weights ({quant}) need compute capability ≥ {MIN_CAPABILITY[family]} in vLLM; this GPU has "
                f"{compute_capability}"), None
    if family == "fp8" and cc < 8.9:
        return None, (f"FP8 weights run weight-only (W8A16, FP8 Marlin) on compute capability {compute_capability}: "
                      "FP8 compute needs ≥ 8.9 — the same bytes, slower prefill")
    if family in ("awq", "gptq") and cc >= 8.0:
        return None, f"{quant.upper()} repacked for the Marlin kernel at load (the same bytes)"
    return None, None


def unpublished_quant(entry: dict[str, Any], quant: str) -> bool:
    """Whether the entry's GGUF repo is known not to hold this quant: ``hf_quants`` lists its whole GGUF listing as its
    evidence page showed it (measurements/gguf_repos RULE.md Amendment 3); where that is not known, nothing is said."""
    held = entry.get("hf_quants")
    return bool(entry.get("hf")) and held is not None and gguf_quant(quant) not in {gguf_quant(h) for h in held}


def _unpublished_words(entry: dict[str, Any], quant: str) -> str:
    q = gguf_quant(quant)
    return (f"{entry['hf']} publishes no {q} file (it holds only {', '.join(entry['hf_quants'])}: "
            f"{entry['hf_seen'].split(' (')[0]}): make {q} with llama.cpp (convert_hf_to_gguf.py, llama-quantize {q})")


def unpublished_quant_note(model: ModelSpec, runtime: str, quant: str | None) -> str | None:
    """Said on a llama.cpp plan whose --quant the catalog model's GGUF repo does not publish: the command names a file
    the user makes (-m PATH/TO/…) rather than an -hf tag that would match no file. Ollama says it in its command."""
    entry = ollama_entry(model) if quant and runtime == "llama.cpp" else None
    if not entry or not unpublished_quant(entry, quant or ""):
        return None
    return (f"{_unpublished_words(entry, quant or '')}, or ask for --quant "
            f"{entry['hf_quants'][0].lower()} to pull the published file")


def llama_server_model(model: ModelSpec, quant: str | None) -> list[str]:
    """llama-server's model arguments: -m for a file the user has, -hf REPO[:QUANT] for a published GGUF repo
    (common/arg.cpp: -hf <user>/<model>[:quant], default quant Q4_K_M; split files are fetched whole)."""
    if model.source.endswith(".gguf") and not quant:
        return ["-m", shlex.quote(model.source)]
    entry = ollama_entry(model)
    if entry and entry.get("hf") and quant and not unpublished_quant(entry, quant):
        q = gguf_quant(quant)
        if entry["hf"].startswith("ggml-org/gpt-oss") and q == "MXFP4_MOE":
            return ["-hf", entry["hf"]]          # one file per repo, in MXFP4
        return ["-hf", f"{entry['hf']}:{q}"]
    stem = model.id[:-5] if model.id.lower().endswith(".gguf") else model.id
    name = f"{stem}-{gguf_quant(quant)}.gguf" if quant else f"{stem}.gguf"
    if model.source.endswith(".gguf"):
        return ["-m", name]            # the user's own GGUF, re-quantized beside it (llama-quantize)
    # no published GGUF repo known: a file the user makes or downloads, named as a placeholder rather than a file
    # that may not exist (large quants are split: -m takes the first shard, …-00001-of-0000N.gguf)
    return ["-m", f"PATH/TO/{name}"]


def ollama_model(model: ModelSpec, quant: str | None) -> tuple[str, str, str | None]:
    """(shell that imports the model first or "", the name for ``ollama run``, a note or None).

    The name is a real library tag where the library has one for this quant; else hf.co/<repo>:<quant>, which
    Ollama pulls from the Hub (https://huggingface.co/docs/hub/ollama); else an `ollama create` from a GGUF file."""
    q = gguf_quant(quant) if quant else None
    if model.source.endswith(".gguf") and not q:
        return (*_create(model.id.removesuffix(".gguf"), model.source), None)
    if model.source.startswith("hf://") and model.source.endswith(".gguf"):
        repo = "/".join(model.source.removeprefix("hf://").split("/")[:2])
        return "", f"hf.co/{repo}" + (f":{q}" if q else ""), None
    entry = ollama_entry(model)
    if entry is None:
        repo = model.repo_id or ""
        if repo.lower().endswith("-gguf"):
            return "", f"hf.co/{repo}:{q or GGUF_DEFAULT}", None
        stem = (repo.split("/")[-1] or model.id) + f"-{q or GGUF_DEFAULT}"
        return (*_create(stem, f"./{stem}.gguf"),
            (f"{repo or model.id} is not a GGUF repo: convert it (llama.cpp convert_hf_to_gguf.py, then llama-quantize "
            f"to {q or GGUF_DEFAULT}) and import the file as below"))
    tags = library_tags(entry)
    want = q or GGUF_DEFAULT
    if want in tags:
        return "", tags[want], None
    # most recorded reasons already begin "no Ollama library tag is recorded …" (data/ollama_tags.json): said once
    why = (f"the Ollama library has no {want} tag for {entry['library']} (it has "
           f"{', '.join(t.split(':', 1)[1] for t in tags.values())})") if tags else (
        entry["why"] if entry["why"].startswith("no Ollama library tag") else f"no Ollama library tag: {entry['why']}")
    stem = f"{model.id}-{want}"
    if entry.get("hf") and unpublished_quant(entry, want):     # hf.co/<repo>:<quant> would find no file
        return (*_create(stem, f"./{stem}.gguf"), f"{why}; {_unpublished_words(entry, want)}, then import it as below")
    if entry.get("hf") and not entry.get("split"):
        return "", f"hf.co/{entry['hf']}:{want}", f"{why}; pulled from the Hub instead"
    if entry.get("hf"):
        return (*_create(stem, f"./{stem}.gguf"),
                (f"{why}; {entry['hf']} is split into several files, which Ollama cannot pull from hf.co: download "
                f"them, join with llama-gguf-split --merge into {stem}.gguf, then import it as below"))
    return (*_create(stem, f"./{stem}.gguf"), (f"{why}; make the GGUF with llama.cpp (convert_hf_to_gguf.py, "
                                              f"llama-quantize {want}) and import it as below"))


def library_mla_cache(model: ModelSpec, quant: str | None) -> tuple[str, str] | None:
    """("heads", why) where Ollama pulls a library blob of an MLA model that lacks {arch}.attention.key_length_mla
    (data/ollama_tags.json ``mla_key: false``, cited in its ``mla_key_about``): both of Ollama's engines cache every
    head's K and V for such a file, in every release. None elsewhere: a hf.co/ pull or an imported GGUF follows the
    release's MLA era (runtimes/versions.py ollama_mla_cache), which assumes the file carries the key (a converter
    from llama.cpp PR #12801 on; the file's header is not read offline)."""
    if not any(a.kind == "mla" for a in model.attention_layers):
        return None
    entry = ollama_entry(model)
    if entry is None or entry.get("mla_key") is not False:
        return None
    setup, name, _ = ollama_model(model, quant)
    if setup or name.startswith("hf.co/"):
        return None
    return "heads", (f"the Ollama library's {name} has no deepseek2.attention.key_length_mla (published before "
                     "llama.cpp PR #12801; Ollama's convert_deepseek2.go never writes it): every head's K/V cached in "
                     "every Ollama release (data/ollama_tags.json mla_key_about: Ollama 0.32.13's log, "
                     "deepseek-coder-v2:16b-lite 540 MiB at 2,048 cells)")


def _create(name: str, path: str) -> tuple[str, str]:
    """Import a GGUF file into Ollama under ``name`` (docs/modelfile.md: FROM <path to a .gguf>)."""
    name = re.sub(r"[^a-z0-9._-]", "-", name.lower())
    return f"printf 'FROM {path}\\n' > Modelfile && ollama create {name} -f Modelfile", name


def mlx_repo(model: ModelSpec, quant: str | None) -> str | None:
    """A published mlx-community conversion holding ``quant`` (mlx-4bit, mlx-8bit; None = the stored format)."""
    alias = catalog_alias(model)
    if not alias:
        return None
    repos = _data("mlx_repos.json")["models"].get(alias, {})
    key = (quant or (model.file_quant or "")).lower()
    return repos.get(key)


def mlx_stored_note(model: ModelSpec, runtime: str, planned: str) -> str | None:
    """Said on a plan MLX makes of the stored 16-bit checkpoint because no --quant was given and data/mlx_repos.json
    knows no mlx-community conversion of it: the plan is 3-4x the 4-bit download Mac users usually run, so it says
    so rather than planning BF16 silently (review17 finding 10). None for a user's own folder or a quantized file."""
    if runtime != "mlx" or default_quant(model, runtime) is not None:
        return None
    if not model.source.startswith(("catalog:", "hub:")) or planned.upper() not in ("BF16", "F16", "FP16", "F32"):
        return None
    repo = model.repo_id or model.id
    stem = repo.split("/")[-1]
    return (f"no mlx-community conversion of {model.id} known to runlocal: planned as stored, {planned}; "
            f"`mlx_lm.convert --hf-path {repo} -q --mlx-path ./{stem}-4bit` makes a 4-bit one "
            "(--quant mlx-4bit plans it)")


__all__ = ["catalog_alias", "default_quant", "gguf_quant", "kernel_check", "library_tags", "llama_server_model",
           "mlx_repo", "mlx_stored_note", "ollama_model", "ollama_quant_suffix", "published_checkpoint", "published_checkpoints",
           "serve_args", "serve_path"]


def catalog_rope_scaling(model: ModelSpec) -> dict[str, Any]:
    """config.json's rope_scaling as the catalog entry records it; {} for a model outside the catalog. (Read once per
    alias: vLLM's and SGLang's context checks ask it of every launch a search tries, ~60 in one SGLang row.)"""
    alias = catalog_alias(model)
    return _rope_scaling_of(alias) if alias else {}


@cache
def _rope_scaling_of(alias: str) -> dict[str, Any]:
    from ..model.catalog import find_entry

    entry = find_entry(alias)
    rope = ((entry or {}).get("config") or {}).get("rope_scaling")
    return rope if isinstance(rope, dict) else {}


def catalog_vision_config(model: ModelSpec) -> dict[str, Any] | None:
    """config.json's vision_config as the catalog entry records it; None outside the catalog (no config kept)."""
    from ..model.catalog import find_entry

    alias = catalog_alias(model)
    entry = find_entry(alias) if alias else None
    vc = ((entry or {}).get("config") or {}).get("vision_config")
    return vc if isinstance(vc, dict) else None


def rope_type(rope: dict[str, Any]) -> str | None:
    # transformers' patch: the legacy "type" key is rope_type (vLLM: "no need to consider 'type'")
    kind = rope.get("rope_type") or rope.get("type")
    return str(kind) if kind else None


def yarn_stretch(ctx: int, trained: int) -> tuple[int, dict[str, Any]]:
    """The whole YaRN factor that stretches ``trained`` positions to at least ``ctx``, and config.json's override
    for it (the beyond-the-trained-context warning below, and runtimes/context_limit.py's refusals)."""
    factor = -(-ctx // trained)
    return factor, {"rope_scaling": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": trained}}


def beyond_trained_context(model: ModelSpec, ctx: int, runtime: str) -> str | None:
    """A warning when ``ctx`` passes the context the model was trained for, naming the RoPE scaling it needs
    and how this runtime takes it (llama.cpp common/arg.cpp --rope-scaling/--rope-scale/--yarn-orig-ctx; vLLM
    --hf-overrides; SGLang --json-model-override-args; transformers and MLX read config.json's rope_scaling)."""
    trained = model.max_position_embeddings
    if not trained or ctx <= trained:
        return None
    factor, stretch = yarn_stretch(ctx, trained)
    have = ""
    rope = catalog_rope_scaling(model)
    kind = rope_type(rope)
    if kind and rope.get("factor"):
        have = f" (itself {kind} RoPE scaling ×{rope['factor']:g} of {rope.get('original_max_position_embeddings', '?')})"
    override = json.dumps(stretch)
    how = {"llama.cpp": f"llama-server --rope-scaling yarn --rope-scale {factor} --yarn-orig-ctx {trained}",
           "ollama": "Ollama has no RoPE-scaling option: use llama.cpp, or stay within the trained context",
           "vllm": f"vllm serve … --hf-overrides '{override}'",
           "sglang": f"--json-model-override-args '{override}'",
           }.get(runtime, f"set rope_scaling {override[16:-1]} in config.json")
    return (f"ctx {ctx:,} is beyond the {trained:,} tokens the model was trained for{have}: past them the output "
            f"degrades unless RoPE scaling stretches positions further — YaRN ×{factor} over {trained:,} "
            f"({how})")


# llama-server loads a multimodal projector from b5331 (33eff402, "server : vision support via libmtmd", PR #12898;
# a "build: 5331 (33eff402)" log names it) — b5330, its parent, has none; with -hf it takes the one the Hub's manifest
# names beside the GGUF (common/arg.cpp common_params_handle_model: "auto_detected.mmprojFile", PR #13082), e.g.
# "Downloading mmproj-BF16.gguf" for -hf unsloth/Qwen3.6-27B-MTP-GGUF:Q4_K_M (ggml-org/llama.cpp#23265); --no-mmproj
# ("explicitly disable multimodal projector, useful when using -hf") loads none, and from PR #23425 downloads none
HF_MMPROJ_BUILDS = (5330, 5331)


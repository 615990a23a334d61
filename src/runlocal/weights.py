"""The weights a plan counts: as stored in the file, or as they would be in a given format.

Pure computation (the GGUF mix of a catalog model comes from a shipped table, quant/gguf_table.py).
"""

from __future__ import annotations

import re
from dataclasses import replace

from .memo import IdMemo
from .model.spec import ModelSpec
from .quant import gguf_table
from .quant.formats import MODELOPT_FORMATS, WeightEstimate, estimate_weights
from .runtimes import Runtime, Settings, Step, engine, get_runtime

GGUF_DEFAULT_QUANT = "Q4_K_M"   # what `ollama pull` fetches by default, and the usual GGUF download


def is_gguf_quant(quant: str) -> bool:
    return quant.upper() in gguf_table.supported_ftypes()


def estimate(model: ModelSpec, quant: str | None) -> WeightEstimate:
    """Weights as stored (the file read), or as they would be under ``quant``. Kept per model object and quant (a
    pure function of the two): a check asks again for every plan its searches and fixes make, ~45 times, and each
    walks every tensor (a 1,000-tensor MoE's vision tower alone ~0.2 ms). Each call gets its own by_kind dict."""
    kept = _ESTIMATES.get(model, quant, lambda: estimate_now(model, quant))
    return replace(kept, by_kind=dict(kept.by_kind))


_ESTIMATES = IdMemo(512)


def estimate_now(model: ModelSpec, quant: str | None) -> WeightEstimate:
    """estimate, made."""
    if quant is None:
        stored = model.file_bytes
        if stored is not None:
            return WeightEstimate(model.file_quant or "file", stored, {model.file_quant or "file": stored},
                                  f"sum of {len(model.tensors):,} tensor sizes in the file", model.source, from_file=True)
        from .quant.formats import ALIASES, QUANT_FORMATS

        dtype = (model.file_quant or "bf16").lower()
        known = ("fp32", "f32", "float32", "fp16", "f16", "float16", "bf16", "bfloat16", *QUANT_FORMATS, *ALIASES)
        # a checkpoint stored quantized (DeepSeek-V3's fp8, gpt-oss's mxfp4, an AWQ repo) is served as stored
        quant = dtype if dtype in known else "bf16"
    if quant.lower() == "mlx-mxfp4":   # mlx_lm.convert -q --q-mode mxfp4 (group 32, 4 bits)
        from .runtimes.mlx import mlx_weight_bytes

        total = mlx_weight_bytes(model, mode="mxfp4")
        return WeightEstimate("mlx-mxfp4", total, {"mlx-mxfp4": total},
                              "linear and embedding weights as MXFP4: 4-bit e2m1 + one 8-bit e8m0 scale per 32; the rest "
                              "16-bit", "mlx_lm/utils.py quantize_model, mlx/ops.cpp fp_quantize")
    mlx = re.fullmatch(r"mlx-([2-8])bit", quant.lower())
    if mlx:   # mlx_lm.convert -q --q-bits N (affine, group 64)
        from .runtimes.mlx import mlx_weight_bytes

        bits = int(mlx.group(1))
        total = mlx_weight_bytes(model, bits=bits)
        return WeightEstimate(f"mlx-{bits}bit", total, {f"mlx-{bits}bit": total},
                              f"linear and embedding weights at {bits} bits + a 16-bit scale and bias per 64; the rest 16-bit",
                              "mlx_lm/utils.py quantize_model")
    if is_gguf_quant(quant):
        by_type = gguf_table.catalog_weights(model, quant.upper())
        if by_type is None:
            from .quant import gguf_mix

            by_type = gguf_mix.weight_bytes_by_type(model, quant.upper())
        total = sum(by_type.values())
        how = "llama.cpp quantizer's per-tensor type mix"
        if model.vision_params:
            how += (f" (the {model.vision_params:,}-parameter vision/audio tower is left out: convert_hf_to_gguf.py"
                    " writes it to a separate --mmproj file)")
        return WeightEstimate(quant.upper(), total, by_type, how, "src/llama-quant.cpp")
    planned = with_published_excludes(model, quant)
    return with_fp8_modules(planned, estimate_weights(planned, quant), published_layout(model, quant)[1])


def published_layout(model: ModelSpec, quant: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(modules kept 16-bit, modules stored FP8) of the published checkpoint ``quant`` plans for a model planned in a
    format whose checkpoint lists what it keeps unquantized (NVFP4: ModelOpt's exclude_modules, compressed-tensors'
    ignore): the entry's ``exclude`` (else the format's documented ``default_exclude``: what ModelOpt's or
    llm-compressor's recipe leaves out) and ``fp8`` (a ModelOpt MIXED_PRECISION export's per-tensor FP8 layers) in
    data/published_checkpoints.json. Empty for a checkpoint stored in the format, which names its own."""
    from .quant.formats import EXCLUDE_LIST_FORMATS
    from .runtimes.published import _data, published_checkpoint

    q = quant.lower()
    if q not in EXCLUDE_LIST_FORMATS or model.quant_exclude or (model.file_quant or "").lower() == q:
        return (), ()
    entry = published_checkpoint(model, q)
    entry = entry if entry and entry["format"] == q else {}
    exclude = entry.get("exclude") or _data("published_checkpoints.json")["formats"].get(q, {}).get("default_exclude")
    return tuple(exclude or ()), tuple(entry.get("fp8", ()))


def with_published_excludes(model: ModelSpec, quant: str) -> ModelSpec:
    """The model with the published checkpoint's 16-bit and FP8 modules out of the format's Linears (published_layout;
    with_fp8_modules then counts the FP8 ones at a byte a weight)."""
    exclude, fp8 = published_layout(model, quant)
    return replace(model, quant_exclude=exclude + fp8) if exclude or fp8 else model


def with_fp8_modules(model: ModelSpec, est: WeightEstimate, fp8: tuple[str, ...]) -> WeightEstimate:
    """A MIXED_PRECISION checkpoint's FP8 Linears (counted 16-bit by estimate_weights) at ModelOpt FP8's per-tensor
    layout: a byte a weight + an f32 weight_scale and input_scale (quant/formats.py _modelopt_fp8)."""
    from .quant.formats import LINEAR_ROLES, _modelopt_fp8, excluded

    if not fp8:
        return est
    fp8_tensors = [t for t in model.tensors if t.role in LINEAR_ROLES and len(t.shape) >= 2 and excluded(t.name, fp8)]
    stored, as_16bit = sum(_modelopt_fp8(t) for t in fp8_tensors), sum(2 * t.numel for t in fp8_tensors)
    by_kind = {**est.by_kind, "fp8 linear": stored}
    by_kind["16-bit other"] = by_kind.get("16-bit other", 0) - as_16bit
    return replace(est, total=est.total - as_16bit + stored, by_kind=by_kind,
                   formula=est.formula + f"; {len(fp8_tensors):,} Linears the checkpoint stores as FP8 (MIXED_PRECISION) "
                   "at a byte a weight + f32 weight and input scales")


def with_default_quant(model: ModelSpec, settings: Settings,
                       gpus: tuple[str, ...] = ()) -> tuple[Settings, tuple[Step, ...]]:
    """Without --quant, a model is planned as the file people download for this runtime (runtimes/published.py:
    Q4_K_M, or gpt-oss's MXFP4 GGUF, for llama.cpp and Ollama; a published mlx-community 4-bit conversion for MLX);
    a quant spelled as users do (mxfp4, q4_k_m) is read as the GGUF type it names on llama.cpp and Ollama.
    ``gpus``: the plan's GPU names, for the --quant hint of vLLM / SGLang (pooled_checkpoint)."""
    from .runtimes.published import default_quant, gguf_quant

    name = get_runtime(settings.runtime).name
    own_format = getattr(get_runtime(settings.runtime), "weight_format", None)   # a runtime's own names (MLX)
    if settings.quant and not own_format:
        from .runtimes.quant_support import refuse_unloadable

        refuse_unloadable(model, settings.quant, name)   # a format the command would not load is not planned
    if engine(name).hub_checkpoints:
        return pooled_checkpoint(model, settings, gpus)
    if settings.quant and engine(name).quant_from_config_only and (published := _published_for_load(model, settings)):
        return published
    if settings.quant and own_format:
        settings = settings.with_(quant=own_format(settings.quant, model))
    if settings.quant and engine(name).ggml and (unsloth := unsloth_quant(model, settings)) is not None:
        return unsloth
    if settings.quant:
        if engine(name).ggml and is_gguf_quant(gguf_quant(settings.quant)):
            return settings.with_(quant=gguf_quant(settings.quant)), ()
        return settings, ()
    if model.source.lower().endswith(".gguf"):
        return settings, ()
    if engine(name).quant_from_config_only and model.file_quant in MODELOPT_FORMATS:
        # transformers takes quantization from config.json's quantization_config only (quantizers/auto.py
        # AutoQuantizationConfig.from_pretrained) and has no ModelOpt quantizer: a checkpoint whose quantization is in
        # hf_quant_config.json loads as config.json's 16-bit dtype, its FP8/FP4 tensors upcast and the scales unused
        return settings.with_(quant="bf16"), (Step(
            "weight quant", f"{model.id} is an NVIDIA ModelOpt checkpoint ({model.file_quant}); transformers has no "
            "ModelOpt quantizer and does not read hf_quant_config.json, so it loads the weights as 16-bit (config.json's "
            "dtype) — vLLM or SGLang load the checkpoint as stored",
            "bf16", "transformers/quantizers/auto.py"),)
    chosen = default_quant(model, name)
    if chosen is None:
        return settings, ()
    quant, why = chosen
    step = Step("weight quant", f"not given: planned as {quant}, {why} (set --quant)", quant, "")
    return settings.with_(quant=quant), (step,)


def unsloth_quant(model: ModelSpec, settings: Settings) -> tuple[Settings, tuple[Step, ...]] | None:
    """`-q UD-Q4_K_XL` on llama.cpp / Ollama (quant/unsloth.py): a GGUF file that carries the name is planned as
    stored, from its header; anything else as llama.cpp's mix of the base type, with the rule and its check said."""
    from .quant.unsloth import CHECKED, from_its_file, unsloth_name

    named = unsloth_name(settings.quant)
    if named is None:
        return None
    ud, base = named
    if from_its_file(model, ud):
        return settings.with_(quant=None), (Step(
            "weight quant", f"{ud} is Unsloth's dynamic quant (its own type per layer): planned from the file's header, "
            "each tensor at its stored type", ud, model.source),)
    rule = (f"{ud} is Unsloth's dynamic quant, whose per-layer types are in its file only: planned as llama.cpp's "
            f"{base} mix (pass the file — a path or hf://unsloth/…-GGUF/….gguf — to plan its real types); the rule "
            f"against Unsloth's published sizes: {CHECKED}")
    if model.file_bytes is not None:
        rule += f"; {model.source} does not carry the name {ud}, so its tensors are re-typed as {base}"
    return settings.with_(quant=base), (Step("weight quant", rule, base, "quant/unsloth.py"),)


# online FP8 (--quantization fp8 on a 16-bit checkpoint), as each engine documents it
FP8_ONLINE_SOURCE = {"vllm": "https://docs.vllm.ai/en/stable/features/quantization/fp8/",
                     "sglang": "https://docs.sglang.io/docs/advanced_features/quantization.md"}


def _published_for_load(model: ModelSpec, settings: Settings) -> tuple[Settings, tuple[Step, ...]] | None:
    """transformers `--quant awq|gptq|fp8` with such a checkpoint published (data/published_checkpoints.json): planned
    as that repo, which from_pretrained loads as stored through its quantization_config (transformers
    quantizers/auto.py); the command names the repo (published.serve_path)."""
    from .runtimes.published import FP8_FORMATS, _data, canonical_quant, published_checkpoint, stored_as
    from .runtimes.quant_support import BNB

    q = canonical_quant(settings.quant or "")
    if q in BNB or stored_as(model, q):
        return None
    entry = published_checkpoint(model, q)
    if not entry:
        return None
    layout = _data("published_checkpoints.json")["formats"][entry["format"]]["layout"]
    # an FP8 checkpoint is held as stored only where transformers runs FP8 (runtimes/transformers.py fp8_dequantized:
    # the plan's assumption says where it is dequantized instead); AWQ / GPTQ load as stored everywhere
    held = ("loads through its quantization_config — as stored where it runs FP8, else dequantized to bf16 (which, "
            "and the bytes: --explain's assumptions)" if entry["format"] in FP8_FORMATS
            else "loads as stored through its quantization_config")
    return settings.with_(quant=entry["format"]), (Step(
        "checkpoint", f"--quant {settings.quant}: planned as the published {entry['label']} checkpoint {entry['repo']} "
        f"({layout}), which transformers {held}", entry["repo"], entry["source"]),)


def unsloth_command(model: ModelSpec, asked: str | None, runtime: Runtime, settings: Settings) -> str:
    """The command for `-q UD-Q4_K_XL`: where the catalog's GGUF repo is Unsloth's, it fetches Unsloth's file, not the
    base type the sizes were planned with — llama.cpp's `-hf <repo>:UD-Q4_K_XL` (common/arg.cpp: -hf
    <user>/<model>[:quant] picks the file whose name carries the tag), Ollama's `hf.co/<repo>:UD-Q4_K_XL` (the form
    for a Hub GGUF, https://huggingface.co/docs/hub/ollama: `ollama run hf.co/{username}/{repository}:{quantization}`;
    the Ollama library tags no UD quant, so its tag would pull the base type instead). Elsewhere (another repo, a file
    planned from its own header) the command is the planned settings' own; the weight quant step says to pass
    Unsloth's file to plan it."""
    fetched = unsloth_fetched(model, asked, settings)
    return runtime.command(model, settings if fetched is None else settings.with_(quant=fetched))


def unsloth_fetched(model: ModelSpec, asked: str | None, settings: Settings) -> str | None:
    """The Unsloth file the command fetches where it is not the type whose sizes were planned (`-q UD-Q4_K_XL` on
    a catalog model whose GGUF repo is Unsloth's: the file UD-Q4_K_XL, sized as Q4_K_M's mix); else None."""
    from .quant.unsloth import unsloth_name
    from .runtimes.published import ollama_entry

    named = unsloth_name(asked)
    entry = ollama_entry(model) if named else None
    repo = (entry or {}).get("hf") or ""
    if named is None or not repo.startswith("unsloth/") or settings.quant != named[1]:
        return None
    return named[0]


def unsloth_substitute(model: ModelSpec, asked: str | None, fetched: str | None) -> str | None:
    """Why the sizes planned are not the file asked for (`-q UD-Q4_K_XL`: Unsloth's per-layer types are in its file
    only, so its base type's llama.cpp mix is planned), for the answer itself; None where nothing was substituted."""
    from .quant.unsloth import from_its_file, unsloth_name

    named = unsloth_name(asked)
    if named is None or from_its_file(model, named[0]):
        return None
    ud, base = named
    why = (f"{ud}: Unsloth's dynamic quant planned as llama.cpp's {base} mix (its per-layer types are in the file "
           "only: pass the .gguf, a path or hf://, for its real sizes; --explain gives the rule's check)")
    if fetched is None:
        why += f"; the catalog's GGUF repo for {model.id} is not Unsloth's, so the command fetches {base}"
    return why


# the --quant words the pooled engines' hint offers, and the format each plans without a published checkpoint of it
# (fp8: quantized at load; awq / gptq / nvfp4: a folder made first — pooled_checkpoint's branches below)
HINT_QUANTS = {"fp8": "fp8", "awq": "awq", "gptq": "gptq", "nvfp4": "ct-nvfp4"}


def hint_quants(model: ModelSpec, runtime: str, gpus: tuple[str, ...]) -> list[str]:
    """The --quant words worth offering on these GPUs: each format's plan is dropped where the engine's own kernel
    check refuses it on one of them (runtimes/published.kernel_check: ModelOpt NVFP4 on ROCm, NVFP4 below compute
    capability 8.0, FP8 below 7.5 …), and NVFP4 on any AMD GPU (NVIDIA's FP4 format: vLLM's ROCm platform refuses
    ModelOpt's, and no FP4 GEMM runs a compressed-tensors one there — rocm_kernel_check's note)."""
    from .runtimes.published import gpu_gfx_target, kernel_check, published_checkpoint

    amd = any(gpu_gfx_target(g) for g in gpus)
    out = []
    for word, made in HINT_QUANTS.items():
        entry = published_checkpoint(model, word)
        fmt = entry["format"] if entry else made
        if word == "nvfp4" and amd or any(kernel_check(fmt, g, runtime)[0] for g in gpus):
            continue
        out.append(word)
    return out


def pooled_checkpoint(model: ModelSpec, settings: Settings,
                      gpus: tuple[str, ...] = ()) -> tuple[Settings, tuple[Step, ...]]:
    """vLLM and SGLang serve a checkpoint as stored, so without --quant the plan is the repo named (the catalog's
    official one) — what `vllm serve REPO` pulls — and the published quantized checkpoints are said, and offered as
    fixes. --quant fp8 / awq / gptq plans the published checkpoint of that format (data/published_checkpoints.json);
    with none published, fp8 is vLLM's quantization at load and awq / gptq a folder the user makes first."""
    from .runtimes.published import CALIBRATED, QUANT_FAMILIES, published_checkpoint, published_checkpoints

    q = (settings.quant or "").lower()
    stored = (model.file_quant or "bf16").lower()
    runtime = get_runtime(settings.runtime).name
    engine = {"vllm": "vLLM", "sglang": "SGLang"}[runtime]
    if not q:
        others = published_checkpoints(model)
        if not others:
            return settings, ()
        listed = ", ".join(f"{e['repo']} ({e['label']})" for e in others)
        words = hint_quants(model, runtime, gpus)
        hint = (f" — --quant {', '.join(words[:-1])} or {words[-1]} plans one" if len(words) > 1
                else f" — --quant {words[0]} plans one" if words else "")
        return settings, (Step("checkpoint", f"planned as stored in {model.repo_id or model.id} ({stored}), the repo "
                               f"the command pulls; published quantized checkpoints: {listed}{hint}",
                               model.repo_id or model.id, "data/published_checkpoints.json"),)
    entry = published_checkpoint(model, q)
    if entry:
        from .runtimes.published import _data

        layout = _data("published_checkpoints.json")["formats"][entry["format"]]["layout"]
        return settings.with_(quant=entry["format"]), (Step(
            "checkpoint", f"--quant {settings.quant}: planned as the published {entry['label']} checkpoint "
            f"{entry['repo']} ({layout}), loaded as stored", entry["repo"], entry["source"]),)
    family = QUANT_FAMILIES.get(q, ())
    if stored in family and stored != q:
        # --quant fp8 on a checkpoint stored in an FP8 layout (DeepSeek-V3's per-128×128-block scales): served as
        # stored, its config.json's quantization_config names the method
        return settings.with_(quant=stored), ()
    if family and family[0].startswith("fp8") and not stored.startswith("fp8"):
        return settings.with_(quant="fp8"), (Step(
            "checkpoint", f"no published FP8 checkpoint of {model.id} is known here: {engine} quantizes the 16-bit "
            "checkpoint at load (--quantization fp8: every Linear but lm_head to FP8 e4m3 with a per-tensor scale); "
            "planned as the FP8 weights once loaded — a release that loads all 16-bit weights onto the GPU before "
            "quantizing needs that much free while loading (not modelled)", "--quantization fp8", FP8_ONLINE_SOURCE[runtime]),)
    from .runtimes.published import stored_as, vllm_bnb_at_load

    if vllm_bnb_at_load(q) and not stored_as(model, q):
        return settings, (Step(
            "checkpoint", f"--quant {settings.quant}: vLLM quantizes the 16-bit checkpoint to bitsandbytes 4-bit at load "
            "(--quantization bitsandbytes: every Linear but lm_head packed 4-bit with an f32 absmax per 64 weights)",
            "--quantization bitsandbytes", "https://docs.vllm.ai/en/stable/features/quantization/bnb/"),)
    made = next((f for f in family if f in CALIBRATED), None)      # int4 → awq, gptq-int4 → gptq
    if made and not stored.startswith(made):
        return settings.with_(quant=made), (Step(
            "checkpoint", f"no published {CALIBRATED[made]} checkpoint of {model.id} is known here, and {engine} cannot "
            f"make one at load ({made.upper()} needs calibration data): the command serves a folder you make first with "
            + ("NVIDIA ModelOpt or llm-compressor" if made == "ct-nvfp4" else "llm-compressor or AutoAWQ / GPTQModel"), "",
            "data/published_checkpoints.json"),)
    return settings, ()

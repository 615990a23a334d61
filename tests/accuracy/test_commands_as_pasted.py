"""Every printed command runs as pasted on the runtime it names: built for every catalog model × runtime and
checked against a table of each runtime's real flags and the Ollama library's real tags.

The flag tables below are written from each runtime's own argument parser (cited per table), not from
runlocal's code; the tag names come from data/ollama_tags.json, whose entries cite the library pages."""

import json
import re
import shlex
from importlib import resources

import pytest

from runlocal.model.catalog import aliases, lookup
from runlocal.plan import with_default_quant
from runlocal.runtimes import Settings, get_runtime

# llama.cpp common/arg.cpp (llama-server): the options runlocal prints, each with the values it accepts
LLAMA_SERVER = {"-m": None, "-hf": None, "-c": int, "--parallel": int, "-ngl": int, "-b": int, "-ub": int,
                "--cache-type-k": {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"},
                "--cache-type-v": {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"},
                "--flash-attn": {"on", "off", "auto"}, "--fit": {"on", "off"}, "--n-cpu-moe": int, "-ot": None,
                "--kv-unified": False, "--swa-full": False, "--no-mmap": False, "--tensor-split": None,
                "--rope-scaling": {"none", "linear", "yarn"}, "--rope-scale": None, "--yarn-orig-ctx": int}
# vllm/engine/arg_utils.py EngineArgs.add_cli_args (`vllm serve MODEL …`); CacheDType in vllm/config/cache.py
VLLM = {"--max-model-len": int, "--gpu-memory-utilization": float, "--max-num-seqs": int,
        "--kv-cache-dtype": {"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"}, "--quantization": None,
        "--tensor-parallel-size": int, "--pipeline-parallel-size": int, "--max-num-batched-tokens": int,
        "--distributed-executor-backend": {"ray", "mp"}, "--enforce-eager": False, "--hf-overrides": None}
# python/sglang/srt/server_args.py ServerArgs.add_cli_args (`python -m sglang.launch_server …`)
SGLANG = {"--model-path": None, "--context-length": int, "--mem-fraction-static": float, "--quantization": None,
          "--kv-cache-dtype": {"auto", "fp8_e4m3", "fp8_e5m2", "bf16", "bfloat16"}, "--tp-size": int,
          "--pp-size": int, "--max-running-requests": int, "--nnodes": int, "--dist-init-addr": None,
          "--node-rank": int, "--json-model-override-args": None}
# ml-explore/mlx-lm: mlx_lm/generate.py setup_arg_parser, mlx_lm/server.py, mlx_lm/convert.py
MLX = {"mlx_lm.generate": {"--model": None, "--prompt": None, "--max-tokens": int, "--max-kv-size": int,
                           "--kv-bits": int, "--kv-group-size": int, "--quantized-kv-start": int},
       "mlx_lm.server": {"--model": None, "--decode-concurrency": int, "--prompt-cache-size": int},
       "mlx_lm.convert": {"--hf-path": None, "-q": False, "--q-bits": int, "--mlx-path": None,
                          "--q-mode": {"affine", "mxfp4", "nvfp4", "mxfp8"}}}
# ollama/ollama envconfig/config.go (what `ollama serve` reads) and docs/modelfile.md (PARAMETER names)
OLLAMA_ENV = {"OLLAMA_NUM_PARALLEL", "OLLAMA_FLASH_ATTENTION", "OLLAMA_KV_CACHE_TYPE", "OLLAMA_GPU_OVERHEAD",
              "OLLAMA_CONTEXT_LENGTH"}
OLLAMA_PARAMETERS = {"num_ctx", "num_gpu", "num_batch"}

TAGS = json.loads(resources.files("runlocal.data").joinpath("ollama_tags.json").read_text())
PUBLISHED = json.loads(resources.files("runlocal.data").joinpath("published_checkpoints.json").read_text())


def served_model(spec, quant) -> set[str]:
    """What a vLLM / SGLang command may load for this plan: the catalog's repo; for a quant that is a published
    checkpoint's format, that checkpoint's repo from the table; for AWQ / GPTQ with none published, the folder the
    plan tells the user to make (./<name>-AWQ)."""
    published = {e["repo"] for e in PUBLISHED["models"].get(spec.id, []) if e["format"] == quant}
    if published:
        return published
    folder = {"awq": "AWQ", "gptq": "GPTQ-Int4", "w4a16": "W4A16"}     # what llm-compressor / AutoAWQ would write
    if quant in folder and not (spec.file_quant or "").startswith(quant):
        return {f"./{spec.repo_id.split('/')[-1]}-{folder[quant]}"}
    return {spec.repo_id}
LIBRARY_NAMES = {e["library"] for e in TAGS["models"].values() if e["library"]}


def _ollama_spelling(q: str) -> str:
    return "fp16" if q == "F16" else "q" + q[1:]      # the library's tags: q4_K_M, q8_0, fp16


# every full name the table says the library has (name:tag), written out from the table's own rule
LIBRARY_TAGS = {f"{e['library']}:{t}" for e in TAGS["models"].values() if e["library"] and "tags" in e
                for t in e["tags"].values()} | {
    f"{e['library']}:{e['tag'].format(q=_ollama_spelling(q))}" for e in TAGS["models"].values()
    if e["library"] and "tags" not in e for q in TAGS["quant_sets"][e["quants"]]}
RUNTIMES = ("llama.cpp", "ollama", "vllm", "sglang", "transformers", "mlx")
# variations a plan or a fix prints: the defaults, a quantized KV cache with several sequences, tensor parallel
VARIANTS = [{"ctx": 8192}, {"ctx": 32768, "parallel": 2, "cache_type_k": "{kv}", "cache_type_v": "{kv}", "n_gpu_layers": 20},
            {"ctx": 4096, "tp": 2, "quant": "Q8_0"}]
KV_NAMES = {"vllm": "fp8", "sglang": "fp8", "transformers": "f16"}    # each runtime's own quantized-KV spelling


def _check_flags(args: list[str], table: dict, where: str) -> list[str]:
    """Every option is the runtime's, with a value it accepts; returns the positional arguments."""
    positional, i = [], 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-"):
            positional.append(a)
            i += 1
            continue
        assert a in table, f"{where}: {a} is not an option of this runtime"
        kind = table[a]
        if kind is False:                           # a switch
            i += 1
            continue
        value = args[i + 1]
        if kind is int:
            assert re.fullmatch(r"\d+", value), f"{where}: {a} {value}"
        elif kind is float:
            float(value)
        elif isinstance(kind, set):
            assert value in kind, f"{where}: {a} {value} (expected one of {sorted(kind)})"
        i += 2
    return positional


def _segments(command: str) -> list[str]:
    line = command.split("  # ", 1)[0]               # a trailing shell comment explains, it is not run
    line = line.split("then on the head: ")[-1]      # vLLM multi-node: the head's line
    line = re.sub(r" \(node 1; the same on .*\)$", "", line)
    return [seg for part in line.split(" && ") for seg in part.split(" & ")]


def check_ollama(command: str, alias: str) -> None:
    created = set()
    for seg in _segments(command):
        words = shlex.split(seg)
        if words[0] == "printf":
            lines = words[1].split("\\n")
            assert lines[0].startswith("FROM "), seg
            base = lines[0].split()[1]
            # a library tag, a Hub GGUF, a GGUF file the user has (imported), or a model created just before
            assert (base.startswith("hf.co/") or (base.startswith("./") and base.endswith(".gguf"))
                    or base in created or base in LIBRARY_TAGS), f"{base}: not a tag in the library table"
            for line in filter(None, lines[1:]):
                name = line.split()[1]
                assert line.startswith("PARAMETER ") and name in OLLAMA_PARAMETERS, line
            assert words[2:] == [">", "Modelfile"], seg
            continue
        env = [w for w in words if "=" in w and w.split("=")[0].isupper()]
        assert {e.split("=")[0] for e in env} <= OLLAMA_ENV, seg
        words = words[len(env):]
        assert words[0] == "ollama", seg
        if words[1] == "serve":
            assert len(words) == 2
        elif words[1] == "create":
            assert words[3:] == ["-f", "Modelfile"], seg
            created.add(words[2])
        else:
            assert words[1] == "run" and len(words) == 3, seg
            name = words[2]
            if name in created:
                continue
            if name.startswith("hf.co/"):
                assert re.fullmatch(r"hf\.co/[\w.-]+/[\w.-]+-GGUF:[A-Z0-9_]+", name), name
                continue
            library, _, tag = name.partition(":")
            assert library in LIBRARY_NAMES, f"{name}: not an Ollama library model"
            assert name in LIBRARY_TAGS, f"{name}: not a tag in the library table"
            assert name != f"{alias}:{tag}" and tag, name        # the runlocal alias is no library name


def check_command(runtime: str, command: str, spec, quant: str | None = None) -> None:
    where = f"{spec.id} on {runtime}: {command}"
    if runtime == "llama.cpp":
        words = shlex.split(command.split("  # ")[0])
        assert words[0] == "llama-server"
        assert not _check_flags(words[1:], LLAMA_SERVER, where), where
        assert ("-m" in words) != ("-hf" in words), where
    elif runtime == "ollama":
        check_ollama(command, spec.id)
    elif runtime == "vllm":
        words = shlex.split(_segments(command)[-1])
        assert words[:2] == ["vllm", "serve"], where
        positional = _check_flags(words[2:], VLLM, where)
        assert len(positional) == 1 and positional[0] in served_model(spec, quant), where
    elif runtime == "sglang":
        words = shlex.split(_segments(command)[-1])
        assert words[:3] == ["python", "-m", "sglang.launch_server"], where
        assert not _check_flags(words[3:], SGLANG, where)
        assert words[words.index("--model-path") + 1] in served_model(spec, quant), where
    elif runtime == "transformers":
        compile(command.split("  #")[0], where, "exec")       # one line of Python that parses
        assert f'"{spec.repo_id}"' in command
    elif runtime == "mlx":
        for seg in _segments(command):
            words = shlex.split(seg)
            assert words[0] in MLX, where
            assert not _check_flags(words[1:], MLX[words[0]], where)
    else:
        raise AssertionError(runtime)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_every_catalog_command_uses_real_flags_and_tags(runtime):
    rt = get_runtime(runtime)
    built = 0
    for alias in aliases():
        spec = lookup(alias)
        for variant in VARIANTS:
            variant = {k: v.format(kv=KV_NAMES.get(runtime, "q8_0")) if isinstance(v, str) else v
                       for k, v in variant.items()}
            settings = Settings(runtime=runtime).with_(**variant)
            if runtime not in ("llama.cpp", "ollama") and settings.quant == "Q8_0":
                settings = settings.with_(quant=None)       # a GGUF type: MLX refuses it, the others ignore it
            settings, _ = with_default_quant(spec, settings)
            check_command(runtime, rt.command(spec, settings), spec, settings.quant)
            built += 1
    assert built == len(aliases()) * len(VARIANTS)


def test_every_catalog_mxfp4_command_on_mlx_uses_real_flags():
    # a published MXFP4 conversion (gpt-oss) is run as it is; every other model is converted first with
    # mlx_lm.convert -q --q-mode mxfp4 (mlx_lm/convert.py's --q-mode choices)
    rt = get_runtime("mlx")
    for alias in aliases():
        spec = lookup(alias)
        settings, _ = with_default_quant(spec, Settings(runtime="mlx").with_(quant="mxfp4"))
        command = rt.command(spec, settings)
        check_command("mlx", command, spec, settings.quant)
        assert ("--q-mode mxfp4" in command) == (settings.quant == "mlx-mxfp4"), command


def test_every_catalog_model_has_an_ollama_answer():
    # each catalog model has a library tag for the quant Ollama pulls by default, or says why not
    assert set(TAGS["models"]) == set(aliases())
    for alias, entry in TAGS["models"].items():
        assert entry["library"] or entry["why"], alias
        if entry["library"]:
            assert entry["source"] == f"https://ollama.com/library/{entry['library']}/tags", alias
        if entry.get("hf"):
            assert entry["hf_source"] == f"https://huggingface.co/{entry['hf']}"


def test_mlx_repos_are_mlx_community_conversions_of_catalog_models():
    doc = json.loads(resources.files("runlocal.data").joinpath("mlx_repos.json").read_text())
    assert set(doc["models"]) <= set(aliases())
    for alias, repos in doc["models"].items():
        for quant, repo in repos.items():
            assert repo.startswith("mlx-community/"), repo
            if quant.startswith("mlx-"):
                assert repo.endswith(quant.removeprefix("mlx-")), (alias, quant, repo)


# llama-server's options by build (common/arg.cpp at each): a command for `--runtime llama.cpp==bNNNN` may use only
# what that build parses. --n-cpu-moe: PR #15077, release b6089; --flash-attn VALUE: PR #15434 (b6343 has it; the
# bare switch -fa before); --fit: PR #16653 (b6451 without it, b7437 with it: runtimes/versions.py FIT_BUILDS).
# Older (review19 finding 3), each from the merge commit's date against release tags named on a date by public
# texts: -ot: PR #11397, merged 2025-04-02 (janhq/cortex.llamacpp's bot: b4984 on 2025-03-28, b5041 on 2025-04-03);
# -hf REPO:QUANT: PR #11195, CI-run 2025-01-13 (b4447 on 2025-01-08, b4502 on 2025-01-17); -fa: PR #5021, merged
# 2024-04-30 (ollama PR #4036 bumps to b2761 on 2024-04-29; kherud/java-llama.cpp PR #60 gets it with b2797).
def llama_server_flags(build: int | None) -> dict:
    table = {k: v for k, v in LLAMA_SERVER.items() if k not in ("--n-cpu-moe", "--flash-attn", "--fit")}
    if build is not None and build <= 4984:
        del table["-ot"]
    if build is not None and build <= 4447:
        del table["-hf"]
    if build is None or build >= 6089:
        table["--n-cpu-moe"] = int
    if build is None or build >= 6343:
        table["--flash-attn"] = {"on", "off", "auto"}
    elif build >= 2797:
        table["-fa"] = False
    if build is None or build >= 7437:
        table["--fit"] = {"on", "off"}
    return table


@pytest.mark.parametrize("version", ["b2500", "b2761", "b3000", "b4447", "b4984", "b6000", "b6400", "b7500", None])
def test_llama_server_commands_use_only_the_flags_of_the_build_named(version):
    # `runlocal check MODEL --runtime llama.cpp==b6000 --flash-attn on --n-cpu-moe 4`: the command runs on b6000
    rt = get_runtime("llama.cpp" if version is None else f"llama.cpp=={version}")
    build = int(version[1:]) if version else None
    table = llama_server_flags(build)
    variants = [{"ctx": 8192, "flash_attn": "on"}, {"ctx": 16384, "flash_attn": "off", "n_cpu_moe": 4},
                {"ctx": 4096, "fit": False, "n_gpu_layers": 10}]
    for alias in aliases():
        spec = lookup(alias)
        for variant in variants:
            settings, _ = with_default_quant(spec, Settings(runtime="llama.cpp").with_(**variant))
            command = rt.command(spec, settings)
            words = shlex.split(command.split("  # ")[0])
            # the binary was `server` until PR #7809 (CI-run 2024-06-12; the bot names b3135 that day, b3145 on 06-14)
            assert words[0] == ("server" if build is not None and build <= 3135 else "llama-server")
            assert not _check_flags(words[1:], table, f"{alias} on {version}: {command}")
            if variant.get("n_cpu_moe") and build is not None and build <= 4984:
                assert "-ot (PR #11397" in command, command        # said beside the command, not left silent
            elif variant.get("n_cpu_moe") and build is not None and build < 6089:
                assert any(w.startswith("blk\\.(0|1|2|3)\\.ffn_(up|down|gate)_exps=CPU") for w in words), command


# vLLM's options by release, read from vllm/engine/arg_utils.py (EngineArgs.add_cli_args) in public copies of
# v0.1.0 (IrisMagicBox/vllm-v0.1.0), v0.1.4 (EmbeddedLLM/vllm-0.1.4-rocm), v0.6.1 (AmberLJC/vllm-0.6.1) and v0.8.4
# (Farrrrland/vllm084); between those: fp8_e5m2 KV and multi-LoRA in v0.3.0 (PRs #2279, #1804), "fp8" KV by v0.4.0
# (issue #3990), --quantization fp8 after v0.4.0 (PR #4118, April 2024) and in v0.4.2 (nm-vllm issue #232),
# --distributed-executor-backend by v0.5.0 (issue #5944), --data-parallel-size by v0.8.3 (issue #18702). The server:
# `python -m vllm.entrypoints.openai.api_server --model M` before v0.5.2, `vllm serve M` from it (PR #5090).
def vllm_flags(release: tuple[int, ...]) -> dict:
    table: dict = {"--gpu-memory-utilization": float, "--tensor-parallel-size": int, "--pipeline-parallel-size": int,
                   "--max-num-seqs": int, "--max-num-batched-tokens": int}
    if release < (0, 5, 0):
        table["--worker-use-ray"] = False                 # v0.1.0 and v0.1.4 have only this switch
    if release > (0, 1, 4):                               # between v0.1.4 and v0.5.0 the release is not pinned
        table["--distributed-executor-backend"] = {"ray", "mp"}
    if release >= (0, 1, 4):
        table["--max-model-len"] = int
        table["--quantization"] = {"awq", "squeezellm", "gptq"} if release <= (0, 4, 0) else None
    if release >= (0, 3, 0):
        table["--kv-cache-dtype"] = {"auto", "fp8_e5m2"} | ({"fp8", "fp8_e4m3"} if release >= (0, 4, 0) else set())
        table |= {"--enable-lora": False, "--max-loras": int, "--max-lora-rank": int}
    if release >= (0, 8, 3):
        table["--data-parallel-size"] = int
    if release >= (0, 8, 4):
        table["--enable-expert-parallel"] = False
    return table


VLLM_RELEASES = ["0.1.0", "0.1.4", "0.3.3", "0.4.2", "0.5.1", "0.6.1", "0.8.4", None]
# what runlocal prints for vLLM: context, memory share, fp8 KV with several sequences, online fp8, TP, PP, DP + EP,
# LoRA, and a Ray cluster (TP beyond one node)
VLLM_VARIANTS = [{"ctx": 8192, "gpu_memory_utilization": 0.8}, {"ctx": 8192, "quant": "awq"}, {"ctx": 8192, "quant": "gptq"},
                 {"ctx": 32768, "parallel": 4, "cache_type_k": "fp8", "cache_type_v": "fp8", "quant": "fp8"},
                 {"ctx": 4096, "tp": 2, "pp": 2, "dp": 2, "expert_parallel": True},
                 {"ctx": 4096, "enable_lora": True, "max_loras": 2, "max_lora_rank": 32},
                 {"ctx": 4096, "tp": 16}]


@pytest.mark.parametrize("version", VLLM_RELEASES)
def test_vllm_commands_use_only_the_options_of_the_release_named(version):
    # `runlocal check MODEL --runtime vllm==0.4.2 --kv-cache-dtype fp8 --tp 2 …`: the command runs on v0.4.2, and
    # what v0.4.2 lacks is said, not printed as an option it would refuse
    rt = get_runtime("vllm" if version is None else f"vllm=={version}")
    current = get_runtime("vllm")
    release = tuple(int(n) for n in version.split(".")) if version else (99,)
    table = VLLM | vllm_flags(release) if version is None else vllm_flags(release)
    for alias in aliases():
        spec = lookup(alias)
        for variant in VLLM_VARIANTS:
            settings, _ = with_default_quant(spec, Settings(runtime="vllm").with_(**variant))
            command = rt.command(spec, settings)
            where = f"{alias} on vLLM {version}: {command}"
            words = shlex.split(_segments(command)[-1])
            if release >= (0, 5, 2):
                assert words[:2] == ["vllm", "serve"], where
                positional = _check_flags(words[2:], table, where)
                assert len(positional) == 1 and positional[0] in served_model(spec, settings.quant), where
            else:
                assert words[:4] == ["python", "-m", "vllm.entrypoints.openai.api_server", "--model"], where
                assert words[4] in served_model(spec, settings.quant), where
                assert not _check_flags(words[5:], table, where), where
            # every option of the current release's command is either printed or named as missing
            comment = command.split("  # ", 1)[1] if "  # " in command else ""
            for word in shlex.split(_segments(current.command(spec, settings))[-1]):
                if word.startswith("--") and word not in words:
                    renamed = word == "--distributed-executor-backend" and "--worker-use-ray" in words
                    assert renamed or word in comment, f"{where}: {word} neither printed nor named"


def test_published_checkpoints_are_cited_repos_of_catalog_models():
    # `runlocal check qwen3-30b-a3b --runtime vllm --quant fp8`: the repo printed comes from this table, each entry
    # for a catalog model, in a format whose weights the planner computes, with one source
    from runlocal.quant.formats import QUANT_FORMATS

    assert set(PUBLISHED["models"]) <= set(aliases())
    assert set(PUBLISHED["formats"]) <= set(QUANT_FORMATS)
    for alias, entries in PUBLISHED["models"].items():
        assert entries, alias
        for e in entries:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+", e["repo"]) and e["repo"] != lookup(alias).repo_id, e
            assert e["format"] in PUBLISHED["formats"] and e["source"].startswith("https://"), e


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
@pytest.mark.parametrize("quant", ["fp8", "awq", "gptq", "int4", "gptq-int4", "w4a16"])
def test_quant_flag_serves_what_was_planned(runtime, quant):
    # `runlocal check MODEL --runtime vllm --quant awq`: every catalog model's command loads the checkpoint whose
    # weights were planned — the published repo, vLLM's own --quantization fp8, or the folder the user is told to make
    rt = get_runtime(runtime)
    for alias in aliases():
        spec = lookup(alias)
        settings, steps = with_default_quant(spec, Settings(runtime=runtime, ctx=8192, quant=quant))
        command = rt.command(spec, settings)
        check_command(runtime, command, spec, settings.quant)
        online = "--quantization fp8" in command
        assert online == (settings.quant == "fp8" and not (spec.file_quant or "").startswith("fp8")
                          and not any(e["format"] == "fp8" for e in PUBLISHED["models"].get(alias, []))), command

"""How a llama-server build or a vLLM release spells the options runlocal prints, so that a command runs as
pasted on the build the user named (`--runtime llama.cpp==b6000`, `--runtime vllm==0.4.2`); unversioned means the
current one, whose command is left as the planner wrote it.

Each boundary is (the last build known to take the old spelling, the first known to take the new one); a build
between the two gets the new spelling, as runtimes/versions.py does for the defaults.
"""

from __future__ import annotations

import re
from typing import Any

# --n-cpu-moe N (the experts of the first N layers on the CPU): ggml-org/llama.cpp PR #15077, released in b6089
# (oobabooga/textgen issue #7178 names the release). Before it, the same placement is an -ot override.
N_CPU_MOE_BUILDS = (6088, 6089)
# --flash-attn on|off|auto: PR #15434 (opened 2025-08-19) turned the switch -fa into a value; a PR #15077 comment
# of 2025-08-07 runs the bare switch on a build with --n-cpu-moe (≥ b6089), and WasmEdge PR #4343 bumping to b6343
# reads "the type of flash attention is changed from bool to string".
FLASH_ATTN_VALUE_BUILDS = (6089, 6343)
# Four older boundaries (review19 finding 3), each (the newest build known without, the first known with), read from
# the merge commit's date and public release-bot PRs that name the newest tag of a day; "git describe --contains" of
# the merge commit, as a public study of llama.cpp's MoE history reads it, gives the single first tag where noted.
# The binary: `server` until PR #7809 renamed it `llama-server` (commit 1c641e6a, CI run 2024-06-12 23:44 UTC);
# janhq/cortex.llamacpp's bot names b3135 the newest release on 2024-06-12 (PR #83) and b3145 on 2024-06-14 (PR #87).
LLAMA_SERVER_BUILDS = (3135, 3145)
# -hf <repo>[:quant] (the short flag and the tag form): PR #11195, commit 00b4c3da, CI run 2025-01-13 13:21 UTC; the
# bot names b4447 on 2025-01-08 (PR #364) and b4502 on 2025-01-17 (PR #374). Before it, -m FILE (a downloaded file).
HF_TAG_BUILDS = (4447, 4502)
# -fa / --flash-attn (the switch): PR #5021, commit 9c67c277, merged 2024-04-30; first tag b2771 (git describe);
# ollama/ollama PR #4036 of 2024-04-29 bumps to b2761, before it; kherud/java-llama.cpp PR #60 (b2797) "adds flash
# attention". Before it there is no flash attention, so no spelling: the setting is left out and said.
FLASH_ATTN_BUILDS = (2770, 2771)
# -ot / --override-tensor: PR #11397, commit e0e912f, merged 2025-04-02; first tag b5028 (git describe); the bot
# names b4984 on 2025-03-28 (PR #442) and b5041 on 2025-04-03 (PR #447). Before it no tensor can be placed apart
# from its layer (experts in RAM are not possible: only whole layers with -ngl).
OVERRIDE_TENSOR_BUILDS = (5027, 5028)
# the tensors --n-cpu-moe keeps on the CPU (common/arg.cpp llm_ffn_exps_block_regex)
_EXPS = r"\.ffn_(up|down|gate)_exps"


def llamacpp_build(version: str | None) -> int | None:
    """'b6000' → 6000; None (the current build) → None."""
    if not version:
        return None
    digits = version.lstrip("b")
    return int(digits) if digits.isdigit() else None


def _older(build: int | None, boundary: tuple[int, int]) -> bool:
    return build is not None and build <= boundary[0]


def flash_attn_args(value: str, build: int | None) -> list[str]:
    """--flash-attn VALUE; before PR #15434 the switch -fa (on) or nothing (off was the default, auto unknown);
    before PR #5021 nothing at all (the build has no flash attention: missing_args says so)."""
    if _older(build, FLASH_ATTN_BUILDS):
        return []
    if _older(build, FLASH_ATTN_VALUE_BUILDS):
        return ["-fa"] if value == "on" else []
    return ["--flash-attn", value]


def has_flash_attn(build: int | None) -> bool:
    """Whether the build has flash attention at all (PR #5021): before it neither -fa nor a quantized V cache."""
    return not _older(build, FLASH_ATTN_BUILDS)


def has_override_tensor(build: int | None) -> bool:
    """Whether the build takes -ot (PR #11397), and so any placement of experts apart from their layer."""
    return not _older(build, OVERRIDE_TENSOR_BUILDS)


def server_binary(build: int | None) -> str:
    """llama-server, or `server` before PR #7809 renamed the binaries."""
    return "server" if _older(build, LLAMA_SERVER_BUILDS) else "llama-server"


# How a publisher names the files of its GGUF repos, <stem><separator><QUANT>.gguf with <stem> the repo's name less
# -GGUF, each read in a file list of one of its repos (the Hub's tree pages, in the docs corpus):
# - "-": bartowski/Meta-Llama-3.1-8B-Instruct-GGUF tree 4c506ee, Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf; ibm-granite's
#   granite-4.0-h-tiny-Q4_K_M.gguf (data/ollama_tags.json hf_seen); the default for a publisher not read here;
# - ".": mradermacher/DeepSeek-V2-Lite-Chat-GGUF tree b71ef48, DeepSeek-V2-Lite-Chat.Q4_K_M.gguf (its -i1-GGUF repos
#   add "i1-": DeepSeek-V2-Lite-Chat.i1-Q4_K_M.gguf, tree 812f6fe);
# - "." on a lower-case stem: TheBloke/Mistral-7B-Instruct-v0.1-GGUF tree 9ab8d70, mistral-7b-instruct-v0.1.Q4_K_M.gguf.
# The 16/32-bit files' type in lower case: bartowski's Meta-Llama-3.1-8B-Instruct-bf16.gguf (tree 3bbbfd9) and -f32
# (tree 256b623), mradermacher's SmolLM-360M.f16.gguf (mradermacher/SmolLM-360M-GGUF tree 341e070).
GGUF_FILE_NAMING = {"mradermacher": (".", False), "thebloke": (".", True)}     # owner: (separator, lower-case stem)
LOWER_FLOAT_TYPES = {"bartowski", "mradermacher"}
FLOAT_TYPES = {"F16", "BF16", "F32"}


def published_gguf_file(repo: str, quant: str) -> str:
    """The file a publisher's GGUF repo holds at ``quant`` (GGUF_FILE_NAMING), e.g. mradermacher's
    DeepSeek-V2-Lite-Chat.Q4_K_M.gguf, bartowski's Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf."""
    owner, _, name = repo.partition("/")
    separator, lower = GGUF_FILE_NAMING.get(owner.lower(), ("-", False))
    stem = re.sub(r"-gguf$", "", name, flags=re.IGNORECASE)
    if owner.lower() == "mradermacher" and stem.lower().endswith("-i1"):
        stem, quant = stem[:-3], f"i1-{quant}" if quant else quant
    stem = stem.lower() if lower else stem
    quant = published_quant(owner, quant)
    return f"{stem}{separator}{quant}.gguf" if quant else f"{stem}.gguf"


def published_quant(owner: str, quant: str) -> str:
    """The quant as the publisher writes it in its file names: bartowski's and mradermacher's 16/32-bit types in lower
    case (LOWER_FLOAT_TYPES), every other as asked."""
    return quant.lower() if owner.lower() in LOWER_FLOAT_TYPES and quant.upper() in FLOAT_TYPES else quant


def model_args(args: list[str], build: int | None) -> tuple[list[str], str | None]:
    """-hf REPO:QUANT as the build takes it, and what to do first where it cannot: before PR #11195 (and for a build
    between its two boundaries, since -m runs on every build) -m the file, downloaded from the repo beforehand, named
    as its publisher names files (published_gguf_file)."""
    if args[:1] != ["-hf"] or build is None or build >= HF_TAG_BUILDS[1]:
        return args, None
    repo, _, quant = args[1].partition(":")
    name = published_gguf_file(repo, quant)
    # huggingface_hub matches --include with fnmatch.fnmatchcase (utils/_paths.py filter_repo_objects): the pattern
    # takes the file name's case, or the download fetches nothing (review20b finding 6)
    pattern = f"*{published_quant(repo.partition('/')[0], quant)}*.gguf" if quant else "*.gguf"
    return ["-m", name], (f"first: hf download {repo} --include '{pattern}' --local-dir . (b{build} has no "
                          f"-hf REPO:QUANT, PR #11195; -m the file as the repo names it)")


def no_flash_attn(build: int | None) -> str | None:
    """Why the build runs no flash attention at all (before PR #5021), or None: fixes.py then offers neither -fa nor
    a quantized V cache, which needs it."""
    if has_flash_attn(build):
        return None
    return (f"llama.cpp b{build} has no flash attention (ggml-org/llama.cpp PR #5021, first in b{FLASH_ATTN_BUILDS[1]}):"
            " neither -fa nor a quantized V cache")


def command_note(build: int | None, options: Any, first: str | None) -> str:
    """The comment after a llama-server command: what to do first (model_args) and what the settings ask that the
    build has no flag for, "FLAG (bN has it)", left out of the line (the plan of a named build relies on neither:
    fixes.py offers them only where the build has them). ``options``: the plan's LlamaCppOptions."""
    missing = []
    if options.flash_attn == "on" and not has_flash_attn(build):
        missing.append(f"-fa (PR #5021, b{FLASH_ATTN_BUILDS[1]} has it)")
    if (options.override_tensor or options.n_cpu_moe) and not has_override_tensor(build):
        missing.append(f"-ot (PR #11397, b{OVERRIDE_TENSOR_BUILDS[1]} has it; experts in RAM need it)")
    said = [first] if first else []
    if missing:
        said.append(f"not in llama.cpp b{build}: {', '.join(missing)}")
    return f"  # {'; '.join(said)}" if said else ""


def n_cpu_moe_args(n: int, build: int | None, *, every_layer: bool = False) -> list[str]:
    """--n-cpu-moe N; before it, the -ot override it stands for: the experts of layers 0 … N-1 on the CPU.
    ``every_layer`` (the user's --cpu-moe, N the layer count): --cpu-moe (PR #14992, before PR #15077, so every build
    with --n-cpu-moe has it); before those builds its own override, the experts of every layer."""
    if every_layer:
        return ["-ot", f"'{_EXPS}=CPU'"] if _older(build, N_CPU_MOE_BUILDS) else ["--cpu-moe"]
    if _older(build, N_CPU_MOE_BUILDS):
        layers = "|".join(str(i) for i in range(n))
        return ["-ot", f"'blk\\.({layers}){_EXPS}=CPU'"]
    return ["--n-cpu-moe", str(n)]


# --- vLLM ------------------------------------------------------------------------------------------------------
# Read from vllm/engine/arg_utils.py (EngineArgs.add_cli_args) in public copies of four releases: v0.1.0
# (IrisMagicBox/vllm-v0.1.0), a v0.1.4 tree (EmbeddedLLM/vllm-0.1.4-rocm), v0.6.1 (AmberLJC/vllm-0.6.1) and v0.8.4
# (Farrrrland/vllm084); boundaries between those from the PRs and issues cited. Every release since v0.1.0 parses
# --gpu-memory-utilization, --tensor-parallel-size, --pipeline-parallel-size and --max-num-seqs (all four in v0.1.0).
# `vllm serve MODEL` from v0.5.2 (PR #5090; the docs switched once v0.5.2 was out, PR #6431): the same rule as
# diagnose/fixes.py VLLM_SERVE_FROM; before it the server is the module, the model given with --model.
VLLM_SERVE_FROM = (0, 5, 2)
# (last release known without, first known with) per option, or per option and value
VLLM_OPTION_RELEASES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    # absent from v0.1.0's parser, present in v0.1.4's
    "--max-model-len": ((0, 1, 0), (0, 1, 4)),
    # fp8 KV: "fp8_e5m2" from PR #2279 (v0.3.0); "fp8" (= fp8_e4m3) beside it by v0.4.0 (issue #3990, 2024-04-11)
    "--kv-cache-dtype": ((0, 2, 7), (0, 3, 0)),
    "--kv-cache-dtype fp8": ((0, 3, 3), (0, 4, 0)),
    "--kv-cache-dtype fp8_e4m3": ((0, 3, 3), (0, 4, 0)),
    # multi-LoRA: PR #1804, released in v0.3.0 (issue #2600 of 2024-01-25 follows its merge; v0.2.7 is 2024-01-03)
    "--enable-lora": ((0, 2, 7), (0, 3, 0)), "--max-loras": ((0, 2, 7), (0, 3, 0)),
    "--max-lora-rank": ((0, 2, 7), (0, 3, 0)),
    # online fp8 weights (quantization="fp8" on a 16-bit checkpoint): PR #4118, April 2024, after v0.4.0 (PR #4244 of
    # 2024-04-21 builds on it); v0.4.2 loads fp8 (nm-vllm issue #232 reports a v0.4.2 fp8 bug)
    "--quantization fp8": ((0, 4, 0), (0, 4, 2)),
    # v0.1.4 has --worker-use-ray only; by v0.5.0 it is "the same as --distributed-executor-backend ray" (issue
    # #5944, 2024-06-28); v0.6.1 still takes both
    "--distributed-executor-backend": ((0, 1, 4), (0, 5, 0)),
    # absent from v0.6.1's EngineArgs, present in v0.8.4's (issue #9206, 2024-10-09, proposes --data-parallel-size;
    # issue #18702 runs it on v0.8.3)
    "--data-parallel-size": ((0, 6, 1), (0, 8, 3)),
    "--enable-expert-parallel": ((0, 6, 1), (0, 8, 4)),
}
VLLM_SWITCHES = {"--enable-lora", "--enable-expert-parallel", "--enforce-eager"}


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(n) for n in version)


def _vllm_boundary(flag: str, value: str | None) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The option's (last release known without, first known with); a value's own row where it is later."""
    rows = [r for r in (VLLM_OPTION_RELEASES.get(f"{flag} {value}"), VLLM_OPTION_RELEASES.get(flag)) if r]
    return max(rows) if rows else None


def _vllm_older_spelling(flag: str, value: str | None, release: tuple[int, ...]) -> list[str] | None:
    """What a release before the option takes instead, or None: nothing (the option is left out)."""
    if flag == "--distributed-executor-backend" and value == "ray":
        return ["--worker-use-ray"]                 # v0.1.0's switch, deprecated but parsed through v0.6.1
    if flag == "--kv-cache-dtype" and release > VLLM_OPTION_RELEASES["--kv-cache-dtype"][0]:
        return [flag, "fp8_e5m2"]                   # v0.3.x: its only fp8 cache
    return None


def vllm_release_args(parts: list[str], release: tuple[int, ...] | None) -> tuple[list[str], list[str]]:
    """``vllm serve MODEL …`` as the named release parses it: the module entry point before v0.5.2, an older
    spelling where one exists, else the option left out and named in the second list ("--flag value (vX has it)").
    ``release`` None: the current release, the words unchanged. A release between the two boundaries of an
    option gets the newer spelling (as llama.cpp builds do above)."""
    if release is None:
        return parts, []
    release = tuple(release) + (0,) * (3 - len(release))      # 0.5 is 0.5.0
    assert parts[:2] == ["vllm", "serve"], parts
    model, rest = parts[2], parts[3:]
    kept: list[str] = []
    left_out: list[str] = []
    i = 0
    while i < len(rest):
        flag = rest[i]
        value = None if flag in VLLM_SWITCHES or i + 1 >= len(rest) else rest[i + 1]
        words = [flag] if value is None else [flag, value]
        i += len(words)
        boundary = _vllm_boundary(flag, value)
        if boundary is not None and release <= boundary[0]:
            older = _vllm_older_spelling(flag, value, release)
            if older is None:
                left_out.append(f"{' '.join(words)} (v{_dotted(boundary[1])} has it)")
                continue
            words = older
        kept += words
    head = (["vllm", "serve", model] if release >= VLLM_SERVE_FROM
            else ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", model])
    return head + kept, left_out


# --- Ollama -----------------------------------------------------------------------------------------------------
def ollama_service_note(env: list[str], then: str = "then the line from printf / ollama run") -> str:
    """Where Ollama runs as a service (Linux install.sh's ollama.service, the macOS app) it holds port 11434, so the
    command's `VAR=… ollama serve &` exits and the service never sees the variables: Ollama's documented way to set
    them per platform (ollama/ollama docs/faq.mdx "How do I configure Ollama server?": systemctl edit ollama.service,
    Environment="…" under [Service], daemon-reload and restart; launchctl setenv, then restart the app; on Windows
    the app inherits the user's environment variables: quit it, set them, start it again — `setx` sets a user's
    variable). ``then``:
    what to do once the service has them (check's commands: run the rest of its line; diagnose's fixes: run the
    model again) — the one caveat both give (diagnose/ollama_fixes.py service_caveat)."""
    pairs = [e.split("=", 1) for e in env]
    return ("where Ollama runs as a service (Linux install.sh, the macOS and Windows apps) it holds port 11434 and this "
            "`ollama serve` exits, so set the variables on it instead (docs/faq.mdx \"How do I configure Ollama "
            "server?\"): Linux: sudo systemctl edit ollama.service, under [Service] "
            + " ".join(f'Environment="{k}={v}"' for k, v in pairs)
            + ", then sudo systemctl daemon-reload && sudo systemctl restart ollama; macOS: "
            + "; ".join(f"launchctl setenv {k} {v}" for k, v in pairs)
            + ", then quit and reopen Ollama; Windows (the app inherits the user's variables): quit Ollama from the "
            + "task bar, " + "; ".join(f"setx {k} {v}" for k, v in pairs)
            + f", then start it from the Start menu; {then}")


__all__ = ["flash_attn_args", "has_flash_attn", "has_override_tensor", "llamacpp_build", "command_note", "model_args",
           "published_gguf_file", "n_cpu_moe_args", "no_flash_attn", "ollama_service_note", "server_binary",
           "vllm_release_args"]

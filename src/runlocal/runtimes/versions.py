"""`--runtime vllm==0.19.0`: which release's allocation rules and defaults a plan uses.

The runtime field takes ``NAME`` or ``NAME==VERSION`` (pip's spelling; ``llama.cpp==b6500`` for a llama.cpp
build). Unversioned means the current release, whose rules each planner holds as its default. Only the
rules that changed between releases and that the planners model are switched here; each boundary cites the
release, PR or log that places it:

vLLM (runtimes/vllm.py ``ENGINES``):
  ≤ 0.6.4          "v0.6": V0, the CUDA context counted as non-torch memory, logits-only sampler peak
                   (issue #10517, v0.6.4; the profiler was overhauled by PR #10511, released in v0.6.5)
  0.6.5 – 0.7.x    "v0": V0 after PR #10511
  0.8 – 0.9.x      "v1-pre-hybrid": V1 the default engine (v0.8.0 release notes), one KV group, sliding
                   layers sized like full attention (issue #14696, v0.8.2)
  0.10 – 0.20.x    "v1": the hybrid KV-cache manager (v0.10.0), CUDA graphs captured after the pool was sized,
                   so outside the budget (issue #40691, v0.19.0's log format) — up to v0.19.1: v0.20.0's wheel
                   already defaults VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS to "1" (envs.py; "0" in v0.19.1), so
                   0.20.x is planned with the graphs inside the budget and v0.19's "GPU KV cache size" formula
                   (its kv_cache_utils.py _report_kv_cache_config still prints num_blocks // groups × block)
  ≥ 0.21           "v1-cudagraph": "CUDA graph memory profiling is enabled (default since v0.21.0)" — the
                   graphs' estimate is taken out of the budget (gpu_worker.py's own log line; v0.20.0 prints the
                   same line); the pool reported as int(max_concurrency × max_model_len) (v0.22.0's wheel)
llama.cpp (runtimes/llamacpp.py), by build number bNNNN:
  -np default      auto = 4 slots in one unified KV stream since ggml-org/llama.cpp PR #16736 (opened
                   2025-10-23): b7079 starts 4 slots without -np (issue #17300); b6451 (released by
                   2025-09-13, xorbitsai/xllamacpp PR #81) predates the PR: one slot, its own stream.
  --fit            common/fit.cpp since PR #16653 (opened 2025-10-18, merged 2025-12: PR #18070);
                   b7437 runs llama-fit-params (issue #18097); b6451 predates it: no --fit, -ngl as given.
  output rows     llama-server reserves the prompt graph with n_parallel × (1 + draft tokens) rows of logits,
                   not n_ubatch, since PR #23861 ("llama: limit max outputs of llama_context", commit de6f727aa,
                   2026-06-01; tools/server/server-context.cpp server_n_outputs_max, src/llama-context.cpp
                   sched_reserve n_outputs_pp = min(n_tokens, n_outputs_max)). b9272 predates it (issue #23527,
                   the report the PR closes, 2026-05-22); b9776 has it (issue #24967: the PR's
                   GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) fires in that build). The C API keeps
                   n_outputs_max = n_batch when not set (llama-cpp-python, runlocal's measured records).
  f16 KQ mask     the KQ mask graph inputs are reserved in f16 under flash attention since PR #23764 ("llama: use
                   f16 mask for FA to save VRAM", commit 031ddb2e0, 2026-05-29; src/llama-graph.cpp
                   build_attn_inp_kv_impl). Before it the input is f32 (in the host's compute buffer) and
                   self_kq_mask_cnv = ggml_cast(…, GGML_TYPE_F16) adds its f16 copy on the GPU. b9410 is that
                   commit ("b9410 (031ddb2e0)", a llama.cpp version string), so b9409 and older are without it;
                   issue #23527's A/B at b9272 logs the CUDA_Host compute 2,408 MiB before, 1,236 with it
                   (measurements/llamacpp_server_outputs).
  delta net       qwen3next / qwen35 / qwen35moe: the fused GGML_OP_GATED_DELTA_NET (added by PR #19504, 2026-02-11,
                   not yet in the graph) replaced the unfused graphs of src/models/delta-net-base.cpp in two steps,
                   read in the llama.cpp ollama/ollama vendored at each build: b8099 (e4d75b8c5) builds the
                   autoregressive and the chunked graphs; b8233 (577db53ef) sets cparams.fused_gdn_ar (one token per
                   sequence fused, "fused_gdn_ch = false; // TODO: implement"), as b8250 (e22e88d5d) still does; b8301
                   (97962bd03) fuses the chunked graph too. From b8233 each fused path is kept only if a reserved
                   graph puts every fused node on its layer's device (auto_fgdn; runtimes/ggml/gdn_probe.py): with
                   delta-net layers on the CPU and op-offloaded prompt batches it fails (issue #24712 at b10459); PR
                   #27877 (2026-08-28) dropped the check, and the modelled 0c1e57098 (b11312) has none. The unfused
                   graphs' node counts equal ggml-org/llama.cpp#20587's log (6,699 at 512 tokens, 4,389 at one:
                   runtimes/ggml/delta_net_unfused.py).
  flash attn      --flash-attn on|off|auto, auto (on where the backend supports it) by default, since PR #15434
                   (opened 2025-08-19; the boundary of runtimes/flag_spelling.py FLASH_ATTN_VALUE_BUILDS: b6089 runs
                   the bare switch, b6343 takes the value). Before it flash attention was off unless -fa was given:
                   llama.cpp's own CI log at b3107 runs `perplexity -ngl 999 -c 2048` without -fa and logs
                   flash_attn = 0 (ggml-org/ci, measurements/public_logs/llamacpp.jsonl).
  MLA cache       what an MLA layer (llama.cpp arch deepseek2: DeepSeek V2/V3, Kimi K2, GLM-4.7-Flash) caches, for a
                   GGUF converted with {arch}.attention.key_length_mla (PR #12801's converter; older files are ordinary
                   K/V models in every build, model/gguf.py). Before PR #12801 ("DeepSeek V2/V3 MLA implementation",
                   opened 2025-04-07) MLA ran as MHA: K n_head × (qk_nope + qk_rope), V n_head × v_head_dim (ollama
                   #9248: K 23,424 + V 15,616 MiB for DeepSeek-R1 at 8,192 cells). b5061 predates it (issue #12817,
                   filed 2025-04-08 on b5061 while the PR was still in review); b5331 has it (ik_llama.cpp PR #394's
                   mainline log: n_head_kv 1, n_embd_head_k 576, n_embd_head_v 512, K 1,098 + V 976 MiB at 16,384
                   cells). From it K is the latent (kv_lora_rank + qk_rope) and V its kv_lora_rank part, stored again,
                   until PR #19067 ("kv-cache : support V-less cache", 2026-01-24) dropped V: b7437 (ollama's vendored
                   ec98e2002, Ollama v0.13.5, 2025-12-18) allocates V for every layer (src/llama-kv-cache.cpp); b9452
                   (Ollama v0.30.0's LLAMA_CPP_VERSION, 2026-06-01) is four months after the merge. No public deepseek2
                   log between b9452 and the modelled build pins V-less; the modelled build's plans assume it.
  Builds between the last known-without and the first known-with are planned with the newer rule and say so.
Ollama (runtimes/ollama.py): default num_ctx 2048 before v0.6.7, 4096 from v0.6.7, the VRAM tiers from
  v0.15.5 (server/routes.go Serve); OLLAMA_NUM_PARALLEL unset: one sequence before v0.1.33, 1 to v0.1.48, autoselect 4
  v0.2.0–v0.6.6 and 2 v0.6.7–v0.9.x, 1 from v0.10.0; flash attention from v0.1.39; the system-memory refusal from v0.2.0
  — each read back to v0.1.0 (runtimes/ollama_early.py, which cites the commits);
  before v0.30.0 Ollama ran its own runner rather than llama-server
  (commit 9db4bda) — the bytes are still planned as llama-server's, and the plan says so. From v0.30.0 Ollama
  builds llama-server from upstream llama.cpp at the build its LLAMA_CPP_VERSION file names (cmake/local.cmake:
  ExternalProject_Add GIT_TAG; its llama/compat patches touch the model loader, one model's tables and mtmd, never
  src/llama-context.cpp or tools/server/server-context.cpp) and starts it with -np: each release's build is in
  data/ollama_llama_cpp.json (measurements/ollama_builds/make_map.py over the ollama/ollama tags: v0.30.0 b9452 …
  v0.32.15 b10488), and llama-server's output cap applies by that build as for llama.cpp==bNNNN. Every earlier
  release ran the CGO runner over a vendored llama.cpp (Makefile.sync FETCH_HEAD; v0.24.0, 2026-05-14, the last)
  and predates PR #23861 (2026-06-01): no cap; and PR #23764: f32 KQ masks cast to f16 (the Go engine casts its f32
  mask too, ollama/ollama PR #11967), while every mapped llama-server build (b9452 on) has the f16 mask. A release
  newer than the map builds at least its last build (b10488, with the cap). The newest commit read is v0.33.0-rc2
  (fb3076099, 2026-08-21; OLLAMA_NEWEST_COMMIT_READ), whose launch code is v0.32.15's: the current release is planned
  as it, and ollama==0.33.x says so. Later bumps (ollama#18003 b10630, #18317 b10864) are known by title only.
  The MLA cache by release: before v0.6.7 every head's K/V (v0.6.6 vendors 71e90e881, whose
  src/llama-hparams.h has no n_embd_head_k_mla), v0.6.7–v0.24.0 the latent K and V (2016f07bd … ec98e2002: PR #12801
  in, #19067 not), from v0.30.0 by the llama-server build (K alone). Flash attention with OLLAMA_FLASH_ATTENTION
  unset: off before v0.11.8, then on for the architectures each release lists, llama.cpp's auto on the llama.cpp
  runner from v0.13.4, auto for every model from v0.30.0 (runtimes/ollama_flash.py, data/ollama_flash_attention.json).
  The engine before v0.30.0: the Go engine for KV.OllamaEngineRequired's architectures (gemma3 from v0.6.0 …) and, with
  OLLAMA_NEW_ENGINE=1, the rest it registers; else the llama.cpp runner (runtimes/ollama_engine.py,
  data/ollama_engine.json); the Go engine's gpt-oss / Gemma 4 keep 4,096 cells a sequence in their sliding layers.
vLLM's defaults and checks outside the engines above, read in the released wheels (vllm/config/cache.py,
  vllm/engine/arg_utils.py):
  --swap-space     CacheConfig.swap_space (4 GiB per GPU) and verify_with_parallel_config (swap × TP above 70 % of
                   the host's RAM: "Too large swap space") up to v0.17.1; PR #36216 ("[V0 Deprecation] Remove unused
                   swap_space parameter", 2026-03-06) removed the field, the flag and the check: v0.18.0 has none of
                   them (`vllm serve --swap-space 2` is an argparse "unrecognized arguments" error; LLM(swap_space=…)
                   warns and drops it; unsloth-zoo#1210 read EngineArgs in 0.15.0–0.29.0: present to 0.17.1 only).
  utilization      CacheConfig.gpu_memory_utilization: 0.9 up to v0.19.1, 0.92 from v0.20.0 (the same release turned
                   VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on by default; envs.py "0" in v0.19.1, "1" in v0.20.0).
vLLM's first release per published NVFP4 checkpoint (format's Linear / MoE method, architecture, ModelOpt mixed
  precision), read in the released sdists: runtimes/vllm_nvfp4.py; an older `vllm==X` is refused, naming it.
SGLang (runtimes/sglang_versions.py, read in the PyPI wheels 0.4.4 – 0.5.23, measurements/sglang_versions/wheels.txt):
  mem_fraction_static's default rule (by TP ≤ 0.4.5; 0.4.6 and 0.4.7 their own; GPU tiers 0.4.8 – 0.5.2; the
  activation + decode-graph reserve 0.5.3 – 0.5.9; + the prefill graphs, on by default from 0.5.11), the chunked
  prefill / decode-graph batch table by GPU memory (changed at 0.4.6, 0.4.7, 0.4.8, 0.5.3, 0.5.5, 0.5.21); page_size
  and max_running_requests' default unchanged; the prefill graphs capped at --context-length (0.5.13 – 0.5.16) and
  at 4096 for a "llama-2" model path (0.5.11 on); post-capture KV sizing (0.5.16 on) off by default. An unread
  release takes the nearest read one below and says so.
transformers (runtimes/transformers_versions.py, read in the PyPI wheels 4.35.2 – 5.0.0): attn_implementation eager
  before 4.36.0, sdpa from it where the model class declares it (SDPA_BY_MODEL_TYPE, every minor release read);
  AWQ refused without a CUDA GPU up to 4.53, switched to IPEX 4.54 – 4.57, no check from 5.0; a fine-grained FP8
  checkpoint unknown before 4.49, refused below compute capability 9.0 (4.49 – 4.50) or 8.9 (4.53 – 4.57) or without
  a GPU, dequantized to bf16 from 5.0.
mlx-lm (runtimes/mlx_versions.py, read in the PyPI wheels 0.16.0 – 0.32.0): --max-kv-size from 0.17.0, --kv-bits and
  the wired limit from 0.20.1, mlx_lm.server's prompt cache of the last prompt to 0.28.3, of 10 from 0.28.4, with
  --prompt-cache-size from 0.31.0.
vLLM's CPU backend with VLLM_CPU_KVCACHE_SPACE unset: 4 GiB up to v0.12.0, half the RAM v0.13.0–v0.19.1 (PR #29604),
  --gpu-memory-utilization × RAM less the worker from v0.20.0 (PR #39781): runtimes/vllm_cpu.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from ..errors import InputError
from .flag_spelling import FLASH_ATTN_VALUE_BUILDS  # PR #15434 made auto the default as it turned -fa into a value
from .release_numbers import BUILD, dotted_key

# vLLM: (first version, engine, what the rules are)
VLLM_ENGINES: tuple[tuple[tuple[int, ...], str, str], ...] = (
    ((0,), "v0.6", "V0 up to v0.6.4 (CUDA context in non-torch memory; issue #10517)"),
    ((0, 6, 5), "v0", "V0 from v0.6.5 (PR #10511's profiler)"),
    ((0, 8), "v1-pre-hybrid", "V1 before the hybrid KV-cache manager (v0.8–v0.9: sliding layers sized like full)"),
    ((0, 10), "v1", "V1 with the hybrid KV-cache manager, CUDA graphs outside the budget (v0.10–v0.19)"),
    ((0, 21), "v1-cudagraph", "V1, CUDA graph memory inside the budget (default since v0.21.0)"),
)
VLLM_CURRENT = "v1-cudagraph"
VLLM_GRAPHS_IN_BUDGET_FROM = (0, 20)   # envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: "0" in v0.19.1, "1" in v0.20.0
VLLM_SWAP_SPACE_REMOVED = (0, 18)   # PR #36216: --swap-space and its RAM check in v0.17.1, neither in v0.18.0
# (first version, --gpu-memory-utilization default): vllm/config/cache.py Field(default=…) in the released wheels
VLLM_UTILIZATION_DEFAULTS: tuple[tuple[tuple[int, ...], float], ...] = (((0,), 0.9), ((0, 20), 0.92))

# llama.cpp builds: (last build known without, first build known with) for each default that changed
NP_AUTO_BUILDS = (6451, 7079)       # PR #16736; xllamacpp PR #81 (b6451, 2025-09-13); issue #17300 (b7079)
FIT_BUILDS = (6451, 7437)           # PR #16653; issue #18097 (b7437 runs llama-fit-params)
OUTPUT_CAP_BUILDS = (9272, 9776)    # PR #23861; issue #23527 (b9272, without); issue #24967 (b9776, its assert)
KQ_MASK_F16_BUILDS = (9409, 9410)   # PR #23764: merged as 031ddb2e0, whose build is b9410
GDN_AR_BUILDS = (8099, 8233)        # fused one-token delta net: ollama e4d75b8c5 (b8099, without), 577db53ef (b8233)
GDN_CHUNK_BUILDS = (8250, 8301)     # fused prompt delta net: ollama e22e88d5d (b8250, without), 97962bd03 (b8301)
GDN_PROBE_BUILDS = (10459, 11312)   # the fused-GDN device check: issue #24712 (b10459, with), 0c1e57098 (b11312, none)
MLA_LATENT_BUILDS = (5061, 5331)    # PR #12801: issue #12817 (b5061, without); ik_llama.cpp PR #394's mainline log (b5331)
MLA_V_LESS_BUILDS = (7437, 9452)    # PR #19067: ollama's vendored ec98e2002 (b7437, V stored); Ollama v0.30.0 (b9452)
OLLAMA_MLA_LATENT_FROM = (0, 6, 7)  # vendored 2016f07bd has n_embd_head_k_mla (PR #12801); v0.6.6's 71e90e881 has not

# Ollama: (first version, default num_ctx rule)
OLLAMA_CTX_RULES: tuple[tuple[tuple[int, ...], str], ...] = (
    ((0,), "2048"), ((0, 6, 7), "4096"), ((0, 15, 5), "tiers"),
)
OLLAMA_LLAMA_SERVER_FROM = (0, 30, 0)   # commit 9db4bda, "use llama-server exclusively for GGML models"
# a multimodal projector's place (runtimes/ollama.py Ollama.projector): v0.30.0 (9db4bda) brought llm/llama_server.go's
# shouldDisableMMProjOffload (--no-mmproj-offload for num_gpu 0, num_gpu below the layers, a GPU under projector +
# 1 GiB); a6293eb (ollama/ollama#16996, 2026-07-07; first tag v0.31.2, v0.31.1 is without it) added mmprojFitTargetMiB,
# LLAMA_ARG_FIT_TARGET = projector + 1 GiB. Before v0.30 llm/server.go (v0.12.11–v0.29: "The vision projector is always
# loaded on the first GPU if available") and llm/memory.go before it ("Projectors loaded into GPU0 only") put it on
# the first GPU with no margin of its own.
OLLAMA_MMPROJ_FIT_TARGET_FROM = (0, 31, 2)
OLLAMA_BUILDS_PATH = "ollama_llama_cpp.json"   # runlocal/data: each release's llama.cpp (make_map.py)

# The releases read, oldest and newest, where a runtime's rules are not a table of read releases (sglang_versions,
# transformers_versions and mlx_versions hold their own READ): vLLM's parser from v0.1.0 (flag_spelling.py
# VLLM_OPTION_RELEASES, "absent from v0.1.0's parser"; PyPI's 0.0.1 predates every rule here) to the 0.33.0 wheel
# (vllm_cpu.py); llama.cpp's newest build read is the one runtimes/ggml traces, 0c1e57098 = b11312 (GDN_PROBE_BUILDS),
# Ollama's the newest release in data/ollama_llama_cpp.json. Older llama.cpp builds and Ollama releases are planned
# on purpose with the rules before each boundary, so they have no lower bound here: Ollama's memory rules are read back
# to v0.1.0 (runtimes/ollama_early.py OLDEST_CHECKED; older releases' plans say "not checked"), its architecture table
# to v0.3.14 (docs/runtime-rules.md, arch_support.py).
VLLM_READ = ((0, 1, 0), (0, 33, 0))
# Ollama's newest commit read: the v0.33.0-rc2 pre-release (the mirror's main, fb3076099, 2026-08-21), which
# runtimes/ollama.py's launch line is read at. `git diff v0.32.15 v0.33.0-rc2` (and -rc0, -rc1) touches none of llm/,
# server/routes.go, server/sched.go, envconfig/, llama/, cmake/local.cmake nor LLAMA_CPP_VERSION (b10488 in both): it
# launches llama-server as v0.32.15, the newest release tag read (data/ollama_llama_cpp.json skips pre-releases). The
# bumps after it are read by title only: ollama/ollama PR #18003 "llama.cpp: version bump b10630" (2026-08-25),
# PR #18317 "… b10864" (2026-09-08).
OLLAMA_NEWEST_COMMIT_READ = ("0.33.0-rc2", "fb3076099", "2026-08-21")
LLAMACPP_NEWEST_READ = 11312
VERSIONED = ("llama.cpp", "vllm", "ollama", "sglang", "transformers", "mlx")


@dataclass(frozen=True)
class RuntimeVersion:
    """A version the user named: its text and the numbers compared (a llama.cpp build: one number)."""

    text: str
    key: tuple[int, ...]

    def at_least(self, *version: int) -> bool:
        return self.key >= version


def split_runtime(text: str) -> tuple[str, str | None]:
    """'vllm==0.19.0' → ('vllm', '0.19.0'); 'vllm' → ('vllm', None)."""
    name, sep, version = text.partition("==")
    return name.strip(), (version.strip() if sep else None)


def release_text(key: tuple[int, ...]) -> str:
    """(0, 5, 23) → '0.5.23'."""
    return ".".join(str(x) for x in key)


def release3(key: tuple[int, ...]) -> tuple[int, int, int]:
    """A release key as major.minor.patch, missing parts zero ((0, 9) → (0, 9, 0)): PEP 440 compares release segments
    padded with zeros (0.9 == 0.9.0), so keys of different lengths compare as releases do."""
    major, minor, patch = (*key, 0, 0, 0)[:3]
    return major, minor, patch


def nearest_read(key: tuple[int, ...] | None, read: tuple[tuple[int, ...], ...], asked: str, flag: str, name: str,
                 ref: str, where: str = "") -> tuple[tuple[int, ...], str]:
    """The read release whose rules a release-table runtime (sglang_versions, transformers_versions, mlx_versions)
    plans ``key`` with, and the note saying so: None → the last read release; not read → the nearest read one below
    it; below the first → InputError naming the read range. ``flag``: the --runtime name, ``name`` / ``ref``: how the
    error / the note name the project, ``where``: the file the releases were read from, cited in both."""
    current = read[-1]
    if key is None:
        return current, ""
    key = release3(key)
    cite = f" ({where})" if where else ""
    if key < read[0]:
        raise InputError(f"runtime: {flag}=={asked or release_text(key)}: {name} releases read are "
                         f"{release_text(read[0])} – {release_text(current)}{cite}; give one of them or '{flag}' "
                         f"alone for {release_text(current)}'s rules")
    release = [r for r in read if r <= key][-1]
    if release == key:
        return release, ""
    if key > current:
        return release, f"{ref} {asked or release_text(key)} {newer_words(release_text(current))}{cite}"
    return release, (f"{ref} {asked or release_text(key)} not read: planned with {release_text(release)}'s rules, "
                     f"the nearest read release below it{cite}")


def parse_version(runtime: str, text: str) -> RuntimeVersion:
    """A version for ``runtime`` (its canonical name), or InputError naming the runtime field."""
    if runtime not in VERSIONED:
        raise InputError(f"runtime: {runtime}=={text}: versions are modelled for {', '.join(VERSIONED)}; "
                         f"give '{runtime}' alone for its current release's rules")
    if runtime == "llama.cpp":
        m = BUILD.match(text)
        if not m:
            raise InputError(f"runtime: llama.cpp=={text}: expected a build number such as b6500")
        return RuntimeVersion(f"b{int(m.group(1))}", (int(m.group(1)),))
    key = dotted_key(text)
    if key is None:
        # the example is this runtime's own newest release read, not one project's number for all (review23 #10a:
        # sglang==abc was told "such as 0.19.0", a vLLM number)
        example = (newest_read(runtime) or ((), "0.19.0"))[1]
        raise InputError(f"runtime: {runtime}=={text}: expected a release number such as {example}")
    version = RuntimeVersion(text, key)
    if runtime == "vllm" and release3(version.key) < VLLM_READ[0]:
        raise InputError(f"runtime: vllm=={text}: vLLM releases read are {release_text(VLLM_READ[0])} – "
                         f"{release_text(VLLM_READ[1])}; give one of them or 'vllm' alone for the current release's "
                         "rules")
    return version


def newer_words(newest: str) -> str:
    """The one wording of a release above every one read, for every runtime."""
    return f"is newer than the newest release read ({newest}): planned with {newest}'s rules"


def newest_read(runtime: str) -> tuple[tuple[int, ...], str] | None:
    """(key, text) of the newest release of ``runtime`` whose rules were read; None for a runtime without versions."""
    if runtime == "vllm":
        return VLLM_READ[1], release_text(VLLM_READ[1])
    if runtime == "llama.cpp":
        return (LLAMACPP_NEWEST_READ,), f"b{LLAMACPP_NEWEST_READ}"
    if runtime == "ollama":
        key, text, _ = _ollama_releases()[-1]
        return key, text
    if runtime in ("sglang", "transformers", "mlx"):
        import importlib

        read = importlib.import_module(f".{runtime}_versions", __package__).READ
        return read[-1], release_text(read[-1])
    return None


def newer_than_read_note(runtime: str, version_text: str | None) -> list[str]:
    """The plan's note where ``runtime==version_text`` is above the newest release read (a typo such as vllm==0.91
    for 0.9.1 is planned, but not silently); [] otherwise. ``runtime``: the canonical name."""
    newest = newest_read(runtime) if version_text else None
    if newest is None or version_text is None:
        return []
    key = parse_version(runtime, version_text).key
    name = {"vllm": "vLLM", "ollama": "Ollama", "sglang": "SGLang", "mlx": "mlx-lm"}.get(runtime, runtime)
    if release3(key) <= release3(newest[0]):
        return unread_release_note(runtime, name, version_text, key)
    if runtime == "ollama":
        rc, commit, date = OLLAMA_NEWEST_COMMIT_READ
        return [f"{name} {version_text} {newer_words(newest[1])} — the pre-release v{rc} ({commit[:7]}, {date}) was "
                f"read too and launches llama-server as {newest[1]} does (OLLAMA_NEWEST_COMMIT_READ)"]
    return [f"{name} {version_text} {newer_words(newest[1])}"]


def unread_release_note(runtime: str, name: str, version_text: str, key: tuple[int, ...]) -> list[str]:
    """The plan's note where a release-table runtime (SGLang, transformers, mlx-lm: each one's READ) is asked at a
    release between read ones: planned with the nearest read release's rules, said as the newer-than-read note says
    its own (review23 finding 8: sglang==0.4.9 was planned with 0.4.8's rules, said only under --explain). [] for a
    read release and for the runtimes whose rules are kept by release ranges (vLLM, llama.cpp, Ollama)."""
    if runtime not in ("sglang", "transformers", "mlx"):
        return []
    import importlib

    module = importlib.import_module(f".{runtime}_versions", __package__)
    _, note = nearest_read(key, module.READ, version_text, runtime, name, name, getattr(module, "WHEELS", ""))
    return [note] if note else []


def vllm_engine(version: RuntimeVersion | None) -> tuple[str, str]:
    """The planner's engine generation for a vLLM release, and what its rules are."""
    if version is None:
        return VLLM_CURRENT, (VLLM_ENGINES[-1][2] + f"; --gpu-memory-utilization {vllm_default_utilization(None):g} by "
                              "default, no --swap-space (PR #36216); the current release")
    engine, why = VLLM_ENGINES[0][1:]
    for first, name, rules in VLLM_ENGINES:
        if version.key >= first:
            engine, why = name, rules
    swap = ("--swap-space 4 GiB per GPU checked against 70 % of RAM" if vllm_swap_space(version)
            else "no --swap-space (removed in v0.18.0, PR #36216)")
    if engine == "v1" and vllm_graphs_in_budget(version):
        why = ("V1 with the hybrid KV-cache manager, CUDA graph memory inside the budget (v0.20.0 turned "
               "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on), the pool reported as num_blocks // groups × block (v0.20)")
    return engine, f"{why}; --gpu-memory-utilization {vllm_default_utilization(version):g} by default, {swap}"


def vllm_graphs_in_budget(version: RuntimeVersion | None) -> bool:
    """Whether this vLLM release subtracts its CUDA graphs' estimate inside the budget (v0.20.0 on, the current)."""
    return version is None or version.key >= VLLM_GRAPHS_IN_BUDGET_FROM


def vllm_swap_space(version: RuntimeVersion | None) -> bool:
    """Whether this vLLM release has --swap-space and checks it against the host's RAM (up to v0.17.1; PR #36216)."""
    return version is not None and version.key < VLLM_SWAP_SPACE_REMOVED


def vllm_default_utilization(version: RuntimeVersion | None) -> float:
    """This vLLM release's --gpu-memory-utilization default (0.9 to v0.19.1, 0.92 from v0.20.0); the current: 0.92."""
    if version is None:
        return VLLM_UTILIZATION_DEFAULTS[-1][1]
    return [share for first, share in VLLM_UTILIZATION_DEFAULTS if version.key >= first][-1]


def utilization_words(version: RuntimeVersion | None) -> str:
    """The plan's assumption: the --gpu-memory-utilization default of this release, and where it comes from."""
    share = vllm_default_utilization(version)
    era = "from v0.20.0" if share == VLLM_UTILIZATION_DEFAULTS[-1][1] else "up to v0.19.1"
    return f"gpu_memory_utilization {share:g} (vLLM's default {era}, vllm/config/cache.py)"


def llamacpp_rules(version: RuntimeVersion | None) -> tuple[bool, bool, str]:
    """(-np auto by default, --fit exists, what the rules are) for a llama.cpp build."""
    if version is None:
        return True, True, ("the current build: -np auto (4 slots, unified KV), --fit on, llama-server's output cap "
                            "(n_parallel rows of logits in the prompt graph; PR #23861), f16 KQ masks (PR #23764)")
    build = version.key[0]
    np_auto, fit, cap = build > NP_AUTO_BUILDS[0], build > FIT_BUILDS[0], llamacpp_output_cap(version)
    parts = [("-np auto (4 slots, unified KV; PR #16736)" if np_auto else "-np 1 (before PR #16736)"),
             ("--fit on (PR #16653)" if fit else "no --fit (before PR #16653): -c and -ngl as given"),
             ("llama-server's output cap: n_parallel rows of logits in the prompt graph (PR #23861)" if cap
              else "n_ubatch rows of logits in the prompt graph (before PR #23861)"),
             ("f16 KQ masks under flash attention (PR #23764)" if llamacpp_kq_mask_f16(version)
              else "f32 KQ masks, cast to f16 under flash attention (before PR #23764)"),
             ("--flash-attn auto by default (PR #15434)" if llamacpp_fa_auto(version)
              else "flash attention off unless asked for (-fa; before PR #15434)")]
    gdn = llamacpp_gdn(version)
    parts.append({"unfused": "qwen3next/qwen35 delta nets unfused (before b8233)",
                  "chunked": "qwen3next/qwen35 prompt delta nets unfused, one token fused where its device check passes "
                             "(b8233–b8250)",
                  "probed": "qwen3next/qwen35 delta nets fused where the device check passes (b8301 to PR #27877)",
                  "fused": "qwen3next/qwen35 delta nets fused"}[gdn])
    rules = (("-np auto", NP_AUTO_BUILDS, np_auto), ("--fit", FIT_BUILDS, fit), ("the output cap", OUTPUT_CAP_BUILDS, cap),
             ("the fused prompt delta net", GDN_CHUNK_BUILDS, gdn in ("probed", "fused")),
             ("the unchecked fused delta net", GDN_PROBE_BUILDS, gdn == "fused"),
             ("--flash-attn auto", FLASH_ATTN_VALUE_BUILDS, llamacpp_fa_auto(version)))
    unsure = [(what, first) for what, (_, first), on in rules if on and build < first]
    text = f"llama.cpp {version.text}: " + ", ".join(parts)
    if unsure:
        known = ", ".join(f"b{first} has {what}" for what, first in unsure)
        text += (f" — {' and '.join(w for w, _ in unsure)} assumed: the build that brought "
                 f"{'them' if len(unsure) > 1 else 'it'} is not pinned (b{FIT_BUILDS[0]} is without -np auto and "
                 f"--fit, b{OUTPUT_CAP_BUILDS[0]} without the output cap, b{GDN_CHUNK_BUILDS[0]} without the fused prompt "
                 f"delta net, b{GDN_PROBE_BUILDS[0]} with its device check, b{FLASH_ATTN_VALUE_BUILDS[0]} without "
                 f"--flash-attn auto; {known})")
    return np_auto, fit, text


def llamacpp_gdn(version: RuntimeVersion | None) -> str:
    """The gated delta nets a build's qwen3next / qwen35 graphs use: "unfused" (b8099 and older), "chunked" (the unfused
    chunked prompt graph; one token fused where the device check passes: b8233–b8250), "probed" (both fused where the
    check passes: b8301 to b10459 at least; ggml/gdn_probe.py) or "fused" (always: the modelled build, PR #27877);
    builds between the known ones take the newer rule."""
    if version is None or version.key[0] > GDN_PROBE_BUILDS[0]:
        return "fused"
    if version.key[0] > GDN_CHUNK_BUILDS[0]:
        return "probed"
    return "chunked" if version.key[0] > GDN_AR_BUILDS[0] else "unfused"


def llamacpp_mla_cache(version: RuntimeVersion | None) -> tuple[str, str]:
    """(what a build caches of an MLA layer: "k" | "kv" | "heads" (runtimes/llamacpp_layout.MLA_CACHE_WORDS), where
    that comes from — --explain's source; "" for the current build, whose plans name no build). Builds between a
    known-without and a known-with take the newer rule and say so."""
    if version is None:
        return "k", ""
    build = version.key[0]
    if build <= MLA_LATENT_BUILDS[0]:
        return "heads", (f"llama.cpp b{build} predates PR #12801 (DeepSeek V2/V3 MLA; b{MLA_LATENT_BUILDS[0]} is "
                         "without it, issue #12817): MLA run as multi-head attention (ollama/ollama#9248's log)")
    if build <= MLA_V_LESS_BUILDS[0]:
        unsure = (f"; assumed: b{MLA_LATENT_BUILDS[1]} is the first build known to have it (ik_llama.cpp PR #394's "
                  "mainline log)") if build < MLA_LATENT_BUILDS[1] else ""
        return "kv", (f"llama.cpp b{build}: after PR #12801, before PR #19067 (V-less cache; b{MLA_V_LESS_BUILDS[0]} "
                      f"still allocates V, src/llama-kv-cache.cpp){unsure}")
    unsure = (f"; assumed: b{MLA_V_LESS_BUILDS[1]} is the first build known to have it (Ollama v0.30.0, four months "
              "after the merge)") if build < MLA_V_LESS_BUILDS[1] else ""
    return "k", f"llama.cpp b{build}: PR #19067 (V-less cache, 2026-01-24) and later{unsure}"


def ollama_mla_cache(version: RuntimeVersion | None) -> tuple[str, str]:
    """llamacpp_mla_cache for an Ollama release: by its llama-server build from v0.30.0, by its vendored llama.cpp
    before (OLLAMA_MLA_LATENT_FROM: PR #12801 vendored from v0.6.7; every vendored tree predates PR #19067)."""
    if version is None:
        return "k", ""
    build, how = ollama_llama_cpp(version)
    if build is not None:
        era, why = llamacpp_mla_cache(RuntimeVersion(f"b{build}", (build,)))
        return era, f"Ollama {version.text}, {how}: {why}"
    if version.key[:3] >= OLLAMA_MLA_LATENT_FROM:
        return "kv", (f"Ollama {version.text}, {how}: PR #12801 vendored (from v0.6.7, 2016f07bd), PR #19067 not "
                      "(v0.24.0's ec98e2002, b7437, allocates V for every layer)")
    return "heads", (f"Ollama {version.text}, {how}: before PR #12801 (v0.6.6's 71e90e881 has no n_embd_head_k_mla): "
                     "MLA run as multi-head attention (ollama/ollama#9248's log)")


def llamacpp_fa_auto(version: RuntimeVersion | None) -> bool:
    """Whether this build has --flash-attn auto as its default (PR #15434); before it flash attention was off unless -fa
    was given, so a plan that does not ask for it plans it off."""
    return version is None or version.key[0] > FLASH_ATTN_VALUE_BUILDS[0]


def llamacpp_kq_mask_f16(version: RuntimeVersion | None) -> bool:
    """Whether this build reserves the KQ mask inputs in f16 under flash attention (PR #23764), not f32 + a cast."""
    return version is None or version.key[0] > KQ_MASK_F16_BUILDS[0]


def llamacpp_output_cap(version: RuntimeVersion | None) -> bool:
    """Whether llama-server of this build reserves n_parallel × (1 + draft) output rows, not n_ubatch (PR #23861)."""
    return version is None or version.key[0] > OUTPUT_CAP_BUILDS[0]


@lru_cache(maxsize=1)
def _ollama_releases() -> tuple[tuple[tuple[int, ...], str, dict], ...]:
    """(version key, version text, record) of every mapped Ollama release, oldest first."""
    from importlib.resources import files

    doc = json.loads(files("runlocal.data").joinpath(OLLAMA_BUILDS_PATH).read_text(encoding="utf-8"))
    rows = [(tuple(int(x) for x in v.split(".")), v, r) for v, r in doc["releases"].items()]
    return tuple(sorted(rows))


def ollama_llama_cpp(version: RuntimeVersion) -> tuple[int | None, str]:
    """(llama.cpp build the release's llama-server is built from, or None before v0.30.0's llama-server; what the
    map says and where it read it). A release between mapped ones takes the one before it (a build only moves
    forward); one newer than the map, the map's last build."""
    if not version.at_least(*OLLAMA_LLAMA_SERVER_FROM):
        known = next((r for key, _, r in _ollama_releases() if key == version.key[:3]), None)
        vendored = (f"vendored llama.cpp {known['llama_cpp'][:9]} ({known['source']})" if known else
                    "a vendored llama.cpp (not in the map)")
        return None, f"its own runner over {vendored}, released before PR #23861 (2026-06-01)"
    served = [(key, v, r) for key, v, r in _ollama_releases() if r["runs"] == "llama-server"]
    before = [row for row in served if row[0] <= version.key[:3]]
    key, v, r = before[-1] if before else served[0]
    build = int(r["llama_cpp"][1:])
    if key == version.key[:3]:
        return build, f"llama-server at llama.cpp {r['llama_cpp']} ({r['source']})"
    if key == served[-1][0]:
        return build, (f"llama-server at llama.cpp {r['llama_cpp']} or later (newer than the mapped releases; "
                       f"v{v}: {r['source']})")
    return build, f"llama-server at llama.cpp {r['llama_cpp']} (not a mapped release; v{v} before it: {r['source']})"


def ollama_speed_build(version: RuntimeVersion | None) -> tuple[int, str]:
    """(the llama.cpp build whose ggml kernels this Ollama release runs, how it is known) for the speed rules gated by
    build (hardware/backend_speed.py rocm_expert_mmq, hardware/recurrent_speed.py): a llama-server release's
    LLAMA_CPP_VERSION; a vendored release's build as data/ollama_llama_cpp.json gives it (make_map.py: the sync
    commit's message, a public text, or a lower bound read from the vendored source), else the last known build
    before it (Ollama's vendored commit only moves forward), else — before every known one — the first known build,
    taken as an upper bound; the current release, the newest mapped build. ``how`` ends before the build: --explain
    prints it as "how = bNNNN"."""
    if version is None:
        return ollama_current_build(), "the newest mapped release's llama-server build"
    build, how = ollama_llama_cpp(version)
    if build is not None:
        return build, how
    rows = [r for key, _, r in _ollama_releases() if r["runs"] == "vendored" and key <= version.key[:3]]
    commit = rows[-1]["llama_cpp"][:9] if rows else "(before the map)"
    if rows and "build" in rows[-1]:
        r = rows[-1]
        if r.get("build_bound") == "at least":
            return r["build"], f"vendored llama.cpp {commit}, taken at the oldest build it can be ({r['build_source']})"
        return r["build"], f"vendored llama.cpp {commit} ({r['build_source']})"
    known = [r for r in rows if "build" in r]
    if known:
        r = known[-1]
        return r["build"], (f"vendored llama.cpp {commit}, taken at the build of {r['llama_cpp'][:9]}, vendored before "
                            f"it ({r['build_source']})")
    first = next(r for _, _, r in _ollama_releases() if "build" in r)
    return first["build"], (f"vendored llama.cpp {commit}, older than {first['llama_cpp'][:9]} ({first['build_source']}): "
                            "taken at that build, an upper bound")


def ollama_current_build() -> int:
    """The llama.cpp build the newest mapped Ollama release builds llama-server from (its LLAMA_CPP_VERSION file)."""
    return int([r for _, _, r in _ollama_releases() if r["runs"] == "llama-server"][-1]["llama_cpp"][1:])


def ollama_output_cap(version: RuntimeVersion | None) -> bool:
    """Whether this Ollama release's llama-server reserves n_parallel rows of logits (PR #23861), by its build."""
    if version is None:
        return True
    build, _ = ollama_llama_cpp(version)
    return build is not None and build > OUTPUT_CAP_BUILDS[0]


def ollama_kq_mask_f16(version: RuntimeVersion | None) -> bool:
    """Whether this Ollama release's llama-server reserves f16 KQ masks (llama.cpp PR #23764), by its build. Before
    v0.30.0 both of Ollama's runners built an f32 mask and cast it to f16 for flash attention: the vendored llama.cpp
    (ec98e2002, 2026-04) predates the PR, and the Go engine's kvcache casts its f32 mask (ollama/ollama PR #11967)."""
    if version is None:
        return True
    build, _ = ollama_llama_cpp(version)
    return build is not None and build > KQ_MASK_F16_BUILDS[0]


def ollama_gdn(version: RuntimeVersion | None) -> str:
    """The delta nets of this Ollama release's llama-server, by its build (llamacpp_gdn); releases before v0.30.0 ran
    Ollama's own runners, whose graphs runlocal plans as the modelled build's (fused)."""
    if version is None:
        return "fused"
    build, _ = ollama_llama_cpp(version)
    return "fused" if build is None else llamacpp_gdn(RuntimeVersion(f"b{build}", (build,)))


# Where each Ollama release refuses a model for system memory, all with the one message "model requires more system
# memory (%s) than is available (%s)" (free RAM + free swap; not on macOS, whose swap is dynamic), read in
# ollama/ollama llm/server.go at each tag: (first release, the function at that tag, what it compares).
OLLAMA_RAM_REFUSAL: tuple[tuple[tuple[int, ...], str], ...] = (
    ((0,), "llm/server.go NewLlamaServer (v0.2.2–v0.11.4, on Linux; 791650dde, ollama/ollama#5626): llm/memory.go's "
           "estimate, TotalSize − VRAMSize"),
    ((0, 11, 5), "llm/server.go llamaServer.Load (llama.cpp runner: llm/memory.go's estimate, TotalSize − VRAMSize) "
                 "and ollamaServer.createLayout (Go engine: the layers left off the GPUs) (v0.11.5–v0.12.6)"),
    ((0, 12, 7), "llm/server.go llamaServer.Load (llama.cpp runner: llm/memory.go's estimate, TotalSize − VRAMSize) "
                 "and ollamaServer.verifyLayout (Go engine: the layers left off the GPUs) (v0.12.7–v0.12.10)"),
    ((0, 12, 11), "llm/server.go llmServer.verifyLayout, both runners: the layers left off the GPUs (v0.12.11–v0.24)"),
)


def ollama_ram_refusal(version: RuntimeVersion | None) -> str:
    """Where this Ollama release words its system-memory refusal (the message runlocal prints for a CPU share over the
    host's RAM), or that from v0.30.0 it has none of its own (llama-server fails to allocate instead)."""
    message = '"model requires more system memory (X) than is available (Y)"'
    if version is None or version.at_least(*OLLAMA_LLAMA_SERVER_FROM):
        return (f"the refusal message is Ollama v0.12.11–v0.24's {message} (llm/server.go llmServer.verifyLayout); "
                f"{'this release' if version else 'the current release'} (v0.30+) has no such check of its own: "
                "llama-server fails to allocate instead")
    from .ollama_early import ram_refusal_where

    if early := ram_refusal_where(version.key, version.text):   # before v0.2.2: none, or server/sched.go's own
        return early
    where = [w for first, w in OLLAMA_RAM_REFUSAL if version.key >= first][-1]
    return f"the refusal message is Ollama {version.text}'s {message}: {where}, at ollama/ollama v{version.text}"


def ollama_projector_rule(version: RuntimeVersion | None) -> str:
    """Where this Ollama release puts a multimodal projector: 'fit-target' (v0.31.2+: the first GPU unless
    shouldDisableMMProjOffload says not, --fit keeping projector + 1 GiB free), 'offload-check' (v0.30.0–v0.31.1: the
    same check, --fit's own 1024 MiB), 'first-gpu' (before v0.30.0: the first GPU whenever there is one)."""
    if version is None or version.at_least(*OLLAMA_MMPROJ_FIT_TARGET_FROM):
        return "fit-target"
    return "offload-check" if version.at_least(*OLLAMA_LLAMA_SERVER_FROM) else "first-gpu"


def ollama_rules(version: RuntimeVersion | None) -> tuple[str, str]:
    """(default num_ctx rule: '2048' | '4096' | 'tiers', what the rules are) for an Ollama release."""
    if version is None:
        rc, commit, _ = OLLAMA_NEWEST_COMMIT_READ
        return "tiers", (f"the current release, as the newest commit read, v{rc} ({commit[:7]}; launched as v0.32.15, "
                         f"llama-server at b{ollama_current_build()}; later bumps not read): num_ctx by VRAM tier, "
                         "llama-server underneath with its output cap (PR #23861)")
    rule = OLLAMA_CTX_RULES[0][1]
    for first, r in OLLAMA_CTX_RULES:
        if version.key >= first:
            rule = r
    build, how = ollama_llama_cpp(version)
    cap = ollama_output_cap(version)
    text = (f"Ollama {version.text}: default num_ctx " + ("by VRAM tier (v0.15.5+)" if rule == "tiers" else rule)
            + f"; {how}: " + ("llama-server's output cap, n_parallel rows of logits in the prompt graph (PR #23861)"
                              if cap else "n_ubatch rows of logits in the prompt graph (before PR #23861)")
            + ("" if ollama_kq_mask_f16(version) else ", f32 KQ masks cast to f16 under flash attention (before "
               "llama.cpp PR #23764)")
            + (", qwen3next/qwen35 fused delta nets kept only where their device check passes (before PR #27877)"
               if ollama_gdn(version) == "probed" else ""))
    if cap and build is not None and build < OUTPUT_CAP_BUILDS[1]:
        text += (f" — assumed: the build that brought the cap is not pinned (b{OUTPUT_CAP_BUILDS[0]} is without it, "
                 f"b{OUTPUT_CAP_BUILDS[1]} has it)")
    from .ollama_early import not_checked_words, parallel_words

    text += f"; {parallel_words(version.key)}" + not_checked_words(version.key, version.text)
    if not version.at_least(*OLLAMA_LLAMA_SERVER_FROM):
        text += ("; before v0.30.0 Ollama ran its own runner, whose buffers are planned here as llama-server's "
                 "(the v0.30+ layout); a multimodal projector taken from the first GPU's free space, with no headroom of "
                 "its own")
    elif not version.at_least(*OLLAMA_MMPROJ_FIT_TARGET_FROM):
        text += "; a multimodal projector loaded after --fit, which keeps its own 1024 MiB (no fit target before v0.31.2)"
    return rule, text

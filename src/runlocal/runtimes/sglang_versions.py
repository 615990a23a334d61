"""`--runtime sglang==X`: the allocation defaults of SGLang release X, read in its PyPI wheel.

Each row below was read in ``sglang/srt/server_args.py`` (from 0.5.19 ``sglang/srt/arg_groups/memory_hook.py``) of
the wheel named in measurements/sglang_versions/wheels.txt (sha256 there); line numbers are at that release. Only
what changed between the read releases and what the planner models is here:

- mem_fraction_static, when not given (``FRACTION_RULES``):
  "tp"        ≤ 0.4.5  by TP alone: ≥ 16 0.79, ≥ 8 0.81, ≥ 4 0.85, ≥ 2 0.87, else 0.88 (0.4.4 server_args.py:204)
  "tp-13g"    0.4.6    that table up to 81,920 MiB of GPU, (GPU − 13 × 1024) / GPU above, not rounded (0.4.6 :224)
  "tp-pp"     0.4.7    the table by TP × PP up to 81,920 MiB, 0.88 above; 0.79 above 180,000 MiB (CUDA); above
                       96 × 1024 MiB min(f + 48 × 1024 × (1 − f) / GPU, (GPU − 18 × 1024) / GPU) (0.4.7 :253)
  "tiers"     0.4.8 – 0.5.2  round((GPU − reserved) / GPU, 3), reserved by GPU tier: < 35 GiB (2.8 + TP·PP/10) GiB,
                       < 90 GiB (9.5 + TP·PP/2), < 160 GiB (12 + TP·PP/2), else 32 GiB (0.4.8 :274; 0.4.9 :280)
  "activation" 0.5.3 – 0.5.9  reserved = 512 + 1.5 × max(chunked, 2048) + 2 × cuda_graph_max_bs + TP·PP/8 × 1024 MiB,
                       ≥ 10 GiB above 60 GiB (0.5.3 :639); prefill (piecewise) CUDA graphs off by default
                       (0.5.9 :604 enable_piecewise_cuda_graph = False)
  "graphs"    0.5.11 on  the same plus the prefill graphs, on by default (0.5.11 :665 disable_piecewise_cuda_graph =
                       False; :1436): 8 MiB per captured token size, 1.5 GiB with an MLA backend — from 0.5.16 as
                       reserve_for_graph_mb (runtimes/sglang.py graph_reserve_mib, the modelled rule); 0.5.13 – 0.5.16
                       clamp the captured prefill sizes to --context-length (PREFILL_GRAPHS_AT_CONTEXT); every release
                       from 0.5.11 caps them at 4096 for a model path naming "llama-2" (LLAMA2_CAP_READ), and turns
                       them off on AMD GPUs, with PP > 1 (not 0.5.16) and for MLA (0.5.16) (GRAPHS_OFF_*); from
                       0.5.16 post-capture KV sizing exists, off by default (POST_CAPTURE_ENV_READ)
  a vision model's fraction × 0.95 × clamp(1 − 0.1 × (layers × hidden² / (24 × 1024²) − 1), 0.8, 1.05) from 0.4.10
                       (VLM_FRACTION_READ), for a class multimodal at the release; 0.4.9 an unasked one × 0.90
                       (0.4.9 :329, VLM_UNASKED_0_4_9); up to 0.4.8 any fraction, asked or not, × 0.95 (0.4.4) / 0.90
                       (0.4.5 – 0.4.8) for a multimodal class (VLM_RUNNER_READ)
- chunked_prefill_size and the decode CUDA graphs' max batch size by GPU memory (``TIER_RULES``):
  "25g"       ≤ 0.4.5  < 25,000 MiB: 2048 and 8 (TP < 4) / 80; else 8192 and 160 (0.4.4 :217, :226)
  "25g-open"  0.4.6    the same, but no max batch size above 25,000 MiB: the runner's list, up to 160 (0.4.6 :241, :260)
  "25g-180"   0.4.7    chunked 16,384 above 180,000 MiB (0.4.7 :286)
  "35g"       0.4.8 – 0.5.2  chunked < 35 GiB 2048, < 160 GiB 8192, else 16,384; max bs 8 / 80 below 35 GiB, else the
                       runner's up to 160 (0.4.8 :318, :331)
  "table16"   0.5.3    the modelled table (runtimes/sglang.py gpu_memory_defaults) with < 35 GiB: 2048 and 16 / 80
                       (0.5.3 :566)
  "table24"   0.5.5 – 0.5.19  < 35 GiB: 2048 and 24 / 80 (0.5.5 :717)
  "table48"   0.5.21 on  < 35 GiB: 4096 and 48 / 160 (0.5.21 memory_hook.py:100), the modelled table
- chunked prefill turned off for a multimodal model after the fraction is set (``CHUNKED_OFF_READ``): 0.4.4 Mllama
  and Qwen2-VL by name, 0.4.5 – 0.4.6 every multimodal model, 0.4.7 on the classes is_multimodal_chunked_prefill_supported
  lists (Mllama, LLaVA-Llama, Grok-1V/1A, CLIP; MossVL from 0.5.11): a prompt is then prefilled in one pass
- unchanged over 0.4.4 – 0.5.23: the KV budget, free-before-weights × mem_fraction_static − the weights (0.4.4
  model_runner.py:633 rest_memory = available_gpu_memory − total_gpu_memory × (1 − mem_fraction_static),
  total_gpu_memory being init_torch_distributed's min_per_gpu_memory, :163); page_size 1 on CUDA (0.4.4
  server_args.py:73 ``page_size: int = 1``; from 0.5.3 None → 1, 0.5.3 :938); max_running_requests' default
  min(max(pool / context × 512, 2048), 4096) (0.4.4 model_runner.py:663).

A release not read takes the nearest read release below it and says so; one below 0.4.4 is refused naming the range.
Not switched by release (the 0.5.23 rules kept, not read per release): the hybrid SWA pool's ratio, the MLA cell, the
decode graphs' 2 MiB per batch outside the budget before 0.5.3 (no figure in those releases' code), max_req_len.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

from .versions import nearest_read
from .versions import release_text as _text

WHEELS = "measurements/sglang_versions/wheels.txt"
# every release whose wheel was read (wheels.txt)
READ: tuple[tuple[int, ...], ...] = (
    (0, 4, 4), (0, 4, 5), (0, 4, 6), (0, 4, 7), (0, 4, 8), (0, 4, 9), (0, 4, 10), (0, 5, 1), (0, 5, 2), (0, 5, 3),
    (0, 5, 5), (0, 5, 7), (0, 5, 9), (0, 5, 11), (0, 5, 13), (0, 5, 16), (0, 5, 19), (0, 5, 21), (0, 5, 23),
)
CURRENT = READ[-1]
# (first release, mem_fraction_static rule, where it is read)
FRACTION_RULES: tuple[tuple[tuple[int, ...], str, str], ...] = (
    ((0, 4, 4), "tp", "sglang 0.4.4 server_args.py:204"),
    ((0, 4, 6), "tp-13g", "sglang 0.4.6 server_args.py:224"),
    ((0, 4, 7), "tp-pp", "sglang 0.4.7 server_args.py:253"),
    ((0, 4, 8), "tiers", "sglang 0.4.8 server_args.py:274"),
    ((0, 4, 9), "tiers", "sglang 0.4.9 server_args.py:280"),
    ((0, 5, 3), "activation", "sglang 0.5.3 server_args.py:639"),
    ((0, 5, 11), "graphs", "sglang 0.5.11 server_args.py:1436"),
    ((0, 5, 16), "graphs", "arg_groups/memory_hook.py reserve_for_graph_mb (sglang 0.5.23)"),
)
# (first release, chunked prefill / decode graph table, where it is read)
TIER_RULES: tuple[tuple[tuple[int, ...], str, str], ...] = (
    ((0, 4, 4), "25g", "sglang 0.4.4 server_args.py:217, :226"),
    ((0, 4, 6), "25g-open", "sglang 0.4.6 server_args.py:241, :260"),
    ((0, 4, 7), "25g-180", "sglang 0.4.7 server_args.py:286, :315"),
    ((0, 4, 8), "35g", "sglang 0.4.8 server_args.py:318, :331"),
    ((0, 4, 9), "35g", "sglang 0.4.9 server_args.py:332, :345"),
    ((0, 5, 3), "table16", "sglang 0.5.3 server_args.py:566"),
    ((0, 5, 5), "table24", "sglang 0.5.5 server_args.py:717"),
    ((0, 5, 21), "table48", "sglang 0.5.21 arg_groups/memory_hook.py:100"),
)
# Releases whose prefill CUDA graphs stop at the asked --context-length: "Clamp to context_length if explicitly set —
# prevents PCG warmup from compiling graphs with more tokens than the model buffers can hold" (sgl-project/sglang
# #21112): piecewise_cuda_graph_max_tokens = min(…, context_length) at 0.5.13 server_args.py:1582, the prefill
# cuda_graph_config max_bs at 0.5.16 :4042; not in 0.5.11 (:1407-1432) nor 0.5.19 (arg_groups/memory_hook.py:185-222,
# no context_length there). (first release with it, first read release without it)
PREFILL_GRAPHS_AT_CONTEXT = ((0, 5, 13), (0, 5, 19))
# A --model-path naming "llama-2" (model_path.lower(), a substring test: meta-llama/Llama-2-7b-hf and
# togethercomputer/LLaMA-2-7B-32K match, CodeLlama does not) caps the prefill CUDA graphs' largest size at 4096: "For
# Llama2 series models, the max tokens is limited to 4096 / TODO(yuwei): remove this after the issue is fixed", in
# every read release that captures prefill graphs by default (where read, by first read release holding that line):
LLAMA2_PREFILL_CAP = 4096
LLAMA2_CAP_READ: tuple[tuple[tuple[int, ...], str], ...] = (
    ((0, 5, 11), "server_args.py:1424"), ((0, 5, 13), "server_args.py:1574"), ((0, 5, 16), "server_args.py:4034"),
    ((0, 5, 19), "arg_groups/memory_hook.py:214"), ((0, 5, 21), "arg_groups/memory_hook.py:253"),
    ((0, 5, 23), "arg_groups/memory_hook.py:260"),
)
# Where the server turns the prefill CUDA graphs off by itself (then no prefill graph reserve, reserve_for_graph_mb /
# the piecewise term), by read release:
# - an AMD (ROCm) GPU, every release: 0.5.11 server_args.py:1214, 0.5.13 :1362 (`is_hip() or …`: piecewise off); 0.5.16
#   :3705, 0.5.19 arg_groups/cuda_graph_hook.py:185, 0.5.21 :193 (the non-CUDA default backend tc_piecewise, off for
#   "non-CUDA hardware (HIP/NPU/CPU/MPS/XPU)"); 0.5.23 model_executor/cuda_graph_config.py:123 (DISABLED off CUDA)
# - pipeline parallelism (pp_size > 1): 0.5.11 :1211, 0.5.13 :1359 (piecewise off); not 0.5.16 (the breakable
#   backend's rules, server_args.py:3772-3805, have no PP rule); 0.5.19 cuda_graph_hook.py:124, 0.5.21 :132, 0.5.23
#   :152 ("Disabling breakable prefill CUDA graph by default for pipeline parallelism")
# - an MLA model: 0.5.16 only (:3774 ("MLA attention", lambda: self.use_mla_backend()) among breakable's rules); 0.5.11
#   / 0.5.13 keep piecewise graphs for MLA (2048 tokens, 1.5 GiB), 0.5.19 – 0.5.23's breakable rules have no MLA rule
# - a multimodal model, a piecewise-blacklisted architecture: PREFILL_ARCH_RULES below.
# - LoRA (--enable-lora / --lora-paths) and DP attention (--enable-dp-attention) turn them off in 0.5.11 (:1225 / :1205),
#   0.5.13 (:1371 / :1353), 0.5.16 (both backends: :3716 / :3700, :3792 / :3799) and under the tc_piecewise backend of
#   0.5.19 – 0.5.21 (cuda_graph_hook.py:203 / :181, :215 / :189); not under 0.5.19 – 0.5.23's default breakable backend
#   (its rules have neither: "breakable/full support LoRA", 0.5.19 cuda_graph_hook.py:201). Not modelled: runlocal's
#   SGLang plans take neither (--enable-lora is vLLM's option, refused for SGLang by name; no DP-attention option).
# Not modelled either: MoE all-to-all backends, DeepSeek-V4 / KDA models (no catalog model), torch.compile, the
#   config-sub-config half of is_multimodal (a config.json with a text_config whose class is not listed: no catalog
#   model, every catalog multimodal class is in every read release's multimodal_model_archs).
# A vision-language model's mem_fraction_static, when not given, times 0.95 × clamp(1 − 0.1 × (layers × hidden² /
# (24 × 1024²) − 1), 0.8, 1.05) ("roughly reduce the mem_fraction_static base on params of Vit", baseline ViT-L/14):
# adjust_mem_fraction_for_vlm, from 0.4.10 (absent in 0.4.8), the same constants in every read release, applied
# where configs/model_config.py's is_multimodal holds (the class in multimodal_model_archs, not in mm_disabled_models:
# data/sglang_prefill_graph_archs.json) and hf_config has a vision_config; not rounded afterwards. layers / hidden are
# getattr(vision_config, "num_hidden_layers", 24) / getattr(…, "hidden_size", 1024): the Qwen-VL / Qwen3.5 vision
# configs name their layer count "depth", and no transformers release a read SGLang pins (4.54.1 – 5.19.0, wheels'
# Requires-Dist) aliases num_hidden_layers to it (attribute_map: only num_attention_heads → num_heads in 5.19.0;
# num_hidden_layers → depth first seen in 5.23.0), nor do SGLang's own Qwen3-VL / Qwen3.5 configs (configs/qwen3_vl.py
# Qwen3VLVisionConfig sets self.depth only): so those read 24 layers. From 0.5.21 the post-capture KV sizing opt-in
# takes 8 GiB / GPU instead (not modelled: off by default). (first read release, where the function is)
VLM_FRACTION_READ: tuple[tuple[tuple[int, ...], str], ...] = (
    ((0, 4, 10), "server_args.py:1946"), ((0, 5, 1), "server_args.py:2297"), ((0, 5, 2), "server_args.py:2513"),
    ((0, 5, 3), "server_args.py:3105"), ((0, 5, 5), "server_args.py:3929"), ((0, 5, 7), "server_args.py:4877"),
    ((0, 5, 9), "server_args.py:5483"), ((0, 5, 11), "server_args.py:7137"), ((0, 5, 13), "server_args.py:7774"),
    ((0, 5, 16), "server_args.py:7954"), ((0, 5, 19), "arg_groups/memory_hook.py:352"),
    ((0, 5, 21), "arg_groups/memory_hook.py:410"), ((0, 5, 23), "arg_groups/memory_hook.py:417"),
)
# Before it, ModelRunner.__init__ multiplied mem_fraction_static by a fixed factor for every multimodal model,
# asked or not ("Automatically reduce --mem-fraction-static to … because this is a multimodal model"; sgl-project/
# sglang PR #6881: "multiplied with a fixed factor F(0.9) for multimodal models"), up to 0.4.8; 0.4.9 moved the × 0.90
# into ServerArgs.__post_init__, inside `if self.mem_fraction_static is None` (VLM_UNASKED_0_4_9): an unasked
# fraction only, as the rule from 0.4.10 (its wheel read for review23 finding 8; the rest of its server_args.py
# memory rules are 0.4.8's, line for line). (first read release, factor, where)
VLM_RUNNER_READ: tuple[tuple[tuple[int, ...], float, str], ...] = (
    ((0, 4, 4), 0.95, "model_executor/model_runner.py:243"), ((0, 4, 5), 0.90, "model_executor/model_runner.py:274"),
    ((0, 4, 6), 0.90, "model_executor/model_runner.py:308"), ((0, 4, 7), 0.90, "model_executor/model_runner.py:402"),
    ((0, 4, 8), 0.90, "model_executor/model_runner.py:415"),
)
VLM_RUNNER_UNTIL = (0, 4, 9)        # 0.4.9's model_runner.py has no such line (server_args' rule instead)
VLM_UNASKED_0_4_9 = ((0, 4, 9), 0.90, "server_args.py:329")     # until VLM_FRACTION_READ's first release
VLM_BASE_FACTOR = 0.95
VLM_BASELINE = (24, 1024)           # ViT-L/14: the getattr defaults and the complexity baseline


def vlm_factor(layers: int, hidden: int) -> float:
    """adjust_mem_fraction_for_vlm's final_overall_factor for a vision tower of ``layers`` × ``hidden``."""
    ratio = layers * hidden ** 2 / (VLM_BASELINE[0] * VLM_BASELINE[1] ** 2)
    return VLM_BASE_FACTOR * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


GRAPHS_OFF_AMD: dict[tuple[int, ...], str] = {
    (0, 5, 11): "server_args.py:1214", (0, 5, 13): "server_args.py:1362", (0, 5, 16): "server_args.py:3705",
    (0, 5, 19): "arg_groups/cuda_graph_hook.py:185", (0, 5, 21): "arg_groups/cuda_graph_hook.py:193",
    (0, 5, 23): "model_executor/cuda_graph_config.py:123",
}
GRAPHS_OFF_PP: dict[tuple[int, ...], str] = {
    (0, 5, 11): "server_args.py:1211", (0, 5, 13): "server_args.py:1359", (0, 5, 19): "arg_groups/cuda_graph_hook.py:124",
    (0, 5, 21): "arg_groups/cuda_graph_hook.py:132", (0, 5, 23): "arg_groups/cuda_graph_hook.py:152",
}
GRAPHS_OFF_MLA: dict[tuple[int, ...], str] = {(0, 5, 16): "server_args.py:3774"}
# Which backend captures the prefill graphs, and its model rules, by release (configs/model_config.py's class lists in
# data/sglang_prefill_graph_archs.json, read by measurements/sglang_versions/read_prefill_graph_archs.py). A model is
# multimodal to SGLang when config.json's architectures[0] is in multimodal_model_archs and not in mm_disabled_models
# (Gemma3ForConditionalGeneration, Llama4ForConditionalGeneration …: "Multimodal is disabled for … To enable it, set
# --enable-multimodal", 0.5.11 model_config.py:186).
# - 0.5.11 / 0.5.13: the piecewise backend: off for a multimodal model ("# 8. Multimodal / VLM models") and for a
#   blacklisted class (piecewise_cuda_graph_disabled_model_archs: Qwen3NextForCausalLM …, "# 1. Disable Model Arch").
# - 0.5.16 – 0.5.21: the breakable backend on CUDA; a multimodal class on multimodal_piecewise_cuda_graph_supported_
#   model_archs moves to tc_piecewise (0.5.19 – 0.5.21: unless also on the breakable allowlist). tc_piecewise: off for a
#   blacklisted class or a multimodal one not on its allowlist; breakable: off for a multimodal class not on
#   multimodal_breakable_cuda_graph_supported_model_archs ("Breakable CUDA graph is incompatible with multimodal model;
#   disabling prefill CUDA graph.") — Qwen3.5 is on it from 0.5.16, Qwen2.5-VL / Qwen3-VL / Gemma 4 / Mistral 3 are not.
# - 0.5.23: breakable only (tc_piecewise removed): off for a multimodal class not on the breakable allowlist.
# (release) → {rule: where read}; "to_piecewise": the allowlist switch; "pp_piecewise": tc_piecewise's PP rule where
# GRAPHS_OFF_PP has no row
PREFILL_ARCH_RULES: dict[tuple[int, ...], dict[str, str]] = {
    (0, 5, 11): {"mm_piecewise": "server_args.py:1228", "blacklist": "server_args.py:1202"},
    (0, 5, 13): {"mm_piecewise": "server_args.py:1374", "blacklist": "server_args.py:1350"},
    (0, 5, 16): {"to_piecewise": "server_args.py:3665", "blacklist": "server_args.py:3697",
                 "pp_piecewise": "server_args.py:3702", "mm_piecewise": "server_args.py:3718",
                 "mm_breakable": "server_args.py:3802"},
    (0, 5, 19): {"to_piecewise": "arg_groups/cuda_graph_hook.py:142", "blacklist": "arg_groups/cuda_graph_hook.py:178",
                 "mm_piecewise": "arg_groups/cuda_graph_hook.py:205", "mm_breakable": "arg_groups/cuda_graph_hook.py:302"},
    (0, 5, 21): {"to_piecewise": "arg_groups/cuda_graph_hook.py:150", "blacklist": "arg_groups/cuda_graph_hook.py:186",
                 "mm_piecewise": "arg_groups/cuda_graph_hook.py:217", "mm_breakable": "arg_groups/cuda_graph_hook.py:328"},
    (0, 5, 23): {"mm_breakable": "arg_groups/cuda_graph_hook.py:231"},
}
ARCHS_DATA = "sglang_prefill_graph_archs.json"
# Post-capture KV sizing (measure the memory free after CUDA-graph capture and resize the KV pool to it,
# model_runner_components/kv_pool_runtime.py compute_post_capture_kv_resize; the fraction then reserves only 512 MiB
# (0.5.16 server_args.py:4058) / 1536 MiB (0.5.19 arg_groups/memory_hook.py:235) + TP·PP/8 GiB): absent from 0.5.13's
# wheel, in 0.5.16's on, and off by default in every read release — SGLANG_ENABLE_POST_CAPTURE_KV_SIZING =
# EnvBool(False). So the pool is sized before capture by the reserve above, as modelled. The opt-in is not modelled
# (session 22, read in 0.5.23): post_capture_kv_sizing_planned (arg_groups/overrides.py:1791) turns it down on a non-CUDA
# device, for an MLA backend, with decode context parallelism or the memory saver; where on, the fraction reserves 1536
# MiB + TP·PP/8 GiB (a VLM: − 8 GiB / GPU, memory_hook.py adjust_mem_fraction_for_vlm) and after capture
# compute_post_capture_kv_resize (model_executor/model_runner_components/kv_pool_runtime.py:59) resizes the pool to the
# free memory measured then (get_available_gpu_memory), less pre_model_load_memory × (1 − mem_fraction_static), the sampling
# warm-up's headroom and a multimodal reservation — i.e. to what the captured graphs actually left, which no release's
# code states (a measured figure is needed), and runlocal has no option for the environment variable (SGLangOptions /
# the registry's options: runtimes/options.py, a CODE_MODULES module).
POST_CAPTURE_ENV_READ: tuple[tuple[tuple[int, ...], str], ...] = (
    ((0, 5, 16), "environ.py:337"), ((0, 5, 19), "environ.py:554"), ((0, 5, 21), "environ.py:590"),
    ((0, 5, 23), "environ.py:640"),
)
# Chunked prefill turned off (chunked_prefill_size = -1) for a multimodal model (is_multimodal, as above), by read
# release; the scheduler then reads None ("Without chunking, allow the first request even above the input cap",
# 0.5.23 managers/schedule_policy.py:1626), so a prompt is prefilled in one pass of up to max(max_prefill_tokens,
# --context-length) tokens ("The real bound will be the maximum of this value and the model's maximum context length",
# 0.5.23 arg_groups/fields/schedule.py:71). In every read release it runs after mem_fraction_static was set from the GPU
# tier's chunk (0.4.4 – 0.5.13 in ModelRunner, after ServerArgs; 0.5.16 server_args.py __post_init__ calls
# _handle_gpu_memory_settings before _handle_model_capability_adjustments; 0.5.19 – 0.5.23 arg_groups/pipeline.py runs
# handle_gpu_memory_settings (0.5.23 :218) before handle_model_capability_adjustments (:352)), so the fraction is the
# tier's and only the prefill pass grows. Rules: "names" — 0.4.4, hf_config.architectures == [X] for X in
# CHUNKED_OFF_BY_NAME; "multimodal" — 0.4.5 / 0.4.6, every multimodal model ("Automatically turn off
# --chunked-prefill-size for multimodal model."); "unsupported" — 0.4.7 on, a class on configs/model_config.py
# is_multimodal_chunked_prefill_supported's list (CHUNKED_PREFILL_UNSUPPORTED, the second line cited).
# (first read release, rule, where)
CHUNKED_OFF_READ: tuple[tuple[tuple[int, ...], str, str], ...] = (
    ((0, 4, 4), "names", "model_executor/model_runner.py:253, :262"),
    ((0, 4, 5), "multimodal", "model_executor/model_runner.py:283"),
    ((0, 4, 6), "multimodal", "model_executor/model_runner.py:316"),
    ((0, 4, 7), "unsupported", "model_executor/model_runner.py:408, configs/model_config.py:610"),
    ((0, 4, 8), "unsupported", "model_executor/model_runner.py:421, configs/model_config.py:616"),
    ((0, 4, 9), "unsupported", "model_executor/model_runner.py:455, configs/model_config.py:632"),
    ((0, 4, 10), "unsupported", "model_executor/model_runner.py:478, configs/model_config.py:679"),
    ((0, 5, 1), "unsupported", "model_executor/model_runner.py:514, configs/model_config.py:731"),
    ((0, 5, 2), "unsupported", "model_executor/model_runner.py:545, configs/model_config.py:761"),
    ((0, 5, 3), "unsupported", "model_executor/model_runner.py:588, configs/model_config.py:843"),
    ((0, 5, 5), "unsupported", "model_executor/model_runner.py:523, configs/model_config.py:978"),
    ((0, 5, 7), "unsupported", "model_executor/model_runner.py:643, configs/model_config.py:1126"),
    ((0, 5, 9), "unsupported", "model_executor/model_runner.py:679, configs/model_config.py:1299"),
    ((0, 5, 11), "unsupported", "model_executor/model_runner.py:1049, configs/model_config.py:1489"),
    ((0, 5, 13), "unsupported", "model_executor/model_runner.py:1032, configs/model_config.py:1622"),
    ((0, 5, 16), "unsupported", "server_args.py:3124, configs/model_config.py:1825"),
    ((0, 5, 19), "unsupported", "arg_groups/model_hook.py:800, configs/model_config.py:2031"),
    ((0, 5, 21), "unsupported", "arg_groups/model_hook.py:928, configs/model_config.py:2356"),
    ((0, 5, 23), "unsupported", "arg_groups/model_hook.py:1031, configs/model_config.py:2553"),
)
CHUNKED_OFF_BY_NAME = ("MllamaForConditionalGeneration", "Qwen2VLForConditionalGeneration")      # 0.4.4
CHUNKED_PREFILL_UNSUPPORTED = ("Grok1VForCausalLM", "Grok1AForCausalLM", "LlavaLlamaForCausalLM",
                               "MllamaForConditionalGeneration", "CLIPModel")     # 0.4.7 – 0.5.9
CHUNKED_PREFILL_UNSUPPORTED_FROM_0_5_11 = ("MossVLForConditionalGeneration",)     # added by 0.5.11 (absent in 0.5.9)
RUNNER_MAX_BS = 160   # cuda_graph_runner.py's own capture list ends at 160 when cuda_graph_max_bs is unset (0.4.8 :145)
TP_TABLE = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))   # 0.4.4 server_args.py:205-214


@dataclass(frozen=True)
class SGLangRules:
    """The rules of one read release: what mem_fraction_static and the GPU-memory table do, and where that is read."""

    release: tuple[int, ...]        # the read release whose rules apply
    fraction: str                   # FRACTION_RULES' name
    fraction_source: str
    tiers: str                      # TIER_RULES' name
    tiers_source: str
    note: str = ""                  # the release asked when it is not one read

    @property
    def prefill_graphs(self) -> bool:
        """Prefill (piecewise / breakable) CUDA graphs captured by default: from 0.5.11."""
        return self.fraction == "graphs"

    @property
    def prefill_graphs_capped_at_context(self) -> bool:
        """The prefill graphs' largest token size clamped to --context-length (PREFILL_GRAPHS_AT_CONTEXT)."""
        return self.prefill_graphs and PREFILL_GRAPHS_AT_CONTEXT[0] <= self.release < PREFILL_GRAPHS_AT_CONTEXT[1]

    @property
    def llama2_cap_source(self) -> str | None:
        """Where this release caps a "llama-2" model path's prefill graphs at 4096 (LLAMA2_CAP_READ); None: no prefill
        graphs by default, so no cap to apply."""
        if not self.prefill_graphs:
            return None
        return f"sglang {_text(self.release)} " + [src for first, src in LLAMA2_CAP_READ if self.release >= first][-1]

    def prefill_graphs_off(self, amd: bool, pp: int, mla: bool, architecture: str = "") -> str | None:
        """Why this release captures no prefill graphs here though it does by default (GRAPHS_OFF_*,
        PREFILL_ARCH_RULES for the model's class ``architecture``), or None."""
        if not self.prefill_graphs:
            return None
        if amd and (where := GRAPHS_OFF_AMD.get(self.release)):
            return f"an AMD (ROCm) GPU: {self.ref} {where}"
        rules, lists = PREFILL_ARCH_RULES.get(self.release, {}), arch_lists(self.release)
        mm = self.multimodal(architecture)
        pw_ok = mm and architecture in lists["multimodal_piecewise_cuda_graph_supported_model_archs"]
        bcg_ok = mm and architecture in lists["multimodal_breakable_cuda_graph_supported_model_archs"]
        piecewise = "mm_breakable" not in rules or ("to_piecewise" in rules and pw_ok
                                                    and (self.release < (0, 5, 19) or not bcg_ok))
        switched = f" (moved to tc_piecewise, {self.ref} {rules['to_piecewise']})" if piecewise and "to_piecewise" in \
            rules else ""
        if pp > 1 and (where := GRAPHS_OFF_PP.get(self.release)):     # before any backend switch
            return f"pp_size > 1: {self.ref} {where}"
        if pp > 1 and piecewise and (where := rules.get("pp_piecewise")):
            return f"pp_size > 1: {self.ref} {where}{switched}"
        if not piecewise and mla and (where := GRAPHS_OFF_MLA.get(self.release)):
            return f"an MLA model: {self.ref} {where}"
        if piecewise and architecture in lists["piecewise_cuda_graph_disabled_model_archs"]:
            return f"{architecture} on the piecewise blacklist: {self.ref} {rules['blacklist']}{switched}"
        if mm and not (pw_ok if piecewise else bcg_ok):
            return (f"a multimodal model ({architecture}): {self.ref} "
                    f"{rules['mm_piecewise' if piecewise else 'mm_breakable']}{switched}")
        return None

    def multimodal(self, architecture: str) -> bool:
        """configs/model_config.py is_multimodal at this release (the class listed, not in mm_disabled_models)."""
        lists = arch_lists(self.release)
        return architecture in lists["multimodal_model_archs"] and architecture not in lists["mm_disabled_models"]

    def vlm_runner_factor(self, architecture: str) -> tuple[float, str] | None:
        """(factor, where) ModelRunner multiplies any mem_fraction_static by for a multimodal class, up to 0.4.8."""
        rows = [(f, src) for first, f, src in VLM_RUNNER_READ if self.release >= first]
        if not rows or self.release >= VLM_RUNNER_UNTIL or not self.multimodal(architecture):
            return None
        return rows[-1][0], f"{self.ref} {rows[-1][1]}"

    def vlm_unasked_factor(self, architecture: str) -> tuple[float, str] | None:
        """(factor, where) 0.4.9's ServerArgs multiplies an unasked mem_fraction_static by for a multimodal class
        (VLM_UNASKED_0_4_9), or None: another release, a class not multimodal there."""
        first, factor, src = VLM_UNASKED_0_4_9
        if not first <= self.release < VLM_FRACTION_READ[0][0] or not self.multimodal(architecture):
            return None
        return factor, f"{self.ref} {src}"

    def vlm_fraction_source(self, architecture: str) -> str | None:
        """Where this release lowers mem_fraction_static for a multimodal class (VLM_FRACTION_READ), or None."""
        rows = [src for first, src in VLM_FRACTION_READ if self.release >= first]
        if not rows or not self.multimodal(architecture):
            return None
        return f"{self.ref} {rows[-1]} adjust_mem_fraction_for_vlm"

    def chunked_prefill_off(self, architecture: str) -> str | None:
        """Where this release turns chunked prefill off for the model class ``architecture`` (CHUNKED_OFF_READ), or
        None: chunked prefill stays on at the GPU tier's (or the asked) size."""
        rows = [(rule, src) for first, rule, src in CHUNKED_OFF_READ if self.release >= first]
        if not rows or not self.multimodal(architecture):
            return None
        rule, src = rows[-1]
        unsupported = CHUNKED_PREFILL_UNSUPPORTED + (CHUNKED_PREFILL_UNSUPPORTED_FROM_0_5_11
                                                     if self.release >= (0, 5, 11) else ())
        off = (architecture in CHUNKED_OFF_BY_NAME if rule == "names" else
               True if rule == "multimodal" else architecture in unsupported)
        return f"{self.ref} {src}" if off else None

    @property
    def post_capture_source(self) -> str | None:
        """Where this release sets post-capture KV sizing off by default (POST_CAPTURE_ENV_READ); None before it."""
        rows = [src for first, src in POST_CAPTURE_ENV_READ if self.release >= first]
        return f"sglang {_text(self.release)} {rows[-1]}" if rows else None

    @property
    def ref(self) -> str:
        return f"sglang {_text(self.release)}"

    @property
    def release_text(self) -> str:
        return _text(self.release)

    def words(self) -> str:
        """What the plan says about the rules it used."""
        graphs = ("decode and prefill CUDA graphs reserved (no prefill ones where the server turns them off: AMD, PP, "
                  "multimodal … by release)" if self.prefill_graphs
                  else "decode CUDA graphs only (prefill graphs off by default before 0.5.11)")
        if self.llama2_cap_source:
            graphs += f" (up to {LLAMA2_PREFILL_CAP} tokens for a model path naming 'llama-2', {self.llama2_cap_source})"
        text = (f"SGLang {_text(self.release)}: mem_fraction_static by the {self.fraction!r} rule ({self.fraction_source}), "
                f"chunked prefill / graph batch by the {self.tiers!r} table ({self.tiers_source}); {graphs}; page_size 1")
        if self.post_capture_source:
            text += (f"; KV pool sized before graph capture: post-capture sizing off by default "
                     f"(SGLANG_ENABLE_POST_CAPTURE_KV_SIZING False, {self.post_capture_source}; the opt-in not modelled)")
        return text + (f" — {self.note}" if self.note else "")


@cache
def arch_lists(release: tuple[int, ...]) -> dict[str, frozenset[str]]:
    """The class lists of configs/model_config.py at a read release from 0.4.10 (data/sglang_prefill_graph_archs.json);
    a list the release does not have is empty."""
    table = json.loads(resources.files("runlocal.data").joinpath(ARCHS_DATA).read_text(encoding="utf-8"))
    row = table["releases"].get(_text(release), {})
    names = ("multimodal_model_archs", "mm_disabled_models", "piecewise_cuda_graph_disabled_model_archs",
             "multimodal_piecewise_cuda_graph_supported_model_archs",
             "multimodal_breakable_cuda_graph_supported_model_archs")
    return {name: frozenset(row.get(name, {}).get("archs", ())) for name in names}


def _row(rows: tuple[tuple[tuple[int, ...], str, str], ...], key: tuple[int, ...]) -> tuple[str, str]:
    return [(name, src) for first, name, src in rows if key >= first][-1][:2]


@lru_cache(maxsize=64)  # ~125 calls per SGLang plan (grid22's profile); the answer is frozen, an InputError not kept
def sglang_rules(key: tuple[int, ...] | None, asked: str = "") -> SGLangRules:
    """The rules of release ``key`` (None: the current, 0.5.23). Not a read release: the nearest read one below, said
    in ``note``; below 0.4.4: InputError naming the read range."""
    release, note = nearest_read(key, READ, asked, "sglang", "SGLang", "sglang", WHEELS)
    fraction, fraction_source = _row(FRACTION_RULES, release)
    tiers, tiers_source = _row(TIER_RULES, release)
    return SGLangRules(release, fraction, fraction_source, tiers, tiers_source, note)


def tier_defaults(rules: SGLangRules, gpu_mem_mib: float, tp: int, modelled: tuple[int, int]) -> tuple[int, int]:
    """(chunked_prefill_size, decode CUDA-graph max batch size) by GPU memory at this release; ``modelled``: the
    current table's pair for this GPU (runtimes/sglang.py gpu_memory_defaults), which 0.5.3 on differ from only
    below 35 GiB."""
    small = gpu_mem_mib < 35 * 1024
    if rules.tiers.startswith("table"):
        if rules.tiers == "table48" or not 20 * 1024 <= gpu_mem_mib < 35 * 1024:
            return modelled
        return 2048, (16 if rules.tiers == "table16" else 24) if tp < 4 else 80
    if rules.tiers == "35g":
        chunked = 2048 if small else 8192 if gpu_mem_mib < 160 * 1024 else 16384
        return chunked, (8 if tp < 4 else 80) if small else RUNNER_MAX_BS
    low = gpu_mem_mib < 25_000
    chunked = 2048 if low else 16384 if rules.tiers == "25g-180" and gpu_mem_mib > 180_000 else 8192
    return chunked, (8 if tp < 4 else 80) if low else RUNNER_MAX_BS


def tp_table(parallel: int) -> float:
    """0.4.4 server_args.py:205-214: mem_fraction_static by the parallel size."""
    return next(frac for at_least, frac in TP_TABLE if parallel >= at_least)


def old_fraction(rules: SGLangRules, gpu_mem_mib: float, tp: int, pp: int) -> tuple[float, str]:
    """mem_fraction_static before 0.5.3 (rules "tp", "tp-13g", "tp-pp", "tiers"), and the formula --explain shows."""
    g = gpu_mem_mib
    if rules.fraction == "tp":
        return tp_table(tp), f"by TP {tp}: ≥ 16 0.79, ≥ 8 0.81, ≥ 4 0.85, ≥ 2 0.87, else 0.88"
    if rules.fraction == "tp-13g":
        if g <= 81920:
            return tp_table(tp), f"GPU ≤ 81,920 MiB: by TP {tp} (0.79 … 0.88)"
        return (g - 13 * 1024) / g, f"(GPU {g:,.0f} − 13,312 MiB) / GPU"
    if rules.fraction == "tp-pp":
        f = tp_table(tp * pp) if g <= 81920 else 0.88
        if g > 180_000:
            return 0.79, f"GPU {g:,.0f} MiB above 180,000 (CUDA): 0.79"
        if g > 96 * 1024:
            return (min(f + 48 * 1024 * (1 - f) / g, (g - 18 * 1024) / g),
                    f"min({f} + 48 GiB × (1 − {f}) / GPU, (GPU − 18 GiB) / GPU), GPU {g:,.0f} MiB")
        return f, f"by TP·PP {tp * pp}: ≥ 16 0.79, ≥ 8 0.81, ≥ 4 0.85, ≥ 2 0.87, else 0.88" + (
            "" if g <= 81920 else " (0.88 above 81,920 MiB)")
    p = tp * pp
    reserved, tier = ((2.8 + p / 10) * 1024, "< 35 GiB: (2.8 + TP·PP/10) GiB") if g < 35 * 1024 else \
        ((9.5 + p / 2) * 1024, "< 90 GiB: (9.5 + TP·PP/2) GiB") if g < 90 * 1024 else \
        ((12 + p / 2) * 1024, "< 160 GiB: (12 + TP·PP/2) GiB") if g < 160 * 1024 else (32 * 1024, "≥ 160 GiB: 32 GiB")
    return round((g - reserved) / g, 3), f"(GPU {g:,.0f} MiB − reserved {reserved:,.0f} MiB) / GPU; reserved {tier}"


__all__ = ["CURRENT", "FRACTION_RULES", "LLAMA2_PREFILL_CAP", "READ", "TIER_RULES", "SGLangRules", "old_fraction", "sglang_rules",
           "tier_defaults", "tp_table", "vlm_factor"]

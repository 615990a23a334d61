"""SGLang turns its prefill CUDA graphs off by itself for a multimodal model and, under the piecewise backend, for a
blacklisted class; then mem_fraction_static reserves no prefill-graph memory (reserve_for_graph_mb / the piecewise
term). Each expected figure is worked by hand from the wheel's own code, quoted with file:line at that release
(measurements/sglang_versions/wheels.txt); none is copied from runlocal."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.request import CheckRequest
from runlocal.runtimes.sglang import default_mem_fraction_static, gpu_memory_defaults
from runlocal.runtimes.sglang_versions import arch_lists, sglang_rules, tier_defaults

H100 = 81_559           # MiB, nvidia-smi memory.total
# By hand on an H100 at TP 1 (every release from 0.5.3: chunked 8192, decode max bs 256 below 90 GiB):
#   reserved without prefill graphs = 512 + 1.5 × 8192 + 1 × 1 / 8 × 1024 + 2 × 256 = 13,440 MiB (above 10 GiB)
#   the prefill sizes up to 8192 (range(4, 33, 4) + range(48, 257, 16) + range(288, 513, 32) + range(576, 1025, 64)
#   + range(1280, 4097, 256) + range(4608, 8193, 512)) = 8 + 14 + 8 + 8 + 12 + 8 = 58, 8 MiB each: + 464 = 13,904
#   an MLA backend's prefill graphs: a flat 1.5 GiB: 13,440 + 1,536 = 14,976
WITHOUT = round((H100 - 13_440) / H100, 3)       # 0.835
WITH = round((H100 - 13_904) / H100, 3)          # 0.830
WITH_MLA = round((H100 - 14_976) / H100, 3)      # 0.816


def _fraction(release: str | None, architecture: str, mla: bool = False, pp: int = 1) -> float:
    rules = sglang_rules(tuple(int(x) for x in release.split(".")), release) if release else None
    chunked, bs = tier_defaults(rules, H100, 1, gpu_memory_defaults(H100, 1)) if rules else gpu_memory_defaults(H100, 1)
    assert (chunked, bs) == (8192, 256)
    return default_mem_fraction_static(H100, chunked, bs, 1, pp, mla, rules, 32768, "", False, architecture)


def test_hand_figures():
    assert len([*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
                *range(1280, 4097, 256), *range(4608, 8193, 512)]) == 58
    assert (WITHOUT, WITH, WITH_MLA) == (0.835, 0.830, 0.816)


def test_the_class_lists_read_match_the_quoted_source():
    """Lines quoted from configs/model_config.py of the wheels:
    0.5.11 :186 `mm_disabled_models = ["Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration",
    "Step3VLForConditionalGeneration"]`; :1446 `piecewise_cuda_graph_disabled_model_archs = ["DeepseekV32ForCausalLM",
    "Qwen3NextForCausalLM", …]`; 0.5.16 :1785 `multimodal_breakable_cuda_graph_supported_model_archs =
    ["Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"]`; 0.5.16 :1776 the piecewise allowlist
    starts "Cohere2VisionForConditionalGeneration", which 0.5.19 :1985 moves to the breakable allowlist."""
    lists = arch_lists((0, 5, 11))
    assert lists["mm_disabled_models"] == {"Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration",
                                           "Step3VLForConditionalGeneration"}
    assert "Qwen3NextForCausalLM" in lists["piecewise_cuda_graph_disabled_model_archs"]
    assert not lists["multimodal_breakable_cuda_graph_supported_model_archs"]          # no allowlists before 0.5.16
    assert arch_lists((0, 5, 16))["multimodal_breakable_cuda_graph_supported_model_archs"] == {
        "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"}
    assert "Cohere2VisionForConditionalGeneration" in \
        arch_lists((0, 5, 16))["multimodal_piecewise_cuda_graph_supported_model_archs"]
    assert "Cohere2VisionForConditionalGeneration" not in \
        arch_lists((0, 5, 19))["multimodal_piecewise_cuda_graph_supported_model_archs"]
    for release in ((0, 5, 11), (0, 5, 23)):     # the catalog's vision classes are multimodal to every read release
        assert {"Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration", "Gemma4ForConditionalGeneration",
                "Mistral3ForConditionalGeneration", "Qwen3_5ForConditionalGeneration"} <= \
            arch_lists(release)["multimodal_model_archs"]


@pytest.mark.parametrize("release, architecture, graphs", [
    # 0.5.11 server_args.py:1228-1230 "# 8. Multimodal / VLM models / if self.get_model_config().is_multimodal:
    # self.disable_piecewise_cuda_graph = True" (0.5.13 :1374): every multimodal class, Qwen3.5 included
    ("0.5.11", "Qwen3VLForConditionalGeneration", False), ("0.5.13", "Qwen3_5ForConditionalGeneration", False),
    # … but not Gemma 3: `enable_multimodal` stays False for mm_disabled_models (:186-195, "Multimodal is disabled for
    # gemma3. To enable it, set --enable-multimodal"), so is_multimodal is False
    ("0.5.11", "Gemma3ForConditionalGeneration", True), ("0.5.23", "Gemma3ForConditionalGeneration", True),
    # 0.5.16 :3802 / 0.5.23 arg_groups/cuda_graph_hook.py:231 (breakable): "multimodal model" unless on
    # multimodal_breakable_cuda_graph_supported_model_archs — Qwen3.5 is, Qwen3-VL / Gemma 4 / Qwen2.5-VL are not
    ("0.5.16", "Qwen3_5ForConditionalGeneration", True), ("0.5.16", "Qwen3VLForConditionalGeneration", False),
    ("0.5.19", "Qwen2_5_VLForConditionalGeneration", False), ("0.5.21", "Gemma4ForConditionalGeneration", False),
    (None, "Qwen3VLMoeForConditionalGeneration", False), (None, "Qwen3_5MoeForConditionalGeneration", True),
    # 0.5.11 :1201-1203 "# 1. Disable Model Arch" (is_piecewise_cuda_graph_disabled_model: Qwen3-Next); 0.5.16 on,
    # the default breakable backend has no such rule (:3759-3805), so Qwen3-Next keeps its prefill graphs
    ("0.5.11", "Qwen3NextForCausalLM", False), ("0.5.13", "Qwen3NextForCausalLM", False),
    ("0.5.16", "Qwen3NextForCausalLM", True), (None, "Qwen3NextForCausalLM", True),
    # 0.5.16 :3662-3671: a multimodal class on the piecewise allowlist moves to tc_piecewise, whose multimodal rule
    # (:3718-3720) spares it — Cohere2Vision keeps its graphs; 0.5.19 moves it to the breakable allowlist (:1985)
    ("0.5.16", "Cohere2VisionForConditionalGeneration", True), ("0.5.19", "Cohere2VisionForConditionalGeneration", True),
    ("0.5.13", "Cohere2VisionForConditionalGeneration", False),
    # a text model: graphs in every release from 0.5.11
    ("0.5.11", "LlamaForCausalLM", True), (None, "LlamaForCausalLM", True),
])
def test_prefill_graphs_by_model_class_and_release(release, architecture, graphs):
    assert _fraction(release, architecture) == (WITH if graphs else WITHOUT)


def test_backend_switch_decides_the_mla_and_pp_rules_in_0_5_16():
    """0.5.16's breakable rules turn the graphs off for MLA (:3774 ("MLA attention", lambda: self.use_mla_backend()))
    and have no PP rule; KimiK25ForConditionalGeneration (MLA, on the piecewise allowlist, :1776) moves to tc_piecewise
    (:3665), whose rules have no MLA rule but do have PP (:3702 "pipeline parallelism (pp_size > 1)"). So Kimi K2.5
    keeps its 1.5 GiB MLA graphs where a DeepSeek-V3 loses them, and loses them with PP 2 where a text model keeps
    them. PP 2 by hand: 512 + 12,288 + 2 / 8 × 1024 + 512 = 13,568 (+ 464 = 14,032 with graphs)."""
    assert _fraction("0.5.16", "KimiK25ForConditionalGeneration", mla=True) == WITH_MLA
    assert _fraction("0.5.16", "DeepseekV3ForCausalLM", mla=True) == WITHOUT
    without_pp2, with_pp2 = round((H100 - 13_568) / H100, 3), round((H100 - 14_032) / H100, 3)
    assert (without_pp2, with_pp2) == (0.834, 0.828)
    assert _fraction("0.5.16", "KimiK25ForConditionalGeneration", mla=True, pp=2) == without_pp2
    assert _fraction("0.5.16", "LlamaForCausalLM", pp=2) == with_pp2


def test_the_plan_reserves_none_and_says_why():
    """qwen3-vl-8b on the catalog's H100 (81,920 MiB): (81,920 − 13,440) / 81,920 = 0.836 without the prefill graphs
    (0.830 with: 13,904); qwen3.5-9b keeps them (breakable allowlist) — 0.830. Both then × 0.924765625, SGLang's
    vision-model reduction (0.95 × (1 − 0.1 × (24 × 1152² / (24 × 1024²) − 1)): depth 27 is not read as
    num_hidden_layers, test_sglang_versions.test_vision_model_fraction_reduction_from_0_4_10)."""
    vlm = 0.924765625
    assert round((81_920 - 13_440) / 81_920, 3) == 0.836 and round((81_920 - 13_904) / 81_920, 3) == 0.830
    vl = check(CheckRequest(model="qwen3-vl-8b", gpu="h100", runtime="sglang", use_measurements=False))[0]
    assert f"--mem-fraction-static {0.836 * vlm:g}" in vl.command
    assert any("no prefill CUDA graphs reserved: the server turns them off for a multimodal model "
               "(Qwen3VLForConditionalGeneration): sglang 0.5.23 arg_groups/cuda_graph_hook.py:231" in a
               for a in vl.allocation.assumptions)
    q35 = check(CheckRequest(model="qwen3.5-9b", gpu="h100", runtime="sglang", use_measurements=False))[0]
    assert f"--mem-fraction-static {0.83 * vlm:g} " in q35.command + " "
    assert not any("no prefill CUDA graphs" in a for a in q35.allocation.assumptions)
    old = check(CheckRequest(model="qwen3.5-9b", gpu="h100", runtime="sglang==0.5.13", use_measurements=False))[0]
    assert f"--mem-fraction-static {0.836 * vlm:g}" in old.command

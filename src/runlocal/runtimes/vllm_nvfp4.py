"""The first vLLM release that loads each published NVFP4 checkpoint runlocal plans (`--runtime vllm==X` below it is
refused, naming the release).

Read in the released sources (the sdists on PyPI, vllm-X.tar.gz, sha256 in measurements/vllm_nvfp4/releases.txt): a
checkpoint needs its format's Linear method, its MoE method where it has experts, its architecture in
vllm/model_executor/models/registry.py, and — for NVIDIA's MIXED_PRECISION exports — per-layer W4A16_NVFP4 entries.
Each piece by the last release read without it and the first with it:

  ModelOpt NVFP4 Linear   modelopt.py class ModelOptNvFp4Config        0.7.3 without, 0.8.0 with (PR #12520)
  ModelOpt NVFP4 MoE      modelopt.py class ModelOptNvFp4FusedMoE      0.8.5 without, 0.9.0 with
  CT NVFP4 (W4A4) Linear  schemes/compressed_tensors_w4a4_nvfp4.py     0.9.0 without (weight-only w4a16_nvfp4 only,
                                                                       PR #17914), 0.9.1 with (PR #18312)
  CT NVFP4 MoE            compressed_tensors_moe.py class CompressedTensorsW4A4MoeMethod   0.9.1 without, 0.9.2 with
                                                                       (PR #19990)
  MIXED_PRECISION with W4A16_NVFP4 layers   modelopt.py: the W4A16_NVFP4 sibling config of the mixed-precision
                          config — 0.21.0 reads W4A16_NVFP4 as a checkpoint's quant_algo only (PR #41769), 0.22.0
                          per layer too (vllm-project/recipes PR #663 recommends 0.24.0+ for Qwen3.6 NVFP4)
  architectures           registry.py: Llama4ForConditionalGeneration 0.8.2 / 0.8.3; Qwen3ForCausalLM,
                          Qwen3MoeForCausalLM 0.8.3 / 0.8.4 (PR #15289); Qwen3NextForCausalLM 0.10.1 / 0.10.2;
                          Qwen3VLForConditionalGeneration 0.10.2 / 0.11.0; MiniMaxM2ForCausalLM 0.11.0 / 0.11.1;
                          Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration 0.16.0 / 0.17.0;
                          Gemma4ForConditionalGeneration 0.18.1 / 0.19.0; LlamaForCausalLM in every release read.

A checkpoint's minimum is the latest of its pieces: the first release whose source has all of them (a lower bound:
a release may have had a bug that stops the load). Pure computation.
"""

from __future__ import annotations

from typing import Any

from ..model.spec import ModelSpec

Release = tuple[int, ...]
# format → (Linear method: first release, where), (MoE method: first release, where)
FORMAT_FROM: dict[str, tuple[tuple[Release, str], tuple[Release, str]]] = {
    "modelopt-nvfp4": (((0, 8, 0), "ModelOpt NVFP4 Linear layers (modelopt.py ModelOptNvFp4Config, PR #12520)"),
                       ((0, 9, 0), "ModelOpt NVFP4 experts (modelopt.py ModelOptNvFp4FusedMoE)")),
    "ct-nvfp4": (((0, 9, 1), "compressed-tensors NVFP4 W4A4 Linear layers (compressed_tensors_w4a4_nvfp4.py, "
                             "PR #18312)"),
                 ((0, 9, 2), "compressed-tensors NVFP4 experts (CompressedTensorsW4A4MoeMethod, PR #19990)")),
}
# HF model_type → (first release whose registry.py has its architecture, the class)
ARCH_FROM: dict[str, tuple[Release, str]] = {
    "llama4": ((0, 8, 3), "Llama4ForConditionalGeneration"),
    "qwen3": ((0, 8, 4), "Qwen3ForCausalLM (PR #15289)"),
    "qwen3_moe": ((0, 8, 4), "Qwen3MoeForCausalLM (PR #15289)"),
    "qwen3_next": ((0, 10, 2), "Qwen3NextForCausalLM"),
    "qwen3_vl": ((0, 11, 0), "Qwen3VLForConditionalGeneration"),
    "minimax_m2": ((0, 11, 1), "MiniMaxM2ForCausalLM"),
    "qwen3_5": ((0, 17, 0), "Qwen3_5ForConditionalGeneration"),
    "qwen3_5_moe": ((0, 17, 0), "Qwen3_5MoeForConditionalGeneration"),
    "gemma4": ((0, 19, 0), "Gemma4ForConditionalGeneration"),
}
MIXED_W4A16_FROM: tuple[Release, str] = ((0, 22, 0), "ModelOpt MIXED_PRECISION with per-layer W4A16_NVFP4 entries "
                                                      "(modelopt.py, after PR #41769)")


def _text(release: Release) -> str:
    return ".".join(map(str, release))


def nvfp4_minimum(entry: dict[str, Any], model: ModelSpec) -> tuple[Release, str] | None:
    """(the first vLLM release with every piece this published NVFP4 checkpoint needs, the piece that sets it), or
    None for another format."""
    pieces = FORMAT_FROM.get(entry.get("format", ""))
    if pieces is None:
        return None
    needs = [pieces[0]]
    if any(t.role.startswith("expert_") for t in model.tensors):
        needs.append(pieces[1])
    if model.family in ARCH_FROM:
        first, cls = ARCH_FROM[model.family]
        needs.append((first, f"the architecture {cls} (vllm/model_executor/models/registry.py)"))
    if entry.get("fp8"):          # NVIDIA's MIXED_PRECISION exports (the attention at FP8, W4A16_NVFP4 layers)
        needs.append(MIXED_W4A16_FROM)
    return max(needs, key=lambda n: n[0])


def nvfp4_release_refusal(entry: dict[str, Any] | None, model: ModelSpec, release: Release | None) -> str | None:
    """vLLM's refusal of a published NVFP4 checkpoint on a release older than its minimum; None where it loads, for
    the current release (None) and for other formats."""
    if entry is None or release is None:
        return None
    minimum = nvfp4_minimum(entry, model)
    if minimum is None or release[:3] >= minimum[0]:
        return None
    return (f"{entry['repo']} needs vLLM {_text(minimum[0])} or later: {minimum[1]} first shipped in "
            f"{_text(minimum[0])}; this release ({_text(release)}) cannot load it (pip install 'vllm>={_text(minimum[0])}')")


__all__ = ["ARCH_FROM", "FORMAT_FROM", "MIXED_W4A16_FROM", "nvfp4_minimum", "nvfp4_release_refusal"]

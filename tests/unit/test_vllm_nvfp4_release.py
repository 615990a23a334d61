"""The first vLLM release that loads each published NVFP4 checkpoint (runtimes/vllm_nvfp4.py), against the released
sources read in the PyPI sdists (measurements/vllm_nvfp4/probe_output.txt, written out here):

  vllm-0.7.3   modelopt.py has no ModelOptNvFp4Config            vllm-0.8.0   it has (PR #12520)
  vllm-0.8.5   no ModelOptNvFp4FusedMoE                          vllm-0.9.0   it has
  vllm-0.9.0   schemes/ has compressed_tensors_w4a16_nvfp4 only  vllm-0.9.1   compressed_tensors_w4a4_nvfp4.py
  vllm-0.9.1   no CompressedTensorsW4A4MoeMethod                 vllm-0.9.2   class CompressedTensorsW4A4MoeMethod
  vllm-0.8.3   registry.py has no "Qwen3ForCausalLM"             vllm-0.8.4   it has
  vllm-0.16.0  no "Qwen3_5ForConditionalGeneration"              vllm-0.17.0  it has
  vllm-0.18.1  no "Gemma4ForConditionalGeneration"               vllm-0.19.0  it has
  vllm-0.21.0  W4A16_NVFP4 only as a checkpoint's quant_algo     vllm-0.22.0  "Sibling config for layers that declare
                                                                              quant_algo: W4A16_NVFP4" (per layer)
"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.model.catalog import lookup
from runlocal.runtimes.published import published_checkpoints
from runlocal.runtimes.vllm_nvfp4 import nvfp4_minimum, nvfp4_release_refusal


@pytest.mark.parametrize("model, repo, first", [
    ("llama-3.3-70b", "nvidia/Llama-3.3-70B-Instruct-FP4", (0, 8, 0)),        # ModelOpt Linear
    ("qwen3-8b", "nvidia/Qwen3-8B-FP4", (0, 8, 4)),                          # Qwen3 registered later than the format
    ("qwen3-32b", "RedHatAI/Qwen3-32B-NVFP4", (0, 9, 1)),                    # compressed-tensors W4A4 Linear
    ("llama-4-scout", "nvidia/Llama-4-Scout-17B-16E-Instruct-NVFP4", (0, 9, 0)),   # ModelOpt experts
    ("qwen3-235b-a22b-2507", "RedHatAI/Qwen3-235B-A22B-Instruct-2507-NVFP4", (0, 9, 2)),   # CT experts
    ("qwen3-next-80b-a3b", "RedHatAI/Qwen3-Next-80B-A3B-Instruct-NVFP4", (0, 10, 2)),
    ("qwen3-vl-32b", "RedHatAI/Qwen3-VL-32B-Instruct-NVFP4", (0, 11, 0)),
    ("minimax-m2", "RedHatAI/MiniMax-M2-NVFP4", (0, 11, 1)),
    ("qwen3.5-9b", "RedHatAI/Qwen3.5-9B-NVFP4", (0, 17, 0)),
    ("gemma-4-31b", "nvidia/Gemma-4-31B-IT-NVFP4", (0, 19, 0)),
    ("qwen3.6-27b", "nvidia/Qwen3.6-27B-NVFP4", (0, 22, 0)),                 # MIXED_PRECISION, W4A16 per layer
    ("qwen3.6-35b-a3b", "nvidia/Qwen3.6-35B-A3B-NVFP4", (0, 22, 0)),
])
def test_minimum_release_per_checkpoint(model, repo, first):
    spec = lookup(model)
    entry = next(e for e in published_checkpoints(spec) if e["repo"] == repo)
    assert nvfp4_minimum(entry, spec)[0] == first
    before = first[:2] + (first[2] - 1,) if first[2] else (first[0], first[1] - 1, 99)
    assert repo in (nvfp4_release_refusal(entry, spec, before) or "")
    assert nvfp4_release_refusal(entry, spec, first) is None
    assert nvfp4_release_refusal(entry, spec, None) is None          # the current release


def test_plan_refuses_below_the_minimum():
    def verdict(runtime):
        return check(CheckRequest(model="qwen3.6-27b", quant="nvfp4", gpu="rtx-5090", runtime=runtime, ctx=8192,
                                  use_measurements=False))[0]

    old = verdict("vllm==0.21.0")
    assert old.verdict == "does_not_fit" and "needs vLLM 0.22.0 or later" in (old.allocation.refusal or "")
    assert verdict("vllm==0.22.0").verdict == "fits"

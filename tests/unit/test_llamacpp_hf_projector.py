"""llama-server -hf REPO:QUANT loads the repo's multimodal projector (llama.cpp b5331 on, PR #12898; the manifest's
mmprojFile, common/arg.cpp, PR #13082) after common_init_from_params placed the layers — so --fit's choice leaves it
out — on the first GPU (tools/mtmd/clip.cpp clip_ctx); --no-mmproj loads none. The plan counts it on that GPU's
overhead (runtimes/llamacpp_mmproj.py), says it in --explain, writes --no-mmproj where asked, and offers --no-mmproj as
a fix where the projector is what tips the plan."""

from __future__ import annotations

import pytest

from runlocal.check import check
from runlocal.errors import InputError
from runlocal.request import CheckRequest

# Qwen3.5-0.8B's vision tower (config.json vision_config: depth 12, hidden_size 768, intermediate_size 3072,
# patch_size 16, temporal_patch_size 2, in_channels 3, num_position_embeddings 2304, out_hidden_size 1024,
# spatial_merge_size 2 → the merger's input 768 × 2² = 3072), at 2 B a weight of two or more dimensions, 4 B a 1-D one:
#   patch embedding 768 × 3 × 2 × 16 × 16 = 1,179,648 → 2,359,296 B; its bias 768 → 3,072 B
#   position embedding 2304 × 768 = 1,769,472 → 3,538,944 B
#   a block: qkv 2304 × 768 + proj 768 × 768 + fc1 3072 × 768 + fc2 768 × 3072 = 7,077,888 → 14,155,776 B;
#            norms 4 × 768 + biases 2304 + 768 + 3072 + 768 = 9,984 → 39,936 B; × 12 blocks = 170,349,504 B
#   merger: norm 2 × 768 + fc1 3072 × 3072 (+ 3072) + fc2 1024 × 3072 (+ 1024)
#           = 18,874,368 + 6,291,456 + (1,536 + 3,072 + 1,024) × 4 = 25,188,352 B
PROJECTOR = 2_359_296 + 3_072 + 3_538_944 + 12 * (14_155_776 + 39_936) + 18_874_368 + 6_291_456 + 5_632 * 4
assert PROJECTOR == 201_438_208


def plan(model: str = "qwen3.5-0.8b", gpu: str = "rtx-4090", **kw):
    return check(CheckRequest(model=model, gpu=gpu, quant="Q4_K_M", ctx=8192, use_measurements=False, **kw))[0]


def test_the_projector_is_counted_on_the_first_gpu():
    on, off = plan(), plan(no_mmproj=True)
    assert "-hf unsloth/Qwen3.5-0.8B-GGUF:Q4_K_M" in on.command and "--no-mmproj" not in on.command
    assert off.command.endswith(" --no-mmproj")
    gpu_on, gpu_off = on.allocation.devices[0], off.allocation.devices[0]
    assert gpu_on.kind == "gpu" and gpu_on.overhead - gpu_off.overhead == PROJECTOR
    assert gpu_on.weights == gpu_off.weights and gpu_on.kv_cache == gpu_off.kv_cache
    assert on.allocation.devices[1:] == off.allocation.devices[1:]           # the host: unchanged
    (step,) = [st for st in on.allocation.steps if st.label == "multimodal projector (-hf)"]
    assert step.value == f"{PROJECTOR:,} B" and "loaded after --fit" in step.formula
    assert not [st for st in off.allocation.steps if "projector" in st.label]


def test_without_a_gpu_it_is_in_system_memory():
    on, off = plan(gpu="none", ram="64G"), plan(gpu="none", ram="64G", no_mmproj=True)
    assert on.allocation.devices[0].kind == "cpu"
    assert on.allocation.devices[0].overhead - off.allocation.devices[0].overhead == PROJECTOR


def test_not_counted_for_a_text_model_a_file_an_old_build_or_ollama():
    text, text_off = plan("qwen3-8b"), plan("qwen3-8b", no_mmproj=True)
    assert text.to_dict()["memory"] == text_off.to_dict()["memory"] and "--no-mmproj" not in text_off.command
    old = plan(runtime="llama.cpp==b5330")
    assert not [st for st in old.allocation.steps if "projector" in st.label] and "--no-mmproj" not in old.command
    assert [st for st in plan(runtime="llama.cpp==b5331").allocation.steps if st.label.startswith("multimodal")]
    ollama = plan(runtime="ollama")
    assert not [st for st in ollama.allocation.steps if st.label == "multimodal projector (-hf)"]
    with pytest.raises(InputError, match="no-mmproj"):
        plan(runtime="vllm", no_mmproj=True)


def test_no_mmproj_is_offered_where_the_projector_tips_the_plan():
    """Qwen2.5-VL-7B Q4_K_M on an RTX 4060 (8 GB) at --fit's own context: --fit leaves its 1 GiB margin, the
    projector (1,354,131,456 B = 1.26 GiB) then overflows the card; without it the same placement fits."""
    over = check(CheckRequest(model="qwen2.5-vl-7b", gpu="rtx-4060", quant="Q4_K_M", use_measurements=False))[0]
    gpu = over.allocation.devices[0]
    assert over.verdict == "does_not_fit" and gpu.total > gpu.capacity
    (fix,) = [x for x in over.fixes if x.title == "Serve text only (--no-mmproj)"]
    assert fix.command.endswith(" --no-mmproj") and "1.26 GiB" in fix.effect and "→ fits" in fix.effect
    assert gpu.total - 1_354_131_456 <= gpu.capacity
    roomy = plan("qwen2.5-vl-7b", gpu="rtx-4090")
    assert roomy.verdict == "fits" and not [x for x in roomy.fixes if "--no-mmproj" in x.title]

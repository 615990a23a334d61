"""A refused AutoFP8 plan under transformers is offered the 16-bit checkpoint it was made from (mends19b, left).

transformers drops an AutoFP8 checkpoint's per-tensor scales (runtimes/transformers.py AUTOFP8_UNREAD, shown by loading
one in test_transformers_quant_on_cpu.py), so --quant fp8 of llama-3-8b (RedHatAI/Meta-Llama-3-8B-Instruct-FP8, whose
model card names meta-llama/Meta-Llama-3-8B-Instruct as its base) is refused. Before, the fixes were int8 / nf4 only;
the checkpoint the user most likely wants is the bf16 one, loaded as trained."""

from __future__ import annotations

from runlocal.check import CheckRequest, check

BASE_REPO = "meta-llama/Meta-Llama-3-8B-Instruct"      # the catalog's repo; the FP8 card's base_model
# Llama-3-8B: 8,030,261,248 parameters × 2 bytes (bf16) = 14.96 GiB, "15 GiB" in three figures (units.format_bytes)
BF16_GIB_WORDS = "15 GiB"
# FP8 on cc ≥ 8.9 (a 4090) is held as stored: 1 byte per Linear weight, lm_head / embeddings in 16 bit → 8.46 GiB


def _plan(gpu: str):
    return check(CheckRequest(model="llama-3-8b", runtime="transformers", quant="fp8", gpu=gpu, ram="32G",
                              use_measurements=False))[0]


def test_the_bf16_checkpoint_is_offered_first_with_its_effect():
    plan = _plan("rtx-4090")
    assert plan.verdict == "does_not_fit" and "AutoFP8" in (plan.allocation.refusal or "")
    first = plan.fixes[0]
    assert first.title == f"Load the checkpoint as stored (bf16) {BASE_REPO}"
    assert first.effect.startswith(f"weights 8.46 GiB → {BF16_GIB_WORDS}; verdict does not fit → fits")
    assert f'from_pretrained("{BASE_REPO}"' in first.command and "-FP8" not in first.command
    assert 'dtype="bfloat16"' in first.command
    assert any(f.title == "Quantize the weights to nf4" for f in plan.fixes)        # still offered, after it


def test_on_an_8_gib_gpu_the_bf16_checkpoint_comes_with_a_shorter_context():
    """bf16 (15 GiB) does not start on an RTX 4060 at 4,096 tokens where FP8's 8.46 GiB would: the fix pairs it with
    the longest context that starts, both changes said."""
    bf16 = [f for f in _plan("rtx-4060").fixes if BASE_REPO in f.title]
    assert len(bf16) == 1 and ", with context " in bf16[0].title
    assert "context 4,096 → " in bf16[0].effect and f"→ {BF16_GIB_WORDS}" in bf16[0].effect

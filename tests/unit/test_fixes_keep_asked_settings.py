"""A fix keeps the settings the user stated except the one it changes (lead-close-note19, noticed by mends19b).

llama.cpp's path undoes only what --fit gave up (the layers it moved) and keeps the rest of the plan's settings. The
same for every runtime: SGLang with no context asked gives up context (its served max_req_len), so its fixes start at
the context it starts with (test_sglang_unasked_context.py); transformers offloading weights to disk gives up no
setting, so an asked context stays. Before, any compromise outside llama.cpp reset the fixes to the runtime's default
context: a transformers plan at 32,768 got "context 4,096 → 3,840" and an int8 command with max_length=4096."""

from __future__ import annotations

from runlocal.check import CheckRequest, check

ASKED = 32_768
# Llama-3.1-8B config.json: 32 layers × 8 KV heads × (128 K + 128 V) × 2 bytes (bf16) per token; at the asked context
# the KV cache alone is 4 GiB, what the default context (4,096) would hide
KV_AT_ASKED = 32 * 8 * (128 + 128) * 2 * ASKED


def _plan(ram: str):
    return check(CheckRequest(model="llama-3.1-8b", gpu="4080", ram=ram, runtime="transformers", ctx=ASKED,
                              use_measurements=False))[0]


def test_disk_offload_keeps_the_asked_context_in_every_fix():
    plan = _plan("2G")              # 2 GiB of RAM: accelerate puts part of the bf16 weights on disk
    assert plan.allocation.compromise is not None and "on disk" in plan.allocation.compromise
    assert plan.settings.ctx == ASKED and plan.allocation.kv_bytes_per_token * ASKED == KV_AT_ASKED == 4 * 2**30
    assert plan.fixes
    for fix in plan.fixes:
        if fix.title.startswith("Reduce context"):
            assert fix.effect.startswith(f"context {ASKED:,} →")
        else:                       # a quant or more GPUs: the context asked, not transformers' default
            assert f"max_length={ASKED})" in fix.command and "max_length=4096" not in fix.command


def test_the_offload_changes_no_fix_but_the_speed():
    """With RAM for the CPU share (4 GiB) nothing goes to disk and there is no compromise: the fixes are the same
    changes, since the disk offload was no setting of the user's."""
    offloaded, in_ram = _plan("2G"), _plan("4G")
    assert in_ram.allocation.compromise is None
    assert [(f.title, f.command) for f in offloaded.fixes] == [(f.title, f.command) for f in in_ram.fixes]

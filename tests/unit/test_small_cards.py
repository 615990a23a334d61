"""Small cards that may drive a display (issue 18 point 3): the GTX 970 case. A user ran Llama-3.2-3B Q4_K_M with
4 slots of 2,048 tokens (-np 4 -c 8192) and every layer on a 4 GB GTX 970 that also drives the desktop; it ran
out of memory while runlocal said "fits" at 3.58 GiB. A named card's desktop is invisible to runlocal, so a plan
leaving it less than llama.cpp's own 1 GiB fit margin is "tight", and says on what it depends."""

from __future__ import annotations

from asking import check_json

from runlocal.hardware.display_margin import DISPLAY_HEADROOM, settle_display


def test_gtx_970_case_is_tight_and_says_why():
    # the report's figure is a build before llama-server's output cap (PR #23861: 4 rows of logits, not 512)
    plan = check_json("llama-3.2-3b", "--vram", "4G", "--ram", "16G", "--parallel", "4", "--ctx", "2048",
                      "--ngl", "all", "--runtime", "llama.cpp==b9272")
    gpu = next(d for d in plan["memory"]["devices"] if d["kind"] == "gpu")
    assert 3.5 < gpu["total"] / 2**30 < 3.6                      # the 3.58 GiB of the report
    assert gpu["capacity"] - gpu["total"] < DISPLAY_HEADROOM
    assert plan["verdict"] == "tight"
    free = f"{(gpu['capacity'] - gpu['total']) / 2**30:.2f} GiB free"          # 0.40: b9272's f32 KQ mask counted
    assert any("drives no display" in c and free in c for c in plan["conditions"])
    # the current build's smaller compute buffer still leaves less than a desktop may take
    now = check_json("llama-3.2-3b", "--vram", "4G", "--ram", "16G", "--parallel", "4", "--ctx", "2048",
                     "--ngl", "all")
    assert now["verdict"] == "tight" and any("drives no display" in c for c in now["conditions"])


def test_a_card_with_room_for_a_desktop_still_fits():
    plan = check_json("llama-3.2-3b", "--gpu", "rtx-4090", "--ram", "64G", "--ctx", "8192", "-np", "1")
    assert plan["verdict"] == "fits" and not any("display" in c for c in plan["conditions"])


def test_memory_read_from_the_machine_is_not_held_back():
    """--gpu auto plans on the free memory nvidia-smi reports, the desktop already out of it: no condition."""
    from runlocal.check import CheckRequest, check

    plan, _ = check(CheckRequest(model="llama-3.2-3b", vram="4G", ram="16G", parallel=4, ctx=2048, n_gpu_layers=-2,
                                 use_measurements=False))
    assert plan.verdict == "tight"
    read = settle_display(plan.__class__(**{**plan.__dict__, "verdict": "fits", "conditions": ()}), gpu_named=False)
    assert read.verdict == "fits" and read.conditions == ()

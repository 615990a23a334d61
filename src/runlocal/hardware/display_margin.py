"""A GPU named on the command line (--gpu 4090, --vram 4G) may also drive the desktop, whose VRAM runlocal cannot
see; one read with --gpu auto is planned on its free memory, desktop already taken out.

What a desktop holds, from nvidia-smi readings users posted:
  * Linux, Xorg 28 MiB + gnome-shell 46 MiB + clients (NVIDIA/nvidia-docker#1264);
  * Linux/Wayland with a browser, 1.8 GB of a 2 GB card (NVIDIA/egl-wayland#126);
  * Windows + WSL, RTX 3070 "Disp.A On", 1,751 MiB of 8,192 MiB before llama.cpp started (ggml-org/llama.cpp#1230);
  * a card with no display ("Disp.A Off"), 197 MiB of 12,282 MiB (meta-llama/llama#466).
So anything from about 0.1 to 1.8 GiB. llama.cpp itself leaves DISPLAY_HEADROOM = 1 GiB free on every device when
it fits a launch (common/common.h fit_params_target, --fit-target); runlocal uses the same margin: a plan that
fits a named GPU with less than that left is "tight", with the condition spelled out. That is the case of the
issue's 4 GB GTX 970 driving a display: Llama-3.2-3B at -np 4 -c 8192 -ngl all planned at 3.58 GiB "fits", and
ran out of memory.

Pure computation over a plan (no I/O).
"""

from __future__ import annotations

from dataclasses import replace

from ..units import GiB, MiB

DISPLAY_HEADROOM = 1024 * MiB       # common/common.h fit_params_target: 1 GiB left free per device


def settle_display(plan, gpu_named: bool):
    """``plan`` as shown when the GPUs were named rather than read: a "fits" that leaves a GPU less than
    DISPLAY_HEADROOM becomes "tight", with the condition under which it fits."""
    if not gpu_named or plan.verdict != "fits":
        return plan
    short = [d for d in plan.allocation.devices
             if d.kind == "gpu" and d.capacity > 0 and d.capacity - d.total < DISPLAY_HEADROOM]
    if not short:
        return plan
    d = min(short, key=lambda x: x.capacity - x.total)
    left = (d.capacity - d.total) / GiB
    condition = (f"fits if {d.name} drives no display: it keeps {left:.2f} GiB free, and a desktop takes 0.1–1.8 GiB "
                 "of VRAM (posted nvidia-smi readings); --gpu auto plans on the memory free now")
    return replace(plan, verdict="tight", conditions=(*plan.conditions, condition))

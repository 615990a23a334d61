"""Fixes for a GPU allocation that failed under Vulkan or on an AMD APU, by the driver and the memory pool the log names
(review22 finding 4: a Mesa RADV refusal on a Strix Halo was answered as a CUDA out-of-memory with vLLM and nvidia-smi
commands; finding 11: diagnose and check worded the raise of an APU's GPU memory differently).

What the log says, as extract.py reads it:

- ``vk_driver``: Mesa RADV's own block ("radv/amdgpu: Failed to allocate a buffer:", radv_amdgpu_bo.c), ggml_vulkan's
  device line "ggml_vulkan: 0 = NAME (DRIVER) | uma: U" (VkPhysicalDeviceDriverProperties::driverName: "radv", "AMD
  open-source driver", "Intel open-source Mesa driver", "NVIDIA", "MoltenVK", "NVK"), or Mesa's vk_error line naming the
  driver's source directory (src/intel/vulkan = ANV, src/nouveau/vulkan = NVK).
- ``vk_domains``: the amdgpu pool RADV asked (radv_radeon_winsys.h: RADEON_DOMAIN_GTT = 2, RADEON_DOMAIN_VRAM = 4).
  GTT is system RAM the GPU maps; amdgpu's GTT size defaults to TTM's limit (module parameter gttsize: "-1 (Use value
  specified by TTM). This parameter is deprecated", docs.kernel.org/gpu/amdgpu/module-parameters.html), which is half of
  RAM unless the ttm module's pages_limit raises it (hardware/unified_memory.py cites the kernel and AMD's amd-ttm tool).
- ``vk_uma``: ggml_vulkan's "uma: 1", the GPU drawing on system RAM (an APU).

The raise is worded once, as `runlocal check` raises an AMD APU's share (fixes.py _unified_share with
hardware/unified_memory.raised_gpu_share: RAM − AMD_OS_FLOOR, at least AMD_RAISED_SHARE of it, in TTM_PAGE_BYTES
pages). A log rarely states the RAM, so the pages are computed on the machine from /proc/meminfo's MemTotal (kB) by
the same rule.

Pure computation over the figures.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from ..hardware.unified_memory import AMD_OS_FLOOR, AMD_RAISED_SHARE, TTM_PAGE_BYTES

GTT, VRAM = 2, 4   # radv_radeon_winsys.h enum radeon_bo_domain
# an AMD driver by ggml_vulkan's driverName or RADV's own lines (AMDVLK prints "AMD open-source driver", AMD's Windows
# driver "AMD proprietary driver")
_AMD_DRIVER = re.compile(r"^radv$|\bamd\b", re.I)
# an AMD APU named on ggml's device lines: Strix Halo's Radeon 8060S / 8050S, Strix Point's 890M / 880M, Phoenix's
# 780M / 760M, their gfx targets (gfx1151, gfx1150, gfx1103; RADV's "GFX1150"). AMD's bare "Radeon Graphics" names
# iGPUs too, but ROCm has printed it for new discrete cards: it counts only with one of these or ggml_vulkan's uma: 1
_AMD_APU = re.compile(r"\b(?:radeon )?8[06]50s\b|\b(?:890|880|780|760|740|680|660)m\b|\bgfx11(?:03|50|51|52)\b"
                      r"|strix halo|ryzen ai max", re.I)
_KIB_PER_PAGE = TTM_PAGE_BYTES // 1024
_SHARE = Fraction(AMD_RAISED_SHARE).limit_denominator(100)
# check's rule in awk over MemTotal (kB): p pages of RAM; RAM − the OS floor, or the share if that is more
TTM_RAISE_COMMAND = (
    "echo \"options ttm pages_limit=$(awk '/MemTotal/ {p = int($2 / " f"{_KIB_PER_PAGE}" "); "
    f"a = p - {AMD_OS_FLOOR // TTM_PAGE_BYTES}; b = int(p * {_SHARE.numerator} / {_SHARE.denominator}); "
    "print (a > b ? a : b)}' /proc/meminfo)\" | sudo tee /etc/modprobe.d/ttm.conf   "
    f"# RAM less {AMD_OS_FLOOR // 2**30} GiB (at least {AMD_RAISED_SHARE:.0%}), in {_KIB_PER_PAGE} KiB pages; reboot")
RAISED_SHARE_WORDS = f"the RAM less {AMD_OS_FLOOR // 2**30} GiB (at least {AMD_RAISED_SHARE:.0%})"
RAISE_TITLE = "Raise the GPU's share of RAM to {share} (Linux: ttm pages_limit)"
AMD_POOLS_COMMAND = "grep . /sys/class/drm/card*/device/mem_info_{vram,gtt}_{total,used}"
# VK_EXT_memory_budget, as vulkaninfo prints each heap: "size = …, budget = …, usage = …" (any vendor's driver)
VULKAN_HEAPS_COMMAND = 'vulkaninfo | grep -A3 "memoryHeaps\\["   # each heap: size, budget (what may be used), usage'


def driver(ex: dict[str, Any]) -> str | None:
    """The Vulkan driver the log names, or None (no Vulkan driver named)."""
    return str(ex["vk_driver"]) if ex.get("vk_driver") else None


def on_vulkan(ex: dict[str, Any]) -> bool:
    """Whether the failed allocation was a Vulkan one: a driver named, ggml_vulkan's failed size, or a Vulkan buffer."""
    return bool(ex.get("vk_driver") or ex.get("vk_failed_allocation_bytes")
                or str(ex.get("device") or "").lower().startswith("vulkan"))


def vendor(ex: dict[str, Any]) -> str | None:
    """'amd', 'intel', 'nvidia' (its own driver: nvidia-smi applies), 'nvk' (NVIDIA's card under Mesa: no nvidia-smi),
    'apple' (MoltenVK), or None when the log does not say."""
    name = (driver(ex) or "").lower()
    if not name:
        return "amd" if _AMD_APU.search(str(ex.get("vk_device_name") or "")) else None
    if _AMD_DRIVER.search(name):
        return "amd"
    return next((v for k, v in (("nvk", "nvk"), ("nvidia", "nvidia"), ("moltenvk", "apple"), ("anv", "intel"),
                                ("intel", "intel")) if k in name), None)


def unified(ex: dict[str, Any]) -> bool:
    """Whether the log says the GPU draws on system RAM: ggml_vulkan's "uma: 1", or an AMD APU by name."""
    named = " ".join(str(ex.get(k) or "") for k in ("vk_device_name", "gpu_name", "gfx_target"))
    return bool(ex.get("vk_uma")) or bool(_AMD_APU.search(named))


# AMD's Windows driver names itself "AMD proprietary driver" on ggml_vulkan's line: there no ttm module exists, and the
# share is AMD's Variable Graphics Memory, set in the Adrenalin app, up to 75 % of RAM, after a restart (AMD's
# announcement for Ryzen AI 300, as reported; devices.json's Strix Halo note: up to 96 GB of 128 GB)
WINDOWS_DRIVER = "amd proprietary driver"
VGM_COMMAND = ("# Windows: AMD Software: Adrenalin Edition > Variable Graphics Memory (up to 75% of RAM as the GPU's), "
               "then restart")


def raise_share_fix(effect: str, ex: dict[str, Any] | None = None) -> dict[str, str]:
    """The raise of an AMD APU's GPU share, worded as `runlocal check` words it (fixes.py _unified_share); on AMD's
    Windows driver, its Variable Graphics Memory setting."""
    return {"title": RAISE_TITLE.format(share=RAISED_SHARE_WORDS),
            "command": VGM_COMMAND if _windows(ex or {}) else TTM_RAISE_COMMAND, "effect": effect}


def share_fixes(ex: dict[str, Any], category: str = "llamacpp_alloc_fail") -> list[dict[str, str]]:
    """An AMD Vulkan allocation from GTT, or on an APU: the GTT limit is what ran out, and raising it is the fix. A ROCm
    failure (``category`` rocm_oom) on a GPU the log names as an APU gets the same raise, first."""
    if category == "rocm_oom" and unified(ex):
        return [raise_share_fix(
            f"the log names an APU ({ex.get('gpu_name') or ex.get('vk_device_name')}): its GPU memory is a share of "
            "the RAM — GTT, half of RAM by default on Linux (TTM), or the BIOS carve-out; "
            f"{RAISED_SHARE_WORDS} is what `runlocal check` plans a raised APU at (AMD's guide raises the TTM limit "
            "and keeps the BIOS carve-out small)", ex)]
    if category != "llamacpp_alloc_fail" or vendor(ex) != "amd" or not (ex.get("vk_domains") == GTT or unified(ex)):
        return []
    size = ex.get("vk_failed_allocation_bytes") or ex.get("requested_bytes")
    asked = f"a {int(size) / 2**30:.2f} GiB buffer" if size else "a buffer"
    pool = ("from GTT (domains 2: system RAM the GPU maps)" if ex.get("vk_domains") == GTT
            else "on a GPU that draws on system RAM (uma: 1)")
    limit = ("on Windows the GPU's share of RAM is what Variable Graphics Memory sets" if _windows(ex) else
             "Linux caps GTT at half of RAM by default (TTM), on an APU the GPU's whole memory; amdgpu.gttsize only "
             "defers to TTM and is deprecated")
    return [raise_share_fix(
        f"the driver was refused {asked} {pool}; {limit}; {RAISED_SHARE_WORDS} is what `runlocal check` plans a "
        "raised APU at, as the public 128 GB setups take it (hardware/unified_memory.py)", ex)]


def _windows(ex: dict[str, Any]) -> bool:
    return (driver(ex) or "").lower() == WINDOWS_DRIVER


def memory_check(ex: dict[str, Any]) -> str | None:
    """The command that shows the failed allocation's GPU memory, for a Vulkan failure whose vendor is not NVIDIA's
    own driver (where nvidia-smi is right), or None to keep the knowledge base's."""
    if not on_vulkan(ex):
        return None
    v = vendor(ex)
    if v == "nvidia":
        return None
    return AMD_POOLS_COMMAND if v == "amd" and not _windows(ex) else VULKAN_HEAPS_COMMAND   # sysfs: Linux's


def vendor_tools(fixes: list[dict[str, str]], ex: dict[str, Any]) -> list[dict[str, str]]:
    """``fixes`` with nvidia-smi, which sees no AMD, Intel or Apple GPU nor one under Mesa's NVK, replaced by the
    command that shows a Vulkan failure's memory on that vendor's GPU."""
    check = memory_check(ex)
    if check is None:
        return fixes
    return [dict(f, command=check) if f["command"].lstrip().startswith("nvidia-smi") else f for f in fixes]

"""This machine: what each GPU has free now (not just its total), and system RAM.

NVIDIA through NVML (nvidia-ml-py), AMD through amdsmi or else `rocm-smi --json`, Apple silicon
through `sysctl` (chip, RAM, iogpu.wired_limit_mb) and Metal's default working-set rule, RAM
through psutil. Each probe never raises: it returns what it found and, if nothing, why.
The outermost boundaries (the NVML / amdsmi modules, `_run` for commands) are what tests replace.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from ..units import MiB
from .unified_memory import apple_default_working_set


@dataclass(frozen=True)
class DetectedGPU:
    index: int
    name: str
    total: int
    free: int
    used_by_others: int
    backend: str = "cuda"
    unified: bool = False        # Apple / APU: the GPU allocates from system RAM; ``free`` is its usable share now


@dataclass(frozen=True)
class SystemInfo:
    ram_total: int
    ram_available: int
    gpus: tuple[DetectedGPU, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _run(cmd: list[str], timeout: float = 5.0) -> str | None:
    """stdout of a command, or None when it is missing or fails."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def detect_nvidia() -> tuple[list[DetectedGPU], str | None]:
    """NVIDIA GPUs via nvidia-ml-py; (gpus, why none) — never raises."""
    try:
        import pynvml
    except ImportError:
        return [], "nvidia-ml-py not installed"
    try:
        pynvml.nvmlInit()
    except Exception as e:  # NVMLError_LibraryNotFound, DriverNotLoaded, …
        return [], f"NVML unavailable ({e.__class__.__name__})"
    gpus = []
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else name
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            try:
                procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h) + pynvml.nvmlDeviceGetGraphicsRunningProcesses(h)
                others = sum(p.usedGpuMemory or 0 for p in procs)
            except Exception:
                others = mem.used
            gpus.append(DetectedGPU(i, name, int(mem.total), int(mem.free), int(others)))
    except Exception as e:
        return gpus, f"NVML error ({e.__class__.__name__})"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    return gpus, None if gpus else "NVML found no GPU"


def detect_amd() -> tuple[list[DetectedGPU], str | None]:
    """AMD GPUs via amdsmi (ROCm 6+), else `rocm-smi --showmeminfo vram --showproductname --json`."""
    try:
        import amdsmi
    except ImportError:
        amdsmi = None
    if amdsmi is not None:
        try:
            amdsmi.amdsmi_init()
            try:
                gpus = []
                for i, h in enumerate(amdsmi.amdsmi_get_processor_handles()):
                    vram = amdsmi.amdsmi_get_gpu_vram_usage(h)      # {'vram_total': MB, 'vram_used': MB}
                    total, used = int(vram["vram_total"]) * MiB, int(vram["vram_used"]) * MiB
                    name = amdsmi.amdsmi_get_gpu_asic_info(h).get("market_name") or f"AMD GPU {i}"
                    gpus.append(DetectedGPU(i, name, total, total - used, used, backend="rocm"))
                if gpus:
                    return gpus, None
            finally:
                amdsmi.amdsmi_shut_down()
        except Exception as e:                      # no driver, no permission: try rocm-smi
            why = f"amdsmi unavailable ({e.__class__.__name__})"
        else:
            why = "amdsmi found no GPU"
    else:
        why = "amdsmi not installed"
    out = _run(["rocm-smi", "--showmeminfo", "vram", "--showproductname", "--json"])
    if out is None:
        return [], f"{why}; rocm-smi not found"
    try:
        cards = json.loads(out)
    except json.JSONDecodeError:
        return [], f"{why}; rocm-smi printed no JSON"
    gpus = []
    for key in sorted(k for k in cards if k.startswith("card")):
        c = cards[key]
        try:
            total, used = int(c["VRAM Total Memory (B)"]), int(c["VRAM Total Used Memory (B)"])
        except (KeyError, ValueError):
            continue
        name = c.get("Card Series") or c.get("Card series") or c.get("Card SKU") or key
        gpus.append(DetectedGPU(int(key[4:] or 0), name, total, total - used, used, backend="rocm"))
    return gpus, None if gpus else f"{why}; rocm-smi listed no card"


def apple_working_set(ram_bytes: int) -> int:
    """Metal's recommendedMaxWorkingSetSize by default (unified_memory.apple_default_working_set: 2/3 of RAM below
    36 GB, 3/4 from 36 GB; more on macOS 26, measurements/apple_working_set/)."""
    return apple_default_working_set(ram_bytes)


def detect_apple(ram_available: int) -> tuple[list[DetectedGPU], str | None]:
    """Apple silicon via sysctl: the chip, its RAM, and the GPU's wired limit (iogpu.wired_limit_mb
    when set, else the default working set); free now = that limit bounded by the RAM available."""
    if sys.platform != "darwin":
        return [], "not macOS"
    chip = (_run(["sysctl", "-n", "machdep.cpu.brand_string"]) or "").strip()
    mem = (_run(["sysctl", "-n", "hw.memsize"]) or "").strip()
    if not chip.startswith("Apple") or not mem.isdigit():
        return [], "sysctl shows no Apple silicon"
    ram = int(mem)
    wired = (_run(["sysctl", "-n", "iogpu.wired_limit_mb"]) or "0").strip()
    limit = int(wired) * MiB if wired.isdigit() and int(wired) > 0 else apple_working_set(ram)
    name = f"{chip} {ram // 1024**3}GB"
    return [DetectedGPU(0, name, limit, min(limit, ram_available), ram - ram_available, backend="metal",
                        unified=True)], None


def detect_system() -> SystemInfo:
    import psutil

    vm = psutil.virtual_memory()
    gpus: list[DetectedGPU] = []
    whys = []
    for probe in (detect_nvidia, detect_amd, lambda: detect_apple(int(vm.available))):
        found, why = probe()
        gpus += found
        if why and not found:
            whys.append(why)
    notes = () if gpus else (f"no GPU detected ({'; '.join(whys)}): planning for the CPU",)
    return SystemInfo(int(vm.total), int(vm.available), tuple(gpus), notes)

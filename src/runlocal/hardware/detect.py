"""This machine: what each GPU has free now (not just its total), and system RAM.

NVIDIA through NVML (nvidia-ml-py), AMD through amdsmi or else `rocm-smi --json`, Apple silicon
through `sysctl` (chip, RAM, iogpu.wired_limit_mb) and Metal's default working-set rule, RAM
through psutil (on Linux the two /proc/meminfo lines it reads, where they are plain: system_ram).
Each probe never raises: it returns what it found and, if nothing, why.
The outermost boundaries (the NVML / amdsmi modules, `_nvml_library_missing`, `_run` for commands) are what tests
replace. What a machine without a given vendor's tools does not need is imported only where it is used (nvidia-ml-py,
subprocess, psutil): `runlocal check` without --gpu detects on every run (benchmarks/planning.py, cold processes).
"""

from __future__ import annotations

import json
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
    import shutil

    if shutil.which(cmd[0]) is None:
        return None
    import subprocess

    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def _nvml_library_missing() -> bool:
    """Whether nvidia-ml-py's nvmlInit would fail to load NVML: off Windows it loads ``libnvidia-ml.so.1`` with
    ctypes.CDLL and raises NVMLError_LibraryNotFound on OSError (pynvml.py _LoadNvmlLibrary, nvidia-ml-py 13.615).
    Tried first, the same way, so a machine without NVIDIA's driver skips importing the bindings (~10 ms CPU: ~8,000
    lines of ctypes structures). On Windows the bindings' own search (System32, Program Files) decides."""
    if sys.platform[:3] == "win":
        return False
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return True
    return False


def detect_nvidia() -> tuple[list[DetectedGPU], str | None]:
    """NVIDIA GPUs via nvidia-ml-py; (gpus, why none) — never raises."""
    from importlib.util import find_spec

    if "pynvml" not in sys.modules and find_spec("pynvml") is None:
        return [], "nvidia-ml-py not installed"
    if _nvml_library_missing():
        return [], "NVML unavailable (NVMLError_LibraryNotFound)"      # what nvmlInit raises then
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
    limit = int(wired) * MiB if wired.isdigit() and int(wired) > 0 else apple_default_working_set(ram)
    name = f"{chip} {ram // 1024**3}GB"
    return [DetectedGPU(0, name, limit, min(limit, ram_available), ram - ram_available, backend="metal",
                        unified=True)], None


MEMINFO = "/proc/meminfo"


def system_ram() -> tuple[int, int]:
    """(total, available) bytes of system RAM: psutil.virtual_memory()'s total and available. On Linux psutil reads
    both from /proc/meminfo (MemTotal; MemAvailable, the kernel's estimate since 3.14: psutil/_pslinux.py
    virtual_memory, psutil 7.2), read here the same way where both are there and 0 < MemAvailable ≤ MemTotal, which
    spares importing psutil (~12 ms CPU of a cold `check`); psutil's own rules everywhere else (MemAvailable
    missing or 0, past MemTotal in a container, other systems)."""
    if sys.platform.startswith("linux"):
        read = _meminfo_ram()
        if read is not None:
            return read
    import psutil

    vm = psutil.virtual_memory()
    return int(vm.total), int(vm.available)


def _meminfo_ram() -> tuple[int, int] | None:
    mems: dict[bytes, int] = {}
    try:
        with open(MEMINFO, "rb") as f:
            for line in f:
                fields = line.split()
                if fields and fields[0] in (b"MemTotal:", b"MemAvailable:"):
                    mems[fields[0]] = int(fields[1]) * 1024        # kB
    except (OSError, ValueError, IndexError):
        return None
    total, available = mems.get(b"MemTotal:", 0), mems.get(b"MemAvailable:", 0)
    return (total, available) if 0 < available <= total else None


def detect_system() -> SystemInfo:
    ram_total, ram_available = system_ram()
    gpus: list[DetectedGPU] = []
    whys = []
    for probe in (detect_nvidia, detect_amd, lambda: detect_apple(ram_available)):
        found, why = probe()
        gpus += found
        if why and not found:
            whys.append(why)
    notes = () if gpus else (f"no GPU detected ({'; '.join(whys)}): planning for the CPU",)
    return SystemInfo(ram_total, ram_available, tuple(gpus), notes)

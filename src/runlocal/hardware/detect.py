"""This machine: GPUs through NVML (free memory now, not just total) and system RAM through psutil."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DetectedGPU:
    index: int
    name: str
    total: int
    free: int
    used_by_others: int
    backend: str = "cuda"


@dataclass(frozen=True)
class SystemInfo:
    ram_total: int
    ram_available: int
    gpus: tuple[DetectedGPU, ...] = ()
    notes: tuple[str, ...] = field(default=())


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
    finally:
        pynvml.nvmlShutdown()
    return gpus, None


def detect_system() -> SystemInfo:
    import psutil

    vm = psutil.virtual_memory()
    gpus, why = detect_nvidia()
    notes = () if gpus else (f"no GPU detected: {why}; planning for the CPU",)
    return SystemInfo(int(vm.total), int(vm.available), tuple(gpus), notes)

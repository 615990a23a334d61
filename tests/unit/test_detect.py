"""This machine's GPUs: only the outermost boundaries are faked (the NVML and amdsmi modules, the
output of `rocm-smi` and `sysctl`); everything above them — targets, plans — runs for real."""

from __future__ import annotations

import json
import sys
import types
import warnings
from types import SimpleNamespace

import pytest

from runlocal.hardware import detect
from runlocal.hardware.targets import targets_from_options

GiB = 1 << 30


def fake_nvml(devices, fail_init=False):
    m = types.ModuleType("pynvml")

    class NVMLError_LibraryNotFound(Exception):
        pass

    def init():
        if fail_init:
            raise NVMLError_LibraryNotFound()
    m.nvmlInit, m.nvmlShutdown = init, lambda: None
    m.nvmlDeviceGetCount = lambda: len(devices)
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetName = lambda h: devices[h]["name"].encode()          # older bindings return bytes
    m.nvmlDeviceGetMemoryInfo = lambda h: SimpleNamespace(total=devices[h]["total"], free=devices[h]["free"],
                                                          used=devices[h]["total"] - devices[h]["free"])
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [SimpleNamespace(usedGpuMemory=u) for u in devices[h]["procs"]]
    m.nvmlDeviceGetGraphicsRunningProcesses = lambda h: []
    return m


@pytest.fixture
def no_gpus(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([], fail_init=True))
    monkeypatch.setitem(sys.modules, "amdsmi", None)          # import amdsmi → ImportError
    monkeypatch.setattr(detect, "_run", lambda cmd, timeout=5.0: None)
    monkeypatch.setattr(sys, "platform", "linux")


def test_nvidia_free_now_and_other_processes(no_gpus, monkeypatch):
    gpu = {"name": "NVIDIA GeForce RTX 4090", "total": 24 * GiB, "free": 20 * GiB, "procs": [3 * GiB, GiB // 2]}
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([gpu]))
    monkeypatch.setattr(detect, "_nvml_library_missing", lambda: False)     # the driver's library loads
    info = detect.detect_system()
    (g,) = info.gpus
    assert (g.name, g.total, g.free, g.used_by_others, g.backend) == (gpu["name"], 24 * GiB, 20 * GiB,
                                                                       3 * GiB + GiB // 2, "cuda")
    targets, notes = targets_from_options("auto", None, None)
    assert targets[0].capacity == 20 * GiB and targets[0].bandwidth_gbs      # planned on what is free now
    assert any("20.0 GiB free now of 24.0 GiB" in n for n in notes)


def test_amd_through_rocm_smi_when_amdsmi_is_missing(no_gpus, monkeypatch):
    out = {"card0": {"Card Series": "Radeon RX 7900 XTX", "VRAM Total Memory (B)": str(24 * GiB),
                     "VRAM Total Used Memory (B)": str(2 * GiB)}}
    monkeypatch.setattr(detect, "_run", lambda cmd, timeout=5.0: json.dumps(out) if cmd[0] == "rocm-smi" else None)
    (g,) = detect.detect_system().gpus
    assert (g.name, g.total, g.free, g.backend) == ("Radeon RX 7900 XTX", 24 * GiB, 22 * GiB, "rocm")


def test_amd_through_amdsmi(no_gpus, monkeypatch):
    m = types.ModuleType("amdsmi")
    m.amdsmi_init = m.amdsmi_shut_down = lambda: None
    m.amdsmi_get_processor_handles = lambda: ["h0"]
    m.amdsmi_get_gpu_vram_usage = lambda h: {"vram_total": 196_608, "vram_used": 1024}      # MB
    m.amdsmi_get_gpu_asic_info = lambda h: {"market_name": "AMD Instinct MI300X"}
    monkeypatch.setitem(sys.modules, "amdsmi", m)
    (g,) = detect.detect_system().gpus
    assert (g.name, g.total, g.free) == ("AMD Instinct MI300X", 192 * GiB, 191 * GiB)


@pytest.mark.parametrize("ram_gb, wired_mb, expected_limit", [
    (64, "0", 48 * GiB),            # default: 3/4 of RAM above 36 GB
    (16, "0", 16 * GiB * 2 // 3),   # 2/3 below 36 GB
    (36, "0", 27 * GiB),            # 3/4 from 36 GB: M4 Max 36 GB on macOS 15.7.7 logs 28991.03 MB = 27 GiB
    (64, "57344", 56 * GiB),        # sudo sysctl iogpu.wired_limit_mb=57344
])
def test_apple_working_set_from_sysctl(no_gpus, monkeypatch, ram_gb, wired_mb, expected_limit):
    answers = {"machdep.cpu.brand_string": "Apple M3 Max\n", "hw.memsize": f"{ram_gb * GiB}\n",
               "iogpu.wired_limit_mb": wired_mb + "\n"}
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(detect, "_run", lambda cmd, timeout=5.0: answers.get(cmd[-1]) if cmd[0] == "sysctl" else None)
    (g,) = detect.detect_apple(ram_available=200 * GiB)[0]
    assert g.name == f"Apple M3 Max {ram_gb}GB" and g.unified and g.backend == "metal"
    assert g.total == expected_limit and g.free == expected_limit
    # with less RAM available than the limit, what the GPU can have now is what is available
    assert detect.detect_apple(ram_available=10 * GiB)[0][0].free == 10 * GiB


def test_apple_target_is_unified(no_gpus, monkeypatch):
    answers = {"machdep.cpu.brand_string": "Apple M3 Max", "hw.memsize": str(64 * GiB), "iogpu.wired_limit_mb": "0"}
    import psutil  # noqa: F401  -- psutil picks its OS module when first imported: before sys.platform is faked
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(detect, "_run", lambda cmd, timeout=5.0: answers.get(cmd[-1]))
    targets, _ = targets_from_options("auto", None, None)
    assert targets[0].kind == "unified" and targets[0].bandwidth_gbs == 400


def test_nothing_found_says_why_and_plans_for_the_cpu(no_gpus):
    info = detect.detect_system()
    assert info.gpus == () and "planning for the CPU" in info.notes[0]
    assert "NVML unavailable" in info.notes[0] and "rocm-smi" in info.notes[0]
    targets, _ = targets_from_options("auto", None, None)
    assert [t.kind for t in targets] == ["cpu"]


def test_a_missing_nvml_library_reads_as_the_bindings_say():
    """Where libnvidia-ml cannot be loaded, detect_nvidia answers without importing nvidia-ml-py: what the bindings'
    own nvmlInit raises there (asked of the real module, where installed)."""
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except Exception as e:       # NVMLError_LibraryNotFound, DriverNotLoaded, …
        real = f"NVML unavailable ({e.__class__.__name__})"
    else:
        pynvml.nvmlShutdown()
        real = None
    if detect._nvml_library_missing():
        assert detect.detect_nvidia() == ([], real)
    else:                        # a machine with the library: the bindings decide, as before
        assert real != "NVML unavailable (NVMLError_LibraryNotFound)"


# /proc/meminfo as a Linux 6.x kernel writes it (proc(5)), the lines psutil's virtual_memory reads
MEMINFO = """MemTotal:       24684084 kB
MemFree:        20550784 kB
{available}Buffers:           25400 kB
Cached:           976148 kB
SwapCached:            0 kB
Active:           555580 kB
Inactive:        3294040 kB
Active(file):     553936 kB
Inactive(file):   438528 kB
Shmem:              8872 kB
SReclaimable:      99300 kB
Slab:             162968 kB
"""


@pytest.mark.parametrize("available", ["MemAvailable:   21299332 kB\n",      # the kernel's estimate: read as is
                                       "MemAvailable:          0 kB\n",      # psutil issue 1915: psutil estimates
                                       "MemAvailable:   99999999 kB\n",      # past MemTotal (LXC): psutil's MemFree
                                       ""])                                   # before Linux 3.14: psutil estimates
def test_ram_is_what_psutil_reads(available, tmp_path, monkeypatch):
    psutil = pytest.importorskip("psutil")
    if not sys.platform.startswith("linux"):
        pytest.skip("psutil reads /proc/meminfo on Linux only")
    (tmp_path / "meminfo").write_text(MEMINFO.format(available=available))
    monkeypatch.setattr(psutil, "PROCFS_PATH", str(tmp_path))           # psutil reads the same file
    monkeypatch.setattr(detect, "MEMINFO", str(tmp_path / "meminfo"))
    with warnings.catch_warnings():        # (psutil warns of the fields the sample leaves out, set to 0)
        warnings.simplefilter("ignore", RuntimeWarning)
        vm = psutil.virtual_memory()
    assert detect.system_ram() == (vm.total, vm.available)

"""A fix's summary names the fullest GPU, not the first (fixes20a's noticed-and-left). The figures are llama.cpp's
plan of llama-3.1-70b Q4_K_M at -c 32768 on an RTX 3060 12GB and an RTX 3090, in that order (the per-device table of
`runlocal check llama-3.1-70b --gpu 3060,3090 --ctx 32768`), worked by hand:
  RTX 3060 12GB  10.51 GiB of 11.75 → 10.51 / 11.75 = 0.894
  RTX 3090       22.16 GiB of 23.58 → 22.16 / 23.58 = 0.940   ← the fuller, though listed second."""

from __future__ import annotations

from runlocal.fixes_replan import _peak
from runlocal.runtimes import Allocation, Settings
from runlocal.runtimes.base import DeviceMemory

GiB = 1 << 30


def gpu(name: str, used: float, capacity: float) -> DeviceMemory:
    return DeviceMemory(name, "gpu", int(capacity * GiB), weights=int(used * GiB))


def test_the_fullest_gpu_is_named_whatever_the_order():
    small, big = gpu("NVIDIA GeForce RTX 3060 12GB", 10.51, 11.75), gpu("NVIDIA GeForce RTX 3090", 22.16, 23.58)
    ram = DeviceMemory("CPU RAM", "cpu", 32 * GiB, weights=int(14.95 * GiB))
    for devices in ((small, big, ram), (big, small, ram)):
        assert _peak(Allocation(Settings(), devices, 0)) == "22.2 GiB of 23.6 GiB on NVIDIA GeForce RTX 3090"


def test_a_cpu_only_plan_names_the_ram():
    ram = DeviceMemory("CPU RAM", "cpu", 16 * GiB, weights=8 * GiB)
    assert _peak(Allocation(Settings(), (ram,), 0)) == "8 GiB of 16 GiB on CPU RAM"

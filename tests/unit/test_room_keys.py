"""search.room() and fits_room keep one room per device where several GPUs share a name (`--gpu 4x3090` names all
four "NVIDIA GeForce RTX 3090"): keyed by name alone they were one — the last GPU's —, so a guided search followed
one GPU's room and --fit's margin (margin_held) was checked on the last GPU only."""

from __future__ import annotations

from runlocal.runtimes import Allocation, DeviceMemory, Settings
from runlocal.search import device_keys, fits_room, room

GiB = 1 << 30
MARGIN = 1 * GiB


def _alloc(gpu_totals: list[int]) -> Allocation:
    devices = tuple(DeviceMemory("RTX 3090", "gpu", 24 * GiB, weights=t) for t in gpu_totals)
    return Allocation(Settings(runtime="llama.cpp", ctx=4096), (*devices, DeviceMemory("CPU RAM", "cpu", 64 * GiB)),
                      kv_bytes_per_token=0)


class _Runtime:
    """Plans the allocation given; keeps --fit's margin free on each GPU (as LlamaCpp.kept_free, keyed by name)."""

    def __init__(self, a: Allocation) -> None:
        self.a = a

    def allocate(self, *args, **kwargs) -> Allocation:
        return self.a

    @staticmethod
    def kept_free(settings, targets, *, held: bool = False) -> dict[str, int]:
        return {"RTX 3090": MARGIN} if held else {}


def test_every_gpu_of_one_name_has_its_room():
    assert device_keys(["RTX 3090", "RTX 3090", "CPU RAM", "RTX 3090"]) == ["RTX 3090", "RTX 3090 #2", "CPU RAM",
                                                                          "RTX 3090 #3"]
    left = room(_alloc([23 * GiB, 20 * GiB]))
    # by hand: 24 − 23 = 1 GiB on the first, 24 − 20 = 4 GiB on the second, 64 GiB on the host
    assert left == {"RTX 3090": 1 * GiB, "RTX 3090 #2": 4 * GiB, "CPU RAM": 64 * GiB}


def test_the_margin_is_held_on_every_gpu_not_only_the_last():
    # the first GPU leaves 0.5 GiB (under --fit's 1 GiB margin), the last 4 GiB: with the margin held, it does not pass
    a = _alloc([int(23.5 * GiB), 20 * GiB])
    passed, left = fits_room(_Runtime(a), None, None, a.settings, [], margin_held=True)   # type: ignore[arg-type]
    assert not passed
    assert left == {"RTX 3090": -0.5 * GiB, "RTX 3090 #2": 3 * GiB, "CPU RAM": 64 * GiB}
    passed, _ = fits_room(_Runtime(a), None, None, a.settings, [], margin_held=False)     # type: ignore[arg-type]
    assert passed

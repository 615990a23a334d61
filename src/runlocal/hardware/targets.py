"""What the user asked to plan on (--gpu / --vram / --ram, or this machine) → runtime Targets."""

from __future__ import annotations

from ..errors import InputError
from ..runtimes import Target
from ..units import parse_size

DEFAULT_RAM = 32 * 1024**3


def targets_from_options(gpu: str | None, vram: str | None, ram: str | None) -> tuple[list[Target], list[str]]:
    """Returns the targets and notes on where their sizes came from."""
    notes: list[str] = []
    targets: list[Target] = []
    ram_bytes = parse_size(ram, field="ram") if ram else None
    gpu_key = (gpu or "").strip().lower()
    if gpu_key in ("", "auto") and not vram:
        from .detect import detect_system

        info = detect_system()
        notes += list(info.notes)
        for g in info.gpus:
            targets.append(Target(f"{g.name} #{g.index}", "gpu", g.free, None, g.total))
            notes.append(f"{g.name} #{g.index}: {g.free / 2**30:.1f} GiB free now of {g.total / 2**30:.1f} GiB")
        targets.append(Target("CPU RAM", "cpu", ram_bytes or info.ram_available, None, info.ram_total))
        if not ram_bytes:
            notes.append(f"RAM: {info.ram_available / 2**30:.1f} GiB available now of {info.ram_total / 2**30:.1f} GiB")
        return targets, notes
    if gpu_key in ("none", "cpu"):
        if vram:
            raise InputError("vram: --gpu none plans a CPU-only run; drop --vram")
        return [Target("CPU RAM", "cpu", ram_bytes or DEFAULT_RAM)], notes
    if vram:
        size = parse_size(vram, field="vram")
        targets.append(Target(gpu or "GPU", "gpu", size, None, size))
    else:
        from .catalog import parse_device_spec

        for dev in parse_device_spec(gpu):  # type: ignore[arg-type]
            unified = getattr(dev, "unified_memory", False)
            cap = dev.gpu_usable_bytes if unified else dev.memory_bytes
            targets.append(Target(dev.name, "unified" if unified else "gpu", cap, dev.bandwidth_gbs, dev.memory_bytes))
            if unified:
                notes.append(f"{dev.name}: unified memory, GPU may use {cap / 2**30:.1f} of {dev.memory_bytes / 2**30:.0f} GiB")
    if not any(t.kind == "unified" for t in targets):
        targets.append(Target("CPU RAM", "cpu", ram_bytes or DEFAULT_RAM))
        if not ram_bytes:
            notes.append(f"RAM: assumed {DEFAULT_RAM // 2**30} GiB (set --ram)")
    return targets, notes

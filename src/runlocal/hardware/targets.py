"""What the user asked to plan on (--gpu / --vram / --ram, or this machine) → runtime Targets."""

from __future__ import annotations

from ..errors import InputError
from ..request import parse_ram
from ..runtimes import Target
from ..units import parse_sizes
from .catalog import DEFAULT_UNIFIED_SHARE, Device, names_bare_cpu
from .unified_memory import LINUX_TTM_DEFAULT, UNIFIED_HOST

DEFAULT_RAM = 32 * 1024**3
# A CPU-only plan uses the RAM given (or assumed) whole: no runtime keeps a fixed share of it for the OS. llama.cpp's
# --fit returns before any margin without a GPU (src/llama.cpp llama_params_fit_impl: "no devices with dedicated memory
# found"); Ollama compares what a model needs in RAM with the memory free at load plus free swap (llm/server.go: "On
# linux and windows, over-allocating CPU memory will almost always result in an error", available := FreeMemory +
# FreeSwap → "model requires more system memory … than is available"), so what the OS and other programs hold is
# outside "free". So the plan says nothing is reserved, and --ram is best the RAM free (detected plans read it so).
NO_OS_RESERVE = ("RAM: all {gib:g} GiB planned as usable, nothing kept for the OS and other programs (neither "
                 "llama.cpp's --fit, which keeps a margin only on devices with their own memory, nor Ollama, which "
                 "checks the RAM free at load plus swap, reserves any): set --ram to the RAM free, e.g. free -g's "
                 "'available'")


# catalog._cpu_with_ram: how a size written with a CPU name is read, said in the plan where it applied
CPU_SIZE_RULE = ("a size written with a CPU name ('cpu-32gb', 'ddr4-3200 64gb') is the RAM, as --ram is: it keeps "
                 "the memory kind and channels named, and a bare cpu / none takes the 2-channel DDR5-5600 that "
                 "--gpu none assumes")


def _sized(dev) -> bool:
    """Whether a CPU device carries a RAM size other than its catalog entry's (a size was written with its name)."""
    from .catalog import load_devices

    return any(d.id == dev.id and d.memory_bytes != dev.memory_bytes for d in load_devices())


def targets_from_options(gpu: str | None, vram: str | None, ram: str | None) -> tuple[list[Target], list[str]]:
    """Returns the targets and notes on where their sizes came from."""
    notes: list[str] = []
    targets: list[Target] = []
    ram_bytes = parse_ram(ram) if ram else None
    gpu_key = (gpu or "").strip().lower()
    if gpu_key in ("", "auto") and not vram:
        return _detected_targets(ram_bytes)
    if gpu_key in ("none", "cpu"):
        if vram:
            raise InputError("vram: --gpu none plans a CPU-only run; drop --vram")
        if not ram_bytes:
            notes.append(f"RAM: assumed {DEFAULT_RAM // 2**30} GiB (set --ram)")
        notes.append(NO_OS_RESERVE.format(gib=(ram_bytes or DEFAULT_RAM) / 2**30))
        return [Target("CPU RAM", "cpu", ram_bytes or DEFAULT_RAM)], notes
    host: Target | None = None
    sizes = parse_sizes(vram, field="vram") if vram else None
    picked = _named_devices(gpu, raise_unknown=sizes is None) if gpu_key else None
    if sizes is not None and picked is None:
        # GPUs known by their memory alone; a name the catalog does not know only labels them
        for i, size in enumerate(sizes):
            name = gpu or "GPU"
            targets.append(Target(name if len(sizes) == 1 else f"{name} #{i}", "gpu", size, None, size))
    else:
        from .catalog import variant_notes

        assert gpu is not None and picked is not None     # no --vram: gpu_key is neither '' nor 'auto'
        notes += variant_notes(gpu)          # "m3 max" → the 36 GB one: said, with the other sizes
        picked, laptop_ram = _laptop_ram(gpu, picked)
        usable = _vram_overrides(gpu, picked, sizes)
        for k, dev in enumerate(picked):
            if dev.kind == "cpu":
                # A CPU-only system: its RAM is the host, planned as a CPU run (or the host beside GPUs).
                if host is not None:
                    raise InputError(f"gpu: name one CPU memory system, not several ('{host.name}' and '{dev.name}')")
                size = ram_bytes or dev.memory_bytes
                # a bare cpu / none with a size names no memory: its bandwidth is --gpu none's assumption (None here,
                # DEFAULT_RAM_BANDWIDTH_GBS in the speed model), not a fact measured.py may bound a record by
                assumed = names_bare_cpu(gpu)
                host = Target(f"CPU RAM ({dev.name.removeprefix('CPU, ')})", "cpu", size,
                              None if assumed else dev.bandwidth_gbs, size)
                notes.append(f"{dev.name}: a CPU run on {size / 2**30:.0f} GiB of RAM at "
                             f"{dev.bandwidth_gbs:g} GB/s" + ("" if ram_bytes else " (set --ram for another size)")
                             + (f"; {CPU_SIZE_RULE}" if not ram_bytes and _sized(dev) else ""))
                continue
            unified = getattr(dev, "unified_memory", False)
            cap = dev.gpu_usable_bytes if unified else (dev.cuda_total_bytes or dev.memory_bytes)
            if usable is not None:
                cap = _vram_said(dev, cap, usable[k], notes)
            elif dev.cuda_total_bytes and not unified and not any(n.startswith(dev.name + ":") for n in notes):
                notes.append(f"{dev.name}: {dev.cuda_total_bytes / 2**30:.2f} GiB as CUDA reports its total "
                             f"(marketed {dev.memory_gib:g} GiB; {dev.cuda_total_source})")
            bandwidth = laptop_ram.bandwidth_gbs if laptop_ram and unified else dev.bandwidth_gbs
            targets.append(Target(dev.name, "unified" if unified else "gpu", cap, bandwidth, dev.memory_bytes))
            if unified:
                notes += _laptop_ram_note(dev, laptop_ram)
                # a measured share (share_source: a runtime's log of the working set) is the device's; without one it
                # is runlocal's assumption (catalog.DEFAULT_UNIFIED_SHARE), and the note says so
                whose = ("" if dev.gpu_memory_share is not None else
                         f" (runlocal's assumed {DEFAULT_UNIFIED_SHARE:.0%}, not the device's limit: none is measured "
                         "for it)")
                if usable is not None:
                    whose = " (as --vram gives it)"     # not the assumed share the words above name (review23 #6)
                if dev.share_source == LINUX_TTM_DEFAULT:
                    whose = " (Linux's default GTT limit, half the RAM: the ttm module's pages_limit raises it)"
                notes.append(f"{dev.name}: unified memory, GPU may use {cap / 2**30:.1f} of "
                             f"{dev.memory_bytes / 2**30:.0f} GiB{whose}")
                # What the CPU side holds (llama.cpp's token embedding, host buffers, CPU layers) lives in the RAM
                # the GPU side leaves: planned against the whole RAM, judged against RAM − the GPU side's use
                # (hardware/unified_memory.py, verdict.fits)
                if host is None:
                    host = Target(UNIFIED_HOST, "cpu", dev.memory_bytes, bandwidth, dev.memory_bytes)
    if host is not None:
        if not targets:             # a CPU memory system named alone: a CPU-only run
            notes.append(NO_OS_RESERVE.format(gib=host.capacity / 2**30))
        return targets + [host], notes
    targets.append(Target("CPU RAM", "cpu", ram_bytes or DEFAULT_RAM))
    if not ram_bytes:
        notes.append(f"RAM: assumed {DEFAULT_RAM // 2**30} GiB (set --ram)")
    return targets, notes


def _detected_targets(ram_bytes: int | None) -> tuple[list[Target], list[str]]:
    """This machine's GPUs (free memory now) and RAM (available now, or --ram), with notes on each."""
    from .detect import detect_system

    info = detect_system()
    notes, targets = list(info.notes), []
    for g in info.gpus:
        targets.append(Target(f"{g.name} #{g.index}", "unified" if g.unified else "gpu", g.free,
                              _catalog_bandwidth(g.name), g.total))
        notes.append(f"{g.name} #{g.index}: {g.free / 2**30:.1f} GiB free now of {g.total / 2**30:.1f} GiB"
                     + (" (the GPU's working-set limit of unified memory)" if g.unified else ""))
    targets.append(Target("CPU RAM", "cpu", ram_bytes or info.ram_available, None, info.ram_total))
    if not ram_bytes:
        notes.append(f"RAM: {info.ram_available / 2**30:.1f} GiB available now of {info.ram_total / 2**30:.1f} GiB")
    return targets, notes


def _laptop_ram(gpu: str, picked: list) -> tuple[list, Device | None]:
    """A laptop iGPU named with its RAM (--gpu 780m,ddr5-5600): the devices without the RAM, and the RAM's catalog entry,
    whose bandwidth the iGPU and the CPU side then read; the RAM must be one the chip's spec page lists
    (memory_alternatives). Otherwise the devices as named and None."""
    rams = [d for d in picked if d.kind == "cpu"]
    igpus = [d for d in picked if d.memory_alternatives]
    if not (rams and igpus):
        return picked, None
    if len(rams) > 1 or len(igpus) > 1:
        raise InputError(f"gpu: name one laptop iGPU and one RAM, e.g. {igpus[0].family},ddr5-5600; got '{gpu}'")
    ram, igpu = rams[0], igpus[0]
    if ram.id not in igpu.memory_alternatives:
        raise InputError(f"gpu: {igpu.name} takes {igpu.memory_type}-{igpu.memory_mts} or "
                         f"{' / '.join(_ram_words(a) for a in igpu.memory_alternatives)} (its spec page); got {ram.name}")
    return [d for d in picked if d is not ram], ram


def _ram_words(device_id: str) -> str:
    from .catalog import find_device

    return find_device(device_id).name.removeprefix("CPU, 2-channel ")


def _laptop_ram_note(dev, ram) -> list[str]:
    """What a laptop iGPU's bandwidth assumes: its fastest memory unless the RAM was named (review20b: the 780M's
    120 GB/s is LPDDR5X-7500; a DDR5-5600 laptop reads 89.6 GB/s)."""
    if not dev.memory_alternatives:
        return []
    if ram is not None:
        return [f"{dev.name}: its RAM planned as {ram.name.removeprefix('CPU, 2-channel ')}, {ram.bandwidth_gbs:g} GB/s "
                "for the GPU and the CPU side"]
    from .catalog import find_device

    others = [find_device(a) for a in dev.memory_alternatives]
    slower = ", ".join(f"{o.name.removeprefix('CPU, 2-channel ')} {o.bandwidth_gbs:g} GB/s" for o in others)
    return [f"{dev.name}: bandwidth assumed {dev.bandwidth_gbs:g} GB/s, {dev.memory_type}-{dev.memory_mts}, the fastest "
            f"memory the chip takes; the laptop's RAM may be slower ({slower}): name it, e.g. --gpu "
            f"{dev.family.removeprefix('radeon-')},{(others[0].memory_type or 'ddr').lower()}-{others[0].memory_mts}"]


def _named_devices(gpu: str | None, raise_unknown: bool) -> list | None:
    """The catalog's devices for --gpu; None where the catalog does not know the name and --vram sizes the GPUs (the
    name then only labels them); without --vram, the catalog's own error."""
    from .catalog import UnknownDeviceError, parse_device_spec

    try:
        return parse_device_spec(gpu or "")
    except UnknownDeviceError:
        if raise_unknown:
            raise
        return None


def _vram_overrides(gpu: str, picked: list, sizes: list[int] | None) -> list[int] | None:
    """--vram beside a GPU the catalog knows: the memory each may use (README: "--vram … the memory runlocal may use
    of a named GPU"), one size for all or one per GPU, never more than the card has: a 12 GiB "rtx-4090" is a 4090
    with 12 GiB free, said in the notes, not a card of 12 GiB (review18 finding 10)."""
    if sizes is None:
        return None
    if any(d.kind == "cpu" for d in picked):
        raise InputError(f"vram: --gpu {gpu} names a CPU system; drop --vram (--ram sizes its memory)")
    if len(sizes) not in (1, len(picked)):
        raise InputError(f"vram: {len(sizes)} sizes for the {len(picked)} GPUs of --gpu {gpu}; give one size or one "
                         "per GPU")
    usable = sizes * len(picked) if len(sizes) == 1 else list(sizes)
    for dev, size in zip(picked, usable):
        # the marketed size: a unified-memory chip's share may be raised up to its RAM (the ttm limit,
        # hardware/unified_memory.py), and a log's total (diagnose) may sit a hair above the catalog's rounded CUDA
        # total (79.19 GiB read, 79.18 listed for an H100)
        has = dev.memory_bytes
        if size > has:
            raise InputError(f"vram: {size / 2**30:g} GiB is more than {dev.name} has ({has / 2**30:.3g} GiB); with "
                             "a named GPU --vram is the memory it may use — drop --gpu to plan a GPU of that size")
    return usable


def _vram_said(dev, cap: int, usable: int, notes: list[str]) -> int:
    """--vram's size for a catalog GPU, said once per size in the notes."""
    if not any(n.startswith(f"{dev.name}: --vram {usable / 2**30:.1f} ") for n in notes):
        notes.append(f"{dev.name}: --vram {usable / 2**30:.1f} GiB planned as the memory it may use, not its "
                     f"{cap / 2**30:.1f} GiB (assumed: other programs hold the rest, or you set that share); its "
                     "bandwidth and kind are the catalog's")
    return usable


def _catalog_bandwidth(name: str) -> float | None:
    """A detected GPU's memory bandwidth from the catalog, for the speed model (None if unknown)."""
    from .catalog import find_device

    try:
        return find_device(name).bandwidth_gbs
    except ValueError:
        return None

"""Unified memory (Apple silicon, DGX Spark, Strix Halo): the GPU and the CPU draw on one RAM.

What the runtimes really do on such a machine:

- llama.cpp (ggml-metal): every Metal buffer is MTLResourceStorageModeShared (ggml/src/ggml-metal/ggml-metal-device.m,
  ggml_metal_buffer_init / newBufferWithLength:options:), so it takes pages of the same RAM the CPU uses. The only
  GPU-side limit is MTLDevice.recommendedMaxWorkingSetSize: ggml-metal reports it as the device's memory
  (ggml-metal-device.m props.max_working_set_size; llama.cpp's CI log on a 16 GB M4 prints "using device Metal
  (Apple M4) - 10922 MiB free" beside "recommendedMaxWorkingSetSize = 11453.25 MB", measurements/public_logs),
  llama.cpp's --fit and -ngl placement count against it, and past it
  ggml-metal only warns ("current allocated size is greater than the recommended max working set size",
  ggml-org/llama.cpp#5206). Nothing caps the CPU side at RAM − working set: what the CPU holds (the token
  embedding, --n-cpu-moe experts, -ngl's CPU layers, host buffers) comes out of the RAM the GPU side does
  not use. The issue-18 miss: gpt-oss-20b, `llama-cli -hf ggml-org/gpt-oss-20b-GGUF --n-cpu-moe 12 -fa on
  -c 32768 --jinja --no-mmap` on a 16 GB Mac mini M4 runs at ~26 tokens/s with "RAM 13.05 / 16 GB" in macmon
  (ml-explore/mlx-lm#644; the command ggerganov posted for 16 GB Macs, ggml-org/llama.vscode#105), while the
  CPU side was capped at 16 − 10.67 GiB and the plan was called "does not fit".
  Rule: the GPU side ≤ the working set (its Target's capacity), the CPU side ≤ RAM − what the GPU side holds.
  Above TIGHT_SHARE of the RAM together, macOS and other programs are left little: "tight".

- MLX: its Metal allocator's limit is block_limit_ = min(1.5 × recommendedMaxWorkingSetSize, 0.95 × RAM)
  (ml-explore/mlx mlx/backend/metal/allocator.cpp, MetalAllocator::MetalAllocator); an allocation is refused only
  past it (malloc returns null → the wait-then-swap path), and mlx-lm's wired_limit only wires up to the working
  set and warns above 90 % of it (mlx_lm/generate.py). So a model past the working set but under the block limit
  runs, its pages not wired (macOS may compress or page them: slower) — the issue's Mixtral 8-bit on a 64 GB Mac.
  See mlx_block_limit / past_working_set below (runtimes/mlx.py uses them).

Pure computation (no I/O).
"""

from __future__ import annotations

from dataclasses import replace

from ..units import GiB

# Metal's default MTLDevice.recommendedMaxWorkingSetSize by RAM size, from public logs that state the RAM
# (measurements/apple_working_set/): 2/3 of RAM at 16 and 32 GB, 3/4 from 36 GB (an M4 Max 36 GB on macOS 15.7.7
# prints 28991.03 MB = 27 GiB) to 96 GB, on macOS before 26. macOS 26 and later report more (0.78 at 36-48 GB,
# 0.81 at 64 GB, 0.84 at 128 GB), so on those these shares are a floor.
APPLE_THREE_QUARTERS_FROM = 36 * GiB


def apple_default_working_set(ram_bytes: int) -> int:
    """macOS's default MTLDevice.recommendedMaxWorkingSetSize (what iogpu.wired_limit_mb=0 means) for a Mac with
    ``ram_bytes`` of RAM — hardware/detect.py's estimate where sysctl gives no wired limit, and MLX's default.

    Apple does not document it; the logged values (measurements/apple_working_set/) give 2/3 of RAM at 16 GB
    (abetlen/llama-cpp-python#687) and 32 GB (ollama/ollama#434, ggml-org/llama.cpp#2011), 3/4 from 36 GB (an M4
    Max 36 GB on macOS 15.7.7, ltsaprounis/ai-chess-coach) through 64 GB (ggml-org/llama.cpp#1870) and 96 GB
    (ggml-org/llama.cpp#3213). macOS 26 reports more (0.84 of 128 GB, antirez/ds4#893), not modelled here: this is
    the floor. ``sudo sysctl iogpu.wired_limit_mb=N`` raises it (mlx-lm README, "Large Models")."""
    return ram_bytes * 2 // 3 if ram_bytes < APPLE_THREE_QUARTERS_FROM else ram_bytes * 3 // 4


UNIFIED_HOST = "CPU RAM (unified)"     # the host Target of a unified-memory machine (hardware/targets.py)
MLX_BLOCK_SHARE_OF_WORKING_SET = 1.5   # mlx allocator.cpp: block_limit_ = min(1.5 × max_rec_size, 0.95 × memsize)
MLX_BLOCK_SHARE_OF_RAM = 0.95
# What macOS and the Python process need left of the RAM when MLX runs past the working set. Bounded by two posted
# outcomes: gpt-oss-20b MXFP4-Q8 (mlx_lm "requires 11516 MB") on a 16 GB M4 swapped and failed with 3-5 GiB left
# (ml-explore/mlx-lm#644); a Mixtral 8x7B 8-bit on a 64 GB Mac ran past the 48 GiB working set with ~15 GiB left
# (issue 18's outcome set). 8 GiB is also what macOS keeps out of the working set on the smallest machine where it
# gives the GPU 2/3 (24 GB → 16 GiB working set).
OS_FLOOR = 8 << 30


# AMD APUs on Linux (Strix Halo): the GPU allocates from amdgpu's GTT domain, whose size defaults to what TTM allows
# (amdgpu module parameter gttsize: "-1 (Use value specified by TTM)", docs.kernel.org/gpu/amdgpu/module-parameters.html),
# and TTM's pages_limit defaults to half of RAM (drivers/gpu/drm/ttm/ttm_tt.c; "the kernel default … is system
# memory / 2", AMD's amd-ttm tool, superm1/amd-debug-tools docs/amd-ttm.md): devices.json's gpu_memory_share 0.5,
# share_source linux-ttm-gtt-default. AMD's own guide for these APUs (ROCm docs, "AMD RDNA3.5 system optimization",
# ROCm/rocm-docs docs/reference/system-optimization/rdna3-5.rst) raises that limit, not the BIOS carve-out: "It's
# recommended to keep the dedicated VRAM reservation in BIOS small (for example, 0.5 GB) and increase the shared
# (TTM/GTT) limit instead"; GTT allocations "are dynamic and not permanently reserved". The ttm module parameter
# pages_limit is counted in 4 KiB pages (amd-ttm writes `options ttm pages_limit=N` to /etc/modprobe.d/ttm.conf and
# asks for a reboot: its example, 100 GB = 26,214,400 pages on a 125.65 GB machine). AMD states no ceiling; the
# public 128 GB setups take 120 GiB (lhl/strix-halo-testing llm-bench README: "how to allocate 120GB of memory as GTT
# GPU memory"; whylucian softab's hardware-specs: `options ttm pages_limit=31457280`, 120 GiB) or 124 GiB (kyuz0's
# toolboxes, `amdgpu.gttsize=126976 ttm.pages_limit=32505856`, "4GB OS"). The raise planned is RAM − AMD_OS_FLOOR
# (8 GiB, what the 120 GiB setups leave), and at least 3/4 of the RAM on a small machine (AMD Variable Graphics
# Memory's 96 of 128 GB on Windows, devices.json's note); amdgpu.gttsize need not be set (it defers to TTM).
LINUX_TTM_DEFAULT = "linux-ttm-gtt-default"
AMD_RAISED_SHARE = 0.75
AMD_OS_FLOOR = 8 * GiB
TTM_PAGE_BYTES = 4096


def raised_gpu_share(device, capacity: int) -> int | None:
    """The GPU share of an AMD APU planned at Linux's default GTT limit (``device`` a catalog Device, ``capacity`` its
    target's) once ttm pages_limit is raised to RAM − AMD_OS_FLOOR (at least AMD_RAISED_SHARE of it), in whole pages;
    None for any other device, or where the capacity is not the default share (a --vram given)."""
    if (not getattr(device, "unified_memory", False) or device.vendor != "amd"
            or getattr(device, "share_source", None) != LINUX_TTM_DEFAULT or capacity != device.gpu_usable_bytes):
        return None
    top = max(device.memory_bytes - AMD_OS_FLOOR, int(device.memory_bytes * AMD_RAISED_SHARE))
    raised = top // TTM_PAGE_BYTES * TTM_PAGE_BYTES
    return raised if raised > capacity else None


def raised_wired_limits(device, capacity: int) -> list[int]:
    """A Mac planned at macOS's default GPU working set (``capacity`` = apple_default_working_set of its RAM): the
    working sets ``sudo sysctl iogpu.wired_limit_mb=N`` can give it, whole GiB above the default up to RAM − OS_FLOOR
    (mlx-lm README, "Large Models": N "larger than the size of the model in megabytes but smaller than the memory size
    of the machine"; OS_FLOOR is what macOS and the process are left, as for MLX past the working set). Smallest
    first; empty for any other device, a --vram given, or a Mac whose RAM leaves no room above the default."""
    if (not getattr(device, "unified_memory", False) or device.vendor != "apple"
            or capacity != apple_default_working_set(device.memory_bytes)):
        return []
    top = device.memory_bytes - OS_FLOOR
    return [n * GiB for n in range(capacity // GiB + 1, top // GiB + 1)]


def shared_ram(devices) -> tuple[int, int] | None:
    """(RAM, bytes the unified GPU side holds) when ``devices`` (DeviceMemory) are a unified machine's: a GPU of
    kind "unified" and the host named UNIFIED_HOST, whose capacity is the whole RAM. None otherwise."""
    host = next((d for d in devices if d.kind == "cpu" and d.name == UNIFIED_HOST), None)
    gpu_side = [d for d in devices if d.kind == "unified"]
    if host is None or not gpu_side:
        return None
    return host.capacity, sum(d.total for d in gpu_side)


def with_shared_host(devices):
    """``devices`` with the unified host's capacity set to what the GPU side leaves of the RAM (its capacity
    when planned is the whole RAM): what verdict.fits judges and what the plan shows."""
    ram = shared_ram(devices)
    if ram is None:
        return tuple(devices)
    total, gpu_used = ram
    return tuple(replace(d, capacity=max(1, total - gpu_used)) if d.kind == "cpu" and d.name == UNIFIED_HOST else d
                 for d in devices)


def over_shared_share(devices, share: float) -> bool:
    """GPU side and CPU side together above ``share`` of a unified machine's RAM (little left for the OS)."""
    ram = shared_ram(devices)
    if ram is None:
        return False
    total, gpu_used = ram
    host = sum(d.total for d in devices if d.kind == "cpu")
    return gpu_used + host > share * total


def mlx_block_limit(working_set: int, ram: int | None) -> int:
    """MLX's Metal allocator limit (allocator.cpp): min(1.5 × working set, 0.95 × RAM)."""
    limit = int(MLX_BLOCK_SHARE_OF_WORKING_SET * working_set)
    return min(limit, int(MLX_BLOCK_SHARE_OF_RAM * ram)) if ram else limit


def past_working_set(used: int, working_set: int, ram: int | None) -> str | None:
    """The compromise of an MLX plan above the working set but within the allocator's limit and leaving macOS
    OS_FLOOR of the RAM, or None (within the working set: nothing to say; past those: it does not run)."""
    if used <= working_set or used > mlx_block_limit(working_set, ram) or not ram or ram - used < OS_FLOOR:
        return None
    return (f"past the GPU working set ({used / 2**30:.1f} of {working_set / 2**30:.1f} GiB): MLX allocates up to "
            f"{mlx_block_limit(working_set, ram) / 2**30:.1f} GiB (1.5 × the working set, at most 0.95 × RAM) and "
            "wires only the working set — it runs, macOS may page the rest (slower); "
            "sudo sysctl iogpu.wired_limit_mb raises the working set")


def settle_shared(plan):
    """``plan`` shown with the unified host's capacity as judged (RAM − the GPU side's use), not the whole RAM
    it was planned against."""
    alloc = plan.allocation
    devices = with_shared_host(alloc.devices)
    return plan if devices == tuple(alloc.devices) else replace(plan, allocation=replace(alloc, devices=devices))

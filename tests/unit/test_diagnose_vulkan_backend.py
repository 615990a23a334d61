"""review22 findings 4 and 11 (session 22, fixes22d): a Vulkan allocation failure on an AMD GPU named by the driver's
own words and answered with fixes for that backend, and the raise of an AMD APU's GPU memory worded as `check` words it.

The texts are public pastes not in measurements/public_errors (grep of each distinctive string, 2026-11-27), each with
its URL, and contrasts that keep a paste and change the decisive part. Expected values come from the texts themselves
and from the driver's source, written out here, not from runlocal's code.
"""

from __future__ import annotations

import re

import pytest

from runlocal.diagnose import diagnose_text, kb, vulkan_backend
from runlocal.diagnose.fixes import with_computed_fixes
from runlocal.hardware.catalog import load_devices
from runlocal.hardware.unified_memory import TTM_PAGE_BYTES, raised_gpu_share

# Nathanw1014/strix-halo-llamacpp#8 (2026-08-19; Strix Halo, llama-server in Docker, after raising the context), as
# review22 (E5) pasted it. Mesa's radv_amdgpu_bo.c prints this block when amdgpu_bo_alloc fails; "domains : 2" is
# RADEON_DOMAIN_GTT (radv_radeon_winsys.h: GTT = 2, VRAM = 4).
STRIX_HALO = """radv/amdgpu: Failed to allocate a buffer:
radv/amdgpu:    size      : 4269813760 bytes
radv/amdgpu:    alignment : 262144 bytes
radv/amdgpu:    domains   : 2
radv/amdgpu: Failed to allocate a buffer:
radv/amdgpu:    size      : 4269813760 bytes
radv/amdgpu:    alignment : 262144 bytes
radv/amdgpu:    domains   : 2
"""

# geerlingguy/raspberry-pi-pcie-devices#706 (an RX 7600 XT, discrete, 16 GB; llama.cpp's Vulkan build loading a 7 GB
# Q8_0 file): RADV's block (domains 4 = VRAM), then ggml's own lines naming the weights' buffer
RX_7600_XT = """radv/amdgpu: Failed to allocate a buffer:
radv/amdgpu:    size      : 4248715264 bytes
radv/amdgpu:    alignment : 262144 bytes
radv/amdgpu:    domains   : 4
ggml_vulkan: Device memory allocation of size 4248715264 failed.
ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory
llama_model_load: error loading model: unable to allocate Vulkan0 buffer
llama_model_load_from_file_impl: failed to load model
common_init_from_params: failed to load model 'models/mistral-7b-instruct-v0.2.Q8_0.gguf'
main: error: unable to load model
"""

# ggml-org/llama.cpp#14698, a comment (Radeon 890M / HX 370, an APU: "uma: 1"; skipped by collect48 as the Vulkan
# allocation-limit message): ggml_vulkan's per-allocation cap, refused before the driver is asked — not the device's
# memory, so no raise of the GPU's share
RADEON_890M_CAP = ("ggml_vulkan: 0 = AMD Radeon Graphics (RADV GFX1150) (radv) | uma: 1 | fp16: 1 | warp size: 64 | "
                   "shared memory: 65536 | int dot: 1 | matrix cores: KHR_coopmat\n" + """\
load_tensors: loading model tensors, this can take a while... (mmap = true)
ggml_vulkan: Device memory allocation of size 4697620480 failed.
ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory
alloc_tensor_range: failed to allocate Vulkan0 buffer of size 4697620480
llama_model_load: error loading model: unable to allocate Vulkan0 buffer
""")

_NVIDIA_ONLY = re.compile(r"nvidia-smi|CUDA_VISIBLE_DEVICES|vllm serve|TrainingArguments|from_pretrained")


def _answer(text: str) -> tuple[dict, list[str]]:
    doc = with_computed_fixes(diagnose_text(text))
    return doc, [f["command"] for f in doc["fixes"]]


def _pages_on(command: str, memtotal_kib: int) -> int:
    """The pages_limit the line writes on a machine whose /proc/meminfo MemTotal is ``memtotal_kib``: its awk program
    read back and run as awk runs it (p = int(kB / 4); a = p − floor; b = int(p × 3 / 4); the larger)."""
    m = re.search(r"p = int\(\$2 / (\d+)\); a = p - (\d+); b = int\(p \* (\d+) / (\d+)\); print \(a > b \? a : b\)",
                  command)
    assert m, command
    kib_per_page, floor, num, den = (int(g) for g in m.groups())
    p = memtotal_kib // kib_per_page
    return max(p - floor, p * num // den)


def test_the_strix_halo_radv_refusal_is_a_vulkan_gtt_failure_not_cuda() -> None:
    doc, commands = _answer(STRIX_HALO)
    assert doc["category"] == "llamacpp_alloc_fail"          # memory, and a ggml runtime's (the Vulkan LLM runtimes)
    assert "RADV" in doc["title"] and "CUDA" not in doc["title"]
    assert doc["extracted"]["vk_domains"] == 2 and doc["extracted"]["vk_failed_allocation_bytes"] == 4269813760
    assert not any(_NVIDIA_ONLY.search(c) for c in commands), commands
    # fix 1 raises the GTT limit: TTM's pages_limit in 4 KiB pages; the 4,269,813,760 B buffer = 3.98 GiB
    assert "ttm pages_limit" in commands[0] and "3.98 GiB" in doc["fixes"][0]["effect"]
    # on a 128 GiB Strix Halo (MemTotal 134,217,728 kB if the kernel saw all of it) the line writes 120 GiB:
    # (128 − 8) GiB / 4 KiB = 31,457,280 pages, the `options ttm pages_limit=31457280` of the public 120 GiB setups
    # (whylucian softab's hardware-specs, as fixes22b cites them); on a 16 GiB laptop 3/4 is more than RAM − 8 GiB:
    # 16 GiB × 0.75 / 4 KiB = 3,145,728 pages (12 GiB)
    assert _pages_on(commands[0], 128 * 1024 * 1024) == 31_457_280
    assert _pages_on(commands[0], 16 * 1024 * 1024) == 3_145_728
    assert any("-c 8192" in c and "q8_0" in c for c in commands)   # a shorter context, a quantized KV cache


def test_a_discrete_radeon_keeps_ggml_weights_answer_and_gets_amd_tools() -> None:
    doc, commands = _answer(RX_7600_XT)
    assert doc["category"] == "llamacpp_alloc_fail"
    assert "weights" in doc["title"]                          # ggml's own line names the buffer: it wins over RADV's
    assert doc["extracted"]["vk_domains"] == 4               # VRAM: the card's own memory, no share of RAM to raise
    assert not any("pages_limit" in c for c in commands)
    assert not any(_NVIDIA_ONLY.search(c) for c in commands), commands


def test_radv_refusal_from_vram_alone_names_no_share_and_no_nvidia_tool() -> None:
    text = STRIX_HALO.replace("domains   : 2", "domains   : 4")    # the same block, the card's VRAM refused
    doc, commands = _answer(text)
    assert doc["category"] == "llamacpp_alloc_fail" and "RADV" in doc["title"]
    assert not any("pages_limit" in c for c in commands)
    assert any("device/mem_info_" in c for c in commands)       # amdgpu's sysfs counters, not nvidia-smi
    assert not any(_NVIDIA_ONLY.search(c) for c in commands), commands


def test_the_per_allocation_cap_on_an_apu_stays_the_cap() -> None:
    doc, commands = _answer(RADEON_890M_CAP)
    assert doc["category"] == "not_memory"                    # one buffer over maxMemoryAllocationSize, as before
    assert doc["extracted"]["vk_uma"] is True
    assert not any("pages_limit" in c for c in commands)


def test_an_apu_named_on_the_device_line_gets_the_raise_without_radv_lines() -> None:
    # #14698's device line with the device's memory refused (no cap line): uma 1, the GPU draws on system RAM
    text = "\n".join(line for line in RADEON_890M_CAP.splitlines() if "Requested buffer size" not in line)
    text = text.replace("Device memory allocation of size 4697620480 failed.",
                        "Device memory allocation of size 4697620480 failed.\n"
                        "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory")
    doc, commands = _answer(text)
    assert doc["category"] == "llamacpp_alloc_fail"
    assert "ttm pages_limit" in commands[0]
    assert not any(_NVIDIA_ONLY.search(c) for c in commands), commands


@pytest.mark.parametrize("device_line, tool", [
    # NVIDIA's own Vulkan driver ("NVIDIA" as driverName): nvidia-smi sees that card
    ("ggml_vulkan: 0 = NVIDIA GeForce RTX 2060 (NVIDIA) | uma: 0 | fp16: 1 | warp size: 32", "nvidia-smi"),
    # Intel's ANV (Mesa names its source directory in vk_error's line, llama.cpp#8492's wording): no nvidia-smi
    ("MESA: error: ../src/intel/vulkan/anv_device.c:4237: VK_ERROR_OUT_OF_DEVICE_MEMORY", "vulkaninfo"),
    # an NVIDIA card under Mesa's NVK: nvidia-smi needs NVIDIA's own driver
    ("ggml_vulkan: 0 = NVIDIA GeForce RTX 3060 (NVK GA106) (NVK) | uma: 0 | fp16: 1", "vulkaninfo"),
])
def test_the_memory_tool_follows_the_vulkan_driver(device_line: str, tool: str) -> None:
    text = (f"{device_line}\nggml_vulkan: Device memory allocation of size 118497280 failed.\n"
            "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory\n")
    doc, commands = _answer(text)
    assert doc["category"] == "llamacpp_alloc_fail"
    assert any(c.startswith(tool) for c in commands), commands
    if tool != "nvidia-smi":
        assert not any("nvidia-smi" in c for c in commands)


def test_a_cuda_oom_stays_cuda_and_keeps_nvidia_smi() -> None:
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "23.64 GiB of which 1.19 GiB is free. Including non-PyTorch memory, this process has 22.43 GiB memory in "
            "use. Of the allocated memory 21.90 GiB is allocated by PyTorch")
    doc, commands = _answer(text)
    assert doc["category"].startswith("cuda_oom") or doc["category"] == "fragmentation"
    assert "vk_driver" not in doc["extracted"]
    assert not any("pages_limit" in c or "mem_info_" in c for c in commands)


def test_a_vulkan_device_lost_stays_not_memory() -> None:
    text = ("ggml_vulkan: 0 = AMD Radeon RX 7900 XTX (RADV NAVI31) (radv) | uma: 0 | fp16: 1\n"
            "terminate called after throwing an instance of 'vk::DeviceLostError'\n"
            "  what():  vk::Queue::submit: ErrorDeviceLost\n")
    doc, commands = _answer(text)
    assert doc["category"] == "not_memory"
    assert not any("pages_limit" in c for c in commands)


def test_diagnose_and_check_word_the_apu_raise_alike() -> None:
    """review22 finding 11: rocm-hip-oom's APU fix, the Vulkan answer's and `check`'s (fixes.py _unified_share) are one
    raise — the ttm module's pages_limit at hardware/unified_memory.py's share — and amdgpu.gttsize (deprecated, it
    defers to TTM: docs.kernel.org/gpu/amdgpu/module-parameters.html) is no longer offered."""
    rocm = kb.get("rocm-hip-oom")
    assert rocm is not None
    apu = [s for s in rocm.solutions if "APU" in s.title]
    assert len(apu) == 1 and apu[0].commands["any"] == vulkan_backend.TTM_RAISE_COMMAND
    assert "gttsize" not in apu[0].commands["any"]
    assert vulkan_backend.RAISE_TITLE.split("{")[0] in apu[0].title
    # check's figure for the 128 GB Strix Halo: its raised share ÷ 4 KiB pages is what the diagnose line writes on
    # that machine's RAM (MemTotal in kB = RAM ÷ 1024)
    halo = next(d for d in load_devices() if d.id == "ryzen-ai-max-395-128gb")
    raised = raised_gpu_share(halo, halo.gpu_usable_bytes)
    assert raised is not None
    assert _pages_on(vulkan_backend.TTM_RAISE_COMMAND, halo.memory_bytes // 1024) == raised // TTM_PAGE_BYTES


@pytest.mark.parametrize("gfx, apu", [("gfx1151", True), ("gfx1100", False)])
def test_a_rocm_failure_on_an_apu_raises_its_share_first(gfx: str, apu: bool) -> None:
    """ggml's ROCm device line names the gfx target: gfx1151 is Strix Halo's (devices.json gfx_target), gfx1100 a
    discrete RX 7900's. The failing line is antirez/ds4#475's wording (review22 E7)."""
    text = (f"ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon Graphics, {gfx} (0x1151), VMM: no\n"
            "ROCm model arena alloc failed for layer 12 (1792.00 MiB chunk): out of memory\n")
    doc, commands = _answer(text)
    assert doc["category"] == "rocm_oom"
    assert ("ttm pages_limit" in commands[0]) is apu
    assert sum("pages_limit" in c for c in commands) == 1        # the knowledge base's own APU fix, once


def test_a_strix_halo_on_windows_gets_the_variable_graphics_memory_setting() -> None:
    """ggml-org/llama.cpp#13250 (Ryzen AI Max 395, Windows 11, llama-b5255 Vulkan): its device line and its title's
    failing line, verbatim. AMD's Windows driver has no ttm module: the share is Variable Graphics Memory."""
    text = ("ggml_vulkan: 0 = AMD Radeon(TM) 8060S Graphics (AMD proprietary driver) | uma: 1 | fp16: 1 | warp size: 64 "
            "| shared memory: 32768 | int dot: 1 | matrix cores: KHR_coopmat\n"
            "failed to allocate Vulkan0 buffer of size 4342230552\n")
    doc, commands = _answer(text)
    assert doc["category"] == "llamacpp_alloc_fail"
    assert "Variable Graphics Memory" in commands[0] and "ttm" not in commands[0]
    assert "4.04 GiB" in doc["fixes"][0]["effect"]         # 4,342,230,552 B / 2^30 = 4.044
    assert not any("/sys/class" in c for c in commands)     # Linux's sysfs: not on Windows
    assert not any(_NVIDIA_ONLY.search(c) for c in commands), commands

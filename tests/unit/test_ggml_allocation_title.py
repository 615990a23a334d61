"""llamacpp-cuda-malloc's title names the allocation the log names (diagnose19b, left: "device allocation failed
(cudaMalloc out of memory)" for a CPU buffer too). Only the title: the classification is unchanged (the same entry).

The lines are ggml's own messages, from its source:
- ggml-cuda.cu ggml_backend_cuda_buffer_type_alloc_buffer: "%s: allocating %.2f MiB on device %d: cudaMalloc failed: %s"
- ggml-backend.cpp ggml_backend_cpu_buffer_type_alloc_buffer: "%s: failed to allocate buffer of size %zu" (RAM,
  ggml_aligned_malloc) and llama.cpp's "failed to allocate %s buffer of size %zu" with the buffer type's name (CPU)
- ggml-vulkan.cpp: "ggml_vulkan: Device memory allocation of size %zu failed." (vk::Device::allocateMemory)
- ggml-opencl.cpp ggml_backend_opencl_buffer_type_alloc_buffer: "failed to allocate %.2f MiB" (clCreateBuffer)
- ggml-cuda.cu ggml_cuda_host_malloc: cudaMallocHost for a CUDA_Host buffer (page-locked RAM)."""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.answer import ggml_allocation_title

CASES = [
    ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8192.00 MiB on device 0: cudaMalloc failed: out of memory",
     "device allocation failed (cudaMalloc out of memory)"),
    ("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 34359738368",
     "host memory allocation failed (a CPU buffer in RAM, malloc out of memory)"),
    ("failed to allocate CPU buffer of size 17179869184",
     "host memory allocation failed (a CPU buffer in RAM, malloc out of memory)"),
    ("ggml_vulkan: Device memory allocation of size 3959422976 failed.",
     "device allocation failed (vkAllocateMemory out of memory)"),
    ("ggml_backend_opencl_buffer_type_alloc_buffer: failed to allocate 1048.51 MiB",
     "device allocation failed (clCreateBuffer out of memory)"),
]


@pytest.mark.parametrize("line, words", CASES)
def test_the_title_names_the_buffer_the_log_names(line, words):
    d = diagnose_text(line, runtime="llama.cpp")
    assert d.entry is not None and d.entry.id == "llamacpp-cuda-malloc"       # the classification, as before
    assert d.title == f"llama.cpp / ggml: {words}"
    assert ("cudaMalloc" in d.title) == line.startswith("ggml_backend_cuda_")


def test_a_pinned_host_buffer_is_titled_as_page_locked_ram():
    # the title function alone: a CUDA_Host buffer is the classifier's pinned-host answer whenever it gets there
    title = ggml_allocation_title("failed to allocate CUDA_Host buffer of size 2147483648", {"device": "CUDA_Host"})
    assert title == ("llama.cpp / ggml: pinned host allocation failed (page-locked RAM for the GPU, cudaMallocHost out "
                     "of memory)")


def test_no_buffer_named_says_no_device():
    assert ggml_allocation_title("Mixtral OOM", {}) == "llama.cpp / ggml: memory allocation failed (out of memory)"


def test_the_entrys_own_title_covers_every_buffer_its_lines_name():
    """The entry's own title (the errors directory lists it; a diagnosis titles by buffer above) said cudaMalloc alone
    (mends20, left), while the lines it matches — the source lines above — are CUDA, CPU, Vulkan and OpenCL buffers and
    ggml-cuda's cudaMallocHost: every kind is named, cudaMalloc among them."""
    entry = diagnose_text(CASES[0][0], runtime="llama.cpp").entry
    assert entry is not None
    for words in ("cudaMalloc", "hipMalloc", "Vulkan", "pinned host memory", "a CPU buffer in RAM"):
        assert words in entry.title
    assert not entry.title.startswith("llama.cpp / ggml: device allocation failed")

"""`--backend cuda|rocm|vulkan|metal|sycl|cpu` for llama.cpp and Ollama: which ggml backend runs the GPU layers.

What changes with the backend, in the bytes runlocal plans (each rule is the backend's own source or measurement):

- the GPU context: 590 MiB per GPU for the CUDA context, module load and cuBLAS state, measured with NVML on an H100
  (runtimes/llamacpp.py GPU_CONTEXT_OVERHEAD, measurements/llamacpp/README.md). ROCm (HIP builds the same
  ggml-cuda code, with hipBLAS) keeps that figure. Vulkan, Metal and SYCL create no CUDA context and no cuBLAS
  handle; their drivers' own contexts are not measured, so nothing is counted for them and the plan says so.
- a quantized KV row padded to MATRIX_ROW_PADDING: ggml-cuda (CUDA and HIP: common.cuh,
  ggml_backend_cuda_buffer_type_get_alloc_size) and ggml-sycl, whose get_alloc_size is the same rule
  (ggml/src/ggml-sycl/ggml-sycl.cpp ggml_backend_sycl_buffer_type_get_alloc_size: ggml_nbytes plus
  ggml_row_size(type, MATRIX_ROW_PADDING - ne0 % MATRIX_ROW_PADDING) for a quantized tensor, MATRIX_ROW_PADDING 512
  in ggml-sycl/presets.hpp); Vulkan and Metal pad nothing.
- ggml-cuda only (CUDA and HIP): the f16 copies of a quantized cache that its flash-attention kernels convert into
  (ggml-cuda/fattn-common.cuh). ggml-sycl reserved no flash-attention scratch in the compute buffer until PR #27629
  (2026-08-24, "sycl: make --fit respect --fit-target better", mirroring CUDA's #23907); that scratch (f16 K/V and,
  on its oneDNN path, a dense Q and an f16 output) is not modelled, and the plan says so.
- compute buffers: sized by tracing llama.cpp's graph with ggml-alloc and fitted to logs of the CPU and CUDA
  backends (measurements/llamacpp). What ggml-vulkan changes, from its source (ggml/src/ggml-vulkan/ggml-vulkan.cpp):
  ggml_backend_vk_buffer_type_get_alloc_size is ggml_nbytes (no padded quantized rows, no f16 room on a
  FLASH_ATTN_EXT result: both CUDA-only, left out above), alignment minStorageBufferOffsetAlignment (≤ CUDA's 128),
  get_max_size the device's suballocation block, so ggml-alloc splits a large compute buffer into chunks; its
  matmul staging buffers (prealloc_x / prealloc_y for dequantized or converted operands, prealloc_split_k) are
  created by ggml_vk_preallocate_buffers outside ggml-alloc and are not in the logged "Vulkan0 compute buffer"
  (not counted here either: sized per matmul at run time). ops the device does not support (supports_op) run on
  the CPU and leave the Vulkan buffer. The one public Vulkan log with every setting stated (ik_llama.cpp#562,
  mainline build 5781, Llama-3.1-8B Q4_0, -c 16384 -ub 1024 -fa, f16 cache) logs 613.01 MiB where the CUDA-rule
  trace gives 517.00. The 96.01 MiB between them equals that build's f32 KQ mask and its f16 cast (16,384 ×
  1,024 × (4 + 2) B; its host buffer shows the f32 mask), but tracing that build's own graph (--runtime
  llama.cpp==b5781: the f32 input and its cast, runtimes/versions.py, PR #23764) still gives 517.00: both are freed
  before the logits peak, as issue #23527's A/B at b9272 shows on CUDA (3,976 MiB with either mask). The gap is
  unexplained, not a backend rule (tests/unit/test_backends.py); the traced figure is kept for Vulkan. The issue's
  report of Vulkan buffers
  2.7–3.3× below the traced figure (Qwen3-8B / Qwen3-30B-A3B on an RTX 3090) matches instead llama-server's output
  cap since ggml-org/llama.cpp PR #23861 (2026-06): the prompt graph keeps n_parallel rows of logits, not n_ubatch
  (Qwen3-8B traced 2.93× smaller, measurements/llamacpp_server_outputs) — on every backend, and planned so for
  builds with that PR (runtimes/versions.py llamacpp_output_cap).

Not given, the backend follows the GPU's vendor as llama.cpp's release builds do: NVIDIA → cuda, AMD → rocm,
Apple → metal, Intel → sycl, other unified-memory chips → their catalog backend, no GPU → cpu.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..units import MiB
from .base import Step, Target

BACKENDS = ("cuda", "rocm", "vulkan", "metal", "sycl", "cpu")
CUDA_CONTEXT = 590 * MiB            # = llamacpp.GPU_CONTEXT_OVERHEAD (measured on CUDA 13, H100)


@dataclass(frozen=True)
class BackendRules:
    name: str
    gpu_context: int                # bytes per GPU beyond the logged buffers
    ggml_cuda: bool                 # CUDA/HIP kernels: f16 copies for flash attention
    detected: bool                  # True: chosen from the GPU's vendor, not given
    pads_quant_rows: bool = False   # get_alloc_size pads a quantized row to MATRIX_ROW_PADDING (ggml-cuda, ggml-sycl)

    def step(self) -> Step:
        how = "from the GPU's vendor (--backend to choose)" if self.detected else "given"
        if self.ggml_cuda:
            ctx = (f"GPU context {self.gpu_context // MiB} MiB (CUDA context + cuBLAS, measured on CUDA"
                   + ("; HIP/hipBLAS assumed alike" if self.name == "rocm" else "") + ")")
        elif self.name == "cpu":
            ctx = "no GPU context"
        elif self.name == "sycl":
            ctx = ("no CUDA context or cuBLAS state; the SYCL/Level Zero driver's own context is not measured and not "
                   "counted; quantized KV rows padded to 512 as ggml-sycl's get_alloc_size does (as ggml-cuda); its "
                   "flash-attention scratch (reserved since PR #27629) not counted")
        else:
            ctx = (f"no CUDA context or cuBLAS state; the {self.name} driver's own context is not measured and "
                   "not counted; no ggml-cuda row padding or flash-attention f16 copies")
        compute = ("compute buffers as fitted to CUDA/CPU logs" if self.name in ("cuda", "rocm", "cpu") else
                   "compute buffers traced as on CUDA without its padding (ggml-alloc as for every backend); the "
                   f"{self.name} backend's own matmul staging buffers are not counted")
        return Step("backend", f"{self.name} ({how}): {ctx}; {compute}", self.name,
                    "runtimes/backends.py; ggml/src/ggml-cuda (common.cuh, fattn-common.cuh)")


def rules_for(backend: str | None, targets: list[Target]) -> BackendRules:
    """The rules of ``backend``, or of the backend the targets' vendor implies when it is None."""
    name = backend or detect_backend(targets)
    cuda_like = name in ("cuda", "rocm")
    return BackendRules(name, CUDA_CONTEXT if cuda_like else 0, cuda_like, backend is None,
                        pads_quant_rows=cuda_like or name == "sycl")


def detect_backend(targets: list[Target]) -> str:
    gpu = next((t for t in targets if t.kind != "cpu"), None)
    if gpu is None:
        return "cpu"
    from ..hardware.catalog import find_device
    from ..hardware.speed import default_backend, device_class

    try:
        dev = find_device(gpu.name.split(" #")[0])
    except ValueError:
        dev = None
    backend = default_backend(dev, device_class(dev, gpu.kind))
    return backend if backend in BACKENDS else "cuda"

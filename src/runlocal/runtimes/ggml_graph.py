"""The ggml model moved to the package runtimes/ggml/ (types, graph, alloc, arch, sched); this module keeps the old
import path for the tests and benchmarks that use it."""

from .ggml import (  # noqa: F401
    BUILDERS,
    CPU_ALIGNMENT,
    CUDA_ALIGNMENT,
    FLAG_INPUT,
    FLAG_OUTPUT,
    GPU,
    HOST,
    PIPELINE_COPIES,
    TYPES,
    Buffer,
    DynAllocator,
    Graph,
    GraphParams,
    Tensor,
    allocate,
    build_graph,
    cuda_alloc_size,
    n_cpu_moe_overrides,
    reserve_sizes,
    row_size,
    simulate_compute,
    simulate_compute_cuda,
    supported,
    type_size,
)
from .ggml.sched import _layer_devices, _sched_split, weight_devices  # noqa: F401

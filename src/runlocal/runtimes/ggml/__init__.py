"""A small model of the ggml graph llama.cpp reserves, and of ggml-alloc's allocator, to size compute buffers.

llama.cpp sizes each backend's compute buffer by building the worst-case graph and letting ggml-alloc's
graph allocator (ggml/src/ggml-alloc.c, gallocr) place every intermediate tensor in one virtual buffer:
the buffer is the highest offset ever used. That offset depends on the order of the nodes, which tensors
are reused in place, and on the holes the best-fit allocator leaves below big tensors, so no closed formula
tracks it on every architecture. Here the graph is traced again in Python (shapes, strides, ops and sources
only; no data) in the node order ggml's graph builder produces, and run through a re-implementation of the
allocator. On the CUDA build the graph first goes through ggml-backend's scheduler (ggml_backend_sched_split_graph:
which backend runs each node, op offload of big ops on CPU weights, the splits and the copies of their inputs),
for any number of offloaded layers, one GPU or several (--split-mode layer, with pipeline parallelism's copies),
weights placed per tensor (-ot, --n-cpu-moe), and the allocator places the result in one buffer per GPU (CUDA0 …)
and CUDA_Host.
Everything follows the llama.cpp commit llama-cpp-python 0.3.36 vendors (0c1e57098); the functions each part
follows are named where they are modelled. Architectures: BUILDERS. Pure computation, no I/O.

The package follows gguf-py's layout, one module per subsystem, each importing only the ones before it:
types (tensors, block sizes) ← graph (ops, node order) ← periodic (repeated layers) ← alloc (ggml-alloc) ← arch (one builder per
architecture, CPU-only reserve) ← sched (ggml-backend's scheduler and ggml-cuda sizes, CUDA compute buffers); gcpause
(the collector held off) is used by arch and sched.

Functions that mirror one upstream function (alloc.allocate: ggml_gallocr_alloc_graph_impl; sched._sched_split:
ggml_backend_sched_split_graph; the architecture builders: src/models/*.cpp) keep upstream's shape and length on
purpose, so they can be read side by side with the C they follow; the project's ~80-line rule does not split them.
Speed comes from around them: a reserved graph is built once per model and shape and scheduled again for each layer
placement (sched.built_graph), sizes are asked once per tensor, and a run of repeated layers is built as a few
periods only, where ggml-alloc's walk checks at the cut that its state repeats (periodic.py: the same buffers); a
reduced graph serves every placement whose kept layers have the same shapes, renamed (periodic.layer_shapes), and
CPython's cyclic collector waits while a graph is simulated (gcpause.py). Across contexts (affine.py, asked by
runtimes/llamacpp_compute.py): a graph shape asked at a second context is built and scheduled once with n_kv as an
affine symbol (each comparison narrows the interval where it holds), ggml-alloc's walk recorded (alloc.Program) and
replayed at each context, or answered by an exact affine piece where a search closes in.
"""

from ..ggml_scope import PIPELINE_COPIES, n_cpu_moe_overrides
from .alloc import Buffer, DynAllocator, allocate
from .arch import (
           BUILDERS,
           GraphParams,
           build_graph,
           reserve_sizes,
           simulate_compute,
           supported,
)
from .graph import Graph
from .sched import (
           GPU,
           HOST,
           cuda_alloc_size,
           simulate_compute_cuda,
)
from .types import (
           CPU_ALIGNMENT,
           CUDA_ALIGNMENT,
           FLAG_INPUT,
           FLAG_OUTPUT,
           TYPES,
           Tensor,
           row_size,
           type_size,
)

__all__ = ["BUILDERS", "CPU_ALIGNMENT", "CUDA_ALIGNMENT", "FLAG_INPUT", "FLAG_OUTPUT", "GPU", "HOST", "PIPELINE_COPIES",
           "TYPES", "Buffer", "DynAllocator", "Graph", "GraphParams", "Tensor", "allocate", "build_graph",
           "cuda_alloc_size", "n_cpu_moe_overrides", "reserve_sizes", "row_size", "simulate_compute",
           "simulate_compute_cuda", "supported", "type_size"]

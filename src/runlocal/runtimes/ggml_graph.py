"""The ggml model moved to the package runtimes/ggml/ (types, graph, alloc, arch, sched); this module keeps the old
import path for the tests and benchmarks that use it."""

from .ggml import *
from .ggml.sched import _layer_devices, _sched_split, _weight_devices  # noqa: F401

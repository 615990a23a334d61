"""Whether llama-server's --fit over several GPUs surely leaves weights of a dense model in system memory, known
without tracing a compute graph: fit.cpp's own fill (llamacpp_fit_devices.fit_devices) run on each GPU's floor (its
bytes without the compute buffer, LlamaCpp.floor) instead of its use.

Why the floor's fill bounds the real one (dense models: whole layers only, no -ot rules). The fill gives the GPUs,
back to front, contiguous slices of the n_layers + 1 slots: GPU d takes the most slots in front of GPU d + 1's slice
whose use stays within its target (capacity less --fit's margin), found exactly by the false-position search for a
use that grows with the slice. A GPU's floor is its slice's weights, KV cache and the backend's context — its own
slice's bytes alone, growing with the slice, and at most its use (compute buffers are never negative). By induction
from the back, the floor's fill reaches at least as far to the front as the real fill on every GPU: where the real
slice of GPU d is [p, q) and the floor's GPU d + 1 starts at q' ≤ q, the slice [p, q') is inside [p, q), so its floor
is within the target, and the floor's search takes at least it. So the real fill leaves in system memory at least the
blocks the floor's fill leaves there, and their weights. Used by `best` (choose._fitted_plan): a row whose --fit plan
surely moves more than plan_fit's tolerance of weights to RAM is not a run held whole, and its whole --fit search
(a graph simulation per probe) is not needed to say so.

every_layer_surely_moved: a coarser bound for any model, the max-context search's (plan._layered_max_context): --fit
keeps every layer on the GPUs only where each GPU's use, at the split it ends with, is within its target (step 1's
default split, or a fill that placed all n_layers + 1 slots, each GPU's slice accepted only within its target and
its bytes without compute its own slice's alone). So the GPUs' floors at that split sum to at most the targets' sum;
and whatever the split, they sum to at least one GPU's floor holding every layer: the same tensors, KV cells and
recurrent states, ggml-cuda's row padding once per cache group (a split pads it on each GPU holding the group),
the backend's context once (a split counts it on each GPU in use)."""

from __future__ import annotations

from dataclasses import replace

from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from .base import Settings, Target
from .llamacpp_fit_devices import Layers, Overflow, fit_devices, fit_flags
from .llamacpp_layout import FIT_MARGIN
from .llamacpp_swa import as_llamacpp_loads


def host_weights_at_least(planner, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                          targets: list[Target]) -> int | None:
    """A lower bound of the weight bytes the plan of ``settings`` (a context given, -ngl, -ts and tensor overrides
    left to --fit) keeps in system memory, from the floor's fill (the module's docstring says why); None where the
    bound does not apply: a MoE model (its fill moves tensors one by one), one GPU, or settings --fit leaves alone."""
    model, settings = as_llamacpp_loads(model), planner._as_build_reads(settings)
    gpus = [t for t in targets if t.kind != "cpu"]
    ls = settings.llamacpp
    if (model.n_experts or len(gpus) < 2 or settings.ctx is None or not ls.fit or ls.n_gpu_layers is not None
            or ls.n_cpu_moe or ls.override_tensor or ls.tensor_split):
        return None
    n = model.n_layers
    start = settings.with_(n_gpu_layers=n + 1)

    def placed(layers: Layers, over: Overflow) -> Settings:
        ngl, split, rules = fit_flags(n, layers, over, lambda d: "CPU" if d is None else f"GPU{d}")
        return start.with_(n_gpu_layers=ngl, tensor_split=split, override_tensor=rules, n_cpu_moe=0)

    def floors(layers: Layers, over: Overflow) -> list[int]:
        return planner.floor(model, weights, placed(layers, over), targets)[:len(gpus)]

    layers, over = fit_devices(n, len(gpus), False, floors, [t.capacity - FIT_MARGIN for t in gpus], False)
    if sum(x.n_layer for x in layers) >= n + 1:
        return 0
    _, bufs, _, _ = planner.buffers_now(model, weights, placed(layers, over), targets, with_compute=False)
    return sum(b.model for b in bufs if b.kind == "cpu")


def every_layer_surely_moved(planner, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                             targets: list[Target]) -> bool:
    """Whether llama-server --fit over several GPUs of one name, at settings.ctx (-ngl, -ts and tensor overrides
    left to it), surely moves some layer or expert off the GPUs: one GPU holding every layer, its bytes without the
    compute buffer, past the GPUs' capacities less --fit's margin summed (the module's docstring says why that
    bounds every split). Grows with the context: past it at one context, past it at every longer one. False where
    the bound does not apply (a planner other than llama.cpp's, one GPU, GPUs of several names, settings --fit leaves
    alone)."""
    gpus = [t for t in targets if t.kind != "cpu"]
    ls = settings.llamacpp
    if (len(gpus) < 2 or not _bound_applies(planner, gpus, settings) or not ls.fit or ls.n_gpu_layers is not None
            or ls.tensor_split):
        return False
    return _every_layer_floor(planner, model, weights, settings, targets) > sum(g.capacity - FIT_MARGIN for g in gpus)


def every_layer_surely_over(planner, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                            targets: list[Target]) -> bool:
    """Whether a plan that puts every layer on the GPUs itself (-ngl past n_layers given: --fit leaves the layers
    alone), at settings.ctx, surely overflows a GPU: one GPU holding every layer, its bytes without the compute
    buffer, past the GPUs' capacities summed (the GPUs' bytes without compute at any split sum to at least that
    GPU's, the module's docstring; each GPU's use is at least its bytes without compute). Grows with the context.
    False where the bound does not apply (as every_layer_surely_moved, or -ngl not past n_layers)."""
    gpus = [t for t in targets if t.kind != "cpu"]
    ngl = settings.llamacpp.n_gpu_layers
    if not gpus or not _bound_applies(planner, gpus, settings) or ngl is None or ngl <= model.n_layers:
        return False
    return _every_layer_floor(planner, model, weights, settings, targets) > sum(g.capacity for g in gpus)


def _bound_applies(planner, gpus: list[Target], settings: Settings) -> bool:
    """llama.cpp's planner (named, not imported: runtimes/llamacpp.py's fit() asks these bounds too, no import
    cycle), GPUs of one name, a context given, no tensor overrides or --n-cpu-moe."""
    ls = settings.llamacpp
    return (getattr(planner, "name", None) == "llama.cpp" and hasattr(planner, "floor")
            and len({(g.name, g.kind) for g in gpus}) == 1 and settings.ctx is not None
            and not ls.n_cpu_moe and not ls.override_tensor)


def _every_layer_floor(planner, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                       targets: list[Target]) -> int:
    """One GPU of the GPUs' summed capacity holding every layer: its bytes without the compute buffer."""
    gpus = [t for t in targets if t.kind != "cpu"]
    model, settings = as_llamacpp_loads(model), planner._as_build_reads(settings)
    totals = [g.total for g in gpus]
    one = replace(gpus[0], capacity=sum(g.capacity for g in gpus),
                  total=sum(x for x in totals if x) if all(totals) else None)
    whole = settings.with_(n_gpu_layers=model.n_layers + 1)
    merged = [one, *(t for t in targets if t.kind == "cpu")]
    return planner.floor(model, weights, whole, merged)[0]

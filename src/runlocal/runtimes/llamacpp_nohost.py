"""llama-server --no-host: which CPU-held weights the CPU repacks, and the step that says so (runtimes/ggml/repack.py
has the rule and its sources). Pure computation (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from ..memo import IdMemo
from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from .base import Step
from .llamacpp_layout import Budget, Pools, buffer_device

_REPACKED = IdMemo(1024)


@dataclass(frozen=True)
class Repacked:
    """The host-held weights a --no-host launch keeps in CPU_REPACK: their bytes, and the weights whose products a
    prompt token runs on the CPU (a stack of experts counts n_expert_used of its experts: MUL_MAT_ID)."""

    bytes: int
    cpu_matmul_params: float
    cpu_expert_params: float = 0.0      # the routed experts' share of cpu_matmul_params (MUL_MAT_ID)


def host_repack(model: ModelSpec, weights: WeightEstimate, b: Budget) -> Repacked | None:
    """repacked_host_weights of the launch's GGUF (the file itself, or the catalog model's view of its quant, as
    llamacpp_compute.size_compute reads it); None when the quant has no GGUF view. Kept per model, weights and
    placement: they do not depend on the context, which a search changes at every plan (a walk over every tensor)."""
    from ..quant.gguf_mix import gguf_view

    def now() -> Repacked | None:
        view = model if weights.from_file else gguf_view(model, weights.quant)
        return repacked_host_weights(view, b) if view is not None else None

    ls = b.settings.llamacpp
    return _REPACKED.get(model, (weights.quant, weights.total, weights.from_file, b.where, ls.override_tensor,
                                 ls.n_cpu_moe), now)


def repacked_host_weights(graph_model: ModelSpec, b: Budget) -> Repacked:
    """The host-held weights in CPU_REPACK for a --no-host launch: a weight is held on the host when its layer is
    (-ngl) or a tensor override (-ot …=CPU, --n-cpu-moe) sends it there, as src/llama-model-loader.cpp create_tensor
    decides; the CPU repacks it per ggml/repack.py on the assumed CPU. Their matmuls stay on the CPU in a prompt
    batch (ggml-backend.cpp ggml_backend_sched_backend_id_from_cur offloads an op only when its weight's buffer is a
    host buffer; CPU_REPACK is not): a 2-D weight multiplies every token, a 3-D stack of experts (MUL_MAT_ID) the
    n_expert_used experts each token routes to. The output layer's weights are left out of the products: llama.cpp
    multiplies only the rows it outputs (ggml_get_rows by inp_out_ids, one row a prompt for llama-server)."""
    from . import ggml
    from .ggml.arch import weight_layer
    from .ggml.repack import repacked
    from .ggml.sched import placement_devices, weight_devices
    from .ggml.types import Tensor, row_size

    s, n = b.settings, graph_model.n_layers
    rules = (tuple((pat, buffer_device(buft)) for pat, buft in s.llamacpp.override_tensor)
             + ggml.n_cpu_moe_overrides(min(s.llamacpp.n_cpu_moe, n)))
    host = -2                                              # (any id no GPU has)
    layer_dev = placement_devices(b.where, n, host)
    weight_dev = weight_devices(layer_dev, rules, host) or (lambda t: layer_dev(t.layer))  # type: ignore[arg-type]
    packed, params, experts = 0, 0.0, 0.0
    for info in graph_model.tensors:
        layer = weight_layer(info.name, n)
        ne = (*reversed(info.shape), 1, 1, 1, 1)[:4]
        t = Tensor(info.name, (info.dtype or "f32").lower(), ne, (0, 0, 0, 0), weight=True,  # type: ignore[arg-type]
                   layer=layer)
        if weight_dev(t) != host:
            continue
        if t.type in ggml.TYPES and repacked(t):
            packed += row_size(t.type, ne[0]) * ne[1] * ne[2] * ne[3]
            if 0 <= layer < n:
                used = min(graph_model.n_experts_active or ne[2], ne[2])
                params += ne[0] * ne[1] * used
                if ne[2] > 1:
                    experts += ne[0] * ne[1] * used
    return Repacked(packed, params, experts)


def no_host_step(model: ModelSpec, b: Budget, p: Pools, packed: Repacked | None) -> Step:
    """What --no-host changes in this plan: the host's weights the CPU repacks (their bytes, the CPU assumed) stay in
    CPU_REPACK, their matmuls on the CPU (no op offload, no copy in a GPU's compute buffer); the rest as without it."""
    from .ggml.repack import ASSUMED_CPU, CPU_WORDS, REPACKED

    types = ", ".join(t.upper() for t in REPACKED[ASSUMED_CPU])
    if not p.devs:
        what, value = "a CPU-only run: the CPU's repack buffer is first in its list anyway; nothing changes", "no change"
    elif packed is None:
        what, value = f"CPU-held weights of {types} stay in CPU_REPACK (not sized without the compute step)", "—"
    else:
        what = (f"of the weights held on the host, the CPU repacks {types} matrices ({ASSUMED_CPU}, assumed: "
                f"{CPU_WORDS[ASSUMED_CPU]}; AVX-512 adds Q2_K, ARM also Q5_K, Q6_K, Q8_0): those stay in "
                "CPU_REPACK with their matmuls on the CPU — no op offload, no copy of them in a GPU's compute buffer "
                "(in the traced compute buffers); the others stay host memory, offloaded as without --no-host. Under "
                "mmap the logged CPU_Mapped range still spans the repacked tensors (clean page cache): host weights "
                "are counted once")
        value = f"{packed.bytes:,} B in CPU_REPACK"
    return Step("--no-host", what, value, "src/llama-model.cpp make_cpu_buft_list (no_host: no GPU host buffer type), "
                "ggml/src/ggml-cpu/repack.cpp ggml_repack_get_optimal_repack_type, ggml-backend.cpp "
                "ggml_backend_sched_backend_id_from_cur; measurements/llamacpp_nohost")

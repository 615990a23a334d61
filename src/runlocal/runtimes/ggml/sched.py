"""ggml-backend's scheduler on the CUDA build (ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph): which
backend runs each node, op offload, the splits and the copies of their inputs; ggml-cuda's allocation sizes; and the
compute buffers of each GPU and the host."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from ...memo import IdMemo
from ..ggml_scope import PIPELINE_COPIES
from . import affine, periodic, repack
from .alloc import Buffer, Program, SymbolicAllocator, _align, allocate
from .arch import GraphParams, _is_quant, build_graph, pp_outputs
from .gcpause import gc_paused
from .graph import Graph
from .types import (
    CPU_ALIGNMENT,
    CUDA_ALIGNMENT,
    FLAG_INPUT,
    FLAG_OUTPUT,
    VIEW_OPS,
    Tensor,
    row_size,
)

# --- CUDA: two buffers through ggml_backend_sched ------------------------------------------------------

GPU, HOST = 0, 1      # backend ids as llama.cpp orders them: the GPU first, the CPU (last) backend


def _fattn_needs_f16(fa: Tensor) -> tuple[bool, bool]:
    """ggml-cuda fattn.cu ggml_cuda_get_best_fattn_kernel, as far as the size goes: a prompt batch runs the
    tensor-core kernels (MMA_F16 / TILE), which read K and V as f16; one token per sequence runs the vector
    kernel, which reads a quantized cache directly when it has a case for the head size and the K/V types
    (fattn-vec: head sizes 64, 128, 256, K and V of the same type without GGML_CUDA_FA_ALL_QUANTS)."""
    q, k, v = fa.src[0], fa.src[1], fa.src[2]
    assert q is not None and k is not None and v is not None
    if q.ne[1] > 1:
        return True, True
    fallback = q.ne[0] not in (64, 128, 256) or (k.type != v.type and "f16" not in (k.type, v.type))
    return k.type == "f32" or fallback, v.type == "f32" or fallback


FATTN_KQ_STRIDE = 256           # fattn-common.cuh
FATTN_KV_TYPES = {"f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}   # ggml_cuda_fattn_kv_type_supported


def cuda_supports(t: Tensor) -> bool:
    """ggml-cuda.cu ggml_backend_cuda_device_supports_op, for the one op of these graphs a CUDA device can refuse:
    FLASH_ATTN_EXT where fattn.cu ggml_cuda_get_best_fattn_kernel finds no kernel — a head size without one (GPT-NeoX's
    32 of Pythia-14m), or 192 / 320 / 512 / 576 without the GQA optimisation (ratio ≥ 2, a mask, K's cells a multiple
    of 256; the 16-byte stride check left out: these graphs' tensors meet it). The scheduler then runs it on the CPU."""
    if t.op != "FLASH_ATTN_EXT":
        return True
    q, k, v, mask = t.src[0], t.src[1], t.src[2], t.src[3]
    assert q is not None and k is not None and v is not None
    ratio = q.ne[2] // k.ne[2]
    gqa_opt = ratio >= 2 and mask is not None and k.ne[1] % FATTN_KQ_STRIDE == 0
    dk, dv = k.ne[0], v.ne[0]
    if dk in (40, 64, 72, 80, 96, 112, 128, 256):
        ok = dv == dk
    else:
        ok = gqa_opt and {192: dv == 128 and ratio % 8 == 0, 320: dv == 256 and ratio % 32 == 0,
                          512: dv == 512, 576: dv == 512}.get(dk, False)
    return ok and k.type in FATTN_KV_TYPES and v.type in FATTN_KV_TYPES and (mask is None or mask.ne[2] == 1)


def cuda_alloc_size(t: Tensor) -> int:
    """ggml-cuda.cu ggml_backend_cuda_buffer_type_get_alloc_size: a FLASH_ATTN_EXT result gets room for f16
    copies of a non-f16 K and V (fattn-common.cuh ggml_cuda_flash_attn_ext_get_f16_extra_data, 128-aligned;
    MLA's V, a view of K, shares K's); quantized tensors are padded to whole 512-element rows."""
    size = t.nbytes()
    if t.op == "FLASH_ATTN_EXT":
        k, v = t.src[1], t.src[2]
        assert k is not None and v is not None
        need_k, need_v = _fattn_needs_f16(t)
        end = size
        if need_k and k.type != "f16":
            end = _align(end, 128) + k.nelements() * 2
        v_is_k = v.view_src is not None and (v.view_src is k or (v.view_src is k.view_src and v.view_offs == k.view_offs))
        if need_v and v.type != "f16" and not v_is_k:
            end = _align(end, 128) + v.nelements() * 2
        size = end
    if _is_quant(t.type) and t.ne[0] % 512:
        size += row_size(t.type, 512 - t.ne[0] % 512)
    return size


MOE_REDUCTION_MAX_EXPERTS = 15    # ggml-cuda.cu MOE_WEIGHTED_REDUCTION_MAX_EXPERTS
MAX_SRC = 10                      # ggml.h GGML_MAX_SRC


def _cuda_alloc_deps(nodes: list[Tensor]) -> dict[int, list[Tensor]]:
    """ggml-cuda.cu ggml_backend_cuda_graph_optimize: for the fusions it will run, ggml-cuda asks the scheduler
    to keep tensors alive until a later node (add_alloc_dep), which the scheduler enforces with a dependency
    node after it (ggml-backend.cpp ggml_backend_sched_split_graph). Two MoE fusions matter here:
    - topk-moe (ggml_cuda_topk_moe_fusion): SOFT_MAX → RESHAPE → ARGSORT → VIEW → GET_ROWS [→ RESHAPE, SUM_ROWS,
      CLAMP, DIV, RESHAPE] [→ SCALE]: every node of the chain and its sources live until the node after it;
    - the weighted expert reduction (ggml_cuda_match_moe_weighted_reduction): MUL(experts, weights) → n VIEWs →
      n-1 ADDs: experts and weights live until the last ADD, so the MUL cannot reuse the experts in place.
    Returns id(until) → the tensors to keep."""
    deps: dict[int, list[Tensor]] = {}

    def keep(t: Tensor | None, until: Tensor) -> None:
        if t is None:
            return
        lst = deps.setdefault(id(until), [])
        if not any(x is t for x in lst):
            lst.append(t)

    i, n = 0, len(nodes)
    while i < n:
        node = nodes[i]
        # weighted reduction
        if node.op == "MUL" and node.type == "f32" and node.is_contiguous():
            a, b = node.src[0], node.src[1]
            experts, weights = (a, b) if a is not None and a.ne == node.ne else (b, a)
            n_used = node.ne[1]
            if (experts is not None and weights is not None and experts.ne == node.ne and weights.ne[0] == 1
                    and 2 <= n_used <= MOE_REDUCTION_MAX_EXPERTS and i + 2 * n_used - 1 < n + 1):
                span = nodes[i + 1:i + 2 * n_used]
                n_views = sum(1 for t in span if t.op == "VIEW" and t.view_src is node)
                n_adds = sum(1 for t in span if t.op == "ADD")
                if n_views == n_used and n_adds == n_used - 1 and span and span[-1].op == "ADD":
                    keep(experts, span[-1])
                    keep(weights, span[-1])
                    i += 2 * n_used
                    continue
        # topk-moe with a softmax or a sigmoid gate (ggml_cuda_topk_moe_fusion: a UNARY here is the sigmoid, the
        # only unary a RESHAPE and an ARGSORT follow), and the selection bias (args.prob_bias: nemotron_h_moe)
        if node.op in ("SOFT_MAX", "UNARY") and i + 4 < n:
            ops = [t.op for t in nodes[i + 1:i + 6]]
            chain = ["RESHAPE", "ADD", "ARGSORT", "VIEW", "GET_ROWS"]
            if ops[:2] != chain[:2] or nodes[i + 2].src[0] is not node:
                chain.remove("ADD")
            if ops[:len(chain)] == chain and nodes[i + 1].src[0] is node:
                j = i + 1 + len(chain)
                if [t.op for t in nodes[j:j + 5]] == ["RESHAPE", "SUM_ROWS", "CLAMP", "DIV", "RESHAPE"]:
                    j += 5
                if j < n and nodes[j].op == "SCALE":
                    j += 1
                ids = nodes[i + len(chain) - 1]     # the VIEW of the top-k
                n_expert = ids.nb[1] // ids.nb[0]
                if j < n and (n_expert & (n_expert - 1) == 0 and n_expert <= 512 or n_expert in (288, 576)):
                    until = nodes[j]
                    for t in nodes[i:j]:
                        keep(t, until)
                        for s_ in t.src:
                            keep(s_, until)
                    i = j
                    continue
        i += 1
    return deps


OP_OFFLOAD_MIN_BATCH = 32        # ggml-cuda.cu: op_offload_min_batch_size (GGML_OP_OFFLOAD_MIN_BATCH unset)


def _op_batch_size(t: Tensor) -> int:
    """ggml-cuda.cu get_op_batch_size: how many rows an op processes, for ggml_backend_cuda_device_offload_op."""
    if t.op == "GET_ROWS":
        return 0
    if t.op == "MUL_MAT":
        return t.ne[1]
    if t.op in ("MUL_MAT_ID", "ROPE"):
        return t.ne[2]
    return t.ne[1] * t.ne[2] * t.ne[3]


@dataclass
class _Split:
    backend: int
    inputs: list[Tensor] = field(default_factory=list)
    nodes: list[Tensor] = field(default_factory=list)


def _sched_split(g: Graph, layer_dev: Callable[[int], int], pin_norms: bool, *, n_backends: int = 2,
                 weight_dev: Callable[[Tensor], int] | None = None, n_copies: int = 1,
                 host_buffer: Callable[[Tensor], bool] | None = None
                 ) -> tuple[list[Tensor], list[int], list[Tensor], list[int], int]:
    """ggml-backend.cpp ggml_backend_sched_split_graph over n_backends - 1 CUDA GPUs (ids 0 …, in device order)
    and the CPU (the last id, computing in CUDA_Host memory), with op offload on. Both kinds are taken to support
    every op of these graphs; a GPU supports only its own buffer type (no host buffer: discrete GPUs), the CPU
    every host buffer. ``layer_dev`` maps a layer to the device holding its weights and caches; ``weight_dev``,
    when given, a model weight to the device of its buffer (tensor overrides: -ot, --n-cpu-moe); ``pin_norms``:
    llama-context.cpp graph_get_cb pins each layer's "norm" to that device (fewer than 32 tokens or full
    offload); ``n_copies``: GGML_SCHED_MAX_COPIES under pipeline parallelism, else 1; ``host_buffer``, when given,
    whether a weight on the CPU is in a host buffer (--no-host: not when repacked, repack.py). Returns graph_copy's nodes
    with their backend ids, its leafs with theirs and the number of splits."""
    nodes, leafs = g.nodes, g.leafs
    host = n_backends - 1
    bid: dict[int, int] = {}

    def get(t: Tensor | None) -> int:
        return -1 if t is None else bid.get(id(t), -1)

    placed: dict[int, int] = {}

    def place(t: Tensor) -> int:
        # the device of an external tensor's buffer: a weight's own (overrides), else its layer's (asked once per
        # tensor: every pass asks again)
        d = placed.get(id(t))
        if d is None:
            d = placed[id(t)] = weight_dev(t) if t.weight and weight_dev is not None else layer_dev(t.layer)  # type: ignore[arg-type]
        return d

    def buf_dev(t: Tensor) -> int | None:
        root = t.view_src if t.view_src is not None else t
        return place(root) if root.external and root.layer is not None else None

    def is_weight(t: Tensor) -> bool:
        return t.weight and t.view_src is None

    def from_cur(t: Tensor) -> int:
        # ggml_backend_sched_backend_id_from_cur
        d = buf_dev(t)
        if d is not None:
            return d
        if t.flags & FLAG_INPUT:
            return host
        if t.op not in ("ROPE", "FLASH_ATTN_EXT"):
            for src in t.src:
                if src is not None and src.weight and src.view_src is None:
                    d = place(src)
                    # offload needs a host buffer (ggml_backend_buffer_is_host): CPU-overridden weights are in
                    # CUDA_Host / CPU_Mapped, not CPU_REPACK, while a GPU is present (llama-model.cpp
                    # make_cpu_buft_list: GPU host before CPU extra; only --no-host repacks; measurements/llamacpp_cpumoe)
                    # — with --no-host a repacked weight is in CPU_REPACK, which is not a host buffer: no offload
                    if d == host and _op_batch_size(t) >= OP_OFFLOAD_MIN_BATCH and (host_buffer is None
                                                                                     or host_buffer(src)):
                        # the first backend that wants it, CUDA0, offloads a big op on a host weight
                        # (ggml_backend_offload_op), whichever GPU holds the layer
                        return 0
                    return d
        return -1

    def buffer_supported(t: Tensor, b: int) -> bool:
        # ggml_backend_sched_buffer_supported: where t lives (or will) is b's own buffer type
        d = buf_dev(t)
        if d is None:
            d = get(t)
            if d == -1 and t.view_src is not None:
                d = get(t.view_src)
            if d == -1:
                return False
        return d == b

    # llama-model-loader.cpp create_tensor: a TENSOR_DUPLICATED weight (per-layer rope_freqs, a tied output head)
    # is created once per buffer type, so the layers of one device share one tensor
    canon: dict[tuple[str, int], Tensor] = {}
    for node in nodes:
        for src in node.src:
            if src is not None and src.weight:
                node.src = tuple(canon.setdefault((src.name, place(src)), src)
                                 if src is not None and src.weight else src for src in node.src)
                break
    # pass 1: pre-allocated tensors, inputs, ops on weights (user assignments first: the pinned norms)
    for leaf in leafs:
        bid[id(leaf)] = from_cur(leaf)
    for node in nodes:
        if pin_norms and node.layer is not None and not node.external:
            bid[id(node)] = layer_dev(node.layer)
        else:
            bid[id(node)] = from_cur(node)
    # pass 2: expand the GPU down and up over unassigned nodes (the CPU does not spread), then any backend
    compute = [n for n in nodes if n.op not in VIEW_OPS]
    # (ggml_backend_sched_set_if_supported: a node a GPU cannot run stays unassigned, cuda_supports)
    for order, gpu_only in ((compute, True), (compute[::-1], True), (compute, False), (compute[::-1], False)):
        cur = -1
        for node in order:
            b = bid[id(node)]
            if b != -1:
                cur = -1 if gpu_only and b == host else b
            elif cur != -1 and (cur == host or cuda_supports(node)):
                bid[id(node)] = cur
    # pass 3: the nodes still unassigned go where most of their inputs are, among the backends that run them (no
    # upgrades: the buffer types differ)
    for node in compute:
        if bid[id(node)] == -1:
            best, n_best = -1, -1
            for b in range(n_backends):
                if b != host and not cuda_supports(node):
                    continue
                n = sum(1 for src in node.src if src is not None and (get(src) != -1 or get(src.view_src) != -1)
                        and buffer_supported(src, b))
                if n > n_best:
                    best, n_best = b, n
            bid[id(node)] = best
    # pass 4: views follow their source, unassigned sources their consumer
    for node in nodes:
        if node.view_src is not None and bid[id(node)] == -1:
            bid[id(node)] = get(node.view_src)
        for src in node.src:
            if src is not None and bid.get(id(src), -1) == -1:
                bid[id(src)] = get(src.view_src) if src.view_src is not None else bid[id(node)]
        if bid[id(node)] == -1:
            bid[id(node)] = 0
    # pass 5: splits; a source another backend cannot read gets a copy, an input of the split that needs it first
    splits: list[_Split] = []
    copies: dict[tuple[int, int], list[Tensor]] = {}
    first = next((bid[id(n)] for n in compute), 0)
    split = _Split(first)
    splits.append(split)
    cur = first
    for node in nodes:
        if node.op in VIEW_OPS:
            split.nodes.append(node)
            continue
        b = bid[id(node)]
        need_new = False
        if b == cur and split.inputs:
            # a weight from another backend: a new split lets the previous weight copies be freed
            need_new = any(src is not None and is_weight(src) and get(src) != cur and not buffer_supported(src, cur)
                           for src in node.src)
        if b != cur or need_new:
            split = _Split(b)
            splits.append(split)
            cur = b
        split.nodes.append(node)
        new_src: list[Tensor | None] | None = None      # (a new tuple only where a source is replaced)
        for j, src in enumerate(node.src):
            if src is None:
                continue
            if bid.get(id(src), -1) != cur and not buffer_supported(src, cur):
                key = (id(src), cur)
                c = copies.get(key)
                if c is None:
                    # ggml_dup_tensor_layout: same shape and strides; with several copies each is flagged
                    # input and output so that ggml-alloc never frees or reuses it
                    flags = FLAG_INPUT | FLAG_OUTPUT if n_copies > 1 else 0
                    c = [Tensor(f"{'CPU' if cur == host else f'CUDA{cur}'}#{src.name}#{k}", src.type, src.ne, src.nb,
                                flags=flags) for k in range(n_copies)]
                    copies[key] = c
                    split.inputs.append(src)
                if new_src is None:
                    new_src = list(node.src)
                new_src[j] = c[0]       # sched->cur_copy: 0 when reserving
        if new_src is not None:
            node.src = tuple(new_src)
    # pass 6 (pipeline parallelism): n_copies of every graph input, the original as copy 0, all kept
    input_copies: list[tuple[Tensor, int]] = []
    if n_copies > 1:
        for leaf in leafs:
            if not leaf.flags & FLAG_INPUT:
                continue
            b = get(leaf)
            leaf.flags |= FLAG_OUTPUT
            input_copies.append((leaf, b))
            for k in range(1, n_copies):
                input_copies.append((Tensor(f"{leaf.name}#{k}", leaf.type, leaf.ne, leaf.nb,
                                            flags=FLAG_INPUT | FLAG_OUTPUT), b))
    # ggml_backend_graph_optimize per split: the CUDA fusions' allocation dependencies
    deps: dict[int, list[Tensor]] = {}
    for sp in splits:
        if sp.backend != host:
            deps.update(_cuda_alloc_deps(sp.nodes))
    # graph_copy: per split, each input's dependency view and its copy, then the split's nodes (+ dependency nodes)
    out: list[Tensor] = []
    ids: list[int] = []
    for sp in splits:
        for src in sp.inputs:
            out.append(Tensor(f"{src.name} (view)", src.type, src.ne, src.nb, "NONE", (src,),
                              view_src=src.view_src or src))
            ids.append(get(src))
            out.append(copies[(id(src), sp.backend)][0])
            ids.append(sp.backend)
        for node in sp.nodes:
            out.append(node)
            ids.append(bid[id(node)])
            kept = deps.get(id(node), [])
            for k in range(0, len(kept), MAX_SRC):
                first_t = kept[k]
                out.append(Tensor(f"{first_t.name} (view)", first_t.type, first_t.ne, first_t.nb, "NONE",
                                  tuple(kept[k:k + MAX_SRC]), view_src=first_t.view_src or first_t))
                ids.append(sp.backend)
    # graph_copy's leafs: with several copies, the graph inputs' and the split inputs' copies first
    out_leafs = [t for t, _ in input_copies]
    leaf_ids = [b for _, b in input_copies]
    if n_copies > 1:
        for sp in splits:
            for src in sp.inputs:
                out_leafs += copies[(id(src), sp.backend)]
                leaf_ids += [sp.backend] * n_copies
    out_leafs += leafs
    leaf_ids += [bid[id(leaf)] for leaf in leafs]
    return out, ids, out_leafs, leaf_ids, len(splits)


def _layer_devices(n_layer: int, n_gpu_layers: int) -> Callable[[int], int]:
    """src/llama-model.cpp load_tensors (one GPU): the last n_gpu_layers of the n_layer + 1 layers (the output
    layer counts as one) go to the GPU; the input layer (token embeddings) always stays on the CPU."""
    ngl = n_layer + 1 if n_gpu_layers < 0 else n_gpu_layers
    i_gpu_start = max(n_layer + 1 - ngl, 0)

    def dev(il: int) -> int:
        return GPU if 0 <= il and il >= i_gpu_start else HOST
    return dev


def placement_devices(where: Sequence[int | None], n_layer: int, host: int) -> Callable[[int], int]:
    """Each layer's device in a placement over several devices: ``where`` gives the GPU of layers 0 … n_layer (the
    last the output layer; None: the host), as src/llama-model.cpp load_tensors spreads them (LlamaCpp.buffers);
    the input layer (-1, the token embeddings) and a None go to ``host``, the caller's id for the CPU backend."""
    where = tuple(where)

    def dev(il: int) -> int:
        d = where[il] if 0 <= il <= n_layer else None
        return host if d is None else d
    return dev


def _by_index(buffer_ids: list[int]) -> Callable[[int, Tensor], int]:
    """The buffer of the i-th node (or leaf) of the split graph, as ggml_gallocr reads it."""
    return lambda i, t: buffer_ids[i]


def weight_devices(layer_dev: Callable[[int], int], overrides: Iterable[tuple[str, int | None]], host: int
                    ) -> Callable[[Tensor], int] | None:
    """src/llama-model-loader.cpp create_tensor: the first override whose pattern std::regex_search-es the
    tensor's name decides its buffer (None: a CPU buffer, on the host; k: GPU k), else its layer's device."""
    overrides = tuple(overrides)
    if not overrides:
        return None
    cache = _override_matches(overrides, host)

    def dev(t: Tensor) -> int:
        d = cache.get(t.name, -1)
        if d == -1:
            d = cache[t.name] = next((d for rx, d in _compiled(overrides, host) if rx.search(t.name)), None)
        return layer_dev(t.layer) if d is None else d  # type: ignore[arg-type]
    return dev


@functools.lru_cache(maxsize=64)
def _override_matches(overrides: tuple[tuple[str, int | None], ...], host: int) -> dict[str, int | None]:
    """Which override each tensor name takes (its device; None: none matches), kept per list of overrides: the
    searches plan one list for many placements, and a list from --n-cpu-moe has a rule per layer."""
    return {}


@functools.lru_cache(maxsize=64)
def _compiled(overrides: tuple[tuple[str, int | None], ...], host: int) -> list[tuple[re.Pattern, int]]:
    return [(re.compile(p), host if d is None else d) for p, d in overrides]


class BuiltGraph:
    """One reserved graph, built once and scheduled many times (--fit and the searches ask for the same graph with
    other layer placements): _sched_split rewrites sources (the shared weights, the split inputs' copies) and flags
    (pipeline copies) in place, so they are put back after each use, and one use at a time (the API plans on
    several threads). ``layers``: the layers it was built with (None: all)."""

    def __init__(self, g: Graph, layers: tuple[int, ...] | None = None) -> None:
        self.g = g
        self.layers = layers
        self.lock = threading.Lock()
        # (as parallel lists: a tuple per node would be one more object per node for the garbage collector)
        self._srcs = [t.src for t in g.nodes]
        self._flags = [t.flags for t in g.leafs]
        self._refs: set[int | None] | None = None

    def restore(self) -> None:
        for t, src in zip(self.g.nodes, self._srcs):
            t.src = src
        for t, flags in zip(self.g.leafs, self._flags):
            t.flags = flags

    def layers_read(self) -> set[int | None]:
        """Every layer a tensor of the graph names: its ``layer`` (the device it is placed by), and the N of a
        weight blk.N.*."""
        if self._refs is None:
            refs: set[int | None] = set()
            for t in (*self.g.leafs, *self.g.nodes):
                refs.add(t.layer)
                if t.weight and t.name.startswith("blk."):
                    refs.add(int(t.name.split(".", 2)[1]))
            self._refs = refs
        return self._refs


_BUILT = IdMemo(16)


def built_graph(model, p: GraphParams, n_tokens: int, n_seqs: int, n_outputs: int,
                layers: tuple[int, ...] | None = None) -> BuiltGraph:
    """build_graph(...).g, kept per model object and shape (a few: the passes of one search ask for the same ones).
    A reduced graph is kept per shape and sequence of layer shapes (periodic.layer_shapes): it may have been built
    for other layers than ``layers`` (its ``layers`` says which), whose graph it is up to the layers' names."""
    # (a shape built with n_kv as a symbol keeps its own: each is valid where its comparisons hold, affine.py)
    memo: IdMemo | affine.Shape = affine.shape() or _BUILT
    if layers is None:
        return memo.get(model, (p, n_tokens, n_seqs, n_outputs, None),
                        lambda: BuiltGraph(build_graph(model, p, n_tokens, n_seqs, n_outputs).g))
    shapes = periodic.layer_shapes(model)
    key = (p, n_tokens, n_seqs, n_outputs, "shapes", tuple(shapes[il] for il in layers))
    built = memo.get(model, key, lambda: BuiltGraph(build_graph(model, p, n_tokens, n_seqs, n_outputs, layers).g,
                                                    layers))
    if built.layers != layers and not built.layers_read() <= {*(built.layers or ()), -1, model.n_layers, None}:
        # a tensor names a layer the graph was not built with: not a renaming, so build these layers' own graph
        return memo.get(model, (p, n_tokens, n_seqs, n_outputs, layers),
                        lambda: BuiltGraph(build_graph(model, p, n_tokens, n_seqs, n_outputs, layers).g, layers))
    return built


def _for_layers(sched_args: dict, to: dict[int, int]) -> dict:
    """The scheduler's arguments for a graph built for other layers of the same shapes: the built graph's layer il
    stands for layer to[il], its weight blk.il.x for blk.to[il].x (a tensor override matches names)."""
    layer_dev: Callable[[int], int] = sched_args["layer_dev"]
    weight_dev: Callable[[Tensor], int] | None = sched_args["weight_dev"]

    def renamed_layer_dev(il: int) -> int:
        return layer_dev(to.get(il, il))

    renamed_weight_dev = None
    if weight_dev is not None:
        seen: dict[int, int] = {}
        wdev = weight_dev

        def renamed_weight_dev(t: Tensor) -> int:
            d = seen.get(id(t))
            if d is None:
                name = t.name
                if name.startswith("blk."):
                    _, il, rest = name.split(".", 2)
                    name = f"blk.{to[int(il)]}.{rest}"
                d = seen[id(t)] = wdev(Tensor(name, t.type, t.ne, t.nb, weight=True,
                                              layer=to.get(t.layer, t.layer)))  # type: ignore[arg-type]
            return d
    return {**sched_args, "layer_dev": renamed_layer_dev, "weight_dev": renamed_weight_dev}


def _placed(model, p: GraphParams, nt: int, n_seqs: int, n_out: int, layers: tuple[int, ...] | None,
            cuts: list[tuple[int, int, int]], sched_args: dict, buffers: list[Buffer]) -> tuple[list[int], int]:
    """One reserved graph scheduled and allocated: each buffer's size and the number of splits. A reduced graph
    built for other layers of the same shapes is scheduled with its layers renamed to these (built_graph)."""
    built = built_graph(model, p, nt, n_seqs, n_out, layers)
    g = built.g
    if layers is not None and built.layers != layers:
        assert built.layers is not None
        sched_args = _for_layers(sched_args, dict(zip(built.layers, layers)))
        back = dict(zip(layers, built.layers))
        cuts = [(back[a], back[c], back[e]) for a, c, e in cuts]
    at = [tuple(g.layer_start(il) for il in cut) for cut in cuts]
    if any(t is None for cut in at for t in cut):
        k = next(k for k, cut in enumerate(at) if None in cut)
        raise periodic.NotRepeated("a cut layer built no node", k)
    shape = affine.shape()
    with built.lock:
        try:
            if shape is None:
                nodes, ids, leafs, leaf_ids, ns = _sched_split(g, **sched_args)
                got = allocate(g, buffers, _by_index(ids), _by_index(leaf_ids), nodes=nodes, leafs=leafs,
                               cuts=at)  # type: ignore[arg-type]   # (no None left: checked above)
                return got, ns
            key, (nodes, ids, leafs, leaf_ids, ns) = _scheduled(shape, built, layers, sched_args)
            wkey = (key, tuple(cuts))
            point = [Buffer(b.alignment, _at_point(b.alloc_size)) for b in buffers]

            def walk(symbolic: bool) -> list:
                # the walk recorded once per shape (at the point asked for) and replayed at other contexts: with
                # plain sizes, or with symbolic ones whose comparisons narrow the interval of its piece (affine.py)
                prog = shape.programs.get(wkey)
                if prog is None:
                    prog, got = _program(shape, g, buffers, point, ids, leaf_ids, nodes, leafs, at)
                    shape.programs[wkey] = prog
                    while len(shape.programs) > shape.SCHEDULES:
                        del shape.programs[next(iter(shape.programs))]
                    if not symbolic:
                        return got
                if not symbolic:
                    with affine.at_point():
                        return prog.replay(shape.dom.x0)
                with affine.symbolic_walk():
                    return prog.replay(shape.sym, SymbolicAllocator)
            return shape.walk(wkey, walk), ns
        finally:
            built.restore()


def _program(shape: affine.Shape, g: Graph, buffers: list[Buffer], point: list[Buffer], ids: list[int],
             leaf_ids: list[int], nodes: list[Tensor], leafs: list[Tensor], at: list
             ) -> tuple[Program, list[int]]:
    """A walk at the point asked for, recorded as a Program to replay at the shape's other contexts: the comparisons
    of layouts it makes (in-place reuse, the cut checks' renaming) narrow the shape's interval, as the build's do;
    its sizes, offsets and free blocks are plain ints at the point."""
    trace: list = []

    dom = shape.dom     # (not the shape itself: a Program kept by its shape must not refer back to it, or the
    #                     shape, dropped from the cache, would wait for a full collection to be freed)

    def size(t: Tensor, b: int) -> tuple[int, int]:
        # (asked by the replays: whatever alloc_size compares is the shape's to narrow)
        with affine.under(dom):
            return affine.coefficients(buffers[b].alloc_size(t))
    with shape.structure():
        got = allocate(g, point, _by_index(ids), _by_index(leaf_ids), nodes=nodes, leafs=leafs, cuts=at,
                       trace=trace)
    return Program(trace, [b.alignment for b in buffers], size), got


def _at_point(alloc_size: Callable[[Tensor], int]) -> Callable[[Tensor], int]:
    """A buffer type's size of a tensor at the context asked for (ggml-alloc's walk runs with plain ints)."""
    return lambda t: affine.value(alloc_size(t))


def _scheduled(shape: affine.Shape, built: BuiltGraph, layers: tuple[int, ...] | None, sched_args: dict
               ) -> tuple[tuple, tuple[list[Tensor], list[int], list[Tensor], list[int], int]]:
    """_sched_split of a graph built with n_kv as a symbol, once per shape and placement: its nodes' rewritten
    sources and its leafs' flags kept and put back for the next context (the split is the same at every n_kv of the
    shape's interval; the layer and weight devices come from the placement, the renaming from ``layers``).
    Returns (its key, the split)."""
    key = (shape.placement, id(built), layers, sched_args["pin_norms"], sched_args["n_backends"],
           sched_args["n_copies"], sched_args.get("host_buffer") is not None)
    got = shape.schedules.pop(key, None)
    g = built.g
    if got is None:
        with shape.structure():
            split = _sched_split(g, **sched_args)
        got = (split, [t.src for t in g.nodes], [t.flags for t in g.leafs])
        shape.schedules[key] = got
        while len(shape.schedules) > shape.SCHEDULES:
            del shape.schedules[next(iter(shape.schedules))]
        return key, split
    shape.schedules[key] = got        # (the latest last)
    split, srcs, flags = got
    for t, src in zip(g.nodes, srcs):
        t.src = src
    for t, f in zip(g.leafs, flags):
        t.flags = f
    return key, split


_OUTCOMES = IdMemo(256)


def _placed_reduced(model, p: GraphParams, nt: int, n_seqs: int, n_out: int, kinds: list, sched_args: dict,
                    buffers: list[Buffer]) -> tuple[list[int], int]:
    """_placed on the graph periodic.reduced lets through. What the walk's checks ended with (periods doubled, or
    the whole graph) is remembered per first reduced graph (its layers' shapes and cuts) and shape but for the
    cells attended (a fit searches contexts too, and a cut that does not settle at one context seldom does at the
    next), so the next placement does not try again what failed. Speed only: every cut is checked."""
    shapes = periodic.layer_shapes(model)
    like = replace(p, n_kv=0, n_kv_swa=None)

    def remember(layers: tuple[int, ...], cuts: list[tuple[int, int, int]]) -> dict:
        at = {il: i for i, il in enumerate(layers)}
        key = (like, nt, n_seqs, n_out, tuple(shapes[il] for il in layers),
               tuple(tuple(at[il] for il in c) for c in cuts))
        return _OUTCOMES.get(model, key, dict)
    return periodic.reduced(kinds, lambda layers, cuts: _placed(model, p, nt, n_seqs, n_out, layers, cuts, sched_args,
                                                                  buffers), remember)


@gc_paused()
def simulate_compute_cuda(model, n_ubatch: int, n_kv: int, flash_attn: bool, *, n_gpu_layers: int = -1,
                          n_seqs: int = 1, n_stream: int = 1, type_k: str = "f16", type_v: str = "f16",
                          n_kv_swa: int | None = None, n_splits: list[int] | None = None,
                          layer_gpus: list[int | None] | None = None, n_gpus: int | None = None,
                          overrides: Iterable[tuple[str, int | None]] = (),
                          pipeline: bool | None = None, n_outputs_max: int | None = None,
                          kq_mask_f32: bool = False, no_host: bool = False, gdn: str = "fused") -> dict[str, int]:
    """Bytes of each "CUDAk compute" and of "CUDA_Host compute". One GPU: n_gpu_layers of the n_layer + 1 layers
    offloaded (< 0: all; 0: none, the GPU still runs the big batches' matrix products). Several GPUs (--split-mode
    layer): ``layer_gpus`` gives the GPU of each layer 0 … n_layer (the last the output layer; None: the host),
    as src/llama-model.cpp load_tensors spreads them by --tensor-split, and ``n_gpus`` how many there are.
    ``overrides``: (regex, device) tensor overrides in order (-ot, then --n-cpu-moe: n_cpu_moe_overrides), device
    None for a CPU buffer. ``pipeline``: pipeline parallelism (default as src/llama-context.cpp decides it:
    several GPUs, every layer offloaded, no tensor overrides), which keeps GGML_SCHED_MAX_COPIES copies of every
    split input and graph input. Modelled: the scheduler's backend assignment, op offload of ops on host weights
    for batches of 32 or more (to CUDA0, whichever GPU holds the layer), its splits with the copies of their
    inputs (weights in host memory, the KV cache of CPU layers, activations crossing devices) in the compute
    buffers, and ggml-alloc over the buffers. ``n_splits``, when given, receives the pp and tg graphs' split
    counts (llama.cpp logs them). ``n_outputs_max``: the context's output cap (arch.pp_outputs; None: n_batch).
    ``kq_mask_f32``: a build before PR #23764 (f32 KQ mask inputs, cast to f16 under flash attention).
    ``no_host``: llama-server --no-host, whose CPU weights the CPU repacks stay on the CPU (repack.py); ``gdn``: an
    older build's delta-net graph (GraphParams.gdn)."""
    p = GraphParams(n_kv=n_kv, flash_attn=flash_attn, n_stream=n_stream, type_k=type_k, type_v=type_v,
                    n_kv_swa=n_kv_swa, kq_mask_f32=kq_mask_f32, gdn=gdn)
    n_layer = model.n_layers
    overrides = tuple(overrides)
    if layer_gpus is None:
        n_gpus = 1
        layer_dev = _layer_devices(n_layer, n_gpu_layers)
        full = n_gpu_layers < 0 or n_gpu_layers > n_layer
    else:
        if len(layer_gpus) != n_layer + 1:
            raise ValueError(f"layer_gpus: {len(layer_gpus)} entries for {n_layer} layers + the output layer")
        n_gpus = n_gpus or max((d for d in layer_gpus if d is not None), default=0) + 1
        layer_dev = placement_devices(layer_gpus, n_layer, n_gpus)
        full = all(d is not None for d in layer_gpus)
    host = n_gpus
    if pipeline is None:
        pipeline = n_gpus > 1 and full and not overrides
    n_copies = PIPELINE_COPIES if pipeline else 1
    weight_dev = weight_devices(layer_dev, overrides, host)
    host_buffer = repack.host_buffer() if no_host else None
    buffers = [Buffer(CUDA_ALIGNMENT, cuda_alloc_size) for _ in range(n_gpus)] + [Buffer(CPU_ALIGNMENT)]
    sizes = [0] * (n_gpus + 1)
    n_tokens = -(-n_ubatch // n_seqs) * n_seqs
    # periodic.py: the graph with repeated layers left out where the walk checks that they repeat (not when the
    # split counts are asked for: the layers left out would have had theirs)
    shape = affine.shape()
    if not periodic.SKIP or n_splits is not None:
        kinds = []
    elif shape is not None:      # (the same for each context of a placement)
        kinds = shape.per_placement("kinds", lambda: periodic.layer_kinds(model, layer_dev, weight_dev))
    else:
        kinds = periodic.layer_kinds(model, layer_dev, weight_dev)
    for nt, n_out in ((n_tokens, pp_outputs(n_ubatch, n_outputs_max)), (n_seqs, n_seqs)):
        sched_args = dict(layer_dev=layer_dev, pin_norms=nt < 32 or full, n_backends=n_gpus + 1,
                          weight_dev=weight_dev, n_copies=n_copies, host_buffer=host_buffer)
        got, ns = _placed_reduced(model, p, nt, n_seqs, n_out, kinds, sched_args, buffers)
        if n_splits is not None:
            n_splits.append(ns)
        sizes = [max(x, y) for x, y in zip(sizes, got)]
    out = {f"CUDA{k} compute": sizes[k] for k in range(n_gpus)}
    out["CUDA_Host compute"] = sizes[host]
    return out

"""llama.cpp's decoder graphs, one builder per architecture (src/models/*.cpp, src/llama-graph.cpp), and the
reserved graphs of src/llama-context.cpp sched_reserve for a CPU-only run."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ...memo import IdMemo
from ..ggml_scope import builder_reads
from . import periodic
from .alloc import Buffer, allocate
from .blocks import attention, dense_ffn, inputs, last_rows, pre_norm_layer
from .blocks import gguf_type as _gguf_type
from .blocks import mamba2 as _mamba2
from .blocks import qkv as _qkv
from .gcpause import gc_paused
from .graph import Graph
from .types import FLAG_OUTPUT, TYPES, Tensor, row_size

# --- llama.cpp's decoder graphs ------------------------------------------------------------------------

@dataclass(frozen=True)
class GraphParams:
    """What decides the reserved graph's shapes (src/llama-context.cpp sched_reserve / graph_reserve)."""

    n_kv: int                    # cells one stream's attention spans (kv size per stream)
    flash_attn: bool
    n_stream: int = 1            # KV streams: n_seq_max without a unified cache, else 1
    type_k: str = "f16"
    type_v: str = "f16"
    n_kv_swa: int | None = None  # cells of one stream of the sliding-window cache (iSWA architectures)
    kq_mask_f32: bool = False    # builds before PR #23764 (b9410): an f32 mask input, ggml_cast to f16 for FA
    gdn: str = "fused"           # an older build's delta nets: "unfused", "chunked", "ar-unfused" (delta_net_unfused.py)


def weight_layer(name: str, n_layer: int) -> int:
    """The layer whose device holds the weight of that GGUF name (src/llama-model.cpp load_tensors): blk.N.* layer
    N, token_embd the input layer (-1: the CPU), the rest the output layer (n_layer)."""
    if name.startswith("blk."):
        return int(name.split(".")[1])
    return -1 if name == "token_embd.weight" else n_layer


class DecoderGraph:
    """Builds llama.cpp's graph for one ubatch: src/llama-graph.cpp (build_inp_embd, build_attn, build_ffn,
    build_moe_ffn, build_norm) and the architecture's builder in src/models/<arch>.cpp, in their op order."""

    def __init__(self, model, p: GraphParams, n_tokens: int, n_seqs: int, n_outputs: int,
                 layers: tuple[int, ...] | None = None) -> None:
        self.m = model
        self.layers = layers            # the layers built (None: all; periodic.py leaves out repeated ones)
        self.p = p
        self.g = Graph()
        self.n_tokens = n_tokens
        self.n_seqs = n_seqs
        self.n_outputs = n_outputs
        self.by_name = {t.name: t for t in model.tensors}
        self._weights: dict[str, Tensor] = {}
        self.n_embd = model.hidden_size
        self.n_head = model.n_heads
        self.inputs: list[Tensor] = []
        self._layer = -1

    def layer_ids(self) -> Iterable[int]:
        return range(self.m.n_layers) if self.layers is None else self.layers

    # --- weights and inputs ---------------------------------------------------------------------
    def w(self, name: str, layer: int | None = None) -> Tensor | None:
        """The model weight of that GGUF name, on its layer's device (weight_layer). ``layer`` asks for a
        TENSOR_DUPLICATED copy on another layer's device (per-layer rope_freqs, a tied output head)."""
        key = name if layer is None else f"{name}@{layer}"
        t = self._weights.get(key)
        if t is None:
            info = self.by_name.get(name)
            if info is None:
                return None
            if layer is None:
                layer = weight_layer(name, self.m.n_layers)
            t = self.g.weight(_gguf_type(info.dtype), tuple(reversed(info.shape)), name, layer, is_weight=True)
            self._weights[key] = t
        return t

    def lw(self, il: int, name: str) -> Tensor | None:
        if il != self._layer:       # a layer's first weight: mark where its nodes begin (periodic.py)
            self._layer = il
            self.g.mark_layer(il)
        return self.w(f"blk.{il}.{name}")

    def inp(self, type_: str, ne: Iterable[int], name: str) -> Tensor:
        t = self.g.input(type_, ne, name)
        self.inputs.append(t)
        return t

    def build_inp_embd(self, scale: bool = False) -> Tensor:
        # llama-graph.cpp build_inp_embd: both the token path (get_rows) and the embeddings input enter the
        # graph (ggml_build_forward_select), so the unused inp_embd input is allocated too
        g = self.g
        tokens = self.inp("i32", (self.n_tokens,), "inp_tokens")
        embd_in = self.inp("f32", (self.n_embd, self.n_tokens), "inp_embd")
        tok = self.w("token_embd.weight")
        assert tok is not None
        cur = g.get_rows(tok, tokens, name="embd")
        g.expand(cur)
        g.expand(embd_in)
        if scale:
            cur = g.unary("SCALE", cur, name="embd_scaled")
        g.expand(cur)
        return cur

    def build_inp_pos(self) -> Tensor:
        return self.inp("i32", (self.n_tokens,), "inp_pos")

    def build_inp_out_ids(self) -> Tensor:
        return self.inp("i32", (self.n_outputs,), "out_ids")

    def norm(self, x: Tensor, w: Tensor | None, b: Tensor | None = None, rms: bool = True,
             il: int = -1) -> Tensor:
        """llama-graph.cpp build_norm; with a weight and il >= 0 the result is named "norm", which
        llama-context.cpp graph_get_cb pins to the layer's device for small batches and full offload."""
        g = self.g
        cur = g.rms_norm(x) if rms else g.norm(x)
        if (w is not None or b is not None) and il >= 0:
            cur.layer = il
        if w is not None:
            cur = g.mul(cur, w)
        if b is not None:
            cur = g.add(cur, b)
        return cur

    # --- attention ------------------------------------------------------------------------------
    def kv_inputs(self, swa: bool = False, k_only: bool = False) -> dict:
        """llama-graph.cpp build_attn_inp_kv(_iswa) / llama-kv-cache.cpp build_input_*: the store indices,
        the KQ mask (f16 with flash attention) and, for a quantized cache, the Hadamard rotation inputs."""
        p = self.p
        n_kv = (p.n_kv_swa or p.n_kv) if swa else p.n_kv
        attn = [a for a in self.m.attention_layers if (a.kind == "sliding") == swa] or self.m.attention_layers
        # build_input_v_idxs: hparams.n_embd_v_gqa_max() spans every layer of the model
        v_gqa_max = max(a.n_kv_heads * a.v_dim for a in self.m.attention_layers)
        n_tokens = self.n_tokens
        suffix = "_swa" if swa else ""
        k_idxs = self.inp("i64", (n_tokens,), f"attn_inp_k_idxs{suffix}")
        v_idxs = None if k_only else \
            self.inp("i64", (n_tokens if p.flash_attn else n_tokens * v_gqa_max,), f"attn_inp_v_idxs{suffix}")
        mask_stream = p.n_stream if p.n_stream > 1 else 1
        mask = self.inp("f16" if p.flash_attn and not p.kq_mask_f32 else "f32",
                        (n_kv, n_tokens // mask_stream, 1, mask_stream), f"attn_inp_kq_mask{suffix}")
        if p.flash_attn and p.kq_mask_f32:     # self_kq_mask_cnv = ggml_cast(ctx0, self_kq_mask, GGML_TYPE_F16)
            mask = self.g.dup(mask, "CPY", (mask,), "f16")
        if k_only:
            # build_attn_inp_k_impl: no V indices, no rotation inputs
            return {"k_idxs": k_idxs, "mask": mask, "n_kv": n_kv}
        # llama-kv-cache.cpp: attn_rot_k / attn_rot_v for quantized caches whose head size is a multiple of 64
        hk = {a.k_dim for a in attn}
        hv = {a.v_dim for a in attn}
        k_rot = v_rot = None
        if _is_quant(p.type_k) and len(hk) == 1 and next(iter(hk)) % 64 == 0:
            nrot = 64
            while next(iter(hk)) % (nrot * 2) == 0:
                nrot *= 2
            k_rot = self.inp("f32", (nrot, nrot), f"attn_inp_k_rot{suffix}")
        if _is_quant(p.type_v) and len(hv) == 1 and next(iter(hv)) % 64 == 0:
            v_rot = self.inp("f32", (64, 64), f"attn_inp_v_rot{suffix}")
        return {"k_idxs": k_idxs, "v_idxs": v_idxs, "mask": mask, "k_rot": k_rot, "v_rot": v_rot, "n_kv": n_kv}

    def hadamard(self, cur: Tensor, rot: Tensor) -> Tensor:
        # src/llama-impl.h llama_mul_mat_hadamard
        g = self.g
        n = rot.ne[0]
        res = g.reshape(cur, n, cur.nelements() // n) if cur.is_contiguous() else g.cont(cur, n, cur.nelements() // n)
        res = g.mul_mat(rot, res)
        return g.reshape(res, *cur.ne)

    def kv_inputs_iswa(self) -> dict:
        """llama-graph.cpp build_attn_inp_kv_iswa: the base cache's inputs and the sliding-window cache's;
        build_attn picks them by the layer's kind."""
        return {"iswa": True, "full": self.kv_inputs(False), "sliding": self.kv_inputs(True)}

    def attn(self, inp: dict, il: int, q: Tensor, k: Tensor | None, v: Tensor | None, wo: Tensor | None,
             wo_b: Tensor | None, sinks: Tensor | None = None, softcap: bool = False,
             kv_layer: int | None = None) -> Tensor:
        """llama-graph.cpp build_attn (KV cache, or the iSWA pair of caches): store K and V with set_rows,
        attend over the cache's views. ``kv_layer``: a layer with no K / V of its own (k, v None: Gemma 4's shared
        KV layers) attends over that layer's cache (llama-model.cpp's layer reuse)."""
        g, p = self.g, self.p
        if kv_layer is not None:
            il = kv_layer
        a = self.m.layers[il].attention
        iswa = inp.get("iswa", False)
        if iswa:
            inp = inp["sliding" if a.kind == "sliding" else "full"]
        if inp["k_rot"] is not None:
            q = self.hadamard(q, inp["k_rot"])
            k = self.hadamard(k, inp["k_rot"]) if k is not None else None
        if inp["v_rot"] is not None and v is not None:
            v = self.hadamard(v, inp["v_rot"])
        # the non-SWA build_attn expands q, v, k; the iSWA one q, k, v
        for t in ((q, k, v) if iswa else (q, v, k)):
            if t is not None:
                g.expand(t)
        n_kv, ns = inp["n_kv"], p.n_stream
        k_gqa, v_gqa = a.n_kv_heads * a.k_dim, a.n_kv_heads * a.v_dim
        kc = g.weight(p.type_k, (k_gqa, n_kv, ns), f"cache_k_l{il}", il)
        vc = g.weight(p.type_v, (v_gqa, n_kv, ns), f"cache_v_l{il}", il)
        if k is not None and v is not None:
            self._store_kv(inp, k, v, kc, vc, k_gqa, v_gqa)
        v_trans = not p.flash_attn
        # get_k / get_v
        kv = g.view(kc, (a.k_dim, a.n_kv_heads, n_kv, ns),
                    (row_size(kc.type, a.k_dim), row_size(kc.type, k_gqa), row_size(kc.type, k_gqa * n_kv)))
        if not v_trans:
            vv = g.view(vc, (a.v_dim, a.n_kv_heads, n_kv, ns),
                        (row_size(vc.type, a.v_dim), row_size(vc.type, v_gqa), row_size(vc.type, v_gqa * n_kv)))
        else:
            vv = g.view(vc, (n_kv, a.n_kv_heads, a.v_dim, ns),
                        (row_size(vc.type, n_kv * a.v_dim), row_size(vc.type, n_kv), row_size(vc.type, n_kv * v_gqa)))
        cur = self.mha(q, kv, vv, inp["mask"], sinks, softcap)
        if inp["v_rot"] is not None:
            cur = self.hadamard(cur, inp["v_rot"])
        if wo is not None:
            cur = g.mul_mat(wo, cur)
        if wo_b is not None:
            cur = g.add(cur, wo_b)
        return cur

    def _store_kv(self, inp: dict, k: Tensor, v: Tensor, kc: Tensor, vc: Tensor, k_gqa: int, v_gqa: int) -> None:
        """llama-kv-cache.cpp cpy_k / cpy_v: K and V stored into the layer's cache by set_rows (V transposed,
        one element a row, without flash attention)."""
        g, ns = self.g, self.p.n_stream
        n_kv = kc.ne[1]
        k2 = g.view(k, (k_gqa, k.ne[2]), (k.nb[2],))
        kdst = g.reshape(kc, k_gqa, n_kv * ns) if ns > 1 else kc
        g.expand(g.set_rows(kdst, k2, inp["k_idxs"]))
        if self.p.flash_attn:
            v2 = g.view(v, (v_gqa, v.ne[2]), (v.nb[2],))
            vdst = g.reshape(vc, v_gqa, n_kv * ns) if ns > 1 else vc
            g.expand(g.set_rows(vdst, v2, inp["v_idxs"]))
        else:
            v2 = g.reshape(v, v_gqa, v.ne[2]) if row_size(v.type, v_gqa) == v.nb[2] else g.cont(v, v_gqa, v.ne[2])
            vview = g.reshape(vc, 1, vc.nelements())
            v2 = g.reshape(v2, 1, v2.nelements())
            g.expand(g.set_rows(vview, v2, inp["v_idxs"]))

    def attn_k_only(self, inp: dict, il: int, q: Tensor, k: Tensor, v: Tensor, wo: Tensor | None,
                    v_mla: Tensor | None) -> Tensor:
        """llama-graph.cpp build_attn with a K-only cache (llm_graph_input_attn_k; MLA): K is stored, V is a
        view of the cached K's first v.ne[0] columns, and v_mla decompresses the result per head."""
        g, p = self.g, self.p
        a = self.m.layers[il].attention
        g.expand(q)
        g.expand(v)
        g.expand(k)
        n_kv, ns = inp["n_kv"], p.n_stream
        k_gqa = a.n_kv_heads * a.k_dim
        kc = g.weight(p.type_k, (k_gqa, n_kv, ns), f"cache_k_l{il}", il)
        k2 = g.view(k, (k_gqa, k.ne[2]), (k.nb[2],))
        kdst = g.reshape(kc, k_gqa, n_kv * ns) if ns > 1 else kc
        g.expand(g.set_rows(kdst, k2, inp["k_idxs"]))
        kv = g.view(kc, (a.k_dim, a.n_kv_heads, n_kv, ns),
                    (row_size(kc.type, a.k_dim), row_size(kc.type, k_gqa), row_size(kc.type, k_gqa * n_kv)))
        vv = g.view(kv, (v.ne[0], kv.ne[1], kv.ne[2], kv.ne[3]), (kv.nb[1], kv.nb[2], kv.nb[3]))
        cur = self.mha(q, kv, vv, inp["mask"], None, False, v_mla)
        if wo is not None:
            cur = g.mul_mat(wo, cur)
        return cur

    def mha(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, sinks: Tensor | None, softcap: bool,
            v_mla: Tensor | None = None) -> Tensor:
        """llama-graph.cpp build_attn_mha."""
        g, p = self.g, self.p
        v_trans = v.nb[1] > v.nb[2]
        ns = k.ne[3]
        q = g.view(q, (q.ne[0], q.ne[1], q.ne[2] // ns, ns), (q.nb[1], q.nb[2], q.nb[2] * (q.ne[2] // ns)))
        q = g.permute(q, 0, 2, 1, 3)
        k = g.permute(k, 0, 2, 1, 3)
        v = g.permute(v, 0, 2, 1, 3)
        if p.flash_attn:
            if v_trans:
                v = g.transpose(v)
            cur = g.flash_attn_ext(q, k, v, mask, sinks)
            if v_mla is not None:
                cur = g.permute(cur, 0, 2, 1, 3)
                cur = g.mul_mat(v_mla, cur)
                cur = g.permute(cur, 0, 2, 1, 3)
                cur = g.cont(cur)
            cur = g.reshape(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        else:
            kq = g.mul_mat(k, q, name="kq")
            if softcap:
                kq = g.unary("SCALE", kq)
                kq = g.unary("UNARY", kq)
                kq = g.unary("SCALE", kq)
            kq = g.soft_max(kq, mask, sinks)
            if not v_trans:
                v = g.cont(g.transpose(v))
            kqv = g.mul_mat(v, kq)
            if v_mla is not None:
                kqv = g.mul_mat(v_mla, kqv)
            cur = g.permute(kqv, 0, 2, 1, 3)
            cur = g.cont(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        g.expand(cur)
        return cur

    # --- feed-forward -----------------------------------------------------------------------------
    def ffn(self, cur: Tensor, up: Tensor | None, gate: Tensor | None, down: Tensor, par: bool = True,
            act: str = "silu", up_b: Tensor | None = None, down_b: Tensor | None = None) -> Tensor:
        """llama-graph.cpp build_ffn: the parallel-gate path (gate and up, then swiglu/geglu_split) or a fused
        gate_up (LLM_FFN_SWIGLU, one input)."""
        g = self.g
        tmp = g.mul_mat(up, cur) if up is not None else cur
        if up_b is not None:
            tmp = g.add(tmp, up_b)
        if gate is not None:
            x = g.mul_mat(gate, cur if par else tmp)
            x = g.glu_split(x, tmp)
        elif act == "swiglu":
            x = g.glu(tmp)
        else:
            x = g.unary("UNARY", tmp)
        x = g.mul_mat(down, x)
        if down_b is not None:
            x = g.add(x, down_b)
        return x

    def moe(self, cur: Tensor, il: int, n_expert: int, n_used: int, norm_w: bool,
            gating: str = "softmax", gate_inp_b: Tensor | None = None, exp_probs_b: Tensor | None = None,
            w_scale: bool = False, oai: bool = False, act: str = "silu", logits: Tensor | None = None,
            weight_before: bool = False) -> Tensor:
        """llama-graph.cpp build_moe_ffn: router logits → probs → top-k ids → weights; mul_mat_id for up, gate,
        down over the n_used chosen experts; the weighted experts summed by views and adds. ``weight_before``
        (LLM_ARCH_LLAMA4): the top-k taken over the logits, and the input repeated per chosen expert and weighted
        before the experts, not after."""
        g = self.g
        n_embd, n_tokens = cur.ne[0], cur.ne[1]
        if logits is None:      # (nemotron_h_moe passes the router's logits in: probs_in)
            logits = g.mul_mat(self.lw(il, "ffn_gate_inp.weight"), cur, name=f"ffn_moe_logits-{il}")  # type: ignore[arg-type]
        if gate_inp_b is not None:
            logits = g.add(logits, gate_inp_b)
        if gating == "softmax":
            probs = g.soft_max(logits)
        elif gating == "sigmoid":
            probs = g.unary("UNARY", logits)
        else:   # softmax_weight: the weights are soft-maxed after the selection
            probs = logits
        sel = g.add(probs, exp_probs_b) if exp_probs_b is not None else probs
        sel = logits if weight_before else sel
        selected = g.argsort_top_k(sel, n_used)
        probs3 = g.reshape(probs, 1, n_expert, n_tokens)
        weights = g.get_rows(probs3, selected)
        if gating == "softmax_weight":
            weights = g.reshape(weights, n_used, n_tokens)
            weights = g.soft_max(weights)
            weights = g.reshape(weights, 1, n_used, n_tokens)
        if norm_w:
            weights = g.reshape(weights, n_used, n_tokens)
            wsum = g.sum_rows(weights)
            wsum = g.unary("CLAMP", wsum)
            weights = g.new(weights.type, weights.ne, "DIV", (weights, wsum))
            weights = g.reshape(weights, 1, n_used, n_tokens)
        if w_scale:
            weights = g.unary("SCALE", weights)
        g.expand(weights)
        cur3 = g.reshape(cur, n_embd, 1, n_tokens)
        if weight_before:       # ggml_repeat_4d to [n_embd, n_used, n_tokens], then ggml_mul by the weights
            cur3 = g.mul(g.new(cur3.type, (n_embd, n_used, n_tokens), "REPEAT", (cur3,)), weights)
        up = g.mul_mat_id(self.lw(il, "ffn_up_exps.weight"), cur3, selected)  # type: ignore[arg-type]
        ub = self.lw(il, "ffn_up_exps.bias")
        if ub is not None:
            up = g.new(up.type, up.ne, "ADD_ID", (up, ub, selected))
        gate_w = self.lw(il, "ffn_gate_exps.weight")
        x = g.mul_mat_id(gate_w, cur3, selected) if gate_w is not None else up
        gb = self.lw(il, "ffn_gate_exps.bias")
        if gb is not None:
            x = g.new(x.type, x.ne, "ADD_ID", (x, gb, selected))
        x = g.glu_split(x, up) if gate_w is not None else g.unary("UNARY", x)
        x = g.unary("SQR", x) if act == "relu_sqr" else x      # LLM_FFN_RELU_SQR: ggml_relu, then ggml_sqr
        experts = g.mul_mat_id(self.lw(il, "ffn_down_exps.weight"), x, selected)  # type: ignore[arg-type]
        db = self.lw(il, "ffn_down_exps.bias")
        if db is not None:
            experts = g.new(experts.type, experts.ne, "ADD_ID", (experts, db, selected))
        if not weight_before:
            experts = g.mul(experts, weights)
        g.expand(experts)
        views = []
        for i in range(n_used):
            v = g.view(experts, (n_embd, n_tokens), (experts.nb[2],), i * experts.nb[1])
            g.expand(v)
            views.append(v)
        out = views[0]
        for v in views[1:]:
            out = g.add(out, v)
            g.expand(out)
        if n_used == 1:
            out = g.cont(out)
        return out

    # --- output -----------------------------------------------------------------------------------
    def output(self, cur: Tensor, norm_b: Tensor | None = None, softcap: bool = False, rms: bool = True,
               norm_weight: bool = True, out_ids: Tensor | None = None, logit_scale: bool = False,
               head_bias: Tensor | None = None) -> None:
        """The final norm (res->t_embd) and the LM head (res->t_logits), both graph outputs
        (llama-graph.cpp llm_graph_result::set_outputs). ``rms`` False: a layer norm; ``norm_weight`` False: none
        of output_norm's weight (OLMo's LLM_NORM, NULL, NULL); ``out_ids``: the output rows gathered after the norm
        (then itself an output, res->t_h_nextn), where no block gathered them (cparams.embeddings_nextn_masked);
        ``logit_scale``: the logits scaled (Command R's f_logit_scale); ``head_bias``: the LM head's bias (Phi-2)."""
        g = self.g
        cur = self.norm(cur, self.w("output_norm.weight") if norm_weight else None, norm_b, rms=rms)
        cur.flags |= FLAG_OUTPUT
        if out_ids is not None:
            cur = g.get_rows(cur, out_ids)
            cur.flags |= FLAG_OUTPUT
        head = self.w("output.weight") or self.w("token_embd.weight", self.m.n_layers)
        assert head is not None
        cur = g.mul_mat(head, cur, name="result_output")
        if head_bias is not None:
            cur = g.add(cur, head_bias)
        if logit_scale:
            cur = g.unary("SCALE", cur)
        if softcap:
            cur = g.unary("SCALE", cur)
            cur = g.unary("UNARY", cur)
            cur = g.unary("SCALE", cur)
        cur.flags |= FLAG_OUTPUT
        g.expand(cur)


def _is_quant(t: str) -> bool:
    return TYPES[t][0] > 1


def build_llama_like(b: DecoderGraph) -> None:
    """src/models/llama.cpp, qwen3.cpp, qwen3moe.cpp, phi3.cpp, qwen2.cpp (Q/K/V biases), granite.cpp (whose
    multipliers add only in-place SCALE nodes): pre-norm attention (optional Q/K norms, rope factors, fused QKV) and
    a dense, fused-gate_up or MoE FFN."""
    g, m = b.g, b.m
    arch = m.family
    inpL, pos, inp, out_ids = inputs(b)
    for il in b.layer_ids():
        def attn(cur: Tensor, il: int) -> Tensor:
            a = m.layers[il].attention
            q, k, v = _qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
            qn, kn = b.lw(il, "attn_q_norm.weight"), b.lw(il, "attn_k_norm.weight")
            if qn is not None:
                q = b.norm(q, qn, il=il)
            rope_factors = b.w("rope_freqs.weight", il)     # llama-model.cpp: one (duplicated) copy per layer
            q = g.rope(q, pos, rope_factors)
            if kn is not None:
                k = b.norm(k, kn, il=il)
            k = g.rope(k, pos, rope_factors)
            if arch == "phi3":
                q = g.unary("SCALE", q)
            return b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), b.lw(il, "attn_output.bias"))

        def ffn(cur: Tensor, il: int) -> Tensor:
            if b.lw(il, "ffn_gate_inp.weight") is not None:
                return b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=True)
            if b.lw(il, "ffn_gate.weight") is None:
                return b.ffn(cur, b.lw(il, "ffn_up.weight"), None, b.lw(il, "ffn_down.weight"), par=False,  # type: ignore[arg-type]
                             act="swiglu")
            return dense_ffn(b, cur, il)

        inpL = pre_norm_layer(b, il, inpL, out_ids, attn, ffn, residual_first=arch == "phi3")
    b.output(inpL)


def build_gemma(b: DecoderGraph) -> None:
    """src/models/gemma2.cpp, gemma3.cpp: scaled embeddings, iSWA attention (gemma3: Q/K norms; gemma2: logit
    soft-capping in attention and on the output), post-attention and post-FFN norms, a GELU-gated FFN."""
    g, m = b.g, b.m
    gemma2 = m.family == "gemma2"
    inpL = b.build_inp_embd()
    inpL = g.unary("SCALE", inpL, name="inp_scaled")
    pos = b.build_inp_pos()
    iswa = any(a.kind == "sliding" for a in m.attention_layers)
    inp = b.kv_inputs_iswa() if iswa else b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        a = m.layers[il].attention
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        q, k, v = _qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
        if not gemma2:
            q = b.norm(q, b.lw(il, "attn_q_norm.weight"), il=il)
        q = g.rope(q, pos)
        if not gemma2:
            k = b.norm(k, b.lw(il, "attn_k_norm.weight"), il=il)
        k = g.rope(k, pos)
        q = g.unary("SCALE", q)
        # gemma2 sets hparams.attn_soft_cap: build_attn_mha caps KQ (without flash attention)
        cur = b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), None, softcap=gemma2)
        cur, inpL = last_rows(b, il, out_ids, cur, inpL)
        cur = b.norm(cur, b.lw(il, "post_attention_norm.weight"), il=il)
        sa_out = g.add(cur, inpL)
        cur = b.norm(sa_out, b.lw(il, "ffn_norm.weight"), il=il)
        cur = dense_ffn(b, cur, il)
        cur = b.norm(cur, b.lw(il, "post_ffw_norm.weight"))
        inpL = g.add(cur, sa_out)
    # gemma3: final soft-capping only when the GGUF sets final_logit_softcapping (the converter does not)
    b.output(inpL, softcap=gemma2)


def build_openai_moe(b: DecoderGraph) -> None:
    """src/models/openai-moe.cpp (gpt-oss): iSWA attention with biases and attention sinks, an MoE FFN with
    biased router and experts, the softmax taken over the chosen experts' logits (SOFTMAX_WEIGHT) and the
    swiglu_oai activation. The last layer's output is a graph output (res->t_h_nextn) and the rows of the
    output tokens are picked after the last layer (cparams.embeddings_nextn_masked is false)."""
    g, m = b.g, b.m
    inpL = b.build_inp_embd()
    pos = b.build_inp_pos()
    inp = b.kv_inputs_iswa()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        a = m.layers[il].attention
        inpSA = inpL
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        q, k, v = _qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
        q = g.rope(q, pos)
        k = g.rope(k, pos)
        cur = b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), b.lw(il, "attn_output.bias"),
                     sinks=b.lw(il, "attn_sinks.weight"))
        ffn_inp = g.add(cur, inpSA)
        cur = b.norm(ffn_inp, b.lw(il, "post_attention_norm.weight"), il=il)
        cur = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=False, gating="softmax_weight",
                    gate_inp_b=b.lw(il, "ffn_gate_inp.bias"))
        inpL = g.add(cur, ffn_inp)
    inpL.flags |= FLAG_OUTPUT       # res->t_h_nextn
    cur = g.get_rows(inpL, out_ids)
    b.output(cur)


def build_deepseek2(b: DecoderGraph) -> None:
    """src/models/deepseek2.cpp with MLA (the GGUF splits wkv_b into attn_k_b / attn_v_b): the absorbed
    queries attend over a K-only latent cache (MQA); dense FFN in the leading layers, then a softmax-gated
    MoE plus shared experts. Q without LoRA (the Lite models' wq) or with it (wq_a, norm, wq_b)."""
    g, m = b.g, b.m
    mla = m.layers[0].attention
    n_rot = mla.k_dim - mla.v_dim                         # qk_rope_head_dim
    inpL = b.build_inp_embd()
    pos = b.build_inp_pos()
    inp = b.kv_inputs(k_only=True)
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        def attn(cur: Tensor, il: int) -> Tensor:
            return _mla_attention(b, inp, pos, cur, il, n_rot, mla.v_dim)

        def ffn(cur: Tensor, il: int) -> Tensor:
            if b.lw(il, "ffn_gate_inp.weight") is None:
                return dense_ffn(b, cur, il)
            moe_out = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=False,
                            exp_probs_b=b.lw(il, "exp_probs_b.bias"))
            return g.add(moe_out, dense_ffn(b, cur, il, "_shexp"))

        inpL = pre_norm_layer(b, il, inpL, out_ids, attn, ffn)
    b.output(inpL)


def _mla_attention(b: DecoderGraph, inp: dict, pos: Tensor, cur: Tensor, il: int, n_rot: int, kv_lora: int) -> Tensor:
    """deepseek2.cpp's MLA block: Q (with or without LoRA), the compressed KV and its RoPE part, the absorbed
    queries (attn_k_b), attention over the K-only latent cache, attn_v_b per head, attn_output."""
    g, n_head, n_tokens = b.g, b.n_head, cur.ne[1]
    wq = b.lw(il, "attn_q.weight")
    if wq is not None:
        q = g.mul_mat(wq, cur)
    else:
        q = g.mul_mat(b.lw(il, "attn_q_a.weight"), cur)  # type: ignore[arg-type]
        q = b.norm(q, b.lw(il, "attn_q_a_norm.weight"), il=il)
        q = g.mul_mat(b.lw(il, "attn_q_b.weight"), q)  # type: ignore[arg-type]
    hd_k = q.ne[0] // n_head                          # n_embd_head_k_mla
    q = g.reshape(q, hd_k, n_head, n_tokens)
    kv_pe = g.mul_mat(b.lw(il, "attn_kv_a_mqa.weight"), cur)  # type: ignore[arg-type]
    rs = row_size(kv_pe.type, kv_lora + n_rot)
    kv_cmpr = g.view(kv_pe, (kv_lora, n_tokens), (rs,), 0)
    k_pe = g.view(kv_pe, (n_rot, 1, n_tokens), (rs, rs), row_size(kv_pe.type, kv_lora))
    k_pe = g.rope(k_pe, pos)
    kv_cmpr = b.norm(kv_cmpr, b.lw(il, "attn_kv_a_norm.weight"), il=il)
    nope = hd_k - n_rot
    q_nope = g.view(q, (nope, n_head, n_tokens), (q.nb[1], q.nb[2]), 0)
    q_pe = g.view(q, (n_rot, n_head, n_tokens), (q.nb[1], q.nb[2]), row_size(q.type, nope))
    q_pe = g.rope(q_pe, pos)
    q_nope = g.permute(q_nope, 0, 2, 1, 3)
    q_abs = g.mul_mat(b.lw(il, "attn_k_b.weight"), q_nope)  # type: ignore[arg-type]
    q_abs = g.permute(q_abs, 0, 2, 1, 3)
    qcur = g.concat(q_abs, q_pe, 0)
    kv_cmpr = g.reshape(kv_cmpr, kv_lora, 1, n_tokens)
    kcur = g.concat(kv_cmpr, k_pe, 0)
    return b.attn_k_only(inp, il, qcur, kcur, kv_cmpr, b.lw(il, "attn_output.weight"), b.lw(il, "attn_v_b.weight"))


def build_granite_hybrid(b: DecoderGraph) -> None:
    """src/models/granite-hybrid.cpp: mamba2 layers (recurrent state) and attention layers, each followed by
    an MoE FFN with shared experts (or a dense FFN). Modelled as the Granite 4.0-H GGUFs are: NoPE (no
    positions input, no rope), and without the embedding / residual / logit multipliers, which only add
    in-place SCALE nodes."""
    g, m = b.g, b.m
    inpL = b.build_inp_embd()
    # build_inp_mem_hybrid: build_rs_inp_impl, then the attention inputs
    mem = max(1, b.n_seqs)
    s_copy = b.inp("i32", (mem,), "rs_s_copy")
    rs = {"main": g.view(s_copy, (b.n_seqs,), (), 0),
          "extra": g.view(s_copy, (mem - b.n_seqs,), (), b.n_seqs * s_copy.nb[0])}
    inp = b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    for il in b.layer_ids():
        def mixer(cur: Tensor, il: int) -> Tensor:
            if m.layers[il].attention is None:
                return _mamba2(b, rs, cur, il)
            return attention(b, inp, il, cur, None, out_bias=True)

        def ffn(cur: Tensor, il: int) -> Tensor:
            if b.lw(il, "ffn_gate_inp.weight") is None:
                return dense_ffn(b, cur, il)
            moe_out = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=True)
            if b.lw(il, "ffn_up_shexp.weight") is None:
                return moe_out
            return g.add(moe_out, dense_ffn(b, cur, il, "_shexp"))

        inpL = pre_norm_layer(b, il, inpL, out_ids, mixer, ffn)
    b.output(inpL)


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {
    # each checked against every record of measurements/llamacpp (benchmarks/compute_sim.py): CPU, and CUDA with
    # -ngl 0, half and all; other architectures are not modelled
    "llama": build_llama_like, "qwen3": build_llama_like, "qwen3moe": build_llama_like, "phi3": build_llama_like,
    "gemma2": build_gemma, "gemma3": build_gemma, "gpt-oss": build_openai_moe,
    "deepseek2": build_deepseek2, "granitehybrid": build_granite_hybrid,
    **dict.fromkeys(("qwen2", "granite", "granitemoe"), build_llama_like),    # measurements/llamacpp_h200
}


# the other builders live in arch_hybrid.py (the gated delta-net hybrids qwen3next, qwen35, qwen35moe), arch_ssm.py,
# arch_moe.py and arch_dense.py, which build on DecoderGraph and blocks.py
from .arch_dense import BUILDERS as _DENSE_BUILDERS  # noqa: E402   (OLMo, OLMo 2)
from .arch_gemma import BUILDERS as _GEMMA_BUILDERS  # noqa: E402   (Gemma 4)
from .arch_hybrid import BUILDERS as _HYBRID_BUILDERS  # noqa: E402
from .arch_moe import BUILDERS as _MOE_BUILDERS  # noqa: E402   (GLM-4.5, MiniMax M2, DBRX, Qwen2-MoE)
from .arch_parallel import BUILDERS as _PARALLEL_BUILDERS  # noqa: E402   (Command R / R7B, Phi-2, GPT-NeoX, Falcon)
from .arch_ssm import BUILDERS as _SSM_BUILDERS  # noqa: E402   (Nemotron-H, Jamba, Falcon-H1, Mamba)
from .arch_swa import BUILDERS as _SWA_BUILDERS  # noqa: E402   (Llama 4)
from .arch_vl import BUILDERS as _VL_BUILDERS  # noqa: E402   (Qwen2-VL, Qwen3-VL, Qwen3-VL-MoE)

BUILDERS.update(_HYBRID_BUILDERS, **_SSM_BUILDERS, **_MOE_BUILDERS, **_DENSE_BUILDERS, **_SWA_BUILDERS,
                **_GEMMA_BUILDERS, **_VL_BUILDERS, **_PARALLEL_BUILDERS)


def supported(model) -> bool:
    """The architecture has a builder here and the tensors carry the GGUF names it reads (runtimes/ggml_scope.py:
    the same question without importing this package, which the plans ask; tests/unit/test_ggml_scope.py holds the
    two equal on every catalog model). Kept per model object."""
    return _SUPPORTED.get(model, None, lambda: model.family in BUILDERS and builder_reads(model))


_SUPPORTED = IdMemo(256)


def build_graph(model, p: GraphParams, n_tokens: int, n_seqs: int, n_outputs: int,
                layers: tuple[int, ...] | None = None) -> DecoderGraph:
    b = DecoderGraph(model, p, n_tokens, n_seqs, n_outputs, layers)
    BUILDERS[model.family](b)
    return b


def pp_outputs(n_ubatch: int, n_outputs_max: int | None) -> int:
    """The prompt graph's output rows: n_outputs_pp = min(n_tokens, cparams.n_outputs_max) (src/llama-context.cpp
    since ggml-org/llama.cpp PR #23861; before it, and with the C API's default n_outputs_max = n_batch, n_ubatch)."""
    return n_ubatch if n_outputs_max is None else max(1, min(n_ubatch, n_outputs_max))


@gc_paused()
def reserve_sizes(model, p: GraphParams, n_ubatch: int, n_seqs: int = 1,
                  buffers: list[Buffer] | None = None, n_outputs_max: int | None = None) -> list[int]:
    """src/llama-context.cpp sched_reserve: the pp graph (n_ubatch tokens, all of them outputs), the tg graph
    (one token per sequence) and pp again; each buffer keeps its largest size (ggml-alloc.c only grows a buffer).
    ``n_outputs_max``: the context's cap on outputs (None: n_batch, the C API's default), pp_outputs."""
    buffers = buffers or [Buffer()]
    sizes = [0] * len(buffers)
    # graph_reserve rounds n_tokens up to a multiple of n_seqs; the outputs stay min(n_ubatch, n_outputs_max)
    n_tokens = -(-n_ubatch // n_seqs) * n_seqs
    # periodic.py: repeated layers left out where ggml-alloc's walk checks that they repeat (one device: the CPU)
    kinds = periodic.layer_kinds(model, lambda il: 0, None) if periodic.SKIP else []
    for nt, n_out in ((n_tokens, pp_outputs(n_ubatch, n_outputs_max)), (n_seqs, n_seqs)):
        def reserve(layers: tuple[int, ...] | None, cuts: list[tuple[int, int, int]], nt: int = nt,
                    n_out: int = n_out) -> list[int]:
            g = build_graph(model, p, nt, n_seqs, n_out, layers).g
            at = [tuple(g.layer_start(il) for il in cut) for cut in cuts]
            for k, cut in enumerate(at):
                if None in cut:
                    raise periodic.NotRepeated("a cut layer built no node", k)
            return allocate(g, buffers, cuts=at)  # type: ignore[arg-type]   # (no None left: checked above)
        for i, s in enumerate(periodic.reduced(kinds, reserve)):
            sizes[i] = max(sizes[i], s)
    return sizes


def simulate_compute(model, n_ubatch: int, n_kv: int, flash_attn: bool, *, n_seqs: int = 1, n_stream: int = 1,
                     type_k: str = "f16", type_v: str = "f16", n_kv_swa: int | None = None,
                     n_outputs_max: int | None = None, kq_mask_f32: bool = False, gdn: str = "fused") -> int:
    """Bytes of llama.cpp's CPU compute buffer ("CPU compute buffer size") for a context: n_ubatch after the
    context's own capping, n_kv the cells one stream holds, n_seqs = n_seq_max, n_stream the KV streams,
    n_kv_swa the cells of the sliding-window cache (gemma2/3, gpt-oss), n_outputs_max the context's output cap
    (llama-server's since PR #23861; None: the C API's n_batch), kq_mask_f32 a build before PR #23764, gdn an older
    build's delta-net graph (GraphParams.gdn)."""
    p = GraphParams(n_kv=n_kv, flash_attn=flash_attn, n_stream=n_stream, type_k=type_k, type_v=type_v,
                    n_kv_swa=n_kv_swa, kq_mask_f32=kq_mask_f32, gdn=gdn)
    return reserve_sizes(model, p, n_ubatch, n_seqs, n_outputs_max=n_outputs_max)[0]

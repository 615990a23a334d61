"""Hugging Face transformers: ``from_pretrained(device_map="auto")`` placement and ``generate``'s growing cache.

Modelled on transformers 5.23.0 (PyPI wheel) and accelerate (huggingface/accelerate 16cb6eb, Jul 2026):
- integrations/accelerate.py _get_device_map: "auto" → get_balanced_memory → infer_auto_device_map.
  get_max_memory: free memory per GPU (torch.cuda.mem_get_info, after the CUDA context exists) and
  0.9 × available RAM for "cpu" when max_memory is not given; on one GPU, 90 % of it ("10% for the
  buffer"); on several, every GPU but the last is capped at size/n + 1.25 × the largest no-split block
  or leaf. Quantizers' adjust_max_memory (bitsandbytes 4/8-bit) take another 10 % off every device. The two
  90 % shares by release (before 5.0 accelerate's, by its release): transformers_versions.device_map_shares.
- infer_auto_device_map: modules in order, GPU 0 → … → cpu → disk; on the main devices (GPU 0 and cpu)
  it keeps room for the largest layer still to place; a module that does not fit is split into its
  children unless it is a no-split block (the decoder layer).
- module sizes for placement (compute_module_sizes): bitsandbytes params count 0.5 B (4-bit) or 1 B
  (8-bit) per element (quantizer_bnb_4bit.py / quantizer_bnb_8bit.py quantized_element_size).
- bitsandbytes refuses a device map with some modules on cpu/disk (quantizer_bnb_4bit.py
  validate_environment) unless llm_int8_enable_fp32_cpu_offload=True.
- generate: DynamicCache grows with the prompt + new tokens per sequence (cache_utils.py DynamicLayer);
  sliding-window layers keep sliding_window − 1 tokens (DynamicSlidingWindowLayer); logits are computed
  for the last position only (generation/utils.py: logits_to_keep = 1 when the model's forward takes it,
  since 4.45 as num_logits_to_keep) and copied to float32.
- offloaded (cpu/disk) modules run on the first GPU (accelerate dispatch_model main_device), so their
  KV cache lives there.
- attn_implementation="eager" (models/llama/modeling_llama.py eager_attention_forward, the same in qwen3 and the
  other Llama-style files): key/value go through repeat_kv (a copy to all query heads when there are fewer KV
  heads), attn_weights = matmul(query, keyᵀ) × scaling + attention_mask is a [batch, heads, q_len, kv_len] tensor
  in the model dtype, then softmax(…, dtype=float32).to(query.dtype); dropout is the identity in eval. The causal mask is
  materialized for eager (masking_utils.py eager_mask: sdpa_mask with allow_is_causal_skip=False, then
  torch.where(mask, 0, finfo(dtype).min) → a [batch, 1, q_len, kv_len] tensor in the model dtype), where SDPA gets
  None and is_causal unless the batch is padded.

``Transformers.allocate`` computes typed results (``_Placement``, ``_Cache``, ``_Prefill`` with ``_Eager``) and
``_explain`` turns them into the --explain steps; the figures come only from the former.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..kv import normalize_cache_type, recurrent_state_bytes
from ..memo import IdMemo
from ..model.spec import ModelSpec, TensorInfo
from ..quant.formats import ALIASES, FLOAT_BYTES, LINEAR_ROLES, QUANT_FORMATS, WeightEstimate, estimate_weights
from ..units import GiB, MiB
from .base import Allocation, DeviceMemory, Levers, Settings, Step, Target
from .transformers_device_map import BALANCED, balanced_memory, refuse_low_zero
from .transformers_versions import (
    OWN_BALANCED_MEMORY_FROM,
    TransformersRules,
    accelerate_assumed,
    accelerate_release,
    default_attention,
    device_map_shares,
    sdpa_swapped,
    version_refusal,
)

TF_REF = "transformers 5.23.0"
ACC_REF = "accelerate 16cb6eb"
# Measured with nvidia-smi on an H100 (torch 2.11 + CUDA 13, measurements/transformers): 621 MiB once the first
# CUDA tensor exists (get_max_memory's probe, so mem_get_info's free already lacks it), 118 MiB more once cuBLAS
# runs its first bf16 matmul. Not from transformers' code.
CUDA_CONTEXT = 620 * MiB
CUBLAS_WORKSPACE = 120 * MiB
# transformers has no context default (GenerationConfig.max_length is 20); runlocal plans 4096 tokens.
DEFAULT_CTX = 4096
# quantized_element_size of the bitsandbytes quantizers: what accelerate counts per quantized element.
BNB_PLAN_BYTES = {"nf4": 0.5, "fp4": 0.5, "nf4-dq": 0.5, "fp4-dq": 0.5, "int8": 1.0}
QUANTIZER_SHARE = 0.9        # HfQuantizer.adjust_max_memory for bitsandbytes 4/8-bit
LEAF_BUFFER = 1.25           # get_balanced_memory: buffer = 1.25 × max(no-split block, leaf)
MLA_NOPE_FALLBACK = 128      # DeepSeek-V2/V3 qk_nope_head_dim = v_head_dim = 128, when attn_kv_b is absent
TORCH_DTYPES = {"fp32": "float32", "f32": "float32", "fp16": "float16", "f16": "float16", "bf16": "bfloat16"}
ATTN_IMPLEMENTATIONS = ("sdpa", "eager")
# attn_implementation="sdpa" asked of a class without _supports_sdpa: from_pretrained raises (_sdpa_can_dispatch,
# 5.23.0 modeling_utils.py:1665-1669; 4.36.0 _check_and_enable_sdpa :1463-1467 with hard_check_only)
SDPA_UNSUPPORTED = ("the '{family}' model class \"does not support an attention implementation through "
                    "torch.nn.functional.scaled_dot_product_attention yet\" (modeling_utils.py _sdpa_can_dispatch): "
                    "load it with attn_implementation=\"eager\" (--attn-implementation eager)")
# Bytes per attention score alive at once in eager_attention_forward's softmax(attn_weights, dtype=float32)
# .to(dtype), by model dtype. ATen SoftMax.cpp softmax(input, dim, dtype): only a CUDA Half input takes the fused
# half_to_float kernel; any other input is first converted (input.toType(float32), a full copy) and then
# _softmax writes a float32 output. bf16: the bf16 scores (2) + their float32 copy (4) + the float32 result (4);
# fp16: scores (2) + float32 result (4) + the fp16 cast of it (2) once softmax returns; fp32: toType is a no-op,
# scores (4) + result (4). (matmul × scaling and + mask hold two dtype-sized copies: never more than these.)
EAGER_SCORE_BYTES = {"bf16": 10, "f16": 8, "f32": 8}
# gpt-oss's own eager_attention_forward (5.23.0 models/gpt_oss/modeling_gpt_oss.py:227-255; eager is its default,
# transformers_versions.SDPA_BY_MODEL_TYPE) softmaxes in the model dtype after torch.cat([attn_weights, sinks]): alive
# at once are attn_weights (:239), combined_logits (:244, then :249 its max-shifted copy while the unshifted one is
# released) and probs (:250 `F.softmax(combined_logits, dim=-1, dtype=combined_logits.dtype)`), each one dtype-sized
# element per score (the sink column aside); `scores = probs[..., :-1]` (:251) is a view. So 3 × the element size:
# bf16 / f16 3 × 2 = 6 B; f32 3 × 4 = 12 B (softmax's dtype is the input's own, float32: SoftMax.cpp's toType is a
# no-op and _softmax writes the one float32 output — no upcast copy, unlike EAGER_SCORE_BYTES' bf16 row).
EAGER_SCORE_BYTES_BY_TYPE = {"gpt_oss": {"bf16": 6, "f16": 6, "f32": 12}}
# What each quantizer's validate_environment does without a GPU (read in the 5.23.0 wheel): AWQ loads through
# gptqmodel, whose torch AWQ kernel (AwqTorchLinear, gptqmodel 7.7.0) runs on any device — no GPU check (the
# "GPU is required to run AWQ quantized model" RuntimeError is 4.x's: always up to 4.45, unless the config asks for
# IPEX in 4.46–4.53, and 4.54–4.57 switch a GEMM checkpoint to IPEX instead); GPTQ needs gptqmodel, which runs on the
# CPU; bitsandbytes checks its supported_torch_devices, which include "cpu" (bitsandbytes 0.50.2). A pre-quantized
# fine-grained FP8 checkpoint (quant_method "fp8", 128×128 blocks) is dequantized to bf16 at load when neither CUDA nor
# an XPU is there, and on a CUDA GPU below compute capability 8.9 (quantizer_finegrained_fp8.py: "we will default to
# dequantizing the model to bf16").
FP8_KERNEL_CAPABILITY = 8.9
# AutoFP8's per-tensor checkpoints (RedHatAI/Meta-Llama-3-8B-Instruct-FP8, gemma-2-9b-it-FP8: neuralmagic/AutoFP8
# quantize.py saves `weight` in fp8 e4m3 beside scalar `weight_scale` and `input_scale`, under quantization_config
# {"quant_method": "fp8", "activation_scheme": "static"}) take the same FineGrainedFP8 path — "fp8" maps to
# FineGrainedFP8Config (quantizers/auto.py) with its default 128×128 weight_block_size — but that path reads only
# `weight_scale_inv` and `activation_scale` (serialized_names): the checkpoint's scales load as UNEXPECTED keys and the
# weights run unscaled. Loaded by transformers 5.24.0 on a tiny Llama saved in AutoFP8's layout: on the CPU every
# Linear came back bf16 with max |W| 448.0 where the original's was 0.095; with the cc ≥ 8.9 path forced, FP8Linear
# with `weight_scale_inv` (2, 2) and `activation_scale` MISSING, `weight_scale` / `input_scale` UNEXPECTED.
AUTOFP8_UNREAD = ("transformers loads an AutoFP8 checkpoint (quant_method \"fp8\", per-tensor weight_scale / "
                  "input_scale) through FineGrainedFP8Config, which reads only weight_scale_inv / activation_scale: the "
                  "checkpoint's scales are dropped as UNEXPECTED keys and the weights run unscaled, so the output is "
                  "wrong (transformers 5.24.0 quantizers/quantizer_finegrained_fp8.py serialized_names). vLLM reads "
                  "these scales; under transformers use the bf16 checkpoint")


@dataclass
class _Node:
    """A module in the placement tree: a leaf, a no-split block, or a container of children."""

    name: str
    plan: float = 0.0                 # bytes accelerate counts
    actual: int = 0                   # bytes it really takes
    children: list[_Node] = field(default_factory=list)
    no_split: bool = False
    layer: int | None = None

    @property
    def atomic(self) -> bool:
        return not self.children or self.no_split


def _quant_key(q: str | None) -> str | None:
    return None if q is None else ALIASES.get(q.lower(), q.lower())


def _tensor_sizes(model: ModelSpec, weights: WeightEstimate) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """(real bytes, bytes accelerate plans with) per tensor; kept per model object and what it reads of the weights
    (every plan of a search asks again: a 405B model's ~1,100 tensors, ~3 ms a plan)."""
    def now() -> tuple[tuple[int, ...], tuple[float, ...]]:
        actual, plan = _tensor_sizes_now(model, weights)
        return tuple(actual), tuple(plan)
    return _SIZES.get(model, (weights.quant, weights.total, weights.from_file), now)


_SIZES = IdMemo(256)


def _tensor_sizes_now(model: ModelSpec, weights: WeightEstimate) -> tuple[list[int], list[float]]:
    q = _quant_key(weights.quant)
    if weights.from_file and all(t.nbytes is not None for t in model.tensors):
        actual = [int(t.nbytes) for t in model.tensors]  # type: ignore[arg-type]
        return actual, [float(a) for a in actual]
    width = FLOAT_BYTES.get(q or "", 2)
    actual, plan = [], []
    for t in model.tensors:
        linear = t.role in LINEAR_ROLES and len(t.shape) >= 2
        if q in QUANT_FORMATS and linear and not (q == "mxfp4" and not t.role.startswith("expert_")):
            actual.append(QUANT_FORMATS[q][1](t))
            plan.append(t.numel * BNB_PLAN_BYTES[q] if q in BNB_PLAN_BYTES else float(actual[-1]))
        else:
            w = width if q in FLOAT_BYTES else 2
            actual.append(t.numel * w)
            plan.append(float(t.numel * w))
    total = sum(actual)
    if total and weights.total and total != weights.total:       # keep the plan's weight total
        actual = [a * weights.total // total for a in actual]
    return actual, plan


def _tree(model: ModelSpec, weights: WeightEstimate, placed_as: WeightEstimate | None = None) -> _Node:
    """The usual *ForCausalLM layout: model(embed_tokens, layers[i], norm) then lm_head. ``placed_as``: the weights
    accelerate sizes the modules on where they are not the ones the model runs with (fp8_dequantized)."""
    if not model.tensors:       # no tensor list: one block of the estimated size
        whole = _Node("model", plan=float((placed_as or weights).total), actual=weights.total, no_split=True)
        return _Node("", children=[whole], plan=whole.plan, actual=whole.actual)
    actual, plan = _tensor_sizes(model, weights)
    if placed_as is not None:
        plan = tuple(float(a) for a in _tensor_sizes(model, placed_as)[0])
    first = _Node("model.pre")                     # vision tower, projector, other non-layer modules
    embed = _Node("model.embed_tokens")
    layers = [_Node(f"model.layers.{i}", no_split=True, layer=i) for i in range(model.n_layers)]
    norm = _Node("model.norm")
    head = _Node("lm_head")
    for t, a, p in zip(model.tensors, actual, plan):
        node = _bucket(t, first, embed, layers, norm, head)
        node.actual += a
        node.plan += p
    if model.tie_word_embeddings:
        # compute_module_sizes skips tied keys: lm_head.weight shares the embedding and counts 0
        embed.actual += head.actual
        embed.plan += head.plan
        head.actual, head.plan = 0, 0.0
    ml = _Node("model.layers", children=layers, plan=sum(n.plan for n in layers), actual=sum(n.actual for n in layers))
    kids = [n for n in (first, embed) if n.plan or n.actual] + [ml] + ([norm] if norm.plan or norm.actual else [])
    base = _Node("model", children=kids, plan=sum(n.plan for n in kids), actual=sum(n.actual for n in kids))
    return _Node("", children=[base, head], plan=base.plan + head.plan, actual=base.actual + head.actual)


def _bucket(t: TensorInfo, first: _Node, embed: _Node, layers: list[_Node], norm: _Node, head: _Node) -> _Node:
    if t.layer is not None and 0 <= t.layer < len(layers):
        return layers[t.layer]
    if t.role == "embed":
        return embed
    if t.role == "lm_head":
        return head
    if t.role == "norm":
        return norm
    return first


def _max_layer(nodes: list[_Node]) -> tuple[float, list[str]]:
    """accelerate utils/modeling.py get_max_layer_size: the largest leaf or no-split block."""
    best, names = 0.0, []
    todo = list(nodes)
    while todo:
        n = todo.pop(0)
        if n.atomic:
            if n.plan > best:
                best, names = n.plan, [n.name]
            elif n.plan == best:
                names.append(n.name)
        else:
            todo = n.children + todo
    return best, names


def _leaves(node: _Node) -> list[_Node]:
    return [node] if node.atomic else [x for c in node.children for x in _leaves(c)]


def infer_device_map(root: _Node, max_memory: dict[str, float], main_devices: list[str]) -> dict[str, str]:
    """transformers integrations/accelerate.py infer_auto_device_map, without tied-parameter splitting."""
    devices = list(max_memory) + ["disk"]
    used = dict.fromkeys(devices, 0.0)
    placed: dict[str, str] = {}
    todo = list(root.children)
    max_size, max_names = _max_layer(todo)
    current = 0
    while todo:
        node = todo.pop(0)
        max_names = [n for n in max_names if n != node.name and not n.startswith(node.name + ".")]
        if not max_names:
            max_size, max_names = _max_layer(todo)
        dev = devices[current]
        limit = None if dev == "disk" else max_memory[dev]
        reserved = 0.0
        if dev in main_devices and limit is not None:
            limit -= max_size
            reserved = max_size
        if limit is None or used[dev] + node.plan <= limit:
            used[dev] += node.plan
            for leaf in _leaves(node):
                placed[leaf.name] = dev
            continue
        if not node.atomic:
            todo = node.children + todo
            max_size, max_names = _max_layer(todo)
            continue
        used[dev] += reserved
        current += 1
        todo.insert(0, node)
    return placed


# --- allocation: typed results, then the steps that explain them -------------------------------------------

@dataclass(frozen=True)
class _Placement:
    """Where device_map="auto" puts the modules (infer_auto_device_map) and what that means per device."""

    leaves: list[_Node]
    dev_of: dict[str, str]          # module → "0", "1" …, "mps", "cpu" or "disk"
    weights: dict[str, int]         # device → weight bytes
    layer_dev: dict[int, str]       # decoder layer → its device
    exec_dev: str                   # dispatch_model main_device: offloaded modules run here
    head_dev: str                   # where the logits are computed
    offloaded: int                  # the largest cpu/disk module, brought to exec_dev while it runs

    @property
    def used(self) -> set[str]:
        return {self.dev_of[n.name] for n in self.leaves if n.actual}


@dataclass(frozen=True)
class _Cache:
    """generate's DynamicCache per device: at the full context, and once the prompt is prefilled."""

    n_seq: int
    per_token: int                  # B/token over every attention layer
    full: dict[str, int]            # device → bytes at ctx (recurrent state included)
    prompt: dict[str, int]          # device → bytes once the prompt is prefilled, before any new token
    biggest_layer: int              # one layer's cache at ctx: what a decode step's torch.cat copies
    recurrent: int
    mla_fallback: bool

    def growth(self, device: str) -> int:
        return self.full.get(device, 0) - self.prompt.get(device, 0)


@dataclass(frozen=True)
class _Eager:
    """attn_implementation="eager": the softmax of the last layer is the prefill's largest moment
    (eager_attention_forward): SDPA's attention-phase tensors, the repeat_kv copies of K and V, batch × heads ×
    prompt² scores at EAGER_SCORE_BYTES each, and the 4-D float mask (alive through the whole forward)."""

    dtype: str
    elem: int
    heads: int
    rep_w: int                      # K+V width repeat_kv copies to (0: every head has its own KV)
    scores: int
    mask_kinds: int                 # one mask per layer type (full, sliding)
    per_score: int                  # bytes alive per score at the softmax (EAGER_SCORE_BYTES[_BY_TYPE])
    mask: int
    repeat: int


@dataclass(frozen=True)
class _Prefill:
    """The prefill's peak in one decoder layer, the logits, and a decode step's cache copy."""

    tokens: int
    kv_w: int
    intermediate: int
    attn_phase: int
    mlp_phase: int
    activation: int
    pad_mask: int                   # the padding mask (SDPA, batch > 1) or eager's 4-D float mask
    logits: int
    decode: int
    eager: _Eager | None

    def peak(self, cache: _Cache, device: str) -> int:
        """The prefill peak holds the prompt's cache, which then grows by (ctx − prompt) tokens; the prefill
        peak and a decode step's cache copy do not coincide: the larger of the two."""
        return max(self.activation + self.pad_mask - cache.growth(device), self.decode)


def _place(root: _Node, mm: dict[str, float], main: list[str], has_gpu: bool) -> _Placement:
    placed = infer_device_map(root, mm, main)
    leaves = _leaves(root)
    dev_of = {n.name: placed.get(n.name, "disk") for n in leaves}
    exec_dev = main[0] if has_gpu else "cpu"
    w: dict[str, int] = {}
    for n in leaves:
        w[dev_of[n.name]] = w.get(dev_of[n.name], 0) + n.actual
    head_dev = dev_of.get("lm_head", exec_dev)
    # accelerate's hooks bring an offloaded module's weights to the execution device for its forward
    offloaded = max((n.actual for n in leaves if dev_of[n.name] in ("cpu", "disk")), default=0) if has_gpu else 0
    return _Placement(leaves, dev_of, w, {n.layer: dev_of[n.name] for n in leaves if n.layer is not None}, exec_dev,
                      exec_dev if head_dev in ("cpu", "disk") else head_dev, offloaded)


def _dynamic_cache(model: ModelSpec, s: Settings, place: _Placement, prompt: int) -> _Cache:
    """cache_utils.py DynamicLayer / DynamicSlidingWindowLayer on each layer's device; an offloaded layer's on
    the first GPU."""
    assert s.ctx is not None
    elem = 4 if s.cache_type_k == "f32" else 2
    full: dict[str, int] = {}
    at_prompt: dict[str, int] = {}
    per_token_total = biggest = 0
    n_seq = max(1, s.parallel)
    kv_b_rows = {t.layer: t.shape[0] for t in model.tensors if t.role == "attn_kv_b" and t.layer is not None}
    mla_fallback = False
    for il, layer in enumerate(model.layers):
        a = layer.attention
        if a is None:
            continue
        if a.kind == "mla":
            # the decompressed per-head K (nope + rope) and V (v_head_dim), not the latent
            rope = max(0, a.k_dim - a.v_dim)
            if il in kv_b_rows:
                per_head = kv_b_rows[il] // max(1, model.n_heads) + rope
            else:
                per_head, mla_fallback = 2 * MLA_NOPE_FALLBACK + rope, True
            per = model.n_heads * per_head * elem
        else:
            per = a.n_kv_heads * (a.k_dim + a.v_dim) * elem
        per_token_total += per
        window = a.window - 1 if (a.kind == "sliding" and a.window) else None
        size = per * (min(s.ctx, window) if window else s.ctx) * n_seq
        biggest = max(biggest, size)
        d = place.layer_dev.get(il, place.exec_dev)
        d = place.exec_dev if d in ("cpu", "disk") else d
        full[d] = full.get(d, 0) + size
        at_prompt[d] = at_prompt.get(d, 0) + per * (min(prompt, window) if window else prompt) * n_seq
    rec = recurrent_state_bytes(model, bytes_per_elem=elem) * n_seq
    if rec:
        full[place.exec_dev] = full.get(place.exec_dev, 0) + rec
    return _Cache(n_seq, per_token_total, full, at_prompt, biggest, rec, mla_fallback)


def _eager(model: ModelSpec, q: str, n_seq: int, prompt: int) -> _Eager:
    dtype = "f32" if q in ("fp32", "f32") else "f16" if q in ("fp16", "f16") else "bf16"
    elem = 4 if dtype == "f32" else 2
    heads = max(1, model.n_heads)
    # repeat_kv(key/value, heads // kv_heads): a [batch, heads, len, head_dim] copy unless every head has its own KV
    rep_w = max((heads * (a.k_dim + a.v_dim) for a in model.attention_layers
                 if a.kind != "mla" and 0 < a.n_kv_heads < heads), default=0)
    # create_masks_for_generate builds one mask per layer type (full, sliding), each [batch, 1, L, L] in the dtype
    kinds = len({a.kind for a in model.attention_layers if a.kind in ("full", "sliding")} or {"full"})
    per_score = EAGER_SCORE_BYTES_BY_TYPE.get(model.family, EAGER_SCORE_BYTES)[dtype]
    return _Eager(dtype, elem, heads, rep_w, n_seq * heads * prompt * prompt * per_score, kinds, per_score,
                  kinds * n_seq * prompt * prompt * elem, n_seq * prompt * rep_w * elem)


def _prefill(model: ModelSpec, q: str, ctx: int, prompt: int, cache: _Cache, eager: bool) -> _Prefill:
    h = model.hidden_size
    inter = model.intermediate_size or 4 * h
    kv_w = max((x.n_kv_heads * x.k_dim for x in model.attention_layers), default=h)
    n_seq = cache.n_seq
    tokens = n_seq * prompt
    # Alive in the MLP of a layer: the embeddings (still referenced by the model's forward), the layer input,
    # the residual after attention, the normed input (4 × hidden) and gate/up/act·up (3 × intermediate); in
    # attention: those hidden-sized tensors, q, k, v and the output. Matched torch.cuda.max_memory_allocated
    # within 2 % over batch 1–8 and 4k–30k tokens on an H100 (transformers 5.17, SDPA; measurements/transformers).
    attn_phase = tokens * (5 * h + 2 * kv_w) * 2
    mlp_phase = tokens * (4 * h + 3 * inter) * 2
    logits = n_seq * model.vocab_size * (2 + 4)
    if eager:
        e = _eager(model, q, n_seq, prompt)
        # decode: the scores are batch × heads × 1 × ctx, but repeat_kv still copies the layer's whole K/V
        return _Prefill(tokens, kv_w, inter, attn_phase, mlp_phase, max(attn_phase + e.repeat + e.scores, mlp_phase),
                        e.mask, logits, cache.biggest_layer + n_seq * ctx * e.rep_w * e.elem, e)
    # Batched prompts are padded: generate passes the padding mask, masking_utils builds a (B, 1, L, L) bool mask
    # instead of SDPA's is_causal (_ignore_causal_mask_sdpa), alive through the forward.
    pad_mask = n_seq * prompt * prompt if n_seq > 1 else 0
    return _Prefill(tokens, kv_w, inter, attn_phase, mlp_phase, max(attn_phase, mlp_phase), pad_mask, logits,
                    cache.biggest_layer, None)


def _devices(gpus: list[Target], host: Target | None, place: _Placement, cache: _Cache,
             prefill: _Prefill) -> list[DeviceMemory]:
    devices: list[DeviceMemory] = []
    keys = ["mps"] if gpus and gpus[0].kind == "unified" else [str(i) for i in range(len(gpus))]
    for key, g in zip(keys, gpus):
        runs_layers = any(d == key for d in place.layer_dev.values()) or key == place.exec_dev
        compute = ((prefill.peak(cache, key) if runs_layers else 0) + (prefill.logits if key == place.head_dev else 0)
                   + (place.offloaded if key == place.exec_dev else 0))
        devices.append(DeviceMemory(g.name, g.kind, g.capacity, place.weights.get(key, 0), cache.full.get(key, 0),
                                    compute, CUDA_CONTEXT + CUBLAS_WORKSPACE if g.kind == "gpu" else 0))
    cpu_compute = (prefill.peak(cache, "cpu") + prefill.logits) if not gpus else 0
    cpu_w = place.weights.get("cpu", 0)
    if host is not None or cpu_w or not gpus:
        h_t = host or Target("CPU", "cpu", 0)
        devices.append(DeviceMemory(h_t.name, "cpu", h_t.capacity, cpu_w, cache.full.get("cpu", 0), cpu_compute, 0))
    return devices


def _compromise(place: _Placement) -> str | None:
    """It runs, but only by reading weights back from disk: the verdict says so (tight), not "fits"."""
    disk = place.weights.get("disk", 0)
    if not disk:
        return None
    return (f"accelerate's device_map put {disk / 2**30:,.1f} GiB of the weights on disk (offload_folder): "
            "read back on every forward pass")


def _refusal(s: Settings, place: _Placement, bnb: bool) -> str | None:
    used = place.used
    if bnb and used != {"cpu"} and ("cpu" in used or "disk" in used):
        return ("Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit "
                "the quantized model (bitsandbytes; llm_int8_enable_fp32_cpu_offload=True keeps them in 32-bit)")
    if s.cache_type_k not in ("f16", "bf16", "f32") or s.cache_type_v not in ("f16", "bf16", "f32"):
        return ("transformers' DynamicCache keeps K/V in the model dtype; a quantized cache needs "
                "cache_implementation=\"quantized\" (not modelled)")
    return None


def _explain(model: ModelSpec, s: Settings, place: _Placement, cache: _Cache, prefill: _Prefill,
             prompt: int) -> list[Step]:
    """The --explain steps after max_memory's, from the typed results."""
    on = {d: [n.name for n in place.leaves if place.dev_of[n.name] == d and n.actual] for d in set(place.dev_of.values())}
    gpu_layers = sum(1 for d in place.layer_dev.values() if d not in ("cpu", "disk"))
    steps = [Step("device_map", f"{gpu_layers}/{model.n_layers} decoder layers on GPU; "
                  + ", ".join(f"{d}: {len(v)} modules" for d, v in sorted(on.items()) if v),
                  ", ".join(f"{d} {b:,} B" for d, b in sorted(place.weights.items()) if b),
                  f"integrations/accelerate.py infer_auto_device_map ({TF_REF})"),
             Step("KV cache (DynamicCache)", f"{cache.per_token:,} B/token × {s.ctx:,} tokens × {cache.n_seq} "
                  "sequence(s) (sliding layers: window − 1), on each layer's device; offloaded layers' on the first GPU",
                  f"{sum(cache.full.values()):,} B", "cache_utils.py DynamicLayer, DynamicSlidingWindowLayer")]
    h, n_seq, e = model.hidden_size, cache.n_seq, prefill.eager
    if e is not None:
        steps += _explain_eager(e, prefill, n_seq, prompt)
    else:
        steps.append(Step("prefill activations (one layer)",
                          f"{prefill.tokens:,} tokens × max(attention 5·{h} + 2·{prefill.kv_w}, MLP 4·{h} + "
                          f"3·{prefill.intermediate}) × 2 B"
                          + (f" + padding mask {n_seq} × {prompt:,}² × 1 B" if prefill.pad_mask else ""),
                          f"{prefill.activation + prefill.pad_mask:,} B",
                          "models/*/modeling_*.py decoder layer under SDPA; masking_utils.py"))
    steps.append(Step("logits", f"last position only: {n_seq} × vocab {model.vocab_size:,} × (2 B + float32 copy)",
                      f"{prefill.logits:,} B", "generation/utils.py logits_to_keep = 1"))
    steps.append(Step("cache growth", "torch.cat copies one layer's K/V each decode step (vs. the prefill peak)"
                      + (" + eager's repeat_kv of that layer's K/V to all heads" if e else ""),
                      f"{prefill.decode:,} B", "cache_utils.py DynamicLayer.update"
                      + (f"; modeling_llama.py eager_attention_forward ({TF_REF})" if e else "")))
    if place.offloaded:
        steps.append(Step("offloaded weights in flight", "the largest cpu/disk module copied to the first GPU "
                          "while it runs", f"{place.offloaded:,} B", "accelerate hooks.py AlignDevicesHook"))
    return steps


def _explain_eager(e: _Eager, prefill: _Prefill, n_seq: int, prompt: int) -> list[Step]:
    src = f"models/llama/modeling_llama.py eager_attention_forward, repeat_kv ({TF_REF})"
    return [
        Step("eager attention scores (one layer)",
             f"{n_seq} × {e.heads} heads × {prompt:,}² × {e.per_score} B ({e.dtype} scores + float32 "
             "softmax" + (" input copy and output" if e.dtype == "bf16" else " output") + ")"
             if e.per_score == EAGER_SCORE_BYTES[e.dtype] else
             f"{n_seq} × {e.heads} heads × {prompt:,}² × {e.per_score} B (scores, sink-joined logits and softmax, "
             f"{e.dtype})", f"{e.scores:,} B", f"{src}; ATen SoftMax.cpp softmax(input, dim, dtype)"
             if e.per_score == EAGER_SCORE_BYTES[e.dtype] else f"models/gpt_oss/modeling_gpt_oss.py "
             f"eager_attention_forward ({TF_REF})"),
        Step("eager repeat_kv", f"K and V copied to all {e.heads} heads: {prefill.tokens:,} tokens × {e.rep_w:,} × "
             f"{e.elem} B", f"{e.repeat:,} B", src),
        Step("eager causal mask", (f"{e.mask_kinds} layer types × " if e.mask_kinds > 1 else "")
             + f"{n_seq} × {prompt:,}² × {e.elem} B (4-D float mask, alive through the whole forward)",
             f"{e.mask:,} B", f"masking_utils.py eager_mask, create_causal_mask ({TF_REF})"),
        Step("prefill activations (one layer)",
             f"max(attention {prefill.attn_phase:,} + repeat_kv + scores, MLP {prefill.mlp_phase:,}) + mask",
             f"{prefill.activation + e.mask:,} B", "models/*/modeling_*.py decoder layer under eager attention"),
    ]


def fp8_dequantized(model: ModelSpec, weights: WeightEstimate,
                    gpus: list[Target]) -> tuple[WeightEstimate, WeightEstimate | None, str | None]:
    """(the weights as the model runs with them, the weights accelerate's device_map is sized on where those differ,
    what transformers does with them) for an FP8 checkpoint; other weights as given, with None, None.

    A fine-grained FP8 checkpoint (quant_method "fp8") is dequantized at load on a machine without FP8 kernels
    (FP8_KERNEL_CAPABILITY): replace_with_fp8_linear leaves the Linears in bf16, so the device_map is sized in bf16 too.
    A compressed-tensors FP8 checkpoint (RedHatAI's / llm-compressor's FP8-dynamic: fp8-channel) is decompressed on
    every device: from_pretrained's defaults (dequantize=False, use_optimized_inference=False; CompressedTensorsConfig)
    take quantizer_compressed_tensors.py's "regular compressed-tensors route" — compress_model gives each quantized
    Linear its FP8 weight before _get_device_map sizes the modules (compute_module_sizes: the params' own element
    size), and the forward pre-hook compressed-tensors 0.20.0 registers (ModelCompressor.add_decompress_hook) runs
    decompress_model at the first forward: each Linear's weight dequantized in place, on its device, to its scale's
    dtype (16-bit). Only CompressedTensorsConfig(use_optimized_inference=True) on compute capability ≥ 8.9 keeps it
    FP8, which the printed command does not pass."""
    q = _quant_key(weights.quant)
    if q == "fp8-channel":
        run = estimate_weights(model, "bf16")
        return run, weights, (f"compressed-tensors FP8 checkpoint decompressed to bf16 at the first forward, on every "
                              f"device: {weights.total:,} B stored → {run.total:,} B; the device_map is sized on "
                              f"the stored FP8 layout, so each device holds its modules' 16-bit size once decompressed "
                              f"({TF_REF} quantizers/quantizer_compressed_tensors.py: from_pretrained's defaults "
                              "dequantize=False, use_optimized_inference=False; compressed-tensors 0.20.0 "
                              "ModelCompressor.add_decompress_hook; "
                              "CompressedTensorsConfig(use_optimized_inference=True) keeps FP8 from cc 8.9)")
    if q not in ("fp8-block", "fp8"):          # "fp8": AutoFP8's per-tensor layout (AUTOFP8_UNREAD), the same quantizer
        return weights, None, None
    if not gpus:
        why = "no CUDA GPU or XPU"
    elif gpus[0].kind == "unified" and gpus[0].name.startswith("Apple"):
        why = "Apple silicon: no CUDA GPU or XPU for torch"
    else:
        from .published import gpu_compute_capability

        cc = gpu_compute_capability(gpus[0].name)
        if cc is None or float(cc) >= FP8_KERNEL_CAPABILITY:
            rule = (f"compute capability {cc} ≥ {FP8_KERNEL_CAPABILITY}" if cc is not None
                    else f"its compute capability not known here, assumed ≥ {FP8_KERNEL_CAPABILITY}")
            return weights, None, (f"FP8 checkpoint kept as stored, FP8Linear ({gpus[0].name}: {rule}; {TF_REF} "
                                   "quantizers/quantizer_finegrained_fp8.py validate_environment)")
        why = f"{gpus[0].name}: compute capability {cc} < {FP8_KERNEL_CAPABILITY}"
    run = estimate_weights(model, "bf16")
    return run, None, (f"FP8 checkpoint dequantized to bf16 at load ({why}): {weights.total:,} B stored → "
                       f"{run.total:,} B ({TF_REF} quantizers/quantizer_finegrained_fp8.py validate_environment)")


def _assumptions(model: ModelSpec, s: Settings, place: _Placement, cache: _Cache, eager: bool) -> tuple[str, ...]:
    assert s.ctx is not None
    attn_note = ("eager attention (batch × heads × prompt² scores and a materialized 4-D mask in the prefill)"
                 if eager else "SDPA attention (is_causal, no L×L scores unless the batch is padded)")
    out = [f"{TF_REF} + {ACC_REF}: device_map=\"auto\", {attn_note}, batch of {s.parallel} sequence(s) prefilled at "
           + (f"{s.ctx - s.transformers.max_new_tokens:,} prompt tokens, then {s.transformers.max_new_tokens:,} new"
              if s.transformers.max_new_tokens else f"full length {s.ctx:,} (give --max-new-tokens to split it)")]
    if place.weights.get("disk"):
        out.append(f"{place.weights['disk']:,} B of weights offloaded to disk: read back on every forward (very slow)")
    if cache.recurrent:
        out.append("recurrent state kept in the model dtype on the first device")
    if cache.mla_fallback:
        out.append(f"MLA: qk_nope_head_dim = v_head_dim = {MLA_NOPE_FALLBACK} assumed (no kv_b tensor)")
    return (*out, f"CUDA context {CUDA_CONTEXT // MiB} MiB + cuBLAS {CUBLAS_WORKSPACE // MiB} MiB per GPU (measured, "
            "H100)", "host RAM for the Python process and loading buffers not counted")


class Transformers:
    """``max_memory`` (device → bytes, keys "0", "1", … and "cpu") is what the user passes to
    from_pretrained; None keeps transformers' defaults."""

    name = "transformers"
    pools_kv = False
    # bitsandbytes 8-bit / 4-bit (BitsAndBytesConfig); device_map="auto" already spills layers to the CPU
    levers = Levers(weight_quants=("int8", "nf4"))
    release_rules: TransformersRules | None = None   # `-r transformers==X` (runtimes/transformers_versions.py)

    def __init__(self, *, max_memory: dict[str, int] | None = None, attn_implementation: str = "sdpa"):
        self.max_memory = max_memory
        if attn_implementation not in ATTN_IMPLEMENTATIONS:
            raise ValueError(f"attn_implementation must be one of {ATTN_IMPLEMENTATIONS}, not {attn_implementation!r}")
        self.attn_implementation = attn_implementation

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        return settings.with_(ctx=settings.ctx or DEFAULT_CTX,
                              cache_type_k=normalize_cache_type(settings.cache_type_k, field="cache"),
                              cache_type_v=normalize_cache_type(settings.cache_type_v, field="cache"))

    # --- placement ----------------------------------------------------------------------
    def class_attn(self, model: ModelSpec) -> tuple[str, str]:
        """(what from_pretrained picks for this model class at this release when none is asked, why): eager before
        4.36, else SDPA where the class declares it (transformers_versions.default_attention); a model without
        attention layers (mamba) computes no scores either way."""
        if not model.attention_layers:
            return "sdpa", "no attention layers: the implementation computes nothing here"
        return default_attention(self.release_rules, model.family)

    def attn(self, s: Settings, model: ModelSpec) -> str:
        """The attention implementation: the plan's setting (--attn-implementation), else this planner's when built
        with eager, else the model class's default at this release."""
        if s.transformers.attn_implementation:
            return s.transformers.attn_implementation
        return "eager" if self.attn_implementation == "eager" and model.attention_layers else self.class_attn(model)[0]

    def _max_memory(self, root: _Node, gpus: list[Target], host: Target | None, bnb: bool, device_map: str = "auto",
                    accelerate: str | None = None) -> tuple[dict[str, float], list[str], list[Step]]:
        steps: list[Step] = []
        unified = [g for g in gpus if g.kind == "unified"]
        if self.release_rules is not None and self.release_rules.release < OWN_BALANCED_MEMORY_FROM and accelerate:
            refuse_low_zero(device_map, accelerate_release(accelerate))    # the installed accelerate's, before 5.0
        if device_map == "cuda" and gpus and not unified:
            # from_pretrained(device_map="cuda") — like model.cuda() — is {"": "cuda"}: every module on the first GPU
            # whatever its size, nothing on the CPU (modeling_utils.py: a device name as device_map)
            return {"0": float("inf")}, ["0"], [Step("device_map", '"cuda": every module on GPU 0, none in RAM',
                                                     "no limit", f"modeling_utils.py from_pretrained ({TF_REF})")]
        mm: dict[str, float] = {}
        if unified:
            # get_max_memory: on MPS "mps" gets the available RAM and there is no "cpu" entry
            mm["mps"] = float(unified[0].capacity)
            main = ["mps"]
        else:
            for i, g in enumerate(gpus):
                mm[str(i)] = float(max(0, g.capacity - CUDA_CONTEXT))
            if host is not None:
                mm["cpu"] = float(host.capacity)
            main = (["0", "cpu"] if gpus else ["cpu"])
        user = self.max_memory
        if user:
            # get_max_memory(max_memory): only the devices the user names, at the sizes given
            mm = {k: float(user[k]) for k in mm if k in user}
            steps.append(Step("max_memory", "as given to from_pretrained", _fmt_mm(mm),
                              f"integrations/accelerate.py get_max_memory ({TF_REF})"))
        shares = device_map_shares(self.release_rules, accelerate)
        if not user and "cpu" in mm:
            mm["cpu"] *= shares[1]          # get_max_memory's RAM share: "sequential" too
        # auto / balanced / balanced_low_0 / sequential: what get_balanced_memory does to it (transformers_device_map)
        biggest = max(_max_layer(root.children)[0], max((x.plan for x in _leaves(root)), default=0))
        steps += balanced_memory(mm, device_map, root.plan, biggest, LEAF_BUFFER, shares, bool(user))
        if bnb:
            mm = {k: v * QUANTIZER_SHARE for k, v in mm.items()}
            steps.append(Step("bitsandbytes margin", f"every device × {QUANTIZER_SHARE}", _fmt_mm(mm),
                              "quantizers/quantizer_bnb_4bit.py adjust_max_memory"))
        return mm, main, steps

    # --- allocation ---------------------------------------------------------------------
    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        s = self.defaults(model, settings, targets)
        assert s.ctx is not None                # set by defaults()
        gpus = [t for t in targets if t.kind != "cpu"]
        host = next((t for t in targets if t.kind == "cpu"), None)
        stored = weights.quant
        rules = self.release_rules
        refused = self._version_refusal(weights, gpus) if rules else None
        # each FP8 path by its own release fact (transformers_versions: CT_FP8_RULES, FP8_RULES)
        own = rules is None or (rules.ct_fp8 == "first-forward" if _quant_key(stored) == "fp8-channel"
                                else rules.fp8 == "dequantize")
        weights, placed_as, dequantized = fp8_dequantized(model, weights, gpus) if own else (weights, None, None)
        q = _quant_key(weights.quant) or ""
        bnb = q in BNB_PLAN_BYTES
        eager = self.attn(s, model) == "eager"
        # (check.build_settings refuses new tokens ≥ the asked context; the solvers' shorter trial contexts keep 1)
        prompt = max(1, s.ctx - (s.transformers.max_new_tokens or 0))
        root = _tree(model, weights, placed_as)
        mm, main, steps = self._max_memory(root, gpus, host, bnb, s.transformers.device_map, s.transformers.accelerate)
        place = _place(root, mm, main, bool(gpus))
        cache = _dynamic_cache(model, s, place, prompt)
        prefill = _prefill(model, q, s.ctx, prompt, cache, eager)
        steps += _explain(model, s, place, cache, prefill, prompt)
        if not s.transformers.attn_implementation and self.attn_implementation != "eager":
            steps.insert(0, Step("attention implementation", self.class_attn(model)[1], self.attn(s, model),
                                 "modeling_utils.py _check_and_enable_sdpa / get_correct_attn_implementation"))
        sdpa_refused = (s.transformers.attn_implementation == "sdpa" and self.class_attn(model)[0] == "eager"
                        and not sdpa_swapped(self.release_rules, model.family)
                        and (self.release_rules is None or self.release_rules.attn_default == "sdpa"))
        # the accelerate release whose headroom the plan took, where it decides it (transformers_versions.py)
        assumed = accelerate_assumed(self.release_rules, s.transformers.accelerate) \
            if s.transformers.device_map in BALANCED and gpus and not self.max_memory else None
        return Allocation(settings=s, devices=tuple(_devices(gpus, host, place, cache, prefill)),
                          kv_bytes_per_token=cache.per_token, kv_cache_tokens=None, max_concurrency=None,
                          refusal=refused or (SDPA_UNSUPPORTED.format(family=model.family) if sdpa_refused else None)
                          or (AUTOFP8_UNREAD if _quant_key(stored) == "fp8" else None)
                          or _refusal(s, place, bnb),
                          steps=tuple(steps), compromise=_compromise(place),
                          assumptions=(*([dequantized] if dequantized else []),
                                       *([assumed] if assumed else []),
                                       *_assumptions(model, s, place, cache, eager)),
                          weights_as_run=weights.quant if weights.quant != stored else None)

    def _version_refusal(self, weights: WeightEstimate, gpus: list[Target]) -> str | None:
        """What the release asked with transformers==X refuses at load that 5.23 does not (transformers_versions.py)."""
        from .published import gpu_compute_capability

        assert self.release_rules is not None
        cuda = [g for g in gpus if not (g.kind == "unified" and g.name.startswith("Apple"))]
        cc = gpu_compute_capability(cuda[0].name) if cuda else None
        return version_refusal(self.release_rules, _quant_key(weights.quant) or "", bool(cuda),
                               float(cc) if cc is not None else None)

    # --- command ------------------------------------------------------------------------
    def command(self, model: ModelSpec, settings: Settings) -> str:
        s = settings
        q = _quant_key(s.quant)
        from .published import serve_path  # the user's ./folder kept, else the Hub repo

        path = f'"{serve_path(model, s.quant).strip(chr(39))}"'   # a published AWQ / GPTQ / FP8 repo where planned
        args = [path, f'device_map="{s.transformers.device_map}"']
        imports = ["AutoModelForCausalLM", "AutoTokenizer"]
        # from_pretrained's dtype= is read in 4.57.0 (modeling_utils.py:4632), torch_dtype= in 4.54.0 (:4554; 4.55–4.56
        # not read, and 4.57 still takes torch_dtype with a warning): torch_dtype= below 4.57
        dtype = "torch_dtype" if self.release_rules and self.release_rules.release < (4, 57) else "dtype"
        if q in ("nf4", "fp4", "nf4-dq", "fp4-dq"):
            extra = ", bnb_4bit_use_double_quant=True" if q.endswith("-dq") else ""
            args.append(f'quantization_config=BitsAndBytesConfig(load_in_4bit=True, '
                        f'bnb_4bit_quant_type="{q.removesuffix("-dq")}"{extra})')
            imports.append("BitsAndBytesConfig")
        elif q == "int8":
            args.append("quantization_config=BitsAndBytesConfig(load_in_8bit=True)")
            imports.append("BitsAndBytesConfig")
        elif q in FLOAT_BYTES:
            args.append(f'{dtype}="{TORCH_DTYPES.get(q, q)}"')
        else:
            args.append(f'{dtype}="auto"')
        # named when not the class's default at this release (before 4.36 there is no such argument)
        if self.attn(settings, model) != self.class_attn(model)[0]:
            args.append(f'attn_implementation="{self.attn(settings, model)}"')
        if self.max_memory:
            args.append("max_memory={" + ", ".join(
                f'{k if k.isdigit() else repr(k)}: "{v // MiB}MiB"' for k, v in self.max_memory.items()) + "}")
        # the snippet runs as pasted: the tokenizer and the prompt's input_ids are defined (a batch of s.parallel
        # prompts padded with the EOS token where the tokenizer has no pad token, as many Llama ones have none)
        prompts = '"Hello"' if s.parallel <= 1 else f'["Hello"] * {s.parallel}'
        pad = "tok.pad_token = tok.pad_token or tok.eos_token; " if s.parallel > 1 else ""
        padding = ", padding=True" if s.parallel > 1 else ""
        return (f"from transformers import {', '.join(imports)}; "
                f"tok = AutoTokenizer.from_pretrained({path}); {pad}"
                f"model = AutoModelForCausalLM.from_pretrained({', '.join(args)}); "
                f'input_ids = tok({prompts}, return_tensors="pt"{padding}).input_ids.to(model.device); '
                + (f"model.generate(input_ids, max_new_tokens={s.transformers.max_new_tokens})"
                   if s.transformers.max_new_tokens else
                   f"model.generate(input_ids, max_length={s.ctx or DEFAULT_CTX})"))


def _fmt_mm(mm: dict[str, float]) -> str:
    return ", ".join(f"{k}: {v / GiB:.2f} GiB" for k, v in mm.items())


__all__ = ["Transformers", "infer_device_map"]

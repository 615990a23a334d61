"""MLX (mlx-lm) on Apple silicon: weights, a KV cache that grows in 256-token steps, in unified memory.

Modelled on ml-explore/mlx-lm 0.32.0 (commit d78bf58, Aug 2026) and ml-explore/mlx (commit 846d176):
- mlx_lm/models/cache.py: KVCache allocates in steps of 256 tokens (``step = 256``);
  make_prompt_cache gives every layer a RotatingKVCache(max_size=max_kv_size, keep=4) when
  --max-kv-size is set and the model has no make_cache of its own (models with sliding-window layers
  make their own: RotatingKVCache(window) for those layers); a rotating cache holds up to
  max_size + S − 1 tokens right after a prompt chunk of S tokens ("The largest size is
  self.max_size + S - 1"); QuantizedKVCache stores, per row of d elements, d·bits/8 bytes packed in
  uint32 plus a scale and a bias in the activation dtype per group of ``kv_group_size`` (64).
  RotatingKVCache.to_quantized raises NotImplementedError ("RotatingKVCache Quantization NYI").
- mlx_lm/generate.py: --kv-bits (none), --kv-group-size 64, --quantized-kv-start 5000 (the cache is
  quantized once it holds that many tokens), prefill in chunks of prefill_step_size 2048; the
  wired_limit context manager wires up to ``max_recommended_working_set_size`` and warns when the
  model is above 90 % of it.
- mlx (python/src/ops.cpp quantize): affine quantization keeps a scale and a bias per group of 64 in
  the input dtype, i.e. bits + 32/64 bits per weight (4.5 for 4-bit).
- unified Targets carry the GPU's share of RAM already (macOS recommendedMaxWorkingSetSize);
  hardware/unified_memory.apple_default_working_set is that default, for catalogs that only know the RAM size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError
from ..hardware.unified_memory import mlx_block_limit, past_working_set
from ..model.spec import ModelSpec, TensorInfo
from ..quant.formats import LINEAR_ROLES, WeightEstimate
from ..units import GiB, MiB, round_up
from . import mlx_server
from .base import Allocation, DeviceMemory, Levers, Settings, Step, Target
from .mlx_versions import MLXRules

MLX_REF = "mlx-lm 0.32.0 (d78bf58)"
MLX_FLOATS = ("bf16", "bfloat16", "fp16", "f16", "float16", "fp32", "f32", "float32")
KV_STEP = 256                    # mlx_lm/models/cache.py KVCache.step
DEFAULT_KV_GROUP = 64            # mlx_lm/generate.py --kv-group-size
DEFAULT_QUANTIZED_KV_START = 5000   # mlx_lm/generate.py DEFAULT_QUANTIZED_KV_START
DEFAULT_PREFILL_STEP = 2048      # mlx_lm/generate.py generate_step prefill_step_size; server --prefill-step-size
ROTATING_KEEP = 4                # make_prompt_cache: RotatingKVCache(max_size=max_kv_size, keep=4)
DEFAULT_CTX = 4096               # mlx-lm has no context default (--max-tokens 100); runlocal plans 4096 tokens
WIRED_WARN_SHARE = 0.9           # generate.py wired_limit: warns when model bytes > 0.9 × max recommended size
MXFP4_BITS, MXFP4_GROUP = 4, 32   # mlx_lm/utils.py quantize_model defaults_for_mode: "mxfp4": (32, 4)
MLX_MXFP4 = "mlx-mxfp4"          # mlx_lm.convert -q --q-mode mxfp4 of a model with no MXFP4 conversion published
# mlx scaled_dot_product_attention.cpp: head dims the fused full-attention kernel takes (query length > 8)
FUSED_HEAD_DIMS = frozenset({64, 72, 80, 96, 128, 192, 256})


def quantized_row_bytes(dim: int, bits: int, group_size: int = DEFAULT_KV_GROUP, scale_bytes: int = 2) -> int:
    """Bytes of one quantized row of ``dim`` elements: uint32-packed values + scale and bias per group."""
    el_per_int = 32 // bits
    return -(-dim // el_per_int) * 4 + 2 * (dim // group_size) * scale_bytes


def mlx_weight_bytes(model: ModelSpec, bits: int = 4, group_size: int = 64, mode: str = "affine") -> int:
    """Weights after ``mlx_lm.convert -q`` (affine, defaults 64/4, mlx_lm/utils.py quantize_model): every
    Linear and Embedding whose input width divides by the group size is quantized (nn.quantize's
    class_predicate), norms and other parameters stay 16-bit. Model-specific quant_predicates that keep
    e.g. MoE routers at 8 bits are not applied. ``mode="mxfp4"`` (``--q-mode mxfp4``: quantize_model's
    defaults_for_mode gives group 32, 4 bits): mlx/ops.cpp fp_quantize packs 4-bit e2m1 values in uint32 and keeps
    one uint8 (e8m0) scale per 32 and no bias."""
    if mode == "mxfp4":
        bits, group_size = MXFP4_BITS, MXFP4_GROUP
    total = 0
    for t in model.tensors:
        if not _quantizable(t, group_size):
            total += t.numel * 2
        elif mode == "mxfp4":
            total += t.numel * bits // 8 + t.numel // group_size
        else:
            total += t.numel * bits // 8 + 2 * (t.numel // group_size) * 2
    return total


def _quantizable(t: TensorInfo, group_size: int) -> bool:
    return (t.role in LINEAR_ROLES or t.role in ("embed", "lm_head")) and len(t.shape) >= 2 \
        and t.shape[-1] % group_size == 0


def kv_bits_of(cache_type: str) -> int | None:
    """runlocal cache type → mlx-lm --kv-bits (None = the activation dtype)."""
    key = cache_type.strip().lower()
    if key in ("f16", "bf16", "fp16", "float16", "bfloat16", "auto", "f32", "float32"):
        return None
    m = re.fullmatch(r"(?:q|int)?([2-8])(?:_0|_1|bit|bits)?", key)
    if m:
        return int(m.group(1))
    raise ValueError(cache_type)


@dataclass(frozen=True)
class KVCachePlan:
    """What make_prompt_cache builds for one plan: its bytes, and what the explain step says of it."""
    ctx: int                  # tokens per sequence
    bits: int | None          # --kv-bits asked (None: the activation dtype)
    quantize: bool            # the cache is quantized at this context
    rotating: bool            # some layer holds a RotatingKVCache (sliding layers or --max-kv-size)
    n_seq: int
    chunk: int                # prefill chunk S
    bytes: int
    per_token: int            # 16-bit bytes per token over all attention layers
    fp16_cells: int           # cells of the largest 16-bit layer cache
    quant_cells: int          # cells of a quantized layer cache
    refusal: str | None       # mlx-lm cannot build this cache


@dataclass(frozen=True)
class PrefillPlan:
    """Bytes live while one prompt chunk is prefilled."""
    chunk: int
    hidden: int
    intermediate: int
    scores: int               # attention scores, 0 on the fused path
    total: int                # activations + scores + last-token logits


def _rotating_cells(ctx: int, max_size: int, chunk: int) -> int:
    # a RotatingKVCache grows in KV_STEP steps up to max_size, then holds ≤ max_size + S − 1 after a chunk of S
    return min(round_up(ctx, KV_STEP), max_size) if ctx <= max_size else max_size + chunk - 1


def _unified_device(targets: list[Target]) -> tuple[Target, str | None]:
    dev = next((t for t in targets if t.kind == "unified"), None)
    if dev is not None:
        return dev, None
    return (next((t for t in targets if t.kind != "cpu"), targets[0] if targets else Target("GPU", "unified", 0)),
            "MLX runs on Apple silicon (Metal, unified memory); no unified-memory device was given")


def _kv_bits(s: Settings) -> tuple[int | None, str | None]:
    """--kv-bits for the settings' cache types, or why mlx-lm has none for them."""
    bits: int | None = None
    try:
        bits = kv_bits_of(s.cache_type_k)
        if kv_bits_of(s.cache_type_v) != bits:
            return bits, "mlx-lm quantizes K and V alike (--kv-bits); K and V types differ"
    except ValueError as e:
        return bits, f"--kv-bits: mlx-lm quantizes the KV cache to 2–8 bits, not '{e}'"
    return bits, None


def _kv_step(kv: KVCachePlan) -> Step:
    if kv.quantize:
        formula = (f"per row of d: d·{kv.bits}/8 + 2 × d/{DEFAULT_KV_GROUP} × 2 B (scale + bias), "
                   f"{kv.quant_cells:,} cells (256-token steps) × {kv.n_seq} sequence(s)")
    else:
        formula = (f"{kv.per_token:,} B/token (16-bit) × {kv.fp16_cells:,} cells (steps of {KV_STEP}"
                   + (f"; rotating caches hold ≤ max_size + {kv.chunk} − 1" if kv.rotating else "")
                   + f") × {kv.n_seq} sequence(s)")
    return Step("KV cache", formula, f"{kv.bytes:,} B", "mlx_lm/models/cache.py KVCache, RotatingKVCache, "
                "QuantizedKVCache")


def _prefill_step(p: PrefillPlan) -> Step:
    return Step("prefill activations", f"chunk {p.chunk} × (2·{p.hidden} + 3·{p.intermediate}) × 2 B"
                + (f" + attention scores {p.scores:,} B (unfused)" if p.scores else " (fused SDPA)")
                + " + last-token logits", f"{p.total:,} B",
                "mlx_lm/generate.py generate_step; mlx scaled_dot_product_attention.cpp")


def _working_set_step(dev: Target) -> Step:
    return Step("GPU working set", f"recommendedMaxWorkingSetSize of {(dev.total or 0) / GiB:.0f} GiB RAM"
                if dev.total else "the unified device's GPU share", f"{dev.capacity:,} B",
                "mlx_lm/generate.py wired_limit; raise with sudo sysctl iogpu.wired_limit_mb=N")


class MLX:
    """``max_kv_size`` = --max-kv-size (mlx_lm.generate); ``quantized_kv_start`` = --quantized-kv-start."""

    name = "mlx"
    pools_kv = False
    levers = Levers(weight_quants=("mlx-8bit", "mlx-4bit"), kv_cache_types=("q8_0", "q4_0"))  # convert -q, --kv-bits
    release_rules: MLXRules | None = None    # `-r mlx==X`: that mlx-lm release's rules (runtimes/mlx_versions.py)

    def __init__(self, *, max_kv_size: int | None = None, quantized_kv_start: int = DEFAULT_QUANTIZED_KV_START,
                 prefill_step_size: int = DEFAULT_PREFILL_STEP):
        self.max_kv_size = max_kv_size
        self.quantized_kv_start = quantized_kv_start
        self.prefill_step_size = prefill_step_size

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        return settings.with_(ctx=settings.ctx or DEFAULT_CTX)

    @staticmethod
    def weight_format(quant: str, model: ModelSpec | None = None) -> str:
        """--quant as mlx-lm reads it: "4bit" / "8bit" (how mlx-community names its conversions) are MLX's own affine
        N-bit (mlx_lm.convert -q --q-bits N), not bitsandbytes'; a GGUF type or a bitsandbytes / GPU-kernel format is
        refused, since mlx-lm loads neither (it would otherwise be planned and the 16-bit repo printed). "mxfp4" is the
        published MXFP4 conversion or checkpoint where ``model`` has one (gpt-oss), else mlx-lm's own MXFP4 mode
        (mlx-mxfp4: ``mlx_lm.convert -q --q-mode mxfp4``), so the plan counts the weights the command makes."""
        q = quant.strip().lower()
        bits = re.fullmatch(r"(?:mlx-|q)?([2-68])-?bits?", q)    # mx.quantize's affine mode: 2, 3, 4, 5, 6 or 8 bits
        if bits:
            return f"mlx-{bits.group(1)}bit"
        if q == "mxfp4" and model is not None:
            from .published import mlx_repo

            stored = (model.file_quant or "").lower() == "mxfp4"
            return quant if stored or mlx_repo(model, "mxfp4") else MLX_MXFP4
        if q in MLX_FLOATS or q in ("mxfp4", MLX_MXFP4):
            return quant
        raise InputError(f"quant: mlx-lm runs MLX's own 2-6- or 8-bit quantization (mlx-4bit, mlx-8bit: mlx_lm.convert -q "
                         f"--q-bits N), MXFP4 (mxfp4: -q --q-mode mxfp4) or 16/32-bit weights (bf16, fp16), not '{quant}'")

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        s = self.defaults(model, settings, targets)
        dev, refusal = _unified_device(targets)
        bits, bits_refusal = _kv_bits(s)
        assert s.ctx is not None                # set by defaults()
        kv = self.kv_cache(model, s.ctx, max(1, s.parallel), bits)
        prefill = self.prefill(model, kv)
        refusal = refusal or bits_refusal or self._release_refusal(bits) or kv.refusal
        steps = (_kv_step(kv), _prefill_step(prefill), _working_set_step(dev))
        # past the working set MLX still allocates, up to its allocator's limit (hardware/unified_memory.py)
        past = past_working_set(weights.total + kv.bytes + prefill.total, dev.capacity, dev.total)
        cap = mlx_block_limit(dev.capacity, dev.total) if past else dev.capacity
        devices = (DeviceMemory(dev.name, dev.kind, cap, weights.total, kv.bytes, prefill.total, 0),)
        cached = self.prompt_cache(model, s, devices[0])
        return Allocation(settings=s, devices=devices, kv_bytes_per_token=kv.per_token, refusal=refusal,
                          steps=(*steps, mlx_server.step(cached)),
                          assumptions=self._assumptions(kv, weights, dev, refusal), compromise=past)

    def _release_refusal(self, bits: int | None) -> str | None:
        """--kv-bits asked of an mlx-lm release without it (before 0.20.1; runtimes/mlx_versions.py)."""
        r = self.release_rules
        if r is None or bits is None or r.kv_bits:
            return None
        return f"{r.ref} has no --kv-bits (quantized KV cache; 0.19.0's mlx_lm/generate.py has none, 0.20.1's has it)"

    def prompt_cache(self, model: ModelSpec, s: Settings, dev: DeviceMemory) -> mlx_server.PromptCacheGrowth:
        """What mlx_lm.server's prompt cache holds once it keeps its default number of earlier caches, each one
        sequence at the context asked (runtimes/mlx_server.py)."""
        assert s.ctx is not None
        bits, _ = _kv_bits(s)
        one = self.kv_cache(model, s.ctx, 1, bits)
        # ArraysCache (recurrent layers) and a RotatingKVCache past its window cannot be trimmed (cache.py
        # can_trim_prompt_cache): insert_cache then keeps the prefixes of a conversation as entries of their own
        trimmable = not model.recurrent_layers and not one.rotating
        entries = self.release_rules.prompt_cache_entries if self.release_rules else mlx_server.DEFAULT_PROMPT_CACHE_SIZE
        return mlx_server.growth(one.bytes, s.ctx, dev.capacity, dev.total, trimmable, entries)

    def kv_cache(self, model: ModelSpec, ctx: int, n_seq: int, bits: int | None) -> KVCachePlan:
        """The caches make_prompt_cache builds for ``n_seq`` sequences of ``ctx`` tokens, and their bytes."""
        S = min(self.prefill_step_size, ctx)
        sliding = any(a.kind == "sliding" for a in model.attention_layers)
        own_cache = sliding      # models with sliding layers define make_cache (gemma3, gpt-oss, …)
        rotating_all = self.max_kv_size is not None and not own_cache
        quantize = bits is not None and ctx >= self.quantized_kv_start
        refusal = None
        if quantize and (rotating_all or sliding):
            # maybe_quantize_kv_cache calls to_quantized once the cache holds quantized_kv_start tokens
            refusal = ("RotatingKVCache Quantization NYI: mlx-lm cannot quantize a rotating cache "
                       "(--max-kv-size or sliding-window layers) with --kv-bits")
            quantize = False
        kv = per_token = fp16_cells = quant_cells = 0
        convert_at = min(ctx, -(-self.quantized_kv_start // S) * S)   # checked after each prefill chunk
        for a in model.attention_layers:
            if a.kind == "mla":
                # mlx_lm/models/deepseek_v3.py caches the latent (kv_lora_rank) as keys, the rope key as values
                rows = ((1, a.v_dim), (1, a.k_dim - a.v_dim))
            else:
                rows = ((a.n_kv_heads, a.k_dim), (a.n_kv_heads, a.v_dim))
            row16 = sum(n * d * 2 for n, d in rows)
            per_token += row16
            if a.kind == "sliding" and a.window:
                cells = _rotating_cells(ctx, a.window, S)
            elif rotating_all:
                cells = _rotating_cells(ctx, self.max_kv_size or 0, S)
            else:
                cells = round_up(ctx, KV_STEP)
            if quantize and bits:
                rowq = sum(n * quantized_row_bytes(d, bits, DEFAULT_KV_GROUP) for n, d in rows)
                # to_quantized converts the whole cache at once: the 16-bit cache and its copy exist together
                kv += max(rowq * cells, (row16 + rowq) * round_up(convert_at, KV_STEP)) * n_seq
                quant_cells = cells
            else:
                kv += row16 * cells * n_seq
                fp16_cells = max(fp16_cells, cells)
        # ArraysCache: the conv state in the activation dtype, the delta / SSM state in float32 (mlx_lm/models/
        # gated_delta.py: state = mx.zeros((B, Hv, Dv, Dk), dtype=mx.float32))
        kv += sum(r.conv_elems * 2 + r.state_elems * 4 for r in model.recurrent_layers) * n_seq
        return KVCachePlan(ctx, bits, quantize, sliding or rotating_all, n_seq, S, kv, per_token, fp16_cells,
                           quant_cells, refusal)

    def prefill(self, model: ModelSpec, kv: KVCachePlan) -> PrefillPlan:
        """Activation bytes of one prefill chunk, the attention scores when the fused kernel is not used, and the
        last-token logits."""
        h = model.hidden_size
        inter = model.intermediate_size or 4 * h
        head_dims = {a.k_dim for a in model.attention_layers if a.kind != "mla"}
        fused = all(d in FUSED_HEAD_DIMS for d in head_dims) and not kv.quantize
        activation = kv.n_seq * kv.chunk * (2 * h + 3 * inter) * 2
        scores = 0
        if not fused:
            # the unfused path (unsupported head dim, or quantized_scaled_dot_product_attention) materializes
            # scores and their softmax: heads × S × T in the activation dtype
            scores = kv.n_seq * model.n_heads * kv.chunk * min(kv.ctx, self.max_kv_size or kv.ctx) * 2 * 2
        logits = kv.n_seq * model.vocab_size * (2 + 4)
        return PrefillPlan(kv.chunk, h, inter, scores, activation + scores + logits)

    def _assumptions(self, kv: KVCachePlan, weights: WeightEstimate, dev: Target,
                     refusal: str | None) -> tuple[str, ...]:
        r = self.release_rules
        out = [f"{r.ref if r else MLX_REF}: prompt prefilled in chunks of {self.prefill_step_size}"]
        if kv.bits is not None and not kv.quantize and refusal is None:
            out.append(f"--kv-bits {kv.bits}: the cache is quantized only from {self.quantized_kv_start:,} "
                       f"tokens (--quantized-kv-start); {kv.ctx:,} stays 16-bit")
        limit = dev.capacity
        if r is not None and not r.wired:
            out.append(f"{r.ref} sets no wired limit (mlx_lm's wired_limit came by 0.20.1, utils.py:75): nothing is "
                       "wired and no working-set warning is printed")
        elif weights.total > WIRED_WARN_SHARE * limit > 0:
            out.append(f"[WARNING] Generating with a model that requires {weights.total // MiB} MB which is close "
                       f"to the maximum recommended size of {limit // MiB} MB: mlx-lm warns it can be slow")
        if kv.n_seq > 1:
            out.append(f"{kv.n_seq} sequences: mlx_lm.server batches them (BatchKVCache)")
        out.append("over the working set MLX does not refuse: macOS pages or the GPU command buffer fails")
        return tuple(out)

    @staticmethod
    def _repo(model: ModelSpec, s: Settings) -> tuple[str, str]:
        """(the model path mlx-lm loads, the mlx_lm.convert step that makes it first, or "")."""
        from .published import mlx_repo, serve_path

        repo = mlx_repo(model, s.quant) or serve_path(model)    # a published mlx-community conversion first
        q = re.fullmatch(r"mlx-([2-8]bit|mxfp4)", (s.quant or "").lower())
        if q and not repo.startswith("mlx-community/"):
            # no published conversion in this format: the one mlx_lm.convert makes (mlx_lm/convert.py --q-bits,
            # --q-mode choices affine / mxfp4 / nvfp4 / mxfp8)
            out = f"./{repo.rstrip('/').split('/')[-1]}-{q.group(1)}"
            how = "--q-mode mxfp4" if q.group(1) == "mxfp4" else f"--q-bits {q.group(1)[0]}"
            return out, f"mlx_lm.convert --hf-path {repo} -q {how} --mlx-path {out} && "
        return repo, ""

    def server_command(self, model: ModelSpec, settings: Settings, prompt_cache_size: int) -> str:
        """mlx_lm.server with its prompt cache capped (--prompt-cache-size, mlx-lm ≥ 0.31.0: runtimes/mlx_server.py)."""
        repo, convert = self._repo(model, settings)
        return convert + f"mlx_lm.server --model {repo} --prompt-cache-size {prompt_cache_size}"

    def command(self, model: ModelSpec, settings: Settings) -> str:
        s = settings
        repo, convert = self._repo(model, s)
        try:
            bits = kv_bits_of(s.cache_type_k)
        except ValueError:
            bits = None
        if s.parallel > 1:
            # mlx_lm/server.py has no --max-kv-size / --kv-bits; --decode-concurrency (32) batches requests
            return convert + f"mlx_lm.server --model {repo}" + (f" --decode-concurrency {s.parallel}" if s.parallel > 32 else "")
        parts = ["mlx_lm.generate", "--model", repo]
        # without --max-kv-size the cache grows with the conversation (what is planned); --max-kv-size makes it a
        # RotatingKVCache that keeps the first 4 tokens and the last N and forgets the rest — printed only when asked
        if self.max_kv_size and not bits:
            parts += ["--max-kv-size", str(self.max_kv_size)]
        if bits:
            parts += ["--kv-bits", str(bits), "--kv-group-size", str(DEFAULT_KV_GROUP)]
            if self.quantized_kv_start != DEFAULT_QUANTIZED_KV_START:
                parts += ["--quantized-kv-start", str(self.quantized_kv_start)]
        line = convert + " ".join(parts)
        if self.max_kv_size and not bits:
            line += (f"  # --max-kv-size {self.max_kv_size}: a rotating cache — past {self.max_kv_size:,} tokens it "
                     "forgets the oldest (keeps the first 4), so answers lose the start of a long conversation")
        elif s.ctx:
            # review19 section 13: the context asked is not a flag here — mlx_lm.generate has no context length (its
            # only cache bound, --max-kv-size, forgets past it), so the line says what the plan sized instead
            line += (f"  # no context flag: the KV cache grows with the conversation, planned here at {s.ctx:,} "
                     "tokens (--max-kv-size N would instead forget all but the last N)")
        return line


__all__ = ["MLX", "kv_bits_of", "mlx_weight_bytes", "quantized_row_bytes"]

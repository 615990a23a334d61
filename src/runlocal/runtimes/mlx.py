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
  recommended_working_set() below is that default, for catalogs that only know the RAM size.
"""

from __future__ import annotations

import re

from ..model.spec import ModelSpec, TensorInfo
from ..quant.formats import LINEAR_ROLES, WeightEstimate
from .base import Allocation, DeviceMemory, Levers, Settings, Step, Target

MiB = 1 << 20
GiB = 1 << 30
MLX_REF = "mlx-lm 0.32.0 (d78bf58)"
KV_STEP = 256                    # mlx_lm/models/cache.py KVCache.step
DEFAULT_KV_GROUP = 64            # mlx_lm/generate.py --kv-group-size
DEFAULT_QUANTIZED_KV_START = 5000   # mlx_lm/generate.py DEFAULT_QUANTIZED_KV_START
DEFAULT_PREFILL_STEP = 2048      # mlx_lm/generate.py generate_step prefill_step_size; server --prefill-step-size
ROTATING_KEEP = 4                # make_prompt_cache: RotatingKVCache(max_size=max_kv_size, keep=4)
DEFAULT_CTX = 4096               # mlx-lm has no context default (--max-tokens 100); runlocal plans 4096 tokens
WIRED_WARN_SHARE = 0.9           # generate.py wired_limit: warns when model bytes > 0.9 × max recommended size
SERVER_PROMPT_CACHE = 10         # mlx_lm/server.py --prompt-cache-size
# mlx scaled_dot_product_attention.cpp: head dims the fused full-attention kernel takes (query length > 8)
FUSED_HEAD_DIMS = frozenset({64, 72, 80, 96, 128, 192, 256})


def recommended_working_set(ram_bytes: int) -> int:
    """macOS's default MTLDevice.recommendedMaxWorkingSetSize (what iogpu.wired_limit_mb=0 means).

    Apple does not document it; logged values: 2/3 of RAM at 16 GB (10922.67 MB, abetlen/llama-cpp-python#687)
    and 32 GB (21845.34 MB, ollama/ollama#434, ggml-org/llama.cpp#2011); 3/4 at 64 GB (49152 MiB,
    ggml-org/llama.cpp#1870) and on larger machines (gpustack/gpustack#1375). macOS 26 reports more on
    128 GB (107.52 GiB, antirez/ds4#893), not modelled here. ``sudo sysctl iogpu.wired_limit_mb=N``
    raises it (mlx-lm README, "Large Models")."""
    return ram_bytes * 2 // 3 if ram_bytes <= 36 * GiB else ram_bytes * 3 // 4


def quantized_row_bytes(dim: int, bits: int, group_size: int = DEFAULT_KV_GROUP, scale_bytes: int = 2) -> int:
    """Bytes of one quantized row of ``dim`` elements: uint32-packed values + scale and bias per group."""
    el_per_int = 32 // bits
    return -(-dim // el_per_int) * 4 + 2 * (dim // group_size) * scale_bytes


def mlx_weight_bytes(model: ModelSpec, bits: int = 4, group_size: int = 64) -> int:
    """Weights after ``mlx_lm.convert -q`` (affine, defaults 64/4, mlx_lm/utils.py quantize_model): every
    Linear and Embedding whose input width divides by the group size is quantized (nn.quantize's
    class_predicate), norms and other parameters stay 16-bit. Model-specific quant_predicates that keep
    e.g. MoE routers at 8 bits are not applied."""
    total = 0
    for t in model.tensors:
        if _quantizable(t, group_size):
            total += t.numel * bits // 8 + 2 * (t.numel // group_size) * 2
        else:
            total += t.numel * 2
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


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to


class MLX:
    """``max_kv_size`` = --max-kv-size (mlx_lm.generate); ``quantized_kv_start`` = --quantized-kv-start."""

    name = "mlx"
    pools_kv = False
    levers = Levers(weight_quants=("mlx-8bit", "mlx-4bit"), kv_cache_types=("q8_0", "q4_0"))  # convert -q, --kv-bits

    def __init__(self, *, max_kv_size: int | None = None, quantized_kv_start: int = DEFAULT_QUANTIZED_KV_START,
                 prefill_step_size: int = DEFAULT_PREFILL_STEP):
        self.max_kv_size = max_kv_size
        self.quantized_kv_start = quantized_kv_start
        self.prefill_step_size = prefill_step_size

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        return settings.with_(ctx=settings.ctx or DEFAULT_CTX)

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        s = self.defaults(model, settings, targets)
        steps: list[Step] = []
        assumptions: list[str] = [f"{MLX_REF}: prompt prefilled in chunks of {self.prefill_step_size}"]
        refusal: str | None = None
        dev = next((t for t in targets if t.kind == "unified"), None)
        if dev is None:
            refusal = "MLX runs on Apple silicon (Metal, unified memory); no unified-memory device was given"
            dev = next((t for t in targets if t.kind != "cpu"), targets[0] if targets else Target("GPU", "unified", 0))

        # --- KV cache type --------------------------------------------------------------------
        bits: int | None = None
        try:
            bits = kv_bits_of(s.cache_type_k)
            if kv_bits_of(s.cache_type_v) != bits:
                refusal = refusal or "mlx-lm quantizes K and V alike (--kv-bits); K and V types differ"
        except ValueError as e:
            refusal = refusal or f"--kv-bits: mlx-lm quantizes the KV cache to 2–8 bits, not '{e}'"
        group = DEFAULT_KV_GROUP
        assert s.ctx is not None                # set by defaults()
        T = s.ctx
        n_seq = max(1, s.parallel)
        S = min(self.prefill_step_size, T)
        sliding = any(a.kind == "sliding" for a in model.attention_layers)
        own_cache = sliding      # models with sliding layers define make_cache (gemma3, gpt-oss, …)
        rotating_all = self.max_kv_size is not None and not own_cache
        quantize = bits is not None and T >= self.quantized_kv_start
        if quantize and (rotating_all or sliding):
            # maybe_quantize_kv_cache calls to_quantized once the cache holds quantized_kv_start tokens
            refusal = refusal or ("RotatingKVCache Quantization NYI: mlx-lm cannot quantize a rotating cache "
                                  "(--max-kv-size or sliding-window layers) with --kv-bits")
            quantize = False
        if bits is not None and not quantize and refusal is None:
            assumptions.append(f"--kv-bits {bits}: the cache is quantized only from {self.quantized_kv_start:,} "
                               f"tokens (--quantized-kv-start); {T:,} stays 16-bit")

        # --- KV bytes --------------------------------------------------------------------------
        kv = 0
        per_token = 0
        fp16_cells = quant_cells = 0
        convert_at = min(T, -(-self.quantized_kv_start // S) * S)   # checked after each prefill chunk
        for a in model.attention_layers:
            if a.kind == "mla":
                # mlx_lm/models/deepseek_v3.py caches the latent (kv_lora_rank) as keys, the rope key as values
                rows = ((1, a.v_dim), (1, a.k_dim - a.v_dim))
            else:
                rows = ((a.n_kv_heads, a.k_dim), (a.n_kv_heads, a.v_dim))
            row16 = sum(n * d * 2 for n, d in rows)
            per_token += row16
            if a.kind == "sliding" and a.window:
                cells = min(_pad(T, KV_STEP), a.window) if T <= a.window else a.window + S - 1
            elif rotating_all:
                m = self.max_kv_size or 0
                cells = min(_pad(T, KV_STEP), m) if T <= m else m + S - 1
            else:
                cells = _pad(T, KV_STEP)
            if quantize and bits:
                rowq = sum(n * quantized_row_bytes(d, bits, group) for n, d in rows)
                # to_quantized converts the whole cache at once: the 16-bit cache and its copy exist together
                kv += max(rowq * cells, (row16 + rowq) * _pad(convert_at, KV_STEP)) * n_seq
                quant_cells = cells
            else:
                kv += row16 * cells * n_seq
                fp16_cells = max(fp16_cells, cells)
        kv += sum((r.conv_elems + r.state_elems) * 2 for r in model.recurrent_layers) * n_seq
        if quantize:
            kv_formula = (f"per row of d: d·{bits}/8 + 2 × d/{group} × 2 B (scale + bias), {quant_cells:,} cells "
                          f"(256-token steps) × {n_seq} sequence(s)")
        else:
            kv_formula = (f"{per_token:,} B/token (16-bit) × {fp16_cells:,} cells (steps of {KV_STEP}"
                          + (f"; rotating caches hold ≤ max_size + {S} − 1" if (sliding or rotating_all) else "")
                          + f") × {n_seq} sequence(s)")
        steps.append(Step("KV cache", kv_formula, f"{kv:,} B", "mlx_lm/models/cache.py KVCache, RotatingKVCache, "
                          "QuantizedKVCache"))

        # --- prefill activations -------------------------------------------------------------------
        h = model.hidden_size
        inter = model.intermediate_size or 4 * h
        head_dims = {a.k_dim for a in model.attention_layers if a.kind != "mla"}
        fused = all(d in FUSED_HEAD_DIMS for d in head_dims) and not quantize
        activation = n_seq * S * (2 * h + 3 * inter) * 2
        scores = 0
        if not fused:
            # the unfused path (unsupported head dim, or quantized_scaled_dot_product_attention) materializes
            # scores and their softmax: heads × S × T in the activation dtype
            scores = n_seq * model.n_heads * S * min(T, self.max_kv_size or T) * 2 * 2
        logits = n_seq * model.vocab_size * (2 + 4)
        compute = activation + scores + logits
        steps.append(Step("prefill activations", f"chunk {S} × (2·{h} + 3·{inter}) × 2 B"
                          + (f" + attention scores {scores:,} B (unfused)" if scores else " (fused SDPA)")
                          + " + last-token logits", f"{compute:,} B",
                          "mlx_lm/generate.py generate_step; mlx scaled_dot_product_attention.cpp"))

        # --- the device ------------------------------------------------------------------------------
        limit = dev.capacity
        steps.append(Step("GPU working set", f"recommendedMaxWorkingSetSize of {(dev.total or 0) / GiB:.0f} GiB RAM"
                          if dev.total else "the unified device's GPU share", f"{limit:,} B",
                          "mlx_lm/generate.py wired_limit; raise with sudo sysctl iogpu.wired_limit_mb=N"))
        if weights.total > WIRED_WARN_SHARE * limit > 0:
            assumptions.append(f"[WARNING] Generating with a model that requires {weights.total // MiB} MB which is close "
                               f"to the maximum recommended size of {limit // MiB} MB: mlx-lm warns it can be slow")
        if n_seq > 1:
            assumptions.append(f"{n_seq} sequences: mlx_lm.server batches them (BatchKVCache); its prompt cache keeps "
                               f"up to {SERVER_PROMPT_CACHE} more KV caches (--prompt-cache-size), not counted")
        assumptions.append("over the working set MLX does not refuse: macOS pages or the GPU command buffer fails")
        devices = (DeviceMemory(dev.name, dev.kind, dev.capacity, weights.total, kv, compute, 0),)
        return Allocation(settings=s, devices=devices, kv_bytes_per_token=per_token, refusal=refusal,
                          steps=tuple(steps), assumptions=tuple(assumptions))

    def command(self, model: ModelSpec, settings: Settings) -> str:
        from .published import mlx_repo, serve_path

        s = settings
        repo = mlx_repo(model, s.quant) or serve_path(model)    # a published mlx-community conversion first
        convert = ""
        q = re.fullmatch(r"mlx-([2-8])bit", (s.quant or "").lower())
        if q and not repo.startswith("mlx-community/"):
            out = f"./{repo.rstrip('/').split('/')[-1]}-{q.group(1)}bit"
            convert = f"mlx_lm.convert --hf-path {repo} -q --q-bits {q.group(1)} --mlx-path {out} && "
            repo = out
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
        return line


__all__ = ["MLX", "kv_bits_of", "mlx_weight_bytes", "quantized_row_bytes", "recommended_working_set"]

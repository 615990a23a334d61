"""llama.cpp / llama-server: what it allocates on each device.

Rules follow llama.cpp's own code (ggml-org/llama.cpp, late 2025 – 2026 releases):
- context: n_ctx padded up to a multiple of 256 (src/llama-context.cpp, llama_context ctor);
  with --parallel N and a non-unified cache each sequence gets n_ctx/N cells (same total bytes).
- KV: one K row of n_embd_k_gqa and one V row of n_embd_v_gqa per layer per cell, in the cache
  type (src/llama-kv-cache.cpp); sliding-window layers get min(n_ctx, pad(n_swa·n_seq + n_ubatch, 256))
  cells unless --swa-full (src/llama-kv-cache-iswa.cpp); recurrent layers a constant f32 state per
  sequence (src/llama-memory-recurrent.cpp: n_embd_r + n_embd_s per layer per seq).
- offload: the last n_gpu_layers repeating layers go to the GPU, the output layer too when
  n_gpu_layers > n_layer; the token embedding stays on the CPU (src/llama-model.cpp, load_tensors).
- compute buffers: fitted to buffer sizes llama.cpp logs, see measurements/llamacpp.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..kv import layer_kv, normalize_cache_type, recurrent_state_bytes
from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from .base import GGUF_LEVERS, Allocation, DeviceMemory, Settings, Step, Target

MiB = 1 << 20
CTX_PAD = 256
DEFAULT_CTX = 4096          # common/common.h: n_ctx default for llama-cli / llama-server
DEFAULT_BATCH = 2048        # common/common.h: n_batch
DEFAULT_UBATCH = 512        # common/common.h: n_ubatch
# What a GPU pays beyond llama.cpp's logged buffers: the CUDA context and module load (523.6 MiB at
# the first model load) + cuBLAS state after the first decode (66 MiB), measured with NVML on an H100,
# driver 580, CUDA 13 (measurements/llamacpp/README.md). ROCm/Metal are assumed alike.
GPU_CONTEXT_OVERHEAD = 590 * MiB


def pad(n: int, to: int) -> int:
    return (n + to - 1) // to * to


@dataclass(frozen=True)
class _Split:
    """Which layers live where for a given -ngl."""

    gpu_layers: frozenset[int]
    output_on_gpu: bool


def _split(model: ModelSpec, n_gpu_layers: int) -> _Split:
    # src/llama-model.cpp load_tensors: i_gpu_start = max(n_layer + 1 - ngl, 0); a layer il ≥ i_gpu_start
    # is offloaded, and the output layer counts as layer n_layer — so it is the first thing -ngl 1 offloads.
    n = model.n_layers
    start = max(n + 1 - n_gpu_layers, 0)
    return _Split(frozenset(range(start, n)), n_gpu_layers >= 1)


def compute_phases(model: ModelSpec, ubatch: int, n_kv: int, flash_attn: bool) -> dict[str, int]:
    """Peak bytes of ggml's compute graph in its three heaviest phases; the buffer is their max.

    Fitted to llama.cpp's logged "compute buffer size" over architectures, contexts, ubatch sizes
    and flash attention (measurements/llamacpp): the output phase holds the f32 logits of a
    ubatch; the FFN phase the gate/up/act intermediates; the attention phase (without flash
    attention) the f32 KQ scores of every head over n_kv cells. The KQ mask (f16 with flash
    attention, f32 without) stays live through the layers.
    """
    f32 = 4
    mask = n_kv * ubatch * (2 if flash_attn else 4)
    n_ff = model.intermediate_size or 4 * model.hidden_size
    kv_width = max((a.n_kv_heads * a.k_dim for a in model.attention_layers), default=model.hidden_size)
    output = ubatch * f32 * (model.vocab_size + 2 * model.hidden_size)
    ffn = ubatch * f32 * (3 * n_ff + 4 * model.hidden_size) + mask
    attention = 0 if flash_attn else (n_kv * ubatch * model.n_heads * f32
                                      + ubatch * f32 * (5 * model.hidden_size + 2 * kv_width) + mask)
    return {"output": output, "ffn": ffn, "attention": attention}


class LlamaCpp:
    name = "llama.cpp"
    pools_kv = False
    levers = GGUF_LEVERS

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        has_gpu = any(t.kind != "cpu" for t in targets)
        ngl = settings.n_gpu_layers
        if ngl is None or ngl < 0:
            ngl = model.n_layers + 1 if has_gpu else 0
        return settings.with_(
            ctx=settings.ctx or DEFAULT_CTX,
            batch=settings.batch or DEFAULT_BATCH,
            ubatch=min(settings.ubatch or DEFAULT_UBATCH, settings.batch or DEFAULT_BATCH),
            n_gpu_layers=ngl if has_gpu else 0,
            cache_type_k=normalize_cache_type(settings.cache_type_k, field="cache-type-k"),
            cache_type_v=normalize_cache_type(settings.cache_type_v, field="cache-type-v"),
        )

    def flash_attention(self, settings: Settings, targets: list[Target]) -> bool:
        # flash_attn auto turns it on where the backend supports it (CUDA, Metal, CPU all do for
        # common head sizes); a quantized V cache requires it (llama_context ctor refuses otherwise).
        if settings.flash_attn == "off":
            if settings.cache_type_v not in ("f16", "bf16", "f32"):
                raise InputError("cache-type-v: a quantized V cache needs flash attention (--flash-attn on)")
            return False
        return True

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        s = self.defaults(model, settings, targets)
        gpus = [t for t in targets if t.kind != "cpu"]
        host = next((t for t in targets if t.kind == "cpu"), None)
        fa = self.flash_attention(s, targets)
        n_seq = max(1, s.parallel)
        # llama-server's -c is the total over all slots; runlocal's --ctx is per request.
        n_ctx = pad(s.ctx * n_seq, CTX_PAD)
        split = _split(model, s.n_gpu_layers or 0)
        steps: list[Step] = [Step("context cells", f"pad(ctx {s.ctx:,} × parallel {n_seq}, {CTX_PAD})", f"{n_ctx:,}",
                                  "src/llama-context.cpp")]

        # --- weights per device -----------------------------------------------------------
        scale = weights.total / max(1, sum(t.numel for t in model.tensors)) if model.tensors else 0
        gpu_w = cpu_w = 0
        for t in model.tensors:
            size = t.nbytes if (t.nbytes is not None and weights.from_file) else int(t.numel * scale)
            if t.layer is not None:
                on_gpu = t.layer in split.gpu_layers and not (
                    t.role.startswith("expert_") and t.layer < s.n_cpu_moe)
            else:   # the output layer (LM head, final norm) follows -ngl; the token embedding stays on the CPU
                on_gpu = split.output_on_gpu and t.role in ("lm_head", "norm")
            if on_gpu and gpus:
                gpu_w += size
            else:
                cpu_w += size
        if not model.tensors:
            cpu_w = weights.total
        steps.append(Step("weights", f"{len(split.gpu_layers)}/{model.n_layers} layers on GPU"
                          f"{' + output' if split.output_on_gpu else ''}; token embedding on CPU",
                          f"GPU {gpu_w:,} B, CPU {cpu_w:,} B", "src/llama-model.cpp load_tensors"))

        # --- KV cache ---------------------------------------------------------------------
        # Streams: a non-unified cache (llama.cpp's default) gives each of the n_seq sequences its own
        # n_ctx/n_seq cells; sliding-window layers keep min(cells, pad(n_swa + n_ubatch, 256)) per stream.
        unified = n_seq == 1
        n_ctx_seq = n_ctx if unified else n_ctx // n_seq
        windows = [a.window for a in model.attention_layers if a.kind == "sliding" and a.window]
        swa_per_stream = min(n_ctx_seq, pad((max(windows) if windows else 0) * (n_seq if unified else 1) + s.ubatch,
                                            CTX_PAD))
        swa_cells = swa_per_stream * (1 if unified else n_seq)
        kv_gpu = kv_cpu = 0
        per_token = 0
        for il, layer in enumerate(model.layers):
            if layer.attention is None:
                continue
            lk = layer_kv(layer.attention, s.cache_type_k, s.cache_type_v)
            per_token += lk.bytes_per_token
            size = lk.bytes_per_token * (swa_cells if lk.window else n_ctx)
            if il in split.gpu_layers and gpus:
                kv_gpu += size
            else:
                kv_cpu += size
        rec = recurrent_state_bytes(model) * n_seq
        if rec:
            kv_gpu, kv_cpu = (kv_gpu + rec, kv_cpu) if (gpus and split.gpu_layers) else (kv_gpu, kv_cpu + rec)
            steps.append(Step("recurrent state", f"(conv + ssm elements) × 4 B × {n_seq} seq", f"{rec:,} B",
                              "src/llama-memory-recurrent.cpp"))
        steps.append(Step("KV cache", f"{per_token:,} B/token × {n_ctx:,} cells"
                          + (f" (sliding-window layers: {swa_cells:,} cells)" if windows and swa_cells != n_ctx else "")
                          + f", K {s.cache_type_k} V {s.cache_type_v}", f"{kv_gpu + kv_cpu:,} B",
                          "src/llama-kv-cache.cpp, llama-kv-cache-iswa.cpp"))

        # --- compute and output buffers ----------------------------------------------------
        phases = compute_phases(model, s.ubatch, n_ctx_seq, fa)
        gpu_part = max(phases.values()) if split.output_on_gpu else max(phases["ffn"], phases["attention"])
        compute_dev = gpu_part if gpus and s.n_gpu_layers else max(phases.values())
        compute_host = 0
        if gpus and s.n_gpu_layers:
            # the token embedding stays on the CPU: its lookup and the copies to the GPU live in a host buffer
            compute_host = 3 * model.hidden_size * s.ubatch * 4
            if not split.output_on_gpu:
                compute_host += phases["output"]
        output = model.vocab_size * 4 * n_seq
        steps.append(Step("compute buffer", "max(output " + f"{phases['output']:,}, FFN {phases['ffn']:,}, "
                          f"attention {phases['attention']:,}) B for n_ubatch {s.ubatch}, n_kv {n_ctx_seq:,}, "
                          f"flash attention {'on' if fa else 'off'}", f"{compute_dev:,} B",
                          "fit to llama.cpp's logged buffers, measurements/llamacpp"))
        steps.append(Step("output buffer", f"n_vocab {model.vocab_size:,} × 4 B × {n_seq} seq", f"{output:,} B",
                          "src/llama-context.cpp output_reserve"))

        devices: list[DeviceMemory] = []
        if gpus:
            g = gpus[0]
            devices.append(DeviceMemory(g.name, g.kind, g.capacity, gpu_w, kv_gpu, compute_dev,
                                        GPU_CONTEXT_OVERHEAD if g.kind == "gpu" else 0))
            if host is not None:
                devices.append(DeviceMemory(host.name, "cpu", host.capacity, cpu_w, kv_cpu, compute_host, output))
            elif cpu_w or kv_cpu:
                devices.append(DeviceMemory("CPU", "cpu", 0, cpu_w, kv_cpu, compute_host, output))
        else:
            h = host or Target("CPU", "cpu", 0)
            devices.append(DeviceMemory(h.name, "cpu", h.capacity, cpu_w + gpu_w, kv_cpu + kv_gpu, compute_dev, output))
        return Allocation(
            settings=s, devices=tuple(devices), kv_bytes_per_token=per_token,
            kv_cache_tokens=None, max_concurrency=None, steps=tuple(steps),
            assumptions=(f"flash attention {'on' if fa else 'off'}", f"n_ubatch {s.ubatch}, n_batch {s.batch}",
                         "weights memory-mapped from the file; CPU share counted as resident"),
        )

    def command(self, model: ModelSpec, settings: Settings) -> str:
        s = settings
        if model.source.endswith(".gguf") and not s.quant:
            file = model.source
        else:
            stem = model.id[:-5] if model.id.lower().endswith(".gguf") else model.id
            file = f"{stem}-{s.quant}.gguf" if s.quant else f"{stem}.gguf"
        parts = ["llama-server", "-m", file,
                 "-c", str((s.ctx or DEFAULT_CTX) * max(1, s.parallel))]
        if s.parallel > 1:
            parts += ["--parallel", str(s.parallel)]
        if s.n_gpu_layers is not None:
            parts += ["-ngl", str(s.n_gpu_layers)]
        if s.cache_type_k != "f16":
            parts += ["--cache-type-k", s.cache_type_k]
        if s.cache_type_v != "f16":
            parts += ["--cache-type-v", s.cache_type_v]
        if s.flash_attn != "auto":
            parts += ["--flash-attn", s.flash_attn]
        if s.n_cpu_moe:
            parts += ["--n-cpu-moe", str(s.n_cpu_moe)]
        return " ".join(parts)

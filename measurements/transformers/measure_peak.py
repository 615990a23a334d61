#!/usr/bin/env python3
"""Measure the CUDA memory that Hugging Face transformers' model.generate() needs above the weights.

Models are built from configs written inline (the published config.json values of real
models that change memory: layers, hidden size, heads, KV heads, head_dim, FFN size,
vocabulary, tied embeddings), with random weights in bf16 directly on the GPU: nothing is
downloaded.  For each (batch, prompt_len, new_tokens) case, generate() runs greedily for
exactly new_tokens tokens (min_new_tokens = max_new_tokens, no EOS) and the record holds:

  weight_bytes                 sum of parameter + buffer bytes
  alloc_before                 torch.cuda.memory_allocated() before generate (weights + inputs)
  peak_alloc                   torch.cuda.max_memory_allocated() during generate
  peak_above_weights           peak_alloc - weight_bytes
  peak_reserved                torch.cuda.max_memory_reserved() (caching allocator, incl. fragmentation)
  nvml_used_after_mib          nvidia-smi memory.used after the case (CUDA context, cuBLAS
                               workspace and the allocator's reserved blocks included)
  kv_cache_bytes               2 * layers * kv_heads * head_dim * batch * (prompt + new) * 2 bytes
                               (what the DynamicCache holds at the end; for reference)

Usage (one GPU, torch + transformers installed, no network):
  python measure_peak.py --out data/cuda_peak.jsonl [--deadline 200]
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import time

MiB = 1024 * 1024

CONFIGS = {
    # meta-llama/Llama-3.2-1B config.json
    "llama-3.2-1b": dict(
        model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
        max_position_embeddings=131072, rope_theta=500000.0, tie_word_embeddings=True,
        rms_norm_eps=1e-5, hidden_act="silu",
        rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
    # Qwen/Qwen3-0.6B config.json
    "qwen3-0.6b": dict(
        model_type="qwen3", hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128, vocab_size=151936,
        max_position_embeddings=40960, rope_theta=1000000.0, tie_word_embeddings=True,
        rms_norm_eps=1e-6, hidden_act="silu"),
}

# (batch, prompt_len, new_tokens, attn_implementation, padded)
CASES = [
    (1, 512, 32, "sdpa", False),
    (1, 2048, 32, "sdpa", False),
    (1, 8192, 32, "sdpa", False),
    (1, 32768, 16, "sdpa", False),
    (4, 2048, 32, "sdpa", False),
    (4, 2048, 32, "sdpa", True),
    (8, 1024, 64, "sdpa", False),
    (8, 4096, 32, "sdpa", False),
    (8, 4096, 32, "sdpa", True),
    (16, 512, 128, "sdpa", False),
    (1, 2048, 32, "eager", False),
    (4, 2048, 32, "eager", False),
    (1, 4096, 32, "eager", False),
    (1, 512, 512, "sdpa", False),
]


class Nvml:
    class _Mem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]

    def __init__(self):
        self.lib = None
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            h = ctypes.c_void_p()
            if lib.nvmlInit_v2() == 0 and lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0:
                self.lib, self.h = lib, h
        except OSError:
            pass

    def used_mib(self):
        if self.lib is None:
            return None
        m = self._Mem()
        return None if self.lib.nvmlDeviceGetMemoryInfo(self.h, ctypes.byref(m)) else round(m.used / MiB, 1)


def case_key(model, attn, B, P, N, padded) -> str:
    return f"{model}|{attn}|B={B}|P={P}|N={N}|pad={padded}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="*", default=list(CONFIGS))
    ap.add_argument("--deadline", type=float, default=0, help="stop after this many seconds (0 = none)")
    ap.add_argument("--resume", action="store_true", help="skip cases already in --out")
    a = ap.parse_args(argv)
    t0 = time.time()
    done = set()
    if a.resume and os.path.exists(a.out):
        for ln in open(a.out):
            try:
                r = json.loads(ln)
                done.add(case_key(r["model"], r["attn_implementation"], r["batch"], r["prompt_len"],
                                  r["new_tokens"], r["padded"]))
            except Exception:
                pass
    nv = Nvml()
    smi0 = nv.used_mib()

    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    smi_ctx = nv.used_mib()
    x = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    (x @ x).sum().item()
    smi_cublas = nv.used_mib()
    del x
    env = {
        "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "transformers": transformers.__version__, "cuda_runtime": torch.version.cuda,
        "python": platform.python_version(),
        "nvml_used_start_mib": smi0, "nvml_used_after_cuda_init_mib": smi_ctx,
        "nvml_used_after_first_bf16_matmul_mib": smi_cublas,
        "total_mib": round(torch.cuda.get_device_properties(0).total_memory / MiB, 1),
    }
    print(json.dumps(env), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    fo = open(a.out, "a")
    for name in a.models:
        spec = dict(CONFIGS[name])
        mt = spec.pop("model_type")
        for attn in ("sdpa", "eager"):
            if not any(c[3] == attn and case_key(name, attn, c[0], c[1], c[2], c[4]) not in done for c in CASES):
                continue
            if a.deadline and time.time() - t0 > a.deadline:
                break
            cfg = AutoConfig.for_model(mt, **spec)
            cfg._attn_implementation = attn
            torch.manual_seed(0)
            tl = time.time()
            with torch.device("cuda"):
                try:
                    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation=attn)
                except TypeError:
                    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16, attn_implementation=attn)
            model.eval()
            torch.cuda.synchronize()
            weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
            weight_bytes += sum(b.numel() * b.element_size() for b in model.buffers())
            n_params = sum(p.numel() for p in model.parameters())
            build_s = time.time() - tl
            alloc_model = torch.cuda.memory_allocated()
            print(f"{name} {attn}: {n_params/1e9:.3f} B params, {weight_bytes/MiB:.1f} MiB, "
                  f"allocated {alloc_model/MiB:.1f} MiB, built in {build_s:.1f}s", flush=True)
            hd = spec.get("head_dim") or spec["hidden_size"] // spec["num_attention_heads"]
            for B, P, N, impl, padded in CASES:
                if impl != attn or case_key(name, attn, B, P, N, padded) in done:
                    continue
                if a.deadline and time.time() - t0 > a.deadline:
                    print("deadline reached", flush=True)
                    break
                rec = dict(model=name, config=CONFIGS[name], n_params=n_params, weight_bytes=weight_bytes,
                           dtype="bfloat16", attn_implementation=attn, batch=B, prompt_len=P, new_tokens=N,
                           padded=padded, cache="DynamicCache (default)", env=env)
                ids = torch.randint(10, spec["vocab_size"] - 10, (B, P), device="cuda")
                mask = torch.ones(B, P, dtype=torch.long, device="cuda")
                if padded:  # left padding: row i has i * P // (2B) pad tokens
                    for i in range(B):
                        k = i * P // (2 * B)
                        mask[i, :k] = 0
                        ids[i, :k] = 0
                gc.collect()
                torch.cuda.empty_cache()
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                before = torch.cuda.memory_allocated()
                tg = time.time()
                try:
                    with torch.no_grad():
                        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=N,
                                             min_new_tokens=N, do_sample=False, pad_token_id=0,
                                             eos_token_id=None)
                    torch.cuda.synchronize()
                    rec["ok"] = True
                    rec["generated"] = int(out.shape[1] - P)
                    del out
                except torch.OutOfMemoryError as e:
                    rec["ok"] = False
                    rec["error"] = str(e)[:300]
                rec["generate_s"] = round(time.time() - tg, 3)
                peak = torch.cuda.max_memory_allocated()
                rec.update(alloc_before=before, peak_alloc=peak, peak_above_weights=peak - weight_bytes,
                           peak_above_before=peak - before, peak_reserved=torch.cuda.max_memory_reserved(),
                           nvml_used_after_mib=nv.used_mib(),
                           kv_cache_bytes=2 * spec["num_hidden_layers"] * spec["num_key_value_heads"] * hd * B * (P + N) * 2,
                           logits_last_fp32_bytes=B * spec["vocab_size"] * 4)
                fo.write(json.dumps(rec) + "\n")
                fo.flush()
                print(f"  B={B:2d} P={P:6d} N={N:4d} {attn:5s} pad={padded!s:5s} -> "
                      f"{'ok ' if rec['ok'] else 'OOM'} peak-above-weights {rec['peak_above_weights']/MiB:9.1f} MiB "
                      f"(kv {rec['kv_cache_bytes']/MiB:8.1f}) reserved {rec['peak_reserved']/MiB:9.1f} "
                      f"smi {rec['nvml_used_after_mib']} {rec['generate_s']:.1f}s", flush=True)
                del ids, mask
            del model
            gc.collect()
            torch.cuda.empty_cache()
    fo.close()
    print(f"done in {time.time()-t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()

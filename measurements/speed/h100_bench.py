#!/usr/bin/env python3
"""llama.cpp prefill / decode speed with zero-weight GGUFs, through the low-level ctypes API.

For each model (a zero-weight GGUF of the real architecture, written by
measurements/llamacpp/make_zero_gguf.py: same tensor list and types as a Q4_0 conversion,
so the same memory traffic and FLOPs as real weights):

  * load with n_gpu_layers=999 (everything offloaded; 0 with --cpu), create one context
    (n_ctx 4096, n_batch = n_ubatch = 512, flash attention on, f16 K/V);
  * warm-up: one 512-token batch and a few single tokens (CUDA graph capture, cuBLAS init);
  * each repetition (3): clear the KV cache, decode one batch of 512 token ids -> pp512 tokens/s
    (llama-bench's pp512, from an empty cache); then 128 single-token decodes at positions
    512..639 -> tg128 tokens/s (llama-bench's "tg128 @ d512": mean KV length 576); then, as in
    plain llama-bench tg128, the cache is cleared and 128 single tokens are decoded from
    position 0 (mean KV length 64);
  * median over the repetitions; every call is followed by llama_synchronize.

Token ids only (the GGUFs carry no tokenizer).  One JSON object per test per model is appended
to --out, in the record format of measurements/speed/*.jsonl (device, backend, model, quant,
test, tokens_per_s, model_gib, source_url ...) plus the run's details.

Caveats of zero weights: dense matmuls / attention cost the same whatever the values, but an MoE
router whose logits are all zero sends every token of a batch to the same top-k experts, so MoE
*prefill* reads fewer expert weights than a real model would (those records carry a note); MoE
decode reads k experts per token either way.

Usage (the GPU run: see measurements/speed/README-h100.md):
  LD_PRELOAD=/lib/x86_64-linux-gnu/libstdc++.so.6 LLAMA_CPP_LIB_PATH=/tmp/lcb/bin \\
    python3 measurements/speed/h100_bench.py --llama-cpp-pkg .llamacpp-src/llama_cpp \\
      --gguf-dir /tmp/gguf --out measurements/speed/h100_llamacpp_own.jsonl
  # CPU smoke test with the pip wheel:  --cpu --models qwen3-4b --pp 32 --tg 4 --reps 1

--pp-configs P:U ... (the MoE micro-batch run, h100/moe_ubatch_*.jsonl) measures, per model load, a P-token prompt
with n_batch = P and n_ubatch = U for each pair, one context each (warm-up batch, then --reps timed batches), instead
of the single --pp configuration; with --tg 0 no decode is timed.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LLAMACPP_DIR = HERE.parent / "llamacpp"
sys.path.insert(0, str(LLAMACPP_DIR))

DEFAULT_MODELS = ["llama-3.1-8b", "qwen3-8b", "qwen3-30b-a3b", "gpt-oss-20b", "gemma-2-9b"]
MOE_ARCHS = {"qwen3moe", "gpt-oss", "deepseek2", "granitehybrid"}
COMMIT = "0c1e57098"  # llama.cpp vendored by llama-cpp-python 0.3.36 (measurements/llamacpp/README.md)
SOURCE = "own run, measurements/speed/h100_bench.py"
REPRODUCE = ("measurements/speed/README-h100.md: libs from .llamacpp-libs (llama.cpp 0c1e57098, CUDA 13.0, sm_90), "
             "zero-weight Q4_0 GGUFs from measurements/llamacpp/make_zero_gguf.py, "
             "LD_PRELOAD=<system libstdc++.so.6> LLAMA_CPP_LIB_PATH=/tmp/lcb/bin python3 measurements/speed/h100_bench.py "
             "--llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir /tmp/gguf")


def nvidia_smi(query: str) -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip() or None
    except Exception:
        return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf-dir", required=True)
    ap.add_argument("--out", default=str(HERE / "h100_llamacpp_own.jsonl"))
    ap.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    ap.add_argument("--llama-cpp-pkg", default=None, help="bare llama_cpp package dir (sdist); default: installed")
    ap.add_argument("--cpu", action="store_true", help="n_gpu_layers 0 (logic test on a CPU build)")
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup-tokens", type=int, default=4)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--make", action="store_true", help="write missing GGUFs with make_zero_gguf.py")
    ap.add_argument("--deadline", type=float, default=0, help="skip models started after this many seconds")
    ap.add_argument("--device", default="h100-sxm", help="runlocal catalog id of the GPU (record field)")
    ap.add_argument("--weights-data", default="zero", choices=("zero", "random", "spread"),
                    help="what the GGUFs' data is (record field): zero (make_zero_gguf.py), random (make_random_gguf.py) "
                         "or spread (make_spread_gguf.py: random embeddings and signed random routers)")
    ap.add_argument("--pp-configs", nargs="*", default=None, metavar="P:U",
                    help="prompt-only configurations: a P-token prompt at n_batch P, n_ubatch U (see the docstring)")
    ap.add_argument("--quiet-log", action="store_true", help="silence llama.cpp's log")
    a = ap.parse_args(argv)
    t0 = time.time()

    from measure import import_llama  # type: ignore[import-not-found]  # measurements/llamacpp/measure.py
    L = import_llama(a.llama_cpp_pkg)

    if a.quiet_log:
        cb_t = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
        global _LOG_CB
        _LOG_CB = cb_t(lambda level, text, ud: None)
        L.llama_log_set(_LOG_CB, None)
    L.llama_backend_init()
    sysinfo = L.llama_print_system_info().decode()
    gpu = None if a.cpu else nvidia_smi("name,driver_version,memory.total,clocks.max.sm,power.limit")
    cpu_model = None
    try:
        cpu_model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except Exception:
        pass
    print(f"system_info: {sysinfo}\ngpu: {gpu}\ncpu: {cpu_model}", flush=True)

    gdir = Path(a.gguf_dir)
    if a.make:
        from runlocal.evidence import zero_gguf as make_zero_gguf
        gdir.mkdir(parents=True, exist_ok=True)
        for m in a.models:
            if not (gdir / f"{m}.q4_0.gguf").exists():
                info = make_zero_gguf.write_model(m, gdir, "q4_0")
                print(f"wrote {info['path']} ({info['file_bytes']/2**30:.2f} GiB)", flush=True)

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    n_ok = 0
    for mkey in a.models:
        if a.deadline and time.time() - t0 > a.deadline:
            print(f"deadline: skipping {mkey} and later", flush=True)
            break
        path = gdir / f"{mkey}.q4_0.gguf"
        meta = json.loads(path.with_suffix(".json").read_text()) if path.with_suffix(".json").exists() else {}
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0 if a.cpu else 999
        tl = time.perf_counter()
        model = L.llama_model_load_from_file(str(path).encode(), mp)
        load_s = time.perf_counter() - tl
        if not model:
            print(f"LOAD FAILED {mkey}", flush=True)
            continue
        buf = ctypes.create_string_buffer(256)
        L.llama_model_desc(model, buf, 256)
        desc = buf.value.decode()
        size_b = int(L.llama_model_size(model))
        n_params = int(L.llama_model_n_params(model))
        n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))

        if a.pp_configs:
            info = {"model": mkey, "arch": meta.get("arch"), "desc": desc, "size_b": size_b, "n_params": n_params,
                    "file_bytes": meta.get("file_bytes"), "load_s": load_s, "gpu": gpu, "cpu_model": cpu_model,
                    "sysinfo": sysinfo}
            recs = prompt_configs(L, model, n_vocab, a, info)
            L.llama_model_free(model)
            with open(out, "a") as fo:
                for r in recs:
                    fo.write(json.dumps(r) + "\n")
            n_ok += bool(recs)
            continue

        cp = L.llama_context_default_params()
        cp.n_ctx = a.n_ctx
        cp.n_batch = a.pp
        cp.n_ubatch = a.pp
        cp.n_seq_max = 1
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED
        cp.no_perf = False
        if a.threads:
            cp.n_threads = cp.n_threads_batch = a.threads
        ctx = L.llama_init_from_model(model, cp)
        if not ctx:
            print(f"CONTEXT FAILED {mkey}", flush=True)
            L.llama_model_free(model)
            continue
        mem = L.llama_get_memory(ctx)
        n_ctx = L.llama_n_ctx(ctx)

        prompt = (L.llama_token * a.pp)(*[(i * 7919 + 1) % n_vocab for i in range(a.pp)])
        one = (L.llama_token * 1)()

        def batch() -> float:
            t = time.perf_counter()
            rc = L.llama_decode(ctx, L.llama_batch_get_one(prompt, a.pp))
            L.llama_synchronize(ctx)
            if rc != 0:
                raise RuntimeError(f"llama_decode(batch) returned {rc}")
            return time.perf_counter() - t

        def singles(n: int, start: int) -> float:
            t = time.perf_counter()
            for i in range(n):
                one[0] = (start + i * 31 + 7) % n_vocab
                rc = L.llama_decode(ctx, L.llama_batch_get_one(one, 1))
                L.llama_synchronize(ctx)
                if rc != 0:
                    raise RuntimeError(f"llama_decode(1) returned {rc} at token {i}")
            return time.perf_counter() - t

        try:
            # warm-up: one batch and a few single tokens
            L.llama_memory_clear(mem, True)
            warm_pp = batch()
            singles(a.warmup_tokens, 0)
            pp_s, tg_s, tg0_s = [], [], []
            for _ in range(a.reps):
                L.llama_memory_clear(mem, True)
                pp_s.append(batch())                 # positions 0..pp-1
                tg_s.append(singles(a.tg, a.pp))     # positions pp..pp+tg-1
                L.llama_memory_clear(mem, True)
                tg0_s.append(singles(a.tg, 0))       # positions 0..tg-1
        except RuntimeError as e:
            print(f"DECODE FAILED {mkey}: {e}", flush=True)
            L.llama_free(ctx)
            L.llama_model_free(model)
            continue
        pp_tps = [a.pp / s for s in pp_s]
        tg_tps = [a.tg / s for s in tg_s]
        tg0_tps = [a.tg / s for s in tg0_s]
        L.llama_free(ctx)
        L.llama_model_free(model)

        arch = meta.get("arch")
        base = {
            "device": "cpu" if a.cpu else a.device, "n_devices": 1, "backend": "cpu" if a.cpu else "cuda",
            "runtime": "llama.cpp", "model": mkey, "quant": "Q4_0",
            "model_gib": round(size_b / 2**30, 3),
            "source_url": SOURCE, "source": SOURCE, "reproduce": REPRODUCE,
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "note": ("zero-weight GGUF of the real architecture (make_zero_gguf.py)" if a.weights_data == "zero" else
                     "GGUF of the real architecture with random data (make_random_gguf.py)")
                    + ": Q4_0 matrices, Q6_K output" + (", MXFP4 experts + Q8_0" if arch == "gpt-oss" else ""),
            "weights_data": a.weights_data,
            "arch": arch, "model_desc": desc, "model_size_bytes": size_b, "gguf_file_bytes": meta.get("file_bytes"),
            "n_params": n_params, "n_ctx": n_ctx, "n_batch": a.pp, "n_ubatch": a.pp, "flash_attn": True,
            "type_k": "f16", "type_v": "f16", "n_gpu_layers": 0 if a.cpu else 999,
            "gpu": gpu, "cpu_model": cpu_model, "llama_cpp_commit": COMMIT, "system_info": sysinfo,
            "reps": a.reps, "model_load_s": round(load_s, 2), "warmup_batch_s": round(warm_pp, 4),
        }
        recs = [
            dict(base, test=f"pp{a.pp}", tokens_per_s=round(statistics.median(pp_tps), 2),
                 runs_tokens_per_s=[round(x, 2) for x in pp_tps], depth=0,
                 **({"zero_weight_moe_prefill": "all-zero router logits send every token to the same experts: "
                     "fewer expert weights read than with a real model"}
                   if arch in MOE_ARCHS and a.weights_data == "zero" else {})),
            dict(base, test=f"tg{a.tg}@d{a.pp}", tokens_per_s=round(statistics.median(tg_tps), 2),
                 runs_tokens_per_s=[round(x, 2) for x in tg_tps], depth=a.pp,
                 mean_kv_len=a.pp + a.tg / 2),
            dict(base, test=f"tg{a.tg}", tokens_per_s=round(statistics.median(tg0_tps), 2),
                 runs_tokens_per_s=[round(x, 2) for x in tg0_tps], depth=0, mean_kv_len=a.tg / 2),
        ]
        with open(out, "a") as fo:
            for r in recs:
                fo.write(json.dumps(r) + "\n")
        n_ok += 1
        print(f"RESULT {mkey:16s} {size_b/2**30:6.2f} GiB  pp{a.pp} {recs[0]['tokens_per_s']:9.1f} t/s  "
              f"tg{a.tg}@d{a.pp} {recs[1]['tokens_per_s']:7.1f} t/s  tg{a.tg} {recs[2]['tokens_per_s']:7.1f} t/s  "
              f"(load {load_s:.1f}s, runs pp {[round(x) for x in pp_tps]} tg {[round(x, 1) for x in tg_tps]})",
              flush=True)
    if not a.cpu:
        print("gpu after:", nvidia_smi("name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw"), flush=True)
    print(f"done: {n_ok}/{len(a.models)} models in {time.time() - t0:.0f}s -> {out}", flush=True)
    return 0 if n_ok else 1


def prompt_configs(L, model, n_vocab: int, a, info: dict) -> list[dict]:
    """--pp-configs: for each P:U, a context with n_batch P and n_ubatch U, one warm-up batch of the P-token prompt,
    then a.reps timed batches from an empty cache; one record per configuration (the same fields as main's)."""
    recs = []
    for cfg in a.pp_configs:
        n_prompt, n_ub = (int(v) for v in cfg.split(":"))
        cp = L.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = a.n_ctx, n_prompt, n_ub, 1
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED
        if a.threads:
            cp.n_threads = cp.n_threads_batch = a.threads
        ctx = L.llama_init_from_model(model, cp)
        if not ctx:
            print(f"CONTEXT FAILED {info['model']} {cfg}", flush=True)
            continue
        mem = L.llama_get_memory(ctx)
        prompt = (L.llama_token * n_prompt)(*[(i * 7919 + 1) % n_vocab for i in range(n_prompt)])
        times = []
        try:
            for _rep in range(a.reps + 1):                # the first is the warm-up
                L.llama_memory_clear(mem, True)
                t = time.perf_counter()
                rc = L.llama_decode(ctx, L.llama_batch_get_one(prompt, n_prompt))
                L.llama_synchronize(ctx)
                if rc != 0:
                    raise RuntimeError(f"llama_decode returned {rc}")
                times.append(time.perf_counter() - t)
        except RuntimeError as e:
            print(f"DECODE FAILED {info['model']} {cfg}: {e}", flush=True)
            L.llama_free(ctx)
            continue
        n_ctx = L.llama_n_ctx(ctx)
        L.llama_free(ctx)
        tps = [n_prompt / s for s in times[1:]]
        recs.append({
            "device": "cpu" if a.cpu else a.device, "n_devices": 1, "backend": "cpu" if a.cpu else "cuda",
            "runtime": "llama.cpp", "model": info["model"], "quant": "Q4_0", "test": f"pp{n_prompt}",
            "tokens_per_s": round(statistics.median(tps), 2), "runs_tokens_per_s": [round(x, 2) for x in tps],
            "depth": 0, "model_gib": round(info["size_b"] / 2**30, 3), "weights_data": a.weights_data,
            "source_url": SOURCE, "source": SOURCE, "reproduce": REPRODUCE, "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "arch": info["arch"], "model_desc": info["desc"], "model_size_bytes": info["size_b"],
            "gguf_file_bytes": info["file_bytes"], "n_params": info["n_params"], "n_ctx": n_ctx,
            "n_batch": n_prompt, "n_ubatch": n_ub, "flash_attn": True, "type_k": "f16", "type_v": "f16",
            "n_gpu_layers": 0 if a.cpu else 999, "gpu": info["gpu"], "cpu_model": info["cpu_model"],
            "llama_cpp_commit": COMMIT, "system_info": info["sysinfo"], "reps": a.reps,
            "model_load_s": round(info["load_s"], 2), "warmup_batch_s": round(times[0], 4)})
        print(f"RESULT {info['model']:16s} {a.weights_data:6s} pp{n_prompt:<5d} ub{n_ub:<5d} "
              f"{recs[-1]['tokens_per_s']:9.1f} t/s  runs {[round(x) for x in tps]}", flush=True)
    return recs


_LOG_CB = None

if __name__ == "__main__":
    sys.exit(main())

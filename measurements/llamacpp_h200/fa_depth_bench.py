#!/usr/bin/env python3
"""Prompt and decode speed with flash attention off and on, at depth, through llama.cpp's C API (llama-bench's
``-p 512 -n N -d D -fa 0,1``, written out with the ctypes bindings of llama-cpp-python 0.3.36; token ids only).

Per model (loaded once, every layer on the GPU) and per flash-attention setting (off first, then on), one context of
n_ctx = the largest depth + 1,024, n_batch = n_ubatch = 512, f16 K/V, one sequence. Warm-up: one 512-token batch and
4 single tokens, then the cache is cleared. Then for each depth D in increasing order the cache is filled to D tokens
(512-token batches, untimed; the fill continues from the previous depth) and:

* ``pp512@dD``: --reps times, one 512-token batch at positions D..D+511 (``llama_decode`` + ``llama_synchronize``),
  timed, then ``llama_memory_seq_rm(mem, 0, D, -1)`` takes it out again; the value is the median.
* ``tgN@dD``: one untimed single token (the first at a new cache length can capture a CUDA graph), removed, then
  --reps times N single tokens at positions D..D+N-1, timed, then removed; the median.

One JSON line per (model, fa, depth, test), appended as soon as it is measured (a deadline or a crash keeps what was
done). The fields are those of measurements/speed/*.jsonl plus ``fa`` (0 / 1), ``depth`` and the runs.

  LD_PRELOAD=<system libstdc++> LLAMA_CPP_LIB_PATH=/tmp/lcb/bin python3 fa_depth_bench.py \\
      --llama-cpp-pkg .gpu18/llama_cpp --gguf-dir /tmp/gguf --out $OUT/h200_fa_depth.jsonl --deadline 400
  CPU logic test with the pip wheel: --cpu --models qwen3-4b --depths 0 64 --pp 32 --tg 4 --reps 1
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "llamacpp"))     # measure.py: import_llama

COMMIT = "0c1e57098"        # llama.cpp vendored by llama-cpp-python 0.3.36 (build 11312)
SOURCE = "own run, measurements/llamacpp_h200/fa_depth_bench.py"
DEFAULT_MODELS = ["llama-3.1-8b", "qwen3-30b-a3b", "gemma-2-9b", "gpt-oss-20b", "qwen3-8b"]


def nvidia_smi(query: str) -> str | None:
    import subprocess
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip() or None
    except Exception:
        return None


class Bench:
    """One context: timed prompt batches and single tokens at a depth."""

    def __init__(self, L, ctx, n_vocab: int, pp: int):
        self.L, self.ctx, self.n_vocab, self.pp = L, ctx, n_vocab, pp
        self.mem = L.llama_get_memory(ctx)
        self.prompt = (L.llama_token * pp)(*[(i * 7919 + 1) % n_vocab for i in range(pp)])
        self.one = (L.llama_token * 1)()

    def batch(self) -> float:
        t = time.perf_counter()
        rc = self.L.llama_decode(self.ctx, self.L.llama_batch_get_one(self.prompt, self.pp))
        self.L.llama_synchronize(self.ctx)
        if rc != 0:
            raise RuntimeError(f"llama_decode(batch) returned {rc}")
        return time.perf_counter() - t

    def singles(self, n: int) -> float:
        t = time.perf_counter()
        for i in range(n):
            self.one[0] = (i * 31 + 7) % self.n_vocab
            rc = self.L.llama_decode(self.ctx, self.L.llama_batch_get_one(self.one, 1))
            self.L.llama_synchronize(self.ctx)
            if rc != 0:
                raise RuntimeError(f"llama_decode(1) returned {rc} at token {i}")
        return time.perf_counter() - t

    def depth(self) -> int:
        return int(self.L.llama_memory_seq_pos_max(self.mem, 0)) + 1

    def cut(self, depth: int) -> None:
        self.L.llama_memory_seq_rm(self.mem, 0, depth, -1)
        assert self.depth() == depth, (self.depth(), depth)

    def fill(self, depth: int) -> None:
        while self.depth() + self.pp <= depth:
            self.batch()
        if self.depth() < depth:
            self.batch()
            self.cut(depth)


def run_model(L, a, mkey: str, model, info: dict, out: Path, t0: float) -> int:
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    written = 0
    for fa in a.fa:
        if a.deadline and time.time() - t0 > a.deadline:
            print(f"deadline: {mkey} fa={fa} not started", flush=True)
            break
        cp = L.llama_context_default_params()
        cp.n_ctx = max(a.depths) + 1024
        cp.n_batch = cp.n_ubatch = a.pp
        cp.n_seq_max = 1
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED if fa else L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        if a.threads:
            cp.n_threads = cp.n_threads_batch = a.threads
        ctx = L.llama_init_from_model(model, cp)
        if not ctx:
            print(f"CONTEXT FAILED {mkey} fa={fa}", flush=True)
            continue
        b = Bench(L, ctx, n_vocab, a.pp)
        try:
            L.llama_memory_clear(b.mem, True)
            warm = b.batch()
            b.singles(4)
            L.llama_memory_clear(b.mem, True)
            for d in sorted(a.depths):
                if a.deadline and time.time() - t0 > a.deadline:
                    print(f"deadline: {mkey} fa={fa} stops before depth {d}", flush=True)
                    break
                tf = time.perf_counter()
                b.fill(d)
                fill_s = time.perf_counter() - tf
                pp_s = []
                for _ in range(a.reps):
                    pp_s.append(b.batch())
                    b.cut(d)
                b.singles(1)
                b.cut(d)
                tg_s = []
                for _ in range(a.reps):
                    tg_s.append(b.singles(a.tg))
                    b.cut(d)
                recs = []
                for test, n, secs in ((f"pp{a.pp}", a.pp, pp_s), (f"tg{a.tg}", a.tg, tg_s)):
                    tps = [n / s for s in secs]
                    recs.append(dict(info, test=test + (f"@d{d}" if d else ""), depth=d, fa=fa, flash_attn=bool(fa),
                                     tokens_per_s=round(statistics.median(tps), 2),
                                     runs_tokens_per_s=[round(x, 2) for x in tps], reps=a.reps,
                                     n_ctx=L.llama_n_ctx(ctx), n_batch=a.pp, n_ubatch=a.pp,
                                     warmup_batch_s=round(warm, 4), fill_s=round(fill_s, 3),
                                     date=time.strftime("%Y-%m-%d", time.gmtime()),
                                     elapsed_s=round(time.time() - t0, 1)))
                with open(out, "a") as fo:
                    for r in recs:
                        fo.write(json.dumps(r) + "\n")
                written += len(recs)
                print(f"RESULT {mkey:16s} fa={fa} d={d:6d}  pp{a.pp} {recs[0]['tokens_per_s']:9.1f}  "
                      f"tg{a.tg} {recs[1]['tokens_per_s']:7.1f} t/s  (fill {fill_s:.1f}s, "
                      f"{time.time() - t0:.0f}s)", flush=True)
        except RuntimeError as e:
            print(f"DECODE FAILED {mkey} fa={fa}: {e}", flush=True)
        L.llama_free(ctx)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    ap.add_argument("--llama-cpp-pkg", default=None, help="bare llama_cpp package dir (sdist); default: installed")
    ap.add_argument("--cpu", action="store_true", help="n_gpu_layers 0 (logic test on a CPU build)")
    ap.add_argument("--depths", nargs="*", type=int, default=[0, 4096, 16384, 32768])
    ap.add_argument("--fa", nargs="*", type=int, default=[0, 1])
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--deadline", type=float, default=0, help="start nothing after this many seconds")
    ap.add_argument("--device", default="h200-sxm", help="runlocal catalog id of the GPU (record field)")
    ap.add_argument("--quiet-log", action="store_true", help="silence llama.cpp's log")
    a = ap.parse_args(argv)
    t0 = time.time()
    from measure import import_llama  # type: ignore[import-not-found]
    L = import_llama(a.llama_cpp_pkg)
    if a.quiet_log:
        global _LOG_CB
        _LOG_CB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)(lambda lv, t, u: None)
        L.llama_log_set(_LOG_CB, None)
    L.llama_backend_init()
    sysinfo = L.llama_print_system_info().decode()
    gpu = None if a.cpu else nvidia_smi("name,driver_version,memory.total,clocks.max.sm,power.limit")
    print(f"system_info: {sysinfo}\ngpu: {gpu}", flush=True)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    for mkey in a.models:
        if a.deadline and time.time() - t0 > a.deadline:
            print(f"deadline: skipping {mkey} and later", flush=True)
            break
        path = Path(a.gguf_dir) / f"{mkey}.q4_0.gguf"
        meta = json.loads(path.with_suffix(".json").read_text()) if path.with_suffix(".json").exists() else {}
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0 if a.cpu else 999
        tl = time.perf_counter()
        model = L.llama_model_load_from_file(str(path).encode(), mp)
        if not model:
            print(f"LOAD FAILED {mkey}", flush=True)
            continue
        size_b = int(L.llama_model_size(model))
        info = {"device": "cpu" if a.cpu else a.device, "n_devices": 1, "backend": "cpu" if a.cpu else "cuda",
                "runtime": "llama.cpp", "model": mkey, "quant": "Q4_0", "model_gib": round(size_b / 2**30, 3),
                "arch": meta.get("arch"), "weights_data": "zero", "type_k": "f16", "type_v": "f16",
                "n_gpu_layers": 0 if a.cpu else 999, "build": f"{COMMIT} (b11312)", "build_era": "current",
                "llama_cpp_commit": COMMIT, "source": SOURCE, "source_url": SOURCE, "gpu": gpu,
                "system_info": sysinfo, "model_load_s": round(time.perf_counter() - tl, 2),
                "note": "zero-weight GGUF of the real architecture (runlocal.evidence.zero_gguf): Q4_0 matrices, "
                        "Q6_K output" + (", MXFP4 experts + Q8_0" if meta.get("arch") == "gpt-oss" else "")
                        + "; every token routed to the same experts (zero router logits)"
                        * (meta.get("arch") in ("qwen3moe", "gpt-oss"))}
        n += run_model(L, a, mkey, model, info, out, t0)
        L.llama_model_free(model)
    if not a.cpu:
        print("gpu after:", nvidia_smi("name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw"), flush=True)
    print(f"done: {n} records in {time.time() - t0:.0f}s -> {out}", flush=True)
    return 0 if n else 1


_LOG_CB = None

if __name__ == "__main__":
    sys.exit(main())

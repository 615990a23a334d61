"""--cpu-moe / --n-cpu-moe / --no-host on a real CUDA llama.cpp: buffers, GPU memory and speed.

Issue 18 left one question about MoE experts kept in host memory on CUDA (README.md here): the CUDA0 compute
buffer that runlocal plans is 11 % above issue #23527's log, and that user's file mixes types the catalog does not
carry. This run answers it with files whose every tensor type is known: for each model, the zero-weight GGUF that
runlocal's catalog view of the quant describes (quant/gguf_mix.gguf_view, converter metadata from
evidence/converter_meta, the same writer as evidence/qwen35_runs), loaded by llama.cpp 0c1e57098 (llama-cpp-python
0.3.36's copy, built with CUDA, measurements/llamacpp/cuda_run.sh) with the experts overridden to the CPU buffer
type exactly as llama-server's --cpu-moe / --n-cpu-moe write them (common/common.h LLM_FFN_EXPS_REGEX,
"blk\\.N\\.ffn_(up|down|gate|gate_up)_(ch|)exps" per layer, common/fit.cpp), and with llama_model_params.no_host
for --no-host. Each context's buffers are read from llama.cpp's own log (measurements/llamacpp/measure.py's
parsers), GPU memory from NVML after the context is made, and for a few settings prefill (one n_ubatch batch) and
decode (single tokens) are timed.

Zero weights would route every token of a batch to the same top-k experts (a zero hidden state gives all-zero router
logits), which makes CPU-side MoE prefill unrealistically cheap; so the token embedding, every norm and every router
(ffn_gate_inp) carry random bytes drawn from 0x00..0x3B (finite, small floats: measurements/speed/make_random_gguf.py),
everything else stays a hole of zeros. Matmul cost does not depend on the values.

    OUT=/tmp/out bash measurements/llamacpp_cpumoe/cuda_run.sh        # on the GPU machine
    python3 measurements/llamacpp_cpumoe/cuda_cpumoe.py --write-only --gguf-dir /tmp/g   # here: the files only
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "llamacpp"))

from runlocal.evidence.cpumoe_runs import MODELS, write_models  # noqa: E402  (the files, shared with the test)

# mode: which layers' experts go to the CPU buffer type, and no_host
# mode: (the layers whose experts go to the CPU buffer type, no_host, use_mmap, n_gpu_layers: None = all);
# run 1 measured the first four, run 2 the rest (--no-mmap, pinned; a dense model half offloaded by -ngl)
MODES = {"cpumoe": ("all", False, True, None), "nohost": ("all", True, True, None), "gpu": (None, False, True, None),
         "ncpumoe_half": ("half", False, True, None), "cpumoe_nommap": ("all", False, False, None),
         "ngl_half": (None, False, True, "half"), "ngl_half_nommap": (None, False, False, "half")}
SPEED_MODES = ("cpumoe", "nohost", "gpu", "cpumoe_nommap", "ngl_half", "ngl_half_nommap")
# n_ctx : n_batch : n_ubatch : flash attention : n_seq_max : kv_unified : K type : V type
JOBS = ("150000:4096:4096:1:1:1:q8_0:q8_0",        # issue #23527's command (-c 150000 -b/-ub 4096 -fa on q8_0 --kv-unified)
        "4096:2048:512:1:1:0:f16:f16", "32768:2048:2048:1:1:0:q8_0:q8_0", "16384:2048:1024:0:1:0:f16:f16",
        "8192:4096:4096:1:1:0:f16:f16", "65536:2048:512:1:4:0:f16:f16")
SPEED_JOB = "4096:512:512:1:1:0:f16:f16"
EXPS = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"   # common/common.h LLM_FFN_EXPS_REGEX


# --- the child: one model in one mode, every job; llama.cpp logs to stderr between @@ markers ---------------------

def child(path: str, n_layer: int, mode: str, jobs: list[str], speed_job: str | None, threads: int,
          n_tg: int = 24) -> None:
    import ctypes

    from measure import Nvml, import_llama

    L = import_llama(os.environ["LLAMA_CPP_PKG"])
    log_cb = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)(
        lambda level, text, user: sys.stderr.write(text.decode(errors="replace")))
    L.llama_log_set(log_cb, None)     # llama.cpp's whole log to stderr (kept referenced while it runs)
    L.llama_backend_init()
    nv = Nvml()

    class Override(ctypes.Structure):
        _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]

    layers, no_host, mmap, ngl = MODES[mode]
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 999 if ngl is None else n_layer // 2
    mp.no_host = no_host
    mp.load_mode = -1 if mmap else 0     # LLAMA_LOAD_MODE_AUTO (mmap where the devices support it) / _NONE: --no-mmap
    keep = []
    if layers:
        cpu = ctypes.CDLL(os.path.join(os.environ["LLAMA_CPP_LIB_PATH"], "libggml-cpu.so"))
        cpu.ggml_backend_cpu_buffer_type.restype = ctypes.c_void_p
        buft = cpu.ggml_backend_cpu_buffer_type()
        n = n_layer if layers == "all" else n_layer // 2
        pats = [EXPS.encode()] if layers == "all" else [f"blk\\.{il}{EXPS}".encode() for il in range(n)]
        arr = (Override * (len(pats) + 1))(*[Override(p, buft) for p in pats], Override(None, None))
        keep.append(arr)
        mp.tensor_buft_overrides = ctypes.cast(arr, ctypes.c_void_p)
    print(f"@@nvml before_load {nv.used_mib()}", file=sys.stderr, flush=True)
    t = time.time()
    model = L.llama_model_load_from_file(path.encode(), mp)
    print(f"@@load {'ok' if model else 'failed'} {time.time() - t:.1f} nvml {nv.used_mib()}", file=sys.stderr, flush=True)
    if not model:
        return
    for job in jobs + ([speed_job + ":speed"] if speed_job else []):
        n_ctx, n_b, n_ub, fa, n_seq, uni, tk, tv, *flag = job.split(":")
        cp = L.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = int(n_ctx), int(n_b), int(n_ub), int(n_seq)
        cp.kv_unified, cp.flash_attn_type = uni == "1", int(fa)
        cp.type_k, cp.type_v = ({"f16": 1, "q8_0": 8}[x] for x in (tk, tv))
        cp.n_threads = cp.n_threads_batch = threads
        cp.swa_full = True          # the C API's default (src/llama-context.cpp llama_context_default_params), said here
        print("@@ctx " + job, file=sys.stderr, flush=True)
        ctx = L.llama_init_from_model(model, cp)
        print(f"@@nvml ctx {nv.used_mib()}", file=sys.stderr, flush=True)
        if ctx and flag:
            print("@@speed " + json.dumps(time_speed(L, ctx, int(n_ub), n_tg)), file=sys.stderr, flush=True)
        if ctx:
            L.llama_free(ctx)      # ~llama_context prints each compute buffer to 4 decimals
        print("@@end " + ("ok" if ctx else "failed"), file=sys.stderr, flush=True)
    L.llama_model_free(model)


def time_speed(L, ctx, n_pp: int, n_tg: int = 24, reps: int = 2) -> dict:
    import ctypes

    mem = L.llama_get_memory(ctx)
    toks = (ctypes.c_int32 * n_pp)(*[(17 * i + 11) % 1000 + 100 for i in range(n_pp)])
    one = (ctypes.c_int32 * 1)(101)

    def decode(arr, n):
        rc = L.llama_decode(ctx, L.llama_batch_get_one(arr, n))
        L.llama_synchronize(ctx)
        assert rc == 0, rc

    decode(toks, n_pp)                 # warm-up: CUDA graphs, cuBLAS, pages of the mapped experts
    for _ in range(3):
        decode(one, 1)
    pp, tg = [], []
    for _ in range(reps):
        L.llama_memory_clear(mem, True)
        t = time.perf_counter()
        decode(toks, n_pp)
        pp.append(n_pp / (time.perf_counter() - t))
        t = time.perf_counter()
        for _ in range(n_tg):
            decode(one, 1)
        tg.append(n_tg / (time.perf_counter() - t))
    return {"pp_tokens": n_pp, "tg_tokens": n_tg, "pp_tokens_per_s": [round(x, 1) for x in pp],
            "tg_tokens_per_s": [round(x, 2) for x in tg], "note": "tg after the pp batch (KV depth n_pp..n_pp+n_tg)"}


# --- the parent ------------------------------------------------------------------------------------------------------

def parse_run(text: str, base: dict) -> list[dict]:
    from measure import parse_context_log, parse_model_log

    head, *chunks = text.split("@@ctx ")
    model = parse_model_log(head.splitlines())
    load = re.search(r"@@load (\S+) ([\d.]+) nvml (\S+)", head)
    before = re.search(r"@@nvml before_load (\S+)", head)
    common = dict(base, model_buffers=model["model_buffers"], load_ok=bool(load and load.group(1) == "ok"),
                  load_s=float(load.group(2)) if load else None,
                  nvml_before_load_mib=before.group(1) if before else None, nvml_model_mib=load.group(3) if load else None,
                  overridden=len(re.findall(r"buffer type overridden to", head)),
                  override_lines=[ln.strip() for ln in head.splitlines() if "overridden to" in ln][:4])
    recs = []
    for chunk in chunks:
        job, _, body = chunk.partition("\n")
        n_ctx, n_b, n_ub, fa, n_seq, uni, tk, tv, *flag = job.split(":")
        lines = body.splitlines()
        parsed = parse_context_log(lines)
        exact = {m.group(1): float(m.group(2)) for m in
                 re.finditer(r"~llama_context: +(\S+) compute buffer size is +([\d.]+) MiB", body)}
        nvml = re.search(r"@@nvml ctx (\S+)", body)
        speed = re.search(r"@@speed (\{.*\})", body)
        recs.append(dict(common, job=job, n_ctx_requested=int(n_ctx), n_batch=int(n_b), n_ubatch=int(n_ub),
                         flash_attn={"1": "on", "0": "off"}[fa], n_seq_max=int(n_seq), kv_unified=uni == "1",
                         type_k=tk, type_v=tv, ok="@@end ok" in body, buffers=parsed["buffers"],
                         compute_exact_mib=exact, graphs=parsed["graphs"], kv_groups=parsed["kv_groups"],
                         rs_groups=parsed["rs_groups"], cparams=parsed["cparams"],
                         nvml_ctx_mib=nvml.group(1) if nvml else None,
                         speed=json.loads(speed.group(1)) if speed else None,
                         errors=[ln.strip() for ln in lines if re.search(r"error|fail|out of memory", ln, re.I)][:6]))
    return recs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf-dir", default="/tmp/gguf_cpumoe")
    ap.add_argument("--out", default="/tmp/out/cpumoe.jsonl")
    ap.add_argument("--log-dir", default="/tmp/cpumoe_logs", help="each child's whole log (the run script tars them)")
    ap.add_argument("--write-only", action="store_true")
    ap.add_argument("--modes", default="cpumoe,nohost,gpu,ncpumoe_half")
    ap.add_argument("--models", default=",".join(m for m, _ in MODELS))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--deadline", type=float, default=0, help="seconds: start no child after this")
    ap.add_argument("--child", nargs=4, metavar=("PATH", "N_LAYER", "MODE", "SPEED"))
    ap.add_argument("--jobs", default=",".join(JOBS))
    ap.add_argument("--speed-job", default=SPEED_JOB, help="the context timed (its n_ubatch is the prefill batch)")
    ap.add_argument("--child-timeout", type=float, default=300)
    ap.add_argument("--tg", type=int, default=24, help="single tokens timed after the prompt batch")
    a = ap.parse_args(argv)
    if a.child:
        child(a.child[0], int(a.child[1]), a.child[2], a.jobs.split(","), a.speed_job if a.child[3] == "1" else None,
              a.threads, a.tg)
        return 0
    t0 = time.time()
    files = write_models(Path(a.gguf_dir), a.models.split(","))
    if a.write_only:
        return 0
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    wanted = a.models.split(",")
    with out.open("a") as fo:
        for mode in a.modes.split(","):        # every model in the mode that matters most first
            for alias in wanted:
                if a.deadline and time.time() - t0 > a.deadline:
                    print(f"deadline: {alias} {mode} not run", flush=True)
                    continue
                f = files[alias]
                speed = mode in SPEED_MODES
                jobs = a.jobs.split(",") if mode != "gpu" else a.jobs.split(",")[:2]
                t = time.time()
                cmd = [sys.executable, __file__, "--child", f["path"], str(f["n_layer"]), mode, "1" if speed else "0",
                       "--jobs", ",".join(jobs), "--threads", str(a.threads), "--speed-job", a.speed_job,
                       "--tg", str(a.tg)]
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.child_timeout)
                    text, rc = r.stdout + r.stderr, r.returncode
                except subprocess.TimeoutExpired as e:
                    text = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
                    rc = -9
                base = {"model": alias, "quant": f["quant"], "arch": f["arch"], "n_layer": f["n_layer"], "mode": mode,
                        "cpu_moe_layers": {"all": f["n_layer"], "half": f["n_layer"] // 2, None: 0}[MODES[mode][0]],
                        "no_host": MODES[mode][1], "use_mmap": MODES[mode][2], "swa_full": True,
                        "n_gpu_layers": 999 if MODES[mode][3] is None else f["n_layer"] // 2, "threads": a.threads,
                        "returncode": rc,
                        "llama_cpp": "0c1e57098 (llama-cpp-python 0.3.36 vendored, b11312), CUDA, sm_90",
                        "weights": "zero; token_embd, norms and routers random bytes 0x00..0x3B"}
                recs = parse_run(text, base)
                for rec in recs:
                    fo.write(json.dumps(rec) + "\n")
                fo.flush()
                Path(a.log_dir).mkdir(parents=True, exist_ok=True)
                (Path(a.log_dir) / f"{alias}_{mode}.txt").write_text(text)
                for rec in recs:
                    b = {k: v for k, v in rec["buffers"].items() if "compute" in k or "KV" in k}
                    print(f"{alias} {mode} {rec['job']}: {'ok' if rec['ok'] else 'FAIL'} {b} "
                          f"nvml {rec['nvml_ctx_mib']} {rec['speed'] or ''}", flush=True)
                print(f"{alias} {mode}: rc {rc}, {len(recs)} contexts, {time.time() - t:.0f} s, "
                      f"model {recs[0]['model_buffers'] if recs else text[-1500:]}", flush=True)
    print(f"TOTAL {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

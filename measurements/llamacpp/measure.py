#!/usr/bin/env python3
"""Measure the buffers llama.cpp allocates, by loading zero-weight GGUFs and creating contexts.

For every model (a sparse zero-weight GGUF written by make_zero_gguf.py) the model is
loaded once per n_gpu_layers value (llama_model_load_from_file) and contexts are
created over a grid of settings (llama_init_from_model / llama_free).  llama.cpp's
own log lines are captured with llama_log_set and parsed, and one JSON line per
context is appended to the output file.  Nothing is decoded: the buffers are the
ones llama.cpp allocates when a context is created (KV / recurrent state, output,
and the compute buffers sized by the worst-case graph reservation).

Usage (CPU):
  python measure.py --backend cpu --gguf-dir ../../.gguf --out data/cpu.jsonl
Usage (CUDA, llama.cpp built by hand, the python package taken from the sdist):
  LLAMA_CPP_LIB_PATH=/build/bin python measure.py --backend cuda \
      --llama-cpp-pkg /src/llama_cpp --gguf-dir /tmp/gguf --out cuda.jsonl
  (with libraries whose toolchain linked libstdc++ statically, add
  LD_PRELOAD=/lib/x86_64-linux-gnu/libstdc++.so.6: see README.md, "The segfault")
CUDA records also carry NVML memory.used readings (nvml_used_*_mib), and the 'decode' grid
decodes one ubatch and one token after creating the context (record field 'decode').
"""
from __future__ import annotations

import argparse
import ctypes
import faulthandler
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MiB = 1024 * 1024
GGML_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "bf16": 30}
TYPE_BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
FA = {"auto": -1, "off": 0, "on": 1}
SWA_ARCHS = {"gemma2", "gemma3", "gpt-oss"}

# ---------------------------------------------------------------------------
# llama_cpp import (works with the installed wheel or with the bare package dir
# of the sdist, whose __init__ pulls optional dependencies we do not need)
# ---------------------------------------------------------------------------

def import_llama(pkg_dir: str | None):
    if pkg_dir:
        pkg_dir = str(Path(pkg_dir).resolve())
        mod = types.ModuleType("llama_cpp")
        mod.__path__ = [pkg_dir]
        mod.__file__ = os.path.join(pkg_dir, "__init__.py")
        sys.modules["llama_cpp"] = mod
    return importlib.import_module("llama_cpp.llama_cpp")


_KEEP_ALIVE: list = []


class Nvml:
    """Device memory in use (nvidia-smi's memory.used) through NVML, read with ctypes."""

    class _Mem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]

    def __init__(self, index: int = 0):
        self.lib = None
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return
            h = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(h)) != 0:
                return
            self.lib, self.h = lib, h
        except OSError:
            pass

    def used_mib(self) -> float | None:
        if self.lib is None:
            return None
        m = self._Mem()
        if self.lib.nvmlDeviceGetMemoryInfo(self.h, ctypes.byref(m)) != 0:
            return None
        return round(m.used / MiB, 1)


class LogCapture:
    """Collects llama.cpp / ggml log output (llama_log_set routes both)."""

    def __init__(self, L, echo: bool = False):
        self.L = L
        self.echo = echo
        self.buf = ""
        self.lines: list[str] = []
        self.level = 2

        @L.llama_log_callback
        def _cb(level, text, user_data):
            # ggml levels: 1 debug, 2 info, 3 warn, 4 error, 5 continuation of the previous
            if level != 5:
                self.level = level
            if self.level == 1:
                return
            try:
                s = text.decode("utf-8", "replace")
            except Exception:
                s = str(text)
            self.buf += s
            while "\n" in self.buf:
                line, self.buf = self.buf.split("\n", 1)
                self.lines.append(line)
                if self.echo:
                    sys.stderr.write(line + "\n")

        self._cb = _cb  # keep alive (also in _KEEP_ALIVE: the object must outlive every log call)
        _KEEP_ALIVE.append(_cb)
        L.llama_log_set(_cb, ctypes.c_void_p(0))

    def close(self):
        # back to llama.cpp's own stderr logger before Python drops the callback, so that
        # nothing logged at exit (backend / CUDA teardown) calls into a freed trampoline
        self.take()
        self.L.llama_log_set(ctypes.cast(None, self.L.llama_log_callback), ctypes.c_void_p(0))

    def take(self) -> list[str]:
        if self.buf:
            self.lines.append(self.buf)
            self.buf = ""
        out, self.lines = self.lines, []
        return out


class FdCapture:
    """Alternative to LogCapture that installs no Python callback: llama.cpp's default
    logger writes to stderr, so fd 2 is pointed at a file and read back (--capture fd)."""

    def __init__(self, echo: bool = False):
        import tempfile
        self.echo = echo
        self.orig = os.dup(2)
        self.tmp = tempfile.NamedTemporaryFile(prefix="llama_log_", suffix=".txt", delete=False)
        os.dup2(self.tmp.fileno(), 2)
        self.pos = 0

    def take(self) -> list[str]:
        with open(self.tmp.name, "rb") as f:
            f.seek(self.pos)
            data = f.read()
            self.pos += len(data)
        lines = data.decode("utf-8", "replace").splitlines()
        if self.echo:
            os.write(self.orig, data)
        return lines

    def close(self):
        pass


# ---------------------------------------------------------------------------
# log parsing
# ---------------------------------------------------------------------------
RE_MODEL_BUF = re.compile(r"^\w+: +(\S+) model buffer size = +([\d.]+) MiB")
RE_KV_BUF = re.compile(r"^llama_kv_cache: +(\S+) KV buffer size = +([\d.]+) MiB")
RE_RS_BUF = re.compile(r"^llama_memory_recurrent: +(\S+) RS buffer size = +([\d.]+) MiB")
RE_OUT_BUF = re.compile(r"^\w+: +(\S+) +output buffer size = +([\d.]+) MiB")
RE_COMPUTE = re.compile(r"^\w+: +(\S+) compute buffer size = +([\d.]+) MiB")
RE_KV_SIZE = re.compile(
    r"^llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
    r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB")
RE_RS_SIZE = re.compile(r"^llama_memory_recurrent: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+) seqs +(\d+) rs_seq\), (.*)$")
RE_PART = re.compile(r"(\w) \((\w+)\): +([\d.]+) MiB")
RE_CPARAM = re.compile(r"^llama_context: (n_seq_max|n_ctx|n_ctx_seq|n_batch|n_ubatch|flash_attn|kv_unified|n_outputs_max|causal_attn) += (\S+)")
RE_GRAPH = re.compile(r"^\w+: graph(.*?): nodes = (\d+), splits = (\d+)")
INTEREST = re.compile(
    r"buffer size|KV cache|n_ctx|n_ubatch|n_batch|n_seq|flash|Flash|seqs|cells|error|fail|"
    r"warn|graph|pipeline|SWA|swa|RS |offload|rounding|padding|attn_rot|enabled|disabled|"
    r"kv_unified|quantized|does not|not supported", re.I)


def parse_context_log(lines: list[str]) -> dict:
    buffers: dict[str, float] = {}
    kv_groups: list[dict] = []
    rs_groups: list[dict] = []
    cparams: dict[str, str] = {}
    graphs: list[dict] = []
    group = None

    def put(key, mib):
        # several caches can print the same device; keep them apart
        k, n = key, 2
        while k in buffers:
            k = f"{key} #{n}"
            n += 1
        buffers[k] = float(mib)

    for ln in lines:
        if "creating non-SWA KV cache" in ln:
            group = "non-SWA"
        elif "creating     SWA KV cache" in ln or "creating SWA KV cache" in ln:
            group = "SWA"
        elif "creating indexer KV cache" in ln:
            group = "indexer"
        if m := RE_KV_BUF.match(ln):
            put(f"{m[1]} KV" + (f" ({group})" if group else ""), m[2])
        elif m := RE_RS_BUF.match(ln):
            put(f"{m[1]} RS", m[2])
        elif m := RE_OUT_BUF.match(ln):
            put(f"{m[1]} output", m[2])
        elif m := RE_COMPUTE.match(ln):
            put(f"{m[1]} compute", m[2])
        elif m := RE_KV_SIZE.match(ln):
            kv_groups.append({"group": group or "kv", "mib": float(m[1]), "cells": int(m[2]),
                              "layers": int(m[3]), "seqs": int(m[4]), "streams": int(m[5]),
                              "type_k": m[6], "k_mib": float(m[7]), "type_v": m[8], "v_mib": float(m[9])})
        elif m := RE_RS_SIZE.match(ln):
            d = {"mib": float(m[1]), "cells": int(m[2]), "layers": int(m[3]), "seqs": int(m[4]),
                 "rs_seq": int(m[5])}
            for p in RE_PART.finditer(m[6]):
                d[f"{p[1].lower()}_type"] = p[2]
                d[f"{p[1].lower()}_mib"] = float(p[3])
            rs_groups.append(d)
        elif m := RE_CPARAM.match(ln):
            cparams[m[1]] = m[2]
        elif m := RE_GRAPH.match(ln):
            graphs.append({"graph": m[1].strip(), "nodes": int(m[2]), "splits": int(m[3])})
    fa_eff = None
    if cparams.get("flash_attn") in ("enabled", "disabled"):
        fa_eff = cparams["flash_attn"] == "enabled"
    for ln in lines:  # flash_attn = auto is resolved after the first reservation
        if "Flash Attention enabled" in ln:
            fa_eff = True
        elif "Flash Attention not supported" in ln:
            fa_eff = False
    return {"buffers": buffers, "kv_groups": kv_groups, "rs_groups": rs_groups,
            "cparams": cparams, "graphs": graphs, "flash_attn_effective": fa_eff}


def parse_model_log(lines: list[str]) -> dict:
    bufs: dict[str, float] = {}
    offload = []
    for ln in lines:
        if m := RE_MODEL_BUF.match(ln):
            bufs[f"{m[1]} model"] = bufs.get(f"{m[1]} model", 0.0) + float(m[2])
        if "offload" in ln and "load_tensors" in ln:
            offload.append(ln.strip())
    return {"model_buffers": bufs, "offload_lines": offload}


# ---------------------------------------------------------------------------
# memory estimate (to skip CPU contexts that would not fit in this machine's RAM)
# ---------------------------------------------------------------------------

def kv_estimate_bytes(cfg: dict, n_ctx: int, n_seq: int, n_ubatch: int, tk: str, tv: str) -> float:
    L = cfg["num_hidden_layers"]
    arch = cfg["arch"]
    n_ctx = -(-n_ctx // 256) * 256
    if arch == "deepseek2":
        per = (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * TYPE_BYTES[tk] + cfg["kv_lora_rank"] * TYPE_BYTES[tv]
        return L * n_ctx * per
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    per = cfg["num_key_value_heads"] * hd * (TYPE_BYTES[tk] + TYPE_BYTES[tv])
    if arch == "granitehybrid":
        L = sum(1 for t in cfg["layer_types"] if t == "attention")
        return L * n_ctx * per
    swa = cfg.get("sliding_window") if arch in ("gemma2", "gemma3", "gpt-oss") else None
    if not swa:
        return L * n_ctx * per
    pattern = cfg.get("sliding_window_pattern", 2)
    n_glob = L // pattern
    swa_cells = min(n_ctx, -(-(swa * n_seq + n_ubatch) // 256) * 256)
    return n_glob * n_ctx * per + (L - n_glob) * swa_cells * per


def mem_available_bytes() -> int:
    try:
        for ln in open("/proc/meminfo"):
            if ln.startswith("MemAvailable:"):
                return int(ln.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 40


# ---------------------------------------------------------------------------
# grid
# ---------------------------------------------------------------------------

def context_grid(kind: str) -> list[dict]:
    """kind: 'full' (all settings) or 'partial' (a smaller set, for partial offload)."""
    g: list[dict] = []
    def add(n_ctx, tk, tv, fa, n_seq=1, n_ubatch=512, n_batch=2048, swa_full=False, kv_unified=False,
            decode=False):
        d = dict(n_ctx=n_ctx, type_k=tk, type_v=tv, flash_attn=fa, n_seq_max=n_seq,
                 n_ubatch=n_ubatch, n_batch=n_batch, swa_full=swa_full, kv_unified=kv_unified)
        if decode:  # only in the 'decode' grid, so the other grids' keys stay as they were
            d["decode"] = True
        g.append(d)
    if kind == "full":
        add(512, "f16", "f16", "on")
        add(512, "f16", "f16", "off")
        for n_ctx in (4096, 16384, 65536):
            for tk in ("f16", "q8_0", "q4_0"):
                for fa in ("on", "off"):
                    add(n_ctx, tk, tk, fa, 1, 512)
                    add(n_ctx, tk, tk, fa, 1, 1024)
                    add(n_ctx, tk, tk, fa, 4, 512)
            add(n_ctx, "f16", "f16", "auto")
        add(16384, "q8_0", "f16", "off")   # quantized K alone needs no flash attention
        add(16384, "q8_0", "f16", "on")
        add(16384, "f16", "f16", "on", 4, kv_unified=True)
        # swa_full: llama_context_default_params() says true, llama.cpp's tools
        # (common_params: llama-server, llama-cli) say false; false is used everywhere else
        add(4096, "f16", "f16", "on", swa_full=True)
        add(65536, "f16", "f16", "on", swa_full=True)
    elif kind == "core":
        # the most informative subset, measured first where time is short
        for n_ctx in (4096, 65536):
            add(n_ctx, "f16", "f16", "on", 1, 512)
            add(n_ctx, "f16", "f16", "off", 1, 512)
            add(n_ctx, "q8_0", "q8_0", "on", 1, 512)
            add(n_ctx, "f16", "f16", "on", 1, 1024)
            add(n_ctx, "f16", "f16", "on", 4, 512)
            add(n_ctx, "f16", "f16", "auto")
        add(65536, "f16", "f16", "on", swa_full=True)
    elif kind == "rules":
        # targeted probes of llama.cpp's sizing rules (small contexts, cheap)
        for n_ctx in (1000, 5000, 8191, 10000):          # n_ctx is padded to 256
            add(n_ctx, "f16", "f16", "on")
        add(10000, "f16", "f16", "on", 3)                # n_ctx_seq = pad(n_ctx/n_seq, 256)
        add(10000, "f16", "f16", "on", 3, kv_unified=True)
        for n_seq in (2, 8):                             # output / SWA / RS scaling with n_seq
            add(16384, "f16", "f16", "on", n_seq)
            add(16384, "f16", "f16", "off", n_seq)
        add(16384, "f16", "f16", "on", 4, kv_unified=True)
        add(16384, "f16", "f16", "off", 4, kv_unified=True)
        for ub in (128, 256, 2048):                      # compute buffer vs n_ubatch
            add(4096, "f16", "f16", "on", 1, ub)
            add(4096, "f16", "f16", "off", 1, ub)
        add(4096, "f16", "f16", "on", 1, 512, n_batch=512)
        add(4096, "f16", "f16", "on", 1, 1024, n_batch=512)  # n_ubatch is clamped to n_batch
        add(4096, "f16", "f16", "off", 1, 4096, n_batch=4096)
        add(16384, "f16", "f16", "off", 1, 512)
        add(16384, "f16", "f16", "off", 1, 2048)
        add(4096, "q8_0", "f16", "off")
        add(4096, "q4_0", "f16", "off")
        add(4096, "f32", "f32", "off")
        add(4096, "bf16", "bf16", "on")
        add(16384, "f16", "f16", "on", 4, swa_full=True)
    elif kind == "smoke":
        add(4096, "f16", "f16", "on")
        add(4096, "f16", "f16", "off")
        add(4096, "f16", "f16", "auto")
        add(4096, "q8_0", "q8_0", "off")
        add(4096, "f16", "f16", "on", swa_full=True)
    elif kind == "decode":
        # after creating the context, decode one n_ubatch-token batch and then one token
        # (zero weights, token ids only) and read the device memory in use (NVML) after each
        add(4096, "f16", "f16", "on", decode=True)
        add(4096, "f16", "f16", "off", decode=True)
        add(4096, "q8_0", "q8_0", "on", decode=True)
        add(4096, "f16", "f16", "on", 1, 2048, decode=True)
        add(32768, "f16", "f16", "on", decode=True)
        add(32768, "f16", "f16", "off", decode=True)
    elif kind == "archs":
        # the CUDA run of the architectures cuda.jsonl lacks (measurements/llamacpp_h200): shrunk catalog models
        for n_ctx in (4096, 32768):
            for tk in ("f16", "q8_0"):
                for fa in ("on", "off"):
                    for n_seq in (1, 4):
                        add(n_ctx, tk, tk, fa, n_seq, 512)
    elif kind == "archdecode":
        add(4096, "f16", "f16", "on", decode=True)
    elif kind == "partial":
        for n_ctx in (4096, 65536):
            for tk in ("f16", "q8_0"):
                for fa in ("on", "off"):
                    add(n_ctx, tk, tk, fa, 1, 512)
            add(n_ctx, "f16", "f16", "on", 4, 512)
            add(n_ctx, "f16", "f16", "on", 1, 1024)
            add(n_ctx, "f16", "f16", "auto")
        add(65536, "f16", "f16", "on", swa_full=True)
    else:
        raise ValueError(kind)
    return g


# ---------------------------------------------------------------------------

def version_info(L, lib_path: str | None) -> dict:
    info = {"llama_cpp_python": None, "vendored_llama_cpp_commit": "0c1e57098",
            "system_info": None}
    try:
        from importlib.metadata import version
        info["llama_cpp_python"] = version("llama_cpp_python")
    except Exception:
        pass
    if info["llama_cpp_python"] is None:
        try:
            pkg = Path(sys.modules["llama_cpp"].__path__[0])
            m = re.search(r'__version__ = "([^"]+)"', (pkg / "__init__.py").read_text())
            info["llama_cpp_python"] = m[1] if m else None
        except Exception:
            pass
    try:
        info["system_info"] = L.llama_print_system_info().decode()
    except Exception:
        pass
    return info


def gpu_name() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        return out.stdout.strip() or None
    except Exception:
        return None


def run_decode(L, model, ctx, n: int, nv_used) -> dict:
    """Decode n tokens (one ubatch) then 1 token; device memory in use after each."""
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    res: dict = {"n_tokens": n, "nvml_used_before_mib": nv_used()}
    toks = (L.llama_token * n)(*[(i * 7919 + 1) % n_vocab for i in range(n)])
    t = time.time()
    res["rc_batch"] = int(L.llama_decode(ctx, L.llama_batch_get_one(toks, n)))
    L.llama_synchronize(ctx)
    res["batch_s"] = round(time.time() - t, 3)
    res["nvml_used_after_batch_mib"] = nv_used()
    one = (L.llama_token * 1)(1)
    t = time.time()
    res["rc_one"] = int(L.llama_decode(ctx, L.llama_batch_get_one(one, 1)))
    L.llama_synchronize(ctx)
    res["one_s"] = round(time.time() - t, 3)
    res["nvml_used_after_one_mib"] = nv_used()
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=("cpu", "cuda"), required=True)
    ap.add_argument("--gguf-dir", required=True)
    ap.add_argument("--weights", default="q4_0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--llama-cpp-pkg", default=None, help="bare llama_cpp package dir (sdist)")
    ap.add_argument("--ngl", default=None, help="comma list: all,half,0 (cpu default 0, cuda all,half)")
    ap.add_argument("--plan", default=None,
                    help="comma list of ngl:grid passes, e.g. all:core,half:partial,all:full "
                         "(default cpu 0:<grid>, cuda all:core,half:partial,all:full)")
    ap.add_argument("--grid", default="full")
    ap.add_argument("--partial-grid", default="partial")
    ap.add_argument("--deadline", type=float, default=0, help="stop after this many seconds (0 = none)")
    ap.add_argument("--mem-cap-gib", type=float, default=10.0, help="cpu: skip contexts whose KV estimate exceeds this")
    ap.add_argument("--extra-bufts", default="auto", choices=("auto", "on", "off"),
                    help="use_extra_bufts (CPU weight repacking); auto: on, but off on cpu for models > 6 GiB")
    ap.add_argument("--resume", action="store_true", help="skip settings already in --out")
    ap.add_argument("--echo", action="store_true")
    ap.add_argument("--capture", default="callback", choices=("callback", "fd"),
                    help="how llama.cpp's log is captured: llama_log_set callback or fd 2 redirection")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--models-meta", default=None,
                    help="JSON file: model key -> {arch, num_hidden_layers, repo} for GGUFs that are not "
                         "runlocal.evidence.zero_gguf's MODELS (measurements/llamacpp_h200/arch_ggufs.py)")
    a = ap.parse_args(argv)

    t0 = time.time()
    faulthandler.enable()
    from runlocal.evidence.zero_gguf import MODELS
    if a.models_meta:
        MODELS = {**MODELS, **json.loads(Path(a.models_meta).read_text())}
    nv = Nvml() if a.backend == "cuda" else None
    nv_used = (lambda: nv.used_mib()) if nv else (lambda: None)
    nvml_start = nv_used()
    L = import_llama(a.llama_cpp_pkg)
    cap = LogCapture(L, echo=a.echo) if a.capture == "callback" else FdCapture(echo=a.echo)
    L.llama_backend_init()
    ver = version_info(L, os.environ.get("LLAMA_CPP_LIB_PATH"))
    gname = gpu_name() if a.backend == "cuda" else None
    cpu_model = None
    try:
        cpu_model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except Exception:
        pass
    cap.take()
    nvml_init = nv_used()

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if a.resume and out.exists():
        for ln in out.read_text().splitlines():
            try:
                r = json.loads(ln)
                done.add(r["key"])
            except Exception:
                pass
    fo = open(out, "a")

    models = a.models or list(MODELS)
    if a.plan:
        passes = [tuple(p.split(":")) for p in a.plan.split(",")]
    elif a.ngl:
        passes = [(n, a.grid if n in ("all", "0") else a.partial_grid) for n in a.ngl.split(",")]
    elif a.backend == "cpu":
        passes = [("0", a.grid)]
    else:
        passes = [("all", "core"), ("half", a.partial_grid), ("all", a.grid)]
    # every model for one pass, then the next pass (settings already measured are skipped)
    plan = [(ngl, g, m) for ngl, g in passes for m in models]
    n_written = 0
    for ngl_s, grid_name, mkey in plan:
        cfg = MODELS[mkey]
        n_layer = cfg["num_hidden_layers"]
        ngl = {"all": -1, "half": n_layer // 2}.get(ngl_s, None)
        if ngl is None:
            ngl = int(ngl_s)
        grid = context_grid(grid_name)
        path = Path(a.gguf_dir) / f"{mkey}.{a.weights}.gguf"
        meta_p = path.with_suffix(".json")
        meta = json.loads(meta_p.read_text()) if meta_p.exists() else {}
        keys = [f"{a.backend}|{mkey}|{a.weights}|ngl={ngl_s}|" + "|".join(f"{k}={v}" for k, v in sorted(s.items()))
                for s in grid]
        if all(k in done for k in keys):
            continue
        if a.deadline and time.time() - t0 > a.deadline:
            print(f"deadline reached before {mkey} ngl={ngl_s}", flush=True)
            break
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = ngl if a.backend == "cuda" else 0
        if a.extra_bufts == "auto":
            ueb = not (a.backend == "cpu" and meta.get("file_bytes", 0) > 6 * 2**30)
        else:
            ueb = a.extra_bufts == "on"
        mp.use_extra_bufts = ueb
        nvml_before_load = nv_used()
        tl = time.time()
        model = L.llama_model_load_from_file(str(path).encode(), mp)
        mlines = cap.take()
        load_s = time.time() - tl
        nvml_model = nv_used()
        base = {
            "arch": cfg["arch"], "model": mkey, "model_repo": cfg["repo"], "weight_type": a.weights,
            "weight_tensor_types": meta.get("tensor_types"), "model_file_bytes": meta.get("file_bytes"),
            "n_layer": n_layer, "backend": a.backend, "gpu_name": gname, "cpu_model": cpu_model,
            "llama_cpp_version": ver, "n_gpu_layers": ngl if a.backend == "cuda" else 0,
            "n_gpu_layers_setting": ngl_s if a.backend == "cuda" else "0", "use_extra_bufts": ueb,
            "use_mmap": True,
            # NVML memory.used (MiB, whole device): at process start, after llama_backend_init +
            # llama_print_system_info, before / after this model load
            "nvml_used_start_mib": nvml_start, "nvml_used_init_mib": nvml_init,
            "nvml_used_before_load_mib": nvml_before_load, "nvml_used_model_mib": nvml_model,
        }
        if not model:
            rec = dict(base, ok=False, stage="model_load", error="llama_model_load_from_file returned NULL",
                       raw_log=[l for l in mlines if INTEREST.search(l)][-40:], key=f"{a.backend}|{mkey}|load|ngl={ngl_s}")
            fo.write(json.dumps(rec) + "\n"); fo.flush()
            print(f"LOAD FAILED {mkey}: " + " / ".join(mlines[-5:]), flush=True)
            continue
        mparsed = parse_model_log(mlines)
        print(f"loaded {mkey} ngl={ngl_s} in {load_s:.1f}s: {mparsed['model_buffers']}", flush=True)
        for s, key in zip(grid, keys):
            if key in done:
                continue
            if s["swa_full"] and cfg["arch"] not in SWA_ARCHS:
                continue
            if a.deadline and time.time() - t0 > a.deadline:
                break
            rec = dict(base, key=key, n_ctx_requested=s["n_ctx"], n_batch=s["n_batch"],
                       n_ubatch=s["n_ubatch"], n_seq_max=s["n_seq_max"], flash_attn=s["flash_attn"],
                       type_k=s["type_k"], type_v=s["type_v"], kv_unified=s["kv_unified"], swa_full=s["swa_full"],
                       model_buffers=mparsed["model_buffers"], model_offload_log=mparsed["offload_lines"],
                       model_load_s=round(load_s, 2))
            if a.backend == "cpu" and "hidden_size" in cfg:
                est = kv_estimate_bytes(cfg, s["n_ctx"], s["n_seq_max"], s["n_ubatch"], s["type_k"], s["type_v"])
                limit = min(a.mem_cap_gib * 2**30, mem_available_bytes() - 3 * 2**30)
                if est > limit:
                    rec.update(ok=False, stage="skipped", error=f"KV estimate {est/2**30:.2f} GiB exceeds this "
                               f"machine's cap {limit/2**30:.2f} GiB (not attempted)")
                    fo.write(json.dumps(rec) + "\n"); fo.flush()
                    continue
            cp = L.llama_context_default_params()
            cp.n_ctx = s["n_ctx"]
            cp.n_batch = s["n_batch"]
            cp.n_ubatch = s["n_ubatch"]
            cp.n_seq_max = s["n_seq_max"]
            cp.type_k = GGML_TYPE[s["type_k"]]
            cp.type_v = GGML_TYPE[s["type_v"]]
            cp.flash_attn_type = FA[s["flash_attn"]]
            cp.swa_full = s["swa_full"]
            cp.kv_unified = s["kv_unified"]
            if a.threads:
                cp.n_threads = cp.n_threads_batch = a.threads
            rec["kv_unified"] = bool(cp.kv_unified)
            rec["swa_full"] = bool(cp.swa_full)
            rec["offload_kqv"] = bool(cp.offload_kqv)
            tc = time.time()
            ctx = L.llama_init_from_model(model, cp)
            lines = cap.take()
            rec["ctx_create_s"] = round(time.time() - tc, 3)
            parsed = parse_context_log(lines)
            cpar = parsed.pop("cparams")
            rec["n_ctx"] = int(cpar["n_ctx"]) if "n_ctx" in cpar else None
            rec["n_ctx_seq"] = int(cpar["n_ctx_seq"]) if "n_ctx_seq" in cpar else None
            rec["n_batch_logged"] = int(cpar["n_batch"]) if "n_batch" in cpar else None
            rec["n_ubatch_logged"] = int(cpar["n_ubatch"]) if "n_ubatch" in cpar else None
            rec["flash_attn_logged"] = cpar.get("flash_attn")
            rec["nvml_used_ctx_mib"] = nv_used()
            if ctx:
                rec["n_ctx_api"] = L.llama_n_ctx(ctx)
                rec["ok"] = True
                if s.get("decode"):
                    rec["decode"] = run_decode(L, model, ctx, min(s["n_ubatch"], s["n_batch"], rec["n_ctx_api"]), nv_used)
                    rec["decode"]["log"] = [l.rstrip() for l in cap.take() if INTEREST.search(l)][-20:]
            else:
                rec["ok"] = False
                rec["stage"] = "context"
                errs = [l for l in lines if re.search(r"error|fail|requires|not support", l, re.I)]
                rec["error"] = " | ".join(e.strip() for e in errs[-3:]) or "llama_init_from_model returned NULL"
            rec.update(parsed)
            rec["raw_log"] = [l.rstrip() for l in lines if INTEREST.search(l)
                              and not l.startswith(("llama_graph_n_input_tensors", "graph_reserve:"))]
            if ctx:
                L.llama_free(ctx)
                cap.take()
                rec["nvml_used_after_free_mib"] = nv_used()
            fo.write(json.dumps(rec) + "\n"); fo.flush()
            n_written += 1
            b = rec.get("buffers", {})
            print(f"{mkey:18s} ngl={ngl_s:4s} ctx={s['n_ctx']:6d} {s['type_k']:>4s}/{s['type_v']:<4s} fa={s['flash_attn']:4s} "
                  f"seq={s['n_seq_max']} ub={s['n_ubatch']:4d} -> {'ok ' if rec['ok'] else 'ERR'} "
                  f"{rec['ctx_create_s']:6.2f}s {json.dumps(b) if rec['ok'] else rec.get('error')}", flush=True)
        L.llama_model_free(model)
        cap.take()
    fo.close()
    cap.close()
    print(f"wrote {n_written} records to {out} in {time.time()-t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Check routing_counts.py against llama.cpp itself: run the bench's prompt through a GGUF on the CPU (the pip
llama-cpp-python wheel) and read, with the scheduler's eval callback, every layer's ``ffn_moe_topk-N`` tensor (the
experts llama.cpp's build_moe_ffn selected per token, llama-graph.cpp); compare with the experts routing_counts.py
computes in numpy from the file's bytes.

On the CPU it is meant for tiny GGUFs of the real architectures (the same graph as the full models, small widths) — a
CPU run of the full files would need their weights in RAM; with --gpu (every layer on the GPU, the libraries of
LLAMA_CPP_LIB_PATH) it reads the full files' routing as CUDA computes it, each tensor copied back with
ggml_backend_tensor_get. Prints, per file, the share of tokens whose expert set agrees, per layer.

Usage: PYTHONPATH=src python measurements/speed/routing_llamacpp_check.py FILE.gguf ... [--prompt 512 --ubatch 128]
       [--gpu --llama-cpp-pkg .llamacpp-src/llama_cpp]
"""
from __future__ import annotations

import argparse
import ctypes
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


class GgmlTensor(ctypes.Structure):
    """The head of ggml.h's struct ggml_tensor (GGML_MAX_DIMS 4, GGML_MAX_OP_PARAMS 64, GGML_MAX_SRC 10,
    GGML_MAX_NAME 64), as far as the name."""
    _fields_ = [("type", ctypes.c_int), ("buffer", ctypes.c_void_p), ("ne", ctypes.c_int64 * 4),
                ("nb", ctypes.c_size_t * 4), ("op", ctypes.c_int), ("op_params", ctypes.c_int32 * 16),
                ("flags", ctypes.c_int32), ("src", ctypes.c_void_p * 10), ("view_src", ctypes.c_void_p),
                ("view_offs", ctypes.c_size_t), ("data", ctypes.c_void_p), ("name", ctypes.c_char * 64)]


def _ggml_base(L) -> ctypes.CDLL:
    """libggml-base of the loaded llama.cpp (LLAMA_CPP_LIB_PATH, else the package's lib/), for ggml_backend_tensor_get."""
    import os
    lib_dir = Path(os.environ.get("LLAMA_CPP_LIB_PATH") or Path(L.__file__).parent / "lib")
    base = ctypes.CDLL(str(lib_dir / "libggml-base.so"))
    base.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    base.ggml_backend_tensor_get.restype = None
    return base


def llamacpp_topk(path: str, prompt: int, ubatch: int, n_used: int, gpu: bool = False,
                  pkg: str | None = None) -> dict[int, np.ndarray]:
    """{layer: (prompt, n_used) experts} as llama.cpp selected them (all micro-batches of the prompt), on the CPU or,
    with ``gpu``, with every layer on the GPU."""
    if pkg:
        sys.path.insert(0, str(HERE.parent / "llamacpp"))
        from measure import import_llama  # type: ignore[import-not-found]  # measurements/llamacpp/measure.py: the sdist package
        L = import_llama(pkg)
    else:
        import llama_cpp as L
    base = _ggml_base(L)
    seen: dict[int, list[np.ndarray]] = {}

    def on_tensor(t_ptr, ask, _ud):
        t = ctypes.cast(t_ptr, ctypes.POINTER(GgmlTensor)).contents
        m = re.fullmatch(r"ffn_moe_topk-(\d+)", t.name.decode(errors="replace"))
        if ask:
            return bool(m)
        if m and t.data and t.ne[1] > 0:
            k, n = t.ne[0], t.ne[1]
            rows = np.empty((n, k), dtype=np.int32)
            for j in range(n):       # a view (the top k of argsort's rows): one row at a time, from any backend
                base.ggml_backend_tensor_get(t_ptr, rows[j].ctypes.data, j * t.nb[1], k * 4)
            seen.setdefault(int(m.group(1)), []).append(rows)
        return True

    cb = L.ggml_backend_sched_eval_callback(on_tensor)
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 999 if gpu else 0
    model = L.llama_model_load_from_file(path.encode(), mp)
    if not model:
        raise SystemExit(f"{path}: llama.cpp could not load it")
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = max(4096, prompt), prompt, ubatch, 1
    cp.cb_eval, cp.cb_eval_user_data = cb, None
    cp.n_threads = cp.n_threads_batch = 2
    ctx = L.llama_init_from_model(model, cp)
    tokens = (L.llama_token * prompt)(*[(i * 7919 + 1) % n_vocab for i in range(prompt)])
    rc = L.llama_decode(ctx, L.llama_batch_get_one(tokens, prompt))
    L.llama_free(ctx)
    L.llama_model_free(model)
    if rc != 0:
        raise SystemExit(f"{path}: llama_decode returned {rc}")
    return {il: np.concatenate(parts)[:, :n_used] for il, parts in seen.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf", nargs="+")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--ubatch", type=int, default=128)
    ap.add_argument("--gpu", action="store_true", help="every layer on the GPU (LLAMA_CPP_LIB_PATH's libraries)")
    ap.add_argument("--llama-cpp-pkg", default=None, help="bare llama_cpp package dir (sdist); default: installed")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from routing_counts import router_topk  # type: ignore[import-not-found]
    worst = 1.0
    for path in a.gguf:
        ours = router_topk(path, a.prompt)
        theirs = llamacpp_topk(path, a.prompt, a.ubatch, ours["n_used"], a.gpu, a.llama_cpp_pkg)
        shares = []
        for il, top in ours["topk"].items():
            got = theirs.get(il)
            if got is None:
                print(f"{Path(path).name}: layer {il}: no ffn_moe_topk from llama.cpp")
                shares.append(0.0)
                continue
            if got.shape[0] < top.shape[0]:
                # the last layer keeps only the rows of the tokens whose logits are wanted (the graph's inp_out_ids:
                # the prompt's last token here), so its experts run for that token alone
                print(f"{Path(path).name}: layer {il}: llama.cpp routed {got.shape[0]} token(s) (the output rows)")
                top = top[-got.shape[0]:]
            same = np.mean([set(x) == set(y) for x, y in zip(top.tolist(), got.tolist())])
            shares.append(float(same))
        worst = min(worst, min(shares))
        print(f"{Path(path).name}: {len(shares)} MoE layers, {a.prompt} tokens at ubatch {a.ubatch}: expert sets equal "
              f"for {min(shares):.2%}-{max(shares):.2%} of tokens per layer (numpy from the file vs llama.cpp"
              f"{' on the GPU' if a.gpu else ''})", flush=True)
    return 0 if worst > 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())

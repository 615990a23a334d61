"""Load GGUF files with the real llama.cpp (llama-cpp-python) in a child process and read what its log says about
the memory it set up: the KV cache(s) (cells, layers, bytes; full and sliding-window), ``n_swa`` and each layer's
``is_swa``, and the recurrent state (src/llama-memory-recurrent.cpp: "R (f32): … MiB, S (f32): … MiB").

Many files load in one child (one interpreter start for all); a file llama.cpp refuses gets its error text, and
if the child dies (a GGML_ASSERT abort) the files after it are loaded again one by one. Standard library only;
llama-cpp-python is imported in the child.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from runlocal.units import MiB

_MARK = "@@runlocal-load "

# The C API through llama-cpp-python's bindings, so n_seq_max and kv_unified can be set (llama_cpp.Llama has no
# argument for them). swa_full=False is llama-server's default (common/common.h); the C API's own keeps full caches.
_CHILD = """
import sys, llama_cpp
from llama_cpp import _logger
_logger.set_verbose(True)
swa_full = sys.argv[1] == "1"
for job in sys.argv[2:]:
    n_ctx, n_seq, unified, path = job.split(":", 3)
    print("@@runlocal-load " + path, file=sys.stderr, flush=True)
    mp = llama_cpp.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = llama_cpp.llama_model_load_from_file(path.encode(), mp)
    if not model:
        print("@@runlocal-load failed model", file=sys.stderr, flush=True)
        continue
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx, cp.n_seq_max, cp.kv_unified, cp.swa_full = int(n_ctx), int(n_seq), unified == "1", swa_full
    cp.n_batch = cp.n_ubatch = 512
    cp.n_threads = cp.n_threads_batch = 1
    cp.flash_attn_type = 0
    ctx = llama_cpp.llama_init_from_model(model, cp)
    print("@@runlocal-load " + ("ok" if ctx else "failed context"), file=sys.stderr, flush=True)
    if ctx:
        llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
"""


@dataclass(frozen=True)
class LoadLog:
    """What llama.cpp logged for one file. ``caches``: "full"/"swa" → (cells, layers, bytes); ``recurrent``:
    (cells, layers, R bytes, S bytes) or None; ``error``: why it did not load (None when it did)."""
    path: str
    n_swa: int
    is_swa: tuple[bool, ...]
    caches: dict[str, tuple[int, int, int]]
    recurrent: tuple[int, int, int, int] | None
    text: str
    error: str | None = None

    @property
    def kv_bytes(self) -> int:
        return sum(c[2] for c in self.caches.values())

    @property
    def rs_bytes(self) -> int:
        return self.recurrent[2] + self.recurrent[3] if self.recurrent else 0


_KV_SIZE = re.compile(r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers")
_RS_SIZE = re.compile(r"llama_memory_recurrent: size = +[\d.]+ MiB \( *(\d+) cells, +(\d+) layers,[^)]*\), "
                      r"R \(f32\): +([\d.]+) MiB, S \(f32\): +([\d.]+) MiB")
_IS_SWA = re.compile(r"load_tensors: layer +(\d+) assigned to device \w+, is_swa = (\d)")


def _mib(text: str) -> int:
    return round(float(text) * MiB)


def parse_load_log(path: str, text: str, error: str | None) -> LoadLog:
    swa = re.search(r"n_swa\s+= (\d+)", text)
    caches: dict[str, tuple[int, int, int]] = {}
    recurrent = None
    kind = "full"
    for line in text.splitlines():
        if "creating non-SWA KV cache" in line:
            kind = "full"
        elif re.search(r"creating +SWA KV cache", line):
            kind = "swa"
        m = _KV_SIZE.search(line)
        if m:
            caches[kind] = (int(m.group(2)), int(m.group(3)), _mib(m.group(1)))
        r = _RS_SIZE.search(line)
        if r:
            recurrent = (int(r.group(1)), int(r.group(2)), _mib(r.group(3)), _mib(r.group(4)))
    layers = {int(m.group(1)): m.group(2) == "1" for m in _IS_SWA.finditer(text)}
    n_layer = re.search(r"n_layer\s+= (\d+)", text)
    is_swa = tuple(layers.get(i, False) for i in range(int(n_layer.group(1)))) if n_layer else ()
    return LoadLog(path, int(swa.group(1)) if swa else 0, is_swa, caches, recurrent, text, error)


def _run(jobs: list[tuple[str, int, int, bool]], swa_full: bool, timeout: float) -> tuple[dict[str, LoadLog], bool]:
    args = [f"{n}:{seqs}:{int(unified)}:{p}" for p, n, seqs, unified in jobs]
    r = subprocess.run([sys.executable, "-c", _CHILD, "1" if swa_full else "0", *args],
                       check=False, capture_output=True, text=True, timeout=timeout)
    text = r.stdout + r.stderr
    logs: dict[str, LoadLog] = {}
    parts = text.split(_MARK)[1:]          # "<path>\n<its load log>", then "ok" or "failed <why>"
    for i, part in enumerate(parts):
        head, _, body = part.partition("\n")
        if head == "ok" or head.startswith("failed "):
            continue
        status = parts[i + 1].split("\n", 1)[0] if i + 1 < len(parts) else ""
        error = None if status == "ok" else (status.removeprefix("failed ") or f"child exited {r.returncode}")
        logs[head] = parse_load_log(head, body, error)
    return logs, r.returncode == 0


def load_with_llamacpp(jobs: list[tuple[Path, int]] | list[tuple[Path, int, int, bool]], swa_full: bool = False,
                       timeout: float = 600) -> dict[str, LoadLog]:
    """(path, n_ctx[, n_seq_max, kv_unified]) → what llama.cpp logged creating a context of n_ctx cells in all
    for that file on the CPU (n_batch = n_ubatch = 512, flash attention off), keyed by str(path). One sequence
    and no unified cache unless given."""
    named = [(str(j[0]), j[1], *(j[2:] if len(j) == 4 else (1, False))) for j in jobs]
    logs, clean = _run(named, swa_full, timeout)
    if not clean:     # an abort: everything from the file that crashed on is loaded alone
        for job in named:
            if job[0] not in logs or logs[job[0]].error:
                logs.update(_run([job], swa_full, timeout)[0])
    return logs

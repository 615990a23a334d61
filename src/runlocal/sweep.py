"""A vectorized sweep over models × quants × contexts × devices: what fits where.

For fixed (model, quant, runtime settings) a runtime's peak memory on a GPU is affine in the
context once it passes the sliding windows: total(ctx) = a + b·ctx. We take a and b from the real
planner at two contexts (so the sweep agrees with `runlocal check`; llama.cpp's compute buffers from its
fitted phases rather than the traced graph, for speed), then test every
(ctx, device) pair at once with numpy broadcasting.

The two planned totals per catalog model, quant and runtime are a pure function of the package's data, so they
ship in ``data/sweep_lines.json`` (written by ``python -m runlocal.sweep``; tests/accuracy/test_sweep_table.py
plans them again and requires equality): a process reads the lines instead of planning 302 × 7 pairs (seconds)
for `compare`'s "largest model" column and `models --fits`. The table is used only while the catalog file it was
built from is unchanged (its SHA-256 is in the header); otherwise the lines are planned as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .model.spec import ModelSpec
from .runtimes import Settings, Target
from .runtimes.base import GGUF_LADDER

if TYPE_CHECKING:
    import numpy as np

SWEEP_QUANTS = GGUF_LADDER          # the GGUF files a fix offers, best quality first
SWEEP_CONTEXTS = (2048, 4096, 8192, 16384, 32768, 65536, 131072)
_PROBE_CTX = (65536, 131072)


@dataclass(frozen=True)
class Line:
    """Peak bytes on the GPU at context c: intercept + slope × c."""

    intercept: float
    slope: float
    weights: int


def _fitted(rt):
    """llama.cpp (and Ollama's llama.cpp) with the fitted compute phases instead of the traced graph: the sweep
    reads slopes off 64K and 128K contexts, where the KV cache dominates, over 539 model × quant pairs (tracing
    each takes 40 s in all; `runlocal check` traces the one it plans)."""
    from .runtimes.llamacpp import LlamaCpp
    from .runtimes.ollama import Ollama

    if isinstance(rt, LlamaCpp):
        return LlamaCpp(simulate_graph=False)
    if isinstance(rt, Ollama):
        return Ollama(context_length=rt.context_length, gpu_overhead=rt.gpu_overhead, simulate_graph=False)
    return rt


def affine_memory(model: ModelSpec, quant: str, runtime: str = "llama.cpp") -> Line:
    return _line(*_probe_totals(model, quant, runtime))


def _probe_totals(model: ModelSpec, quant: str, runtime: str) -> tuple[int, int, int]:
    """(GPU total at _PROBE_CTX[0], at _PROBE_CTX[1], weight bytes): what a line is made from."""
    from .plan import estimate
    from .runtimes import get_runtime

    rt = _fitted(get_runtime(runtime))
    w = estimate(model, quant)
    big = Target("probe", "gpu", 1 << 62, None)
    host = Target("CPU RAM", "cpu", 1 << 62, None)
    totals = []
    for ctx in _PROBE_CTX:
        alloc = rt.allocate(model, w, Settings(runtime=runtime, ctx=ctx, quant=quant), [big, host])
        totals.append(alloc.devices[0].total)
    return totals[0], totals[1], w.total


def _line(total0: int, total1: int, weights: int) -> Line:
    slope = (total1 - total0) / (_PROBE_CTX[1] - _PROBE_CTX[0])
    return Line(total0 - slope * _PROBE_CTX[0], slope, weights)


# ------------------------------------------------------------------------------------------ the shipped table

TABLE = "sweep_lines.json"
TABLE_RUNTIMES = ("llama.cpp", "ollama", "vllm", "sglang", "transformers", "mlx")


def _catalog_digest() -> str:
    import hashlib
    from importlib import resources

    return hashlib.sha256(resources.files("runlocal.data").joinpath("models.json").read_bytes()).hexdigest()


@lru_cache(maxsize=1)
def _table() -> dict[str, Any] | None:
    """The shipped table, or None where it is absent or was built from another catalog, quant ladder or pair of
    probe contexts (then every line is planned)."""
    from importlib import resources

    path = resources.files("runlocal.data").joinpath(TABLE)
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    if (doc["quants"] != list(SWEEP_QUANTS) or doc["probe_ctx"] != list(_PROBE_CTX)
            or doc["catalog_sha256"] != _catalog_digest()):
        return None
    return doc


@lru_cache(maxsize=8)
def _table_lines(runtime: str) -> dict[str, tuple[tuple[Line, ...], int]] | None:
    """alias → (its lines over SWEEP_QUANTS, its context limit), in catalog order, from the shipped table; None
    when the table does not hold this runtime."""
    doc = _table()
    if doc is None or runtime not in doc["runtimes"]:
        return None
    models = {alias: (weights, lim) for alias, lim, weights in doc["models"]}
    out = {}
    for alias, totals in doc["runtimes"][runtime].items():
        weights, lim = models[alias]
        out[alias] = (tuple(_line(totals[2 * q], totals[2 * q + 1], weights[q]) for q in range(len(SWEEP_QUANTS))),
                      lim)
    return out


def build_table() -> str:
    """The table's text: the header, each catalog model's weights and context limit, then per runtime each model's
    two probe totals per quant (a model the planners cannot express at some quant is left out, as the sweep leaves
    it out). One model a line, so that a change shows as a diff of the lines it moved."""
    from .model import catalog

    models: dict[str, tuple[int, list[int]]] = {}
    runtimes: dict[str, dict[str, list[int]]] = {}
    for rt in TABLE_RUNTIMES:
        runtimes[rt] = {}
        for entry in catalog.load_entries():
            alias = entry["alias"]
            try:
                spec = catalog.lookup(alias)
                made = [_probe_totals(spec, q, rt) for q in SWEEP_QUANTS]
            except Exception:  # left out of the sweep, as _catalog_lines leaves it out
                continue
            models.setdefault(alias, (spec.max_position_embeddings or 131072, [w for _, _, w in made]))
            runtimes[rt][alias] = [t for t0, t1, _ in made for t in (t0, t1)]
    order = [e["alias"] for e in catalog.load_entries() if e["alias"] in models]

    def dump(obj: Any) -> str:
        return json.dumps(obj, separators=(",", ":"))

    head = {"generator": "python -m runlocal.sweep", "catalog_sha256": _catalog_digest(),
            "quants": list(SWEEP_QUANTS), "probe_ctx": list(_PROBE_CTX)}
    lines = ["{" + ",\n".join(f"{dump(k)}:{dump(v)}" for k, v in head.items()) + ","]
    lines.append('"models":[\n' + ",\n".join(dump([a, *models[a]]) for a in order) + "\n],")
    parts = []
    for rt in TABLE_RUNTIMES:
        rows = ",\n".join(f"{dump(a)}:{dump(runtimes[rt][a])}" for a in order if a in runtimes[rt])
        parts.append(f"{dump(rt)}:{{\n{rows}\n}}")
    lines.append('"runtimes":{\n' + ",\n".join(parts) + "\n}}")
    return "\n".join(lines) + "\n"


def catalog_lines(runtime: str = "llama.cpp") -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(aliases, intercept[m, q], slope[m, q], weights[m, q], max_ctx[m]) over the embedded catalog, built once
    per process and runtime (whatever name the runtime is given by)."""
    from .runtimes import get_runtime

    name = get_runtime(runtime).name
    _built.add(name)
    return _catalog_lines(name)


_built: set[str] = set()         # runtimes whose whole catalog lines this process has built


@lru_cache(maxsize=4)
def _catalog_lines(runtime: str) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    import numpy as np

    from .model import catalog

    table = _table_lines(runtime)
    if table is None:
        table = {}
        for entry in catalog.load_entries():
            try:
                spec = catalog.lookup(entry["alias"])
                table[entry["alias"]] = (tuple(affine_memory(spec, q, runtime) for q in SWEEP_QUANTS),
                                         spec.max_position_embeddings or 131072)
            except Exception:  # a model the quant tables cannot express is left out of the sweep, not fatal
                continue
    a = [[ln.intercept for ln in lines] for lines, _ in table.values()]
    b = [[ln.slope for ln in lines] for lines, _ in table.values()]
    w = [[ln.weights for ln in lines] for lines, _ in table.values()]
    lim = [limit for _, limit in table.values()]
    return tuple(table), np.array(a), np.array(b), np.array(w, dtype=np.int64), np.array(lim)


@lru_cache(maxsize=4)
def _by_size(runtime: str) -> tuple[tuple[int, str], ...]:
    """(weights at the ladder's first quant, alias) of the catalog, the largest first, ties in catalog order: the
    order models_that_fit lists them in."""
    from .model import catalog
    from .plan import estimate

    table = _table_lines(runtime)
    if table is not None:
        return tuple(sorted(((lines[0].weights, alias) for alias, (lines, _) in table.items()), key=lambda wa: -wa[0]))
    sized = []
    for entry in catalog.load_entries():
        try:
            sized.append((estimate(catalog.lookup(entry["alias"]), SWEEP_QUANTS[0]).total, entry["alias"]))
        except Exception:  # left out of the sweep, as _catalog_lines leaves it out
            continue
    return tuple(sorted(sized, key=lambda wa: -wa[0]))


@lru_cache(maxsize=1024)
def _model_lines(alias: str, runtime: str) -> tuple[tuple[Line, ...], int] | None:
    """One catalog model's lines over SWEEP_QUANTS and its context limit, as _catalog_lines builds them."""
    from .model import catalog

    table = _table_lines(runtime)
    if table is not None:
        return table.get(alias)
    try:
        spec = catalog.lookup(alias)
        return tuple(affine_memory(spec, q, runtime) for q in SWEEP_QUANTS), spec.max_position_embeddings or 131072
    except Exception:
        return None


def largest_model_that_fits(capacity: int, ctx: int, runtime: str = "llama.cpp") -> dict | None:
    """models_that_fit(capacity, ctx, runtime)[0] (None for none), without the whole catalog's lines: the models
    are visited largest first and the lines made only for those visited (`compare` asks this per device; the
    whole build costs seconds per process)."""
    from .runtimes import get_runtime

    runtime = get_runtime(runtime).name
    if runtime in _built:
        rows = models_that_fit(capacity, ctx, runtime)
        return rows[0] if rows else None
    best: tuple[int, int, dict] | None = None        # (weights, quant index, row)
    for w0, alias in _by_size(runtime):
        if best is not None and w0 < best[0]:
            break                          # models of the same size as the one found may still hold a better quant
        made = _model_lines(alias, runtime)
        if made is None:
            continue
        lines, lim = made
        if ctx > lim:
            continue
        for q, ln in enumerate(lines):
            peak = ln.intercept + ln.slope * ctx            # the same float64 sum fits_matrix makes
            if peak <= capacity:
                if best is None or q < best[1]:
                    best = (w0, q, {"alias": alias, "quant": SWEEP_QUANTS[q], "weights_bytes": int(ln.weights),
                                    "peak_bytes": int(peak), "free_bytes": int(capacity - peak), "max_ctx": int(lim)})
                break
    return best[2] if best else None


def fits_matrix(intercept: np.ndarray, slope: np.ndarray, contexts: np.ndarray, capacities: np.ndarray,
                max_ctx: np.ndarray | None = None) -> np.ndarray:
    """Boolean [models, quants, contexts, devices]: peak ≤ capacity (and ctx ≤ the model's limit)."""
    peak = intercept[:, :, None] + slope[:, :, None] * contexts[None, None, :]          # [m, q, c]
    ok = peak[..., None] <= capacities[None, None, None, :]                            # [m, q, c, d]
    if max_ctx is not None:
        ok &= (contexts[None, :] <= max_ctx[:, None])[:, None, :, None]
    return ok


def models_that_fit(capacity: int, ctx: int, runtime: str = "llama.cpp") -> list[dict]:
    """Catalog models that fit at ``ctx`` on a GPU of ``capacity`` bytes, each at the best quant that fits,
    the largest model first."""
    import numpy as np

    aliases, a, b, w, lim = catalog_lines(runtime)
    ok = fits_matrix(a, b, np.array([ctx]), np.array([capacity]), lim)[:, :, 0, 0]      # [m, q]
    out: list[tuple[tuple[int, int], dict]] = []
    for i, alias in enumerate(aliases):
        if not ok[i].any():
            continue
        q = int(np.argmax(ok[i]))                       # SWEEP_QUANTS run from best quality down
        peak = a[i, q] + b[i, q] * ctx
        row = {"alias": alias, "quant": SWEEP_QUANTS[q], "weights_bytes": int(w[i, q]), "peak_bytes": int(peak),
               "free_bytes": int(capacity - peak), "max_ctx": int(lim[i])}
        out.append(((-int(w[i, 0]), q), row))
    # the largest model first (its size at the first quant, a stand-in for the parameter count), then the better quant
    out.sort(key=lambda kr: kr[0])
    return [row for _, row in out]


if __name__ == "__main__":
    from pathlib import Path

    out = Path(__file__).resolve().parent / "data" / TABLE
    out.write_text(build_table(), encoding="utf-8")

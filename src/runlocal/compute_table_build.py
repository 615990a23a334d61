"""Writes data/compute_table/: every ggml compute-buffer simulation the usual questions about a catalog model ask.

    python -m runlocal.compute_table_build                 # every catalog model (one process per model)
    python -m runlocal.compute_table_build --model gemma-3-1b --out /tmp/t   # some models, elsewhere

What it covers, per catalog model (questions()): `runlocal check` on llama.cpp and on Ollama, at the runtime's default
context, 4K, 32K and the trained context, on an RTX 4090 (24 GB), an RTX 3060 (12 GB), an RTX 4060 (8 GB), an RTX
4060 Ti 16 GB and an RTX 3090 (24 GB; its searches probe other contexts than a 4090's), without stored measurements
(benchmarks/planning.py's grid, on three more cards); at the default context without a GPU (--gpu none); the API's
and the CLI's default check on an RTX 4090 (/api/v1/check?model=…&gpu=rtx-4090); the page's memory curve on an
RTX 4090 (check.curve); and `runlocal compare` of those five cards for the model (its 8,192-token context and its
assumed RAM plan other contexts than check's); the site's model page, check at 8,192 on its reference devices; and
`runlocal best` for the model (llama.cpp at 8,192 over the catalog's devices: --fit's own split over several GPUs).
Named builds (-r llama.cpp==bN, -r ollama==X.Y.Z) simulate with their own rules (f32 KQ masks, no output cap, flash
attention off, -np 1, no --fit, unfused delta nets …): every rule set a named build can have is asked once, by the
first build or release that has it (pinned_rule_sets), with `runlocal check` at the runtime's default context on an
RTX 4090 and an RTX 3060 (review17 finding 8: those checks took 1.2–2.9 s where the current builds' take 0.1–0.5 s).
The simulations' arguments name no GPU, so another card with the same
memory mostly plans the same ones (an RTX 4080 16 GB, an RTX 3070 8 GB: every one answered). Each model is planned in
a fresh process with the table off, every call of llamacpp_compute.simulate_now recorded (its spec's digest, its arguments, its
answer), so a model's file is the same whether it is built alone or with the catalog
(tests/unit/test_compute_table.py rebuilds one and compares).
Any other question (another GPU, --ubatch, a quant, a cache type …) simulates as before, and so does every question
once the simulation's code changes (runtimes/compute_table.py: the code digest), until this is run again.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .runtimes import compute_table

RUNTIMES = ("llama.cpp", "ollama")
CONTEXTS = (None, "4096", "32768", "trained")
GPUS = ("rtx-4090", "rtx-3060", "rtx-4060", "rtx-4060-ti-16gb", "rtx-3090")
CURVE_GPU = "rtx-4090"
# web/directory.py's REFERENCE_DEVICES and context, copied here so that a build imports no web framework
# (tests/unit/test_web.py checks the two lists agree)
MODEL_PAGE_DEVICES = ("rtx-4070-laptop", "rtx-4060", "rtx-3060-12gb", "rtx-4090-laptop", "rtx-4080", "rtx-4090",
                      "rtx-5090", "rtx-6000-ada", "a100-80gb", "h100-sxm", "m4-max-128gb")
MODEL_PAGE_CTX = 8192


PINNED_GPUS = ("rtx-4090", "rtx-3060")


def rule_signature(planner: Any) -> tuple:
    """What a planner's simulations depend on beyond the model and the question: a llama.cpp build's rules, and for
    Ollama its default context rule and projector rule over its llama.cpp's (runtimes/versions.py)."""
    llama = getattr(planner, "_llama", planner)
    ollama = (planner.ctx_rule, planner.projector_rule()) if llama is not planner else ()
    return (*ollama, llama.output_cap, llama.np_auto, llama.has_fit, llama.kq_mask_f16, llama.gdn, llama.fa_auto)


def pinned_rule_sets() -> list[str]:
    """One named build per rule set a named build can have that the current build has not: for llama.cpp, the first
    of the builds on either side of each rule's first build (runtimes/versions.py *_BUILDS, the flash-attention
    value's) that has the set; for Ollama the first mapped release that has it."""
    from .runtimes import get_runtime, versions
    from .runtimes.flag_spelling import FLASH_ATTN_VALUE_BUILDS

    edges = sorted({b + d for pair in (versions.NP_AUTO_BUILDS, versions.FIT_BUILDS, versions.OUTPUT_CAP_BUILDS,
                                       versions.KQ_MASK_F16_BUILDS, versions.GDN_AR_BUILDS, versions.GDN_CHUNK_BUILDS,
                                       versions.GDN_PROBE_BUILDS, FLASH_ATTN_VALUE_BUILDS) for b in pair for d in (0, 1)})
    out: list[str] = []
    for runtime, names in (("llama.cpp", [f"b{b}" for b in edges]),
                           ("ollama", [text for _, text, _ in versions._ollama_releases()])):
        seen = {rule_signature(get_runtime(runtime))}
        for name in names:
            try:
                signature = rule_signature(get_runtime(f"{runtime}=={name}"))
            except Exception:    # a release the runtime refuses to plan: nothing to table
                continue
            if signature not in seen:
                seen.add(signature)
                out.append(f"{runtime}=={name}")
    return out


def questions(alias: str) -> list[tuple[str, dict[str, Any]]]:
    """("check" | "curve" | "compare" | "best", CheckRequest fields) in the order they are asked."""
    from .model import catalog

    trained = str(catalog.lookup(alias).max_position_embeddings or 4096)
    out: list[tuple[str, dict[str, Any]]] = [("check", {"model": alias, "gpu": CURVE_GPU})]
    for gpu in GPUS:
        for rt in RUNTIMES:
            for ctx in CONTEXTS:
                c = trained if ctx == "trained" else ctx
                out.append(("check", {"model": alias, "runtime": rt, "gpu": gpu, "ctx": c,
                                      "use_measurements": False}))
    # a machine without a GPU (the simulations do not depend on its RAM; the searches around them may)
    out += [("check", {"model": alias, "runtime": rt, "gpu": "none", "use_measurements": False}) for rt in RUNTIMES]
    out.append(("curve", {"model": alias, "gpu": CURVE_GPU}))
    # `runlocal compare --model …` over these cards (its default context, its own assumed RAM: compare.compare_devices)
    out.append(("compare", {"model": alias, "gpu": ",".join(GPUS)}))
    # `runlocal best …` (llama.cpp at its 8,192-token context over every catalog device and 1, 2, 4, 8 of a card):
    # where the plain layer split misses --fit's margin on some GPU, --fit splits the layers its own way, a graph
    # simulation per probe of its fill (Intel Arc B580 × 4 for a 70B: 11 of them, most of best's time)
    out.append(("best", {"model": alias}))
    # the site's model page (/models/<alias>): check on its reference devices at 8,192 (web/directory.model_facts),
    # a first visit of 20-60 s for the largest models when every simulation runs
    out += [("check", {"model": alias, "gpu": gpu, "ctx": MODEL_PAGE_CTX, "use_measurements": False})
            for gpu in MODEL_PAGE_DEVICES]
    # named builds: each rule set once, at the default context (a named build's own default num_ctx for Ollama)
    out += [("check", {"model": alias, "runtime": rt, "gpu": gpu, "use_measurements": False})
            for rt in pinned_rule_sets() for gpu in PINNED_GPUS]
    return out


def record(alias: str) -> tuple[dict[str, dict[str, list]], int]:
    """Ask ``alias``'s questions in this process with the table off: (model digest → {args key → answer}, the
    questions that failed)."""
    from .check import CheckRequest, check, curve
    from .compare import compare_devices
    from .runtimes import llamacpp_compute
    from .shopping import best_for

    def ask(kind: str, fields: dict[str, Any]) -> None:
        if kind == "compare":
            compare_devices(fields["gpu"].split(","), model=fields["model"])
        elif kind == "best":
            best_for(fields["model"])         # as the CLI, the API and the site ask it
        else:
            (check if kind == "check" else curve)(CheckRequest(**fields))

    compute_table.USE = False
    found: dict[str, dict[str, list]] = {}
    simulate = llamacpp_compute.simulate_now

    def recorded(model: Any, *args: Any) -> tuple[tuple[int, ...], int]:
        out = simulate(model, *args)
        key = compute_table.args_key(args)
        if getattr(model, "id", None) == alias and key is not None:
            entry = [list(out[0]), out[1]]
            old = found.setdefault(compute_table.model_digest(model), {}).setdefault(key, entry)
            assert old == entry, f"{alias}: two answers for one simulation {key}"
        return out

    llamacpp_compute.simulate_now = recorded      # type: ignore[assignment]
    failed = 0
    try:
        for kind, fields in questions(alias):
            try:
                ask(kind, fields)
            except Exception:     # a refused question (InputError) or a planner bug: what it simulated is kept
                failed += 1
    finally:
        llamacpp_compute.simulate_now = simulate
    return found, failed


def render(alias: str, found: dict[str, dict[str, list]]) -> str:
    """The file's text: a header, then one line per simulation, sorted (a rebuild compares byte for byte)."""
    lines = ["{" + f'"format": {compute_table.FORMAT}, "code": "{compute_table.code_digest()}", '
             f'"id": {json.dumps(alias)}, "built_by": "python -m runlocal.compute_table_build",', '"models": {']
    for i, digest in enumerate(sorted(found)):
        entries = found[digest]
        lines.append(f'"{digest}": {{')
        keys = sorted(entries)
        lines += [f"{json.dumps(k)}: {json.dumps(entries[k], separators=(',', ':'))}" + ("," if j < len(keys) - 1
                                                                                         else "")
                  for j, k in enumerate(keys)]
        lines.append("}" + ("," if i < len(found) - 1 else ""))
    lines.append("}}")
    return "\n".join(lines) + "\n"


def build_one(alias: str, out_dir: Path) -> str:
    """Record ``alias`` in this process and write its file (none where nothing was simulated)."""
    t0 = time.process_time()
    found, failed = record(alias)
    name = compute_table.file_name(alias)
    assert name is not None, alias
    path = out_dir / name
    n = sum(len(v) for v in found.values())
    if n:
        out_dir.mkdir(parents=True, exist_ok=True)
        # mtime 0: the same simulations write the same bytes (with the same zlib); written beside and renamed, so an
        # interrupted build leaves the old file or the new one, never half of one
        part = path.with_name(path.name + ".part")
        part.write_bytes(gzip.compress(render(alias, found).encode("utf-8"), compresslevel=9, mtime=0))
        os.replace(part, path)
    elif path.exists():
        path.unlink()
    return f"{alias}: {n} simulations, {failed} questions refused, {time.process_time() - t0:.1f} CPU s"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append", help="only these catalog models (repeatable)")
    ap.add_argument("--out", type=Path, default=compute_table.TABLE_DIR)
    ap.add_argument("--jobs", type=int, default=1, help="models built at once (one process each)")
    ap.add_argument("--one", help=argparse.SUPPRESS)       # the per-model child process
    a = ap.parse_args(argv)
    if a.one:
        print(build_one(a.one, a.out), flush=True)
        return
    from .model import catalog

    aliases = a.model or catalog.aliases()

    def one(alias: str) -> None:
        subprocess.run([sys.executable, "-m", "runlocal.compute_table_build", "--one", alias, "--out", str(a.out)],
                       check=True)

    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        list(pool.map(one, aliases))
    if not a.model:       # the whole catalog rebuilt: a file of a model that left the catalog goes, once all are written
        keep = {compute_table.file_name(alias) for alias in aliases}
        for old in a.out.glob("*.json.gz"):
            if old.name not in keep:
                old.unlink()


if __name__ == "__main__":
    main()

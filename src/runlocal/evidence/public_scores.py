"""runlocal against the public llama.cpp and Ollama logs (measurements/public_logs), and one summary per engine.

benchmarks/accuracy.py prints these sections after its own summary (``--no-public`` leaves them out):

* public llama.cpp logs (llamacpp.jsonl): every record gets a row. Where the model maps to a catalog alias
  and the settings the planner needs are in the log, runlocal.runtimes.llamacpp.LlamaCpp plans it on the
  record's devices (one Target per CUDAn / Vulkan0 / Metal buffer name, plus the host) and the KV buffers
  (summed over devices) are compared, and for mainline single-pipeline records the compute buffers (GPUs
  summed; the host's CUDA_Host/Vulkan_Host buffer). Otherwise the row says why it is not scored.
* Ollama public logs (ollama.jsonl): Ollama logs its scheduler's *estimate* (llm/memory.go
  EstimateGPULayers), not what the runner allocated. Each row shows the logged memory.required.kv, the
  same estimate recomputed from the source of that Ollama era (fs/ggml/ggml.go GraphSize; cited below),
  and runlocal's KV for the run (runlocal.runtimes.ollama.Ollama: llama-server with -c num_ctx × parallel,
  -np parallel). The KV row is scored where that era's estimator counts exactly what the runner allocates
  (an f16 cache of a model without sliding-window layers, or the v0.6.3+ sliding-window rule at
  parallel 1); the rest are shown with the reason.
* all engines: one line per engine and component, with runlocal.evidence.vllm_logs and
  runlocal.evidence.transformers_peak run as subprocesses and their summary lines printed.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys

from runlocal.runtimes.ollama import human_bytes2  # how Ollama prints sizes: the logged figures are compared as printed
from runlocal.units import GiB, MiB

from . import REPO as ROOT
from . import public_logs as _load

# (pattern over model_file / model_repo / general.name / model_family, catalog alias, note)
MODEL_MAP = (
    (r"Mistral-7B-Instruct-v0\.2", "mistral-7b-v0.3",
     "Mistral-7B-Instruct-v0.2 has the attention shape of mistral-7b-v0.3 (32 layers, 8 KV heads × 128; vocab 32000 vs 32768)"),
    (r"Command-R 35B", "command-r", ""),
    (r"Mixtral 8x7B|^mixtral$", "mixtral-8x7b", ""),
    (r"Qwen3[- ]235B[- ]A22B", "qwen3-235b-a22b", ""),
    (r"Qwen3-30B-A3B|30B-A3B-class", "qwen3-30b-a3b", ""),
    (r"Llama[ _-]3\.1[ _-]8b", "llama-3.1-8b", ""),
    (r"Qwen3-32B", "qwen3-32b", ""),
    (r"DeepSeek-V3|Deepseek-V3", "deepseek-v3", ""),
    (r"DeepSeek-R1", "deepseek-r1", ""),
    (r"gemma-3-27b", "gemma-3-27b", ""),
    (r"gpt-oss-20b", "gpt-oss-20b", ""),
    (r"Llama-3\.2-3B", "llama-3.2-3b", ""),
)
GPU_BUF = re.compile(r"^(CUDA\d+|Vulkan\d+|ROCm\d+|SYCL\d+|Metal|MTL\d+)")


def _text(rec: dict) -> str:
    info = rec.get("model_info") or {}
    return " ".join(str(x) for x in (rec.get("model_file"), rec.get("model_repo"), info.get("general.name"),
                                     rec.get("model_family")) if x)


def catalog_alias(rec: dict) -> tuple[str | None, str]:
    named = (rec.get("planner") or {}).get("catalog")
    if named:       # the record names its catalog entry (backends_round2.jsonl): no pattern needed
        return named, "model inferred by the record" if rec.get("model_file_inferred") else ""
    t = _text(rec)
    for pat, alias, note in MODEL_MAP:
        if re.search(pat, t, re.I):
            if rec.get("model_file_inferred"):
                note = "; ".join(x for x in (note, "model inferred by the record") if x)
            return alias, note
    return None, ""


def _buffers(rec: dict) -> dict[str, dict[str, float]]:
    lg = rec["logged"]
    return {k: lg.get(k) or {} for k in ("model_buffers", "kv_buffers", "compute_buffers")}


def gpu_names(rec: dict) -> list[str]:
    """The GPUs the log names in its buffer lines (CUDA0, CUDA1, …; Vulkan0; Metal), in order."""
    names: list[str] = []
    for bufs in _buffers(rec).values():
        for k in bufs:
            m = GPU_BUF.match(k)
            if m and "_Host" not in k:
                n = m.group(1)
                n = "Metal" if n.startswith("MTL") else n
                if n not in names:
                    names.append(n)
    return sorted(names, key=lambda n: (re.sub(r"\d+$", "", n), int(re.sub(r"\D", "", n) or 0)))


def _offload(rec: dict) -> tuple[int | None, int | None]:
    m = re.match(r"(\d+)/(\d+)", str(rec["settings"].get("offloaded", "")))
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def _tensor_override(rec: dict) -> bool:
    """Every layer offloaded yet most weights in a CPU buffer: experts kept on the CPU by -ot."""
    done, of = _offload(rec)
    mb = _buffers(rec)["model_buffers"]
    cpu = sum(v for k, v in mb.items() if k.startswith("CPU"))
    return done is not None and done == of and cpu > 0.25 * (sum(mb.values()) or 1)


def _is_fork(rec: dict) -> bool:
    return "ik_llama" in rec.get("runtime", "")


def _quant(rec: dict) -> str | None:
    ft = str(rec.get("file_type") or (rec.get("model_info") or {}).get("file type") or "")
    m = re.match(r"(I?Q\d_[A-Z0-9]+(?: - (?:Medium|Small|Large))?|Q\d_\d|F16|BF16)", ft, re.I)
    if not m:
        return None
    q = m.group(1).upper()
    q = q.replace(" - MEDIUM", "_M").replace(" - SMALL", "_S").replace(" - LARGE", "_L")
    return q


def plan_llamacpp(rec: dict, alias: str):
    """runlocal's llama.cpp buffers for the record's settings on the record's devices."""
    from runlocal.model.catalog import lookup
    from runlocal.plan import estimate
    from runlocal.runtimes import Settings, Target
    from runlocal.runtimes.llamacpp import LlamaCpp
    from runlocal.runtimes.options import LlamaCppOptions

    st = rec["settings"]
    spec = lookup(alias)
    try:
        weights = estimate(spec, _quant(rec))
    except Exception:       # a file type the estimator does not know: weights do not enter KV/compute
        weights = estimate(spec, None)
    n_seq = int(st.get("n_seq_max") or 1)
    done, _ = _offload(rec)
    ngl = 0 if done == 0 else -2     # the logs show every layer offloaded: -ngl all
    fa = st.get("flash_attn")
    s = Settings(ctx=st["n_ctx"] // n_seq, parallel=n_seq,
                 cache_type_k=st.get("type_k", "f16"), cache_type_v=st.get("type_v", "f16"),
                 llamacpp=LlamaCppOptions(batch=st.get("n_batch", 2048), ubatch=st.get("n_ubatch", 512),
                                          flash_attn="auto" if fa is None else ("on" if fa else "off"), n_gpu_layers=ngl,
                                          n_cpu_moe=spec.n_layers if _tensor_override(rec) and spec.n_experts else 0,
                                          kv_unified=bool(st.get("kv_unified", False))))
    targets = [Target(n, "gpu", 80 * GiB) for n in gpu_names(rec)] + [Target("CPU", "cpu", 1 << 40)]
    # every public log predates llama-server's output cap (PR #23861, June 2026): n_ubatch rows of logits
    planner = LlamaCpp(output_cap=False)
    if rec["backend"] == "sycl" or rec.get("round", 1) >= 2:
        # ggml-sycl's rules, and each round-2 record's own backend (runtimes/backends.py; the record's "round");
        # llamacpp.jsonl (round 1, no "round" field) keeps the CUDA rules it was scored with
        planner.backend = rec["backend"]
    _, bufs, steps, info = planner.buffers(spec, weights, s, targets)
    # whether the compute buffers come from the ggml-alloc simulation (runtimes/ggml_graph.py) or the fitted phases
    info = {**info, "simulated": any(st.label == "compute buffer" and "ggml-alloc" in st.formula for st in steps)}
    return bufs, info


def logged_kv(rec: dict) -> float | None:
    lg = rec["logged"]
    kv = lg.get("kv_buffers") or {}
    if kv and (lg.get("kv_self_size_mib") is None or abs(sum(kv.values()) - lg["kv_self_size_mib"]) < 0.05 * len(kv)):
        return sum(kv.values())
    return lg.get("kv_self_size_mib")


def _kv_not_scored(rec: dict, spec) -> str | None:
    """Why the KV buffer of a record with a catalog model is not compared (None: it is)."""
    st, lg = rec["settings"], rec["logged"]
    kinds = {a.kind for a in spec.attention_layers}
    if logged_kv(rec) is None:
        return "no KV figure in the excerpt"
    if _is_fork(rec) and kinds != {"full"}:
        why = {"mla": "MLA cache (-mla) differs from mainline's",
               "sliding": "no sliding-window cache: every layer keeps the full context"}
        return "fork ik_llama.cpp: " + "; ".join(why.get(k, k) for k in sorted(kinds - {"full"}))
    missing = [k for k in ("n_ctx", "type_k", "type_v") if k not in st]
    if "sliding" in kinds:
        missing += [k for k in ("n_ubatch", "n_seq_max") if k not in st]
    if missing:
        return "setting missing: " + ", ".join(missing)
    if "mla" in kinds and lg.get("kv_v_mib"):
        return (f"llama.cpp {rec.get('llama_cpp_build', '?')} is older than the modelled commit: it cached MLA's K "
                f"({lg.get('kv_k_mib')} MiB) and V ({lg['kv_v_mib']} MiB) separately; the modelled commit stores "
                "the latent once (V is a view of K)")
    if st["n_ctx"] % 256:
        return (f"n_ctx {st['n_ctx']} is not a multiple of 256: this build padded the context less than the "
                "modelled commit (pad(n_ctx / n_seq, 256) cells)")
    if "kv_buffers" not in lg and len(gpu_names(rec)) > 1:
        return "KV per device not in the excerpt"
    return None


def _compute_not_scored(rec: dict, kv_reason: str | None) -> str | None:
    st, lg = rec["settings"], rec["logged"]
    if _is_fork(rec):
        return "fork ik_llama.cpp (its compute graph is not mainline's)"
    if not lg.get("compute_buffers"):
        return "no compute buffers in the excerpt"
    if any("total" in k for k in lg["compute_buffers"]):
        return "pre-2024 format ('compute buffer total size'): a different graph allocator"
    done, of = _offload(rec)
    if "row" in str(st.get("split_mode", "")):
        return "row split (-sm row) is not modelled (this log shows the same compute buffer on every GPU)"
    if len(gpu_names(rec)) > 1 and done == of and not _tensor_override(rec):
        return (f"pipeline parallelism over {len(gpu_names(rec))} GPUs on build "
                f"'{str(rec.get('llama_cpp_build', '?'))[:40]}': the log of the PR that introduced it, before flash "
                "attention and the KV store indices; runlocal's 4-copy rule follows the modelled commit")
    missing = [k for k in ("n_ctx", "n_ubatch", "flash_attn") if k not in st]
    if missing:
        return "setting missing: " + ", ".join(missing)
    if kv_reason and ("older" in kv_reason or "pad" in kv_reason):
        return kv_reason
    return None


def old_host_compute(rec: dict, spec) -> float | None:
    """The host compute buffer (CUDA_Host / Vulkan_Host) as builds of 2025-01 … 2025-07 logged it: one f32 row
    set of the token embeddings (n_embd × n_ubatch × 4 B) and an f32 KQ mask (n_ctx × n_ubatch × 4 B) whether
    flash attention is on or not. The modelled commit holds two row sets, an f16 mask with flash attention and
    the KV store's index inputs (runlocal.runtimes.llamacpp host_compute / kq_masks / kv_store_indices)."""
    st = rec["settings"]
    if "n_ctx" not in st or "n_ubatch" not in st:
        return None
    ub = min(st["n_ubatch"], st["n_ctx"])
    return (spec.hidden_size * ub * 4 + st["n_ctx"] * ub * 4) / MiB


# The newest build whose logged host compute buffer follows the older input rule (old_host_compute): b5781 (ba3ef86c5,
# llamacpp.jsonl's Vulkan log). The modelled commit (b11312) follows the newer rule; no public log in between dates the
# change, so a later build, or one a record names only by month, is not taken to follow the older rule.
OLDER_INPUT_RULE_LAST_BUILD = 5781


def build_label(rec: dict) -> str:
    """The record's llama.cpp build as logged, without a leading "build:" ("4594 (ffd0821c)")."""
    return re.sub(r"^build:\s*", "", str(rec.get("llama_cpp_build", "?")))


def build_number(rec: dict) -> int | None:
    """The build number a record's version line gives ("build: 4594 (ffd0821c)", "version: 5384 (4696d567)");
    None where the record dates its build only by month or names none."""
    m = re.search(r"\b(\d+) \([0-9a-f]{7,}\)", str(rec.get("llama_cpp_build", "")))
    return int(m.group(1)) if m else None


def _old_cpu_only_inputs(rec: dict, spec, pair: tuple[float, float]) -> str | None:
    """Why a CPU-only build's compute buffer is not scored (None: it is). Builds that sized their graph inputs by the
    older rule (old_host_compute: one f32 row set of token embeddings, where the modelled commit's host holds two,
    runtimes/llamacpp_compute.host_compute) reserve one n_embd × n_ubatch × 4 B row set fewer in the one CPU buffer
    of a CPU-only run; the same logs' GPU siblings (ggml-org/ci, b4657 on Metal) show it in their host buffer. Only
    a record whose build number is of that rule's era (OLDER_INPUT_RULE_LAST_BUILD or older) is exempted so."""
    number = build_number(rec)
    if number is None or number > OLDER_INPUT_RULE_LAST_BUILD:
        return None
    st = rec["settings"]
    row = spec.hidden_size * min(st["n_ubatch"], st["n_ctx"]) * 4 / MiB
    if abs(pair[1] - row - pair[0]) > 0.02:
        return None
    build = build_label(rec)[:40]
    return (f"build {build} held one f32 row set of token embeddings fewer than the modelled commit "
            f"(n_embd×n_ubatch×4 B = {row:.2f} MiB; the older input rule, as its host buffers show on GPU builds): "
            f"{pair[1] - row:.2f} MiB, as logged")


def llamacpp_rows(records: list[dict] | None = None) -> list[dict]:
    from runlocal.model.catalog import lookup

    records = _load.load_llamacpp() if records is None else records
    out = []
    for i, rec in enumerate(records):
        row = {"i": i, "source": rec["source_url"].replace("https://github.com/", "")[:44],
               "runtime": "ik_llama.cpp" if _is_fork(rec) else "mainline", "backend": rec["backend"],
               "gpus": len(gpu_names(rec)), "alias": None, "note": "", "kv": None, "compute_gpu": None,
               "compute_host": None, "kv_reason": None, "compute_reason": None,
               "host_reason": None, "override": False, "compute_devices": None,
               "build": build_label(rec)}
        alias, note = catalog_alias(rec)
        row["alias"], row["note"] = alias, note
        if alias is None:
            why = f"model not in the catalog ({rec['arch']}: {rec['model_file'][:50]})"
            row["kv_reason"] = row["compute_reason"] = row["host_reason"] = why
            out.append(row)
            continue
        spec = lookup(alias)
        kv_reason = _kv_not_scored(rec, spec)
        comp_reason = _compute_not_scored(rec, kv_reason)
        planned = None
        if "n_ctx" in rec["settings"] and "type_k" in rec["settings"]:
            bufs, info = plan_llamacpp(rec, alias)
            planned = bufs
        if planned is not None and logged_kv(rec) is not None:
            row["kv"] = (logged_kv(rec), sum(b.kv for b in planned) / MiB)
        cb = rec["logged"].get("compute_buffers") or {}
        row["compute_devices"] = None
        if planned is not None and cb and info.get("simulated") and not any("total" in k for k in cb):
            # per device, where the simulation covers the run (several GPUs, -ot / --n-cpu-moe, -ngl 0)
            per = []
            for b in planned:
                key = next((k for k in cb if "_Host" in k), None) if b.kind == "cpu" else b.name
                if key in cb:
                    per.append((key, cb[key], b.compute / MiB))
            row["compute_devices"] = per
        if planned is not None and cb:
            gpu_log = sum(v for k, v in cb.items() if GPU_BUF.match(k) and "_Host" not in k)
            host_log = sum(v for k, v in cb.items() if "_Host" in k)
            if rec["backend"] == "metal" and not host_log:
                # ggml-metal's buffers are host memory: the host's share of the graph is logged as "CPU compute"
                host_log = cb.get("CPU", 0.0)
            if rec["backend"] == "cpu":
                # CPU-only build: the one "CPU compute" buffer is the device's graph (scored in the GPU column)
                row["compute_gpu"] = (cb.get("CPU", 0.0), sum(b.compute for b in planned) / MiB) if cb.get("CPU") else None
            if gpu_log:
                row["compute_gpu"] = (gpu_log, sum(b.compute for b in planned if b.kind != "cpu") / MiB)
            if host_log:
                row["compute_host"] = (host_log, sum(b.compute for b in planned if b.kind == "cpu") / MiB)
        if comp_reason is None and not row["compute_gpu"] and not row["compute_host"]:
            comp_reason = "no compute buffers in the excerpt"
        row["kv_reason"], row["compute_reason"] = kv_reason, comp_reason
        # the host's compute buffer: builds before the modelled commit's graph inputs follow another rule
        row["host_reason"] = comp_reason
        if row["compute_host"] and not _is_fork(rec) and "total" not in " ".join(cb):
            old_rule = old_host_compute(rec, spec)
            if old_rule is not None and abs(old_rule - row["compute_host"][0]) <= 0.02:
                build = build_label(rec)[:40]
                row["host_reason"] = (f"build {build} sized its graph inputs by an older "
                                      f"rule (n_embd×n_ubatch×4 + n_ctx×n_ubatch×4 B, f32 mask) = {old_rule:.2f} MiB, "
                                      f"as logged")
        if rec["backend"] == "cpu" and row["compute_gpu"] and row["compute_reason"] is None:
            row["compute_reason"] = _old_cpu_only_inputs(rec, spec, row["compute_gpu"])
        row["override"] = _tensor_override(rec) or _offload(rec)[0] == 0
        row["ot"] = _tensor_override(rec)
        cpu_graph = cb.get("CPU")
        if _offload(rec)[0] == 0 and cpu_graph and row["host_reason"] is None:
            # the modelled commit reserves an -ngl 0 graph on the GPU (op offload) with only its inputs on the
            # host; this build kept the layers' graph on the CPU backend as well
            row["host_reason"] = (f"-ngl 0 on this build also reserved a CPU graph ('CPU compute' {cpu_graph:.2f} MiB); "
                                  "the modelled commit keeps only the graph inputs on the host")
        out.append(row)
    return out


def _err(pair) -> float | None:
    if not pair:
        return None
    logged, pred = pair
    return (pred - logged) / logged * 100 if logged else None


def _add_err(errors: list[float], pair) -> None:
    """The pair's error joins the list (a logged 0 has none)."""
    err = _err(pair)
    if err is not None:
        errors.append(err)


def _fmt(pair) -> str:
    if not pair:
        return f"{'—':>10} {'—':>10} {'':>7}"
    return f"{pair[0]:>10.2f} {pair[1]:>10.2f} {_err(pair):>+6.1f}%"


def _stats_line(name: str, errs: list[float]) -> str:
    if not errs:
        return f"{name:<34} {0:>3} {'—':>7} {'—':>7}"
    a = [abs(e) for e in errs]
    return (f"{name:<34} {len(a):>3} {statistics.median(a):>7.2f} {max(a):>7.2f} "
            f"{sum(x <= 1 for x in a):>4}/{len(a):<3} {sum(x <= 5 for x in a):>4}/{len(a):<3}")


STATS_HEAD = f"{'component':<34} {'n':>3} {'med %':>7} {'max %':>7} {'≤1%':>8} {'≤5%':>8}"


def print_llamacpp(rows: list[dict]) -> dict[str, list[float]]:
    print("== public llama.cpp logs (measurements/public_logs/llamacpp.jsonl) ==")
    print("MiB logged / predicted / error; KV summed over devices; compute: GPUs summed, and the host's "
          "pinned buffer (CUDA_Host / Vulkan_Host)")
    print(f"{'#':>2} {'source':<44} {'runtime':<12} {'GPUs':>4} {'catalog':<16} "
          f"{'KV logged':>10} {'predicted':>10} {'err':>7}  {'GPU compute':>10} {'predicted':>10} {'err':>7}  "
          f"{'host comp.':>10} {'predicted':>10} {'err':>7}")
    # weights in host memory (-ot …=CPU, -ngl 0) run on the GPU by op offload, which copies each into the GPU's
    # compute buffer: runlocal's estimate of that copy is scored on its own row
    errs: dict[str, list[float]] = {"KV": [], "compute (GPUs)": [], "compute (GPUs), -ot / -ngl 0": [],
                                    "compute (host)": []}
    unscored: dict[str, list[float]] = {"host compute, older builds": []}
    for r in rows:
        kv = r["kv"] if r["kv_reason"] is None else None
        cg = r["compute_gpu"] if r["compute_reason"] is None else None
        ch = r["compute_host"] if r["host_reason"] is None else None
        if r.get("host_reason") and r["host_reason"].startswith("build ") and r["compute_host"]:
            _add_err(unscored["host compute, older builds"], r["compute_host"])
        print(f"{r['i']:>2} {r['source']:<44} {r['runtime']:<12} {r['gpus']:>4} {(r['alias'] or '—'):<16} "
              f"{_fmt(kv)}  {_fmt(cg)}  {_fmt(ch)}")
        if kv:
            _add_err(errs["KV"], kv)
        if cg:
            _add_err(errs["compute (GPUs), -ot / -ngl 0" if r["override"] else "compute (GPUs)"], cg)
        if ch:
            _add_err(errs["compute (host)"], ch)
        notes = []
        if r["note"]:
            notes.append(r["note"])
        if r["kv_reason"]:
            shown = f" (runlocal would say {r['kv'][1]:.2f} vs {r['kv'][0]:.2f} logged)" if r["kv"] else ""
            notes.append(f"KV not scored: {r['kv_reason']}{shown}")
        if r["compute_reason"] and r["compute_reason"] != r["kv_reason"]:
            shown_c = (f" (runlocal would say {r['compute_gpu'][1]:.2f} vs {r['compute_gpu'][0]:.2f} logged on the GPUs)"
                       if r["compute_gpu"] else "")
            notes.append(f"compute not scored: {r['compute_reason']}{shown_c}")
        if r.get("host_reason") and r["host_reason"] != r["compute_reason"] and r["compute_host"]:
            notes.append(f"host compute not scored: {r['host_reason']} (runlocal: {r['compute_host'][1]:.2f})")
        for n in notes:
            print(f"{'':>6}{n}")
    print()
    print("public llama.cpp logs, scored records (|error|):")
    print(STATS_HEAD)
    for k, v in errs.items():
        print(_stats_line(k, v))
    print("shown, not scored:")
    for k, v in unscored.items():
        print(_stats_line(k, v))
    print()
    print_compute_devices(rows)
    return errs


MODELLED_COMMIT = "0c1e5709"     # the llama.cpp commit runtimes/ggml_graph.py follows (llama-cpp-python 0.3.36)


def print_compute_devices(rows: list[dict]) -> None:
    """Each device's compute buffer, logged vs the ggml-alloc simulation, for the records the simulation covers
    beyond one GPU with every weight on it: several GPUs (--split-mode layer, pipeline parallelism), weights kept in
    host memory (-ot …=CPU, --n-cpu-moe; planned as exps=CPU on every layer, as the logs' CPU model buffers
    suggest) and -ngl 0. Indicative where the log's build is not the modelled commit: its graph differs (older
    builds: no fused GLU, an f32 KQ mask and no KV store indices on the host, MLA caching K and V apart …)."""
    shown = [r for r in rows if r.get("compute_devices") and r["runtime"] == "mainline"
             and (r["gpus"] > 1 or r["override"]) and "row split" not in (r["compute_reason"] or "")]
    print("== public llama.cpp logs: compute buffer per device, ggml-alloc simulation (multi-GPU, -ot, -ngl 0) ==")
    print(f"{'#':>2} {'source':<44} {'catalog':<16} {'buffer':<10} {'logged':>9} {'predicted':>10} {'err':>7}")
    for r in shown:
        for k, (name, logged, pred) in enumerate(r["compute_devices"]):
            head = f"{r['i']:>2} {r['source']:<44} {(r['alias'] or '—'):<16}" if k == 0 else f"{'':>2} {'':<44} {'':<16}"
            print(f"{head} {name:<10} {logged:>9.2f} {pred:>10.2f} {_err((logged, pred)):>+6.1f}%")
        build = r.get("build") or "?"
        tag = "same commit" if MODELLED_COMMIT in build else f"indicative: build {build[:40]} is not the modelled commit"
        setting = "; -ot planned as exps=CPU on every layer (the log's CPU model buffer)" if r.get("ot") else ""
        print(f"{'':>6}{tag}{setting}")
    print()


# --- Ollama -----------------------------------------------------------------------------------

# (record pattern over model / source, catalog alias, quant of the library tag)
OLLAMA_MAP = (
    (r"phi4:14b", "phi-4", "Q4_K_M"),
    (r"qwen2\.5:0\.5b", "qwen2.5-0.5b", "Q4_K_M"),
    (r"llama3\.2:3b", "llama-3.2-3b", "Q4_K_M"),
    (r"gemma3:27b", "gemma-3-27b", "Q4_K_M"),
    (r"sha256-e8ad13ef", "gemma-3-12b", "Q4_K_M"),     # the gemma3:12b library blob (q4_K_M)
    (r"gemma3:12b", "gemma-3-12b", None),              # another gemma3-12b file: its quant is not known
    (r"deepseek-coder-v2 \(16B lite", "deepseek-v2-lite", "Q4_0"),
    (r"DeepSeek-V3/R1 671B", "deepseek-v3", "Q4_K_M"),
)
ERA_SOURCE = {
    "v0.5": "ollama v0.5.x llm/ggml.go GraphSize: kv = num_ctx×parallel × n_layer × (head_k + head_v) × n_head_kv × bytes",
    "v0.6.0": "ollama v0.6.0–v0.6.2 fs/ggml/ggml.go GraphSize: the same single formula (no sliding window)",
    "v0.6.3": "ollama v0.6.3+ fs/ggml/ggml.go GraphSize (commit f66216e39): per layer; gemma3's 5 of 6 "
              "sliding layers hold parallel × sliding_window + batch cells",
    "v0.1": "ollama v0.1.44 llm/memory.go (to commit 8e0641a9b, 2024-06-20): kv = 2 × 2 B × num_ctx × n_layer × "
            "n_embd / n_head × n_head_kv (head_k + head_v from then on)",
}
KV_BYTES = {"f16": 2.0, "q8_0": 1.0, "q4_0": 0.5}   # kvCacheBytesPerElement: q8_0 counted as 1 B, not 34/32


def _ollama_era(rec: dict) -> str:
    v = rec["ollama_version"]
    m = re.search(r"(\d{4})-(\d{2})-(\d{2})", v)
    if "0.1.45" in v:
        return "v0.1"
    if not m:
        return "?"
    d = m.group(0)
    if d < "2025-03-11":
        return "v0.5"
    if d < "2025-03-24":
        return "v0.6.0"
    return "v0.6.3"


def _int_setting(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def ollama_estimate_kv(spec, era: str, ctx_total: int, parallel: int, batch: int, kv_type: str) -> float:
    """Ollama's memory.required.kv as that era's estimator computes it (MiB), from the catalog's shape."""
    b = KV_BYTES.get(kv_type, 2.0)
    layers = spec.attention_layers
    a0 = layers[0]
    if era == "v0.1":
        return 2 * 2 * ctx_total * spec.n_layers * spec.hidden_size / spec.n_heads * a0.n_kv_heads / MiB
    per_cell = (a0.k_dim + a0.v_dim) * max(a.n_kv_heads for a in layers) * b
    if era == "v0.6.3" and spec.family.startswith("gemma3"):
        window = next((a.window for a in layers if a.window), 0)
        total = 0.0
        for i in range(spec.n_layers):
            cells = ctx_total if (i + 1) % 6 == 0 else parallel * window + batch
            total += cells * per_cell
        return total / MiB
    return ctx_total * spec.n_layers * per_cell / MiB


def ollama_rows(records: list[dict] | None = None) -> list[dict]:
    from runlocal.model.catalog import lookup
    from runlocal.plan import estimate
    from runlocal.runtimes import Settings, Target
    from runlocal.runtimes.ollama import Ollama
    from runlocal.runtimes.options import LlamaCppOptions

    records = _load.load_ollama() if records is None else records
    out = []
    for i, rec in enumerate(records):
        st, pm = rec["settings"], rec["logged"].get("parsed_mib", {})
        row = {"i": i, "source": rec["source_url"].replace("https://github.com/", "")[:40], "alias": None,
               "era": _ollama_era(rec), "logged_kv": pm.get("memory.required.kv"),
               "printed_kv": rec["logged"].get("memory.required.kv"), "formula_kv": None, "runlocal_kv": None,
               "reason": None, "note": "", "weights": None}
        m = next(((a, q) for pat, a, q in OLLAMA_MAP if re.search(pat, rec["model"])), None)
        if m is None:
            row["reason"] = f"model not identified or not in the catalog ({rec['model'][:70]})"
            out.append(row)
            continue
        alias, quant = m
        row["alias"] = alias
        if "not named" in rec["model"] or "-class" in rec["model"]:
            row["note"] = "model inferred by the record from the logged shapes"
        spec = lookup(alias)
        ctx_total = _int_setting(st.get("num_ctx"))
        par = _int_setting(st.get("OLLAMA_NUM_PARALLEL"))
        kv_type = str(st.get("kv_cache_type", "f16")).split()[0]
        if quant is None:
            row["note"] = "; ".join(x for x in (row["note"], "weights not compared: which file (quant) this is is not known")
                                    if x)
        if ctx_total is None:
            row["reason"] = f"num_ctx not in the log ({st.get('num_ctx')})"
            row["weights"] = ollama_weights(rec, spec, quant, row["era"])
            out.append(row)
            continue
        if par is None:
            par = 1         # OLLAMA_NUM_PARALLEL not set in the report: the estimate line's kv only fits parallel 1
            row["note"] = "; ".join(x for x in (row["note"], "OLLAMA_NUM_PARALLEL not shown: 1") if x)
        batch = _int_setting(st.get("num_batch")) or 512
        row["formula_kv"] = ollama_estimate_kv(spec, row["era"], ctx_total, par, min(ctx_total, batch), kv_type)
        # runlocal: Ollama's llama-server launch, -c num_ctx × parallel, -np parallel (per-sequence num_ctx)
        fa = st.get("flash_attention")
        s = Settings(runtime="ollama", ctx=ctx_total // par, parallel=par, cache_type_k=kv_type, cache_type_v=kv_type,
                     llamacpp=LlamaCppOptions(batch=batch, ubatch=batch,
                                              flash_attn="on" if fa is True or kv_type != "f16" else "auto"))
        alloc = Ollama().allocate(spec, estimate(spec, quant or "Q4_K_M"), s,
                                  [Target("GPU0", "gpu", 80 * GiB), Target("CPU", "cpu", 1 << 40)])
        row["runlocal_kv"] = sum(d.kv_cache for d in alloc.devices) / MiB
        row["weights"] = ollama_weights(rec, spec, quant, row["era"])
        kinds = {a.kind for a in spec.attention_layers}
        if "mla" in kinds:
            row["reason"] = ("the runner then cached full K/V per head (no MLA latent cache in llama.cpp before 2025); "
                             "runlocal models the latent cache")
        elif kv_type != "f16":
            row["reason"] = (f"{kv_type} cache: the estimator counts {KV_BYTES.get(kv_type)} B/element "
                             "(kvCacheBytesPerElement); llama.cpp stores 34 B per 32 elements")
            if "sliding" in kinds and row["era"] != "v0.6.3":
                row["reason"] += "; and this era's estimator ignores the sliding window"
        elif "sliding" in kinds and not (row["era"] == "v0.6.3" and par == 1):
            row["reason"] = ("sliding-window layers: the estimator gives parallel × window + batch cells in all; "
                             "llama-server gives each of the parallel streams window + ubatch cells (padded to 256)")
        out.append(row)
    return out


def _printed_mib(text: str) -> tuple[float, float]:
    """An Ollama HumanBytes2 string → (MiB, half a unit of its last digit in MiB)."""
    num, unit = text.split()
    scale = {"GiB": 1024.0, "MiB": 1.0, "KiB": 1 / 1024, "B": 1 / MiB}[unit]
    return float(num) * scale, 0.05 * scale if "." in num else 0.0


def ollama_weights(rec: dict, spec, quant: str | None, era: str) -> dict | None:
    """Ollama's logged layer weights (its repeating blocks + the output layer) against runlocal's weights on a
    GPU that holds every layer (llama.cpp's GPU model buffer: the blocks, output norm and LM head, or the
    tied token embedding loaded again as the output). What memory.weights.total holds changed by version:
    v0.5.x–v0.6.0 sum each block with its KV share (total − kv + nonrepeating is the weights), v0.6.1–v0.6.2
    print the blocks alone as total and repeating, v0.6.3+ print blocks + output as total (llm/memory.go)."""
    from runlocal.plan import estimate
    from runlocal.runtimes import Settings, Target
    from runlocal.runtimes.llamacpp import LlamaCpp

    lg = rec["logged"]
    if quant is None:
        return None
    need = ("memory.weights.total", "memory.weights.repeating", "memory.weights.nonrepeating", "memory.required.kv")
    if era == "v0.1" or any(k not in lg for k in need):
        return None
    (tot, dt), (rep, dr), (non, dn), (kv, dk) = (_printed_mib(lg[k]) for k in need)
    if era in ("v0.5", "v0.6.0") and lg["memory.weights.total"] != lg["memory.weights.repeating"]:
        ollama, tol, how = tot - kv + non, dt + dk + dn, "total − kv + nonrepeating"
    elif lg["memory.weights.total"] == lg["memory.weights.repeating"]:
        ollama, tol, how = tot + non, dt + dn, "total + nonrepeating"
    else:
        ollama, tol, how = tot, dt, "total"
    bufs = LlamaCpp().buffers(spec, estimate(spec, quant), Settings(ctx=512),
                              [Target("GPU0", "gpu", 1 << 50), Target("CPU", "cpu", 1 << 40)])[1]
    ours = bufs[0].model / MiB
    return {"logged": ollama, "tol": tol, "how": how, "runlocal": ours, "quant": quant}


def print_ollama(rows: list[dict]) -> dict[str, list[float]]:
    print("== Ollama public logs (measurements/public_logs/ollama.jsonl) ==")
    print("memory.required.kv is Ollama's estimate, printed with one decimal (format.HumanBytes2): '1.6 GiB' is "
          "±0.05 GiB. 'Ollama formula' recomputes it from the source of that era; 'runlocal' is runlocal's Ollama "
          "planner (llama-server -c num_ctx × parallel -np parallel). Estimator by era:")
    for k, v in ERA_SOURCE.items():
        print(f"  {k:<7} {v}")
    print(f"{'#':>2} {'source':<40} {'era':<7} {'catalog':<16} {'logged kv':>10} {'MiB':>8} "
          f"{'Ollama formula':>14} {'runlocal':>9} {'err':>7} {'prints as':>10}   "
          f"{'weights logged':>14} {'runlocal':>9} {'err':>7}")
    errs: dict[str, list[float]] = {"KV (vs memory.required.kv)": [], "weights (blocks + output)": []}
    prints_ok = []
    formula_ok = []
    for r in rows:
        lg = r["logged_kv"]
        err = (r["runlocal_kv"] - lg) / lg * 100 if (r["runlocal_kv"] is not None and lg) else None
        w = r.get("weights")
        w_err = (w["runlocal"] - w["logged"]) / w["logged"] * 100 if w else None
        print(f"{r['i']:>2} {r['source']:<40} {r['era']:<7} {(r['alias'] or '—'):<16} {str(r['printed_kv']):>10} "
              f"{lg if lg is not None else float('nan'):>8.1f} "
              f"{'—' if r['formula_kv'] is None else format(r['formula_kv'], '.1f'):>14} "
              f"{'—' if r['runlocal_kv'] is None else format(r['runlocal_kv'], '.1f'):>9} "
              f"{'—' if err is None else format(err, '+.1f') + '%':>7} "
              f"{'—' if r['runlocal_kv'] is None else human_bytes2(r['runlocal_kv'] * MiB):>10}   "
              + (f"{w['logged']:>8.0f} ±{w['tol']:<4.0f} {w['runlocal']:>9.0f} {w_err:>+6.1f}%" if w else f"{'—':>14}"))
        if r["formula_kv"] is not None and r["printed_kv"]:
            formula_ok.append(human_bytes2(r["formula_kv"] * MiB) == r["printed_kv"])
        if r["reason"] is None and err is not None:
            errs["KV (vs memory.required.kv)"].append(err)
            prints_ok.append(human_bytes2(r["runlocal_kv"] * MiB) == r["printed_kv"])
        if w and w_err is not None:
            errs["weights (blocks + output)"].append(w_err)
            notes = f"weights: Ollama's {w['how']} (±{w['tol']:.0f} MiB print rounding) vs runlocal's {w['quant']} " \
                    "estimate of the GPU model buffer"
            print(f"{'':>6}{notes}")
        for n in (r["note"], f"not scored: {r['reason']}" if r["reason"] else ""):
            if n:
                print(f"{'':>6}{n}")
    print()
    print(f"Ollama's estimator as recomputed here prints the logged memory.required.kv on {sum(formula_ok)} of "
          f"{len(formula_ok)} records where it can be recomputed; runlocal's KV prints as logged on {sum(prints_ok)} "
          f"of {len(prints_ok)} scored records")
    print("Ollama public logs, scored records (|error|; the logged figure carries up to ±3% print rounding):")
    print(STATS_HEAD)
    for label, values in errs.items():
        print(_stats_line(label, values))
    print()
    return errs


# --- all engines ------------------------------------------------------------------------------

def _run(module: str) -> list[str]:
    """The output of ``python -m runlocal.evidence.<module>`` (a process of its own: each engine's planner
    imports what it needs, and one failing leaves this summary standing)."""
    script = f"runlocal.evidence.{module}"
    res = subprocess.run([sys.executable, "-m", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    if res.returncode:
        return [f"({script} failed: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode})"]
    return res.stdout.splitlines()


def print_all_engines(own_rows: list[dict], ll: dict[str, list[float]], ol: dict[str, list[float]]) -> None:
    print("== all engines: error of the prediction per engine and component ==")
    print("llama.cpp, own runs (measurements/llamacpp/data; the summary table above):")
    print(STATS_HEAD)
    for backend in sorted({r["backend"] for r in own_rows}):
        for dev in ("gpu", "host"):
            for comp in ("KV", "compute", "total"):
                sub = [r for r in own_rows if r["backend"] == backend and r["device"] == dev and r["component"] == comp]
                if sub:
                    errs = [(r["predicted"] - r["logged"]) / r["logged"] * 100 if r["logged"] else 0.0 for r in sub]
                    print(_stats_line(f"{backend} {dev} {comp}", errs))
    print("llama.cpp, public logs:")
    print(STATS_HEAD)
    for k, v in ll.items():
        print(_stats_line(k, v))
    print("Ollama, public logs:")
    print(STATS_HEAD)
    for k, v in ol.items():
        print(_stats_line(k, v))
    print("vLLM, public logs (benchmarks/accuracy_vllm.py):")
    for line in _run("vllm_logs"):
        if line.startswith("median |error|"):
            print("  " + line)
    print("transformers, own CUDA runs (benchmarks/accuracy_transformers.py):")
    for line in _run("transformers_peak"):
        if line.startswith(("weights:", "peak above weights")):
            print("  " + line)


def report_public(own_rows: list[dict]) -> None:
    print()
    ll = print_llamacpp(llamacpp_rows())
    ol = print_ollama(ollama_rows())
    print_all_engines(own_rows, ll, ol)

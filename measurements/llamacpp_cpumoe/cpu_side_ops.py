"""What stays on the CPU in the measured prompt batches (cuda_h200*.jsonl), by runtimes/ggml/sched.py — the scheduler
model whose compute buffers equal every logged one — and what the host compute buffer would have been had the CPU
layers' attention run on the CPU (the hypothesis for the -ngl half miss), so the logs can tell the two apart; then the
-ngl half runs' prompt time against the plan's terms, the GPU's term also at the rate the same llama.cpp build measured
all-GPU on an H100 (measurements/speed/h100_llamacpp_own.jsonl: the same int8 peak as the H200).

    PYTHONPATH=src python3 measurements/llamacpp_cpumoe/cpu_side_ops.py [GGUF_DIR]

writes the zero-weight GGUFs (runlocal.evidence.cpumoe_runs, sparse: a few MB of disk) to GGUF_DIR (a temporary
folder by default). The counterfactual re-runs the simulator with one change to its pass 1 (ggml-backend.cpp
ggml_backend_sched_backend_id_from_cur): a FLASH_ATTN_EXT whose K cache is in the host's buffer is assigned to the
CPU instead of being left to the GPU's expansion."""

from __future__ import annotations

import collections
import inspect
import json
import sys
import tempfile
from pathlib import Path

from runlocal.evidence.cpumoe_runs import DENSE, MODELS, write_models
from runlocal.model.gguf import read_gguf
from runlocal.runtimes.ggml import repack, sched
from runlocal.runtimes.ggml.arch import GraphParams, build_graph
from runlocal.runtimes.ggml.types import VIEW_OPS
from runlocal.runtimes.ggml_scope import n_cpu_moe_overrides

HERE = Path(__file__).resolve().parent
MiB = 1 << 20


def host_ops(spec, n_gpu_layers: int, n_cpu_moe: int, no_host: bool) -> collections.Counter:
    """The ops the scheduler runs on the CPU in a 512-token prompt batch from an empty cache (n_kv 512)."""
    g = build_graph(spec, GraphParams(n_kv=512, flash_attn=True), 512, 1, 1).g
    layer_dev = sched._layer_devices(spec.n_layers, n_gpu_layers)
    nodes, ids, *_ = sched._sched_split(
        g, layer_dev, False, n_backends=2,
        weight_dev=sched.weight_devices(layer_dev, n_cpu_moe_overrides(n_cpu_moe), sched.HOST),
        host_buffer=repack.host_buffer() if no_host else None)
    return collections.Counter(n.op for n, b in zip(nodes, ids) if b == sched.HOST and n.op not in VIEW_OPS
                               and n.op != "NONE")


def attention_on_cpu() -> None:
    """Replace sched._sched_split by a copy whose pass 1 puts a host-cache FLASH_ATTN_EXT on the CPU."""
    src = inspect.getsource(sched._sched_split)
    line = "            bid[id(node)] = from_cur(node)"
    assert line in src
    src = src.replace(line, "            bid[id(node)] = host if node.op == 'FLASH_ATTN_EXT' and buf_dev(node.src[1]) "
                            "== host else from_cur(node)")
    exec(src, vars(sched))      # noqa: S102  (the counterfactual only: this script's own process)


def main(gguf_dir: Path) -> None:
    files = write_models(gguf_dir, [m for m, _ in MODELS + DENSE], randomize=False)
    specs = {alias: read_gguf(f["path"]) for alias, f in files.items()}
    runs = [json.loads(line) for name in ("cuda_h200.jsonl", "cuda_h200_run2.jsonl")
            for line in (HERE / name).read_text().splitlines()]
    for rec in runs:
        if rec["speed"]:
            n = rec["n_layer"]
            ngl = rec["n_gpu_layers"] if rec["n_gpu_layers"] != 999 else -1
            ops = host_ops(specs[rec["model"]], ngl, rec["cpu_moe_layers"], rec["no_host"])
            print(f"{rec['model']:17} {rec['mode']:16} n_layer {n:3}  on the CPU: {dict(ops)}")
    decompose(files, runs)
    dense = [r for r in runs if r["mode"] == "ngl_half" and not r["speed"]]
    planned = [simulate(specs[r["model"]], r) for r in dense]
    attention_on_cpu()
    for rec, plan in zip(dense, planned):
        alt = simulate(specs[rec["model"]], rec)
        print(f"{rec['model']:17} {rec['job']:34} CUDA_Host compute logged {rec['compute_exact_mib']['CUDA_Host']:9.4f}"
              f" MiB; planned (attention on the GPU) {plan:9.4f}; attention on the CPU {alt:9.4f}")


def decompose(files: dict, runs: list[dict]) -> None:
    """Each -ngl half run's 512-token batch: measured, the plan's GPU and copy terms, and what is left when the GPU term
    runs at the same build's measured all-GPU rate (Q4_0 runs: Llama-3.1-8B's own; Qwen3-8B's standing in for
    Qwen3-32B, which has none)."""
    from typer.testing import CliRunner

    import runlocal.hardware.speed as sp
    from runlocal.cli import app

    own = {r["model"]: r["tokens_per_s"] for r in map(json.loads, (HERE.parent / "speed" / "h100_llamacpp_own.jsonl")
                                                      .read_text().splitlines()) if r.get("test") == "pp512"}
    seen: dict = {}
    plan = sp.speed_plan

    def keep(*a):           # the check's speed plan, kept to read its terms
        seen["plan"] = plan(*a)
        return seen["plan"]
    sp.speed_plan = keep
    for rec in (r for r in runs if r["mode"].startswith("ngl_half") and r["speed"]):
        proxy = {"qwen3-32b": "qwen3-8b"}.get(rec["model"], rec["model"])
        args = ["check", files[rec["model"]]["path"], "--gpu", "h200", "--ctx", "4096", "--batch", "512", "--ubatch",
                "512", "--flash-attn", "on", "--ngl", str(rec["n_gpu_layers"]), "--json"]
        CliRunner().invoke(app, args + ([] if rec.get("use_mmap", True) else ["--no-mmap"]))
        p = seen["plan"]
        h100 = json.loads(CliRunner().invoke(app, ["check", proxy, "--gpu", "h100-sxm", "--quant", "Q4_0", "--json"])
                          .output)["speed"]["prefill_tokens_per_s"]
        t = 512 / (sum(rec["speed"]["pp_tokens_per_s"]) / len(rec["speed"]["pp_tokens_per_s"]))
        # the plan's GPU term: FLOPs at the fitted rate and the fixed per-layer cost (speed.prefill_speed)
        gpu = 512 * (p.flops / (p.eff * p.peak * 1e12) + p.n_layers * p.layer_us * 1e-6)
        rate = sp.host_link_gbs("5.0 x16", p.pageable)
        copy = p.cpu_weights / (rate * 1e9)
        ratio = h100 / own[proxy]
        print(f"{rec['model']:13} {rec['mode']:16} measured {t * 1e3:6.1f} ms a batch; plan: GPU {gpu * 1e3:5.1f} + "
              f"{p.cpu_weights / 1e9:.2f} GB at {rate:.1f} GB/s {copy * 1e3:6.1f} (gap {(t - gpu - copy) * 1e3:5.1f}); "
              f"GPU at the measured rate ({proxy}: {h100:.0f} planned, {own[proxy]:.0f} measured) "
              f"{gpu * ratio * 1e3:5.1f}: left {(t - gpu * ratio - copy) * 1e3:5.1f} ms")
    sp.speed_plan = plan


def simulate(spec, rec: dict) -> float:
    got = sched.simulate_compute_cuda(spec, rec["n_ubatch"], rec["n_ctx_requested"], rec["flash_attn"] == "on",
                                      n_gpu_layers=rec["n_gpu_layers"], type_k=rec["type_k"], type_v=rec["type_v"],
                                      n_outputs_max=rec["n_batch"])
    return got["CUDA_Host compute"] / MiB


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tmp))

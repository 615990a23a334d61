"""Qwen3-Next and Qwen3.5 / 3.6 (qwen3next, qwen35, qwen35moe: gated delta-net + full attention) against real
llama.cpp: "how much compute buffer, KV cache and recurrent state will llama.cpp reserve for this model at these
settings?"

measurements/llamacpp_qwen35/cpu.jsonl holds what llama-cpp-python 0.3.36 (llama.cpp 0c1e57098) logged on the CPU
for three catalog models, full size and shrunk to one layer period, over ten settings each (measure_cpu.py wrote
them). The graph runlocal simulates (runtimes/ggml/arch_hybrid.py) must give the same compute buffer, to the
4 decimals ~llama_context prints, and the same node count sched_reserve logs; the planner must plan the logged
KV, recurrent-state and compute buffers from the GGUF file. One more check loads the shrunk models again at
settings the records do not have.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from runlocal.evidence import qwen35_runs as measure_cpu
from runlocal.model.gguf import read_gguf
from runlocal.runtimes import ggml_graph as G
from runlocal.runtimes.llamacpp import context_sizes

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
pytest.importorskip("gguf", reason="gguf-py is not installed")

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "measurements" / "llamacpp_qwen35"
RECORDS = [json.loads(line) for line in (HERE / "cpu.jsonl").read_text().splitlines() if line.strip()]
MiB = 1 << 20



def _id(rec: dict) -> str:
    return (f"{rec['model']}{'-shrunk' if rec['shrunk'] else ''}:c{rec['n_ctx']}:ub{rec['n_ubatch']}:"
            f"fa{int(rec['flash_attn'])}:np{rec['n_seq_max']}{'u' if rec['kv_unified'] else ''}:{rec['type_k']}")


@pytest.fixture(scope="module")
def specs() -> dict:
    """The GGUF header each record's file had (sparse files: no disk), read as a user's GGUF is read."""
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for model, shrunk in sorted({(r["model"], r["shrunk"]) for r in RECORDS}):
            out[(model, shrunk)] = read_gguf(measure_cpu.write_gguf(model, Path(d), shrunk))
    return out


def simulated(spec, rec: dict) -> tuple[int, int]:
    """(CPU compute buffer bytes, nodes of the prompt graph) from runlocal's ggml simulation."""
    n_seq = rec["n_seq_max"]
    c = context_sizes(rec["n_ctx"] // n_seq, n_seq, rec["n_batch"], rec["n_ubatch"], rec["kv_unified"])
    n_kv = c.n_ctx_seq if c.n_stream > 1 else c.n_ctx
    size = G.simulate_compute(spec, c.n_ubatch, n_kv, rec["flash_attn"], n_seqs=n_seq, n_stream=c.n_stream,
                              type_k=rec["type_k"], type_v=rec["type_v"])
    p = G.GraphParams(n_kv=n_kv, flash_attn=rec["flash_attn"], n_stream=c.n_stream, type_k=rec["type_k"],
                      type_v=rec["type_v"])
    n_tokens = -(-c.n_ubatch // n_seq) * n_seq
    return size, len(G.build_graph(spec, p, n_tokens, n_seq, c.n_ubatch).g.nodes)


def test_records_cover_the_three_architectures_at_full_size_and_shrunk():
    assert {(r["arch"], r["shrunk"]) for r in RECORDS} == {(a, s) for a in ("qwen3next", "qwen35", "qwen35moe")
                                                          for s in (True, False)}
    assert all(r["ok"] for r in RECORDS) and len(RECORDS) == 60


@pytest.mark.parametrize("rec", RECORDS, ids=[_id(r) for r in RECORDS])
def test_simulated_compute_buffer_is_what_llamacpp_reserved(rec, specs):
    size, nodes = simulated(specs[(rec["model"], rec["shrunk"])], rec)
    assert f"{size / MiB:.4f}" == f"{rec['compute_mib']:.4f}"
    assert nodes == rec["graph_nodes"]


@pytest.mark.parametrize("rec", RECORDS[::3], ids=[_id(r) for r in RECORDS[::3]])
def test_planner_plans_the_logged_buffers_from_the_gguf(rec, specs):
    """The plan `runlocal check model.gguf` makes on the CPU: KV cache, recurrent state and compute buffer as
    logged (printed to 0.01 MiB)."""
    from runlocal.plan import estimate
    from runlocal.runtimes import Settings, Target
    from runlocal.runtimes.llamacpp import LlamaCpp
    from runlocal.runtimes.options import LlamaCppOptions

    spec = specs[(rec["model"], rec["shrunk"])]
    n_seq = rec["n_seq_max"]
    s = Settings(ctx=rec["n_ctx"] // n_seq, parallel=n_seq, cache_type_k=rec["type_k"], cache_type_v=rec["type_v"],
                 llamacpp=LlamaCppOptions(batch=rec["n_batch"], ubatch=rec["n_ubatch"],
                                          flash_attn="on" if rec["flash_attn"] else "off",
                                          kv_unified=rec["kv_unified"], n_gpu_layers=0))
    _, bufs, _, _ = LlamaCpp(output_cap=False).buffers(spec, estimate(spec, None), s, [Target("CPU", "cpu", 1 << 40)])
    host = bufs[-1]
    assert f"{host.compute / MiB:.2f}" == f"{rec['compute_mib_logged']:.2f}"
    assert f"{host.kv / MiB:.2f}" == f"{rec['kv']['mib']:.2f}"
    assert f"{host.rs / MiB:.2f}" == f"{rec['rs']['mib']:.2f}"


def test_real_llamacpp_at_settings_the_records_do_not_have(tmp_path):
    """Each shrunk model loaded again by llama.cpp at two new settings (an odd context and ubatch, three streams;
    a unified cache without flash attention): the simulation gives what it logs."""
    grid = ["6000:768:1:3:0:q8_0", "3000:256:0:2:1:f16"]
    for alias in measure_cpu.MODELS:
        spec = read_gguf(measure_cpu.write_gguf(alias, tmp_path, True))
        for rec in measure_cpu.measure(alias, True, grid, tmp_path):
            assert rec["ok"], rec["log"]
            size, nodes = simulated(spec, rec)
            assert (f"{size / MiB:.4f}", nodes) == (f"{rec['compute_mib']:.4f}", rec["graph_nodes"]), _id(rec)


PUBLIC = {r["id"]: r for r in map(json.loads, (HERE / "public.jsonl").read_text().splitlines())}


def test_public_partial_offload_log_state_and_cache():
    """ggml-org/llama.cpp#20587: Qwen3.5-35B-A3B, -c 4096 -np 4 with a unified cache on a CUDA build. Its recurrent
    state (4 cells over 30 delta-net layers, split between CPU and CUDA0) and its KV cache (10 attention layers) are
    what runlocal plans; its compute buffers come from an older build's unfused delta net (public.jsonl says why
    they are not scored)."""
    from runlocal.model.catalog import lookup
    from runlocal.plan import estimate
    from runlocal.runtimes import Settings, Target
    from runlocal.runtimes.llamacpp import LlamaCpp
    from runlocal.runtimes.options import LlamaCppOptions

    rec = PUBLIC["issue20587-qwen3.5-35b-a3b"]
    spec = lookup(rec["model"])
    n_seq = rec["settings"]["n_seq_max"]
    s = Settings(ctx=rec["settings"]["n_ctx"] // n_seq, parallel=n_seq, quant="Q4_K_M",
                 llamacpp=LlamaCppOptions(kv_unified=True, flash_attn="on", n_gpu_layers=0))
    _, bufs, _, _ = LlamaCpp().buffers(spec, estimate(spec, "Q4_K_M"), s, [Target("CPU", "cpu", 1 << 40)])
    assert f"{sum(b.rs for b in bufs) / MiB:.2f}" == f"{rec['logged']['RS']['total']:.2f}"
    assert f"{sum(b.kv for b in bufs) / MiB:.2f}" == f"{rec['logged']['KV']['mib']:.2f}"

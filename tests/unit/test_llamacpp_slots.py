"""llama-server's default slots: with no -np it runs "auto" (common/arg.cpp: n_parallel = -1 for the server),
which tools/server/server.cpp turns into n_parallel = 4 and kv_unified = true. runlocal plans that when
--parallel is not given (Settings.parallel = PARALLEL_AUTO): one unified stream of pad(ctx, 256) cells shared by
4 sequences; an explicit --parallel N keeps N sequences with -c = ctx × N."""

import json

import pytest

from runlocal.model.catalog import lookup
from runlocal.plan import estimate, make_plan
from runlocal.runtimes import Settings, Target, get_runtime
from runlocal.runtimes.base import PARALLEL_AUTO
from runlocal.runtimes.llamacpp import LlamaCpp

GiB = 1 << 30
CTX = 32768
UBATCH = 512           # llama-server's -ub default (common/common.h)


def pad256(n: int) -> int:
    return -(-n // 256) * 256


@pytest.fixture(scope="module")
def gemma():
    return lookup("gemma-3-27b")


@pytest.fixture(scope="module")
def weights(gemma):
    return estimate(gemma, "Q4_K_M")


def big_gpu():
    return [Target("GPU0", "gpu", 80 * GiB), Target("CPU", "cpu", 128 * GiB)]


def swa_extra(model, cells: int) -> int:
    """KV bytes of ``cells`` more cells in every sliding-window layer (f16 K and V)."""
    return sum(a.n_kv_heads * (a.k_dim + a.v_dim) * 2 * cells for a in model.attention_layers if a.window)


def kv_bytes(model, cells_global: int, cells_swa: int) -> int:
    """f16 K and V rows of every attention layer: n_kv_heads × (k_dim + v_dim) × 2 B per cell."""
    return sum(a.n_kv_heads * (a.k_dim + a.v_dim) * 2 * (cells_swa if a.window else cells_global)
               for a in model.attention_layers)


def test_settings_default_is_auto_for_llamacpp_vllm_sglang_only():
    assert Settings().parallel == PARALLEL_AUTO == -1
    # llama-server's auto slots; vLLM's / SGLang's own defaults (not 1): "not given" is kept
    for name in ("llama.cpp", "llama-server", "LlamaCpp", "vllm", "sglang"):
        assert Settings(runtime=name).parallel == PARALLEL_AUTO
    for name in ("ollama", "transformers", "mlx"):
        assert Settings(runtime=name).parallel == 1
        assert Settings().with_(runtime=name).parallel == 1
    # every spelling get_runtime maps to llama.cpp, vLLM or SGLang keeps auto, and only those
    from runlocal.runtimes import get_runtime, runtime_aliases

    for name in runtime_aliases():
        kept = get_runtime(name).name in ("llama.cpp", "vllm", "sglang")
        assert (Settings(runtime=name).parallel == PARALLEL_AUTO) == kept, name


def test_auto_is_four_slots_in_one_unified_stream(gemma, weights):
    s, bufs, steps, info = LlamaCpp().buffers(gemma, weights, Settings(ctx=CTX), big_gpu())
    c = info["context"]
    assert (c.n_seq, c.n_stream, c.n_ctx, c.n_ctx_seq) == (4, 1, CTX, CTX)     # -c 32768, not 4 × 32768
    host = bufs[-1]
    assert host.output == 4 * gemma.vocab_size * 4                              # 4 × n_vocab f32 logits
    # src/llama-kv-cache-iswa.cpp:
    #   size_swa = GGML_PAD(min(size_base, n_swa × (unified ? n_seq_max : 1) + n_ubatch), 256)
    n_swa = next(a.window for a in gemma.attention_layers if a.window)
    assert n_swa == 1024
    size_swa = pad256(min(CTX, n_swa * 4 + UBATCH))
    assert size_swa == 4608
    assert sum(b.kv for b in bufs) == kv_bytes(gemma, CTX, size_swa)
    step = next(st for st in steps if st.label == "--parallel auto")
    assert step.value == "4 slots, unified KV" and "tools/server/server.cpp" in step.source


def test_auto_equals_four_unified_slots_of_a_quarter(gemma, weights):
    """-np auto -c C is -np 4 -kvu -c C: runlocal's explicit form of that is --parallel 4 --kv-unified --ctx C/4."""
    rt = LlamaCpp()
    auto = rt.allocate(gemma, weights, Settings(ctx=CTX), big_gpu())
    explicit = rt.allocate(gemma, weights, Settings(ctx=CTX // 4, parallel=4).with_(kv_unified=True), big_gpu())
    assert auto.devices == explicit.devices


def test_explicit_parallel_one_is_the_old_plan(gemma, weights):
    rt = LlamaCpp()
    s, bufs, _, info = rt.buffers(gemma, weights, Settings(ctx=CTX, parallel=1), big_gpu())
    c = info["context"]
    assert (c.n_seq, c.n_stream, c.n_ctx) == (1, 1, CTX)
    assert bufs[-1].output == gemma.vocab_size * 4
    size_swa = pad256(min(CTX, 1024 + UBATCH))        # one sequence's window
    assert size_swa == 1536
    assert sum(b.kv for b in bufs) == kv_bytes(gemma, CTX, size_swa)
    auto = rt.buffers(gemma, weights, Settings(ctx=CTX), big_gpu())[1]
    extra = sum(b.kv for b in auto) - sum(b.kv for b in bufs)
    assert extra == swa_extra(gemma, 4608 - 1536)
    assert 1.2 * GiB < extra < 1.25 * GiB              # about 1.2 GiB more for gemma-3-27b at 32K


def test_explicit_parallel_n_keeps_n_streams(gemma, weights):
    rt = LlamaCpp(simulate_graph=False)
    c = rt.buffers(gemma, weights, Settings(ctx=CTX, parallel=2), big_gpu())[3]["context"]
    assert (c.n_seq, c.n_stream, c.n_ctx, c.n_ctx_seq) == (2, 2, 2 * CTX, CTX)
    c = rt.buffers(gemma, weights, Settings(ctx=CTX, parallel=2).with_(kv_unified=True), big_gpu())[3]["context"]
    assert (c.n_seq, c.n_stream, c.n_ctx) == (2, 1, 2 * CTX)


def test_command_line(gemma):
    rt = LlamaCpp()
    auto = rt.command(gemma, Settings(ctx=CTX, quant="Q4_K_M"))
    assert "-c 32768" in auto and "--parallel" not in auto and "-np" not in auto and "--kv-unified" not in auto
    one = rt.command(gemma, Settings(ctx=CTX, quant="Q4_K_M", parallel=1))
    assert "-c 32768 --parallel 1" in one        # without it llama-server would run its 4 auto slots
    three = rt.command(gemma, Settings(ctx=CTX, quant="Q4_K_M", parallel=3))
    assert "-c 98304 --parallel 3" in three


def test_fit_uses_the_trained_context_once(gemma, weights):
    """-c 0 with -np auto: llama_context takes the trained context for the one unified stream (common/fit.cpp:
    n_streams = 1 when kv_unified); with -np 2 (separate streams) the trained context per stream."""
    rt = LlamaCpp(simulate_graph=False)
    huge = [Target("GPU0", "gpu", 1 << 40), Target("CPU", "cpu", 1 << 40)]
    trained = gemma.max_position_embeddings
    a = rt.allocate(gemma, weights, Settings(), huge)
    assert a.settings.ctx == trained and a.settings.parallel == PARALLEL_AUTO
    assert rt.command(gemma, a.settings).count(f"-c {trained}") == 1
    fit = next(st for st in a.steps if st.label == "context (-c 0, --fit)")
    assert "streams" not in fit.formula
    two = rt.allocate(gemma, weights, Settings(parallel=2), huge)
    assert two.settings.ctx == trained and f"-c {2 * trained}" in rt.command(gemma, two.settings)
    # a GPU too small for the trained context: --fit shortens -c, rounded down to 256 (one stream)
    small = rt.allocate(gemma, weights, Settings().with_(n_gpu_layers=-2), [Target("GPU0", "gpu", 24 * GiB),
                                                                      Target("CPU", "cpu", 64 * GiB)])
    assert 4096 <= small.settings.ctx < trained and small.settings.ctx % 256 == 0


def test_plan_searches_and_fix(gemma, weights):
    auto = make_plan(gemma, Settings(ctx=CTX, quant="Q4_K_M"), big_gpu(), with_fixes=False)
    one = make_plan(gemma, Settings(ctx=CTX, quant="Q4_K_M", parallel=1), big_gpu(), with_fixes=False)
    # the largest concurrency sets --parallel explicitly: the same search for both
    assert auto.max_concurrency == one.max_concurrency and auto.max_concurrency and auto.max_concurrency > 1
    assert auto.max_context <= one.max_context
    # a GPU that holds -np 1 but not the 4 auto slots: the fix is -np 1
    gpu_of = lambda p: p.allocation.devices[0].total   # noqa: E731
    cap = (gpu_of(auto) + gpu_of(one)) // 2
    targets = [Target("GPU0", "gpu", cap), Target("CPU", "cpu", 128 * GiB)]
    plan = make_plan(gemma, Settings(ctx=CTX, quant="Q4_K_M").with_(n_gpu_layers=-2), targets)
    assert plan.verdict == "does_not_fit"
    fix = next(f for f in plan.fixes if "--parallel 1" in f.command)
    assert fix.title == "Serve one request at a time (--parallel 1)"
    assert fix.effect.startswith("parallel auto (4 slots) → 1")


def test_memory_curve_plans_auto(gemma):
    from runlocal.plan import context_curves, make_plan

    def gpu_line(settings):
        plan = make_plan(gemma, settings, big_gpu(), with_fixes=False, with_concurrency=False)
        return context_curves(plan, big_gpu(), [8192, CTX])[0]["points"]

    pts, one = gpu_line(Settings(quant="Q4_K_M")), gpu_line(Settings(quant="Q4_K_M", parallel=1))
    assert [p["kv_cache"] - q["kv_cache"] for p, q in zip(pts, one)] == [swa_extra(gemma, 4608 - 1536)] * 2


def _cli(*args):
    from typer.testing import CliRunner

    from runlocal.cli import app

    res = CliRunner().invoke(app, ["check", "gemma-3-27b", "--gpu", "rtx-4090", "--ctx", "32k", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_cli_default_is_auto(gemma):
    auto, one = _cli(), _cli("--parallel", "1")
    assert auto.keys() == one.keys() and auto["settings"].keys() == one["settings"].keys()
    assert (auto["settings"]["parallel"], one["settings"]["parallel"]) == (-1, 1)
    assert auto["settings"]["ctx"] == one["settings"]["ctx"] == CTX
    assert auto["command"] == "llama-server -hf unsloth/gemma-3-27b-it-GGUF:Q4_K_M -c 32768 -ngl 63"
    assert one["command"] == "llama-server -hf unsloth/gemma-3-27b-it-GGUF:Q4_K_M -c 32768 --parallel 1 -ngl 63"
    assert auto["memory"]["kv_cache"] - one["memory"]["kv_cache"] == swa_extra(gemma, 4608 - 1536)
    labels = [e["label"] for e in auto["explain"]]
    assert "--parallel auto" in labels and "--parallel auto" not in [e["label"] for e in one["explain"]]
    outputs = [e for e in auto["explain"] if e["label"] == "output buffer"]
    assert "× 4 seq" in outputs[0]["formula"]
    # -np -1 is llama-server's own spelling of auto
    assert _cli("--parallel", "-1")["memory"] == auto["memory"]


@pytest.mark.parametrize("runtime,gpu", [("ollama", "rtx-4090"), ("transformers", "h100"), ("mlx", None)])
def test_other_runtimes_unchanged_by_the_default(monkeypatch, runtime, gpu):
    from runlocal.check import CheckRequest, check

    monkeypatch.delenv("OLLAMA_NUM_PARALLEL", raising=False)
    kw = dict(model="qwen2.5-0.5b", runtime=runtime, ctx=4096, use_measurements=False, gpu=gpu or "none", ram="64G")
    unset = check(CheckRequest(**kw))[0].to_dict()
    one = check(CheckRequest(**kw, parallel=1))[0].to_dict()
    assert unset == one and unset["settings"]["parallel"] == 1
    assert "--parallel auto" not in [e["label"] for e in unset["explain"]]


@pytest.mark.parametrize("runtime,flag", [("vllm", "--max-num-seqs"), ("sglang", "--max-running-requests")])
def test_pooled_runtimes_keep_one_apart_from_their_default(monkeypatch, runtime, flag):
    """vLLM's unset --max-num-seqs is 1024 (256) profiled sequences, SGLang's unset --max-running-requests a
    pool-sized count: 1 is a different plan (test_one_sequence_asked.py has the figures), and neither is llama-server's
    auto slots."""
    from runlocal.check import CheckRequest, check

    kw = dict(model="qwen2.5-0.5b", runtime=runtime, ctx=4096, use_measurements=False, gpu="h100", ram="64G")
    unset = check(CheckRequest(**kw))[0].to_dict()
    one = check(CheckRequest(**kw, parallel=1))[0].to_dict()
    assert unset["settings"]["parallel"] == -1 and one["settings"]["parallel"] == 1
    assert unset["memory"] != one["memory"]
    assert flag not in unset["command"] and f"{flag} 1" in one["command"]
    assert "--parallel auto" not in [e["label"] for e in unset["explain"]]


def test_ollama_environment_still_sets_parallel(monkeypatch):
    from runlocal.check import CheckRequest, check

    monkeypatch.setenv("OLLAMA_NUM_PARALLEL", "2")
    for given in (None, -1):         # unset, or -1 (the runtime's own default): OLLAMA_NUM_PARALLEL applies
        s = check(CheckRequest(model="qwen2.5-0.5b", runtime="ollama", gpu="rtx-4090", parallel=given,
                               use_measurements=False))[0].settings
        assert s.parallel == 2
    # a stated --parallel states the server's one setting (envconfig/config.go NumParallel, which no request option
    # overrides) and wins over the variable, 1 as much as 3; the site's form sends no parallel unless one is typed
    for given in (1, 3):
        plan, notes = check(CheckRequest(model="qwen2.5-0.5b", runtime="ollama", gpu="rtx-4090", parallel=given,
                                         use_measurements=False))
        assert plan.settings.parallel == given
        # the command writes OLLAMA_NUM_PARALLEL only above Ollama's default 1: the note says the shell's 2 must go
        assert f"start `ollama serve` with OLLAMA_NUM_PARALLEL={given}" in " ".join(notes)
    # a runtime Settings of its own: OLLAMA_NUM_PARALLEL does not reach it; vLLM keeps "not given" (-1, its default)
    rt = get_runtime("vllm")
    m = lookup("qwen2.5-0.5b")
    a = rt.allocate(m, estimate(m, None), Settings(runtime="vllm", ctx=4096), [Target("GPU0", "gpu", 80 * GiB)])
    assert a.settings.parallel == -1

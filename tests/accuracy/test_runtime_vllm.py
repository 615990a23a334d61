"""The vLLM planner against public vLLM start-up logs (measurements/public_logs/vllm.jsonl).

Every number asserted against here is one a real vLLM printed in a public issue; the record's
"planner" field holds our reading of it (catalog alias, engine generation, the GPU's total memory and
whether that was logged or assumed). benchmarks/accuracy_vllm.py prints the whole comparison.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest

from runlocal.evidence import vllm_logs as bench
from runlocal.model.catalog import lookup
from runlocal.plan import estimate, make_plan
from runlocal.runtimes import get_runtime
from runlocal.runtimes.base import Settings, Target
from runlocal.runtimes.vllm import (
    BLOCK_SIZE,
    CUDA_GRAPH_BYTES,
    DEFAULT_ENGINE,
    SERVE_LIMITS_LARGE,
    SERVE_LIMITS_SMALL,
    VLLM,
    GiB,
    budget_split,
    kv_groups,
    kv_pool,
    serve_limits,
)

ROOT = Path(__file__).resolve().parents[2]

RECORDS = bench.load()          # each checked for the REQUIRED keys
REQUIRED = bench.REQUIRED
PUBLIC_HOSTS = {"github.com", "gist.github.com", "huggingface.co", "discuss.vllm.ai"}


def _id(rec: dict) -> str:
    return rec["source_url"].replace("https://github.com/", "")


def _with(pred) -> list[dict]:
    return [r for r in RECORDS if pred(r)]


# --- the dataset is what it says it is ---------------------------------------------------------------

def test_dataset_size():
    assert len(RECORDS) >= 15
    full = [r for r in RECORDS if bench.logged_tokens(r) and r["settings"]]
    assert len(full) >= 8


@pytest.mark.parametrize("rec", RECORDS, ids=[_id(r) for r in RECORDS])
def test_record_is_well_formed(rec):
    for k in REQUIRED:
        assert k in rec, k
    url = urlparse(rec["source_url"])
    assert url.scheme == "https" and url.netloc in PUBLIC_HOSTS
    assert isinstance(rec["settings"], dict) and isinstance(rec["logged"], dict) and rec["logged"]
    assert rec["excerpt"].strip()


def _appears(value, text: str) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return f"{value:,}" in text or str(value) in text
    s = f"{value}"
    return s in text or f"{value:.2f}" in text or s.rstrip("0").rstrip(".") in text


# the figures a record copies from its log must be in the quoted lines (catches transcription slips)
QUOTED = ("kv_cache_tokens", "num_gpu_blocks", "available_kv_cache_memory_gib", "kv_cache_memory_gib", "weights_gib",
          "activation_peak_gib", "non_torch_memory_gib", "max_concurrency", "total_gpu_memory_gib",
          "peak_torch_memory_gib")


@pytest.mark.parametrize("rec", RECORDS, ids=[_id(r) for r in RECORDS])
def test_logged_figures_are_in_the_excerpt(rec):
    for k in QUOTED:
        if k in rec["logged"]:
            assert _appears(rec["logged"][k], rec["excerpt"]), (k, rec["logged"][k])


@pytest.mark.parametrize("rec", _with(lambda r: "num_gpu_blocks" in r["logged"] and "max_concurrency" in r["logged"]
                                      and r["logged"]["num_gpu_blocks"]), ids=_id)
def test_logs_obey_blocks_times_16_over_max_model_len(rec):
    """vLLM's own arithmetic (kv_cache_utils.py): concurrency = blocks × 16 / max_model_len."""
    lg = rec["logged"]
    assert round(lg["num_gpu_blocks"] * BLOCK_SIZE / lg["max_concurrency_len"], 2) == pytest.approx(lg["max_concurrency"])


# --- KV memory → tokens: exact, where the log gives the memory ----------------------------------------

SINGLE_GPU_CONVERSION = _with(lambda r: r["gpu_count"] == 1 and r.get("planner", {}).get("catalog")
                              and bench.logged_tokens(r)
                              and (r["logged"].get("available_kv_cache_memory_gib") or r["logged"].get("kv_cache_memory_gib")))


def test_there_are_conversion_cases():
    assert len(SINGLE_GPU_CONVERSION) >= 4


@pytest.mark.parametrize("rec", SINGLE_GPU_CONVERSION, ids=_id)
def test_kv_tokens_from_logged_kv_memory(rec):
    """The logged KV memory (rounded to 0.01 GiB) converts to the logged token count: pages of 16 tokens,
    2 × KV heads × head_dim × dtype bytes per layer."""
    res = bench.plan_record(rec)
    lo, hi = res["conversion_band"]
    assert lo <= bench.logged_tokens(rec) <= hi


@pytest.mark.parametrize("rec", _with(lambda r: (r["gpu_count"] or 1) > 1 and r.get("planner", {}).get("catalog")
                                      and bench.logged_tokens(r) and r["logged"].get("available_kv_cache_memory_gib")),
                         ids=_id)
def test_tensor_parallel_pool_is_at_most_rank0s_memory(rec):
    """With TP the pool is sized by the smallest rank; rank 0's logged memory bounds it from above."""
    res = bench.plan_record(rec)
    real = bench.logged_tokens(rec)
    assert real <= res["conversion_band"][1]
    assert real >= 0.97 * res["conversion"].tokens


def test_fp8_kv_halves_bytes_per_token():
    m = lookup("qwen3-30b-a3b")
    (g16,) = kv_groups(m, "f16", "f16")
    (g8,) = kv_groups(m, "fp8", "fp8")
    assert g16.bytes_per_token == 2 * g8.bytes_per_token
    # #25350: 10.55 GiB of fp8 KV held 230,528 tokens = 48 layers × 4 heads × 128 × 2 × 1 B each
    assert g8.layers * g8.bytes_per_token == 49152


# --- the budget split: weights, activation peak, non-torch --------------------------------------------

SPLIT = _with(lambda r: r.get("planner", {}).get("catalog") and r["planner"].get("gpu_total_gib")
              and r["planner"].get("end_to_end", True))


# gpt-oss: the checkpoint's MXFP4 experts are 60.77 GiB (120b) on disk, but vLLM pads them for its MoE
# kernel (Marlin: intermediate to ×128, hidden to ×256): 65.97 GiB logged (vllm.py mxfp4_expert_bytes)
@pytest.mark.parametrize("rec", _with(lambda r: r in SPLIT and "weights_gib" in r["logged"]), ids=_id)
def test_weights_per_gpu(rec):
    b = bench.plan_record(rec)["budget"]
    assert b.weights / GiB == pytest.approx(rec["logged"]["weights_gib"], rel=0.03)


def test_mxfp4_padding_depends_on_the_kernel_and_the_tp_split():
    m = lookup("gpt-oss-120b")
    w = estimate(m, "mxfp4")
    s = Settings(runtime="vllm", ctx=8192)
    h100 = budget_split(m, w, s, Target("NVIDIA H100 80GB HBM3", "gpu", 79 * GiB)).weights
    b200 = budget_split(m, w, s, Target("NVIDIA B200", "gpu", 178 * GiB)).weights
    # issue #23278: "Model loading took 65.9651 GiB" on one H100; the checkpoint holds 60.77 GiB
    assert h100 / GiB == pytest.approx(65.9651, rel=0.005)
    assert w.total / GiB < 61
    # FlashInfer on SM100 pads the intermediate size to ×256 (2880 → 3072), Marlin to ×128 (→ 2944)
    assert b200 > h100
    # with TP 2 each rank pads its half (1440 → 1536): more than half of one GPU's padded experts
    tp2 = budget_split(m, w, s.with_(tp=2), Target("NVIDIA H100 80GB HBM3", "gpu", 79 * GiB)).weights
    assert h100 / 2 < tp2 < h100


@pytest.mark.parametrize("rec", _with(lambda r: r in SPLIT and "peak_torch_memory_gib" in r["logged"]), ids=_id)
def test_v0_activation_peak_scales_with_max_model_len(rec):
    """V0 without chunked prefill profiles max(max_model_len, 2048) tokens: peak_torch − weights."""
    lg = rec["logged"]
    b = bench.plan_record(rec)["budget"]
    assert b.activation / GiB == pytest.approx(lg["peak_torch_memory_gib"] - lg["weights_gib"], rel=0.05)


@pytest.mark.parametrize("rec", _with(lambda r: r in SPLIT and "activation_peak_gib" in r["logged"]
                                      and r["planner"]["engine"].startswith("v0")
                                      and (r["settings"].get("max_model_len")
                                           or lookup(r["planner"]["catalog"]).max_position_embeddings) > 32768), ids=_id)
def test_chunked_prefill_activation_is_small(rec):
    """V0 turned chunked prefill on past 32K: the profile run is 2048 tokens (MoE: × experts per token)."""
    b = bench.plan_record(rec)["budget"]
    assert b.batched_tokens == 2048
    activation, _ = bench.logged_rank_figures(rec, b)
    assert abs(activation - rec["logged"]["activation_peak_gib"]) < 0.1


@pytest.mark.parametrize("rec", _with(lambda r: r in SPLIT and "non_torch_memory_gib" in r["logged"]
                                      and r["logged"]["non_torch_memory_gib"] < 1), ids=_id)
def test_non_torch_memory(rec):
    b = bench.plan_record(rec)["budget"]
    assert abs(b.non_torch / GiB - rec["logged"]["non_torch_memory_gib"]) < 0.35


# --- end to end: KV tokens and concurrency from the GPU's total memory ----------------------------------

END_TO_END = _with(lambda r: r in SPLIT and r["planner"]["gpu_total_source"] == "logged total_gpu_memory"
                   and bench.logged_tokens(r))


def test_there_are_end_to_end_cases():
    assert len(END_TO_END) >= 2


@pytest.mark.parametrize("rec", END_TO_END, ids=_id)
def test_kv_tokens_within_5_percent(rec):
    a = bench.plan_record(rec)["alloc"]
    assert a.kv_cache_tokens == pytest.approx(bench.logged_tokens(rec), rel=0.05)


@pytest.mark.parametrize("rec", _with(lambda r: r in END_TO_END and r["logged"].get("max_concurrency")), ids=_id)
def test_max_concurrency_within_5_percent(rec):
    a = bench.plan_record(rec)["alloc"]
    assert a.max_concurrency == pytest.approx(rec["logged"]["max_concurrency"], rel=0.05)


def _kv_gib(r: dict):
    return r["logged"].get("kv_cache_memory_gib", r["logged"].get("available_kv_cache_memory_gib"))


KV_MEMORY = _with(lambda r: r in SPLIT and (_kv_gib(r) or 0) > 1 and r["planner"]["catalog"] != "gpt-oss-120b")


def test_there_are_kv_memory_cases():
    assert len(KV_MEMORY) >= 10


@pytest.mark.parametrize("rec", KV_MEMORY, ids=_id)
def test_kv_memory_within_5_percent(rec):
    """The logged rank's KV memory ("Available KV cache memory" / "reserved for KV Cache") from the GPU's total."""
    _, kv_memory = bench.logged_rank_figures(rec, bench.plan_record(rec)["budget"])
    assert kv_memory == pytest.approx(_kv_gib(rec), rel=0.05)


@pytest.mark.parametrize("rec", _with(lambda r: r in SPLIT and "activation_peak_gib" in r["logged"]
                                      and r["planner"]["engine"].startswith("v1")), ids=_id)
def test_v1_activation_peak_is_the_sampler_run(rec):
    """V1 on an H100 (`vllm serve`: 1024 rows): the dummy sampler run over max_num_seqs × vocab logits
    dominates the profiled peak."""
    b = bench.plan_record(rec)["budget"]
    assert b.activation / GiB == pytest.approx(rec["logged"]["activation_peak_gib"], rel=0.05)


@pytest.mark.parametrize("rec", _with(lambda r: r in SPLIT and "refused" in r["logged"]), ids=_id)
def test_refusal_agrees_with_the_log(rec):
    a = bench.plan_record(rec)["alloc"]
    assert (a.refusal is not None) == rec["logged"]["refused"]




# --- the rules themselves ----------------------------------------------------------------------------

def test_default_engine_counts_cuda_graphs_inside_the_budget():
    m = lookup("llama-3.1-8b")
    w = estimate(m, None)
    gpu = Target("H100", "gpu", int(79.19 * GiB))
    s = Settings(runtime="vllm", ctx=8192)
    new = budget_split(m, w, s, gpu)
    old = budget_split(m, w, s, gpu, "v1")
    assert DEFAULT_ENGINE == "v1-cudagraph" and new.graphs_in_budget and not old.graphs_in_budget
    assert old.kv_memory - new.kv_memory == CUDA_GRAPH_BYTES
    assert budget_split(m, w, s.with_(enforce_eager=True), gpu).kv_memory == old.kv_memory


def test_v0_profiles_max_model_len_tokens_v1_the_batched_tokens():
    m = lookup("llama-3.1-8b")
    w = estimate(m, None)
    gpu = Target("RTX 3090", "gpu", int(23.58 * GiB))
    s = Settings(runtime="vllm", ctx=20000)
    assert budget_split(m, w, s, gpu, "v0").batched_tokens == 20000
    assert budget_split(m, w, s, gpu, "v1").batched_tokens == SERVE_LIMITS_SMALL[0]
    assert budget_split(m, w, s.with_(ctx=65536), gpu, "v0").batched_tokens == SERVE_LIMITS_SMALL[0]


def test_serve_defaults_by_gpu():
    assert serve_limits(int(79.19 * GiB), "NVIDIA H100 80GB HBM3") == SERVE_LIMITS_LARGE
    assert serve_limits(int(79.15 * GiB), "NVIDIA A100-SXM4-80GB") == SERVE_LIMITS_SMALL
    assert serve_limits(int(23.55 * GiB), "NVIDIA GeForce RTX 4090") == SERVE_LIMITS_SMALL


def test_hybrid_sliding_layers_need_fewer_blocks_per_request():
    m = lookup("gemma-3-12b")
    groups = kv_groups(m, "f16", "f16")
    assert {g.kind for g in groups} == {"full", "sliding"}
    pool = kv_pool(10 * GiB, groups, 131072, 2048)
    full_only = kv_pool(10 * GiB, [g.__class__("full", g.layers, g.bytes_per_token) for g in groups], 131072, 2048)
    assert pool.max_concurrency > full_only.max_concurrency


def test_plan_through_the_public_path():
    """runlocal check's path: make_plan with the vllm runtime gives the pool and a refusal past it."""
    m = lookup("llama-3.1-8b")
    gpu = [Target("NVIDIA GeForce RTX 4090", "gpu", int(23.55 * GiB))]
    plan = make_plan(m, Settings(runtime="vllm", ctx=8192), gpu)
    assert plan.allocation.refusal is None and plan.allocation.kv_cache_tokens > 8192
    assert plan.max_concurrency == pytest.approx(plan.allocation.kv_cache_tokens / 8192, rel=0.01)
    too_long = make_plan(m, Settings(runtime="vllm", ctx=131072), gpu)
    assert too_long.allocation.refusal is not None
    assert isinstance(get_runtime("vllm"), VLLM)


def test_command_for_fp8_pipeline_and_multi_node():
    from runlocal.check import CheckRequest, check

    def cmd(**kw):
        return check(CheckRequest(runtime="vllm", use_measurements=False, **kw))[0].command

    # 16 H100s: TP 8 inside a node × PP 2 across two nodes, on Ray (vLLM's multi-node layout); Mixtral 8x22B has no
    # published FP8 checkpoint in data/published_checkpoints.json, so fp8 is vLLM's own --quantization fp8 at load
    c = cmd(model="mixtral-8x22b", gpu="16xh100", tp=8, pp=2, quant="fp8")
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2 --distributed-executor-backend ray" in c
    assert c.startswith("ray start --head") and "(node 2)" in c and "--quantization fp8" in c
    # Llama 3.1 405B has one (RedHatAI's FP8): that repo is served as stored, with no --quantization
    c = cmd(model="llama-3.1-405b", gpu="16xh100", tp=8, pp=2, quant="fp8")
    assert "vllm serve RedHatAI/" in c and "-FP8" in c and "--quantization" not in c
    # a checkpoint already stored in fp8 needs no --quantization
    assert "--quantization" not in cmd(model="deepseek-v3", gpu="8xh200")
    assert "ray" not in cmd(model="llama-3.1-8b", gpu="2xh100")


# --- records 25–29 and #13061: the KV-pool rules by version, against the logged figures ----------------

def _one(tail: str) -> dict:
    (rec,) = [r for r in RECORDS if r["source_url"].endswith(tail)]
    return rec


CONC_FROM_TOKENS = _with(lambda r: r.get("planner", {}).get("catalog") and bench.logged_tokens(r)
                         and r["logged"].get("max_concurrency") and r["logged"].get("max_concurrency_len"))


def test_there_are_concurrency_from_tokens_cases():
    assert len(CONC_FROM_TOKENS) >= 5


@pytest.mark.parametrize("rec", CONC_FROM_TOKENS, ids=_id)
def test_concurrency_from_the_logged_token_count(rec):
    """The blocks behind the logged "GPU KV cache size" give the logged concurrency through the engine's
    per-request arithmetic (printed to 2 decimals: within 1 %)."""
    pool = bench.plan_record(rec)["conc_from_tokens"]
    assert pool.max_concurrency == pytest.approx(rec["logged"]["max_concurrency"], rel=0.01, abs=0.006)


def test_v082_sized_gemma3_sliding_layers_like_full_ones():
    """#14696 (v0.8.2, Gemma 3 1B: 22 sliding-window + 4 full layers): "GPU KV cache size: 1,139,728 tokens",
    "Maximum concurrency for 32,768 tokens per request: 34.78x" = 1,139,728 / 32,768: no sliding saving."""
    rec = _one("vllm/issues/14696")
    lg = rec["logged"]
    assert rec["planner"]["engine"] == "v1-pre-hybrid"
    assert round(lg["kv_cache_tokens"] / lg["max_concurrency_len"], 2) == lg["max_concurrency"]
    res = bench.plan_record(rec)
    assert res["conc_from_tokens"].max_concurrency == pytest.approx(lg["max_concurrency"], abs=0.005)
    # the memory those blocks take (26 layers × 1 KV head × 256 × 2 × 2 B per token) would hold more than
    # 4× the requests under the hybrid manager: the log is not that arithmetic
    groups = kv_groups(res["model"], "f16", "f16")
    memory = lg["kv_cache_tokens"] * 26 * 1024
    assert kv_pool(memory, groups, 32768, 2048, "v1-pre-hybrid").tokens == lg["kv_cache_tokens"]
    assert kv_pool(memory, groups, 32768, 2048, "v1").max_concurrency > 4 * lg["max_concurrency"]


def test_v019_printed_blocks_per_group_not_concurrency():
    """#40691 (v0.19.0, a hybrid attention + Gated-DeltaNet model): 290,864 tokens (a multiple of 16) but
    33.04x at 32,768 tokens: tokens / max_model_len = 8.88, so the token figure is not concurrency × length."""
    rec = _one("vllm/issues/40691")
    lg = rec["logged"]
    assert rec["planner"]["engine"] == "v1"
    assert lg["kv_cache_tokens"] % BLOCK_SIZE == 0
    assert lg["kv_cache_tokens"] / lg["max_concurrency_len"] < lg["max_concurrency"] / 3


@pytest.mark.parametrize("rec", _with(lambda r: r.get("planner", {}).get("engine") == "v1-cudagraph"
                                      and bench.logged_tokens(r) and r["logged"].get("max_concurrency")), ids=_id)
def test_recent_vllm_prints_concurrency_times_max_model_len(rec):
    """v0.21+: "GPU KV cache size" = int(max_concurrency × max_model_len) (e.g. the talos PR's 302,921 tokens
    = 2.311 × 131,072; #41789's 193,624 is no multiple of 16, which blocks × 16 cannot print)."""
    lg = rec["logged"]
    assert round(lg["kv_cache_tokens"] / lg["max_concurrency_len"], 2) == pytest.approx(lg["max_concurrency"])


def test_v021_token_figure_is_not_a_block_multiple():
    lg = _one("vllm/issues/41789")["logged"]
    assert lg["kv_cache_tokens"] % BLOCK_SIZE != 0
    lg = _one("talos-argocd-proxmox/pull/1995")["logged"]
    assert lg["kv_cache_tokens"] % BLOCK_SIZE != 0


def test_v0_tensor_parallel_pool_follows_the_driver_rank():
    """#13061 (V0, TP 2 on RTX 4090s, gpu_memory_utilization 0.98): the quoted worker peaked at 0.19 GiB and had
    8.69 GiB for KV, yet the pool held 81,536 tokens = 7.46 GiB at 98,304 B/token (48 layers × 4 KV heads per
    rank × 128 × 2 × 2 B): rank 0 also ran the dummy sampler over 256 rows of the 152,064-token vocabulary."""
    rec = _one("vllm/issues/13061")
    lg = rec["logged"]
    res = bench.plan_record(rec)
    a, b = res["alloc"], res["budget"]
    assert a.kv_cache_tokens == pytest.approx(lg["kv_cache_tokens"], rel=0.05)
    assert (a.refusal is not None) == lg["refused"]
    assert b.activation_workers / GiB == pytest.approx(lg["activation_peak_gib"], abs=0.1)
    assert b.kv_memory_workers / GiB == pytest.approx(lg["kv_cache_memory_gib"], rel=0.05)
    # rank 0's peak from the logged figures: its budget (0.98 × the card's 23.55 GiB) − weights − non-torch − pool
    pool_gib = lg["kv_cache_tokens"] * 48 * 4 * 128 * 2 * 2 / GiB
    rank0_peak = 0.98 * rec["planner"]["gpu_total_gib"] - lg["weights_gib"] - lg["non_torch_memory_gib"] - pool_gib
    assert rank0_peak == pytest.approx(1.42, abs=0.02)
    assert b.activation / GiB == pytest.approx(rank0_peak, rel=0.05)


@pytest.mark.parametrize("rec", _with(lambda r: r in SPLIT and "activation_peak_gib" in r["logged"]
                                      and r["planner"]["engine"] == "v0" and "max_num_seqs" not in r["settings"]
                                      and r["planner"].get("logged_rank") != "worker"), ids=_id)
def test_v0_driver_peak_is_the_sampler_run(rec):
    """V0 (v0.6.5+) profiled the sampler with top-p/top-k over 256 rows: #13882 1.42 GiB (152,064 vocab, one GPU),
    PR #10511 1.26 GiB at TP 1 and at TP 2 alike (128,256 vocab), where a forward peak would have halved."""
    b = bench.plan_record(rec)["budget"]
    assert b.activation / GiB == pytest.approx(rec["logged"]["activation_peak_gib"], rel=0.06)

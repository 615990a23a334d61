"""Review 16, finding 9: the KV-per-token figure is labelled for what it counts, and --explain's KV sum multiplies out.

Hand computations (config.json figures):
- Llama-3.1-70B: 80 layers × 8 KV heads × 128 dims × 2 (K and V) × 2 B = 327,680 B = 320 KiB a token for the whole
  model; vLLM's TP 2 rank holds 4 KV heads of every layer: 163,840 B = 160 KiB "on each GPU (TP 2)".
- Gemma-3-27B under llama.cpp (as it loads it: 62 layers, 10 global and 52 with a 1,024-token window, 16 KV heads ×
  128 dims × 2 × 2 B = 8,192 B a layer and token), -c 32768 -np 1, ubatch 512: the window layers hold
  pad(1,024 + 512, 256) = 1,536 cells (src/llama-kv-cache-iswa.cpp), so the cache is
  10 × 8,192 × 32,768 + 52 × 8,192 × 1,536 = 2,684,354,560 + 654,311,424 = 3,338,665,984 B.
"""

from __future__ import annotations

import re

from runlocal.check import CheckRequest, check
from runlocal.render.text import kv_per_token_phrase

GLOBAL = 10 * 8_192 * 32_768
WINDOWS = 52 * 8_192 * 1_536


def test_gemma3_kv_sum_multiplies_out_to_its_value():
    plan, _ = check(CheckRequest(model="gemma-3-27b", gpu="rtx-4090", ctx="32k", parallel=1))
    step = next(st for st in plan.steps if st.label == "KV cache")
    assert step.value == f"{GLOBAL + WINDOWS:,} B" == "3,338,665,984 B"
    # every product the formula writes out, summed, is the value it shows
    terms = re.findall(r"(\d+) [\w-]+(?: \([\d,]+\))? layers? × ([\d,]+) B/token × ([\d,]+) cells", step.formula)
    assert [(int(n), int(b.replace(",", "")), int(c.replace(",", ""))) for n, b, c in terms] == [
        (10, 8_192, 32_768), (52, 8_192, 1_536)]
    assert sum(d.kv_cache for d in plan.allocation.devices) == GLOBAL + WINDOWS


def test_gemma3_summary_gives_the_figures_the_kv_column_adds_up_from():
    plan, _ = check(CheckRequest(model="gemma-3-27b", gpu="rtx-4090", ctx="32k", parallel=1))
    assert plan.allocation.kv_split == (10 * 8_192, WINDOWS)
    phrase = kv_per_token_phrase(plan)
    assert phrase.startswith("KV 80 KiB/token in the full-attention layers + 624 MiB held by the sliding-window")
    assert plan.to_dict()["kv_split"] == {"full_attention_bytes_per_token": 81_920, "sliding_window_bytes": WINDOWS}


def test_a_tensor_parallel_rank_is_labelled_per_gpu_whatever_the_pool():
    # BF16 70B on 2 × 24 GB: the pool is empty (it does not fit), the label is still the rank's
    plan, _ = check(CheckRequest(model="llama-3.1-70b", gpu="2x3090", runtime="vllm", ctx="8k"))
    assert plan.settings.tp == 2 and plan.allocation.kv_bytes_per_token == 327_680 // 2
    assert kv_per_token_phrase(plan) == "KV 160 KiB/token on each GPU (TP 2)"


def test_llama_cpp_over_two_gpus_counts_the_whole_model():
    # llama.cpp splits layers, not heads: 320 KiB a token over both cards together
    plan, _ = check(CheckRequest(model="llama-3.1-70b", gpu="2x3090", ctx="8k"))
    assert kv_per_token_phrase(plan) == "KV 320 KiB/token for the whole model"


# session 16's "noticed and left": the JSON gave kv_bytes_per_token with no word for what it counts while the text
# labelled it; the JSON now carries the same label (an added key, the figure unrenamed), through every interface


def test_json_labels_a_tensor_parallel_rank_as_the_text_does():
    plan, _ = check(CheckRequest(model="llama-3.1-70b", gpu="2x3090", runtime="vllm", ctx="8k"))
    doc = plan.to_dict()
    assert doc["kv_bytes_per_token"] == 163_840                       # 327,680 B / 2 ranks (hand computation above)
    assert doc["kv_bytes_per_token_counts"] == {"per": "gpu_rank", "tp": 2, "pp": 1, "window_layers_apart": False,
                                                "text": "KV 160 KiB/token on each GPU (TP 2)"}


def test_json_labels_llama_cpp_over_two_gpus_as_the_whole_model():
    plan, _ = check(CheckRequest(model="llama-3.1-70b", gpu="2x3090", ctx="8k"))
    doc = plan.to_dict()
    assert doc["kv_bytes_per_token"] == 327_680
    assert doc["kv_bytes_per_token_counts"]["per"] == "model"
    assert doc["kv_bytes_per_token_counts"]["text"] == "KV 320 KiB/token for the whole model"


def test_json_says_the_window_layers_are_held_apart():
    # Gemma-3-27B: kv_bytes_per_token counts all 62 layers as if each held every token (62 × 8,192 B), while the KV
    # column is kv_split's 10 full layers per token + the 52 windows' fixed bytes
    plan, _ = check(CheckRequest(model="gemma-3-27b", gpu="rtx-4090", ctx="32k", parallel=1))
    doc = plan.to_dict()
    assert doc["kv_bytes_per_token"] == 62 * 8_192
    counts = doc["kv_bytes_per_token_counts"]
    assert counts["window_layers_apart"] is True and counts["per"] == "model"
    assert counts["text"].startswith("KV 80 KiB/token in the full-attention layers + 624 MiB held by the sliding-window")


def test_the_api_schema_and_the_mcp_tool_carry_the_label(tmp_path):
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app
    from runlocal.mcp_server import check_doc

    with TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}")) as client:
        r = client.get("/api/v1/check", params={"model": "llama-3.1-70b", "gpu": "2x3090", "runtime": "vllm",
                                                "ctx": "8k"})
        assert r.status_code == 200, r.text
        assert r.json()["kv_bytes_per_token_counts"]["text"] == "KV 160 KiB/token on each GPU (TP 2)"
        schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert "kv_bytes_per_token_counts" in schema["PlanDoc"]["properties"]
    assert schema["KVCountsDoc"]["properties"]["per"]["enum"] == ["gpu_rank", "model"]
    mcp = check_doc({"model": "llama-3.1-70b", "gpu": "2x3090", "runtime": "vllm", "ctx": "8k"})
    assert mcp["kv_bytes_per_token_counts"]["per"] == "gpu_rank"

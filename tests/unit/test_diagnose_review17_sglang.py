"""review17 finding 3: an SGLang log's own mem_fraction_static (and tp_size) is what the re-plan uses and what every
command keeps; an out-of-memory after the pool was allocated gets "lower --mem-fraction-static", never "raise".

SGLANG_SERVING is review17's /tmp/r17_sgl.log: a realistic text written from SGLang's own messages (server_args,
"Load weight end", memory_pool.py's "KV Cache is allocated", PyTorch's OOM), not a public paste — the public corpus
(measurements/public_errors, tuning) holds no SGLang log with both the pool line and an OOM after it. SGLang's advice
for this case (docs.sglang.io references/faq, "CUDA Out of Memory"): decrease --mem-fraction-static.
"""

from __future__ import annotations

import re
from pathlib import Path

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.fixes import with_computed_fixes

FIXTURES = Path(__file__).parents[1] / "fixtures/review17"      # README.md there says where each text is from
SGLANG_SERVING = (FIXTURES / "sglang_serving_oom.log").read_text()
# nvidia-smi -L's line for the card, as users paste it above a log
NAMED_CARD = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5d1c0e3a-0000-0000-0000-000000000000)\n"
FRACTION = re.compile(r"--mem-fraction-static ([\d.]+)")


def answer(text: str) -> dict:
    return with_computed_fixes(diagnose_text(text), None)


def test_the_fraction_is_lowered_by_the_failed_allocation():
    doc = answer(SGLANG_SERVING)
    first = doc["fixes"][0]
    # by hand: free before the weights 17.12 + 61.05 = 78.17 GiB; 0.88 − 1.16 / 78.17 = 0.8652 → 0.86, which keeps
    # (0.88 − 0.86) × 78.17 = 1.56 GiB more outside the pool ≥ the failed 1.16 GiB
    assert first["command"].endswith("--mem-fraction-static 0.86"), first
    assert "1.56 GiB" in first["effect"] and "1.16 GiB" in first["effect"]
    # the pool gives up those 1.56 of its 2.64 GiB: 21,564 × (2.64 − 1.5634) / 2.64 ≈ 8,793 tokens
    assert "21,564" in first["effect"] and re.search(r"about 8,7\d\d", first["effect"])


def test_no_fix_raises_the_fraction_and_commands_keep_the_users_value():
    doc = answer(SGLANG_SERVING)
    values = [float(m.group(1)) for f in doc["fixes"] for m in [FRACTION.search(f["command"])] if m]
    assert values and max(values) <= 0.88, values          # never 0.95, never SGLang's default 0.829
    assert 0.829 not in values
    assert not any(f["title"].startswith("Raise mem_fraction_static") for f in doc["fixes"])


def test_tp_from_the_log_and_the_named_card():
    doc = answer(NAMED_CARD + SGLANG_SERVING)
    two = next(f for f in doc["fixes"] if f["title"].startswith("Use 2 GPUs"))
    # the card the log names, resolved through the catalog (nvidia-smi's "NVIDIA H100 80GB HBM3" is the SXM part):
    # --vram beside a catalog --gpu is that card's usable memory since review18 finding 10, so its name is the catalog's
    assert "NVIDIA H100 SXM 80GB" in two["title"]


def test_the_replan_asks_for_the_logs_fraction_and_ranks(monkeypatch):
    import runlocal.check as check_module

    asked = []
    real = check_module.check

    def spy(req, *a, **k):
        asked.append(req)
        return real(req, *a, **k)

    monkeypatch.setattr(check_module, "check", spy)
    answer(SGLANG_SERVING.replace("tp_size=1", "tp_size=2"))
    (req,) = asked
    assert req.mem_fraction_static == 0.88 and req.tp == 2
    # two ranks of the card the OOM line states: 79.19 GiB each
    assert req.vram == f"2x{round(79.19 * 2**30)}"


def test_a_start_up_pool_shortage_still_raises_it():
    # no pool allocated: the weights left the pool nothing ("Load weight end" then SGLang's own refusal), the case the
    # raise is for (sglang_fraction_fixes); 0.88 − … is not offered there
    text = ("[2026-03-02 10:00:01] server_args=ServerArgs(model_path='Qwen/Qwen3-32B', tp_size=1, "
            "mem_fraction_static=0.70)\n"
            "[2026-03-02 10:00:30] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=17.12 GB, "
            "mem usage=61.05 GB.\n"
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n")
    doc = answer(text)
    values = [float(m.group(1)) for f in doc["fixes"] for m in [FRACTION.search(f["command"])] if m]
    assert values and max(values) > 0.70

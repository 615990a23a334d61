"""`--runtime ollama==X` for releases before v0.3.14: the rules runlocal models, read at the ollama/ollama tags
(runtimes/ollama_early.py). Each expected value comes from the source line cited beside it, or a hand computation."""

from asking import ask, check_json

from runlocal.runtimes.ollama_early import (
    OLDEST_CHECKED,
    parallel_default,
    projector_sequences,
    ram_refusal,
)
from runlocal.runtimes.ollama_flash import ollama_flash

GiB = 1 << 30


def _human(n: int) -> str:
    return f"{n / GiB:.1f} GiB"


def test_num_parallel_unset_by_release():
    # v0.1.32 llm/server.go: no "--parallel" among the params (lines 162–233): one sequence, counted as 1.
    # v0.1.33 server/sched.go:49 `var numParallel = 1`; v0.1.48 envconfig/config.go:132 `NumParallel = 1`.
    # v0.2.0 envconfig/config.go:134 `NumParallel = 0 // Autoselect`, server/sched.go:57 `var defaultParallel = 4`;
    # v0.6.6 :61 still 4; v0.6.7 :61 `defaultParallel = 2`; v0.9.6 :62 still 2; v0.10.0 config.go:222
    # `Uint("OLLAMA_NUM_PARALLEL", 1)`.
    expected = {(0, 1, 32): 1, (0, 1, 33): 1, (0, 1, 48): 1, (0, 2, 0): 4, (0, 2, 8): 4, (0, 6, 6): 4,
                (0, 6, 7): 2, (0, 9, 6): 2, (0, 10, 0): 1, (0, 12, 0): 1}
    assert {k: parallel_default(k) for k in expected} == expected
    assert parallel_default(None) == 1


def test_ollama_0_2_8_says_which_rules_it_used_and_that_one_sequence_is_the_autoselect_fallback():
    plan, _ = ask("runlocal check llama-3.1-8b --runtime ollama==0.2.8 --gpu rtx-3060")
    assert plan.runtime_version[0] == "0.2.8"
    assert "default num_ctx 2048" in plan.runtime_version[1]
    assert "autoselect, 4 sequences" in plan.runtime_version[1] and "17b7186cd" in plan.runtime_version[1]
    words = next(a for a in plan.allocation.assumptions if a.startswith("OLLAMA_NUM_PARALLEL: planned at 1"))
    assert "--parallel 4" in words and "pickBestFitGPUs" in words
    assert plan.allocation.settings.parallel == 1 and plan.allocation.settings.ctx == 2048


def test_autoselect_case_planned_with_parallel_4_holds_four_contexts_of_kv():
    # Llama 3.1 8B: 32 layers × 8 KV heads × 128 head dim × (K + V) × 2 B = 131,072 B a token; Ollama 0.2.8 at
    # parallel 4 runs --ctx-size num_ctx × 4 = 8,192 (server/sched.go pickBestFitGPUs: NumCtx = origNumCtx × p):
    # 8,192 × 131,072 B = 1,073,741,824 B of KV.
    plan = check_json("llama-3.1-8b", "--runtime", "ollama==0.2.8", "--gpu", "rtx-3060", "--parallel", "4")
    assert plan["memory"]["kv_cache"] == 1_073_741_824 and plan["settings"]["parallel"] == 4


def test_no_autoselect_words_outside_v0_2_to_v0_9():
    for release in ("0.1.45", "0.10.0", "0.3.14"):
        plan, _ = ask(f"runlocal check llama-3.1-8b --runtime ollama=={release} --gpu rtx-3060")
        found = [a for a in plan.allocation.assumptions if a.startswith("OLLAMA_NUM_PARALLEL: planned at 1")]
        assert bool(found) == (release == "0.3.14"), (release, found)


def test_system_memory_refusal_by_release():
    # Hand case: 41 GiB over every device, 30 GiB of it on the host, 16 GiB RAM, 11.75 GiB VRAM.
    # v0.1.x: no refusal (3c75113e3 brought the first, in v0.2.0); v0.2.0 server/sched.go:227: total 41 > 16 + 11.75
    # = 27.75 GiB → "requested model (41.0 GiB) is too large for this system (27.8 GiB)"; v0.2.2 llm/server.go
    # (791650dde): the host's 30 > 16 GiB → "model requires more system memory (30.0 GiB) than is available (16.0 GiB)".
    args = (30 * GiB, 16 * GiB, 41 * GiB, int(11.75 * GiB), _human)
    assert ram_refusal("0.1.48", *args) is None
    assert ram_refusal("0.2.0", *args) == "requested model (41.0 GiB) is too large for this system (27.8 GiB)"
    assert ram_refusal("0.2.2", *args) == "model requires more system memory (30.0 GiB) than is available (16.0 GiB)"
    # v0.2.0–v0.2.1 compare the total with RAM + VRAM, not the host's share: 20 GiB on the host of 16 GiB RAM, a total
    # of 25 ≤ 27.75 GiB → no refusal there; v0.2.2 refuses it
    small = (20 * GiB, 16 * GiB, 25 * GiB, int(11.75 * GiB), _human)
    assert ram_refusal("0.2.1", *small) is None and ram_refusal("0.2.2", *small) is not None


def test_the_plan_words_each_eras_refusal():
    def words(release: str) -> str:
        plan, _ = ask(f"runlocal check qwen3-8b --gpu 'rtx 3090' --runtime ollama=={release} --ctx 8192")
        return next(a for a in plan.allocation.assumptions if "refusal" in a)

    assert "no system-memory refusal of its own" in words("0.1.40")
    assert "is too large for this system" in words("0.2.1") and "3c75113e3" in words("0.2.1")
    assert "NewLlamaServer (v0.2.2–v0.11.4" in words("0.2.2")


def test_a_70b_on_a_3060_with_16_gib_is_refused_by_each_release_in_its_own_words():
    for release, start in (("0.2.0", "requested model ("), ("0.2.8", "model requires more system memory (")):
        plan = check_json("llama-3.1-70b", "--runtime", f"ollama=={release}", "--gpu", "rtx-3060", "--ram", "16G")
        assert plan["verdict"] == "does_not_fit" and plan["refusal"].startswith(start), plan["refusal"]
    plan = check_json("llama-3.1-70b", "--runtime", "ollama==0.1.38", "--gpu", "rtx-3060", "--ram", "16G")
    assert plan["verdict"] == "does_not_fit" and not plan["refusal"]      # over the RAM, but not Ollama's refusal


def test_flash_attention_before_v0_1_39_is_never_on():
    # OLLAMA_FLASH_ATTENTION and --flash-attn came with e15307fdf (#4120), first tagged v0.1.39
    before = ollama_flash((0, 1, 38), "llama", "on")
    assert before.flash == "off" and not before.keeps_quantized_kv and "v0.1.39" in before.why
    at = ollama_flash((0, 1, 39), "llama", "on")
    assert at.flash == "on" and "partial offloading" in at.why and "compute capability 7+" in at.why
    assert "partial offloading" not in ollama_flash((0, 1, 40), "llama", "on").why


def test_a_projector_model_runs_one_sequence_v0_1_34_to_v0_4_0():
    # v0.1.45 llm/server.go:228–232 sets --parallel 1 after server/sched.go:73 multiplied num_ctx by the setting: one
    # sequence of 2,048 × 2 = 4,096; v0.2.0–v0.4.0 server/sched.go sets 1 before multiplying: 2,048; v0.4.1
    # (6cd566872) lifts it.
    assert projector_sequences((0, 1, 45), 2048, 2)[:2] == (4096, 1)
    assert projector_sequences((0, 3, 0), 2048, 2)[:2] == (2048, 1)
    assert projector_sequences((0, 4, 1), 2048, 2) is None and projector_sequences((0, 1, 33), 2048, 2) is None
    plan = check_json("gemma-3-4b", "--runtime", "ollama==0.3.0", "--gpu", "rtx-3090", "--parallel", "2")
    assert (plan["settings"]["ctx"], plan["settings"]["parallel"]) == (2048, 1)
    assert any("17b7186cd" in a for a in plan["assumptions"])


def test_launch_lines_of_the_first_releases():
    def line(release: str) -> str:
        plan, _ = ask(f"runlocal check llama-3.1-8b --runtime ollama=={release} --gpu rtx-3060")
        return next(a for a in plan.allocation.assumptions if a.startswith("ollama/ollama v"))

    assert "--parallel" not in line("0.1.32") and "ollama_llama_server --model" in line("0.1.32")
    assert "--parallel 1 --port" in line("0.1.33")
    assert "llm/ext_server" in line("0.1.20") and "not modelled" in line("0.1.20")
    assert "llm/llama.go" in line("0.1.10")


def test_releases_older_than_the_oldest_read_say_not_checked():
    assert OLDEST_CHECKED == (0, 1, 0)
    old, _ = ask("runlocal check llama-3.1-8b --runtime ollama==0.0.19 --gpu rtx-3060")
    first, _ = ask("runlocal check llama-3.1-8b --runtime ollama==0.1.0 --gpu rtx-3060")
    assert "not checked" in old.runtime_version[1] and "v0.1.0" in old.runtime_version[1]
    assert "not checked" not in first.runtime_version[1]

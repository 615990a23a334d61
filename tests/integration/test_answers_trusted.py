"""Issue 20, second round: questions typed as a newcomer would, the answer as read — fixes that change the plan,
one meaning per figure, compare / best / cost that agree, tables laid out for the terminal.

Expected values come from the question (what a user must be able to read off the answer), not from the code."""

import re

import pytest
from asking import ask
from rich.console import Console

from runlocal.render.text import render_plan

pytestmark = pytest.mark.slow     # each plans a catalog model with its fixes: seconds on the shared 2 cores

ARROW = re.compile(r"([\d.,]+)\s*(?:GiB|MiB|tokens|tokens/s)?\s*→\s*([\d.,]+)")


def read(command: str, width: int = 120) -> str:
    plan, notes = ask(command)
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    render_plan(plan, console, notes=notes)
    return " ".join(console.export_text().split())     # the words as read, wherever the terminal wrapped them


def _num(s: str) -> float:
    return float(s.replace(",", ""))


# --- 3. every fix changes the plan ---------------------------------------------------------------------

QUESTIONS = [
    "runlocal check llama-3.1-70b --gpu rtx-4090 --ram 128G",
    "runlocal check qwen3-30b-a3b --gpu rtx-4090 --ctx 128k --ram 64G",
    "runlocal check llama-3.1-8b --gpu rtx-4090 --runtime vllm --ctx 64k",
    "runlocal check llama-3.1-8b --gpu rtx-3060-12gb --runtime vllm --ctx 128k",
    "runlocal check kimi-k2 --gpu 8xh100 --runtime vllm --ram 2T",
    "runlocal check llama-3.1-70b --gpu rtx-4090 --runtime transformers --ram 256G",
]


@pytest.mark.parametrize("question", QUESTIONS)
def test_each_fix_says_what_it_improves_before_to_after(question):
    plan, _ = ask(question)
    assert plan.fixes, "a plan that does not fit or is tight gets at least one fix"
    commands = [f.command for f in plan.fixes]
    assert len(commands) == len(set(commands)), "no two fixes print the same command"
    for f in plan.fixes:
        assert "→" in f.effect, f
        # what it improves: the verdict, or (the runtime gave something up) the decode speed or the context back
        speed = re.search(r"decode ([\d.,]+) → ([\d.,]+) tokens/s", f.effect)
        context = re.search(r"context ([\d,]+) → ([\d,]+) tokens", f.effect)
        assert ("verdict" in f.effect or (speed and _num(speed[2]) > _num(speed[1]))
                or (context and _num(context[2]) > _num(context[1]))), f
        assert not re.search(r"(\d+) of \1 layers", f.title), f        # "Offload 36 of 36 layers"
        assert " a I" not in f.title and " a O" not in f.title           # "a IQ4_XS"
    costs = [f.cost for f in plan.fixes]
    assert costs == sorted(costs), "ranked by what the user gives up"


def test_a_fix_that_changes_nothing_is_not_listed():
    # llama-3.1-8b on a 4090 at 128k runs, tight only because the 4 slots' buffers fill the card past 90 %;
    # a --parallel 1 fix is listed only if the card then has room (verdict fits), with the memory before → after
    plan, _ = ask("runlocal check llama-3.1-8b --gpu rtx-4090 --ctx 128k")
    for f in plan.fixes:
        if "--parallel 1" in f.title:
            before, after = (_num(x) for x in re.search(r"([\d.]+) GiB → ([\d.]+) GiB", f.effect).groups())
            assert after < before and "verdict tight → fits" in f.effect


def test_the_context_fix_leaves_room_rather_than_filling_the_card():
    # qwen3-30b-a3b at 128k on a 4090: --fit put experts in RAM; the shorter context that puts them back must
    # leave the card under 90 % (fits), not "24 GiB of 24 GiB"
    plan, _ = ask("runlocal check qwen3-30b-a3b --gpu rtx-4090 --ctx 128k --ram 64G")
    ctx_fix = next(f for f in plan.fixes if f.title.startswith("Reduce context"))
    assert "verdict tight → fits" in ctx_fix.effect
    assert "-ngl" not in ctx_fix.command or "--n-cpu-moe" not in ctx_fix.command   # nothing left in RAM


def test_fp8_kv_on_vllm_says_the_tokens_double():
    # vLLM's pool is a fixed share of the card: fp8 keeps its bytes and doubles its tokens — say so, not "1.56 → 1.56 GiB"
    plan, _ = ask("runlocal check llama-3.1-8b --gpu rtx-4090 --runtime vllm --ctx 64k")
    assert plan.verdict == "does_not_fit"
    kv = next(f for f in plan.fixes if "KV cache to fp8" in f.title)
    before, after = (_num(x) for x in re.search(r"KV pool ([\d,]+) tokens → ([\d,]+) tokens", kv.effect).groups())
    assert 1.9 < after / before < 2.1 and "twice the tokens" in kv.effect


def test_kimi_k2_on_one_h100_node_gets_the_hardware_that_runs_it():
    # 1T parameters in fp8 are ~120 GiB per H100 at TP 8: no setting fits; two nodes (16 GPUs, TP 8 × PP 2) do
    plan, _ = ask("runlocal check kimi-k2 --gpu 8xh100 --runtime vllm --ram 2T")
    assert plan.verdict == "does_not_fit"
    (hw,) = [f for f in plan.fixes if "16 GPUs" in f.title]
    # starts: "tight", vLLM's default 0.92 of each card (from v0.20.0) being above the 90 % line
    # 72.8 of 79.2 GiB: vLLM's own default budget (0.92 from v0.20.0) is its tight line (verdict.tight_share)
    assert "--pipeline-parallel-size 2" in hw.command and "verdict does not fit → fits" in hw.effect


# --- 2. one meaning per word ----------------------------------------------------------------------------

def test_seventy_b_half_in_ram_on_a_4090_is_called_what_it_is():
    # 37 of 81 layers in RAM at about 2 tokens/s: it runs, from system memory, slower than one reads
    text = read("runlocal check llama-3.1-70b --gpu rtx-4090")
    # a person's pace (250 words a minute × 1.3 tokens a word / 60 s ≈ 5.4 tokens/s), said as one: the sentence is
    # about weights "read from RAM", where "slower than reading" read as the RAM's reading (review23 #18)
    assert "runs partly from system memory" in text and "slower than a person reads (about 5 tokens/s)" in text
    assert "slower than reading" not in text
    assert "runs, tight, if RAM ≥" in text and "set --ram" in text      # 32 GiB was assumed: its need is stated


def test_a_context_cut_alone_is_not_called_running_from_system_memory():
    # qwen3-4b on a 4090: --fit only shortens the trained 262K context, every layer stays on the GPU; what stays in
    # RAM is the input embedding llama.cpp always keeps there (one row read a token) — no offload to warn about
    text = read("runlocal check qwen3-4b-2507 --gpu rtx-4090")
    assert "context shortened" in text and "-ngl 37" in text
    assert "runs partly from system memory" not in text


def test_a_large_vocabulary_left_on_the_host_is_not_called_an_offload():
    # gemma 3's 262,144-token vocabulary × 3,840 (config.json) is ~1.0B embedding weights, 11 % of gemma-3-12b's
    # bytes: llama.cpp keeps that input layer on the host whatever -ngl is (src/llama-model.cpp: dev_input is the
    # CPU) and a token reads one row of it — with every layer on a 24 GB card nothing was offloaded, under llama.cpp
    # or Ollama; a model --fit really splits still says so
    for runtime in ("llama.cpp", "ollama"):
        text = read(f"runlocal check gemma-3-12b --gpu rtx-4090 --runtime {runtime}")
        assert "fits" in text and "runs partly from system memory" not in text, runtime
    assert "runs partly from system memory" in read("runlocal check qwen3-32b --gpu rtx-4090 --runtime ollama")


def test_the_ram_figure_is_what_a_token_reads_there_not_the_embedding_table():
    # review15: with layers moved, the figure "read from RAM for every token" must leave out the token embeddings
    # (one row a token): the RAM weights of the split plan less those of the plan that moved nothing (the embedding
    # table alone: 0.77 GiB for gemma 3 12B, its Q6_K token_embd; tests/unit/test_tied_embedding_bytes.py), both read
    # off the breakdown tables
    def ram_weights(text: str) -> float:      # GiB, from the table's "815 MiB" or "2.42 GiB"
        value, unit = re.search(r"CPU RAM\s+([\d.]+) ?(MiB|GiB)?", text).groups()
        return float(value) / (1024 if unit == "MiB" else 1)

    split = read("runlocal check gemma-3-12b --gpu rtx-3060-ti --runtime ollama")
    embedding = ram_weights(read("runlocal check gemma-3-12b --gpu rtx-4090 --runtime ollama"))
    figure = float(re.search(r"— ([\d.]+) GiB of the weights \(\d+%\) read from RAM", split).group(1))
    # within the speed model's estimate of the embedding's bytes (its share under llama-quantize's types, a few %)
    assert abs(figure - (ram_weights(split) - embedding)) < 0.05
    assert figure < ram_weights(split) - 0.7      # the table was 2.42 GiB, the figure said so before


def test_concurrency_is_what_the_runtime_schedules():
    text = read("runlocal check llama-3.1-8b --gpu rtx-4090 --ctx 8k --parallel 1")
    assert "serves one request at a time (--parallel 1)" in text
    assert "max concurrency" not in text
    pooled = read("runlocal check llama-3.1-8b --gpu rtx-4090 --runtime vllm --ctx 32k")
    assert re.search(r"the KV pool holds [\d.]+ requests of 32,768 tokens at once", pooled)


def test_one_max_context_figure_with_what_it_means():
    text = read("runlocal check gpt-oss-120b --gpu rtx-4090 --ram 64G")
    assert text.count("max context") == 1
    assert "the largest -c that starts" in text          # --fit chose 4,096; -c up to this starts


def test_no_speed_for_a_setup_that_does_not_start():
    text = read("runlocal check kimi-k2 --gpu 8xh100 --runtime vllm --ram 2T")
    assert "✘ does not fit" in text and "speed:" not in text


# --- 5. compare / best / cost agree -----------------------------------------------------------------------

def test_best_and_compare_give_one_speed_per_setup():
    # `runlocal best qwen3-30b-a3b` and `runlocal compare rtx-4090 rtx-3090 7900xtx --model qwen3-30b-a3b`:
    # the same quant on every card, and the 7900 XTX at one speed in both
    from runlocal.choose import best
    from runlocal.compare import compare_devices
    from runlocal.model.resolve import resolve_model

    doc = best(resolve_model("qwen3-30b-a3b")).to_dict()
    assert len({r["quant"] for r in doc["ranked"]}) == 1
    rows = compare_devices(["rtx-4090", "rtx-3090", "7900xtx"], model="qwen3-30b-a3b")
    assert len({r["quant"] for r in rows}) == 1
    xtx_best = next(r for r in doc["ranked"] if r["spec"] == "rx-7900-xtx")
    xtx_compare = next(r for r in rows if r["spec"] == "rx-7900-xtx")
    assert xtx_best["quant"] == xtx_compare["quant"]
    assert xtx_best["decode_tokens_per_s"] == pytest.approx(xtx_compare["decode_tokens_per_s"], rel=0.02)
    assert any("RAM" in n and "GPU" in n for n in doc["notes"])       # RAM said, not silently assumed


def test_compare_shows_new_and_used_prices_and_reads_at_80_columns():
    from runlocal.compare import compare_devices
    from runlocal.render.choose_text import render_compare

    text = render_compare(compare_devices(["rtx-4090", "rtx-3090", "h100"], model="qwen3-30b-a3b"))
    table = text.split("* used price")[0].splitlines()
    assert all(len(line) <= 80 for line in table), max(table, key=len)
    assert any(line.startswith("new (launch) USD") and "1,499 (2020)" in line for line in table)
    assert any(line.startswith("used USD") and "750" in line for line in table)  # measurements/used_prices: $750
    assert "* used price: https://" in text


def test_cost_of_an_h100_says_why_there_is_no_owning_price():
    from runlocal.choose import cost
    from runlocal.hardware.catalog import find_device
    from runlocal.model.resolve import resolve_model
    from runlocal.render.choose_text import render_cost

    doc = cost(resolve_model("llama-3.1-70b"), find_device("h100"))
    text = render_cost(doc)
    purchase = " ".join(line for line in text.splitlines() if line.startswith(("purchase", " ")))
    assert "data-center part" in purchase and "--price" in purchase


def test_models_fits_states_its_ram_rather_than_assuming_it():
    from runlocal.fits_here import fits_here

    on_gpu = fits_here("rtx-4090")
    assert not any(n.startswith("RAM: assumed") for n in on_gpu["notes"])
    assert any("no row depends on the host's RAM" in n for n in on_gpu["notes"])
    cpu = fits_here("none")
    assert any("assumed, not read" in n and "--ram" in n for n in cpu["notes"])


# --- 6. rough edges ----------------------------------------------------------------------------------------

def test_a_gguf_cut_after_its_header_asks_whether_the_download_is_incomplete(tmp_path):
    # `runlocal check ./llama8b.gguf --gpu rtx-4090` on a file that stops after its header: planned, and said
    from factories import write_llama_gguf

    path = write_llama_gguf(tmp_path / "llama8b.gguf", n_layers=32, hidden=4096, heads=32, kv_heads=8, ff=14336,
                            vocab=128256, tokens=1000)
    _, notes = ask(f"runlocal check {path} --gpu rtx-4090 --ram 64G")
    (note,) = [n for n in notes if "incomplete download?" in n]
    assert note.startswith("llama8b.gguf: the file holds")


def test_a_loose_name_in_compare_and_cost_says_which_variant_it_took():
    # `runlocal compare "macbook pro m3 max" 4090` and `runlocal cost llama-3.1-8b --gpu "m3 max"`
    from runlocal.compare import compare_devices
    from runlocal.render.choose_text import render_compare

    text = render_compare(compare_devices(["macbook pro m3 max", "4090"]))
    assert "'macbook pro m3 max' is taken as Apple M3 Max 36GB" in text and "--gpu m3-max-128gb" in text
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "runlocal.cli", "cost", "llama-3.1-8b", "--gpu", "m3 max"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert "'m3 max' is taken as Apple M3 Max 36GB" in out


def test_weights_on_disk_are_not_called_fits_nor_given_a_ram_speed():
    # `runlocal check llama-3.1-405b --runtime transformers --gpu rtx-4090 --ram 64G`: 812 GB of bf16 weights,
    # most of them in accelerate's offload folder — it starts, reading ~700 GiB back from disk for every token
    plan, _ = ask("runlocal check llama-3.1-405b --runtime transformers --gpu rtx-4090 --ram 64G")
    assert plan.verdict == "tight" and "on disk" in plan.allocation.compromise
    assert plan.to_dict()["speed"]["decode_tokens_per_s"] is None       # no RAM-bandwidth speed in the JSON either
    text = read("runlocal check llama-3.1-405b --runtime transformers --gpu rtx-4090 --ram 64G")
    assert "runs from disk" in text and "speed: not predicted" in text and "s a token" in text


def test_a_plan_no_setting_can_fix_says_so_and_what_it_needs():
    # `runlocal check llama-3.1-70b --runtime mlx --gpu m3-max-36gb`: 37 GiB of 4-bit weights, 24 GiB for the GPU
    plan, _ = ask("runlocal check llama-3.1-70b --runtime mlx --gpu m3-max-36gb")
    assert plan.verdict == "does_not_fit" and not plan.fixes
    text = read("runlocal check llama-3.1-70b --runtime mlx --gpu m3-max-36gb")
    assert "No fix: no setting mlx offers makes it fit here" in text and "more unified memory" in text


@pytest.mark.parametrize("width", [80, 160])
def test_best_compare_and_fits_read_at_80_columns_and_use_a_wide_terminal(monkeypatch, width):
    # `runlocal best qwen3-30b-a3b`, `runlocal compare rtx-4090 rtx-3090 --model qwen3-30b-a3b`,
    # `runlocal models --fits --gpu rtx-4090`, piped with COLUMNS=80 or 160: no line past the width except a
    # command (one line to paste)
    from runlocal.choose import best
    from runlocal.compare import compare_devices
    from runlocal.fits_here import fits_here
    from runlocal.model.resolve import resolve_model
    from runlocal.render.choose_text import render_best, render_compare, render_fits

    monkeypatch.setenv("COLUMNS", str(width))
    texts = [render_best(best(resolve_model("qwen3-30b-a3b")).to_dict()),
             render_compare(compare_devices(["rtx-4090", "rtx-3090"], model="qwen3-30b-a3b")),
             render_fits(fits_here("rtx-4090"))]
    for text in texts:
        lines = [line for line in text.splitlines() if not line.startswith("run the first: ")]
        assert max(len(line) for line in lines) <= width, max(lines, key=len)
    if width == 160:
        compare = texts[1]      # each speed row names the context it assumes
        assert "decode tok/s, 4,096 cached" in compare and "decode, short ctx" in compare
        assert any(len(line) > 80 for line in texts[0].splitlines())     # the width is used, not a fixed layout


def test_ollama_moving_layers_to_ram_is_tight_as_llama_cpp_is():
    # `runlocal check qwen3-30b-a3b --runtime ollama --gpu rtx-4060 --ram 32G`: 17 GiB of Q4_K_M on an 8 GiB card —
    # Ollama runs it by putting experts in system memory; the same word as llama-server's --fit gets
    plan, _ = ask("runlocal check qwen3-30b-a3b --runtime ollama --gpu rtx-4060 --ram 32G")
    assert plan.verdict == "tight" and "in system memory" in plan.allocation.compromise


def test_the_context_fit_cut_can_be_asked_back():
    # gpt-oss-120b on a 4090 + 64 GB: --fit chose 4,096 tokens; the answer's max context says -c 76,032 starts,
    # and a fix asks for it (more experts in RAM): the limit it targets, before → after
    plan, _ = ask("runlocal check gpt-oss-120b --gpu rtx-4090 --ram 64G")
    back = next(f for f in plan.fixes if f.title.startswith("Ask for context"))
    assert f"-c {plan.max_context}" in back.command and f"context 4,096 → {plan.max_context:,} tokens" in back.effect


def test_a_cpu_only_machine_keeps_the_trained_context_as_llama_server_does():
    # `runlocal check llama-3.1-8b --gpu none --ram 24G`: llama-server's --fit has no device with memory of its own to
    # fit ("llama_params_fit_impl: no devices with dedicated memory found", src/llama.cpp), so -c 0 is the trained
    # 131,072; nothing "gave something up", and no fix moves layers
    plan, _ = ask("runlocal check llama-3.1-8b --gpu none --ram 24G")
    assert plan.settings.ctx == 131072 and plan.allocation.compromise is None
    assert not any("-ngl" in f.title or "layers" in f.title for f in plan.fixes)
    text = read("runlocal check llama-3.1-8b --gpu none --ram 24G")
    assert "GPU" not in text.split("run:")[0]

"""Questions a newcomer types, and the answer they read (issue 20): the command as typed, the answer as
printed — commands that paste, defaults as people download them, no verdict on an unstated RAM size,
one meaning per word, output that reads at 80 columns."""

import json
import os
import subprocess
import sys

import pytest
from asking import ask
from rich.console import Console

from runlocal.render.text import render_plan

GB = 10**9


def read(command: str, width: int = 120) -> str:
    """What the terminal shows for the command at this width."""
    plan, notes = ask(command)
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    render_plan(plan, console, notes=notes)
    return console.export_text()


# --- commands that run as pasted -----------------------------------------------------------------------

@pytest.mark.parametrize("question, pasted", [
    # the library names these qwen3:30b-a3b-q4_K_M, llama3.1:8b-instruct-q4_K_M, gpt-oss:20b (ollama.com/library)
    ("runlocal check qwen3-30b-a3b --runtime ollama --gpu rtx-4090", "qwen3:30b-a3b-q4_K_M"),
    ("runlocal check llama-3.1-8b --runtime ollama --gpu rtx-4090", "llama3.1:8b-instruct-q4_K_M"),
    ("runlocal check gpt-oss-20b --runtime ollama --gpu rtx-4090", "gpt-oss:20b"),
])
def test_ollama_commands_name_real_library_tags(question, pasted):
    plan, _ = ask(question)
    assert f"FROM {pasted}\\n" in plan.command or plan.command.endswith(f"ollama run {pasted}")
    assert f"{plan.model.id}:" not in plan.command        # not the runlocal alias with a quant glued on


def test_a_quant_the_library_lacks_is_pulled_from_the_hub_and_said_so():
    plan, _ = ask("runlocal check llama-3.1-8b --runtime ollama --gpu rtx-4090 --quant IQ4_XS")
    assert "hf.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:IQ4_XS" in plan.command
    assert "no IQ4_XS tag for llama3.1" in plan.command
    assert ":iQ4_XS" not in plan.command


def test_a_model_without_a_local_library_tag_says_so():
    plan, _ = ask("runlocal check kimi-k2 --runtime ollama --gpu 8xh200")
    assert "no Ollama library tag" in plan.command and "cloud" in plan.command
    assert "kimi-k2:" not in plan.command.split("#")[0]


def test_vllm_keeps_the_users_own_path(tmp_path, monkeypatch):
    from runlocal.model.catalog import find_entry

    folder = tmp_path / "mymodel"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(find_entry("qwen3-0.6b")["config"]))
    monkeypatch.chdir(tmp_path)
    plan, _ = ask("runlocal check ./mymodel --runtime vllm --gpu rtx-4090")
    assert plan.command.startswith("vllm serve ./mymodel ")
    plan, _ = ask("runlocal check ./mymodel --runtime sglang --gpu rtx-4090")
    assert "--model-path ./mymodel " in plan.command


def test_mlx_uses_the_published_conversion_and_no_rotating_cache_by_default():
    plan, _ = ask("runlocal check qwen3-30b-a3b --runtime mlx --gpu m3-max-64gb")
    assert plan.command.startswith("mlx_lm.generate --model mlx-community/Qwen3-30B-A3B-4bit")
    line = plan.command.split("  # ")[0]        # the comment says what --max-kv-size would do (review19 section 13)
    assert "mlx_lm.convert" not in line and "--max-kv-size" not in line
    assert plan.weights.quant == "mlx-4bit"


def test_mlx_converts_only_what_is_not_published():
    plan, _ = ask("runlocal check granite-3.3-8b --runtime mlx --gpu m3-max-64gb --quant mlx-4bit")
    assert plan.command.startswith("mlx_lm.convert --hf-path ibm-granite/granite-3.3-8b-instruct -q --q-bits 4 ")


# --- defaults as users run them ----------------------------------------------------------------------

def test_gpt_oss_120b_on_a_4090_with_64gb_is_not_refused():
    # the well-known setup: ggml-org/gpt-oss-120b-GGUF (MXFP4, about 63 GB) with the experts in 64 GB of RAM
    plan, _ = ask("runlocal check gpt-oss-120b --gpu rtx-4090 --ram 64G")
    assert plan.weights.quant == "MXFP4_MOE"
    assert 60 * GB < plan.weights.total < 66 * GB
    assert plan.verdict != "does_not_fit"
    assert "-hf ggml-org/gpt-oss-120b-GGUF " in plan.command


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama"])
def test_mxfp4_as_users_spell_it_is_the_gguf_type(runtime):
    plan, _ = ask(f"runlocal check gpt-oss-20b --runtime {runtime} --gpu rtx-4090 --quant mxfp4")
    assert plan.weights.quant == "MXFP4_MOE"
    assert 11 * GB < plan.weights.total < 13 * GB       # the 12.1 GB file, not the checkpoint sizing


def test_no_verdict_turns_on_an_assumed_ram_size():
    # 16×H100 and no --ram on vLLM 0.17.1: its swap-space check (4 GiB × TP 8 = 32 GiB > 0.7 × 32) needs more than an
    # assumed 32 GiB; the answer names the size it needs and the flag, instead of refusing over a number nobody gave
    plan, _notes = ask("runlocal check kimi-k2 --runtime vllm==0.17.1 --gpu 16xh100")
    assert plan.verdict != "does_not_fit"
    assert any("RAM ≥" in c and "--ram" in c for c in plan.conditions), plan.conditions
    given, _ = ask("runlocal check kimi-k2 --runtime vllm==0.17.1 --gpu 16xh100 --ram 1T")
    assert given.verdict == plan.verdict and not given.conditions
    # from v0.18.0 (PR #36216) there is no such check: no RAM condition from it
    current, _ = ask("runlocal check kimi-k2 --runtime vllm --gpu 16xh100")
    assert not any("RAM ≥" in c for c in current.conditions), current.conditions


def test_without_ram_the_4090_gpt_oss_answer_says_how_much_ram_it_needs():
    plan, _ = ask("runlocal check gpt-oss-120b --gpu rtx-4090")
    assert plan.verdict != "does_not_fit"
    (condition,) = plan.conditions
    need = int(condition.split("RAM ≥ ")[1].split(" GiB")[0])
    assert 36 <= need <= 48 and "--ram" in condition
    assert "does not fit" in condition            # what it would be at the assumed size, said once


def test_a_cpu_only_plan_reads_as_one():
    text = read("runlocal check llama-3.1-8b --gpu none")
    assert "GPU" not in text.replace("-ngl 0", "")
    assert "RAM" in text and "fits if RAM ≥" in text
    for question in ("runlocal check llama-3.1-70b --gpu none --ram 32G --ctx 8k",
                     "runlocal check llama-3.1-8b --gpu none --ram 21.5G"):     # a laptop: no GPU, no --ctx
        plan, _ = ask(question)
        assert plan.fixes and not any("-ngl" in f.command.replace("-ngl 0", "") or "GPU" in f.title + f.effect
                                      for f in plan.fixes), question


def test_a_context_past_the_trained_one_is_warned_with_the_scaling_it_needs():
    text = read("runlocal check llama-3.1-8b --gpu rtx-4090 --ctx 1M")
    assert "beyond the 131,072 tokens the model was trained for" in text
    assert "--rope-scaling yarn --rope-scale 8 --yarn-orig-ctx 131072" in text
    plan, _ = ask("runlocal check llama-3.1-8b --runtime vllm --gpu h100 --ctx 256k")
    assert any('"rope_type": "yarn", "factor": 2' in st.formula for st in plan.steps)


# --- one meaning per word ----------------------------------------------------------------------------------

def test_the_verdict_is_defined_where_it_is_printed():
    text = read("runlocal check qwen3-30b-a3b --gpu rtx-4090 --ctx 32k --ram 64G --runtime ollama")
    assert "fits: starts and runs these settings with every GPU under 90 % full" in text
    text = read("runlocal check gpt-oss-120b --gpu rtx-4090 --ram 64G")
    assert "tight: starts, but a device is above 90 % full or something is given up" in text


def test_speeds_say_what_context_they_assume_and_show_the_short_context_figure():
    plan, _ = ask("runlocal check llama-3.1-8b --gpu rtx-4090 --ctx 32k --ram 64G")
    sp = plan.speed
    assert sp["decode_at_context"] == 16384 and sp["decode_short_context"] == 512
    assert sp["decode_short_tokens_per_s"] > sp["decode_tokens_per_s"]      # less KV to read per token
    text = read("runlocal check llama-3.1-8b --gpu rtx-4090 --ctx 32k --ram 64G", width=400)
    assert "with 16,384 tokens in the KV cache (half the context)" in text
    assert "at a short context (512 tokens, one request)" in text


def test_units_per_gpu_or_for_the_whole_model_are_said():
    text = read("runlocal check kimi-k2 --runtime vllm --gpu 16xh100 --ram 1T")
    # TP 8 × PP 2: a rank holds its stage's layers (half of them) and an MLA latent whole (not split by TP)
    assert "/token on each GPU (TP 8 × PP 2)" in text and "figures are each device's, not their sum" in text
    assert "/token for the whole model" in read("runlocal check llama-3.1-8b --gpu rtx-4090 --ram 64G")


# --- terminal output -------------------------------------------------------------------------------------

def test_eighty_columns_keep_names_whole():
    text = read("runlocal check gpt-oss-120b --gpu rtx-4090 --ram 64G", width=80)
    lines = text.splitlines()
    # a command is one line however wide (the terminal wraps it; a copy pastes as one line): the rest fits in 80
    commands = [line for line in lines if line.startswith(("  run: ", "     $ "))]
    assert commands and all("\n" not in c for c in commands)
    assert max(len(line) for line in lines if line not in commands) <= 80
    assert any("NVIDIA GeForce RTX 4090" in line and "█" in line for line in lines)   # the bar label whole
    row = next(i for i, line in enumerate(lines) if line.startswith("RTX 4090"))     # the table row on one line
    assert "GiB" not in lines[row] or lines[row + 1].startswith("CPU RAM")


def test_wide_terminals_use_the_width():
    text = read("runlocal check gpt-oss-120b --gpu rtx-4090 --ram 64G", width=160)
    assert any(line.startswith("NVIDIA GeForce RTX 4090") and "GiB" in line for line in text.splitlines())


def _cli(*args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "runlocal.cli", *args], capture_output=True, text=True, env=env, check=False,
                          timeout=120)


@pytest.mark.parametrize("command", ["check", "best", "compare", "cost", "explain"])
def test_help_lists_the_six_runtimes(command):
    out = _cli(command, "--help").stdout
    for name in ("llama.cpp", "ollama", "vllm", "sglang", "transformers", "mlx"):
        assert name in out, name


def test_errors_id_prints_that_entry():
    r = _cli("errors", "cuda-oom-load")
    assert r.returncode == 0
    assert r.stdout.startswith("cuda-oom-load: CUDA out of memory while loading or starting the model")
    assert "Cause:" in r.stdout and "What to do:" in r.stdout


def test_an_unknown_hub_id_offline_fails_at_once_with_the_true_reason(tmp_path, monkeypatch):
    import time

    import huggingface_hub.constants as c

    from runlocal.errors import RemoteError
    from runlocal.model.resolve import resolve_model

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(c, "ENDPOINT", "http://127.0.0.1:9")      # nothing listens: the network is down
    start = time.monotonic()
    with pytest.raises(RemoteError, match=r"unreachable\) and the model is not in the catalog or the Hugging Face cache"):
        resolve_model("someone/unknown-model")
    assert time.monotonic() - start < 5                             # not huggingface_hub's retries


# --- loose device names ----------------------------------------------------------------------------------

def test_a_laptop_name_resolves_to_its_chip_and_the_variant_is_said():
    from runlocal.hardware.catalog import find_device

    assert find_device("macbook pro m3 max").id == "m3-max-36gb"
    assert find_device("Mac Studio M2 Ultra 192GB").id == "m2-ultra-192gb"
    assert find_device("m3 pro").id == "m3-pro-18gb"             # "pro" of the chip is kept
    _, notes = ask("runlocal check llama-3.1-8b --runtime mlx --gpu 'macbook pro m3 max'")
    (note,) = [n for n in notes if "is taken as" in n]
    assert "Apple M3 Max 36GB" in note and "48, 64, 96, 128 GB" in note and "--gpu m3-max-128gb" in note
    _, notes = ask("runlocal check llama-3.1-8b --runtime mlx --gpu 'm3 max 64gb'")
    assert not any("is taken as" in n for n in notes)           # a named size is not second-guessed


def test_vllm_on_a_cpu_only_machine_is_planned_as_its_cpu_backend():
    # `vllm serve` on the CPU backend up to v0.12 keeps VLLM_CPU_KVCACHE_SPACE (4 GiB unset) of KV, not 90 % of the
    # RAM: Llama 3.1 8B's 128 KiB/token hold 32,768 tokens, so its 131,072-token default refuses to start
    plan, _ = ask("runlocal check llama-3.1-8b --runtime vllm==0.12.0 --gpu none --ram 64G")
    assert plan.allocation.kv_cache_tokens == 4 * 2**30 // (128 * 1024)
    assert plan.verdict == "does_not_fit" and "VLLM_CPU_KVCACHE_SPACE" in plan.allocation.refusal
    assert plan.max_context == 32768
    assert any("--max-model-len 32768" in f.command for f in plan.fixes)


def test_fix_titles_read_as_said():
    from runlocal.fixes import _quant_title

    assert _quant_title("IQ4_XS") == "Use an IQ4_XS GGUF" and _quant_title("Q4_K_M") == "Use a Q4_K_M GGUF"


def test_best_under_a_budget_says_the_prices_are_launch_prices():
    from runlocal.render.choose_text import render_best

    doc = {"model": {"id": "qwen3-30b-a3b"}, "runtime": "llama.cpp", "ctx": 8192, "price_basis": "launch",
           "budget_usd": 1000, "over_budget": 47, "ranked": [], "unpriced": [], "notes": []}
    text = render_best(doc)
    assert "launch prices" in text and "--used" in text and "RTX 3090" in text
    assert "--used compares" not in render_best({**doc, "price_basis": "used"})


def test_cost_without_a_catalog_price_says_why_in_the_owning_column():
    from runlocal.render.choose_text import render_cost

    own = {"purchase_usd": None, "amortised_per_year_usd": None, "electricity_per_year_usd": 367.9,
           "kwh_per_year": 2044, "per_year_usd": None, "per_million_tokens_usd": None}
    rent = {"usd_per_hour": 2.69, "per_year_usd": 7854.8, "per_million_tokens_usd": 5.454, "offer": None}
    doc = {"model": "llama-3.1-8b", "spec": "h100-sxm", "run": None, "own": own, "rent": rent, "cheaper": None,
           "notes": [], "assumptions": {"hours_per_day": 8, "years": 3, "kwh_price_usd": 0.18, "utilization": 1}}
    purchase = next(line for line in render_cost(doc).splitlines() if line.startswith("purchase"))
    assert "no catalog price: --price USD" in purchase


def test_compare_plans_one_quant_for_every_device():
    # `runlocal compare rtx-4090 rtx-3060-12gb --model qwen3-14b`: the 12 GB card fits Q5_K_M at best, the 4090
    # Q8_0; the rows share Q5_K_M so their speeds compare the cards, and each keeps its own best beside it
    from runlocal.compare import compare_devices

    rows = compare_devices(["rtx-4090", "rtx-3060-12gb"], model="qwen3-14b")
    assert len({r["quant"] for r in rows}) == 1
    assert rows[0]["best_quant"] != rows[1]["best_quant"]
    each = compare_devices(["rtx-4090", "rtx-3060-12gb"], model="qwen3-14b", best_quant_each=True)
    assert [r["quant"] for r in each] == [r["best_quant"] for r in rows]


def test_a_recorded_reason_says_no_library_tag_once():
    """mends21b: data/ollama_tags.json records Qwen3.5-0.8B's reason as "no Ollama library tag is recorded here for
    this checkpoint (ollama.com/library was not read for it); …", and the command's comment once prefixed it with
    "no Ollama library tag: " — the words twice. Kimi K2's reason ("the library's kimi-k2 tags are cloud-only") still
    gets the prefix (test above)."""
    plan, _ = ask("runlocal check qwen3.5-0.8b --runtime ollama --gpu rtx-4090")
    comment = plan.command.split("#", 1)[1]
    assert comment.count("no Ollama library tag") == 1
    assert "no Ollama library tag is recorded here for this checkpoint" in comment

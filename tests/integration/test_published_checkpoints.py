"""Issue 20 (defaults as users run them, commands that run as pasted) and issue 18.1 (best / compare with a runtime
version), for vLLM and SGLang: the question as a user types it, the answer as read.

Expected values come from the question and from public facts cited beside them (a repo's file sizes, a GPU's
compute capability), not from the code under test."""

import json
import os
import re
import subprocess
import sys

import pytest
from asking import ask, check_json
from rich.console import Console

from runlocal.render.text import render_plan

pytestmark = pytest.mark.slow


def read(command: str) -> tuple[object, str]:
    plan, notes = ask(command)
    console = Console(width=120, record=True, force_terminal=False, color_system=None)
    render_plan(plan, console, notes=notes)
    return plan, " ".join(console.export_text().split())


def cli(*args: str) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", *args], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return r.stdout


# --- the default: the checkpoint the user named, the published quantized ones offered -------------------------

def test_one_gpu_user_is_shown_the_published_checkpoints_not_only_more_gpus():
    # "Can I run Qwen3-30B-A3B in vLLM on my RTX 4090?" — the repo as stored is BF16 (30.5B × 2 bytes ≈ 57 GiB), it
    # cannot fit 24 GiB; but Qwen publishes FP8 and GPTQ-Int4 conversions that one-GPU users pull
    plan, text = read("runlocal check qwen3-30b-a3b --gpu rtx-4090 --runtime vllm")
    assert plan.verdict == "does_not_fit"
    assert "vllm serve Qwen/Qwen3-30B-A3B --max-model-len" in plan.command     # what was planned is what it pulls
    assert "planned as stored in Qwen/Qwen3-30B-A3B (bf16)" in text
    assert "Qwen/Qwen3-30B-A3B-FP8" in text and "Qwen/Qwen3-30B-A3B-GPTQ-Int4" in text
    published = [f for f in plan.fixes if "published" in f.title]
    assert published, [f.title for f in plan.fixes]
    fix = published[0]
    assert fix.command.startswith("vllm serve Qwen/Qwen3-30B-A3B-GPTQ-Int4 --max-model-len ")
    assert "--quantization" not in fix.command                  # the repo's config.json names its method
    before, after = (float(x) for x in re.search(r"weights ([\d.]+) GiB → ([\d.]+) GiB", fix.effect).groups())
    assert before > 50 and after < before / 3 and after < 24     # 4-bit weights: about a quarter, under the card
    assert "does not fit → fits" in fix.effect    # 0.92 of the card is vLLM's own default budget: its tight line
    # the fix comes before buying more GPUs (it gives up a little quality, not money)
    titles = [f.title for f in plan.fixes]
    assert titles.index(fix.title) < next(i for i, t in enumerate(titles) if t.startswith("Use ") and "GPUs" in t)


def test_json_answer_states_the_default_among_its_assumptions():
    doc = check_json("qwen3-30b-a3b", "--gpu", "rtx-4090", "--runtime", "vllm")
    assert doc["command"].startswith("vllm serve Qwen/Qwen3-30B-A3B ")
    assert any(a.startswith("planned as stored in Qwen/Qwen3-30B-A3B (bf16)") and "Qwen/Qwen3-30B-A3B-FP8" in a
               for a in doc["assumptions"])


def test_quant_fp8_plans_the_official_fp8_repo():
    # "vllm serve Qwen/Qwen3-30B-A3B-FP8 on an H100: how much is left for the KV cache?"
    plan, text = read("runlocal check qwen3-30b-a3b --gpu h100 --runtime vllm --quant fp8")
    assert plan.command.startswith("vllm serve Qwen/Qwen3-30B-A3B-FP8 --max-model-len ")
    assert "--quantization" not in plan.command
    assert "published FP8 checkpoint Qwen/Qwen3-30B-A3B-FP8" in text
    bf16, _ = ask("runlocal check qwen3-30b-a3b --gpu h100 --runtime vllm")
    assert 0.45 < plan.weights.total / bf16.weights.total < 0.55      # one byte a weight instead of two
    assert plan.verdict == "fits"              # vLLM's default 0.92 of the card is its own budget (verdict.tight_share)


# hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 holds model-00001-of-00002.safetensors 4.68 GB and
# model-00002-of-00002.safetensors 1.05 GB (https://huggingface.co/hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4/
# tree/main); RedHatAI/Meta-Llama-3-8B-Instruct-FP8 holds 5 GB + 4.08 GB
# (https://huggingface.co/neuralmagic/Meta-Llama-3-8B-Instruct-FP8/tree/3991529581aeee08664db79f155dffe645f88254)
@pytest.mark.parametrize("question, repo, files_gb", [
    ("runlocal check llama-3.1-8b --gpu rtx-4090 --runtime vllm --quant awq",
     "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", 4.68 + 1.05),
    ("runlocal check llama-3-8b --gpu rtx-4090 --runtime sglang --quant fp8",
     "RedHatAI/Meta-Llama-3-8B-Instruct-FP8", 5.00 + 4.08),
])
def test_published_checkpoint_weights_match_the_repos_files(question, repo, files_gb):
    plan, _ = ask(question)
    assert repo in plan.command.split()
    assert abs(plan.weights.total / 1e9 - files_gb) < 0.01 * files_gb     # the Hub rounds each file to 0.01 GB


# --- nothing published: say so, and print a command that does what was planned ----------------------------------

def test_fp8_with_nothing_published_is_vllms_own_quantization_at_load():
    plan, text = read("runlocal check mistral-7b-v0.3 --gpu rtx-4090 --runtime vllm --quant fp8")
    assert "vllm serve mistralai/Mistral-7B-Instruct-v0.3 " in plan.command + " "
    assert "--quantization fp8" in plan.command
    assert "no published FP8 checkpoint" in text and "quantizes the 16-bit checkpoint at load" in text


def test_awq_with_nothing_published_serves_the_folder_the_user_is_told_to_make():
    plan, text = read("runlocal check mistral-7b-v0.3 --gpu rtx-4090 --runtime vllm --quant awq")
    assert plan.command.startswith("vllm serve ./Mistral-7B-Instruct-v0.3-AWQ ")
    assert "no published AWQ checkpoint" in text and "calibration" in text


# --- the kernels' GPUs (vLLM docs: FP8 from compute capability 7.5 as W8A16 Marlin, W8A8 from 8.9) ---------------

def test_fp8_on_a_v100_is_refused_for_its_compute_capability():
    plan, text = read("runlocal check llama-3.1-8b --gpu v100 --runtime vllm --quant fp8 --ctx 8192")
    assert plan.verdict == "does_not_fit"                      # the V100 is compute capability 7.0
    assert "compute capability ≥ 7.5" in text and "7.0" in text


def test_fp8_refused_on_a_32gb_v100_offers_the_stored_checkpoint():
    # 8B × 2 bytes ≈ 15 GiB fits a 32 GB card: the way out of the refusal is the BF16 repo itself
    plan, _ = ask("runlocal check llama-3.1-8b --gpu v100-sxm2-32gb --runtime vllm --quant fp8 --ctx 8192")
    assert plan.verdict == "does_not_fit"
    stored = [f for f in plan.fixes if "as stored" in f.title]
    assert stored and stored[0].command.startswith("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192")
    assert "does not fit → fits" in stored[0].effect    # vLLM's default 0.92 of the card: its tight line


def test_fp8_on_an_rtx_3090_runs_weight_only_and_says_so():
    plan, _ = ask("runlocal check llama-3.1-8b --gpu rtx-3090 --runtime vllm --quant fp8 --ctx 8192")
    assert plan.verdict in ("fits", "tight")                   # compute capability 8.6: FP8 Marlin, W8A16
    assert any("W8A16" in a for a in plan.allocation.assumptions)


# --- best / compare with a runtime version (issue 18.1) -----------------------------------------------------------

def test_best_with_a_vllm_release_uses_and_names_that_releases_rules():
    doc = json.loads(cli("best", "llama-3.1-8b", "--runtime", "vllm==0.19.0", "--budget", "1000", "--json"))
    assert doc["runtime"] == "vllm==0.19.0"
    rules = [n for n in doc["notes"] if n.startswith("rules:")]
    assert rules and "0.19.0" in rules[0] and "outside the budget" in rules[0]   # v0.19: graphs after the pool
    current = json.loads(cli("best", "llama-3.1-8b", "--runtime", "vllm", "--budget", "1000", "--json"))
    assert "since v0.21.0" in next(n for n in current["notes"] if n.startswith("rules:"))
    # graphs outside (v0.19) or inside (v0.21+) the budget: the same card's peak differs between the two
    old = {r["spec"]: r["peak_bytes"] for r in doc["ranked"]}
    new = {r["spec"]: r["peak_bytes"] for r in current["ranked"]}
    assert any(old[s] != new[s] for s in old.keys() & new.keys())


def test_compare_with_a_vllm_release_says_which_rules_it_used():
    text = " ".join(cli("compare", "4090", "h100", "--model", "qwen2.5-7b", "--runtime", "vllm==0.8.4").split())
    assert "rules: vllm==0.8.4:" in text and "before the hybrid KV-cache manager" in text

"""`runlocal check` read without Typer (cli_check.py) must mean what the Typer command means: the same arguments
for every command line it takes, and every other command line left to Typer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runlocal import cli_check
from runlocal.cli import app

SRC = Path(__file__).resolve().parents[2] / "src"

TAKEN = [
    "check llama-3.1-8b",
    "check llama-3.1-8b --gpu rtx-4090 --json",
    "check qwen3-30b-a3b --gpu 2x3090 --runtime vllm --ctx 32k --max-num-seqs 8 --gpu-memory-utilization 0.85",
    "check --gpu rtx-3060 llama-3.1-70b -c 8192 --ngl 40 --explain",
    # pasted spellings (llama.cpp common/arg.cpp -ngl / --ctx-size / --batch-size, vLLM -tp / -pp, SGLang --tp-size)
    "check llama-3.1-70b --gpu rtx-3060 -ngl 40 --ctx-size 8192 --batch-size 512 --ubatch-size 256",
    "check qwen3-8b --gpu 2x3090 -r vllm -tp 2 -pp 1",
    "check qwen3-8b --gpu 2x3090 -r sglang --tp-size 2 --context-length 8192 --max-running-requests 4",
    "check llama-3.1-70b --gpu rtx-3060 --ngl all -ctk q8_0 -ctv q8_0 -fa on -np 2 -b 1024 -ub 256",
    "check deepseek-v3 --gpu h100 -ot exps=CPU --override-tensor blk.1=CPU --n-cpu-moe 4 -kvu --no-mmap --swa-full",
    "check qwen2.5-0.5b --gpu none --runtime transformers --ctx 4096 --attn-implementation SDPA --ram 64G",
    "check gemma-3-27b --vram 20G --ram 32G --quant q4_k_m --kv-cache q8_0 --fit off -nkvo",
    "check llama-3.1-8b --gpu h100 --runtime sglang --mem-fraction-static 0.8 --tp 1 --pp 1 --ep -dp 1",
    "check llama-3.1-8b --gpu h100 --runtime vllm==0.19.0 --enable-lora --max-loras 2 --max-lora-rank 16 --enforce-eager",
    "check llama-3.1-8b --gpu rtx-4090 --ctx 4096 --ctx 8192 --max-new-tokens 100 --backend vulkan -r ollama",
    "check qwen3-30b-a3b --gpu rtx-3060 -cmoe -ncmoe 10",
    "check qwen3-30b-a3b --gpu rtx-3060 --cpu-moe --json",
]

LEFT = [
    "check",
    "check --help",
    "check llama-3.1-8b --ctx=8192",
    "check llama-3.1-8b --ctx -1",
    "check llama-3.1-8b --parallel two",
    "check llama-3.1-8b --no-such-flag",
    "check llama-3.1-8b qwen3-8b",
    "check llama-3.1-8b --gpu",
    "check llama-3.1-8b -- --json",
    "best llama-3.1-70b",
    "models --fits",
]


@pytest.mark.parametrize("line", TAKEN)
def test_each_plain_check_line_gets_the_arguments_typer_gives(line, monkeypatch):
    seen = []
    monkeypatch.setattr(cli_check, "run_check", lambda *args, **kwargs: seen.append((args, kwargs)))
    result = CliRunner().invoke(app, line.split())
    assert result.exit_code == 0, result.output
    (args, kwargs), = seen
    typer_args = {"model": args[0], "explain": args[1], "as_json": args[2], **kwargs}
    typer_args["override_tensor"] = list(typer_args["override_tensor"] or ()) or None
    assert cli_check.parse(line.split()) == typer_args


@pytest.mark.parametrize("line", LEFT)
def test_anything_else_is_left_to_typer(line):
    assert cli_check.parse(line.split()) is None


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_runlocal_command_answers_as_the_typer_command(tmp_path):
    line = ["check", "llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "8192", "--json"]
    fast, typer_path = _run("runlocal", *line), _run("runlocal.cli", *line)
    assert fast.returncode == typer_path.returncode == 0, fast.stderr + typer_path.stderr
    assert fast.stdout == typer_path.stdout and json.loads(fast.stdout)["verdict"] in ("fits", "tight")
    bad = _run("runlocal", "check", "llama-3.1-8b", "--gpu", "rtx-4090", "--parallel", "0", "--json")
    assert bad.returncode == 2 and bad.stderr.startswith("error: parallel:") and len(bad.stderr.splitlines()) == 1
    assert bad.stderr == _run("runlocal.cli", "check", "llama-3.1-8b", "--gpu", "rtx-4090", "--parallel", "0",
                              "--json").stderr


def test_a_plain_check_imports_no_cli_framework(tmp_path):
    probe = ("import runpy, sys\nsys.argv = ['runlocal', 'check', 'llama-3.1-8b', '--gpu', 'rtx-4090', '--json']\n"
             "runpy.run_module('runlocal', run_name='__main__')\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')), file=sys.stderr)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RUNLOCAL_HOME": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    assert json.loads(r.stdout)["verdict"] in ("fits", "tight")
    assert r.stderr.strip().splitlines()[-1] == "[]"


def test_an_ngl_past_the_layer_count_is_all_layers_up_to_a_c_int():
    """llama.cpp reads -ngl with std::stoi (common/arg.cpp) and offloads every layer for any count at or above
    n_layer + 1 (src/llama-model.cpp: i_gpu_start = max(n_layer + 1 - ngl, 0)); posts write -ngl 2000000."""
    from runlocal.check import CheckRequest, check
    from runlocal.errors import InputError

    def memory(ngl):
        plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", ctx=4096, n_gpu_layers=ngl))
        return plan.to_dict()["memory"]

    assert memory(2_000_000) == memory(-2) == memory(33)          # llama-3.1-8b: 32 layers + the output layer
    with pytest.raises(InputError, match="ngl: must be ≥ -2 and ≤ 2,147,483,647"):
        check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", n_gpu_layers=2**31))

"""A runtime's command line pasted into `runlocal check` (README: "Options take the runtimes' own names … so a command
line can be pasted"; review20 finding 3), and Click's usage errors as one line, through the real entry point.

The spellings are the runtimes' own: llama.cpp common/arg.cpp {"-ngl", "--gpu-layers", "--n-gpu-layers"},
{"-c", "--ctx-size"}, {"-b", "--batch-size"}; vLLM vllm/engine/arg_utils.py {"--tensor-parallel-size", "-tp"},
{"--pipeline-parallel-size", "-pp"}; SGLang server_args.py --tp-size, --context-length, --max-running-requests."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run(*args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    env.pop("RUNLOCAL_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "runlocal", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def settings(*args):
    r = run("check", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["settings"]


def test_llama_servers_spellings_plan_what_the_long_ones_do():
    pasted = settings("llama-3.1-8b", "--gpu", "rtx-3060", "-ngl", "20", "--ctx-size", "8192", "--batch-size", "1024")
    long = settings("llama-3.1-8b", "--gpu", "rtx-3060", "--n-gpu-layers", "20", "-c", "8192", "-b", "1024")
    assert pasted == long
    assert pasted["ctx"] == 8192


def test_vllm_and_sglang_spellings():
    assert settings("qwen3-8b", "--gpu", "2x3090", "-r", "vllm", "-tp", "2", "--ctx", "8192")["tp"] == 2
    sg = settings("qwen3-8b", "--gpu", "2x3090", "-r", "sglang", "--tp-size", "2", "--context-length", "8192",
                  "--max-running-requests", "4")
    assert (sg["tp"], sg["ctx"], sg["parallel"]) == (2, 8192, 4)


def test_an_unknown_single_dash_option_is_named_whole_on_one_line():
    r = run("check", "llama-3.1-8b", "-xyz", "3", "--gpu", "rtx-3060")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert r.stderr.startswith("error: -xyz: no such option")   # Click alone would name "-x"


def test_compare_without_a_device_is_one_line_naming_the_argument():
    r = run("compare", "--json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0
    assert r.stderr.startswith("error: devices: missing; expected catalog names")


def test_the_mistyped_option_is_named_not_a_declared_one_before_it():
    """review20b finding 9: Click reports "-n" for "-ngx"; "-np" (llama-server's parallel slots) is declared and starts
    with "-n" too, so the word named must be the one that is not an option of `check`."""
    r = run("check", "llama-3.1-8b", "-np", "4", "-ngx", "5")
    assert r.returncode == 2
    assert r.stderr.startswith("error: -ngx: no such option")
    # contrast: the declared -np alone parses
    assert settings("llama-3.1-8b", "-np", "4")["parallel"] == 4

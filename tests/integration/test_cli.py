"""The CLI as users run it: a fresh process, exit codes, one JSON object, one-line errors."""

import json
import os
import subprocess
import sys

import pytest
from factories import write_llama_gguf

CONTRACT_KEYS = {"model", "runtime", "settings", "memory", "kv_bytes_per_token", "kv_cache_tokens",
                 "max_concurrency", "max_context", "verdict", "speed", "fixes"}


def run(*args, stdin=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    env.pop("RUNLOCAL_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "runlocal.cli", *args], capture_output=True, text=True, env=env,
                          input=stdin, timeout=120)


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory):
    # Llama-3.1-8B's real dimensions, header only
    return str(write_llama_gguf(tmp_path_factory.mktemp("m") / "llama8b.gguf", n_layers=32, hidden=4096, heads=32,
                                kv_heads=8, ff=14336, vocab=128256, tokens=1000))


def test_json_contract(gguf_path):
    r = run("check", gguf_path, "--vram", "24G", "--ram", "32G", "--ctx", "8192", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert CONTRACT_KEYS <= doc.keys()
    assert {"id", "architecture", "params", "active_params", "weights_bytes"} <= doc["model"].keys()
    assert {"ctx", "quant", "cache_type_k", "cache_type_v", "parallel"} <= doc["settings"].keys()
    for key in ("weights", "kv_cache", "compute", "overhead", "total"):
        assert isinstance(doc["memory"][key], int)
        assert doc["memory"][key] == sum(d[key] for d in doc["memory"]["devices"])
    assert doc["verdict"] in ("fits", "tight", "does_not_fit", "unknown")
    # 8 KV heads × 128 dims × 2 (K, V) × 2 bytes × 32 layers: 128 KiB per token
    assert doc["kv_bytes_per_token"] == 32 * 2 * 8 * 128 * 2
    assert doc["settings"]["ctx"] == 8192


def test_kv_grows_linearly_with_context(gguf_path):
    kv = []
    for ctx in ("4096", "8192", "16384"):
        doc = json.loads(run("check", gguf_path, "--gpu", "none", "--ram", "64G", "--ctx", ctx, "--json").stdout)
        kv.append(doc["memory"]["kv_cache"])
    assert kv[1] == 2 * kv[0] and kv[2] == 2 * kv[1]     # doubling context doubles KV: never quadruples


def test_human_output_has_verdict_table_and_bar(gguf_path):
    # -ngl pinned to every layer: an 8B Q8_0 with 32K of f16 KV is over 8 GiB
    r = run("check", gguf_path, "--vram", "8G", "--ram", "32G", "--ctx", "32k", "--ngl", "33", "--explain")
    assert r.returncode == 0, r.stderr
    assert "does not fit" in r.stdout
    assert "KV cache" in r.stdout and "█" in r.stdout
    assert "Fixes" in r.stdout and "llama-server" in r.stdout
    # --explain shows the formula's inputs: K + V × 8 KV heads × 128 wide × 2 bytes (f16) = 4,096 B a layer and token
    assert "32 full-attention layers × 4,096 B/token × 32,768 cells" in r.stdout


def test_default_ngl_runs_what_llama_server_fit_runs(gguf_path):
    # -ngl left unset: llama-server's --fit (on by default) keeps layers in RAM to leave 1 GiB free, so it runs,
    # slower: the plan says so, names the -ngl it picks, and its fixes put every layer back on the GPU
    r = run("check", gguf_path, "--vram", "8G", "--ram", "32G", "--ctx", "32k", "--json")
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "tight" and "--fit" in doc["compromise"]
    gpu = next(d for d in doc["memory"]["devices"] if d["kind"] == "gpu")
    assert gpu["total"] + (1 << 30) <= gpu["capacity"]
    ngl = int(doc["command"].split("-ngl ")[1].split()[0])
    assert 0 < ngl < 33
    assert doc["fixes"] and all("-ngl 33" in f["command"] for f in doc["fixes"])


@pytest.mark.parametrize("args, message", [
    (["check", "/nonexistent/model.gguf"], "no such file"),
    (["check", "{gguf}", "--ctx", "0", "--runtime", "ollama"], "ctx"),   # -c 0 is llama.cpp's trained context only
    (["check", "{gguf}", "--ctx", "-5"], "ctx"),
    (["check", "{gguf}", "--vram", "lots"], "vram"),
    (["check", "{gguf}", "--kv-cache", "q3_z"], "cache type"),
    (["check", "{gguf}", "--runtime", "tensorrt"], "runtime"),
    (["check", "{gguf}", "--parallel", "0"], "parallel"),
])
def test_bad_input_is_one_line_exit_2(gguf_path, args, message):
    r = run(*[a.replace("{gguf}", gguf_path) for a in args])
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert message in r.stderr.lower()
    assert len(r.stderr.strip().splitlines()) == 1


def test_truncated_gguf_is_one_line(tmp_path):
    p = write_llama_gguf(tmp_path / "m.gguf")
    p.write_bytes(p.read_bytes()[:300])
    r = run("check", str(p), "--gpu", "none")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "truncated" in r.stderr


def test_vision_tower_is_shown_apart():
    # Gemma 3 27B's SigLIP tower + projector; transformers' meta build of the same config gives the
    # per-tensor shapes (tests/test_hf_config.py), so the tower's count is checked there.
    r = run("check", "gemma-3-27b", "--gpu", "rtx-4090", "--quant", "Q4_K_M", "--explain", "--json")
    doc = json.loads(r.stdout)
    assert 0 < doc["model"]["vision_params"] < doc["model"]["params"] // 20
    text = run("check", "gemma-3-27b", "--gpu", "rtx-4090", "--quant", "Q4_K_M", "--explain").stdout
    assert "vision/audio tower" in text and "--mmproj" in text
    assert "vision" not in run("check", "llama-3.1-8b", "--gpu", "rtx-4090").stdout


def test_gguf_runtimes_plan_a_checkpoint_as_q4_k_m(gguf_path):
    def quant(*args):
        return json.loads(run("check", *args, "--gpu", "rtx-4090", "--json").stdout)["settings"]["quant"]

    assert quant("llama-3.1-8b") == "Q4_K_M"                          # llama.cpp: the usual download
    assert quant("llama-3.1-8b", "--runtime", "ollama") == "Q4_K_M"   # Ollama's default library tag
    assert quant("llama-3.1-8b", "--runtime", "vllm").lower() == "bf16"   # vLLM serves the checkpoint
    assert quant("llama-3.1-8b", "--quant", "Q8_0") == "Q8_0"
    assert quant(gguf_path) != "Q4_K_M"                               # a GGUF file is planned as it is
    assert "planned as Q4_K_M" in run("check", "llama-3.1-8b", "--gpu", "rtx-4090", "--explain").stdout


def test_command_names_the_gguf_of_another_quant(gguf_path):
    doc = json.loads(run("check", gguf_path, "--gpu", "rtx-4090", "--quant", "Q6_K", "--json").stdout)
    assert " -m llama8b-Q6_K.gguf " in doc["command"]
    assert f" -m {gguf_path} " in json.loads(run("check", gguf_path, "--gpu", "rtx-4090", "--json").stdout)["command"]


def test_pooled_runtimes_use_every_gpu_given_and_checkpoints_as_stored():
    def doc(*args):
        return json.loads(run("check", *args, "--json").stdout)

    d = doc("deepseek-v3", "--runtime", "sglang", "--gpu", "8xh200")
    assert d["settings"]["tp"] == 8 and [x["kind"] for x in d["memory"]["devices"]] == ["gpu"] * 8 + ["cpu"]
    # DeepSeek-V3 ships fp8 weights with a scale per 128 × 128 block (quantization_config weight_block_size)
    assert d["settings"]["quant"] == "fp8-block"
    assert doc("deepseek-v3", "--runtime", "vllm", "--gpu", "8xh200", "--tp", "4", "--pp", "2")["settings"]["tp"] == 4
    assert doc("llama-3.1-8b", "--runtime", "vllm", "--gpu", "h100")["settings"]["tp"] == 1
    assert doc("gpt-oss-20b", "--runtime", "vllm", "--gpu", "h100")["settings"]["quant"] == "mxfp4"


def test_explain_oom_json_stack_adds_up():
    d = json.loads(run("explain", "oom", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--json").stdout)
    st = d["stack"]
    assert st["overhead"] + st["weights"] + st["kv_cache"] + st["compute"] + st["free"] == st["capacity"]
    assert "nvidia-smi" in d["text"] and d["plan"]["model"]["id"] == "llama-3.1-8b"
    assert json.loads(run("explain", "oom", "--json").stdout)["stack"] is None


def test_errors_takes_the_words_as_typed():
    """review18 #13: `runlocal errors cuda out of memory` was Typer's "Got unexpected extra argument(s)", exit 2;
    the words are one query, the same list as the quoted phrase, and an id still shows its entry."""
    typed = run("errors", "cuda", "out", "of", "memory")
    quoted = run("errors", "cuda out of memory")
    assert typed.returncode == 0 == quoted.returncode, typed.stderr
    assert typed.stdout == quoted.stdout and "cuda-oom-load" in typed.stdout
    entry = run("errors", "cuda-oom-load")
    assert entry.returncode == 0 and "CUDA out of memory" in entry.stdout and entry.stdout != typed.stdout

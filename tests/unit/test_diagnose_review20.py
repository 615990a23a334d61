"""review20's diagnosis findings (session 20, fixes20b): each fixed by the runtime's own words, tested here on the
public text that showed it (URL beside each) and on a contrast that keeps the paste and changes only the decisive part.
"""

from __future__ import annotations

import re

import pytest

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.extract import extract_lines

# -- finding 11: the GPU name printed with its PCI address ----------------------------------------------------------
# llama.cpp's llama_model_load_from_file_impl (src/llama.cpp) prints
#   LLAMA_LOG_INFO("%s: using device %s (%s) (%s) - %zu MiB free\n", __func__, ggml_backend_dev_name(dev),
#                  ggml_backend_dev_description(dev), props.device_id ? props.device_id : "unknown id", …)
# older builds "using device %s (%s) - %zu MiB free". scrya-com/rotorquant#9 pastes the newer form:
_PCI = ("llama_model_load_from_file_impl: using device CUDA0 (NVIDIA RTX 5000 Ada Generation Laptop GPU) "
        "(0000:01:00.0) - 15074 MiB free")


@pytest.mark.parametrize("line, name, free_mib", [
    (_PCI, "NVIDIA RTX 5000 Ada Generation Laptop GPU", 15074),
    # the same line with no device id (props.device_id NULL)
    (_PCI.replace("(0000:01:00.0)", "(unknown id)"), "NVIDIA RTX 5000 Ada Generation Laptop GPU", 15074),
    # the older form, no id group at all
    ("llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 3090) - 23871 MiB free",
     "NVIDIA GeForce RTX 3090", 23871),
    # a description holding parentheses of its own (Vulkan / RADV), with and without the id group
    ("using device Vulkan0 (AMD Radeon RX 7900 XTX (RADV NAVI31)) (0000:03:00.0) - 24000 MiB free",
     "AMD Radeon RX 7900 XTX (RADV NAVI31)", 24000),
    ("using device Vulkan0 (AMD Radeon RX 7900 XTX (RADV NAVI31)) - 24000 MiB free",
     "AMD Radeon RX 7900 XTX (RADV NAVI31)", 24000),
])
def test_the_gpu_name_stops_before_the_device_id(line: str, name: str, free_mib: int) -> None:
    got = extract_lines([line])
    assert got["gpu_name"] == name
    assert got["free_bytes"] == free_mib * 1024 * 1024


def test_the_api_and_the_cli_show_the_name_without_the_pci_address(tmp_path) -> None:
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from runlocal.api.app import create_app
    from runlocal.cli import app

    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'a.sqlite3'}"))
    r = client.post("/api/v1/diagnose", json={"text": _PCI + "\nllama_model_load: error loading model: error loading "
                                                    "model architecture: unknown model architecture: 'gemma4'"})
    assert r.status_code == 200
    assert r.json()["extracted"]["gpu_name"] == "NVIDIA RTX 5000 Ada Generation Laptop GPU"
    log = tmp_path / "e.txt"
    log.write_text(_PCI + "\nllama_model_load: error loading model: error loading model architecture: unknown model "
                          "architecture: 'gemma4'\n")
    out = CliRunner().invoke(app, ["diagnose", str(log)]).output
    assert "gpu_name=NVIDIA RTX 5000 Ada Generation Laptop GPU," in out and "0000:01:00.0" not in out


# -- finding 10: the vLLM free-memory fix at the precision that shows the failure -----------------------------------
# pytorch/pytorch#175666 (2026-02-24) pastes vLLM's gpu_worker refusal; vLLM prints both figures in GiB to two decimals
_FREE = ("ValueError: Free memory on device cuda:0 (19.77/22.05 GiB) on startup is less than desired GPU memory "
         "utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.")


def test_the_free_memory_fix_prints_the_gap_that_failed() -> None:
    from runlocal.diagnose.fixes import with_computed_fixes

    effect = with_computed_fixes(diagnose_text(_FREE), None)["fixes"][0]["effect"]
    # by hand: 19.84 − 19.77 = 0.07 GiB short; 0.89 × 22.05 = 19.6245 ≤ 19.77, 0.90 × 22.05 = 19.845 > 19.77
    assert "19.77 GiB was free" in effect and "= 19.84 GiB was asked for, 0.07 GiB more than was free" in effect
    assert "0.89 × 22.05 GiB = 19.62 GiB fits" in effect
    assert "19.8 GiB" not in effect   # the old three-figure rounding printed free and asked as the same number


def test_a_wide_gap_is_printed_the_same_way() -> None:
    # contrast: a GPU half held by another process; the two figures differ in their first digit
    from runlocal.diagnose.fixes import with_computed_fixes

    text = _FREE.replace("19.77/22.05", "10.50/22.05")
    effect = with_computed_fixes(diagnose_text(text), None)["fixes"][0]["effect"]
    # by hand: 19.84 − 10.50 = 9.34 GiB; floor(10.50 / 22.05 × 100) / 100 = 0.47
    assert "10.50 GiB was free" in effect and "9.34 GiB more than was free" in effect
    assert "0.47 × 22.05 GiB = 10.36 GiB fits" in effect


# -- finding 5: mlx-lm's own refusal names MLX ------------------------------------------------------------------------
# mlx-lm's mlx_lm/utils.py _get_classes (ml-explore/mlx-lm d78bf58):
#     arch = importlib.import_module(f"mlx_lm.models.{model_type}")
#   except ImportError:
#     msg = f"Model type {model_type} not supported."
#     raise ValueError(msg)
# qwen3_5's module (mlx_lm/models/qwen3_5.py, PR #869) is in the v0.30.7 tag and not in v0.30.6.
@pytest.mark.parametrize("text", [
    "ValueError: Model type qwen3_5 not supported.",   # ml-explore/mlx-lm#994 (2026-03-13), the whole paste
    "Error when loading model: ValueError: Model type laguna not supported.",   # lmstudio-ai/mlx-engine#320
])
def test_mlx_lms_refusal_gets_mlx_lms_fix(text: str) -> None:
    from runlocal.diagnose.fixes import with_computed_fixes

    doc = with_computed_fixes(diagnose_text(text), None)
    assert doc["title"] == "Not memory: the runtime does not know this model architecture"
    assert doc["extracted"]["runtime"] == "mlx"
    assert doc["fixes"][0]["command"] == "pip install -U mlx-lm"
    assert not doc.get("runtime_note")


@pytest.mark.parametrize("text, not_runtime", [
    # transformers' words for the same refusal (configuration_auto.py): not MLX
    ("ValueError: The checkpoint you are trying to load has model type `qwen3_5` but Transformers does not "
     "recognize this architecture.", "mlx"),
    # llama.cpp's: not MLX either
    ("llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'qwen35'",
     "mlx"),
])
def test_other_loaders_refusals_are_not_read_as_mlx(text: str, not_runtime: str) -> None:
    from runlocal.diagnose.fixes import with_computed_fixes

    doc = with_computed_fixes(diagnose_text(text), None)
    assert doc["fixes"][0]["command"] != "pip install -U mlx-lm"
    assert doc["extracted"].get("runtime") != not_runtime


# -- finding 2: Ollama's "unable to load model: <blob>" names no reason -----------------------------------------------
# ollama/ollama v0.17.7 (9b0c7cc) llama/llama.go:308-311, for any NULL from llama.cpp's loader:
#     m := Model{c: C.llama_model_load_from_file(C.CString(modelPath), cparams)}
#     if m.c == nil {
#         return nil, fmt.Errorf("unable to load model: %s", modelPath)
# and llm/server.go:159 calls it with llama.ModelParams{VocabOnly: true}: the client's 500 comes from a load that
# allocates no weights. The reason is llama.cpp's line before it.
# ollama/ollama#14732 (2026-03-09, Ollama 0.17.7, hf.co/unsloth/Qwen3.5-35B-A3B-GGUF:Q8_0), the client's side:
_OLLAMA_LOAD = (
    "$ ollama run hf.co/unsloth/Qwen3.5-35B-A3B-GGUF:Q8_0\n"
    "pulling manifest\n"
    "verifying sha256 digest\n"
    "writing manifest\n"
    "success\n"
    "Error: 500 Internal Server Error: unable to load model: /Users/elton/.ollama/models/blobs/"
    "sha256-3808866c016ab02b4adb26b873f7008a2cdd2c0704a39704050119ab0631db46\n")
_BLOB = "/root/.ollama/models/blobs/sha256-8fc8cf9f6bbb9c3d10260c75260ce8c630449d3cd14a61084e6a99d77477ee77"


def test_the_bare_line_sends_to_the_log_not_to_a_download() -> None:
    from runlocal.diagnose.fixes import with_computed_fixes

    d = diagnose_text(_OLLAMA_LOAD)
    assert (d.category, d.entry.id if d.entry else None) == ("not_memory", "notmem-ollama-load-failed")
    fixes = with_computed_fixes(d, None)["fixes"]
    assert "server log" in fixes[0]["title"] and "Update Ollama" in fixes[1]["title"]
    # the re-download comes last, and only on the log's say-so
    assert fixes[-1]["command"] == "ollama rm MODEL && ollama pull MODEL" and fixes[-1]["title"].startswith("Only if")


@pytest.mark.parametrize("before, answer", [
    # an architecture the bundled llama.cpp lacks (ollama/ollama#14513, 0.17.4; the line before, as Ollama logs it)
    ("llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'qwen35'",
     ("not_memory", "notmem-unsupported-model-arch")),
    # a file cut short: llama_model_loader's bounds check (llama-model-loader.h llama_tensor_weight)
    ("llama_model_load: error loading model: tensor 'blk.30.ffn_down.weight' data is not within the file bounds, "
     "model is corrupted or incomplete", ("not_memory", "notmem-bad-model-file")),
    # the runner's full load failing on a buffer (ollama/ollama#9260's lines): memory
    ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 81656.95 MiB on device 0: cudaMalloc failed: out of "
     "memory\nllama_model_load: error loading model: unable to allocate CUDA0 buffer",
     ("llamacpp_alloc_fail", "llamacpp-weights-alloc")),
])
def test_the_line_before_decides(before: str, answer: tuple[str, str]) -> None:
    d = diagnose_text(f"{before}\nllama_model_load_from_file_impl: failed to load model\n"
                      f'time=2025-11-06T06:23:22.759Z level=INFO source=sched.go:418 msg="NewLlamaServer failed" '
                      f'model={_BLOB} error="unable to load model: {_BLOB}"\n')
    assert (d.category, d.entry.id if d.entry else None) == answer


# -- finding 6: Ollama's "…may be due to resource limitations…" names no cause ----------------------------------------
# ollama/ollama v0.17.7 (9b0c7cc) llm/server.go, initModel, when the POST /load to the runner gets no answer:
#     resp, err := http.DefaultClient.Do(r)
#     if err != nil {
#         slog.Error("do load request", "error", err)
#         return nil, errors.New("model failed to load, this may be due to resource limitations or an internal error,
#                                 check ollama server logs for details")
# and the same words, "model runner has unexpectedly stopped, …", on POST /completion ("post predict").
# ollama/ollama#15264 (2026-04-03, gemma4:26b on an RTX PRO 6000), the client's line:
_LOST = ("Error: 500 Internal Server Error: model failed to load, this may be due to resource limitations or an "
         "internal error, check ollama server logs for details")
_STOPPED = ("Error: model runner has unexpectedly stopped, this may be due to resource limitations or an internal "
            "error, check ollama server logs for details")


@pytest.mark.parametrize("text", [_LOST, _STOPPED])
def test_a_lost_runner_is_undetermined_and_says_what_to_read(text: str) -> None:
    from runlocal.diagnose.fixes import with_computed_fixes
    from runlocal.diagnose.kb import MEMORY_CATEGORIES

    d = diagnose_text(text)
    assert (d.category, d.entry.id if d.entry else None) == ("unknown", "ollama-runner-died-unsaid")
    assert d.category not in MEMORY_CATEGORIES and "names the problem" not in d.cause
    commands = " ".join(f["command"] for f in with_computed_fixes(d, None)["fixes"])
    assert "journalctl -u ollama" in commands and "dmesg" in commands


@pytest.mark.parametrize("before, answer", [
    # the server log's runner death by SIGKILL (what the OOM killer sends): a kill
    ('time=2026-04-03T16:48:02.113+08:00 level=ERROR source=server.go:1228 msg="llama runner process has terminated: '
     'signal: killed"', ("oom_killer", "process-killed")),
    # a crash by signal said before it: the crash
    ("SIGSEGV: segmentation violation\nPC=0x7f3a1c2b4e10 m=12 sigcode=1 addr=0x0", ("not_memory", "notmem-crash-signal")),
    # a GPU allocation that failed: memory
    ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 20480.00 MiB on device 0: cudaMalloc failed: out of "
     "memory", ("llamacpp_alloc_fail", None)),
])
def test_a_cause_in_the_paste_outranks_the_lost_runner(before: str, answer: tuple[str, str | None]) -> None:
    d = diagnose_text(f"{before}\n{_LOST}\n")
    assert d.category == answer[0]
    if answer[1]:
        assert d.entry is not None and d.entry.id == answer[1]


# -- finding 8: diagnose's `VAR=… ollama serve` fixes carry check's service caveat -----------------------------------
# ollama/ollama docs/faq.mdx "How do I configure Ollama server?": on Linux `systemctl edit ollama.service` with
# Environment="OLLAMA_HOST=0.0.0.0:11434" under [Service], then `systemctl daemon-reload` and `systemctl restart
# ollama`; on macOS `launchctl setenv OLLAMA_HOST "0.0.0.0:11434"`, then restart the app; on Windows "Ollama inherits
# your user and system environment variables": quit it, edit the user's variables, start it from the Start menu.
# continuedev/continue#12795 (2026-06-18), the client's line:
def _serve_fixes(text: str) -> list[dict[str, str]]:
    from runlocal.diagnose.fixes import with_computed_fixes

    return [f for f in with_computed_fixes(diagnose_text(text), None)["fixes"] if "ollama serve" in f["command"]]


# a runner out of memory on the GPU: the knowledge base's fixes set the server's variables (ollama-runner-cuda-oom.md);
# Ollama's RAM refusal no longer gets them, its shortfall says when a context or KV cache could close it (review22 #12)
_RUNNER_OOM = "Error: llama runner process has terminated: cudaMalloc failed: out of memory"


def test_every_ollama_serve_fix_says_how_to_set_the_variables_on_the_service() -> None:
    fixes = _serve_fixes(_RUNNER_OOM)
    assert fixes   # the GPU overhead, the shorter context with one slot, one model loaded
    for f in fixes:
        env = f["command"].split(" ollama serve")[0].split()
        assert "sudo systemctl edit ollama.service, under [Service] " + " ".join(
            f'Environment="{e}"' for e in env) in f["effect"]
        assert "; ".join("launchctl setenv " + e.replace("=", " ", 1) for e in env) in f["effect"]
        assert "; ".join("setx " + e.replace("=", " ", 1) for e in env) in f["effect"]


def test_check_and_diagnose_give_the_same_caveat() -> None:
    from runlocal.diagnose.ollama_fixes import service_caveat
    from runlocal.runtimes.flag_spelling import ollama_service_note

    fix = service_caveat({"title": "t", "command": "OLLAMA_CONTEXT_LENGTH=4096 ollama serve", "effect": ""})
    check_note = ollama_service_note(["OLLAMA_CONTEXT_LENGTH=4096"])
    # the same sentence up to what to do afterwards (check: its own line; diagnose: run the model again)
    assert fix["effect"].rsplit("; then", 1)[0] == check_note.rsplit("; then", 1)[0]


def test_a_server_moved_to_another_port_gets_no_caveat() -> None:
    # contrast: OLLAMA_HOST=…:11435 ollama serve is meant to run beside the service (notmem-port-in-use's fix)
    from runlocal.diagnose.ollama_fixes import service_caveat

    fix = {"title": "t", "command": "OLLAMA_HOST=127.0.0.1:11435 ollama serve", "effect": ""}
    assert service_caveat(fix) == fix


# -- finding 9: the weights buffer that failed sizes -ngl ---------------------------------------------------------------
# ggml-org/llama.cpp#20431 pastes the failure (below); the device line and the layer count are llama.cpp's own lines
# (llama_model_load_from_file_impl "using device %s (%s) (%s) - %zu MiB free", print_info "n_layer = %u"), with
# figures written here for a 96 GB card and a 48-layer model.
_WEIGHTS = (
    "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA RTX PRO 6000 Blackwell Workstation Edition) "
    "(0000:01:00.0) - 96462 MiB free\n"
    "llama_model_loader: loaded meta data with 44 key-value pairs and 1098 tensors from /models/big-Q8_0.gguf "
    "(version GGUF V3 (latest))\n"
    "print_info: n_layer               = 48\n"
    "load_tensors: loading model tensors, this can take a while... (mmap = true, direct_io = false)\n"
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 144817.04 MiB on device 0: cudaMalloc failed: out of "
    "memory\n"
    "alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624\n"
    "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n")


def _commands(text: str, runtime: str | None = None) -> list[str]:
    from runlocal.diagnose.fixes import with_computed_fixes

    return [f["command"] for f in with_computed_fixes(diagnose_text(text), runtime)["fixes"]]


def test_the_layers_kept_come_from_the_failed_buffer_and_the_free_memory() -> None:
    # by hand: no -ngl in the log, so all 48 + 1 (output) layers were placed: 144817.04 MiB / 49 = 2955.45 MiB a
    # layer; (96462 − 1024) MiB / 2955.45 MiB = 32.29 → 32 layers
    commands = _commands(_WEIGHTS)
    assert commands[0] == "llama-server -m /models/big-Q8_0.gguf -ngl 32"
    assert not any("-ngl 20" in c for c in commands)       # the old constant
    assert any("Q4_K_M" in c for c in commands)            # a smaller quantization is another fix, still given


def test_the_commands_ngl_is_the_layers_placed() -> None:
    # by hand: -ngl 30 placed 30 layers: 144817.04 / 30 = 4827.23 MiB a layer; 95438 / 4827.23 = 19.77 → 19
    text = "llama-server -m /models/big-Q8_0.gguf -ngl 30 -c 8192\n" + _WEIGHTS
    assert _commands(text)[0] == "llama-server -m /models/big-Q8_0.gguf -ngl 19"


def test_ollamas_placement_and_knob() -> None:
    # Ollama's server line gives the layers it placed (layers.offload=40): 144817.04 / 40 = 3620.43 MiB a layer;
    # 95438 / 3620.43 = 26.36 → 26, set as num_gpu in a Modelfile
    text = ('time=2026-03-01T10:00:00.000Z level=INFO source=server.go:503 msg=offload library=cuda layers.requested=-1 '
            'layers.model=49 layers.offload=40 layers.split=""\n' + _WEIGHTS)
    first = _commands(text, "ollama")[0]
    assert "PARAMETER num_gpu 26" in first


@pytest.mark.parametrize("change", [
    lambda t: t.replace("print_info: n_layer               = 48\n", ""),   # no layer count
    lambda t: t.split("\n", 1)[1],                                           # no free memory
    # two GPUs: how the layers were split is not in these lines
    lambda t: t.replace("llama_model_loader", "llama_model_load_from_file_impl: using device CUDA1 (NVIDIA RTX "
                        "PRO 6000 Blackwell Workstation Edition) (0000:02:00.0) - 96462 MiB free\nllama_model_loader", 1),
])
def test_without_the_figures_no_layer_count_is_made_up(change) -> None:
    commands = _commands(change(_WEIGHTS))
    assert not any(re.search(r"-ngl (?!99\b)\d+", c) for c in commands), commands   # 99: every layer
    assert any("--fit on" in c for c in commands)


# review20b finding 4: an "unknown" answer (the lost runner, ollama-runner-died-unsaid) says memory or not is in the
# server log and that a shorter context or a smaller quantization "helps only in the first case"; so its first fix
# is what to read, not Ollama's offload fix (a smaller tag), which is the memory answer's.
# the offload line's figures as round 45's Debian paste gives them (test_diagnose_round45.py): 68.3 GiB needed for all
# 49 layers against 11.4 GiB available, of which the KV cache is 2.2 GiB, so Ollama's offload fix is "a smaller tag"
_OFFLOAD = ('time=2026-03-01T10:00:00.000Z level=INFO source=server.go:135 msg=offload library=cuda '
            'layers.requested=-1 layers.model=49 layers.offload=4 layers.split="" memory.available="[11.4 GiB]" '
            'memory.gpu_overhead="0 B" memory.required.full="68.3 GiB" memory.required.partial="10.9 GiB" '
            'memory.required.kv="2.2 GiB"\n')


def test_an_undetermined_answer_leads_with_what_to_read_not_a_memory_fix() -> None:
    from runlocal.diagnose.fixes import with_computed_fixes

    d = diagnose_text(_OFFLOAD + "Error: model failed to load, this may be due to resource limitations or an internal "
                      "error, check ollama server logs for details\n")
    assert d.category == "unknown"
    commands = [f["command"] for f in with_computed_fixes(d, "ollama")["fixes"]]
    assert "journalctl -u ollama" in commands[0] or "server log" in commands[0].lower() or "dmesg" in commands[0]
    assert not any("ollama pull" in c or "num_ctx" in c or "num_gpu" in c for c in commands)


def test_a_memory_answer_keeps_ollamas_offload_fix() -> None:
    # contrast: the same offload line before a CUDA out-of-memory still gets Ollama's placement fixes
    from runlocal.diagnose.fixes import with_computed_fixes

    d = diagnose_text(_OFFLOAD + "CUDA error: out of memory\n")
    assert d.category not in ("unknown", "not_memory")
    assert any("ollama pull MODEL:SMALLER_TAG" in f["command"] for f in with_computed_fixes(d, "ollama")["fixes"])

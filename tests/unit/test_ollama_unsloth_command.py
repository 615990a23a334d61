"""Ollama with `-q UD-Q4_K_XL` pulls Unsloth's file from the Hub, as llama.cpp's `-hf …:UD-Q4_K_XL` does.

Independent sources, written out:
- Hugging Face's page for Ollama (https://huggingface.co/docs/hub/ollama, "Use Ollama with any GGUF Model on Hugging
  Face Hub", the page data/ollama_tags.json cites for `hf`): "ollama run hf.co/{username}/{repository}:{quantization}"
  picks a quantization other than the default Q4_K_M;
- Unsloth's qwen3-8b repo (huggingface.co/unsloth/Qwen3-8B-GGUF) publishes Qwen3-8B-UD-Q4_K_XL.gguf;
- the Ollama library's qwen3 tags (ollama.com/library/qwen3/tags) are `8b-q4_K_M`, `8b-q8_0`, … — no UD quant, so the
  library tag pulls Q4_K_M, not the file asked;
- bartowski's Llama 3.1 8B repo (huggingface.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF) has no UD- files: there the
  command stays the base type's, the file the plan sized."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.compare import compare_devices

HUB_FORM = "hf.co/unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL"          # hf.co/{username}/{repository}:{quantization}


def test_check_prints_the_hub_form_not_the_library_tag():
    plan, _ = check(CheckRequest(model="qwen3-8b", runtime="ollama", gpu="rtx-4090", quant="UD-Q4_K_XL",
                                 use_measurements=False))
    assert plan.weights.quant == "Q4_K_M"                         # sized as the base mix (quant/unsloth.py)
    assert f"FROM {HUB_FORM}\\n" in plan.command                  # the Modelfile's base is Unsloth's file
    assert "qwen3:8b-q4_K_M" not in plan.command                  # before: FROM qwen3:8b-q4_K_M
    assert plan.command.split(" && ")[-1].startswith("ollama run ")


def test_compare_rows_print_the_same_command():
    rows = compare_devices(["rtx-4090", "rtx-3060"], model="qwen3-8b", runtime="ollama", quant="UD-Q4_K_XL")
    assert rows and all(HUB_FORM in r["command"] for r in rows)
    rows = compare_devices(["rtx-4090"], model="qwen3-8b", runtime="llama.cpp", quant="UD-Q4_K_XL")
    assert "-hf unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL " in rows[0]["command"]      # before: …:Q4_K_M


def test_a_repo_without_unsloths_files_keeps_the_library_tag():
    plan, _ = check(CheckRequest(model="llama-3.1-8b", runtime="ollama", gpu="rtx-4090", quant="UD-Q4_K_XL",
                                 use_measurements=False))
    assert "UD-Q4_K_XL" not in plan.command and "llama3.1:8b-instruct-q4_K_M" in plan.command


def test_the_fixes_fetch_the_file_asked_too():
    # qwen3-8b at its trained 40,960 × 4 slots on a 12 GB card: tight, and the fixes re-plan it. A fix that keeps
    # the weights (context, KV type, layers) pulls Unsloth's file as the plan's command does; one that changes the
    # format (IQ4_XS) pulls that format
    for runtime, fetched in (("llama.cpp", "-hf unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL "), ("ollama", f"FROM {HUB_FORM}\\n")):
        plan, _ = check(CheckRequest(model="qwen3-8b", runtime=runtime, gpu="rtx-3060", quant="UD-Q4_K_XL",
                                     ctx=131072, use_measurements=False))
        assert plan.fixes and fetched in plan.command
        for fix in plan.fixes:
            if fix.title.startswith("Use an "):
                assert "UD-Q4_K_XL" not in fix.command
            else:
                assert fetched in fix.command, (fix.title, fix.command)    # before: …:Q4_K_M / qwen3:8b-q4_K_M


def test_the_answer_names_the_file_run_and_the_type_sized():
    # the command runs Unsloth's UD-Q4_K_XL file (hf.co/unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL, above); its sizes are
    # Q4_K_M's mix, because the per-layer types are in the file only (quant/unsloth.py). The JSON and the text say
    # both, and why; before, settings.quant and the header said Q4_K_M only, against the command's UD-Q4_K_XL
    from rich.console import Console

    from runlocal.render.text import render_plan

    for runtime in ("ollama", "llama.cpp"):
        plan, notes = check(CheckRequest(model="qwen3-8b", runtime=runtime, gpu="rtx-4090", quant="UD-Q4_K_XL",
                                         use_measurements=False))
        settings = plan.to_dict()["settings"]
        assert settings["quant"] == "UD-Q4_K_XL" and settings["quant_sized_as"] == "Q4_K_M"
        assert "Q4_K_M mix" in settings["quant_substitute"]
        console = Console(record=True, width=200)
        render_plan(plan, console, notes=notes)
        assert "UD-Q4_K_XL (sized as Q4_K_M's mix) weights" in console.export_text()
    # bartowski's repo has no UD file: the command fetches Q4_K_M, and the reason says so
    plan, _ = check(CheckRequest(model="llama-3.1-8b", runtime="ollama", gpu="rtx-4090", quant="UD-Q4_K_XL",
                                 use_measurements=False))
    settings = plan.to_dict()["settings"]
    assert settings["quant"] == "Q4_K_M" and "fetches Q4_K_M" in settings["quant_substitute"]
    # nothing substituted: no reason
    plan, _ = check(CheckRequest(model="qwen3-8b", runtime="ollama", gpu="rtx-4090", quant="Q8_0",
                                 use_measurements=False))
    assert plan.to_dict()["settings"]["quant_substitute"] is None

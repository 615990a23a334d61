"""An hf.co/<repo>:<quant> name given to best / compare / cost is pulled as given, as check pulls it: Hugging Face's
page for Ollama (https://huggingface.co/docs/hub/ollama) runs a Hub GGUF as `ollama run hf.co/{username}/{repository}:
{quantization}`, and that file is unsloth's (huggingface.co/unsloth/Qwen3-8B-GGUF), not the Ollama library's
qwen3:8b-q8_0 blob. Before, check printed `FROM hf.co/unsloth/Qwen3-8B-GGUF:Q8_0` while best, compare and cost printed
`FROM qwen3:8b-q8_0` — another file than the one named."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.compare import compare_devices
from runlocal.shopping import best_for, cost_for

HUB = "hf.co/unsloth/Qwen3-8B-GGUF:Q8_0"
FROM = f"FROM {HUB}\\n"        # the Modelfile line, as the shell command writes it


def test_every_command_pulls_the_name_given():
    plan, _ = check(CheckRequest(model=HUB, gpu="rtx-4090", ram="64G", use_measurements=False))
    assert FROM in plan.command
    rows = compare_devices(["rtx-4090", "rtx-3060-12gb"], model=HUB)
    assert rows and all(FROM in r["command"] for r in rows), [r["command"] for r in rows]
    run = cost_for(HUB, "rtx-4090")["run"]
    assert FROM in run["command"] and "qwen3:8b-q8_0" not in run["command"]
    ranked = best_for(HUB, vendor="nvidia", form="gpu")["ranked"]
    assert ranked and all(FROM in r["command"] for r in ranked)


def test_a_library_tag_still_pulls_the_library_tag():
    rows = compare_devices(["rtx-4090"], model="qwen3:8b-q8_0")
    assert "FROM qwen3:8b-q8_0\\n" in rows[0]["command"]

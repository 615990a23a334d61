"""`runlocal check` of a catalog model imports nothing heavy (issue 16): no SQLAlchemy, FastAPI, pydantic, numpy or
gguf-py in the process, asked of a real check run in a fresh interpreter."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = ("sqlalchemy", "fastapi", "pydantic", "numpy", "gguf")

PROBE = f"""
import json, runpy, sys
sys.argv = ["runlocal", "check", *sys.argv[1:], "--json"]
try:
    runpy.run_module("runlocal.cli", run_name="__main__")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [
    ["llama-3.1-8b", "--gpu", "rtx-4090"],
    ["qwen2.5-0.5b", "--gpu", "rtx-3060", "--runtime", "ollama", "--ctx", "4096"],
    ["qwen3-30b-a3b", "--gpu", "rtx-4090", "--runtime", "vllm"],
    ["qwen2.5-0.5b", "--gpu", "none", "--runtime", "transformers", "--ctx", "4096"],
])
def test_check_of_a_catalog_model_imports_nothing_heavy(args, tmp_path):
    env = {**os.environ, "RUNLOCAL_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=600)
    plan = json.loads(r.stdout)
    assert plan["verdict"] in ("fits", "tight", "does_not_fit")
    assert json.loads(r.stderr.strip().splitlines()[-1]) == []


GRAPH_PROBE = """
import json, runpy, sys
from runlocal.hardware import detect
if sys.argv[1] == "--detected-4090":
    # what detection reports of an idle RTX 4090 (NVML's total and free), so that a detected check plans a GPU here
    del sys.argv[1]
    detect.detect_nvidia = lambda: ([detect.DetectedGPU(0, "NVIDIA GeForce RTX 4090", 25_757_220_864,
                                                        25_757_220_864, 0)], None)
sys.argv = ["runlocal", "check", *sys.argv[1:], "--json"]
try:
    runpy.run_module("runlocal", run_name="__main__")
except SystemExit:
    pass
graph = sorted(m for m in sys.modules if m == "runlocal.runtimes.ggml" or m.startswith("runlocal.runtimes.ggml."))
print(json.dumps(graph), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [
    ["llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "8192"],          # benchmarks/startup.py's first command
    ["qwen3-30b-a3b", "--gpu", "rtx-3060", "--ctx", "32768"],         # MoE, partly on the CPU
    ["granite-4.0-h-tiny", "--gpu", "rtx-4090", "--runtime", "ollama"],   # hybrid, Ollama's llama.cpp
    ["llama-3.1-8b", "--gpu", "none"],                                # CPU only, the default context
    ["--detected-4090", "gemma-3-12b"],                               # a detected GPU whose plan the table holds
])
def test_a_check_the_compute_table_answers_imports_no_graph_model(args, tmp_path):
    """A llama.cpp plan whose compute buffers the shipped table answers (runtimes/compute_table.py) asks whether the
    graph is simulated and the scheduler's constants of runtimes/ggml_scope.py, not of the graph package: none of
    runtimes/ggml/ is imported (~30 ms of a fresh process without bytecode, 4-5 ms with it). Needs the table made by
    this code (tests/unit/test_compute_table.py; `python -m runlocal.compute_table_build`)."""
    env = {**os.environ, "RUNLOCAL_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", GRAPH_PROBE, *args], capture_output=True, text=True, env=env,
                       timeout=600)
    assert json.loads(r.stdout)["verdict"] in ("fits", "tight", "does_not_fit")
    graph = json.loads(r.stderr.strip().splitlines()[-1])
    assert graph == [], f"the graph package was imported: a table miss or an import ahead of it ({args})"

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

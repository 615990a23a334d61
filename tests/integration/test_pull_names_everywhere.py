"""An Ollama tag is read the same by every command on every surface (review17c findings 4, 7, 8): `gpt-oss:20b` is
`ollama run gpt-oss:20b`'s name (https://ollama.com/library/gpt-oss/tags: its one format is MXFP4), so with no
runtime given check, curve, best, compare and cost all plan Ollama at MXFP4_MOE — before, only check did, best/cost
planned llama.cpp and the API answered 422 "this server does not read local paths". vLLM named with the tag plans
vLLM's own format instead of refusing a GGUF type nobody typed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.asking import offline_process_env

SRC = str(Path(__file__).resolve().parents[2] / "src")
TAG = "gpt-oss:20b"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return offline_process_env(tmp_path_factory.mktemp("home"), SRC)


def _cli(env, *args):
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", *args, "--json"], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_cost_and_compare_on_the_cli_plan_the_tag_under_ollama(env):
    cost = _cli(env, "cost", TAG, "--gpu", "rtx-4090")
    assert cost["runtime"] == "ollama" and any(n.startswith(f"{TAG}: an Ollama library tag") for n in cost["notes"])
    best = _cli(env, "best", TAG, "--vendor", "intel")
    assert best["runtime"] == "ollama" and {r["quant"] for r in best["ranked"]} == {"MXFP4_MOE"}
    row = _cli(env, "compare", "rtx-4090", "--model", TAG)[0]
    assert (row["runtime"], row["quant"]) == ("ollama", "MXFP4_MOE")
    asked = _cli(env, "compare", "rtx-4090", "--model", TAG, "--runtime", "llama.cpp")[0]
    assert (asked["runtime"], asked["quant"]) == ("llama.cpp", "MXFP4_MOE")


def test_the_api_reads_the_tag_in_every_endpoint(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'api.sqlite3'}")) as client:
        cost = client.get("/api/v1/cost", params={"model": TAG, "gpu": "rtx-4090"})
        assert cost.status_code == 200, cost.text
        assert cost.json()["runtime"] == "ollama"
        best = client.get("/api/v1/best", params={"model": TAG, "vendor": "intel"})
        assert best.status_code == 200, best.text
        assert best.json()["runtime"] == "ollama"
        rows = client.get("/api/v1/compare", params={"devices": "rtx-4090", "model": TAG})
        assert rows.status_code == 200, rows.text
        assert (rows.json()[0]["runtime"], rows.json()[0]["quant"]) == ("ollama", "MXFP4_MOE")
        curve = client.get("/api/v1/curve", params={"model": TAG, "gpu": "rtx-4090", "ram": "64G"})
        assert curve.status_code == 200, curve.text
        # vLLM named: planned in vLLM's own format (the tag's MXFP4_MOE is a GGUF type), said in the notes
        vllm = client.get("/api/v1/check", params={"model": TAG, "gpu": "rtx-4090", "ram": "64G", "runtime": "vllm"})
        assert vllm.status_code == 200, vllm.text
        # (vLLM serves the Hub checkpoint, openai/gpt-oss-20b, whose experts are stored as MXFP4: its model card)
        doc = vllm.json()
        assert doc["runtime"] == "vllm" and doc["settings"]["quant"] != "MXFP4_MOE"
        assert doc["command"].startswith("vllm serve openai/gpt-oss-20b")


def test_size_tags_and_latest():
    from runlocal.errors import ModelNotFoundError
    from runlocal.runtimes.pull_names import read_model_name, read_pull_name

    # https://ollama.com/library/deepseek-r1/tags lists 671b beside 671b-q4_K_M / 671b-q8_0: the size tag
    assert read_pull_name("deepseek-r1:671b").alias == "deepseek-r1"
    assert read_model_name("deepseek-r1:671b", None, None).runtime == "ollama"
    # `ollama run qwen3` is qwen3:latest; https://ollama.com/library/qwen3/tags shows latest as the 8b's blob (5.2 GB)
    latest = read_pull_name("qwen3:latest")
    assert (latest.alias, latest.quant) == ("qwen3-8b", None) and "default tag" in latest.form
    assert read_model_name("qwen3:latest", None, None).runtime == "ollama"
    # Ollama's README table: `ollama run gemma3` is the 4B row, `ollama run llama3.2` the 3B row
    assert read_pull_name("gemma3:latest").alias == "gemma-3-4b"
    assert read_pull_name("llama3.2:latest").alias == "llama-3.2-3b"
    # https://ollama.com/library/gpt-oss/tags: latest is 14GB, the 20b (MXFP4 experts, as gpt-oss:20b is)
    assert (read_pull_name("gpt-oss:latest").alias, read_pull_name("gpt-oss:latest").quant) == \
        ("gpt-oss-20b", read_pull_name("gpt-oss:20b").quant)
    # deepseek-r1's latest is not recorded (the README and the library disagree): the error names the sizes
    with pytest.raises(ModelNotFoundError, match="deepseek-r1:671b"):
        read_pull_name("deepseek-r1:latest")
    # a bare library name is the same tag (`ollama run qwen3`, types/model/name.go's default tag "latest"), planned
    # under Ollama, the note saying how it was read; a library name that is also a catalog model stays that model
    bare = read_model_name("qwen3", None, None)
    assert (bare.model, bare.runtime) == ("qwen3-8b", "ollama") and "reads as qwen3:latest" in bare.notes[0]
    assert read_pull_name("gemma3").alias == "gemma-3-4b"
    assert read_pull_name("phi4") is None and read_pull_name("deepseek-r1") is None
    # a library whose default size is not recorded: the error names its size tags, as for <name>:latest
    with pytest.raises(ModelNotFoundError, match=r"qwen2\.5:7b"):
        read_pull_name("qwen2.5")
    # a tag's GGUF type applies only to a GGUF engine
    read = read_model_name(TAG, "vllm", None)
    assert read.quant is None and "vllm does not run" in read.notes[0]
    assert read_model_name(TAG, "llama.cpp==b6500", None).quant == "MXFP4_MOE"


def test_the_mcp_tools_read_the_tag_as_check_does(env):
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "runlocal.cli", "mcp"], env=env)

    async def main():
        async with Client(params, read_timeout_seconds=300) as client:
            cost = await client.call_tool("cost", {"model": TAG, "gpu": "rtx-4090"})
            rows = await client.call_tool("compare", {"devices": ["rtx-4090"], "model": TAG})
            return json.loads(cost.content[0].text), json.loads(rows.content[0].text)

    cost, rows = anyio.run(main)
    assert cost["runtime"] == "ollama"
    row = rows[0] if isinstance(rows, list) else rows["result"][0]
    assert (row["runtime"], row["quant"]) == ("ollama", "MXFP4_MOE")


def test_the_site_leaves_the_runtime_unset_until_asked(tmp_path):
    """policy17's note: the check form sent "llama.cpp" whatever was chosen, so on the site a tag planned llama.cpp
    while the CLI planned Ollama. The form's runtime menu now starts at "default" (the request's None)."""
    pytest.importorskip("jinja2")
    from fastapi.testclient import TestClient

    from runlocal.testing.browser import served_app

    client = TestClient(served_app(store_url=f"sqlite:///{tmp_path / 'site.sqlite3'}"), base_url="http://127.0.0.1")
    planned = client.get("/", params={"model": TAG, "gpu": "rtx-4090", "ram": "64G", "runtime": ""})
    assert planned.status_code == 200, planned.text
    assert " · ollama · " in planned.text and '<option value="" selected>default' in planned.text
    asked = client.get("/", params={"model": TAG, "gpu": "rtx-4090", "ram": "64G", "runtime": "llama.cpp"})
    assert " · llama.cpp · " in asked.text and '<option value="llama.cpp" selected>' in asked.text
    for path, params in (("/best", {"model": TAG, "vendor": "intel"}), ("/cost", {"model": TAG, "gpu": "rtx-4090"}),
                         ("/compare", {"model": TAG, "d": "rtx-4090"})):
        page = client.get(path, params=params)
        assert page.status_code == 200 and "ollama" in page.text, (path, page.text[-2000:])


def test_a_hub_name_is_pulled_as_given():
    """`hf.co/<repo>:<quant>` is a file of that repo (https://huggingface.co/docs/hub/ollama), not the library's blob of
    the same model and type: the Modelfile pulls the name given (before: FROM qwen3:30b-a3b-q4_K_M)."""
    from runlocal.check import CheckRequest, check

    name = "hf.co/unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M"
    plan, _ = check(CheckRequest(model=name, gpu="rtx-4090", ram="64G", ctx=8192))
    assert plan.runtime == "ollama" and f"FROM {name}\\n" in plan.command
    library, _ = check(CheckRequest(model="qwen3:30b-a3b-q4_K_M", gpu="rtx-4090", ram="64G", ctx=8192))
    assert "FROM qwen3:30b-a3b-q4_K_M\\n" in library.command


def test_a_gguf_file_name_reads_as_the_catalog_model_and_type():
    from runlocal.runtimes.pull_names import read_gguf_file_name

    # file names as the GGUF repos publish them (huggingface.co/unsloth/Qwen3-8B-GGUF: Qwen3-8B-Q4_K_M.gguf,
    # Qwen3-8B-UD-Q4_K_XL.gguf; bartowski/Meta-Llama-3.1-8B-Instruct-GGUF: Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf;
    # ggml-org/gpt-oss-20b-GGUF: gpt-oss-20b-mxfp4.gguf), as a path, and as llama-server -hf's cache name
    cases = {"/models/Qwen3-8B-Q4_K_M.gguf": ("qwen3-8b", "Q4_K_M"),
             "Qwen3-8B-UD-Q4_K_XL.gguf": ("qwen3-8b", "UD-Q4_K_XL"),
             "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf": ("llama-3.1-8b", "Q4_K_M"),
             "gpt-oss-20b-mxfp4.gguf": ("gpt-oss-20b", "MXFP4_MOE"),
             "/root/.cache/llama.cpp/unsloth_Qwen3-8B-GGUF_Qwen3-8B-Q8_0.gguf": ("qwen3-8b", "Q8_0")}
    for name, (alias, quant) in cases.items():
        read = read_gguf_file_name(name)
        assert read is not None and (read.alias, read.quant) == (alias, quant), name
    for name in ("my-finetune-Q4_K_M.gguf", "model.gguf", "qwen3-8b"):
        assert read_gguf_file_name(name) is None

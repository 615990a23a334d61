"""`runlocal mcp` through a real MCP client from the SDK: a fresh server process over stdio (and one over
streamable HTTP), each tool's answer equal to `runlocal … --json` for the same question, bad input answered as a
tool error naming the field while the server keeps answering."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.asking import offline_process_env

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    # offline, an empty benchmark store of its own: the CLI and the server see the same (no) measurements
    return offline_process_env(tmp_path_factory.mktemp("home"), SRC)


def cli_json(env, *args, stdin=None):
    r = subprocess.run(check=False, args=[sys.executable, "-m", "runlocal.cli", *args, "--json"], capture_output=True, text=True,
                       env=env, input=stdin, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def stdio_session(env, work):
    """Start `python -m runlocal.cli mcp` and run ``work(client)`` in one session; return what it returns."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "runlocal.cli", "mcp"], env=env)

    async def main():
        async with Client(params, read_timeout_seconds=300) as client:
            return await work(client)

    return anyio.run(main)


def text_of(result) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


# the same question to the tool and to the CLI: (tool, arguments, CLI argv)
SAME_QUESTION = [
    ("check", {"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": "32k"},
     ["check", "llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "32k"]),
    # many options at once, with the engines' flag names on the CLI side
    ("check", {"model": "qwen3-30b-a3b", "gpu": "2x3090", "runtime": "vllm", "ctx": 16384, "quant": "awq",
               "kv_cache": "fp8", "parallel": 8, "gpu_memory_utilization": 0.85, "tp": 2},
     ["check", "qwen3-30b-a3b", "--gpu", "2x3090", "--runtime", "vllm", "--max-model-len", "16384", "--quant", "awq",
      "--kv-cache-dtype", "fp8", "--max-num-seqs", "8", "--gpu-memory-utilization", "0.85", "--tp", "2"]),
    ("check", {"model": "llama-3.1-8b", "vram": "8G", "ram": "32G", "ctx": 8192, "n_gpu_layers": 20,
               "cache_type_k": "q8_0", "cache_type_v": "q8_0", "override_tensor": ["blk\\.0\\..*=CPU"]},
     ["check", "llama-3.1-8b", "--vram", "8G", "--ram", "32G", "-c", "8192", "--n-gpu-layers", "20", "-ctk", "q8_0",
      "-ctv", "q8_0", "-ot", "blk\\.0\\..*=CPU"]),
    ("best", {"model": "llama-3.1-8b", "ctx": "16k", "budget": 3000},
     ["best", "llama-3.1-8b", "--ctx", "16k", "--budget", "3000"]),
    ("compare", {"devices": ["4090", "2x3090"], "model": "llama-3.1-8b"},
     ["compare", "4090", "2x3090", "--model", "llama-3.1-8b"]),
    ("cost", {"model": "llama-3.1-8b", "gpu": "4090", "hours_per_day": 4, "kwh_price": 0.3},
     ["cost", "llama-3.1-8b", "--gpu", "4090", "--hours-per-day", "4", "--kwh-price", "0.3"]),
    ("models", {}, ["models"]),
    ("models", {"fits": True, "gpu": "rtx-4090", "ctx": 8192}, ["models", "--fits", "--gpu", "rtx-4090", "--ctx", "8192"]),
    ("errors", {}, ["errors"]),
    ("errors", {"query": "kv cache blocks"}, ["errors", "kv cache blocks"]),
]

LOG = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "23.65 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 22.50 GiB memory in use.\n")


def test_lists_tools_resources_and_prompt(env):
    async def work(client):
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
        catalog = await client.read_resource("runlocal://models")
        entry = await client.read_resource("runlocal://errors/cuda-oom-load")
        prompts = (await client.list_prompts()).prompts
        prompt = await client.get_prompt("plan_deployment", {"model": "llama-3.1-8b", "goal": "4 users at 32k"})
        return tools, resources, catalog, entry, prompts, prompt

    tools, resources, catalog, entry, prompts, prompt = stdio_session(env, work)
    names = {t.name for t in tools}
    assert names == {"check", "curve", "best", "compare", "cost", "diagnose", "models", "hardware", "system", "errors"}
    for t in tools:
        assert t.description and t.input_schema["type"] == "object"
        assert t.input_schema.get("additionalProperties") is False      # an unknown field is refused, not dropped
        for name, prop in t.input_schema["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
    # the resources: the catalog, and one per errors knowledge-base entry (as many as `runlocal errors` lists)
    uris = {str(r.uri) for r in resources}
    kb = cli_json(env, "errors")
    assert {f"runlocal://errors/{e['id']}" for e in kb} <= uris and "runlocal://models" in uris
    assert json.loads(catalog.contents[0].text) == cli_json(env, "models")
    assert json.loads(entry.contents[0].text) == next(e for e in kb if e["id"] == "cuda-oom-load")
    assert [p.name for p in prompts] == ["plan_deployment"]
    text = prompt.messages[0].content.text
    assert "llama-3.1-8b" in text and "4 users at 32k" in text and "`check`" in text


def test_check_schema_is_the_request_contract(env):
    """The check tool's inputs are CheckRequest's fields (no third copy of the options), typed."""
    import dataclasses

    from runlocal.check import CheckRequest

    async def work(client):
        return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    schemas = stdio_session(env, work)
    fields = ([f.name for f in dataclasses.fields(CheckRequest)] if dataclasses.is_dataclass(CheckRequest)
              else list(CheckRequest.model_fields))
    contract = [f for f in fields if f not in ("use_measurements", "extra")]
    assert list(schemas["check"]["properties"]) == contract
    assert schemas["check"]["required"] == ["model"]
    assert list(schemas["curve"]["properties"]) == contract + ["contexts"]
    props = schemas["check"]["properties"]
    assert {"type": "integer"} in props["parallel"]["anyOf"] and props["kv_unified"]["type"] == "boolean"
    assert "--max-model-len" in props["ctx"]["description"]          # documented from the CLI's own help


def test_other_tools_take_every_cli_option():
    """best / compare / cost / models: every option of the CLI command is an input of the tool, same name."""
    import inspect

    from runlocal import cli
    from runlocal.mcp_server import build_arg_models

    models = build_arg_models()
    presentation = {"as_json", "top"}
    for tool, command in (("best", cli.best), ("compare", cli.compare), ("cost", cli.cost),
                          ("models", cli.models_cmd)):
        options = set(inspect.signature(command).parameters) - presentation
        assert options <= set(models[tool].model_fields), (tool, options - set(models[tool].model_fields))


def test_each_tool_answers_as_the_cli_json(env):
    async def work(client):
        answers = [await client.call_tool(tool, args) for tool, args, _ in SAME_QUESTION]
        answers.append(await client.call_tool("diagnose", {"text": LOG}))
        answers.append(await client.call_tool("errors", {"id": "cuda-oom-load"}))
        answers.append(await client.call_tool("system", {}))
        return answers

    answers = stdio_session(env, work)
    for (tool, args, argv), answer in zip(SAME_QUESTION, answers):
        assert not answer.is_error, (tool, text_of(answer))
        assert json.loads(text_of(answer)) == cli_json(env, *argv), (tool, args)
    diagnose, entry, system = answers[len(SAME_QUESTION):]
    doc = json.loads(text_of(diagnose))
    assert doc == cli_json(env, "diagnose", "-", stdin=LOG)
    # a real diagnosis, not an empty answer: LOG is PyTorch's line with no phase stated (a phase-neutral category since
    # session 21's diagnose21b)
    assert doc["category"] == "cuda_oom_phase_unstated"
    assert json.loads(text_of(entry)) == next(e for e in cli_json(env, "errors") if e["id"] == "cuda-oom-load")
    mine, cli = json.loads(text_of(system)), cli_json(env, "system")
    # free memory is "now": it moves between the two calls; everything else is the same
    assert mine["ram_total"] == cli["ram_total"] and mine["notes"] == cli["notes"]
    assert [(g["name"], g["total"]) for g in mine["gpus"]] == [(g["name"], g["total"]) for g in cli["gpus"]]
    assert 0 < mine["ram_available"] <= mine["ram_total"]


def test_curve_and_hardware_answer_as_the_http_api(env):
    """No CLI command draws the curve or searches the device catalog: the API's JSON is the reference."""
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    async def work(client):
        return (await client.call_tool("curve", {"model": "llama-3.1-8b", "gpu": "rtx-4090"}),
                await client.call_tool("hardware", {"query": "4090"}))

    curve, hardware = stdio_session(env, work)
    api = TestClient(create_app(store_url=f"sqlite:///{env['RUNLOCAL_HOME']}/api.sqlite3"))
    assert json.loads(text_of(curve)) == api.post("/api/v1/curve", json={"model": "llama-3.1-8b",
                                                                         "gpu": "rtx-4090"}).json()
    devices = json.loads(text_of(hardware))
    assert devices == api.get("/api/v1/hardware", params={"q": "4090"}).json()
    assert any("4090" in d["name"] for d in devices)


# (tool, arguments, the field the error must name)
BAD_INPUT = [
    ("check", {"model": "llama-3.1-8b", "ctx": "lots"}, "ctx"),
    ("check", {"model": "llama-3.1-8b", "parallel": "many"}, "parallel"),
    ("check", {"model": "llama-3.1-8b", "parallel": 0}, "parallel"),
    ("check", {"model": "no-such-model-xyz"}, "model"),
    ("check", {"model": "llama-3.1-8b", "gpu": "rtx-9999-ultra"}, "gpu"),
    ("check", {"model": "llama-3.1-8b", "runtime": "turbo"}, "runtime"),
    ("check", {"model": "llama-3.1-8b", "context": 8192}, "context"),                 # not a field of the contract
    ("check", {"model": "llama-3.1-8b", "gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ("check", {"gpu": "rtx-4090"}, "model"),
    ("check", {"model": "x" * 300}, "model"),                 # longer than a file name may be (ENAMETOOLONG)
    ("check", {"model": "x" * 5000}, "model"),
    ("check", {"model": "llama\x00.gguf"}, "model"),
    ("check", {"model": "~no-such-user-xyz/model.gguf"}, "model"),
    ("curve", {"model": "llama-3.1-8b", "contexts": [0]}, "contexts"),
    ("best", {"model": "llama-3.1-8b", "budget": -5}, "budget"),
    ("compare", {"devices": []}, "devices"),
    ("compare", {"devices": ["no-such-gpu-xyz"]}, "devices"),
    ("cost", {"model": "llama-3.1-8b", "gpu": "4090", "hours_per_day": 30}, "hours_per_day"),
    ("diagnose", {"text": ""}, "text"),
    ("models", {"fits": True, "gpu": "none", "ram": "lots"}, "ram"),
    ("errors", {"id": "no-such-entry"}, "id"),
    ("hardware", {"query": 5}, "query"),
]


def test_bad_input_is_a_tool_error_naming_the_field(env):
    async def work(client):
        out = []
        for tool, args, _ in BAD_INPUT:
            out.append(await client.call_tool(tool, args))
        out.append(await client.call_tool("check", {"model": "llama-3.1-8b", "gpu": "rtx-4090"}))   # still answers
        return out

    results = stdio_session(env, work)
    for (tool, args, field), result in zip(BAD_INPUT, results):
        text = text_of(result)
        assert result.is_error, (tool, args, text)
        assert re.match(rf"{field}[:.]", text), (tool, args, text)          # `contexts.0:` names an item
        assert "\n" not in text and "Traceback" not in text
    assert not results[-1].is_error and json.loads(text_of(results[-1]))["verdict"] in ("fits", "tight")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Listener(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self):
        _Listener.hits.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_http_transport_refuses_local_paths_and_urls(env, tmp_path):
    """Over HTTP the public server's rules hold: a planted model file is not read, a URL is not fetched."""
    planted = tmp_path / "model"
    planted.mkdir()
    (planted / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 4096}))
    listener = HTTPServer(("127.0.0.1", 0), _Listener)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{listener.server_address[1]}/model.gguf"
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "runlocal.cli", "mcp", "--transport", "http", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.2)

        async def main():
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
                return [await client.call_tool("check", {"model": str(planted), "vram": "24G"}),
                        await client.call_tool("check", {"model": str(planted / "config.json")}),
                        await client.call_tool("best", {"model": url}),
                        await client.call_tool("check", {"model": "llama-3.1-8b", "gpu": "rtx-4090"})]

        by_path, by_file, by_url, alias = anyio.run(main)
        # DNS rebinding: a page on another name that resolves to 127.0.0.1 is refused by its Host header
        import urllib.error
        import urllib.request

        req = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", method="POST", data=b"{}",
                                     headers={"Host": "attacker.example", "Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=30)
        assert 400 <= refused.value.code < 500
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        listener.shutdown()
    for result in (by_path, by_file):
        assert result.is_error and text_of(result).startswith("model: this server does not read local paths")
    assert by_url.is_error and text_of(by_url).startswith("model: this server does not read URLs")
    assert _Listener.hits == []
    assert not alias.is_error and json.loads(text_of(alias))["model"]["id"] == "llama-3.1-8b"


def test_http_policy_reads_only_what_the_operator_allows(tmp_path, monkeypatch):
    """The HTTP transport's rules, case by case (the same options as `runlocal serve`)."""
    from runlocal.errors import InputError
    from runlocal.mcp_server import ReadPolicy

    allowed = tmp_path / "models"
    (allowed / "tiny").mkdir(parents=True)
    outside = tmp_path / "secret"
    outside.mkdir()
    (allowed / "escape").symlink_to(outside)
    monkeypatch.chdir(tmp_path)
    closed = ReadPolicy.server()
    for ref in ("llama-3.1-8b", "meta-llama/Llama-3.1-8B", "hf://owner/repo/model-Q4_K_M.gguf"):
        assert closed.allowed_model(ref) == ref                 # aliases, Hub repo ids, Hub files
    refused = {
        "/etc/passwd": "local paths", "./models/tiny": "local paths", "~/model.gguf": "local paths",
        "models/tiny": "local paths",                           # looks like owner/name but is a folder here
        "config.json": "local paths", "http://127.0.0.1:9/x.gguf": "URLs", "file:///etc/passwd": "URLs",
    }
    for ref, what in refused.items():
        with pytest.raises(InputError, match=f"^model: this server does not read {what}"):
            closed.allowed_model(ref)
    opened = ReadPolicy.server(local_dir=str(allowed), remote_hosts=["example.org"])
    assert opened.allowed_model("tiny") == str((allowed / "tiny").resolve())      # relative: inside the folder
    assert opened.allowed_model(str(allowed / "tiny")) == str((allowed / "tiny").resolve())
    assert opened.allowed_model("https://example.org/m.gguf") == "https://example.org/m.gguf"
    for ref in ("../secret", str(outside), "escape/x.gguf"):            # out by .., by name, by a symlink
        with pytest.raises(InputError, match="only inside its allowed folder"):
            opened.allowed_model(ref)
    with pytest.raises(InputError, match="does not read URLs"):
        opened.allowed_model("https://example.org.evil.net/m.gguf")
    with pytest.raises(InputError, match="^allow-local-dir:"):
        ReadPolicy.server(local_dir=str(tmp_path / "missing"))


def test_stdio_reads_local_files_as_the_cli_does(env, tmp_path):
    """Over stdio the server runs as the user: a local model folder is read, the same plan as the CLI's."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 5632,
        "num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000,
        "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}))

    async def work(client):
        return await client.call_tool("check", {"model": str(folder), "vram": "8G", "ram": "16G", "ctx": 2048})

    result = stdio_session(env, work)
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result)) == cli_json(env, "check", str(folder), "--vram", "8G", "--ram", "16G",
                                                   "--ctx", "2048")


def test_mcp_command_options_are_checked(env):
    r = subprocess.run(check=False, args=[sys.executable, "-m", "runlocal.cli", "mcp", "--allow-local-dir", "/tmp"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: allow-local-dir:") and "Traceback" not in r.stderr
    r = subprocess.run(check=False, args=[sys.executable, "-m", "runlocal.cli", "mcp", "--transport", "http",
                                          "--allow-local-dir", "/no/such/folder"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: allow-local-dir: '/no/such/folder' is not a folder")
    r = subprocess.run(check=False, args=[sys.executable, "-m", "runlocal.cli", "mcp", "--transport", "carrier-pigeon"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: transport:")


def test_check_path_does_not_import_mcp(env):
    code = ("import sys, runlocal.cli as c; sys.argv=['runlocal','check','llama-3.1-8b','--gpu','rtx-4090','--json'];"
            "\ntry: c.main()\nexcept SystemExit: pass\nassert 'mcp' not in sys.modules, 'mcp imported'")
    r = subprocess.run(check=False, args=[sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_check_takes_the_version_and_the_backend(env):
    """The MCP `check` tool's arguments are the request contract: the same runtime and backend fields."""
    async def work(client):
        return (await client.call_tool("check", {"model": "qwen3-8b", "gpu": "h100", "runtime": "vllm==0.19.0"}),
                await client.call_tool("check", {"model": "qwen3-8b", "gpu": "rtx-3090", "backend": "vulkan"}))

    versioned, vulkan = stdio_session(env, work)
    assert json.loads(text_of(versioned))["runtime_version"] == "0.19.0"
    assert json.loads(text_of(vulkan)) == cli_json(env, "check", "qwen3-8b", "--gpu", "rtx-3090",
                                                   "--backend", "vulkan")

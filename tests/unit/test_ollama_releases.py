"""`--runtime ollama==0.x.y`: the llama.cpp each Ollama release builds (data/ollama_llama_cpp.json, read from the
ollama/ollama tags by measurements/ollama_builds/make_map.py) and what follows from it: llama-server's output cap
(llama.cpp PR #23861, builds after b9272)."""

import json
from importlib.resources import files

from asking import check_json

RELEASES = json.loads(files("runlocal.data").joinpath("ollama_llama_cpp.json").read_text(encoding="utf-8"))["releases"]


def key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def test_ollama_0_31_0_is_planned_on_the_llama_cpp_build_it_ships():
    # "I run Ollama 0.31.0 — which llama.cpp does runlocal plan for?" Its LLAMA_CPP_VERSION file says b9840.
    plan = check_json("qwen3-8b", "--gpu", "rtx 3090", "--runtime", "ollama==0.31.0", "-c", "8192")
    assert plan["runtime_version"] == "0.31.0"
    assert "llama.cpp b9840" in plan["runtime_rules"] and "LLAMA_CPP_VERSION" in plan["runtime_rules"]
    assert "output cap" in plan["runtime_rules"]


def test_a_release_before_llama_server_names_its_vendored_commit_and_gets_no_cap():
    plan = check_json("qwen3-8b", "--gpu", "rtx 3090", "--runtime", "ollama==0.24.0", "-c", "8192")
    assert "vendored llama.cpp ec98e2002" in plan["runtime_rules"]
    assert "n_ubatch rows of logits" in plan["runtime_rules"]


def test_an_early_llama_server_build_says_the_cap_is_assumed():
    # v0.30.0 ships b9452: after b9272 (known without the cap), before b9776 (known with it)
    plan = check_json("qwen3-8b", "--gpu", "rtx 3090", "--runtime", "ollama==0.30.0", "-c", "8192")
    assert "b9452" in plan["runtime_rules"] and "assumed" in plan["runtime_rules"]


def test_the_map_is_what_the_tags_say_about_runners():
    served = sorted((key(v), int(r["llama_cpp"][1:])) for v, r in RELEASES.items() if r["runs"] == "llama-server")
    vendored = [v for v, r in RELEASES.items() if r["runs"] == "vendored"]
    assert served[0][0] == (0, 30, 0) and vendored
    assert all(key(v) < (0, 30, 0) and RELEASES[v]["date"] < "2026-06-01" for v in vendored)
    builds = [b for _, b in served]
    assert builds == sorted(builds), "a later release ships an older llama.cpp"
    assert all(r["source"].startswith("ollama/ollama v") for r in RELEASES.values())

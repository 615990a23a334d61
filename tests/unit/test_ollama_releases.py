"""`--runtime ollama==0.x.y`: the llama.cpp each Ollama release builds (data/ollama_llama_cpp.json, read from the
ollama/ollama tags by measurements/ollama_builds/make_map.py) and what follows from it: llama-server's output cap
(llama.cpp PR #23861, builds after b9272)."""

import json
from importlib.resources import files

from asking import ask, check_json

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


def test_the_build_step_names_the_build_once():
    # --explain printed "vendored llama.cpp ec98e2002 = b7437 = b7437" for v0.13.5: the step's reasoning ended in the
    # value it then prints after "="
    for release in ("0.13.5", "0.13.2", "0.12.0", "0.13.3"):
        plan, _ = ask(f"runlocal check qwen3-8b --gpu 'rtx 3090' --runtime ollama=={release} --ctx 8192")
        step = next(s for s in plan.steps if s.label == "llama.cpp build")
        assert not step.formula.rstrip(")").endswith(step.value) and f"= {step.value}" not in step.formula, step


def test_vendored_builds_come_from_ollamas_own_sync_commits():
    # ollama/ollama's commits that set Makefile.sync's FETCH_HEAD: c68f367ef "Update GGML to b6646 (#12245)" (364a7a6d4),
    # 544b6739d "ggml update to b6840 (#12791)" (3cfa9c3f1), 0cf7794b1 "ggml update to b7108" whose last step is
    # "update to b7209" (7f8ef50cc)
    by_commit = {r["llama_cpp"][:9]: r.get("build") for r in RELEASES.values() if r["runs"] == "vendored"}
    assert (by_commit["364a7a6d4"], by_commit["3cfa9c3f1"], by_commit["7f8ef50cc"]) == (6646, 6840, 7209)
    builds = [r["build"] for v, r in sorted(RELEASES.items(), key=lambda kv: key(kv[0]))
              if r["runs"] == "vendored" and "build" in r]
    assert builds == sorted(builds) and builds[-1] == 7437


def test_each_release_words_its_ram_refusal_where_its_source_does():
    # ollama/ollama llm/server.go, the function holding fmt.Errorf("model requires more system memory (%s) than is
    # available (%s)", …) at each tag: v0.12.0 line 540 `func (s *llamaServer) Load` and line 957
    # `func (s *ollamaServer) createLayout`; v0.12.7 `llamaServer.Load` and `ollamaServer.verifyLayout`; v0.13.0 line 979
    # `func (s *llmServer) verifyLayout` (from v0.12.11); v0.6.0 `func NewLlamaServer`; v0.30.0 none (llama-server)
    def words(release: str) -> str:
        plan, _ = ask(f"runlocal check qwen3-8b --gpu 'rtx 3090' --runtime ollama=={release} --ctx 8192")
        return next(a for a in plan.allocation.assumptions if "refusal message" in a)

    assert "llamaServer.Load" in words("0.12.0") and "createLayout" in words("0.12.0")
    assert "v0.13" not in words("0.12.0") and "verifyLayout" not in words("0.12.0")
    assert "ollamaServer.verifyLayout" in words("0.12.7")
    assert "llmServer.verifyLayout" in words("0.13.0") and "at ollama/ollama v0.13.0" in words("0.13.0")
    assert "NewLlamaServer" in words("0.6.0")
    assert "no such check of its own" in words("0.30.0")

"""A named build that cannot load the model's architecture is refused, not planned (runtimes/arch_support.py,
data/arch_support.json from measurements/arch_support/make_arch_support.py over the ollama/ollama tags).

Independent sources the table is checked against:
- ollama/ollama#12349 (Qwen3-Next), rick-github 2025-12-03: "The next vendor sync after b7186 will make support
  available in ollama" — llama.cpp's first build with qwen3next is b7186 (PR #16095), and no Ollama release before
  that sync loads it (Ollama v0.12.0, 2025-09, vendors e54d41bef).
- ollama/ollama PR #15899 (2026-04-30): "Ollama's vendored llama.cpp only recognizes "qwen3next"", not qwen35 /
  qwen35moe; Ollama 0.23.2 answers "unknown model architecture: 'qwen35'" for a community GGUF, which llama.cpp
  b9079 loads.
- Ollama's sync commit 0cf7794b1 ends "update to b7209": v0.13.2's vendored llama.cpp is b7209, after b7186.
"""

from __future__ import annotations

import json
from importlib.resources import files

from asking import ask

from runlocal.runtimes.arch_support import arch_refusal

TABLE = json.loads(files("runlocal.data").joinpath("arch_support.json").read_text(encoding="utf-8"))


def test_ollama_0_12_0_cannot_load_qwen3_next_and_says_which_release_can():
    plan, _ = ask("runlocal check qwen3-next-80b-a3b --runtime ollama==0.12.0 --gpu 'rtx 4090'")
    assert plan.verdict == "does_not_fit"
    assert "unknown model architecture: 'qwen3next'" in plan.allocation.refusal
    # the vendor sync after b7186 (ollama#12349) is v0.13.2's ("update to b7209")
    assert "v0.13.2" in plan.allocation.refusal and "OLLAMA_VERSION=0.13.2" in plan.allocation.refusal
    assert plan.speed["decode_tokens_per_s"] is None and plan.speed["prefill_tokens_per_s"] is None
    assert plan.fixes == () and plan.max_context is None
    # the release that first vendors a build ≥ b7186 plans it
    plan, _ = ask("runlocal check qwen3-next-80b-a3b --runtime ollama==0.13.2 --gpu 'rtx 4090'")
    assert plan.allocation.refusal is None and plan.speed["decode_tokens_per_s"]


def test_llama_cpp_builds_before_b7186_cannot_load_qwen3_next():
    for build in ("b5000", "b6840", "b7185"):
        plan, _ = ask(f"runlocal check qwen3-next-80b-a3b --runtime llama.cpp=={build} --gpu 'rtx 4090'")
        assert plan.verdict == "does_not_fit" and "First loaded by b7186" in plan.allocation.refusal, build
        assert "releases/tag/b7186" in plan.allocation.refusal and plan.speed["decode_tokens_per_s"] is None
    plan, _ = ask("runlocal check qwen3-next-80b-a3b --runtime llama.cpp==b7186 --gpu 'rtx 4090'")
    assert plan.allocation.refusal is None and plan.speed["decode_tokens_per_s"]
    step = next(s for s in plan.steps if s.label == "architecture")
    assert step.value == "qwen3next" and "#12349" in step.formula


def test_qwen35_is_unknown_to_ollamas_vendored_llama_cpp():
    # PR #15899: the vendored llama.cpp never learnt qwen35; Ollama's Go engine did, so Ollama's own library models load
    assert "vendored" not in TABLE["ollama"]["qwen35"]["how"] and "Go engine" in TABLE["ollama"]["qwen35"]["how"]
    row = TABLE["llama_cpp"]["qwen35"]
    assert row["with"] <= 9079 < 9452          # the b9079 log loads it; so does every Ollama llama-server (b9452 on)
    refused, _ = arch_refusal("llama.cpp", "b7000", "qwen35")
    assert refused and "unknown model architecture: 'qwen35'" in refused
    refused, how = arch_refusal("llama.cpp", "b8500", "qwen35")          # between the known builds: assumed, said so
    assert refused is None and "assumed" in how
    assert arch_refusal("ollama", "0.30.0", "qwen35")[0] is None


def test_table_agrees_with_the_public_texts():
    assert TABLE["llama_cpp"]["qwen3next"]["first"] == 7186
    assert TABLE["llama_cpp"]["qwen3next"]["without"] < 7186 <= 7209        # b7209 (v0.13.2) has it
    assert TABLE["ollama"]["qwen3next"]["first"] == "0.13.2"
    for arch, row in TABLE["llama_cpp"].items():      # a build known without precedes the one known with
        assert row["without"] is None or row["with"] is None or row["without"] < row["with"], arch


def test_current_and_unmapped_runtimes_are_not_checked():
    plan, _ = ask("runlocal check qwen3-next-80b-a3b --gpu 'rtx 4090'")
    assert plan.allocation.refusal is None and not any(s.label == "architecture" for s in plan.steps)
    plan, _ = ask("runlocal check llama-3.1-8b --runtime llama.cpp==b5000 --gpu 'rtx 4090'")
    assert plan.allocation.refusal is None        # llama: known by b6646, older builds not checked (no refusal)
    # vLLM's table (VLLM_FIRST) holds the model types the catalog uses most: another is said not checked, not refused
    refused, how = arch_refusal("vllm", "0.10.0", "qwen3next")
    assert refused is None and "not checked" in how


def test_a_go_engine_only_architecture_says_a_community_gguf_will_not_load():
    # ollama PR #15899: Ollama 0.23.2 runs its library's qwen35 (Go engine) but answers "unknown model architecture:
    # 'qwen35'" for a community GGUF, which goes to the vendored llama.cpp
    refused, how = arch_refusal("ollama", "0.23.2", "qwen35")
    assert refused is None and "Go engine only" in how and "#15899" in how
    assert "Go engine only" not in arch_refusal("ollama", "0.13.2", "qwen3next")[1]


def test_best_and_compare_refuse_what_the_build_cannot_load():
    # `best` ranked devices by tokens/s for qwen3-next under Ollama 0.12.0, which cannot load it (ollama#12349)
    import pytest

    from runlocal.choose import best
    from runlocal.compare import compare_devices
    from runlocal.errors import InputError
    from runlocal.model.catalog import lookup

    with pytest.raises(InputError, match=r"^runtime: Ollama 0.12.0 cannot load this model.*v0.13.2"):
        best(lookup("qwen3-next-80b-a3b"), runtime="ollama==0.12.0")
    with pytest.raises(InputError, match=r"^runtime: llama.cpp b5000 cannot load this model.*b7186"):
        compare_devices(["rtx 4090"], model="qwen3-next-80b-a3b", runtime="llama.cpp==b5000")


def test_ollama_0_11_0_loads_gpt_oss_through_its_go_engines_own_name():
    """review16c finding 3. ollama/ollama v0.11.0 (the release that shipped gpt-oss: log v0.10.1..v0.11.0 has
    d55206841 "gpt-oss integration"): model/models/gptoss/model.go:267 `model.Register("gptoss", New)` and
    convert/convert_gptoss.go:37 `kv["general.architecture"] = "gptoss"` — the library's gpt-oss:20b is a "gptoss" GGUF
    its Go engine loads; the llama.cpp name "gpt-oss" is registered beside it from v0.11.5 (model.go:278). The table
    matched the llama.cpp name only and refused 0.11.0–0.11.4."""
    for release in ("0.11.0", "0.11.4"):
        refused, how = arch_refusal("ollama", release, "gpt-oss")
        assert refused is None and "'gptoss'" in how and "Go engine only" in how, release
    assert arch_refusal("ollama", "0.10.1", "gpt-oss")[0] is not None     # v0.10.1 registers neither name
    refused, how = arch_refusal("ollama", "0.11.5", "gpt-oss")
    assert refused is None and "Go engine only" not in how


def test_go_engine_only_is_said_only_where_the_vendored_copy_lacks_the_name():
    """review16c finding 4: `git grep -c '"gemma3"' v0.12.0 -- llama/llama.cpp/src/llama-arch.cpp` → 1 (ollama/ollama),
    so a community gemma3 GGUF loads in 0.12.0; `git grep '"qwen35"' v0.24.0 -- …llama-arch.cpp` finds nothing (PR
    #15899), so there the Go engine alone loads it."""
    assert "Go engine only" not in arch_refusal("ollama", "0.12.0", "gemma3")[1]
    assert "Go engine only" in arch_refusal("ollama", "0.24.0", "qwen35")[1]


# review17 finding 2: the architectures people pin builds for. Independent sources:
# - ollama/ollama#11816 (2025-08-08): Ollama 0.11.x answers "unknown model architecture: 'gpt-oss'" for a community
#   GGUF — "ollama is using an older version of llama.cpp and thus does not have support for gpt-oss"; its vendored
#   llama.cpp is de4c07f9 (v0.11.4 Makefile.sync), build 5359 by a llama.cpp issue's `--version` ("5359 (de4c07f9)").
# - utilityai/llama-cpp-rs PR #797 (2025-08-06): b6097 "includes the recent changes to support GPT OSS" (#15091).
# - oobabooga/textgen#7177: "Support for GLM 4.5 has been added to llama.cpp in b6085".
# - ggml-org/llama.cpp#12345: "I just tested b4875 (7841fc72 / #12343) using gemma-3-4b-it-Q8_0.gguf … working".

def test_gpt_oss_before_the_vendored_b5359_is_refused_and_b6097_loads():
    for build in ("b5000", "b5359"):
        refused, _ = arch_refusal("llama.cpp", build, "gpt-oss")
        assert refused and "unknown model architecture: 'gpt-oss'" in refused and "b6097" in refused, build
    assert arch_refusal("llama.cpp", "b6097", "gpt-oss")[0] is None


def test_glm4moe_and_gemma3_first_builds():
    refused, _ = arch_refusal("llama.cpp", "b6084", "glm4moe")
    assert refused and "First loaded by b6085" in refused and "releases/tag/b6085" in refused
    assert arch_refusal("llama.cpp", "b6085", "glm4moe")[0] is None
    refused, _ = arch_refusal("llama.cpp", "b4874", "gemma3")
    assert refused and "First loaded by b4875" in refused
    assert arch_refusal("llama.cpp", "b4875", "gemma3")[0] is None


def test_a_build_the_table_cannot_vouch_for_is_said_in_the_plain_answer():
    # b6000 lies between b5359 (lacks gpt-oss) and b6097 (has it): planned, and the answer says it is not known
    plan, notes = ask("runlocal check gpt-oss-120b --gpu rtx-4090 --ram 64G --runtime llama.cpp==b6000")
    assert plan.allocation.refusal is None
    said = [n for n in notes if "'gpt-oss' architecture" in n]
    assert len(said) == 1 and "b5359 lacks it and b6097 has it" in said[0] and "PR #15091" in said[0]
    # a build after the oldest known to hold it: nothing to say
    _, notes = ask("runlocal check gpt-oss-120b --gpu rtx-4090 --ram 64G --runtime llama.cpp==b7000")
    assert not any("architecture:" in n for n in notes)
    # older than the oldest build read (Ollama v0.11.4's vendored b5359 names 'gemma2'): "older builds not checked"
    plan, notes = ask("runlocal check gemma-2-9b --gpu rtx-4090 --runtime llama.cpp==b5000")
    said = [n for n in notes if "'gemma2' architecture" in n]
    assert plan.allocation.refusal is None and len(said) == 1
    assert "known by b5359; older builds not checked" in said[0]
    # 'llama' is LLM_ARCH_NAMES' first entry since GGUF itself (PR #2398, 2023-08-21): every GGUF build names it, so
    # nothing is said (review19 section 13: the note on b2500 was noise)
    for build in ("b2500", "b5000"):
        plan, notes = ask(f"runlocal check llama-3.1-8b --gpu rtx-4090 --runtime llama.cpp=={build}")
        assert plan.allocation.refusal is None and not [n for n in notes if "'llama' architecture" in n]


def test_every_catalog_architecture_has_a_row():
    # the module says the table holds every architecture the catalog uses (review17c finding 3: gemma4 and dbrx were
    # missing, so a named old build planned them silently)
    names = json.loads(files("runlocal.data").joinpath("gguf_catalog_names.json").read_text(encoding="utf-8"))
    archs = {m["arch"] for m in names["models"].values() if m["arch"]}
    assert {"gemma4", "dbrx"} <= archs
    assert archs <= set(TABLE["llama_cpp"]) and archs <= set(TABLE["ollama"])


def test_gemma4_bounds_as_the_update_prs_name_them():
    # bernardladenthin/java-llama.cpp PR #64, "Upgrade llama.cpp from b8611 to b8645": "Adds Gemma 4 model support";
    # fragcolor-xyz/shards PR #1261, "Bump llama.cpp to b8639 (Gemma 4 support)": the first build is in b8612 … b8639
    row = TABLE["llama_cpp"]["gemma4"]
    assert (row["without"], row["with"], row.get("first")) == (8611, 8639, None) and "21309" in row["pr"]
    refused, _ = arch_refusal("llama.cpp", "b6000", "gemma4")            # review17c: b6000 (2025-07) planned it
    assert refused and "after b8611" in refused and "b8639 has it" in refused
    assert arch_refusal("llama.cpp", "b8639", "gemma4")[0] is None
    # Ollama 0.5.8 (2025-02) neither vendors nor registers it; v0.20.0's Go engine registers "gemma4"
    # (ollama/ollama#15303: Ollama 0.20.0, a Hub gemma4 GGUF: "unknown model architecture: 'gemma4'")
    refused, _ = arch_refusal("ollama", "0.5.8", "gemma4")
    assert refused and "v0.20.0" in refused
    assert TABLE["ollama"]["gemma4"]["first"] == "0.20.0" and TABLE["ollama"]["gemma4"]["vendored_first"] is None


def test_between_the_gemma4_bounds_the_plain_answer_says_so():
    plan, notes = ask("runlocal check gemma-4-31b --gpu rtx-4090 --runtime llama.cpp==b8620")
    said = [n for n in notes if "'gemma4' architecture" in n]
    assert plan.allocation.refusal is None and len(said) == 1 and "b8611 lacks it and b8639 has it" in said[0]


def test_an_architecture_the_table_lacks_is_said_not_checked_for_a_named_build():
    from runlocal.runtimes.arch_support import unchecked_note

    for runtime, version in (("llama.cpp", "b6000"), ("ollama", "0.5.8"), ("ollama", "0.30.0")):
        note = unchecked_note(runtime, version, "no-such-arch")
        assert note and "'no-such-arch' is not in runlocal's table" in note and "not checked" in note, (runtime, note)
    assert unchecked_note("llama.cpp", None, "no-such-arch") is None       # the current build: nothing named

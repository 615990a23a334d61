"""The GGUF repos in data/ollama_tags.json found by measurements/gguf_repos (RULE.md): each names the Q4_K_M file
seen on a page of that very repo, and the commands name that repo."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

from runlocal.model.catalog import lookup
from runlocal.runtimes.published import llama_server_model, ollama_model
from runlocal.runtimes.pull_names import read_gguf_file_name

ROOT = Path(__file__).resolve().parents[2]
FOUND = ROOT / "measurements" / "gguf_repos" / "found.jsonl"
TAGS = json.loads(resources.files("runlocal.data").joinpath("ollama_tags.json").read_text())["models"]


def lines() -> list[dict]:
    return [json.loads(line) for line in FOUND.read_text().splitlines() if line.strip()]


def records() -> list[dict]:
    """The record that decides each alias: its last line (RULE.md Amendment 3: query 2's lines follow query 1's)."""
    return list({rec["alias"]: rec for rec in lines()}.values())


def matches_tag(file: str, tag: str) -> bool:
    # llama.cpp common/download.cpp matches_quant_tag: std::regex(tag + "[._-]", icase), written out here
    low, t = file.lower(), tag.lower()
    return any(t + c in low for c in "._-")


def test_data_is_what_apply_writes():
    run = subprocess.run([sys.executable, str(ROOT / "measurements/gguf_repos/apply.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_query_2_lines_follow_the_rule():
    """RULE.md Amendment 3: session 20's 277 lines stay first and unchanged in number; every later line is a query-1
    null reached by query 2 (both queries logged, the second `bartowski <base>-GGUF Q4_K_M`), a not_queried line, or a
    session-20 repo gaining quants_only from its own why. A later line supersedes an earlier one: a not_queried line may
    be followed by the same target's query-2 line (session 21's helpers ran the targets in parts), never the reverse,
    and query 2 is run once per target."""
    all_lines = [r for r in lines() if r.get("evidence") not in ("code", "named") and r.get("query3") != "not_queried"]
    first = {r["alias"]: r for r in all_lines[:277]}
    assert len(first) == 277
    later = all_lines[277:]
    q1_nulls = [a for a, r in first.items() if r["hf"] is None and not r.get("dropped")]
    reached = [r["alias"] for r in later if len(r["queries"]) == 2]
    unreached = [r["alias"] for r in later if r.get("query2") == "not_queried"]
    assert len(reached) == len(set(reached)) and len(unreached) == len(set(unreached))
    assert set(reached) | set(unreached) == set(q1_nulls)      # every null logged, nothing else
    assert [a for a in q1_nulls if a in unreached] == unreached  # not_queried lines in found.jsonl order
    position = {(r["alias"], len(r["queries"])): i for i, r in enumerate(later) if r["alias"] in q1_nulls}
    for alias in set(reached) & set(unreached):                 # reached after being logged not_queried
        assert position[(alias, 1)] < position[(alias, 2)], alias
    last = {r["alias"]: r for r in later}
    assert {a for a in q1_nulls if len(last[a]["queries"]) == 2} == set(reached)
    for rec in later:
        base = rec["repo_id"].split("/")[-1]
        if len(rec["queries"]) == 2:
            assert rec["queries"][1] == f"bartowski {base}-GGUF Q4_K_M", rec
        elif rec.get("query2") != "not_queried":
            assert rec["hf"] == first[rec["alias"]]["hf"] and "holds only" in rec["why"] and rec["quants_only"]


def test_every_record_is_a_target_once_and_its_repo_is_in_the_data():
    recs = records()
    assert len({r["alias"] for r in recs}) == len(recs) == 277
    for rec in recs:
        entry = TAGS[rec["alias"]]
        assert rec["queries"][0] == f"{rec['repo_id'].split('/')[-1]} GGUF Q4_K_M", rec
        if rec.get("dropped"):                      # RULE.md clause 5: found, but llama.cpp cannot load it
            assert "hf" not in entry and "hf_seen" not in entry, rec
            continue
        if rec["hf"] is None:
            assert rec["hf_source"] is None and rec["file"] is None and rec["why"], rec
            if rec.get("withdrawn"):                # RULE.md Amendment 5: a DOUBTFUL repo query 4 did not bear out
                assert "hf" not in entry and "hf_seen" not in entry, rec
            continue
        assert entry["hf"] == rec["hf"]
        if rec.get("evidence") == "named":          # RULE.md Amendment 5: checked in test_query_4_lines_follow_the_rule
            assert rec["hf"] in entry["hf_seen"] and "Amendment 5" in entry["hf_seen"] and rec["file"] in entry["hf_seen"]
            continue
        if rec.get("evidence") == "code":           # RULE.md Amendment 4: checked in test_query_3_lines_follow_the_rule
            assert rec["hf"] in entry["hf_seen"] and "Amendment 4" in entry["hf_seen"], rec
            continue
        assert entry["hf_source"] == f"https://huggingface.co/{rec['hf']}"
        assert rec["file"] in entry["hf_seen"] and rec["hf_source"] in entry["hf_seen"]
        assert rec["hf_source"].startswith(f"https://huggingface.co/{rec['hf']}/"), rec
        assert rec["file"].endswith(".gguf") and matches_tag(rec["file"], "Q4_K_M"), rec
        assert entry.get("split", False) == rec["split"] == bool(re.search(r"-00001-of-\d{5}\.gguf$", rec["file"]))


def test_every_hf_entry_names_its_own_repo_as_source():
    """Every catalog entry with a GGUF repo (hand-written or found) cites a page of that very repo; 265 of 312 after
    session 23's query 4 on its 53 targets (found.jsonl's 53 `evidence: "named"` lines: 7 with a repo, 6 of them new
    and falcon-40b-instruct's replacing its DOUBTFUL one; falcon-7b-instruct's DOUBTFUL repo withdrawn: 260 + 6 - 1),
    which leaves 80 of the 82 query 3 repos deciding their alias; 260 after
    session 22's query 3 on all 133 targets (82 repos from public run / download lines, RULE.md Amendment 4); 178
    after session 21's query 2 on all 148 targets (catalog21: 1-34, catalog21b: 35-91, catalog21c: 92-148; 167 after targets
    1-34, 163 after session 20): a count from the
    data, checked against found.jsonl's repos plus the entries written by hand before measurements/gguf_repos existed."""
    with_hf = {a: e for a, e in TAGS.items() if e.get("hf")}
    for alias, entry in with_hf.items():
        src = entry.get("hf_source") or ""
        assert src == f"https://huggingface.co/{entry['hf']}" or src.startswith(f"https://huggingface.co/{entry['hf']}/"), alias
    found = {r["alias"] for r in records() if r["hf"] and not r.get("dropped")}
    by_code = {r["alias"] for r in records() if r["hf"] and r.get("evidence") == "code"}
    by_name = {r["alias"] for r in records() if r["hf"] and r.get("evidence") == "named"}
    by_hand = {a for a in with_hf if a not in found}
    assert found <= set(with_hf) and len(found) - len(by_code) - len(by_name) == 143
    assert len(by_code) == 80 and len(by_name) == 7
    assert len(with_hf) == len(found) + len(by_hand) == 265


def test_a_quant_the_repo_does_not_publish_is_not_pulled():
    """chenghenry/gemma-1.1-7b-it-GGUF holds Q4_K_M and Q6_K only (its tree page, read by catalog20); elyza's repo only
    its q4_k_m file: a Q8_0 / F16 request names a file to make, and says why, instead of an -hf tag matching nothing."""
    from runlocal.runtimes.published import unpublished_quant_note

    gemma = lookup("gemma-7b")
    assert llama_server_model(gemma, "q6_k") == ["-hf", "chenghenry/gemma-1.1-7b-it-GGUF:Q6_K"]
    for quant, name in (("q8_0", "gemma-7b-Q8_0.gguf"), ("f16", "gemma-7b-F16.gguf")):
        assert llama_server_model(gemma, quant) == ["-m", f"PATH/TO/{name}"]
        note = unpublished_quant_note(gemma, "llama.cpp", quant) or ""
        assert "publishes no" in note and "Q4_K_M, Q6_K" in note and "llama-quantize" in note
    assert unpublished_quant_note(gemma, "llama.cpp", "q4_k_m") is None
    setup, name, note = ollama_model(lookup("llama-3-elyza-jp-8b"), "q8_0")
    assert "ollama create" in setup and not name.startswith("hf.co/") and "publishes no Q8_0" in (note or "")
    _, name, _ = ollama_model(lookup("llama-3-elyza-jp-8b"), "q4_k_m")
    assert name == "hf.co/elyza/Llama-3-ELYZA-JP-8B-GGUF:Q4_K_M"
    # a repo whose whole listing is not known keeps its -hf tag at any quant (nothing is said that was not read)
    assert llama_server_model(lookup("llama-2-7b"), "f16")[0] == "-hf"


def test_no_repo_serves_two_catalog_models():
    repos = [e["hf"].lower() for e in TAGS.values() if e.get("hf")]
    assert len(repos) == len(set(repos))


def test_hand_checked_examples():
    # a dot-named (mradermacher), a dash-named (unsloth) and a split (MaziyarPanahi) file, read off their pages
    by = {r["alias"]: r for r in records()}
    assert by["llama-2-7b"]["file"] == "Llama-2-7b-chat-hf.Q4_K_M.gguf"
    assert by["deepseek-r1-distill-llama-8b"]["hf"] == "unsloth/DeepSeek-R1-Distill-Llama-8B-GGUF"
    assert by["mixtral-8x22b-base"]["split"] and TAGS["mixtral-8x22b-base"]["split"] is True
    assert not matches_tag("Llama-2-7b-chat-hf.Q4_K_S.gguf", "Q4_K_M")


def test_commands_use_the_repo():
    spec = lookup("llama-2-7b")
    assert llama_server_model(spec, "q8_0") == ["-hf", "mradermacher/Llama-2-7b-chat-hf-GGUF:Q8_0"]
    # a split repo is not pulled from hf.co by Ollama: the note says to merge the shards
    _, name, note = ollama_model(lookup("mixtral-8x22b-base"), "q4_k_m")
    if not name.startswith("mixtral:"):
        assert not name.startswith("hf.co/") and "split" in (note or "")


def test_a_found_file_name_names_its_model():
    assert read_gguf_file_name("Llama-2-7b-chat-hf.Q4_K_M.gguf").alias == "llama-2-7b"


def test_a_repo_llama_cpp_cannot_load_gets_no_hf_command():
    """review20b finding 5: leafspark's Llama-3.2-11B-Vision-Instruct.Q4_K_M.gguf is general.architecture mllama, and
    llama.cpp b6019 refuses that very file, "unknown model architecture: 'mllama'" (ggml-org/llama.cpp#14951)."""
    by = {r["alias"]: r for r in records()}
    assert "mllama" in by["llama-3.2-11b-vision"]["dropped"] and "#14951" in by["llama-3.2-11b-vision"]["dropped"]
    assert llama_server_model(lookup("llama-3.2-11b-vision"), "q4_k_m")[:1] != ["-hf"]
    # contrast: a found repo of a loadable architecture keeps its -hf
    assert llama_server_model(lookup("llama-2-7b"), "q4_k_m")[0] == "-hf"


def test_query_3_lines_follow_the_rule():
    """RULE.md Amendment 4: a query 3 line is a target whose earlier last line had no repo (and no `dropped`); it logs
    the earlier queries then `find_string: <base>-GGUF:Q4_K_M` (and `<base>-Q4_K_M` for 3b), each cut to 50
    characters; a repo it gives is named, with Q4_K_M, by one of its quoted run / download lines, and passes the name
    test of clause 3; a named file is the repo's Q4_K_M (shard 1 where split); with no file named, the record is not
    split and the model is at most 60 B parameters, unless an Ollama hf.co/ pull of that repo is quoted."""
    seen: dict[str, dict] = {}
    q3 = 0
    for rec in lines():
        if rec.get("evidence") == "code" or rec.get("query3") == "not_queried":
            q3 += 1
            before = seen[rec["alias"]]
            assert before["hf"] is None and not before.get("dropped") and before.get("evidence") != "code", rec
            if rec.get("query3") == "not_queried":
                assert rec["queries"] == before["queries"] and rec["hf"] is None
                seen[rec["alias"]] = rec
                continue
            base = rec["repo_id"].split("/")[-1]
            asked = rec["queries"][len(before["queries"]):]
            assert rec["queries"][:len(before["queries"])] == before["queries"]
            assert asked in ([f"find_string: {f'{base}-GGUF:Q4_K_M'[:50]}"],
                             [f"find_string: {f'{base}-GGUF:Q4_K_M'[:50]}", f"find_string: {f'{base}-Q4_K_M'[:50]}"]), rec
            if rec["hf"]:
                quoted = [hit["line"].lower() for hit in rec["code"]]
                assert all(hit["id"].isdigit() for hit in rec["code"]), rec
                assert any(rec["hf"].lower() in q and "q4_k_m" in q for q in quoted), rec
                name = re.sub(r"-gguf$", "", rec["hf"].split("/")[1].lower())
                if rec["hf"].lower().startswith("bartowski/"):
                    name = name.split("_", 1)[-1]
                assert name == base.lower(), rec
                if rec["file"]:
                    stem = rec["file"].rsplit("/", 1)[-1]
                    assert any(stem.lower() in q for q in quoted) and matches_tag(stem, "Q4_K_M"), rec
                    assert rec["split"] == bool(re.search(r"-00001-of-\d{5}\.gguf$", stem)), rec
                else:
                    pulled = any(f"hf.co/{rec['hf']}:q4_k_m".lower() in q for q in quoted)
                    assert not rec["split"] and (pulled or lookup(rec["alias"]).params <= 60e9), rec
        seen[rec["alias"]] = rec
    assert q3 > 0


def test_query_3_commands_name_the_repo_the_code_names():
    """Review22 #5's models: the commands pull the repo the quoted line runs; GLM-4.5-Air's Q4_K_M is two shards (its
    quoted download line names Q4_K_M/GLM-4.5-Air-Q4_K_M-00001-of-00002.gguf), so Ollama is told to join them."""
    assert llama_server_model(lookup("qwen3.5-9b"), "q4_k_m") == ["-hf", "unsloth/Qwen3.5-9B-GGUF:Q4_K_M"]
    assert llama_server_model(lookup("gemma-4-31b"), "q4_k_m") == ["-hf", "ggml-org/gemma-4-31B-it-GGUF:Q4_K_M"]
    assert llama_server_model(lookup("glm-4.5-air"), "q4_k_m") == ["-hf", "unsloth/GLM-4.5-Air-GGUF:Q4_K_M"]
    _, name, note = ollama_model(lookup("glm-4.5-air"), "q4_k_m")
    assert not name.startswith("hf.co/") and "split" in (note or "")
    _, name, _ = ollama_model(lookup("qwen3-coder-30b-a3b"), "q4_k_m")
    assert name.startswith(("qwen3-coder:", "hf.co/unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF"))


def test_query_4_lines_follow_the_rule():
    """RULE.md Amendment 5: one query 4 line for each of targets4.tsv's 53 targets (the 51 without a repo, then the
    DOUBTFUL falcon-7b-instruct and falcon-40b-instruct); each logs the earlier queries, then `find_string: <base>-GGUF`
    (cut to 50), and `search code: <base> GGUF Q4_K_M` / `search docs: <repo_id> GGUF` only in that order (Amendment 5a).
    A repo it gives passes clause 3's name test, is named with its Q4_K_M file by a quoted source, the file resolves by
    llama.cpp's tag rule and its split flag agrees with its name. 7 of the 53 give a repo; falcon-7b-instruct's earlier
    repo is withdrawn."""
    targets = [line.split("\t")[:2] for line in (FOUND.parent / "targets4.tsv").read_text().splitlines()]
    assert len(targets) == 53 and [t[0] for t in targets[-2:]] == ["falcon-7b-instruct", "falcon-40b-instruct"]
    before: dict[str, dict] = {}
    q4 = []
    for rec in lines():
        if rec.get("evidence") == "named":
            q4.append(rec)
            earlier = before[rec["alias"]]
            base = rec["repo_id"].split("/")[-1]
            asked = rec["queries"][len(earlier["queries"]):]
            assert rec["queries"][:len(earlier["queries"])] == earlier["queries"]
            allowed = [f"find_string: {f'{base}-GGUF'[:50]}", f"search code: {base} GGUF Q4_K_M",
                       f"search docs: {rec['repo_id']} GGUF"]
            assert asked == allowed[:len(asked)] and asked, rec
            if rec["hf"]:
                name = re.sub(r"-gguf$", "", rec["hf"].split("/")[1].lower())
                assert name == base.lower(), rec                  # TheBloke, mradermacher, Qwen: no org_ prefix here
                stem = rec["file"].rsplit("/", 1)[-1]
                assert matches_tag(stem, "Q4_K_M") and stem.lower().endswith(".gguf"), rec
                assert any(rec["hf"].lower() in s["line"].lower() and stem.lower() in s["line"].lower()
                           for s in rec["sources"]), rec
                assert rec["split"] == bool(re.search(r"-00001-of-\d{5}\.gguf$", stem)), rec
        before[rec["alias"]] = rec
    assert [[r["alias"], r["repo_id"]] for r in q4] == targets
    assert sum(1 for r in q4 if r["hf"]) == 7
    assert [r["withdrawn"] for r in q4 if r.get("withdrawn")] == ["tiiuae/falcon-7b-instruct-GGUF"]


def test_query_4_commands_use_the_repo_the_source_names():
    """TinyLlama 3T's Q4_K_M, downloaded by wllama's test fixture at a pinned revision of TheBloke's repo
    (found.jsonl, Amendment 5); falcon-7b-instruct, its DOUBTFUL repo withdrawn, is no longer pulled from a repo."""
    assert llama_server_model(lookup("tinyllama-1.1b-3t"), "q4_k_m") == [
        "-hf", "TheBloke/TinyLlama-1.1B-intermediate-step-1431k-3T-GGUF:Q4_K_M"]
    assert llama_server_model(lookup("falcon-7b-instruct"), "q4_k_m")[0] != "-hf"

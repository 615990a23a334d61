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


def records() -> list[dict]:
    return [json.loads(line) for line in FOUND.read_text().splitlines() if line.strip()]


def matches_tag(file: str, tag: str) -> bool:
    # llama.cpp common/download.cpp matches_quant_tag: std::regex(tag + "[._-]", icase), written out here
    low, t = file.lower(), tag.lower()
    return any(t + c in low for c in "._-")


def test_data_is_what_apply_writes():
    run = subprocess.run([sys.executable, str(ROOT / "measurements/gguf_repos/apply.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_every_record_is_a_target_once_and_its_repo_is_in_the_data():
    recs = records()
    assert len({r["alias"] for r in recs}) == len(recs)
    for rec in recs:
        entry = TAGS[rec["alias"]]
        assert rec["queries"][0] == f"{rec['repo_id'].split('/')[-1]} GGUF Q4_K_M", rec
        if rec.get("dropped"):                      # RULE.md clause 5: found, but llama.cpp cannot load it
            assert "hf" not in entry and "hf_seen" not in entry, rec
            continue
        if rec["hf"] is None:
            assert rec["hf_source"] is None and rec["file"] is None and rec["why"], rec
            continue
        assert entry["hf"] == rec["hf"]
        assert entry["hf_source"] == f"https://huggingface.co/{rec['hf']}"
        assert rec["file"] in entry["hf_seen"] and rec["hf_source"] in entry["hf_seen"]
        assert rec["hf_source"].startswith(f"https://huggingface.co/{rec['hf']}/"), rec
        assert rec["file"].endswith(".gguf") and matches_tag(rec["file"], "Q4_K_M"), rec
        assert entry.get("split", False) == rec["split"] == bool(re.search(r"-00001-of-\d{5}\.gguf$", rec["file"]))


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

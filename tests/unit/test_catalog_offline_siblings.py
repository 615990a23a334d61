"""Offline, a model the issue's users named (#18): the catalog answers for its own repos and, for a base or instruct
name of the same owner, with that sibling's config and a note saying so; anything else gets the true reason."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from runlocal.model import catalog


def _check_offline(model: str, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "RUNLOCAL_HOME": str(tmp_path),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "runlocal.cli", "check", model, "--gpu", "rtx-4090"], check=False,
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("repo_id", ["meta-llama/Llama-2-7b-hf", "Qwen/Qwen1.5-14B-Chat", "mistralai/Codestral-22B-v0.1",
                                     "codellama/CodeLlama-34b-Instruct-hf"])
def test_models_the_issue_could_not_resolve_are_catalog_entries(repo_id):
    entry = catalog.find_entry(repo_id)
    assert entry is not None and entry["repo_id"] == repo_id


def test_a_base_repo_offline_reads_its_instruct_sibling_and_says_so(tmp_path):
    r = _check_offline("Qwen/Qwen1.5-14B", tmp_path)
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "Qwen/Qwen1.5-14B (qwen2" in out
    assert "read with the catalog's qwen1.5-14b config (Qwen/Qwen1.5-14B-Chat)" in out


def test_another_owner_of_the_same_name_gets_the_true_reason(tmp_path):
    r = _check_offline("someone/Llama-3.1-8B", tmp_path)
    assert r.returncode == 2
    assert "offline" in r.stderr and "not in the catalog or the Hugging Face cache" in r.stderr


def test_sibling_spec_is_the_entry_under_the_asked_id():
    sib = catalog.sibling_spec("meta-llama/Llama-3.1-8B")
    assert sib is not None and sib.repo_id == sib.id == "meta-llama/Llama-3.1-8B"
    assert sib.params == catalog.lookup("llama-3.1-8b").params
    assert not sib.source.startswith("catalog:")        # the instruct repo's GGUF/Ollama names are not reused
    assert catalog.sibling_spec("other/Llama-3.1-8B") is None
    assert catalog.sibling_spec("meta-llama/Llama-9-1B") is None

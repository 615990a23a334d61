"""The public error corpus's citation rule (runlocal.evidence.public_errors.source_problem): a record's ``source`` is a
GitHub issue / PR / discussion URL, or an off-GitHub page's https URL whose host the record's ``project`` names.

The admitted pages are the corpus's own off-GitHub records (round 42's blog post, round 52's forum threads and blog
post, as collect42 / collect52 wrote them); the refusals are URLs that cite no paste (a site's front page, a repository
page, plain http) or a project that names another site."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runlocal.evidence import public_errors as corpus

ROOT = Path(__file__).resolve().parents[2]


def _rec(source: str, project: str) -> dict:
    return {"id": "x", "source": source, "project": project, "runtime": "llama.cpp", "version": None,
            "text": "error", "label": "not_memory", "family": "f", "memory": False}


def test_the_corpus_pages_off_github_are_admitted_by_their_own_urls():
    pages = [json.loads(line) for name in ("round42_pages.jsonl", "round52_pages.jsonl", "round55_pages.jsonl",
                                           "round56_pages.jsonl", "round59_pages.jsonl", "round61_pages.jsonl")
             for line in (ROOT / "measurements/public_errors" / name).read_text(encoding="utf-8").splitlines()
             if line.strip()]
    assert len(pages) == 5 + 16 + 8 + 4
    for rec in pages:
        assert not rec["source"].startswith("https://github.com/")
        assert corpus.source_problem(rec) is None
    loaded = {r["id"] for r in corpus.load_records()}
    assert {r["id"] for r in pages} <= loaded


@pytest.mark.parametrize("source, project", [
    ("https://github.com/ggml-org/llama.cpp/issues/25191", "ggml-org/llama.cpp"),
    ("https://github.com/vllm-project/vllm/pull/2666", "vllm-project/vllm"),
    ("https://discuss.huggingface.co/t/cpu-offloading-error-scenario/175522", "discuss.huggingface.co"),
    ("https://www.tobias-weiss.org/articles/ai/dgx-spark-vllm-oom-debugging/", "tobias-weiss.org (blog)"),
    ("https://github.com/IyLias/ml-trouble-shooting/blob/e1ddaba85619225c4992fd251221cb74d05d2ba5/pytorch/errors.md",
     "IyLias/ml-trouble-shooting"),                                        # a file at a commit (round 57)
    ("produced-here:measurements/public_errors/round62_make/m01_llama_nommap_qwen3_4b.py"
     "@e1ddaba85619225c4992fd251221cb74d05d2ba5", "produced-here"),       # a producing script at a commit (round 62)
])
def test_threads_and_pages_cite(source, project):
    assert corpus.source_problem(_rec(source, project)) is None


@pytest.mark.parametrize("source, project, says", [
    ("https://github.com/ggml-org/llama.cpp", "github.com", "not a GitHub issue/PR URL"),          # a repository
    ("https://github.com/ggml-org/llama.cpp/blob/master/README.md", "github.com", "not a GitHub"),  # not a thread
    ("https://discuss.huggingface.co", "discuss.huggingface.co", "not a GitHub"),                  # no page
    ("http://discuss.huggingface.co/t/x/1", "discuss.huggingface.co", "not a GitHub"),             # not https
    ("https://discuss.huggingface.co/t/x/1", "reddit.com", "does not name the page's host"),
    ("https://github.com/a/b/blob/e1ddaba85619225c4992fd251221cb74d05d2ba5/x.md", "c/d", "file's repository a/b"),
    ("https://github.com/a/b/blob/e1ddaba/x.md", "a/b", "not a GitHub"),                      # a short commit
    ("produced-here:round62_make/m01.py@e1ddaba", "produced-here", "at a full commit"),       # a short commit
    ("produced-here:round62_make/m01.py", "produced-here", "at a full commit"),               # no commit
    ("produced-here:round62_make/m01.py@e1ddaba85619225c4992fd251221cb74d05d2ba5", "a/b", "not 'produced-here'"),
])
def test_urls_that_cite_no_paste_are_refused(source, project, says):
    assert says in (corpus.source_problem(_rec(source, project)) or "")
    with pytest.raises(ValueError, match="x: "):
        corpus._check(_rec(source, project), "x")

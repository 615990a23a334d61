"""The posted-outcomes records (measurements/outcomes) and how benchmarks/verdict_accuracy.py scores them: the record
files' schema and split, and the scorer's mapping on hand-written cases taken from the collection rule's table
(measurements/outcomes/README.md, "Scoring": ran ↔ fits / tight; OOM at load and refusals ↔ does_not_fit; OOM while
running ↔ does_not_fit or tight, strictly does_not_fit only)."""

from __future__ import annotations

import copy
import re

import pytest

from runlocal.evidence import outcomes

RECORD = {
    "id": "llamacpp-999", "thread": 4, "thread_url": "https://github.com/o/r/issues/1",
    "source": "https://github.com/o/r/issues/1#issuecomment-2", "runtime": "llama.cpp", "runtime_version": "b3488",
    "model": "Qwen2-72B-Instruct-Q4_K_M.gguf", "model_arg": "qwen2-72b", "quant": "Q4_K_M",
    "device": "3 x RX 7900 XTX", "gpu_arg": "3xrx-7900-xtx", "vram_gib": None, "ram_gib": 64,
    "settings": {"ctx": 32000, "n_gpu_layers": 99}, "defaulted": ["parallel"], "outcome": "oom_running",
    "evidence": "the error occurs when the real context is larger than 10k", "query": 7,
    "posted": "2024-07-02", "posted_from": "issues", "runtime_version_inferred": None,
}


def test_record_files_hold_the_schema_and_the_split():
    tuning, held_out = outcomes.load("records.jsonl"), outcomes.load("held_out.jsonl")
    outcomes.check_split(tuning, held_out)
    assert len(tuning) + len(held_out) >= 60
    assert {r["runtime"] for r in tuning + held_out} == set(outcomes.RUNTIMES)
    # every third source thread is held out, so the held-out part holds a third of the threads (give or take one)
    threads = {r["thread"] for r in tuning + held_out}
    assert len({r["thread"] for r in held_out}) == len(threads) // 3


def test_batch_two_numbers_its_threads_on_from_batch_one():
    # README "Batch 2": batch 1's records carry no `batch` field; batch 2's threads are numbered on after batch 1's
    # last, so every batch-2 thread number is above every batch-1 one and the split rule holds across both
    recs = outcomes.load("records.jsonl") + outcomes.load("held_out.jsonl")
    first = [r for r in recs if outcomes.batch_of(r) == 1]
    second = [r for r in recs if outcomes.batch_of(r) == 2]
    assert all("batch" not in r for r in first) and len(second) >= 45
    assert max(r["thread"] for r in first) < min(r["thread"] for r in second)
    assert not {r["thread_url"] for r in first} & {r["thread_url"] for r in second}


def test_batch_three_numbers_on_from_batch_two_and_names_its_corpus():
    # README "Batch 3": threads numbered on after batch 2's last (92); each record names the corpus it came from
    # (pages, docs, then issues) and no thread of an earlier batch is taken again
    recs = outcomes.load("records.jsonl") + outcomes.load("held_out.jsonl")
    earlier = [r for r in recs if outcomes.batch_of(r) in (1, 2)]
    third = [r for r in recs if outcomes.batch_of(r) == 3]
    assert len(third) >= 45 and min(r["thread"] for r in third) == 93
    assert max(r["thread"] for r in earlier) < min(r["thread"] for r in third)
    assert {r["corpus"] for r in third} <= {"pages", "docs", "issues"}
    assert not {r["thread_url"] for r in earlier} & {r["thread_url"] for r in third}


def test_batch_four_numbers_on_from_batch_three_and_takes_no_earlier_thread():
    # README "Batch 4": threads numbered on after batch 3's last (131); sources none of batches 1-3 used (issues,
    # pages in other languages), each record naming its corpus; a quote not in English carries its English rendering
    recs = outcomes.load("records.jsonl") + outcomes.load("held_out.jsonl")
    earlier = [r for r in recs if outcomes.batch_of(r) in (1, 2, 3)]
    fourth = [r for r in recs if outcomes.batch_of(r) == 4]
    assert len(fourth) >= 45 and min(r["thread"] for r in fourth) == 132
    assert max(r["thread"] for r in earlier) < min(r["thread"] for r in fourth)
    assert {r["corpus"] for r in fourth} <= {"pages", "issues"}
    assert not {r["thread_url"] for r in earlier} & {r["thread_url"] for r in fourth}
    non_ascii = [r for r in fourth if any(ord(c) > 0x2FFF for c in r["evidence"])]
    assert non_ascii and all(r.get("evidence_en") for r in non_ascii)


def test_batch_five_numbers_on_from_batch_four_and_cites_committed_files_at_a_commit():
    # README "Batch 5": threads numbered on after batch 4's last (166); new sources (Hugging Face discussions on
    # docs, committed files on code, forums and non-English pages on pages), no earlier thread taken again; a
    # committed file is cited at a commit (github.com/<owner>/<repo>/blob/<40 hex>/<path>)
    recs = outcomes.load("records.jsonl") + outcomes.load("held_out.jsonl")
    earlier = [r for r in recs if outcomes.batch_of(r) in (1, 2, 3, 4)]
    fifth = [r for r in recs if outcomes.batch_of(r) == 5]
    assert len(fifth) >= 40 and min(r["thread"] for r in fifth) == 167
    assert max(r["thread"] for r in earlier) < min(r["thread"] for r in fifth)
    assert {r["corpus"] for r in fifth} == {"docs", "code", "pages"}
    assert not {r["thread_url"] for r in earlier} & {r["thread_url"] for r in fifth}
    committed = [r for r in fifth if r["corpus"] == "code"]
    assert committed and all(re.fullmatch(r"https://github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/.+", r["source"])
                             for r in committed)


def test_batch_six_numbers_on_from_batch_five_and_reads_pages_first():
    # README "Batch 6": threads numbered on after batch 5's last (191), so the first batch-6 thread (192) is held out;
    # pass A on the pages corpus, pass B on docs; no earlier thread taken again; a quote not in English is rendered
    recs = outcomes.load("records.jsonl") + outcomes.load("held_out.jsonl")
    earlier = [r for r in recs if outcomes.batch_of(r) in (1, 2, 3, 4, 5)]
    sixth = [r for r in recs if outcomes.batch_of(r) == 6]
    assert len(sixth) >= 40 and min(r["thread"] for r in sixth) == 192
    assert max(r["thread"] for r in earlier) < min(r["thread"] for r in sixth)
    assert {r["corpus"] for r in sixth} == {"pages", "docs"}
    assert not {r["thread_url"] for r in earlier} & {r["thread_url"] for r in sixth}
    assert 127 <= min(r["query"] for r in sixth) and max(r["query"] for r in sixth) <= 152
    non_ascii = [r for r in sixth if any(ord(c) > 0x2FFF for c in r["evidence"])]
    assert non_ascii and all(r.get("evidence_en") for r in non_ascii)


def test_batch_seven_reads_issue_threads_outside_the_runtimes_own_trackers():
    # README "Batch 7": issues corpus only, threads numbered on after batch 6's last (220), queries 153-198, no
    # repository batches 1-6 took a thread from and none of the six runtimes' trackers; collected: 27 records from
    # 20 threads (221-240), of which every third number, 222 ... 240 (7 threads, 9 records), is held out
    recs = outcomes.load("records.jsonl") + outcomes.load("held_out.jsonl")
    held = {r["id"] for r in outcomes.load("held_out.jsonl")}
    earlier = [r for r in recs if outcomes.batch_of(r) < 7]
    seventh = [r for r in recs if outcomes.batch_of(r) == 7]
    assert len(seventh) == 27 and {r["thread"] for r in seventh} == set(range(221, 241))
    assert sorted({r["thread"] for r in seventh if r["id"] in held}) == [222, 225, 228, 231, 234, 237, 240]
    assert sum(r["id"] in held for r in seventh) == 9
    assert {r["corpus"] for r in seventh} == {"issues"}
    assert 153 <= min(r["query"] for r in seventh) and max(r["query"] for r in seventh) <= 198

    def repo(url):
        return "/".join(url.split("/")[3:5]) if url.startswith("https://github.com/") else None
    runtimes_trackers = {"ollama/ollama", "vllm-project/vllm", "ggml-org/llama.cpp", "ggerganov/llama.cpp",
                         "sgl-project/sglang", "huggingface/transformers", "ml-explore/mlx-lm", "ml-explore/mlx-examples"}
    used = {repo(r["thread_url"]) for r in earlier} - {None}
    assert not {repo(r["thread_url"]) for r in seventh} & (used | runtimes_trackers)
    non_ascii = [r for r in seventh if any(ord(c) > 0x2FFF for c in r["evidence"])]
    assert non_ascii and all(r.get("evidence_en") for r in non_ascii)


@pytest.mark.parametrize("outcome, verdict, agrees, strict", [
    ("ran", "fits", True, True),
    ("ran", "tight", True, True),            # tight: it starts
    ("ran", "does_not_fit", False, False),
    ("oom_load", "does_not_fit", True, True),
    ("oom_load", "tight", False, False),
    ("oom_load", "fits", False, False),
    ("refused", "does_not_fit", True, True),
    ("refused", "tight", False, False),
    ("oom_running", "does_not_fit", True, True),
    ("oom_running", "tight", True, False),   # a spike can tip a tight plan over: agrees, but not strictly
    ("oom_running", "fits", False, False),
])
def test_scoring_follows_the_rules_table(outcome, verdict, agrees, strict):
    assert outcomes.agrees(outcome, verdict) is agrees
    assert outcomes.agrees(outcome, verdict, strict=True) is strict


def test_scoring_names_a_bad_outcome_or_verdict():
    with pytest.raises(outcomes.RecordError, match="^outcome: expected one of"):
        outcomes.agrees("crashed", "fits")
    with pytest.raises(outcomes.RecordError, match="^verdict: expected one of"):
        outcomes.agrees("ran", "unknown")


@pytest.mark.parametrize("change, message", [
    (lambda r: r.pop("outcome"), "llamacpp-999: outcome: missing"),
    (lambda r: r.update(outcome="crashed"), "llamacpp-999: outcome: expected one of"),
    (lambda r: r.update(runtime="koboldcpp"), "llamacpp-999: runtime: expected one of"),
    (lambda r: r.update(source="http://example.com/x"), "llamacpp-999: source: expected an https URL"),
    (lambda r: r.update(thread_url="https://github.com/o/r/issues/2"), "llamacpp-999: thread_url:"),
    (lambda r: r.update(gpu_arg=None), "llamacpp-999: gpu_arg / vram_gib: one is required"),
    (lambda r: r["settings"].update(num_ctx=4096), "llamacpp-999: settings: unknown key"),
    (lambda r: r["settings"].pop("ctx"), "llamacpp-999: settings.ctx: an oom_running record needs"),
    (lambda r: r.update(evidence="x" * 601), "llamacpp-999: evidence: expected 1 to 600 characters"),
    (lambda r: r["settings"].update(flash_attn=True), "llamacpp-999: settings.flash_attn: expected on, off or auto"),
    (lambda r: r.update(batch=8), "llamacpp-999: batch: expected one of 1, 2, 3, 4, 5, 6, 7"),
    (lambda r: r.pop("posted"), "llamacpp-999: posted: missing"),
    (lambda r: r.update(posted="27/11/2026", posted_from="page"), "llamacpp-999: posted: expected YYYY-MM-DD"),
    (lambda r: r.update(posted="2024-05-27", posted_from="none"), "llamacpp-999: posted_from: expected one of"),
    (lambda r: r.update(posted="unknown", posted_from="issues"), "llamacpp-999: posted_from: expected one of"),
    (lambda r: r.update(posted="2024-05-27", posted_from="issues", runtime_version_inferred="b2771"),
     "llamacpp-999: runtime_version_inferred: only where runtime_version is null"),
])
def test_a_bad_record_is_one_line_naming_the_field(change, message):
    rec = copy.deepcopy(RECORD)
    change(rec)
    with pytest.raises(outcomes.RecordError) as err:
        outcomes.validate(rec)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_record_becomes_the_request_the_post_describes():
    outcomes.validate(RECORD)
    assert outcomes.request_fields(RECORD) == {
        "model": "qwen2-72b", "runtime": "llama.cpp==b3488", "use_measurements": False, "gpu": "3xrx-7900-xtx",
        "ram": "64G", "quant": "Q4_K_M", "ctx": 32000, "n_gpu_layers": 99}
    assert outcomes.request_fields(RECORD, versioned=False)["runtime"] == "llama.cpp"
    # a GPU named by its memory alone: --vram; mlx-lm's releases are modelled since session 19 (runtimes/
    # mlx_versions.py), so its stated release rides along as every other runtime's does
    mlx = {**RECORD, "runtime": "mlx", "runtime_version": "0.30.6", "gpu_arg": None, "vram_gib": 24, "quant": None,
           "ram_gib": None}
    assert outcomes.request_fields(mlx) == {"model": "qwen2-72b", "runtime": "mlx==0.30.6", "use_measurements": False,
                                            "vram": "24G", "ctx": 32000, "n_gpu_layers": 99}
    assert outcomes.request_fields(mlx, versioned=False)["runtime"] == "mlx"


def test_several_gpus_named_by_memory_alone_are_planned_as_that_many():
    several = {**RECORD, "gpu_arg": None, "vram_gib": 24, "device_count": 7}
    assert outcomes.request_fields(several)["vram"] == "7x24G"      # --vram's NxSIZE (units.parse_sizes)


def test_the_split_check_finds_a_record_in_the_wrong_part():
    held = {**RECORD, "id": "x-1", "thread": 3, "thread_url": "https://github.com/o/r/issues/3",
            "source": "https://github.com/o/r/issues/3"}
    tuning = [{**RECORD, "thread": t, "id": f"x-{t}", "thread_url": f"https://github.com/o/r/issues/{t}",
               "source": f"https://github.com/o/r/issues/{t}"} for t in (1, 2)]
    outcomes.check_split(tuning, [held])
    with pytest.raises(outcomes.RecordError, match="does not belong in tuning"):
        outcomes.check_split(tuning + [held], [])


# README "Post dates and the era's release": the release current on a post's date, read by hand in
# measurements/outcomes/release_dates.json (vLLM's PyPI uploads: 0.6.3 on 2024-10-14, 0.6.4 on 2024-11-15, 0.8.2 on
# 2025-03-25, 0.8.3 on 2025-04-06; Ollama's tags: v0.1.28 on 2024-03-01, v0.1.29 on 2024-03-14; llama.cpp: b6451 by
# 2025-09-13, b6646 by 2025-10-09 — Ollama v0.12.4 carries it)
@pytest.mark.parametrize("runtime, date, release", [
    ("vllm", "2024-10-15", "0.6.3"),          # the day after 0.6.3's upload, a month before 0.6.4's
    ("vllm", "2024-10-14", "0.6.3"),          # a release uploaded on the post's day counts as out
    ("vllm", "2025-04-05", "0.8.2"),          # 0.8.3 came a day later
    ("ollama", "2024-03-12", "0.1.28"),
    ("llama.cpp", "2025-09-20", "b6451"),
    ("llama.cpp", "2025-10-09", "b6646"),
    ("vllm", "2023-01-01", None),             # before vLLM's first release: planned as before
])
def test_the_era_release_is_the_one_out_on_the_posts_date(runtime, date, release):
    table = outcomes.release_dates()
    assert outcomes.release_on(runtime, table[runtime], date) == release


def test_the_era_release_is_the_highest_out_not_the_newest_uploaded():
    # a patch of an older line uploaded after a newer release (hand-made rows): the newer release stays current
    rows = [["0.10.1", "2025-08-18"], ["0.10.2", "2025-09-13"], ["0.10.1.2", "2025-09-20"]]
    assert outcomes.release_on("vllm", rows, "2025-09-30") == "0.10.2"
    assert outcomes.release_on("llama.cpp", [["b999", "2023-08-01"], ["b1009", "2023-09-26"]], "2023-10-01") == "b1009"


def test_a_record_without_a_version_is_planned_at_its_eras_release_only_when_asked():
    dated = {**RECORD, "runtime_version": None, "posted": "2024-05-27", "posted_from": "issues",
             "runtime_version_inferred": "b2771"}
    outcomes.validate(dated)
    assert outcomes.request_fields(dated)["runtime"] == "llama.cpp"                    # as planned before
    assert outcomes.request_fields(dated, era=True)["runtime"] == "llama.cpp==b2771"
    # a version the post states is kept either way; an unknown date infers nothing
    assert outcomes.request_fields(RECORD, era=True)["runtime"] == "llama.cpp==b3488"
    assert outcomes.era_release({**dated, "posted": "unknown"}, outcomes.release_dates()) is None
    assert outcomes.era_release(RECORD, outcomes.release_dates()) is None


def test_every_record_carries_its_date_and_the_release_of_its_era():
    table = outcomes.release_dates()
    recs = outcomes.load("records.jsonl") + outcomes.load("held_out.jsonl")
    assert all(r["posted_from"] in outcomes.POSTED_FROM for r in recs)
    for rec in recs:
        assert rec["runtime_version_inferred"] == outcomes.era_release(rec, table), rec["id"]
    # hand-read: vLLM's Llama 4 post of 2025-04-05 (blog.vllm.ai's address) is a day before 0.8.3's upload
    by_id = {r["id"]: r for r in recs}
    assert (by_id["vllm-088"]["posted"], by_id["vllm-088"]["runtime_version_inferred"]) == ("2025-04-05", "0.8.2")
    # ollama/ollama#3078, opened 2024-03-12 (its issues-corpus header), between v0.1.28 (03-01) and v0.1.29 (03-14)
    assert (by_id["ollama-041"]["posted"], by_id["ollama-041"]["runtime_version_inferred"]) == ("2024-03-12", "0.1.28")

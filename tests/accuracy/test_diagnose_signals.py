"""Diagnosis by signals on real error texts from public threads, and fixes computed from a log's own figures.

The public corpus (measurements/public_errors) is scored by benchmarks/diagnose_accuracy.py; these tests pin its
shape (cited, a seeded held-out fifth of round 2, all of round 3 held out) and a few families the knowledge base
had no message for, and check the llama.cpp context fix against a real llama.cpp log
(tests/data/llamacpp_kv_fail_cpu.log: llama-cpp-python 0.3.36 asked for n_ctx 1048576 on a Llama-3-8B-shaped
zero-weight GGUF on a 23 GiB machine; stderr kept, minus the per-tensor "create_tensor:" lines) and against real
successful loads posted publicly (measurements/public_logs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runlocal.diagnose import diagnose_file, diagnose_text
from runlocal.diagnose.extract import extract_lines
from runlocal.diagnose.fixes import largest_context, with_computed_fixes
from runlocal.evidence import public_errors as corpus
from runlocal.evidence import public_logs

ROOT = Path(__file__).resolve().parents[2]
MiB, GiB = 1 << 20, 1 << 30


def _record(record_id: str) -> dict:
    return next(r for r in corpus.load_records() if r["id"] == record_id)


def test_public_corpus_is_cited_and_holds_a_fresh_fifth_out():
    records = corpus.load_records()
    assert len(records) >= 300 and len({r["project"] for r in records}) >= 15
    assert sum(not r["memory"] for r in records) >= 80          # look-alikes
    tune, hold = corpus.split(records)
    assert len(tune) + len(hold) == len(records)
    # round 2's seeded fifth (scored once, tuning since round 4) still re-draws the same from the recorded seed
    split_script = ROOT / "measurements/public_errors/split_round2.py"
    rc = subprocess.run([sys.executable, str(split_script), "--check"], capture_output=True, text=True)
    assert rc.returncode == 0, rc.stdout + rc.stderr
    round2 = [r for r in records if r["file"] in ("round2.jsonl", "round2_scored_held_out.jsonl")]
    assert len([r for r in round2 if r["file"] == "round2_scored_held_out.jsonl"]) == -(-len(round2) // 5)
    # round 8 (the first round sampled by neutral queries) was scored once (49.2 %) and is tuning data since
    # session 7's diagnose4; rounds 9 and 10 (same rule, scored once: 65.6 % and 82.4 %) are tuning data since
    # session 8's diagnose5 and diagnose6, round 11 (88.3 %) since diagnose7, round 12 (89.6 %) since diagnose8,
    # round 13 (95.2 %) since diagnose9, round 14 (memory-weighted, 76.2 %) since diagnose10, round 15 (round 14's
    # rule with new memory words, 61.0 %) since session 9's diagnose11, round 16 (73.9 %) since diagnose12, round 17
    # (50.0 %) since session 10's diagnose13, round 18 (73.8 %) since diagnose14, round 19 (56.4 %) since diagnose15,
    # round 20 (83.3 %) since diagnose16, round 21 (64.4 %) since diagnose17, round 22 (82.1 %) since diagnose18,
    # round 23 (91.7 %) since diagnose19, round 24 (77.4 %) since diagnose20, round 25 (58.3 %) since session 11's
    # diagnose21, round 26 (67.9 %) since diagnose22, round 27 (75.0 %) since diagnose23, round 28 (64.5 %) since
    # diagnose24, round 29 (85.7 %) since diagnose25, round 30 (77.1 %) since diagnose26, round 31 (80.0 %) since
    # diagnose27, round 32 (81.2 %) and round 33 (61.1 %) since diagnose28, round 34 (69.6 %) and round 35 (28.6 %) since
    # diagnose29, round 36 (40.9 %) since diagnose30, round 37 (54.5 %) and round 38 (62.5 %) since diagnose31, round
    # 39 (94.7 %) since diagnose32, round 40 (86.7 %) since diagnose41, round 41 (94.1 %) since diagnose42, round 42
    # (86.0 %) since diagnose43, round 43 (93.8 %) since diagnose44, round 44 (77.8 %) since diagnose45, round 45
    # (68.6 %) since diagnose46, round 46 (76.3 %) since diagnose47, round 47 (92.5 %) since diagnose48, round 48
    # (93.8 %) since diagnose49, round 49 (86.4 %) and round 50 (71.4 %) since diagnose50, round 51 (63.6 %) since
    # diagnose51, with round 42's one off-GitHub page; rounds 52 (with its off-GitHub pages) and 53 (60.0 % and 85.7 %,
    # scored together) since diagnose52; rounds 54 and 55 (5/5 and 10/10, scored together) since session 18; rounds
    # 56-59 (42/51 = 82.4 %, scored once, together) since session 19's diagnose19, their off-GitHub pages with them;
    # round 62 (36/42, scored once by the lead) since session 19's diagnose19b; round 61 (4/4, collect61's, committed
    # whole in 046c591; round 60, collect60's, holds no text: 3e1d55a) and round 63 (36/38, collect63's, produced
    # here, committed whole in d7194fb) since session 20's diagnose20; rounds 64 and 65 (35/39, collect64's 21 texts,
    # committed whole in ed766da; collect65's 18, committed whole in afb5096; scored once together by the lead) since
    # session 20's diagnose20b; rounds 66 (collect66, committed whole in 43f45cd) and 67 (collect67, 57ffd21), 2/4,
    # scored once together by the lead, since session 21's diagnose21; rounds 68 (collect68, committed whole in
    # 202efe3a) and 69 (collect69, 9cd6d9ac), 38/43, scored once together by the lead, since session 21's diagnose21b;
    # round 70 (collect70, committed whole in ba588440), 17/27, scored once by the lead, since session 21's
    # diagnose21c; round 71 (collect71, committed whole in 4e121f86), 11/13, scored once by the lead, since session
    # 22's diagnose22; round 72 (collect72, committed whole in 15c57f06: 1 text), 1/1, scored once by the lead, since
    # session 23; round 73 (produce23, committed whole in 3eda9bdf: 40 texts produced here), 35/40, scored once by the
    # lead, since session 23's diagnose23; round 74 (produce23b, committed whole in 87de2196: 39 texts produced here)
    # held out, scored once by the lead; no URL is in two rounds
    tuning_files = {r["file"] for r in tune}
    assert {"round6.jsonl", "round7.jsonl", "round8.jsonl", "round9.jsonl", "round10.jsonl", "round11.jsonl",
            "round12.jsonl", "round13.jsonl", "round14.jsonl", "round15.jsonl", "round16.jsonl", "round17.jsonl",
            "round18.jsonl", "round19.jsonl", "round20.jsonl", "round21.jsonl", "round22.jsonl",
            "round23.jsonl", "round24.jsonl", "round25.jsonl", "round26.jsonl", "round27.jsonl",
            "round28.jsonl", "round29.jsonl", "round30.jsonl", "round31.jsonl", "round32.jsonl",
            "round33.jsonl", "round34.jsonl", "round35.jsonl", "round36.jsonl",
            "round37.jsonl", "round38.jsonl", "round39.jsonl", "round40.jsonl",
            "round41.jsonl", "round42.jsonl", "round43.jsonl", "round44.jsonl",
            "round45.jsonl", "round46.jsonl", "round47.jsonl", "round48.jsonl",
            "round49.jsonl", "round50.jsonl", "round51.jsonl", "round42_pages.jsonl",
            "round52.jsonl", "round52_pages.jsonl", "round53.jsonl",
            "round54.jsonl", "round55.jsonl", "round55_pages.jsonl", "round56.jsonl", "round56_pages.jsonl",
            "round57.jsonl", "round58.jsonl", "round59_pages.jsonl", "round61_pages.jsonl", "round62.jsonl",
            "round63.jsonl", "round64.jsonl", "round65.jsonl", "round66.jsonl", "round67.jsonl",
            "round68.jsonl", "round69_pages.jsonl", "round70_pages.jsonl", "round71_pages.jsonl",
            "round72_pages.jsonl", "round73_pages.jsonl"} <= tuning_files
    assert {r["file"] for r in hold} == {"round74_pages.jsonl"}
    # as produce23b's report and round74_make/RULE.md state it (the records' memory field counted, no text read): 39
    # texts (l14 could not be produced), 20 memory failures and 19 look-alikes
    assert (len(hold), sum(r["memory"] for r in hold)) == (39, 20)
    # as produce23's report and round73_make/RULE.md state it (the records' memory field counted, no text read): 40
    # texts, 20 memory failures and 20 look-alikes
    round73 = [r for r in tune if r["file"] == "round73_pages.jsonl"]
    assert (len(round73), sum(r["memory"] for r in round73)) == (40, 20)
    # as collect71's report states it (the records' memory field counted, no text read): 13 texts, 2 memory failures
    round71 = [r for r in tune if r["file"] == "round71_pages.jsonl"]
    assert (len(round71), sum(r["memory"] for r in round71)) == (13, 2)
    # as collect70's report states it, less the in-round duplicate the lead dropped before scoring (a look-alike; the
    # records' memory field counted, no text read): 27 texts, 11 memory failures
    round70 = [r for r in tune if r["file"] == "round70_pages.jsonl"]
    assert (len(round70), sum(r["memory"] for r in round70)) == (27, 11)
    # as collect68's and collect69's reports state them (records' memory field counted, no text read): 7 texts, 5
    # memory failures; 36 texts, 7 memory failures
    for name, n, memory in (("round68.jsonl", 7, 5), ("round69_pages.jsonl", 36, 7)):
        part = [r for r in tune if r["file"] == name]
        assert (len(part), sum(r["memory"] for r in part)) == (n, memory)
    # as collect66's and collect67's reports state them (records' memory field counted, no text read): 2 texts, both
    # memory failures; 2 texts, 1 memory failure
    for name, n, memory in (("round66.jsonl", 2, 2), ("round67.jsonl", 2, 1)):
        part = [r for r in tune if r["file"] == name]
        assert (len(part), sum(r["memory"] for r in part)) == (n, memory)
    # as collect64's and collect65's reports state them (records' memory field counted, no text read): 21 texts, 5
    # memory failures; 18 texts, 8 memory failures
    for name, n, memory in (("round64.jsonl", 21, 5), ("round65.jsonl", 18, 8)):
        part = [r for r in tune if r["file"] == name]
        assert (len(part), sum(r["memory"] for r in part)) == (n, memory)
    # round 61: 4 texts, 2 memory failures and 2 look-alikes from 4 sites, none on GitHub, as collect61's commit
    # 046c591 states them (the records' file, memory, project and source fields counted, no text read)
    # round 63: 38 failures produced here, 17 memory and 21 look-alikes, each citing its script at a commit, as
    # collect63's commit d7194fb states them (collected whole after round 62 joined tuning)
    r63 = [r for r in tune if r["file"] == "round63.jsonl"]
    assert (len(r63), sum(r["memory"] for r in r63)) == (38, 17)
    assert all(r["source"].startswith("produced-here:measurements/public_errors/round63_make/") for r in r63)
    r61 = [r for r in tune if r["file"] == "round61_pages.jsonl"]
    assert (len(r61), sum(r["memory"] for r in r61), len({r["project"] for r in r61})) == (4, 2, 4)
    assert not any(r["source"].startswith("https://github.com/") for r in r61)
    # round 62: 42 failures produced here, 19 memory and 23 look-alikes, each citing its script at a commit, as
    # collect62's commit 8d8e5d5 states them
    r62 = [r for r in tune if r["file"] == "round62.jsonl"]
    assert (len(r62), sum(r["memory"] for r in r62)) == (42, 19)
    assert all(r["source"].startswith("produced-here:measurements/public_errors/round62_make/") for r in r62)
    # texts, memory failures and projects per round as each collector's "collected whole" commit states them
    # (438634f, 51ee393, b3f5ce5, 53628e0; the records' file, memory and project fields counted, no text read);
    # rounds 57 and 58 cite files in repositories at a commit, round 59 Hugging Face discussions only
    def counts(n: int) -> tuple[int, int, int]:
        r = [x for x in tune if x["file"].startswith(f"round{n}.") or x["file"].startswith(f"round{n}_")]
        return len(r), sum(x["memory"] for x in r), len({x["project"] for x in r})
    assert [counts(n)[:2] for n in (56, 57, 58, 59)] == [(17, 5), (12, 5), (14, 9), (8, 3)]
    assert all("/blob/" in r["source"] for r in tune if r["file"] in ("round57.jsonl", "round58.jsonl"))
    assert not any(r["source"].startswith("https://github.com/") for r in tune if r["file"] == "round59_pages.jsonl")
    assert not {r["source"] for r in hold} & {r["source"] for r in tune}


def _ids(name: str) -> set[str]:
    path = ROOT / "measurements/public_errors" / name
    return {json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


@pytest.mark.parametrize("record_id, expected", [
    ("jan-3782", "not_memory"),            # pinned allocation that fails with "no CUDA-capable device"
    ("llama.cpp-9629", "not_memory"),      # pinned allocation refused with "invalid argument"
    ("ik_llama.cpp-1533", "llamacpp_alloc_fail"),  # pinned allocation that really ran out of memory
    ("chatglm_webui-3", "oom_killer"),     # zsh's "[1] 14875 killed python main.py"
    ("kserve-2290", "oom_killer"),         # exitCode: 137 from Kubernetes
    ("continue-3464", "ollama_system_memory"),  # an older Ollama's "too large for this system"
    ("lmstudio-bug-tracker-1562", "ollama_system_memory"),  # LM Studio's guardrail, 0.4.4 wording
    ("powerinfer-229", "not_memory"),      # CUDA error 222, PTX toolchain
    ("winget-pkgs-333428", "not_memory"),  # an installer's exit code
    ("llama.cpp-14097", "not_memory"),     # "failed to find a memory slot": KV cells, not device memory
    ("koboldcpp-612", "llamacpp_alloc_fail"),  # ggml pool OOM during prompt processing
    ("ollama-1603", "not_memory"),         # "signal: illegal instruction": a CPU without AVX
    ("koboldcpp-111", "not_memory"),       # WinError -1073741795 = NTSTATUS 0xC000001D, the same on Windows
    # round 2 and 3 held-out misses, fixed by general signals once those rounds became tuning data
    ("sglang-105", "not_memory"),          # SGLang's own "KV cache pool leak detected!": a bookkeeping bug
    ("jan-4331", "not_memory"),            # "Model failed to start: Could not load engine …: … is not set yet!"
    ("mlx-llm-22", "metal_oom"),           # libc++abi (macOS) abort on a buffer above the device maximum
    ("deepspeed-2899", "cuda_oom_long_context"),  # the allocation failed inside softmax: activations
    ("mistral.rs-216", "cuda_oom_long_context"),  # mistral.rs's engine step ("prompt - Model failed"), not ggml
    ("tensorrt-llm-346", "cuda_oom_load"),  # TensorRT's "Error Code 2: OutOfMemory" while building the engine
    ("mlx-engine-207", "metal_oom"),       # "requires 50986 MB … maximum recommended size of 49152 MB", then a crash
    ("llama.cpp-1815", "metal_oom"),       # one Metal buffer above the device's maximum buffer size
    ("mlx-vlm-270", "not_memory"),         # a Metal command buffer failed with Invalid Resource, not Out Of Memory
    ("localgpt-438", "not_memory"),        # ggml's metadata arena, not RAM: "context's memory pool"
    ("text-generation-inference-1354", "not_memory"),  # ends in a ValueError about shards, nothing about memory
    # round 4 misses, fixed by general signals once round 4 became tuning data: what ran out, and where
    ("comfyui-8065", "oom_killer"),        # Windows commit limit: "paging file is too small (os error 1455)"
    ("deepspeed-7074", "oom_killer"),      # DefaultCPUAllocator (host RAM) beats the --disk-offload setting
    ("sglang-2102", "not_memory"),         # FlashInfer's fixed workspace (AlignedAllocator), not the card
    ("mlc-llm-860", "not_memory"),         # a compiled static region of 16777216 bytes, not the card
    ("tinygrad-3608", "not_memory"),       # HSA_STATUS_ERROR_OUT_OF_RESOURCES: queues/signals, not memory
    ("vllm-metal-585", "vllm_no_kv_blocks"),  # "not enough Metal memory for KV cache", kv_budget=-14.63GB
    ("omlx-1998", "metal_oom"),            # "would require ~70.27 GB … metal_cap ceiling is 69.86 GB"
    ("mistral.rs-44", "cuda_oom_long_context"),  # CUDA_ERROR_OUT_OF_MEMORY after "Serving on …": a request
    ("uncensored-local-studio-19", "not_memory"),  # exit code 3221225781 = NTSTATUS 0xC0000135 (DLL not found)
    ("vllm-6574", "not_memory"),           # ncclSystemError's "System call (e.g. socket, malloc) … failed"
    # round 5 misses and round 1-4 leftovers, fixed by general signals once round 5 became tuning data
    ("comfyui-gguf-230", "not_memory"),    # "Unexpected architecture type in GGUF file": an architecture, not a size
    ("llama.cpp-13248", "not_memory"),     # an uncaught vk::DeviceLostError: the driver dropped the GPU
    ("comfyui-15276", "oom_killer"),       # earlyoom, a user-space OOM killer, sent SIGTERM
    ("sglang-10408", "sglang_kv_overflow"),  # alloc_req_slots / req_to_token_pool: the scheduler's pool, not the card
    ("bitsandbytes-268", "cuda_oom_long_context"),  # text-generation-webui's "Output generated in …": a request
    ("comfyui-4934", "cuda_oom_long_context"),  # the ComfyUI error report names a node that is not a loader
    ("llama.cpp-4680", "llamacpp_alloc_fail"),  # "after b1697": a llama.cpp release tag names the runtime
    # round 6 misses, fixed by general signals once round 6 became tuning data (session 7)
    ("gpt4all-1268", "not_memory"),        # "crash … most likely due to out of memory": a guess, not a report
    ("mlx-566", "not_memory"),             # "Unable to allocate 8446744063349813240 bytes": more than any machine
    ("vllm-13882", "vllm_no_kv_blocks"),   # "reserved for KV Cache is -1.05GiB", "# cuda blocks: 0", no error line
    ("inferencex-2128", "sglang_kv_overflow"),  # "leave no GPU memory for the KV cache under --mem-fraction-static"
    ("gpt4all-1870", "llamacpp_alloc_fail"),  # "unhandled exception from ggml_vk_allocate": the allocator crashed
    ("gpt4all-1541", "llamacpp_alloc_fail"),  # "Error allocating vulkan memory": ggml's Vulkan buffer
    ("ktransformers-637", "oom_killer"),   # "Killed while loading weight" under the kernel's process table
    ("mlx-63", "metal_oom"),               # malloc failing "on 8GB RAM Mac": unified memory
    ("ramalama-988", "not_memory"),        # "tools param requires --jinja flag": a missing flag
    # round 7 misses, fixed by structural signals once round 7 became tuning data (session 7, diagnose3)
    ("h2ogpt-812", "not_memory"),          # a memory warning the program went on after (severity, position)
    ("llama-cpp-python-618", "not_memory"),  # a memory warning that names a process limit (RLIMIT_MLOCK)
    ("llama.cpp-15139", "not_memory"),     # a size no machine has explains the bad_alloc after it
    ("langchain-chatchat-703", "not_memory"),  # a size in words ("more than 1EB") and "size calculation overflowed"
    ("llama.cpp-3689", "not_memory"),      # a failed assertion about a buffer ggml sized itself
    ("vmlx-5", "not_memory"),              # Metal's "failed assertion": an API misuse
    ("surya-254", "metal_oom"),            # PyTorch's MPS allocator names the backend
    ("dolly-79", "cuda_oom_long_context"),  # the phase named by a call: generate_text(
    ("tensorrt-llm-352", "cuda_oom_load"),  # IBuilderConfig:: in the failing line: the engine is being built
    ("koboldcpp-1535", "not_memory"),      # "failed to find KV cache slot": KV cells in another wording
    ("sglang-5389", "not_memory"),         # a build that requires a missing header (cuda_fp8.h)
    ("gpt4all-1639", "not_memory"),        # "GPU loading failed (out of vram?)": a failure whose cause is only guessed
])
def test_families_the_knowledge_base_had_no_message_for(record_id, expected):
    assert diagnose_text(_record(record_id)["text"]).category == expected


def test_advice_in_a_log_line_is_not_read_as_the_failure():
    line = ("INFO 08-19 07:51:12 model_runner.py:1028] CUDA graphs can take additional 1~3 GiB memory per GPU. "
            "If you are running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.")
    assert diagnose_text(line).category == "unknown"


@pytest.mark.parametrize("line, expected", [
    # a size no machine has, in other units and wordings: a wrapped integer, whatever the library
    ("RuntimeError: [enforce fail at alloc_cpu.cpp:114] . DefaultCPUAllocator: can't allocate memory: "
     "you tried to allocate 18446744073709551608 bytes.", "not_memory"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 17179869184.00 GiB", "not_memory"),
    # the same wordings with sizes a machine can lack stay memory
    ("RuntimeError: [enforce fail at alloc_cpu.cpp:114] . DefaultCPUAllocator: can't allocate memory: "
     "you tried to allocate 34359738368 bytes.", "oom_killer"),
    # a crash whose only memory words are a guess: an error that names no lack of memory
    ("ERROR: model crashed, probably out of memory?", "not_memory"),
])
def test_what_a_line_states_decides_not_its_words(line, expected):
    assert diagnose_text(line).category == expected


def test_kv_failure_fix_uses_the_logs_own_numbers_and_file():
    log = ROOT / "tests/data/llamacpp_kv_fail_cpu.log"
    text = log.read_text(encoding="utf-8")
    doc = with_computed_fixes(diagnose_file(log))
    assert doc["category"] == "llamacpp_alloc_fail"
    # figures read off the log text: the failed buffer, the context asked for, the trained context, the file
    failed = int(re.search(r"failed to allocate buffer of size (\d+)", text).group(1))
    n_ctx = int(re.search(r"n_ctx\s+=\s+(\d+)", text).group(1))
    trained = int(re.search(r"n_ctx_train \((\d+)\)", text).group(1))
    gguf = re.search(r"from (\S+\.gguf)", text).group(1)
    first = doc["fixes"][0]
    assert first["command"] == f"llama-server -m {gguf} -c {trained}"
    assert f"{failed // n_ctx // 1024} KiB per token" in first["effect"]
    assert "MODEL.gguf" not in json.dumps(doc["fixes"])          # every command names the log's own file


def _public_loads_with_free_memory():
    mod = public_logs
    for rec in mod.load_llamacpp():
        excerpt = rec.get("excerpt") or ""
        if "MiB free" not in excerpt:
            continue
        ex = extract_lines(excerpt.splitlines())
        kv = ex.get("kv_by_device") or {}
        device = ex.get("device")
        if len(ex.get("free_by_device") or {}) == 1 and (device in kv or (not kv and ex.get("kv_buffer_bytes"))):
            yield rec, ex


def test_largest_context_never_cuts_below_a_context_that_really_loaded():
    """On real loads that logged their free memory, the computed limit is at least the context that loaded
    whenever the run's own compute buffer fitted in the 1 GiB margin, and never more than the free memory
    minus the weights could hold at the logged KV cost per token."""
    checked = 0
    for rec, ex in _public_loads_with_free_memory():
        fit = largest_context(ex)
        assert fit is not None, rec["source_url"]
        logged = rec["logged"]
        compute = logged.get("compute_buffers", {}).get(fit["device"], 0) * MiB
        kv_dev = logged["kv_buffers"].get(fit["device"], logged.get("kv_self_size_mib", 0)) * MiB
        per_token = kv_dev / rec["settings"]["n_ctx"]
        weights = logged["model_buffers"].get(fit["device"], 0) * MiB
        free = fit["free"]
        assert fit["ctx"] <= (free - weights) / per_token
        if compute <= GiB:
            assert fit["ctx"] >= rec["settings"]["n_ctx"], rec["source_url"]
        checked += 1
    assert checked >= 3


def _pasted(text: str) -> str:
    """`runlocal diagnose` with the log pasted on standard input, as a fresh process: what the user reads."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", "diagnose"], input=text, capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _gib(text: str, pattern: str) -> float:
    found = re.search(pattern, text)
    assert found is not None, pattern
    return float(found.group(1))


def test_pasted_llamacpp_kv_failure_reads_the_trained_context_and_the_logs_file():
    text = (ROOT / "tests/data/llamacpp_kv_fail_cpu.log").read_text(encoding="utf-8")
    out = _pasted(text)
    trained = int(re.search(r"n_ctx_train \((\d+)\)", text).group(1))
    gguf = re.search(r"from (\S+\.gguf)", text).group(1)
    assert f"llama-server -m {gguf} -c {trained}" in out


def test_pasted_vllm_pool_refusal_reads_a_max_model_len_inside_the_logged_pool():
    text = _record("product-catalog-generator-10")["text"]   # vLLM 0.2.7: max seq len 4096 > 3664 KV tokens
    pool = int(re.search(r"stored in KV cache \((\d+)\)", text).group(1))
    served = [int(n) for n in re.findall(r"--max-model-len (\d+)", _pasted(text))]
    assert served and pool - 256 < served[0] <= pool


def test_pasted_sglang_negative_pool_reads_a_fraction_that_leaves_the_pool_room():
    """sgl-project/sglang#7691: the profiled token count is negative after the weights load; the fraction the user
    reads must give the KV pool room by SGLang's own budget (free after weights − free before × (1 − fraction))."""
    text = _record("sglang-7691")["text"]
    after, used = _gib(text, r"avail mem=([\d.]+) GB, mem"), _gib(text, r"mem usage=([\d.]+) GB")
    out = _pasted(text)
    frac = float(re.search(r"--mem-fraction-static ([\d.]+)", out).group(1))
    assert 1 - after / (after + used) < frac <= 0.95
    assert after - (after + used) * (1 - frac) > 1            # GiB left for the KV pool at that fraction
    assert re.search(r"the KV pool gets [\d.]+ GiB", out)


def test_pasted_ollama_refusal_reads_the_logs_own_shortfall():
    """ollama/ollama#8734's closing lines (Ollama 0.5.7): the fix is sized by the log's own two figures."""
    text = ('time=2025-01-31T20:48:19.586Z level=INFO source=server.go:104 msg="system memory" total="1690.2 GiB" '
            'free="358.4 GiB" free_swap="7.8 GiB"\n'
            "Error: model requires more system memory (391.0 GiB) than is available (366.2 GiB)\n")
    need = _gib(text, r"requires more system memory \(([\d.]+) GiB\)")
    have = _gib(text, r"than is available \(([\d.]+) GiB\)")
    assert f"Free at least {need - have:.1f} GiB of RAM" in _pasted(text)


def test_pasted_vllm_engine_death_reads_a_share_that_leaves_the_failed_activation_room():
    """vllm-project/vllm#13067: the engine died when a 1.27 GiB activation found 109.81 MiB free on a 79.33 GiB
    GPU; the share the user reads keeps at least that shortfall outside vLLM's budget (0.90 when the log sets none)."""
    text = _record("vllm-13067")["text"]
    req, total = _gib(text, r"Tried to allocate ([\d.]+) GiB"), _gib(text, r"total capacity of ([\d.]+) GiB")
    free = _gib(text, r"of which ([\d.]+) MiB is free") / 1024
    util = float(re.search(r"--gpu-memory-utilization ([\d.]+)", _pasted(text)).group(1))
    assert (0.90 - util) * total >= req - free and util >= 0.5


def test_pasted_ollama_refusal_whose_figures_print_alike_still_names_what_to_free():
    text = _record("continue-9649")["text"]     # "model requires more system memory (5.3 GiB) than is available (5.3 GiB)"
    assert "Free at least" in _pasted(text)


def test_pasted_ollama_placement_says_whether_a_shorter_num_ctx_can_put_every_layer_on_the_gpus():
    """ollama/ollama#9181, "How to offload all layers to GPU?": the maintainer's answer reads Ollama's own offload
    line (pasted wrapped, as in the thread). The user reads whether num_ctx alone can do it, with the figures read off
    the line: the estimate for all layers minus the KV cache is still above what the GPUs have."""
    text = (
        'time=2025-02-18T02:29:51.627Z level=INFO source=server.go:130 msg=offload library=cuda layers.requested=-1 '
        'layers.model=81 \n  layers.offload=44 layers.split=11,11,11,11 memory.available="[22.0 GiB 22.0 GiB 22.0 GiB '
        '22.0 GiB]" memory.gpu_overhead="0 B" \n  memory.required.full="127.4 GiB" memory.required.partial="87.1 GiB" '
        'memory.required.kv="19.5 GiB" \n  memory.required.allocations="[21.8 GiB 21.8 GiB 21.8 GiB 21.8 GiB]" '
        'memory.weights.total="87.3 GiB" \n  memory.weights.repeating="86.2 GiB" memory.weights.nonrepeating="1.0 GiB" '
        'memory.graph.full="8.2 GiB" \n  memory.graph.partial="8.2 GiB"\n')
    full, kv = _gib(text, r'required\.full="([\d.]+) GiB'), _gib(text, r'required\.kv="([\d.]+) GiB')
    avail = sum(float(x) for x in re.findall(r"([\d.]+) GiB", re.search(r'available="\[([^\]]*)', text).group(1)))
    layers = re.search(r"layers\.model=(\d+)", text).group(1)
    out = _pasted(text)
    assert f"cannot put all {layers} layers" in out
    assert f"still {full - kv - avail:.1f} GiB too much" in out


def test_pasted_ollama_placement_that_fits_asks_for_no_shorter_context():
    """ollama/ollama#6552: Ollama's estimate (14.1 GiB) fits the 15.0 GiB available, so the failure there is not
    one a shorter num_ctx explains."""
    text = ('Aug 29 20:47:28 iMacPro ollama[52949]: time=2024-08-29T20:47:28.070+05:30 level=INFO source=memory.go:309 '
            'msg="offload to rocm" layers.requested=-1 layers.model=57 layers.offload=57 layers.split="" '
            'memory.available="[15.0 GiB]" memory.required.full="14.1 GiB" memory.required.partial="14.1 GiB" '
            'memory.required.kv="1.8 GiB" memory.required.allocations="[14.1 GiB]" memory.weights.total="12.4 GiB"\n')
    assert "num_ctx" not in _pasted(text)


def test_pasted_ollama_placement_one_layer_short_reads_how_far_num_ctx_must_shrink():
    """ollama/ollama#12000 (measurements/public_logs/ollama.jsonl): 48 of 49 layers placed, the estimate for all of
    them a little above what the GPU has, and a KV cache larger than the gap. The user reads the share of the current
    num_ctx that puts every layer on the GPU, (KV − (full − available)) / KV, each figure read off the line."""
    rec = next(r for r in public_logs.load_ollama() if r["source_url"].endswith("/pull/12000"))
    text = rec["excerpt"]
    full, avail = _gib(text, r'required\.full="([\d.]+) GiB'), _gib(text, r'available="\[([\d.]+) GiB')
    kv = _gib(text, r'required\.kv="([\d.]+) MiB') / 1024
    assert 0 < full - avail < kv
    out = _pasted(text)
    assert f"Cut num_ctx to at most {(kv - (full - avail)) / kv:.0%} of its current value" in out
    assert "all 49 layers" in out

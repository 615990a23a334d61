"""measurements/public_errors/check_round.py's duplicate test counts a page as one source whatever its '#' anchor, as
the collection rules say: rounds 59-61 take "one text per page", "a query string or comment anchor dropped for the test"
(round59_queries.md, round61_queries.md test (a)); only round 56's rule let one page give two texts, one
per section, "cited by that section's anchor" (round56_queries.md), and it too tested the page "without its
anchor" against the corpus. The script is run as a program (as its docstring says), never imported into this process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "measurements" / "public_errors" / "check_round.py"
PAGE = "https://huggingface.co/docs/transformers/main/en/troubleshooting"   # round 56 took two of its sections


def _run(*args: str) -> subprocess.CompletedProcess:
    # the script's folder on the child's PYTHONPATH: `import check_round` there, as a program's own folder is
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(SCRIPT.parent)])}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


def test_a_page_under_another_anchor_is_found_in_the_corpus():
    """Round 56 holds two texts of PAGE, at #cuda-out-of-memory and #firewalled-environments (its pages file): the
    page bare, or under a third anchor, is the same source — before, both answered "not in the corpus"."""
    held = [json.loads(x) for x in (ROOT / "measurements/public_errors/round56_pages.jsonl").read_text()
            .splitlines() if x.strip()]
    assert sorted(r["source"].split("#")[1] for r in held if r["source"].startswith(PAGE + "#")) == [
        "cuda-out-of-memory", "firewalled-environments"]
    r = _run(str(SCRIPT), "61", PAGE, PAGE + "#big-models", PAGE + "/")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith(PAGE.lower() + " -> round56_pages.jsonl:") for line in lines)


def test_round_56_keeps_its_two_sections_of_one_page():
    """Round 56's own rule took up to two sections of a page as two texts: its whole-round check still passes."""
    r = _run(str(SCRIPT), "56")
    assert r.returncode == 0 and r.stdout.strip().endswith(" 0 problems"), r.stdout


def test_a_round_of_pages_only_is_found_where_it_is():
    """Round 59 has a pages file only (round59_pages.jsonl, 8 texts): it is checked where it is, not read as an empty
    round in next/ (before: "0 records checked")."""
    n = sum(1 for x in (ROOT / "measurements/public_errors/round59_pages.jsonl").read_text().splitlines()
            if x.strip())
    r = _run(str(SCRIPT), "59")
    assert r.returncode == 0 and r.stdout.startswith(f"{n} records checked"), r.stdout


def test_two_anchors_of_one_page_in_a_one_text_per_page_round_are_one_source(tmp_path):
    """Two records citing two anchors of one new page: a problem in a round whose rule is one text per page, not in
    a round whose rule takes a text per section (SECTION_ROUNDS)."""
    base = {"project": "docs.vllm.ai", "runtime": "vllm", "version": None, "label": "not_memory", "family": "x",
            "memory": False, "phase": None, "query": 1, "cause": "asker", "lang": "en", "note": ""}
    page = "https://docs.vllm.ai/en/latest/usage/troubleshooting.html"
    rows = [{**base, "id": f"t-{i}", "source": f"{page}#{a}", "text": f"a line long enough to be a paste, number {i} "
             f"of two, {a}"} for i, a in enumerate(("one-section", "another-section"))]
    path = tmp_path / "round99_pages.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    code = ("import check_round as m; from pathlib import Path; "
            f"p = Path({str(path)!r}); "
            "print(m.check_file(p, {}, [], {}, set(), False), m.check_file(p, {}, [], {}, set(), True))")
    r = _run("-c", code)
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip().splitlines()
    assert out[-1] == "1 0"          # one text per page: the second anchor is a duplicate; per section: none
    assert out[0].startswith("round99_pages.jsonl:2 t-1: thread " + page.lower() + " already at round99_pages.jsonl:1")


def test_a_produced_text_sharing_a_library_line_is_not_the_same_paste(tmp_path):
    """Two texts produced on this machine both end in transformers' own error line (hand-written here): the
    produced-here record's paste test looks for its whole text, so a shared library line is no duplicate, while the
    whole text found again is one; a thread's record still tests its longest line."""
    shared = "ValueError: At least one of the model submodule will be offloaded to disk, please pass along an offload"
    base = {"project": "produced-here", "runtime": "transformers", "version": "v", "label": "offload_error",
            "family": "transformers", "memory": True, "phase": "load", "cause": "c", "note": ""}
    rec = {**base, "id": "p-1", "source": "produced-here:measurements/x/a.py@" + "0" * 40,
           "text": "Traceback (most recent call last):\n  File \"load.py\", line 7, in <module>\n" + shared}
    path = tmp_path / "round99.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    # the corpus texts as check_round holds them: whitespace collapsed, lower case
    corpus_texts = [f"someone else's run\n{shared}".lower(), " ".join(rec["text"].split()).lower()]
    code = ("import check_round as m, json; from pathlib import Path; "
            f"p = Path({str(path)!r}); t = json.loads({json.dumps(json.dumps(corpus_texts))}); "
            "print(m.check_file(p, {}, t[:1], {}, set()), m.check_file(p, {}, t, {}, set()), "
            "len(m.paste_line('x\\n' + t[0], False)) == len(t[0].splitlines()[1]))")
    r = _run("-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "0 1 True"


def test_in_round_clash_is_found_and_a_clean_round_passes(tmp_path):
    # two texts ending on the same 40+-character line clash (either way round); a third with its own line does not
    same = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    rows = [{"id": "a", "text": f"loading\n{same}"}, {"id": "b", "text": f"step 3\n{same}"},
            {"id": "c", "text": "ValueError: no kernel image is available for execution on the device"}]
    clashing, clean = tmp_path / "r1.jsonl", tmp_path / "r2.jsonl"
    clashing.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    clean.write_text(json.dumps(rows[2]), encoding="utf-8")
    code = "import sys, check_round; sys.exit(check_round.in_round_main(__import__('pathlib').Path(sys.argv[1])))"
    bad, good = _run("-c", code, str(clashing)), _run("-c", code, str(clean))
    assert bad.returncode == 1 and "a: longest line also in b" in bad.stdout and "b: longest line also in a" in bad.stdout
    assert good.returncode == 0 and "1 records, no two share a longest line" in good.stdout


def test_a_produced_round_fails_only_on_a_text_whole_inside_another(tmp_path):
    # rounds 73-74's form: a library line shared by two produced texts is printed, not failed on; a text found whole
    # inside another is the same paste and fails
    frame = '  File "/usr/lib/python3/site-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl'
    rows = [{"id": "m1", "text": f"Traceback\n{frame}\nRuntimeError: DefaultCPUAllocator: can't allocate memory"},
            {"id": "l1", "text": f"Traceback\n{frame}\nValueError: expected 2D input"}]
    shared, nested = tmp_path / "r1.jsonl", tmp_path / "r2.jsonl"
    shared.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    nested.write_text("\n".join(json.dumps(r) for r in rows + [{"id": "l2", "text": rows[1]["text"] + "\nexit 1"}]),
                      encoding="utf-8")
    code = "import sys, check_round; sys.exit(check_round.produced_round_main(__import__('pathlib').Path(sys.argv[1])))"
    ok, bad = _run("-c", code, str(shared)), _run("-c", code, str(nested))
    assert ok.returncode == 0 and "form 1 (longest line, library lines shared; printed only): 2" in ok.stdout
    assert "2 records, no text inside another" in ok.stdout
    assert bad.returncode == 1 and "l1: whole text inside l2" in bad.stdout

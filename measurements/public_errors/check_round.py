"""Check a collected round — next/roundN.jsonl, or held_out/roundN.jsonl once it has moved (and roundN_pages.jsonl beside
it, its off-GitHub texts) — against the corpus.

The corpus loader (runlocal.evidence.public_errors) does not read next/, so this applies its own record check
(``_check``: the fields, the source URL — a GitHub thread, or a page's https URL whose host the project names, or
(round 57) a GitHub file URL at a commit, checked here, or (round 62) a producing script's repo path at a commit,
which the loader checks — a non-empty text, ``memory`` agreeing with ``label``) to both files, the label against runlocal.diagnose.kb.CATEGORIES, and the duplicate tests of its queries file against every other
*.jsonl under measurements/public_errors (held_out/ and next/ included): the same thread (owner/name and number, or
the page URL) and the same paste (the text's longest line, 40 characters or more, found in a corpus text). A page is
one source whatever its '#' anchor, except within a round whose rule takes a text per section (SECTION_ROUNDS).
With a URL or owner/name#number argument it only says whether that thread is already in the corpus.
Run from the worktree: ``PYTHONPATH=$PWD/src python3 measurements/public_errors/check_round.py N [thread …]``
(rounds 42 and 43 were checked with it, then as next/check_round42.py / check_round43.py; rounds 43-59 are now in
the tuning folder, where it finds them, as it finds a round in held_out/ once moved there).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from runlocal.diagnose.kb import CATEGORIES
from runlocal.evidence.public_errors import _check

CORPUS = Path(__file__).resolve().parent
HERE = CORPUS / "next"
ROUND = PAGES = HERE / "round.jsonl"     # set by main() from the round's number


def _round_files(n: str) -> tuple[Path, Path]:
    """The round's file where it is (next/ until it is moved, held_out/ then, the tuning folder once scored) and its
    off-GitHub page file beside it (they move together)."""
    places = [HERE, CORPUS / "held_out", CORPUS]
    # a round may hold off-GitHub pages only (rounds 59, 61: roundN_pages.jsonl, no roundN.jsonl)
    where = next((p for p in places if (p / f"round{n}.jsonl").exists() or (p / f"round{n}_pages.jsonl").exists()),
                 HERE)
    return where / f"round{n}.jsonl", where / f"round{n}_pages.jsonl"
THREAD = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull|discussions)/(\d+)", re.I)
# Round 57 cites a file committed to a repository (a notebook's stored output, a log, a README) at its commit; the
# loader's source_problem admits threads and pages only, so check_round takes this form itself and keys the file by
# repository and path (the commit dropped: the same file at two commits is one text).
FILE = re.compile(r"https://github\.com/([\w.-]+/[\w.-]+)/blob/[0-9a-f]{40}/(\S+)$", re.I)
# renamed repositories: one project for the duplicate test (the corpus spells them as the values)
ALIASES = {"oobabooga/text-generation-webui": "oobabooga/textgen", "ggerganov/llama.cpp": "ggml-org/llama.cpp",
           "jmorganca/ollama": "ollama/ollama", "turboderp/exllamav2": "turboderp-org/exllamav2",
           "turboderp/exllamav3": "turboderp-org/exllamav3", "go-skynet/localai": "mudler/localai"}


# Rounds whose rule lets one page give several texts, one per section, each cited by the section's anchor (round 56:
# "One page may give at most 2 texts, each from a distinct section …, cited by that section's anchor",
# round56_queries.md): within such a round two anchors of a page are two sources. Every other rule takes one
# text per page ("a query string or comment anchor dropped for the test", rounds 59-61), and against the corpus every
# round's test is the page without its anchor (round 56: "and the URL without its anchor").
SECTION_ROUNDS = frozenset({"56"})


def thread_key(url: str, sections: bool = False) -> str:
    """The source a record is counted as: a GitHub thread by owner/name and number, a committed file by repository and
    path, a page by its URL without its '#' anchor (with it where ``sections``: a round in SECTION_ROUNDS)."""
    if url.startswith("produced-here:"):        # round 62: a script's repo path at a commit; keyed by the path
        return url.rsplit("@", 1)[0].lower()
    f = FILE.match(url.strip())
    if f:
        repo = f.group(1).lower()
        return f"{ALIASES.get(repo, repo)}:{f.group(2).lower()}"
    m = THREAD.search(url)
    if not m:
        page = url.strip().lower()
        return (page if sections else page.split("#", 1)[0]).rstrip("/")
    repo = m.group(1).lower()
    return f"{ALIASES.get(repo, repo)}#{m.group(2)}"


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def corpus(skip: set[Path]) -> tuple[dict[str, str], list[str]]:
    keys, texts = {}, []
    for path in sorted(CORPUS.rglob("*.jsonl")):
        if path in skip:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                keys[thread_key(rec["source"])] = f"{path.relative_to(CORPUS)}:{rec['id']}"
                texts.append(norm(rec["text"]))
    return keys, texts


def longest_line(text: str) -> str:
    return max((norm(x) for x in text.splitlines()), key=len, default="")


def in_round_clashes(records: list[dict]) -> list[str]:
    """A round compared with itself (a rule's in-round test e): each text whose longest line (40 characters or more)
    is another text's longest line or stands inside another text of the round."""
    out = []
    for a in records:
        top = longest_line(a["text"])
        if len(top) < 40:
            continue
        for b in records:
            if b is not a and (top == longest_line(b["text"]) or top in norm(b["text"])):
                out.append(f"{a['id']}: longest line also in {b['id']}: {top[:80]!r}")
    return out


def in_round_main(path: Path) -> int:
    """Print each in-round clash of the round file ``path`` and return non-zero on any (the roundN_in_round.py scripts)."""
    records = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    found = in_round_clashes(records)
    print("\n".join(found) or f"{len(records)} records, no two share a longest line, none inside another text")
    return 1 if found else 0


def whole_text_clashes(records: list[dict]) -> list[str]:
    """Each text found whole (whitespace and case folded) inside another text of the round (the produced-text form)."""
    return [f"{a['id']}: whole text inside {b['id']}" for a in records for b in records
            if b is not a and norm(a["text"]) in norm(b["text"])]


def produced_round_main(path: Path) -> int:
    """A round of texts produced here compared with itself (rounds 73 and 74): the longest-line form printed only (the
    same installed libraries' frame and log lines recur in texts of different failures), the whole-text form
    (paste_line's produced form) failed on. Returns non-zero on a whole-text clash."""
    records = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    shared = in_round_clashes(records)
    print(f"form 1 (longest line, library lines shared; printed only): {len(shared)}")
    print("\n".join(shared))
    whole = whole_text_clashes(records)
    print(f"form 2 (a produced text whole inside another): {len(whole)}")
    print("\n".join(whole) or f"{len(records)} records, no text inside another")
    return 1 if whole else 0


def paste_line(text: str, produced: bool) -> str:
    """What a record's duplicate-paste test looks for in the corpus texts: its longest line, or for a text produced on
    this machine (round 62 on) the whole text. Such texts pass through the same installed libraries, so a library's
    frame, its source line or its error message recurs in texts that are not the same paste (round 63's first check
    flagged 7 such lines, 4 still when frame lines were skipped); a produced text repeats another only whole."""
    return norm(text) if produced else longest_line(text)


def check_file(path: Path, keys: dict[str, str], texts: list[str], seen: dict[str, str], ids: set[str],
               sections: bool = False) -> int:
    """The records of ``path`` against the corpus (``keys``: page keys without anchors) and the round so far (``seen``,
    keyed with the anchor where ``sections``)."""
    bad = 0
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        rec = json.loads(line)
        where = f"{path.name}:{n} {rec.get('id')}"
        try:
            # a file URL at a commit (FILE) is checked here; the rest of the loader's record check still applies
            _check({**rec, "source": "https://github.com/file/cited/issues/0"} if FILE.match(rec.get("source", ""))
                   else rec, where)
            if rec["label"] not in CATEGORIES:
                raise ValueError(f"{where}: label {rec['label']!r} is not one of kb.CATEGORIES")
            if rec["id"] in ids:
                raise ValueError(f"{where}: duplicate id")
            ids.add(rec["id"])
            key, own = thread_key(rec["source"]), thread_key(rec["source"], sections)
            if key in keys or own in seen:
                raise ValueError(f"{where}: thread {key} already at {keys.get(key) or seen[own]}")
            seen[own] = where
            top = paste_line(rec["text"], rec["source"].startswith("produced-here:"))
            if len(top) >= 40 and any(top in t for t in texts):
                raise ValueError(f"{where}: longest line already in a corpus text: {top[:80]!r}")
        except ValueError as err:
            print(err)
            bad += 1
    return bad


def main(argv: list[str]) -> int:
    global ROUND, PAGES
    if not argv or not argv[0].isdigit():
        print("usage: check_round.py N [thread …]", file=sys.stderr)
        return 2
    ROUND, PAGES = _round_files(argv[0])
    argv = argv[1:]
    keys, texts = corpus({ROUND, PAGES})
    if argv:
        for arg in argv:
            # a URL as given (a page's section anchor '#…' dropped: the page is the source); owner/name#N as a thread
            key = thread_key(arg if arg.startswith("https://") or ("/" in arg and "#" not in arg)
                             else "https://github.com/" + arg.replace("#", "/issues/"))
            print(key, "->", keys.get(key, "not in the corpus"))
        return 0
    ids = set()
    for path in sorted(CORPUS.rglob("*.jsonl")):
        if path not in (ROUND, PAGES):
            ids |= {json.loads(x)["id"] for x in path.read_text(encoding="utf-8").splitlines() if x.strip()}
    seen: dict[str, str] = {}
    sections = ROUND.stem.removeprefix("round") in SECTION_ROUNDS
    bad = sum(check_file(p, keys, texts, seen, ids, sections) for p in (ROUND, PAGES) if p.exists())
    count = sum(1 for p in (ROUND, PAGES) if p.exists() for x in p.read_text().splitlines() if x.strip())
    print(f"{count} records checked against {len(keys)} corpus threads, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

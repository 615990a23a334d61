"""Round 65's duplicate test against round 64 (branch collect64, collected at the same time): sources compared by
thread key, and this round's texts' longest lines looked for in round 64's texts, by script; round 64's texts are
never printed. With thread arguments (owner/name#N or a URL) it says only whether round 64 holds that thread.
Run from the worktree: PYTHONPATH=$PWD/src python3 measurements/public_errors/round65_vs64.py [thread …]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_round import longest_line, norm, thread_key  # noqa: E402

HERE = Path(__file__).resolve().parent
BRANCH_FILES = ("measurements/public_errors/next/round64.jsonl", "measurements/public_errors/next/round64_pages.jsonl")


def round64() -> list[dict]:
    recs = []
    for path in BRANCH_FILES:
        out = subprocess.run(["git", "-C", "/work/main", "show", f"collect64:{path}"], capture_output=True, text=True)
        if out.returncode == 0:
            recs += [json.loads(x) for x in out.stdout.splitlines() if x.strip()]
    return recs


def main(argv: list[str]) -> int:
    theirs = round64()
    keys = {thread_key(r["source"]) for r in theirs}
    texts = [norm(r["text"]) for r in theirs]
    print(f"round 64 on collect64: {len(theirs)} records")
    if argv:
        for arg in argv:
            key = thread_key(arg if arg.startswith("https://") else "https://github.com/" + arg.replace("#", "/issues/"))
            print(key, "->", "IN ROUND 64" if key in keys else "not in round 64")
        return 0
    bad = 0
    for name in ("round65.jsonl", "round65_pages.jsonl"):
        path = HERE / name
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            top = longest_line(rec["text"])
            if thread_key(rec["source"]) in keys:
                print(f"{rec['id']}: thread also in round 64")
                bad += 1
            elif len(top) >= 40 and any(top in t for t in texts):
                print(f"{rec['id']}: longest line also in a round-64 text")
                bad += 1
    print(f"{bad} problems against round 64")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

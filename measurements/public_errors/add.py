"""Append records to a corpus file from a simple block format (used while collecting; the JSONL files are the data).

Block format on stdin:  "@ URL | runtime | version | label | family"  then the error text lines, until the next "@".
The record id is <repo>-<number>[-n]; project is owner/name from the URL; memory = label != not_memory.
"""
import json
import re
import sys
from pathlib import Path

from runlocal.diagnose.kb import CATEGORIES

HERE = Path(__file__).parent

URL = re.compile(r"https://github\.com/([\w.-]+)/([\w.-]+)/(issues|pull|discussions)/(\d+)$")


def existing_ids():
    ids = set()
    for p in HERE.glob("**/*.jsonl"):
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                ids.add(json.loads(line)["id"])
    return ids


def main(out_name):
    ids = existing_ids()
    blocks = re.split(r"^@ ", sys.stdin.read(), flags=re.MULTILINE)
    out = []
    for b in blocks:
        if not b.strip():
            continue
        head, _, text = b.partition("\n")
        url, runtime, version, label, family = [x.strip() for x in head.split("|")]
        m = URL.match(url)
        assert m, url
        assert label in CATEGORIES or label == "unknown", label
        base = f"{m.group(2).lower()}-{m.group(4)}"
        rid, n = base, 1
        while rid in ids:
            n += 1
            rid = f"{base}-{n}"
        ids.add(rid)
        text = text.strip("\n")
        assert text.strip(), url
        out.append({"id": rid, "source": url, "project": f"{m.group(1)}/{m.group(2)}", "runtime": runtime,
                    "version": version or None, "text": text, "label": label, "family": family,
                    "memory": label != "not_memory"})
    with open(HERE / out_name, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in out)
    print(f"{len(out)} added to {out_name}; total {len(ids)}")


if __name__ == "__main__":
    main(sys.argv[1])

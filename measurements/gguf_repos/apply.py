"""Write the repos found.jsonl records into src/runlocal/data/ollama_tags.json, after re-checking each record against
RULE.md by script (clauses a script can check: the evidence page is a huggingface.co page of the repo itself, the
file named is a Q4_K_M GGUF that llama.cpp's -hf tag match would pick, the split flag agrees with the file name).
`hf_source` is the repo's address, as in the hand-written entries; the page the file was seen on goes in `hf_seen`.
A query 3 record (RULE.md Amendment 4) cites a run / download line in public code instead of a page: its `hf_seen`
quotes that line and its find_string id. A query 4 record (Amendment 5, `evidence: "named"`) quotes its first source that
names the repo with its Q4_K_M. Records with no repo leave their entry untouched; a record `dropped` (RULE.md clause 5)
or `withdrawn` (Amendment 5: a DOUBTFUL repo not borne out by query 4) takes hf off its entry. The last
line of an alias decides (RULE.md Amendment 3: query 2's lines follow query 1's); its `quants_only` (the whole GGUF
listing the evidence page showed) becomes `hf_quants`, which published.py reads so as not to name a file the repo lacks.
Run: python measurements/gguf_repos/apply.py [--check]"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "src" / "runlocal" / "data" / "ollama_tags.json"
# common/download.cpp (ggml-org/llama.cpp at 0216dab364b8): the tag must be followed by '.', '_' or '-';
# a split file is <stem>-0000N-of-0000M.gguf and -hf starts from shard 1
TAG = re.compile(r"Q4_K_M[._-]", re.IGNORECASE)
SHARD = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$")


def cited_line(rec: dict) -> dict | None:
    """A query 3 record's first cited hit whose line names the repo with the Q4_K_M tag (RULE.md Amendment 4)."""
    hf = rec["hf"].lower()
    return next((hit for hit in rec.get("code", []) if hf in hit["line"].lower() and "q4_k_m" in hit["line"].lower()),
                None)


def named_source(rec: dict) -> dict | None:
    """A query 4 record's first source whose quoted line names the repo and its Q4_K_M file (RULE.md Amendment 5)."""
    hf, stem = rec["hf"].lower(), (rec["file"] or "").rsplit("/", 1)[-1].lower()
    return next((s for s in rec.get("sources", []) if hf in s["line"].lower() and stem and stem in s["line"].lower()),
                None)


def problems(rec: dict) -> list[str]:
    hf, src, file = rec["hf"], rec["hf_source"] or "", rec["file"] or ""
    out = []
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", hf):
        out.append(f"{hf!r} is not owner/name")
    if rec.get("evidence") == "named":    # RULE.md Amendment 5: a source naming the repo with its Q4_K_M file
        if named_source(rec) is None:
            out.append(f"no source names {hf} with {file}")
        if src and not src.startswith(f"https://huggingface.co/{hf}/"):
            out.append(f"{src} is not a URL of {hf}")
    elif rec.get("evidence") == "code":   # RULE.md Amendment 4: a run / download line in public code
        if cited_line(rec) is None:
            out.append(f"no cited line names {hf} with Q4_K_M")
        if src and not src.startswith(f"https://huggingface.co/{hf}/"):
            out.append(f"{src} is not a URL of {hf}")
        if not file:        # an -hf / hf.co/ line: the tag is -hf's own input; no file name, so no shard
            return out + ([f"split={rec['split']} with no file named"] if rec["split"] else [])
    elif not (src == f"https://huggingface.co/{hf}" or src.startswith(f"https://huggingface.co/{hf}/")):
        out.append(f"{src} is not a page of {hf}")
    if not file.lower().endswith(".gguf"):
        out.append(f"{file} is not a GGUF file")
    if not TAG.search(file):
        out.append(f"{file} does not match llama.cpp's Q4_K_M tag")
    shard = SHARD.search(file)
    if bool(shard) != rec["split"]:
        out.append(f"split={rec['split']} disagrees with {file}")
    if shard and shard.group(1) != "00001":
        out.append(f"{file} is not shard 1")
    return out


HF_KEYS = ("hf", "hf_source", "hf_seen", "split", "hf_quants")


def latest_records() -> dict[str, dict]:
    """The last found.jsonl line of each alias, in the order aliases first appear (RULE.md Amendment 3)."""
    latest: dict[str, dict] = {}
    for line in (HERE / "found.jsonl").read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            latest[rec["alias"]] = rec
    return latest


def earlier_repos(alias: str) -> set[str]:
    """The repos found.jsonl's lines have given an alias (a later line may replace one: RULE.md Amendment 5's re-check)."""
    lines = (json.loads(line) for line in (HERE / "found.jsonl").read_text().splitlines() if line.strip())
    return {rec["hf"] for rec in lines if rec["alias"] == alias and rec["hf"]}


def place(entry: dict, rec: dict) -> dict:
    """The entry with hf, hf_source, hf_seen (and split) set, before `latest` as the hand-written entries have it."""
    seen = f"{rec['file']} listed at {rec['hf_source']} (measurements/gguf_repos: RULE.md, found.jsonl)"
    if rec.get("evidence") == "code":
        hit = cited_line(rec) or {}
        seen = (f"`{hit.get('line')}` in public code (find_string id {hit.get('id')})"
                + (f", file {rec['file']}" if rec["file"] else "")
                + " (measurements/gguf_repos: RULE.md Amendment 4, found.jsonl)")
    elif rec.get("evidence") == "named":
        hit = named_source(rec) or {}
        seen = (f"`{hit.get('line')}` ({hit.get('kind')} {hit.get('ref')}), file {rec['file']}"
                " (measurements/gguf_repos: RULE.md Amendment 5, found.jsonl)")
    add = ({"hf": rec["hf"], "hf_source": f"https://huggingface.co/{rec['hf']}", "hf_seen": seen}
           | ({"split": True} if rec["split"] else {}) | ({"hf_quants": rec["quants_only"]} if rec.get("quants_only") else {}))
    out = {}
    for key, value in entry.items():
        if key == "latest":
            out |= add
        out[key] = value
    return out if "hf" in out else out | add


def main(check: bool) -> int:
    text = DATA.read_text()
    data = json.loads(text)
    models = data["models"]
    records = list(latest_records().values())
    bad = 0
    for rec in records:
        if rec.get("dropped") or rec.get("withdrawn"):  # RULE.md clause 5 / Amendment 5: the entry keeps no hf
            models[rec["alias"]] = {k: v for k, v in models[rec["alias"]].items() if k not in HF_KEYS}
            continue
        if rec["hf"] is None:
            continue
        if (why := problems(rec)):
            print(f"{rec['alias']}: " + "; ".join(why), file=sys.stderr)
            bad += 1
            continue
        entry = models[rec["alias"]]
        if entry.get("hf") != rec["hf"] and entry.get("hf") in earlier_repos(rec["alias"]):
            entry = {k: v for k, v in entry.items() if k not in HF_KEYS}  # a repo found.jsonl wrote, superseded
        if entry.get("hf") not in (None, rec["hf"]):
            print(f"{rec['alias']}: already has {entry.get('hf')}", file=sys.stderr)
            bad += 1
            continue
        models[rec["alias"]] = place({k: v for k, v in entry.items() if k not in HF_KEYS}
                                     if entry.get("hf") == rec["hf"] else entry, rec)
    new = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    found = sum(1 for m in models.values() if m.get("hf"))
    print(f"{len(records)} records, {sum(r['hf'] is not None for r in records)} with a repo; "
          f"entries with hf: {sum(1 for m in json.loads(text)['models'].values() if m.get('hf'))} -> {found}")
    if check:
        if new != text:
            print("ollama_tags.json differs from found.jsonl: run apply.py", file=sys.stderr)
            return 1
        return 1 if bad else 0
    DATA.write_text(new)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))

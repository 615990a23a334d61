"""Strix Halo round (held_out/strixhalo_queries.md): records from kyuz0/amd-strix-halo-toolboxes' docs/results.json,
one version a month (amendment 1), printed as JSON lines in the rule's source order, at most 24 records a source.

Reads the versions from a local git mirror (`git -C MIRROR show COMMIT:docs/results.json`); writes nothing.
Usage: python3 measurements/speed/strixhalo_collect.py /path/to/mirror > /tmp/kyuz0_records.jsonl
"""
import json
import subprocess
import sys

REPO = "kyuz0/amd-strix-halo-toolboxes"
# the last commit of each month that touched docs/results.json (git log -- docs/results.json), oldest first
VERSIONS = ["1acda692247e1e5695642b1f1127c16611e950de", "ba88675b9c0dc9ef688532db98974fb8fe63935d",
            "2f2b1b33af32a4f64371a6e0a01b33d4d5b4c446", "7f34f51202e92ae94084a217be3a151485f734ed",
            "2c8a1e2eefda7f194cfd8e5cbfa14175bb0e5616", "d6745311825828d0a91c3ac87c26090bab637143",
            "8ff812fbb5fed2e79bf903feb4c5e4af9b4a7a7a", "a7ace8dba7c6914a8cae658cc4c4abf4efb3e4a9",
            "d20bb42b0408940ee1bf804a27a2487bf98c1b23", "08aa7bc026cb730fbf70a414b0fa5ca802fb72f5"]
# the file's model_clean → catalog alias (dense or MoE transformers only; the rule leaves out hybrids —
# Qwen3-Next, Qwen3-Coder-Next, Qwen3.5/3.6, Nemotron-3 — and models the catalog lacks: Devstral-2,
# GLM-4.7-Flash, Ministral-3, gemma-4)
ALIASES = {
    "GLM-4.5-Air-UD-Q4_K_XL": "glm-4.5-air", "GLM-4.5-Air-UD-Q6_K_XL": "glm-4.5-air",
    "GLM-4.6-UD-Q4_K_XL": "glm-4.6", "Llama-3.3-70B-Instruct-UD-Q8_K_XL": "llama-3.3-70b",
    "Llama-4-Scout-17B-16E-Instruct-Q6_K": "llama-4-scout", "Llama-4-Scout-17B-16E-Instruct-Q8_0": "llama-4-scout",
    "Llama-4-Scout-17B-16E-Instruct-UD-Q4_K_XL": "llama-4-scout", "MiniMax-M2-UD-Q6_K_XL": "minimax-m2",
    "MiniMax-M2.7-UD-Q3_K_S": "minimax-m2.7", "MiniMax-M2.7-UD-Q3_K_XL": "minimax-m2.7",
    "Qwen3-235B-A22B-Instruct-2507-UD-Q3_K_XL": "qwen3-235b-a22b-2507", "Qwen3-30B-A3B-BF16": "qwen3-30b-a3b",
    "Qwen3-30B-A3B-Instruct-2507-UD-Q6_K_XL": "qwen3-30b-a3b-2507",
    "Qwen3-Coder-30B-A3B-Instruct-Q4_K_M": "qwen3-coder-30b-a3b",
    "Qwen3-Coder-30B-A3B-Instruct-UD-Q8_K_XL": "qwen3-coder-30b-a3b",
    "gemma-3-12b-it-UD-Q8_K_XL": "gemma-3-12b", "gemma-3-27b-it-BF16": "gemma-3-27b",
    "gemma-3-4b-it-Q3_K_S": "gemma-3-4b", "gpt-oss-120b-F16": "gpt-oss-120b", "gpt-oss-120b-mxfp4": "gpt-oss-120b",
    "gpt-oss-20b-F32": "gpt-oss-20b", "gpt-oss-20b-mxfp4": "gpt-oss-20b", "llama-2-7b.Q4_0": "llama-2-7b",
}
CAP = 24


def recorded_keys() -> set:
    """(env, model, test, build hash) of the kyuz0 rows already in measurements/speed (backends2's held out)."""
    keys = set()
    with open("measurements/speed/held_out/backends2.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if REPO in r["source_url"]:
                env = r["note"].split("env '")[1].split("'")[0]
                keys.add((env, r["model"], r["quant"], r["test"], r["build"].split()[0]))
    return keys


def version_records(mirror: str, commit: str, seen: set) -> list[dict]:
    doc = json.loads(subprocess.run(["git", "-C", mirror, "show", f"{commit}:docs/results.json"],
                                    capture_output=True, text=True, check=True).stdout)
    generated = doc["meta"].get("generated_at", "")
    out = []
    for r in doc["runs"]:
        alias = ALIASES.get(r["model_clean"])
        if (alias is None or r.get("error") or r.get("context", "default") != "default" or r.get("rpc")
                or (r.get("ngl") or 0) < 99 or r["test"] not in ("pp512", "tg128") or r.get("tps_mean") is None):
            continue
        build = r.get("build") or {}
        key = (r["env"], alias, r["quant"], r["test"], build.get("hash", ""))
        if key in seen:
            continue
        seen.add(key)
        backend = "vulkan" if r["env"].startswith("vulkan") else "rocm"
        out.append({
            "device": "ryzen-ai-max-395-128gb", "backend": backend, "n_devices": 1, "runtime": "llama.cpp",
            "build_era": "current", "fit_scope": "backend", "model": alias, "quant": r["quant"],
            "model_gib": r["file_size_gib"], "test": r["test"], "tokens_per_s": r["tps_mean"],
            "fa": 1 if r["fa"] else 0,
            "source_url": f"https://github.com/{REPO}/blob/{commit}/docs/results.json",
            "build": f"{build.get('hash', '?')} ({build.get('number', '?')})", "date": generated[:7],
            "gpu": "Radeon 8060S",
            "note": (f"kyuz0's Strix Halo toolboxes results.json (generated {generated[:10]}), env '{r['env']}', "
                     f"file {r['model_clean']}, llama-bench -ngl {r['ngl']} -mmp 0; Framework Desktop 128 GB "
                     "(the repository's README); strixhalo round, rule held_out/strixhalo_queries.md"),
        })
        if len(out) == CAP:
            break
    return out


def main(mirror: str) -> None:
    seen = recorded_keys()
    for commit in VERSIONS:
        for rec in version_records(mirror, commit, seen):
            print(json.dumps(rec))


if __name__ == "__main__":
    main(sys.argv[1])

"""Writes release_dates.json: each runtime's releases with the date each was out, for planning a record whose post
names no version at the release current on the post's date (README "Post dates and the era's release").

    python measurements/outcomes/make_release_dates.py PYPI_DIR OLLAMA_GIT_DIR

PYPI_DIR holds PyPI's JSON API answer for each package (vllm.json, sglang.json, transformers.json, mlx-lm.json,
fetched once on 2026-11-27); a release's date is its first file's upload time (UTC), final releases only (no rc / dev /
post), wholly yanked releases left out. OLLAMA_GIT_DIR is a mirror of github.com/ollama/ollama: a tag's commit date
dates the releases before v0.5.8; from v0.5.8 on, src/runlocal/data/ollama_llama_cpp.json's dates (the same tags,
read by measurements/ollama_builds/make_map.py) are kept. llama.cpp tags a build per commit and runlocal holds no
full table: LLAMACPP_DATED lists the builds whose date runlocal's sources already state (each a build that existed by
that date), and each build Ollama's releases carry (ollama_llama_cpp.json: `build`, or `llama_cpp` written bNNNN),
dated by the first Ollama release that carries it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PYPI = {"vllm": "vllm", "sglang": "sglang", "transformers": "transformers", "mlx": "mlx-lm"}
FINAL = re.compile(r"^\d+(\.\d+)*$")
# (build, a date by which it existed, where runlocal's source says so)
LLAMACPP_DATED = (
    # builds logged in threads the session-23 date look-ups returned (the log's build line and the post's date)
    (918, "2023-07-27", "ggml-org/llama.cpp#2429: \"main: build = 918 (7c529ce)\", \"seed = 1690493628\" (2023-07-27 UTC)"),
    (1009, "2023-09-26", "ollama/ollama#618 (opened 2023-09-27): \"build\":1009 in its log of 2023/09/26"),
    (3622, "2024-08-26", "dmatora/LLM-inference-speed-benchmarks#12 (2024-08-26): \"llama.cpp build: 93bc3839 (3622)\""),
    (3917, "2024-10-15", "ggml-org/llama.cpp#9881, a comment of 2024-10-15: \"build: 3917 (a89f75e1)\""),
    (2761, "2024-04-29", "runtimes/flag_spelling.py FLASH_ATTN_BUILDS: ollama/ollama PR #4036 of 2024-04-29 bumps to b2761"),
    (2771, "2024-04-30", "runtimes/flag_spelling.py FLASH_ATTN_BUILDS: PR #5021 merged 2024-04-30, first tag b2771"),
    (3135, "2024-06-12", "runtimes/flag_spelling.py LLAMA_SERVER_BUILDS: janhq/cortex.llamacpp PR #83 (b3135, 2024-06-12)"),
    (3145, "2024-06-14", "runtimes/flag_spelling.py LLAMA_SERVER_BUILDS: janhq/cortex.llamacpp PR #87 (b3145, 2024-06-14)"),
    (4447, "2025-01-08", "runtimes/flag_spelling.py HF_TAG_BUILDS: janhq/cortex.llamacpp PR #364 (b4447, 2025-01-08)"),
    (4502, "2025-01-17", "runtimes/flag_spelling.py HF_TAG_BUILDS: janhq/cortex.llamacpp PR #374 (b4502, 2025-01-17)"),
    (4984, "2025-03-28", "runtimes/flag_spelling.py OVERRIDE_TENSOR_BUILDS: janhq/cortex.llamacpp PR #442 (b4984, 2025-03-28)"),
    (5041, "2025-04-03", "runtimes/flag_spelling.py OVERRIDE_TENSOR_BUILDS: janhq/cortex.llamacpp PR #447 (b5041, 2025-04-03)"),
    (5061, "2025-04-08", "runtimes/versions.py MLA_LATENT_BUILDS: issue #12817, filed 2025-04-08 on b5061"),
    (5361, "2025-05-13", "runtimes/mla_flash.py: ggml's sync of llama.cpp cf0a43bb = b5361, 2025-05-13"),
    (5421, "2025-05-19", "runtimes/mla_flash.py: \"b5421 (d30cb5a7f, 2025-05-19)\" in a public upgrade note"),
    (6057, "2025-08-01", "diagnose/fixes.py: b6057's log of 2025-08-01 in ggml-org/llama.cpp#15009"),
    (6451, "2025-09-13", "runtimes/versions.py NP_AUTO_BUILDS: b6451 released by 2025-09-13 (xorbitsai/xllamacpp PR #81)"),
    (8099, "2026-02-19", "measurements/llamacpp_gdn_builds/README.md: ollama/ollama e4d75b8c5 \"Update to b8099\", committed 2026-02-19"),
    (8233, "2026-03-07", "measurements/llamacpp_gdn_builds/README.md: ollama/ollama 577db53ef \"Update b8233\", committed 2026-03-07"),
    (8301, "2026-03-12", "measurements/llamacpp_gdn_builds/README.md: ollama/ollama 97962bd03 \"Update to b8301\", committed 2026-03-12"),
    (9272, "2026-05-22", "runtimes/versions.py OUTPUT_CAP_BUILDS: issue #23527, filed 2026-05-22 on b9272"),
    (9410, "2026-05-29", "runtimes/versions.py KQ_MASK_F16_BUILDS: PR #23764 merged as 031ddb2e0 (b9410), 2026-05-29"),
    (10630, "2026-08-25", "runtimes/versions.py OLLAMA_NEWEST_COMMIT_READ: ollama/ollama PR #18003 \"version bump b10630\" (2026-08-25)"),
    (10864, "2026-09-08", "runtimes/versions.py OLLAMA_NEWEST_COMMIT_READ: ollama/ollama PR #18317 \"… b10864\" (2026-09-08)"),
)


def key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def pypi_rows(path: Path) -> list[list[str]]:
    rows = []
    for version, files in json.loads(path.read_text())["releases"].items():
        if not files or not FINAL.match(version) or all(f.get("yanked") for f in files):
            continue
        rows.append([version, min(f["upload_time_iso_8601"] for f in files)[:10]])
    return sorted(rows, key=lambda r: key(r[0]))


def ollama_rows(git_dir: Path) -> list[list[str]]:
    held = json.loads((REPO / "src/runlocal/data/ollama_llama_cpp.json").read_text())["releases"]
    out = subprocess.run(["git", "--git-dir", str(git_dir), "for-each-ref", "--format=%(refname:short) %(creatordate:short)",
                          "refs/tags"], capture_output=True, text=True, check=True).stdout
    tags = {}
    for line in out.splitlines():
        name, date = line.split()
        if re.match(r"^v\d+\.\d+\.\d+$", name):
            tags[name[1:]] = date
    rows = {v: d for v, d in tags.items() if key(v) < (0, 5, 8)}
    rows.update({v: r["date"] for v, r in held.items()})
    return sorted(([v, d] for v, d in rows.items()), key=lambda r: key(r[0]))


def llamacpp_rows() -> list[list[str]]:
    held = json.loads((REPO / "src/runlocal/data/ollama_llama_cpp.json").read_text())["releases"]
    first: dict[int, tuple[str, str]] = {}
    for version, r in sorted(held.items(), key=lambda kv: kv[1]["date"]):
        build = r.get("build") or (int(r["llama_cpp"][1:]) if str(r.get("llama_cpp", "")).startswith("b") else None)
        if build and build not in first:
            first[build] = (r["date"], f"data/ollama_llama_cpp.json: Ollama v{version} carries b{build}")
    for build, date, source in LLAMACPP_DATED:
        if build not in first or date < first[build][0]:
            first[build] = (date, source)
    return [[f"b{b}", d, s] for b, (d, s) in sorted(first.items())]


def main(pypi_dir: str, ollama_git: str) -> None:
    table = {
        "_source": {
            "vllm / sglang / transformers / mlx": "PyPI JSON API (2026-11-27): each final release's first upload (UTC); "
                                                  "wholly yanked releases left out",
            "ollama": "src/runlocal/data/ollama_llama_cpp.json (v0.5.8 on); before it the tag's date in ollama/ollama",
            "llama.cpp": "builds with a date runlocal's sources state (each row's third field): a build that existed "
                         "by that date",
            "written_by": "measurements/outcomes/make_release_dates.py",
        },
        **{rt: pypi_rows(Path(pypi_dir) / f"{pkg}.json") for rt, pkg in PYPI.items()},
        "ollama": ollama_rows(Path(ollama_git)),
        "llama.cpp": llamacpp_rows(),
    }
    text = json.dumps(table, indent=0, ensure_ascii=False)
    (HERE / "release_dates.json").write_text(re.sub(r'\[\n"', '["', re.sub(r'",\n"', '", "', re.sub(r'"\n\]', '"]', text))) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])

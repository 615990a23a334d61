"""Which llama.cpp each Ollama release builds or vendors, read from a clone of github.com/ollama/ollama.

Writes src/runlocal/data/ollama_llama_cpp.json (read by runlocal.runtimes.versions):

* v0.30.0 and later run llama-server built from upstream llama.cpp: cmake/local.cmake reads the release's
  LLAMA_CPP_VERSION file (a build tag such as b9452) and ExternalProject_Add fetches
  https://github.com/ggml-org/llama.cpp at that GIT_TAG (commit 9db4bdbad, ollama/ollama#16031). The only patches
  applied (llama/compat/*.patch) touch the model loader, the vocabulary/architecture tables of one model and
  mtmd/clip.cpp: none touches src/llama-context.cpp or tools/server/server-context.cpp.
* Earlier releases vendored llama.cpp under llama/ and ran their own CGO runner: Makefile.sync's FETCH_HEAD names
  the upstream commit they vendored.

Usage: python measurements/ollama_builds/make_map.py /path/to/ollama/.git   (a mirror with tags)
"""

import json
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "src" / "runlocal" / "data" / "ollama_llama_cpp.json"


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], capture_output=True, text=True, check=False).stdout


def release(repo: str, tag: str) -> dict | None:
    date = git(repo, "log", "-1", "--format=%ad", "--date=short", tag).strip()
    commit = git(repo, "rev-list", "-n", "1", tag).strip()[:12]
    build = git(repo, "show", f"{tag}:LLAMA_CPP_VERSION").strip()
    if re.fullmatch(r"b\d+", build):
        return {"date": date, "commit": commit, "runs": "llama-server", "llama_cpp": build,
                "source": f"ollama/ollama {tag}:LLAMA_CPP_VERSION"}
    m = re.search(r"^FETCH_HEAD\s*=\s*(\w+)", git(repo, "show", f"{tag}:Makefile.sync"), re.M)
    if m:
        return {"date": date, "commit": commit, "runs": "vendored", "llama_cpp": m.group(1),
                "source": f"ollama/ollama {tag}:Makefile.sync FETCH_HEAD"}
    return None


def main(repo: str) -> None:
    tags = [t for t in git(repo, "tag").split() if re.fullmatch(r"v\d+\.\d+\.\d+", t)]
    tags.sort(key=lambda t: tuple(int(x) for x in t[1:].split(".")))
    releases = {t[1:]: r for t in tags if (r := release(repo, t)) is not None}
    doc = {"_source": "measurements/ollama_builds/make_map.py over github.com/ollama/ollama (tags; "
                      f"newest commit read {git(repo, 'log', '-1', '--format=%h %ad', '--date=short').strip()})",
           "releases": releases}
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{len(releases)} releases → {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])

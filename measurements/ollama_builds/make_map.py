"""Which llama.cpp each Ollama release builds or vendors, read from a clone of github.com/ollama/ollama.

Writes src/runlocal/data/ollama_llama_cpp.json (read by runlocal.runtimes.versions):

* v0.30.0 and later run llama-server built from upstream llama.cpp: cmake/local.cmake reads the release's
  LLAMA_CPP_VERSION file (a build tag such as b9452) and ExternalProject_Add fetches
  https://github.com/ggml-org/llama.cpp at that GIT_TAG (commit 9db4bdbad, ollama/ollama#16031). The only patches
  applied (llama/compat/*.patch) touch the model loader, the vocabulary/architecture tables of one model and
  mtmd/clip.cpp: none touches src/llama-context.cpp or tools/server/server-context.cpp.
* Earlier releases vendored llama.cpp under llama/ and ran their own CGO runner: Makefile.sync's FETCH_HEAD names
  the upstream commit they vendored. Its llama.cpp build (``build``) is the last bNNNN that the commit which set that
  FETCH_HEAD names in its message (c68f367ef "Update GGML to b6646", 544b6739d "ggml update to b6840", 0cf7794b1 "…
  update to b7209"); else a public text (BUILD_FROM_TEXT); else a lower bound read from the vendored source
  (BUILD_FROM_SOURCE: the first build of a change the tree holds, ``build_bound`` "at least"). A release left without
  takes the last known build before it (runtimes/versions.py ollama_speed_build).

Usage: python measurements/ollama_builds/make_map.py /path/to/ollama/.git   (a mirror with tags)
"""

import json
import re
import sys
from pathlib import Path

from ollama_git import git, release_tags

OUT = Path(__file__).resolve().parents[2] / "src" / "runlocal" / "data" / "ollama_llama_cpp.json"


# A vendored commit whose build a public text names (no Ollama commit message does)
BUILD_FROM_TEXT = {
    "ec98e2002": (7437, "an ollama-sycl patch script: \"ollama v0.16.1 (ggml commit ec98e200, llama.cpp tag b7437)\""),
}
# A vendored tree that holds a change whose first build is known: (file, text present only from that change, build, why)
BUILD_FROM_SOURCE = (
    ("ml/backend/ggml/ggml/src/ggml-cuda/common.cuh",
     re.compile(r"amd_wmma_available\(const int cc\)\s*\{\s*return\s*\([^;]*GGML_CUDA_CC_IS_RDNA3\(cc\)"), 7349,
     "holds llama.cpp PR #17576 (\"HIP: enable WMMA-MMQ INT kernels for RDNA 3\": ggml-cuda/common.cuh "
     "amd_wmma_available names RDNA3), first in b7349 (issue #17917's bisect)"),
)


def vendored_build(repo: str, tag: str, fetch_head: str) -> dict:
    """The llama.cpp build of the commit a release vendored, and how it is known ({} where nothing says)."""
    setter = git(repo, "log", "--format=%h", "--reverse", f"-SFETCH_HEAD={fetch_head}", tag, "--", "Makefile.sync")
    sha = setter.split()[0] if setter.split() else ""
    lines = [ln.strip(" *") for ln in git(repo, "log", "-1", "--format=%B", sha).splitlines()] if sha else []
    named = [(ln, m[-1]) for ln in lines if (m := re.findall(r"\bb(\d{4,5})\b", ln))]
    if named:
        line, build = named[-1]
        return {"build": int(build), "build_source": f"ollama/ollama {sha}, the commit that set this FETCH_HEAD: "
                                                      f"\"{line}\""}
    if fetch_head[:9] in BUILD_FROM_TEXT:
        build, text = BUILD_FROM_TEXT[fetch_head[:9]]
        return {"build": build, "build_source": text}
    for path, marker, build, why in BUILD_FROM_SOURCE:
        if marker.search(git(repo, "show", f"{tag}:{path}")):
            return {"build": build, "build_bound": "at least", "build_source": f"ollama/ollama {tag}:{path} {why}"}
    return {}


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
                "source": f"ollama/ollama {tag}:Makefile.sync FETCH_HEAD", **vendored_build(repo, tag, m.group(1))}
    return None


def main(repo: str) -> None:
    releases = {t[1:]: r for t in release_tags(repo) if (r := release(repo, t)) is not None}
    doc = {"_source": "measurements/ollama_builds/make_map.py over github.com/ollama/ollama (tags; "
                      f"newest commit read {git(repo, 'log', '-1', '--format=%h %ad', '--date=short').strip()})",
           "releases": releases}
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{len(releases)} releases → {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])

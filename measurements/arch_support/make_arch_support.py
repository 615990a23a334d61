"""Which llama.cpp builds and Ollama releases can load each architecture the catalog uses, read from a clone of
github.com/ollama/ollama (a mirror with tags), and public texts where they pin a build.

Writes src/runlocal/data/arch_support.json (read by runlocal.runtimes.arch_support):

* llama.cpp: an architecture loads where src/llama-arch.cpp's LLM_ARCH_NAMES holds its name (llama_model_load's
  "unknown model architecture" otherwise). ggml-org/llama.cpp's own history is over the size a session may fetch
  (1.47 GB), so the builds are read where Ollama vendored llama.cpp at a build it names: each vendored release's
  llama/llama.cpp/src/llama-arch.cpp with the build data/ollama_llama_cpp.json gives it (make_map.py: Ollama's sync
  commits "Update GGML to b6646", "ggml update to b6840", "update to b7209"; ec98e2002 = b7437; a lower bound for
  17f7f4baa), and the tree of the commit Ollama's b1fccabb3 reverted, "Update vendored llama.cpp to b7847". An
  architecture absent from a build is absent from every older one (names are added, never removed), present in one
  is present in every newer one: so ``without`` is the newest such build lacking it, ``with`` the oldest holding it.
  A public text narrows them (TEXTS: a release tag a maintainer names, a log's build line).
* Ollama before v0.30.0: a release loads an architecture its vendored llama.cpp names OR its Go engine registers
  (model/models/*: model.Register("name", …); the runner picks the Go engine for those). ``ollama`` lists, per
  architecture, the first release from which every later vendored-era release loads it, and how. Releases before
  v0.5.8 (no Makefile.sync, so not in ollama_llama_cpp.json) are read too (OLDER_TREES): v0.4.0-v0.5.7 vendored
  llama.cpp under llama/ (llama/vendoring's LLAMACPP_BASE_COMMIT; the names in llama/llama-arch.cpp from v0.5.5,
  in the single-file llama/llama.cpp before), and v0.3.14's submodule llm/llama.cpp pins the commit v0.4.0 vendored
  (3f1ae2e32c), so v0.4.0's copy stands for it. Older releases pin llama.cpp as a submodule whose tree this repository
  does not hold: ``ollama_oldest_read`` says where reading stops (arch_support.py: an architecture the oldest release
  read lacks is refused there too; one it holds is not checked). From v0.30.0 Ollama
  runs llama-server at its LLAMA_CPP_VERSION build (9db4bdbad, "use llama-server exclusively for GGML models"): the
  llama.cpp rule at that build.

Usage: python measurements/arch_support/make_arch_support.py /path/to/ollama/.git
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "runlocal" / "data" / "arch_support.json"
MAP = ROOT / "src" / "runlocal" / "data" / "ollama_llama_cpp.json"
CATALOG = ROOT / "src" / "runlocal" / "data" / "gguf_catalog_names.json"
ARCH_FILE = "llama/llama.cpp/src/llama-arch.cpp"
NAME = re.compile(r'\{\s*LLM_ARCH_\w+\s*,\s*"([^"]+)"\s*\}')
REGISTER = re.compile(r'model\.Register\("([^"]+)"')
# Ollama's Go engine names that differ from llama.cpp's for the same architecture: the Go engine loads the GGUF Ollama's
# own converter writes, under its own name. gpt-oss: v0.11.0's model/models/gptoss/model.go registers "gptoss" and
# convert/convert_gptoss.go:37 writes general.architecture = "gptoss" (what `ollama pull gpt-oss:20b` fetches); the
# llama.cpp name "gpt-oss" is registered beside it only from v0.11.5 (model.go:278, Register("gpt-oss", New))
GO_ALIASES = {"gptoss": "gpt-oss"}
# trees Ollama committed at a build its message names, outside the release tags
EXTRA_TREES = (("b1fccabb3^", 7847, "ollama/ollama b1fccabb3^, the tree b1fccabb3 reverts: \"Update vendored llama.cpp "
                                    "to b7847 (#14061)\""),
               # v0.11.0-v0.11.4 vendor llama.cpp at FETCH_HEAD de4c07f9 (Makefile.sync, llama/build-info.cpp), which a
               # llama.cpp bug report's `llama-cli --version` prints as build 5359 ("version: 5359 (de4c07f9)", issue of
               # 2025-05-14; GitHub code index file id 30950973842). Ollama's patches there add no catalog architecture
               # (0005-solar-pro.patch adds "solar" only)
               ("v0.11.4", 5359, "ollama/ollama v0.11.4:llama/llama.cpp/src/llama-arch.cpp (vendored at de4c07f9: "
                                 "\"version: 5359 (de4c07f9)\" in a llama.cpp issue log)"))
# architectures every GGUF build names: LLM_ARCH_NAMES came with GGUF itself (ggml-org/llama.cpp PR #2398, 2023-08-21),
# whose first entry is LLM_ARCH_LLAMA "llama" (gguf-py constants MODEL_ARCH.LLAMA: "llama"; ggml docs/gguf.md lists
# `llama` among general.architecture's values): no build that reads a GGUF lacks it (review19 section 13)
SINCE_GGUF = {"llama": "ggml-org/llama.cpp PR #2398 (GGUF): LLM_ARCH_LLAMA \"llama\" is the first of LLM_ARCH_NAMES"}
# public texts that pin a build: (arch, "first" | "with" | "without", build, PR, where)
TEXTS = (
    ("qwen3next", "first", 7186, "ggml-org/llama.cpp PR #16095",
     "ollama/ollama#12349, rick-github 2025-12-03: \"The next vendor sync after b7186 will make support available\" "
     "(b7186 linked as the release that brought PR #16095)"),
    ("qwen3vl", "with", 6900, "ggml-org/llama.cpp PR #16780",
     "xorbitsai/xllamacpp PR #88 \"Update llama.cpp to b6900\": \"Support qwen3vl: …llama.cpp/pull/16780\""),
    ("qwen35", "with", 9079, "ggml-org/llama.cpp PR #19468 (commit fc0fe4004)",
     "ollama/ollama PR #15899, nova2moon 2026-05-08: Ollama 0.23.2 answers \"unknown model architecture: 'qwen35'\"; "
     "\"The workaround is to run using latest llama.cpp: build: b9079\""),
    ("qwen35moe", "with", 9079, "ggml-org/llama.cpp PR #19468 (commit fc0fe4004)",
     "as qwen35: PR #19468 added qwen35 and qwen35moe (lgrammel/llama-cpp-provider#26: \"Support was added in commit "
     "fc0fe4004…\"; iacopPBK/llama.cpp-gfx906#18 and lemonade-sdk/lemonade#1189 quote \"unknown model architecture: "
     "'qwen35moe'\" from builds before it); its first build is not named: the b9079 log above loads qwen35"),
    # review17 finding 2: the architectures people pin builds for, where a public text names the build
    ("gpt-oss", "with", 6097, "ggml-org/llama.cpp PR #15091, merged 2025-08-05",
     "utilityai/llama-cpp-rs PR #797 (2025-08-06): \"updates the llama.cpp commit tag to b6097, which includes the "
     "recent changes to support GPT OSS (https://github.com/ggml-org/llama.cpp/pull/15091)\"; its first build is not "
     "named"),
    ("glm4moe", "first", 6085, "ggml-org/llama.cpp PR #14939",
     "oobabooga/textgen#7177 (2025-08-05): \"Support for GLM 4.5 has been added to llama.cpp in b6085 - commit "
     "ef0144c0\" (\"some fix for GLM 4.5 in b6092\")"),
    ("gemma3", "first", 4875, "ggml-org/llama.cpp PR #12343",
     "ggml-org/llama.cpp#12345, MoonRide303 2025-03-12: \"I just tested b4875 (7841fc72 / #12343) using "
     "gemma-3-4b-it-Q8_0.gguf … it seems to be working, now\""),
    ("llama4", "with", 5074, "ggml-org/llama.cpp PR #12791",
     "abetlen/llama-cpp-python#1994 (2025-04-08): \"unknown model architecture: 'llama4'\" … \"Please update to a "
     "newer version of llama.cpp: …/releases/tag/b5074\"; its first build is not named"),
    ("qwen3", "with", 5092, "ggml-org/llama.cpp commit d3bd7193 (utilityai/llama-cpp-rs#719)",
     "guinmoon/LLMFarm#126 (2025-04-29): \"llama.cpp b5092 have supported Qwen3\"; its first build is not named"),
    ("qwen3moe", "with", 5092, "ggml-org/llama.cpp commit d3bd7193 (utilityai/llama-cpp-rs#719)",
     "as qwen3 (the commit added qwen3 and qwen3moe: utilityai/llama-cpp-rs#719 quotes \"unknown model "
     "architecture: 'qwen3moe'\" before it); guinmoon/LLMFarm#126: \"llama.cpp b5092 have supported Qwen3\""),
    # review17c finding 3: Gemma 4 (session 17's catalog). Two update PRs bracket it; catalog17 also met a claim of
    # b8462, which the first text contradicts (b8611 still lacks the name), so it is not used: the first build is
    # between b8612 and b8639, not pinned
    ("gemma4", "without", 8611, "ggml-org/llama.cpp PR #21309",
     "bernardladenthin/java-llama.cpp PR #64 (2026-04-03), \"Upgrade llama.cpp from b8611 to b8645\": \"Adds Gemma 4 "
     "model support\" (so b8611 lacks it)"),
    ("gemma4", "with", 8639, "ggml-org/llama.cpp PR #21309",
     "fragcolor-xyz/shards PR #1261 (2026-04-02), \"Bump llama.cpp to b8639 (Gemma 4 support)\": \"Adds Gemma 4 model "
     "support (vision + MoE, ggml-org/llama.cpp#21309)\"; the first build between b8612 and b8639 is not named (a "
     "claim of b8462 contradicts the b8611 text above and is not used)"),
)


# releases before v0.5.8 read from the tags: (first, last before) and where each keeps llama.cpp's architecture names
OLDER_FROM, OLDER_BEFORE = (0, 3, 14), (0, 5, 8)
OLDER_FILES = ("llama/llama-arch.cpp", "llama/llama.cpp")     # llama-arch.cpp split out of llama.cpp (v0.5.5)
SUBMODULE = "llm/llama.cpp"


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], capture_output=True, text=True, check=False).stdout


def key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def older_trees(repo: str) -> dict[str, tuple[str, str]]:
    """{version: (the tag whose llama/ copy holds its names, that file)} for the releases before v0.5.8 whose llama.cpp
    this repository holds: the vendored llama/ tree, or a submodule pin equal to a later release's LLAMACPP_BASE_COMMIT."""
    tags = sorted((key(t[1:]), t) for t in git(repo, "tag").split() if re.fullmatch(r"v\d+\.\d+\.\d+", t))
    tags = [(k, t) for k, t in tags if OLDER_FROM <= k < OLDER_BEFORE]
    vendored: dict[str, tuple[str, str]] = {}      # base commit -> (tag, file)
    out: dict[str, tuple[str, str]] = {}
    for _, tag in tags:
        base = re.search(r"LLAMACPP_BASE_COMMIT=(\w+)", git(repo, "show", f"{tag}:llama/vendoring"))
        if base:
            path = next(f for f in OLDER_FILES if NAME.search(git(repo, "show", f"{tag}:{f}")))
            vendored.setdefault(base.group(1), (tag, path))
            out[tag[1:]] = (tag, path)
    for _, tag in tags:
        pin = git(repo, "ls-tree", tag, SUBMODULE).split()
        if tag[1:] not in out and len(pin) > 2 and pin[1] == "commit" and pin[2] in vendored:
            out[tag[1:]] = vendored[pin[2]]
    return out


def llama_cpp(repo: str, archs: list[str], releases: dict) -> dict:
    points = []        # (build, is a lower bound, names, where)
    for v, r in releases.items():
        if r["runs"] == "vendored" and "build" in r:
            names = set(NAME.findall(git(repo, "show", f"v{v}:{ARCH_FILE}")))
            points.append((r["build"], r.get("build_bound") == "at least", names, f"ollama/ollama v{v}:{ARCH_FILE}"))
    for rev, build, where in EXTRA_TREES:
        points.append((build, False, set(NAME.findall(git(repo, "show", f"{rev}:{ARCH_FILE}"))), where))
    out = {}
    for arch in archs:
        # absent at a commit of build ≥ b: absent at b (lower bounds count as that build); present: at its build
        without = [(b, w) for b, _, names, w in points if arch not in names]
        with_ = [(b, w) for b, low, names, w in points if arch in names and not low]
        row: dict = {"without": max(without)[0] if without else None, "with": min(with_)[0] if with_ else None,
                     "source": "; ".join(x for x in (
                         f"absent from {max(without)[1]} (b{max(without)[0]})" if without else "",
                         f"in {min(with_)[1]} (b{min(with_)[0]})" if with_ else "") if x)}
        for a, kind, build, pr, where in TEXTS:
            if a != arch:
                continue
            row["pr"] = pr
            row["source"] += f"; {where}"
            if kind == "without":       # a text that shows the build lacks it: a newer lower bound
                row["without"] = max(build, row["without"] or 0)
                assert row["with"] is None or build < row["with"], (arch, build, row)
                continue
            if kind == "first":
                row["first"] = build
            if row["with"] is None or build < row["with"]:
                row["with"] = build
            assert row["without"] is None or build > row["without"], (arch, build, row)
        if arch in SINCE_GGUF:
            row["since_gguf"] = True
            row["source"] += f"; {SINCE_GGUF[arch]}"
        out[arch] = row
    return out


def ollama(repo: str, archs: list[str], releases: dict, older: dict[str, tuple[str, str]]) -> dict:
    where = {v: (f"v{v}", ARCH_FILE) for v, r in releases.items() if r["runs"] == "vendored"} | older
    vendored = sorted((key(v), v) for v in where)
    loads: dict[str, list[tuple[str, str]]] = {a: [] for a in archs}
    for _, v in vendored:
        names = set(NAME.findall(git(repo, "show", ":".join(where[v]))))
        registered = set(REGISTER.findall(git(repo, "grep", "-h", "model.Register(", f"v{v}", "--", "model/models/")))
        engine = {GO_ALIASES.get(n, n): n for n in sorted(registered, key=lambda n: n in GO_ALIASES)}
        for a in archs:
            go = ("Go engine" + (f" as '{engine[a]}'" if engine[a] != a else "")) if a in engine else ""
            how = go + (" and " if go and a in names else "") + ("vendored llama.cpp" if a in names else "")
            loads[a].append((v, how))
    out = {}
    for a, rows in loads.items():
        first = None
        for i, (v, how) in enumerate(rows):
            if how and all(h for _, h in rows[i:]):
                first = (v, how)
                break
        missing_after = [v for v, h in rows[rows.index(first):] if not h] if first else []
        assert not missing_after
        as_name = re.search(r"as '([^']+)'", first[1]) if first else None
        tag, arch_file = where[first[0]] if first else ("", "")
        read_at = f" (llama.cpp submodule {SUBMODULE} at the commit {tag} vendored)" if first and tag[1:] != first[0] else ""
        out[a] = ({"first": first[0], "how": first[1],
                   "source": f"ollama/ollama v{first[0]}: " + " / ".join(
                       x for x in ((f"{arch_file if tag[1:] == first[0] else f'{tag}:{arch_file}'} names \"{a}\""
                                    f"{read_at}" if "llama.cpp" in first[1] else ""),
                                   (f"model/models registers \"{as_name.group(1) if as_name else a}\""
                                    if "Go" in first[1] else "")) if x)}
                  if first else {"first": None, "how": "", "source": "no release before v0.30.0 loads it"})
        # the first release from which every later one's vendored llama.cpp names it (a community GGUF loads): before
        # it a release that loads the name does so through the Go engine only (arch_support.py says which)
        vendored_from = next((v for i, (v, _) in enumerate(rows) if all("llama.cpp" in h for _, h in rows[i:])), None)
        if first:
            out[a]["vendored_first"] = vendored_from
        if first and rows[0][0] == first[0]:
            out[a]["source"] += " (the oldest release read)"
    return out


def main(repo: str) -> None:
    releases = json.loads(MAP.read_text(encoding="utf-8"))["releases"]
    older = older_trees(repo)
    archs = sorted({m["arch"] for m in json.loads(CATALOG.read_text(encoding="utf-8"))["models"].values() if m["arch"]})
    doc = {"_source": "measurements/arch_support/make_arch_support.py over github.com/ollama/ollama (tags; newest commit "
                      f"read {git(repo, 'log', '-1', '--format=%h %ad', '--date=short').strip()}) and the public texts it "
                      "cites",
           "llama_cpp": llama_cpp(repo, archs, releases), "ollama": ollama(repo, archs, releases, older),
           "ollama_oldest_read": min(older, key=key)}
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(archs)} architectures → {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])

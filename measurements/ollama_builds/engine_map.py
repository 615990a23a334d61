"""Which engine each Ollama release before v0.30.0 runs a model on, read from a clone of github.com/ollama/ollama
(the release tags vX.Y.Z without -rc, v0.5.13 to the last before v0.30.0).

Writes src/runlocal/data/ollama_engine.json (read by runlocal.runtimes.ollama_engine). At each tag, three facts:

* ``required``: fs/ggml/ggml.go KV.OllamaEngineRequired() — the architectures llm/server.go NewLlamaServer sends to the
  Go engine ("ollama engine") without being asked (``envconfig.NewEngine() || f.KV().OllamaEngineRequired()``). It
  came with ab39e08eb ("llm: auto detect models that require Ollama Engine (#1)", 2025-03-11, first tag v0.6.0) as
  ``kv.Architecture() == "gemma3"``, then a slices.Contains list; before it only OLLAMA_NEW_ENGINE=1 chose the Go
  engine (v0.5.13 llm/server.go: ``if envconfig.NewEngine() { finalParams = append(…, "--ollama-engine") }``).
* ``registered``: the names model.Register(...) registers in the packages model/models/models.go imports — what
  model.NewTextProcessor can open, so what OLLAMA_NEW_ENGINE=1 moves to the Go engine. A name outside it, or a model
  with a separate projector file ("split vision models aren't supported"), falls back to the llama.cpp runner
  ("model not yet supported by Ollama engine, switching to compatibility mode").
* ``commit``: the tag's commit.

Only the releases where a list changed are written (a release takes the last entry at or before it). From v0.30.0
(9db4bda, "use llama-server exclusively for GGML models") every GGML model runs on llama-server: not mapped here.

Usage: python measurements/ollama_builds/engine_map.py /path/to/ollama/.git   (a mirror with tags)
"""

import json
import re
import sys
from pathlib import Path

from ollama_git import git, release_tags

OUT = Path(__file__).resolve().parents[2] / "src" / "runlocal" / "data" / "ollama_engine.json"
FIRST, LAST_BEFORE = (0, 5, 13), (0, 30, 0)


def required(source: str) -> list[str]:
    """KV.OllamaEngineRequired's architectures: a slices.Contains list or a single == comparison; none if absent."""
    body = re.search(r"func \(kv KV\) OllamaEngineRequired\(\) bool \{(.*?)\n\}", source, re.S)
    if not body:
        return []
    return sorted(set(re.findall(r'"([^"]+)"', body.group(1))))


def registered(repo: str, tag: str) -> list[str]:
    """model.Register names in the model/models packages that model/models/models.go imports at ``tag``."""
    imports = re.findall(r'"github.com/ollama/ollama/model/models/([\w/]+)"', git(repo, "show", f"{tag}:model/models/models.go"))
    names: set[str] = set()
    for package in imports:
        for path in git(repo, "ls-tree", "-r", "--name-only", tag, f"model/models/{package}/").split():
            if path.endswith(".go") and not path.endswith("_test.go"):
                names.update(re.findall(r'model\.Register\("([^"]+)"', git(repo, "show", f"{tag}:{path}")))
    return sorted(names)


def main(repo: str) -> None:
    releases: dict[str, dict] = {}
    last = None
    for tag in release_tags(repo, FIRST, LAST_BEFORE):
        row = {"required": required(git(repo, "show", f"{tag}:fs/ggml/ggml.go")),
               "registered": registered(repo, tag),
               "commit": git(repo, "rev-list", "-n", "1", tag).strip()[:9]}
        if last is None or (row["required"], row["registered"]) != (last["required"], last["registered"]):
            releases[tag[1:]] = row
            last = row
    doc = {"source": "ollama/ollama fs/ggml/ggml.go KV.OllamaEngineRequired and model/models (model.Register in the "
                     "packages models.go imports) at each release tag (measurements/ollama_builds/engine_map.py)",
           "releases": releases}
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{len(releases)} entries → {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])

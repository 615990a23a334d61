"""Which models each Ollama release runs with flash attention when OLLAMA_FLASH_ATTENTION is unset, read from a clone
of github.com/ollama/ollama (the release tags, vX.Y.Z without -rc).

Writes src/runlocal/data/ollama_flash_attention.json (read by runlocal.runtimes.ollama_flash). For each release from
v0.11.8 to the last before v0.30.0 (from v0.30.0 llm/llama_server.go passes llama-server --flash-attn auto unless the
variable is set), two architecture lists of fs/ggml/ggml.go at that tag:

* ``flash_attention``: GGML.FlashAttention(), the architectures that "want" flash attention (added in 85ccf7354,
  "gptoss: enable flash attention by default (#11996)", first tag v0.11.8); llm/server.go NewLlamaServer turns it on
  for them (envconfig.FlashAttention(f.FlashAttention()) from fdb109469, v0.12.4; ``envconfig.FlashAttention() ||
  f.FlashAttention()`` before) where every GPU supports it.
* ``engine``: KV.OllamaEngineRequired(), the architectures Ollama's own Go engine runs. From bd6c1d6b4 ("flash attn:
  add auto mode for llama engine (#13052)", first tag v0.13.4) the other architectures, run by the llama.cpp runner,
  get llama.cpp's flash attention "auto" unless the variable is set, while the Go engine keeps the list.

Only the releases where either list changed are written (a release takes the last entry at or before it).

Usage: python measurements/ollama_builds/flash_attention_map.py /path/to/ollama/.git   (a mirror with tags)
"""

import json
import re
import sys
from pathlib import Path

from ollama_git import git, release_tags

OUT = Path(__file__).resolve().parents[2] / "src" / "runlocal" / "data" / "ollama_flash_attention.json"
FIRST, LAST_BEFORE = (0, 11, 8), (0, 30, 0)


def arch_list(source: str, func: str) -> list[str]:
    """The string literals of the slices.Contains list in ``func`` (empty where the function is absent)."""
    m = re.search(re.escape(func) + r"\(\) bool \{\s*return slices\.Contains\(\[\]string\{(.*?)\}", source, re.S)
    return sorted(set(re.findall(r'"([^"]+)"', m.group(1)))) if m else []


def main(repo: str) -> None:
    releases: dict[str, dict] = {}
    last = None
    for tag in release_tags(repo, FIRST, LAST_BEFORE):
        source = git(repo, "show", f"{tag}:fs/ggml/ggml.go")
        row = {"flash_attention": arch_list(source, "func (f GGML) FlashAttention"),
               "engine": arch_list(source, "func (kv KV) OllamaEngineRequired"),
               "commit": git(repo, "rev-list", "-n", "1", tag).strip()[:9]}
        if last is None or (row["flash_attention"], row["engine"]) != (last["flash_attention"], last["engine"]):
            releases[tag[1:]] = row
            last = row
    doc = {"source": "ollama/ollama fs/ggml/ggml.go at each release tag (measurements/ollama_builds/"
                     "flash_attention_map.py)", "releases": releases}
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{len(releases)} entries → {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])

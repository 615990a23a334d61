"""vLLM's rope-scaling step in ``_get_and_verify_max_len`` per release (runtimes/context_limit.py YARN_KEPT_FROM), read
in the released sdists without installing them: vllm-X.tar.gz with the sha256 in releases.txt (PyPI's simple index),
each in DIR; a file whose sha256 differs is refused.

Prints, per release: the file, the line of ``def _get_and_verify_max_len``, the line span of the rope-scaling block
(from the Gemma 3 test to ``derived_max_model_len *= scaling_factor``), and the rule it holds — "old" where a yarn
rope resets the length to original_max_position_embeddings and multiplies by factor, "new" where yarn /
deepseek_yarn / deepseek_llama_scaling are excluded from the factor (vLLM PR #56446).

Usage: python measurements/vllm_rocm/read_max_len.py DIR > max_len.txt
"""

import hashlib
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).parent


def sha256_listed() -> dict[str, str]:
    rows = (line.split() for line in (HERE / "releases.txt").read_text().splitlines() if not line.startswith("#"))
    return {row[1]: row[2] for row in rows if len(row) == 3}


def read(tar: Path) -> str:
    with tarfile.open(tar) as t:
        names = {m.name.split("/", 1)[1]: m for m in t.getmembers() if "/" in m.name}
        path = "vllm/config/model.py" if "vllm/config/model.py" in names else "vllm/config.py"
        lines = t.extractfile(names[path]).read().decode().splitlines()     # type: ignore[union-attr]
    start = next(n for n, text in enumerate(lines, 1) if "def _get_and_verify_max_len" in text)
    begin = next(n for n, text in enumerate(lines, 1) if n > start and '"gemma3" not in' in text)
    end = next(n for n, text in enumerate(lines, 1) if n > begin and "derived_max_model_len *= scaling_factor" in text)
    block = "\n".join(lines[begin - 1:end])
    new = '"deepseek_yarn",' in block and 'if rope_type == "yarn":' not in block
    old = 'if rope_type == "yarn":' in block and "original_max_position_embeddings" in block
    rule = "new (yarn kinds excluded from factor)" if new else "old (yarn: original x factor)" if old else "neither"
    return f"{path}:{start} _get_and_verify_max_len; rope block :{begin}-{end} {rule}"


def main(folder: str) -> None:
    listed = sha256_listed()
    tars = sorted(Path(folder).glob("vllm-*.tar.gz"), key=lambda p: tuple(int(x) for x in p.name[5:-7].split(".")))
    for tar in tars:
        digest = hashlib.sha256(tar.read_bytes()).hexdigest()
        if listed.get(tar.name) != digest:
            sys.exit(f"{tar.name}: sha256 {digest} is not the one releases.txt lists")
        print(f"{tar.name[5:-7]:8} {digest[:16]} {read(tar)}")


if __name__ == "__main__":
    main(sys.argv[1])

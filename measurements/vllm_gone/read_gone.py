"""vLLM's architectures "supported until" a release (runtimes/arch_support.py VLLM_LAST), read in the released sdists
without installing them (releases.txt: the file and its sha256, as PyPI's simple index lists it).

Prints, per release (vllm/model_executor/models/registry.py):
* the line of `_PREVIOUSLY_SUPPORTED_MODELS` and each architecture in it with its last release and line, and what
  changed from the release before (+ added, - dropped);
* the line of the message _raise_for_unsupported gives for such an architecture ("was supported in vLLM until");
* whether the Transformers-backend fallback (`_try_resolve_transformers`) is tried in inspect_model_cls before
  `_raise_for_unsupported` (then the message is printed only where the fallback returns None), and the condition the
  fallback checks on the Transformers class (`is_backend_compatible()`, later also `_can_set_attn_implementation()`);
* the transformers requirement (requirements/common.txt), and where the Transformers backend's multimodal class calls
  the HF processor's `_get_num_multimodal_tokens` (vllm/model_executor/models/transformers*.py);
* which architectures of runlocal's catalog (src/runlocal/data/models.json config.architectures) are listed, and
  whether each is still in the registry's own tables (a key `"Arch":` outside the dict above).

Usage: python measurements/vllm_gone/read_gone.py DIR [CATALOG] > gone.txt
"""

import json
import re
import sys
import tarfile
from pathlib import Path

REGISTRY = "vllm/model_executor/models/registry.py"
DICT = re.compile(r"^_PREVIOUSLY_SUPPORTED_MODELS\s*=\s*\{(.*?)^\}", re.S | re.M)
ROW = re.compile(r'^\s*"(\w+)":\s*"([\d.]+)"', re.M)
KEY = re.compile(r'^\s*"(\w+)":\s*\(', re.M)


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", name.removeprefix("vllm-").removesuffix(".tar.gz")))


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _member(t: tarfile.TarFile, names: dict, path: str) -> str | None:
    m = names.get(path)
    return t.extractfile(m).read().decode() if m is not None else None   # type: ignore[union-attr]


def read(tar: Path) -> dict:
    with tarfile.open(tar) as t:
        names = {m.name.split("/", 1)[1]: m for m in t.getmembers() if "/" in m.name}
        text = _member(t, names, REGISTRY) or ""
        req = _member(t, names, "requirements/common.txt") or _member(t, names, "requirements-common.txt") or ""
        backend = sorted(n for n in names if re.fullmatch(r"vllm/model_executor/models/transformers(\.py|/\w+\.py)", n))
        calls = []
        for path in backend:
            src = _member(t, names, path) or ""
            calls += [f"{path}:{_line(src, c.start())}" for c in re.finditer(r"_get_num_multimodal_tokens\(", src)]
    out: dict = {"rows": {}, "dict_line": None, "mm_token_calls": calls}
    m = DICT.search(text)
    if m:
        out["dict_line"] = _line(text, m.start())
        for r in ROW.finditer(m.group(1)):
            out["rows"][r.group(1)] = (r.group(2), _line(text, m.start(1) + r.start(1)))
        rest = text[:m.start()] + text[m.end():]
    else:
        rest = text
    out["native"] = set(KEY.findall(rest))
    msg = text.find("was supported in vLLM until")
    out["message_line"] = _line(text, msg) if msg >= 0 else None
    body = text[text.find("    def inspect_model_cls(\n        self,"):]
    body = body[:body.find("\n    def ", 10)]
    fallback, raise_ = body.find("self._try_resolve_transformers("), body.find("self._raise_for_unsupported(")
    out["fallback_first"] = 0 <= fallback < raise_
    cond = re.search(r"if not (\(?\s*)?(\w+)\.is_backend_compatible\(\)(.*?):\n", text, re.S)
    out["condition"] = (" ".join(cond.group(0).split()), _line(text, cond.start())) if cond else None
    out["transformers"] = next((ln.split("#")[0].strip() for ln in req.splitlines()
                                if ln.lower().startswith("transformers")), "")
    return out


def main() -> None:
    folder = Path(sys.argv[1])
    catalog_path = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("src/runlocal/data/models.json")
    catalog: dict[str, list[str]] = {}
    for m in json.loads(catalog_path.read_text())["models"]:
        for arch in m["config"].get("architectures") or []:
            catalog.setdefault(arch, []).append(m["alias"])
    before: dict = {}
    for tar in sorted(folder.glob("vllm-*.tar.gz"), key=lambda p: _version_key(p.name)):
        release = tar.name.removeprefix("vllm-").removesuffix(".tar.gz")
        r = read(tar)
        added = sorted(set(r["rows"]) - set(before))
        dropped = sorted(set(before) - set(r["rows"]))
        print(f"== {release}  {r['transformers']}")
        rows = r["rows"]
        new = ", ".join(f"{a} {rows[a][0]} (:{rows[a][1]})" for a in added)
        print(f"  _PREVIOUSLY_SUPPORTED_MODELS: {REGISTRY}:{r['dict_line']}, {len(rows)} architectures"
              + (f"; + {new}" if added else "")
              + (f"; - {', '.join(dropped)}" if dropped else ""))
        print(f"  message: {REGISTRY}:{r['message_line']}; fallback tried before it: {r['fallback_first']}")
        if r["condition"]:
            print(f"  fallback condition ({REGISTRY}:{r['condition'][1]}): {r['condition'][0]}")
        print(f"  Transformers backend asks the HF processor's _get_num_multimodal_tokens at: "
              f"{', '.join(r['mm_token_calls']) or 'nowhere'}")
        for arch in sorted(set(r["rows"]) & set(catalog)):
            last, line = r["rows"][arch]
            print(f"  catalog: {arch} (last {last}, :{line}; still in the registry's tables: "
                  f"{arch in r['native']}): {', '.join(catalog[arch])}")
        before = r["rows"]


if __name__ == "__main__":
    main()

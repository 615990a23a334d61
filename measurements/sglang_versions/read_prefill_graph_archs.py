"""Read, in each SGLang wheel from 0.5.11 (the first with prefill CUDA graphs on by default), the architecture lists
that decide whether the server turns its prefill CUDA graphs off for a model, and from 0.4.4 whether it lowers
mem_fraction_static for a vision model (is_multimodal; from 0.4.4): sglang/srt/configs/model_config.py's
module-level ``multimodal_model_archs`` (is_multimodal_model), ``piecewise_cuda_graph_disabled_model_archs`` (the
piecewise blacklist), ``multimodal_piecewise_cuda_graph_supported_model_archs`` / ``…_breakable_…`` (0.5.16 on, the
multimodal allowlists) and ModelConfig.__init__'s local ``mm_disabled_models`` (multimodal off unless
--enable-multimodal). Writes src/runlocal/data/sglang_prefill_graph_archs.json.

Usage: python measurements/sglang_versions/read_prefill_graph_archs.py DIR — DIR holds one folder per release (0.5.11,
…) with the wheel's sglang/srt unpacked (`unzip WHEEL 'sglang/srt/*'`); the wheels are those in wheels.txt (sha256
there). Each list is written with the line it starts on.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

# 0.4.4 – 0.5.9: for is_multimodal alone (ModelRunner's fixed multimodal factor up to 0.4.8, the vision-model fraction
# reduction from 0.4.10: runtimes/sglang_versions.py VLM_RUNNER_READ / VLM_FRACTION_READ); those releases have no
# prefill graphs by default, so their other lists are not used
RELEASES = ("0.4.4", "0.4.5", "0.4.6", "0.4.7", "0.4.8", "0.4.9", "0.4.10", "0.5.1", "0.5.2", "0.5.3", "0.5.5", "0.5.7", "0.5.9", "0.5.11", "0.5.13", "0.5.16", "0.5.19",
            "0.5.21", "0.5.23")
MODULE_LISTS = ("multimodal_model_archs", "piecewise_cuda_graph_disabled_model_archs",
                "multimodal_piecewise_cuda_graph_supported_model_archs",
                "multimodal_breakable_cuda_graph_supported_model_archs")
OUT = Path(__file__).resolve().parents[2] / "src" / "runlocal" / "data" / "sglang_prefill_graph_archs.json"


def _strings(node: ast.expr, names: dict[str, list[str]]) -> list[str]:
    """A list / tuple literal's strings; a starred module-level name (*MIMO_V2_MULTIMODAL_ARCHS) is expanded."""
    out: list[str] = []
    for elt in node.elts:  # type: ignore[attr-defined]
        if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
            out.append(elt.value)
        elif isinstance(elt, ast.Starred) and isinstance(elt.value, ast.Name):
            out += names[elt.value.id]
        else:
            raise ValueError(f"unexpected element at line {elt.lineno}: {ast.dump(elt)}")
    return out


def read(release_dir: Path) -> dict[str, dict[str, object]]:
    path = release_dir / "sglang" / "srt" / "configs" / "model_config.py"
    tree = ast.parse(path.read_text())
    names: dict[str, list[str]] = {}
    found: dict[str, dict[str, object]] = {}
    for node in tree.body:                       # module level, in order (a starred name is defined above its use)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.List | ast.Tuple):
            name = node.targets[0].id
            names[name] = _strings(node.value, names)
            if name in MODULE_LISTS:
                found[name] = {"line": node.lineno, "archs": names[name]}
    for node in ast.walk(tree):                  # ModelConfig.__init__'s local list
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "mm_disabled_models"
                                                for t in node.targets):
            found["mm_disabled_models"] = {"line": node.lineno, "archs": _strings(node.value, names)}
    return found


def main(root: str) -> None:
    table = {"source": "sglang/srt/configs/model_config.py of each wheel in measurements/sglang_versions/wheels.txt, "
                       "read by measurements/sglang_versions/read_prefill_graph_archs.py",
             "releases": {release: read(Path(root) / release) for release in RELEASES}}
    OUT.write_text(json.dumps(table, indent=1) + "\n")
    for release, lists in table["releases"].items():
        print(release, {name: (v["line"], len(v["archs"])) for name, v in lists.items()})


if __name__ == "__main__":
    main(sys.argv[1])

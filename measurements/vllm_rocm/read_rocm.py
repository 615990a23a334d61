"""vLLM's ROCm quantization list and FP8 predicate per release (runtimes/vllm_rocm.py), read in the released sdists
without installing them: vllm-X.tar.gz as PyPI's simple index lists it (https://pypi.org/simple/vllm/, the file URL
with its sha256; releases.txt), each in DIR.

Prints, per release: where the list is (vllm/config.py rocm_supported_quantization / rocm_not_supported_quantization,
or vllm/platforms/rocm.py RocmPlatform.supported_quantization, with the line), the methods runlocal plans that it
accepts, what changed from the release before, and the body of RocmPlatform.supports_fp8.

Usage: python measurements/vllm_rocm/read_rocm.py DIR > lists.txt
"""

import re
import sys
import tarfile
from pathlib import Path

METHODS = ("gptq", "fp8", "awq", "compressed-tensors", "bitsandbytes", "modelopt_fp4")
LIST = re.compile(r"(rocm_supported_quantization|rocm_not_supported_quantization|supported_quantization)"
                  r"\s*(?::\s*list\[str\])?\s*=\s*\[(.*?)\]", re.S)


def read(tar: Path) -> tuple[str, list[str], str]:
    with tarfile.open(tar) as t:
        names = {m.name.split("/", 1)[1]: m for m in t.getmembers() if "/" in m.name}
        fp8 = ""
        for path in ("vllm/platforms/rocm.py", "vllm/config.py"):
            if path not in names:
                continue
            text = t.extractfile(names[path]).read().decode()      # type: ignore[union-attr]
            if path.endswith("rocm.py") and (m := re.search(r"def supports_fp8\(cls\) -> bool:\n(.*?)\n\n", text, re.S)):
                fp8 = " ".join(m.group(1).split())
            for m in LIST.finditer(text):
                if m.group(1).startswith("rocm_") if path.endswith("config.py") else m.group(1) == "supported_quantization":
                    line = text[:m.start()].count("\n") + 1
                    return f"{path}:{line} {m.group(1)}", re.findall(r'"([^"]+)"', m.group(2)), fp8
    return "-", [], ""


def main(folder: str) -> None:
    tars = sorted(Path(folder).glob("vllm-*.tar.gz"),
                  key=lambda p: tuple(int(x) for x in p.name[5:-7].split(".")))
    before: list[str] = []
    for tar in tars:
        where, names, fp8 = read(tar)
        deny = "not_supported" in where
        ok = [m for m in METHODS if (m not in names) if deny] if deny else [m for m in METHODS if m in names]
        print(f"{tar.name[5:-7]:8} {where:62} accepts {','.join(ok) or '-':50} "
              f"+{','.join(sorted(set(names) - set(before)))} -{','.join(sorted(set(before) - set(names)))}"
              + (f" | supports_fp8: {fp8}" if fp8 else ""))
        before = names


if __name__ == "__main__":
    main(sys.argv[1])

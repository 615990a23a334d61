"""Which model classes declare `_supports_sdpa = True`, by transformers release (runtimes/transformers_versions.py
SDPA_BY_MODEL_TYPE). Reads the wheels in a folder (pip download transformers==X --no-deps -d DIR; sha256 in
wheels.txt) without installing them and prints, per model_type given, S (declared True), e (not declared, or False:
from_pretrained falls back to eager) or - (no such class in that release).

Usage: python measurements/transformers_versions/read_sdpa.py DIR llama mistral gemma2 gpt_oss …
"""

import re
import sys
import zipfile
from pathlib import Path

TRUE = re.compile(r"^\s+_supports_sdpa\s*(?::\s*bool)?\s*=\s*True", re.M)


def main(folder: str, types: list[str]) -> None:
    wheels = sorted(Path(folder).glob("transformers-*-py3-none-any.whl"),
                    key=lambda w: tuple(int(x) for x in w.name.split("-")[1].split(".")))
    print(" " * 18 + " ".join(w.name.split("-")[1].ljust(7) for w in wheels))
    for t in types:
        row = []
        for w in wheels:
            with zipfile.ZipFile(w) as z:
                name = f"transformers/models/{t}/modeling_{t}.py"
                row.append("-" if name not in z.namelist() else "S" if TRUE.search(z.read(name).decode()) else "e")
        print(t.ljust(18) + " ".join(c.ljust(7) for c in row))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

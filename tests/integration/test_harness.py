"""The test and benchmark harness imports the evidence like any module: nothing edits sys.path or loads a
script by its file path, and collecting the log tests leaves measurements/ off sys.path, so a folder there
(measurements/transformers/) can never stand in for a package (`importorskip("transformers")` found it once
and 79 catalog tests failed instead of skipping)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
while not (ROOT / "pyproject.toml").is_file():      # the same after this file moves into tests/<kind>/
    ROOT = ROOT.parent
PATH_EDIT = re.compile(r"sys\.path\.(insert|append)|spec_from_file_location")
# Each entry says why it may: the payload a test needs importable, put back after
ALLOWED = {"test_snapshot.py": "a malicious pickle's module made importable for the refusal test, then removed"}


def test_no_sys_path_edits_in_tests_or_benchmarks():
    found = []
    for path in sorted([*ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/*.py")]):
        if path.name in ALLOWED or path.resolve() == Path(__file__).resolve():
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PATH_EDIT.search(line):
                found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "import the module instead (runlocal.evidence, runlocal.testing):\n" + "\n".join(found)


def test_collecting_the_log_tests_leaves_measurements_off_sys_path():
    log_tests = [str(p) for name in ("test_runtime_sglang_logs.py", "test_runtime_vllm.py", "test_public_logs.py",
                                     "test_llamacpp_accuracy.py", "test_diagnose_signals.py")
                 for p in ROOT.glob(f"tests/**/{name}")]
    assert len(log_tests) == 5
    script = (
        "import importlib.util, json, sys, pytest\n"
        f"rc = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', *{log_tests!r}])\n"
        "spec = importlib.util.find_spec('transformers')\n"
        "print(json.dumps({'rc': int(rc), 'path': sys.path, 'transformers': spec and spec.origin,"
        " 'locations': spec and list(spec.submodule_search_locations or [])}))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["rc"] == 0, out.stdout[-2000:]
    measurements = str(ROOT / "measurements")
    assert not [p for p in seen["path"] if p.startswith(measurements)]
    for place in [seen["transformers"], *(seen["locations"] or [])]:
        assert not str(place).startswith(measurements), place

"""The Methodology page's accuracy tables are what the benchmarks print today: each benchmark is run here as a
user runs it (`python benchmarks/….py`) and its output compared with the rendered page; and the tables are
generated (benchmarks/site_tables.py's saved output), not typed into the template. The list of benchmarks and the block
kept of each come from runlocal.web.accuracy (shared with the generator); every figure compared comes from running
the benchmark here."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from runlocal.web.accuracy import BENCHMARKS, kept

pytest.importorskip("jinja2")

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "src" / "runlocal" / "web" / "templates" / "methodology.html"
SAVED = ROOT / "src" / "runlocal" / "web" / "data" / "accuracy.json"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from runlocal.testing.browser import served_app

    return TestClient(served_app(store_url=f"sqlite:///{tmp_path_factory.mktemp('db') / 'b.sqlite3'}"),
                      base_url="http://127.0.0.1")      # as `runlocal serve` builds it: Host check on


def page_tables(page: str) -> list[dict[str, str]]:
    """The page's tables as a reader sees them: heading, the command shown, the text of the block."""
    found = re.findall(r'<h3>(.*?)</h3>\s*<p class="hint"><code>(.*?)</code></p>\s*<pre[^>]*><code>(.*?)</code></pre>',
                       page, re.S)
    return [{"title": html.unescape(t), "command": html.unescape(c), "text": html.unescape(x)} for t, c, x in found]


@pytest.mark.parametrize("title, script, first, last", BENCHMARKS,
                         ids=[b[1].split("/")[-1] for b in BENCHMARKS])
def test_methodology_table_is_what_the_benchmark_prints_now(client, title, script, first, last):
    proc = subprocess.run([sys.executable, str(ROOT / script)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = kept(proc.stdout, first, last)
    assert len(printed.splitlines()) >= 3
    shown = {t["title"]: t for t in page_tables(client.get("/methodology").text)}
    assert shown[title]["command"] == f"python {script}"
    assert shown[title]["text"] == printed, (
        f"the page's table differs from what {script} prints now: rerun python benchmarks/site_tables.py")
    assert all(line in proc.stdout for line in printed.splitlines())   # a block of the output, in order, unedited


def test_methodology_tables_are_generated_not_pasted(client, monkeypatch):
    """Every table on the page is the saved output of the generator, none of it is in the template, and the
    page follows the saved output when it changes."""
    saved = json.loads(SAVED.read_text(encoding="utf-8"))
    assert saved["generated_by"] == "python benchmarks/site_tables.py"
    page = client.get("/methodology").text
    assert page_tables(page) == saved["tables"]
    assert [t["title"] for t in saved["tables"]] == [b[0] for b in BENCHMARKS]
    template = TEMPLATE.read_text(encoding="utf-8")
    for table in saved["tables"]:
        for line in table["text"].splitlines():
            if re.search(r"\d", line):
                assert line.strip() not in template
    assert not re.search(r"\d+\.\d+\s*%", template), "a percentage typed into the template"

    from runlocal.web import accuracy

    marker = {"generated_by": "python benchmarks/site_tables.py", "generated_at": "2000-01-01",
              "tables": [{"title": "A table", "command": "python benchmarks/x.py", "text": "median 12.345% <b>"}]}
    monkeypatch.setattr(accuracy, "saved_tables", lambda: marker)
    assert page_tables(client.get("/methodology").text) == marker["tables"]

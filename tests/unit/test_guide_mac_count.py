"""The Mac guide counts and shows every Mac that runs a model, priced or not (review21 #3: "1 configurations run it"
for qwen3-32b while 29 Macs do, and a caption calling a Mac's price "GPU only"). The count is checked against
`check` run on each Apple catalog device in turn — the planner's own verdict, not best's ranking."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("jinja2")


def macs_that_run(model: str) -> set[str]:
    from runlocal.check import check
    from runlocal.hardware.catalog import load_devices
    from runlocal.request import CheckRequest

    out = set()
    for d in load_devices():
        if d.kind == "apple":
            plan, _ = check(CheckRequest(model=model, gpu=d.id, runtime="mlx", ctx=8192, use_measurements=False),
                            with_fixes=False, with_concurrency=False)
            if plan.verdict in ("fits", "tight"):
                out.add(d.id)
    return out


def test_the_mac_guide_counts_and_lists_the_unpriced_macs(tmp_path):
    from fastapi.testclient import TestClient

    from runlocal.testing.browser import served_app

    client = TestClient(served_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="x"),
                        base_url="http://127.0.0.1")
    html = client.get("/guides/best-mac").text
    block = html.split("qwen3-32b at 8,192 tokens", 1)[1].split("Full ranking", 1)[0]
    runs = macs_that_run("qwen3-32b")
    count = int(re.search(r"mlx; (\d+) configurations? runs? it", block).group(1))
    assert count == len(runs) > 1
    linked = set(re.findall(r'href="/hardware/([^"]+)"', block))
    assert linked <= runs and "m3-ultra-96gb" in linked      # the fastest Mac is shown (priced since review21)
    more = re.search(r"and (\d+) more", block)
    assert len(linked) + (int(more.group(1)) if more else 0) == len(runs)
    assert "GPU only" not in html.split("</h1>", 1)[1].split("</p>", 1)[0]
    assert "the whole computer" in html

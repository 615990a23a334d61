"""The RAM nobody stated is drawn as assumed (review18 finding 4): a plan settled at the RAM it needs ("runs, tight, if
RAM ≥ 76 GiB; at 32 GiB it does not fit") shows the host at the assumed 32 GiB, over-full, in the table, the JSON and
the header — not "75.2 GiB of 76 GiB". By hand: Llama-3.1-70B's KV is 2 × 8 KV heads × 128 × 2 B = 4,096 B per
layer per token; at 131,072 tokens that is 512 MiB a layer, and with 76 of the 80 layers in system memory (--fit's
"76 of 81 layers", the output layer counted) 38 GiB of KV sits in RAM — the host's total passes 32 GiB on its KV alone."""

from __future__ import annotations

import io

from rich.console import Console

from runlocal.check import CheckRequest, check
from runlocal.render.text import render_plan

GiB = 1 << 30
KV_PER_LAYER = 2 * 8 * 128 * 2 * 131072


def _ram(plan):
    return next(d for d in plan.allocation.devices if d.kind == "cpu")


def test_the_assumed_ram_is_the_capacity_shown():
    plan, notes = check(CheckRequest(model="llama-3.1-70b", gpu="rtx-4060", ctx=131072, use_measurements=False))
    ram = _ram(plan)
    assert ram.kv_cache == 76 * KV_PER_LAYER == 38 * GiB
    assert ram.capacity == 32 * GiB < ram.total                    # over-full, as the condition says
    need = -(-ram.total // GiB)
    assert plan.verdict == "tight" and any(f"if RAM ≥ {need} GiB; at 32 GiB it does not fit" in c
                                           for c in plan.conditions)
    assert next(d for d in plan.to_dict()["memory"]["devices"] if d["kind"] == "cpu")["capacity"] == 32 * GiB
    out = io.StringIO()
    render_plan(plan, Console(file=out, width=200), notes=notes)
    text = out.getvalue()
    assert f"▲ tight if RAM ≥ {need} GiB" in text.splitlines()[0]
    assert "over" in text and any("RAM: assumed 32 GiB" in n for n in notes)


def test_stated_ram_and_a_plan_that_fits_in_the_assumed_ram_are_unchanged():
    stated, _ = check(CheckRequest(model="llama-3.1-70b", gpu="rtx-4060", ctx=131072, ram="96G", use_measurements=False))
    assert _ram(stated).capacity == 96 * GiB and stated.verdict == "tight"
    small, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4060", ctx=32768, use_measurements=False))
    assert _ram(small).capacity == 32 * GiB and _ram(small).total <= 32 * GiB


def test_the_site_draws_the_assumed_ram_over_full(tmp_path):
    from fastapi.testclient import TestClient

    from runlocal.testing.browser import served_app

    app = served_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="x")
    html = TestClient(app, base_url="http://127.0.0.1").get(
        "/", params={"model": "llama-3.1-70b", "gpu": "rtx-4060", "ctx": "131072"}).text
    assert "of 32 GiB — over by" in html and "of 76 GiB" not in html


def test_the_site_verdict_badge_carries_the_clis_ram_condition(tmp_path):
    """fixes18b's noticed-and-left: the CLI's verdict line reads "▲ tight if RAM ≥ N GiB" (N the whole GiB the host's
    share needs: 38 GiB of KV alone in RAM, by hand above, so N > 38), the site's badge read "Tight" alone. Now the
    badge ends with the same words and the same N; with the RAM stated, neither carries it."""
    import re

    from fastapi.testclient import TestClient

    from runlocal.testing.browser import served_app

    plan, _ = check(CheckRequest(model="llama-3.1-70b", gpu="rtx-4060", ctx=131072, use_measurements=False))
    need = -(-_ram(plan).total // GiB)
    assert need > 38
    app = served_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="x")
    client = TestClient(app, base_url="http://127.0.0.1")
    html = client.get("/", params={"model": "llama-3.1-70b", "gpu": "rtx-4060", "ctx": "131072"}).text
    badge = re.search(r'<span class="badge (\w+)">([^<]*)</span>', html)
    assert badge and badge.groups() == ("tight", f"Tight if RAM ≥ {need} GiB")
    stated = client.get("/", params={"model": "llama-3.1-70b", "gpu": "rtx-4060", "ctx": "131072", "ram": "96G"}).text
    badge = re.search(r'<span class="badge (\w+)">([^<]*)</span>', stated)
    assert badge and badge.groups() == ("tight", "Tight")


def test_a_cpu_only_plan_says_nothing_is_kept_for_the_os():
    """review20 §13: a 16 GB CPU-only machine was told 91,904 tokens start with 0 GiB left. No runtime reserves RAM for
    the OS on a CPU-only run, by their sources: llama.cpp's llama_params_fit_impl returns with "no devices with
    dedicated memory found" before any margin; Ollama's llm/server.go compares the model's RAM with
    "available := FreeMemory + FreeSwap" (what the OS holds is already not free). So the plan says so, and says
    which --ram to give, whether the RAM is given, assumed or a named memory system's."""
    from runlocal.hardware.targets import targets_from_options

    for gpu, ram, gib in (("cpu", "16G", 16), ("none", None, 32), ("ddr4-3200", None, 32)):
        _, notes = targets_from_options(gpu, None, ram)
        said = [n for n in notes if "nothing kept for the OS" in n]
        assert len(said) == 1 and said[0].startswith(f"RAM: all {gib} GiB planned as usable"), (gpu, notes)
        assert "set --ram to the RAM free" in said[0]
    assert not any("nothing kept" in n for n in targets_from_options("rtx-4090", None, "16G")[1])   # GPU plans: not said

"""The shipped table of ggml compute simulations (runtimes/compute_table.py): a hit is the simulation's own answer,
anything else is a miss, and the files are what the generator writes today."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import textwrap
from dataclasses import replace
from inspect import signature
from pathlib import Path

import pytest

from runlocal.model import catalog
from runlocal.quant.gguf_ftypes import SUPPORTED_FTYPES
from runlocal.quant.gguf_mix import gguf_view
from runlocal.runtimes import compute_table, ggml, llamacpp_compute
from runlocal.runtimes.compute_table import args_from_key, lookup, model_digest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
SAMPLED = ("gemma-3-1b", "llama-3.1-8b", "qwen3-30b-a3b", "granite-4.0-h-tiny", "deepseek-v2-lite", "gpt-oss-20b")


def _doc(alias: str) -> dict:
    return json.loads(compute_table.read_text(compute_table.TABLE_DIR / f"{alias}.json.gz"))


def _specs(alias: str) -> dict:
    """digest → spec for the specs a plan of ``alias`` simulates: its GGUF view at each file type, whole or
    shortened to the layers its compute buffer needs (llamacpp_compute.graph_prefix)."""
    out = {}
    for ftype in SUPPORTED_FTYPES:
        view = gguf_view(catalog.lookup(alias), ftype)
        if view is not None:
            for spec in (view, llamacpp_compute.graph_prefix_now(view)):
                out[model_digest(spec)] = spec
    return out


def _entries(alias: str, n: int, seed: int = 0) -> list[tuple[object, tuple, list]]:
    """n stored (spec, args, answer) of ``alias``'s file, drawn at random."""
    specs = _specs(alias)
    names = list(signature(llamacpp_compute.simulated_compute).parameters)[1:]
    rows = [(specs[d], args_from_key(k, names), v) for d, entries in _doc(alias)["models"].items() if d in specs
            for k, v in entries.items()]
    assert len(rows) >= n, f"{alias}: {len(rows)} entries whose spec the test can rebuild"
    return random.Random(seed).sample(rows, n)


def test_every_shipped_file_was_made_by_this_code():
    """Every catalog model whose llama.cpp graph is simulated has a file, made by the simulation code of this tree
    (else every question about it simulates again: still exact, slow)."""
    files = sorted(compute_table.TABLE_DIR.glob("*.json.gz"))
    stale = [f.name for f in files if json.loads(compute_table.read_text(f))["code"] != compute_table.code_digest()]
    assert not stale, f"{len(stale)} stale files: run `python -m runlocal.compute_table_build` ({stale[:3]})"
    simulated = set()
    for alias in catalog.aliases():
        view = gguf_view(catalog.lookup(alias), "Q4_K_M")
        if view is not None and ggml.supported(view):
            simulated.add(alias)
    assert {f.name.removesuffix(".json.gz") for f in files} == simulated


@pytest.mark.parametrize("alias", SAMPLED)
def test_a_stored_answer_is_the_simulation_from_scratch(alias, monkeypatch):
    """Entries drawn from the file, simulated again with neither the table nor the context shapes (the plain
    ggml-alloc walk every other path is tested against): equal, and the table answers them."""
    monkeypatch.setattr(llamacpp_compute, "CONTEXT_SHAPES", False)
    for spec, args, answer in _entries(alias, 3):
        gpu, host = llamacpp_compute.simulate_now(spec, *args)
        assert [list(gpu), host] == answer, (alias, args)
        assert lookup(spec, args) == (gpu, host)


def _changed(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return "q8_0" if value != "q8_0" else "f16"
    if value is None:
        return 256
    if isinstance(value, tuple):
        return value + (value[-1],) if value else (("blk\\.0\\.ffn_up_exps", None),)
    raise AssertionError(value)


def test_any_other_argument_or_spec_misses():
    spec, args, answer = _entries("qwen3-30b-a3b", 1, seed=3)[0]
    assert lookup(spec, args) == (tuple(answer[0]), answer[1])
    assert lookup(replace(spec), args) is not None, "an equal spec (another object) is the same question"
    for i in range(len(args)):
        other = args[:i] + (_changed(args[i]),) + args[i + 1:]
        hit = lookup(spec, other)
        # another question the table holds is answered with its own simulation, never with this one's
        assert hit is None or hit == llamacpp_compute.simulate_now(spec, *other), f"argument {i}: {args[i]!r}"
    t = spec.tensors[-1]
    for other_spec in (replace(spec, vocab_size=spec.vocab_size + 1), replace(spec, n_experts_active=1),
                       replace(spec, tensors=spec.tensors[:-1] + (replace(t, dtype="q8_0"),))):
        assert lookup(other_spec, args) is None


def test_a_file_from_other_code_or_damaged_is_a_miss(tmp_path, monkeypatch):
    spec, args, _ = _entries("gemma-3-1b", 1)[0]
    doc = _doc("gemma-3-1b")
    monkeypatch.setattr(compute_table, "TABLE_DIR", tmp_path)
    for code, hit in (("0" * 64, False), (doc["code"], True)):
        (tmp_path / "gemma-3-1b.json.gz").write_bytes(gzip.compress(json.dumps({**doc, "code": code}).encode()))
        compute_table._file.cache_clear()
        compute_table._ENTRIES.clear()
        assert (lookup(spec, args) is not None) == hit
    for damaged in (b"not gzip", gzip.compress(b"{not json"), gzip.compress(b"[1, 2]")):
        (tmp_path / "gemma-3-1b.json.gz").write_bytes(damaged)
        compute_table._file.cache_clear()
        compute_table._ENTRIES.clear()
        assert lookup(spec, args) is None, damaged
    monkeypatch.setenv("RUNLOCAL_COMPUTE_TABLE", "0")
    compute_table._ENTRIES.clear()
    assert lookup(spec, args) is None
    compute_table._file.cache_clear()
    compute_table._ENTRIES.clear()


def test_each_spec_s_lines_read_as_the_whole_file_parsed():
    """A spec's entries are read from its own lines (compute_table._section, each entry found by bisecting them):
    for every shipped file and every model digest in it, every entry json.loads gives from the whole text, the same
    count, and none for a key the spec lacks (another spec's, one between two of its own, one before or after all);
    a digest the file lacks is none."""
    for path in sorted(compute_table.TABLE_DIR.glob("*.json.gz")):
        data = compute_table.read_bytes(path)
        whole = json.loads(data)
        head = compute_table._written_head(data)
        assert head == {k: v for k, v in whole.items() if k != "models"}, path.name
        every_key = {k for entries in whole["models"].values() for k in entries}
        for digest, entries in whole["models"].items():
            section = compute_table._section(data, digest)
            assert section is not None and len(section) == len(entries), (path.name, digest)
            assert all(section.get(k) == v for k, v in entries.items()), (path.name, digest)
            absent = (every_key - entries.keys()) | {k + " " for k in entries} | {"", "[", "~"}
            assert all(section.get(k) is None for k in absent), (path.name, digest)
        assert compute_table._section(data, "0" * 64) is None


def test_the_code_digest_covers_the_simulations_imports():
    """Every runlocal module a simulation imports (at import and while it runs: CPU, one GPU, two GPUs, a tensor
    override, one context and a curve's many) is among the files the code digest reads."""
    code = textwrap.dedent("""
        import json, sys
        import runlocal.runtimes.llamacpp_compute as lc, runlocal.runtimes.ggml
        at_import = {m for m in sys.modules if m.startswith("runlocal")}
        from runlocal.model import catalog
        from runlocal.quant.gguf_mix import gguf_view
        specs = [gguf_view(catalog.lookup(a), "Q4_K_M") for a in ("gemma-3-1b", "granite-4.0-h-tiny")]
        before = set(sys.modules)
        for spec in specs:
            lc.simulate_now(spec, None, 512, 4096, True, 1, 1, "f16", "f16", None)
            lc.simulate_now(spec, 5, 512, 4096, True, 1, 1, "q8_0", "q8_0", None)
            # two GPUs (pipeline parallelism), and a tensor override to the host
            where = tuple([0] * (spec.n_layers // 2) + [1] * (spec.n_layers - spec.n_layers // 2 + 1))
            lc.simulate_now(spec, None, 512, 4096, True, 1, 1, "f16", "f16", None, where, 2)
            lc.simulate_now(spec, None, 512, 4096, False, 1, 1, "f16", "f16", None, (0,) * (spec.n_layers + 1), 1,
                            (("blk\\.1\\.ffn_.*", None),))
            with lc.many_contexts():
                for n_kv in (4096, 8192, 16384):
                    lc.simulate_now(spec, -1, 512, n_kv, True, 4, 1, "f16", "f16", n_kv)
        print(json.dumps({m: sys.modules[m].__file__ for m in at_import | (set(sys.modules) - before)
                          if m.startswith("runlocal")}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=ENV)
    imported = {Path(f).resolve() for f in json.loads(out.stdout.splitlines()[-1]).values()}
    digested = {p.resolve() for p in compute_table.code_files()}
    assert len(imported) > 20
    assert imported <= digested, sorted(str(p) for p in imported - digested)


def _rebuilt(alias: str, out: Path) -> str:
    """``alias``'s file as the generator writes it now (a fresh process, as for the shipped table)."""
    subprocess.run([sys.executable, "-m", "runlocal.compute_table_build", "--model", alias, "--out", str(out)],
                   check=True, capture_output=True, env=ENV)
    return compute_table.read_text(out / f"{alias}.json.gz")


def test_a_rebuilt_file_equals_the_shipped_one(tmp_path):
    """The generator run again for one small model writes its shipped file, text for text (gzip's bytes may
    differ between zlib builds)."""
    alias = "smollm2-135m"
    assert _rebuilt(alias, tmp_path) == compute_table.read_text(compute_table.TABLE_DIR / f"{alias}.json.gz")


@pytest.mark.slow
@pytest.mark.parametrize("alias", ("gemma-3-1b", "granite-4.0-h-tiny", "deepseek-v2-lite", "qwen3-30b-a3b"))
def test_deeper_models_rebuild_the_same(alias, tmp_path):
    assert _rebuilt(alias, tmp_path) == compute_table.read_text(compute_table.TABLE_DIR / f"{alias}.json.gz")


@pytest.mark.parametrize("argv", (["gemma-3-27b", "--runtime", "ollama", "--gpu", "rtx-3060", "--ctx", "32768"],
                                  ["qwen3-30b-a3b", "--gpu", "rtx-4080"]))
def test_a_users_check_reads_the_same_with_the_table_off(argv):
    """`runlocal check … --json` as typed, on a row the table holds and on a GPU it was not built for (partly
    answered): the same answer with RUNLOCAL_COMPUTE_TABLE=0."""
    def answer(table: str) -> dict:
        out = subprocess.run([sys.executable, "-m", "runlocal", "check", *argv, "--json"], capture_output=True,
                             text=True, check=True, env={**ENV, "RUNLOCAL_COMPUTE_TABLE": table, "HF_HUB_OFFLINE": "1"})
        return json.loads(out.stdout)
    on = answer("1")
    assert on["verdict"] and on == answer("0")

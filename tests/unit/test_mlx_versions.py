"""`--runtime mlx==X` (issue #18 point 3): the mlx-lm release's rules where they changed, read in its PyPI wheel
(runtimes/mlx_versions.py, measurements/mlx_versions/wheels.txt). Expected figures are worked by hand from the model's
config (Llama-3.1-8B: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 131,072 B a token) and KVCache's 256-token steps
(0.16.0 models/base.py:27 `self.step = 256`, 0.32.0 models/cache.py:252)."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.errors import InputError
from runlocal.runtimes import get_runtime, runtime_rules
from runlocal.runtimes.mlx_versions import mlx_rules

PER_TOKEN = 32 * 8 * 128 * 2 * 2


def _rules(text):
    return mlx_rules(tuple(int(x) for x in text.split(".")), text)


@pytest.mark.parametrize("release, kv_bits, max_kv, wired, entries, flag", [
    ("0.16.0", False, False, False, 1, False),   # 0.16.0 generate.py: no --max-kv-size, no --kv-bits
    ("0.17.0", False, True, False, 1, False),    # 0.17.0 generate.py:81 "--max-kv-size"
    ("0.19.0", False, True, False, 1, False),    # 0.19.0: no "kv-bits", no set_wired_limit in mlx_lm
    ("0.20.1", True, True, True, 1, False),      # 0.20.1 generate.py:114 "--kv-bits"; utils.py:75 wired_limit
    ("0.28.3", True, True, True, 1, False),      # 0.28.3 server.py:149 PromptCache (the last prompt's)
    ("0.28.4", True, True, True, 10, False),     # 0.28.4 server.py:1433 LRUPromptCache()
    ("0.31.0", True, True, True, 10, True),      # 0.31.0 server.py:1972 "--prompt-cache-size"
])
def test_rules_by_release(release, kv_bits, max_kv, wired, entries, flag):
    r = _rules(release)
    assert (r.kv_bits, r.max_kv_size, r.wired, r.prompt_cache_entries, r.prompt_cache_flag) == (
        kv_bits, max_kv, wired, entries, flag)


def test_unread_release_and_range():
    r = _rules("0.20.0")
    assert r.release == (0, 19, 0) and not r.kv_bits and "0.20.0 not read" in r.note
    with pytest.raises(InputError, match=r"^runtime: mlx==0.15.3: mlx-lm releases read are 0.16.0 – 0.32.0"):
        _rules("0.15.3")


def _plan(runtime, ctx=100_000, **kw):
    return check(CheckRequest(model="llama-3.1-8b", runtime=runtime, gpu="m4-max-64gb", ctx=ctx,
                              use_measurements=False, **kw))[0]


def test_server_prompt_cache_by_release():
    cells = -(-100_000 // 256) * 256                          # 100,096
    one = cells * PER_TOKEN                                   # 13,119,782,912 B
    for runtime, kept in (("mlx==0.28.3", one), ("mlx==0.28.4", 10 * one), ("mlx", 10 * one)):
        step = next(s for s in _plan(runtime).steps if s.label == "server prompt cache")
        assert step.value == f"{kept:,} B", runtime


def test_kv_bits_refused_before_0_20_1():
    old = _plan("mlx==0.19.0", ctx=8192, cache_type_k="q8_0", cache_type_v="q8_0").allocation.refusal
    assert old is not None and "has no --kv-bits" in old
    assert _plan("mlx==0.20.1", ctx=8192, cache_type_k="q8_0", cache_type_v="q8_0").allocation.refusal is None


def test_the_plan_says_which_rules():
    version, words = runtime_rules(get_runtime("mlx==0.19.0"))
    assert version == "0.19.0" and "no wired limit" in words and "no --kv-bits" in words
    assert runtime_rules(get_runtime("mlx"))[1].startswith("mlx-lm 0.32.0")
    assumptions = _plan("mlx==0.19.0", ctx=8192).allocation.assumptions
    assert any("sets no wired limit" in a for a in assumptions)

"""Hostile model files through `runlocal check`: every case of the generated corpus (runlocal/testing/hostile_corpus.py)
must end in exit 2 with exactly one line on stderr, no traceback, within seconds and 300 MB; property-based
mutations of real configs and GGUF headers must either plan or fail with one RunlocalError line.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gguf import GGUFValueType as T
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runlocal.errors import RunlocalError
from runlocal.testing import hostile_corpus as corpus

SRC = Path(__file__).resolve().parents[2] / "src"
CASES = corpus.all_cases()
# (case, extra CLI options): the same files through other runtimes' planners
RUNTIMES = [("config-llama-num_key_value_heads-0", ["--runtime", "vllm"]),
            ("config-llama-num_key_value_heads-0", ["--runtime", "sglang"]),
            ("config-llama-max_position_embeddings-1", ["--runtime", "vllm"]),
            ("gguf-attention.head_count_kv-0", ["--runtime", "ollama"])]
MAX_CPU_S = 5.0            # "within a few seconds": CPU time of the child, immune to a busy machine
MAX_RSS_MB = 300.0


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    env.pop("RUNLOCAL_DEBUG", None)
    return env


# Every case runs in-process below; these also run through the CLI in a child process (exit code, stderr,
# peak RSS under an address-space limit): the cases the issue names and one of each kind. RUNLOCAL_HOSTILE_ALL=1
# (or benchmarks/hostile_files.py) runs the whole corpus that way.
THROUGH_CLI = [
    "gguf-block_count-2", "gguf-block_count-3", "gguf-block_count-4", "gguf-attention.head_count-0",
    "gguf-attention.head_count-1", "gguf-attention.head_count-3", "gguf-attention.head_count_kv-0",
    "gguf-attention.key_length-0", "gguf-context_length-2", "gguf-all-zero-dims", "gguf-full_attention_interval-0",
    "gguf-nested-600", "gguf-nested-wide", "gguf-tensor-count-1M", "gguf-tensor-dim-2^40", "gguf-split-1-of-0",
    "gguf-sparse-60MiB-strings", "gguf-sparse-16M-tokens", "gguf-tensor-name-newline", "gguf-key-newline",
    "gguf-tensors-past-eof", "config-llama-num_key_value_heads-0", "config-llama-num_key_value_heads-4",
    "config-llama-num_attention_heads-3", "config-llama-hidden_size-1", "config-llama-num_hidden_layers-0",
    "config-llama-max_position_embeddings-1", "config-llama-intermediate_size-0", "config-mistral-sliding-window--1",
    "config-qwen3-next-full-attention-interval-0", "config-nested-100k", "config-5000-digit-int", "config-5MB",
    "st-header-100MB-claimed", "st-header-100MB-sparse", "st-header-many-values", "st-index-1M-entries",
    "st-index-path-escape", "st-kv-heads-negative-with-shards",
]
SUBPROCESS_CASES = list(CASES) if os.environ.get("RUNLOCAL_HOSTILE_ALL") else THROUGH_CLI


class _Corpus(dict):
    """The corpus's files, each written when a test first asks for it: a test pays for its own case's file (the
    1.1M-entry index takes seconds to write), not for all 200 at once."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def __missing__(self, name: str) -> Path:
        self[name] = CASES[name](self.folder)
        return self[name]


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict[str, Path]:
    return _Corpus(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def outcomes(paths) -> dict[str, corpus.Outcome]:
    jobs = [(name, [str(paths[name])]) for name in SUBPROCESS_CASES]
    jobs += [(f"{name} {' '.join(opts)}", [str(paths[name]), *opts]) for name, opts in RUNTIMES]
    env = _env()
    with ThreadPoolExecutor(4) as pool:
        done = pool.map(lambda job: corpus.run_cli(job[0], ["check", *job[1], "--gpu", "rtx-4090"], env=env), jobs)
        return {o.name: o for o in done}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_file_is_one_error_line_in_process(paths, name):
    import time
    import tracemalloc

    from runlocal.check import CheckRequest, check

    path = paths[name]             # written before the clock and the allocation count start
    tracemalloc.start()
    start = time.process_time()
    try:
        with pytest.raises(RunlocalError) as err:
            check(CheckRequest(model=str(path), gpu="rtx-4090"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(err.value)
    assert message and "\n" not in message and len(message) < 1000
    assert time.process_time() - start < MAX_CPU_S
    assert peak < MAX_RSS_MB * 1e6, f"{peak / 1e6:.0f} MB allocated"


@pytest.mark.parametrize("name", SUBPROCESS_CASES + [f"{n} {' '.join(o)}" for n, o in RUNTIMES])
def test_hostile_file_through_the_cli(outcomes, name):
    o = outcomes[name]
    assert o.clean, f"rc={o.returncode} stderr={o.stderr[-2000:]!r} stdout={o.stdout[:300]!r}"
    assert o.cpu_s < MAX_CPU_S, f"{o.cpu_s:.1f} s of CPU"
    assert o.peak_rss_mb < MAX_RSS_MB, f"{o.peak_rss_mb:.0f} MB peak RSS"


@pytest.mark.parametrize("name", list(corpus.snapshot_cases()))
def test_hostile_snapshot_is_one_clean_error(tmp_path, name):
    path = corpus.snapshot_cases()[name](tmp_path)
    o = corpus.run_cli(name, ["snapshot", str(path)], env=_env())
    assert o.clean, f"rc={o.returncode} stderr={o.stderr[-2000:]!r}"
    assert o.cpu_s < MAX_CPU_S and o.peak_rss_mb < MAX_RSS_MB, (o.cpu_s, o.peak_rss_mb)
    if name == "snapshot-torch-save":
        assert "torch.save" in o.stderr and "_dump_snapshot" in o.stderr


def test_snapshot_of_shared_references_is_read_without_walking_them(tmp_path):
    o = corpus.run_cli("dag", ["snapshot", str(corpus.snapshot_dag(tmp_path)), "--json"], env=_env())
    assert o.returncode == 0, o.stderr
    assert o.cpu_s < MAX_CPU_S
    assert json.loads(o.stdout)["peak"]["allocated"] == 1


def test_llama_31_8b_with_negative_kv_heads_is_an_error_not_a_fit(outcomes):
    # the silently-wrong case: KV −32 GiB made the 8B model "fit"; now the key is named
    o = outcomes["config-llama-num_key_value_heads-0"]
    assert "num_key_value_heads is -8" in o.stderr and "fits" not in o.stdout


def test_the_unchanged_files_the_corpus_starts_from_plan(tmp_path):
    # the corpus changes one thing in a real header/config: the originals themselves are fine
    (tmp_path / "ok.gguf").write_bytes(corpus.gguf_bytes(corpus.llama_kv(), corpus.llama_tensors()))
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text(json.dumps(corpus.fixture("llama-3.1-8b")))
    for target in (tmp_path / "ok.gguf", tmp_path / "cfg"):
        o = corpus.run_cli("ok", ["check", str(target), "--gpu", "rtx-4090", "--json"], env=_env())
        assert o.returncode == 0, o.stderr
        assert json.loads(o.stdout)["verdict"]


# ------------------------------------------------------------------------------------------------
# property-based: mutate one field of a real config or GGUF header, plan in-process

_ANY_JSON = st.one_of(
    st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70), st.integers(-4, 300),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.lists(st.integers(-2, 100), max_size=5), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_CONFIG_KEYS = ["num_key_value_heads", "num_attention_heads", "hidden_size", "num_hidden_layers", "intermediate_size",
                "vocab_size", "max_position_embeddings", "head_dim", "sliding_window", "tie_word_embeddings",
                "rope_scaling", "model_type", "num_experts", "num_experts_per_tok", "full_attention_interval",
                "layer_types", "text_config", "architectures", "torch_dtype", "quantization_config"]
_BASES = ["llama-3.1-8b", "mistral-7b-v0.1", "qwen3-30b-a3b", "qwen3-next-80b-a3b", "gemma-2-2b", "deepseek-v2-lite"]


def _plan_or_clean_error(model: str, runtime: str) -> None:
    from runlocal.check import CheckRequest, check

    try:
        plan, _ = check(CheckRequest(model=model, runtime=runtime, gpu="rtx-4090", ctx=4096))
    except RunlocalError as e:
        assert "\n" not in str(e) and len(str(e)) < 1000
        return
    for device in plan.to_dict().get("devices", []):
        for value in device.values():
            assert not (isinstance(value, float) and math.isnan(value))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(_BASES), key=st.sampled_from(_CONFIG_KEYS), value=_ANY_JSON,
       runtime=st.sampled_from(["llama.cpp", "vllm"]))
def test_property_config_mutations_plan_or_fail_cleanly(tmp_path, base, key, value, runtime):
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    doc = corpus.fixture(base)
    doc[key] = value
    (folder / "config.json").write_text(json.dumps(doc))
    _plan_or_clean_error(str(folder), runtime)


_GGUF_KEYS = ["block_count", "embedding_length", "attention.head_count", "attention.head_count_kv",
              "attention.key_length", "context_length", "attention.sliding_window", "feed_forward_length",
              "expert_count", "expert_used_count", "attention.kv_lora_rank", "ssm.state_size", "ssm.inner_size"]
_GGUF_VALUES = st.one_of(
    st.tuples(st.just(T.UINT32), st.integers(0, (1 << 32) - 1)), st.tuples(st.just(T.INT32), st.integers(-(1 << 31), 300)),
    st.tuples(st.just(T.UINT64), st.integers(0, (1 << 64) - 1)), st.tuples(st.just(T.BOOL), st.booleans()),
    st.tuples(st.just(T.FLOAT32), st.floats(width=32)), st.tuples(st.just(T.STRING), st.text(max_size=6)),
    st.tuples(st.just(T.ARRAY), st.tuples(st.just(T.INT32), st.lists(st.integers(-3, 40), max_size=4))))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(_GGUF_KEYS), typed=st.one_of(st.none(), _GGUF_VALUES))
def test_property_gguf_mutations_plan_or_fail_cleanly(tmp_path, key, typed):
    vtype, value = typed if typed is not None else (None, None)
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "m.gguf"
    path.write_bytes(corpus.with_kv(key, vtype, value))
    _plan_or_clean_error(str(path), "llama.cpp")


if __name__ == "__main__":     # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


_SNAPSHOT_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(1 << 80), 1 << 80), st.floats(), st.text(max_size=6),
                             st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                                   max_size=2))


@settings(max_examples=80, deadline=None)
@given(field=st.sampled_from(["action", "addr", "size", "time_us", "frames", "filename", "line", "name", "device",
                              "blocks", "state", "segments", "device_traces"]),
       value=_SNAPSHOT_VALUES)
def test_property_snapshot_mutations_summarize_or_fail_cleanly(field, value):
    import pickle

    from runlocal.snapshot import loads, normalize, summarize

    frame = {"filename": "/site-packages/transformers/cache_utils.py", "line": 3, "name": "update"}
    alloc = {"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 1, "frames": [frame]}
    free = {"action": "free_completed", "addr": 4096, "size": 512, "stream": 0, "time_us": 2, "frames": [frame]}
    block = {"address": 8192, "size": 64, "requested_size": 64, "state": "active_allocated", "frames": [frame]}
    segment = {"device": 0, "address": 8192, "total_size": 1 << 20, "blocks": [block]}
    snap = {"segments": [segment], "device_traces": [[alloc, free]]}
    for holder in (frame, alloc, block, segment, snap):
        if field in holder:
            holder[field] = value
    try:
        doc = summarize(normalize(loads(pickle.dumps(snap))))
    except RunlocalError as e:
        assert "\n" not in str(e)
        return
    assert isinstance(doc["peak"]["allocated"], int) and isinstance(doc["peak"]["top_origins"], list)

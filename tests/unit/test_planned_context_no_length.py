"""The context a vLLM / SGLang plan passes when nothing is asked: the model's own (max_position_embeddings), and where
config.json states no length at all, the engine's own assumption — 2048 in both, read in their source:

vllm/config/model.py _get_and_verify_max_len (vllm-project/vllm 0052a5b8; vllm/config.py before the split):
    if derived_max_model_len == float("inf"):
        ...
        default_max_len = 2048
        logger.warning("... Assuming the model's maximum length is %d.", possible_keys, default_max_len)
python/sglang/srt/utils/hf_transformers_utils.py get_context_length (sgl-project/sglang 002fc100):
    for key in CONTEXT_LENGTH_KEYS: ... return int(rope_scaling_factor * val)
    return 2048
"""

from __future__ import annotations

import dataclasses

from runlocal.model import catalog
from runlocal.plan import estimate
from runlocal.runtimes.base import Settings, Target
from runlocal.runtimes.sglang import SGLang
from runlocal.runtimes.vllm import VLLM, budget_split
from runlocal.units import GiB

H100 = Target("NVIDIA H100 80GB HBM3", "gpu", 79 * GiB, total=80 * GiB)


def no_length():
    return dataclasses.replace(catalog.lookup("qwen3-8b"), max_position_embeddings=None)


def test_vllm_passes_its_own_2048_where_config_states_no_length():
    model = no_length()
    s = VLLM().defaults(model, Settings(runtime="vllm"), [H100])
    assert s.ctx == 2048
    assert "--max-model-len 2048" in VLLM().command(model, s)
    # the profile run's context is the same one: V0 without chunked prefill (max_model_len up to 32k) batches
    # max(max_model_len, 2048) tokens (vllm.py V0_MIN_BATCHED_TOKENS) — 2048 here, 4096 under an assumed 4096
    weights = estimate(model, None)
    assert budget_split(model, weights, Settings(runtime="vllm"), H100, "v0").batched_tokens == 2048
    assert VLLM().allocate(model, weights, Settings(runtime="vllm"), [H100]).settings.ctx == 2048


def test_sglang_passes_its_own_2048_where_config_states_no_length():
    model = no_length()
    s = SGLang().defaults(model, Settings(runtime="sglang"), [H100])
    assert s.ctx == 2048
    assert "--context-length 2048" in SGLang().command(model, s)


def test_an_asked_context_and_the_models_own_are_kept():
    model = catalog.lookup("qwen3-8b")
    assert model.max_position_embeddings == 40960        # Qwen/Qwen3-8B config.json
    assert VLLM().defaults(model, Settings(runtime="vllm"), [H100]).ctx == 40960
    assert VLLM().defaults(model, Settings(runtime="vllm", ctx=1), [H100]).ctx == 1
    assert SGLang().defaults(model, Settings(runtime="sglang"), [H100]).ctx == 40960
    assert SGLang().defaults(no_length(), Settings(runtime="sglang", ctx=8192), [H100]).ctx == 8192

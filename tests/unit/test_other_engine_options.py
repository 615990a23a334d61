"""An engine's own flag given for another engine is refused, not silently left out of the answer: a user who types
`--swap-space 8 --runtime ollama` must not read a plan that quietly planned without it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from asking import run_cli

from runlocal.check import OWN_SPELLING, CheckRequest, build_settings
from runlocal.errors import InputError
from runlocal.request import options
from runlocal.runtimes.registry import ENGINES

# a value other than the default for every engine-specific field (each valid for the engines that take it)
SAMPLE = {
    "backend": "vulkan", "batch": 1024, "ubatch": 256, "flash_attn": "off", "n_gpu_layers": 20, "n_cpu_moe": 4, "cpu_moe": True,
    "override_tensor": ("blk\\.1\\.ffn_.*=CPU",), "kv_unified": True, "swa_full": True, "no_mmap": True,
    "no_kv_offload": True, "no_host": True, "no_mmproj": True, "fit": "off", "tensor_split": "3,1", "gpu_memory_utilization": 0.8,
    "max_num_batched_tokens": 4096, "tp": 2, "pp": 2, "enforce_eager": True, "swap_space": 8.0, "dp": 2,
    "expert_parallel": True, "enable_lora": True, "max_loras": 2, "max_lora_rank": 32, "mem_fraction_static": 0.8,
    "max_new_tokens": 256, "attn_implementation": "eager", "device_map": "cuda", "cpu_kvcache_space": 8,
    "accelerate": "0.21.0",
}
# what every engine reads: the model, the hardware, the context, the weights' and the KV cache's types, the requests,
# the prompt the speed figures are for
COMMON = {"model", "runtime", "gpu", "vram", "ram", "ctx", "quant", "kv_cache", "cache_type_k", "cache_type_v",
          "parallel", "prompt_tokens"}


def test_every_option_is_common_or_some_engines_own():
    owned = {name for e in ENGINES for name in e.own_options}
    assert owned <= set(options()), owned - set(options())
    assert set(options()) == COMMON | owned and not COMMON & owned
    assert set(SAMPLE) == owned


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
def test_each_own_option_reaches_the_engine_and_no_other(engine):
    base = CheckRequest(model="qwen3-8b", runtime=engine.name)
    plain = build_settings(base)
    for name in SAMPLE:
        req = replace(base, **{name: SAMPLE[name]})
        if name in engine.own_options:
            if name == "swap_space":      # vLLM up to 0.17.1 only (PR #36216 removed it in 0.18.0)
                req = replace(req, runtime=f"{engine.name}==0.17.1")
            if name != "backend":         # the backend goes to the planner (check._planner), not into Settings
                assert build_settings(req) != plain, f"{engine.name} lists {name} but its settings do not change"
        elif (name, engine.name) in OWN_SPELLING:     # a counterpart named instead (test_mlx_max_tokens…)
            with pytest.raises(InputError, match=rf"^{options()[name].name}: an option of .*; {engine.name} has no "):
                build_settings(req)
        else:
            with pytest.raises(InputError, match=rf"^{options()[name].name}: an option of .*; {engine.name} has "
                                                 "no such setting$"):
                build_settings(req)


def test_mlx_max_tokens_is_named_where_max_new_tokens_is_refused():
    """mlx-lm's own flag is mlx_lm.generate --max-tokens (mlx_lm/generate.py setup_arg_parser: "Maximum number of
    tokens to generate", default DEFAULT_MAX_TOKENS = 100), and the new tokens it generates go into the one prompt
    cache generate_step fills with the prompt: the plan's --ctx is prompt + new tokens. Hand check of the example:
    3,000 prompt tokens + 1,000 new = 4,000."""
    r = run_cli("check", "qwen3-8b", "--gpu", "m2-max-32gb", "--runtime", "mlx", "--max-new-tokens", "100")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    err = r.stderr.strip()
    assert err.startswith("error: max-new-tokens: an option of transformers (--max-new-tokens); mlx has no ")
    assert "no such setting" not in err          # it has one: --max-tokens
    assert "mlx_lm.generate --max-tokens (100 by default)" in err and "--ctx as prompt + new tokens" in err
    assert f"{3000 + 1000}" in err.replace(",", "")
    # the --ctx it says to give plans: the same model at --ctx 4000 answers
    assert run_cli("check", "qwen3-8b", "--gpu", "m2-max-32gb", "--runtime", "mlx", "--ctx", "4000",
                   "--json").returncode == 0


def test_a_vllm_flag_for_ollama_is_refused_naming_who_takes_it():
    r = run_cli("check", "qwen3-8b", "--gpu", "rtx-4090", "--runtime", "ollama", "--swap-space", "8")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == "error: swap-space: an option of vllm (--swap-space); ollama has no such setting"


def test_ollama_num_batch_is_its_only_batch_flag():
    """Ollama's num_batch sets both -b and -ub of the llama-server it starts: -ub alone is not Ollama's."""
    r = run_cli("check", "qwen3-8b", "--gpu", "rtx-4090", "--runtime", "ollama", "--ubatch", "256")
    assert r.returncode == 2
    assert r.stderr.strip() == "error: ubatch: an option of llama.cpp (--ubatch); ollama has no such setting"
    assert run_cli("check", "qwen3-8b", "--gpu", "rtx-4090", "--runtime", "ollama", "--batch", "256",
                   "--json").returncode == 0


def test_one_tensor_parallel_rank_is_what_every_engine_runs():
    """--tp 1 says what llama.cpp does anyway; --tp 2 is a split it cannot make."""
    assert run_cli("check", "qwen3-8b", "--gpu", "rtx-4090", "--tp", "1", "--json").returncode == 0
    r = run_cli("check", "qwen3-8b", "--gpu", "2x4090", "--runtime", "transformers", "--tp", "2")
    assert r.returncode == 2
    assert r.stderr.strip() == "error: tp: an option of vllm and sglang (--tp); transformers has no such setting"

#!/usr/bin/env python3
"""Tiny zero-weight GGUFs of the MoE run's models, for CPU checks (the pip llama-cpp-python wheel): the same
architectures, expert counts, experts per token, key set and tensor list as runlocal.evidence.zero_gguf writes for the
full models, with small widths and vocabularies. deepseek-v2-lite keeps its 27 layers: llama.cpp's deepseek2 loader
tells the Lite layout (no q_lora_rank) by n_layer 26/27 (src/models/deepseek2.cpp ``is_lite``).

Usage: PYTHONPATH=src python measurements/speed/make_tiny_moe_gguf.py OUT_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

TINY = {
    "qwen3-30b-a3b": dict(hidden_size=256, moe_intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=64, vocab_size=8192),
    "gpt-oss-20b": dict(hidden_size=256, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, head_dim=64, vocab_size=8192),
    "deepseek-v2-lite": dict(hidden_size=256, intermediate_size=512, moe_intermediate_size=64, num_hidden_layers=27,
                             num_attention_heads=4, kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=32,
                             v_head_dim=32, vocab_size=8192),
    "llama-3.1-8b": dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=8192),
}


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    from runlocal.evidence import zero_gguf
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for model, smaller in TINY.items():
        zero_gguf.MODELS[model] = dict(zero_gguf.MODELS[model], **smaller)   # this process only
        info = zero_gguf.write_model(model, out, "q4_0")
        print(f"{info['path']}: {info['file_bytes'] / 2**20:.1f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

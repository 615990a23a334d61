"""A Mamba-2 layer's conv kernel as a checkpoint has it, (C, 1, K), and as its GGUF has it, (C, K): llama.cpp reads
the channels as the GGUF kernel's ne[1] (ggml.c ggml_ssm_conv; src/models/graph-context-mamba.cpp build_mamba2_layer
conv_dim). A user asking "what compute buffer will llama.cpp reserve for granite-4.0-h-tiny at 4K / 64K on my 4090?"
gets the same answer from the catalog (config.json) as from the converter's GGUF of the same model, whose path the
real llama.cpp loads confirm (measurements/llamacpp). Before, the catalog's view read its channels as 1 and planned
GPU compute 12 MiB low (49.41 against 61.41 MiB at 4K)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runlocal.check import CheckRequest, check
from runlocal.evidence import qwen35_runs

pytest.importorskip("gguf", reason="gguf-py is not installed")


def compute_by_device(model: str, ctx: int) -> list[tuple[str, int]]:
    plan, _ = check(CheckRequest(model=model, quant=None if model.endswith(".gguf") else "F16", gpu="rtx-4090",
                                 ctx=ctx, n_gpu_layers=-2, use_measurements=False))
    return [(d.kind, d.compute) for d in plan.allocation.devices]


@pytest.mark.parametrize("alias", ["granite-4.0-h-tiny", "nemotron-3-nano-30b-a3b", "falcon-h1-0.5b"])
def test_catalog_and_gguf_plan_the_same_compute_buffers(alias, tmp_path: Path):
    gguf = str(qwen35_runs.write_gguf(alias, tmp_path, False))       # a sparse file: no disk
    for ctx in (4096, 65536):
        assert compute_by_device(alias, ctx) == compute_by_device(gguf, ctx)


def test_a_nemotron_h_ffn_layer_read_from_its_gguf_holds_no_state(tmp_path: Path):
    # llama.cpp (src/llama-model.cpp, LLM_ARCH_NEMOTRON_H / _MOE): recurrent_layer_arr[i] = n_head_kv(i) == 0 &&
    # n_ff(i) == 0 — the converter's per-layer feed_forward_length is > 0 on the MoE layers, so they hold no SSM state
    # (before, the GGUF reader gave all 23 of Nemotron 3 Nano's MoE layers a state, and its graph failed on them)
    import gguf

    from runlocal.model.resolve import resolve_model

    path = qwen35_runs.write_gguf("nemotron-3-nano-30b-a3b", tmp_path, False)
    fields = gguf.GGUFReader(str(path)).fields
    ff = [int(fields["nemotron_h_moe.feed_forward_length"].parts[i][0])
          for i in fields["nemotron_h_moe.feed_forward_length"].data]
    kv = [int(fields["nemotron_h_moe.attention.head_count_kv"].parts[i][0])
          for i in fields["nemotron_h_moe.attention.head_count_kv"].data]
    spec = resolve_model(str(path))
    assert [layer.recurrent is not None for layer in spec.layers] == [k == 0 and f == 0 for k, f in zip(kv, ff)]

"""--explain's weights step names the tensors an -ot rule moves in a dense model (speedram19, left): count, kinds,
blocks, bytes, device — as it names the routed experts --n-cpu-moe / an experts rule keeps on the host.

llama.cpp matches each rule with std::regex_search against the GGUF tensor name, the first matching rule wins, and
logs each match as "tensor blk.10.ffn_up.weight (… MiB q8_0) buffer type overridden to CPU"
(src/llama-model-loader.cpp). By hand for llama-3.1-8b (config.json: hidden 4,096, intermediate 14,336, vocab
128,256) at Q8_0 (34 B per 32 weights; the norms stay F32, 4 B each):
  blocks 10–19, each: ffn_gate and ffn_up 4,096 × 14,336, ffn_down 14,336 × 4,096, ffn_norm 4,096
  -ot 'blk\\.(1[0-9])\\.ffn_.*=CPU' matches 4 tensors × 10 blocks = 40 tensors (the ffn_norm too: "ffn_.*"), of
  10 × (3 × 58,720,256 × 34 / 32 + 4,096 × 4) = 1,871,872,000 B; the CPU buffer is those and tok_embd
  (128,256 × 4,096 × 34 / 32 = 558,170,112 B, kept in host memory whatever -ngl) = 2,430,042,112 B."""

from __future__ import annotations

from runlocal.check import CheckRequest, check

FFN = 4_096 * 14_336                                   # one of ffn_gate / ffn_up / ffn_down
Q8_0 = 34 / 32                                         # bytes per weight
BLOCK_FFN = int(3 * FFN * Q8_0) + 4_096 * 4            # the three matrices and ffn_norm (F32)
MOVED = 10 * BLOCK_FFN
TOK_EMBD = int(128_256 * 4_096 * Q8_0)


def _weights_step(*rules: str, model: str = "llama-3.1-8b", quant: str = "Q8_0"):
    plan = check(CheckRequest(model=model, gpu="rtx-4090", ram="64G", quant=quant, override_tensor=rules,
                              use_measurements=False))[0]
    return next(st for st in plan.steps if st.label == "weights" and "layers on GPU" in st.formula)


def test_a_dense_rule_names_its_tensors_and_their_bytes():
    assert MOVED == 1_871_872_000 and TOK_EMBD == 558_170_112
    step = _weights_step(r"blk\.(1[0-9])\.ffn_.*=CPU")
    assert (rf"-ot blk\.(1[0-9])\.ffn_.*=CPU: 40 tensors, ffn_down, ffn_gate, ffn_norm, ffn_up (blocks 10–19), "
            f"on CPU RAM: {MOVED:,} B") in step.formula
    assert f"CPU RAM {MOVED + TOK_EMBD:,} B" in step.value          # the buffer the rule and tok_embd make
    assert "all the CPU holds" not in step.formula                  # the embedding is no longer all of it


def test_the_first_matching_rule_takes_a_tensor():
    up = int(FFN * Q8_0)
    step = _weights_step(r"blk\.(1[0-9])\.ffn_up=CPU", r"blk\.(1[0-9])\.ffn_.*=CPU")
    assert f"ffn_up=CPU: 10 tensors, ffn_up (blocks 10–19), on CPU RAM: {10 * up:,} B" in step.formula
    assert (f"ffn_.*=CPU: 30 tensors, ffn_down, ffn_gate, ffn_norm (blocks 10–19), on CPU RAM: "
            f"{MOVED - 10 * up:,} B") in step.formula


def test_routed_experts_on_the_host_are_said_once_by_the_split():
    step = _weights_step(r"blk\.(1[0-9])\.ffn_.*_exps=CPU", model="qwen3-30b-a3b", quant="Q4_K_M")
    assert "the routed experts of 10 layers (blocks 10–19)" in step.formula and "-ot " not in step.formula


def _moe_weights_step(*rules: str):
    return _weights_step(*rules, model="mixtral-8x7b")


def test_a_partly_moved_layers_experts_are_named():
    """review20b finding 10: --fit's partial-layer rule (common/fit.cpp) moves one block's gate and down experts but not
    its up experts, so the split's "routed experts of N layers" (a block counts when its ffn_up_exps is on the host)
    does not cover them; the rule's words must. By hand for mixtral-8x7b (config.json: hidden 4,096, intermediate
    14,336, 8 experts) at Q8_0: std::regex_search of blk\\.19\\.ffn_(gate|gate_up|down).* finds ffn_gate_exps,
    ffn_down_exps (8 × 4,096 × 14,336 × 34 / 32 = 499,122,176 B each) and ffn_gate_inp (4,096 × 8 F32 = 131,072 B),
    not ffn_up_exps: 3 tensors, ≈ 998,375,424 B (the tensors' bytes are the quant mix's estimate: within 0.1 %)."""
    step = _moe_weights_step(r"blk\.19\.ffn_(gate|gate_up|down).*=CPU",
                             r"blk\.(2[0-9]|3[01])\.ffn_(up|down|gate)_exps=CPU")
    words = step.formula.split(r"-ot blk\.19\.ffn_(gate|gate_up|down).*=CPU: ")[1]
    assert words.startswith("3 tensors, ffn_down_exps, ffn_gate_exps, ffn_gate_inp (block 19), on CPU RAM: ")
    moved = int(words.split("on CPU RAM: ")[1].split(" B")[0].replace(",", ""))
    assert abs(moved - (2 * 8 * FFN * 34 // 32 + 4_096 * 8 * 4)) < 0.001 * moved
    # contrast: the whole experts of blocks 20–31 are the split's words, not the rule's
    assert "routed experts of 12 layers (blocks 20–31)" in step.formula
    assert r"-ot blk\.(2[0-9]|3[01])" not in step.formula


def test_whole_moved_experts_stay_the_splits_words():
    # contrast: the up experts of block 19 moved too, so block 19 joins the split's words and no rule's words remain
    step = _moe_weights_step(r"blk\.(19|2[0-9]|3[01])\.ffn_(up|down|gate)_exps=CPU")
    assert "routed experts of 13 layers (blocks 19–31)" in step.formula and "-ot " not in step.formula


def test_the_loaders_override_line_is_cited_only_where_a_rule_moves_tensors():
    """review20b finding 13: the weights step cited src/llama-model-loader.cpp's "buffer type overridden to" line for
    every llama.cpp plan. The loader prints it only for a tensor a buffer-type override matches: -ot's rules, and
    --n-cpu-moe / --cpu-moe, which common/arg.cpp adds as overrides of the experts' names — the public CUDA --cpu-moe
    logs (measurements, tests/accuracy/test_llamacpp_cpumoe_public.py) each show "overridden to CUDA_Host"."""
    line = "buffer type overridden to"
    assert line not in _weights_step().source                                    # no rule: no such log line
    assert line in _weights_step(r"blk\.(1[0-9])\.ffn_.*=CPU").source
    plan = check(CheckRequest(model="qwen3-30b-a3b", gpu="rtx-4090", ram="64G", n_cpu_moe=10,
                              use_measurements=False))[0]
    assert line in next(st for st in plan.steps if st.label == "weights" and "layers on GPU" in st.formula).source

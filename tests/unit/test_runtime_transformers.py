"""transformers planner: accelerate's device_map="auto" placement, bitsandbytes, DynamicCache, prefill peak."""

import pytest
from asking import run_cli

from runlocal.model.spec import AttentionSpec, LayerSpec, ModelSpec, TensorInfo
from runlocal.quant.formats import WeightEstimate, estimate_weights
from runlocal.runtimes.base import Settings, Target
from runlocal.runtimes.transformers import CUBLAS_WORKSPACE, CUDA_CONTEXT, Transformers

MiB, GiB = 1 << 20, 1 << 30


def toy(*, layers=4, hidden=256, heads=4, kv=4, head_dim=64, ff=512, vocab=1024, attn=None, tied=False, extra=()):
    """A tiny Llama with sizes easy to add by hand: one decoder layer = 655,872 params = 1,311,744 bf16 bytes."""
    t = [TensorInfo("embed", (vocab, hidden), "embed")]
    for i in range(layers):
        t += [TensorInfo(f"q{i}", (heads * head_dim, hidden), "attn_q", i),
              TensorInfo(f"k{i}", (kv * head_dim, hidden), "attn_k", i),
              TensorInfo(f"v{i}", (kv * head_dim, hidden), "attn_v", i),
              TensorInfo(f"o{i}", (hidden, heads * head_dim), "attn_o", i),
              TensorInfo(f"g{i}", (ff, hidden), "ffn_gate", i), TensorInfo(f"u{i}", (ff, hidden), "ffn_up", i),
              TensorInfo(f"d{i}", (hidden, ff), "ffn_down", i),
              TensorInfo(f"an{i}", (hidden,), "norm", i), TensorInfo(f"fn{i}", (hidden,), "norm", i)]
    t += list(extra) + [TensorInfo("norm", (hidden,), "norm")]
    if not tied:
        t.append(TensorInfo("lm_head", (vocab, hidden), "lm_head"))
    att = attn or [AttentionSpec("full", kv, head_dim, head_dim)] * layers
    return ModelSpec(id="toy", architecture="LlamaForCausalLM", family="llama", hidden_size=hidden, n_layers=layers,
                     n_heads=heads, vocab_size=vocab, layers=tuple(LayerSpec(a) for a in att), tensors=tuple(t),
                     intermediate_size=ff, max_position_embeddings=8192, tie_word_embeddings=tied, repo_id="org/toy")


M = toy()
W = estimate_weights(M, "bf16")
LAYER, EMBED, NORM = 1_311_744, 524_288, 512
TOTAL = EMBED + 4 * LAYER + NORM + EMBED       # 6,296,064


def gpu(capacity, name="GPU"):
    return Target(name, "gpu", capacity, None, capacity)


RAM = Target("CPU RAM", "cpu", 64 * GiB)


def test_toy_sizes():
    # the hand sums the placement tests rely on
    assert W.total == TOTAL == 6_296_064


def test_whole_model_on_one_gpu_within_90_percent():
    # one GPU, max_memory unset: 0.9 × (free − CUDA context) = 6,300,000 ≥ 6,296,064 → everything on GPU 0
    a = Transformers().allocate(M, W, Settings(runtime="transformers"), [gpu(CUDA_CONTEXT + 7_000_000), RAM])
    assert a.devices[0].weights == TOTAL and a.devices[1].weights == 0


def test_split_keeps_room_for_the_largest_layer():
    # 0.9 × 6,990,000 = 6,291,000: the model no longer fits whole; layer by layer GPU 0 keeps room for the
    # largest remaining block (1,311,744) and, for the last layer, the lm_head (524,288): L3, norm, lm_head → cpu
    a = Transformers().allocate(M, W, Settings(runtime="transformers"), [gpu(CUDA_CONTEXT + 6_990_000), RAM])
    assert a.devices[0].weights == EMBED + 3 * LAYER
    assert a.devices[1].weights == LAYER + NORM + EMBED


def test_user_max_memory():
    # max_memory={0: 3,500,000}: embed + layer 0 (1,836,032) fit under 3.5M − 1,311,744; layer 1 would not
    t = Transformers(max_memory={"0": 3_500_000, "cpu": 100_000_000})
    a = t.allocate(M, W, Settings(runtime="transformers"), [gpu(24 * GiB), RAM])
    assert a.devices[0].weights == EMBED + LAYER
    assert a.devices[1].weights == 3 * LAYER + NORM + EMBED


def test_balanced_over_two_gpus():
    # per_gpu = 6,296,064 / 2 + 1.25 × 1,311,744 = 4,787,712 for GPU 0 (the last GPU keeps its free memory);
    # GPU 0 takes embed + L0 + L1 (it keeps room for one layer), GPU 1 the rest
    a = Transformers().allocate(M, W, Settings(runtime="transformers", ctx=1000),
                                [gpu(24 * GiB, "A"), gpu(24 * GiB, "B"), RAM])
    assert [d.weights for d in a.devices] == [EMBED + 2 * LAYER, 2 * LAYER + NORM + EMBED, 0]
    # each layer's KV stays with its layer: 2 layers × 4 heads × (64 + 64) × 2 B × 1000 tokens per GPU
    assert [d.kv_cache for d in a.devices] == [2 * 1024 * 1000, 2 * 1024 * 1000, 0]


def test_offloaded_layers_keep_their_kv_on_gpu0():
    # layer 3 on the CPU runs on GPU 0 (accelerate's execution device), so its cache is there too
    a = Transformers().allocate(M, W, Settings(runtime="transformers", ctx=1000, parallel=2),
                                [gpu(CUDA_CONTEXT + 6_990_000), RAM])
    assert a.devices[0].kv_cache == 4 * 1024 * 1000 * 2 and a.devices[1].kv_cache == 0


def test_prefill_peak_and_logits():
    # MLP phase 1000 × (4·256 + 3·512) × 2 B beats attention 1000 × (5·256 + 2·256) × 2 B and a decode step's copy
    # of one layer's cache (1024 B × 1000); plus last-token logits 1024 × (2 + 4) B
    a = Transformers().allocate(M, W, Settings(runtime="transformers", ctx=1000), [gpu(24 * GiB), RAM])
    assert a.devices[0].compute == 1000 * 2560 * 2 + 1024 * 6
    assert a.devices[0].overhead == CUDA_CONTEXT + CUBLAS_WORKSPACE == 740 * MiB
    assert next(s for s in a.steps if s.label == "logits").value == "6,144 B"


def test_padded_batch_adds_the_mask():
    # two prompts: generate's padding mask becomes a (2, 1, 1000, 1000) bool mask next to 2 × 1000 tokens of activations
    a = Transformers().allocate(M, W, Settings(runtime="transformers", ctx=1000, parallel=2), [gpu(24 * GiB), RAM])
    assert a.devices[0].compute == 2 * 1000 * 1000 + 2000 * 2560 * 2 + 2 * 1024 * 6


def test_offloaded_module_in_flight_on_gpu0():
    # layer 3 lives on the CPU: accelerate copies its 1,311,744 B to GPU 0 while it runs
    a = Transformers().allocate(M, W, Settings(runtime="transformers", ctx=1000), [gpu(CUDA_CONTEXT + 6_990_000), RAM])
    assert next(s for s in a.steps if s.label == "offloaded weights in flight").value == "1,311,744 B"
    assert a.devices[0].compute == 1000 * 2560 * 2 + 1024 * 6 + LAYER


def test_user_max_memory_without_cpu_spills_to_disk():
    # only the devices named in max_memory are used: no "cpu" entry sends the overflow to disk
    a = Transformers(max_memory={"0": 3_500_000}).allocate(M, W, Settings(runtime="transformers"), [gpu(24 * GiB), RAM])
    assert a.devices[0].weights == EMBED + LAYER and a.devices[1].weights == 0
    assert any("offloaded to disk" in x for x in a.assumptions)


@pytest.mark.parametrize("batch, prompt, new, padded, measured", [
    (1, 30000, 64, False, 1_238_831_104),     # H100, transformers 5.17, torch.cuda.max_memory_allocated above the weights
    (8, 8000, 64, True, 3_153_995_776),       # the same with the first prompt left-padded by 100 tokens
])
def test_matches_h100_measurement(batch, prompt, new, padded, measured):
    # a random-init Llama (hidden 1024, 8 layers, 16 heads / 4 KV, ffn 4096, vocab 32000) generating on an H100
    m = toy(layers=8, hidden=1024, heads=16, kv=4, head_dim=64, ff=4096, vocab=32000)
    a = Transformers().allocate(m, estimate_weights(m, "bf16"), Settings(runtime="transformers", ctx=prompt + new,
                                                                         parallel=batch), [gpu(80 * GiB), RAM])
    planned = a.devices[0].kv_cache + a.devices[0].compute
    assert planned == pytest.approx(measured, rel=0.03)


def test_bitsandbytes_plans_with_half_a_byte_and_a_10_percent_margin():
    # nf4: accelerate counts linear weights at 0.5 B (layer = 327,680 + 1,024 norm bytes); max_memory × 0.9.
    # 0.9 × 2,700,000 = 2,430,000 holds the model's 1,839,616 + lm_head 524,288 → all on the GPU
    w = estimate_weights(M, "nf4")
    t = Transformers(max_memory={"0": 2_700_000, "cpu": 100_000_000})
    a = t.allocate(M, w, Settings(runtime="transformers", quant="nf4"), [gpu(24 * GiB), RAM])
    assert a.refusal is None
    assert a.devices[0].weights == w.total
    # real nf4 bytes: packed 4-bit + one f32 absmax per 64 + the 16-entry code table, per linear weight
    q = 65536 // 2 + 4 * 1024 + 64
    g = 131072 // 2 + 4 * 2048 + 64
    assert w.total == EMBED + 4 * (4 * q + 3 * g + 1024) + NORM + EMBED


def test_bitsandbytes_refuses_cpu_offload():
    # 0.9 × 1,500,000 leaves room for embed + one layer: the rest would go to the CPU → bitsandbytes' ValueError
    w = estimate_weights(M, "nf4")
    t = Transformers(max_memory={"0": 1_500_000, "cpu": 100_000_000})
    a = t.allocate(M, w, Settings(runtime="transformers", quant="nf4"), [gpu(24 * GiB), RAM])
    assert a.refusal.startswith("Some modules are dispatched on the CPU or the disk.")


def test_sliding_layers_keep_window_minus_one():
    # DynamicSlidingWindowLayer keeps sliding_window − 1 tokens: 2 sliding (window 512) + 2 full layers at 4096
    att = [AttentionSpec("sliding", 4, 64, 64, 512)] * 2 + [AttentionSpec("full", 4, 64, 64)] * 2
    m = toy(attn=att)
    a = Transformers().allocate(m, estimate_weights(m, "bf16"), Settings(runtime="transformers", ctx=4096),
                                [gpu(24 * GiB), RAM])
    assert a.devices[0].kv_cache == 2 * 1024 * 511 + 2 * 1024 * 4096


def test_mla_caches_decompressed_heads():
    # transformers' DeepSeek attention caches per head K = nope + rope and V = v_head_dim: kv_b rows
    # 4 heads × (128 + 128) = 1024, rope 576 − 512 = 64 → 4 × (256 + 64) × 2 B per layer per token
    att = [AttentionSpec("mla", 1, 576, 512)] * 4
    kvb = [TensorInfo(f"kvb{i}", (1024, 512), "attn_kv_b", i) for i in range(4)]
    m = toy(attn=att, extra=kvb)
    a = Transformers().allocate(m, estimate_weights(m, "bf16"), Settings(runtime="transformers", ctx=100),
                                [gpu(24 * GiB), RAM])
    assert a.kv_bytes_per_token == 4 * 4 * (256 + 64) * 2


def test_tied_embeddings_count_once():
    # lm_head.weight is a tied key: compute_module_sizes skips it
    m = toy(tied=True)
    w = WeightEstimate("bf16", EMBED + 4 * LAYER + NORM)
    a = Transformers().allocate(m, w, Settings(runtime="transformers"), [gpu(24 * GiB), RAM])
    assert a.devices[0].weights == EMBED + 4 * LAYER + NORM


def test_cpu_only():
    # no GPU: device_map "auto" puts everything in RAM and the cache and activations run there
    a = Transformers().allocate(M, W, Settings(runtime="transformers", ctx=1000), [RAM])
    (cpu,) = a.devices
    assert (cpu.weights, cpu.kv_cache) == (TOTAL, 4 * 1024 * 1000)
    assert cpu.compute == 1000 * 2560 * 2 + 1024 * 6


def test_mps_spills_to_disk():
    # on MPS there is no "cpu" entry in max_memory: what does not fit goes to disk (no memory, very slow)
    mac = Target("M2", "unified", 4_000_000, None, 16 * GiB)
    a = Transformers().allocate(M, W, Settings(runtime="transformers", ctx=100), [mac])
    assert a.devices[0].weights < TOTAL
    assert any("offloaded to disk" in x for x in a.assumptions)


@pytest.mark.parametrize("cache", ["q8_0", "q4_0", "fp8"])
def test_quantized_cache_refused(cache):
    # DynamicCache stores the model dtype; QuantizedCache is a different cache implementation
    a = Transformers().allocate(M, W, Settings(runtime="transformers", cache_type_k=cache, cache_type_v=cache),
                                [gpu(24 * GiB), RAM])
    assert "DynamicCache" in a.refusal


def test_default_context_is_4096():
    assert Transformers().defaults(M, Settings(runtime="transformers"), []).ctx == 4096


@pytest.mark.parametrize("quant, kwargs, expected", [
    ("nf4", {}, 'from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig; tok = AutoTokenizer.'
     'from_pretrained("org/toy"); model = AutoModelForCausalLM.'
     'from_pretrained("org/toy", device_map="auto", quantization_config=BitsAndBytesConfig(load_in_4bit=True, '
     'bnb_4bit_quant_type="nf4")); '
     'input_ids = tok("Hello", return_tensors="pt").input_ids.to(model.device); model.generate(input_ids, max_length=8192)'),
    ("qlora", {}, 'from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig; tok = AutoTokenizer.'
     'from_pretrained("org/toy"); model = AutoModelForCausalLM.'
     'from_pretrained("org/toy", device_map="auto", quantization_config=BitsAndBytesConfig(load_in_4bit=True, '
     'bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True)); '
     'input_ids = tok("Hello", return_tensors="pt").input_ids.to(model.device); model.generate(input_ids, max_length=8192)'),
    ("int8", {"max_memory": {"0": 20 * GiB, "cpu": 30 * GiB}},
     'from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig; tok = AutoTokenizer.'
     'from_pretrained("org/toy"); model = AutoModelForCausalLM.'
     'from_pretrained("org/toy", device_map="auto", quantization_config=BitsAndBytesConfig(load_in_8bit=True), '
     'max_memory={0: "20480MiB", \'cpu\': "30720MiB"}); '
     'input_ids = tok("Hello", return_tensors="pt").input_ids.to(model.device); model.generate(input_ids, max_length=8192)'),
    ("bf16", {}, 'from transformers import AutoModelForCausalLM, AutoTokenizer; tok = AutoTokenizer.from_pretrained("org/toy"); '
     'model = AutoModelForCausalLM.from_pretrained('
     '"org/toy", device_map="auto", dtype="bfloat16"); '
     'input_ids = tok("Hello", return_tensors="pt").input_ids.to(model.device); model.generate(input_ids, max_length=8192)'),
])
def test_command(quant, kwargs, expected):
    assert Transformers(**kwargs).command(M, Settings(runtime="transformers", ctx=8192, quant=quant)) == expected


@pytest.mark.parametrize("parallel", [1, 4])
def test_command_defines_every_name_it_uses(parallel):
    # review16: `model.generate(input_ids, …)` with input_ids (and a tokenizer) never defined. Read as Python: every
    # name loaded is imported or assigned before it is used
    import ast
    import builtins

    snippet = Transformers().command(M, Settings(runtime="transformers", ctx=8192, quant="bf16", parallel=parallel))
    defined = set(dir(builtins))
    for stmt in ast.parse(snippet).body:
        loads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        assert loads <= defined, (loads - defined, ast.unparse(stmt))
        if isinstance(stmt, ast.ImportFrom):
            defined |= {a.asname or a.name for a in stmt.names}
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
    assert {"tok", "model", "input_ids"} <= defined
    assert ("padding=True" in snippet) == (parallel > 1)


def test_spec_without_tensors_is_one_block():
    # a spec with no tensor list: the estimate is placed as one block on the first GPU
    m = ModelSpec(id="x", architecture="LlamaForCausalLM", family="llama", hidden_size=256, n_layers=4, n_heads=4,
                  vocab_size=1024, layers=tuple([LayerSpec(AttentionSpec("full", 4, 64, 64))] * 4), intermediate_size=512)
    a = Transformers().allocate(m, WeightEstimate("bf16", 10 * MiB), Settings(runtime="transformers", ctx=100),
                                [gpu(24 * GiB), RAM])
    assert a.devices[0].weights == 10 * MiB and a.devices[0].kv_cache == 4 * 1024 * 100


@pytest.mark.parametrize("batch, prompt, new, padded, measured", [
    (1, 30000, 64, False, 1_238_831_104),
    (8, 8000, 64, True, 3_153_995_776),
])
def test_max_new_tokens_prefills_only_the_prompt(batch, prompt, new, padded, measured):
    # the same H100 runs planned with generate()'s own split: the prefill peak over the prompt, the cache to the end
    m = toy(layers=8, hidden=1024, heads=16, kv=4, head_dim=64, ff=4096, vocab=32000)
    s = Settings(runtime="transformers", ctx=prompt + new, parallel=batch).with_(max_new_tokens=new)
    a = Transformers().allocate(m, estimate_weights(m, "bf16"), s, [gpu(80 * GiB), RAM])
    assert a.devices[0].kv_cache + a.devices[0].compute == pytest.approx(measured, rel=0.03)
    assert any(f"{prompt:,} prompt tokens, then {new:,} new" in x for x in a.assumptions)


def test_many_new_tokens_cost_no_more_than_the_prompt_peak():
    # measurements/transformers: Llama-3.2-1B, one prompt of 512 tokens, 32 or 512 new tokens: the same peak
    # (the prefill's), 85,039,104 B above the weights. Without --max-new-tokens the planner prefills all 1,024.
    import json
    from pathlib import Path

    from runlocal.model.hf_config import spec_from_config
    data = Path(__file__).resolve().parents[2] / "measurements" / "transformers" / "data" / "cuda_peak.jsonl"
    recs = [json.loads(x) for x in data.read_text().splitlines() if x.strip()]
    pair = [r for r in recs if r["model"] == "llama-3.2-1b" and r["attn_implementation"] == "sdpa"
            and r["batch"] == 1 and r["prompt_len"] == 512]
    assert {r["new_tokens"] for r in pair} == {32, 512}
    assert pair[0]["peak_above_weights"] == pair[1]["peak_above_weights"]
    spec = spec_from_config(pair[0]["config"], id="llama-3.2-1b", source="test")
    w = estimate_weights(spec, "bf16")
    real = pair[0]["peak_above_weights"]
    split = Transformers().allocate(spec, w, Settings(runtime="transformers", ctx=1024).with_(max_new_tokens=512),
                                    [gpu(80 * GiB), RAM]).devices[0]
    whole = Transformers().allocate(spec, w, Settings(runtime="transformers", ctx=1024), [gpu(80 * GiB), RAM]).devices[0]
    workspace = 32 * MiB        # cuBLAS's workspace inside torch's allocator (benchmarks/accuracy_transformers.py)
    assert split.kv_cache + split.compute + workspace == pytest.approx(real, rel=0.02)
    assert whole.kv_cache + whole.compute + workspace > 1.3 * real


@pytest.mark.parametrize("new", ["0", "4096", "5000"])
def test_max_new_tokens_must_leave_a_prompt(new):
    from typer.testing import CliRunner

    from runlocal.cli import app
    r = CliRunner().invoke(app, ["check", "llama-3.2-1b", "-r", "transformers", "--vram", "24G", "--ctx", "4096",
                                 "--max-new-tokens", new])
    assert r.exit_code == 2 and "max-new-tokens" in r.output and "Traceback" not in r.output


# --- attn_implementation="eager" -------------------------------------------------------------------------------

def test_eager_prefill_by_hand():
    # toy with 4 heads over 2 KV heads (head_dim 64), bf16, one sequence prefilled at 1000 tokens; at the last
    # layer's softmax (models/llama/modeling_llama.py eager_attention_forward) these are alive at once:
    #   SDPA's attention-phase tensors   1000 × (5·256 + 2·128) × 2 B           =  3,072,000
    #   repeat_kv copies of K and V      1000 × 4 heads × (64 + 64) × 2 B      =  1,024,000
    #   scores: bf16 (2) + float32 copy (4) + float32 softmax (4) per element: 1 × 4 × 1000² × 10 B = 40,000,000
    # and through the whole forward the 4-D float causal mask 1 × 1000² × 2 B = 2,000,000; + last-token logits 6,144
    m = toy(kv=2)
    s = Settings(runtime="transformers", ctx=1000)
    a = Transformers(attn_implementation="eager").allocate(m, estimate_weights(m, "bf16"), s, [gpu(24 * GiB), RAM])
    assert a.devices[0].compute == 3_072_000 + 1_024_000 + 40_000_000 + 2_000_000 + 1024 * 6
    steps = {s.label: s.value for s in a.steps}
    assert steps["eager attention scores (one layer)"] == "40,000,000 B"
    assert steps["eager repeat_kv"] == "1,024,000 B" and steps["eager causal mask"] == "2,000,000 B"
    # SDPA on the same run: no scores, no mask (is_causal), the MLP phase 1000 × (4·256 + 3·512) × 2 B
    sdpa = Transformers().allocate(m, estimate_weights(m, "bf16"), Settings(runtime="transformers", ctx=1000),
                                   [gpu(24 * GiB), RAM])
    assert sdpa.devices[0].compute == 1000 * 2560 * 2 + 1024 * 6


def test_eager_fp16_and_fp32_scores():
    # fp16 on CUDA takes ATen's fused half_to_float softmax: fp16 scores (2) + float32 result (4) + its fp16 cast (2);
    # fp32: scores (4) + result (4). Both 8 B per score; the mask is in the model dtype (2 or 4 B)
    for quant, mask_b in (("fp16", 2), ("fp32", 4)):
        s = Settings(runtime="transformers", ctx=1000, quant=quant)
        a = Transformers(attn_implementation="eager").allocate(M, estimate_weights(M, quant), s, [gpu(24 * GiB), RAM])
        steps = {s.label: s.value for s in a.steps}
        assert steps["eager attention scores (one layer)"] == f"{4 * 1000 * 1000 * 8:,} B"
        assert steps["eager causal mask"] == f"{1000 * 1000 * mask_b:,} B"
        assert steps["eager repeat_kv"] == "0 B"        # 4 heads, 4 KV heads: repeat_kv returns its input


def _records(attn):
    import json
    from pathlib import Path
    data = Path(__file__).resolve().parents[2] / "measurements" / "transformers" / "data" / "cuda_peak.jsonl"
    return [r for r in (json.loads(x) for x in data.read_text().splitlines() if x.strip())
            if r["ok"] and r["attn_implementation"] == attn]


@pytest.mark.parametrize("rec", _records("eager"), ids=lambda r: f"{r['model']}-{r['batch']}x{r['prompt_len']}")
def test_eager_matches_h100_measurements(rec):
    # measurements/transformers: Llama-3.2-1B and Qwen3-0.6B, attn_implementation="eager", bf16, an H100
    # (torch.cuda.max_memory_allocated − the weights; 941 MiB to 5.6 GiB where SDPA peaks at 309 MiB to 1.1 GiB)
    from runlocal.model.hf_config import spec_from_config
    spec = spec_from_config(rec["config"], id=rec["model"], source="test")
    s = Settings(runtime="transformers", ctx=rec["prompt_len"] + rec["new_tokens"], parallel=rec["batch"],
                 quant="bf16").with_(max_new_tokens=rec["new_tokens"])
    d = Transformers(attn_implementation="eager").allocate(spec, estimate_weights(spec, "bf16"), s,
                                                           [gpu(80 * GiB), RAM]).devices[0]
    workspace = 32 * MiB        # cuBLAS's workspace inside torch's allocator (benchmarks/accuracy_transformers.py)
    assert d.kv_cache + d.compute + workspace == pytest.approx(rec["peak_above_weights"], rel=0.03)
    # and the SDPA plan misses the eager run by far: the scores are the peak
    sdpa = Transformers().allocate(spec, estimate_weights(spec, "bf16"), s, [gpu(80 * GiB), RAM]).devices[0]
    assert sdpa.kv_cache + sdpa.compute + workspace < 0.5 * rec["peak_above_weights"]


def test_eager_command_and_unknown_implementation():
    cmd = Transformers(attn_implementation="eager").command(M, Settings(runtime="transformers", ctx=8192, quant="bf16"))
    assert 'dtype="bfloat16", attn_implementation="eager")' in cmd
    with pytest.raises(ValueError, match="attn_implementation"):
        Transformers(attn_implementation="flash_attention_2")


def test_attn_implementation_from_the_command_line_and_api():
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app
    from runlocal.check import CheckRequest, check

    kw = dict(model="llama-3.1-8b", runtime="transformers", gpu="rtx-4090", ctx=8192, use_measurements=False)
    sdpa, _ = check(CheckRequest(**kw))
    eager, _ = check(CheckRequest(**kw, attn_implementation="eager"))
    # Llama 3.1 8B, one 8,192-token prompt: 32 heads × 8,192² scores at 10 B (bf16 scores, f32 copy, f32 softmax);
    # they replace SDPA's peak phase (the MLP's, a few hundred MiB), so the growth is the scores give or take that
    scores = 32 * 8192 * 8192 * 10
    grown = eager.memory_totals()["compute"] - sdpa.memory_totals()["compute"]
    assert 0.97 * scores < grown < 1.05 * scores
    assert 'attn_implementation="eager"' in eager.command and "attn_implementation" not in sdpa.command
    r = run_cli("check", "llama-3.1-8b", "--runtime", "transformers", "--attn-implementation", "flash")
    assert r.returncode == 2 and "attn-implementation" in r.stderr and "Traceback" not in r.stderr
    client = TestClient(create_app(store_url="sqlite://"))
    body = {k: v for k, v in kw.items() if k != "use_measurements"}
    res = client.post("/api/v1/check", json={**body, "attn_implementation": "eager"})
    assert res.status_code == 200 and res.json()["memory"]["compute"] == eager.memory_totals()["compute"]
    assert client.post("/api/v1/check", json={**body, "attn_implementation": "flash"}).status_code == 422

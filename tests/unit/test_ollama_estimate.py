"""Ollama v0.7.1 – v0.11.4 on several GPUs (runtimes/ollama_estimate.py), against a public log and the source at the tag.

The public log: ollama/ollama#9181 (2025-02-18, a build of the main branch then, v0.5.x; 4 × NVIDIA L4, a 70B llama
at num_ctx 64000 with flash attention on):

  msg=offload library=cuda layers.requested=-1 layers.model=81 layers.offload=44 layers.split=11,11,11,11
  memory.available="[22.0 GiB 22.0 GiB 22.0 GiB 22.0 GiB]" memory.gpu_overhead="0 B" memory.required.kv="19.5 GiB"
  memory.required.allocations="[21.8 GiB 21.8 GiB 21.8 GiB 21.8 GiB]" memory.weights.total="87.3 GiB"
  memory.weights.repeating="86.2 GiB" memory.weights.nonrepeating="1.0 GiB" memory.graph.full="8.2 GiB"
  memory.graph.partial="8.2 GiB"

In that build ``memoryWeights += layerSize`` summed each block with its KV (llm/memory.go at v0.5.11), so a block's
bytes are (86.2 − 19.5) / 80 GiB; the buffer was the largest layer (before 3fe74fba4, v0.7.1), which for these
uniform blocks is blk.0 as from v0.7.1. Four GPUs: not a record of measurements/ollama_estimate/RULE.md (two GPUs);
a check of the port, whose inputs are the log's.
"""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.runtimes.ollama_estimate import ModelShape, estimate_gpu_layers, graph_sizes, pick_gpus

GiB = 1 << 30
LLAMA_70B = dict(arch="llama", embedding=8192, heads=64, heads_kv=8, head_k=128, head_v=128, vocab=128256)


def test_graph_size_of_issue_9181():
    # fs/ggml/ggml.go GraphSize "llama", written out at context 64,000, batch 512:
    # partial = 4·512·8192 + max(4·512·(1 + 8192 + 64000) + 8192²·9/16 + 4·64000·(512·64 + 128·8),
    #                            4·512·(8192 + 128256) + 8192·128256·105/128)
    #         = 16,777,216 + max(147,851,264 + 37,748,736 + 8,650,752,000, 279,445,504 + 861,929,472)
    #         = 8,853,129,216 B = 8.245 GiB  (the log: memory.graph.partial="8.2 GiB")
    shape = ModelShape(**LLAMA_70B, blocks=(1,) * 80, output=1)
    partial, _ = graph_sizes(shape, 64000, 512, 0)
    assert partial == 8_853_129_216
    assert round(partial / GiB, 1) == 8.2


def test_split_of_issue_9181():
    block = int((86.2 - 19.5) / 80 * GiB)
    shape = ModelShape(**LLAMA_70B, blocks=(block,) * 80, output=int(1.0 * GiB))
    est = estimate_gpu_layers(shape, [int(22.0 * GiB)] * 4, 64000, 512)
    assert est is not None
    assert est.counts == (11, 11, 11, 11) and est.layers == 44          # layers.split=11,11,11,11
    # memory.required.allocations 21.8 GiB each: minimum + buffer + 11 layers + the graph, within the log's rounding
    # of its inputs (one decimal of GiB each)
    assert all(abs(a / GiB - 21.8) < 0.3 for a in est.allocations)


def test_round_robin_by_layer_index():
    # llm/memory.go: layers placed last first, layer i on gpusWithSpace[i % j]; then the output layer at index
    # layerCount % j. Ten equal blocks on two roomy GPUs: odd blocks on the 2nd, even on the 1st (5, 5); the output
    # layer at 10 % 2 = 0: the 1st → 6, 5.
    shape = ModelShape("qwen3", 1024, 16, 8, 64, 64, 1000, (100 << 20,) * 10, 50 << 20)
    est = estimate_gpu_layers(shape, [40 * GiB, 40 * GiB], 2048, 512)
    assert est is not None and est.counts == (6, 5) and est.full


def test_one_gpu_when_it_holds_every_layer():
    # server/sched.go pickBestFullFitByLibrary: the GPUs by free memory, most first; the first that takes every
    # layer (PredictServerFit: layers ≥ blocks + 1) alone. The 8 GiB card cannot, the 24 GiB one can.
    shape = ModelShape("qwen3", 4096, 32, 8, 128, 128, 150000, (400 << 20,) * 32, 600 << 20)
    gpus, est = pick_gpus(shape, [8 * GiB, 24 * GiB], 4096, 512)
    assert gpus == [1] and est.layers == 33
    gpus, _ = pick_gpus(shape, [8 * GiB, 24 * GiB], 4096, 512, spread=True)
    assert gpus == [1, 0]                      # OLLAMA_SCHED_SPREAD: every GPU, most free first


def test_unmodelled_graph_case_is_none():
    shape = ModelShape("gemma2", 3584, 16, 8, 256, 256, 256000, (1,) * 42, 1)
    assert estimate_gpu_layers(shape, [24 * GiB, 24 * GiB], 4096, 512) is None


def test_plan_uses_the_estimator_before_v0_11_5():
    plan = check(CheckRequest(model="llama-3.1-70b", vram="24G,24G", runtime="ollama==0.9.0", ctx=8192,
                              use_measurements=False))[0]
    step = next(s for s in plan.allocation.steps if s.label == "GPUs given to llama-server")
    assert "llm/memory.go EstimateGPULayers" in step.formula and "81/81 layers" in step.formula
    later = check(CheckRequest(model="llama-3.1-70b", vram="24G,24G", runtime="ollama==0.30.0", ctx=8192,
                               use_measurements=False))[0]
    assert not any("llm/memory.go" in s.formula for s in later.allocation.steps)


def test_kv_cache_type_and_gpu_overhead_move_the_split():
    # llm/memory.go (v0.7.1 – v0.11.4): kv = num_ctx × (head_k + head_v) × heads_kv × kvCacheBytesPerElement(kvct)
    # (q8_0 1, q4_0 0.5, f16 2), and every GPU reserves envconfig.GpuOverhead(). By hand, one GPU of 1,300 MiB free,
    # ten 100 MiB blocks, context 2,048, heads_kv 8, head 64 + 64, gqa 2 (the generic graph: gqa × kv total / 6):
    #   f16:  kv 2,048 × 128 × 8 × 2 = 4 MiB a layer; graph 2 × 40 MiB / 6 = 13.33 MiB; start 457 + 104 = 561 MiB;
    #         block k+1 fits while 1,300 > 13.33 + 561 + 104 (k+1) → 6 blocks; the 150 MiB output: 1,185 + 150 + 13.33
    #         > 1,300 → not placed: 6 layers
    #   q8_0: kv 2 MiB; graph 6.67 MiB; start 559 MiB; 1,300 > 6.67 + 559 + 102 (k+1) → 7 blocks (714 < 734.3);
    #         output 1,273 + 150 + 6.67 > 1,300: 7 layers
    #   f16 with OLLAMA_GPU_OVERHEAD 200 MiB: 1,300 > 200 + 13.33 + 561 + 104 (k+1) → 5 blocks: 5 layers
    from runlocal.runtimes.ollama_estimate import kv_bytes_per_element

    MiB = 1 << 20
    shape = ModelShape("qwen3", 1024, 16, 8, 64, 64, 1000, (100 * MiB,) * 10, 150 * MiB)
    layers = {kv: estimate_gpu_layers(shape, [1300 * MiB], 2048, 512, kv_bytes_per_element(kv)).layers
              for kv in ("f16", "q8_0")}
    assert layers == {"f16": 6, "q8_0": 7}
    assert estimate_gpu_layers(shape, [1300 * MiB], 2048, 512, 2.0, overhead=200 * MiB).layers == 5
    assert kv_bytes_per_element("q4_0") == 0.5       # ggml.go "1/4 of fp16", not ggml's 18/32 block size


def test_plan_prices_a_q8_0_cache_on_its_own_split():
    # 70B at 32k on 2 × 24 GiB, ollama==0.9.0 with flash attention: the f16 estimate places 60 of 81 layers (30, 30);
    # a q8_0 cache halves each layer's KV (32,768 × 8 × 256 × 1 B = 64 MiB less a layer) and more layers fit
    def split(kv: str) -> str:
        plan = check(CheckRequest(model="llama-3.1-70b", gpu="2x3090", runtime="ollama==0.9.0", ctx=32768,
                                  flash_attn="on", kv_cache=kv, use_measurements=False))[0]
        return next(s for s in plan.allocation.steps if s.label == "GPUs given to llama-server").formula

    f16, q8 = split("f16"), split("q8_0")
    assert "60/81 layers, split 30,30" in f16 and "KV 2 B an element" in f16
    assert "68/81 layers, split 34,34" in q8 and "KV 1 B an element" in q8


def test_num_batch_before_v0_30_is_ollamas_default_512():
    # api/types.go DefaultOptions NumBatch 512 (v0.12.0); automaticGenerationBatch arrived with v0.30.0. gpt-oss-20b
    # (24 layers alternating full / sliding 128, 8 KV heads × 64 per K and V, f16 → 2 × 8 × 64 × 2 = 2,048 B a token
    # a layer) on the Go engine at 32k: sliding cells pad(4,096 × 1 + 512, 256) = 4,608, so the KV is
    # 12 × 2,048 × 32,768 + 12 × 2,048 × 4,608 = 805,306,368 + 113,246,208 = 918,552,576 B
    from runlocal.runtimes.ollama_estimate import release_batch

    assert release_batch("0.12.0") == 512 and release_batch("0.29.0") == 512
    assert release_batch("0.30.0") is None and release_batch(None) is None
    plan = check(CheckRequest(model="gpt-oss-20b", gpu="4090", runtime="ollama==0.12.0", ctx=32768,
                              use_measurements=False))[0]
    assert plan.allocation.devices[0].kv_cache == 918_552_576


def test_estimator_plans_say_the_estimator_placed_the_layers_and_is_unscored():
    # review19b finding 4: the step said "Ollama's own estimator … split 30,30" while the assumptions said "GPU layers
    # by llama-server --fit" and "OLLAMA_GPU_OVERHEAD only changes the default-context tier" — contradictory. Finding 6:
    # measurements/ollama_estimate/records.md holds 0 records, so the plan says the port is unscored.
    plan = check(CheckRequest(model="llama-3.1-70b", gpu="2x3090", runtime="ollama==0.9.0", ctx=32768,
                              use_measurements=False))[0]
    step = next(s for s in plan.allocation.steps if s.label == "GPUs given to llama-server")
    words = " | ".join(plan.allocation.assumptions)
    assert "split 30,30" in step.formula and "--tensor-split 30,30" in words and "--n-gpu-layers 60" in words
    assert "--fit" not in words and "only changes the default-context tier" not in words
    assert "not yet checked against a logged two-GPU split" in words
    # the current release still places by --fit and says so
    now = check(CheckRequest(model="llama-3.1-70b", gpu="2x3090", runtime="ollama", ctx=32768,
                             use_measurements=False))[0]
    assert "--fit" in " | ".join(now.allocation.assumptions)

#!/bin/bash
# Run 5 (README-h100.md): two checks of runs 3-4 on the CUDA machine, from the repository root:
#   1. the spread files' routing as CUDA computes it (full-size files, every layer on the GPU): routing_llamacpp_check.py
#      --gpu against routing_counts.py's numpy count, at pp512/ub128, pp512/ub512, pp2048/ub2048; and the zero file's
#      routing (one expert set for every token?);
#   2. why run 1's method (pp512 after single-token decodes) reads slower than prompt batches back to back: both
#      methods, with and without LLAMA_GRAPH_REUSE_DISABLE=1 (llama-context.cpp: no reuse of the previous ggml graph,
#      so no reuse of its CUDA graph either), qwen3-30b-a3b and llama-3.1-8b zero files.
#   OUT=/tmp/out bash measurements/speed/h100_moe_check.sh
# Needs what h100_moe_run.sh needs; S= as there. Writes $OUT/run.log, routing_gpu.txt, graph_reuse_{on,off}.jsonl.
T0=$(date +%s)
OUTD=${OUT:-/tmp/out}
S=${S:-measurements/speed}
GZ=${GZ:-/tmp/gguf}
GS=${GS:-/tmp/gguf_spread}
mkdir -p "$OUTD"
exec > >(tee -a "$OUTD/run.log") 2>&1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.max.sm,power.limit --format=csv
source measurements/speed/cuda_env.sh   # gguf-py, the llama.cpp libraries in $B, $LIBSTDCXX
export LD_PRELOAD=$LIBSTDCXX LLAMA_CPP_LIB_PATH=$B/bin
PKG=$PWD/.llamacpp-src/llama_cpp
python3 -m runlocal.evidence.zero_gguf --out-dir $GZ qwen3-30b-a3b gpt-oss-20b deepseek-v2-lite llama-3.1-8b | cut -c1-60
# 1. routing on the GPU
for m in qwen3-30b-a3b gpt-oss-20b deepseek-v2-lite; do
  python3 $S/make_spread_gguf.py $GZ/$m.q4_0.gguf $GS/$m.q4_0.gguf || continue
  for c in "512 128" "512 512" "2048 2048"; do set -- $c
    timeout 120 python3 $S/routing_llamacpp_check.py $GS/$m.q4_0.gguf --gpu --llama-cpp-pkg $PKG --prompt $1 --ubatch $2 \
      2>/dev/null | tee -a "$OUTD/routing_gpu.txt"
    echo "routing $m $1/$2 rc=${PIPESTATUS[0]}"
  done
  rm -f $GS/$m.q4_0.gguf
  (cd $S && timeout 60 python3 -c "
import sys
from routing_llamacpp_check import llamacpp_topk
n_used = {'qwen3-30b-a3b': 8, 'gpt-oss-20b': 4, 'deepseek-v2-lite': 6}['$m']
t = llamacpp_topk('$GZ/$m.q4_0.gguf', 512, 512, n_used, True, '$PKG')
sets = {tuple(sorted(r)) for a in t.values() for r in a.tolist()}
print('$m zero file on the GPU: %d MoE layers, %d distinct expert sets over all tokens and layers: %s'
      % (len(t), len(sets), sorted(sets)[:3]), flush=True)
" 2>/dev/null | tee -a "$OUTD/routing_gpu.txt")
  echo "ELAPSED $(( $(date +%s) - T0 ))"
done
# 2. run 1's method and graph reuse
for reuse in on off; do
  for m in qwen3-30b-a3b llama-3.1-8b; do
    if [ $reuse = off ]; then export LLAMA_GRAPH_REUSE_DISABLE=1; else unset LLAMA_GRAPH_REUSE_DISABLE; fi
    timeout 120 python3 $S/h100_bench.py --llama-cpp-pkg $PKG --gguf-dir $GZ --quiet-log --models $m \
      --pp-configs 512:512 --tg 0 --reps 5 --out "$OUTD/graph_reuse_$reuse.jsonl" | grep -E "^RESULT|FAIL"
    timeout 120 python3 $S/h100_bench.py --llama-cpp-pkg $PKG --gguf-dir $GZ --quiet-log --models $m \
      --out "$OUTD/graph_reuse_$reuse.jsonl" | grep -E "^RESULT|FAIL"
    echo "graph reuse $reuse $m done"
  done
done
unset LLAMA_GRAPH_REUSE_DISABLE
echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"

#!/bin/bash
# The MoE micro-batch run (README-h100.md "MoE prompt speed by micro-batch"): for each MoE model, the zero-weight GGUF
# and its spread-routing copy (make_spread_gguf.py) measured at pp128/ub128, pp512/ub128, pp512/ub512, pp2048/ub2048,
# one after the other in the same machine session; llama-3.1-8b (dense, zero) at the same configurations first and
# again at pp512 at the end, to tie the run to the earlier ones.  From the repository root, on the CUDA machine:
#   OUT=/tmp/out bash measurements/speed/h100_moe_run.sh
# Needs what h100_run.sh needs (.llamacpp-libs, .llamacpp-src/llama_cpp, .whl/gguf-*.whl, python3 with numpy).
# S= the folder holding h100_bench.py and make_spread_gguf.py (default measurements/speed; the bench imports
# $S/../llamacpp/measure.py).  Writes $OUT/run.log, nvidia-smi.txt, smi_trace.csv, moe_ubatch_zero.jsonl,
# moe_ubatch_spread.jsonl.
T0=$(date +%s)
OUTD=${OUT:-/tmp/out}
S=${S:-measurements/speed}
MOE_MODELS=${MOE_MODELS-"qwen3-30b-a3b gpt-oss-20b deepseek-v2-lite"}
# DENSE_MODELS: the dense (zero-weight) models measured first at CONFIGS (run 6: the dense micro-batch dependence)
DENSE_MODELS=${DENSE_MODELS:-llama-3.1-8b}
CONFIGS=${CONFIGS:-"128:128 512:128 512:512 2048:2048"}
GZ=${GZ:-/tmp/gguf}              # the zero-weight GGUFs (written if missing: sparse, no disk)
GS=${GS:-/tmp/gguf_spread}       # the spread-routing copies (each deleted after its run)
# CONFIGS="P:U ..." other configurations; OLD_METHOD=1 also measures each file as run 1 did (h100_bench.py's default).
# CPU dry run with tiny GGUFs already in $GZ: LCB=<dir with bin/ -> the pip wheel's llama_cpp/lib> EXTRA="--cpu --threads 2"
mkdir -p "$OUTD"
exec > >(tee -a "$OUTD/run.log") 2>&1
export PYTHONUNBUFFERED=1
nvidia-smi > "$OUTD/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.max.sm,power.limit --format=csv
source measurements/speed/cuda_env.sh   # gguf-py, the llama.cpp libraries in $B, $LIBSTDCXX
ldd $B/bin/libggml-cuda.so | grep -E "cublas|cudart|not found"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu,temperature.gpu,memory.used --format=csv \
  -lms 250 > "$OUTD/smi_trace.csv" 2>&1 &
SMI=$!
bench() {  # bench GGUF_DIR WEIGHTS_DATA OUTFILE MODEL CONFIGS...
  local dir=$1 data=$2 out=$3 m=$4; shift 4
  LD_PRELOAD=$LIBSTDCXX LLAMA_CPP_LIB_PATH=$B/bin timeout ${BENCH_TIMEOUT:-120} python3 -X faulthandler \
    $S/h100_bench.py --llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir $dir $MK --quiet-log $EXTRA \
    --weights-data $data --models $m --pp-configs "$@" --tg 0 --reps 5 --out "$OUTD/$out"
  echo "bench $m $data rc=$?"
}
for m in $DENSE_MODELS; do MK=--make bench $GZ zero moe_ubatch_zero.jsonl $m $CONFIGS; done
for m in $MOE_MODELS; do
  MK=--make bench $GZ zero moe_ubatch_zero.jsonl $m $CONFIGS
  python3 $S/make_spread_gguf.py $GZ/$m.q4_0.gguf $GS/$m.q4_0.gguf || continue
  MK= bench $GS spread moe_ubatch_spread.jsonl $m $CONFIGS
  if [ -n "$OLD_METHOD" ]; then   # run 1's method on both files: pp512 after a warm-up, then 256 single-token decodes per rep
    for d in "$GZ zero" "$GS spread"; do set -- $d
      LD_PRELOAD=$LIBSTDCXX LLAMA_CPP_LIB_PATH=$B/bin timeout ${BENCH_TIMEOUT:-120} python3 -X faulthandler \
        $S/h100_bench.py --llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir $1 --quiet-log $EXTRA --weights-data $2 \
        --models $m --out "$OUTD/moe_oldmethod.jsonl"
      echo "old method $m $2 rc=$?"
    done
  fi
  rm -f $GS/$m.q4_0.gguf
  echo "ELAPSED $(( $(date +%s) - T0 ))"
done
MK= bench $GZ zero moe_ubatch_zero.jsonl llama-3.1-8b 512:512
kill $SMI
grep -E "^RESULT|FAILED|rc=|sha256" "$OUTD/run.log"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,memory.used --format=csv
echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"

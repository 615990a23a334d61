#!/bin/bash
# The GPU machine's side of measurements/llamacpp_h200 (README.md): llama.cpp 0c1e57098 with CUDA for sm_90, then
#   1. measure.py --plan all:archs,all:archdecode over the shrunk catalog GGUFs (one per architecture cuda.jsonl
#      lacks; arch_ggufs.py) -> $OUT/h200_archs.jsonl
#   2. fa_depth_bench.py (flash attention off / on at depth) over zero-weight Q4_0 GGUFs -> $OUT/h200_fa_depth.jsonl
# with nvidia-smi before ($OUT/nvidia-smi.txt) and a trace during the run ($OUT/smi_trace.csv); a short table last.
# From the repository root:  OUT=/tmp/out BUDGET=480 bash measurements/llamacpp_h200/h200_run.sh
# Inputs in $CARRY (default .gpu18, git-ignored, carried): libs.tar.xz (lcb/bin/*.so built on another machine),
# llamacpp-src.tar.xz (vendor/llama.cpp of the llama-cpp-python 0.3.36 sdist, trimmed: the fallback build),
# llama_cpp/ (the sdist's bare package), whl/gguf-0.19.0-py3-none-any.whl, arch_gguf.tar (arch_ggufs.py's files,
# sparse). SCRIPTS (default measurements) holds llamacpp/measure.py, llamacpp/build_libs.sh and llamacpp_h200/*.py.
T0=$(date +%s)
OUTD=${OUT:-/tmp/out}
C=${CARRY:-.gpu18}
SC=${SCRIPTS:-measurements}
BUDGET=${BUDGET:-480}
mkdir -p "$OUTD"
exec > >(tee -a "$OUTD/run.log") 2>&1
export PYTHONUNBUFFERED=1
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
nvidia-smi > "$OUTD/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.reserved,memory.used,clocks.max.sm,power.limit --format=csv
nproc; free -g | head -2; nvcc --version | tail -1; lscpu | grep -E "Model name"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $C/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src
# the GGUFs (sparse): the shrunk catalog ones carried, the zero-weight Q4_0 ones written here meanwhile
mkdir -p /tmp/gguf_arch /tmp/gguf && tar -xf $C/arch_gguf.tar -C /tmp/gguf_arch
FA_MODELS=${FA_MODELS:-llama-3.1-8b qwen3-30b-a3b gemma-2-9b gpt-oss-20b qwen3-8b}
python3 -m runlocal.evidence.zero_gguf $FA_MODELS --out-dir /tmp/gguf > /tmp/zero_gguf.log 2>&1 &
WP=$!
B=/tmp/lcb
[ -f $C/libs.tar.xz ] && mkdir -p /tmp/carried && xz -dc $C/libs.tar.xz | tar -x -C /tmp/carried && B=/tmp/carried/lcb
ls $B/bin
LIBSTDCXX=$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/{print $NF; exit}')
fix_paths() {   # the CUDA libraries the build links to, wherever this machine has them
  for d in $(ldd $1/bin/libggml-cuda.so | awk '/not found/{print $1}'); do
    p=$(find /usr /opt -name "$d" 2>/dev/null | head -1); [ -n "$p" ] && export LD_LIBRARY_PATH=$(dirname "$p"):$LD_LIBRARY_PATH
  done
  ldd $1/bin/libggml-cuda.so | grep -E "cublas|cudart|libcuda|stdc|not found"
}
[ -f $B/bin/libggml-cuda.so ] && fix_paths $B
# does it load and run here? one tiny model, one context, one decode (the libstdc++ crash showed at the first load)
check() {
  LD_PRELOAD=$PRELOAD LLAMA_CPP_LIB_PATH=$1/bin timeout 90 python3 $SC/llamacpp/measure.py --backend cuda \
    --llama-cpp-pkg $C/llama_cpp --gguf-dir /tmp/gguf_arch --weights f16 --models-meta /tmp/gguf_arch/models_meta.json \
    --out /tmp/check_$2.jsonl --models qwen2.5-0.5b --plan all:archdecode > /tmp/check_$2.log 2>&1
  local rc=$?; echo "check $2 rc=$rc"; tail -3 /tmp/check_$2.log
  [ $rc -eq 0 ] && grep -q '"rc_batch": 0' /tmp/check_$2.jsonl
}
PRELOAD=$LIBSTDCXX
if [ -f $B/bin/libggml-cuda.so ] && check $B carried_preload; then :
elif [ -f $B/bin/libggml-cuda.so ] && PRELOAD= && check $B carried; then :
else
  # the fallback: build here from the carried source (measurements/llamacpp/build_libs.sh; ~4 min on 16 cores)
  mkdir -p .llamacpp-src && tar -xJf $C/llamacpp-src.tar.xz -C .llamacpp-src
  source $SC/llamacpp/build_libs.sh
  B=/tmp/lcb_dev
  build_libs $B -DGGML_CUDA_NCCL=OFF || { echo "BUILD FAILED"; exit 3; }
  ARCH_S=${ARCH_S:-45}      # the build took its time: a shorter slot for the buffers
  fix_paths $B
  PRELOAD=$LIBSTDCXX
  check $B built_preload || { PRELOAD=; check $B built; } || { echo "NOTHING LOADS"; exit 4; }
fi
echo "B=$B PRELOAD=$PRELOAD  ($(left)s left)"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,memory.used \
  --format=csv -lms 500 > "$OUTD/smi_trace.csv" 2>/dev/null &
SMI=$!

# 1. the buffers of the other architectures (a fixed slot)
ARCH_S=${ARCH_S:-100}
M=${ARCH_MODELS:-$(python3 -c "import json; print(' '.join(json.load(open('/tmp/gguf_arch/models_meta.json'))))")}
LD_PRELOAD=$PRELOAD LLAMA_CPP_LIB_PATH=$B/bin timeout $(( ARCH_S + 30 )) python3 -X faulthandler $SC/llamacpp/measure.py \
  --backend cuda --llama-cpp-pkg $C/llama_cpp --gguf-dir /tmp/gguf_arch --weights f16 \
  --models-meta /tmp/gguf_arch/models_meta.json --out "$OUTD/h200_archs.jsonl" --plan all:archs,all:archdecode \
  --deadline $ARCH_S --models $M > /tmp/archs.log 2>&1
echo "archs rc=$? $(wc -l < "$OUTD/h200_archs.jsonl") records ($(left)s left)"; grep -E "FAILED|Error|error" /tmp/archs.log | head -5

# 2. flash attention off / on at depth
wait $WP; cat /tmp/zero_gguf.log
FA_S=$(( $(left) - 25 ))
LD_PRELOAD=$PRELOAD LLAMA_CPP_LIB_PATH=$B/bin timeout $(( FA_S + 60 )) python3 -X faulthandler \
  $SC/llamacpp_h200/fa_depth_bench.py --llama-cpp-pkg $C/llama_cpp --gguf-dir /tmp/gguf \
  --out "$OUTD/h200_fa_depth.jsonl" --deadline $FA_S --quiet-log --models $FA_MODELS ${FA_ARGS:-}
echo "fa bench rc=$? ($(left)s left)"
kill $SMI
nvidia-smi --query-gpu=name,memory.used,clocks.sm,temperature.gpu --format=csv
cp /tmp/archs.log "$OUTD/archs.log"
echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"
python3 $SC/llamacpp_h200/table.py "$OUTD"

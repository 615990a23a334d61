#!/bin/bash
# The GPU machine's side of the second flash-attention round (fa_depth2_rule.md): llama.cpp 0c1e57098 built with CUDA
# for sm_90 (measurements/llamacpp/build_libs.sh, as h200_run.sh's fallback), then fa_depth_bench.py over zero-weight
# Q4_0 GGUFs at depth 2,048 / 8,192 / 24,576 -> $OUT/h200_fa_depth2.jsonl, within a self-imposed budget; also
# torch.cuda.mem_get_info() (the CUDA total for devices.json's h200-sxm).
# From the repository root:  OUT=/tmp/out BUDGET=370 bash .gpu18/gpu18b/h200_run2.sh
# Inputs in $CARRY (default .gpu18, git-ignored, carried): llamacpp-src.tar.xz, llama_cpp/, whl/gguf-*.whl (as
# h200_run.sh), gpu18b/zero_gguf.py (runlocal.evidence.zero_gguf with llama-3.2-3b and qwen3-14b; gguf + numpy only).
T0=$(date +%s)
OUTD=${OUT:-/tmp/out}
C=${CARRY:-.gpu18}
BUDGET=${BUDGET:-370}
mkdir -p "$OUTD"
exec > >(tee -a "$OUTD/run2.log") 2>&1
export PYTHONUNBUFFERED=1
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.reserved,memory.used,clocks.max.sm,power.limit --format=csv
python3 -c "import torch; f, t = torch.cuda.mem_get_info(); print('TORCH_MEM_GET_INFO', f, t, round(t / 2**30, 3), 'GiB total')"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $C/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
MODELS=${FA_MODELS:-llama-3.2-3b gemma-3-4b phi-3-mini-4k qwen3-14b qwen3-4b}
mkdir -p /tmp/gguf
python3 $C/gpu18b/zero_gguf.py $MODELS --out-dir /tmp/gguf > /tmp/zero_gguf.log 2>&1 &
WP=$!
mkdir -p .llamacpp-src && tar -xJf $C/llamacpp-src.tar.xz -C .llamacpp-src
source measurements/llamacpp/build_libs.sh
B=/tmp/lcb_dev
build_libs $B -DGGML_CUDA_NCCL=OFF > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; echo "BUILD FAILED"; exit 3; }
grep BUILD_SECONDS /tmp/build.log
for d in $(ldd $B/bin/libggml-cuda.so | awk '/not found/{print $1}'); do
  p=$(find /usr /opt -name "$d" 2>/dev/null | head -1); [ -n "$p" ] && export LD_LIBRARY_PATH=$(dirname "$p"):$LD_LIBRARY_PATH
done
PRELOAD=$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/{print $NF; exit}')
wait $WP; cat /tmp/zero_gguf.log
FA_S=$(( $(left) - 30 )); [ $FA_S -gt 200 ] && FA_S=200
echo "measuring: deadline ${FA_S}s ($(left)s left)"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,memory.used \
  --format=csv -lms 1000 > "$OUTD/smi_trace2.csv" 2>/dev/null &
SMI=$!
LD_PRELOAD=$PRELOAD LLAMA_CPP_LIB_PATH=$B/bin timeout $(( FA_S + 40 )) python3 -X faulthandler \
  measurements/llamacpp_h200/fa_depth_bench.py --llama-cpp-pkg $C/llama_cpp --gguf-dir /tmp/gguf \
  --out "$OUTD/h200_fa_depth2.jsonl" --deadline $FA_S --quiet-log --depths 2048 8192 24576 --models $MODELS
echo "fa bench rc=$? ($(left)s left)"
kill $SMI
echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"

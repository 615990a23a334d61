#!/bin/bash
# Run measurements/speed/h100_bench.py on a CUDA machine with the llama.cpp libraries built by
# measurements/llamacpp/cuda_run.sh (kept in .llamacpp-libs).  From the repository root:
#   OUT=/tmp/out bash measurements/speed/h100_run.sh [extra h100_bench.py args]
# Needs: .llamacpp-libs/libs.tar.xz.NN, .llamacpp-src/llama_cpp, .whl/gguf-0.19.0-py3-none-any.whl,
# python3 with numpy.  Writes $OUT/run.log, $OUT/nvidia-smi.txt, $OUT/h100_llamacpp.jsonl
# (and $OUT/h100_llamacpp_random.jsonl with RANDOM_MODELS set, see below).
T0=$(date +%s)
OUTD=${OUT:-/tmp/out}
mkdir -p "$OUTD"
exec > >(tee -a "$OUTD/run.log") 2>&1
export PYTHONUNBUFFERED=1
nvidia-smi > "$OUTD/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.max.sm,power.limit --format=csv
python3 --version
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src   # gguf and numpy; runlocal.evidence.zero_gguf (stdlib + gguf + numpy)
B=/tmp/lcb
if [ ! -f $B/bin/libggml-cuda.so ]; then
  cat .llamacpp-libs/libs.tar.xz.* | xz -d | tar -x -C /tmp || exit 2
  [ -d /tmp/lcb2/bin ] && B=/tmp/lcb2
fi
ls $B/bin
# the CUDA runtime libraries ggml-cuda links to (cuBLAS may live in a pip package)
for d in $(ldd $B/bin/libggml-cuda.so | awk '/not found/{print $1}'); do
  p=$(find /usr /opt -name "$d" 2>/dev/null | head -1); [ -n "$p" ] && export LD_LIBRARY_PATH=$(dirname "$p"):$LD_LIBRARY_PATH
done
ldd $B/bin/libggml-cuda.so | grep -E "cublas|cudart|not found"
# two libstdc++ copies crash at the first model load without this (measurements/llamacpp/README.md)
LIBSTDCXX=$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/{print $NF; exit}')
echo "LD_PRELOAD=$LIBSTDCXX"
LD_PRELOAD=$LIBSTDCXX LLAMA_CPP_LIB_PATH=$B/bin timeout ${BENCH_TIMEOUT:-420} python3 -X faulthandler \
  measurements/speed/h100_bench.py --llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir /tmp/gguf --make \
  --out "$OUTD/h100_llamacpp.jsonl" "$@"
echo "bench rc=$?"
# RANDOM_MODELS="m1 m2": the same models again with random data instead of zeros (make_random_gguf.py),
# each written, measured and deleted in turn -> $OUT/h100_llamacpp_random.jsonl
for m in ${RANDOM_MODELS:-}; do
  python3 measurements/speed/make_random_gguf.py /tmp/gguf/$m.q4_0.gguf /tmp/gguf_rand/$m.q4_0.gguf || continue
  LD_PRELOAD=$LIBSTDCXX LLAMA_CPP_LIB_PATH=$B/bin timeout ${BENCH_TIMEOUT:-420} python3 -X faulthandler \
    measurements/speed/h100_bench.py --llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir /tmp/gguf_rand \
    --weights-data random --out "$OUTD/h100_llamacpp_random.jsonl" --models $m
  echo "random $m rc=$?"
  rm -f /tmp/gguf_rand/$m.q4_0.gguf
done
grep -E "^RESULT|FAILED|deadline|^done|^random" "$OUTD/run.log"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,memory.used --format=csv
echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"

#!/bin/bash
# The GPU machine's side of measurements/llamacpp_cpumoe/cuda_cpumoe.py: llama.cpp 0c1e57098 with CUDA (the libraries
# of measurements/llamacpp/cuda_run.sh: unpacked from .llamacpp-libs when carried, else built here and, with
# PACK_LIBS=1, returned as $OUT/libs.tar.xz.NN), the zero-weight GGUFs written here, then every mode.
# From the repository root, with .llamacpp-src/ (the llama-cpp-python 0.3.36 sdist's vendor/llama.cpp and llama_cpp/)
# and .whl/gguf-0.19.0-py3-none-any.whl carried:   OUT=/tmp/out BUDGET=480 bash measurements/llamacpp_cpumoe/cuda_run.sh
# Run 2 (the libraries of run 1 carried in .llamacpp-libs; MODELS and MEASURE_ARGS pick the models and modes):
#   MODELS=qwen3.6-35b-a3b,qwen3-30b-a3b,gpt-oss-20b MEASURE_ARGS="--modes cpumoe_nommap --jobs 4096:2048:512:1:1:0:f16:f16" \
#     BUDGET=200 bash measurements/llamacpp_cpumoe/cuda_run.sh
#   MODELS=llama-3.1-8b,qwen3-32b MEASURE_ARGS="--modes ngl_half,ngl_half_nommap --jobs 4096:2048:512:1:1:0:f16:f16,32768:2048:2048:1:1:0:q8_0:q8_0" \
#     BUDGET=150 bash measurements/llamacpp_cpumoe/cuda_run.sh
T0=$(date +%s)
OUTD=${OUT:-/tmp/out}
mkdir -p "$OUTD"
exec > >(tee -a "$OUTD/run.log") 2>&1
export PYTHONUNBUFFERED=1
nvidia-smi; nproc; free -g | head -2; nvcc --version | tail -1
lscpu | grep -E "Model name"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src
B=/tmp/lcb
if [ ! -f $B/bin/libggml-cuda.so ] && ls .llamacpp-libs/libs.tar.xz.* >/dev/null 2>&1; then
  cat .llamacpp-libs/libs.tar.xz.* | xz -d | tar -x -C /tmp
fi
# the GGUFs meanwhile (CPU, sparse files)
M=${MODELS:-qwen3.6-35b-a3b,qwen3-30b-a3b,gpt-oss-20b}
python3 measurements/llamacpp_cpumoe/cuda_cpumoe.py --write-only --gguf-dir /tmp/gguf_cpumoe --models $M > /tmp/write.log 2>&1 &
WP=$!
source measurements/llamacpp/build_libs.sh
if [ ! -f $B/bin/libggml-cuda.so ]; then
  build_libs $B || exit $?
fi
ls $B/bin
for d in $(ldd $B/bin/libggml-cuda.so | awk '/not found/{print $1}'); do
  p=$(find /usr /opt -name "$d" 2>/dev/null | head -1); [ -n "$p" ] && export LD_LIBRARY_PATH=$(dirname "$p"):$LD_LIBRARY_PATH
done
ldd $B/bin/libggml-cuda.so | grep -E "cublas|cudart|not found"
wait $WP; cat /tmp/write.log
# two libstdc++ copies crash at the first model load without this (measurements/llamacpp/README.md)
LIBSTDCXX=$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/{print $NF; exit}')
LEFT=$(( ${BUDGET:-480} - ($(date +%s) - T0) ))
echo "measure: ${LEFT}s left"
LD_PRELOAD=$LIBSTDCXX LLAMA_CPP_PKG=$PWD/.llamacpp-src/llama_cpp LLAMA_CPP_LIB_PATH=$B/bin \
  timeout $(( LEFT - 10 )) python3 -X faulthandler measurements/llamacpp_cpumoe/cuda_cpumoe.py --gguf-dir /tmp/gguf_cpumoe \
  --out "$OUTD/cpumoe.jsonl" --deadline $(( LEFT - ${MARGIN:-90} )) --child-timeout 150 --models $M ${MEASURE_ARGS}
echo "measure rc=$?"
tar -C /tmp -cJf "$OUTD/logs.tar.xz" cpumoe_logs 2>/dev/null; ls -la "$OUTD"
nvidia-smi --query-gpu=name,memory.used --format=csv
echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"

#!/bin/bash
# Build the llama.cpp that llama-cpp-python 0.3.36 vendors (commit 0c1e57098) with CUDA
# for sm_90, write the zero-weight GGUFs, and run measure.py --backend cuda.
#
# Run from the repository root on a machine with an NVIDIA GPU, nvcc, cmake, ninja and
# python3 (numpy, typing_extensions).  Inputs, prepared on a machine with network:
#   .llamacpp-src/llama.cpp   the sdist's vendor/llama.cpp (docs/models/tests/tools and
#                             the non-CPU/CUDA ggml backends may be dropped)
#   .llamacpp-src/llama_cpp   the sdist's python package (used bare: see measure.py)
#   .whl/gguf-0.19.0-py3-none-any.whl
#   .llamacpp-libs/libs.tar.xz.NN   (optional) libraries built by an earlier run
# Outputs go to $OUT (or /tmp/out): run.log, nvidia-smi.txt, cuda.jsonl and, when the
# libraries were built by this run and PACK_LIBS=1, libs.tar.xz.NN (15 MB pieces);
# diag_*.log: a first quick run (see diag below).
# BUDGET (seconds, default 560) bounds the whole run; measure.py stops before it.
set -x
T0=$(date +%s)
R=$(pwd)
OUTD=${OUT:-/tmp/out}
mkdir -p "$OUTD"
exec > >(tee -a "$OUTD/run.log") 2>&1
export PYTHONUNBUFFERED=1
BUDGET=${BUDGET:-560}
B=/tmp/lcb
GG=/tmp/gguf

nvidia-smi > "$OUTD/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv
nproc; free -g; python3 --version; cmake --version | head -1; nvcc --version | tail -2
lscpu | grep -E "Model name" ; lscpu | grep -o -w -E "avx2|avx512f|avx512_vnni|f16c|fma|bmi2" | sort -u | tr '\n' ' '; echo

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site

BUILT=0
if [ -f $B/bin/libggml-cuda.so ]; then
  echo "reusing $B"
elif ls .llamacpp-libs/libs.tar.xz.* >/dev/null 2>&1; then
  cat .llamacpp-libs/libs.tar.xz.* | xz -d | tar -x -C /tmp && ls -la $B/bin
fi
if [ ! -f $B/bin/libggml-cuda.so ]; then
  NVCC=$(readlink -f "$(which nvcc)")
  CROOT=$(dirname "$(dirname "$NVCC")")
  CMX=()
  if ! ls "$CROOT"/lib64/libcublas.so* "$CROOT"/targets/*/lib/libcublas.so* >/dev/null 2>&1; then
    # no cuBLAS in the toolkit: take the one of the pip package nvidia-cublas
    LIBCB=$(find /usr /opt -name 'libcublas.so*' 2>/dev/null | grep -v stub | head -1)
    LIBCBLT=$(find /usr /opt -name 'libcublasLt.so*' 2>/dev/null | grep -v stub | head -1)
    INC=$(find /usr /opt -name cublas_v2.h 2>/dev/null | head -1)
    echo "cublas: $LIBCB $LIBCBLT $INC"
    mkdir -p /tmp/cb/lib
    ln -sf "$LIBCB" /tmp/cb/lib/libcublas.so; ln -sf "$LIBCBLT" /tmp/cb/lib/libcublasLt.so
    CMX=(-DCUDA_cublas_LIBRARY=/tmp/cb/lib/libcublas.so -DCUDA_cublasLt_LIBRARY=/tmp/cb/lib/libcublasLt.so
         "-DCMAKE_CUDA_FLAGS=-I$(dirname "$INC")" "-DCMAKE_CXX_FLAGS=-I$(dirname "$INC")")
    export LD_LIBRARY_PATH=$(dirname "$LIBCB"):$LD_LIBRARY_PATH
  fi
  cmake -S .llamacpp-src/llama.cpp -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$NVCC" \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_NUMBER=11312 -DLLAMA_BUILD_COMMIT=0c1e5709 "${CMX[@]}" || exit 2
  TB=$(date +%s)
  ninja -C $B -j $(( $(nproc) + 2 )) llama || exit 3
  echo "BUILD_SECONDS $(( $(date +%s) - TB ))"
  BUILT=1
  ls -la $B/bin
  if [ "${PACK_LIBS:-0}" = 1 ]; then
    tar -C /tmp -cf - lcb/bin | xz -T0 -1 > /tmp/libs.tar.xz && ls -la /tmp/libs.tar.xz
    split -b 15M -d /tmp/libs.tar.xz "$OUTD/libs.tar.xz."
  fi
fi
# the CUDA runtime libraries ggml-cuda links to
ldd $B/bin/libggml-cuda.so | grep -E "cublas|cudart|not found"
for d in $(ldd $B/bin/libggml-cuda.so | awk '/not found/{print $1}'); do
  p=$(find /usr /opt -name "$d" 2>/dev/null | head -1); [ -n "$p" ] && export LD_LIBRARY_PATH=$(dirname "$p"):$LD_LIBRARY_PATH
done

if [ ! -f $GG/qwen3-30b-a3b.q4_0.gguf ]; then
  python3 measurements/llamacpp/make_zero_gguf.py --out-dir $GG || exit 4
fi
df -h /tmp | tail -1; du -sh $GG

# a quick check that measure.py runs here; on a crash, retry without the Python log
# callback (llama.cpp's own logger to a file), then with the CPU alone, for the record
diag() {
  local name=$1; shift
  LLAMA_CPP_LIB_PATH=$B/bin timeout 150 python3 -X faulthandler measurements/llamacpp/measure.py --backend cuda \
    --llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir $GG --out /tmp/diag_$name.jsonl --models qwen3-4b \
    --echo "$@" > "$OUTD/diag_$name.log" 2>&1
  local rc=$?
  echo "diag $name rc=$rc"; tail -c 3000 "$OUTD/diag_$name.log"
  return $rc
}
CAPTURE=${CAPTURE:-}
if [ -z "$CAPTURE" ]; then
  if diag cb --plan all:smoke; then CAPTURE=callback
  elif diag fd --plan all:smoke --capture fd; then CAPTURE=fd
  else diag cpu --plan 0:smoke --capture fd; CAPTURE=none
  fi
fi
echo "CAPTURE=$CAPTURE"
[ "$CAPTURE" = none ] && { echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"; exit 5; }

# resume from earlier results carried in the working tree
[ -f measurements/llamacpp/data/cuda.jsonl ] && [ ! -f "$OUTD/cuda.jsonl" ] && cp measurements/llamacpp/data/cuda.jsonl "$OUTD/cuda.jsonl"
REMAIN=$(( BUDGET - ($(date +%s) - T0) - 15 ))
echo "measure budget ${REMAIN}s"
LLAMA_CPP_LIB_PATH=$B/bin timeout $(( REMAIN + 60 )) python3 measurements/llamacpp/measure.py --backend cuda \
  --llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir $GG --out "$OUTD/cuda.jsonl" --resume \
  --deadline "$REMAIN" --capture "$CAPTURE" ${MEASURE_ARGS}
echo "measure rc=$?"
wc -l "$OUTD/cuda.jsonl"

echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"

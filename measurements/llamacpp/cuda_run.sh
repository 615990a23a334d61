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
# The first quick runs (diag below) go to /tmp/diag_*.log; their tails are in run.log.
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
export PYTHONPATH=/tmp/site:$PWD/src   # gguf and numpy; runlocal.evidence.zero_gguf (stdlib + gguf + numpy)

# build_libs DIR [extra cmake args]: measurements/llamacpp/build_libs.sh (shared with measurements/llamacpp_cpumoe)
source measurements/llamacpp/build_libs.sh

# libs_info DIR: how the C++ runtime is linked (a libstdc++ copy exported by one library and
# used by another crashes at the first std::stringstream: see README.md)
libs_info() {
  for f in libllama.so libggml-base.so libggml-cuda.so; do
    echo "$f: NEEDED $(readelf -d $1/bin/$f | awk '/NEEDED/{print $5}' | tr '\n' ' ')" \
         "exported-libstdc++-syms $(nm -D --defined-only $1/bin/$f 2>/dev/null | grep -c ' T _ZNSt\| T _ZNSs\| T _ZNKSt')"
  done
}

BUILT=0
# libs in $B: reused (warm machine), unpacked from .llamacpp-libs, or built
if [ -f $B/bin/libggml-cuda.so ]; then
  echo "reusing $B"
elif ls .llamacpp-libs/libs.tar.xz.* >/dev/null 2>&1; then
  cat .llamacpp-libs/libs.tar.xz.* | xz -d | tar -x -C /tmp
  [ -d /tmp/lcb2/bin ] && B=/tmp/lcb2
  ls -la $B/bin
fi
if [ ! -f $B/bin/libggml-cuda.so ]; then
  build_libs $B || exit $?
fi
echo "toolchain: $(command -v g++) -> $(readlink -f "$(command -v g++)")"; file "$(command -v g++)" | head -1
ls -la /usr/bin/g++* 2>/dev/null | head -3
LIBSTDCXX=$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/{print $NF; exit}')
echo "system libstdc++: $LIBSTDCXX"
libs_info $B
# the CUDA runtime libraries ggml-cuda links to
ldd $B/bin/libggml-cuda.so | grep -E "cublas|cudart|stdc|nccl|not found"
for d in $(ldd $B/bin/libggml-cuda.so | awk '/not found/{print $1}'); do
  p=$(find /usr /opt -name "$d" 2>/dev/null | head -1); [ -n "$p" ] && export LD_LIBRARY_PATH=$(dirname "$p"):$LD_LIBRARY_PATH
done

if [ ! -f $GG/qwen3-30b-a3b.q4_0.gguf ]; then
  python3 -m runlocal.evidence.zero_gguf --out-dir $GG || exit 4
fi
df -h /tmp | tail -1; du -sh $GG

# a quick check that measure.py runs here; on a crash, retry without the Python log
# callback (llama.cpp's own logger to a file), then with the CPU alone, for the record
diag() {
  local name=$1; shift
  LD_PRELOAD=$PRELOAD LLAMA_CPP_LIB_PATH=$B/bin timeout 150 python3 -X faulthandler measurements/llamacpp/measure.py --backend cuda \
    --llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir $GG --out /tmp/diag_$name.jsonl --models qwen3-4b \
    --echo "$@" > "/tmp/diag_$name.log" 2>&1
  local rc=$?
  echo "diag $name rc=$rc"; tail -c 6000 "/tmp/diag_$name.log"
  if [ $rc -ge 128 ] && [ $rc -ne 137 ] && command -v gdb >/dev/null; then
    # a native crash: where, for the record
    LD_PRELOAD=$PRELOAD LLAMA_CPP_LIB_PATH=$B/bin timeout 120 gdb -q -batch -ex run -ex bt -ex "info threads" --args python3 \
      measurements/llamacpp/measure.py --backend cuda --llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir $GG \
      --out /tmp/diag_gdb.jsonl --models qwen3-4b "$@" > "/tmp/diag_${name}_gdb.log" 2>&1
    tail -c 5000 "/tmp/diag_${name}_gdb.log"
  fi
  return $rc
}
CAPTURE=${CAPTURE:-}
PRELOAD=${PRELOAD-}
if [ -z "$CAPTURE" ]; then
  if diag cb --plan all:smoke; then CAPTURE=callback
  elif [ -n "$LIBSTDCXX" ] && PRELOAD=$LIBSTDCXX && diag cb_preload --plan all:smoke; then CAPTURE=callback
  elif diag fd_preload --plan all:smoke --capture fd; then CAPTURE=fd
  else
    # rebuild with the C++ runtime kept private to each library (and the system compiler
    # when there is one), then try again
    PRELOAD=
    FIX=(-DGGML_CUDA_NCCL=OFF "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,--exclude-libs,ALL")
    if [ -x /usr/bin/g++ ] && [ "$(readlink -f /usr/bin/g++)" != "$(readlink -f "$(command -v g++)")" ]; then
      FIX+=(-DCMAKE_C_COMPILER=/usr/bin/gcc -DCMAKE_CXX_COMPILER=/usr/bin/g++ -DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++)
    fi
    B=/tmp/lcb2
    PACK_LIBS=1 build_libs $B "${FIX[@]}" && libs_info $B
    if diag cb_rebuilt --plan all:smoke; then CAPTURE=callback
    elif [ -n "$LIBSTDCXX" ] && PRELOAD=$LIBSTDCXX && diag cb_rebuilt_preload --plan all:smoke; then CAPTURE=callback
    else CAPTURE=none
    fi
  fi
fi
echo "PRELOAD=$PRELOAD B=$B"
echo "CAPTURE=$CAPTURE"
[ "$CAPTURE" = none ] && { echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"; exit 5; }

# resume from earlier results carried in the working tree
[ -f measurements/llamacpp/data/cuda.jsonl ] && [ ! -f "$OUTD/cuda.jsonl" ] && cp measurements/llamacpp/data/cuda.jsonl "$OUTD/cuda.jsonl"
REMAIN=$(( BUDGET - ($(date +%s) - T0) - 15 ))
echo "measure budget ${REMAIN}s"
LD_PRELOAD=$PRELOAD LLAMA_CPP_LIB_PATH=$B/bin timeout $(( REMAIN + 60 )) python3 measurements/llamacpp/measure.py --backend cuda \
  --llama-cpp-pkg .llamacpp-src/llama_cpp --gguf-dir $GG --out "$OUTD/cuda.jsonl" --resume \
  --deadline "$REMAIN" --capture "$CAPTURE" ${MEASURE_ARGS}
echo "measure rc=$?"
wc -l "$OUTD/cuda.jsonl"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv

echo "TOTAL_SECONDS $(( $(date +%s) - T0 ))"

# Sourced by measurements/llamacpp/cuda_run.sh and measurements/llamacpp_cpumoe/cuda_run.sh (from the repository root,
# with .llamacpp-src/llama.cpp carried): build llama.cpp 0c1e57098's libllama and ggml with CUDA for sm_90.
# Sets BUILT=1; with PACK_LIBS=1 returns the libraries as $OUTD/libs.tar.xz.NN (15 MB pieces).
# build_libs DIR [extra cmake args]: configure + build libllama (and ggml) with CUDA in DIR
build_libs() {
  local D=$1; shift
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
  cmake -S .llamacpp-src/llama.cpp -B $D -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$NVCC" \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_NUMBER=11312 -DLLAMA_BUILD_COMMIT=0c1e5709 "${CMX[@]}" "$@" || return 2
  TB=$(date +%s)
  ninja -C $D -j $(( $(nproc) + 2 )) llama || return 3
  echo "BUILD_SECONDS $(( $(date +%s) - TB ))"
  BUILT=1
  ls -la $D/bin
  if [ "${PACK_LIBS:-0}" = 1 ]; then
    tar -C /tmp -cf - "$(basename $D)/bin" | xz -T0 -1 > /tmp/libs.tar.xz && ls -la /tmp/libs.tar.xz
    rm -f "$OUTD"/libs.tar.xz.*
    split -b 15M -d /tmp/libs.tar.xz "$OUTD/libs.tar.xz."
  fi
}

# Sourced by the MoE GPU run scripts (h100_moe_run.sh, h100_moe_check.sh) from the repository root: gguf-py from .whl
# into $SITE, the llama.cpp libraries in $B (unpacked from .llamacpp-libs; LCB= another folder, e.g. the CPU dry run's
# pip wheel), the CUDA libraries libggml-cuda.so cannot find added to LD_LIBRARY_PATH (cuBLAS may live in a pip
# package), and $LIBSTDCXX, the system libstdc++ to preload (two copies crash the first model load:
# measurements/llamacpp/README.md).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target ${SITE:=/tmp/site} .whl/*.whl || exit 1
export PYTHONPATH=$SITE:$PWD/src   # gguf; runlocal.evidence.zero_gguf
B=${LCB:-/tmp/lcb}
if [ ! -d $B/bin ]; then
  cat .llamacpp-libs/libs.tar.xz.* | xz -d | tar -x -C /tmp || exit 2
  [ -d /tmp/lcb2/bin ] && B=/tmp/lcb2
fi
for d in $(ldd $B/bin/libggml-cuda.so 2>/dev/null | awk '/not found/{print $1}'); do
  p=$(find /usr /opt -name "$d" 2>/dev/null | head -1); [ -n "$p" ] && export LD_LIBRARY_PATH=$(dirname "$p"):$LD_LIBRARY_PATH
done
LIBSTDCXX=$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/{print $NF; exit}')

#!/usr/bin/env bash
# The GPU check, in one run from the repository root on a machine with an NVIDIA GPU (an H200 here), writing
# everything under $OUT (a temporary folder when unset):
#   gpu.txt            nvidia-smi and the versions seen
#   suite.log          a time-boxed part of the suite with TRACEGRAD_DEVICE=cuda (SUITE_SECONDS, default 240)
#   bench.log          benchmarks/gpu.py against PyTorch and JAX on the same GPU (BENCH_SECONDS, default 150)
#   models.log         the MLP and GPT training steps of benchmarks/models.py against JAX (MODELS_SECONDS, default 150)
#   tensor_cores.log   benchmarks/tensor_cores.py with mma.sync, then with Hopper's wgmma (TRACEGRAD_WGMMA=1)
# Wheels the machine lacks (optree, cffi, ...) travel in .whl/ and are installed first, without the network.
# BACKEND=opencl SMALL=1 runs the same steps on an OpenCL device (PoCL on a CPU) at small sizes: how a machine without
# a GPU checks the script.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
BACKEND=${BACKEND:-cuda}
SMALL=${SMALL:-0}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "installing the carried wheels failed" | tee "$OUT/gpu.txt"; exit 1; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}   # the working tree itself, no install step
export TRACEGRAD_DEVICE=$BACKEND

{
  (nvidia-smi || echo "no nvidia-smi") 2>&1
  python3 -c "import sys, numpy, tracegrad; print(sys.version); print('numpy', numpy.__version__);
print('tracegrad devices:', tracegrad.devices())" 2>&1
  for m in torch jax cuda.bindings; do python3 -c "import $m; print('$m', getattr($m, '__version__', ''))" 2>&1 | tail -1; done
} > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"

if [ "$SMALL" = 1 ]; then
  tests=(tests/devices/test_gpu.py -k "every_kind_of_kernel and softmax")
  bench=(--size 65536 --n 128)
  models=()
else
  tests=(tests/devices/test_gpu.py tests/test_array.py tests/numpy/test_elementwise.py tests/numpy/test_reductions.py
         tests/numpy/test_contract.py tests/transforms tests/test_nn.py)
  bench=(--compare)
  models=(mlp gpt)
fi

echo "== suite (${tests[*]})"
timeout "${SUITE_SECONDS:-240}" python3 -m pytest -q -x -p no:cacheprovider "${tests[@]}" > "$OUT/suite.log" 2>&1
echo "suite exit: $? (124: out of time)" | tee -a "$OUT/suite.log"
tail -n 15 "$OUT/suite.log"

: > "$OUT/tensor_cores.log"
if [ "$BACKEND" = cuda ]; then
  for w in 0 1; do
    echo "== benchmarks/tensor_cores.py TRACEGRAD_WGMMA=$w" | tee -a "$OUT/tensor_cores.log"
    TRACEGRAD_WGMMA=$w timeout 90 python3 benchmarks/tensor_cores.py >> "$OUT/tensor_cores.log" 2>&1
    echo "tensor_cores exit: $?" | tee -a "$OUT/tensor_cores.log"
  done
  cat "$OUT/tensor_cores.log"
fi

echo "== benchmarks/gpu.py"
timeout "${BENCH_SECONDS:-150}" python3 benchmarks/gpu.py --backend "$BACKEND" "${bench[@]}" > "$OUT/bench.log" 2>&1
echo "bench exit: $?" | tee -a "$OUT/bench.log"
cat "$OUT/bench.log"

: > "$OUT/models.log"
for w in "${models[@]}"; do
  echo "== benchmarks/models.py --only $w" | tee -a "$OUT/models.log"
  timeout "${MODELS_SECONDS:-150}" python3 benchmarks/models.py --quick --no-first-call --only "$w" >> "$OUT/models.log" 2>&1
  echo "models $w exit: $?" | tee -a "$OUT/models.log"
done
cat "$OUT/models.log"
echo "results in $OUT"

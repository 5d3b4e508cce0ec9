#!/usr/bin/env bash
# The GPU checks of issue 21 (items 3 and 4) in one call on a lent GPU machine:
#
#     OUT=/some/folder bash benchmarks/gpu_checks.sh
#
# 1. versions of the GPU, driver, Python, numpy, numba, numba-cuda, torch;
# 2. the real tensor core through PyTorch (tests/data/gpu_witness/measure.py) -> witness.tar;
# 3. `workbench probe torch-cuda-IN-OUT` for fp16/bf16 -> fp32, tf32 -> fp32, fp16 -> fp16 (background);
# 4. the real-GPU differential tests of tests/test_gpu.py (device="cuda" against the CPU, bit for bit);
# 5. benchmarks/bench_gpu.py: presets at 2048^3 (the AMD kinds' kernels among them), H100 fp16 at 4096^3,
#    the full Figure 7 grid (under a private MPS daemon, --mps, so that the sweep workers' kernels run
#    side by side).
# Every stage has its own time limit (they add up to 11.5 minutes, past a 10-minute command limit:
# STAGES="witness probes tests" then STAGES="bench grid" split them over two calls); the logs go to
# $OUT/logs.tgz and a summary to stdout.  Needs PyTorch with CUDA, numba and numba-cuda (0.30
# cannot compile with numpy 2.5: a numpy 2.4 wheel under .whl/ goes first on the path then).
set -u
OUT=${OUT:-/tmp/gpu_checks}
LOG=/tmp/gpu_checks_logs
rm -rf "$LOG"; mkdir -p "$OUT" "$LOG"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} NUMBA_CACHE_DIR=/tmp/numba_cache
PY=python3
start=$(date +%s)
# numba-cuda 0.30 registers np.row_stack, which numpy 2.5 removed (AttributeError at the first
# kernel compilation): a numpy 2.4 wheel under .whl/ goes first on the path where the machine has 2.5
if [ "$($PY -c 'import numpy; print(numpy.__version__[:3])')" = "2.5" ] && ls .whl/numpy-2.4*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/numpy-2.4*.whl \
        && export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
STAGES=${STAGES:-witness probes tests bench grid}
want() { case " $STAGES " in *" $1 "*) return 0;; esac; return 1; }
stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }

{ nvidia-smi; $PY - <<'EOF'
import sys, numpy, numba, torch
print("python", sys.version.split()[0], "numpy", numpy.__version__, "numba", numba.__version__,
      "torch", torch.__version__, "cuda", torch.version.cuda, "cores", __import__("os").cpu_count())
EOF
$PY -m pip show numba-cuda cuda-bindings cuda-core 2>/dev/null | grep -E '^(Name|Version)'; } > "$LOG/env.txt" 2>&1
cat "$LOG/env.txt"

# the GPU back end's own check (numba-cuda, a GPU, a numpy it can compile with), named in the log
timeout 120 $PY -c "from workbench.engine import gpu; gpu.cuda_module(); from workbench.engine import cuda_kernels; \
import importlib; [importlib.import_module(f'workbench.engine.operations.{op}.cuda') for op in \
('tfdpa', 'gstfdpa', 'fma', 'amd_fdpa', 'ftz_addmul')]; print('numba-cuda kernels import: ok')" > "$LOG/kernels_import.txt" 2>&1
tail -1 "$LOG/kernels_import.txt"

stamp "witness measurement and probes start"
WIT=
want witness && { (timeout 150 $PY tests/data/gpu_witness/measure.py /tmp/witness > "$LOG/witness.log" 2>&1;
 echo "witness exit $?" >> "$LOG/witness.log") & WIT=$!; }
want probes && for t in fp16-fp32 bf16-fp32 tf32-fp32 fp16-fp16; do
    (timeout 330 $PY -m workbench probe "torch-cuda-$t" --verify 5000 > "$LOG/probe_$t.txt" 2>&1;
     echo "probe exit $?" >> "$LOG/probe_$t.txt") &
done

if want tests; then
    stamp "real-GPU differential tests"
    # (without pytest-xdist the project's addopts "-n auto" would be an unknown option)
    XDIST=$($PY -c "import xdist" 2>/dev/null && echo "-n 8" || echo "-o addopts=-ra")
    timeout 220 $PY -m pytest -q -p no:cacheprovider $XDIST -m "" -k "gpu_matches_cpu" tests/test_gpu.py \
        > "$LOG/test_gpu.log" 2>&1
    echo "pytest exit $?" >> "$LOG/test_gpu.log"
    tail -15 "$LOG/test_gpu.log"
fi
if [ -n "$WIT" ]; then
    wait $WIT
    tail -4 "$LOG/witness.log"
    tar cf "$OUT/witness.tar" -C /tmp witness 2>/dev/null
fi

if want bench; then
stamp "bench_gpu at 2048^3"
timeout 120 $PY benchmarks/bench_gpu.py --size 2048 --repeats 3 --skip-grid --presets hopper/wgmma/fp16-\>fp32 \
    hopper/wgmma/tf32-\>fp32 hopper/wgmma/fp8_e4m3-\>fp32 blackwell/tcgen05.mma/fp4_e2m1-\>fp32 \
    hopper/dmma/fp64-\>fp64 cdna1/mfma/fp16-\>fp32 cdna2/mfma/fp16-\>fp32 cdna3/mfma/fp16-\>fp32 \
    > "$LOG/bench_2048.txt" 2>&1
cat "$LOG/bench_2048.txt"
stamp "bench_gpu at 4096^3"
timeout 60 $PY benchmarks/bench_gpu.py --size 4096 --repeats 3 --skip-grid --presets hopper/wgmma/fp16-\>fp32 \
    > "$LOG/bench_4096.txt" 2>&1
cat "$LOG/bench_4096.txt"
fi
if want grid; then
stamp "Figure 7 grid on the GPU"
timeout 170 $PY benchmarks/bench_gpu.py --size 256 --repeats 1 --presets hopper/wgmma/fp16-\>fp32 --mps \
    > "$LOG/bench_grid.txt" 2>&1
tail -8 "$LOG/bench_grid.txt"
fi

wait
for f in "$LOG"/probe_*.txt; do echo "== $f"; grep -vE "infer: " "$f" | tail -14; done
tar czf "$OUT/logs.tgz" -C /tmp gpu_checks_logs
stamp "done"

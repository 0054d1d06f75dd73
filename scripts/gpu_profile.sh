# The benchmarks and profiles beside gpu_check.sh on a lent GPU machine (docs/cuda.md):
#   OAR_GPU_CHECK_EXTRA=scripts/gpu_profile.sh bash scripts/gpu_check.sh .gpu/bundle.tar.xz
# Where ResNet-50 and the Transformer encoder spend a training step, oar beside torch (float32 and AMP
# bfloat16), and, since that machine's Xeon has AMX, bfloat16 against float32 on its CPU (issue 18).
# About 4 minutes; gpu_check.sh gives it what its budget has left (raise OAR_GPU_CHECK_BUDGET to ~500).
set -u
cd "$OAR_ROOT"
PY=$(command -v python3)
export LD_LIBRARY_PATH="$OAR_GPU_CHECK_DIR/deps:$LD_LIBRARY_PATH"
mkdir -p build/bin && ln -sf "$OAR_GPU_CHECK_DIR/b/bin/oar_bench_lowp" build/bin/oar_bench_lowp
echo "=== GPU profile: ResNet-50 and the Transformer encoder, oar vs torch (+ AMP bf16), profiles fp32 and O1"
timeout -s INT 150 "$PY" tests/benchmarks/profile_gpu.py --device "$OAR_DEVICE" --steps 5 --top 14 --profile fp32,O1
echo "=== bench_amp_ops on the CPU, 16 threads (AMX machine)"
timeout -s INT 60 "$PY" tests/benchmarks/bench_amp_ops.py --threads 16 --torch-python "$PY"
echo "=== bench_amp_training on the CPU, 16 threads (AMX machine)"
OMP_NUM_THREADS=16 timeout -s INT 100 "$PY" tests/benchmarks/bench_amp_training.py --steps 3 --torch-python "$PY"
echo "=== extra done"

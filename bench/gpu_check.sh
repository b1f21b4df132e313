#!/usr/bin/env bash
# The GPU measurements, in one script for a machine with a CUDA GPU and PyTorch preinstalled (no
# network): builds crosstrain against that PyTorch, then runs
#   1. bench: ResNet-50, batch 256, 224 px, channels-last, fp32 / tf32 / fp16 / bf16;
#   2. the same loop in Python eager (bench/train_vs_python.sh on the GPU configs);
#   3. the loss-scaler and optimizer checks on CUDA (fused kernels) and a profile with Kineto;
#   4. data-parallel training through NCCL at world size 1 (the code path of N GPUs) and comm-bench.
# Writes everything under ${OUT:-gpu-results}/. usage: bash bench/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-gpu-results}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
"$PY" -c "import torch;print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))" | tee "$OUT/torch.txt"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCROSSTRAIN_PYTHON="$PY" -DCROSSTRAIN_BUILD_TESTS=OFF \
  > "$OUT/cmake.txt" 2>&1
cmake --build build-gpu --parallel "$(nproc)" --target crosstrain optim_bench > "$OUT/build.txt" 2>&1
BIN=build-gpu/crosstrain
$BIN doctor --python "$PY" --json "$OUT/doctor.json" | tee "$OUT/doctor.txt"
$BIN bench --device cuda --model resnet50 --batch-size 256 --image-size 224 --steps 40 --warmup-steps 10 \
  --channels-last --precisions fp32,tf32,fp16,bf16 --json "$OUT/bench_resnet50_b256.json" | tee "$OUT/bench.txt"
build-gpu/bench/optim_bench 50 cuda | tee "$OUT/optim_bench.txt"
$BIN train --device cuda --model resnet50 --batch-size 256 --precision fp16 --channels-last --steps 12 \
  --warmup-steps 2 --profile "$OUT/profile" --profile-wait 4 --profile-warmup 2 --profile-active 3 --no-progress \
  --json "$OUT/train_profiled.json" > /dev/null
$BIN analyze "$OUT"/profile/cycle0/rank0.pt.trace.json --json "$OUT/analyze.json" | tee "$OUT/analyze.txt"
# 4. NCCL at world size 1: the same Reducer, buckets and rank-0 reporting as on N GPUs.
$BIN launch --nproc-per-node 1 --master-port 0 -- train --device cuda --dist-backend nccl --model resnet50 \
  --batch-size 256 --precision bf16 --channels-last --steps 20 --warmup-steps 5 --no-progress \
  --json "$OUT/train_nccl_world1.json" | tee "$OUT/train_nccl_world1.txt" || true
$BIN launch --nproc-per-node 1 --master-port 0 -- comm-bench --device cuda --dist-backend nccl --max-bytes 256M \
  --json "$OUT/comm_bench_nccl.json" | tee "$OUT/comm_bench_nccl.txt" || true
sed -i "s#^PY=.venv/bin/python#PY=${PY}#; s#^BIN=build/crosstrain#BIN=${BIN}#" bench/train_vs_python.sh
bash bench/train_vs_python.sh 3 cuda | tee "$OUT/train_vs_python.txt"
git checkout -- bench/train_vs_python.sh 2>/dev/null || true

#!/usr/bin/env bash
# Training throughput on real JPEGs (500x375 ImageFolder, decoded and augmented by the loader)
# against fixed synthetic batches at the same settings, alternating; prints the share kept.
# usage: bench/real_vs_synthetic.sh [rounds] [workers] [model] [batch]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"; WORKERS="${2:-2}"; MODEL="${3:-resnet50}"; BATCH="${4:-8}"
BIN=build/crosstrain
PY=.venv/bin/python
out=$(mktemp -d)
$BIN make-imagefolder --out "$out/tree" --size 500x375 --train 256 --val 16 --classes 4 >/dev/null
args="--device cpu --model $MODEL --batch-size $BATCH --image-size 224 --steps 8 --warmup-steps 2 --no-progress"
syn=(); real=(); wait=()
for r in $(seq "$ROUNDS"); do
  $BIN train $args --num-classes 4 --json "$out/s.json" >/dev/null 2>&1
  syn+=("$($PY -c "import json;print(json.load(open('$out/s.json'))['throughput_img_s'])")")
  $BIN train $args --data "imagefolder:$out/tree" --workers "$WORKERS" --no-final-eval --json "$out/r.json" >/dev/null 2>&1
  real+=("$($PY -c "import json;print(json.load(open('$out/r.json'))['throughput_img_s'])")")
  wait+=("$($PY -c "import json;print(json.load(open('$out/r.json'))['data_wait_share'])")")
done
$PY - "${syn[*]}" "${real[*]}" "${wait[*]}" "$MODEL" "$BATCH" "$WORKERS" <<'PYEOF'
import statistics, sys
s = [float(v) for v in sys.argv[1].split()]; r = [float(v) for v in sys.argv[2].split()]
w = [float(v) for v in sys.argv[3].split()]
ms, mr = statistics.median(s), statistics.median(r)
print(f"{sys.argv[4]} batch {sys.argv[5]}, {sys.argv[6]} workers: synthetic {ms:.2f} img/s, real JPEG {mr:.2f} img/s, "
      f"kept {mr / ms * 100:.1f}%, data wait {statistics.median(w) * 100:.1f}% of step")
PYEOF
rm -rf "$out"

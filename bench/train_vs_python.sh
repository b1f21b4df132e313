#!/usr/bin/env bash
# crosstrain's training loop vs the equivalent Python eager loop on the same torch (.venv), run
# alternately (A B A B ...) so machine noise hits both; prints the median of each and the ratio.
#
# usage: bench/train_vs_python.sh [rounds] [device]   (from the repository root, after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
DEVICE="${2:-cpu}"
PY=.venv/bin/python
BIN=build/crosstrain
out=$(mktemp -d)

configs=(
  "resnet50 fp32 --batch-size 8 --image-size 224 --steps 6 --warmup-steps 2"
  "resnet50 bf16 --batch-size 8 --image-size 224 --steps 6 --warmup-steps 2"
  "resnet18 fp32 --small-stem --num-classes 10 --batch-size 32 --image-size 32 --steps 12 --warmup-steps 3"
  "resnet18 bf16 --small-stem --num-classes 10 --batch-size 32 --image-size 32 --steps 12 --warmup-steps 3"
  "resnet18 fp32 --small-stem --num-classes 10 --batch-size 32 --image-size 32 --steps 12 --warmup-steps 3 --channels-last"
  "resnet18 bf16 --small-stem --num-classes 10 --batch-size 32 --image-size 32 --steps 12 --warmup-steps 3 --channels-last"
)
if [ "$DEVICE" != "cpu" ]; then
  configs=(
    "resnet50 fp32 --batch-size 256 --image-size 224 --steps 30 --warmup-steps 5 --channels-last"
    "resnet50 fp16 --batch-size 256 --image-size 224 --steps 30 --warmup-steps 5 --channels-last"
    "resnet50 bf16 --batch-size 256 --image-size 224 --steps 30 --warmup-steps 5 --channels-last"
    "resnet18 fp32 --small-stem --num-classes 10 --batch-size 32 --image-size 32 --steps 60 --warmup-steps 10"
  )
fi

printf "%-9s %-5s %-50s %12s %12s %7s\n" model prec flags "crosstrain" "python" ratio
for cfg in "${configs[@]}"; do
  read -r model prec rest <<<"$cfg"
  ct=(); py=()
  for r in $(seq "$ROUNDS"); do
    $BIN train --device "$DEVICE" --model "$model" --precision "$prec" $rest --no-progress --json "$out/ct.json" >/dev/null 2>&1
    ct+=("$($PY -c "import json;print(json.load(open('$out/ct.json'))['throughput_img_s'])")")
    py+=("$($PY bench/python_train_loop.py --device "$DEVICE" --model "$model" --precision "$prec" $rest |
            $PY -c "import json,sys;print(json.load(sys.stdin)['throughput_img_s'])")")
  done
  $PY - "$model" "$prec" "$rest" "${ct[*]}" "${py[*]}" <<'PYEOF'
import statistics, sys
model, prec, rest, ct, py = sys.argv[1:]
ct = [float(v) for v in ct.split()]; py = [float(v) for v in py.split()]
c, p = statistics.median(ct), statistics.median(py)
print(f"{model:9s} {prec:5s} {rest:50s} {c:9.2f} i/s {p:9.2f} i/s {c/p:6.2f}x")
PYEOF
done
rm -rf "$out"

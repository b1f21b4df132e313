#!/usr/bin/env bash
# Recorder overhead: the same ResNet-50 CPU run with and without --profile (every measured step
# recorded), alternating A B A B so machine noise hits both; prints median throughput and the ratio.
# usage: bench/profile_overhead.sh [rounds] [recorder]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
REC="${2:-auto}"
BIN=build/crosstrain
PY=.venv/bin/python
out=$(mktemp -d)
args="--device cpu --model resnet50 --batch-size 8 --image-size 224 --steps 7 --warmup-steps 2 --no-progress"
base=(); prof=()
for r in $(seq "$ROUNDS"); do
  $BIN train $args --json "$out/a.json" >/dev/null 2>&1
  base+=("$($PY -c "import json;print(json.load(open('$out/a.json'))['throughput_img_s'])")")
  # wait 1 + warmup 1, then the 5 measured steps... all recorded: active 5.
  $BIN train $args --profile "$out/p" --profile-recorder "$REC" --profile-wait 1 --profile-warmup 1 \
    --profile-active 5 --json "$out/b.json" >/dev/null 2>&1
  prof+=("$($PY -c "import json;print(json.load(open('$out/b.json'))['throughput_img_s'])")")
done
$PY - "${base[*]}" "${prof[*]}" "$REC" <<'PYEOF'
import statistics, sys
a = [float(v) for v in sys.argv[1].split()]; b = [float(v) for v in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"recorder {sys.argv[3]}: without {ma:.2f} img/s, with {mb:.2f} img/s, overhead {(1 - mb / ma) * 100:+.1f}% "
      f"(rounds: {a} vs {b})")
PYEOF
rm -rf "$out"

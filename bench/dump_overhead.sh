#!/usr/bin/env bash
# Cost of `train --dump` in stats mode: the same ResNet-50 run without a dump and with every step
# dumped, alternately (A B A B ...) so machine noise hits both; prints each median step time and
# the ratio.
#
# usage: bench/dump_overhead.sh [rounds] [extra train flags...]   (repository root, after building)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
shift || true
PY=.venv/bin/python
BIN=build/crosstrain
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
FLAGS="--device cpu --model resnet50 --batch-size 4 --image-size 224 --steps 5 --warmup-steps 1 --no-progress $*"

median_ms() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['batch_time_ms_median'])" "$1"; }

plain=(); dumped=()
for r in $(seq "$ROUNDS"); do
  $BIN train $FLAGS --json "$out/plain.json" > /dev/null
  plain+=("$(median_ms "$out/plain.json")")
  $BIN train $FLAGS --dump "$out/dump" --dump-overwrite --dump-mode stats --dump-steps '' \
    --json "$out/dumped.json" > /dev/null 2>&1
  dumped+=("$(median_ms "$out/dumped.json")")
  records=$(($(wc -l < "$out/dump/index.jsonl") - 1))
done
"$PY" - "$records" "${plain[*]}" "${dumped[*]}" <<'PYEOF'
import statistics, sys
records = int(sys.argv[1])
plain = [float(x) for x in sys.argv[2].split()]
dumped = [float(x) for x in sys.argv[3].split()]
p, d = statistics.median(plain), statistics.median(dumped)
print(f"rounds: {len(plain)}; records per run (5 steps): {records}")
print(f"median step without --dump: {p:.1f} ms   (rounds: {', '.join(f'{x:.1f}' for x in plain)})")
print(f"median step with --dump (stats, every step): {d:.1f} ms   (rounds: {', '.join(f'{x:.1f}' for x in dumped)})")
print(f"ratio: {d / p:.3f}  (overhead {100 * (d / p - 1):.1f}%)")
PYEOF

#!/usr/bin/env bash
# What checkpoints cost a ResNet-50 run (weights + momentum: ~200 MB per checkpoint): the step-loop
# stall per checkpoint (snapshot to host memory, then a background write) against the time of the
# write itself (what a synchronous checkpoint would stall), and the write throughput against dd's
# on the same disk, measured in the same run. Rounds take turns: dd, then a training run.
# usage: bench/checkpoint_cost.sh [rounds] [dir]   (after scripts/build.sh)
#        CHECKPOINT_EVERY=N (default 2): steps between checkpoints; the run takes 5 x N steps.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
BIN=build/crosstrain
PY=.venv/bin/python
# A scratch folder on the build tree's disk unless one is given; removed at the end either way
# (only what this script made in a given folder).
if [ -n "${2:-}" ]; then
  DIR="$2"
  mkdir -p "$DIR"
  trap 'rm -rf "$DIR/ck" "$DIR/r.json" "$DIR/rows" "$DIR/train.log" "$DIR/dd.bin"' EXIT
else
  DIR="$(mktemp -d -p build checkpoint_cost.XXXXXX)"
  trap 'rm -rf "$DIR"' EXIT
fi
# Five checkpoints N steps apart; the last is the end-of-run checkpoint (with a step count that is no
# multiple of N it would follow the previous one closer and wait for its write). When a write takes
# longer than N steps, the next checkpoint waits for it, and that wait is stall too.
EVERY="${CHECKPOINT_EVERY:-2}"
args="--device cpu --model resnet50 --batch-size 4 --image-size 64 --steps $((5 * EVERY)) --warmup-steps 1 --no-progress"
: >"$DIR/rows"
for r in $(seq "$ROUNDS"); do
  # dd: 256 MiB, flushed to the disk like a checkpoint (fsync at the end).
  dd_s=$( { /usr/bin/time -f "%e" dd if=/dev/zero of="$DIR/dd.bin" bs=1M count=256 conv=fsync status=none; } 2>&1 )
  rm -f "$DIR/dd.bin"
  rm -rf "$DIR/ck"
  if ! $BIN train $args --checkpoint-dir "$DIR/ck" --checkpoint-every "$EVERY" --checkpoint-keep 2 --json "$DIR/r.json" \
      >"$DIR/train.log" 2>&1; then
    cat "$DIR/train.log" >&2
    exit 1
  fi
  size=$(stat -c %s "$(ls "$DIR"/ck/checkpoint_*.pt | tail -1)")
  $PY -c "
import json; r = json.load(open('$DIR/r.json'))['checkpoints']
print($dd_s, $size, r['written'], r['write_seconds'], r['stall_seconds'])" >>"$DIR/rows"
done
$PY - "$DIR/rows" <<'PYEOF'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
dd_mb_s = statistics.median(256 * 1048576 / r[0] / 1e6 for r in rows)
size = rows[-1][1]
write_s = statistics.median(r[3] / r[2] for r in rows)
stall_s = statistics.median(r[4] / r[2] for r in rows)
print(f"checkpoint size          {size / 1e6:.1f} MB")
print(f"write per checkpoint     {write_s * 1e3:.0f} ms  ({size / write_s / 1e6:.0f} MB/s; dd {dd_mb_s:.0f} MB/s, "
      f"ratio {size / write_s / 1e6 / dd_mb_s:.2f})")
print(f"loop stall per checkpoint {stall_s * 1e3:.0f} ms  ({stall_s / write_s * 100:.1f}% of the write)")
PYEOF

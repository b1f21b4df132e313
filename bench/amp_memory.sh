#!/usr/bin/env bash
# AMP peak memory against fp32 and against the floor that the fixed state allows, per batch size:
# `crosstrain bench` (fp32, then the device's AMP precision) on ResNet-50 at 224 px, one bench per
# batch size, one at a time. The floor is bench's (src/tools/bench/memory_floor.h): fixed state
# (fp32 weights, buffers, gradients, optimizer state) + (fp32 peak - fixed state) x 2/4. Memory does
# not depend on the machine's load; the timings bench also prints do.
#
# usage: bench/amp_memory.sh [batch sizes] [extra bench flags...]   (from the repository root, after scripts/build.sh)
#   bench/amp_memory.sh "8 64"                       # default
#   bench/amp_memory.sh "8 16 32 64" --device cuda
# Steps: 3 (1 warm-up) up to batch 16, 2 (1 warm-up) above: peaks are reached from the second step on
# (the first has no momentum yet), and an emulated bf16 step at batch 64 takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
BATCHES="${1:-8 64}"
shift || true
BIN=build/crosstrain
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

grep -m1 "model name" /proc/cpuinfo || true
for b in $BATCHES; do
  steps=(--steps 3 --warmup-steps 1)
  [ "$b" -gt 16 ] && steps=(--steps 2 --warmup-steps 1)
  echo "+ $BIN bench --model resnet50 --image-size 224 --batch-size $b ${steps[*]} --no-progress $* --json $out/b$b.json" >&2
  "$BIN" bench --model resnet50 --image-size 224 --batch-size "$b" "${steps[@]}" --no-progress "$@" \
    --json "$out/b$b.json" >"$out/b$b.log" 2>&1 || { cat "$out/b$b.log"; exit 1; }
done

$PY - "$out" $BATCHES <<'EOF'
import json, sys
d, batches = sys.argv[1], sys.argv[2:]
mib = lambda b: b / 2**20
print(f"{'batch':>5} {'precision':>9} {'fixed state':>12} {'fp32 peak':>11} {'peak':>11} {'floor':>11} {'peak/fp32':>9} {'peak/floor':>10}")
for b in batches:
    runs = json.load(open(f"{d}/b{b}.json"))["runs"]
    fp32 = next(r for r in runs if r["precision"] == "fp32")
    for r in runs:
        f = r.get("memory_floor")
        if not f:
            continue
        print(f"{b:>5} {r['precision']:>9} {mib(f['fixed_state_bytes']):8.1f} MiB {mib(fp32['peak_memory_bytes']):7.1f} MiB "
              f"{mib(r['peak_memory_bytes']):7.1f} MiB {mib(f['floor_bytes']):7.1f} MiB "
              f"{r['peak_memory_bytes'] / fp32['peak_memory_bytes']:9.3f} {f['of_floor']:10.3f}")
EOF

#!/usr/bin/env bash
# Data-parallel scaling on the CPU (Gloo over the loopback), measured in one run with turns taken:
#   weak scaling: 2 processes x 1 thread at per-rank batch B (crosstrain launch) against 1 process x
#   1 thread at batch B: the ratio of images per second (target >= 1.8x on ResNet-18 at 64 px);
#   overlap: the share of all-reduce time hidden behind other work, from each rank's trace with
#   `crosstrain analyze` (target >= 50%).
# usage: bench/dist_scaling.sh [rounds] [batch] [steps]   (after scripts/build.sh; 2+ cores)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-2}"
BATCH="${2:-32}"
STEPS="${3:-16}"
BIN=build/crosstrain
PY=.venv/bin/python
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
args="--device cpu --model resnet18 --image-size 64 --num-classes 100 --batch-size $BATCH --steps $STEPS --threads 1 --no-progress"
: >"$DIR/rows"
for r in $(seq "$ROUNDS"); do
  $BIN train $args --json "$DIR/one.json" >/dev/null 2>&1
  $BIN launch --nproc-per-node 2 --master-port 0 -- train $args --json "$DIR/two.json" >/dev/null 2>&1
  $PY -c "
import json
one = json.load(open('$DIR/one.json'))['throughput_img_s']; two = json.load(open('$DIR/two.json'))['throughput_img_s']
print(one, two)" >>"$DIR/rows"
done
rm -rf "$DIR/prof"
$BIN launch --nproc-per-node 2 --master-port 0 -- train $args --profile "$DIR/prof" >/dev/null 2>&1
$BIN analyze "$DIR/prof" --json "$DIR/analyze.json" >/dev/null
$PY - "$DIR/rows" "$DIR/analyze.json" "$BATCH" <<'PYEOF'
import json, statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
print(f"ResNet-18, 64 px, batch {sys.argv[3]} per rank, 1 thread per process, Gloo on the loopback")
print("round  1 process (img/s)  2 processes (img/s)  ratio")
for i, (one, two) in enumerate(rows, 1):
    print(f"{i:5d}  {one:17.1f}  {two:19.1f}  {two / one:5.2f}x")
print(f"median ratio {statistics.median(t / o for o, t in rows):.2f}x (target >= 1.8x)")
doc = json.load(open(sys.argv[2]))
traces = doc.get("traces", [doc])
for t in traces:
    total = t["total"] if "total" in t else t["analysis"]["total"]
    comm, hidden = total["comm_us"], total["comm_overlapped_us"]
    rank = t.get("rank", "?")
    print(f"rank {rank}: all-reduce and broadcast {comm / 1e3:.1f} ms in steps, {hidden / comm:.1%} overlapped (target >= 50%)")
PYEOF

#!/usr/bin/env bash
# Data-parallel scaling on the CPU (Gloo over the loopback), measured in one run with turns taken:
#   weak scaling: 2 processes x 1 thread at per-rank batch B (crosstrain launch) against 1 process x
#   1 thread at batch B: the ratio of images per second (target >= 1.8x on ResNet-18 at 64 px);
#   the machine's ceiling in the same round: 2 independent 1-process runs at once (no exchange);
#   the same 2-process run with --grad-compression bf16 (half the bytes on the wire);
#   CPU time per image of each run (all processes, from /proc/stat), which says what the exchange
#   costs in cycles whatever the noise of the shared host;
#   overlap: the share of all-reduce time hidden behind other work, from each rank's trace with
#   `crosstrain analyze` (target >= 50%), with each rank's compute per step and analyze's straggler
#   finding (ranks run in lockstep, so a slower core costs the job its difference).
# usage: bench/dist_scaling.sh [rounds=2] [batch=64] [steps=10]   (after scripts/build.sh; 2+ cores)
# Per-rank batch matters on 2 cores: the exchange (45 MB of gradients per step) costs the same CPU
# whatever the batch, so at batch 32 it is a larger share of a step (docs/PERFORMANCE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-2}"
BATCH="${2:-64}"
STEPS="${3:-10}"
BIN=build/crosstrain
PY=.venv/bin/python
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
args="--device cpu --model resnet18 --image-size 64 --num-classes 100 --batch-size $BATCH --steps $STEPS --threads 1 --no-progress"
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }  # user nice system irq softirq (ticks)
# measure NAME COMMAND...: runs it, appends "NAME busy_ticks" to $DIR/cpu
measure() {
  local name=$1; shift
  local b0; b0=$(busy)
  "$@" >/dev/null 2>&1
  echo "$name $(( $(busy) - b0 ))" >>"$DIR/cpu"
}
pair() {
  $BIN train $args --json "$DIR/pa.json" & local p=$!
  $BIN train $args --json "$DIR/pb.json"
  wait $p
}
: >"$DIR/rows"
for r in $(seq "$ROUNDS"); do
  : >"$DIR/cpu"
  measure one $BIN train $args --json "$DIR/one.json"
  measure pair pair
  measure two $BIN launch --nproc-per-node 2 --master-port 0 -- train $args --json "$DIR/two.json"
  measure bf16 $BIN launch --nproc-per-node 2 --master-port 0 -- train $args --grad-compression bf16 --json "$DIR/bf16.json"
  $PY - "$DIR" >>"$DIR/rows" <<'PYEOF'
import json, sys
d = sys.argv[1]
t = lambda n: json.load(open(f"{d}/{n}.json"))["throughput_img_s"]
cpu = dict(l.split() for l in open(f"{d}/cpu"))
print(t("one"), t("pa") + t("pb"), t("two"), t("bf16"), *(cpu[k] for k in ("one", "pair", "two", "bf16")))
PYEOF
done
rm -rf "$DIR/prof"
$BIN launch --nproc-per-node 2 --master-port 0 -- train $args --profile "$DIR/prof" >/dev/null 2>&1
$BIN analyze "$DIR/prof" --json "$DIR/analyze.json" >/dev/null
$PY - "$DIR/rows" "$DIR/analyze.json" "$BATCH" "$STEPS" "$(getconf CLK_TCK)" <<'PYEOF'
import json, statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
batch, steps, hz = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
print(f"ResNet-18, 64 px, batch {batch} per rank, 1 thread per process, Gloo on the loopback")
print("round  1 process  2 independent  2 ranks  2 ranks bf16   (img/s; ratios to 1 process)")
for i, (one, pair, two, bf, *_) in enumerate(rows, 1):
    print(f"{i:5d}  {one:9.1f}  {pair:8.1f} {pair/one:4.2f}x  {two:6.1f} {two/one:4.2f}x  {bf:6.1f} {bf/one:4.2f}x")
med = lambda k: statistics.median(r[k] / r[0] for r in rows)
print(f"median: 2 ranks {med(2):.2f}x (target >= 1.8x), bf16 compression {med(3):.2f}x, "
      f"2 independent processes {med(1):.2f}x (the machine's ceiling in the same rounds)")
print(f"2 ranks reach {statistics.median(r[2] / r[1] for r in rows):.0%} of the ceiling (median of rounds)")
# CPU seconds per image, all processes of a run together (start-up included).
per_img = lambda k, images: statistics.median(r[k] / hz / images for r in rows) * 1e3
one_ms = per_img(4, steps * batch)
print(f"CPU time per image: 1 process {one_ms:.1f} ms, 2 independent {per_img(5, 2 * steps * batch):.1f} ms, "
      f"2 ranks {per_img(6, 2 * steps * batch):.1f} ms, 2 ranks bf16 {per_img(7, 2 * steps * batch):.1f} ms")
doc = json.load(open(sys.argv[2]))
traces = doc.get("traces", [doc])
for t in traces:
    total = t["total"] if "total" in t else t["analysis"]["total"]
    comm, hidden = total["comm_us"], total["comm_overlapped_us"]
    rank = t.get("rank", "?")
    print(f"rank {rank}: all-reduce and broadcast {comm / 1e3:.1f} ms in steps, {hidden / comm:.1%} overlapped (target >= 50%); "
          f"compute {t['compute_us_per_step'] / 1e3:.1f} ms per step")
for f in doc.get("rank_findings", []):  # a slower core holds every rank back at the all-reduce
    print(f"across ranks: {f['title']}: {f['measured']}")
PYEOF

#!/usr/bin/env bash
# The CPU allocator's block cache (--cpu-allocator caching, the default) vs plain malloc
# (--cpu-allocator system) on ResNet-50 training, without and with the profiler recording every
# measured step. Runs take turns (system, caching, system, caching ...); prints the median
# throughput, minor page faults and peak RSS of each.
# usage: bench/cpu_allocator.sh [rounds] [recorder]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
REC="${2:-kineto}"
BIN=build/crosstrain
PY=.venv/bin/python
out=$(mktemp -d)
args="--device cpu --model resnet50 --batch-size 8 --image-size 224 --steps 7 --warmup-steps 2 --no-progress"
prof="--profile $out/p --profile-recorder $REC --profile-wait 1 --profile-warmup 1 --profile-active 5"
: >"$out/rows"
for r in $(seq "$ROUNDS"); do
  for mode in plain profiled; do
    extra=""; [ "$mode" = profiled ] && extra="$prof"
    for alloc in system caching; do
      /usr/bin/time -f "%R %M" -o "$out/time" $BIN train $args $extra --cpu-allocator "$alloc" --json "$out/r.json" \
        >/dev/null 2>&1
      read -r faults rss_kib <"$out/time"
      tput=$($PY -c "import json;print(json.load(open('$out/r.json'))['throughput_img_s'])")
      echo "$mode $alloc $tput $faults $rss_kib" >>"$out/rows"
    done
  done
done
$PY - "$out/rows" <<'PYEOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    mode, alloc, tput, faults, rss = line.split()
    rows[(mode, alloc)].append((float(tput), int(faults), int(rss) / 1024))
print(f"{'run':9s} {'allocator':9s} {'img/s':>7s} {'minor faults':>13s} {'peak RSS MiB':>13s}")
for mode in ("plain", "profiled"):
    base = None
    for alloc in ("system", "caching"):
        r = rows[(mode, alloc)]
        t = statistics.median(x[0] for x in r)
        f = statistics.median(x[1] for x in r)
        m = statistics.median(x[2] for x in r)
        base = base or t
        print(f"{mode:9s} {alloc:9s} {t:7.2f} {f:13.0f} {m:13.0f}   ({t / base:.3f}x)")
PYEOF
rm -rf "$out"

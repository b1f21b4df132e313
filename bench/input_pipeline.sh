#!/usr/bin/env bash
# Input pipeline benchmark: `crosstrain data-bench` against torchvision's ImageFolder + DataLoader
# (PIL decoding, same transforms, output 224, same worker counts, same timing rule) on one
# 500x375 JPEG folder written by `crosstrain make-imagefolder`. Rounds alternate the two sides so
# that load from other processes hits both alike. Prints a Markdown table: wall-clock img/s (per
# worker = img/s / workers) and images per CPU-second of all the processes/threads involved,
# the per-core cost that load from other processes on a shared machine does not blur.
# A second table gives the decode-only limits on the same files, in the same rounds: libjpeg-turbo
# decoding whole images (bench/jpeg_decode_bench.cpp, the library's defaults) and PIL opening and
# decoding them (bench/pil_decode.py: the decoder under torchvision's ImageFolder), one thread each.
#
# JPEG_CACHE=1 adds crosstrain with --jpeg-cache (progressive files read as their baseline
# rewrites): one pass over every training image fills the cache first (that first epoch's rate is
# printed against the same pass without the cache), then the rounds measure the later epochs.
#
#   bench/input_pipeline.sh  (env: BIN, DECODE, PY, ROOT, TRAIN, IMAGES, WORKERS, ROUNDS, MODES, JPEG_CACHE)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/crosstrain}
DECODE=${DECODE:-$(dirname "$BIN")/bench/jpeg_decode_bench}
PY=${PY:-.venv/bin/python}
DEFAULT_ROOT=/tmp/crosstrain_bench_imagefolder
ROOT=${ROOT:-$DEFAULT_ROOT}
TRAIN=${TRAIN:-1000}
IMAGES=${IMAGES:-1500}
WORKERS=${WORKERS:-1,2}
ROUNDS=${ROUNDS:-2}
MODES=${MODES:-train eval}
JPEG_CACHE=${JPEG_CACHE:-0}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

if [ ! -f "$ROOT/complete" ]; then
  # A folder given as ROOT (photo_imagefolder.py's) is never overwritten by synthetic images.
  if [ "$ROOT" != "$DEFAULT_ROOT" ] && [ -d "$ROOT/train" ]; then
    echo "input_pipeline.sh: $ROOT has no 'complete' marker: touch $ROOT/complete to use it as it is" >&2
    exit 2
  fi
  "$BIN" make-imagefolder --out "$ROOT" --train "$TRAIN" --val 200 --size 500x375 --quality 90 --overwrite
  touch "$ROOT/complete"
fi
# Warm the page cache so neither side pays for the first disk reads.
cat "$ROOT"/train/*/*.jpg > /dev/null
cache=()
if [ "$JPEG_CACHE" = 1 ]; then
  cache=(--jpeg-cache "$OUT/jpeg_cache")
  all=$(find "$ROOT/train" -name '*.jpg' | wc -l)
  # The first epoch, with the cache (rewriting every progressive file) and without: taking turns.
  "$BIN" data-bench --data "imagefolder:$ROOT" --mode train --size 224 --workers 1 --images "$all" \
    --batch-size 64 --json "$OUT/epoch1_plain.json" > /dev/null
  "$BIN" data-bench --data "imagefolder:$ROOT" --mode train --size 224 --workers 1 --images "$all" \
    --batch-size 64 "${cache[@]}" --json "$OUT/epoch1_cache.json" > /dev/null
fi

for mode in $MODES; do
  for round in $(seq 1 "$ROUNDS"); do
    "$BIN" data-bench --data "imagefolder:$ROOT" --mode "$mode" --size 224 --workers "$WORKERS" \
      --images "$IMAGES" --batch-size 64 "${cache[@]}" --json "$OUT/ct_${mode}_${round}.json" > /dev/null
    "$PY" bench/torchvision_imagefolder.py "$ROOT/train" --mode "$mode" --size 224 --workers "$WORKERS" \
      --images "$IMAGES" --batch-size 64 > "$OUT/tv_${mode}_${round}.json"
  done
done
for round in $(seq 1 "$ROUNDS"); do
  "$DECODE" "$ROOT/train" --images "$IMAGES" > "$OUT/decode_turbo_${round}.json"
  "$PY" bench/pil_decode.py "$ROOT/train" --images "$IMAGES" > "$OUT/decode_pil_${round}.json"
done

"$PY" - "$OUT" "$ROUNDS" "$MODES" <<'PYEOF'
import json, sys
out, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
try:
    plain, cached = (json.load(open(f"{out}/epoch1_{k}.json"))["rows"][0] for k in ("plain", "cache"))
    print(f"First epoch with --jpeg-cache (filling it), one worker: {cached['images_per_s']:.0f} img/s against "
          f"{plain['images_per_s']:.0f} without ({cached['images_per_s'] / plain['images_per_s']:.2f}x); "
          "crosstrain below reads the filled cache.")
    print()
except FileNotFoundError:
    pass
print("| transform | workers | round | crosstrain img/s | torchvision img/s | wall ratio | crosstrain img/CPU-s | torchvision img/CPU-s | CPU ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for mode in modes:
    for r in range(1, rounds + 1):
        ct = json.load(open(f"{out}/ct_{mode}_{r}.json"))["rows"]
        tv = json.load(open(f"{out}/tv_{mode}_{r}.json"))["rows"]
        for a, b in zip(ct, tv):
            print(f"| {mode} | {a['workers']} | {r} | {a['images_per_s']:.0f} | {b['images_per_s']:.0f} | "
                  f"{a['images_per_s'] / b['images_per_s']:.2f}x | {a['images_per_cpu_s']:.0f} | "
                  f"{b['images_per_cpu_s']:.0f} | {a['images_per_cpu_s'] / b['images_per_cpu_s']:.2f}x |")
print()
print("| decode only, one thread | round | img/s | img/CPU-s |")
print("|---|---:|---:|---:|")
for r in range(1, rounds + 1):
    for name, key in (("libjpeg-turbo, whole image", "turbo"), ("PIL open + decode (torchvision's)", "pil")):
        d = json.load(open(f"{out}/decode_{key}_{r}.json"))
        print(f"| {name} | {r} | {d['images_per_s']:.0f} | {d['images_per_cpu_s']:.0f} |")
PYEOF

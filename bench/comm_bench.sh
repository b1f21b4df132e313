#!/usr/bin/env bash
# Collective bandwidth over Gloo on this host: `crosstrain comm-bench` at 2 and 4 processes on the
# loopback (torchrun's variables, one intra-op thread each), sizes 8 B to 64 MiB, with the host's
# memcpy bandwidth from the same runs. Prints a markdown table per world size (large sizes only)
# and leaves the JSON documents in OUT.
# usage: bench/comm_bench.sh [OUT] [ITERS] [WARMUP]   (after scripts/build.sh; defaults: a temporary folder, 5, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/crosstrain
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
OUT="${1:-$(mktemp -d)}"
ITERS="${2:-5}"
WARMUP="${3:-2}"
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "no $BIN: build first (scripts/build.sh)" >&2; exit 1; }

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

for n in 2 4; do
  port=$(free_port)
  pids=()
  for r in $(seq 0 $((n - 1))); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
      "$BIN" comm-bench --max-bytes 64M --iters "$ITERS" --warmup "$WARMUP" --json "$OUT/n$n.json" \
      >"$OUT/n$n.rank$r.txt" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$OUT/n$n.rank0.txt"
done

"$PY" - "$OUT" <<'PYEOF'
import json, sys
out = sys.argv[1]
for n in (2, 4):
    d = json.load(open(f"{out}/n{n}.json"))
    print(f"\n{n} processes, memcpy {d['memcpy']['gbps']:.2f} GB/s (rank 0 alone, {d['memcpy']['bytes'] >> 20} MiB)")
    print("| collective | size | time | algbw GB/s | busbw GB/s | check |")
    print("|---|---|---|---|---|---|")
    for r in d["rows"]:
        if r["bytes"] not in (16, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20):
            continue
        if not r["supported"]:
            print(f"| {r['op']} | {r['bytes']} | unsupported | | | |")
            continue
        t = r["time_us"]
        ts = f"{t / 1e3:.2f} ms" if t >= 1e3 else f"{t:.1f} us"
        size = r["bytes"]
        ss = f"{size >> 20} MiB" if size >= 1 << 20 else (f"{size >> 10} KiB" if size >= 1 << 10 else f"{size} B")
        print(f"| {r['op']} | {ss} | {ts} | {r['algbw_gbps']:.3f} | {r['busbw_gbps']:.3f} | "
              f"{'ok' if r['wrong'] == 0 else str(r['wrong']) + ' wrong'} |")
PYEOF
echo "JSON: $OUT"

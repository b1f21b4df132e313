#!/usr/bin/env bash
# Operator replay speed: `crosstrain op-check --from-dump` over whole operator-level tensors dumps
# of one training step of tests/python/run_scripts/train_timm_vit.py and train_gpt2.py (written by
# crosstrain's Python agent, with the optimizer's operators as MindStudio Probe's dump has them),
# against MindStudio Probe's acc_check (formerly run_ut) over its own dumps of the same step
# (bench/msprobe_step.py) when MSPROBE_PATH names an installation
# (pip install --target DIR mindstudio-probe==26.2). Both on the CPU, one intra-op thread, rounds
# taking turns; the median per tool. Wall and CPU time of the loop over the operators (without the
# process's start-up), and the wall time of the whole process.
# usage: bench/op_replay.sh [rounds]   (after scripts/build.sh)
#        MSPROBE_PATH=DIR: also MindStudio Probe; MSPROBE_ROUNDS=N: only in the first N rounds (its loop
#        takes minutes per dump where crosstrain's takes a second).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
BIN=build/crosstrain
PY=.venv/bin/python
DIR="$(mktemp -d -p build op_replay.XXXXXX)"
trap 'rm -rf "$DIR"' EXIT
export OMP_NUM_THREADS=1
now() { date +%s.%N; }

for m in vit gpt2; do
  script=tests/python/run_scripts/train_timm_vit.py
  [ "$m" = gpt2 ] && script=tests/python/run_scripts/train_gpt2.py
  CROSSTRAIN_AGENT_CONFIG="{\"dump\":\"$DIR/ct_$m\",\"dump_level\":\"op\",\"dump_mode\":\"tensors\",\"dump_steps\":\"0\",\"seed\":0,\"dump_optimizer_ops\":true}" \
    PYTHONPATH=python/crosstrain/_boot $PY "$script" --steps 1 >"$DIR/ct_$m.log" 2>&1 || { cat "$DIR/ct_$m.log" >&2; exit 1; }
  if [ -n "${MSPROBE_PATH:-}" ]; then
    PYTHONPATH="$MSPROBE_PATH" $PY bench/msprobe_step.py "$m" "$DIR/ms_$m" >"$DIR/ms_$m.log" 2>&1 \
      || { cat "$DIR/ms_$m.log" >&2; exit 1; }
  fi
done

: >"$DIR/rows"
for r in $(seq "$ROUNDS"); do
  for m in vit gpt2; do
    t0=$(now)
    $BIN op-check --from-dump "$DIR/ct_$m" --json "$DIR/r.json" >/dev/null || true
    t1=$(now)
    $PY -c "
import json; r = json.load(open('$DIR/r.json'))
print('crosstrain', '$m', r['replayed'], r['seconds'], r['cpu_seconds'], $t1 - $t0)" >>"$DIR/rows"
    if [ -n "${MSPROBE_PATH:-}" ] && [ "$r" -le "${MSPROBE_ROUNDS:-$ROUNDS}" ]; then
      rm -rf "$DIR/ms_out" && mkdir -p "$DIR/ms_out"
      t0=$(now)
      line=$(PYTHONPATH="$MSPROBE_PATH" $PY bench/msprobe_acc_check_cpu.py "$(ls "$DIR"/ms_$m/step0/proc*/dump.json)" \
        "$DIR/ms_out" 2>"$DIR/ms_check.log") || { cat "$DIR/ms_check.log" >&2; exit 1; }
      t1=$(now)
      echo "msprobe $m $line $(echo "$t1 - $t0" | bc)" >>"$DIR/rows"
    fi
  done
done
cat "$DIR/rows" >&2  # the raw rounds: tool model calls loop_s loop_cpu_s process_s
$PY - "$DIR/rows" <<'PYEOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, model, n, loop, cpu, wall = line.split()
    rows.setdefault((tool, model), []).append((int(n), float(loop), float(cpu), float(wall)))
med = {k: [statistics.median(x[i] for x in v) for i in range(4)] for k, v in rows.items()}
print(f"{'tool':<11} {'model':<5} {'calls':>6} {'loop s':>8} {'calls/s':>9} {'loop CPU s':>11} {'calls/CPU s':>12} {'process s':>10}")
for (tool, model), (n, loop, cpu, wall) in sorted(med.items()):
    print(f"{tool:<11} {model:<5} {int(n):>6} {loop:>8.2f} {n / loop:>9.1f} {cpu:>11.2f} {n / cpu:>12.1f} {wall:>10.2f}")
for model in ("vit", "gpt2"):
    if ("msprobe", model) in med and ("crosstrain", model) in med:
        c, m = med[("crosstrain", model)], med[("msprobe", model)]
        print(f"{model}: the step's operators checked {m[1] / c[1]:.0f}x faster (loop wall), "
              f"{m[2] / c[2]:.0f}x (loop CPU), {m[3] / c[3]:.0f}x (whole process wall)")
PYEOF

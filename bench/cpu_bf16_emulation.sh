#!/usr/bin/env bash
# bf16 against fp32 on this CPU as it is ("native") and restricted to AVX2, the way an AVX2-only CPU
# (no AVX-512, no AVX512-BF16, no AMX) runs it ("emulated"): ONEDNN_MAX_CPU_ISA=AVX2 keeps oneDNN
# to AVX2, ATEN_CPU_CAPABILITY=avx2 picks ATen's AVX2 kernels and MKL_ENABLE_INSTRUCTIONS=AVX2 keeps
# MKL there too, so fp32 is not left with AVX-512 either. Each round runs native then emulated; the
# ratio bf16/fp32 comes from the same bench run (fp32 then bf16). Needs a CPU with AVX2.
#
# usage: bench/cpu_bf16_emulation.sh [rounds] [what]    (from the repository root, after scripts/build.sh)
#   what: small  README's bench example (ResNet-18 small stem, 32 px, batch 32), `rounds` rounds
#         fmnist README's Fashion-MNIST example, 40 steps per precision: img/s and the example's time
#         default bench's defaults (ResNet-50, batch 8, 224 px, 7 steps), one round per mode
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
WHAT="${2:-small}"
BIN=build/crosstrain
PY=.venv/bin/python
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
emulated=(env ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2)

grep -m1 "model name" /proc/cpuinfo
echo "bf16/fp16 flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512_bf16|amx_bf16|amx_tile|avx512_fp16|amx_fp16)$' | tr '\n' ' ')"

bench_round() {  # mode, then bench flags
  local mode=$1; shift
  local run=("$BIN")
  [ "$mode" = emulated ] && run=("${emulated[@]}" "$BIN")
  "${run[@]}" bench --device cpu --no-progress "$@" --json "$out/b.json" >"$out/log" 2>&1 || { cat "$out/log"; exit 1; }
  grep -m1 "note: bf16" "$out/log" >/dev/null && note=yes || note=no
  $PY - "$out/b.json" "$mode" "$note" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
a, b = j["runs"]
print(f"{sys.argv[2]:9s} fp32 {a['throughput_img_s']:8.2f} img/s  bf16 {b['throughput_img_s']:8.2f} img/s  "
      f"bf16/fp32 {b['throughput_img_s'] / a['throughput_img_s']:6.3f}  bf16 median step {b['batch_time_ms_median']:9.1f} ms"
      f"  note said: {sys.argv[3]}  emulated_precisions {j['emulated_precisions']}")
EOF
}

train_rate() {  # mode, precision, then train flags
  local mode=$1 prec=$2; shift 2
  local run=("$BIN")
  [ "$mode" = emulated ] && run=("${emulated[@]}" "$BIN")
  "${run[@]}" train --device cpu --no-progress --precision "$prec" "$@" --json "$out/t.json" >"$out/log" 2>&1 || { cat "$out/log"; exit 1; }
  $PY -c "import json;j=json.load(open('$out/t.json'));print(j['throughput_img_s'])"
}

case "$WHAT" in
  small)
    for r in $(seq "$ROUNDS"); do
      for mode in native emulated; do
        printf "round %s " "$r"
        bench_round "$mode" --model resnet18 --small-stem --num-classes 10 --image-size 32 --batch-size 32
      done
    done ;;
  default)
    for mode in native emulated; do bench_round "$mode"; done ;;
  fmnist)
    fm=(--data idx:/usr/share/datasets/fashion-mnist --model resnet18 --small-stem --base-width 16 --batch-size 64
        --steps 40 --warmup-steps 5 --lr 0.1 --schedule cosine --nesterov --min-crop-scale 1 --no-final-eval)
    for mode in native emulated; do
      for prec in fp32 bf16; do
        rate=$(train_rate "$mode" "$prec" "${fm[@]}")
        # README's example: 2 epochs of 60,000 images (evaluation not included).
        $PY -c "r=$rate;print(f'$mode  $prec  {r:8.1f} img/s  2 epochs of 60,000: {120000/r/60:6.1f} min')"
      done
    done ;;
  *) echo "unknown: $WHAT (small, fmnist, default)"; exit 2 ;;
esac

#!/usr/bin/env bash
# The pictures of docs/img/: the pages `crosstrain analyze --html` and `crosstrain compare --html`
# write, rendered by the headless Chromium the tests use, then cut to a 64-colour palette (Pillow,
# from torchvision's dependencies in .venv) so that each stays under 150 KB.
#   analyze.png: `crosstrain run --profile` of tests/python/profile_scripts/train_vit_item.py (a timm
#                ViT whose loop reads the loss on the host every step);
#   compare.png: tests/python/run_scripts/train_timm_cnn.py in float32 against bfloat16 autocast.
# usage: scripts/screenshots.sh [BUILD_DIR]   (after scripts/build.sh; default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$(realpath "${1:-build}")/crosstrain"
PY="$PWD/.venv/bin/python"
REPO="$PWD"
BROWSER="$(command -v chromium || command -v chromium-browser || command -v google-chrome)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=1

cd "$WORK"  # the pages name their inputs as given: prof, fp32, bf16
"$BIN" run --seed 0 --profile prof -- "$PY" "$REPO/tests/python/profile_scripts/train_vit_item.py" >/dev/null
"$BIN" analyze prof --html analyze.html >/dev/null
cnn="$REPO/tests/python/run_scripts/train_timm_cnn.py"
"$BIN" run --seed 0 --dump fp32 --dump-steps 0-2 -- "$PY" "$cnn" --steps 3 >/dev/null
"$BIN" run --meta precision=bf16 --seed 0 --dump bf16 --dump-steps 0-2 -- "$PY" "$cnn" --steps 3 --amp bf16 >/dev/null
"$BIN" compare fp32 bf16 --html compare.html >/dev/null || true  # exit 1: they differ
cd "$REPO"

mkdir -p docs/img
for page in analyze compare; do
  "$BROWSER" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --hide-scrollbars --user-data-dir="$WORK/chromium" --window-size=1000,1300 \
    --screenshot="$WORK/$page.png" "file://$WORK/$page.html" 2>/dev/null
  $PY - "$WORK/$page.png" "docs/img/$page.png" <<'EOF'
import sys
from PIL import Image
Image.open(sys.argv[1]).convert("RGB").quantize(colors=64).save(sys.argv[2], optimize=True)
EOF
  echo "docs/img/$page.png: $(( $(stat -c %s "docs/img/$page.png") / 1024 )) KiB"
done

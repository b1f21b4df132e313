#!/usr/bin/env bash
# Installs everything crosstrain needs, idempotently: Debian packages, then a project-local .venv
# holding the pinned torch wheel (libtorch for the C++ build), torchvision and numpy (references).
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION="${CROSSTRAIN_TORCH_VERSION:-2.11.0}"
TORCHVISION_VERSION="${CROSSTRAIN_TORCHVISION_VERSION:-0.26.0}"

DEB_PACKAGES=(build-essential cmake ninja-build ccache pkg-config
  libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libjpeg62-turbo-dev libpng-dev zlib1g-dev dataset-fashion-mnist
  python3-venv
  chromium clang)  # chromium: headless check of HTML reports; clang: the trace-reader fuzzer

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import torch, torchvision, numpy, sys; sys.exit(0 if torch.__version__.split('+')[0] == '${TORCH_VERSION}' else 1)" 2>/dev/null; then
  echo "[setup] pip install torch==${TORCH_VERSION} torchvision==${TORCHVISION_VERSION} numpy (large download, once)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q "torch==${TORCH_VERSION}" "torchvision==${TORCHVISION_VERSION}" numpy
fi
# holistictraceanalysis: only for bench/analyze_bench.py's comparison; constrained so the pinned
# torch stays as it is.
if ! .venv/bin/python -c "import hta" 2>/dev/null; then
  echo "[setup] pip install holistictraceanalysis (benchmark reference)"
  .venv/bin/python -m pip install -q -c <(echo "torch==${TORCH_VERSION}") holistictraceanalysis
fi
echo "[setup] torch $(.venv/bin/python -c 'import torch;print(torch.__version__)') ready in .venv"

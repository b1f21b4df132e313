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
  libgloo-dev  # headers that c10d's ProcessGroupGloo.hpp includes (no gloo code is compiled in)
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
# Third-party models users train, for `crosstrain run`'s tests and benchmarks (tests/python/run_scripts):
# timm (ViT, ResNet) and transformers (GPT-2 from a config, no weights downloaded). Pinned, and
# constrained so the pinned torch stays as it is.
TIMM_VERSION=1.0.31
TRANSFORMERS_VERSION=5.24.0
if ! .venv/bin/python -c "import timm, transformers, sys; sys.exit(0 if (timm.__version__, transformers.__version__) == ('${TIMM_VERSION}', '${TRANSFORMERS_VERSION}') else 1)" 2>/dev/null; then
  echo "[setup] pip install timm==${TIMM_VERSION} transformers==${TRANSFORMERS_VERSION} (models for crosstrain run's tests)"
  .venv/bin/python -m pip install -q -c <(echo "torch==${TORCH_VERSION}") "timm==${TIMM_VERSION}" "transformers==${TRANSFORMERS_VERSION}"
fi
# The frameworks users train with, for `crosstrain run`'s tests (tests/python/run_scripts): Lightning
# (automatic and manual optimisation) and accelerate (which transformers' Trainer runs on). Pinned,
# and constrained so the pinned torch stays as it is.
LIGHTNING_VERSION=2.6.6
ACCELERATE_VERSION=1.16.0
if ! .venv/bin/python -c "import pytorch_lightning, accelerate, sys; sys.exit(0 if (pytorch_lightning.__version__, accelerate.__version__) == ('${LIGHTNING_VERSION}', '${ACCELERATE_VERSION}') else 1)" 2>/dev/null; then
  echo "[setup] pip install pytorch-lightning==${LIGHTNING_VERSION} accelerate==${ACCELERATE_VERSION} (frameworks for crosstrain run's tests)"
  .venv/bin/python -m pip install -q -c <(echo "torch==${TORCH_VERSION}") "pytorch-lightning==${LIGHTNING_VERSION}" "accelerate==${ACCELERATE_VERSION}"
fi
# setuptools and wheel: `pip install ./python` (the agent as a package) builds without reaching PyPI.
if ! .venv/bin/python -c "import setuptools, wheel, sys; sys.exit(0 if setuptools.__version__ == '80.9.0' else 1)" 2>/dev/null; then
  .venv/bin/python -m pip install -q "setuptools==80.9.0" "wheel==0.45.1"
fi
echo "[setup] torch $(.venv/bin/python -c 'import torch;print(torch.__version__)') ready in .venv"

# tree-sitter (core C library) and its Python grammar, as C sources from PyPI sdists, for
# `crosstrain migrate`. Versions are paired by grammar ABI: core 0.23.2 reads ABI 13..14 and
# tree-sitter-python 0.23.6 is generated at ABI 14. CMake builds them from third_party/ (gitignored).
TS_CORE_VERSION=0.23.2
TS_CORE_SHA256=66bae8dd47f1fed7bdef816115146d3a41c39b5c482d7bad36d9ba1def088450
TS_PYTHON_VERSION=0.23.6
TS_PYTHON_SHA256=354bfa0a2f9217431764a631516f85173e9711af2c13dbd796a8815acfe505d9
fetch_sdist() {  # fetch_sdist PYPI_NAME VERSION ARCHIVE_BASENAME SHA256
  local name="$1" version="$2" base="$3" sha="$4"
  local dir="third_party/${base}-${version}" archive="third_party/sdist/${base}-${version}.tar.gz"
  [ -f "${dir}/.extracted" ] && return 0
  mkdir -p third_party/sdist
  if [ ! -f "$archive" ] || ! echo "${sha}  ${archive}" | sha256sum -c --status; then
    echo "[setup] pip download ${name}==${version} (C sources)"
    .venv/bin/python -m pip download -q --no-deps --no-binary :all: "${name}==${version}" -d third_party/sdist
  fi
  echo "${sha}  ${archive}" | sha256sum -c --status || { echo "[setup] checksum mismatch: ${archive}" >&2; exit 1; }
  rm -rf "$dir"
  tar -xzf "$archive" -C third_party
  touch "${dir}/.extracted"
}
fetch_sdist tree-sitter "$TS_CORE_VERSION" tree-sitter "$TS_CORE_SHA256"
fetch_sdist tree-sitter-python "$TS_PYTHON_VERSION" tree_sitter_python "$TS_PYTHON_SHA256"
echo "[setup] tree-sitter ${TS_CORE_VERSION} + tree-sitter-python ${TS_PYTHON_VERSION} sources in third_party/"

# torch_npu (Ascend) as a reference only: its headers, libtorch_npu.so and Python sources, for the
# doctor, --backend-lib, header-compile and migrate-name tests. Downloaded and unzipped, never
# installed: the wheel registers a torch.backends entry point, so `import torch` in an environment
# holding it tries to load it, which fails without Ascend's CANN toolkit.
TORCH_NPU_VERSION=2.11.0.post3
TORCH_NPU_WHEEL="torch_npu-${TORCH_NPU_VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl"
TORCH_NPU_SHA256=7489f67010989c56ed39deb6e25cb809c4d2cc99e7cc3426386e044c4ee8b55d
fetch_torch_npu() {
  local dir="third_party/torch_npu/${TORCH_NPU_VERSION}" wheel="third_party/torch_npu/${TORCH_NPU_WHEEL}"
  [ -f "${dir}/.extracted" ] && return 0
  [ "$(uname -m)" = x86_64 ] && .venv/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || {
    echo "[setup] torch_npu reference wheel skipped (needs x86_64 and Python 3.11); its tests skip" >&2; return 0; }
  mkdir -p third_party/torch_npu
  if [ ! -f "$wheel" ] || ! echo "${TORCH_NPU_SHA256}  ${wheel}" | sha256sum -c --status; then
    echo "[setup] pip download torch-npu==${TORCH_NPU_VERSION} (reference only, ~43 MB)"
    .venv/bin/python -m pip download -q --no-deps "torch-npu==${TORCH_NPU_VERSION}" -d third_party/torch_npu \
      || { echo "[setup] torch-npu could not be downloaded; its tests skip" >&2; return 0; }
  fi
  echo "${TORCH_NPU_SHA256}  ${wheel}" | sha256sum -c --status || { echo "[setup] checksum mismatch: ${wheel}" >&2; exit 1; }
  rm -rf "$dir"
  .venv/bin/python -m zipfile -e "$wheel" "$dir"
  touch "${dir}/.extracted"
}
fetch_torch_npu
if [ -f "third_party/torch_npu/${TORCH_NPU_VERSION}/.extracted" ]; then
  echo "[setup] torch_npu ${TORCH_NPU_VERSION} unpacked in third_party/torch_npu/${TORCH_NPU_VERSION}"
fi

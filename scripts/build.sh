#!/usr/bin/env bash
# Configures and builds crosstrain into build/ (binary: build/crosstrain). Extra args go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keeps its default cache (~/.cache/ccache) so clones on the same machine share it; paths are
# taken relative to the clone (CCACHE_BASEDIR), so a fresh clone elsewhere hits what another built.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif [ $# -gt 0 ]; then
  cmake -S . -B build "$@"
fi
cmake --build build --parallel "${CROSSTRAIN_JOBS:-$(nproc)}"

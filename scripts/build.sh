#!/usr/bin/env bash
# Configures and builds crosstrain into build/ (binary: build/crosstrain). Extra args go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keeps its default cache (~/.cache/ccache) so clones on the same machine share it.
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif [ $# -gt 0 ]; then
  cmake -S . -B build "$@"
fi
cmake --build build --parallel "${CROSSTRAIN_JOBS:-$(nproc)}"

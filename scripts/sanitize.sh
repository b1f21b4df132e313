#!/usr/bin/env bash
# Builds the libtorch-free libraries, the crosstrain binary without libtorch, and their tests
# with AddressSanitizer + UndefinedBehaviorSanitizer into build-sanitize/, and runs those tests.
# Any memory error, leak or undefined behaviour fails the run. Extra args go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f build-sanitize/CMakeCache.txt ]; then
  cmake -S . -B build-sanitize "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCROSSTRAIN_WITH_TORCH=OFF \
    -DCROSSTRAIN_SANITIZE=ON -DCROSSTRAIN_FUZZ=OFF -DCROSSTRAIN_BUILD_TESTS=ON -DCROSSTRAIN_WERROR=ON
fi
cmake --build build-sanitize --parallel "${CROSSTRAIN_JOBS:-$(nproc)}"
export ASAN_OPTIONS="abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
cd build-sanitize
ctest --output-on-failure --timeout 900 -j "${CROSSTRAIN_TEST_JOBS:-2}" -LE fuzz "$@"

#!/usr/bin/env bash
# Builds the libtorch-free libraries, the crosstrain binary without libtorch, and their tests
# with AddressSanitizer + UndefinedBehaviorSanitizer into build-sanitize/, and runs those tests.
# Any memory error, leak or undefined behaviour fails the run. Extra args go to ctest.
#
#   bash scripts/sanitize.sh            every libtorch-free test (the full job)
#   bash scripts/sanitize.sh --parsers  only the readers of untrusted input and their tests: report
#                                       (input files, atomic writes), datasets and image decoders,
#                                       dumps and .npy, traces, migrate (the default job of test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
scope=all
if [ "${1:-}" = "--parsers" ]; then
  scope=parsers
  shift
fi
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f build-sanitize/CMakeCache.txt ]; then
  # -O1 and line tables only (-g1, set with CROSSTRAIN_SANITIZE): reports keep file:line, the build
  # takes less time than -O2 -g.
  cmake -S . -B build-sanitize "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCROSSTRAIN_WITH_TORCH=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
    -DCROSSTRAIN_SANITIZE=ON -DCROSSTRAIN_FUZZ=OFF -DCROSSTRAIN_BUILD_TESTS=ON -DCROSSTRAIN_WERROR=ON
fi
parser_tests=(test_report test_data_codec test_data_datasets test_dump test_compare test_analyze test_migrate)
export ASAN_OPTIONS="abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
if [ "$scope" = parsers ]; then
  cmake --build build-sanitize --parallel "${CROSSTRAIN_JOBS:-$(nproc)}" --target "${parser_tests[@]}"
  status=0
  for t in "${parser_tests[@]}"; do
    exe=$(find build-sanitize/tests -type f -name "$t" -perm -u+x | head -1)
    echo "== $t"
    (cd "$(dirname "$exe")" && "./$t" --gtest_brief=1 "$@") || status=1
  done
  exit $status
fi
cmake --build build-sanitize --parallel "${CROSSTRAIN_JOBS:-$(nproc)}"
cd build-sanitize
ctest --output-on-failure --timeout 900 -j "${CROSSTRAIN_TEST_JOBS:-2}" -LE fuzz "$@"

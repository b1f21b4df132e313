#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh -DCROSSTRAIN_BUILD_TESTS=ON -DCROSSTRAIN_WERROR=ON
cd build
# A test that fails is run once more (scripts/ctest_rerun.sh): a failure that repeats fails the run,
# one that does not is printed as FLAKY, and a first failure still prints its output (and, for a
# crash, the stack from tests/test_main.cpp) in the log.
bash ../scripts/ctest_rerun.sh --output-on-failure --timeout 900 -j "${CROSSTRAIN_TEST_JOBS:-2}" "$@"
# CROSSTRAIN_SANITIZE_TESTS=1: also build the libtorch-free parts with ASan + UBSan and run their
# tests (scripts/sanitize.sh, build-sanitize/).
if [ "${CROSSTRAIN_SANITIZE_TESTS:-0}" = 1 ]; then
  cd ..
  bash scripts/sanitize.sh
fi

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
# Then the readers of untrusted input and their tests under ASan + UBSan (scripts/sanitize.sh
# --parsers, build-sanitize/); any finding fails the run. CROSSTRAIN_SANITIZE_TESTS=1 runs every
# libtorch-free test that way instead (longer: docs/RELIABILITY.md), =0 skips the sanitizers.
cd ..
case "${CROSSTRAIN_SANITIZE_TESTS:-parsers}" in
  0) ;;
  1) bash scripts/sanitize.sh ;;
  *) bash scripts/sanitize.sh --parsers ;;
esac

#!/usr/bin/env bash
# scripts/ctest_rerun.sh on a real CTest project (flaky_project/): a test that passes only on its
# retry is printed as FLAKY and does not fail the run; a test that fails twice does.
#   bash ctest_rerun_test.sh SOURCE_DIR WORK_DIR
set -uo pipefail
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NAME CMAKE_ARGS...: configures the fixture in WORK/NAME and runs the script there; sets rc.
run() {
  local name=$1
  shift
  cmake -S "$src/tests/scripts/flaky_project" -B "$work/$name" "$@" >/dev/null || { echo "configure failed"; exit 1; }
  (cd "$work/$name" && bash "$src/scripts/ctest_rerun.sh" --output-on-failure) >"$work/$name.log" 2>&1
  rc=$?
  echo "---- $name (exit $rc)"
  cat "$work/$name.log"
}
has() { grep -qxF -- "$2" "$work/$1.log"; }

run flaky -DWITH_BROKEN=OFF
[ "$rc" -eq 0 ] || fail "flaky: expected exit 0, got $rc"
has flaky "FLAKY: Dummy.PassesOnRetry" || fail "flaky: no FLAKY line for Dummy.PassesOnRetry"
grep -q "FLAKY: Dummy.Passes$" "$work/flaky.log" && fail "flaky: a test that passed at once was called FLAKY"
grep -q "100% tests passed, 0 tests failed out of 1" "$work/flaky.log" || fail "flaky: the rerun's CTest summary is missing"
grep -q "50% tests passed, 1 tests failed out of 2" "$work/flaky.log" || fail "flaky: the first CTest summary is missing"

run broken -DWITH_BROKEN=ON
[ "$rc" -ne 0 ] || fail "broken: a test that failed twice left the run green"
has broken "FAILED TWICE: Dummy.AlwaysFails" || fail "broken: no FAILED TWICE line for Dummy.AlwaysFails"
has broken "FLAKY: Dummy.PassesOnRetry" || fail "broken: no FLAKY line for Dummy.PassesOnRetry"
grep -q "FLAKY: Dummy.AlwaysFails" "$work/broken.log" && fail "broken: a test that failed twice was called FLAKY"

# Now that the marker exists every test passes at once: no rerun, no FLAKY line.
(cd "$work/flaky" && bash "$src/scripts/ctest_rerun.sh") >"$work/clean.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] || fail "clean: expected exit 0, got $rc"
grep -q "FLAKY\|Rerunning" "$work/clean.log" && fail "clean: a green run was rerun or reported FLAKY"

[ "$failures" -eq 0 ] && echo "ctest_rerun.sh: all checks passed"
exit $((failures > 0))

#!/usr/bin/env bash
# Runs CTest in the current build directory with the given arguments, then reruns the tests that
# failed, once. A test that fails and then passes is printed as "FLAKY: <name>" (it does not go
# silently green); a test that fails twice fails the run ("FAILED TWICE: <name>"). Both CTest
# summaries are printed unchanged; the FLAKY / FAILED TWICE lines come after them.
#   cd build && bash ../scripts/ctest_rerun.sh --output-on-failure -j2
set -uo pipefail

failed_log=Testing/Temporary/LastTestsFailed.log

# Test names from CTest's failed-test log ("<number>:<name>" per line).
failed_names() {
  [ -f "$failed_log" ] && sed -n 's/^[0-9][0-9]*://p' "$failed_log"
  return 0
}

rm -f "$failed_log"
ctest "$@"
first=$?
[ "$first" -eq 0 ] && exit 0
mapfile -t first_failed < <(failed_names)
if [ "${#first_failed[@]}" -eq 0 ]; then
  echo "ctest failed (exit $first) without failing a test" >&2
  exit "$first"
fi

echo
echo "Rerunning ${#first_failed[@]} failed test(s) once"
ctest --rerun-failed "$@"
second=$?
# CTest rewrites the log only when a test fails, so after a clean rerun it is stale.
second_failed=()
[ "$second" -ne 0 ] && mapfile -t second_failed < <(failed_names)

echo
for name in "${first_failed[@]}"; do
  again=0
  for other in "${second_failed[@]}"; do [ "$name" = "$other" ] && again=1; done
  if [ "$again" -eq 1 ]; then echo "FAILED TWICE: $name"; else echo "FLAKY: $name"; fi
done
[ "$second" -eq 0 ] && exit 0
[ "${#second_failed[@]}" -eq 0 ] && echo "ctest failed (exit $second) on the rerun without failing a test" >&2
exit 1

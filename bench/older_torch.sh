#!/usr/bin/env bash
# The agent of `crosstrain run` (python/crosstrain) under older torch releases: one virtual
# environment per version, from PyPI (the CUDA wheels and their nvidia-* packages, ~3-5 GB each,
# downloaded once), then the agent's tests (tests/python/agent) under each. CI does not run it;
# its results are in docs/RUN.md, "Supported torch versions".
# usage: bench/older_torch.sh [VERSION...]         (default: 2.1.2 2.5.1 2.8.0)
#        CROSSTRAIN_OLDER_TORCH_DIR=DIR: where the environments go (default /work/older-torch)
#        CROSSTRAIN_OLDER_TORCH_TESTS="test_steps test_dumps": the test modules (default below)
#        CROSSTRAIN_AGENT_NATIVE=LIB: the agent's compiled statistics (default build/'s)
#        CROSSTRAIN_OLDER_TORCH_INSTALL_ONLY=1: build the environments, run nothing
# Prints one line per version (`torch 2.5.1: ran 41, failures 0, errors 0, skipped 1`) and keeps
# each version's unittest output in DIR/torch-VERSION/tests.log.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
ROOT="${CROSSTRAIN_OLDER_TORCH_DIR:-/work/older-torch}"
PY="${PYTHON:-python3}"
# test_frameworks needs Lightning, transformers and accelerate releases paired with each torch;
# the others need torch and numpy only.
TESTS="${CROSSTRAIN_OLDER_TORCH_TESTS:-test_steps test_dumps test_seed test_profile test_processes test_native}"
# The agent's compiled statistics, as `crosstrain run` hands them over (test_native compares them
# with the Python path and is skipped without them): build/'s unless CROSSTRAIN_AGENT_NATIVE names one.
if [ -z "${CROSSTRAIN_AGENT_NATIVE:-}" ] && [ -f build/libcrosstrain_tensor_stats.so ]; then
  export CROSSTRAIN_AGENT_NATIVE="$REPO/build/libcrosstrain_tensor_stats.so"
fi
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(2.1.2 2.5.1 2.8.0)

# numpy: torch before 2.3 was built against numpy 1.x and cannot use numpy 2.
numpy_for() {
  case "$1" in
    2.0.*|2.1.*|2.2.*) echo "numpy<2" ;;
    *) echo "numpy" ;;
  esac
}

install_version() {
  local v="$1" env="$ROOT/torch-$1"
  if "$env/bin/python" -c "import torch, numpy, sys; sys.exit(torch.__version__.split('+')[0] != '$v')" 2>/dev/null; then
    return 0
  fi
  echo "[older-torch] creating $env (torch==$v, $(numpy_for "$v"); a large download, once)"
  mkdir -p "$ROOT"
  "$PY" -m venv "$env"
  "$env/bin/python" -m pip install -q --no-cache-dir --upgrade pip
  "$env/bin/python" -m pip install -q --no-cache-dir "torch==$v" "$(numpy_for "$v")"
}

run_version() {
  local v="$1" env="$ROOT/torch-$1" log="$ROOT/torch-$1/tests.log"
  local torch_line
  torch_line="$("$env/bin/python" -c 'import torch, numpy, sys; print(torch.__version__, "numpy", numpy.__version__, "python", sys.version.split()[0])')"
  echo "[older-torch] torch $torch_line: $TESTS"
  local rc=0
  (cd "$REPO/tests/python/agent" && OMP_NUM_THREADS=1 "$env/bin/python" -m unittest -v $TESTS) >"$log" 2>&1 || rc=$?
  # unittest's last lines: "Ran N tests in Ts" and "OK (skipped=K)" or "FAILED (failures=F, errors=E)".
  "$env/bin/python" - "$v" "$log" <<'EOF'
import re, sys
version, log = sys.argv[1], sys.argv[2]
text = open(log, errors="replace").read()
ran = re.findall(r"^Ran (\d+) tests?", text, re.M)
def count(word):
    m = re.findall(word + r"=(\d+)", text.splitlines()[-1] if text.strip() else "")
    return int(m[0]) if m else 0
print(f"torch {version}: ran {ran[-1] if ran else 0}, failures {count('failures')}, errors {count('errors')}, "
      f"skipped {count('skipped')}")
for line in text.splitlines():
    if re.match(r"^(FAIL|ERROR): ", line):
        print("  " + line)
EOF
  return $rc
}

status=0
for v in "${VERSIONS[@]}"; do install_version "$v"; done
[ "${CROSSTRAIN_OLDER_TORCH_INSTALL_ONLY:-0}" = 1 ] && exit 0
for v in "${VERSIONS[@]}"; do run_version "$v" || status=1; done
exit $status

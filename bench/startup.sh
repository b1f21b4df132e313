#!/usr/bin/env bash
# Start-up cost of the commands: wall time and peak RSS per process, median of N runs each.
#   bash bench/startup.sh [BUILD_DIR] [RUNS]        (defaults: build, 20)
# Measures the torch-free front (`crosstrain`): `analyze --help`, `analyze` of a ~1 MB real
# torch.profiler trace (recorded here with the .venv torch; deleted afterwards) and `train --help`;
# for contrast, the engine (`crosstrain-engine analyze --help`: the same work with libtorch loaded)
# and `crosstrain models`, which hands over to the engine. Targets for the first two: < 50 ms wall
# and < 50 MB peak RSS. Runs go one after another, output to /dev/null; wall time is from spawn to
# exit and includes /usr/bin/time's own start (~1 ms), which reads each process's peak RSS; CPU
# time (user + sys, from wait4) is given too, since wall time on a shared machine includes waiting.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-20}
python=.venv/bin/python
[ -x "$python" ] || python=python3
front=$build/crosstrain
engine=$build/crosstrain-engine
[ -x "$front" ] || { echo "no $front: build first (scripts/build.sh)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trace=$work/trace.json

# A real torch.profiler CPU trace (shapes and memory recorded), grown to about 1 MB.
"$python" - "$trace" 2>"$work/trace.log" <<'PY' || { cat "$work/trace.log" >&2; exit 1; }
import os, sys
import torch, torch.nn as nn
from torch.profiler import ProfilerActivity, profile
out = sys.argv[1]
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 4, (4,))
steps = 8
while True:
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        for step in range(steps):
            with torch.profiler.record_function("ProfilerStep#%d" % step):
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
    prof.export_chrome_trace(out)
    size = os.path.getsize(out)
    if size >= 0.95e6:
        break
    steps = int(steps * 1.05e6 / size) + 1
PY

uname_line="$(uname -sr), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "machine: $uname_line; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "trace: $(du -k "$trace" | cut -f1) KiB (torch.profiler, CPU, torch $("$python" -c 'import torch;print(torch.__version__)'))"
echo "runs per command: $runs"

# Each command: a label, its argv, then ";;".
args=("$runs" "$work/rss" "front analyze --help" "$front" analyze --help ";;"
      "front analyze 1 MB trace" "$front" analyze "$trace" ";;"
      "front train --help" "$front" train --help ";;")
if [ -x "$engine" ]; then
  args+=("engine analyze --help" "$engine" analyze --help ";;"
         "front models (hands over to engine)" "$front" models ";;")
fi

"$python" - "${args[@]}" <<'PY'
import os, statistics, sys, time

def measure(argv, runs, rss_file):
    walls, cpus, rss = [], [], []
    devnull = os.open(os.devnull, os.O_WRONLY)
    # Peak RSS through /usr/bin/time: a child's high-water mark starts from what its parent had
    # mapped when it forked, and this Python's ~10 MB would hide the front's own.
    timed = ["/usr/bin/time", "-f", "%M", "-o", rss_file] + argv
    for _ in range(runs):
        t0 = time.perf_counter()
        pid = os.posix_spawn(timed[0], timed, os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
        _, status, usage = os.wait4(pid, 0)
        walls.append((time.perf_counter() - t0) * 1e3)
        cpus.append((usage.ru_utime + usage.ru_stime) * 1e3)  # /usr/bin/time and the command it reaped
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit("%s exited with %d" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
        with open(rss_file) as f:
            rss.append(int(f.read().split()[-1]) / 1024.0)  # KiB -> MiB
    return walls, cpus, rss

runs = int(sys.argv[1])
rss_file = sys.argv[2]
rest = sys.argv[3:]
groups, current = [], []
for word in rest:
    if word == ";;":
        groups.append((current[0], current[1:]))
        current = []
    else:
        current.append(word)
print("| command | wall median (min-max) | CPU median (user + sys) | peak RSS median | target (< 50 ms, < 50 MB) |")
print("|---|---|---|---|---|")
for label, argv in groups:
    walls, cpus, rss = measure(argv, runs, rss_file)
    target = ""
    if label in ("front analyze --help", "front analyze 1 MB trace"):
        ok = statistics.median(walls) < 50 and statistics.median(rss) < 50
        target = "met" if ok else "MISSED"
    print("| %s | %.1f ms (%.1f-%.1f) | %.1f ms | %.1f MiB | %s |" % (
        label, statistics.median(walls), min(walls), max(walls), statistics.median(cpus), statistics.median(rss), target))
PY

#!/usr/bin/env python3
"""Time and memory of `crosstrain analyze` on the inputs that used to grow faster than linearly:

- ascend-csv: an Ascend output folder whose kernel_details.csv is 25 / 100 / 200 MB (rows as
  msprof writes them: a tab after the start time, quoted shapes). Baseline in the same run: Python's
  csv module streaming the same file and summing durations per core (the least any reader does).
- deep-flows: operators nested N deep on one thread and N ac2g flows leaving from points where the
  innermost operators have ended (each launch lands in an operator somewhere up the stack), N =
  25k / 50k / 100k / 200k. Baseline in the same run: Python's json.load of the same file.

Linear means the time per MB (per event) stays flat as the input grows; the table prints it.
With --old-binary, a previous build runs too, on the inputs up to --old-max-mb / --old-max-n (it
was quadratic in N and took ~33x the CSV's size in memory), in the same run, taking turns.
Each tool runs in its own process; wall time, CPU time (user+sys) and peak RSS come from wait4.

Usage: .venv/bin/python bench/analyze_scaling.py --binary build/crosstrain [--csv-mb 25,100,200]
       [--depths 25000,50000,100000,200000] [--old-binary OLD --old-max-mb 25 --old-max-n 50000]
       [--workdir /tmp/crosstrain_analyze_scaling]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRACE_VIEW = os.path.join(ROOT, "tests", "data", "traces", "ascend_runs", "level1",
                          "node0_39560_202601010000010_ascend_pt", "ASCEND_PROFILER_OUTPUT", "trace_view.json")

CSV_BASELINE = r'''
import csv, sys, collections
cores = collections.defaultdict(float)
with open(sys.argv[1], newline="") as f:
    r = csv.reader(f)
    head = next(r)
    core, dur = head.index("Accelerator Core"), head.index("Duration(us)")
    for row in r:
        cores[row[core].strip()] += float(row[dur])
print(len(cores))
'''

JSON_BASELINE = r'''
import json, sys
with open(sys.argv[1]) as f:
    print(len(json.load(f)["traceEvents"]))
'''


def run_measured(cmd):
    """Runs cmd, returns (wall s, cpu s, peak RSS MiB)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("failed: %s: %s" % (" ".join(cmd), err.decode()[-500:]))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def write_ascend_folder(folder, mb):
    out = os.path.join(folder, "node0_1_20260101000000_ascend_pt", "ASCEND_PROFILER_OUTPUT")
    os.makedirs(out, exist_ok=True)
    shutil.copy(TRACE_VIEW, os.path.join(out, "trace_view.json"))
    path = os.path.join(out, "kernel_details.csv")
    cores = ["AI_CORE", "AI_VECTOR_CORE", "AI_CPU"]
    with open(path, "w") as f:
        f.write("Step Id,Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num,"
                "Input Shapes\n")
        i = 0
        while f.tell() < mb * 1e6:
            f.write('1,0,Op%d,Op%d,%s,%d.000\t,%d.%03d,0.500,20,"64,1024;1024,1024"\n' % (
                i % 2000, i % 2000, cores[i % 3], 1767225600000000 + 10 * i, 5 + i % 400, i % 1000))
            i += 1
    return path


def write_deep_flows(path, n):
    with open(path, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, '
                '"ts": 0, "dur": %d}' % (4 * n))
        for i in range(n):
            f.write(',\n{"ph": "X", "cat": "cpu_op", "name": "aten::%s", "pid": 1, "tid": 1, "ts": %d, "dur": %d}' % (
                "ab"[i % 2], i, 2 * n - 2 * i))
        for k in range(n):
            j = k * (n - 3) // n
            kts = 3 * n + 2 * k
            f.write(',\n{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": %d, "pid": 1, "tid": 1, "ts": %d.5}' % (
                k + 1, n + 1 + j))
            f.write(',\n{"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": %d, "pid": 0, "tid": 7, "ts": %d}' % (
                k + 1, kts))
            f.write(',\n{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": %d, "dur": 1}' % kts)
        f.write("]}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "crosstrain"))
    ap.add_argument("--csv-mb", default="25,100,200")
    ap.add_argument("--depths", default="25000,50000,100000,200000")
    ap.add_argument("--old-binary", default="", help="a previous build to run on the smaller inputs")
    ap.add_argument("--old-max-mb", type=float, default=25)
    ap.add_argument("--old-max-n", type=int, default=50000)
    ap.add_argument("--workdir", default="/tmp/crosstrain_analyze_scaling")
    ap.add_argument("--results", default="", help="write the results as JSON here")
    args = ap.parse_args()
    py = sys.executable
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    rows = []
    try:
        for mb in [float(s) for s in args.csv_mb.split(",") if s]:
            folder = os.path.join(args.workdir, "csv_%g" % mb)
            csv_path = write_ascend_folder(folder, mb)
            size = os.path.getsize(csv_path) / 1e6
            ours = run_measured([args.binary, "analyze", folder, "--top", "1"])
            base = run_measured([py, "-c", CSV_BASELINE, csv_path])
            rows.append({"input": "ascend-csv", "size_mb": size, "crosstrain": ours, "baseline": base})
            if args.old_binary and mb <= args.old_max_mb:
                rows[-1]["old"] = run_measured([args.old_binary, "analyze", folder, "--top", "1"])
            print(json.dumps(rows[-1]), flush=True)
            shutil.rmtree(folder)
        for n in [int(s) for s in args.depths.split(",") if s]:
            path = os.path.join(args.workdir, "deep_%d.json" % n)
            write_deep_flows(path, n)
            size = os.path.getsize(path) / 1e6
            ours = run_measured([args.binary, "analyze", path, "--top", "1"])
            base = run_measured([py, "-c", JSON_BASELINE, path])
            rows.append({"input": "deep-flows", "n": n, "size_mb": size, "crosstrain": ours, "baseline": base})
            if args.old_binary and n <= args.old_max_n:
                rows[-1]["old"] = run_measured([args.old_binary, "analyze", path, "--top", "1"])
            print(json.dumps(rows[-1]), flush=True)
            os.remove(path)
    finally:
        shutil.rmtree(args.workdir, ignore_errors=True)

    print("\n| input | size | crosstrain wall / CPU | CPU s per 100 MB | peak RSS | baseline wall / CPU | "
          "baseline peak RSS | CPU ratio (baseline / crosstrain) | previous build wall / CPU / peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        (w, c, m), (bw, bc, bm) = r["crosstrain"], r["baseline"]
        label = r["input"] + (" N=%d" % r["n"] if "n" in r else "")
        old = "%.2f s / %.2f s / %.0f MiB" % tuple(r["old"]) if "old" in r else "-"
        print("| %s | %.1f MB | %.2f s / %.2f s | %.2f | %.0f MiB | %.2f s / %.2f s | %.0f MiB | %.1fx | %s |" % (
            label, r["size_mb"], w, c, 100 * c / r["size_mb"], m, bw, bc, bm, bc / c, old))
    if args.results:
        with open(args.results, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

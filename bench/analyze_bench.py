#!/usr/bin/env python3
"""Benchmarks `crosstrain analyze` against Holistic Trace Analysis (holistictraceanalysis) and a
plain Python json.load + per-operator aggregation, on Kineto GPU traces of growing size made by
bench/make_large_trace.py, and checks that the figures HTA also computes agree.

Usage: .venv/bin/python bench/analyze_bench.py [--sizes 10,100,1024] [--baseline-max-mb 100]
Big trace files are written under --workdir and deleted at the end (unless --keep).
Each tool runs in its own process; wall time, CPU time (user+sys) and peak RSS come from wait4.
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

JSON_BASELINE = r'''
import json, sys, collections
with open(sys.argv[1]) as f:
    doc = json.load(f)
ops = collections.defaultdict(lambda: [0, 0.0])
kernel_us = 0.0
for e in doc["traceEvents"]:
    if e.get("ph") != "X":
        continue
    cat = e.get("cat")
    if cat == "cpu_op":
        o = ops[e["name"]]
        o[0] += 1
        o[1] += e["dur"]
    elif cat == "kernel":
        kernel_us += e["dur"]
print(json.dumps({"operators": len(ops), "kernel_us": kernel_us}))
'''

HTA_RUN = r'''
import json, sys
import hta.common.trace as T
# HTA 0.5.0 narrows "correlation" to the smallest integer type, which pandas >= 3 then refuses to
# assign larger row indices into; widen it first (benchmark-only workaround).
_orig = T.transform_correlation_to_index
def _widened(df, symbols):
    if "correlation" in df.columns:
        df["correlation"] = df["correlation"].astype("int64")
    return _orig(df, symbols)
T.transform_correlation_to_index = _widened
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
kb = a.get_gpu_kernel_breakdown(visualize=False)[0]
tb = a.get_temporal_breakdown(visualize=False)
out = {row["kernel_type"]: float(row["sum"]) for _, row in kb.iterrows()}
out["idle_us"] = float(tb["idle_time(us)"].iloc[0])
out["span_us"] = float(tb["kernel_time(us)"].iloc[0])
print("HTA_RESULT " + json.dumps(out))
'''


def run_measured(cmd, cwd=None):
    """Runs cmd, returns (wall s, cpu s, peak RSS MiB, stdout)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = b""
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("failed: %s" % " ".join(cmd))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, out.decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,100,1024", help="trace sizes in MB")
    ap.add_argument("--baseline-max-mb", type=float, default=100, help="largest size given to HTA and json.load")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build-nt", "crosstrain"))
    ap.add_argument("--workdir", default="/tmp/crosstrain_analyze_bench")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--results", default="", help="write the results as JSON here")
    args = ap.parse_args()
    py = sys.executable
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    try:
        for size in [float(s) for s in args.sizes.split(",")]:
            d = os.path.join(args.workdir, "trace_%gMB" % size)
            os.makedirs(d, exist_ok=True)
            trace = os.path.join(d, "rank0.json")
            subprocess.check_call([py, os.path.join(HERE, "make_large_trace.py"), "--size-mb", str(size), "--out", trace])
            mb = os.path.getsize(trace) / 1e6
            report = os.path.join(d, "report.json")
            wall, cpu, rss, _ = run_measured([args.binary, "analyze", trace, "--json", report])
            with open(report) as f:
                ours = json.load(f)["traces"][0]
            row = {"size_mb": round(mb, 1), "crosstrain": {"wall_s": wall, "cpu_s": cpu, "rss_mib": rss,
                                                            "mb_per_s_wall": mb / wall, "mb_per_s_cpu": mb / cpu}}
            steps = ours["steps"]
            # HTA leaves out the last ProfilerStep; compare on the steps both see.
            row["crosstrain"]["kernel_us_but_last"] = sum(s["categories_us"]["kernel"] for s in steps[:-1])
            row["crosstrain"]["comm_us_but_last"] = sum(s["comm_us"] for s in steps[:-1])
            row["crosstrain"]["idle_us_but_last"] = sum(s["duration_us"] - s["device_busy_us"] for s in steps[:-1])
            if size <= args.baseline_max_mb:
                w, c, r, out = run_measured([py, "-c", JSON_BASELINE, trace])
                row["json_load"] = {"wall_s": w, "cpu_s": c, "rss_mib": r, **json.loads(out)}
                w, c, r, out = run_measured([py, "-c", HTA_RUN, d])
                hta = json.loads(out.split("HTA_RESULT ", 1)[1])
                row["hta"] = {"wall_s": w, "cpu_s": c, "rss_mib": r, **hta}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if not args.keep:
                shutil.rmtree(d)
    finally:
        if not args.keep:
            shutil.rmtree(args.workdir, ignore_errors=True)

    print("\n| trace | crosstrain wall / CPU | MB/s wall / CPU | peak RSS | json.load wall | HTA wall | "
          "speed-up vs json.load / HTA (wall) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["crosstrain"]
        j, h = r.get("json_load"), r.get("hta")
        print("| %.0f MB | %.2f s / %.2f s | %.0f / %.0f | %.0f MiB | %s | %s | %s |" % (
            r["size_mb"], c["wall_s"], c["cpu_s"], c["mb_per_s_wall"], c["mb_per_s_cpu"], c["rss_mib"],
            "%.2f s" % j["wall_s"] if j else "-", "%.2f s" % h["wall_s"] if h else "-",
            "%.0fx / %.0fx" % (j["wall_s"] / c["wall_s"], h["wall_s"] / c["wall_s"]) if j else "-"))
    for r in rows:
        if "hta" in r:
            c, h = r["crosstrain"], r["hta"]
            print("%.0f MB: compute kernels crosstrain %.0f us vs HTA %.0f us; communication %.0f vs %.0f; "
                  "device idle (in steps) %.0f vs HTA idle (first to last kernel) %.0f" % (
                      r["size_mb"], c["kernel_us_but_last"], h.get("COMPUTATION", 0), c["comm_us_but_last"],
                      h.get("COMMUNICATION", 0), c["idle_us_but_last"], h["idle_us"]))
    if args.results:
        with open(args.results, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""`crosstrain compare` on two large float32 dumps (default 1 GiB per side) against a numpy script
computing the same metrics (bench/compare_numpy.py). Both run on a warm page cache; best of 3.
The two tools must agree on the numbers before their speeds are reported.

usage: .venv/bin/python bench/compare_throughput.py [GIB_PER_SIDE] [--bin build-nt/crosstrain]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def best_of(n, fn):
    """Best (wall, cpu) of n runs, by wall time. CPU = user + sys of the child processes: on a
    shared machine the wall time mostly measures how long other work kept us off the cores."""
    runs = []
    for _ in range(n):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = fn()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        runs.append((wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)))
    return min(runs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("gib", nargs="?", type=float, default=1.0)
    p.add_argument("--bin", default=os.path.join(ROOT, "build-nt", "crosstrain"))
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="crosstrain_bench.")
    try:
        subprocess.run([sys.executable, os.path.join(HERE, "make_large_dumps.py"), work, str(args.gib)], check=True)
        a, b = os.path.join(work, "a"), os.path.join(work, "b")
        tensors = [os.path.join(d, "tensors", "step0", f) for d in (a, b)
                   for f in os.listdir(os.path.join(d, "tensors", "step0"))]
        per_side = sum(os.path.getsize(f) for f in tensors) / 2
        for f in tensors:  # warm the page cache
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass
        report = os.path.join(work, "r.json")

        def run_crosstrain():
            t0 = time.perf_counter()
            subprocess.run([args.bin, "compare", a, b, "--json", report], stdout=subprocess.DEVNULL)
            return time.perf_counter() - t0

        def run_numpy():
            out = subprocess.run([sys.executable, os.path.join(HERE, "compare_numpy.py"), a, b],
                                 check=True, capture_output=True, text=True).stdout
            run_numpy.last = json.loads(out)
            return run_numpy.last["seconds"]

        ct, ct_cpu = best_of(args.repeats, run_crosstrain)
        npt, np_cpu = best_of(args.repeats, run_numpy)
        ours = {t["name"]: t["metrics"] for t in json.load(open(report))["tensors"] if t["metrics"]}
        for name, m in run_numpy.last["tensors"].items():
            c = ours[name]
            assert abs(c["cosine"] - m["cosine"]) < 1e-12, name
            assert c["max_abs_error"] == m["max_abs"] and c["max_rel_error"] == m["max_rel"], name
            assert abs(c["rmse"] - m["rmse"]) < 1e-12 * max(1.0, m["rmse"]), name
            assert abs(c["share_rel_err_below_1e-3"] - m["share_1e-3"]) < 1e-12, name
            assert abs(c["share_rel_err_below_5e-3"] - m["share_5e-3"]) < 1e-12, name
        gb = per_side / 1e9
        print(f"metrics agree with numpy on {len(ours)} tensors")
        print(f"per side: {gb:.3f} GB float32 ({len(ours)} tensors), CPUs: {os.cpu_count()}")
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        print(f"crosstrain compare: {ct:.3f} s wall ({ct_cpu:.3f} s CPU)  {gb / ct:.2f} GB/s per side, "
              f"{2 * gb / ct:.2f} GB/s both sides")
        print(f"numpy baseline:     {npt:.3f} s wall (its own timer; {np_cpu:.3f} s CPU incl. start-up)  "
              f"{gb / npt:.2f} GB/s per side")
        print(f"ratio: crosstrain is {npt / ct:.1f}x faster than numpy (wall), {np_cpu / ct_cpu:.1f}x (CPU)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What `crosstrain run --profile` costs against torch.profiler with the same schedule on the same
script (bench/profile_overhead_train.py: timm's ViT on the CPU, AdamW, 30 steps; wait 1, warmup 1,
active 3, repeat 1, the defaults of both).

Each round runs, one after the other in a rotating order, fresh processes of:
  plain        the script alone
  torch        the script recording itself with torch.profiler, Python stacks and module spans on
               (what `crosstrain run --profile` records by default)
  torch-nostack  the same without stacks (torch.profiler's own default)
  crosstrain   `crosstrain run --profile DIR -- python script.py` (the script unchanged)
and reads two figures per process: the training loop (wall and CPU seconds, from the script) and the
whole process (CPU seconds of the process and its children from wait4; wall seconds), which also
counts start-up, writing the traces and, for crosstrain, the call sites written at exit. Overheads
are medians over the rounds of (variant - plain) / plain. CPU time is the figure to quote on a
shared machine: other people's builds stretch wall time, barely CPU time (one intra-op thread).

usage: .venv/bin/python bench/run_profile_overhead.py [--rounds 5] [--steps 30]   (repository root, after building)
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "profile_overhead_train.py")


def binary():
    for b in ("build/crosstrain", "build-notorch/crosstrain"):
        if os.path.exists(os.path.join(ROOT, b)):
            return os.path.join(ROOT, b)
    sys.exit("no crosstrain binary: build first (scripts/build.sh)")


def run(cmd, cwd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    loop = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    return {"loop_wall": loop["loop_wall_s"], "loop_cpu": loop["loop_cpu_s"], "proc_wall": wall, "proc_cpu": cpu}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    py = sys.executable
    steps = ["--steps", str(args.steps)]
    with tempfile.TemporaryDirectory() as tmp:
        variants = {
            "plain": lambda d: [py, SCRIPT] + steps,
            "torch": lambda d: [py, SCRIPT, "--torch-profiler", d] + steps,
            "torch-nostack": lambda d: [py, SCRIPT, "--torch-profiler", d, "--no-stack"] + steps,
            "crosstrain": lambda d: [binary(), "run", "--profile", d, "--", py, SCRIPT] + steps,
        }
        names = list(variants)
        results = {n: [] for n in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                d = os.path.join(tmp, f"{n}{r}")
                os.makedirs(d)
                results[n].append(run(variants[n](d), tmp))
                print(f"round {r} {n}: " + ", ".join(f"{k} {v:.2f} s" for k, v in results[n][-1].items()), flush=True)
    print(f"\n{args.rounds} rounds, {args.steps} steps; median seconds and overhead against plain (median of the rounds' ratios)")
    print(f"{'variant':15} {'loop wall':>10} {'loop CPU':>10} {'proc wall':>10} {'proc CPU':>10}   "
          f"{'loop CPU ovh':>12} {'proc CPU ovh':>12} {'loop wall ovh':>13}")
    ratios = {n: {k: [(x[k] / p[k] - 1) * 100 for x, p in zip(results[n], results["plain"])] for k in results[n][0]}
              for n in names}
    for n in names:
        med = {k: statistics.median(x[k] for x in results[n]) for k in results[n][0]}
        ovh = {k: statistics.median(v) for k, v in ratios[n].items()}
        print(f"{n:15} {med['loop_wall']:10.2f} {med['loop_cpu']:10.2f} {med['proc_wall']:10.2f} {med['proc_cpu']:10.2f}   "
              f"{ovh['loop_cpu']:+11.1f}% {ovh['proc_cpu']:+11.1f}% {ovh['loop_wall']:+12.1f}%")
    # The target: crosstrain's overhead minus torch.profiler's (same settings), round by round, so
    # both sides of each difference saw the same machine.
    print("\ncrosstrain minus torch (stacks on), percentage points: median [min, max] of the rounds")
    for k in ("loop_cpu", "proc_cpu", "loop_wall", "proc_wall"):
        d = [c - t for c, t in zip(ratios["crosstrain"][k], ratios["torch"][k])]
        print(f"  {k:10} {statistics.median(d):+5.1f} [{min(d):+5.1f}, {max(d):+5.1f}]")


if __name__ == "__main__":
    main()

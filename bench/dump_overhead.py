#!/usr/bin/env python3
"""Cost of `crosstrain train --dump` in stats mode on ResNet-50 (CPU), measured in one run.

Each round runs, back to back: the training without a dump, the same with every step dumped
(stats mode), and a one-step run that measures start-up (model build, first step). Wall-clock step
times on a shared machine swing with other load, so the figure to quote is from CPU time, which
contention barely changes (one intra-op thread, so CPU time is the step's work):
  plain CPU per step  = (cpu(plain, N steps) - cpu(plain, 1 step)) / (N - 1)
  dump CPU per step   = (cpu(dumped, N steps) - cpu(plain, N steps)) / N
  ratio               = (plain + dump) / plain
Median step wall times are printed next to it.

usage: .venv/bin/python bench/dump_overhead.py [rounds] [steps]   (repository root, after building)
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile


def run(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    binary = os.path.join("build", "crosstrain")
    common = [binary, "train", "--device", "cpu", "--model", "resnet50", "--batch-size", "4", "--image-size", "224",
              "--threads", "1", "--no-progress"]
    out = tempfile.mkdtemp()
    plain_cpu, dump_cpu, one_cpu, plain_wall, dump_wall = [], [], [], [], []
    records = 0
    for _ in range(rounds):
        j = os.path.join(out, "r.json")
        plain_cpu.append(run(common + ["--steps", str(steps), "--warmup-steps", "1", "--json", j]))
        plain_wall.append(json.load(open(j))["batch_time_ms_median"])
        dump_cpu.append(run(common + ["--steps", str(steps), "--warmup-steps", "1", "--json", j, "--dump",
                                      os.path.join(out, "dump"), "--dump-overwrite", "--dump-mode", "stats",
                                      "--dump-steps", ""]))
        dump_wall.append(json.load(open(j))["batch_time_ms_median"])
        with open(os.path.join(out, "dump", "index.jsonl")) as f:
            records = sum(1 for _ in f) - 1
        one_cpu.append(run(common + ["--steps", "1", "--warmup-steps", "0"]))
    per_step = [(p - o) / (steps - 1) for p, o in zip(plain_cpu, one_cpu)]
    overhead = [(d - p) / steps for d, p in zip(dump_cpu, plain_cpu)]
    ratios = [(s + o) / s for s, o in zip(per_step, overhead)]
    print(f"ResNet-50, batch 4, 224 px, CPU, 1 thread, {steps} steps, {rounds} rounds; "
          f"{records} records per dumped run ({records // steps} per step)")
    print(f"CPU per step without dump: {statistics.median(per_step) * 1e3:.0f} ms "
          f"(rounds: {', '.join(f'{x * 1e3:.0f}' for x in per_step)})")
    print(f"dump cost per dumped step: {statistics.median(overhead) * 1e3:.0f} ms CPU "
          f"(rounds: {', '.join(f'{x * 1e3:.0f}' for x in overhead)})")
    print(f"step time ratio with / without --dump (stats, every step): {statistics.median(ratios):.3f} "
          f"(rounds: {', '.join(f'{x:.3f}' for x in ratios)})")
    print(f"median wall step: {statistics.median(plain_wall):.0f} ms without, {statistics.median(dump_wall):.0f} ms "
          f"with (wall rounds without: {', '.join(f'{x:.0f}' for x in plain_wall)}; "
          f"with: {', '.join(f'{x:.0f}' for x in dump_wall)})")


if __name__ == "__main__":
    main()

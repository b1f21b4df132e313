#!/usr/bin/env python3
"""How long `crosstrain compare` takes on two operator-level stats dumps of 100k records each.

The records are real: one step of tests/python/run_scripts/train_gpt2.py dumped by `crosstrain run
--dump-level both` (~1,100 records), repeated as further steps until each side holds RECORDS. Side B
equals A except one operator of the last step, disturbed, so the comparison reads everything and
finds a divergence at the end. Prints the median wall and CPU time of ROUNDS runs (CPU time is the figure to read on a busy machine).

usage: bench/compare_op_records.py [--records 100000] [--rounds 5] [--crosstrain build/crosstrain]
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def one_step_dump(crosstrain, work):
    d = os.path.join(work, "seed")
    subprocess.run([crosstrain, "run", "--seed", "0", "--dump", d, "--dump-level", "both", "--", sys.executable,
                    os.path.join(REPO, "tests/python/run_scripts/train_gpt2.py"), "--steps", "1"],
                   check=True, capture_output=True)
    with open(os.path.join(d, "index.jsonl")) as f:
        lines = [json.loads(l) for l in f]
    return lines[0], lines[1:]


def write_side(path, header, step_records, total, disturb):
    os.makedirs(path)
    seq = 0
    with open(os.path.join(path, "index.jsonl"), "w") as f:
        f.write(json.dumps(header) + "\n")
        step = 0
        while seq < total:
            for rec in step_records:
                if seq == total:
                    break
                r = dict(rec, seq=seq, step=step)
                if disturb and seq == total - 10:
                    r["stats"] = dict(r["stats"], norm=(r["stats"]["norm"] or 1.0) * 3)
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
                seq += 1
            step += 1
    with open(os.path.join(path, "loss.jsonl"), "w") as f:
        for s in range(step):
            f.write(json.dumps({"step": s, "loss": 1.0}) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", type=int, default=100000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--crosstrain", default=os.path.join(REPO, "build", "crosstrain"))
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="crosstrain_compare_ops_")
    try:
        header, records = one_step_dump(args.crosstrain, work)
        a, b = os.path.join(work, "a"), os.path.join(work, "b")
        write_side(a, header, records, args.records, False)
        write_side(b, header, records, args.records, True)
        size = os.path.getsize(os.path.join(a, "index.jsonl"))
        times, cpu = [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            r = subprocess.run([args.crosstrain, "compare", a, b], capture_output=True, text=True)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            times.append(time.perf_counter() - t0)
            cpu.append(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)
            if r.returncode != 1:
                sys.exit(f"compare exited {r.returncode}, expected 1 (a divergence):\n{r.stdout}{r.stderr}")
        print(f"{args.records} records per side ({len(records)} per step of GPT-2, {size / 1e6:.1f} MB index): "
              f"compare median {statistics.median(times):.3f} s wall (min {min(times):.3f}, max {max(times):.3f}), "
              f"{statistics.median(cpu):.3f} s CPU, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

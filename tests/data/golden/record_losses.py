#!/usr/bin/env python3
"""Records the per-step losses of every case in train_losses.cases with a crosstrain binary.

    python3 tests/data/golden/record_losses.py build/crosstrain tests/data/golden/train_losses.json

The JSON holds one recording per CPU instruction set (oneDNN picks kernels, and so rounding, by
ISA): each keeps the ISA flags and, per case, the flags and losses (Python floats: repr
round-trips every double). A recording for this machine's ISA replaces the one already there;
recordings of other ISAs are kept. Record with a build whose losses are known good (the trainer
of the commit the other recordings came from).
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def cases():
    with open(os.path.join(HERE, "train_losses.cases")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, *flags = shlex.split(line)
                yield name, flags


def cpu_isa():
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni")
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return [w for w in wanted if w in have]
    return []


def main():
    binary, out = sys.argv[1], sys.argv[2]
    result = {"cpu_isa": cpu_isa(), "cases": {}}
    recordings = []
    if os.path.exists(out):
        with open(out) as f:
            recordings = [r for r in json.load(f)["recordings"] if r["cpu_isa"] != result["cpu_isa"]]
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in cases():
            log = os.path.join(tmp, name + ".jsonl")
            subprocess.run([binary, "train", *flags, "--log", log], check=True, stdout=subprocess.DEVNULL)
            with open(log) as f:
                losses = [json.loads(l)["loss"] for l in f if l.strip()]
            result["cases"][name] = {"flags": flags, "losses": losses}
            print(name, losses)
    with open(out, "w") as f:
        json.dump({"recordings": recordings + [result]}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

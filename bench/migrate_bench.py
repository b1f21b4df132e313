#!/usr/bin/env python3
"""Times `crosstrain migrate` on a generated 100,000-line PyTorch code base.

Usage: bench/migrate_bench.py [--binary build-nt/crosstrain] [--lines 100000] [--repeat 5] [--keep DIR]

The code base is deterministic: files of ~500 lines mixing plain Python (classes, functions,
docstrings, comments) with the CUDA-specific code `migrate` rewrites or reports (about one line
in twelve). Baselines measured in the same run on the same files:
  * CPython's own parser (ast.parse of every file, in this process), the cost of merely parsing;
  * `cp -r` of the tree, the cost of writing a copy.
Prints one line per measurement (best of --repeat: wall time and CPU time) and the ratios.
Exits 1 when migrating takes 5 s or more (wall).
"""
import argparse
import ast
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

CUDA_SNIPPETS = [
    "    model = model.cuda()\n",
    "    x = x.cuda(non_blocking=True)\n",
    "    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n",
    "    torch.cuda.manual_seed_all(seed)\n",
    "    buf = torch.zeros(n, device=\"cuda\")\n",
    "    with torch.cuda.amp.autocast():\n        y = model(x)\n",
    "    scaler = torch.cuda.amp.GradScaler()\n",
    "    state = torch.load(path, map_location=\"cuda:0\")\n",
    "    peak = torch.cuda.max_memory_allocated()\n",
    "    torch.backends.cudnn.benchmark = True\n",
    "    dist.init_process_group(backend=\"nccl\")\n",
    "    t = t.to(f\"cuda:{rank}\")\n",
]

PLAIN_FUNCTION = '''

def {name}(x, scale={k}.0, bias=None):
    """Scales and shifts `x`; mentions .cuda() and "cuda" only in prose."""
    # a comment about torch.cuda.is_available() that must stay a comment
    total = 0.0
    for i in range({k}):
        total += (i * scale) % 7
    if bias is not None:
        total += float(bias)
    values = [v * total for v in range(5) if v % 2 == 0]
    return {{"name": "{name}", "total": total, "values": values, "n": len(values)}}
'''

PLAIN_CLASS = '''

class {name}(nn.Module):
    """A small block."""

    def __init__(self, dim={k}):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(torch.relu(self.proj(x)) + x)
'''

HEADER = '''"""Generated module {i} for the migrate benchmark."""
import os
import math

import torch
import torch.nn as nn
import torch.distributed as dist
'''


def generate(root, target_lines):
    os.makedirs(root, exist_ok=True)
    lines = 0
    file_index = 0
    while lines < target_lines:
        parts = [HEADER.format(i=file_index)]
        n = parts[0].count("\n")
        k = 0
        while n < 500 and lines + n < target_lines:
            name = f"f{file_index}_{k}"
            block = PLAIN_CLASS.format(name="Block" + name, k=k % 64 + 8) if k % 3 == 0 else PLAIN_FUNCTION.format(name=name, k=k % 50 + 1)
            cuda = f"\n\ndef step_{name}(model, x, n, seed, path, rank):\n" + CUDA_SNIPPETS[k % len(CUDA_SNIPPETS)] + CUDA_SNIPPETS[(k + 5) % len(CUDA_SNIPPETS)] + "    return x\n"
            parts.append(block)
            parts.append(cuda)
            n += block.count("\n") + cuda.count("\n")
            k += 1
        sub = os.path.join(root, f"pkg{file_index // 20}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"mod{file_index}.py"), "w") as f:
            f.write("".join(parts))
        lines += n
        file_index += 1
    return lines, file_index


def cpu_seconds():
    """CPU time (user + system) of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def best_of(repeat, fn, setup=None):
    """Best wall time and best CPU time of `repeat` calls; `setup` (not timed) runs before each.
    On a shared machine the CPU time is the steadier number."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        if setup:
            setup()
        c0, t0 = cpu_seconds(), time.perf_counter()
        fn()
        best_wall = min(best_wall, time.perf_counter() - t0)
        best_cpu = min(best_cpu, cpu_seconds() - c0)
    return best_wall, best_cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "build-nt", "crosstrain"))
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="generate into this directory and keep it")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="crosstrain_migrate_bench_")
    src = os.path.join(work, "src")
    shutil.rmtree(src, ignore_errors=True)
    lines, files = generate(src, args.lines)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(src) for f in fs)
    print(f"code base: {files} files, {lines} lines, {size / 1e6:.1f} MB in {src}")

    out = os.path.join(work, "out")
    copy = os.path.join(work, "copy")

    def clean():
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(copy, ignore_errors=True)

    def migrate(*extra):
        subprocess.run([args.binary, "migrate", src, "--out", out, *extra], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def check():
        r = subprocess.run([args.binary, "migrate", src, "--check"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert r.returncode == 1, r.returncode

    def python_parse():
        for d, _, fs in os.walk(src):
            for f in fs:
                with open(os.path.join(d, f), "rb") as fh:
                    ast.parse(fh.read())

    def copy_tree():
        subprocess.run(["cp", "-r", src, copy], check=True)

    report = os.path.join(work, "report")
    subprocess.run([args.binary, "migrate", src, "--check", "--report", report], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(os.path.join(report, "change_list.csv")) as f:
        changes = sum(1 for _ in f) - 1

    load_before = os.getloadavg()[0]
    results = {
        "migrate (copy, all cores)": best_of(args.repeat, migrate, clean),
        "migrate --jobs 1": best_of(args.repeat, lambda: migrate("--jobs", "1"), clean),
        "migrate --check": best_of(args.repeat, check),
        "baseline: python ast.parse": best_of(args.repeat, python_parse),
        "baseline: cp -r": best_of(args.repeat, copy_tree, clean),
    }
    print(f"changes per run: {changes}; load average before: {load_before:.1f} on {os.cpu_count()} CPUs")
    print(f"{'':32s} {'wall':>9s} {'cpu':>9s} {'k lines/s (wall)':>17s}")
    for name, (wall, cpu) in results.items():
        print(f"{name:32s} {wall:7.3f} s {cpu:7.3f} s {lines / wall / 1e3:17.1f}")
    base_wall, base_cpu = results["baseline: python ast.parse"]
    for name in ("migrate (copy, all cores)", "migrate --jobs 1", "migrate --check"):
        wall, cpu = results[name]
        print(f"ratio {name} / python ast.parse: wall {wall / base_wall:.2f}, cpu {cpu / base_cpu:.2f}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if results["migrate (copy, all cores)"][0] < 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())

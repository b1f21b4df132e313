#!/usr/bin/env python3
"""Time and peak memory of `crosstrain migrate --check` on files users bring that are hard to parse:
one-line data literals just under the default 4 MiB size limit (numbers; strings) and code nested
as deep as CPython allows (99 indented blocks).

Usage: bench/migrate_hostile_bench.py [--binary build/crosstrain] [--repeat 3] [--keep DIR]

Each file is measured with `/usr/bin/time -v` (wall time, peak RSS) taking turns with the
baseline, CPython parsing the same file (`python -c 'import ast; ast.parse(open(f).read())'`, a
fresh interpreter each time, so its peak includes the interpreter's ~10 MB). Prints the best of
--repeat for each, and the ratios: migrate / file size (memory) and migrate / CPython (time, memory).
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

LIMIT = 4 << 20


def numbers_literal():
    rng = random.Random(1)
    parts, size = [], 0
    while size < LIMIT - 200_000:
        p = f"{rng.uniform(-1, 1):.6f}"
        parts.append(p)
        size += len(p) + 2
    return "import torch\nWEIGHTS = [" + ", ".join(parts) + "]\nx = torch.ones(1).cuda()\n"


def strings_literal():
    rng = random.Random(2)
    parts, size = [], 0
    while size < LIMIT - 200_000:
        p = f"'tok{rng.randrange(10**6)}'"
        parts.append(p)
        size += len(p) + 2
    return "import torch\nVOCAB = [" + ", ".join(parts) + "]\nx = torch.ones(1).cuda()\n"


def deep_nesting():
    lines = ["import torch"]
    for i in range(99):
        lines.append("    " * i + ("if a:", "for b in c:", "while d:")[i % 3])
    lines.append("    " * 99 + "y = torch.ones(1).cuda()")
    return "\n".join(lines) + "\n"


def measure(cmd):
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", r.stderr)
    seconds = float(wall.group(3)) + 60 * float(wall.group(2)) + 3600 * float(wall.group(1) or 0)
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    return r.returncode, seconds, rss_kb / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "build", "crosstrain"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="generate into this directory and keep it")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="migrate_hostile_")
    os.makedirs(work, exist_ok=True)
    cases = {"numbers.py": numbers_literal(), "strings.py": strings_literal(), "deep99.py": deep_nesting()}
    print(f"{'file':<12} {'bytes':>9} | {'migrate wall':>12} {'peak MB':>8} {'x file':>7} | "
          f"{'CPython wall':>12} {'peak MB':>8} | {'time x':>6} {'mem x':>6}")
    failed = False
    for name, text in cases.items():
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(text)
        best_m, best_p = None, None
        for _ in range(args.repeat):  # taking turns
            code, wall, rss = measure([args.binary, "migrate", path, "--check", "--to", "cpu"])
            # exit 1: the .cuda() at the end is found, as it should be; anything else is a failure
            failed |= code != 1
            best_m = min(best_m or (wall, rss), (wall, rss))
            _, wall, rss = measure([sys.executable, "-c", f"import ast; ast.parse(open({path!r}).read())"])
            best_p = min(best_p or (wall, rss), (wall, rss))
        size = len(text.encode())
        print(f"{name:<12} {size:>9} | {best_m[0]:>11.2f}s {best_m[1]:>8.1f} {best_m[1] * 2**20 / size:>7.1f} | "
              f"{best_p[0]:>11.2f}s {best_p[1]:>8.1f} | {best_m[0] / best_p[0]:>6.2f} {best_m[1] / best_p[1]:>6.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Peak memory and time of crosstrain's JSON readers against Python's json module, same files.

Cases (each file is written once into --workdir, then every tool runs in its own process; wall
time, CPU time (user + sys) and peak RSS come from /usr/bin/time):

- deep-header: a dump whose index.jsonl header line is 16 MiB of '[' (compare A B).
- deep-loss:   a dump whose loss.jsonl holds one line {"step":0,"loss":[[[...]]]} of 16 MiB.
- sources:     a trace with a 60 MiB <trace>.sources.json side file of call sites (analyze TRACE).
- sources-deep: the same side file holding a 60 MiB value of '[' under a key the reader ignores.
- compare-json: two stats dumps of --records records each (default 1,000,000); compare --json.

Python's side reads the same bytes with json.loads (the header line, the loss line, the side file,
each index line of both dumps and the compare report crosstrain wrote). Python's json is recursive:
on the deep files it stops with RecursionError, which the table shows as its outcome.

Usage: .venv/bin/python bench/json_memory.py --binary build-nt/crosstrain [--records 1000000]
       [--deep-mib 16] [--sources-mib 60] [--workdir /tmp/crosstrain_json_memory] [--cases a,b]
       [--old-binary PREVIOUS/crosstrain [--old-cases deep-header,deep-loss,sources]]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRACE = os.path.join(ROOT, "tests", "data", "traces", "torch_cpu_small.json")
HEADER = {"format": "crosstrain-dump", "version": 1, "mode": "stats", "producer": "json_memory.py",
          "meta": {"precision": "fp32"}}

PY_HEADER = r'''
import json, sys
with open(sys.argv[1]) as f:
    line = f.readline()
try:
    json.loads(line)
    print("parsed")
except RecursionError:
    print("RecursionError")
'''

PY_LOSS = r'''
import json, sys
n = 0
with open(sys.argv[1]) as f:
    for line in f:
        try:
            json.loads(line)
            n += 1
        except RecursionError:
            print("RecursionError")
            sys.exit(0)
print("parsed", n)
'''

PY_WHOLE = r'''
import json, sys
with open(sys.argv[1]) as f:
    doc = json.load(f)
print("parsed", len(doc))
'''

PY_INDEXES = r'''
import json, sys
kept = []
for path in sys.argv[1:]:
    with open(path) as f:
        kept.append([json.loads(line) for line in f])
print("parsed", sum(len(k) for k in kept))
'''


def run_measured(cmd, ok_codes=(0,)):
    """Runs cmd under /usr/bin/time; returns (wall s, cpu s, peak RSS MiB, exit code, last output line).

    /usr/bin/time forks from its own small process, so the peak is the command's own (a child
    forked from this script would count this script's pages until it execs)."""
    fd, stats = tempfile.mkstemp(prefix="json_memory_time_")
    os.close(fd)
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", stats] + cmd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    wall = time.monotonic() - t0
    with open(stats) as f:
        fields = [l for l in f.read().splitlines() if l and l[0].isdigit()][-1].split()
    os.remove(stats)
    out = p.stdout.decode(errors="replace")
    lines = [l for l in out.splitlines() if l.strip()]
    last = lines[-1] if lines else ""
    if p.returncode not in ok_codes:
        raise RuntimeError("exit %d: %s: %s" % (p.returncode, " ".join(cmd), out[-800:]))
    return wall, float(fields[1]) + float(fields[2]), int(fields[0]) / 1024.0, p.returncode, last


def write_dump(folder, records, header_line=None, loss_line=None):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "index.jsonl"), "w") as f:
        f.write((header_line if header_line is not None else json.dumps(HEADER, separators=(",", ":"))) + "\n")
        chunk = []
        for i in range(records):
            chunk.append('{"seq":%d,"step":%d,"name":"forward/layer%d","kind":"forward","dtype":"float32",'
                         '"shape":[8,64],"stats":{"max":%d.5,"min":-1.25,"mean":0.01,"norm":12.5,'
                         '"nan_count":0,"inf_count":0}}\n' % (i, i // 1000, i % 1000, i % 7))
            if len(chunk) == 10000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
    with open(os.path.join(folder, "loss.jsonl"), "w") as f:
        f.write((loss_line if loss_line is not None else '{"step":0,"loss":1.5}') + "\n")


def write_sources(trace_copy, mib):
    """A call-site file of about `mib` MiB: files, calls [start_ns, file, line], lines."""
    path = trace_copy[:-len(".json")] + ".sources.json"
    with open(path, "w") as f:
        f.write('{"format":"crosstrain-call-sites","version":1,"cpus":2,"dataloaders":[],')
        f.write('"files":[["train.py","user"],["model.py","user"]],"calls":[')
        i = 0
        first = True
        while f.tell() < mib * (1 << 20) - 64:
            parts = []
            for _ in range(10000):
                parts.append("[%d,%d,%d]" % (1700000000000000000 + i * 1000, i % 2, 1 + i % 500))
                i += 1
            f.write(("" if first else ",") + ",".join(parts))
            first = False
        f.write('],"lines":[[0,7,"loss = model(x)"]]}')
    return path, i


def table_row(case, tool, m, note=""):
    wall, cpu, rss, code, last = m
    print("| %s | %s | %.2f | %.2f | %.0f | %d | %s |" % (case, tool, wall, cpu, rss, code, (note or last)[:110]))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--records", type=int, default=1000000)
    ap.add_argument("--deep-mib", type=int, default=16)
    ap.add_argument("--sources-mib", type=int, default=60)
    ap.add_argument("--workdir", default="/tmp/crosstrain_json_memory")
    ap.add_argument("--cases", default="deep-header,deep-loss,sources,sources-deep,compare-json")
    ap.add_argument("--old-binary", help="a previous build, run on the same files after --binary")
    ap.add_argument("--old-cases", default="deep-header,deep-loss,sources",
                    help="cases given to --old-binary (it took 4.6 GB and 8 GB on sources-deep and compare-json)")
    a = ap.parse_args()
    cases = a.cases.split(",")
    old_cases = a.old_cases.split(",") if a.old_binary else []

    def crosstrain(case, label, args, ok_codes=(0,), note=""):
        """Runs the binary (and the previous build for the old cases) on `args`; returns the new run's figures."""
        first = None
        for name, binary in [("crosstrain", a.binary)] + ([("previous build", a.old_binary)] if case in old_cases else []):
            m = run_measured([binary] + args, ok_codes=ok_codes)
            table_row(case, name + " " + label, m, note)
            first = first or m
        return first

    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    w = a.workdir
    deep = "[" * (a.deep_mib << 20)  # written into the files below; the tools run under /usr/bin/time
    small = os.path.join(w, "small")
    write_dump(small, 3)
    print("| case | tool | wall s | cpu s | peak RSS MiB | exit | outcome |")
    print("|---|---|---|---|---|---|---|")
    if "deep-header" in cases:
        d = os.path.join(w, "deep_header")
        write_dump(d, 3, header_line=deep)
        crosstrain("deep-header", "compare", ["compare", d, small], ok_codes=(1, 2, 3))
        table_row("deep-header", "python json.loads",
                  run_measured([a.python, "-c", PY_HEADER, os.path.join(d, "index.jsonl")]))
    if "deep-loss" in cases:
        d = os.path.join(w, "deep_loss")
        write_dump(d, 3, loss_line='{"step":0,"loss":' + deep)
        crosstrain("deep-loss", "compare", ["compare", d, small], ok_codes=(1, 2, 3))
        table_row("deep-loss", "python json.loads",
                  run_measured([a.python, "-c", PY_LOSS, os.path.join(d, "loss.jsonl")]))
    if "sources" in cases:
        d = os.path.join(w, "sources")
        os.makedirs(d)
        trace = os.path.join(d, "trace.json")
        shutil.copy(TRACE, trace)
        side, calls = write_sources(trace, a.sources_mib)
        note = "%.0f MiB, %d calls" % (os.path.getsize(side) / 2 ** 20, calls)
        crosstrain("sources", "analyze", ["analyze", trace], note=note)
        table_row("sources", "python json.load", run_measured([a.python, "-c", PY_WHOLE, side]))
    if "sources-deep" in cases:
        d = os.path.join(w, "sources_deep")
        os.makedirs(d)
        trace = os.path.join(d, "trace.json")
        shutil.copy(TRACE, trace)
        side = trace[:-len(".json")] + ".sources.json"
        with open(side, "w") as f:
            f.write('{"format":"crosstrain-call-sites","version":1,"extra":' + "[" * (a.sources_mib << 20))
        crosstrain("sources-deep", "analyze", ["analyze", trace], ok_codes=(0, 1, 2))
        table_row("sources-deep", "python json.load", run_measured([a.python, "-c", PY_WHOLE.replace(
            "doc = json.load(f)", "try:\n        doc = json.load(f)\n    except RecursionError:\n        print('RecursionError'); sys.exit(0)"), side]))
    if "compare-json" in cases:
        da, db = os.path.join(w, "cmp_a"), os.path.join(w, "cmp_b")
        write_dump(da, a.records)
        write_dump(db, a.records)
        out = os.path.join(w, "compare.json")
        note = "%d records per side, index %.0f MiB each" % (a.records, os.path.getsize(os.path.join(da, "index.jsonl")) / 2 ** 20)
        crosstrain("compare-json", "compare (no --json)", ["compare", da, db], note=note)
        crosstrain("compare-json", "compare --json", ["compare", da, db, "--json", out], note=note)
        print("report: %.0f MiB" % (os.path.getsize(out) / 2 ** 20))
        table_row("compare-json", "python json.loads (both indexes)",
                  run_measured([a.python, "-c", PY_INDEXES, os.path.join(da, "index.jsonl"), os.path.join(db, "index.jsonl")]))
        table_row("compare-json", "python json.load (the report)", run_measured([a.python, "-c", PY_WHOLE, out]))


if __name__ == "__main__":
    main()

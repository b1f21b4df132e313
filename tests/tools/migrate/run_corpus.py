#!/usr/bin/env python3
"""Migrates every training script of corpus/ and runs the result on the CPU.

Each script's first line says how to launch it and what is expected:
    # corpus: launch=python|torchrun expect=runs|unchanged|refused:<rule> [expect-<target>=...]
For each target (cpu and device-agnostic) the script is migrated with `crosstrain migrate --to T`:
  runs       `--check` finds nothing left that fails it, and the migrated script exits 0 on the CPU
             (torchrun: 2 Gloo processes), printing "corpus-ok"; the migrated copy then passes --check.
  unchanged  like runs, and migration leaves every byte as it was.
  refused    `--check` fails and names <rule> among the findings.
Scripts run in parallel (--jobs); exit status 1 when any expectation fails.
"""
import argparse
import concurrent.futures as cf
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

TARGETS = ("cpu", "device-agnostic")


def parse_header(path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# corpus:"), f"{path.name}: no '# corpus:' header"
    fields = dict(item.split("=", 1) for item in first[len("# corpus:"):].split())
    expect = {t: fields.get("expect-" + t, fields["expect"]) for t in TARGETS}
    return fields["launch"], expect


def findings_of(crosstrain, script, target):
    r = subprocess.run([crosstrain, "migrate", "--check", "--to", target, "--json", "-", str(script)],
                       capture_output=True, text=True, timeout=60)
    doc = json.loads(r.stdout)
    rules = [u["rule"] for f in doc["files"] for u in f.get("unsupported", [])]
    harmless = {"torch.backends.cudnn", "torch.backends.cuda"}
    return r.returncode, [x for x in rules if x not in harmless]


def run_script(args, launch, script, cwd):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    if launch == "torchrun":
        cmd = [args.torchrun, "--standalone", "--nproc_per_node", "2", str(script)]
    else:
        cmd = [args.python, str(script)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, cwd=cwd, env=env)
    return r.returncode, r.stdout + r.stderr


def check_one(args, script, target):
    launch, expect = parse_header(script)
    want = expect[target]
    label = f"{script.name} --to {target}"
    code, rules = findings_of(args.crosstrain, script, target)
    if want.startswith("refused:"):
        rule = want.split(":", 1)[1]
        ok = code == 1 and rule in rules
        return ok, f"{label}: refused by --check ({', '.join(sorted(set(rules)))})" if ok else \
            f"{label}: expected --check to refuse with {rule}, got exit {code} and {rules}"
    if rules:
        return False, f"{label}: expected to run, but --check flags {rules}"
    work = pathlib.Path(tempfile.mkdtemp(prefix="corpus_", dir=args.work))
    out = work / "out"
    r = subprocess.run([args.crosstrain, "migrate", "--to", target, "--out", str(out), str(script)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return False, f"{label}: migrate exited {r.returncode}: {r.stderr.strip()}"
    migrated = out / script.name
    if want == "unchanged" and migrated.read_bytes() != script.read_bytes():
        return False, f"{label}: an already device-agnostic script was changed"
    again, rest = findings_of(args.crosstrain, migrated, target)
    if again != 0:
        return False, f"{label}: the migrated copy fails --check ({rest or 'something left to convert'})"
    if launch == "torchrun" and target not in args.torchrun_targets.split(","):
        shutil.rmtree(work, ignore_errors=True)
        return True, f"{label}: migrated and checked (torchrun runs only for {args.torchrun_targets})"
    code, output = run_script(args, launch, migrated, work)
    ok = code == 0 and "corpus-ok" in output
    if ok:
        shutil.rmtree(work, ignore_errors=True)
        return True, f"{label}: runs ({launch})"
    return False, f"{label}: exit {code}\n{output[-3000:]}\n--- migrated ---\n{migrated.read_text()}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--crosstrain", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--corpus", default=str(pathlib.Path(__file__).with_name("corpus")))
    p.add_argument("--work", default=tempfile.gettempdir())
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--timeout", type=int, default=150)
    p.add_argument("--only", default="")
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--torchrun-targets", default="cpu",
                   help="targets whose torchrun scripts are run (each run starts three interpreters)")
    args = p.parse_args()
    args.torchrun = str(pathlib.Path(args.python).with_name("torchrun"))
    scripts = sorted(pathlib.Path(args.corpus).glob("*.py"))
    scripts = [s for s in scripts if args.only in s.name]
    targets = args.targets.split(",")
    jobs = [(s, t) for s in scripts for t in targets]
    # Longest first: torchrun runs start three interpreters each.
    jobs.sort(key=lambda j: parse_header(j[0])[0] != "torchrun")
    failed = 0
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        for ok, message in pool.map(lambda j: check_one(args, *j), jobs):
            print(("PASS " if ok else "FAIL ") + message, flush=True)
            failed += not ok
    print(f"{len(jobs) - failed}/{len(jobs)} corpus checks passed ({len(scripts)} scripts x {len(targets)} targets)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

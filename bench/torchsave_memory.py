#!/usr/bin/env python3
"""Peak memory and time of crosstrain's torch.save reader against Python's torch.load(weights_only=
True) on the same files, in one run, taking turns.

usage: .venv/bin/python bench/torchsave_memory.py [--build build] [--work DIR] [--rounds 3]

The files come from tests/python/torchsave_scale_cases.py at bench size (real torch.save output:
resnet50's state dict, zip and legacy; parameters and SGD momentum as views of flat buffers; 2000
views of one 8 MiB storage; a checkpoint with 2M-step histories; a 30 MB CIFAR-10 batch) and its
hostile shapes. Each round runs, for every case, Python then crosstrain (build/bench/torchsave_bench,
through the calls --weights, --resume and --data cifar: make), each in a child process: peak RSS
from wait4() (ru_maxrss), time of the read itself from the child. Medians over the rounds. The
goal: crosstrain's peak at most 1.5x Python's plus 100 MB, errors one short line. Then the hostile
shapes at a tenth and at full size, crosstrain only: the time ratio shows linearity (10 = linear).
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable

# The Python side of each case: what a Python program would do with the file.
PY_PRELUDE = ("import json, sys, time\nimport torch\n"
              "def rss():\n"
              "    return next(float(l.split()[1]) / 1024 for l in open('/proc/self/status') if l.startswith('VmRSS:'))\n")
PY_CODE = {
    "load": "o = torch.load(sys.argv[1], weights_only=True)\nwhat = type(o).__name__",
    "weights": "import torchvision\nm = getattr(torchvision.models, sys.argv[2])(num_classes=10)\n"
               "rss_before, t = rss(), time.perf_counter()\n"
               "m.load_state_dict(torch.load(sys.argv[1], weights_only=True))\nwhat = 'loaded'",
    # torchvision.datasets.CIFAR10's reading of one batch.
    "cifar": "import pickle, numpy as np\nwith open(sys.argv[1] + '/data_batch_1', 'rb') as f:\n"
             "    e = pickle.load(f, encoding='latin1')\n"
             "data = np.vstack([e['data']]).reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1))\n"
             "what = str(len(e['labels'])) + ' samples'",
    "none": "what = 'nothing'",
}
PY_TEMPLATE = PY_PRELUDE + """rss_before = rss()
t = time.perf_counter()
try:
{body}
    ok, err = True, ''
except Exception as e:
    ok, err, what = False, str(e), str(e)
s = time.perf_counter() - t
print(json.dumps({{"seconds": s, "ok": ok, "what": what[:160], "error_bytes": len(err), "rss_before_mib": rss_before,
                  "rss_after_mib": rss()}}))
"""


GENERATOR = os.path.join(ROOT, "tests", "python", "torchsave_scale_cases.py")
# In a child process: this one must stay small, since a child's peak RSS starts from its parent's
# at fork (the kernel keeps the larger of the two), and torch alone is ~700 MiB.
WRITE_EXTRA = """import importlib.util, os, shutil, sys
import torch
spec = importlib.util.spec_from_file_location("cases", sys.argv[1])
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
full, tenth = sys.argv[2], sys.argv[3]
sd = torch.load(os.path.join(full, "state_dict.pt"), weights_only=True)
torch.save(sd, os.path.join(full, "state_dict_legacy.pt"), _use_new_zipfile_serialization=False)
os.makedirs(os.path.join(full, "cifar"), exist_ok=True)
shutil.move(os.path.join(full, "cifar_batch"), os.path.join(full, "cifar", "data_batch_1"))
gen.write_deep(tenth, 10 ** 5)
gen.write_repeated_key(tenth, 10000)
torch.save({"module." * 60000 + "weight": torch.zeros(2)}, os.path.join(tenth, "module_key.pt"))
torch.save({"k" * (1 << 20): [None] * 5000}, os.path.join(tenth, "long_key.pt"))
"""


def run(cmd):
    """Runs `cmd`; returns (its JSON line, peak RSS in MiB)."""
    with tempfile.TemporaryFile(mode="w+") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        said = err.read()
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"seconds": float("nan"), "ok": False, "what": (said.strip().splitlines() or ["?"])[-1][:160],
                "error_bytes": len(said)}, usage.ru_maxrss / 1024
    return json.loads(lines[-1]), usage.ru_maxrss / 1024


def python_cmd(kind, *args):
    body = "\n".join("    " + l for l in PY_CODE[kind].splitlines())
    return [PY, "-c", PY_TEMPLATE.format(body=body), *args]


def machine():
    model = "?"
    flags = ""
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("Flags:"):
                flags = line
    except OSError:
        pass
    bf16 = "native bf16 (avx512_bf16/amx)" if ("avx512_bf16" in flags or "amx_bf16" in flags) else "no native bf16"
    load = os.getloadavg()[0]
    return f"{model}, {os.cpu_count()} CPUs, {bf16}, {platform.system()} {platform.release()}, load {load:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    bench = os.path.join(a.build, "bench", "torchsave_bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"no {bench}: build it (cmake --build build --target torchsave_bench)")
    work = a.work or tempfile.mkdtemp(prefix="torchsave_memory.")
    full, tenth = os.path.join(work, "full"), os.path.join(work, "tenth")
    try:
        os.makedirs(full, exist_ok=True)
        os.makedirs(tenth, exist_ok=True)
        if not os.path.exists(os.path.join(tenth, "long_key.pt")):
            print("writing the files ...", file=sys.stderr)
            subprocess.run([PY, GENERATOR, full, "--size", "bench"], check=True, stdout=subprocess.DEVNULL)
            subprocess.run([PY, "-c", WRITE_EXTRA, GENERATOR, full, tenth], check=True)
        f = lambda name: os.path.join(full, name)
        cases = [
            ("nothing (the process itself)", python_cmd("none"), [bench, "none"], None),
            ("resnet50 state dict", python_cmd("load", f("state_dict.pt")), [bench, "state", f("state_dict.pt")],
             f("state_dict.pt")),
            ("same, legacy format", python_cmd("load", f("state_dict_legacy.pt")),
             [bench, "state", f("state_dict_legacy.pt")], f("state_dict_legacy.pt")),
            ("same into a resnet50 (--weights)", python_cmd("weights", f("state_dict.pt"), "resnet50"),
             [bench, "weights", "resnet50", f("state_dict.pt")], f("state_dict.pt")),
            ("resnet50 params + momentum as views of 2 flat buffers", python_cmd("load", f("flat_params.pt")),
             [bench, "state", f("flat_params.pt")], f("flat_params.pt")),
            ("the same as separate tensors", python_cmd("load", f("flat_copy.pt")),
             [bench, "state", f("flat_copy.pt")], f("flat_copy.pt")),
            ("2000 views of one 8 MiB storage", python_cmd("load", f("views.pt")), [bench, "state", f("views.pt")],
             f("views.pt")),
            ("checkpoint with 2M-step histories", python_cmd("load", f("history.pt")),
             [bench, "state", f("history.pt")], f("history.pt")),
            ("CIFAR-10 batch, 10000 rows (--data cifar:)", python_cmd("cifar", f("cifar")),
             [bench, "cifar", f("cifar")], f("cifar/data_batch_1")),
            ("{1 MiB key: [None] * 50000}", python_cmd("load", f("long_key.pt")), [bench, "state", f("long_key.pt")],
             f("long_key.pt")),
            ("'module.' x 600000 key into a resnet18 (--weights)", python_cmd("weights", f("module_key.pt"), "resnet18"),
             [bench, "weights", "resnet18", f("module_key.pt")], f("module_key.pt")),
            ("tensor in a tuple nested 10^6 deep", python_cmd("load", f("deep.pt")), [bench, "state", f("deep.pt")],
             f("deep.pt")),
            ("one 1 MiB key set 100000 times", python_cmd("load", f("repeated_key.pt")),
             [bench, "state", f("repeated_key.pt")], f("repeated_key.pt")),
        ]
        results = {i: {"py": [], "ct": []} for i in range(len(cases))}
        for r in range(a.rounds):
            for i, (label, py, ct, _) in enumerate(cases):
                print(f"round {r + 1}/{a.rounds}: {label}", file=sys.stderr)
                results[i]["py"].append(run(py))
                results[i]["ct"].append(run(ct))
        print(f"Machine: {machine()}; {a.rounds} rounds, medians. Peak: the process's peak RSS in MiB (ru_maxrss);"
              " held: its RSS after the read minus before, the value still held; read time in s.\n")
        print("| file | size | Python peak (held) | crosstrain peak (held) | limit (1.5x + 100) | Python s |"
              " crosstrain s | crosstrain says |")
        print("|---|---|---|---|---|---|---|---|")
        for i, (label, _, _, path) in enumerate(cases):
            py = results[i]["py"]
            ct = results[i]["ct"]
            py_rss = statistics.median(m for _, m in py)
            ct_rss = statistics.median(m for _, m in ct)
            limit = 1.5 * py_rss + 100
            size = f"{os.path.getsize(path) / 1e6:.1f} MB" if path else "-"
            py_s = statistics.median(j["seconds"] for j, _ in py)
            ct_s = statistics.median(j["seconds"] for j, _ in ct)
            last = ct[-1][0]
            said = last["what"] if last["ok"] else f"error, {last['error_bytes']} chars: {last['what'][:90]}"
            met = "met" if ct_rss <= limit else "**not met**"
            py_said = "" if py[-1][0]["ok"] else f", error of {py[-1][0]['error_bytes']} chars"
            held = lambda runs: statistics.median(j.get("rss_after_mib", 0) - j.get("rss_before_mib", 0) for j, _ in runs)
            print(f"| {label} | {size} | {py_rss:.0f} ({held(py):.0f}{py_said}) | {ct_rss:.0f} ({held(ct):.0f}) |"
                  f" {limit:.0f} {met} | {py_s:.3f} | {ct_s:.3f} | {said.replace('|', '/')} |")
        print("\nLinearity, crosstrain only (median of the rounds; 10x the input should take ~10x the time):\n")
        print("| hostile shape | a tenth | full | ratio |")
        print("|---|---|---|---|")
        for label, name, kind in (("tuple nesting (10^5 / 10^6)", "deep.pt", "state"),
                                  ("repeated 1 MiB key (10^4 / 10^5 times)", "repeated_key.pt", "state"),
                                  ("'module.' repeats (6x10^4 / 6x10^5)", "module_key.pt", "weights"),
                                  ("[None] under a 1 MiB key (5000 / 50000)", "long_key.pt", "state")):
            times = []
            for d in (tenth, full):
                cmd = [bench, kind] + (["resnet18"] if kind == "weights" else []) + [os.path.join(d, name)]
                times.append(statistics.median(run(cmd)[0]["seconds"] for _ in range(a.rounds)))
            print(f"| {label} | {times[0]:.3f} s | {times[1]:.3f} s | {times[1] / max(times[0], 1e-9):.1f} |")
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""`cmake --install` into a fresh prefix, then the installed `crosstrain` from there: both binaries
side by side in PREFIX/bin, the agent's package in PREFIX/share/crosstrain/python and its compiled
statistics in PREFIX/lib, and
`crosstrain run` loading the agent from that copy (not from the source tree) and dumping a step.
usage: install_tree.py --cmake CMAKE --build BUILD_DIR --python PYTHON [--engine]"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

SCRIPT = """
import os, crosstrain, torch
print("agent:", crosstrain.__file__)
print("native:", os.environ.get("CROSSTRAIN_AGENT_NATIVE", ""))
torch.manual_seed(0)
m = torch.nn.Linear(3, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(2):
    m(torch.ones(4, 3)).sum().backward(); opt.step(); opt.zero_grad()
"""


def check(condition, what, output=""):
    if not condition:
        sys.stderr.write(f"install_tree: {what}\n{output}\n")
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cmake", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--engine", action="store_true", help="the build has crosstrain-engine")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="crosstrain_install_")
    try:
        prefix = os.path.join(work, "prefix")
        r = subprocess.run([args.cmake, "--install", args.build, "--prefix", prefix], capture_output=True, text=True)
        check(r.returncode == 0, "cmake --install failed", r.stdout + r.stderr)
        front = os.path.join(prefix, "bin", "crosstrain")
        check(os.access(front, os.X_OK), f"no executable {front}")
        if args.engine:
            check(os.access(os.path.join(prefix, "bin", "crosstrain-engine"), os.X_OK), "no crosstrain-engine beside it")
        native = os.path.join(prefix, "lib", "libcrosstrain_tensor_stats.so")
        check(os.path.isfile(native), f"no {native} (the agent's compiled statistics)")
        agent = os.path.join(prefix, "share", "crosstrain", "python", "crosstrain")
        check(os.path.isfile(os.path.join(agent, "_boot", "sitecustomize.py")), f"no agent package in {agent}")
        for root, dirs, _ in os.walk(agent):
            check("__pycache__" not in dirs, f"a __pycache__ was installed in {root}")

        with open(os.path.join(work, "train.py"), "w") as f:
            f.write(SCRIPT)
        r = subprocess.run([front, "run", "--seed", "0", "--dump", "d", "--", args.python, "train.py"], cwd=work,
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, "crosstrain run from the prefix failed", r.stdout + r.stderr)
        loaded = [l.split(": ", 1)[1] for l in r.stdout.splitlines() if l.startswith("agent: ")]
        check(loaded == [os.path.join(agent, "__init__.py")], f"the agent did not come from {agent}: {loaded}",
              r.stdout)
        named = [l.split(": ", 1)[1] for l in r.stdout.splitlines() if l.startswith("native: ")]
        check(named == [native], f"run named {named} as the compiled statistics, not {native}", r.stdout)
        with open(os.path.join(work, "d", "loss.jsonl")) as f:
            steps = [json.loads(l)["step"] for l in f]
        check(steps == [0, 1], f"the dump's loss.jsonl holds steps {steps}, not [0, 1]")

        if args.engine:  # an engine command through the installed front: libtorch loads from there
            r = subprocess.run([front, "models", "--json", "-"], capture_output=True, text=True, timeout=300)
            check(r.returncode == 0, "crosstrain models from the prefix failed", r.stdout + r.stderr)
            check("resnet18" in r.stdout, "crosstrain models from the prefix lists no resnet18", r.stdout)
        print(f"install_tree: {prefix} holds a working crosstrain" + (" with its engine" if args.engine else ""))
    finally:
        if os.environ.get("CROSSTRAIN_KEEP_TEST_DIRS") != "1":
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

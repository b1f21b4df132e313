"""Running small training programs under crosstrain's agent, in a fresh interpreter each (the agent
patches torch process-wide, so every case gets its own process), and reading their dumps."""
import atexit
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BOOT = os.path.join(REPO, "python", "crosstrain", "_boot")


def run_under_agent(source, config, cwd, args=(), env_extra=None, timeout=600, preexec_fn=None, pythonpath=()):
    """Writes `source` to cwd/prog.py and runs it with the agent configured by `config` (a dict),
    `pythonpath` folders after the agent's; returns the CompletedProcess (text output)."""
    path = os.path.join(cwd, "prog.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(source))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([BOOT, *pythonpath] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if config is not None:
        env["CROSSTRAIN_AGENT_CONFIG"] = json.dumps(config)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, path, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=preexec_fn)


def torch_version():
    """(major, minor) of the torch the programs import, read from its metadata (not imported)."""
    return tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", importlib.metadata.version("torch")).groups())


def read_index(directory):
    with open(os.path.join(directory, "index.jsonl")) as f:
        lines = [json.loads(l) for l in f]
    return lines[0], lines[1:]


def read_losses(directory):
    with open(os.path.join(directory, "loss.jsonl")) as f:
        return [json.loads(l) for l in f]


_scratch_dirs = []


def scratch():
    """A fresh folder, removed when the test process exits (CROSSTRAIN_KEEP_TEST_DIRS=1 keeps it)."""
    d = tempfile.mkdtemp(prefix="crosstrain_agent_test_")
    _scratch_dirs.append(d)
    return d


def _remove_scratch():
    if os.environ.get("CROSSTRAIN_KEEP_TEST_DIRS") == "1":
        return
    for d in _scratch_dirs:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_remove_scratch)


def load_json(path):
    with open(path) as f:
        return json.load(f)


MLP = """
import torch, torch.nn as nn
torch.manual_seed(0)
torch.set_num_threads(1)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)
    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range({steps}):
    x = torch.randn(5, 8)
    y = torch.randint(0, 4, (5,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(repr(loss.item()))
"""

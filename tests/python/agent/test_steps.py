"""The agent finds training steps by itself: every optimizer, however the script reaches its step."""
import json
import os
import subprocess
import sys
import unittest

from agent_test_support import BOOT, load_json, read_index, run_under_agent, scratch, torch_version

# A program that prints, after each of its iterations, the step counter the agent keeps.
COUNTER = """
import torch, torch.nn as nn
import crosstrain._agent as agent
def steps():
    return agent.current().tracker.step
"""


def counts(result):
    lines = [l for l in result.stdout.splitlines() if l.startswith("steps ")]
    return [int(l.split()[1]) for l in lines]


class StepsTest(unittest.TestCase):
    def check(self, body, expected, config=None, args=()):
        d = scratch()
        r = run_under_agent(COUNTER + body, config or {}, d, args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(counts(r), expected, r.stdout + r.stderr)

    def test_plain_optimizer_step_ends_a_step(self):
        self.check("""
m = nn.Linear(3, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(3):
    m(torch.randn(4, 3)).sum().backward(); opt.step(); opt.zero_grad()
    print("steps", steps())
""", [1, 2, 3])

    @unittest.skipIf(torch_version() < (2, 4), "fused AdamW on the CPU and torch.amp.GradScaler('cpu'): torch 2.4")
    def test_grad_scaler_lr_scheduler_and_fused_adamw(self):
        self.check("""
m = nn.Linear(3, 2)
opt = torch.optim.AdamW(m.parameters(), lr=0.1, fused=True)
sched = torch.optim.lr_scheduler.StepLR(opt, 1)
scaler = torch.amp.GradScaler("cpu")
for i in range(2):
    scaler.scale(m(torch.randn(4, 3)).sum()).backward()
    scaler.step(opt); scaler.update(); sched.step(); opt.zero_grad()
    print("steps", steps())
""", [1, 2])

    @unittest.skipIf(torch_version() < (2, 3), "torch.amp.GradScaler('cpu'): torch 2.3")
    def test_a_step_skipped_by_the_grad_scaler_still_ends(self):
        # An Inf gradient makes GradScaler skip optimizer.step(); the iteration is still a step.
        self.check("""
m = nn.Linear(3, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
for i in range(3):
    x = torch.randn(4, 3)
    if i == 1:
        x[0, 0] = float("inf")
    scaler.scale(m(x).sum()).backward()
    scaler.step(opt); scaler.update(); opt.zero_grad()
    print("steps", steps())
""", [1, 2, 3])

    def test_a_subclass_calling_its_parents_step_is_one_step(self):
        self.check("""
class MySGD(torch.optim.SGD):
    def step(self, closure=None):
        return super().step(closure)
m = nn.Linear(3, 2)
torch.optim.SGD(m.parameters(), lr=0.1)  # wraps SGD.step too
opt = MySGD(m.parameters(), lr=0.1)
for i in range(2):
    m(torch.randn(4, 3)).sum().backward(); opt.step(); opt.zero_grad()
    print("steps", steps())
""", [1, 2])

    def test_step_marker_in_the_script_under_cprofile_keeps_the_profile(self):
        # python -m cProfile runs the script with globals of its own and holds the profile function:
        # the marker still ends each step, and the profile is still printed.
        d = scratch()
        with open(os.path.join(d, "prog.py"), "w") as f:
            f.write(COUNTER + """
w = torch.zeros(3, requires_grad=True)
def train_step(x):
    (w * x).sum().backward()
for i in range(3):
    train_step(torch.randn(3))
    print("steps", steps())
""")
        env = dict(os.environ, PYTHONPATH=BOOT,
                   CROSSTRAIN_AGENT_CONFIG=json.dumps({"step_marker": "__main__:train_step"}))
        r = subprocess.run([sys.executable, "-m", "cProfile", "-s", "calls", "prog.py"], cwd=d, env=env,
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(counts(r), [1, 2, 3], r.stdout + r.stderr)
        self.assertIn("function calls", r.stdout)

    def test_step_marker_in_the_script_itself(self):
        # A loop without a torch optimizer: the script's own function ends each step.
        self.check("""
w = torch.zeros(3, requires_grad=True)
def train_step(x):
    loss = (w * x).sum() ** 2
    loss.backward()
    with torch.no_grad():
        w.sub_(0.1 * w.grad)
        w.grad = None
for i in range(3):
    train_step(torch.randn(3))
    print("steps", steps())
""", [1, 2, 3], config={"step_marker": "__main__:train_step"})

    def test_step_marker_in_an_imported_module(self):
        d = scratch()
        with open(os.path.join(d, "loop.py"), "w") as f:
            f.write("def one_step(w, x):\n    return (w * x).sum()\n")
        r = run_under_agent(COUNTER + """
import loop
w = torch.ones(3)
for i in range(2):
    loop.one_step(w, torch.randn(3))
    print("steps", steps())
""", {"step_marker": "loop:one_step"}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(counts(r), [1, 2])


    def test_step_marker_over_two_optimizers_is_one_step_with_both_gradients(self):
        # Muon on the matrices and AdamW on the rest, stepped one after the other (nanochat): each
        # optimizer alone would make a step with no forward; the marked function makes one step,
        # and both optimizers' parameter gradients are recorded before their updates.
        d = scratch()
        r = run_under_agent(COUNTER + """
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
matrices = [p for p in model.parameters() if p.ndim == 2]
vectors = [p for p in model.parameters() if p.ndim < 2]
opt_m = torch.optim.SGD(matrices, lr=0.1, momentum=0.9)
opt_v = torch.optim.AdamW(vectors, lr=0.01)
def step_optimizers():
    opt_m.step()
    opt_v.step()
    model.zero_grad(set_to_none=True)
for i in range(3):
    loss = model(torch.randn(5, 4)).pow(2).mean()
    loss.backward()
    step_optimizers()
    print("steps", steps())
""", {"step_marker": "__main__:step_optimizers", "dump": "dump", "dump_level": "both", "dump_steps": "0-2"}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(counts(r), [1, 2, 3], r.stdout + r.stderr)
        _, index = read_index(os.path.join(d, "dump"))
        for step in range(3):
            names = [e["name"] for e in index if e["step"] == step]
            self.assertIn("forward/0", names)
            grads = sorted(n for n in names if n.startswith("param_grad/"))
            self.assertEqual(grads, ["param_grad/0.bias", "param_grad/0.weight", "param_grad/2.bias",
                                     "param_grad/2.weight"], step)
            self.assertFalse([n for n in names if n.startswith("op_forward/") and "_foreach" in n], names)


class LoadingTest(unittest.TestCase):
    def test_nothing_is_imported_before_the_script_imports_torch(self):
        d = scratch()
        r = run_under_agent("""
import sys
print("torch" in sys.modules, "numpy" in sys.modules)
""", {"seed": 3}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["False", "False"])

    def test_the_environments_own_sitecustomize_still_runs(self):
        d = scratch()
        site = os.path.join(d, "site")
        os.makedirs(site)
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write("import builtins\nbuiltins.SITE_WAS_HERE = 42\n")
        r = run_under_agent("print(SITE_WAS_HERE)\n", {}, d, env_extra={"PYTHONPATH": site})
        # run_under_agent puts the agent first and the caller's PYTHONPATH after it.
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "42")

    def test_a_bad_configuration_is_one_line_and_exit_two_before_the_script(self):
        # A usage error of `crosstrain run`, said before the script's first line (nothing has run yet).
        d = scratch()
        r = run_under_agent("import torch\nprint('ran')\n", {"dump_level": "layers"}, d)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout.strip(), "")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("--dump-level", r.stderr)  # run's flag: run handed the value over

    def test_the_state_report_counts_steps(self):
        d = scratch()
        state = os.path.join(d, "state")
        os.makedirs(state)
        r = run_under_agent("""
import torch
m = torch.nn.Linear(2, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(4):
    m(torch.ones(1, 2)).sum().backward(); opt.step()
""", {"state_dir": state}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        reports = [load_json(os.path.join(state, f)) for f in os.listdir(state)]
        self.assertEqual(len(reports), 1)
        self.assertEqual(reports[0]["steps"], 4)


if __name__ == "__main__":
    unittest.main()

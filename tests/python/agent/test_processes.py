"""Every process of a command gets its own place or records nothing, nothing is written twice, and a
dump that cannot be written never stops the training: DataLoader workers started by spawn or
forkserver, a child forked in the middle of a step, two Python processes of one command, another
run's dump in the way, training in a thread, a file system that refuses writes, tensors the format
cannot hold, a bad option."""
import json
import os
import resource
import signal
import unittest

from agent_test_support import MLP, read_index, read_losses, run_under_agent, scratch

WORKERS = """
import sys, torch, torch.nn as nn
class Scale(nn.Module):  # a transform that is a module, as torchvision's are
    def forward(self, x):
        return x * 0.5
class Data(torch.utils.data.Dataset):
    def __init__(self):
        self.t = Scale()
    def __len__(self):
        return 16
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return self.t(torch.randn(8, generator=g)), i % 4
if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(Data(), batch_size=4, num_workers=2, multiprocessing_context=sys.argv[1])
    for x, y in loader:
        nn.functional.cross_entropy(model(x), y).backward(); opt.step(); opt.zero_grad()
    print("done")
"""


def dump_lines(d):
    with open(os.path.join(d, "index.jsonl")) as f:
        return [json.loads(l) for l in f]


class ProcessesTest(unittest.TestCase):
    def test_spawn_and_forkserver_workers_record_nothing(self):
        for method in ("spawn", "forkserver"):
            d = scratch()
            r = run_under_agent(WORKERS, {"dump": "dump", "dump_level": "both", "dump_steps": "0-3"}, d, (method,),
                                env_extra={"CROSSTRAIN_AGENT_STATE_DIR": d})
            self.assertEqual(r.returncode, 0, method + r.stderr[-3000:])
            self.assertIn("done", r.stdout)
            _, records = read_index(os.path.join(d, "dump"))
            self.assertEqual({x["step"] for x in records}, {0, 1, 2, 3})
            self.assertFalse([x for x in records if "Scale" in x["name"]], method)  # the workers' transform
            self.assertEqual([n for n in os.listdir(os.path.join(d, "dump")) if n.startswith("pid")], [])
            self.assertEqual([l["step"] for l in read_losses(os.path.join(d, "dump"))], [0, 1, 2, 3])

    def test_a_child_forked_in_a_step_writes_nothing(self):
        d = scratch()
        src = MLP.format(steps=3).replace(
            "    opt.zero_grad()\n",
            "    opt.zero_grad()\n"
            "    import os, sys\n"
            "    if step == 0 and os.fork() == 0:\n"
            "        sys.exit(0)  # a normal exit: exit handlers and buffered files run in the child\n"
            "    if step == 0:\n"
            "        os.wait()\n")
        r = run_under_agent(src, {"dump": "dump", "dump_level": "both", "dump_steps": "0-2"}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = dump_lines(os.path.join(d, "dump"))
        self.assertEqual(sum(1 for l in lines if "format" in l), 1)
        seqs = [l["seq"] for l in lines[1:]]
        self.assertEqual(seqs, sorted(set(seqs)))
        self.assertEqual([l["step"] for l in read_losses(os.path.join(d, "dump"))], [0, 1, 2])

    def test_two_processes_of_one_run_each_have_a_folder(self):
        d = scratch()
        config = {"dump": "dump", "dump_level": "module"}
        env = {"CROSSTRAIN_AGENT_STATE_DIR": d}
        first = run_under_agent(MLP.format(steps=2), config, d, env_extra=env)
        second = run_under_agent(MLP.format(steps=2), config, d, env_extra=env)
        self.assertEqual((first.returncode, second.returncode), (0, 0), first.stderr + second.stderr)
        own = [n for n in os.listdir(os.path.join(d, "dump")) if n.startswith("pid")]
        self.assertEqual(len(own), 1, os.listdir(os.path.join(d, "dump")))
        _, a = read_index(os.path.join(d, "dump"))
        _, b = read_index(os.path.join(d, "dump", own[0]))
        self.assertEqual([x["name"] for x in a], [x["name"] for x in b])
        self.assertGreater(len(a), 5)

    def test_another_runs_dump_stops_recording_not_training(self):
        d = scratch()
        config = {"dump": "dump", "dump_level": "module"}
        run_under_agent(MLP.format(steps=1), config, d, env_extra={"CROSSTRAIN_AGENT_STATE_DIR": os.path.join(d, "a")})
        before = open(os.path.join(d, "dump", "index.jsonl")).read()
        r = run_under_agent(MLP.format(steps=2), config, d, env_extra={"CROSSTRAIN_AGENT_STATE_DIR": os.path.join(d, "b")})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.splitlines()), 2)  # both steps trained
        self.assertIn("already holds a dump", r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        with open(os.path.join(d, "dump", "index.jsonl")) as f:
            self.assertEqual(f.read(), before)

    def test_training_in_a_thread_records_step_zero(self):
        d = scratch()
        body = MLP.format(steps=2)
        src = "import threading\ndef train():\n" + "".join("    " + l + "\n" for l in body.splitlines()) + \
              "t = threading.Thread(target=train)\nimport torch\nt.start(); t.join()\n"
        r = run_under_agent(src, {"dump": "dump", "dump_level": "op", "dump_steps": "0-1"}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, records = read_index(os.path.join(d, "dump"))
        steps = [x["step"] for x in records if x["kind"] == "op_forward"]
        self.assertGreater(steps.count(0), 3)
        self.assertEqual(steps.count(0), steps.count(1))

    def test_a_file_system_that_refuses_writes_stops_the_dump_not_the_training(self):
        d = scratch()

        def small_files():  # writes past 64 KiB fail (EFBIG) as on a full disk
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        r = run_under_agent(MLP.format(steps=6), {"dump": "dump", "dump_level": "both", "dump_mode": "tensors",
                                                  "dump_steps": ""}, d, preexec_fn=small_files)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.splitlines()), 6)
        self.assertNotIn("Traceback", r.stderr)
        stopped = [l for l in r.stderr.splitlines() if "recording stopped" in l]
        self.assertEqual(len(stopped), 1, r.stderr)
        self.assertIn("File too large", stopped[0])

    def test_tensors_the_format_cannot_hold_are_counted_not_fatal(self):
        d = scratch()
        src = """
import torch, torch.nn as nn, warnings
warnings.filterwarnings("ignore")
class Odd(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
    def forward(self, x):
        y = self.fc(x)
        # a jagged nested tensor where torch has the layout (2.1 has not: a strided one there)
        nested = torch.nested.nested_tensor([y[0, :2], y[1, :3]], **JAGGED)
        return y, nested, y.detach().to(torch.float8_e4m3fn), torch.empty(3, device="meta") * 2
JAGGED = {"layout": torch.jagged} if hasattr(torch, "jagged") else {}
model = Odd(); opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    out = model(torch.randn(2, 4))
    (out[0].sum() + (out[1].values().sum() if JAGGED else 0)).backward(); opt.step(); opt.zero_grad()
print("done")
"""
        r = run_under_agent(src, {"dump": "dump", "dump_level": "both", "dump_mode": "tensors"}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("recording stopped", r.stderr)
        with open(os.path.join(d, "dump", "run.json")) as f:
            skipped = json.load(f)["skipped"]
        self.assertIn("nested tensor", skipped)
        self.assertIn("meta tensor", skipped)
        self.assertIn("dtype float8_e4m3fn", skipped)
        _, records = read_index(os.path.join(d, "dump"))
        self.assertIn("forward/fc", [x["name"] for x in records])

    def test_tensors_inside_torch_func_transforms_are_counted_not_fatal(self):
        # Per-sample gradients as the torch.func tutorial computes them: the model runs under
        # vmap(grad(...)), whose tensors are wrappers without storage of their own.
        d = scratch()
        src = """
import torch, torch.nn as nn
from torch.func import functional_call, grad, vmap
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def loss_of(params, x, y):
    return ((functional_call(model, params, (x.unsqueeze(0),)) - y) ** 2).mean()
x, y = torch.randn(6, 4), torch.randn(6, 1)
for step in range(3):
    params = {k: v.detach() for k, v in model.named_parameters()}
    per_sample = vmap(grad(loss_of), in_dims=(None, 0, 0))(params, x, y)
    for name, p in model.named_parameters():
        p.grad = per_sample[name].clamp(-1, 1).mean(0)
    opt.step()
    model(x).sum()  # an ordinary forward after the step
print("done")
"""
        r = run_under_agent(src, {"dump": "dump", "dump_level": "both", "dump_steps": "0-2"}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("recording stopped", r.stderr)
        with open(os.path.join(d, "dump", "run.json")) as f:
            skipped = json.load(f)["skipped"]
        self.assertGreater(skipped.get("inside a torch.func transform", 0), 0, skipped)
        _, records = read_index(os.path.join(d, "dump"))
        steps = {x["step"] for x in records if x["name"].startswith("param_grad/")}
        self.assertEqual(steps, {0, 1, 2})

    def test_a_multiprocessing_pool_leaves_the_dump_folder_to_the_main_process(self):
        # A Pool worker that calls a module before the main process trains (feature extraction)
        # writes DIR/pid<N>; DIR is the training's, so two such runs compare as one.
        d = scratch()
        src = """
import multiprocessing as mp
import torch, torch.nn as nn
def featurize(i):
    with torch.no_grad():
        return nn.Linear(4, 4)(torch.ones(1, 4)).sum().item()
if __name__ == "__main__":
    with mp.get_context("spawn").Pool(1) as pool:
        pool.map(featurize, range(2))
    torch.manual_seed(0)
    model = nn.Linear(4, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        model(torch.randn(3, 4)).sum().backward(); opt.step(); opt.zero_grad()
    print("done")
"""
        r = run_under_agent(src, {"dump": "dump", "dump_level": "module"}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        header, records = read_index(os.path.join(d, "dump"))
        self.assertIn("param_grad/weight", [x["name"] for x in records])
        self.assertTrue(os.path.exists(os.path.join(d, "dump", "run.json")))
        self.assertTrue(any(n.startswith("pid") for n in os.listdir(os.path.join(d, "dump"))))

    def test_a_bad_option_is_one_line_and_exit_two_before_the_script(self):
        d = scratch()
        r = run_under_agent("print('ran')\n", {"dump": "dump", "dump_filter": "(unclosed"}, d)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        # Python's own syntax is the documented one: inline flags are accepted.
        r = run_under_agent(MLP.format(steps=1), {"dump": "dump", "dump_filter": "(?i)FORWARD/FC1"}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, records = read_index(os.path.join(d, "dump"))
        self.assertEqual({x["name"] for x in records}, {"forward/fc1"})


if __name__ == "__main__":
    unittest.main()

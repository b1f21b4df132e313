"""What the agent writes: the dump format, its statistics, its limits, and that it changes nothing
the script computes."""
import json
import math
import os
import unittest

import numpy as np

from agent_test_support import MLP, REPO, load_json, read_index, read_losses, run_under_agent, scratch


def losses_printed(result):
    return [float(l) for l in result.stdout.split()]


class DumpTest(unittest.TestCase):
    def run_mlp(self, config, steps=3, d=None):
        d = d or scratch()
        r = run_under_agent(MLP.format(steps=steps), config, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        return d, r

    def test_two_runs_give_identical_dumps(self):
        cfg = {"dump": "dump", "dump_level": "both", "dump_steps": "0-1"}
        a, _ = self.run_mlp(cfg)
        b, _ = self.run_mlp(cfg)
        for name in ("index.jsonl", "loss.jsonl"):
            with open(os.path.join(a, "dump", name)) as fa, open(os.path.join(b, "dump", name)) as fb:
                self.assertEqual(fa.read(), fb.read(), name)

    def test_recording_leaves_every_loss_bitwise_equal(self):
        _, plain = self.run_mlp(None, steps=4)
        for level in ("module", "op", "both"):
            _, dumped = self.run_mlp({"dump": "dump", "dump_level": level, "dump_steps": "", "dump_mode": "tensors"},
                                     steps=4)
            self.assertEqual(losses_printed(plain), losses_printed(dumped), level)

    def test_records_in_execution_order_with_kinds_and_losses(self):
        d, r = self.run_mlp({"dump": "dump", "dump_level": "both", "dump_steps": "1", "dump_optimizer_ops": True})
        header, records = read_index(os.path.join(d, "dump"))
        self.assertEqual(header["format"], "crosstrain-dump")
        self.assertEqual([rec["seq"] for rec in records], list(range(len(records))))
        self.assertEqual({rec["step"] for rec in records}, {1})
        names = [rec["name"] for rec in records]
        for expected in ("forward/fc1", "forward/act", "grad_output/fc2", "param_grad/fc1.weight", "loss",
                         "op_forward/fc1/aten.addmm", "op_backward/fc1/aten.mm", "op_optimizer/aten.add_"):
            self.assertIn(expected, names)
        # forward before backward before the optimizer
        self.assertLess(names.index("forward/fc2"), names.index("grad_output/fc2"))
        self.assertLess(names.index("grad_output/fc1"), names.index("param_grad/fc1.weight"))
        self.assertLess(names.index("param_grad/fc2.bias"), names.index("op_optimizer/aten.add_"))
        op = next(rec for rec in records if rec["name"] == "op_backward/fc1/aten.mm")["op"]
        self.assertEqual((op["name"], op["phase"], op["module"]), ("aten::mm", "backward", "fc1"))
        forward_line = MLP.splitlines().index("        return self.fc2(self.act(self.fc1(x)))") + 1
        self.assertEqual(op["source"], f"prog.py:{forward_line}")  # the forward line whose gradient this is
        # every step's loss is logged, the dumped one included, and equals what the script printed
        self.assertEqual([l["loss"] for l in read_losses(os.path.join(d, "dump"))], losses_printed(r))
        loss = next(rec for rec in records if rec["name"] == "loss")
        self.assertAlmostEqual(loss["stats"]["mean"], losses_printed(r)[1], places=6)

    def test_a_batch_made_in_the_process_is_not_part_of_any_step(self):
        # torchvision's Normalize is a module, and the dataset draws and stacks: with num_workers=0 all
        # of it runs in the training process before each step's forward. No step holds any of it, so
        # step 0 has the records of step 1 and the dump equals the one with a worker process.
        program = """
import sys
import torch
from torchvision import transforms

class Noise(torch.utils.data.Dataset):
    norm = transforms.Normalize((0.5,), (0.25,))
    def __len__(self):
        return 24
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return self.norm(torch.rand(1, 4, 4, generator=g)), i % 3

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(Noise(), batch_size=8, num_workers=int(sys.argv[1]))
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
"""
        names = {}
        for workers in ("0", "1"):
            d = scratch()
            r = run_under_agent(program, {"dump": "dump", "dump_level": "both", "dump_steps": "0-1"}, d, args=[workers])
            self.assertEqual(r.returncode, 0, r.stderr)
            _, records = read_index(os.path.join(d, "dump"))
            names[workers] = [(rec["step"], rec["name"]) for rec in records]
            self.assertFalse([n for n in names[workers] if "Normalize" in n[1]], workers)
            steps = [[n for s, n in names[workers] if s == k] for k in (0, 1)]
            self.assertTrue(steps[0])
            self.assertEqual(steps[0], steps[1], workers)
        self.assertEqual(names["0"], names["1"])

    def test_the_optimizers_own_operators_skip_the_mode_unless_recorded(self):
        """Without --dump-optimizer-ops the dispatch mode steps aside for the optimizer's operators
        (they would cost each one the mode's entry for nothing) and is back for the next step's and a
        closure's forward; with it, they are recorded."""
        program = """
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
x, y = torch.randn(8, 4), torch.randn(8, 1)
class Watched(torch.optim.SGD):
    def step(self, closure=None):
        print("optimizer", _get_current_dispatch_mode() is not None)
        return super().step(closure)
opt = Watched(model.parameters(), lr=0.1)
def closure():
    print("closure", _get_current_dispatch_mode() is not None)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss
for step in range(3):
    opt.step(closure) if step == 1 else closure()
    if step != 1:
        opt.step()
"""
        for asked in (False, True):
            d = scratch()
            r = run_under_agent(program, {"dump": "dump", "dump_level": "op", "dump_steps": "", "dump_optimizer_ops": asked}, d)
            self.assertEqual(r.returncode, 0, r.stderr)
            seen = [line.split() for line in r.stdout.split("\n") if line]
            # step 0: closure called directly, then step(); step 1: step(closure); step 2 as step 0
            self.assertEqual(seen, [["closure", "True"], ["optimizer", str(asked)], ["optimizer", str(asked)],
                                    ["closure", "True"], ["closure", "True"], ["optimizer", str(asked)]], asked)
            _, records = read_index(os.path.join(d, "dump"))
            for step in range(3):
                phases = {rec["op"]["phase"] for rec in records if rec["step"] == step}
                self.assertEqual(phases, {"forward", "backward", "optimizer"} if asked else {"forward", "backward"},
                                 (asked, step))

    def test_an_unsafe_view_of_the_output_just_made_shares_its_statistics(self):
        """matmul's reshape of its mm result (_unsafe_view: the same memory, not a view) takes the
        result's statistics instead of reading it again; once anything ran in between, it reads."""
        program = """
import torch
import crosstrain._record as record
computed = []
count = record._stats.device_vector
record._stats.device_vector = lambda t: computed.append(t.shape) or count(t)
torch.manual_seed(0)
layer = torch.nn.Linear(6, 5)
a, b = torch.randn(3, 4, 6), torch.randn(6, 8)
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
for step in range(2):
    y = layer(a).sum() + (a @ b).sum()  # matmul of a 3-d input: mm, then _unsafe_view
    c = torch.mm(a[0], b)
    c.data.mul_(2)  # written through an alias that keeps c's version
    v = torch.ops.aten._unsafe_view(c, [2, 16])
    y.backward()
    opt.step()
    opt.zero_grad()
print(len(computed))
"""
        d = scratch()
        r = run_under_agent(program, {"dump": "dump", "dump_level": "op", "dump_steps": ""}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, records = read_index(os.path.join(d, "dump"))
        views = [i for i, rec in enumerate(records) if rec["op"]["name"] == "aten::_unsafe_view"]
        self.assertGreaterEqual(len(views), 4)
        shared = 0
        for i in views:  # those of the output recorded just before
            before, view = records[i - 1], records[i]
            if view["op"]["inputs"][0].get("from") == before["name"]:
                self.assertEqual(view["stats"], before["stats"], view["name"])
                shared += 1
        self.assertGreaterEqual(shared, 2)  # a @ b's, one a step
        # the statistics read: every record's but the shared ones
        self.assertEqual(int(r.stdout.split()[-1]), len(records) - shared)
        for step in range(2):  # c doubled through .data: its view reads the doubled values
            mm, mul, view = [rec for rec in records if rec["step"] == step and rec["op"]["module"] == ""
                             and rec["op"]["name"] in ("aten::mm", "aten::mul_", "aten::_unsafe_view")][-3:]
            self.assertEqual((mm["op"]["name"], mul["op"]["name"], view["op"]["name"]),
                             ("aten::mm", "aten::mul_", "aten::_unsafe_view"))
            self.assertAlmostEqual(view["stats"]["max"], 2 * mm["stats"]["max"], places=5)
            self.assertEqual(view["stats"], mul["stats"])

    def test_statistics_match_the_saved_tensors(self):
        d, _ = self.run_mlp({"dump": "dump", "dump_level": "both", "dump_mode": "tensors"})
        _, records = read_index(os.path.join(d, "dump"))
        self.assertTrue(records)
        for rec in records:
            a = np.load(os.path.join(d, "dump", rec["file"])).astype(np.float64)
            self.assertEqual(list(a.shape), rec["shape"], rec["name"])
            s = rec["stats"]
            self.assertAlmostEqual(s["max"], a.max(), places=6)
            self.assertAlmostEqual(s["min"], a.min(), places=6)
            self.assertTrue(math.isclose(s["norm"], float(np.sqrt((a * a).sum())), rel_tol=1e-9, abs_tol=1e-12))
            self.assertTrue(math.isclose(s["mean"], float(a.mean()), rel_tol=1e-9, abs_tol=1e-12))

    def test_statistics_of_tensors_holding_nan_and_inf_cover_the_finite_elements(self):
        d = scratch()
        r = run_under_agent("""
import torch
from crosstrain import _stats
x = torch.tensor([1.0, float('nan'), -3.0, float('inf'), 2.0, float('-inf')])
for t in (x, x.bfloat16(), torch.tensor([float('nan')] * 3), torch.tensor([True, False, True]),
          torch.arange(6, dtype=torch.int32)):
    print(_stats.to_record_stats(_stats.resolve([_stats.device_vector(t)])[0]))
""", {}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [eval(l) for l in r.stdout.splitlines()]
        for row in rows[:2]:
            self.assertEqual((row["max"], row["min"], row["nan_count"], row["inf_count"]), (2.0, -3.0, 1, 2))
            self.assertAlmostEqual(row["mean"], 0.0)
            self.assertAlmostEqual(row["norm"], math.sqrt(14))
        self.assertEqual((rows[2]["max"], rows[2]["mean"], rows[2]["nan_count"]), (None, None, 3))
        self.assertEqual((rows[3]["max"], rows[3]["min"]), (1.0, 0.0))
        self.assertAlmostEqual(rows[3]["mean"], 2 / 3)
        self.assertEqual((rows[4]["max"], rows[4]["mean"]), (5.0, 2.5))

    def test_filter_and_byte_limit(self):
        d, _ = self.run_mlp({"dump": "dump", "dump_level": "both", "dump_filter": "^op_backward/"})
        _, records = read_index(os.path.join(d, "dump"))
        self.assertTrue(records)
        self.assertTrue(all(rec["name"].startswith("op_backward/") for rec in records))
        d, _ = self.run_mlp({"dump": "dump", "dump_level": "both", "dump_mode": "tensors", "dump_steps": "",
                             "dump_max_bytes": 20000})
        total = sum(os.path.getsize(os.path.join(root, f))
                    for root, _, files in os.walk(os.path.join(d, "dump")) for f in files if f != "run.json")
        self.assertLessEqual(total, 20000)
        run = load_json(os.path.join(d, "dump", "run.json"))
        self.assertIn("--dump-max-bytes 20000", run["note"])
        _, records = read_index(os.path.join(d, "dump"))
        self.assertTrue(all(os.path.exists(os.path.join(d, "dump", rec["file"])) for rec in records))

    def test_an_existing_dump_is_kept_unless_overwrite(self):
        d, _ = self.run_mlp({"dump": "dump"})
        before = open(os.path.join(d, "dump", "index.jsonl")).read()
        r = run_under_agent(MLP.format(steps=1), {"dump": "dump", "dump_steps": "0"}, d)
        self.assertIn("already holds a dump", r.stderr)
        self.assertEqual(open(os.path.join(d, "dump", "index.jsonl")).read(), before)
        r = run_under_agent(MLP.format(steps=1), {"dump": "dump", "dump_overwrite": True, "dump_level": "op"}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, records = read_index(os.path.join(d, "dump"))
        self.assertTrue(all(rec["kind"].startswith("op_") for rec in records))


class WindowTest(unittest.TestCase):
    """What belongs to a step: forwards without gradients around it, several roots, closures."""
    VALIDATED = """
import sys, torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
def validate():
    with {guard}():
        return nn.functional.mse_loss(model(x), y).item()
if "sanity" in sys.argv:
    validate()
for step in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if "val" in sys.argv:
        validate()
print("done")
"""

    def dump_of(self, source, args=()):
        d = scratch()
        r = run_under_agent(source, {"dump": "dump", "dump_level": "both", "dump_steps": ""}, d, args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("recording stopped", r.stderr)
        return read_index(os.path.join(d, "dump"))[1]

    def test_validation_without_gradients_is_no_part_of_a_step(self):
        # Lightning's sanity check before training and a validation batch after each optimizer step:
        # the training records are those of the run without them, under no_grad and inference_mode.
        def named(records):
            return [(x["step"], x["name"], x["stats"]) for x in records]
        plain = named(self.dump_of(self.VALIDATED.format(guard="torch.no_grad")))
        self.assertEqual({step for step, _, _ in plain}, {0, 1, 2})
        for guard in ("torch.no_grad", "torch.inference_mode"):
            validated = named(self.dump_of(self.VALIDATED.format(guard=guard), ("sanity", "val")))
            self.assertEqual(validated, plain, guard)

    def test_an_evaluation_without_gradients_is_recorded(self):
        records = self.dump_of("""
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).eval()
with torch.inference_mode():
    for batch in range(2):
        model(torch.randn(8, 4))
""")
        names = [x["name"] for x in records]
        self.assertEqual(names.count("forward/Sequential"), 1)
        self.assertEqual(names.count("forward/Sequential#1"), 1)
        self.assertTrue(any(n.startswith("op_forward/0/aten.") for n in names), names)

    def test_roots_of_the_same_class_get_names_of_their_own(self):
        # An encoder and a decoder that are both Sequential, as in Lightning's autoencoder.
        records = self.dump_of("""
import torch, torch.nn as nn
torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(6, 3), nn.ReLU())
decoder = nn.Sequential(nn.Linear(3, 6))
opt = torch.optim.SGD([*encoder.parameters(), *decoder.parameters()], lr=0.1)
x = torch.randn(4, 6)
for step in range(2):
    loss = ((decoder(encoder(x)) - x) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
""")
        step0 = [x["name"] for x in records if x["step"] == 0 and x["name"].startswith("forward/")]
        self.assertEqual(step0, ["forward/0", "forward/1", "forward/Sequential",
                                 "forward/Sequential_2.0", "forward/Sequential_2"])
        grads = {x["name"] for x in records if x["name"].startswith("param_grad/")}
        self.assertEqual(grads, {"param_grad/0.weight", "param_grad/0.bias",
                                 "param_grad/Sequential_2.0.weight", "param_grad/Sequential_2.0.bias"})

    def test_a_line_search_logs_the_loss_its_step_returns(self):
        d = scratch()
        r = run_under_agent("""
import torch, torch.nn as nn
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.LBFGS(m.parameters(), lr=0.5, max_iter=3)
x, y = torch.randn(16, 4), torch.randn(16, 1)
def closure():
    opt.zero_grad()
    loss = nn.functional.mse_loss(m(x), y)
    loss.backward()
    return loss
for step in range(3):
    print(repr(opt.step(closure).item()))
""", {"dump": "dump", "dump_steps": ""}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        returned = [float(v) for v in r.stdout.split()]
        logged = [x["loss"] for x in read_losses(os.path.join(d, "dump"))]
        self.assertEqual(logged, returned)


class NonFiniteTest(unittest.TestCase):
    def test_the_first_nan_names_its_operator_and_line(self):
        d = scratch()
        state = os.path.join(d, "state")
        os.makedirs(state)
        r = run_under_agent("""
import torch, torch.nn as nn
torch.manual_seed(0)
class Head(nn.Module):
    def forward(self, x):
        return torch.log(x)
model = nn.Sequential(nn.Linear(4, 4), Head())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(8, 4)).sum()
    loss.backward(); opt.step(); opt.zero_grad()
print("finished")
""", {"stop_on_nonfinite": True, "state_dir": state}, d)
        self.assertEqual(r.returncode, 1)
        self.assertNotIn("finished", r.stdout)
        report = load_json(os.path.join(state, os.listdir(state)[0]))
        finding = report["nonfinite"]
        self.assertEqual(finding["record"], "op_forward/1/aten.log")
        self.assertEqual(finding["source"], "prog.py:6")  # the program starts with an empty line
        self.assertEqual(finding["step"], 0)
        self.assertGreater(finding["nan_count"], 0)
        self.assertIn("prog.py:6", r.stderr)

    def run_watched(self, body):
        d = scratch()
        state = os.path.join(d, "state")
        os.makedirs(state)
        r = run_under_agent(body, {"stop_on_nonfinite": True, "state_dir": state}, d)
        return r, load_json(os.path.join(state, os.listdir(state)[0]))

    def test_infinities_the_program_writes_do_not_stop_an_overflow_does(self):
        # A causal mask, a -inf sentinel and the softmax over them: the program's own infinities.
        r, report = self.run_watched("""
import torch, torch.nn as nn
torch.manual_seed(0)
lin = nn.Linear(4, 4)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
mask = torch.triu(torch.full((4, 4), float("-inf")), diagonal=1)
best = -torch.inf
for step in range(3):
    scores = lin(torch.randn(4, 4)) + mask
    scores = scores.masked_fill(torch.arange(4) == 3, float("-inf")).clamp(max=80)  # padding
    w = torch.softmax(scores + torch.tensor(best).clamp(min=0.0), dim=-1)
    loss = (w[1:] * scores[1:].nan_to_num(neginf=0.0)).sum()
    if step == 2:
        loss = loss * torch.exp(lin.weight.sum() * 0 + 1000.0)  # an overflow: Inf from finite inputs
    loss.backward(); opt.step(); opt.zero_grad()
print("finished")
""")
        self.assertEqual(r.returncode, 1, r.stderr)
        finding = report["nonfinite"]
        self.assertEqual((finding["step"], finding["record"]), (2, "op_forward/aten.exp"), finding)
        self.assertEqual((finding["nan_count"], finding["inf_count"]), (0, 1))
        self.assertEqual(finding["source"], "prog.py:14")
        written = report["written_inf"]
        self.assertEqual((written["step"], written["source"]), (0, "prog.py:9"), written)

    def test_a_float32_output_beyond_float16s_range_is_named_without_stopping(self):
        d = scratch()
        state = os.path.join(d, "state")
        os.makedirs(state)
        r = run_under_agent("""
import torch
w = torch.nn.Parameter(torch.ones(4))
opt = torch.optim.SGD([w], lr=0.0)
for step in range(2):
    big = w * 1.0e5
    loss = (big / 1.0e5).sum()
    loss.backward(); opt.step(); opt.zero_grad()
print("finished")
""", {"stop_on_nonfinite": True, "state_dir": state}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("finished", r.stdout)
        report = load_json(os.path.join(state, os.listdir(state)[0]))
        note = report["fp16_overflow"]
        self.assertEqual((note["record"], note["source"], note["step"]), ("op_forward/aten.mul", "prog.py:6", 0))
        self.assertEqual(note["max_abs"], 1.0e5)
        self.assertNotIn("nonfinite", report)


    GRAD_SCALER = """
import sys, torch, torch.nn as nn
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu", init_scale={scale})
x, y = torch.randn(4, 8), torch.randn(4, 1)
for step in range({steps}):
    with torch.autocast("cpu", dtype=torch.float16):
        loss = ((m(x).float() - y) ** 2).mean() * {factor}
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print(step, scaler.get_scale())
print("finished")
"""

    def test_a_grad_scalers_overflow_is_counted_and_training_goes_on(self):
        # float16 autocast at the scaler's default scale: the first steps' scaled gradients overflow
        # float16 and the scaler skips them, as it is meant to; the run finishes as it does alone.
        plain = run_under_agent(self.GRAD_SCALER.format(scale=2.0 ** 16, steps=4, factor=1.0), None, scratch())
        r, report = self.run_watched(self.GRAD_SCALER.format(scale=2.0 ** 16, steps=4, factor=1.0))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, plain.stdout)
        self.assertNotIn("nonfinite", report)
        skips = report["scaler_skips"]
        self.assertGreaterEqual(skips["steps"], 1)
        self.assertEqual(skips["first_step"], 0)
        self.assertTrue(skips["first"].startswith("op_backward/"), skips)
        self.assertNotIn("fp16_overflow", report)  # the scale (65536) and the scaled loss are the scaler's

    def test_a_grad_scaler_skipping_at_scale_one_stops(self):
        # Gradients beyond float16's range whatever the scale: the scaler halves it to 1 and the
        # overflow is still there, so the run stops there, at the step it skipped at scale 1.
        r, report = self.run_watched(self.GRAD_SCALER.format(scale=4.0, steps=6, factor=1e30))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertNotIn("finished", r.stdout)
        finding = report["nonfinite"]
        self.assertEqual(finding["step"], 2, finding)
        self.assertIn("at scale 1", finding["note"])
        self.assertEqual(report["scaler_skips"]["steps"], 2)


class SourceLinesTest(unittest.TestCase):
    def test_a_library_on_pythonpath_is_not_the_users(self):
        # `pip install --target lib` makes a folder of packages with their .dist-info, put on PYTHONPATH;
        # a checked-out library on PYTHONPATH has none. Neither is the user's: the user's line is the
        # script's, which called them.
        d, elsewhere = scratch(), scratch()
        where = {"lib": d, "checkout": elsewhere}  # a --target folder in the project, a checkout outside it
        for folder, meta in (("lib", True), ("checkout", False)):
            pkg = os.path.join(where[folder], folder, f"{folder}block")
            os.makedirs(pkg)
            with open(os.path.join(pkg, "__init__.py"), "w") as f:
                f.write("import torch\nclass Block(torch.nn.Module):\n    def __init__(self):\n"
                        "        super().__init__()\n        self.fc = torch.nn.Linear(4, 4)\n"
                        "    def forward(self, x):\n        return torch.tanh(self.fc(x))\n")
            if meta:
                info = os.path.join(where[folder], folder, f"{folder}block-1.0.dist-info")
                os.makedirs(info)
                with open(os.path.join(info, "RECORD"), "w") as f:
                    f.write(f"{folder}block/__init__.py,,\n{folder}block-1.0.dist-info/RECORD,,\n")
        r = run_under_agent("""
import torch, libblock, checkoutblock
model = torch.nn.Sequential(libblock.Block(), checkoutblock.Block())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
""", {"dump": "dump", "dump_level": "op"}, d, pythonpath=[os.path.join(d, "lib"), os.path.join(elsewhere, "checkout")])
        self.assertEqual(r.returncode, 0, r.stderr)
        _, records = read_index(os.path.join(d, "dump"))
        tanh = [x["op"] for x in records if x["name"].endswith("aten.tanh")]
        self.assertEqual(len(tanh), 2)
        self.assertEqual([t["source"] for t in tanh], ["lib/libblock/__init__.py:7",
                                                       os.path.join(elsewhere, "checkout/checkoutblock/__init__.py:7")])
        self.assertEqual([t.get("user_source") for t in tanh], ["prog.py:6", "prog.py:6"])
        # The project's own package folder on PYTHONPATH (PYTHONPATH=src) stays the user's.
        os.makedirs(os.path.join(d, "src", "mine"))
        with open(os.path.join(d, "src", "mine", "__init__.py"), "w") as f:
            f.write("import torch\ndef act(x):\n    return torch.tanh(x)\n")
        r = run_under_agent("""
import torch, mine
lin = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
mine.act(lin(torch.randn(2, 4))).sum().backward()
opt.step()
""", {"dump": "dump2", "dump_level": "op"}, d, pythonpath=[os.path.join(d, "src")])
        _, records = read_index(os.path.join(d, "dump2"))
        tanh = [x["op"] for x in records if x["name"].endswith("aten.tanh")]
        self.assertEqual(tanh[0]["source"], "src/mine/__init__.py:3")
        self.assertNotIn("user_source", tanh[0])


if __name__ == "__main__":
    unittest.main()


class RecordLineTest(unittest.TestCase):
    """An operator record's line is put together from its parts (the encoder was a fifth of the
    agent's time per record); it must be the line the JSON encoder writes, or come from the encoder."""

    def setUp(self):
        import sys
        sys.path.insert(0, os.path.join(REPO, "python"))
        from crosstrain import _dumpfile, _ops
        self.dumpfile, self.ops = _dumpfile, _ops

    def encoder_line(self, record):
        record = dict(record)
        op = record.pop("op")
        return self.dumpfile._ENCODER.encode(record)[:-1] + ',"op":' + op.json() + "}\n"

    def record(self, name="op_forward/blocks.0/aten.add", shape=(3, 4), stats=None, **extra):
        site = self.ops._Site({"name": "aten::add", "overload": "Tensor", "phase": "forward", "module": "m",
                               "source": "prog.py:3", "code": "y = x + 1"})
        op = self.ops.OpFields(site, ['{"dtype":"float32","shape":%s,"device":"cpu","arg":"self"}'
                                      % json.dumps(list(shape), separators=(",", ":"))], None)
        record = {"seq": 7, "step": 2, "name": name, "kind": "op_forward", "dtype": "float32", "shape": list(shape),
                  "stats": stats or {"max": 1.5, "min": -0.25, "mean": 0.1, "norm": 3.0, "nan_count": 0, "inf_count": 0}}
        record.update(extra)
        record["op"] = op
        return record

    def test_every_usual_record_is_the_encoders_line(self):
        floats = [0.1, -0.0, 0.0, 1e16, 1e-300, 5e-324, 1.7976931348623157e308, -2.5e-7, 123456789.0, 1 / 3]
        names = ["op_forward/m/aten.add", 'op_backward/a"b\\c/aten.mul[1]', "op_forward/\u00e9t\u00e9/aten.mm#3",
                 "op_forward/tab\there/new\nline/aten.x", "op_forward/\U0001F600/aten.relu"]
        shapes = [(), (0,), (1,), (2, 3, 4), (2 ** 40, 1)]
        count = 0
        for i, name in enumerate(names):
            for shape in shapes:
                hi, lo, mean, norm = (floats[(i + k) % len(floats)] for k in range(4))
                stats = {"max": hi, "min": lo, "mean": mean, "norm": norm, "nan_count": i, "inf_count": 2 ** 33}
                record = self.record(name, shape, stats)
                self.assertIsNotNone(self.dumpfile._operator_head(record))
                self.assertEqual(self.dumpfile._record_line(dict(record)), self.encoder_line(record))
                count += 1
        self.assertEqual(count, 25)

    def test_other_records_go_through_the_encoder(self):
        empty = {"max": None, "min": None, "mean": None, "norm": None, "nan_count": 3, "inf_count": 1}
        others = [self.record(stats=empty), self.record(device="cuda:0"),
                  self.record(file="tensors/step2/000007-x.npy", stored_dtype="float32")]
        for record in others:
            self.assertIsNone(self.dumpfile._operator_head(record))
            self.assertEqual(self.dumpfile._record_line(dict(record)), self.encoder_line(record))
        overflowed = self.record(stats={"max": 1.0, "min": 0.0, "mean": float("inf"), "norm": 1.0,
                                        "nan_count": 0, "inf_count": 0})
        self.assertIsNone(self.dumpfile._operator_head(overflowed))
        with self.assertRaises(ValueError):  # JSON has no Inf: as before, the encoder refuses it
            self.dumpfile._record_line(dict(overflowed))

    def test_an_operators_inputs_are_the_encoders_text(self):
        """Inputs are kept as JSON text from the start (their dtype, shape and device looked up once):
        the text is what the encoder writes for the dict the format describes."""
        import torch
        mode = self.ops.OpMode.__new__(self.ops.OpMode)  # only the parts the descriptions use
        mode.torch, mode._made = torch, {}
        made = torch.ones(2, 3)
        mode._made_by(made, 'op_forward/a"b\\c/\u00e9/aten.mm#2', None)
        cases = [(torch.zeros(4, 5), "self", None), (torch.zeros((), dtype=torch.int64), "other", None),
                 (torch.zeros(0, 3, dtype=torch.bfloat16).t(), "input", None), (torch.zeros(2, device="meta"), "x", None),
                 (made, "mat2", 'op_forward/a"b\\c/\u00e9/aten.mm#2'), (made, None, 'op_forward/a"b\\c/\u00e9/aten.mm#2')]
        for t, arg, origin in cases:
            for _ in range(2):  # the second time from the cache
                expected = {"dtype": str(t.dtype)[6:], "shape": list(t.shape), "device": str(t.device)}
                if origin:
                    expected["from"] = origin
                if arg is not None:
                    expected["arg"] = arg
                text = mode._describe_input(t, arg)
                self.assertEqual(text, self.dumpfile._ENCODER.encode(expected))
        jagged = {"layout": torch.jagged} if hasattr(torch, "jagged") else {}  # a symbolic ragged dimension
        for layout in ({}, jagged):
            nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)], **layout)  # no single shape
            for _ in range(2):
                self.assertEqual(json.loads(mode._describe_input(nested, "self")),
                                 {"dtype": "float32", "shape": None, "device": "cpu", "arg": "self"}, layout)
        listed = mode._describe_list("tensors", [made, 3, torch.zeros(1)])
        self.assertEqual(json.loads(listed), {"arg": "tensors", "tensors": [
            {"dtype": "float32", "shape": [2, 3], "device": "cpu", "from": 'op_forward/a"b\\c/\u00e9/aten.mm#2'},
            {"dtype": "float32", "shape": [1], "device": "cpu"}]})
        op = self.ops.OpFields(self.ops._Site({"name": "aten::cat"}), [listed], None)
        self.assertEqual(op.get("inputs"), [json.loads(listed)])
        made.add_(1)  # changed in place: no longer what that record holds
        self.assertNotIn('"from"', mode._describe_input(made, "self"))

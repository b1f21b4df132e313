"""The frameworks users train with, driven the way their authors ship them (tests/python/run_scripts):
Lightning (automatic optimisation runs the forward and backward inside optimizer.step's closure;
manual optimisation), transformers' Trainer and accelerate with gradient accumulation. Each step
is one optimizer step with every operator of its forward and backward recorded with its module and
the user's line; nothing of the model's construction is in step 0; a NaN planted past Lightning's
causal mask is the first non-finite tensor."""
import collections
import os
import unittest

from agent_test_support import REPO, load_json, read_index, read_losses, run_under_agent, scratch

SCRIPTS = os.path.join(REPO, "tests", "python", "run_scripts")


def run_script(name, config, *args):
    d = scratch()
    with open(os.path.join(SCRIPTS, name)) as f:
        source = f.read()
    r = run_under_agent(source, config, d, args, env_extra={"CROSSTRAIN_AGENT_STATE_DIR": d, "PYTHONWARNINGS": "ignore"})
    return d, r


def ops(records, phase):
    return [r for r in records if r["kind"] == "op_" + phase]


class FrameworksTest(unittest.TestCase):
    def check_steps(self, d, r, steps, model_prefix, forwards_per_step=1):
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn(f"trained {steps} steps", r.stdout)
        self.assertEqual([l["step"] for l in read_losses(os.path.join(d, "dump"))], list(range(steps)))
        _, records = read_index(os.path.join(d, "dump"))
        self.assertEqual({x["step"] for x in records}, {0})
        forward, backward = ops(records, "forward"), ops(records, "backward")
        self.assertGreater(len(forward), 20)
        self.assertGreater(len(backward), 20)
        self.assertEqual(ops(records, "optimizer"), [])  # the closure's forward is not the optimizer's
        # The model's construction (nn.Transformer deep-copies its layers with gradients on) is not step 0.
        self.assertTrue(in_module(forward[0], model_prefix), forward[0])
        for rec in forward + backward:
            self.assertTrue(rec["op"].get("source"), rec)
        in_model = [x for x in forward + backward if in_module(x, model_prefix)]
        # What runs outside the model: the loss, its scaling for accumulation, gradient clipping.
        self.assertGreater(len(in_model), 0.75 * len(forward + backward))
        # The user's line: the script's own file is where every forward operator was asked for.
        for rec in forward:
            self.assertTrue((rec["op"].get("user_source") or rec["op"]["source"]).startswith("prog.py:"), rec)
        losses = [x for x in records if x["kind"] == "loss"]
        self.assertEqual(len(losses), forwards_per_step)
        return records

    def test_lightning_automatic_optimisation(self):
        d, r = run_script("train_lightning.py", {"dump": "dump", "dump_level": "both"}, "--mode", "auto")
        records = self.check_steps(d, r, 3, "model")
        grads = {x["name"] for x in records if x["kind"] == "param_grad"}
        for p in ("param_grad/model.decoder.weight", "param_grad/model.embedding.weight",
                  "param_grad/model.transformer.encoder.layers.0.self_attn.in_proj_weight"):
            self.assertIn(p, grads)

    def test_lightning_manual_optimisation_matches_automatic(self):
        d, r = run_script("train_lightning.py", {"dump": "dump", "dump_level": "both"}, "--mode", "manual")
        records = self.check_steps(d, r, 3, "model")
        self.assertGreater(len([x for x in records if x["kind"] == "param_grad"]), 60)

    def test_a_nan_past_the_causal_mask_stops_there(self):
        d, r = run_script("train_lightning.py", {"stop_on_nonfinite": True}, "--plant-nan", "1")
        self.assertEqual(r.returncode, 1, r.stderr[-3000:])
        self.assertNotIn("trained", r.stdout)
        report = load_json(os.path.join(d, f"agent-{report_pid(d)}.json"))
        finding = report["nonfinite"]
        self.assertEqual((finding["step"], finding["nan_count"]), (1, 1), finding)
        self.assertTrue(finding["record"].endswith("aten.sqrt"), finding)
        self.assertIn("planted NaN", finding["code"])
        # The mask's -inf was written by the program at step 0 and carried on: counted, not a stop.
        self.assertEqual(report["written_inf"]["step"], 0)
        self.assertGreater(report["written_inf"]["records"], 1)

    def test_trainer_with_gradient_accumulation(self):
        d, r = run_script("train_hf_trainer.py", {"dump": "dump", "dump_level": "both"}, "--accumulation", "2")
        records = self.check_steps(d, r, 3, "bert", forwards_per_step=2)
        names = collections.Counter(x["name"] for x in records if x["kind"] == "forward")
        self.assertEqual(names["forward/bert.encoder.layer.0"], 1)
        self.assertEqual(names["forward/bert.encoder.layer.0#1"], 1)
        # The second micro-batch's backward adds into .grad: those operators belong to the parameter's module.
        accumulated = [x for x in ops(records, "backward") if x["name"].split("/")[-1].startswith("aten.add_")]
        self.assertGreater(len(accumulated), 10)
        self.assertTrue(all(x["op"]["module"] for x in accumulated), accumulated[:3])

    def test_accelerate_with_gradient_accumulation_and_ema(self):
        d, r = run_script("train_accelerate.py", {"dump": "dump", "dump_level": "both"}, "--accumulation", "2")
        records = self.check_steps(d, r, 3, "", forwards_per_step=2)
        self.assertEqual(records[0]["name"], "op_forward/inp/aten.convolution")  # not the EMA's deep copy
        grads = [x["name"] for x in records if x["kind"] == "param_grad"]
        self.assertIn("param_grad/mid.2.weight", grads)


COMPILED = """
import os, torch, torch.nn as nn
import torch._dynamo.utils as du
torch.manual_seed(0); torch.set_num_threads(1)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16); self.fc2 = nn.Linear(16, 4)
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
model = torch.compile(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1)
for step in range(4):
    loss = model(torch.randn(5, 8, generator=g)).sum()
    loss.backward(); opt.step(); opt.zero_grad()
    print("compiled", du.counters["stats"]["unique_graphs"], repr(loss.item()))
"""


class CompiledTest(unittest.TestCase):
    def test_a_compiled_model_is_recorded_outside_its_graph_and_agrees_with_eager(self):
        d = scratch()
        config = {"dump": "compiled", "dump_level": "module", "dump_steps": "0-3"}
        r = run_under_agent(COMPILED, config, d, env_extra={"PYTHONWARNINGS": "ignore"})
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        graphs = [int(l.split()[1]) for l in r.stdout.splitlines() if l.startswith("compiled")]
        self.assertEqual(len(set(graphs[1:])), 1, graphs)  # the agent's hooks cause no recompilation
        self.assertIn("a torch.compile'd model", r.stderr)
        _, compiled = read_index(os.path.join(d, "compiled"))
        names = {x["name"] for x in compiled if x["step"] == 0}
        self.assertEqual(names, {"forward/Net", "grad_output/Net", "loss", "param_grad/fc1.weight", "param_grad/fc1.bias",
                                 "param_grad/fc2.weight", "param_grad/fc2.bias"})
        # The eager side (TORCHDYNAMO_DISABLE=1) holds the same records and more (its inner modules).
        config["dump"] = "eager"
        r = run_under_agent(COMPILED, config, d, env_extra={"TORCHDYNAMO_DISABLE": "1"})
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        _, eager = read_index(os.path.join(d, "eager"))
        self.assertLessEqual(names, {x["name"] for x in eager if x["step"] == 0})
        self.assertIn("forward/fc1", {x["name"] for x in eager})


def in_module(record, prefix):
    module = record["op"]["module"]
    return not prefix or module == prefix or module.startswith(prefix + ".")


def report_pid(d):
    names = [n for n in os.listdir(d) if n.startswith("agent-") and n.endswith(".json")]
    assert len(names) == 1, names
    return names[0][len("agent-"):-len(".json")]


if __name__ == "__main__":
    unittest.main()

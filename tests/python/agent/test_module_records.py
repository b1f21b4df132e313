"""What module records hold where the script does more than call its modules: outputs changed in
place, forward hooks of its own, activation checkpointing. Each case is run against the same model
written without that feature, whose dump must hold the same records with the same statistics."""
import os
import unittest

from agent_test_support import load_json, read_index, run_under_agent, scratch


def records(program, config, args=()):
    d = scratch()
    r = run_under_agent(program, config, d, args=args)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    _, recs = read_index(os.path.join(d, "dump"))
    return recs, r.stdout.split(), load_json(os.path.join(d, "dump", "run.json"))


def by_name(recs):
    return {(rec["step"], rec["name"]): rec for rec in recs}


class ModuleRecordsTest(unittest.TestCase):
    def assert_same_records(self, a, b, places=6):
        """The same record names in the same order, with the same statistics."""
        self.assertEqual([(x["step"], x["name"]) for x in a], [(x["step"], x["name"]) for x in b])
        for x, y in zip(a, b):
            for key in ("max", "min", "mean", "norm"):
                self.assertAlmostEqual(x["stats"][key], y["stats"][key], places=places, msg=(x["name"], key))

    def test_a_view_changed_in_place_keeps_its_output_gradient(self):
        """A Linear on a 3-d input returns a view (of its addmm's result); ReLU(inplace=True) and a
        residual `+=` change it in place, which moves its autograd history onto the base: its
        grad_output is the gradient of the output as the module returned it, as without in-place.
        A view of the module's input changed in place (nn.Unflatten) is counted, not recorded."""
        program = """
import sys, torch, torch.nn as nn
inplace = sys.argv[1] == "inplace"
torch.manual_seed(0)
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.fc, s.act, s.proj = nn.Linear(8, 8), nn.ReLU(inplace=inplace), nn.Linear(8, 8)
        s.wide, s.unflat, s.out = nn.Linear(8, 16), nn.Unflatten(-1, (2, 8)), nn.Linear(8, 1)
    def forward(s, x):
        h = s.act(s.fc(x))
        g = s.proj(h)
        if inplace:
            g += x
        else:
            g = g + x
        u = s.unflat(s.wide(g))
        u = u.relu_() if inplace else u.relu()
        return s.out(u.sum(-2))
m = Block()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(2, 3, 8)
for step in range(2):
    loss = m(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(repr(loss.item()))
"""
        cfg = {"dump": "dump", "dump_level": "module", "dump_steps": ""}
        plain, plain_losses, _ = records(program, cfg, ["plain"])
        changed, losses, run = records(program, cfg, ["inplace"])
        self.assertEqual(losses, plain_losses)
        for step in (0, 1):
            for name in ("grad_output/fc", "grad_output/act", "grad_output/proj"):
                self.assertIn((step, name), by_name(changed))
        # nn.Unflatten's output is a view of its input: not recorded, counted
        self.assertIn((0, "grad_output/unflat"), by_name(plain))
        self.assertNotIn((0, "grad_output/unflat"), by_name(changed))
        self.assertEqual(run["skipped"], {"grad_output of a view of the module's input changed in place": 2})
        plain = [x for x in plain if x["name"] != "grad_output/unflat"]
        self.assertEqual(sorted((x["step"], x["name"]) for x in plain), sorted((x["step"], x["name"]) for x in changed))
        changed_by_name = by_name(changed)
        self.assert_same_records(plain, [changed_by_name[(x["step"], x["name"])] for x in plain])

    def test_the_scripts_forward_hooks_are_part_of_the_module_call(self):
        """A forward hook of the script's own runs after the global ones and may replace the output:
        the module's records are those of what its call returned, and the hook's operators belong to
        it, as if its forward did the same; a hook added later (step 1) runs before the record too."""
        program = """
import sys, torch, torch.nn as nn
hooked = sys.argv[1] == "hooked"
torch.manual_seed(0)
class Clamped(nn.Linear):
    doubled = False
    def forward(s, x):
        out = super().forward(x).clamp(-0.1, 0.1)
        return out * 2 if s.doubled else out
m = nn.Sequential((nn.Linear if hooked else Clamped)(4, 8), nn.Linear(8, 1))
if hooked:
    m[0].register_forward_hook(lambda mod, inp, out: out.clamp(-0.1, 0.1))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(8, 4)
for step in range(2):
    if step == 1:
        if hooked:
            m[0].register_forward_hook(lambda mod, inp, out: out * 2)
        else:
            m[0].doubled = True
    loss = m(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(repr(loss.item()))
"""
        cfg = {"dump": "dump", "dump_level": "both", "dump_steps": ""}
        reference, reference_losses, _ = records(program, cfg, ["module"])
        hooked, losses, _ = records(program, cfg, ["hooked"])
        self.assertEqual(losses, reference_losses)
        self.assert_same_records(reference, hooked)
        names = by_name(hooked)
        self.assertAlmostEqual(names[(0, "forward/0")]["stats"]["max"], 0.1, places=6)
        self.assertAlmostEqual(names[(1, "forward/0")]["stats"]["max"], 0.2, places=6)
        self.assertIn((0, "op_forward/0/aten.clamp"), names)
        self.assertIn((1, "op_forward/0/aten.mul"), names)

    CHECKPOINTED = """
import sys, torch, torch.nn as nn
from torch.utils.checkpoint import checkpoint
mode, lr = sys.argv[1], float(sys.argv[2])
torch.manual_seed(0)
torch.set_num_threads(1)
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.l1, s.act, s.l2 = nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8)
        s.norm = nn.LayerNorm(8)
    def forward(s, x):
        return s.norm(x + s.l2(s.act(s.l1(x))))
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.embed, s.blocks, s.head = nn.Linear(4, 8), nn.ModuleList(Block() for _ in range(3)), nn.Linear(8, 2)
    def forward(s, x):
        h = s.embed(x)
        for i, b in enumerate(s.blocks):
            if mode == "plain" or i == 1:  # the middle block runs plainly between two checkpointed ones
                h = b(h)
            else:
                h = checkpoint(b, h, use_reentrant=mode == "reentrant")
        return s.head(h)
m = Net()
opt = torch.optim.AdamW(m.parameters(), lr=lr)
for step in range(2):
    x, y = torch.randn(6, 4), torch.randint(0, 2, (6,))
    loss = nn.functional.cross_entropy(m(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    print(repr(loss.item()))
"""

    def test_activation_checkpointing_records_what_the_plain_model_records(self):
        """The recompute inside backward is neither a forward record nor a backward operator: both
        checkpointing modes give the records of the model run without checkpointing, grad_output of
        the checkpointed modules and their backward operators under their modules included."""
        cfg = {"dump": "dump", "dump_level": "both", "dump_steps": ""}
        plain, plain_losses, _ = records(self.CHECKPOINTED, cfg, ["plain", "0.01"])
        names = by_name(plain)
        for mode in ("non-reentrant", "reentrant"):
            checkpointed, losses, _ = records(self.CHECKPOINTED, cfg, [mode, "0.01"])
            self.assertEqual(losses, plain_losses, mode)
            self.assert_same_records(plain, checkpointed)
            for step in (0, 1):
                self.assertIn((step, "grad_output/blocks.2.l1"), by_name(checkpointed))
                self.assertIn((step, "op_backward/blocks.2.l1/aten.mm"), by_name(checkpointed))
            for x, y in zip(plain, checkpointed):
                if "op" in x:
                    self.assertEqual((x["op"]["phase"], x["op"]["module"], x["op"].get("source")),
                                     (y["op"]["phase"], y["op"]["module"], y["op"].get("source")), (mode, x["name"]))
            # a real change still shows: the learning rate changes step 1's forward
            changed, _, _ = records(self.CHECKPOINTED, cfg, [mode, "0.01001"])
            after = by_name(changed)
            self.assertNotEqual(names[(1, "forward/blocks.0.l1")]["stats"], after[(1, "forward/blocks.0.l1")]["stats"])

    @unittest.skipUnless(__import__("importlib").util.find_spec("transformers"), "needs transformers")
    def test_transformers_gradient_checkpointing(self):
        """gradient_checkpointing_enable() on a GPT-2 made from a config (nothing downloaded)."""
        program = """
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=50, n_positions=16,
                    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False)
model = GPT2LMHeadModel(config)
if sys.argv[1] != "plain":
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": sys.argv[1] == "reentrant"})
model.train()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ids = torch.randint(0, 50, (2, 8))
loss = model(input_ids=ids, labels=ids).loss
loss.backward()
opt.step()
print(repr(loss.item()))
"""
        cfg = {"dump": "dump", "dump_level": "both"}
        plain, plain_losses, _ = records(program, cfg, ["plain"])
        self.assertIn((0, "grad_output/transformer.h.0.mlp.c_fc"), by_name(plain))
        for mode in ("non-reentrant", "reentrant"):
            checkpointed, losses, _ = records(program, cfg, [mode])
            self.assertEqual(losses, plain_losses, mode)
            self.assert_same_records(plain, checkpointed)


if __name__ == "__main__":
    unittest.main()

"""Operator-level dumps for `op-check --from-dump`'s tests, written by crosstrain's Python agent as
`crosstrain run --dump DIR --dump-level op` writes them: one step of timm's ViT and of Hugging Face's
GPT-2 (tests/python/run_scripts) in tensors mode with the optimizer's operators (--dump-optimizer-ops),
a small network in stats mode, and reductions that are near zero
(near_zero). They run at once (each spends most of its time importing).
usage: python tests/python/op_replay_dumps.py OUT_DIR   -> OUT_DIR/{vit,gpt2,stats,near_zero}"""
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MLP = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(5, 8), torch.randint(0, 4, (5,))
loss = torch.nn.functional.cross_entropy(model(x), y)
opt.zero_grad()
loss.backward()
opt.step()
"""

# Reductions whose exact result is (near) zero: the bias gradient of a Linear followed by batch
# norm (zero in exact arithmetic), and layer norm's mean of centred inputs of large magnitude.
NEAR_ZERO = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.BatchNorm1d(32), torch.nn.LayerNorm(32),
                            torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 64) * 30
loss = torch.nn.functional.cross_entropy(model(x - x.mean(dim=1, keepdim=True)), torch.randint(0, 4, (64,)))
loss.backward()
opt.step()
"""


def main(out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for name, text in (("mlp.py", MLP), ("near_zero.py", NEAR_ZERO)):
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    scripts = os.path.join(REPO, "tests", "python", "run_scripts")
    runs = {"vit": (os.path.join(scripts, "train_timm_vit.py"), "tensors"),
            "gpt2": (os.path.join(scripts, "train_gpt2.py"), "tensors"),
            "stats": (os.path.join(out, "mlp.py"), "stats"),
            "near_zero": (os.path.join(out, "near_zero.py"), "tensors")}
    procs = {}
    for name, (script, mode) in runs.items():
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python", "crosstrain", "_boot"))
        env["CROSSTRAIN_AGENT_CONFIG"] = json.dumps({"dump": os.path.join(out, name), "dump_level": "op",
                                                     "dump_mode": mode, "dump_steps": "0", "seed": 0,
                                                     "dump_optimizer_ops": True})
        log = open(os.path.join(out, name + ".log"), "w")
        procs[name] = (subprocess.Popen([sys.executable, script, "--steps", "1"], env=env, stdout=log,
                                        stderr=subprocess.STDOUT), log)
    failed = False
    for name, (p, log) in procs.items():
        rc = p.wait(timeout=900)
        log.close()
        if rc != 0 or not os.path.exists(os.path.join(out, name, "index.jsonl")):
            failed = True
            print(f"{name}: exit {rc}\n" + open(os.path.join(out, name + ".log")).read())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

# corpus: launch=python expect=runs
"""Rank devices written as string arithmetic (concatenation, join, %, f-strings) and a checkpoint
resumed with map_location="cuda:" + str(rank % torch.cuda.device_count())."""
import os
import tempfile

import torch
import torch.nn as nn

rank = int(os.environ.get("LOCAL_RANK", "0"))
device = "cuda:" + str(rank % torch.cuda.device_count())
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(64, 6).to(":".join(["cuda", str(rank)]))
y = x.sum(dim=1, keepdim=True).to("cuda:%d" % rank)
for step in range(20):
    loss = nn.functional.mse_loss(model(x.to(f"cuda:{rank}")), y)
    opt.zero_grad()
    loss.backward()
    opt.step()

path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 20}, path)
# Resuming, the way the DDP tutorials write it.
ckpt = torch.load(path, map_location="cuda:" + str(rank % torch.cuda.device_count()))
resumed = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1)).to("cuda" + ":" + str(rank))
resumed.load_state_dict(ckpt["model"])
with torch.no_grad():
    assert torch.allclose(resumed(x), model(x))
print("step", ckpt["step"], "loss", round(loss.item(), 4))
print("corpus-ok")

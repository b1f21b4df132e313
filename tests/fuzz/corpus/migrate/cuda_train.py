"""A small training script written for CUDA only (the end-to-end input of `crosstrain migrate`).

Everything here assumes an NVIDIA GPU: .cuda(), torch.cuda.amp, "cuda" device strings, a
checkpoint reloaded with map_location="cuda:0". Migrated to device-agnostic, it runs on a CPU.
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.cuda.amp import GradScaler

torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
torch.backends.cudnn.benchmark = True  # a CUDA-only knob: reported, harmless elsewhere


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train(out_dir, steps=6):
    model = TinyNet().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    scaler = GradScaler()
    x = torch.randn(64, 16).cuda(non_blocking=True)
    y = torch.randint(0, 4, (64,), device="cuda")
    losses = []
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.amp.autocast(dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    torch.cuda.synchronize()
    path = os.path.join(out_dir, "checkpoint.pt")
    torch.save({"model": model.state_dict(), "step": steps}, path)

    state = torch.load(path, map_location="cuda:0")
    restored = TinyNet().cuda()
    restored.load_state_dict(state["model"])
    same = torch.equal(restored(x), model(x))
    return {
        "device": str(next(restored.parameters()).device.type),
        "losses": losses,
        "step": state["step"],
        "restored_matches": bool(same),
        "peak_memory": int(torch.cuda.max_memory_allocated()),
    }


if __name__ == "__main__":
    print(json.dumps(train(sys.argv[1])))

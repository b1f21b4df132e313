"""A small Llama-style model written in the script itself, trained with AdamW: the clean loop. Its 24
blocks hold two RMSNorms each, so the one line of RMSNorm.forward runs 49 times a forward, once per
instance: the model's depth, not a Python loop."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()
torch.set_num_threads(1)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn_norm, self.mlp_norm = RMSNorm(dim), RMSNorm(dim)
        self.attn, self.mlp = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class Model(nn.Module):
    def __init__(self, dim=32, depth=24):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.norm, self.head = RMSNorm(dim), nn.Linear(dim, 10)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


model = Model()
data = torch.utils.data.TensorDataset(torch.randn(64, 32), torch.randint(0, 10, (64,)))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)

step = 0
while step < args.steps:
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step == args.steps:
            break
print(f"trained {step} steps, last loss {loss.item():.4f}")

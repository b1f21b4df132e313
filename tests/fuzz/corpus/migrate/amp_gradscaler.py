# corpus: launch=python expect=runs
"""AMP recipe: torch.cuda.amp autocast + GradScaler, names imported from torch.cuda.amp too."""
import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast

torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = GradScaler()
scaler2 = torch.cuda.amp.GradScaler(init_scale=2.0**10)
for _ in range(3):
    x = torch.randn(8, 16, device="cuda")
    y = torch.randint(0, 4, (8,), device="cuda")
    with autocast():
        loss = nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
with torch.cuda.amp.autocast(dtype=torch.bfloat16):
    model(torch.randn(2, 16).cuda())
print("scale", scaler.get_scale(), scaler2.get_scale())
print("corpus-ok")

# corpus: launch=python expect=runs
"""Seeds, a pinned DataLoader and memory statistics printed per epoch."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.cuda.manual_seed(1)
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, pin_memory=True)
model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("allocated MiB", torch.cuda.memory_allocated() / 2**20, "peak", torch.cuda.max_memory_allocated() / 2**20)
torch.cuda.empty_cache()
print("corpus-ok")

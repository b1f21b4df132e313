"""A data-parallel training script as torchrun starts it: env:// rendezvous, Gloo on the CPU,
DistributedDataParallel around a small network, a DistributedSampler."""
import os

import torch
import torch.distributed as dist

from common import parse_args

args = parse_args(__doc__, steps=2)
dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
ddp = torch.nn.parallel.DistributedDataParallel(model)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
sampler = torch.utils.data.distributed.DistributedSampler(data, shuffle=True)
batches = torch.utils.data.DataLoader(data, batch_size=args.batch_size, sampler=sampler)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
for step, (x, y) in zip(range(args.steps), batches):
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"rank {os.environ['RANK']} step {step} loss {loss.item():.6f}", flush=True)
dist.destroy_process_group()

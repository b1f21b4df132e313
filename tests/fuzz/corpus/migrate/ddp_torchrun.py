# corpus: launch=torchrun expect=runs
"""torchrun DDP: LOCAL_RANK from the environment, a device per rank, DistributedSampler."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    dist.init_process_group(backend="nccl")
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), pin_memory=True)
    model = nn.Linear(8, 3).to(device)
    model = DistributedDataParallel(model, device_ids=[local_rank], output_device=local_rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 2:
            break
    dist.barrier()
    if dist.get_rank() == 0:
        print("corpus-ok")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

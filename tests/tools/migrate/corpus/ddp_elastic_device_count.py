# corpus: launch=torchrun expect=runs
"""pytorch/examples elastic DDP: the device id is the rank modulo the GPU count."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def demo_basic():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device_id = rank % torch.cuda.device_count()
    model = nn.Linear(10, 5).to(device_id)
    ddp_model = DDP(model, device_ids=[device_id])
    loss = ddp_model(torch.randn(20, 10)).sum()
    loss.backward()
    dist.destroy_process_group()
    print("corpus-ok")


if __name__ == "__main__":
    demo_basic()

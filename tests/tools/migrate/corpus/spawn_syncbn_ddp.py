# corpus: launch=python expect=runs
"""SimSiam/MoCo style: one process per GPU found, SyncBatchNorm, DDP with device_ids, NCCL."""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


class SiameseNet(nn.Module):
    """Both views in one forward, as SimSiam's model does (one DDP forward per backward)."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                     nn.Flatten())

    def forward(self, x1, x2):
        return self.encoder(x1), self.encoder(x2)


def main_worker(gpu, ngpus_per_node, port):
    rank = gpu
    dist.init_process_group(backend="nccl", init_method="tcp://127.0.0.1:%d" % port,
                            world_size=ngpus_per_node, rank=rank)
    model = SiameseNet()
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    torch.cuda.set_device(gpu)
    model.cuda(gpu)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
    criterion = nn.CosineSimilarity(dim=1).cuda(gpu)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(2):
        images = torch.randn(4, 3, 8, 8).cuda(gpu, non_blocking=True)
        p1, p2 = model(images, images.flip(3))
        loss = -criterion(p1, p2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    ngpus_per_node = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, free_port()))
    print("corpus-ok")

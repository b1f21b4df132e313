#!/usr/bin/env python3
"""Records real torch.profiler traces (CPU) of the shapes users send to `analyze`:

- torch_cpu_dataloader.json.gz: a DataLoader with 2 worker processes whose samples take ~4 ms to
  produce (steps wait on data), record_shapes and profile_memory on;
- torch_cpu_stack.json.gz: the same model with with_stack=True (python_function events, call
  stacks) and a loss.item() in every step.

Run with the project's .venv python: .venv/bin/python tests/data/traces/make_torch_variants.py
The traces are inputs to tests that assert properties (data-bound steps, no device rules on a CPU
trace), not exact numbers, so re-recording them keeps the tests valid.
"""
import gzip
import os
import shutil
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

HERE = os.path.dirname(os.path.abspath(__file__))


class SlowDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.004)
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 8, 8, generator=g), i % 2


def record(name, loader, with_stack, item):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    raw = os.path.join(HERE, name[:-3])

    def on_ready(prof):
        prof.export_chrome_trace(raw)

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=4),
                 record_shapes=True, profile_memory=True, with_stack=with_stack, on_trace_ready=on_ready) as prof:
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            if item:
                loss.item()
            prof.step()
            if step >= 6:
                break
    with open(raw, "rb") as src, gzip.GzipFile(os.path.join(HERE, name), "wb", mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)


def main():
    torch.set_num_threads(1)
    workers = torch.utils.data.DataLoader(SlowDataset(), batch_size=4, num_workers=2)
    record("torch_cpu_dataloader.json.gz", workers, with_stack=False, item=False)
    plain = torch.utils.data.DataLoader(SlowDataset(), batch_size=4, num_workers=0)
    record("torch_cpu_stack.json.gz", plain, with_stack=True, item=True)


if __name__ == "__main__":
    main()

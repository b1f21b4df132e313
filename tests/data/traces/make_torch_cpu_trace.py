#!/usr/bin/env python3
"""Records torch_cpu_small.json with the real torch.profiler (CPU, shapes and memory on) on a tiny
model, plus torch_cpu_small.reference.json: torch's own per-operator key_averages() for the same
events, the reference the analyzer's operator table is checked against.

Run with the project's .venv python: .venv/bin/python tests/data/traces/make_torch_cpu_trace.py
"""
import json
import os

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(8, 3, 8, 8), torch.randint(0, 2, (8,)))
    loader = torch.utils.data.DataLoader(data, batch_size=2)
    out = os.path.join(HERE, "torch_cpu_small.json")
    reference = {}

    def on_ready(prof):
        prof.export_chrome_trace(out)
        for e in prof.key_averages():
            reference[e.key] = {"calls": e.count, "self_cpu_us": e.self_cpu_time_total, "cpu_total_us": e.cpu_time_total}

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2),
                 record_shapes=True, profile_memory=True, on_trace_ready=on_ready) as prof:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    with open(os.path.join(HERE, "torch_cpu_small.reference.json"), "w") as f:
        json.dump({"torch": torch.__version__, "operators": reference}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

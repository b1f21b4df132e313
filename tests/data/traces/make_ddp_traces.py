#!/usr/bin/env python3
"""Records real per-rank torch.profiler traces of a 2-process DistributedDataParallel job (Gloo, CPU)
into ddp/balanced/rank{0,1}.json.gz and ddp/straggler/rank{0,1}.json.gz. In the straggler job rank 1
runs every operator of the step twice over (a second forward on the same batch whose result is
dropped, as a slower device would take longer for the same work); rank 0 then waits for it in the
gradient all-reduce. The balanced job is the same program without the extra work; on a shared
host one core can still run slower for a while, so it is recorded again (up to 8 times) until the
ranks' compute (self time of ATen operators, from torch's own key_averages()) agrees within 5%.

Run with the project's .venv python: .venv/bin/python tests/data/traces/make_ddp_traces.py
"""
import gzip
import os
import shutil
import socket
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import ProfilerActivity, profile, schedule

HERE = os.path.dirname(os.path.abspath(__file__))


def model():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1),
                         nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def compute_us(prof):  # ATen operators only: the wait for other ranks is outside them
    return sum(e.self_cpu_time_total for e in prof.key_averages() if e.key.startswith("aten::"))


def worker(rank, world, port, out_dir, straggler):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    net = DDP(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    path = os.path.join(out_dir, f"rank{rank}.json")
    def on_ready(p):
        p.export_chrome_trace(path)
        with open(path + ".compute", "w") as f:
            f.write(str(compute_us(p)))

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=6),
                 on_trace_ready=on_ready) as prof:
        for _ in range(8):
            x = torch.randn(32, 3, 48, 48, generator=g)
            y = torch.randint(0, 10, (32,), generator=g)
            if straggler and rank == 1:
                with torch.no_grad():
                    net.module(x)
                    net.module(x)
            loss = nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    for name, straggler in (("balanced", False), ("straggler", True)):
        for attempt in range(8):
            tmp = tempfile.mkdtemp()
            mp.spawn(worker, args=(2, free_port(), tmp, straggler), nprocs=2, join=True)
            work = [float(open(os.path.join(tmp, f"rank{r}.json.compute")).read()) for r in (0, 1)]
            print(name, "attempt", attempt, "compute us per rank", work, file=sys.stderr)
            if straggler or max(work) / min(work) <= 1.05:
                break
            shutil.rmtree(tmp)
        dest = os.path.join(HERE, "ddp", name)
        os.makedirs(dest, exist_ok=True)
        for r in (0, 1):
            with open(os.path.join(tmp, f"rank{r}.json"), "rb") as src, gzip.GzipFile(
                    os.path.join(dest, f"rank{r}.json.gz"), "wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
        shutil.rmtree(tmp)
    print("torch", torch.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()

# corpus: launch=python expect=runs expect-device-agnostic=refused:event-timing
"""I-JEPA style timer: a flag and-ed with availability, CUDA events behind it."""
import torch
import torch.nn as nn


def gpu_timer(closure, log_timings=True):
    log_timings = log_timings and torch.cuda.is_available()
    elapsed_time = -1.0
    if log_timings:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
    result = closure()
    if log_timings:
        end.record()
        torch.cuda.synchronize()
        elapsed_time = start.elapsed_time(end)
    return result, elapsed_time


device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train_step():
    loss = model(torch.randn(4, 8, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss)


for _ in range(3):
    loss, ms = gpu_timer(train_step)
print("corpus-ok")

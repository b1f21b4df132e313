"""Two-layer regression that sends itself SIGTERM in the middle of step N (after its forward, before
its optimizer step), as a preempted job is: N comes from the command line; with "int" as the second
argument it sends SIGINT instead, which Python turns into a KeyboardInterrupt (exit handlers run)."""
import os
import signal
import sys

import torch

kill_at = int(sys.argv[1])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 8), torch.randn(16, 1)
for step in range(4):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    if step == kill_at:
        os.kill(os.getpid(), signal.SIGINT if sys.argv[2:] == ["int"] else signal.SIGTERM)
    loss.backward()
    opt.step()

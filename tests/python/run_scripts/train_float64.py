"""A float64 regression (as scientific models train) that also keeps a float32 metric each step:
two steps of SGD at the learning rate given on the command line. Prints each step's loss with repr()
so a test can check the loss log keeps all of float64's digits."""
import sys

import torch

torch.manual_seed(0)
lr = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)).double()
opt = torch.optim.SGD(model.parameters(), lr=lr)
x = torch.randn(64, 32, dtype=torch.float64)
y = x[:, :1].sin()
for step in range(2):
    opt.zero_grad()
    out = model(x)
    loss = (out - y).pow(2).mean()
    close = ((out - y).abs() < 0.1).float().mean()  # a float32 metric beside the float64 model
    loss.backward()
    opt.step()
    print("loss", step, repr(loss.item()), "close", close.item())

# corpus: launch=python expect=runs
"""Device chosen on the command line, with choices, compared as a string later."""
import argparse

import torch
import torch.nn as nn


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--device", type=str, default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--steps", type=int, default=3)
    return p.parse_args()


def main():
    args = get_args()
    if args.device == "cuda":
        torch.backends.cudnn.benchmark = True
        assert torch.cuda.is_available(), "CUDA requested but not available"
    device = torch.device(args.device)
    model = nn.Linear(6, 2).to(device)
    opt = torch.optim.Adam(model.parameters())
    for _ in range(args.steps):
        loss = model(torch.randn(4, 6, device=device)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("device", args.device.upper())
    print("corpus-ok")


if __name__ == "__main__":
    main()

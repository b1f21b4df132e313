# corpus: launch=python expect=runs
"""Configuration dictionary naming the device and backend; a per-device table left as written."""
import torch
import torch.nn as nn

CONFIG = {"device": "cuda", "dist_backend": "nccl", "lr": 0.05, "steps": 3}
BACKEND_FOR = {"cuda": "nccl", "cpu": "gloo", "npu": "hccl"}


def train(cfg):
    device = torch.device(cfg["device"])
    model = nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
    for _ in range(cfg["steps"]):
        x = torch.randn(16, 4, device=device)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("backend", cfg["dist_backend"], "table", BACKEND_FOR[device.type])


if __name__ == "__main__":
    train(CONFIG)
    print("corpus-ok")

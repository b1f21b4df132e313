#!/usr/bin/env python3
"""crosstrain checkpoints against PyTorch, both ways.

    checkpoint_interop.py read CKPT          torch.load(weights_only=True) a crosstrain checkpoint and load
                                             its parts into torchvision's resnet18, torch.optim.SGD (two
                                             groups, as crosstrain splits them) and torch.amp.GradScaler
    checkpoint_interop.py write CKPT WEIGHTS a torchvision-reference-style checkpoint after one epoch
                                             (model.state_dict() as is: an OrderedDict with _metadata),
                                             and torch.save(model.state_dict(), WEIGHTS)
    checkpoint_interop.py same A B [params]  two state-dict files hold equal tensors (params: only
                                             the keys of resnet18's parameters, not its buffers)
"""
import collections
import sys

import torch
import torchvision


def groups(model):
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    return [{"params": decay, "weight_decay": 1e-4}, {"params": no_decay, "weight_decay": 0.0}]


def read(path):
    ck = torch.load(path, weights_only=True)
    for key in ("model", "optimizer", "scaler", "lr_scheduler", "epoch", "args", "rng", "data", "step"):
        assert key in ck, key
    model = torchvision.models.resnet18(num_classes=10)
    model.load_state_dict(ck["model"], strict=True)
    opt = torch.optim.SGD(groups(model), lr=0.1, momentum=0.9)
    opt.load_state_dict(ck["optimizer"])
    n = sum(len(g["params"]) for g in opt.param_groups)
    assert len(opt.state) == n, (len(opt.state), n)
    first = next(iter(model.parameters()))
    assert opt.state[first]["momentum_buffer"].shape == first.shape
    scaler = torch.amp.GradScaler("cpu")
    scaler.load_state_dict(ck["scaler"])
    assert scaler.get_scale() == ck["scaler"]["scale"] > 0
    assert ck["step"] == 2 and ck["lr_scheduler"]["last_epoch"] == 2
    assert torch.get_rng_state().shape == ck["rng"]["cpu"].shape
    # And training goes on in Python.
    x, y = torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print("ok", ck["crosstrain"]["version"])


def write(path, weights):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, 30)
    for _ in range(2):
        x, y = torch.randn(4, 3, 28, 28), torch.randint(0, 10, (4,))
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    sched.step()
    # As torchvision's reference script saves: model.state_dict() itself, an OrderedDict.
    sd = model.state_dict()
    assert type(sd) is collections.OrderedDict and hasattr(sd, "_metadata")
    torch.save({"model": sd, "optimizer": opt.state_dict(), "lr_scheduler": sched.state_dict(),
                "epoch": 0, "args": {"model": "resnet18", "lr": 0.05}}, path)
    torch.save(sd, weights)


def same(a, b, which="all"):
    sa, sb = torch.load(a, weights_only=True), torch.load(b, weights_only=True)
    assert sa.keys() == sb.keys()
    keys = list(sa)
    if which == "params":
        keys = [k for k, _ in torchvision.models.resnet18(num_classes=10).named_parameters()]
    for k in keys:
        assert torch.equal(sa[k], sb[k]), k
    print("equal", len(keys))


if __name__ == "__main__":
    {"read": read, "write": write, "same": same}[sys.argv[1]](*sys.argv[2:])

# corpus: launch=python expect=runs
"""Checkpoints written on GPU 0 and reloaded with map_location in its usual spellings."""
import os
import tempfile

import torch
import torch.nn as nn


def save_and_reload(gpu):
    model = nn.Linear(3, 3).cuda()
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    torch.save({"model": model.state_dict(), "epoch": 1}, path)
    a = torch.load(path, map_location="cuda:0")
    b = torch.load(path, map_location=torch.device("cuda"))
    c = torch.load(path, map_location="cuda:{}".format(gpu))
    d = torch.load(path, map_location=f"cuda:{gpu}")
    for ckpt in (a, b, c, d):
        model.load_state_dict(ckpt["model"])
    return model


if __name__ == "__main__":
    save_and_reload(0)
    print("corpus-ok")

"""Reference throughput: torchvision ImageFolder + DataLoader (PIL decoding) with the transforms
crosstrain's data-bench applies, timed the same way (the clock starts when the first batch arrives).

usage: torchvision_imagefolder.py ROOT --workers 1,2 --images 2000 [--mode train|eval] [--size 224]
Prints one JSON object: {"rows": [{"workers": N, "images": M, "seconds": S, "images_per_s": R}, ...]}
"""
import argparse
import json
import os
import time

import torch
from torchvision import datasets, transforms


def cpu_seconds(pids):
    """utime + stime of live processes, from /proc (workers are not waited for, so
    RUSAGE_CHILDREN would miss them)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def measure(root, workers, images, batch_size, mode, size, seed):
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    if mode == "train":
        tf = transforms.Compose([transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(), normalize])
    else:
        tf = transforms.Compose([transforms.Resize(size * 256 // 224), transforms.CenterCrop(size),
                                 transforms.ToTensor(), normalize])
    ds = datasets.ImageFolder(root, transform=tf)
    g = torch.Generator()
    g.manual_seed(seed)
    timed = 0
    seconds = 0.0
    epoch = 0
    # persistent workers across epochs, as crosstrain's loader keeps its threads
    loader = torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, num_workers=workers,
                                         generator=g, persistent_workers=workers > 0, drop_last=False)
    it = iter(loader)
    next(it)
    pids = [os.getpid()] + [w.pid for w in getattr(it, "_workers", [])]
    cpu0 = cpu_seconds(pids)
    t0 = time.perf_counter()
    while timed < images:
        try:
            x, y = next(it)
        except StopIteration:
            epoch += 1
            it = iter(loader)
            continue
        timed += x.shape[0]
    seconds = time.perf_counter() - t0
    cpu = cpu_seconds(pids) - cpu0
    return {"workers": workers, "images": timed, "seconds": seconds, "images_per_s": timed / seconds,
            "images_per_s_per_worker": timed / seconds / max(workers, 1), "cpu_seconds": cpu,
            "images_per_cpu_s": timed / cpu if cpu > 0 else 0.0}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--workers", default="1,2")
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--mode", default="train", choices=["train", "eval"])
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(1)
    rows = [measure(a.root, int(w), a.images, a.batch_size, a.mode, a.size, a.seed) for w in a.workers.split(",")]
    print(json.dumps({"torch": torch.__version__, "rows": rows}))


if __name__ == "__main__":
    main()

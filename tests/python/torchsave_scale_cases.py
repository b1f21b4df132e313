#!/usr/bin/env python3
"""torch.save files that test how crosstrain's reader scales: shared storages, pickle-heavy
checkpoints, CIFAR batches and hostile shapes. The tests write them small; bench/torchsave_memory.py
writes them at full size.

usage: torchsave_scale_cases.py OUT_DIR [--size test|bench] [--only NAME,NAME]

  views.pt          2000 views of one storage (test: 64 KiB, bench: 8 MiB) and a transposed 8x8 view
                    of its start: {"flat", "views": [...], "t"}
  flat_params.pt    a model (test: conv, BatchNorm, linear; bench: resnet50) whose parameters are views of one flat
                    buffer and whose SGD momentum buffers are views of another (the layout of flat-
                    parameter optimizers and FSDP): {"model", "optimizer", "epoch"}
  flat_copy.pt      the same values as separate tensors (no views), to compare with
  state_dict.pt     bench only: resnet50's plain state dict (torch.save(model.state_dict()))
  legacy_views.pt   views.pt's views in the legacy format (_use_new_zipfile_serialization=False)
  history.pt        a checkpoint whose pickle outweighs its tensors: a small model and per-step
                    histories (floats, ints, strings; test: 20k steps, bench: 2M)
  cifar_batch       a CIFAR-10 python batch (data_batch_1's layout) as the published files are pickled
                    (Python 2: strings as BINSTRING; test: 500 rows, bench: 10000 rows = 30 MB);
                    cifar_batch_py3 the same pickled by Python 3 at protocol 2 (bytes as
                    _codecs.encode of a latin-1 text)
  long_key.pt       {1 MiB key: [None] * 50000}
  module_key.pt     {"module." * 600000 + "weight": a tensor} (a 4.2 MB key)
  deep.pt           a tensor inside a tuple nested 10^6 deep, data.pkl written here
                    (Python's pickler recurses), the rest as torch.save lays it out
  repeated_key.pt   a dict that sets one memoised 1 MiB key 100000 times (data.pkl written here)
  objects.pt        {"model": a Linear(2, 2)'s state dict, "args": [argparse.Namespace] * 3000 (distinct)}
Prints one line per file: NAME BYTES.
"""
import argparse
import collections
import io
import os
import pickle
import sys
import zipfile

import numpy as np
import torch


def flat_views(tensors):
    """A flat buffer holding `tensors` one after another, and views of it shaped like them."""
    flat = torch.cat([t.detach().reshape(-1) for t in tensors])
    views, at = [], 0
    for t in tensors:
        views.append(flat[at:at + t.numel()].view_as(t))
        at += t.numel()
    return flat, views


def small_model():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10))


def write_flat_params(out, arch):
    torch.manual_seed(7)
    if arch:
        import torchvision  # bench size only: the tests need no torchvision

        model = getattr(torchvision.models, arch)(num_classes=10)
    else:
        model = small_model()
    if arch:  # the plain state dict first: one storage per tensor
        torch.save(model.state_dict(), os.path.join(out, "state_dict.pt"))
    params = list(model.parameters())
    flat, views = flat_views(params)
    for p, v in zip(params, views):
        p.data = v
    assert all(p.untyped_storage().data_ptr() == flat.untyped_storage().data_ptr() for p in params)
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    opt.step()
    state = [opt.state[p]["momentum_buffer"] for p in params]
    flat_m, views_m = flat_views(state)
    for p, v in zip(params, views_m):
        opt.state[p]["momentum_buffer"] = v
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 1}
    torch.save(ckpt, os.path.join(out, "flat_params.pt"))
    copy = {"model": {k: v.clone() for k, v in ckpt["model"].items()},
            "optimizer": {"state": {i: {"momentum_buffer": s["momentum_buffer"].clone()}
                                    for i, s in ckpt["optimizer"]["state"].items()},
                          "param_groups": ckpt["optimizer"]["param_groups"]},
            "epoch": 1}
    torch.save(copy, os.path.join(out, "flat_copy.pt"))


def write_views(out, elements):
    flat = torch.arange(elements, dtype=torch.float32)
    step = elements // 2000
    obj = {"flat": flat, "views": [flat[i * step:(i + 1) * step] for i in range(2000)], "t": flat[:64].view(8, 8).t()}
    torch.save(obj, os.path.join(out, "views.pt"))
    torch.save(obj["views"], os.path.join(out, "legacy_views.pt"), _use_new_zipfile_serialization=False)


def write_history(out, steps):
    torch.manual_seed(7)
    small = small_model()
    g = torch.Generator().manual_seed(7)
    losses = torch.rand(steps, generator=g, dtype=torch.float64).tolist()
    torch.save({"model": small.state_dict(), "loss": losses, "step_ms": [int(x * 1000) for x in losses],
                "lr": [0.1] * steps, "phase": ["train" if i % 10 else "eval" for i in range(steps)]},
               os.path.join(out, "history.pt"))


def write_cifar_batch(out, rows):
    from cifar_python_batches import py2_dumps  # next to this script

    rng = np.random.default_rng(7)
    batch = {b"batch_label": b"training batch 1 of 5", b"labels": [int(x) for x in rng.integers(0, 10, rows)],
             b"data": rng.integers(0, 256, (rows, 3072), dtype=np.uint8),
             b"filenames": [b"image_%05d.png" % i for i in range(rows)]}
    with open(os.path.join(out, "cifar_batch"), "wb") as f:
        f.write(py2_dumps(batch))
    with open(os.path.join(out, "cifar_batch_py3"), "wb") as f:
        pickle.dump(batch, f, protocol=2)


class _Storage:
    pass


class _Tensor:
    """Pickles as torch.save pickles a tensor of 4 floats at the start of storage '0'."""

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, (_Storage(), 0, (4,), (1,), False, collections.OrderedDict()))


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ("storage", torch.FloatStorage, "0", "cpu", 4) if isinstance(obj, _Storage) else None


def body(obj):
    """The opcodes of `obj` pickled at protocol 2, without PROTO and STOP."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue()[2:-1]


def write_archive(path, pkl):
    """torch.save's zip layout around a data.pkl written here, with storage '0' of 4 floats."""
    name = os.path.splitext(os.path.basename(path))[0]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(name + "/data.pkl", pkl)
        z.writestr(name + "/byteorder", "little")
        z.writestr(name + "/data/0", np.arange(4, dtype=np.float32).tobytes())
        z.writestr(name + "/version", "3\n")


def write_deep(out, depth):
    # A tensor, then TUPLE1 `depth` times: ((((tensor,),),),...).
    write_archive(os.path.join(out, "deep.pt"), b"\x80\x02" + body(_Tensor()) + b"\x85" * depth + b".")


def write_repeated_key(out, times):
    # {}, MARK, the key and a tensor (memoised under numbers the tensor's own opcodes do not use),
    # then (LONG_BINGET key, LONG_BINGET tensor) again and again, SETITEMS.
    key = b"k" * (1 << 20)
    put = lambda i: b"r" + i.to_bytes(4, "little")
    get = lambda i: b"j" + i.to_bytes(4, "little")
    pkl = (b"\x80\x02}(X" + len(key).to_bytes(4, "little") + key + put(1000) + body(_Tensor()) + put(1001) +
           (get(1000) + get(1001)) * (times - 1) + b"u.")
    write_archive(os.path.join(out, "repeated_key.pt"), pkl)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", choices=("test", "bench"), default="test")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    bench = a.size == "bench"
    writers = {
        "views": lambda: write_views(a.out, (8 << 20) // 4 if bench else (64 << 10) // 4),
        "flat_params": lambda: write_flat_params(a.out, "resnet50" if bench else None),
        "history": lambda: write_history(a.out, 2_000_000 if bench else 20_000),
        "cifar_batch": lambda: write_cifar_batch(a.out, 10000 if bench else 500),
        "long_key": lambda: torch.save({"k" * (1 << 20): [None] * 50000}, os.path.join(a.out, "long_key.pt")),
        "module_key": lambda: torch.save({"module." * 600000 + "weight": torch.zeros(2)},
                                         os.path.join(a.out, "module_key.pt")),
        "deep": lambda: write_deep(a.out, 10 ** 6),
        "repeated_key": lambda: write_repeated_key(a.out, 100000),
        "objects": lambda: torch.save({"model": torch.nn.Linear(2, 2).state_dict(),
                                       "args": [argparse.Namespace(run=i) for i in range(3000)]},
                                      os.path.join(a.out, "objects.pt")),
    }
    only = [n for n in a.only.split(",") if n]
    for name, write in writers.items():
        if not only or name in only:
            write()
    for name in sorted(os.listdir(a.out)):
        print(name, os.path.getsize(os.path.join(a.out, name)))


if __name__ == "__main__":
    sys.exit(main())

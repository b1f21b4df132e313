#!/usr/bin/env python3
"""State-dict files for crosstrain's --weights tests, written with torch.save.

usage: state_file_cases.py OUT_DIR

Writes torchvision's resnet18(num_classes=10) as torch.save(model.state_dict()) gives it
(tv.pt: a collections.OrderedDict with _metadata) and variants of it:
  short.pt    the record of 'fc.weight' cut to half its bytes (the zip stays valid)
  int64.pt    'conv1.weight' as int64
  complex.pt  'conv1.weight' as complex64
  half.pt     every floating tensor as float16
  nested.pt   {"model": the OrderedDict, "epoch": 3, "optimizer": {...}}
  small.pt    Sequential(Conv2d(1, 2, 1), BatchNorm2d(2)).state_dict(): 7 tensors, 1.7 KB
  reach.pt    {"conv1.weight": a tensor of 8 elements at offset 2 of a storage of 4}, pickled by hand
  tv.safetensors  tv.pt's tensors written by safetensors.torch.save_file (not a torch.save file)
  empty.pt    0 bytes
Prints one line per file: NAME accepted | NAME refused: Python's message (torch.load, weights_only).
"""
import collections
import io
import os
import pickle
import sys
import zipfile

import torch
import torchvision


def cut_record(src, dst, nbytes):
    """Copies the archive, halving the one data record of `nbytes` bytes."""
    with zipfile.ZipFile(src) as zin:
        hits = [i.filename for i in zin.infolist() if "/data/" in i.filename and i.file_size == nbytes]
        assert len(hits) == 1, hits
        with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
            for info in zin.infolist():
                data = zin.read(info.filename)
                zout.writestr(info.filename, data[: len(data) // 2] if info.filename == hits[0] else data)


class _Storage:
    pass


class _Tensor:
    """Pickles as torch.save pickles a tensor, with the size, stride and offset given."""

    def __init__(self, size, stride, offset):
        self.args = (_Storage(), offset, size, stride, False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ("storage", torch.FloatStorage, "0", "cpu", 4) if isinstance(obj, _Storage) else None


def write_reaching_past(dst):
    buf = io.BytesIO()
    _Pickler(buf, protocol=2).dump({"conv1.weight": _Tensor((8,), (1,), 2)})
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as z:
        z.writestr("reach/data.pkl", buf.getvalue())
        z.writestr("reach/byteorder", "little")
        z.writestr("reach/version", "3\n")
        z.writestr("reach/data/0", bytes(16))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(7)
    model = torchvision.models.resnet18(num_classes=10)
    sd = model.state_dict()
    assert type(sd) is collections.OrderedDict and hasattr(sd, "_metadata")
    path = lambda name: os.path.join(out, name)
    torch.save(sd, path("tv.pt"))
    cut_record(path("tv.pt"), path("short.pt"), sd["fc.weight"].numel() * 4)
    for name, dtype in (("int64", torch.int64), ("complex", torch.complex64)):
        bad = collections.OrderedDict(sd)
        bad["conv1.weight"] = sd["conv1.weight"].to(dtype)
        torch.save(bad, path(name + ".pt"))
    torch.save(collections.OrderedDict((k, v.half() if v.is_floating_point() else v) for k, v in sd.items()),
               path("half.pt"))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch.save({"model": sd, "epoch": 3, "optimizer": opt.state_dict()}, path("nested.pt"))
    write_reaching_past(path("reach.pt"))
    torch.save(torch.nn.Sequential(torch.nn.Conv2d(1, 2, 1), torch.nn.BatchNorm2d(2)).state_dict(), path("small.pt"))
    import safetensors.torch
    safetensors.torch.save_file(dict(sd), path("tv.safetensors"))
    open(path("empty.pt"), "wb").close()
    for name in ("small", "tv", "short", "int64", "complex", "half", "nested", "reach"):
        try:
            torch.load(path(name + ".pt"), weights_only=True)
            print(name, "accepted")
        except Exception as e:  # noqa: BLE001 - the message is the result
            print(name, "refused:", str(e).splitlines()[0])


if __name__ == "__main__":
    main()

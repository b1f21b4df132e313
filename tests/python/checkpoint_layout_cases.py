#!/usr/bin/env python3
"""Checkpoints as real training programs write them, for crosstrain's --weights and --resume tests.

usage: checkpoint_layout_cases.py OUT_DIR [small]   (small: only the files of 2 KB or less)

Files that only --weights reads carry an optimizer without state (smaller). Every file holds torchvision's resnet18(num_classes=10) (seed 7; ref.pt is its bare state dict),
in the layout of one program:
  tvref.pth            torchvision's classification reference: {"model", "optimizer", "lr_scheduler",
                       "epoch", "args": argparse.Namespace}
  imagenet.pth.tar     pytorch/examples imagenet under DistributedDataParallel: {"epoch", "arch",
                       "state_dict": 'module.' keys, "best_acc1", "optimizer"}
  timm.pth.tar         timm: {"epoch", "arch", "state_dict", "state_dict_ema" (other values),
                       "optimizer", "version", "args": argparse.Namespace, "metric"}
  tutorial.pt          PyTorch's tutorial: {"epoch", "model_state_dict", "optimizer_state_dict", "loss"}
  compiled.pt          a bare state dict of DDP(torch.compile(model)): 'module._orig_mod.' keys
  lightning.ckpt       Lightning: {"state_dict": 'model.' keys, "optimizer_states", ...}
  ema.pt               {"model_ema": AveragedModel's state dict ('n_averaged', 'module.' keys)}
  mismatch.pt          {"model": fc renamed to classifier, "epoch"}
  module.pt            {"model": the nn.Module itself, "epoch"} (torch.save(model))
  legacy.pt            ref.pt in the legacy format (_use_new_zipfile_serialization=False)
  legacy_tvref.pth.tar tvref.pth in the legacy format, keys under 'module.'
  legacy_half.pt       every floating tensor as float16, legacy
  legacy_old_bn.pt     a plain dict without BatchNorm's num_batches_tracked (pre-0.4.1), legacy
  legacy_cuda.pt       storages tagged 'cuda:0', legacy
  legacy_small.pt      Sequential(Conv2d(1, 2, 1), BatchNorm2d(2)).state_dict(), legacy (1.2 KB);
                       zip_cuda.pt the same as a zip with storages tagged 'cuda:0'
  legacy_short.pt      legacy_small.pt without its last 10 bytes
  legacy_count.pt      legacy_small.pt with the first storage's element count one larger
  legacy_big.pt        legacy_small.pt with sys_info saying big-endian
  legacy_tar.pt        the tar layout of torch < 0.4 ('storages', 'tensors', 'pickle')
  legacy_small_tvref.pt {"model": legacy_small.pt's under 'module.', "epoch", "args": argparse.Namespace}
  legacy_small_p3.pt, legacy_small_tvref_p3.pt  the same two at pickle_protocol=3
  legacy_small_p0.pt, legacy_small_p4.pt, legacy_small_p5.pt  legacy_small.pt at protocols 0, 4 and 5,
                       which torch.load(weights_only=True) refuses
  legacy_p3.pt         ref.pt in the legacy format at pickle_protocol=3
Prints, per file, whether Python's torch.load(weights_only=True) accepts it, then "sum NAME S"
lines: the float64 sum of every parameter of the state dict a program would load, for comparison.
"""
import argparse
import collections
import io
import os
import pickletools
import sys
import tarfile
import warnings

import torch
import torch.serialization
import torchvision


def legacy_save(obj, path, protocol=2):
    torch.save(obj, path, _use_new_zipfile_serialization=False, pickle_protocol=protocol)


def save_on_cuda(obj, path, legacy):
    """Saves as from a CUDA device: every storage's location is 'cuda:0'."""
    tag = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: "cuda:0"
    try:
        torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    finally:
        torch.serialization.location_tag = tag


def prefixed(sd, prefix):
    return collections.OrderedDict((prefix + k, v) for k, v in sd.items())


def report(path, names):
    warnings.filterwarnings("ignore", message="Detected pickle protocol")  # weights_only's, for protocol 3
    for name in names:
        try:
            torch.load(path(name), weights_only=True, map_location="cpu")
            print(name, "accepted")
        except Exception as e:  # noqa: BLE001 - the message is the result
            text = " ".join(str(e).split())
            at = text.find("Unsupported ")  # weights_only's reason (global, operand), after its advice
            print(name, "refused:", text[at if at >= 0 else 0:][:120])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    path = lambda name: os.path.join(out, name)
    torch.manual_seed(7)
    model = torchvision.models.resnet18(num_classes=10)
    with torch.no_grad():  # batch-norm statistics that differ from a fresh model's
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.num_batches_tracked.fill_(9)  # 10 after the forward below
    sd = model.state_dict()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    opt.step()  # momentum buffers exist
    opt.zero_grad()
    sched = torch.optim.lr_scheduler.StepLR(opt, 30)
    # Files that only --weights reads carry an optimizer without state, to stay small.
    no_state = torch.optim.SGD(model.parameters(), lr=0.1).state_dict()
    args = argparse.Namespace(model="resnet18", lr=0.1, epochs=90, data_path="/data/imagenet", amp=False,
                              lr_steps=[30, 60], weights=None)
    ema = collections.OrderedDict((k, v * 0.5 if v.is_floating_point() else v) for k, v in sd.items())

    small = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 1), torch.nn.BatchNorm2d(2)).state_dict()
    save_on_cuda(small, path("zip_cuda.pt"), legacy=False)
    legacy_save(small, path("legacy_small.pt"))

    data = open(path("legacy_small.pt"), "rb").read()
    open(path("legacy_short.pt"), "wb").write(data[:-10])
    # The first element count follows the fifth pickle (the storage keys); walked, not run.
    buf = io.BytesIO(data)
    for _ in range(5):
        for _ in pickletools.genops(buf):
            pass
    at = buf.tell()
    count = int.from_bytes(data[at:at + 8], "little")
    open(path("legacy_count.pt"), "wb").write(data[:at] + (count + 1).to_bytes(8, "little") + data[at + 8:])
    flag = data.index(b"little_endian") + len(b"little_endian")
    true_at = data.index(b"\x88", flag)
    open(path("legacy_big.pt"), "wb").write(data[:true_at] + b"\x89" + data[true_at + 1:])
    legacy_save({"model": prefixed(small, "module."), "epoch": 1, "args": args}, path("legacy_small_tvref.pt"))
    legacy_save(small, path("legacy_small_p3.pt"), protocol=3)
    legacy_save({"model": prefixed(small, "module."), "epoch": 1, "args": args}, path("legacy_small_tvref_p3.pt"),
                protocol=3)
    for protocol in (0, 4, 5):
        legacy_save(small, path(f"legacy_small_p{protocol}.pt"), protocol=protocol)
    with tarfile.open(path("legacy_tar.pt"), "w", format=tarfile.PAX_FORMAT) as t:
        for name in ("storages", "tensors", "pickle"):
            info = tarfile.TarInfo(name)
            info.size = 1
            t.addfile(info, io.BytesIO(b"\x00"))

    small_names = ["legacy_small.pt", "zip_cuda.pt", "legacy_short.pt", "legacy_count.pt", "legacy_big.pt",
                   "legacy_tar.pt", "legacy_small_tvref.pt", "legacy_small_p3.pt", "legacy_small_tvref_p3.pt",
                   "legacy_small_p0.pt", "legacy_small_p4.pt", "legacy_small_p5.pt"]
    if sys.argv[2:] == ["small"]:
        report(path, small_names)
        return
    torch.save(sd, path("ref.pt"))
    tvref = {"model": sd, "optimizer": opt.state_dict(), "lr_scheduler": sched.state_dict(), "epoch": 3,
             "args": args}
    torch.save(tvref, path("tvref.pth"))
    torch.save({"epoch": 4, "arch": "resnet18", "state_dict": prefixed(sd, "module."),
                "best_acc1": torch.tensor(71.25), "optimizer": no_state}, path("imagenet.pth.tar"))
    torch.save({"epoch": 4, "arch": "resnet18", "state_dict": sd, "state_dict_ema": ema,
                "optimizer": no_state, "version": 2, "args": args, "metric": 0.5}, path("timm.pth.tar"))
    torch.save({"epoch": 2, "model_state_dict": sd, "optimizer_state_dict": no_state,
                "loss": torch.tensor(0.25)}, path("tutorial.pt"))
    torch.save(prefixed(sd, "module._orig_mod."), path("compiled.pt"))
    torch.save({"epoch": 1, "global_step": 100, "pytorch-lightning_version": "2.4.0",
                "state_dict": prefixed(sd, "model."), "optimizer_states": [no_state],
                "lr_schedulers": [], "hparams_name": "kwargs", "hyper_parameters": {"lr": 0.1}},
               path("lightning.ckpt"))
    averaged = collections.OrderedDict([("n_averaged", torch.tensor(5))])
    averaged.update(prefixed(ema, "module."))
    torch.save({"model_ema": averaged}, path("ema.pt"))
    renamed = collections.OrderedDict((k.replace("fc.", "classifier."), v) for k, v in sd.items())
    torch.save({"model": renamed, "epoch": 1}, path("mismatch.pt"))
    torch.save({"model": model, "epoch": 1}, path("module.pt"))

    legacy_save(sd, path("legacy.pt"))
    legacy_save(sd, path("legacy_p3.pt"), protocol=3)
    legacy_save(dict(tvref, model=prefixed(sd, "module.")), path("legacy_tvref.pth.tar"))
    legacy_save(collections.OrderedDict((k, v.half() if v.is_floating_point() else v) for k, v in sd.items()),
                path("legacy_half.pt"))
    legacy_save({k: v for k, v in sd.items() if not k.endswith("num_batches_tracked")}, path("legacy_old_bn.pt"))
    save_on_cuda(sd, path("legacy_cuda.pt"), legacy=True)
    report(path, ["ref.pt", "tvref.pth", "imagenet.pth.tar", "timm.pth.tar", "tutorial.pt", "compiled.pt",
                  "lightning.ckpt", "ema.pt", "mismatch.pt", "module.pt", "legacy.pt", "legacy_p3.pt", "legacy_tvref.pth.tar",
                  "legacy_half.pt", "legacy_old_bn.pt", "legacy_cuda.pt"] + small_names)
    params = [k for k, _ in model.named_parameters()]
    print("sum ref", repr(sum(sd[k].double().sum().item() for k in params)))
    print("sum ema", repr(sum(ema[k].double().sum().item() for k in params)))


if __name__ == "__main__":
    main()

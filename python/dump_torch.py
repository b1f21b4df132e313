#!/usr/bin/env python3
"""Dump a PyTorch (Python) run in crosstrain's dump format (docs/DUMP_FORMAT.md).

The records, their statistics and the files are written by the crosstrain package's writer
(python/crosstrain/_dumpfile.py), the one the agent of `crosstrain run` uses.

`crosstrain compare A B` then compares it with a crosstrain run or with another Python run.

As a library, around your own training loop:

    from dump_torch import DumpWriter, ModelDumper
    writer = DumpWriter("dump_a", mode="tensors", meta={"precision": "fp32"})
    dumper = ModelDumper(model, writer, steps="0-2")
    for step, (x, y) in enumerate(loader):
        with dumper.step(step):          # forward outputs and output gradients of every module
            loss = criterion(model(x), y)
            loss.backward()
            dumper.after_backward(loss)  # parameter gradients and the loss
            # with a GradScaler: scaler.unscale_(optimizer); dumper.after_unscale(scaler.get_scale())
        optimizer.step(); optimizer.zero_grad()
        writer.log_loss(step, loss.item())   # every step
    writer.close()

As a script, a self-contained torchvision run on synthetic data (what the tests use):

    python python/dump_torch.py --model resnet18 --out dump_a --steps 0-1 --num-steps 3
    python python/dump_torch.py ... --perturb layer3.0.conv1=1e-2   # test-only: disturb one module
    python python/dump_torch.py ... --inject-nan layer2.0            # test-only: a NaN in one output

Names follow torchvision's module paths ("layer3.2.conv2", block "layer3.2"); records are named
"forward/<path>", "grad_output/<path>", "param_grad/<param>", "loss"; a module called twice in a
step (torchvision's shared ReLU) gets "#1" on its second record, as crosstrain's writer does.
"""
import argparse
import contextlib
import os
import sys

import numpy as np
import torch

from crosstrain._config import parse_int_list
from crosstrain._dumpfile import DumpFile
from crosstrain._record import _disturb, flatten
from crosstrain._stats import dumpable


class DumpWriter(DumpFile):
    """The package's dump writer (crosstrain._dumpfile) with this script's defaults: every record
    written at once, no byte budget, no run.json."""

    def __init__(self, directory, mode="tensors", producer="dump_torch.py", meta=None, overwrite=False):
        if mode not in ("stats", "tensors"):
            raise ValueError(f"unknown dump mode {mode!r} (valid: stats, tensors)")
        super().__init__(directory, mode, producer, meta or {}, overwrite=overwrite, overwrite_option="--overwrite")

    def write_tensor(self, step, name, kind, tensor):
        """A torch tensor or numpy array as record "<kind>/<name>" ("loss", "loss_scale": the kind
        alone); bfloat16 is stored widened to float32 (numpy has no bfloat16)."""
        full = kind if kind in ("loss", "loss_scale") else name if name.startswith(kind + "/") else f"{kind}/{name}"
        return self.write(step, full, kind, tensor)

    write_array = write_tensor


class ModelDumper:
    """Forward outputs and output gradients of every named submodule, via hooks, on chosen steps."""

    def __init__(self, model, writer, steps=""):
        self.model, self.writer = model, writer
        self.selected = parse_int_list(steps, "steps")
        self.current = None
        self._handles = [m.register_forward_hook(self._forward_hook(name))
                         for name, m in model.named_modules() if name]

    def _forward_hook(self, name):
        def hook(module, inputs, output):
            if self.current is None:
                return
            step = self.current
            for label, out in flatten(output, name):  # a tuple's tensors as name[i]
                # Tensors the format cannot hold (int8, complex, sparse) are skipped rather than
                # stopping the user's training run.
                if not dumpable(out):
                    continue
                # Written now: in-place ops later in forward (ReLU(inplace=True)) would change it.
                self.writer.write_tensor(step, label, "forward", out)
                if out.requires_grad:
                    # The gradient flowing into this output. A hook registered before an in-place
                    # op still receives the gradient w.r.t. the value this module produced.
                    out.register_hook(self._grad_hook(step, label))
        return hook

    def _grad_hook(self, step, label):
        def hook(grad):
            self.writer.write_tensor(step, label, "grad_output", grad)  # returns None: grad unchanged
        return hook

    @contextlib.contextmanager
    def step(self, step):
        """Records inside the block belong to `step` (nothing is recorded on unselected steps)."""
        self.current = step if self.selected(step) else None
        try:
            yield self.current is not None
        finally:
            self.current = None

    def _param_grads(self, kind):
        for name, p in self.model.named_parameters():
            if p.grad is not None:
                self.writer.write_tensor(self.current, name, kind, p.grad)

    def after_backward(self, loss):
        """Parameter gradients (scaled, when a GradScaler runs) and the loss; call after backward."""
        if self.current is not None:
            self._param_grads("param_grad")
            self.writer.write_tensor(self.current, "", "loss", loss)

    def after_unscale(self, scale):
        """With a GradScaler: the unscaled gradients and the scale; call after scaler.unscale_(opt)."""
        if self.current is not None:
            self._param_grads("param_grad_unscaled")
            self.writer.write_tensor(self.current, "", "loss_scale", torch.tensor(float(scale)))

    def remove(self):
        for h in self._handles:
            h.remove()


def _disturb_hook(scale):
    """Test-only: change one module's output to prove divergences are found: relative noise of
    scale x mean|output| (the agent's --test-perturb), or with scale None a NaN in its first element."""
    def hook(module, inputs, output):
        if scale is not None:
            return _disturb(torch, output, scale, in_place=False)
        out = output.clone()
        out.view(-1)[0] = float("nan")
        return out
    return hook


def reference_value(k, i, dtype):
    """Element i of check tensor k: the same formula as tests/tools/compare/dump_torch_test.cpp.
    Values are multiples of 1/8 within +-6.25, so every dtype holds them exactly."""
    base = (i * 37 + k * 11) % 101
    if dtype == "bool":
        return base % 3 == 0
    if dtype == "uint8":
        return base
    if dtype in ("int64", "int32"):
        return base - 50
    return (base - 50) / 8.0


REFERENCE_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool")


def write_reference_arrays(directory):
    """A dump of known tensors of every dtype, to check that this script and crosstrain agree."""
    writer = DumpWriter(directory, mode="tensors", meta={"precision": "fp32"}, overwrite=True)
    for k, dtype in enumerate(REFERENCE_DTYPES):
        values = torch.tensor([reference_value(k, i, dtype) for i in range(3 * 5 * 7)])  # exact in every dtype
        writer.write_tensor(0, f"check.{dtype}", "forward", values.to(getattr(torch, dtype)).reshape(3, 5, 7))
    writer.write_tensor(0, "", "loss", torch.tensor(1.25))
    writer.log_loss(0, 1.25)
    writer.log_loss(1, float("nan"))
    writer.close()
    return 0


def run_demo(args):
    import torchvision

    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = getattr(torchvision.models, args.model)(num_classes=args.num_classes)
    if args.weights:
        model.load_state_dict(torch.load(args.weights, map_location="cpu"))
    for spec in args.perturb:
        name, _, scale = spec.partition("=")
        dict(model.named_modules())[name].register_forward_hook(_disturb_hook(float(scale or 1e-2)))
    for name in args.inject_nan:
        dict(model.named_modules())[name].register_forward_hook(_disturb_hook(None))
    writer = DumpWriter(args.out, mode=args.mode, meta={"model": args.model, "precision": args.precision,
                                                        "seed": args.seed, "device": "cpu"},
                        overwrite=args.overwrite)
    dumper = ModelDumper(model, writer, args.steps)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    data = torch.Generator().manual_seed(args.seed + 1)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.precision == "bf16"
                else contextlib.nullcontext())
    fixed = None
    if args.input_npy:  # one batch for every step, as crosstrain's --input-npy reads it
        fixed = (torch.from_numpy(np.load(os.path.join(args.input_npy, "images.npy"))),
                 torch.from_numpy(np.load(os.path.join(args.input_npy, "labels.npy"))))
    model.train()
    for step in range(args.num_steps):
        if fixed is not None:
            x, y = fixed
        else:
            x = torch.randn(args.batch_size, 3, args.image_size, args.image_size, generator=data)
            y = torch.randint(0, args.num_classes, (args.batch_size,), generator=data)
        with dumper.step(step):
            with autocast:
                loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            dumper.after_backward(loss)
        opt.step()
        opt.zero_grad(set_to_none=True)
        writer.log_loss(step, loss.item())
    writer.close()
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="resnet18", help="torchvision.models constructor name")
    p.add_argument("--out", required=True, help="dump directory to create")
    p.add_argument("--mode", default="tensors", choices=["stats", "tensors"])
    p.add_argument("--steps", default="0", help="steps to dump, e.g. 0-2,5 ('' = all)")
    p.add_argument("--num-steps", type=int, default=2, help="training steps to run (all are loss-logged)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"], help="bf16: CPU autocast")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (0 = torch default)")
    p.add_argument("--weights", help="state_dict saved with torch.save(dict(model.state_dict()), path)")
    p.add_argument("--input-npy", metavar="DIR",
                   help="DIR/images.npy (float32 NCHW) and DIR/labels.npy (int64): every step's batch")
    p.add_argument("--perturb", action="append", default=[], metavar="MODULE[=SCALE]",
                   help="test-only: add relative noise to one module's output")
    p.add_argument("--inject-nan", action="append", default=[], metavar="MODULE",
                   help="test-only: put a NaN into one module's output")
    p.add_argument("--overwrite", action="store_true", help="replace an existing dump in --out")
    p.add_argument("--format-check", action="store_true",
                   help="write known tensors of every dtype instead of training (format conformance)")
    args = p.parse_args(argv)
    try:
        parse_int_list(args.steps, "--steps")
        if args.format_check:
            return write_reference_arrays(args.out)
        return run_demo(args)
    except (ValueError, KeyError, RuntimeError, FileExistsError) as e:
        print(f"dump_torch.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

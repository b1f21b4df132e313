#!/usr/bin/env python3
"""Dump a PyTorch (Python) run in crosstrain's dump format (docs/DUMP_FORMAT.md).

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
import json
import math
import os
import re
import shutil
import sys

import numpy as np

from crosstrain._dumpfile import FORMAT_NAME, FORMAT_VERSION, json_number as _json_number
KINDS = ("forward", "grad_output", "param_grad", "param_grad_unscaled", "loss", "loss_scale")
DUMP_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool")
_NUMPY_DTYPES = {
    "float32": np.float32, "float64": np.float64, "float16": np.float16, "int64": np.int64,
    "int32": np.int32, "uint8": np.uint8, "bool": np.bool_,
}


def parse_steps(text):
    """'0-4,10' -> predicate; '' -> every step (same syntax as crosstrain --dump-steps)."""
    if not text:
        return lambda s: True
    ranges = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"bad step list {text!r} (expected e.g. 0-4,10,20-22)")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            raise ValueError(f"bad step range {part!r}")
        ranges.append((lo, hi))
    return lambda s: any(lo <= s <= hi for lo, hi in ranges)


def tensor_stats(arr):
    """max/min/mean/L2 norm over finite elements (float64 accumulation), NaN and Inf counted apart."""
    a = np.asarray(arr)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    if np.issubdtype(a.dtype, np.floating):
        a64 = a.astype(np.float64, copy=False).ravel()
        nan = int(np.isnan(a64).sum())
        inf = int(np.isinf(a64).sum())
        finite = a64[np.isfinite(a64)] if (nan or inf) else a64
    else:
        finite = a.astype(np.float64).ravel()
        nan = inf = 0
    if finite.size == 0:
        mx = mn = mean = norm = None
    else:
        mx, mn = float(finite.max()), float(finite.min())
        mean = float(finite.sum() / finite.size)
        norm = float(math.sqrt(float(np.dot(finite, finite))))
    return {"max": mx, "min": mn, "mean": mean, "norm": norm, "nan_count": nan, "inf_count": inf}


class DumpWriter:
    """Python twin of crosstrain's C++ DumpWriter: same index, loss log and .npy layout."""

    def __init__(self, directory, mode="tensors", producer="dump_torch.py", meta=None, overwrite=False):
        if mode not in ("stats", "tensors"):
            raise ValueError(f"unknown dump mode {mode!r} (valid: stats, tensors)")
        os.makedirs(directory, exist_ok=True)
        index = os.path.join(directory, "index.jsonl")
        if os.path.exists(index):
            if not overwrite:
                raise RuntimeError(f"{directory}: already holds a dump (index.jsonl exists)")
            os.remove(index)
            shutil.rmtree(os.path.join(directory, "tensors"), ignore_errors=True)
        self.dir = directory
        self.mode = mode
        self._seq = 0
        self._names_step = None
        self._names = {}
        self._index = open(index, "w")
        self._loss = open(os.path.join(directory, "loss.jsonl"), "w")
        self._line(self._index, {"format": FORMAT_NAME, "version": FORMAT_VERSION, "mode": mode,
                                 "producer": producer, "meta": meta or {}})

    @staticmethod
    def _line(f, obj):
        f.write(json.dumps(obj, allow_nan=False) + "\n")
        f.flush()

    def _unique(self, step, name):
        if step != self._names_step:
            self._names_step, self._names = step, {}
        n = self._names.get(name, 0)
        self._names[name] = n + 1
        return name if n == 0 else f"{name}#{n}"

    def write_array(self, step, name, kind, arr, dtype=None):
        """arr: numpy array; dtype: the run's dtype name when it differs from arr's (e.g. 'bfloat16')."""
        arr = np.asarray(arr)
        if not arr.flags.c_contiguous:  # (np.ascontiguousarray would turn a 0-d loss into shape (1,))
            arr = arr.copy(order="C")
        stored = next((k for k, v in _NUMPY_DTYPES.items() if arr.dtype == v), None)
        if stored is None:
            raise ValueError(f"unsupported dtype {arr.dtype}")
        full = name if kind in ("loss", "loss_scale") or name.startswith(kind + "/") else f"{kind}/{name}"
        if kind in ("loss", "loss_scale"):
            full = kind
        rec = {"seq": self._seq, "step": int(step), "name": self._unique(step, full), "kind": kind,
               "dtype": dtype or stored, "shape": list(arr.shape), "stats": tensor_stats(arr)}
        if self.mode == "tensors":
            stem = re.sub(r"[^A-Za-z0-9._-]", "_", rec["name"])[:120]
            rel = f"tensors/step{int(step)}/{self._seq:06d}-{stem}.npy"
            os.makedirs(os.path.dirname(os.path.join(self.dir, rel)), exist_ok=True)
            np.save(os.path.join(self.dir, rel), arr, allow_pickle=False)
            rec["file"] = rel
            rec["stored_dtype"] = stored
        self._line(self._index, rec)
        self._seq += 1
        return rec

    def write_tensor(self, step, name, kind, tensor):
        """A torch tensor; bfloat16 is stored widened to float32 (numpy has no bfloat16)."""
        import torch
        t = tensor.detach()
        dtype = str(t.dtype).replace("torch.", "")
        if t.dtype == torch.bfloat16:
            t = t.float()
        return self.write_array(step, name, kind, t.cpu().contiguous().numpy(), dtype=dtype)

    def log_loss(self, step, loss):
        self._line(self._loss, {"step": int(step), "loss": _json_number(float(loss))})

    def close(self):
        for f in (self._index, self._loss):
            if not f.closed:
                f.close()


class ModelDumper:
    """Forward outputs and output gradients of every named submodule, via hooks, on chosen steps."""

    def __init__(self, model, writer, steps=""):
        self.model, self.writer = model, writer
        self.selected = parse_steps(steps)
        self.current = None
        self._handles = [m.register_forward_hook(self._forward_hook(name))
                         for name, m in model.named_modules() if name]

    def _forward_hook(self, name):
        def hook(module, inputs, output):
            if self.current is None:
                return
            step = self.current
            outs = output if isinstance(output, (tuple, list)) else (output,)
            for i, out in enumerate(outs):
                # Non-tensors and dtypes the format has no name for (int8, complex) are skipped
                # rather than stopping the user's training run.
                if not hasattr(out, "detach") or str(out.dtype).replace("torch.", "") not in DUMP_DTYPES:
                    continue
                label = name if len(outs) == 1 else f"{name}[{i}]"
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
            self.writer.write_array(self.current, "", "loss_scale", np.array(float(scale), dtype=np.float32))

    def remove(self):
        for h in self._handles:
            h.remove()


def _disturb_hook(kind, scale, seed):
    """Test-only: change one module's output (relative noise, or a NaN) to prove divergences are found."""
    import torch

    def hook(module, inputs, output):
        out = output.clone()
        if kind == "nan":
            out.view(-1)[0] = float("nan")
        else:
            g = torch.Generator().manual_seed(seed)
            noise = torch.randn(out.shape, generator=g, dtype=torch.float32).to(out.dtype)
            out = out + scale * out.detach().abs().mean() * noise
        return out
    return hook


def reference_value(k, i, dtype):
    """Element i of check tensor k: the same formula as tests/tools/align/dump_torch_test.cpp.
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
    import torch
    writer = DumpWriter(directory, mode="tensors", meta={"precision": "fp32"}, overwrite=True)
    shape = (3, 5, 7)
    n = int(np.prod(shape))
    for k, dtype in enumerate(REFERENCE_DTYPES):
        values = [reference_value(k, i, dtype) for i in range(n)]
        if dtype == "bfloat16":
            t = torch.tensor(values, dtype=torch.float32).reshape(shape).to(torch.bfloat16)
            writer.write_tensor(0, f"check.{dtype}", "forward", t)
        else:
            writer.write_array(0, f"check.{dtype}", "forward", np.array(values, dtype=_NUMPY_DTYPES[dtype]).reshape(shape))
    writer.write_array(0, "", "loss", np.array(1.25, dtype=np.float32))
    writer.log_loss(0, 1.25)
    writer.log_loss(1, float("nan"))
    writer.close()
    return 0


def run_demo(args):
    import torch
    import torchvision

    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = getattr(torchvision.models, args.model)(num_classes=args.num_classes)
    if args.weights:
        model.load_state_dict(torch.load(args.weights, map_location="cpu"))
    for spec in args.perturb:
        name, _, scale = spec.partition("=")
        dict(model.named_modules())[name].register_forward_hook(_disturb_hook("noise", float(scale or 1e-2), 1234))
    for name in args.inject_nan:
        dict(model.named_modules())[name].register_forward_hook(_disturb_hook("nan", 0.0, 0))
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
        parse_steps(args.steps)
        if args.format_check:
            return write_reference_arrays(args.out)
        return run_demo(args)
    except (ValueError, KeyError, RuntimeError) as e:
        print(f"dump_torch.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""What the training scripts here share: the command line of a plain PyTorch training loop and
synthetic data behind a shuffling DataLoader. The scripts seed nothing themselves, as many real
ones do not: `crosstrain run --seed` is what makes two runs the same."""
import argparse
import contextlib

import torch


def parse_args(description, steps=3, batch=4):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch-size", type=int, default=batch)
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", choices=["off", "bf16", "fp16"], default="off", help="autocast (+ GradScaler for fp16)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    return args


def autocast(args):
    if args.amp == "off":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if args.amp == "bf16" else torch.float16
    return torch.autocast(torch.device(args.device).type, dtype=dtype)


def loader(inputs, targets, batch_size):
    data = torch.utils.data.TensorDataset(inputs, targets)
    return torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=True, drop_last=True)


def train(args, model, batches, loss_fn, optimizer):
    """The loop every script runs: forward under autocast, backward through a GradScaler when
    fp16 asks for one, optimizer step; one line per step."""
    scaler = torch.amp.GradScaler(torch.device(args.device).type, enabled=args.amp == "fp16")
    model.to(args.device).train()
    step = 0
    while step < args.steps:
        for x, y in batches:
            x, y = x.to(args.device), y.to(args.device)
            with autocast(args):
                loss = loss_fn(model, x, y)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            print(f"step {step} loss {loss.item()!r}", flush=True)
            step += 1
            if step == args.steps:
                break

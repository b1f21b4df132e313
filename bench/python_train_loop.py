"""The Python eager training loop crosstrain is compared with: the same torchvision model, batch,
precision, optimizer (SGD momentum 0.9, weight decay 1e-4 off for BN/bias), synthetic data and
step count, timed the same way (loss.item() each step; warm-up steps excluded).

usage: python_train_loop.py --model resnet50 --batch-size 8 --image-size 224 --steps 7
       --warmup-steps 2 --precision fp32|bf16|fp16 [--small-stem] [--num-classes N] [--threads N]
Prints one JSON object: throughput_img_s, batch_time_ms_median, first_step_ms, losses.
"""
import argparse
import json
import statistics
import time

import torch
import torchvision


def build_model(name, num_classes, small_stem):
    model = getattr(torchvision.models, name)(num_classes=num_classes)
    if small_stem:
        model.conv1 = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        model.maxpool = torch.nn.Identity()
    return model


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--steps", type=int, default=7)
    p.add_argument("--warmup-steps", type=int, default=2)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--small-stem", action="store_true")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    model = build_model(a.model, a.num_classes, a.small_stem).to(dev).train()
    mf = torch.channels_last if a.channels_last else torch.contiguous_format
    if a.channels_last:
        model = model.to(memory_format=mf)
    decay = [q for q in model.parameters() if q.dim() > 1]
    no_decay = [q for q in model.parameters() if q.dim() <= 1]
    lr = 0.1 * a.batch_size / 256
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 1e-4}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=lr, momentum=0.9)
    gen = torch.Generator().manual_seed(0)
    batches = [(torch.randn(a.batch_size, 3, a.image_size, a.image_size, generator=gen).to(dev, memory_format=mf),
                torch.randint(a.num_classes, (a.batch_size,), generator=gen).to(dev)) for _ in range(2)]
    amp_dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[a.precision]
    scaler = torch.amp.GradScaler(dev.type, enabled=a.precision == "fp16")
    times, losses = [], []
    for step in range(a.steps):
        t0 = time.perf_counter()
        x, y = batches[step % 2]
        with torch.autocast(dev.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if dev.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    measured = times[a.warmup_steps:]
    print(json.dumps({
        "throughput_img_s": a.batch_size * len(measured) / (sum(measured) / 1e3),
        "batch_time_ms_median": statistics.median(measured),
        "first_step_ms": times[0],
        "losses": losses,
    }))


if __name__ == "__main__":
    main()

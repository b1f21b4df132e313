"""A denoising trainer in the shape of diffusers' accelerate scripts: Accelerator with gradient
accumulation (several forwards and backwards per optimizer step), clip_grad_norm_ on the steps
that sync, an LR scheduler, and an exponential moving average of the weights updated after each
optimizer step. A small convolutional denoiser on random images, a few CPU steps.

--plant-factor F scales the output of the middle convolution by F (a change of a copy of the code)."""
import argparse
import copy
import warnings

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--accumulation", type=int, default=2)
p.add_argument("--plant-factor", type=float, default=1.0)
args = p.parse_args()
torch.set_num_threads(1)
warnings.filterwarnings("ignore")


class Denoiser(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.inp = nn.Conv2d(3, width, 3, padding=1)
        self.mid = nn.Sequential(nn.GroupNorm(4, width), nn.SiLU(), nn.Conv2d(width, width, 3, padding=1))
        self.out = nn.Conv2d(width, 3, 3, padding=1)

    def forward(self, x, t):
        h = self.inp(x) * (1 + t.view(-1, 1, 1, 1))
        h = h + self.mid(h) * args.plant_factor  # the planted change scales this line
        return self.out(nn.functional.silu(h))


class EMA:
    def __init__(self, model, decay=0.99):
        self.shadow = copy.deepcopy(model).requires_grad_(False)
        self.decay = decay

    @torch.no_grad()
    def step(self, model):
        for s, p in zip(self.shadow.parameters(), model.parameters()):
            s.mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)


set_seed(0)
accelerator = Accelerator(gradient_accumulation_steps=args.accumulation, cpu=True)
model = Denoiser()
ema = EMA(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 2))
g = torch.Generator().manual_seed(0)
images = torch.randn(args.steps * args.accumulation * 4, 3, 16, 16, generator=g)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images), batch_size=4)
model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

step = 0
for (clean,) in loader:
    with accelerator.accumulate(model):
        noise = torch.randn_like(clean)
        t = torch.rand(clean.shape[0])
        noisy = clean + t.view(-1, 1, 1, 1) * noise
        loss = nn.functional.mse_loss(model(noisy, t), noise)
        accelerator.backward(loss)
        if accelerator.sync_gradients:
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    if accelerator.sync_gradients:
        ema.step(accelerator.unwrap_model(model))
        step += 1
print(f"trained {step} steps", flush=True)

"""A Hugging Face transformers GPT-2 (built from a small config, no download) trained as a language
model with AdamW and an exponential moving average of its weights updated by torch._foreach_lerp_:
the clean loop."""
import argparse
import copy

import torch
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--device", default="cpu")
args = p.parse_args()
torch.set_num_threads(1)

model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=64, n_embd=32, n_layer=4, n_head=4)).to(args.device)
ema = copy.deepcopy(model).requires_grad_(False)
tokens = torch.randint(0, 256, (64, 32))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens), batch_size=8, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
ema_params, params = list(ema.parameters()), list(model.parameters())

step = 0
while step < args.steps:
    for (x,) in loader:
        x = x.to(args.device)
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(ema_params, params, 0.01)
        step += 1
        if step == args.steps:
            break
print(f"trained {step} steps, last loss {loss.item():.4f}")

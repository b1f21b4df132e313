"""train_gpt2.py with one problem planted: the moving average of the weights is updated by a Python
loop over the parameters, two tiny operators per parameter, instead of one foreach call."""
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
            for e, w in zip(ema_params, params):
                e.mul_(0.99).add_(w, alpha=0.01)  # planted: a Python loop of tiny operators
        step += 1
        if step == args.steps:
            break
print(f"trained {step} steps, last loss {loss.item():.4f}")

"""train_vit.py with one problem planted: the loss is read on the host every step (`loss.item()`),
which on an accelerator waits for all of the step's work."""
import argparse

import timm
import torch

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--device", default="cpu")
args = p.parse_args()
torch.set_num_threads(1)

model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, depth=4, num_classes=10)
model.to(args.device)
images, labels = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=16, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)

step = 0
while step < args.steps:
    for x, y in loader:
        x, y = x.to(args.device), y.to(args.device)
        loss = torch.nn.functional.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")  # planted: a host read every step
        step += 1
        if step == args.steps:
            break
print(f"trained {step} steps, last loss {loss.item():.4f}")

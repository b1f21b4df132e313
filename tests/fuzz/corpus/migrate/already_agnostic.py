# corpus: launch=python expect=unchanged
"""Written the torch.accelerator way already: migrate must leave every byte as it is."""
import torch
import torch.nn as nn

device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
use_amp = device.type == "cuda"
for _ in range(3):
    with torch.autocast(device_type=device.type, enabled=use_amp):
        loss = model(torch.randn(8, 4, device=device)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
if device.type == "cuda":
    torch.cuda.synchronize()
print("corpus-ok")

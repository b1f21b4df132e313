# corpus: launch=python expect=runs expect-device-agnostic=refused:torch.cuda
"""nanoGPT style: a device string, a device_type derived from it, a context for autocast."""
from contextlib import nullcontext

import torch
import torch.nn as nn

device = "cuda"
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
torch.backends.cuda.matmul.allow_tf32 = True


def get_batch():
    x = torch.randint(0, 16, (4, 8))
    y = torch.randint(0, 16, (4, 8))
    if device_type == "cuda":
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    else:
        x, y = x.to(device), y.to(device)
    return x, y


model = nn.Sequential(nn.Embedding(16, 8), nn.Linear(8, 16)).to(device)
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(3):
    X, Y = get_batch()
    with ctx:
        logits = model(X)
        loss = nn.functional.cross_entropy(logits.view(-1, 16), Y.view(-1))
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
print("corpus-ok")

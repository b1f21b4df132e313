# corpus: launch=python expect=runs
"""Old-style PyTorch (0.3/0.4 era): the default tensor type set to CUDA's, data cast with .type()."""
import numpy as np
import torch
import torch.nn as nn

torch.set_default_tensor_type("torch.cuda.FloatTensor")
torch.manual_seed(0)
rng = np.random.RandomState(0)
data = rng.randn(256, 8)
features = torch.from_numpy(data).type("torch.cuda.FloatTensor")
targets = torch.from_numpy((data @ rng.randn(8, 3)).argmax(axis=1)).type(torch.cuda.LongTensor)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
first = None
for epoch in range(3):
    for i in range(0, 256, 32):
        x, y = features[i:i + 32], targets[i:i + 32]
        noise = torch.randn(x.shape) * 0.01  # made on the default device
        loss = nn.functional.cross_entropy(model(x + noise), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
    print(f"epoch {epoch} loss {loss.item():.4f}")
assert x.dtype == torch.float32 and y.dtype == torch.int64
assert noise.device == x.device == next(model.parameters()).device
scores = model(features[:4]).type(torch.cuda.DoubleTensor)
assert scores.dtype == torch.float64 and last < first, (first, last)
print("corpus-ok")

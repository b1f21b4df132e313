# corpus: launch=python expect=runs
"""Memory and device reports at the end of each epoch, the way training scripts print them."""
import logging

import torch
import torch.nn as nn

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("train")
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(16, 10).cuda(), torch.randint(0, 2, (16,)).cuda()) for _ in range(8)]
log.info(f"training on {torch.cuda.get_device_name(0)}")
for epoch in range(2):
    torch.cuda.reset_peak_memory_stats()
    for x, y in data:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(torch.cuda.memory_summary())
    print("peak MiB", torch.cuda.max_memory_allocated() / 2**20, "free/total", torch.cuda.mem_get_info())
    log.info("epoch %d done, %s", epoch, str(torch.cuda.get_device_properties(0)))
print("corpus-ok")

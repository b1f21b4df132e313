# corpus: launch=python expect=refused:event-timing
"""Benchmark loop timed with CUDA events: CPU events cannot time, so migration refuses it."""
import torch

model = torch.nn.Linear(64, 64).cuda()
x = torch.randn(32, 64).cuda()
start = torch.cuda.Event(enable_timing=True)
end = torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(3):
    model(x)
end.record()
torch.cuda.synchronize()
print("ms", start.elapsed_time(end))
print("corpus-ok")

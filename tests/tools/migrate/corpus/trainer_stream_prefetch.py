# corpus: launch=python expect=runs
"""A trainer class that keeps its GPU index on self, a side-stream batch prefetcher, a GradScaler
type annotation and a checkpoint reloaded through a map_location lambda."""
import os
import tempfile
from typing import Optional

import torch
import torch.nn as nn


class Prefetcher:
    """Copies the next batch on a side stream while the current one is used."""

    def __init__(self, batches):
        self.batches = iter(batches)
        self.stream = torch.cuda.Stream()
        self.preload()

    def preload(self):
        try:
            self.inputs, self.targets = next(self.batches)
        except StopIteration:
            self.inputs = None
            return
        with torch.cuda.stream(self.stream):
            self.inputs = self.inputs.cuda(non_blocking=True)
            self.targets = self.targets.cuda(non_blocking=True)

    def next(self):
        torch.cuda.current_stream().wait_stream(self.stream)
        inputs, targets = self.inputs, self.targets
        if inputs is not None:
            self.preload()
        return inputs, targets


class Trainer:
    def __init__(self, model, gpu_id, scaler: Optional[torch.cuda.amp.GradScaler] = None):
        self.gpu_id = gpu_id
        self.model = model.to(gpu_id)
        self.scaler = scaler
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)

    def step(self, inputs, targets):
        loss = nn.functional.cross_entropy(self.model(inputs), targets)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()

    def save(self, path):
        torch.save({"model": self.model.state_dict()}, path)


def main():
    batches = [(torch.randn(8, 6), torch.randint(0, 3, (8,))) for _ in range(4)]
    trainer = Trainer(nn.Linear(6, 3), 0)
    prefetcher = Prefetcher(batches)
    inputs, targets = prefetcher.next()
    while inputs is not None:
        trainer.step(inputs, targets)
        inputs, targets = prefetcher.next()
    path = os.path.join(tempfile.mkdtemp(), "trainer.pt")
    trainer.save(path)
    state = torch.load(path, map_location=lambda storage, loc: storage.cuda(trainer.gpu_id))
    trainer.model.load_state_dict(state["model"])


if __name__ == "__main__":
    main()
    print("corpus-ok")

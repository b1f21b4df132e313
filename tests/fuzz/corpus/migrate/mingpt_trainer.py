# corpus: launch=python expect=runs expect-device-agnostic=refused:torch.cuda.current_device
"""minGPT's Trainer: 'cpu' unless CUDA is there, then the current CUDA device index."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, dataset):
        self.device = "cpu"
        if torch.cuda.is_available():
            self.device = torch.cuda.current_device()
        self.model = model.to(self.device)
        self.dataset = dataset
        print("running on device", self.device)

    def run(self, steps):
        loader = DataLoader(self.dataset, batch_size=4, shuffle=True, pin_memory=True)
        opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        for step, (x, y) in enumerate(loader):
            x, y = x.to(self.device), y.to(self.device)
            loss = nn.functional.mse_loss(self.model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if step + 1 == steps:
                break


if __name__ == "__main__":
    Trainer(nn.Linear(3, 1), TensorDataset(torch.randn(16, 3), torch.randn(16, 1))).run(3)
    print("corpus-ok")

# corpus: launch=python expect=runs expect-device-agnostic=refused:cuda-branch-cpu-tensors
"""PyTorch-GAN UNIT style: the tensor type follows x.is_cuda, CPU tensors otherwise."""
import numpy as np
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 4)

    def reparameterization(self, mu):
        Tensor = torch.cuda.FloatTensor if mu.is_cuda else torch.FloatTensor
        z = torch.autograd.Variable(Tensor(np.random.normal(0, 1, mu.shape)))
        return z + mu

    def forward(self, x):
        mu = self.net(x)
        return mu, self.reparameterization(mu)


cuda = torch.cuda.is_available()
enc = Encoder()
if cuda:
    enc = enc.cuda()
opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
for _ in range(3):
    x = torch.randn(4, 8)
    if cuda:
        x = x.cuda()
    mu, z = enc(x)
    loss = (z ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("corpus-ok")

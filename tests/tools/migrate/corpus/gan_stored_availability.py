# corpus: launch=python expect=runs expect-device-agnostic=refused:torch.cuda
"""PyTorch-GAN style: availability kept in a variable, legacy tensor types chosen by it."""
import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

cuda = True if torch.cuda.is_available() else False

generator = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
discriminator = nn.Sequential(nn.Linear(16, 1), nn.Sigmoid())
adversarial_loss = torch.nn.BCELoss()
if cuda:
    generator.cuda()
    discriminator.cuda()
    adversarial_loss.cuda()
optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4)
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4)
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor

for _ in range(3):
    imgs = torch.randn(4, 16)
    valid = Variable(Tensor(imgs.size(0), 1).fill_(1.0), requires_grad=False)
    fake = Variable(Tensor(imgs.size(0), 1).fill_(0.0), requires_grad=False)
    real_imgs = Variable(imgs.type(Tensor))
    optimizer_G.zero_grad()
    z = Variable(Tensor(np.random.normal(0, 1, (imgs.shape[0], 8))))
    gen_imgs = generator(z)
    g_loss = adversarial_loss(discriminator(gen_imgs), valid)
    g_loss.backward()
    optimizer_G.step()
    optimizer_D.zero_grad()
    d_loss = (adversarial_loss(discriminator(real_imgs), valid) + adversarial_loss(discriminator(gen_imgs.detach()), fake)) / 2
    d_loss.backward()
    optimizer_D.step()
print("corpus-ok")

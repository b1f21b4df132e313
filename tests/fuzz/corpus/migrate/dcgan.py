# corpus: launch=python expect=runs
"""DCGAN style: ngpu, a device from availability, DataParallel only for several CUDA GPUs."""
import torch
import torch.nn as nn

ngpu = 1
nz = 8
device = torch.device("cuda:0" if (torch.cuda.is_available() and ngpu > 0) else "cpu")


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.ConvTranspose2d(nz, 4, 4, 1, 0, bias=False), nn.Tanh())

    def forward(self, x):
        return self.main(x)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(4, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1)


netG = Generator().to(device)
netD = Discriminator().to(device)
if (device.type == "cuda") and (ngpu > 1):
    netG = nn.DataParallel(netG, list(range(ngpu)))
    netD = nn.DataParallel(netD, list(range(ngpu)))
criterion = nn.BCELoss()
fixed_noise = torch.randn(4, nz, 1, 1, device=device)
optD = torch.optim.Adam(netD.parameters(), lr=2e-4)
optG = torch.optim.Adam(netG.parameters(), lr=2e-4)
for _ in range(3):
    real = torch.randn(4, 4, 4, 4, device=device)
    ones = torch.full((4,), 1.0, dtype=torch.float, device=device)
    zeros = torch.zeros(4, device=device)
    netD.zero_grad()
    errD = criterion(netD(real), ones) + criterion(netD(netG(fixed_noise).detach()), zeros)
    errD.backward()
    optD.step()
    netG.zero_grad()
    errG = criterion(netD(netG(fixed_noise)), ones)
    errG.backward()
    optG.step()
print("corpus-ok")

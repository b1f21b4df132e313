import torch
x = torch.randn(3).cuda()
if torch.cuda.is_available():
    y = x.to("cuda:0")

import torch
d = torch.device(f"cuda:{rank}")
t = torch.zeros(2, device="cuda")

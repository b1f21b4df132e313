import torch
ÿþ x = 1

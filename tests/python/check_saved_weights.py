"""Loads a state dict written by crosstrain --save-weights into torchvision and checks it.

usage: check_saved_weights.py WEIGHTS MODEL NUM_CLASSES
Exits 0 when torch.load (weights_only) reads it and load_state_dict(strict=True) accepts it.
"""
import sys

import torch
import torchvision

state = torch.load(sys.argv[1], weights_only=True)
model = getattr(torchvision.models, sys.argv[2])(num_classes=int(sys.argv[3]))
model.load_state_dict(state, strict=True)
total = sum(float(v.float().abs().sum()) for v in state.values())
print(f"ok {len(state)} tensors, abs-sum {total:.6f}")

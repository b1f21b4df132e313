"""Writes a torchvision ResNet's weights, an input batch and its eval-mode logits for C++ tests.

usage: torchvision_reference.py OUT_DIR MODEL NUM_CLASSES IMAGE_SIZE
Files: OUT_DIR/weights.pt (torch.save(model.state_dict()): an OrderedDict with _metadata), OUT_DIR/io.pt ({"x", "y"}),
OUT_DIR/keys.txt (state-dict keys in order, one per line).
"""
import os
import sys

import torch
import torchvision


def main():
    out, name, num_classes, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1234)
    model = getattr(torchvision.models, name)(num_classes=num_classes)
    # Non-trivial BN statistics and affine parameters, so eval mode exercises them.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    model.eval()
    x = torch.randn(2, 3, size, size)
    with torch.no_grad():
        y = model(x)
    torch.save(model.state_dict(), os.path.join(out, "weights.pt"))
    torch.save({"x": x, "y": y}, os.path.join(out, "io.pt"))
    with open(os.path.join(out, "keys.txt"), "w") as f:
        for k, v in model.state_dict().items():
            f.write(f"{k} {'x'.join(str(d) for d in v.shape) or 'scalar'}\n")


if __name__ == "__main__":
    main()

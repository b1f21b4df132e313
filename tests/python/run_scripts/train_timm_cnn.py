"""A timm CNN (resnet10t: BatchNorm, ReLU, pooling) trained with SGD, momentum and nesterov."""
import timm
import torch

from common import loader, parse_args, train

args = parse_args(__doc__)
model = timm.create_model("resnet10t", pretrained=False, num_classes=10)
images, labels = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
opt = torch.optim.SGD(model.parameters(), lr=args.lr * 10, momentum=0.9, nesterov=True, weight_decay=1e-4)
train(args, model, loader(images, labels, args.batch_size),
      lambda m, x, y: torch.nn.functional.cross_entropy(m(x), y), opt)

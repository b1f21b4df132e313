"""A torchvision segmentation model (LR-ASPP on MobileNetV3, no pretrained weights) trained with
per-pixel cross-entropy on 64x64 images."""
import torch
import torchvision

from common import loader, parse_args, train

args = parse_args(__doc__, batch=2)
model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=4)
images, masks = torch.randn(8, 3, 64, 64), torch.randint(0, 4, (8, 64, 64))
opt = torch.optim.SGD(model.parameters(), lr=args.lr * 10, momentum=0.9)
train(args, model, loader(images, masks, args.batch_size),
      lambda m, x, y: torch.nn.functional.cross_entropy(m(x)["out"], y), opt)

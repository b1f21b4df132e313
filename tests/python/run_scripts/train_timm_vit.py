"""A timm Vision Transformer (vit_tiny, two blocks, 32x32 images) trained with AdamW."""
import timm
import torch

from common import loader, parse_args, train

args = parse_args(__doc__)
model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, depth=2,
                          num_classes=10, drop_rate=0.1)
images, labels = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
train(args, model, loader(images, labels, args.batch_size),
      lambda m, x, y: torch.nn.functional.cross_entropy(m(x), y, label_smoothing=0.1), opt)

"""torchvision's ResNet-18 trained on an ImageFolder of JPEGs (ROOT/train, as `crosstrain
make-imagefolder` writes it), decoded and augmented by DataLoader worker processes: the clean loop
the profiling tests compare against (no host read in the step, workers kept between epochs)."""
import argparse

import torch
import torchvision
from torchvision import transforms

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("root")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--device", default="cpu")
args = p.parse_args()
torch.set_num_threads(1)

augment = transforms.Compose([transforms.RandomResizedCrop(48), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                              transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
data = torchvision.datasets.ImageFolder(f"{args.root}/train", augment)
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True, drop_last=True, num_workers=2,
                                     persistent_workers=True, pin_memory=args.device.startswith("cuda"))
model = torchvision.models.resnet18(num_classes=len(data.classes)).to(args.device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

step = 0
while step < args.steps:
    for images, labels in loader:
        images, labels = images.to(args.device, non_blocking=True), labels.to(args.device, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step == args.steps:
            break
print(f"trained {step} steps, last loss {loss.item():.4f}")

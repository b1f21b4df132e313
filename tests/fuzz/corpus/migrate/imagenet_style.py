# corpus: launch=python expect=runs
"""ImageNet-example style: argparse flags, DataParallel or one GPU, cudnn, checkpoint reload."""
import argparse
import os
import tempfile

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", default=None, type=int)
parser.add_argument("--dist-backend", default="nccl", type=str)
parser.add_argument("--steps", default=3, type=int)


def main():
    args = parser.parse_args()
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5))
    if not torch.cuda.is_available():
        print("using CPU, this will be slow")
    if args.gpu is not None:
        torch.cuda.set_device(args.gpu)
        model = model.cuda(args.gpu)
    else:
        model = torch.nn.DataParallel(model).cuda()
    criterion = nn.CrossEntropyLoss().cuda(args.gpu)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    cudnn.benchmark = True
    for _ in range(args.steps):
        images = torch.randn(8, 3, 16, 16)
        target = torch.randint(0, 5, (8,))
        if args.gpu is not None:
            images = images.cuda(args.gpu, non_blocking=True)
        target = target.cuda(args.gpu, non_blocking=True)
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    path = os.path.join(tempfile.mkdtemp(), "checkpoint.pth.tar")
    torch.save({"state_dict": model.state_dict()}, path)
    if args.gpu is None:
        checkpoint = torch.load(path)
    else:
        loc = "cuda:{}".format(args.gpu)
        checkpoint = torch.load(path, map_location=loc)
    model.load_state_dict(checkpoint["state_dict"])
    print("backend", args.dist_backend, "loss", float(loss))
    print("corpus-ok")


if __name__ == "__main__":
    main()

"""torchvision reference outputs for tests/core/data/transform_test.cpp.

usage: torchvision_reference.py JOBS   (one job per line; torch is imported once for all)
  crop   IMAGE W H C TOP LEFT CH CW SIZE FLIP OUT   (RandomResizedCrop geometry)
  eval   IMAGE W H C RESIZE SIZE OUT                 (Resize + CenterCrop)
  params H W SCALE_MIN SCALE_MAX RATIO_MIN RATIO_MAX OUT (get_params; "top left h w" into OUT)
IMAGE is raw HWC uint8, or a JPEG/PNG file when W H C are 0 0 0 (decoded by PIL).
Writes OUT.pil.u8 (CHW uint8 via PIL), OUT.pil.f32 (to_tensor + ImageNet normalize of that, CHW
float32) and OUT.tensor.u8 (the same geometry on a uint8 tensor, antialias=True). Gray images
are expanded to 3 channels after the resize.
"""
import sys

import numpy as np
import torch
from PIL import Image
from torchvision.transforms import functional as F1
from torchvision.transforms.v2 import functional as F2

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def load(path, w, h, c):
    if w == 0:
        img = Image.open(path)
        img.load()
        arr = np.asarray(img)
        return img, arr
    arr = np.fromfile(path, dtype=np.uint8).reshape(h, w, c) if c == 3 else np.fromfile(path, dtype=np.uint8).reshape(h, w)
    return Image.fromarray(arr, "RGB" if c == 3 else "L"), arr


def to_chw3(t):
    return t.expand(3, -1, -1) if t.shape[0] == 1 else t


def write(out, pil_img, tensor_u8):
    t = F1.pil_to_tensor(pil_img)
    to_chw3(t).contiguous().numpy().astype(np.uint8).tofile(out + ".pil.u8")
    f = F1.normalize(to_chw3(F1.to_tensor(pil_img)), MEAN, STD)
    f.contiguous().numpy().astype(np.float32).tofile(out + ".pil.f32")
    to_chw3(tensor_u8).contiguous().numpy().astype(np.uint8).tofile(out + ".tensor.u8")


def as_tensor(arr):
    t = torch.from_numpy(np.array(arr, copy=True))
    return t.unsqueeze(0) if t.ndim == 2 else t.permute(2, 0, 1).contiguous()


def run(argv):
    mode = argv[1]
    if mode == "params":
        h, w = int(argv[2]), int(argv[3])
        smin, smax, rmin, rmax = map(float, argv[4:8])
        from torchvision.transforms import RandomResizedCrop
        top, left, ch, cw = RandomResizedCrop.get_params(torch.zeros(1, h, w), [smin, smax], [rmin, rmax])
        with open(argv[8], "w") as f:
            f.write(f"{top} {left} {ch} {cw}\n")
        return
    path, w, h, c = argv[2], int(argv[3]), int(argv[4]), int(argv[5])
    img, arr = load(path, w, h, c)
    bil = F1.InterpolationMode.BILINEAR
    if mode == "crop":
        top, left, ch, cw, size, flip = map(int, argv[6:12])
        out = argv[12]
        p = F1.resized_crop(img, top, left, ch, cw, [size, size], bil)
        t = F2.resized_crop(as_tensor(arr), top, left, ch, cw, [size, size], bil, antialias=True)
        if flip:
            p = F1.hflip(p)
            t = F2.horizontal_flip(t)
    else:
        resize, size = int(argv[6]), int(argv[7])
        out = argv[8]
        p = F1.center_crop(F1.resize(img, resize, bil), [size, size])
        t = F2.center_crop(F2.resize(as_tensor(arr), [resize], bil, antialias=True), [size, size])
    write(out, p, t)


def main():
    with open(sys.argv[1]) as f:
        for line in f:
            if line.strip():
                run([sys.argv[0]] + line.split())


if __name__ == "__main__":
    main()

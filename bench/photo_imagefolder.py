"""An ImageFolder of photographs for bench/input_pipeline.sh: JPEGs of real photographic content, whose
entropy (and so the decoder's share of the work) is that of the images users train on, unlike the
smooth synthetic images of `crosstrain make-imagefolder`.

Each image is a random crop (10-100% of the area, aspect 3/4 to 4/3) of one of the source photographs
given, resized to --size with Lanczos, flipped at random and saved as baseline JPEG at --quality
(4:2:0, PIL's defaults; --progressive: progressive JPEG, as many photographs on the web are), ten
classes of --train images in all plus --val. The same seed gives the same folder.

usage: photo_imagefolder.py SOURCES_DIR OUT [--train N] [--val N] [--size WxH] [--quality Q] [--seed S]
                           [--progressive]
Source photographs: any PNG or JPEG files, e.g. the photographs in scikit-image's wheel
(skimage/data: astronaut, chelsea, coffee, motorcycle_*, rocket, retina, hubble_deep_field) or a
wallpaper package's (Debian's ukui-wallpapers).
"""
import argparse
import pathlib
import random

from PIL import Image


def crop_box(rng, w, h, aspect):
    for _ in range(20):
        area = rng.uniform(0.1, 1.0) * w * h
        a = aspect * rng.uniform(0.75, 4 / 3)
        cw, ch = int(round((area * a) ** 0.5)), int(round((area / a) ** 0.5))
        if 0 < cw <= w and 0 < ch <= h:
            x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
            return x, y, x + cw, y + ch
    return 0, 0, w, h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sources")
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--val", type=int, default=200)
    ap.add_argument("--size", default="500x375")
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--progressive", action="store_true")
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    sources = sorted(p for p in pathlib.Path(a.sources).iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
    if not sources:
        raise SystemExit(f"no PNG or JPEG files in {a.sources}")
    photos = [Image.open(p).convert("RGB") for p in sources]
    rng = random.Random(a.seed)
    out = pathlib.Path(a.out)
    total = 0
    for split, count in (("train", a.train), ("val", a.val)):
        for i in range(count):
            cls = out / split / f"class{i % 10}"
            cls.mkdir(parents=True, exist_ok=True)
            src = photos[rng.randrange(len(photos))]
            img = src.crop(crop_box(rng, *src.size, w / h)).resize((w, h), Image.LANCZOS)
            if rng.random() < 0.5:
                img = img.transpose(Image.FLIP_LEFT_RIGHT)
            path = cls / f"{i:06d}.jpg"
            img.save(path, quality=a.quality, progressive=a.progressive)
            total += path.stat().st_size
    (out / "complete").touch()  # bench/input_pipeline.sh: the folder is whole, use it as it is
    kind = "progressive" if a.progressive else "baseline"
    print(f"wrote {a.train} train + {a.val} val {kind} photo JPEGs ({w}x{h}, q{a.quality}, {total / 2**20:.1f} MiB) "
          f"from {len(photos)} sources to {out}")


if __name__ == "__main__":
    main()

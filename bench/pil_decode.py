"""Decode-only reference for bench/input_pipeline.sh: PIL (the decoder torchvision's ImageFolder
uses) opening and decoding JPEGs to RGB on one thread, nothing else done with the pixels.

usage: pil_decode.py DIR [--images N]      prints one JSON object
"""
import argparse
import json
import os
import pathlib
import time

from PIL import Image


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--images", type=int, default=1500)
    a = ap.parse_args()
    paths = sorted(p for p in pathlib.Path(a.dir).rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))[: a.images]
    if not paths:
        raise SystemExit(f"no JPEG files under {a.dir}")
    Image.open(paths[0]).convert("RGB")  # warm-up
    cpu0, t0 = time.process_time(), time.perf_counter()
    for i in range(a.images):
        with open(paths[i % len(paths)], "rb") as f:
            Image.open(f).convert("RGB")
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    print(json.dumps({"images": a.images, "seconds": wall, "cpu_seconds": cpu, "images_per_s": a.images / wall,
                      "images_per_cpu_s": a.images / cpu}))


if __name__ == "__main__":
    main()

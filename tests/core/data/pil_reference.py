"""PIL's view of images that decoders disagree on: writes PNGs of every colour type and bit depth
(with alpha and tRNS transparency), CMYK JPEGs (Adobe, as PIL writes them), progressive JPEGs and,
for every image, PIL's Image.open(f).convert("RGB") as raw bytes next to it (NAME.rgb) -- what
torchvision's ImageFolder loader feeds a model.

usage: pil_reference.py OUT_DIR"""
import struct
import sys
import zlib
from pathlib import Path

import warnings

import numpy as np
from PIL import Image


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(path, width, height, bit_depth, color_type, rows, extra=b""):
    """A PNG from raw scanlines (bytes per row, already packed); `extra` chunks go before IDAT."""
    raw = b"".join(b"\x00" + r for r in rows)
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    Path(path).write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", zlib.compress(raw)) +
                          chunk(b"IEND", b""))


def png_adam7(path, pixels, bit_depth, color_type):
    """An interlaced PNG of `pixels` (H x W x C array, big-endian samples for 16 bits)."""
    h, w = pixels.shape[:2]
    raw = b""
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
        sub = pixels[y0::dy, x0::dx]
        if sub.shape[0] and sub.shape[1]:
            raw += b"".join(b"\x00" + r.tobytes() for r in sub)
    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 1)
    Path(path).write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) +
                          chunk(b"IEND", b""))


def main(out):
    warnings.simplefilter("ignore")  # PIL on palette transparency: irrelevant to the RGB result
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    w, h = 7, 5
    gray16 = np.array([0, 1, 255, 256, 1000, 32768, 65535] * h, dtype=">u2").reshape(h, w)
    png(out / "gray16.png", w, h, 16, 0, [r.tobytes() for r in gray16])
    png(out / "gray16_trns.png", w, h, 16, 0, [r.tobytes() for r in gray16], chunk(b"tRNS", struct.pack(">H", 1000)))
    ga16 = rng.integers(0, 65536, size=(h, w, 2), dtype=np.uint16).astype(">u2")
    ga16[..., 1] = 0  # fully transparent
    png(out / "gray_alpha16.png", w, h, 16, 4, [r.tobytes() for r in ga16])
    ga8 = rng.integers(0, 256, size=(h, w, 2), dtype=np.uint8)
    ga8[..., 1] = 0
    png(out / "gray_alpha8.png", w, h, 8, 4, [r.tobytes() for r in ga8])
    rgba8 = rng.integers(0, 256, size=(h, w, 4), dtype=np.uint8)
    rgba8[..., 3] = np.arange(w * h).reshape(h, w) % 3 * 60  # transparent and half-transparent pixels
    png(out / "rgba8.png", w, h, 8, 6, [r.tobytes() for r in rgba8])
    rgba16 = rng.integers(0, 65536, size=(h, w, 4), dtype=np.uint16).astype(">u2")
    rgba16[..., 3] = 0
    png(out / "rgba16.png", w, h, 16, 6, [r.tobytes() for r in rgba16])
    rgb16 = rng.integers(0, 65536, size=(h, w, 3), dtype=np.uint16).astype(">u2")
    png(out / "rgb16.png", w, h, 16, 2, [r.tobytes() for r in rgb16])
    big16 = rng.integers(0, 65536, size=(11, 13, 3), dtype=np.uint16).astype(">u2")
    png_adam7(out / "rgb16_interlaced.png", big16, 16, 2)
    rgba8_big = rng.integers(0, 256, size=(11, 13, 4), dtype=np.uint8)
    rgba8_big[..., 3] = 0
    png_adam7(out / "rgba8_interlaced.png", rgba8_big, 8, 6)
    png_adam7(out / "rgb8_interlaced.png", rgba8_big[..., :3].copy(), 8, 2)
    rgb8 = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    png(out / "rgb8_trns.png", w, h, 8, 2, [r.tobytes() for r in rgb8],
        chunk(b"tRNS", rgb8[0, 0].astype(">u2").tobytes()) + chunk(b"gAMA", struct.pack(">I", 100000)))
    palette = rng.integers(0, 256, size=(16, 3), dtype=np.uint8)
    idx = rng.integers(0, 16, size=(h, w), dtype=np.uint8)
    png(out / "palette_trns.png", w, h, 8, 3, [r.tobytes() for r in idx],
        chunk(b"PLTE", palette.tobytes()) + chunk(b"tRNS", bytes([0, 128] + [255] * 14)))
    for depth in (1, 2, 4):
        vals = rng.integers(0, 1 << depth, size=(h, w), dtype=np.uint8)
        rows = []
        for r in vals:
            bits = "".join(format(int(v), "0%db" % depth) for v in r)
            bits += "0" * (-len(bits) % 8)
            rows.append(int(bits, 2).to_bytes(len(bits) // 8, "big"))
        png(out / ("gray%d.png" % depth), w, h, depth, 0, rows)
    cmyk = Image.fromarray(rng.integers(0, 256, size=(24, 32, 4), dtype=np.uint8), mode="CMYK")
    cmyk.save(out / "cmyk_adobe.jpg", quality=95)
    cmyk.save(out / "progressive_cmyk.jpg", quality=90, progressive=True)
    # Progressive JPEGs as photographs are saved (PIL's encoder, fitted tables, every chroma
    # subsampling, odd sizes): the baseline rewrite must decode to the same pixels.
    smooth = np.clip(np.add.outer(np.arange(37) * 5, np.arange(53) * 3)[..., None] + rng.integers(0, 40, size=(37, 53, 3)),
                     0, 255).astype(np.uint8)
    for sub, name in ((0, "444"), (1, "422"), (2, "420")):
        Image.fromarray(smooth).save(out / ("progressive_%s.jpg" % name), quality=88, progressive=True, optimize=True,
                                     subsampling=sub)
    Image.fromarray(smooth[..., 0]).save(out / "progressive_gray.jpg", quality=75, progressive=True)
    for f in sorted(out.iterdir()):
        if f.suffix in (".png", ".jpg"):
            Path(str(f) + ".rgb").write_bytes(np.asarray(Image.open(f).convert("RGB")).tobytes())
            print(f.name, Image.open(f).mode)


if __name__ == "__main__":
    main(sys.argv[1])

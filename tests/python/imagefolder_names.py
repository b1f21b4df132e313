#!/usr/bin/env python3
"""An ImageFolder tree whose class folder names sort differently by bytes and by Python's rules,
and the class order torchvision's ImageFolder gives it.

usage: imagefolder_names.py ROOT

Writes ROOT/<class>/x.jpg (a 4x4 JPEG) for class folders named by these bytes: ASCII ('Zebra',
'a'), valid UTF-8 of 2, 3 and 4 bytes ('été', U+E000, U+FF21 'Ａ', U+1F600) and bytes that are not
UTF-8 (0xff, a lone 0x80, Latin-1 'caf\\xe9', an encoded surrogate 0xed 0xa0 0x80, a cut 3-byte
sequence). Python names these with surrogateescape (an undecodable byte b is U+DC00 + b) and
sorts by code point, so 0xff (U+DCFF) comes before U+E000 and U+FF21, which byte order puts after.
Prints torchvision's ImageFolder(ROOT).classes, one per line, as the hex of the folder's bytes.
"""
import os
import sys

from PIL import Image
import torchvision

NAMES = [b"Zebra", b"a", "\u00e9t\u00e9".encode(), "\ue000p".encode(), "\uff21wide".encode(),
         "\U0001f600".encode(), b"\xff_cls", b"\x80x", b"caf\xe9", b"\xed\xa0\x80s", b"\xe2\x82y"]


def main():
    root = os.fsencode(sys.argv[1])
    for name in NAMES:
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        Image.new("RGB", (4, 4), (10, 20, 30)).save(os.fsdecode(os.path.join(d, b"x.jpg")), quality=90)
    ds = torchvision.datasets.ImageFolder(os.fsdecode(root))
    assert [ds.class_to_idx[c] for c in ds.classes] == list(range(len(NAMES)))
    for c in ds.classes:
        print(os.fsencode(c).hex())


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes two tensors-mode dumps of float32 data for the compare benchmark.

A holds N tensors of 32Mi elements (128 MiB each); B is A with relative noise of 1e-4 everywhere
and noise of 1e-1 on one tensor, so the comparison does real work and finds a divergence.
usage: make_large_dumps.py OUT_DIR [GIB_PER_SIDE]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from dump_torch import DumpWriter  # noqa: E402

ELEMENTS = 32 * 1024 * 1024


def main():
    out = sys.argv[1]
    gib = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    count = max(1, int(round(gib * 1024 ** 3 / (ELEMENTS * 4))))
    rng = np.random.default_rng(0)
    wa = DumpWriter(os.path.join(out, "a"), mode="tensors", meta={"precision": "fp32"}, overwrite=True)
    wb = DumpWriter(os.path.join(out, "b"), mode="tensors", meta={"precision": "fp32"}, overwrite=True)
    for k in range(count):
        a = rng.standard_normal(ELEMENTS, dtype=np.float32).reshape(256, -1)
        noise = 1e-1 if k == count // 2 else 1e-4
        b = (a * (1 + noise * rng.standard_normal(a.shape, dtype=np.float32))).astype(np.float32)
        wa.write_array(0, f"layer{k}", "forward", a)
        wb.write_array(0, f"layer{k}", "forward", b)
    for w in (wa, wb):
        w.log_loss(0, 1.0)
        w.close()
    print(f"{count} tensors x {ELEMENTS} float32 per side ({count * ELEMENTS * 4 / 1e9:.2f} GB)")


if __name__ == "__main__":
    main()

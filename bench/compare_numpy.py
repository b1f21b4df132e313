#!/usr/bin/env python3
"""Baseline for `crosstrain compare`: the same per-tensor metrics with numpy (float64 math,
memory-mapped .npy, 4Mi-element chunks so memory stays bounded), on two dumps.
usage: compare_numpy.py DUMP_A DUMP_B   -> prints seconds and the per-tensor cosine
"""
import json
import os
import sys
import time

import numpy as np

CHUNK = 4 * 1024 * 1024


def records(d):
    with open(os.path.join(d, "index.jsonl")) as f:
        lines = f.read().splitlines()[1:]
    return {(r["step"], r["name"]): r for r in map(json.loads, lines)}


def metrics(pa, pb):
    a_all = np.load(pa, mmap_mode="r").reshape(-1)
    b_all = np.load(pb, mmap_mode="r").reshape(-1)
    dot = na = nb = se = 0.0
    max_abs = max_rel = 0.0
    u3 = u5 = finite = mismatched = 0
    for off in range(0, a_all.size, CHUNK):
        a = a_all[off:off + CHUNK].astype(np.float64)
        b = b_all[off:off + CHUNK].astype(np.float64)
        fa, fb = np.isfinite(a), np.isfinite(b)
        both = fa & fb
        if not both.all():
            same = (~fa & ~fb) & ((np.isnan(a) & np.isnan(b)) | (a == b))
            mismatched += int((~both & ~same).sum())
            a, b = a[both], b[both]
        err = np.abs(a - b)
        ref = np.abs(a)
        dot += float(a @ b)
        na += float(a @ a)
        nb += float(b @ b)
        se += float(err @ err)
        if err.size:
            max_abs = max(max_abs, float(err.max()))
            nz = ref > 0
            if nz.any():
                max_rel = max(max_rel, float((err[nz] / ref[nz]).max()))
        zero = err == 0
        u3 += int(((err < 1e-3 * ref) | zero).sum())
        u5 += int(((err < 5e-3 * ref) | zero).sum())
        finite += a.size
    cos = 1.0 if na == 0 and nb == 0 else (0.0 if na == 0 or nb == 0 else dot / np.sqrt(na * nb))
    return {"cosine": cos, "max_abs": max_abs, "max_rel": max_rel, "rmse": np.sqrt(se / max(finite, 1)),
            "share_1e-3": u3 / max(finite, 1), "share_5e-3": u5 / max(finite, 1), "mismatched": mismatched}


def main():
    da, db = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    ra, rb = records(da), records(db)
    out = {}
    for key, r in ra.items():
        if key in rb and "file" in r and "file" in rb[key]:
            out[r["name"]] = metrics(os.path.join(da, r["file"]), os.path.join(db, rb[key]["file"]))
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "tensors": out}))


if __name__ == "__main__":
    main()

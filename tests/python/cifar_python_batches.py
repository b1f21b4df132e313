"""Writes CIFAR "python version" folders, as torchvision downloads them, for the cifar dataset tests.

usage: cifar_python_batches.py OUT

  OUT/py2/cifar-10-batches-py/      data_batch_1..5 and test_batch pickled the way the published
                                    files were (Python 2: str data as BINSTRING), plus batches.meta
  OUT/py3/cifar-10-batches-py/      the same rows pickled by Python 3 at protocol 2 (bytes through
                                    _codecs.encode) for the train split, at protocol 5 for test_batch
  OUT/c100/cifar-100-python/        train and test with fine_labels and coarse_labels
  OUT/hostile/cifar-10-batches-py/  test_batch holding an os.system call next to valid rows
  OUT/scalars.pkl                   numpy scalars (as checkpoints hold best accuracies) and a
                                    Fortran-order array, at protocol 2
  OUT/*.ref                         per split: for each sample, its label byte and its 3x32x32 CHW
                                    pixels as torchvision's CIFAR10 + ToTensor give them (HWC image,
                                    then channels first)
"""
import io
import os
import pickle
import struct
import sys

import numpy as np


class Py2Pickler(pickle._Pickler):
    """Protocol 2 with bytes written as Python 2's str (SHORT_BINSTRING / BINSTRING)."""

    dispatch = pickle._Pickler.dispatch.copy()

    def save_bytes(self, obj):
        n = len(obj)
        if n < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([n]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", n) + obj)
        self.memoize(obj)

    dispatch[bytes] = save_bytes


def py2_dumps(obj):
    f = io.BytesIO()
    Py2Pickler(f, protocol=2).dump(obj)
    return f.getvalue()


def rows(rng, n, classes):
    return rng.integers(0, 256, (n, 3072), dtype=np.uint8), [int(x) for x in rng.integers(0, classes, n)]


def write(path, blob):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(blob)


def reference(path, parts):
    """torchvision: data.reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1)), then ToTensor's CHW."""
    with open(path, "wb") as f:
        for data, labels in parts:
            hwc = data.reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1))
            for label, img in zip(labels, hwc):
                f.write(bytes([label]) + np.ascontiguousarray(img.transpose((2, 0, 1))).tobytes())


class System:
    def __reduce__(self):
        return (os.system, ("echo should-never-run",))


def main(out):
    rng = np.random.default_rng(7)
    train = [rows(rng, 3 + i, 10) for i in range(5)]
    test = rows(rng, 4, 10)
    batch = lambda d, l, name: {b"batch_label": name, b"labels": l, b"data": d, b"filenames": [b"x.png"] * len(l)}
    for i, (d, l) in enumerate(train, 1):
        write(f"{out}/py2/cifar-10-batches-py/data_batch_{i}", py2_dumps(batch(d, l, b"training batch")))
        write(f"{out}/py3/cifar-10-batches-py/data_batch_{i}", pickle.dumps(batch(d, l, b"training batch"), protocol=2))
    write(f"{out}/py2/cifar-10-batches-py/test_batch", py2_dumps(batch(*test, b"testing batch")))
    write(f"{out}/py3/cifar-10-batches-py/test_batch", pickle.dumps(batch(*test, b"testing batch"), protocol=5))
    write(f"{out}/py2/cifar-10-batches-py/batches.meta", py2_dumps({b"label_names": [b"airplane"] * 10}))
    reference(f"{out}/c10_train.ref", train)
    reference(f"{out}/c10_test.ref", [test])

    c100 = rows(rng, 6, 100)
    coarse = [x // 5 for x in c100[1]]
    write(f"{out}/c100/cifar-100-python/train",
          py2_dumps({b"data": c100[0], b"fine_labels": c100[1], b"coarse_labels": coarse}))
    write(f"{out}/c100/cifar-100-python/test",
          py2_dumps({b"data": c100[0][:2], b"fine_labels": c100[1][:2], b"coarse_labels": coarse[:2]}))
    reference(f"{out}/c100_train.ref", [c100])

    write(f"{out}/scalars.pkl", pickle.dumps({"f8": np.float64(0.25), "f4": np.float32(-1.5), "i8": np.int64(-3),
                                              "u1": np.uint8(200), "b": np.bool_(True),
                                              "fortran": np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))},
                                             protocol=2))
    write(f"{out}/hostile/cifar-10-batches-py/test_batch",
          pickle.dumps({b"data": test[0], b"labels": test[1], b"x": System()}, protocol=2))


if __name__ == "__main__":
    main(sys.argv[1])

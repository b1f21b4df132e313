# corpus: launch=python expect=runs
"""A helper module in the style of libraries that support torch optionally: torch imported under
try/except, an Enum of backends, an argparse --cuda flag read with getattr, checkpoints reloaded
with a dictionary map_location, and paths and messages that mention "cuda"."""
import argparse
import enum
import os
import tempfile

try:
    import torch
except ImportError:
    torch = None


class Backend(enum.Enum):
    CPU = "cpu"
    CUDA = "cuda"


def to_device(x):
    if torch is not None and isinstance(x, torch.Tensor):
        return x.cuda()
    return x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true")
    args = parser.parse_args([])
    use_cuda = getattr(args, "cuda", False) or hasattr(args, "cuda") and args.cuda
    assert len(list(Backend)) == 2 and Backend.CUDA.value == "cuda" and not use_cuda
    kernels = os.path.join("csrc", "cuda", "kernels")
    assert kernels.split(os.sep)[1] == "cuda"
    print("cuda" if use_cuda else "cpu")
    x = to_device(torch.ones(3))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ckpt.pt")
        torch.save({"w": x}, path)
        state = torch.load(path, map_location={"cuda:1": "cuda:0"})
    assert torch.equal(state["w"].cpu(), torch.ones(3))
    print("corpus-ok")


if __name__ == "__main__":
    main()

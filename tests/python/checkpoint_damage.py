#!/usr/bin/env python3
"""Damaged copies of a crosstrain checkpoint, written by torch.save: each is a well-formed file that
torch.load(weights_only=True) opens, but whose parts no longer fit the run that wrote them.

    checkpoint_damage.py rng-short IN OUT       the CPU generator's state cut to half its bytes
    checkpoint_damage.py momentum-shape IN OUT  the momentum buffer of the last parameter with more
                                                than one dimension flattened to 1-D

Prints the key it changed.
"""
import sys

import torch


def main():
    mode, src, dst = sys.argv[1:4]
    ck = torch.load(src, weights_only=True)
    if mode == "rng-short":
        state = ck["rng"]["cpu"]
        ck["rng"]["cpu"] = state[: state.numel() // 2].clone()
        print("['rng']['cpu']")
    elif mode == "momentum-shape":
        state = ck["optimizer"]["state"]
        key = max(k for k, v in state.items() if v["momentum_buffer"].dim() > 1)
        state[key]["momentum_buffer"] = state[key]["momentum_buffer"].flatten().clone()
        print(f"['optimizer']['state'][{key}]['momentum_buffer']")
    else:
        sys.exit(f"unknown damage {mode!r}")
    torch.save(ck, dst)


if __name__ == "__main__":
    main()

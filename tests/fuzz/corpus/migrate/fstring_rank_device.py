# corpus: launch=torchrun expect=runs
"""Per-rank device strings built with an f-string and %, with Gloo named for CPU-only runs."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)
    device = f"cuda:{local_rank}"
    other = "cuda:%d" % local_rank
    model = nn.Linear(4, 4).to(device)
    t = torch.ones(4, device=other) * (dist.get_rank() + 1)
    dist.all_reduce(t)
    out = model(t.unsqueeze(0))
    out.sum().backward()
    if dist.get_rank() == 0:
        print("sum", t.tolist())
        print("corpus-ok")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

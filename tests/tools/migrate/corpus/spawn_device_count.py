# corpus: launch=python expect=runs
"""ImageNet multiprocessing-distributed style: one process per GPU found."""
import torch
import torch.multiprocessing as mp


def main_worker(gpu, ngpus_per_node):
    torch.cuda.set_device(gpu)
    print("worker", gpu, "of", ngpus_per_node)


if __name__ == "__main__":
    ngpus_per_node = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node,))
    print("corpus-ok")

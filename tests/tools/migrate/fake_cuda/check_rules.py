#!/usr/bin/env python3
"""For every rewrite rule, a snippet written for CUDA is migrated (--to device-agnostic) and both
versions run on a fake CUDA machine (fake_cuda.py). The migrated code must record the same calls
with the same arguments: on CUDA, the rewrite changes nothing. Exit status 1 on any difference, on
a snippet the rule did not rewrite, or on a snippet that records nothing (the test could not fail).
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import fake_cuda  # noqa: E402

# rule id -> snippet. Each one records what it does through the fake or record(value).
SNIPPETS = {
    "tensor.cuda": "import torch\nx = torch.ones(2).cuda()\ny = torch.ones(2).cuda(non_blocking=True)\n"
                   "m = torch.nn.Linear(2, 2).cuda(torch.device('cuda'))\nz = torch.ones(2).cuda(1)\n",
    "int-rank-device": "import torch\ndef w(rank):\n    torch.ones(2).to(rank)\n    torch.zeros(2, device=rank)\n"
                       "    torch.nn.Linear(2, 2).to(rank)\nw(1)\ndevice = 0\ntorch.ones(1).to(device)\n",
    "device-string": "import torch\nx = torch.ones(2).to('cuda')\ny = torch.zeros(2, device='cuda')\n"
                     "torch.load('ckpt', map_location='cuda')\n",
    "device-type-string": "import torch\nd = 'cuda'\nrecord(d)\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    pass\n"
                          "t = torch.device('cuda', 1)\nrecord(t)\ndevice_type = 'cuda' if 'cuda' in d else 'cpu'\nrecord(device_type)\n"
                          "def f(device: str = 'cuda'):\n    return device.upper()\nrecord(f())\n",
    "device-string-format": "import torch\ndef w(gpu):\n    record('cuda:{}'.format(gpu))\n    record('cuda:%d' % gpu)\n"
                            "    record(f'cuda:{gpu}')\n    record(torch.device('cuda:1'))\n    torch.load('c', map_location='cuda:0')\n"
                            "    torch.ones(1).to('cuda:{}'.format(gpu))\n    record('cuda:' + str(gpu))\n"
                            "    record(':'.join(['cuda', str(gpu)]))\n    torch.load('c', map_location='cuda:' + str(gpu % 2))\nw(1)\n",
    "diagnostic-guard": "import torch\nprint(torch.cuda.memory_summary())\nprint(f'on {torch.cuda.get_device_name(1)}')\n"
                        "torch.cuda.reset_peak_memory_stats()\n",
    "device-ids": "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nm = torch.nn.Linear(2, 2)\n"
                  "DDP(m, device_ids=[1], output_device=1)\ntorch.nn.DataParallel(m, device_ids=[0, 1])\n",
    "torch.cuda.is_available": "import torch\nrecord(torch.cuda.is_available())\n",
    "torch.cuda.device_count": "import torch\nif torch.cuda.device_count() > 1:\n    record('many')\n",
    "torch.cuda.set_device": "import torch\ntorch.cuda.set_device(1)\n",
    "torch.cuda.synchronize": "import torch\ntorch.cuda.synchronize()\n",
    "torch.cuda.current_stream": "import torch\ntorch.cuda.current_stream()\n",
    "torch.cuda.Stream": "import torch\ns = torch.cuda.Stream()\n",
    "torch.cuda.stream": "import torch\ns = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    pass\n",
    "torch.cuda.Event": "import torch\ne = torch.cuda.Event()\ne.record()\n",
    "torch.cuda.empty_cache": "import torch\ntorch.cuda.empty_cache()\n",
    "torch.cuda.memory_allocated": "import torch\nrecord(torch.cuda.memory_allocated())\n",
    "torch.cuda.max_memory_allocated": "import torch\nrecord(torch.cuda.max_memory_allocated())\n"
                                       "record(torch.cuda.max_memory_allocated(device=1))\n",
    "torch.cuda.memory_reserved": "import torch\nrecord(torch.cuda.memory_reserved())\n",
    "torch.cuda.max_memory_reserved": "import torch\nrecord(torch.cuda.max_memory_reserved())\n",
    "torch.cuda.memory_stats": "import torch\nrecord(torch.cuda.memory_stats())\n",
    "torch.cuda.amp.autocast": "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
                               "with torch.cuda.amp.autocast(True, torch.bfloat16):\n    pass\n"
                               "with torch.cuda.amp.autocast(enabled=False):\n    pass\n",
    "torch.cuda.amp.GradScaler": "import torch\ns = torch.cuda.amp.GradScaler()\nt = torch.cuda.amp.GradScaler(2.0**10, enabled=False)\n",
    "torch.cuda.amp.custom_fwd": "import torch\n@torch.cuda.amp.custom_fwd\ndef f(x):\n    return x\n"
                                 "@torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\ndef g(x):\n    return x\n"
                                 "from torch.cuda.amp import custom_fwd\n@custom_fwd\ndef h(x):\n    return x\n",
    "torch.cuda.amp.custom_bwd": "import torch\n@torch.cuda.amp.custom_bwd\ndef f(x):\n    return x\n"
                                 "h = torch.cuda.amp.custom_bwd(f)\n",
    "torch.cuda.amp": "import torch\nfrom torch.cuda.amp import autocast, GradScaler as GS\ns = GS(init_scale=4.0)\n"
                      "with autocast(dtype=torch.bfloat16):\n    pass\n",
    "nccl-backend": "import torch\nimport torch.distributed as dist\nimport argparse\np = argparse.ArgumentParser()\n"
                    "p.add_argument('--dist-backend', default='nccl')\nrecord(p.parse_args([]).dist_backend)\n"
                    "dist.init_process_group('nccl', rank=0, world_size=1)\ndist.init_process_group(backend='nccl')\n"
                    "dist.init_process_group(backend='NCCL' if torch.cuda.is_available() else 'GLOO')\n",
    "composite-backend": "import torch.distributed as dist\n"
                         "dist.init_process_group(backend='cuda:nccl,cpu:gloo', rank=0, world_size=1)\n",
    "indexed-torch-device": "import torch\nrecord(torch.device('cuda', 1))\nrecord(torch.device(type='cuda', index=0))\n"
                            "torch.load('ckpt', map_location=torch.device('cuda', 1))\n",
    "is_nccl_available": "import torch.distributed as dist\nrecord(dist.is_nccl_available())\n",
    "profiler-activity": "import torch\nfrom torch.profiler import ProfilerActivity\nrecord(ProfilerActivity.CUDA)\n",
    "process-count": "import torch\ndef spawn(fn, args=(), nprocs=1):\n    record('spawn', nprocs)\n"
                     "ngpus_per_node = torch.cuda.device_count()\nspawn(print, nprocs=ngpus_per_node)\n"
                     "record(5 % torch.cuda.device_count())\n",
    "sync-batchnorm": "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))\n"
                      "model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)\nrecord(type(model[1]).__name__)\n",
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--crosstrain", required=True)
    args = p.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="fake_cuda_"))
    src, out = work / "src", work / "out"
    src.mkdir()
    names = {}
    for i, (rule, code) in enumerate(SNIPPETS.items()):
        name = f"rule_{i:02d}.py"
        names[name] = rule
        (src / name).write_text(code)
    r = subprocess.run([args.crosstrain, "migrate", str(src), "--to", "device-agnostic", "--out", str(out),
                        "--json", "-"], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr)
        return 1
    applied = {pathlib.Path(f["path"]).name: {c["rule"] for c in f["changes"]} for f in json.loads(r.stdout)["files"]}
    fake_cuda.install()
    failed = 0
    for name, rule in names.items():
        before = fake_cuda.run((src / name).read_text(), name)
        after = fake_cuda.run((out / name).read_text(), name)
        problem = None
        if rule not in applied.get(name, set()):
            problem = f"the rule did not apply (applied: {sorted(applied.get(name, set()))})"
        elif not before:
            problem = "the snippet records nothing"
        elif before != after:
            problem = "calls differ:\n  original: " + repr(before) + "\n  migrated: " + repr(after)
        print(("FAIL " if problem else "PASS ") + f"{rule}: {len(before)} calls" + (f": {problem}" if problem else ""))
        if problem:
            print((out / name).read_text())
        failed += problem is not None
    print(f"{len(names) - failed}/{len(names)} rules make the same calls on CUDA")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes a large Kineto-format GPU trace by repeating one training step until the file reaches
--size-mb: per step a ProfilerStep span, a DataLoader span, 40 operators each with a nested
operator, a cudaLaunchKernel call, its kernel and ac2g flow arrows, memory events, and an NCCL
all-reduce. Text is laid out the way torch.profiler's exporter writes it (one key group per
line), so parse speed matches real traces. Deterministic: same size -> same bytes.
"""
import argparse
import os

OPS = ["aten::conv2d", "aten::batch_norm", "aten::relu", "aten::add_", "aten::addmm", "aten::max_pool2d",
       "aten::copy_", "aten::mul", "aten::sum", "aten::threshold_backward"]


def step_text(step, t0, corr0, pid=4242, tid=4242):
    out = []
    ap = out.append

    def x(cat, name, ts, dur, args, p=pid, t=tid):
        ap('  {\n    "ph": "X", "cat": "%s", "name": "%s", "pid": %s, "tid": %s,\n    "ts": %.3f, "dur": %.3f,\n'
           '    "args": {\n      %s\n    }\n  }' % (cat, name, p, t, ts, dur, args))

    ap_step = 2000.0
    x("user_annotation", "ProfilerStep#%d" % step, t0, ap_step, '"External id": %d, "Record function id": 0' % corr0)
    x("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0 + 1, 60,
      '"External id": %d, "Record function id": 0' % (corr0 + 1))
    dev_t = t0 + 80.0
    for i in range(40):
        name = OPS[i % len(OPS)]
        ts = t0 + 70 + i * 45.0
        corr = corr0 + 10 + i
        x("cpu_op", name, ts, 40, '"External id": %d, "Sequence number": %d, "Fwd thread id": 0, "Record function id": 0, '
          '"Input type": ["float", "float"], "Input Dims": [[32, 64, 56, 56], [64, 64, 3, 3]], "Ev Idx": %d'
          % (corr, corr, corr))
        x("cpu_op", name.replace("aten::", "aten::_") + "_impl", ts + 2, 35,
          '"External id": %d, "Record function id": 0, "Ev Idx": %d' % (corr, corr))
        x("cuda_runtime", "cudaLaunchKernel", ts + 5, 8, '"External id": %d, "cbid": 211, "correlation": %d' % (corr, corr))
        kdur = 30.0 + (i % 7) * 3
        dev_t = max(dev_t, ts + 10)
        x("kernel", "void at::native::elementwise_kernel<128, 4>(int, %s_functor)" % name[6:], dev_t, kdur,
          '"External id": %d, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": %d, '
          '"registers per thread": 32, "shared memory": 0, "blocks per SM": 3.2, "warps per SM": 12.8, '
          '"grid": [1024, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %%": 50' % (corr, corr), p=0, t=7)
        ap('  {\n    "ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %.3f,\n    "cat": "ac2g", "name": "ac2g"\n  }'
           % (corr, pid, tid, ts + 5))
        ap('  {\n    "ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %.3f,\n    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }'
           % (corr, dev_t))
        ap('  {\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n    "pid": %d, "tid": %d,\n'
           '    "ts": %.3f,\n    "args": {\n      "Total Reserved": 2097152000, "Total Allocated": %d, "Bytes": 1048576, '
           '"Device Id": 0, "Device Type": 1, "Addr": 140000000, "Ev Idx": %d\n    }\n  }'
           % (pid, tid, ts + 1, 1048576000 + (i * 1048576), corr))
        dev_t += kdur + 2
    corr = corr0 + 60
    x("cpu_op", "c10d::allreduce_", t0 + 1880, 20, '"External id": %d, "Record function id": 0' % corr)
    x("cuda_runtime", "cudaLaunchKernel", t0 + 1885, 8, '"correlation": %d' % corr)
    x("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", t0 + 1900, 90,
      '"queued": 0, "device": 0, "context": 1, "stream": 20, "correlation": %d' % corr, p=0, t=20)
    return ",\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=float, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rank", type=int, default=0)
    args = ap.parse_args()
    target = int(args.size_mb * 1024 * 1024)
    with open(args.out, "w") as f:
        f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": "NVIDIA A100-SXM4-80GB", '
                '"totalGlobalMem": 85196873728, "computeMajor": 8, "computeMinor": 0}\n  ],\n'
                '  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": 1},\n'
                '  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1700000000000000000,\n  "traceEvents": [\n'
                % args.rank)
        written, step = 0, 0
        while written < target:
            text = step_text(step, 5000000.0 + step * 2000.0, step * 100)
            f.write((",\n" if step else "") + text)
            written += len(text) + 2
            step += 1
        f.write('\n  ],\n  "traceName": "%s"\n}\n' % os.path.basename(args.out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes two Kineto traces in which the device allocator, not the model, sets the pace:

- rocm_mi300x_hipfree.json.gz: torch.profiler on ROCm (an MI300X) with PyTorch's caching allocator
  off (PYTORCH_NO_HIP_MEMORY_CACHING=1): every tensor freed is a hipFree, which waits for the
  device. 1,360 hipFree calls take ~98% of the steps; most land inside the DataLoader's
  __next__ (the previous batch is dropped there) and between operators.
- a100_cudafree.json.gz: torch.profiler on CUDA (an A100) with torch.cuda.empty_cache() once per
  step: 3 cudaFree calls, each waiting for the queued work, take ~49% of the steps.

No GPU runs here; the event layout is the one torch.profiler writes (Kineto's chrome trace:
"deviceProperties", "cpu_op" operators with "External id", "user_annotation" ProfilerStep#N, runtime
calls in category "cuda_runtime" (ROCm's roctracer calls too: "hipLaunchKernel", "hipFree"),
"kernel" events on the GPU's pid with "correlation", "ac2g" flows), with device names and
properties as Kineto reports them for those GPUs. Deterministic.
"""
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class Trace:
    def __init__(self, device):
        self.events = []
        self.device = device
        self.corr = 0
        self.ext = 0

    def x(self, cat, name, pid, tid, ts, dur, args=None):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts, 3),
                            "dur": round(dur, 3), "args": args or {}})

    def op(self, name, ts, dur):
        self.ext += 1
        self.x("cpu_op", name, 4242, 4242, ts, dur, {"External id": self.ext, "Record function id": 0,
                                                     "Ev Idx": self.ext})
        return self.ext

    def runtime(self, name, ts, dur, ext=0):
        self.corr += 1
        self.x("cuda_runtime", name, 4242, 4242, ts, dur, {"External id": ext, "cbid": 0, "correlation": self.corr})
        return self.corr

    def launch(self, call, ext, ts, kernel, k_ts, k_dur):
        corr = self.runtime(call, ts, 4.0, ext)
        self.x("kernel", kernel, 0, 7, k_ts, k_dur,
               {"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": corr,
                "registers per thread": 128, "shared memory": 0, "grid": [512, 1, 1], "block": [256, 1, 1]})
        self.events.append({"ph": "s", "id": corr, "pid": 4242, "tid": 4242, "ts": round(ts, 3), "cat": "ac2g",
                            "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": round(k_ts, 3), "cat": "ac2g",
                            "name": "ac2g", "bp": "e"})

    def write(self, path):
        doc = {"schemaVersion": 1, "deviceProperties": [self.device], "distributedInfo": {"backend": "nccl",
                                                                                          "rank": 0,
                                                                                          "world_size": 1},
               "record_shapes": 0, "with_stack": 0, "trace_id": "0", "displayTimeUnit": "ms",
               "baseTimeNanoseconds": 1700000000000000000, "traceEvents": self.events}
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(json.dumps(doc, separators=(",", ":")).encode())


def mi300x():
    t = Trace({"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 206141652992, "computeMajor": 9,
               "computeMinor": 4, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
               "regsPerBlock": 65536, "warpSize": 64, "sharedMemPerBlock": 65536, "numSms": 304})
    ts = 1000.0
    frees = 0
    for step in range(3):
        start = ts
        # The DataLoader drops the previous batch: its tensors are hipFree'd one by one.
        dl = ts
        ts += 5
        n_dl = 417 if step < 2 else 418
        for _ in range(n_dl):
            t.runtime("hipFree", ts, 218.0)
            ts += 219
            frees += 1
        t.x("user_annotation", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 4242, 4242, dl,
            ts - dl + 5)
        ts += 10
        for i in range(40):
            name = ["aten::linear", "aten::relu", "aten::add", "aten::mul"][i % 4]
            kernel = {"aten::linear": "Cijk_Ailk_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN",
                      "aten::relu": "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                                    "namespace)::launch_clamp_scalar>",
                      "aten::add": "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
                      "aten::mul": "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>"}[name]
            op_start = ts
            ext = t.op(name, op_start, 0)  # duration patched below
            idx = len(t.events) - 1
            t.runtime("hipMalloc", ts + 2, 6.0, ext)
            t.launch("hipLaunchKernel", ext, ts + 10, kernel, ts + 16, 35.0 if name == "aten::linear" else 8.0)
            ts += 20
            if i % 10 != 9:  # an intermediate freed when the next op takes its place
                t.runtime("hipFree", ts, 218.0)
                ts += 219
                frees += 1
            t.events[idx]["dur"] = round(ts - op_start, 3)
            ts += 3
        t.x("user_annotation", "ProfilerStep#%d" % (step + 1), 4242, 4242, start, ts - start + 5)
        ts += 10
    assert frees == 1360, frees
    return t


def a100():
    t = Trace({"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85089730560, "computeMajor": 8,
               "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
               "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 108})
    ts = 1000.0
    for step in range(3):
        start = ts
        device = ts + 30
        for i in range(60):
            name = ["aten::conv2d", "aten::batch_norm", "aten::relu"][i % 3]
            kernel = {"aten::conv2d": "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16",
                      "aten::batch_norm": "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>",
                      "aten::relu": "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                                    "namespace)::launch_clamp_scalar>"}[name]
            dur = {"aten::conv2d": 30.0, "aten::batch_norm": 10.0, "aten::relu": 5.0}[name]
            ext = t.op(name, ts, 12)
            device = max(device, ts + 8)
            t.launch("cudaLaunchKernel", ext, ts + 3, kernel, device, dur)
            device += dur + 1
            ts += 14
        # torch.cuda.empty_cache(): cudaFree returns the cached blocks, waiting for the device first.
        wait = device - ts + 2
        t.runtime("cudaFree", ts + 1, wait + 680.0, 0)
        ts += wait + 682
        t.x("user_annotation", "ProfilerStep#%d" % (step + 1), 4242, 4242, start, ts - start + 5)
        ts += 10
    return t


def main():
    mi300x().write(os.path.join(HERE, "rocm_mi300x_hipfree.json.gz"))
    a100().write(os.path.join(HERE, "a100_cudafree.json.gz"))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the hand-designed trace fixtures of tests/tools/analyze (no torch needed).

Each fixture is small enough that its step breakdown was computed by hand; the expected numbers
live in tests/tools/analyze/golden_test.cpp next to the derivation. Re-running this script
rewrites the same files byte for byte.
"""
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, doc):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def kineto_gpu(rank):
    """Two steps on a CUDA device: kernels, memcpy, memset, NCCL kernels, ac2g flows, a host sync."""
    base = 1700000000000000  # epoch microseconds, as Kineto writes them
    ev = []

    def x(cat, name, pid, tid, ts, dur, args=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": base + ts, "dur": dur}
        if args is not None:
            e["args"] = args
        ev.append(e)

    def launch(rt_name, rt_ts, rt_dur, corr, cat, kname, k_ts, k_dur, stream=7):
        x("cuda_runtime", rt_name, 100, 1, rt_ts, rt_dur, {"correlation": corr, "cbid": 211})
        x(cat, kname, 0, stream, k_ts, k_dur, {"correlation": corr, "device": 0, "stream": stream})
        ev.append({"ph": "s", "id": corr, "pid": 100, "tid": 1, "ts": base + rt_ts, "cat": "ac2g", "name": "ac2g"})
        ev.append({"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": base + k_ts, "cat": "ac2g",
                   "name": "ac2g", "bp": "e"})

    f32 = ["float", "float", "float"]
    x("user_annotation", "ProfilerStep#1", 100, 1, 1000, 100)
    x("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 1, 1000, 10)
    x("cpu_op", "aten::conv2d", 100, 1, 1010, 20,
      {"Input Dims": [[8, 3, 32, 32], [16, 3, 3, 3], [16]], "Input type": f32})
    launch("cudaLaunchKernel", 1012, 4, 1, "kernel", "implicit_convolve_sgemm", 1020, 40)
    x("cpu_op", "aten::copy_", 100, 1, 1030, 10)
    launch("cudaMemcpyAsync", 1031, 4, 2, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 1060, 10)
    x("cpu_op", "aten::zero_", 100, 1, 1040, 5)
    launch("cudaMemsetAsync", 1041, 2, 3, "gpu_memset", "Memset (Device)", 1070, 2)
    x("cpu_op", "c10d::allreduce_", 100, 1, 1045, 5)
    launch("cudaLaunchKernel", 1046, 2, 4, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1065, 30, stream=20)
    x("cpu_op", "aten::item", 100, 1, 1050, 30)
    x("cpu_op", "aten::_local_scalar_dense", 100, 1, 1051, 28)
    launch("cudaMemcpyAsync", 1052, 26, 5, "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 1095, 2)
    x("cpu_op", "aten::add_", 100, 1, 1080, 10)
    launch("cudaLaunchKernel", 1081, 3, 6, "kernel", "void at::native::vectorized_elementwise_kernel<4>", 1097, 2)
    x("user_annotation", "ProfilerStep#2", 100, 1, 1100, 100)
    x("cpu_op", "aten::mm", 100, 1, 1100, 10,
      {"Input Dims": [[64, 64], [64, 64]], "Input type": ["c10::Half", "c10::Half"]})
    launch("cudaLaunchKernel", 1102, 3, 7, "kernel", "ampere_fp16_s16816gemm_fp16_128x128", 1150, 80)
    x("cpu_op", "c10d::allreduce_", 100, 1, 1110, 10)
    launch("cudaLaunchKernel", 1111, 2, 8, "kernel", "ncclDevKernel_AllReduce_Sum_f16_RING_LL", 1160, 20, stream=20)
    x("cpu_op", "aten::add", 100, 1, 1120, 5, {"Input Dims": [[4], [4]], "Input type": ["float", "float"]})
    x("cuda_runtime", "cudaDeviceSynchronize", 100, 1, 1190, 39, {"correlation": 9})
    for ts, total, b in [(1015, 1048576, 1048576), (1065, 3145728, 2097152), (1150, 2097152, -1048576)]:
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 1,
                   "ts": base + ts, "args": {"Total Reserved": 4194304, "Total Allocated": total, "Bytes": b,
                                             "Device Id": 0, "Device Type": 1, "Addr": 1}})
    ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 1,
               "ts": base + 1001, "args": {"Total Reserved": 0, "Total Allocated": 4096, "Bytes": 4096,
                                           "Device Id": -1, "Device Type": 0}})
    ev.append({"name": "process_name", "ph": "M", "ts": base + 1000, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})
    ev.append({"name": "process_name", "ph": "M", "ts": base + 1000, "pid": 100, "tid": 0, "args": {"name": "python"}})
    return {"schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85196873728,
                                  "computeMajor": 8, "computeMinor": 0}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
            "traceEvents": ev, "traceName": "kineto_gpu_hand.json"}


def legacy_autograd():
    """The older autograd profiler's export: a bare array, string pids, no categories, flow arrows."""
    def x(name, ts, dur, pid, tid):
        return {"name": name, "ph": "X", "ts": ts, "dur": dur, "tid": tid, "pid": pid, "args": {}}
    ev = [x("ProfilerStep#5", 0, 100, "CPU functions", 1),
          x("aten::conv2d", 10, 30, "CPU functions", 1),
          {"name": "aten::conv2d", "ph": "s", "ts": 10, "tid": 1, "pid": "CPU functions", "id": 0,
           "cat": "cpu_to_cuda", "args": {}},
          {"name": "cudnn_conv_kernel", "ph": "f", "ts": 20, "tid": 0, "pid": "CUDA functions", "id": 0,
           "cat": "cpu_to_cuda", "args": {}, "bp": "e"},
          x("cudnn_conv_kernel", 20, 50, "CUDA functions", 0),
          x("aten::relu", 45, 10, "CPU functions", 1),
          {"name": "aten::relu", "ph": "s", "ts": 45, "tid": 1, "pid": "CPU functions", "id": 1,
           "cat": "cpu_to_cuda", "args": {}},
          {"name": "relu_kernel", "ph": "f", "ts": 72, "tid": 0, "pid": "CUDA functions", "id": 1,
           "cat": "cpu_to_cuda", "args": {}, "bp": "e"},
          x("relu_kernel", 72, 8, "CUDA functions", 0)]
    return ev


def ascend_trace_view():
    """Ascend PyTorch Profiler trace_view.json: a bare array, roles from process names, string ts."""
    base = 1700000000000000

    def ts(v):
        return "%d.000" % (base + v)

    def meta(pid, name):
        return {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}

    def x(name, pid, tid, t, dur, args=None):
        return {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": ts(t), "dur": dur, "args": args or {}}

    return [meta(2000, "Python"), meta(3000, "CANN"), meta(4000, "Ascend Hardware"), meta(5000, "HCCL"),
            meta(6000, "Overlap Analysis"),
            x("ProfilerStep#1", 2000, 1, 100, 200),
            x("aten::matmul", 2000, 1, 110, 40, {"Input Dims": [[8, 16], [16, 4]], "Input type": ["float", "float"],
                                                  "Sequence number": 7}),
            x("AscendCL@aclnnMatmul", 3000, 1, 115, 25),
            {"ph": "s", "bp": "e", "name": "HostToDevice1", "id": "1", "pid": 3000, "tid": 1, "ts": ts(115),
             "cat": "HostToDevice"},
            {"ph": "f", "bp": "e", "name": "HostToDevice1", "id": "1", "pid": 4000, "tid": 7, "ts": ts(150),
             "cat": "HostToDevice"},
            x("MatMulV2", 4000, 7, 150, 100, {"Task Type": "AI_CORE", "Stream Id": 7, "Task Id": 1}),
            x("aten::add", 2000, 1, 160, 10, {"Input Dims": [[8, 4], [8, 4]], "Input type": ["float", "float"]}),
            x("AscendCL@aclnnAdd", 3000, 1, 162, 6),
            {"ph": "s", "bp": "e", "name": "HostToDevice2", "id": "2", "pid": 3000, "tid": 1, "ts": ts(162),
             "cat": "HostToDevice"},
            {"ph": "f", "bp": "e", "name": "HostToDevice2", "id": "2", "pid": 4000, "tid": 7, "ts": ts(250),
             "cat": "HostToDevice"},
            x("Add", 4000, 7, 250, 10, {"Task Type": "AI_VECTOR_CORE", "Stream Id": 7, "Task Id": 2}),
            x("hcom_allReduce__123_0_1", 5000, 9, 200, 80),
            x("Computing", 6000, 1, 150, 110)]


def crosstrain_cpu():
    """crosstrain's recorder schema on a CPU run: its own user_annotation spans around the phases."""
    ev = []

    def x(cat, name, ts, dur, args=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": 7, "ts": ts, "dur": dur}
        if args:
            e["args"] = args
        ev.append(e)

    ua = "user_annotation"
    x(ua, "ProfilerStep#0", 0, 1000)
    x(ua, "data_wait", 0, 200)
    x(ua, "forward", 200, 300)
    x("cpu_op", "aten::conv2d", 210, 190, {"Input Dims": [[2, 3, 8, 8], [4, 3, 3, 3]], "Input type": ["float", "float"]})
    x("cpu_op", "aten::convolution", 215, 180)
    x("cpu_op", "aten::relu", 400, 80)
    x(ua, "backward", 500, 300)
    x("cpu_op", "aten::convolution_backward", 510, 280)
    x(ua, "optimizer_step", 800, 150)
    x("cpu_op", "aten::_foreach_add_", 810, 130)
    x(ua, "scaler_update", 950, 10)
    x(ua, "ProfilerStep#1", 1000, 800)
    x(ua, "data_wait", 1000, 40)
    x(ua, "forward", 1040, 260)
    x("cpu_op", "aten::conv2d", 1050, 240, {"Input Dims": [[2, 3, 8, 8], [4, 3, 3, 3]], "Input type": ["float", "float"]})
    x(ua, "backward", 1300, 400)
    x("cpu_op", "aten::convolution_backward", 1310, 380)
    x(ua, "optimizer_step", 1700, 90)
    x("cpu_op", "aten::_foreach_add_", 1705, 80)
    for t, total in [(5, 1000), (220, 5000), (600, 9000), (1200, 3000)]:
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": t,
                   "args": {"Total Reserved": 0, "Total Allocated": total, "Bytes": 1, "Device Id": -1,
                            "Device Type": 0}})
    return {"schemaVersion": 1, "deviceProperties": [], "traceEvents": ev, "traceName": "crosstrain"}


if __name__ == "__main__":
    write("kineto_gpu_hand.json", kineto_gpu(0))
    os.makedirs(os.path.join(HERE, "ranks"), exist_ok=True)
    write("ranks/rank1.json", kineto_gpu(1))
    write("ranks/rank0.json", kineto_gpu(0))
    write("legacy_autograd.json", legacy_autograd())
    write("ascend_trace_view.json", ascend_trace_view())
    write("crosstrain_cpu.json", crosstrain_cpu())
    with open(os.path.join(HERE, "crosstrain_cpu.json"), "rb") as src:
        with gzip.GzipFile(os.path.join(HERE, "crosstrain_cpu.json.gz"), "wb", mtime=0) as dst:
            dst.write(src.read())

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


def kineto_old_generation(scale=1.0):
    """torch 1.8-1.10 Kineto: capitalised categories ("Operator", "Runtime", "Kernel", "Memcpy",
    "Memset"), string tids ("stream 7"), ProfilerStep#N and enumerate(DataLoader)#... written as
    "Operator", no deviceProperties. Field layout as in the TensorBoard profiler plugin's tests of
    that generation (pytorch/kineto tb_plugin/test/test_profiler.py). `scale` stretches the kernels,
    the copy and the data loading, for a faster/slower twin."""
    ev = []

    def x(cat, name, pid, tid, ts, dur, args=None):
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                   "args": args or {}})

    for k in range(2):
        t0 = 1000 + k * 1000
        x("Operator", "ProfilerStep#%d" % (k + 1), 13721, "123", t0, 900, {"Input Dims": [], "External id": 1})
        x("Operator", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 13721, "123", t0, 200 * scale,
          {"Input Dims": [], "External id": 2})
        x("Operator", "aten::conv2d", 13721, "123", t0 + 250, 100, {"Input dims": [[8, 3, 32, 32]], "External id": 3})
        x("Runtime", "cudaLaunchKernel", 13721, "123", t0 + 260, 10, {"correlation": 10 + k * 10, "external id": 3})
        x("Kernel", "implicit_convolve_sgemm", 0, "stream 7", t0 + 300, 300 * scale,
          {"correlation": 10 + k * 10, "external id": 3, "device": 0, "stream": 7})
        x("Operator", "aten::copy_", 13721, "123", t0 + 400, 50, {"Input Dims": [], "External id": 4})
        x("Runtime", "cudaMemcpyAsync", 13721, "123", t0 + 410, 30, {"correlation": 11 + k * 10, "external id": 4})
        x("Memcpy", "Memcpy DtoH (Device -> Pageable)", 0, "stream 7", t0 + 620, 100 * scale,
          {"correlation": 11 + k * 10, "external id": 4, "device": 0, "stream": 7})
        x("Operator", "aten::zero_", 13721, "123", t0 + 460, 20, {"Input Dims": [], "External id": 5})
        x("Runtime", "cudaMemsetAsync", 13721, "123", t0 + 462, 5, {"correlation": 12 + k * 10, "external id": 5})
        x("Memset", "Memset (Device)", 0, "stream 7", t0 + 730, 5,
          {"correlation": 12 + k * 10, "external id": 5, "device": 0, "stream": 7})
    x("Trace", "PyTorch Profiler (0)", "Spans", "PyTorch Profiler", 900, 2100)
    return {"schemaVersion": 1, "traceEvents": ev}


def third_vendor():
    """A device nobody lists: categories "mtia_runtime" (host calls, correlation ids) and
    "mtia_ccp_events" (device work), device pid 0 named "MTIA 0" -- the shape Kineto gives an
    MTIA run -- plus a vendor whose device categories ("acme_exec") share nothing with any table
    and whose launches are linked only by flow events. Structure, not names, must find both."""
    ev = []

    def x(cat, name, pid, tid, ts, dur, args=None):
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                   "args": args or {}})

    x("user_annotation", "ProfilerStep#1", 500, 500, 0, 1000)
    x("cpu_op", "aten::mm", 500, 500, 10, 50, {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]})
    x("mtia_runtime", "mtiaLaunchKernel", 500, 500, 20, 10, {"correlation": 1})
    x("mtia_ccp_events", "mm_fwd_kernel", 0, 1, 40, 600, {"correlation": 1, "device": 0})
    x("cpu_op", "aten::relu", 500, 500, 100, 20)
    x("acme_api", "acmeEnqueue", 500, 500, 105, 5)
    ev.append({"ph": "s", "id": 77, "pid": 500, "tid": 500, "ts": 105, "cat": "ac2g", "name": "ac2g"})
    ev.append({"ph": "f", "id": 77, "pid": 9, "tid": 2, "ts": 700, "cat": "ac2g", "name": "ac2g", "bp": "e"})
    x("acme_exec", "relu_task", 9, 2, 700, 200)
    ev.append({"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "MTIA 0"}})
    ev.append({"name": "process_name", "ph": "M", "pid": 9, "tid": 0, "args": {"name": "ACME 0"}})
    return {"schemaVersion": 1, "traceEvents": ev}


ASCEND_BASE = 1700000000000000


def ascend_pt_trace_view(rank):
    """An Ascend PyTorch Profiler trace_view.json as torch_npu writes it (facts from Ascend/pytorch
    torch_npu/profiler/analysis: TraceEventManager and the framework parsers): framework events in
    a "Python" process with cat "cpu_op", the task queue's "enqueue"/"dequeue" spans, CANN calls
    ("AscendCL@...") on the dequeue thread's tid in a "CANN" process, NPU tasks in "Ascend
    Hardware" with args "Task Type", "HostToDevice" flows CANN call -> task, "async_npu" flows
    ("torch_to_npu") operator -> task, HCCL tasks, string timestamps. Rank 1's all-reduce waits
    longer (a slow peer)."""
    def ts(v):
        return "%d.000" % (ASCEND_BASE + v)

    ev = []

    def meta(pid, name):
        ev.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}})

    def x(name, pid, tid, t, dur, cat=None, args=None):
        e = {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": ts(t), "dur": dur, "args": args or {}}
        if cat:
            e["cat"] = cat
        ev.append(e)

    flow = [0]

    def link(cat, name, s_pid, s_tid, s_t, f_t, stream=7):
        flow[0] += 1
        ev.append({"ph": "s", "bp": "e", "name": name, "id": flow[0], "pid": s_pid, "tid": s_tid, "ts": ts(s_t),
                   "cat": cat})
        ev.append({"ph": "f", "bp": "e", "name": name, "id": flow[0], "pid": 4000, "tid": stream, "ts": ts(f_t),
                   "cat": cat})

    for pid, name in [(2000, "Python"), (3000, "CANN"), (4000, "Ascend Hardware"), (5000, "HCCL"),
                      (6000, "Overlap Analysis")]:
        meta(pid, name)
    x("ProfilerStep#1", 2000, 1, 100, 1400, "cpu_op")
    # (op, op start, op dur, CANN call, call start, call dur, task, task start, task dur, task type)
    ops = [("aten::mm", 110, 50, "AscendCL@aclnnMm", 305, 25, "MatMulV2", 400, 200, "AI_CORE"),
           ("aten::relu", 170, 20, "AscendCL@aclnnRelu", 345, 10, "Relu", 610, 30, "AI_VECTOR_CORE"),
           ("aten::nonzero", 200, 30, "AscendCL@aclopCompileAndExecute", 360, 400, "NonZero", 780, 250, "AI_CPU"),
           ("aten::add", 240, 20, "AscendCL@aclnnAdd", 770, 10, "Add", 1040, 20, "AI_VECTOR_CORE")]
    for i, (op, o_t, o_d, call, c_t, c_d, task, t_t, t_d, kind) in enumerate(ops):
        x(op, 2000, 1, o_t, o_d, "cpu_op", {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]})
        x("Enqueue", 2000, 1, o_t + 2, 3, "enqueue")
        x("Dequeue@" + op, 2000, 2, c_t - 5, c_d + 10, "dequeue")
        x(call, 3000, 2, c_t, c_d)
        x(task, 4000, 7, t_t, t_d, None, {"Task Type": kind, "Stream Id": 7, "Task Id": i + 1})
        link("HostToDevice", "HostToDevice%d" % (i + 1), 3000, 2, c_t, t_t)
        link("async_npu", "torch_to_npu", 2000, 1, o_t, t_t)
    wait = 300 if rank == 1 else 0
    x("hcom_allReduce__123_0_1", 5000, 9, 1070, 200 + wait, None, {"Task Type": "HCCL"})
    x("Computing", 6000, 1, 400, 660)
    return ev


def ascend_communication(rank):
    """communication.json: per step, per collective, time and bandwidth info (msprof-analyze's
    "Communication Time Info" / "Communication Bandwidth Info" layout). Not a trace."""
    wait = 0.3 if rank == 1 else 0.0
    info = {"Communication Time Info": {"Start Timestamp(us)": ASCEND_BASE + 1070, "Elapse Time(ms)": 0.2 + wait,
                                        "Transit Time(ms)": 0.15, "Wait Time(ms)": 0.05 + wait,
                                        "Synchronization Time(ms)": 0.01, "Idle Time(ms)": 0.0,
                                        "Wait Time Ratio": round((0.05 + wait) / (0.2 + wait), 4),
                                        "Synchronization Time Ratio": 0.05},
            "Communication Bandwidth Info": {
                "HCCS": {"Transit Size(MB)": 3.0, "Transit Time(ms)": 0.15, "Bandwidth(GB/s)": 20.0,
                         "Large Packet Ratio": 0.0, "Size Distribution": {"3.0": [1, 0.15]}},
                "RDMA": {"Transit Size(MB)": 0, "Transit Time(ms)": 0, "Bandwidth(GB/s)": 0,
                         "Large Packet Ratio": 0, "Size Distribution": {}}}}
    return {"step1": {"collective": {"hcom_allReduce__123_0_1@1234": info, "Total Op Info": info},
                      "p2p": {}}}


def ascend_communication_matrix(rank):
    """communication_matrix.json: per step, per collective, per src-dst link (msprof-analyze layout)."""
    slow = 2.0 if rank == 1 else 20.0
    return {"step1": {"collective": {"hcom_allReduce__123_0_1@1234": {
        "0-1": {"Transport Type": "HCCS", "Transit Size(MB)": 3.0, "Transit Time(ms)": 3.0 / slow,
                "Bandwidth(GB/s)": slow, "Op Name": "hcom_allReduce__123_0_1"},
        "1-0": {"Transport Type": "HCCS", "Transit Size(MB)": 3.0, "Transit Time(ms)": 0.15,
                "Bandwidth(GB/s)": 20.0, "Op Name": "hcom_allReduce__123_0_1"}}}, "p2p": {}}}


def ascend_kernel_details(rank, old_columns):
    """kernel_details.csv: one row per NPU task. Columns of torch_npu >= 2.1 ("Name", "Type",
    "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim") or of the
    older op_summary generation ("Op Name", "OP Type", "Task Type", "Task Start Time(us)",
    "Task Duration(us)", "Task Wait Time(us)", "Block Dim"); msprof writes large numbers with a
    trailing tab so spreadsheets keep their digits."""
    head = (["Step Id", "Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)",
             "Task Wait Time(us)", "Block Dim", "Input Shapes"] if old_columns else
            ["Step Id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)",
             "Block Dim", "Input Shapes"])
    rows = [("MatMulV2", "MatMulV2", "AI_CORE", 400, 200, 0.5, 20, '"64,64;64,64"'),
            ("Relu", "Relu", "AI_VECTOR_CORE", 610, 30, 10.0, 8, '"64,64"'),
            ("NonZero", "NonZero", "AI_CPU", 780, 250, 140.0, 1, '"64,64"'),
            ("Add", "Add", "AI_VECTOR_CORE", 1040, 20, 10.0, 8, '"64,64;64,64"'),
            ("hcom_allReduce__123_0_1", "hcom_allReduce_", "HCCL", 1070, 200 + (300 if rank == 1 else 0), 10.0, 0,
             '""')]
    lines = [",".join(head)]
    for name, typ, core, t, d, w, block, shapes in rows:
        lines.append(",".join(["1", name, typ, core, "%d.000\t" % (ASCEND_BASE + t), "%.3f" % d, "%.3f" % w,
                               str(block), shapes]))
    return "\n".join(lines) + "\n"


def ascend_step_trace_time(rank):
    """step_trace_time.csv (torch_npu): per step, the Overlap Analysis figures in us."""
    comm = 200 + (300 if rank == 1 else 0)
    head = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage",
            "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
    row = [1, 500, comm, 0, comm, 1400 - 500 - comm, 1400, 0, comm, 300]
    return ",".join(head) + "\n" + ",".join(str(v) for v in row) + "\n"


def ascend_op_statistic(rank):
    """op_statistic.csv: per operator type and core (msprof's header, with Device_id)."""
    head = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
            "Max Time(us)", "Ratio(%)"]
    rows = [[rank, "NonZero", "AI_CPU", 1, 250, 250, 250, 250, 50.0], [rank, "MatMulV2", "AI_CORE", 1, 200, 200, 200, 200, 40.0],
            [rank, "Relu", "AI_VECTOR_CORE", 1, 30, 30, 30, 30, 6.0], [rank, "Add", "AI_VECTOR_CORE", 1, 20, 20, 20, 20, 4.0]]
    return "\n".join([",".join(head)] + [",".join(str(v) for v in r) for r in rows]) + "\n"


def write_ascend_pt(folder, rank, old_columns):
    out = os.path.join(folder, "ASCEND_PROFILER_OUTPUT")
    os.makedirs(out, exist_ok=True)
    rel = os.path.relpath(out, HERE)
    write(os.path.join(rel, "trace_view.json"), ascend_pt_trace_view(rank))
    write(os.path.join(rel, "communication.json"), ascend_communication(rank))
    write(os.path.join(rel, "communication_matrix.json"), ascend_communication_matrix(rank))
    with open(os.path.join(out, "kernel_details.csv"), "w") as f:
        f.write(ascend_kernel_details(rank, old_columns))
    with open(os.path.join(out, "step_trace_time.csv"), "w") as f:
        f.write(ascend_step_trace_time(rank))
    with open(os.path.join(out, "op_statistic.csv"), "w") as f:
        f.write(ascend_op_statistic(rank))
    write(os.path.join(os.path.relpath(folder, HERE), "profiler_info_%d.json" % rank),
          {"config": {"common_config": {"activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"]}},
           "rank_id": rank})


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
    write("kineto_old_generation.json", kineto_old_generation())
    write("kineto_old_generation_faster.json", kineto_old_generation(0.5))
    write("third_vendor.json", third_vendor())
    write_ascend_pt(os.path.join(HERE, "ascend_pt", "node0_1001_20240101_ascend_pt"), 0, old_columns=False)
    write_ascend_pt(os.path.join(HERE, "ascend_pt", "node0_1002_20240101_ascend_pt"), 1, old_columns=True)
    with open(os.path.join(HERE, "crosstrain_cpu.json"), "rb") as src:
        with gzip.GzipFile(os.path.join(HERE, "crosstrain_cpu.json.gz"), "wb", mtime=0) as dst:
            dst.write(src.read())

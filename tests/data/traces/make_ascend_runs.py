#!/usr/bin/env python3
"""Writes tests/data/traces/ascend_runs/: two profiler runs of one 2-rank data-parallel job on
Ascend NPUs, at torch_npu profiler level 0 and level 1, in the layout torch_npu writes:

    ascend_runs/level0/<host>_<pid>_<time>_ascend_pt/{profiler_info_<rank>.json, ASCEND_PROFILER_OUTPUT/}
    ascend_runs/level1/...

No NPU runs here, so the files are built from the writers' sources (read, not copied):
- trace_view.json is msprof's timeline plus torch_npu's framework events (torch_npu
  profiler/analysis/prof_view/_trace_view_parser.py). msprof's Ascend Hardware assembler
  (msprof analysis/csrc/application/timeline/ascend_hardware_assembler.cpp) names a task by its
  operator when it is a compute task, otherwise by its device task type for FFTS+ tasks, which is
  how HCCL's tasks arrive: name and "Task Type" both "Notify Wait", "SDMA", "Write Value",
  "Notify Record" (task_processor.cpp, ascend_task_association.cpp). The HCCL assembler writes
  a "Communication" process with a "Group <name> Communication" thread of collectives and
  "Plane <n>" threads of their tasks (hccl_assembler.cpp). The Overlap Analysis track is the union
  of compute tasks ("Computing"), the union of collectives ("Communication"), their difference and
  the gaps ("Free") (overlap_analysis_processor.cpp).
- Level 0 (torch_npu _profiler_config.py LEVEL_TRACE_PRUNE_CONFIG) drops every event whose name
  starts with CANN, AscendCL, Runtime, GE, Node, Model, Hccl, acl_to_npu or Communication@: no CANN
  process is left; compute tasks carry the host task type (KERNEL_AICORE, KERNEL_AIVEC ...) and
  kernel_details.csv has "N/A" in "Accelerator Core". Level 1 keeps the CANN calls and their
  HostToDevice flows, and the tasks carry the core (AI_CORE, AI_VECTOR_CORE, AI_CPU).
- step_trace_time.csv follows torch_npu's TraceStepTimeParser: each Overlap Analysis event counts
  in the step whose device range [first task of the step, max(last task end, ProfilerStep end))
  holds its start; Overlapped = Communication - Communication(Not Overlapped).

Each step: 12 compute tasks (~3 ms), then a DDP all-reduce that starts under the last compute
tasks and waits for the other rank (Notify Wait) much longer than it moves data; rank 1 computes
10% slower, so rank 0 waits. loss.item() ends each step: aten::item -> aten::_local_scalar_dense,
and at level 1 the AscendCL@aclrtSynchronizeStream call it makes, on the CANN process under the
same thread id. Deterministic: re-running writes the same bytes.
"""
import csv
import io
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "ascend_runs")
BASE_US = 1767225600000000  # 2026-01-01 UTC, in us

COMPUTE = [  # (torch op, task name, level-1 core, level-0 host task type, duration us)
    ("aten::linear", "MatMulV2", "AI_CORE", "KERNEL_AICORE", 410),
    ("aten::add", "Add", "AI_VECTOR_CORE", "KERNEL_AIVEC", 95),
    ("aten::relu", "Relu", "AI_VECTOR_CORE", "KERNEL_AIVEC", 60),
    ("aten::linear", "MatMulV2", "AI_CORE", "KERNEL_AICORE", 390),
    ("aten::layer_norm", "LayerNormV3", "AI_VECTOR_CORE", "KERNEL_AIVEC", 120),
    ("aten::nonzero", "NonZero", "AI_CPU", "KERNEL_AICPU", 180),
    ("aten::mul", "Mul", "AI_VECTOR_CORE", "KERNEL_AIVEC", 70),
    ("aten::mm", "MatMulV2", "AI_CORE", "KERNEL_AICORE", 420),
    ("aten::mm", "MatMulV2", "AI_CORE", "KERNEL_AICORE", 400),
    ("aten::sum", "ReduceSum", "AI_VECTOR_CORE", "KERNEL_AIVEC", 85),
    ("aten::mul", "Mul", "AI_VECTOR_CORE", "KERNEL_AIVEC", 65),
    ("aten::add", "Add", "AI_VECTOR_CORE", "KERNEL_AIVEC", 90),
]
STEPS = 3
COMPUTE_STREAM, COMM_STREAM = 2, 7


def ts(us):
    return "%.3f" % (BASE_US + us)


class Timeline:
    def __init__(self):
        self.events = []

    def meta(self, kind, pid, tid, key, value):
        self.events.append({"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": {key: value}})

    def x(self, name, pid, tid, start, dur, cat=None, args=None):
        e = {"name": name, "pid": pid, "tid": tid, "ts": ts(start), "dur": round(dur, 3), "ph": "X"}
        if cat:
            e["cat"] = cat
        e["args"] = args or {}
        self.events.append(e)

    def flow(self, cat, name, fid, s_pid, s_tid, s_t, f_pid, f_tid, f_t):
        self.events.append({"ph": "s", "bp": "e", "name": name, "id": fid, "pid": s_pid, "tid": s_tid,
                            "ts": ts(s_t), "cat": cat})
        self.events.append({"ph": "f", "bp": "e", "name": name, "id": fid, "pid": f_pid, "tid": f_tid,
                            "ts": ts(f_t), "cat": cat})


def union(sections):
    out = []
    for a, b in sorted(sections):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def difference(a_sections, b_sections):
    out = []
    for a, b in a_sections:
        cur = a
        for c, d in b_sections:
            if d <= cur or c >= b:
                continue
            if c > cur:
                out.append([cur, c])
            cur = max(cur, d)
        if cur < b:
            out.append([cur, b])
    return out


def run(level, rank):
    slow = 1.10 if rank == 1 else 1.0
    py = 39560 + rank             # framework process; main thread tid == pid
    deq = py + 7                  # the task queue's dequeue thread
    cann, hw, comm_pid, overlap = py * 100 + 2, py * 100 + 4, py * 100 + 5, py * 10000 + 1100
    t = Timeline()
    t.meta("process_name", py, 0, "name", "Python")
    t.meta("process_labels", py, 0, "labels", "CPU")
    if level == 1:
        t.meta("process_name", cann, 0, "name", "CANN")
        t.meta("process_labels", cann, 0, "labels", "CPU")
    for pid, name in [(hw, "Ascend Hardware"), (comm_pid, "Communication"), (overlap, "Overlap Analysis")]:
        t.meta("process_name", pid, 0, "name", name)
        t.meta("process_labels", pid, 0, "labels", "NPU %d" % rank)
    for stream in (COMPUTE_STREAM, COMM_STREAM):
        t.meta("thread_name", hw, stream, "name", "Stream %d" % stream)
    t.meta("thread_name", comm_pid, 0, "name", "Group hccl_world_group Communication")
    if level == 1:
        t.meta("thread_name", comm_pid, 1, "name", "Plane 0")
    names = {0: "Computing", 1: "Communication", 2: "Communication(Not Overlapped)", 3: "Free"}
    for tid, name in names.items():
        t.meta("thread_name", overlap, tid, "name", name)

    compute, collectives, all_tasks, kernel_rows, step_ranges = [], [], [], [], []
    flow_id = [0]
    task_id = [0]

    def task(name, stream, start, dur, task_type):
        task_id[0] += 1
        t.x(name, hw, stream, start, dur, None, {"Model Id": 4294967295, "Task Type": task_type,
                                                "Physic Stream Id": stream, "Task Id": task_id[0],
                                                "Batch Id": 0, "Subtask Id": 4294967295,
                                                "connection_id": 10000 + task_id[0]})
        all_tasks.append((start, start + dur))

    s0 = 1000
    for k in range(STEPS):
        host = s0 + 60
        device = s0 + 400  # the first task waits for the task queue to hand it over
        first_task = device
        for i, (op, kernel, core, host_type, dur) in enumerate(COMPUTE):
            dur = round(dur * slow, 3)
            t.x(op, py, py, host, 40, "cpu_op", {"Sequence number": 100 * k + i, "Fwd thread id": 0})
            t.x("Enqueue", py, py, host + 30, 6, "enqueue", {"correlation_id": 1000 * k + i})
            call = max(host + 120, device - 60)
            t.x("Dequeue@" + op, py, deq, call - 10, 45, "dequeue", {"correlation_id": 1000 * k + i})
            flow_id[0] += 1
            if level == 1:
                acl = "AscendCL@aclnn" + kernel.replace("V2", "").replace("V3", "")
                t.x(acl, cann, deq, call, 25)
            # Level 0 prunes the CANN calls but not their flows: those start on a process with no events.
            t.flow("HostToDevice", "HostToDevice%d" % flow_id[0], flow_id[0], cann, deq, call, hw, COMPUTE_STREAM,
                   device)
            t.flow("async_npu", "torch_to_npu", flow_id[0] + 50000, py, py, host, hw, COMPUTE_STREAM, device)
            task(kernel, COMPUTE_STREAM, device, dur, core if level == 1 else host_type)
            compute.append((device, device + dur))
            kernel_rows.append([k + 1, rank, kernel, kernel, core if level == 1 else "N/A", ts(device) + "\t",
                                "%.3f" % dur, "%.3f" % (0.5 if i == 0 else 1.0), 20 if core == "AI_CORE" else 8,
                                "\"64,1024;1024,1024\""])
            host += 90
            device += dur + 2
        compute_end = device
        # DDP's all-reduce: launched while the last compute tasks run, then waits for the peer.
        t.x("c10d::allreduce_", py, py, host, 50, "cpu_op", {"Sequence number": 100 * k + 99})
        c_start = compute_end - 480 * slow
        wait = 9500 if rank == 0 else 9260  # rank 0 waits for the slower rank 1
        if level == 1:
            t.x("HcclAllreduce", cann, py, host + 5, 40)  # pruned at level 0 ("Hccl")
        c = c_start
        plane = []
        for name, dur in [("Notify Record", 1.2), ("Notify Wait", wait), ("SDMA", 310), ("Write Value", 1.1),
                          ("Notify Record", 1.2), ("Notify Wait", 140), ("SDMA", 300), ("Write Value", 1.1),
                          ("Notify Wait", 35)]:
            task(name, COMM_STREAM, c, dur, name)
            plane.append((name.replace(" ", "_") if name != "SDMA" else "Memcpy", c, dur))
            c += dur + 0.8
        c_end = c - 0.8
        op_name = "hcom_allReduce__%d_%d_1" % (560 + rank, k)
        t.x(op_name, comm_pid, 0, c_start, c_end - c_start, None,
            {"rank_size": 2, "connection_id": 90000 + k, "model id": 4294967295, "data_type": "FP32",
             "alg_type": "MESH-RING-NA-NA", "count": 4194304, "relay": "no", "retry": "no"})
        if level == 1:
            for name, start, dur in plane:
                t.x(name, comm_pid, 1, start, dur, None,
                    {"notify_id": 4294967295, "duration estimated(us)": 1.0, "stream id": COMM_STREAM,
                     "task id": 0, "context id": 4294967295, "task type": name, "src rank": rank,
                     "dst rank": 1 - rank, "transport type": "SDMA" if name == "Memcpy" else "LOCAL",
                     "size(Byte)": 8388608 if name == "Memcpy" else 0, "data type": "FP32",
                     "link type": "HCCS", "bandwidth(GB/s)": 27.06 if name == "Memcpy" else 0,
                     "model id": 4294967295})
        collectives.append((c_start, c_end))
        # loss.item(): the host waits until the device is done.
        item_start = host + 120
        item_end = c_end + 25
        t.x("aten::item", py, py, item_start, item_end - item_start, "cpu_op", {"Sequence number": 100 * k + 98})
        t.x("aten::_local_scalar_dense", py, py, item_start + 4, item_end - item_start - 8, "cpu_op")
        if level == 1:
            t.x("AscendCL@aclrtSynchronizeStream", cann, py, item_start + 10, item_end - item_start - 20)
        step_end = item_end + 30
        t.x("ProfilerStep#%d" % (k + 1), py, py, s0, step_end - s0, "cpu_op")
        step_ranges.append((k + 1, first_task, max(c_end, step_end), s0))
        s0 = step_end

    comp_u, comm_u = union(compute), union(collectives)
    not_ov = difference(comm_u, comp_u)
    begin, end = min(a for a, _ in all_tasks), max(b for _, b in all_tasks)
    free = difference([[begin, end]], union(comp_u + comm_u))
    sums = {s[0]: {"Computing": 0.0, "Communication": 0.0, "Communication(Not Overlapped)": 0.0, "Free": 0.0}
            for s in step_ranges}
    for tid, (name, sections) in enumerate([("Computing", comp_u), ("Communication", comm_u),
                                            ("Communication(Not Overlapped)", not_ov), ("Free", free)]):
        for a, b in sections:
            t.x(name, overlap, tid, a, b - a)
            for step, lo, hi, _ in step_ranges:
                if lo <= a < hi:
                    sums[step][name] += b - a
    # step_trace_time.csv
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["Device_id", "Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication",
                "Free", "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"])
    for step, lo, hi, fwk_start in step_ranges:
        s = sums[step]
        w.writerow([rank, step, "%.3f" % s["Computing"], "%.3f" % s["Communication(Not Overlapped)"],
                    "%.3f" % (s["Communication"] - s["Communication(Not Overlapped)"]), "%.3f" % s["Communication"],
                    "%.3f" % s["Free"], "%.3f" % (hi - lo), "0.000", "%.3f" % s["Communication(Not Overlapped)"],
                    "%.3f" % (lo - fwk_start)])
    step_trace = out.getvalue()
    # kernel_details.csv
    head = ["Step Id", "Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)",
            "Wait Time(us)", "Block Num", "Input Shapes"]
    kernels = "".join(",".join(str(c) for c in row) + "\n" for row in [head] + kernel_rows)
    return t.events, step_trace, kernels


def communication_json(rank):
    info = {}
    for k in range(STEPS):
        wait = 9.5 if rank == 0 else 9.26
        info["step%d" % (k + 1)] = {"collective": {"hcom_allReduce__%d_%d_1@hccl_world_group" % (560 + rank, k): {
            "Communication Time Info": {"Start Timestamp(us)": BASE_US + 1000 + k * 12400, "Elapse Time(ms)":
                                        round(wait + 0.8, 4), "Transit Time(ms)": 0.61, "Wait Time(ms)": round(wait, 4),
                                        "Synchronization Time(ms)": round(wait, 4), "Idle Time(ms)": 0.0,
                                        "Wait Time Ratio": round(wait / (wait + 0.61), 4),
                                        "Synchronization Time Ratio": round(wait / (wait + 0.61), 4)},
            "Communication Bandwidth Info": {"SDMA": {"Transit Size(MB)": 16.777, "Transit Time(ms)": 0.61,
                                                      "Bandwidth(GB/s)": 27.5, "Large Packet Ratio": 1.0,
                                                      "Size Distribution": {"8.388608": [2, 0.61]}}}}},
            "p2p": {}}
    return info


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    for level in (0, 1):
        for rank in (0, 1):
            folder = os.path.join(OUT, "level%d" % level, "node0_%d_2026010100000%d%d_ascend_pt" % (39560 + rank, level,
                                                                                                 rank))
            output = os.path.join(folder, "ASCEND_PROFILER_OUTPUT")
            os.makedirs(output)
            events, step_trace, kernels = run(level, rank)
            with open(os.path.join(output, "trace_view.json"), "w") as f:
                json.dump(events, f, indent=None, separators=(",", ":"))
            with open(os.path.join(output, "step_trace_time.csv"), "w") as f:
                f.write(step_trace)
            with open(os.path.join(output, "kernel_details.csv"), "w") as f:
                f.write(kernels)
            if level == 1:
                with open(os.path.join(output, "communication.json"), "w") as f:
                    json.dump(communication_json(rank), f, indent=1)
            info = {"config": {"common_config": {"activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                                                 "schedule": {"wait": 1, "warmup": 1, "active": STEPS, "repeat": 1,
                                                              "skip_first": 0},
                                                 "record_shapes": False, "profile_memory": False,
                                                 "with_stack": False, "with_flops": False, "with_modules": False},
                               "experimental_config": {"_profiler_level": "Level%d" % level,
                                                       "_aic_metrics": "ACL_AICORE_NONE" if level == 0 else
                                                       "ACL_AICORE_PIPE_UTILIZATION",
                                                       "_export_type": ["text"], "_data_simplification": True}},
                    "start_info": {"syscnt_enable": True, "freq": 100.0, "start_cnt": 0, "start_monotonic": 0},
                    "end_info": {"collectionTimeEnd": BASE_US * 1000 + 70000000, "MonotonicTimeEnd": 70000000},
                    "torch_npu_version": "2.11.0.post3", "cann_version": "8.3.RC1", "rank_id": rank}
            with open(os.path.join(folder, "profiler_info_%d.json" % rank), "w") as f:
                json.dump(info, f, indent=1)


if __name__ == "__main__":
    main()

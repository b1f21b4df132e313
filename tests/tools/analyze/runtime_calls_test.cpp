// Runtime calls that set the pace (tests/data/traces/make_allocator_traces.py): an MI300X run with
// the caching allocator off, where 1,360 hipFree calls take ~98.6% of the steps, and an A100 run
// calling torch.cuda.empty_cache() each step, where 3 cudaFree calls take ~49%. The analysis names
// the calls, counts the frees as the device syncs they are, and the advisor blames the allocator.
#include <gtest/gtest.h>

#include <set>

#include "tools/analyze/advisor.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/analysis_report.h"
#include "tools/analyze/kineto_trace_writer.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;
using crosstrain::analyze::testing::KinetoTraceWriter;

namespace {

const std::string kData = std::string(CROSSTRAIN_SOURCE_DIR) + "/tests/data/traces/";

TraceAnalysis analyzed(const std::string& file) {
  auto a = analyze_trace(read_trace_file(kData + file));
  a.findings = run_advisor(a);
  return a;
}

const NamedTotal* named(const std::vector<NamedTotal>& v, const std::string& n) {
  for (const auto& e : v)
    if (e.name == n) return &e;
  return nullptr;
}

}  // namespace

TEST(RuntimeCalls, HipFreeWithoutTheCachingAllocatorIsNamed) {
  auto a = analyzed("rocm_mi300x_hipfree.json.gz");
  ASSERT_FALSE(a.runtime_calls.empty());
  EXPECT_EQ(a.runtime_calls[0].name, "hipFree");
  EXPECT_EQ(a.runtime_calls[0].count, 1360);
  EXPECT_NEAR(a.share(a.runtime_calls[0].total_us), 0.986, 0.005);
  ASSERT_NE(named(a.allocator_calls, "hipMalloc"), nullptr);
  EXPECT_EQ(named(a.allocator_calls, "hipMalloc")->count, 120);
  EXPECT_GT(a.share(a.allocator_us), 0.98);
  // Every hipFree waits for the device: a sync, and the sync time stays inside the steps.
  ASSERT_NE(named(a.host_syncs, "hipFree"), nullptr);
  EXPECT_EQ(named(a.host_syncs, "hipFree")->count, 1360);
  EXPECT_LE(a.host_sync_us, a.total.duration_us);
  // The allocator comes first: the data-loading and launch findings are its symptoms.
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].rule, "allocator");
  EXPECT_NE(a.findings[0].evidence.find("hipFree x1,360"), std::string::npos) << a.findings[0].evidence;
  // The DataLoader's __next__ is slow because it frees the previous batch: its finding says so.
  EXPECT_GT(a.allocator_in_data_loading_us, 0.95 * a.total.data_wait_us);
  for (const auto& f : a.findings)
    if (f.rule == "data_loading") EXPECT_NE(f.evidence.find("in memory allocation calls"), std::string::npos) << f.evidence;
}

TEST(RuntimeCalls, EmptyCacheEveryStepIsNamed) {
  auto a = analyzed("a100_cudafree.json.gz");
  ASSERT_FALSE(a.runtime_calls.empty());
  EXPECT_EQ(a.runtime_calls[0].name, "cudaFree");
  EXPECT_EQ(a.runtime_calls[0].count, 3);
  EXPECT_NEAR(a.share(a.runtime_calls[0].total_us), 0.49, 0.01);
  ASSERT_NE(named(a.host_syncs, "cudaFree"), nullptr);
  EXPECT_EQ(a.host_sync_count, 3);
  bool allocator = false;
  for (const auto& f : a.findings) allocator = allocator || f.rule == "allocator";
  EXPECT_TRUE(allocator);
}

// Three threads in the same call at the same time (DataLoader pin-memory threads, several
// streams' copies): the step's share is the time the call ran at all, never above the step; the
// sum over threads is said beside it.
TEST(RuntimeCalls, CallsOnThreadsAtOnceAreAShareOfTheStepNotASum) {
  KinetoTraceWriter w;
  w.step("ProfilerStep#1", 0, 1000).op("aten::mm", 0, 10);
  w.launch(1, 2, "gemm", 5, 50);
  for (int tid = 1; tid <= 3; ++tid) w.runtime("cudaMemcpyAsync", 50 + 10 * tid, 900 - 20 * tid, tid);
  auto a = analyze_trace(parse_trace(w.json(), "t.json"));
  a.findings = run_advisor(a);
  const NamedTotal* copy = named(a.runtime_calls, "cudaMemcpyAsync");
  ASSERT_NE(copy, nullptr);
  EXPECT_DOUBLE_EQ(copy->total_us, 880 + 860 + 840);
  EXPECT_DOUBLE_EQ(copy->wall_us, 880);  // [60, 940) covers the other two
  const Finding* f = nullptr;
  for (const auto& x : a.findings)
    if (x.rule == "runtime_call") f = &x;
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->value, 0.88, 1e-9);
  EXPECT_NE(f->evidence.find("summed over threads"), std::string::npos) << f->evidence;
  EXPECT_NE(render_console(a, {10}).find("88.0% of step time, threads at once"), std::string::npos);
}

// Stream-ordered frees return at once: neither syncs nor a reason for the allocator rule.
TEST(RuntimeCalls, AsyncFreesAreNotSyncs) {
  KinetoTraceWriter w;
  w.step("ProfilerStep#1", 0, 1000).op("aten::mm", 0, 10);
  w.launch(1, 2, "gemm", 5, 900);
  for (int i = 0; i < 20; ++i) w.runtime("cudaFreeAsync", 20 + 40.0 * i, 30);
  auto a = analyze_trace(parse_trace(w.json(), "t.json"));
  EXPECT_EQ(a.host_sync_count, 0);
  EXPECT_TRUE(a.allocator_calls.empty());
  ASSERT_FALSE(a.runtime_calls.empty());
  EXPECT_EQ(a.runtime_calls[0].name, "cudaFreeAsync");
  for (const auto& f : run_advisor(a)) EXPECT_NE(f.rule, "allocator");
}

// Syncs on two threads at the same time: their time is a union, not a sum.
TEST(RuntimeCalls, ConcurrentSyncsNeverExceedTheStep) {
  auto t = parse_trace(R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": 100, "dur": 800},
    {"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 2, "ts": 100, "dur": 800},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 110, "dur": 780},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 2, "ts": 110, "dur": 780},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 3, "ts": 150, "dur": 800},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 900, "args": {"correlation": 1}}]})",
                       "t.json");
  auto a = analyze_trace(t);
  EXPECT_EQ(a.host_sync_count, 3);
  EXPECT_DOUBLE_EQ(a.host_sync_us, 850);  // [100, 950)
  EXPECT_LE(a.host_sync_us, a.total.duration_us);
}

// The Ascend profiler records CANN calls in a process of their own under the thread id of the
// Python thread that made them: loss.item()'s aclrtSynchronizeStream is inside that aten::item,
// one wait (it used to count twice: 2 syncs and 2x the time).
TEST(RuntimeCalls, ASyncOnAnotherProcessOfTheSameThreadCountsOnce) {
  auto t = parse_trace(R"([
    {"name": "process_name", "ph": "M", "pid": 100, "tid": 0, "args": {"name": "Python"}},
    {"name": "process_name", "ph": "M", "pid": 200, "tid": 0, "args": {"name": "CANN"}},
    {"name": "process_name", "ph": "M", "pid": 300, "tid": 0, "args": {"name": "Ascend Hardware"}},
    {"name": "ProfilerStep#1", "ph": "X", "pid": 100, "tid": 7, "ts": "0.000", "dur": 1000, "cat": "cpu_op"},
    {"name": "aten::add", "ph": "X", "pid": 100, "tid": 7, "ts": "10.000", "dur": 20, "cat": "cpu_op"},
    {"name": "AscendCL@aclnnAdd", "ph": "X", "pid": 200, "tid": 7, "ts": "12.000", "dur": 10},
    {"name": "Add", "ph": "X", "pid": 300, "tid": 2, "ts": "40.000", "dur": 700, "args": {"Task Type": "AI_VECTOR_CORE"}},
    {"name": "aten::item", "ph": "X", "pid": 100, "tid": 7, "ts": "100.000", "dur": 800, "cat": "cpu_op"},
    {"name": "aten::_local_scalar_dense", "ph": "X", "pid": 100, "tid": 7, "ts": "105.000", "dur": 790, "cat": "cpu_op"},
    {"name": "AscendCL@aclrtSynchronizeStream", "ph": "X", "pid": 200, "tid": 7, "ts": "110.000", "dur": 700}])",
                       "ascend.json");
  auto a = analyze_trace(t);
  EXPECT_EQ(a.host_sync_count, 1);
  ASSERT_EQ(a.host_syncs.size(), 1u);
  EXPECT_EQ(a.host_syncs[0].name, "aten::item");
  EXPECT_DOUBLE_EQ(a.host_sync_us, 800);
}

// AdamW (torch.optim, capturable=False) keeps each parameter's step count in a CPU tensor and reads
// it with .item() every step: in a GPU trace those reads have no runtime call under them and wait
// for nothing. loss.item() copies from the device (cudaMemcpyAsync, then the stream synchronize
// under _local_scalar_dense): that one is the step's sync.
TEST(RuntimeCalls, ReadsOfHostTensorsAreNotSyncsInATraceWithRuntimeCalls) {
  KinetoTraceWriter w;
  w.step("ProfilerStep#1", 0, 1000).launch(1, 4, "gemm_kernel", 6, 500);
  for (int p = 0; p < 20; ++p)  // the optimizer's step counters
    w.op("aten::item", 520 + 10 * p, 4).op("aten::_local_scalar_dense", 521 + 10 * p, 2);
  w.op("aten::item", 800, 150).op("aten::_local_scalar_dense", 802, 146);
  w.runtime("cudaMemcpyAsync", 804, 6).runtime("cudaStreamSynchronize", 812, 130);
  auto a = analyze_trace(parse_trace(w.json(), "adamw.json"));
  EXPECT_EQ(a.host_sync_count, 1);
  ASSERT_EQ(a.host_syncs.size(), 1u);
  EXPECT_EQ(a.host_syncs[0].name, "aten::item");
  EXPECT_DOUBLE_EQ(a.host_sync_us, 150);
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.steps[0].host_syncs, 1);
}

// Without runtime calls in the trace (a CPU-only profile, or one without CUDA activities) nothing
// tells a host read from a device one: every read counts, as before.
TEST(RuntimeCalls, ReadsCountWhenTheTraceHasNoRuntimeCalls) {
  KinetoTraceWriter w;
  w.step("ProfilerStep#1", 0, 1000);
  for (int p = 0; p < 3; ++p) w.op("aten::item", 100 + 100 * p, 40).op("aten::_local_scalar_dense", 101 + 100 * p, 30);
  auto a = analyze_trace(parse_trace(w.json(), "cpu.json"));
  EXPECT_EQ(a.host_sync_count, 3);
  ASSERT_EQ(a.host_syncs.size(), 1u);
  EXPECT_EQ(a.host_syncs[0].count, 3);
}

namespace {

std::set<std::string> rules_of(const TraceAnalysis& a) {
  std::set<std::string> out;
  for (const auto& f : a.findings) out.insert(f.rule);
  return out;
}

const Finding* finding(const TraceAnalysis& a, const std::string& rule) {
  for (const auto& f : a.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

// Three steps of 40 small kernels each, the host launching every 20 us; with `long_launch_us` the
// cudaLaunchKernel number `long_call` (0: the first) takes that long (CUDA loading the kernel's
// module at that kernel's first launch), as in a trace whose first launch was 358 ms of 560.
TraceAnalysis lazy_loading(double long_launch_us, int long_call = 0) {
  KinetoTraceWriter w;
  w.compute_major(9);
  double t = 0;
  for (int k = 0; k < 3; ++k) {
    const double t0 = t;
    double at = t0 + 5;
    for (int i = 0; i < 40; ++i) {
      const double call = k * 40 + i == long_call ? long_launch_us : 6;
      w.op("aten::add", at - 1, call + 2).launch(at, call, "vectorized_elementwise_kernel", at + call + 2, 4);
      at += call + 14;
    }
    t = at + 20;
    w.step("ProfilerStep#" + std::to_string(k), t0, t - t0);
  }
  auto a = analyze_trace(parse_trace(w.json(), "lazy.json"));
  a.findings = run_advisor(a);
  return a;
}

}  // namespace

// A first launch that takes most of the trace is named, with its share, as the one-time cost it
// is; the device-idle advice says it is inside its figure. Without it, no such finding.
TEST(RuntimeCalls, AFirstCallThatTakesMostOfTheTraceIsNamedAsOneTime) {
  const auto a = lazy_loading(358000);
  EXPECT_EQ(a.longest_runtime_call.name, "cudaLaunchKernel");
  EXPECT_TRUE(a.longest_runtime_call.first);
  EXPECT_EQ(a.longest_runtime_call.calls, 120);
  EXPECT_DOUBLE_EQ(a.longest_runtime_call.others_median_us, 6);
  const Finding* f = finding(a, "one_time_call");
  ASSERT_NE(f, nullptr) << a.findings.size();
  EXPECT_EQ(a.findings.front().rule, "one_time_call");
  EXPECT_NEAR(f->value, 358000.0 / a.total.duration_us, 1e-9);
  EXPECT_GT(f->value, 0.9);
  EXPECT_NE(f->measured.find("the first cudaLaunchKernel took 358"), std::string::npos) << f->measured;
  EXPECT_NE(f->evidence.find("into ProfilerStep#0"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("median 6.0 us"), std::string::npos) << f->evidence;
  EXPECT_NE(f->suggestion.find("CUDA_MODULE_LOADING"), std::string::npos);
  // Its one call is no reason to call cudaLaunchKernel the step's pace-setter.
  EXPECT_EQ(finding(a, "runtime_call"), nullptr);
  const Finding* idle = finding(a, "device_idle");
  ASSERT_NE(idle, nullptr);
  EXPECT_NE(idle->evidence.find("one-time cost"), std::string::npos) << idle->evidence;

  const auto plain = lazy_loading(6);
  EXPECT_EQ(rules_of(plain).count("one_time_call"), 0u);
  EXPECT_EQ(rules_of(plain).count("runtime_call"), 1u);  // launches are most of the host's time here
  for (const auto& g : plain.findings) EXPECT_EQ(g.evidence.find("one-time"), std::string::npos) << g.rule;
}

// Under lazy module loading each kernel's module loads at that kernel's own first launch, seldom the
// first launch of the trace: in a resnet50 trace of pytorch/kineto's tb_plugin samples (V100) call
// #253 of 9,329 cudaLaunchKernel took 1.565 s, the others 11 us at the median and 188.5 ms in all.
// One call 100x the others' median that is most of its name's time is that one-time cost, whichever
// call it is; left in, it made cudaLaunchKernel the pace-setter at 33% of the trace.
TEST(RuntimeCalls, ALaterCallThatTakesMostOfTheTraceIsNamedAsOneTime) {
  const auto a = lazy_loading(358000, /*long_call=*/25);
  const auto& l = a.longest_runtime_call;
  EXPECT_EQ(l.name, "cudaLaunchKernel");
  EXPECT_FALSE(l.first);
  EXPECT_EQ(l.ordinal, 26);
  EXPECT_TRUE(l.one_time);
  EXPECT_DOUBLE_EQ(l.others_median_us, 6);
  EXPECT_DOUBLE_EQ(l.others_total_us, 119 * 6);
  const Finding* f = finding(a, "one_time_call");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(a.findings.front().rule, "one_time_call");
  EXPECT_NE(f->measured.find("cudaLaunchKernel call #26 took 358"), std::string::npos) << f->measured;
  EXPECT_NE(f->evidence.find("call #26 took 358"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("median 6.0 us each, 714.0 us in all"), std::string::npos) << f->evidence;
  EXPECT_EQ(finding(a, "runtime_call"), nullptr);
  const auto j = analysis_to_json(a);
  EXPECT_EQ(j["longest_runtime_call"]["ordinal"].get<int64_t>(), 26);
  EXPECT_TRUE(j["longest_runtime_call"]["one_time"].get<bool>());
}

// Launches held up by a full launch queue (the host far ahead of the device) are many long calls:
// the longest is 100x the median but not most of the launches' time, so no one-time cost, and
// cudaLaunchKernel is the pace-setter it is.
TEST(RuntimeCalls, ManyLongLaunchesAreNoOneTimeCost) {
  KinetoTraceWriter w;
  w.compute_major(9);
  double at = 5;
  w.step("ProfilerStep#0", 0, 40000);
  for (int i = 0; i < 120; ++i) {
    const double call = i % 12 == 11 ? 1000 + i : 6;  // ten calls of ~1 ms
    w.launch(at, call, "vectorized_elementwise_kernel", at + call + 2, 4);
    at += call + 14;
  }
  auto a = analyze_trace(parse_trace(w.json(), "queue.json"));
  a.findings = run_advisor(a);
  EXPECT_GE(a.longest_runtime_call.duration_us, 100 * a.longest_runtime_call.others_median_us);
  EXPECT_FALSE(a.longest_runtime_call.one_time);
  EXPECT_EQ(finding(a, "one_time_call"), nullptr);
  const Finding* f = finding(a, "runtime_call");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->measured.rfind("cudaLaunchKernel: ", 0), 0u) << f->measured;
  EXPECT_EQ(f->evidence.find("one-time"), std::string::npos) << f->evidence;
}

// A blocking copy waits for the work queued before it, like a synchronize: one that waited for a
// long kernel is an outlier of its name, but no one-time cost, whichever call it is.
TEST(RuntimeCalls, ABlockingCopyThatWaitedIsNoOneTimeCost) {
  KinetoTraceWriter w;
  w.compute_major(9);
  for (int k = 0; k < 4; ++k) {
    const double t0 = k * 5000.0, work = k == 2 ? 4000 : 30;
    w.step("ProfilerStep#" + std::to_string(k), t0, 5000).launch(t0 + 5, 5, "gemm", t0 + 12, work);
    w.copy("cudaMemcpy", t0 + 15, work + 10, "Memcpy DtoH (Device -> Pageable)", t0 + 14 + work, 2);
  }
  auto a = analyze_trace(parse_trace(w.json(), "blocking_copy.json"));
  a.findings = run_advisor(a);
  EXPECT_EQ(a.longest_runtime_call.name, "cudaLaunchKernel");  // waits left out
  EXPECT_EQ(finding(a, "one_time_call"), nullptr);
  const Finding* f = finding(a, "runtime_call");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->measured.rfind("cudaMemcpy: ", 0), 0u) << f->measured;
}

// A call that sets the pace every step (a synchronize after each step's work) is named with its
// share. Its first call being the longest makes it no one-time cost: a wait lasts as long as the
// work queued before it.
TEST(RuntimeCalls, ARuntimeCallThatSetsThePaceIsNamed) {
  KinetoTraceWriter w;
  w.compute_major(9);
  for (int k = 0; k < 3; ++k) {
    const double t0 = k * 5000.0;
    w.step("ProfilerStep#" + std::to_string(k), t0, 5000).launch(t0 + 5, 5, "gemm", t0 + 12, k == 0 ? 4000 : 300);
    w.runtime("cudaStreamSynchronize", t0 + 15, k == 0 ? 4000 : 300);
  }
  auto a = analyze_trace(parse_trace(w.json(), "sync.json"));
  a.findings = run_advisor(a);
  const Finding* f = finding(a, "runtime_call");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->measured.rfind("cudaStreamSynchronize: ", 0), 0u) << f->measured;
  EXPECT_NE(f->evidence.find("cudaStreamSynchronize x3"), std::string::npos) << f->evidence;
  EXPECT_EQ(a.longest_runtime_call.name, "cudaLaunchKernel");  // waits left out
  EXPECT_EQ(finding(a, "one_time_call"), nullptr);
}

// Launches without any device activity: the trace was recorded without the device's activities.
// The analysis says so in one line and leaves out what needs device events; a trace with its
// kernels, and a CPU trace without launches, say nothing of the kind.
TEST(RuntimeCalls, LaunchesWithoutDeviceActivityAreSaidToMissTheDevice) {
  KinetoTraceWriter w;
  for (int k = 0; k < 2; ++k) {
    const double t0 = k * 2000.0;
    w.step("ProfilerStep#" + std::to_string(k), t0, 2000);
    for (int i = 0; i < 60; ++i) w.op("aten::mul", t0 + 10 + 30 * i, 20).runtime("cudaLaunchKernel", t0 + 12 + 30 * i, 8);
    w.op("aten::item", t0 + 1900, 50).runtime("cudaMemcpyAsync", t0 + 1905, 40);
  }
  auto a = analyze_trace(parse_trace(w.json(), "no_cuda_activity.json"));
  a.findings = run_advisor(a);
  EXPECT_FALSE(a.has_device);
  EXPECT_EQ(a.launch_calls, 122);
  EXPECT_TRUE(a.device_missing());
  const std::string console = render_console(a, {});
  const std::string line = device_missing_text(a);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("122 launch calls"), std::string::npos) << line;
  EXPECT_NE(console.find("\n" + line + "\n"), std::string::npos) << console.substr(0, 600);
  EXPECT_TRUE(analysis_to_json(a)["device_missing"].get<bool>());
  for (const auto& f : a.findings)
    for (const char* device_rule : {"device_idle", "host_bound_launch", "launch_delay", "small_batch", "cpu_fallback",
                                    "short_device_ops", "host_sync"})
      EXPECT_NE(f.rule, device_rule);

  KinetoTraceWriter with_kernels;
  with_kernels.step("ProfilerStep#0", 0, 1000).launch(10, 8, "k", 20, 900);
  auto b = analyze_trace(parse_trace(with_kernels.json(), "cuda.json"));
  EXPECT_FALSE(b.device_missing());
  EXPECT_EQ(device_missing_text(b), "");
  auto cpu = analyze_trace(read_trace_file(kData + "torch_cpu_small.json"));
  EXPECT_FALSE(cpu.device_missing());
  EXPECT_EQ(render_console(cpu, {}).find("No device activity recorded"), std::string::npos);
}

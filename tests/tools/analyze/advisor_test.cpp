// Every advisor rule fires on a trace built to trigger it and stays silent on a near twin that
// should not.
#include "tools/analyze/advisor.h"

#include <gtest/gtest.h>

#include <set>

#include "tools/analyze/kineto_trace_writer.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;
using crosstrain::analyze::testing::KinetoTraceWriter;

namespace {

bool fires(const KinetoTraceWriter& w, const std::string& rule) {
  auto a = analyze_trace(parse_trace(w.json(), "scenario.json"));
  for (const auto& f : run_advisor(a))
    if (f.rule == rule) {
      EXPECT_FALSE(f.measured.empty());
      EXPECT_FALSE(f.suggestion.empty());
      return true;
    }
  return false;
}

// One 1000 us step whose device is busy [0, busy_end].
KinetoTraceWriter gpu_step(double busy_end = 950) {
  KinetoTraceWriter w;
  w.step("ProfilerStep#1", 0, 1000).op("aten::mm", 0, 10, R"(["c10::Half", "c10::Half"])");
  w.launch(1, 2, "gemm_kernel", 5, busy_end - 5);
  return w;
}

}  // namespace

TEST(Advisor, RuleTableIsCompleteAndUnique) {
  std::set<std::string> ids;
  for (const auto& r : advisor_rules()) {
    EXPECT_TRUE(ids.insert(r.id).second) << r.id;
    EXPECT_GT(std::string(r.threshold_text).size(), 0u);
  }
  for (auto id : {"allocator", "data_loading", "dataloader_bound", "short_device_ops", "host_sync", "device_idle",
                  "host_bound_launch", "launch_delay", "communication", "comm_overlap", "fp32_matmul", "cpu_fallback",
                  "small_batch", "pageable_copy", "warmup_step", "online_compile", "ai_cpu_fallback", "one_time_call",
                  "runtime_call"})
    EXPECT_EQ(ids.count(id), 1u) << id;
}

TEST(Advisor, DataLoading) {
  auto w = gpu_step();
  EXPECT_TRUE(fires(w.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 100), "data_loading"));
  EXPECT_FALSE(fires(gpu_step().annotation("data_wait", 0, 20), "data_loading"));
}

TEST(Advisor, ShortDeviceOps) {
  KinetoTraceWriter shorts, longs;
  shorts.step("ProfilerStep#1", 0, 3000);
  longs.step("ProfilerStep#1", 0, 12000);
  for (int i = 0; i < 200; ++i) {
    shorts.launch(i * 10, 2, "small_kernel", i * 10 + 3, 5);
    longs.launch(i * 2, 1, "big_kernel", 500 + i * 55, 50);
  }
  EXPECT_TRUE(fires(shorts, "short_device_ops"));
  EXPECT_FALSE(fires(longs, "short_device_ops"));
}

// Kernels on two streams that overlap add up to more than the step: the evidence says the sum is a
// sum over streams and gives the share of the union (device busy), never a share above 100%.
TEST(Advisor, ShortDeviceOpsEvidenceOnOverlappingStreamsStaysAShareOfTheStep) {
  KinetoTraceWriter w;
  w.step("ProfilerStep#1", 0, 2100);
  for (int i = 0; i < 200; ++i) {
    w.launch(i * 10, 2, "small_kernel", i * 10 + 3, 8, "kernel", 7);
    w.launch(i * 10 + 1, 2, "other_kernel", i * 10 + 4, 8, "kernel", 9);
  }
  auto a = analyze_trace(parse_trace(w.json(), "streams.json"));
  ASSERT_GT(a.kernel_us, a.total.duration_us);
  const Finding* f = nullptr;
  const auto findings = run_advisor(a);
  for (const auto& g : findings)
    if (g.rule == "short_device_ops") f = &g;
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("summed over streams"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("device busy"), std::string::npos) << f->evidence;
  for (size_t p = f->evidence.find('%'); p != std::string::npos; p = f->evidence.find('%', p + 1)) {
    size_t b = f->evidence.rfind(' ', p);
    EXPECT_LE(std::stod(f->evidence.substr(b + 1, p - b - 1)), 100.0) << f->evidence;
  }
}

TEST(Advisor, HostSync) {
  // loss.item(): the copy from the device under it.
  EXPECT_TRUE(fires(gpu_step().op("aten::item", 900, 40).runtime("cudaMemcpyAsync", 905, 30), "host_sync"));
  EXPECT_FALSE(fires(gpu_step().op("aten::relu", 900, 40), "host_sync"));
  // A read of a host tensor (an optimizer's step counter) in a trace with runtime calls.
  EXPECT_FALSE(fires(gpu_step().op("aten::item", 900, 40), "host_sync"));
}

TEST(Advisor, DeviceIdle) {
  EXPECT_TRUE(fires(gpu_step(500), "device_idle"));
  EXPECT_FALSE(fires(gpu_step(960), "device_idle"));
}

TEST(Advisor, HostBoundLaunch) {
  KinetoTraceWriter starved, queued;
  starved.step("ProfilerStep#1", 0, 1300);
  queued.step("ProfilerStep#1", 0, 1300);
  for (int i = 0; i < 60; ++i) {
    starved.launch(i * 20, 10, "k", i * 20 + 12, 5);          // each kernel waits for its launch
    queued.launch(i * 2, 1, "k", 150 + i * 19, 19);            // launched far ahead of the device
  }
  EXPECT_TRUE(fires(starved, "host_bound_launch"));
  EXPECT_FALSE(fires(queued, "host_bound_launch"));
}

TEST(Advisor, CommunicationShareAndOverlap) {
  auto exposed = gpu_step(500);
  exposed.launch(520, 2, "ncclDevKernel_AllReduce_Sum_f32", 600, 200, "kernel", 20);
  EXPECT_TRUE(fires(exposed, "communication"));
  EXPECT_TRUE(fires(exposed, "comm_overlap"));
  auto hidden = gpu_step(990);
  hidden.launch(520, 2, "ncclDevKernel_AllReduce_Sum_f32", 600, 200, "kernel", 20);
  EXPECT_TRUE(fires(hidden, "communication"));
  EXPECT_FALSE(fires(hidden, "comm_overlap"));
  auto small = gpu_step(990);
  small.launch(520, 2, "ncclDevKernel_AllReduce_Sum_f32", 600, 50, "kernel", 20);
  EXPECT_FALSE(fires(small, "communication"));
}

TEST(Advisor, Fp32MatmulOnTensorCores) {
  auto make = [](int major, const std::string& dtype) {
    KinetoTraceWriter w;
    w.compute_major(major).step("ProfilerStep#1", 0, 1000).op("aten::mm", 0, 10, "[\"" + dtype + "\", \"" + dtype + "\"]");
    w.launch(1, 2, "gemm", 5, 900);
    return w;
  };
  EXPECT_TRUE(fires(make(8, "float"), "fp32_matmul"));
  EXPECT_FALSE(fires(make(8, "c10::BFloat16"), "fp32_matmul"));
  EXPECT_FALSE(fires(make(6, "float"), "fp32_matmul"));  // no tensor cores on compute capability 6
}

TEST(Advisor, CpuFallback) {
  EXPECT_TRUE(fires(gpu_step().op("aten::add", 200, 50, R"(["float", "float"])"), "cpu_fallback"));
  auto on_device = gpu_step();
  on_device.op("aten::add", 200, 50).launch(210, 5, "add_kernel", 955, 5);
  EXPECT_FALSE(fires(on_device, "cpu_fallback"));
}

TEST(Advisor, SmallBatch) {
  EXPECT_TRUE(fires(gpu_step(300), "small_batch"));
  KinetoTraceWriter long_step;
  long_step.step("ProfilerStep#1", 0, 20000).launch(1, 2, "gemm", 5, 6000);
  EXPECT_FALSE(fires(long_step, "small_batch"));
  EXPECT_FALSE(fires(gpu_step(900), "small_batch"));
}

TEST(Advisor, CpuOnlyTraceOnlyGetsHostRules) {
  KinetoTraceWriter w;
  w.step("ProfilerStep#1", 0, 1000).op("aten::item", 10, 10).op("aten::add", 30, 500, R"(["float"])");
  auto a = analyze_trace(parse_trace(w.json(), "cpu.json"));
  EXPECT_TRUE(run_advisor(a).empty());
}

TEST(Advisor, EveryFindingStatesItsEvidence) {
  auto w = gpu_step(500);
  w.op("aten::item", 900, 40).runtime("cudaMemcpyAsync", 905, 30).annotation("data_wait", 0, 200);
  auto a = analyze_trace(parse_trace(w.json(), "e.json"));
  auto findings = run_advisor(a);
  ASSERT_GE(findings.size(), 3u);
  for (const auto& f : findings) {
    EXPECT_FALSE(f.evidence.empty()) << f.rule;
    EXPECT_NE(f.evidence.find("step"), std::string::npos) << f.rule << ": " << f.evidence;
  }
}

TEST(Advisor, HostSyncIgnoresPollingQueries) {
  // cudaEventQuery / cudaStreamQuery return at once (DDP polls them): not syncs.
  auto polls = gpu_step();
  polls.runtime("cudaEventQuery", 900, 2).runtime("cudaStreamQuery", 910, 2);
  EXPECT_FALSE(fires(polls, "host_sync"));
  EXPECT_TRUE(fires(gpu_step().runtime("cudaStreamSynchronize", 900, 40), "host_sync"));
}

TEST(Advisor, PageableCopy) {
  auto pageable = gpu_step(700);
  pageable.op("aten::copy_", 800, 100).launch(805, 90, "Memcpy DtoH (Device -> Pageable)", 800, 140, "gpu_memcpy");
  EXPECT_TRUE(fires(pageable, "pageable_copy"));
  auto pinned = gpu_step(700);
  pinned.op("aten::copy_", 800, 100).launch(805, 5, "Memcpy DtoH (Device -> Pinned)", 800, 140, "gpu_memcpy");
  EXPECT_FALSE(fires(pinned, "pageable_copy"));
}

TEST(Advisor, LaunchDelay) {
  // Each kernel starts 15 us after its launch call ended, on an idle device; in the twin the
  // launches run far ahead of a busy device.
  KinetoTraceWriter slow, queued;
  slow.step("ProfilerStep#1", 0, 1500);
  queued.step("ProfilerStep#1", 0, 1500);
  for (int i = 0; i < 40; ++i) {
    slow.launch(i * 30, 5, "k", i * 30 + 20, 5);
    queued.launch(i * 2, 1, "k", 100 + i * 30, 30);
  }
  EXPECT_TRUE(fires(slow, "launch_delay"));
  EXPECT_FALSE(fires(queued, "launch_delay"));
}

TEST(Advisor, WarmupStep) {
  auto steps = [](double first) {
    KinetoTraceWriter w;
    for (int s = 0; s < 4; ++s) {
      double t0 = s == 0 ? 0 : first + (s - 1) * 1000.0, len = s == 0 ? first : 1000;
      w.step("ProfilerStep#" + std::to_string(s), t0, len).launch(t0 + 1, 2, "k", t0 + 5, len - 10);
    }
    return w;
  };
  EXPECT_TRUE(fires(steps(5000), "warmup_step"));
  EXPECT_FALSE(fires(steps(1100), "warmup_step"));
}

TEST(Advisor, DataLoaderBoundSteps) {
  auto steps = [](double wait) {
    KinetoTraceWriter w;
    for (int s = 0; s < 4; ++s) {
      double t0 = s * 1000.0;
      w.step("ProfilerStep#" + std::to_string(s), t0, 1000).annotation("data_wait", t0, wait);
      w.launch(t0 + wait + 1, 2, "k", t0 + wait + 5, 900 - wait);
    }
    return w;
  };
  EXPECT_TRUE(fires(steps(700), "dataloader_bound"));
  EXPECT_FALSE(fires(steps(100), "dataloader_bound"));
}

TEST(Advisor, CpuFallbackIgnoresViewsAndAutogradWrappers) {
  // aten::expand is a view ("exp" inside it is not aten::exp); autograd wrappers launch through
  // the operators they call.
  auto w = gpu_step();
  w.op("aten::expand", 200, 50).op("AddBackward0", 300, 50).op("autograd::engine::evaluate_function: AddBackward0", 400, 60);
  EXPECT_FALSE(fires(w, "cpu_fallback"));
  EXPECT_TRUE(fires(gpu_step().op("aten::exp", 200, 50), "cpu_fallback"));
}

TEST(Advisor, CpuFallbackIgnoresDropoutInEvalMode) {
  // model.eval(): aten::dropout returns its input and launches nothing, by design (torch records
  // it as an operator all the same); a dropout that does run launches its kernel.
  auto w = gpu_step();
  w.op("aten::dropout", 200, 40).op("aten::feature_dropout", 300, 40);
  auto a = analyze_trace(parse_trace(w.json(), "eval.json"));
  EXPECT_TRUE(a.cpu_fallback.empty()) << a.cpu_fallback.front().name;
  EXPECT_FALSE(fires(w, "cpu_fallback"));
  EXPECT_TRUE(fires(gpu_step().op("aten::gelu", 200, 50), "cpu_fallback"));
}

// With num_workers=0 the dataset's transforms (torchvision's Normalize: aten::sub, aten::div on CPU
// tensors) run inside the DataLoader's __next__ on the loop's thread: data loading by design, which
// data_loading counts, not operators that fell back to the CPU. Both generations: torch 1.8 wrote the
// DataLoader span as an "Operator", newer torch as a user_annotation.
TEST(Advisor, CpuFallbackIgnoresDataLoadingTransforms) {
  for (bool torch_1_8 : {false, true}) {
    KinetoTraceWriter w;
    if (torch_1_8) w.torch_1_8();
    w.step("ProfilerStep#1", 0, 1000).launch(1, 2, "gemm_kernel", 5, 945);
    w.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 400);
    for (int i = 0; i < 4; ++i) w.op("aten::to", 110 + 90.0 * i, 20).op("aten::div", 140 + 90.0 * i, 50);
    auto a = analyze_trace(parse_trace(w.json(), "loader.json"));
    EXPECT_TRUE(a.cpu_fallback.empty()) << torch_1_8 << " " << a.cpu_fallback.front().name;
    EXPECT_FALSE(fires(w, "cpu_fallback")) << torch_1_8;
    EXPECT_TRUE(fires(w, "data_loading")) << torch_1_8;
  }
  // The same operators in the step, outside the loader, are fallbacks.
  auto w = gpu_step();
  w.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 30);
  for (int i = 0; i < 4; ++i) w.op("aten::div", 140 + 90.0 * i, 50);
  EXPECT_TRUE(fires(w, "cpu_fallback"));
}

TEST(Advisor, Allocator) {
  auto w = gpu_step();
  for (int i = 0; i < 4; ++i) w.runtime("cudaMalloc", 100 + 200.0 * i, 20).runtime("cudaFree", 150 + 200.0 * i, 20);
  EXPECT_TRUE(fires(w, "allocator"));  // 160 us of 1000
  EXPECT_FALSE(fires(gpu_step().runtime("cudaMalloc", 100, 20).runtime("cudaFree", 200, 20), "allocator"));
}

TEST(Advisor, DeviceRulesSilentWithoutDeviceActivity) {
  // A CPU-only run recorded on a GPU machine: deviceProperties present, host-side collectives,
  // fp32 matmuls, short steps. No device rule may fire.
  KinetoTraceWriter w;
  w.compute_major(8).step("ProfilerStep#1", 0, 1000).op("aten::mm", 0, 300, R"(["float", "float"])");
  w.op("c10d::allreduce_", 400, 300).op("aten::item", 800, 50);
  auto a = analyze_trace(parse_trace(w.json(), "cpu_on_gpu_box.json"));
  EXPECT_FALSE(a.has_device);
  for (const auto& f : run_advisor(a))
    EXPECT_TRUE(f.rule == "communication") << f.rule << " fired without device activity";
}

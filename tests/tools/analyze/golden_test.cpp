// Golden numbers for the analysis. The hand-written fixtures' expected values were computed by
// hand from their timelines (tests/data/traces/make_hand_fixtures.py); the torch.profiler fixture
// is checked against torch's own key_averages() recorded next to it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tools/analyze/advisor.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;

namespace {

const std::string kData = std::string(CROSSTRAIN_SOURCE_DIR) + "/tests/data/traces/";

TraceAnalysis analyze_file(const std::string& name) {
  auto a = analyze_trace(read_trace_file(kData + name));
  a.findings = run_advisor(a);
  return a;
}

const OperatorStats& op(const TraceAnalysis& a, const std::string& name) {
  for (const auto& o : a.operators)
    if (o.name == name) return o;
  throw std::runtime_error("no operator " + name);
}

double cat(const StepBreakdown& s, StepCategory c) { return s.category_us[static_cast<size_t>(c)]; }

bool fired(const TraceAnalysis& a, const std::string& rule) {
  for (const auto& f : a.findings)
    if (f.rule == rule) return true;
  return false;
}

}  // namespace

// Step 1 [1000,1100]: data loading [1000,1010]; cpu [1010,1012] + [1016,1020]; runtime
// [1012,1016]; conv kernel [1020,1060]; memcpy [1060,1070] over NCCL; memset [1070,1072]; NCCL
// alone [1072,1095]; memcpy [1095,1097]; add kernel [1097,1099]; nothing [1099,1100].
// Step 2 [1100,1230] (the gemm launched in it ends at 1230): cpu 2+6+12, runtime 3+2, nothing
// [1125,1150], gemm [1150,1230] hiding the NCCL kernel and the synchronize call.
TEST(GoldenKinetoGpu, StepBreakdownByHand) {
  auto a = analyze_file("kineto_gpu_hand.json");
  ASSERT_EQ(a.steps.size(), 2u);
  const auto& s1 = a.steps[0];
  EXPECT_EQ(s1.label, "ProfilerStep#1");
  EXPECT_DOUBLE_EQ(s1.duration_us, 100);
  EXPECT_DOUBLE_EQ(cat(s1, StepCategory::Kernel), 42);
  EXPECT_DOUBLE_EQ(cat(s1, StepCategory::Memcpy), 12);
  EXPECT_DOUBLE_EQ(cat(s1, StepCategory::Memset), 2);
  EXPECT_DOUBLE_EQ(cat(s1, StepCategory::Communication), 23);
  EXPECT_DOUBLE_EQ(cat(s1, StepCategory::Runtime), 4);
  EXPECT_DOUBLE_EQ(cat(s1, StepCategory::DataLoading), 10);
  EXPECT_DOUBLE_EQ(cat(s1, StepCategory::CpuExec), 6);
  EXPECT_DOUBLE_EQ(cat(s1, StepCategory::Other), 1);
  EXPECT_DOUBLE_EQ(s1.device_busy_us, 79);
  const auto& s2 = a.steps[1];
  EXPECT_DOUBLE_EQ(s2.start_us, 100);  // relative to the first timestamp
  EXPECT_DOUBLE_EQ(s2.duration_us, 130);
  EXPECT_DOUBLE_EQ(cat(s2, StepCategory::Kernel), 80);
  EXPECT_DOUBLE_EQ(cat(s2, StepCategory::Runtime), 5);
  EXPECT_DOUBLE_EQ(cat(s2, StepCategory::CpuExec), 20);
  EXPECT_DOUBLE_EQ(cat(s2, StepCategory::Other), 25);
  EXPECT_DOUBLE_EQ(cat(s2, StepCategory::Communication), 0);
  EXPECT_DOUBLE_EQ(a.total.duration_us, 230);
  EXPECT_DOUBLE_EQ(a.total.comm_us, 50);
  EXPECT_DOUBLE_EQ(a.total.comm_overlapped_us, 20);
  EXPECT_DOUBLE_EQ(a.total.data_wait_us, 10);
}

TEST(GoldenKinetoGpu, OperatorsDeviceLinksAndChecks) {
  auto a = analyze_file("kineto_gpu_hand.json");
  EXPECT_DOUBLE_EQ(op(a, "aten::conv2d").device_self_us, 40);
  EXPECT_DOUBLE_EQ(op(a, "aten::conv2d").host_self_us, 16);  // 20 minus the 4 us launch
  EXPECT_EQ(op(a, "c10d::allreduce_").calls, 2);
  EXPECT_DOUBLE_EQ(op(a, "c10d::allreduce_").device_self_us, 50);
  EXPECT_DOUBLE_EQ(op(a, "aten::mm").device_self_us, 80);
  EXPECT_DOUBLE_EQ(op(a, "aten::item").device_self_us, 0);
  EXPECT_DOUBLE_EQ(op(a, "aten::item").device_total_us, 2);
  EXPECT_DOUBLE_EQ(op(a, "aten::item").host_self_us, 2);
  EXPECT_DOUBLE_EQ(op(a, "aten::_local_scalar_dense").device_self_us, 2);
  EXPECT_EQ(a.operators.front().name, "aten::mm");  // sorted by device self time
  EXPECT_EQ(a.kernel_count, 3);
  EXPECT_EQ(a.short_kernel_count, 1);
  EXPECT_EQ(a.launches, 8);
  EXPECT_EQ(a.launches_into_idle, 2);
  EXPECT_EQ(a.idle_gap_count, 2);
  EXPECT_DOUBLE_EQ(a.idle_gap_us, 70);
  EXPECT_DOUBLE_EQ(a.idle_gaps.front().duration_us, 50);
  EXPECT_EQ(a.idle_gaps.front().step, "ProfilerStep#2");
  EXPECT_EQ(a.host_sync_count, 2);  // aten::item (its _local_scalar_dense not again) + cudaDeviceSynchronize
  ASSERT_EQ(a.cpu_fallback.size(), 1u);
  EXPECT_EQ(a.cpu_fallback[0].name, "aten::add");
  EXPECT_DOUBLE_EQ(a.cpu_fallback_us, 5);
  EXPECT_DOUBLE_EQ(a.matmul_conv_us, 120);
  EXPECT_DOUBLE_EQ(a.matmul_conv_fp32_us, 40);
  ASSERT_EQ(a.memory.size(), 2u);
  EXPECT_EQ(a.memory[0].device, "cuda:0");
  EXPECT_EQ(a.memory[0].peak_allocated, 3145728);
  EXPECT_EQ(a.memory[1].device, "cpu");
  EXPECT_EQ(a.memory[1].peak_allocated, 4096);
  EXPECT_TRUE(a.tensor_cores);
  for (auto rule : {"host_sync", "device_idle", "communication", "comm_overlap", "cpu_fallback"})
    EXPECT_TRUE(fired(a, rule)) << rule;
  for (auto rule : {"data_loading", "fp32_matmul", "small_batch", "short_device_ops", "host_bound_launch"})
    EXPECT_FALSE(fired(a, rule)) << rule;
}

// Window [0,100]: cpu [10,20], conv kernel [20,70] (covers relu's cpu time), relu kernel
// [72,80], the rest other. Kernels are linked to operators only through cpu_to_cuda flows.
TEST(GoldenLegacyAutograd, FlowsLinkKernelsToOperators) {
  auto a = analyze_file("legacy_autograd.json");
  EXPECT_EQ(a.format, "autograd-legacy");
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(a.steps[0].duration_us, 100);
  EXPECT_DOUBLE_EQ(cat(a.steps[0], StepCategory::Kernel), 58);
  EXPECT_DOUBLE_EQ(cat(a.steps[0], StepCategory::CpuExec), 10);
  EXPECT_DOUBLE_EQ(cat(a.steps[0], StepCategory::Other), 32);
  EXPECT_DOUBLE_EQ(op(a, "aten::conv2d").device_self_us, 50);
  EXPECT_DOUBLE_EQ(op(a, "aten::relu").device_self_us, 8);
}

// Window [100,300]: other 10, cpu 5 + 10, CANN runtime 25, AI core tasks [150,260], HCCL alone
// [260,280], other 20. HCCL [200,280] overlaps the tasks for 60 us.
TEST(GoldenAscend, TraceViewByProcessRoles) {
  auto a = analyze_file("ascend_trace_view.json");
  EXPECT_EQ(a.format, "ascend");
  ASSERT_EQ(a.steps.size(), 1u);
  const auto& s = a.steps[0];
  EXPECT_DOUBLE_EQ(s.duration_us, 200);
  EXPECT_DOUBLE_EQ(cat(s, StepCategory::Kernel), 110);
  EXPECT_DOUBLE_EQ(cat(s, StepCategory::Communication), 20);
  EXPECT_DOUBLE_EQ(cat(s, StepCategory::Runtime), 25);
  EXPECT_DOUBLE_EQ(cat(s, StepCategory::CpuExec), 15);
  EXPECT_DOUBLE_EQ(cat(s, StepCategory::Other), 30);
  EXPECT_DOUBLE_EQ(s.comm_overlapped_us, 60);
  EXPECT_DOUBLE_EQ(op(a, "aten::matmul").device_self_us, 100);
  EXPECT_DOUBLE_EQ(op(a, "aten::add").device_self_us, 10);
  EXPECT_EQ(a.launches, 2);  // CANN calls stay the launchers
  EXPECT_EQ(a.launches_into_idle, 1);
  EXPECT_TRUE(a.tensor_cores);
  EXPECT_TRUE(fired(a, "fp32_matmul"));
}

// Step 0 [0,1000]: data_wait 200, operators 190 + 80 + 280 + 130, other 120.
// Step 1 [1000,1800]: data_wait 40, operators 240 + 380 + 80, other 60.
TEST(GoldenCrosstrainCpu, PhasesAndDataWait) {
  auto a = analyze_file("crosstrain_cpu.json.gz");
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(cat(a.steps[0], StepCategory::DataLoading), 200);
  EXPECT_DOUBLE_EQ(cat(a.steps[0], StepCategory::CpuExec), 680);
  EXPECT_DOUBLE_EQ(cat(a.steps[0], StepCategory::Other), 120);
  EXPECT_DOUBLE_EQ(cat(a.steps[1], StepCategory::DataLoading), 40);
  EXPECT_DOUBLE_EQ(cat(a.steps[1], StepCategory::CpuExec), 700);
  EXPECT_DOUBLE_EQ(cat(a.steps[1], StepCategory::Other), 60);
  EXPECT_DOUBLE_EQ(op(a, "aten::conv2d").host_self_us, 250);
  EXPECT_DOUBLE_EQ(op(a, "aten::conv2d").host_total_us, 430);
  EXPECT_EQ(a.op_types[static_cast<size_t>(OpType::Optimizer)].calls, 2);
  ASSERT_EQ(a.memory.size(), 1u);
  EXPECT_EQ(a.memory[0].peak_allocated, 9000);
  EXPECT_TRUE(fired(a, "data_loading"));
  EXPECT_FALSE(a.has_device);
  EXPECT_EQ(a.findings.size(), 1u);
}

TEST(GoldenTorchCpu, OperatorTableMatchesTorchKeyAverages) {
  auto a = analyze_file("torch_cpu_small.json");
  std::ifstream in(kData + "torch_cpu_small.reference.json");
  auto ref = nlohmann::json::parse(in)["operators"];
  int compared = 0;
  for (const auto& o : a.operators) {
    if (o.name.rfind("aten::", 0) != 0 || !ref.contains(o.name)) continue;
    const auto& r = ref[o.name];
    EXPECT_EQ(o.calls, r["calls"].get<int64_t>()) << o.name;
    EXPECT_NEAR(o.host_total_us, r["cpu_total_us"].get<double>(), 0.01 + 1e-4 * o.host_total_us) << o.name;
    EXPECT_NEAR(o.host_self_us, r["self_cpu_us"].get<double>(), 0.01 + 1e-4 * o.host_total_us) << o.name;
    ++compared;
  }
  EXPECT_GT(compared, 40);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].label, "ProfilerStep#2");
  EXPECT_GT(a.total.data_wait_us, 0);
  ASSERT_FALSE(a.memory.empty());
  EXPECT_GT(a.memory[0].peak_allocated, 0);
}

// Stream 7, step 1: conv [1020,1060] launched by a call ending at 1016 (idle from 1000: 16 host
// wait, 4 queued); DtoH copy [1095,1097] after a call ending at 1078 (idle from 1072: 6 + 17);
// step 2: gemm [1150,1230] after a call ending at 1105 (5 + 45); 1 us after the step-1 add kernel.
// Stream 20 (NCCL): [1065,1095] after 1048 (48 + 17), tail 5; [1160,1180] after 1113 (13 + 47), tail 50.
TEST(GoldenKinetoGpu, IdleByStreamAndCause) {
  auto a = analyze_file("kineto_gpu_hand.json");
  ASSERT_EQ(a.stream_idle.size(), 2u);
  const auto& s7 = a.stream_idle[0];
  EXPECT_EQ(s7.stream, "0/7");
  EXPECT_DOUBLE_EQ(s7.busy_us, 136);
  EXPECT_DOUBLE_EQ(s7.host_wait_us, 27);
  EXPECT_DOUBLE_EQ(s7.queued_us, 66);
  EXPECT_DOUBLE_EQ(s7.tail_us, 1);
  const auto& s20 = a.stream_idle[1];
  EXPECT_EQ(s20.stream, "0/20");
  EXPECT_DOUBLE_EQ(s20.busy_us, 50);
  EXPECT_DOUBLE_EQ(s20.host_wait_us, 61);
  EXPECT_DOUBLE_EQ(s20.queued_us, 64);
  EXPECT_DOUBLE_EQ(s20.tail_us, 55);
  EXPECT_DOUBLE_EQ(s20.unlinked_us, 0);
  // Every stream accounts for every step microsecond.
  for (const auto& s : a.stream_idle)
    EXPECT_DOUBLE_EQ(s.busy_us + s.host_wait_us + s.queued_us + s.unlinked_us + s.tail_us, a.total.duration_us);
}

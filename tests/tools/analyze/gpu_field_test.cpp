// Constructs seen in torch.profiler traces recorded on real GPUs (A100, H100, B200, MI250, MI300)
// that the hand-written fixtures did not have, each rebuilt here in a few lines: graph launches
// (one cudaGraphLaunch / hipGraphLaunch whose correlation id every kernel of the graph carries)
// and broadcast-named compute (aten::broadcast_to, the elementwise kernels of broadcasting ops).
#include <gtest/gtest.h>

#include <string>

#include "kineto_trace_writer.h"
#include "tools/analyze/advisor.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/op_names.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;
using crosstrain::analyze::testing::KinetoTraceWriter;

namespace {

TraceAnalysis analyzed(const KinetoTraceWriter& w) { return analyze_trace(parse_trace(w.json(), "t.json")); }

// The kernel name torch 2.x gives a broadcasting binary op (a * b with b of shape [1, n]), as
// recorded on an MI300X; shortened after the launcher's template.
const char* kBroadcastMulKernel =
    "void at::native::elementwise_kernel_manual_unroll<128, 4, at::native::(anonymous "
    "namespace)::type_specialized_broadcast_kernel_launcher<1>::apply<at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> > >(long)";

}  // namespace

TEST(GpuFieldNames, BroadcastComputeIsNotCommunication) {
  EXPECT_FALSE(is_communication_name("aten::broadcast_to"));
  EXPECT_FALSE(is_communication_name("aten::broadcast_tensors"));
  EXPECT_FALSE(is_communication_name(kBroadcastMulKernel));
  EXPECT_EQ(op_type_of(kBroadcastMulKernel), OpType::Elementwise);
  EXPECT_EQ(op_type_of("aten::broadcast_to"), OpType::Other);
  // The broadcast collectives keep their backend's name.
  for (const char* n : {"c10d::broadcast_", "nccl:broadcast", "gloo:broadcast", "hcom_broadcast__445_0",
                        "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
                        "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)"})
    EXPECT_TRUE(is_communication_name(n)) << n;
}

// One 1000 us step: aten::mul (its broadcasting kernel, 100 us) and aten::broadcast_to on the host.
TEST(GpuFieldNames, BroadcastKernelCountsAsCompute) {
  KinetoTraceWriter w;
  w.compute_major(9)
      .step("ProfilerStep#1", 0, 1000)
      .op("aten::broadcast_to", 10, 5)
      .op("aten::mul", 20, 30)
      .launch(25, 10, kBroadcastMulKernel, 40, 100);
  TraceAnalysis a = analyzed(w);
  EXPECT_TRUE(a.collectives.empty());
  EXPECT_EQ(a.kernel_count, 1);
  EXPECT_DOUBLE_EQ(a.total.comm_us, 0.0);
  EXPECT_DOUBLE_EQ(a.total.category_us[static_cast<size_t>(StepCategory::Communication)], 0.0);
  EXPECT_DOUBLE_EQ(a.op_types[static_cast<size_t>(OpType::Communication)].host_self_us, 0.0);
}

// MTIA's device events (HolisticTraceAnalysis's mtia traces: category mtia_ccp_events, a category no
// table knows): an event_wait is the stream waiting for another, not a kernel; the device is busy
// only with the real one and the DMA transfer, which is a copy.
TEST(GpuFieldNames, DeviceStreamWaitsAreNotKernels) {
  KinetoTraceWriter w;
  w.step("ProfilerStep#1", 0, 1000)
      .op("aten::mul", 5, 30)
      .launch(10, 5, "mul-dtype_Float", 20, 100, "mtia_ccp_events", 3)
      .launch(40, 5, "event_wait", 130, 700, "mtia_ccp_events", 3)
      .launch(50, 5, "event_record", 840, 2, "mtia_ccp_events", 3)
      .launch(60, 5, "dma_request", 850, 40, "mtia_ccp_events", 3);
  TraceAnalysis a = analyzed(w);
  EXPECT_EQ(a.kernel_count, 1);
  EXPECT_DOUBLE_EQ(a.kernel_us, 100.0);
  ASSERT_EQ(a.steps.size(), 1u);
  // The DMA transfer is a copy: the device is busy with it, but it is no kernel.
  EXPECT_DOUBLE_EQ(a.steps[0].device_busy_us, 140.0);
  for (const auto& k : a.top_kernels) {
    EXPECT_NE(k.name, "event_wait");
    EXPECT_NE(k.name, "dma_request");
  }
}

// A 2000 us step; one hipGraphLaunch at [100, 150] whose graph runs three kernels back to back
// from 160 us, then a plain launch at [600, 610] -> [620, 640]. Launches are the two calls; the
// graph's delay is 160 - 100 = 60 us (to its first kernel), not 60/110/160 us.
TEST(GpuFieldGraphs, AGraphLaunchIsOneLaunch) {
  KinetoTraceWriter w;
  w.compute_major(9)
      .step("ProfilerStep#1", 0, 2000)
      .graph_launch("hipGraphLaunch", 100, 50,
                    {{"triton_poi_fused_0", 160, 50}, {"Rmsnorm2dFwd", 210, 50}, {"Cijk_Alik_Bljk_gemm", 260, 50}})
      .launch(600, 10, "vectorized_elementwise_kernel", 620, 20);
  TraceAnalysis a = analyzed(w);
  EXPECT_EQ(a.kernel_count, 4);
  EXPECT_EQ(a.launches, 2);
  EXPECT_EQ(a.launch_delay.count, 2);
  EXPECT_DOUBLE_EQ(a.launch_delay.max_us, 60.0);
  // Both calls found the device idle: the graph's first kernel, and the plain launch after it.
  EXPECT_EQ(a.launches_into_idle, 2);
  EXPECT_EQ(a.idle_launch_latency.count, 2);
  EXPECT_DOUBLE_EQ(a.idle_launch_latency.max_us, 10.0);  // 160 - 150
}

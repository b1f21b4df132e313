// Constructs seen in torch.profiler traces recorded on real GPUs (A100, H100, B200, MI250, MI300)
// that the hand-written fixtures did not have, each rebuilt here in a few lines: broadcast-named
// compute (aten::broadcast_to, the elementwise kernels of broadcasting ops).
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

// Step phases from the user scopes crosstrain's trainer opens around its phases (train and bench
// --profile): the same phases torch.profiler's traces give through torch's own spans.
#include <gtest/gtest.h>

#include <array>

#include "kineto_trace_writer.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;
using crosstrain::analyze::testing::KinetoTraceWriter;

namespace {

// One step, 0-1000 us, as tools/train/trainer.cpp marks it.
KinetoTraceWriter trainer_step(bool as_annotations) {
  KinetoTraceWriter w;
  w.step("ProfilerStep#0", 0, 1000);
  auto scope = [&](const std::string& name, double ts, double dur) {
    if (as_annotations) w.annotation(name, ts, dur);
    else w.op(name, ts, dur);
  };
  scope("data_wait", 0, 100);
  scope("forward", 100, 300);
  w.annotation("layer1.0.conv1", 110, 50).op("aten::conv2d", 115, 40);
  scope("backward", 400, 300);
  w.op("autograd::engine::evaluate_function: ConvolutionBackward0", 450, 200);
  scope("grad_sync", 700, 10);
  scope("unscale_clip", 710, 10);
  scope("optimizer_step", 720, 180);
  w.op("aten::_foreach_add_", 730, 150);
  scope("scaler_update", 900, 10);
  return w;
}

std::array<double, kStepPhaseCount> phases_of(const KinetoTraceWriter& w, bool* forward_known) {
  const TraceAnalysis a = analyze_trace(parse_trace(w.json(), "trainer.json"));
  EXPECT_EQ(a.steps.size(), 1u);
  *forward_known = a.module_spans;
  return a.steps.empty() ? std::array<double, kStepPhaseCount>{} : a.steps[0].phase_us;
}

double at(const std::array<double, kStepPhaseCount>& p, StepPhase phase) { return p[static_cast<size_t>(phase)]; }

}  // namespace

TEST(StepPhases, TheTrainersScopesGiveForwardBackwardAndOptimizer) {
  bool forward_known = false;
  const auto p = phases_of(trainer_step(/*as_annotations=*/true), &forward_known);
  EXPECT_TRUE(forward_known);
  EXPECT_NEAR(at(p, StepPhase::DataWait), 100, 1e-6);
  EXPECT_NEAR(at(p, StepPhase::Forward), 300, 1e-6);
  EXPECT_NEAR(at(p, StepPhase::Backward), 300, 1e-6);   // the whole scope, not only the engine's operator
  EXPECT_NEAR(at(p, StepPhase::Optimizer), 180, 1e-6);
  EXPECT_NEAR(at(p, StepPhase::Other), 120, 1e-6);      // grad_sync, unscale_clip, scaler_update, the rest
}

TEST(StepPhases, TheTrainersNamesCountOnlyAsUserScopes) {
  // An operator that happens to be called "forward" is no phase; the engine's operator still is.
  bool forward_known = true;
  const auto p = phases_of(trainer_step(/*as_annotations=*/false), &forward_known);
  EXPECT_FALSE(forward_known);
  EXPECT_NEAR(at(p, StepPhase::Forward), 0, 1e-6);
  EXPECT_NEAR(at(p, StepPhase::Optimizer), 0, 1e-6);
  EXPECT_NEAR(at(p, StepPhase::Backward), 200, 1e-6);
}

// torch 1.8's Kineto (pytorch/kineto tb_plugin samples, resnet50 on a V100) wrote torch.optim's spans
// as operators and no autograd::engine::evaluate_function spans: the engine's thread shows the bare
// nodes ("CudnnConvolutionBackward", "AddmmBackward", "torch::autograd::AccumulateGrad"), and the
// main thread nothing while it waits in loss.backward().
TEST(StepPhases, Torch18TracesGiveBackwardAndOptimizerFromTheirOperators) {
  KinetoTraceWriter w;
  w.torch_1_8().compute_major(7).step("ProfilerStep#5", 0, 1000);
  w.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 5, 100);
  w.op("aten::conv2d", 120, 150).launch(125, 10, "cudnn_fwd_kernel", 140, 120);
  w.op("Optimizer.zero_grad#SGD.zero_grad", 280, 20).op("aten::zero_", 285, 10);
  w.op_on(2, "CudnnConvolutionBackward", 400, 200).op_on(2, "aten::cudnn_convolution_backward", 405, 190);
  w.launch(410, 10, "cudnn_dgrad_kernel", 430, 150, "kernel", 7, 2);
  w.op_on(2, "AddmmBackward", 600, 50).op_on(2, "aten::mm", 605, 40);
  w.op_on(2, "torch::autograd::AccumulateGrad", 650, 20);
  w.op("Optimizer.step#SGD.step", 700, 200).op("aten::add_", 710, 180);
  const TraceAnalysis a = analyze_trace(parse_trace(w.json(), "worker0.pt.trace.json"));
  ASSERT_EQ(a.steps.size(), 1u);
  const auto& p = a.steps[0].phase_us;
  EXPECT_NEAR(at(p, StepPhase::DataWait), 100, 1e-6);
  EXPECT_NEAR(at(p, StepPhase::Backward), 270, 1e-6);   // the nodes and AccumulateGrad, 400-670
  EXPECT_NEAR(at(p, StepPhase::Optimizer), 220, 1e-6);  // zero_grad and step
  EXPECT_NEAR(at(p, StepPhase::Other), 410, 1e-6);
}

// "To device" is the host's time on host-to-device copies: x.to(device) whole (aten::to around
// aten::copy_), but of an operator that only copied a few bytes of parameters (cuDNN's and cuBLAS's
// 112-byte cudaMemcpy inside aten::cudnn_convolution and aten::addmm, whose host time was an algorithm
// search), only that call. As in torch 1.8's autograd-profiler Kineto traces of resnet50 on a V100,
// where such a convolution took 1.4 s and its copy 1 us.
TEST(StepPhases, ToDeviceIsTheCopiesNotTheOperatorsAroundThem) {
  KinetoTraceWriter w;
  w.torch_1_8().compute_major(7).step("ProfilerStep#1", 0, 10000);
  w.op("aten::to", 100, 300).op("aten::copy_", 110, 280);
  w.copy("cudaMemcpyAsync", 120, 260, "Memcpy HtoD (Pageable -> Device)", 130, 240);
  w.op("aten::cudnn_convolution", 500, 6000).copy("cudaMemcpy", 600, 20, "Memcpy HtoD (Pageable -> Device)", 610, 1);
  w.launch(6400, 10, "cudnn_fwd_kernel", 6420, 500);
  w.op("aten::addmm", 7000, 2000).copy("cudaMemcpy", 7100, 24, "Memcpy HtoD (Pageable -> Device)", 7110, 1);
  w.launch(8900, 10, "gemm_kernel", 8920, 100);
  const TraceAnalysis a = analyze_trace(parse_trace(w.json(), "worker0.pt.trace.json"));
  ASSERT_EQ(a.steps.size(), 1u);
  const auto& s = a.steps[0];
  EXPECT_NEAR(at(s.phase_us, StepPhase::ToDevice), 300 + 20 + 24, 1e-6);
  EXPECT_NEAR(at(s.idle_us, StepPhase::ToDevice), 300 - 240 + 20 - 1 + 24 - 1, 1e-6);
  EXPECT_EQ(s.h2d_copies, 3);
  EXPECT_NEAR(s.h2d_us, 242, 1e-6);
}

// `for batch in loader: train(batch); prof.step()` ends its trace with a ProfilerStep that holds only
// the loop's tail (or a script ended before the schedule's active steps): it is no step, and is said.
TEST(StepPhases, ALastStepWithoutBackwardOrOptimizerIsLeftOutAndSaid) {
  auto train_step = [](KinetoTraceWriter& w, const std::string& name, double t0) {
    w.step(name, t0, 1000);
    w.op("aten::mm", t0 + 100, 200);
    w.op("autograd::engine::evaluate_function: MmBackward0", t0 + 400, 300);
    w.annotation("Optimizer.step#SGD.step", t0 + 750, 200);
  };
  KinetoTraceWriter w;
  train_step(w, "ProfilerStep#1", 0);
  train_step(w, "ProfilerStep#2", 1000);
  w.step("ProfilerStep#3", 2000, 80);
  w.op("aten::item", 2010, 20);
  const TraceAnalysis a = analyze_trace(parse_trace(w.json(), "tail.json"));
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps.back().label, "ProfilerStep#2");
  EXPECT_EQ(a.partial_step, "ProfilerStep#3");
  EXPECT_NEAR(a.partial_step_us, 80, 1e-6);
  EXPECT_NEAR(a.mean_step_us(), 1000, 1e-6);

  // Forward-only traces (inference) keep every step; so does a trace whose last step trains.
  KinetoTraceWriter inference;
  for (int i = 0; i < 3; ++i) {
    inference.step("ProfilerStep#" + std::to_string(i), i * 500.0, 400);
    inference.op("aten::mm", i * 500.0 + 10, 300);
  }
  const TraceAnalysis b = analyze_trace(parse_trace(inference.json(), "inference.json"));
  EXPECT_EQ(b.steps.size(), 3u);
  EXPECT_TRUE(b.partial_step.empty());
  KinetoTraceWriter whole;
  train_step(whole, "ProfilerStep#0", 0);
  train_step(whole, "ProfilerStep#1", 1000);
  EXPECT_EQ(analyze_trace(parse_trace(whole.json(), "whole.json")).steps.size(), 2u);
}

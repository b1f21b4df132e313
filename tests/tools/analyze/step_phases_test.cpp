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

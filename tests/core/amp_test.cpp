#include "core/amp.h"

#include <ATen/autocast_mode.h>

#include <limits>

#include "test_support.h"

using namespace crosstrain::core;

namespace {

struct Capture {
  std::vector<std::string> lines;
  std::function<void(const std::string&)> fn() {
    return [this](const std::string& s) { lines.push_back(s); };
  }
};

std::vector<at::Tensor> make_grads(double value) {
  return {at::full({3, 4}, value), at::full({5}, value), at::full({2, 2, 2}, value)};
}

class ScalerKernelsTest : public ::testing::TestWithParam<ScalerKernels> {};

}  // namespace

TEST(AutocastGuard, EnablesNestsAndRestores) {
  ASSERT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  auto a = at::randn({8, 8}), b = at::randn({8, 8});
  {
    AutocastGuard outer(at::kCPU, at::kBFloat16);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(at::mm(a, b).scalar_type(), at::kBFloat16);
    {
      AutocastGuard inner(at::kCPU, std::nullopt);
      EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
      EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
    }
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(at::autocast::get_autocast_dtype(at::kCPU), at::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
}

TEST_P(ScalerKernelsTest, OverflowSkipsStepHalvesScaleAndLogs) {
  Capture log;
  GradScalerOptions o;
  o.kernels = GetParam();
  GradScaler scaler(at::kCPU, o, log.fn());
  EXPECT_EQ(scaler.uses_fused_kernels(), GetParam() == ScalerKernels::Fused);
  auto grads = make_grads(65536.0 * 0.5);
  grads[1][2] = std::numeric_limits<float>::infinity();
  int stepped = 0;
  EXPECT_FALSE(scaler.step(grads, [&] { ++stepped; }));
  scaler.update();
  EXPECT_EQ(stepped, 0);
  EXPECT_EQ(scaler.current_scale(), 32768.0);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_EQ(log.lines[0], "Gradient overflow. Skipping step");
  EXPECT_EQ(log.lines[1], "Loss scaler reducing loss scale to 32768.0");
  // The device-side scale follows: the loss is now multiplied by 32768.
  EXPECT_EQ(scaler.scale(at::ones({1})).item<float>(), 32768.0f);

  // NaN counts as overflow too.
  auto nan_grads = make_grads(1.0);
  nan_grads[2][0][1][1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(scaler.step(nan_grads, [&] { ++stepped; }));
  scaler.update();
  EXPECT_EQ(scaler.current_scale(), 16384.0);
}

TEST_P(ScalerKernelsTest, UnscalesAndGrowsAfterInterval) {
  Capture log;
  GradScalerOptions o;
  o.kernels = GetParam();
  o.growth_interval = 3;
  GradScaler scaler(at::kCPU, o, log.fn());
  for (int i = 0; i < 3; ++i) {
    auto grads = make_grads(65536.0 * 0.25);
    int stepped = 0;
    EXPECT_TRUE(scaler.step(grads, [&] { ++stepped; }));
    EXPECT_EQ(stepped, 1);
    for (const auto& g : grads) EXPECT_TRUE(at::allclose(g, at::full_like(g, 0.25)));
    scaler.update();
  }
  EXPECT_EQ(scaler.current_scale(), 131072.0);
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_EQ(log.lines[0], "Loss scaler increasing loss scale to 131072.0");
  EXPECT_EQ(scaler.scale(at::ones({1})).item<float>(), 131072.0f);
}

INSTANTIATE_TEST_SUITE_P(Kernels, ScalerKernelsTest, ::testing::Values(ScalerKernels::Fused, ScalerKernels::Portable),
                         [](const ::testing::TestParamInfo<ScalerKernels>& info) {
                           return std::string(info.param == ScalerKernels::Fused ? "Fused" : "Portable");
                         });

TEST(GradScaler, StaticScaleNeverChangesButStillSkips) {
  Capture log;
  GradScalerOptions o;
  o.dynamic = false;
  o.init_scale = 128.0;
  GradScaler scaler(at::kCPU, o, log.fn());
  auto grads = make_grads(std::numeric_limits<float>::infinity());
  EXPECT_FALSE(scaler.step(grads, [] {}));
  scaler.update();
  EXPECT_EQ(scaler.current_scale(), 128.0);
  EXPECT_EQ(log.lines, std::vector<std::string>{"Gradient overflow. Skipping step"});
}

TEST(GradScaler, UnscaleBeforeClippingHappensOnce) {
  GradScaler scaler(at::kCPU, {}, nullptr);
  auto grads = make_grads(65536.0 * 3);
  scaler.unscale(grads);
  EXPECT_TRUE(at::allclose(grads[0], at::full_like(grads[0], 3.0)));
  EXPECT_THROW(scaler.unscale(grads), std::logic_error);
  EXPECT_TRUE(scaler.step(grads, [] {}));  // does not unscale again
  EXPECT_TRUE(at::allclose(grads[0], at::full_like(grads[0], 3.0)));
  scaler.update();
}

TEST(GradScaler, StateDictRoundTripsInTorchLayout) {
  GradScalerOptions o;
  o.growth_interval = 2;
  GradScaler a(at::kCPU, o, nullptr);
  auto bad = make_grads(std::numeric_limits<float>::infinity());
  a.step(bad, [] {});
  a.update();
  auto good = make_grads(1.0);
  a.step(good, [] {});
  a.update();
  GradScaler b(at::kCPU, o, nullptr);
  const StateDict sd = a.state_dict();
  // torch.amp.GradScaler's keys, so Python reads the same dict.
  for (const char* k : {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"})
    EXPECT_TRUE(state_has(sd, k)) << k;
  b.load_state_dict(sd);
  EXPECT_EQ(b.current_scale(), 32768.0);
  EXPECT_EQ(b.state().growth_tracker, 1);
  EXPECT_EQ(b.state().skipped_steps, 1);
  // One more clean step completes the interval in both.
  auto g2 = make_grads(1.0);
  b.step(g2, [] {});
  b.update();
  EXPECT_EQ(b.current_scale(), 65536.0);
  StateDict incomplete = make_state_dict();
  incomplete.insert("scale", 1.0);
  EXPECT_THROW(b.load_state_dict(incomplete), std::invalid_argument);
  StateDict negative = a.state_dict();
  negative.insert_or_assign("scale", -1.0);
  EXPECT_THROW(b.load_state_dict(negative), std::invalid_argument);
}

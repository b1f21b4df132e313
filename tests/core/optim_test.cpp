#include "core/optim.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>

#include "test_support.h"

using namespace crosstrain::core;

namespace {

// Parameters of mixed shapes, like a network's (conv weights, BN vectors, a bias).
std::vector<at::Tensor> make_params(uint64_t seed) {
  at::manual_seed(seed);
  std::vector<at::Tensor> ps = {at::randn({8, 4, 3, 3}), at::randn({8}), at::randn({16, 8}), at::randn({16})};
  for (auto& p : ps) p.set_requires_grad(true);
  return ps;
}

std::vector<at::Tensor> clone_params(const std::vector<at::Tensor>& ps) {
  std::vector<at::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().set_requires_grad(true));
  return out;
}

void set_grads(std::vector<at::Tensor>& ps, int step) {
  at::manual_seed(1000 + step);
  for (auto& p : ps) p.mutable_grad() = at::randn_like(p);
}

double max_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, (a[i] - b[i]).abs().max().item<double>());
  return m;
}

struct Case {
  OptimizerKind kind;
  OptimizerKernels kernels;
  bool nesterov;
  double weight_decay;
};

// GoogleTest would print the struct's bytes, padding included, into CTest's test names.
void PrintTo(const Case& c, std::ostream* os) {
  *os << (c.kind == OptimizerKind::SGD ? "SGD" : "AdamW") << (c.kernels == OptimizerKernels::Fused ? " fused" : " foreach")
      << (c.nesterov ? " nesterov" : "") << " weight_decay=" << c.weight_decay;
}

class OptimizerEquivalence : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(OptimizerEquivalence, MatchesTorchOptim) {
  const Case c = GetParam();
  auto ours = make_params(7);
  auto ref = clone_params(ours);
  OptimizerOptions o;
  o.lr = 0.05;
  o.momentum = 0.9;
  o.nesterov = c.nesterov;
  o.kernels = c.kernels;
  MultiTensorOptimizer opt(c.kind, {ParamGroup{ours, c.weight_decay}}, o);
  EXPECT_EQ(opt.uses_fused_kernels(), c.kernels == OptimizerKernels::Fused);
  std::unique_ptr<torch::optim::Optimizer> reference;
  if (c.kind == OptimizerKind::SGD)
    reference = std::make_unique<torch::optim::SGD>(
        ref, torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(c.nesterov).weight_decay(c.weight_decay));
  else
    reference = std::make_unique<torch::optim::AdamW>(ref, torch::optim::AdamWOptions(0.05).weight_decay(c.weight_decay));
  for (int step = 0; step < 6; ++step) {
    set_grads(ours, step);
    set_grads(ref, step);
    opt.step();
    reference->step();
  }
  EXPECT_LT(max_diff(ours, ref), 2e-5);
  // And the update did something: parameters moved away from the start.
  EXPECT_GT(max_diff(ours, make_params(7)), 1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    All, OptimizerEquivalence,
    ::testing::Values(Case{OptimizerKind::SGD, OptimizerKernels::ForEach, false, 0.0},
                      Case{OptimizerKind::SGD, OptimizerKernels::ForEach, true, 1e-4},
                      Case{OptimizerKind::SGD, OptimizerKernels::Fused, false, 1e-4},
                      Case{OptimizerKind::SGD, OptimizerKernels::Fused, true, 0.0},
                      Case{OptimizerKind::AdamW, OptimizerKernels::ForEach, false, 0.01},
                      Case{OptimizerKind::AdamW, OptimizerKernels::Fused, false, 0.01}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const Case& c = info.param;
      std::string name = c.kind == OptimizerKind::SGD ? "SGD" : "AdamW";
      name += c.kernels == OptimizerKernels::Fused ? "_Fused" : "_ForEach";
      if (c.nesterov) name += "_Nesterov";
      if (c.weight_decay > 0) name += "_Decay";
      return name;
    });

TEST(Optimizer, ParametersWithoutGradientsStayPut) {
  auto ps = make_params(3);
  auto before = clone_params(ps);
  MultiTensorOptimizer opt(OptimizerKind::SGD, {ParamGroup{ps, 0.0}}, {});
  opt.step();  // no gradients at all
  EXPECT_EQ(max_diff(ps, before), 0.0);
  set_grads(ps, 0);
  EXPECT_EQ(opt.gradients().size(), 4u);
  opt.zero_grad();
  EXPECT_TRUE(opt.gradients().empty());
}

TEST(Optimizer, DecayGroupsSeparateVectors) {
  torch::OrderedDict<std::string, at::Tensor> named;
  auto ps = make_params(1);
  named.insert("conv.weight", ps[0]);
  named.insert("bn.weight", ps[1]);
  named.insert("fc.weight", ps[2]);
  named.insert("fc.bias", ps[3]);
  auto groups = split_decay_groups(named, true, 5e-5);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].params.size(), 2u);
  EXPECT_EQ(groups[0].weight_decay, 5e-5);
  EXPECT_EQ(groups[1].params.size(), 2u);
  EXPECT_EQ(groups[1].weight_decay, 0.0);
  EXPECT_EQ(split_decay_groups(named, false, 5e-5).size(), 1u);
}

TEST(LrSchedule, WarmupThenShape) {
  LrSchedule s;
  s.base_lr = 1.0;
  s.warmup_steps = 4;
  s.total_steps = 14;
  EXPECT_DOUBLE_EQ(s.lr(0), 0.25);
  EXPECT_DOUBLE_EQ(s.lr(3), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(10), 1.0);
  s.kind = ScheduleKind::Cosine;
  EXPECT_DOUBLE_EQ(s.lr(4), 1.0);
  EXPECT_NEAR(s.lr(9), 0.5, 1e-12);
  EXPECT_NEAR(s.lr(14), 0.0, 1e-12);
  s.kind = ScheduleKind::Step;
  s.step_size = 3;
  s.gamma = 0.1;
  EXPECT_DOUBLE_EQ(s.lr(6), 1.0);
  EXPECT_NEAR(s.lr(7), 0.1, 1e-12);
  EXPECT_THROW(schedule_kind_from_name("linear"), std::invalid_argument);
}

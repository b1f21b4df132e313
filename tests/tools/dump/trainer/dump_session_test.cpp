// DumpSession on real (tiny) training runs, compared with the engine `crosstrain compare` uses.
#include "tools/dump/trainer/dump_session.h"

#include <algorithm>

#include "test_support.h"
#include "tools/compare/dump_compare.h"
#include "tools/train/tiny_train_config.h"
#include "tools/train/train.h"

using namespace crosstrain;
using crosstrain::dump::DumpSession;
using crosstrain::dump::ModuleDisturbance;

namespace {

train::TrainConfig tiny() { return crosstrain::testing::tiny_train_config(/*batch_size=*/2, /*steps=*/2, /*warmup_steps=*/0); }

// One run dumped into `dir` (step 0, tensors); `disturb` is applied after the dump observer.
void dumped_run(const train::TrainConfig& c, const std::string& dir, ModuleDisturbance* disturb = nullptr,
                bool expect_failure = false) {
  dump::DumpSessionOptions o;
  o.dir = dir;
  o.mode = dump::DumpMode::Tensors;
  o.steps = dump::StepSelection::parse("0");
  o.meta = dump::dump_meta_for(c);
  DumpSession dump(o);
  train::TrainHooks hooks;
  hooks.train_observers.push_back(&dump);
  if (disturb) hooks.train_observers.push_back(disturb);
  if (expect_failure) {
    EXPECT_THROW(train::run_training(train::check_config(c), hooks), std::runtime_error);
  } else {
    train::run_training(train::check_config(c), hooks);
  }
  dump.close();
}

bool has(const compare::CompareResult& r, const std::string& name) {
  return std::any_of(r.tensors.begin(), r.tensors.end(), [&](const auto& t) { return t.name == name; });
}

}  // namespace

TEST(DumpSession, IdenticalRunsAgreeExactly) {
  const auto dir = crosstrain::testing::scratch_dir("dump_same");
  dumped_run(tiny(), (dir / "a").string());
  dumped_run(tiny(), (dir / "b").string());
  auto r = compare::compare_paths((dir / "a").string(), (dir / "b").string(), {});
  EXPECT_TRUE(r.agree);
  EXPECT_EQ(r.counts.error, 0);
  EXPECT_EQ(r.counts.warn, 0);
  EXPECT_EQ(r.counts.exact, r.counts.pass);
  EXPECT_GT(r.counts.pass, 100);
  for (const char* name : {"forward/layer3.1.conv2", "forward/layer3.1", "forward/layer3.1.relu#1", "forward/fc",
                           "grad_output/layer3.1", "grad_output/conv1", "param_grad/fc.weight",
                           "param_grad/layer1.0.bn1.bias", "loss"})
    EXPECT_TRUE(has(r, name)) << name;
  ASSERT_TRUE(r.loss.has_value());
  EXPECT_EQ(r.loss->steps.size(), 2u);  // every step is loss-logged, step 1 was not dumped
  EXPECT_TRUE(std::none_of(r.tensors.begin(), r.tensors.end(), [](const auto& t) { return t.step == 1; }));
}

TEST(DumpSession, PerturbedLayerIsTheFirstDivergence) {
  const auto dir = crosstrain::testing::scratch_dir("dump_perturb");
  dumped_run(tiny(), (dir / "a").string());
  ModuleDisturbance noise("layer2.0.conv2", ModuleDisturbance::Kind::Noise, 0.5);
  dumped_run(tiny(), (dir / "b").string(), &noise);
  EXPECT_GT(noise.applied(), 0);
  auto r = compare::compare_paths((dir / "a").string(), (dir / "b").string(), {});
  EXPECT_FALSE(r.agree);
  ASSERT_TRUE(r.first_divergence.has_value());
  EXPECT_EQ(r.tensors[*r.first_divergence].name, "forward/layer2.0.conv2");
  // Everything computed before it is bit-identical.
  for (size_t i = 0; i < *r.first_divergence; ++i) EXPECT_TRUE(r.tensors[i].exact()) << r.tensors[i].name;
}

TEST(DumpSession, InjectedNaNIsFound) {
  const auto dir = crosstrain::testing::scratch_dir("dump_nan");
  dumped_run(tiny(), (dir / "a").string());
  ModuleDisturbance nan("layer1.1.bn1", ModuleDisturbance::Kind::NaN);
  dumped_run(tiny(), (dir / "b").string(), &nan, /*expect_failure=*/true);  // fp32 stops on a NaN loss
  auto r = compare::compare_paths((dir / "a").string(), (dir / "b").string(), {});
  EXPECT_FALSE(r.agree);
  ASSERT_TRUE(r.first_divergence.has_value());
  const auto& first = r.tensors[*r.first_divergence];
  EXPECT_EQ(first.name, "forward/layer1.1.bn1");
  ASSERT_NE(first.b, nullptr);
  EXPECT_EQ(first.b->stats.nan_count, 1);
}

TEST(DumpSession, Fp32AgainstBf16WarnsWithoutErrors) {
  const auto dir = crosstrain::testing::scratch_dir("dump_bf16");
  dumped_run(tiny(), (dir / "a").string());
  auto bf16 = tiny();
  bf16.precision = "bf16";
  dumped_run(bf16, (dir / "b").string());
  auto r = compare::compare_paths((dir / "a").string(), (dir / "b").string(), {});
  EXPECT_EQ(r.counts.error, 0) << (r.first_divergence ? r.tensors[*r.first_divergence].name + ": " +
                                                           r.tensors[*r.first_divergence].reason
                                                     : "");
  EXPECT_GT(r.counts.warn + (r.counts.pass - r.counts.exact), 0);  // not identical: bf16 rounds
  EXPECT_TRUE(r.agree);
}

TEST(DumpSession, LossScalerRecordsScaledAndUnscaledGradients) {
  const auto dir = crosstrain::testing::scratch_dir("dump_scaler");
  auto c = tiny();
  c.precision = "bf16";
  c.loss_scale = "1024";
  dumped_run(c, (dir / "a").string());
  auto r = compare::compare_paths((dir / "a").string(), (dir / "a").string(), {});
  EXPECT_TRUE(has(r, "param_grad/fc.weight"));
  EXPECT_TRUE(has(r, "param_grad_unscaled/fc.weight"));
  EXPECT_TRUE(has(r, "loss_scale"));
}

TEST(DumpSession, UnwritableDirectoryFailsBeforeTraining) {
  dump::DumpSessionOptions o;
  o.dir = "/proc/crosstrain_no_such_dir/dump";
  EXPECT_THROW(DumpSession{o}, std::runtime_error);
}

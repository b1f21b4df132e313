// align::run_align without a subprocess: two tiny runs, their dumps and the comparison.
#include "tools/align/align_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "test_support.h"
#include "tools/train/tiny_train_config.h"

namespace fs = std::filesystem;
using crosstrain::align::AlignSideFailed;
using crosstrain::align::AlignOptions;
using crosstrain::align::parse_align_side;
using crosstrain::align::run_align;

namespace {

AlignOptions tiny_align(const fs::path& out, const std::string& a, const std::string& b) {
  AlignOptions o;
  o.base = crosstrain::testing::tiny_train_config(/*batch_size=*/2, /*steps=*/2, /*warmup_steps=*/0);
  o.a = a;
  o.b = b;
  o.out = out.string();
  o.dump.steps = "";  // every step
  o.dump.mode = "tensors";
  return o;
}

}  // namespace

TEST(AlignRun, IdenticalSidesAgreeFromOneSetOfWeights) {
  const auto dir = crosstrain::testing::scratch_dir("align_run_same");
  std::ostringstream log;
  const auto run = run_align(tiny_align(dir / "out", "device=cpu precision=fp32", "device=cpu threads=1"), log);
  EXPECT_TRUE(run.result.agree) << log.str();
  EXPECT_EQ(run.out_dir, (dir / "out").string());
  EXPECT_FALSE(run.out_dir_generated);
  EXPECT_TRUE(fs::exists(dir / "out" / "initial_weights.pt"));
  EXPECT_TRUE(fs::exists(dir / "out" / "a" / "index.jsonl"));
  EXPECT_TRUE(fs::exists(dir / "out" / "b" / "index.jsonl"));
  EXPECT_GT(run.result.counts.pass, 0);
  EXPECT_FALSE(run.result.first_divergence.has_value());
  EXPECT_NE(log.str().find("align: running B (device=cpu threads=1)"), std::string::npos) << log.str();
}

TEST(AlignRun, DisturbanceAppliesToBAndIsWhereTheRunsPart) {
  const auto dir = crosstrain::testing::scratch_dir("align_run_perturb");
  auto o = tiny_align(dir / "out", "device=cpu", "device=cpu");
  o.dump.perturb = "layer3.0.conv1=0.5";
  std::ostringstream log;
  const auto run = run_align(o, log);
  EXPECT_FALSE(run.result.agree);
  ASSERT_TRUE(run.result.first_divergence.has_value());
  const auto& first = run.result.tensors.at(*run.result.first_divergence);
  EXPECT_EQ(first.name, "forward/layer3.0.conv1");
  EXPECT_EQ(first.step, 0);
}

TEST(AlignRun, ASideThatStopsEarlyIsAProblemOfTheResult) {
  const auto dir = crosstrain::testing::scratch_dir("align_run_nan");
  auto o = tiny_align(dir / "out", "device=cpu", "device=cpu");
  o.dump.inject_nan = "layer1.0.bn1";
  std::ostringstream log;
  const auto run = run_align(o, log);
  EXPECT_FALSE(run.result.agree);
  bool said = false;
  for (const auto& p : run.result.problems) said = said || p.rfind("run B stopped early: ", 0) == 0;
  EXPECT_TRUE(said);
}

TEST(AlignRun, BadSidesFailBeforeAnythingRuns) {
  const auto dir = crosstrain::testing::scratch_dir("align_run_bad");
  std::ostringstream log;
  EXPECT_THROW(run_align(tiny_align(dir / "out", "device=cpu", "colour=blue"), log), std::invalid_argument);
  EXPECT_THROW(run_align(tiny_align(dir / "out", "precision=fp8", "device=cpu"), log), std::invalid_argument);
  auto bad_steps = tiny_align(dir / "out", "device=cpu", "device=cpu");
  bad_steps.dump.steps = "first";
  EXPECT_THROW(run_align(bad_steps, log), std::invalid_argument);
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_TRUE(log.str().empty()) << log.str();
}

// A side that cannot run is no verdict: AlignSideFailed names it, and a device that does not exist
// is found before either side trains.
TEST(AlignRun, ASideThatCannotRunThrowsNamingIt) {
  const auto dir = crosstrain::testing::scratch_dir("align_run_side_fails");
  std::ostringstream log;
  try {
    run_align(tiny_align(dir / "dev", "device=cpu", "device=nosuchdevice"), log);
    ADD_FAILURE() << "an unknown device ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("run B (device=nosuchdevice): ", 0), 0u) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "dev"));
  auto o = tiny_align(dir / "weights", "device=cpu", "device=cpu");
  o.base.weights_in = (dir / "missing.pt").string();
  try {
    run_align(o, log);
    ADD_FAILURE() << "missing weights ran";
  } catch (const AlignSideFailed& e) {
    EXPECT_EQ(std::string(e.what()).rfind("run A (device=cpu) failed: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("missing.pt"), std::string::npos) << e.what();
  }
}

TEST(AlignRun, SideSpecsSetTheirKeysOverTheBase) {
  const auto base = crosstrain::testing::tiny_train_config(2, 2, 0);
  const auto c = parse_align_side(base, "b", "precision=bf16 threads=2 channels_last=yes loss_scale=off").config;
  EXPECT_EQ(c.precision, "bf16");
  EXPECT_EQ(c.threads, 2);
  EXPECT_TRUE(c.channels_last);
  EXPECT_EQ(c.loss_scale, "off");
  EXPECT_EQ(c.model, base.model);
  for (const char* bad : {"threads=-1", "threads=2x", "channels_last=maybe", "device", "=cpu"}) {
    try {
      parse_align_side(base, "b", bad);
      ADD_FAILURE() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--b", 0), 0u) << e.what();
    }
  }
}

TEST(AlignRun, DefaultClassCountWorksAsInTrain) {
  // No --num-classes: the synthetic default (1000 classes), not "--num-classes must be >= 1".
  const auto dir = crosstrain::testing::scratch_dir("align_run_default_classes");
  std::ostringstream log;
  auto o = tiny_align(dir / "out", "device=cpu", "device=cpu threads=1");
  o.base.num_classes = 0;
  o.base.steps = 1;
  const auto run = run_align(o, log);
  EXPECT_TRUE(run.result.agree) << log.str();
  fs::remove_all(dir);
}

TEST(AlignRun, FewerProcessesAccumulateToSeeTheSameSamples) {
  using crosstrain::align::match_align_sides;
  using crosstrain::align::parse_align_side;
  const auto base = crosstrain::testing::tiny_train_config(/*batch_size=*/4, /*steps=*/3, /*warmup_steps=*/0);
  auto a = parse_align_side(base, "a", "nproc=2");
  auto b = parse_align_side(base, "b", "nproc=8 accumulate_steps=2");
  std::ostringstream log;
  match_align_sides(a, b, &log);
  EXPECT_EQ(a.config.accumulate_steps, 8);  // 2 x 8 = 8 x 2 micro-batches per step
  EXPECT_EQ(b.config.accumulate_steps, 2);
  EXPECT_EQ(a.config.data, "synthetic:192");  // 3 steps x 16 micro-batches x 4
  EXPECT_EQ(a.config.data, b.config.data);
  EXPECT_NE(log.str().find("run A accumulates 8"), std::string::npos) << log.str();
  // One process on each side: the fixed host batches, nothing changed.
  auto c = parse_align_side(base, "a", "threads=1");
  auto d = parse_align_side(base, "b", "");
  match_align_sides(c, d, nullptr);
  EXPECT_TRUE(c.config.data.empty());
  EXPECT_EQ(c.config.accumulate_steps, 1);
  // A set accumulate_steps that cannot match, or counts that do not divide, are refused.
  auto e = parse_align_side(base, "a", "accumulate_steps=3");
  auto f = parse_align_side(base, "b", "nproc=2");
  EXPECT_THROW(match_align_sides(e, f, nullptr), std::invalid_argument);
  auto g = parse_align_side(base, "a", "nproc=2");
  auto h = parse_align_side(base, "b", "nproc=3");
  EXPECT_THROW(match_align_sides(g, h, nullptr), std::invalid_argument);
}

// crosstrain's own traces, read back by `crosstrain analyze`: both recorders, where they land and
// the step phases found in them, and the data-loading advice on a run whose input pipeline is
// deliberately too slow.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.h"

using crosstrain::testing::binary;
using crosstrain::testing::run_command;
namespace fs = std::filesystem;

namespace {

nlohmann::json analyze_all(const std::string& path) {
  auto r = run_command(binary() + " analyze " + path + " --json -", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

nlohmann::json analyze(const std::string& path) { return analyze_all(path)["traces"][0]; }

bool fired(const nlohmann::json& trace, const std::string& rule) {
  for (const auto& f : trace["findings"])
    if (f["rule"] == rule) return true;
  return false;
}

}  // namespace

TEST(ProfileAnalyze, OwnTracesFromBothRecordersAnalyzeAlike) {
  auto dir = crosstrain::testing::scratch_dir("profile_analyze");
  std::map<std::string, nlohmann::json> traces;
  for (const std::string rec : {"kineto", "portable"}) {
    auto r = run_command(binary() + " train --device cpu --no-progress --model resnet18 --small-stem --num-classes 10 "
                         "--image-size 16 --batch-size 4 --steps 5 --warmup-steps 1 --threads 1 --profile " +
                         (dir / rec).string() + " --profile-recorder " + rec + " --profile-wait 1 --profile-warmup 1 "
                         "--profile-active 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    traces[rec] = analyze((dir / rec / "cycle0" / "rank0.pt.trace.json").string());
  }
  for (auto& [rec, t] : traces) {
    ASSERT_EQ(t["steps"].size(), 2u) << rec;
    EXPECT_EQ(t["steps"][0]["label"], "ProfilerStep#2") << rec;
    EXPECT_EQ(t["steps"][0]["host_syncs"], 1) << rec;  // the loss read at the end of the step
    EXPECT_GT(t["memory"][0]["curve"].size(), 10u) << rec;
    std::map<std::string, int64_t> calls;
    for (const auto& op : t["operators"]) calls[op["name"]] = op["calls"];
    // ResNet-18: 20 convolutions per forward pass, two steps.
    EXPECT_EQ(calls["aten::conv2d"], 40) << rec;
    EXPECT_EQ(calls["aten::convolution_backward"], 40) << rec;
  }
}

// train --profile DIR writes DIR/cycle<k>/rank<r>.pt.trace.json, as run --profile does, and analyze
// finds the trainer's phases in it (not "forward unknown"). A copy in the layout train wrote before,
// DIR/trace_cycle0.pt.trace.json, reads the same.
TEST(ProfileAnalyze, TrainTracesLandInTheRunLayoutWithTheirStepPhases) {
  auto dir = crosstrain::testing::scratch_dir("profile_layout");
  for (const std::string rec : {"kineto", "portable"}) {
    SCOPED_TRACE(rec);
    const fs::path prof = dir / rec;
    auto r = run_command(binary() + " train --device cpu --no-progress --model resnet18 --small-stem --base-width 8 "
                         "--num-classes 10 --image-size 16 --batch-size 2 --steps 3 --warmup-steps 1 --threads 1 "
                         "--profile " + prof.string() + " --profile-recorder " + rec +
                         " --profile-wait 0 --profile-warmup 1 --profile-active 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path trace = prof / "cycle0" / "rank0.pt.trace.json";
    ASSERT_TRUE(fs::is_regular_file(trace)) << r.output;
    EXPECT_FALSE(fs::exists(prof / "trace_cycle0.pt.trace.json"));
    const auto now = analyze_all(prof.string());
    ASSERT_EQ(now["traces"].size(), 1u);
    const auto& t = now["traces"][0];
    EXPECT_EQ(t["rank"], 0);
    EXPECT_EQ(t["steps"].size(), 2u);
    EXPECT_TRUE(t["script"]["module_spans"].get<bool>()) << "forward unknown";
    for (const char* phase : {"data wait", "forward", "backward", "optimizer"})
      EXPECT_GT(t["total"]["phases_us"][phase].get<double>(), 0) << phase;

    const fs::path old = dir / (rec + "_old");
    fs::create_directories(old);
    fs::copy_file(trace, old / "trace_cycle0.pt.trace.json");
    const auto then = analyze_all(old.string());
    ASSERT_EQ(then["traces"].size(), 1u);
    EXPECT_EQ(then["traces"][0]["rank"], 0);
    EXPECT_EQ(then["traces"][0]["total"], t["total"]);
  }
}

TEST(ProfileAnalyze, SlowInputPipelineTriggersTheDataLoadingAdvice) {
  auto dir = crosstrain::testing::scratch_dir("profile_slow_data");
  const std::string root = (dir / "tree").string();
  ASSERT_EQ(run_command(binary() + " make-imagefolder --out " + root + " --size 640x480 --train 24 --val 8 --classes 2")
                .exit_code,
            0);
  // Decoding 640x480 JPEGs on the training thread (no workers) for a model that takes ~no time.
  auto r = run_command(binary() + " train --device cpu --no-progress --data imagefolder:" + root +
                       " --image-size 32 --model resnet18 --small-stem --base-width 4 --batch-size 8 --steps 4"
                       " --warmup-steps 1 --workers 0 --threads 1 --no-final-eval --profile " +
                       (dir / "p").string() + " --profile-wait 0 --profile-warmup 1 --profile-active 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto t = analyze((dir / "p").string());
  EXPECT_TRUE(fired(t, "data_loading")) << t["findings"].dump();
  EXPECT_GT(t["total"]["data_wait_us"].get<double>(), 0.05 * t["total"]["duration_us"].get<double>());
}

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "test_support.h"
#include "tiny_train_config.h"
#include "tools/train/train.h"

using namespace crosstrain::train;

namespace {

TrainConfig profiled(const std::string& dir, const std::string& recorder) {
  TrainConfig c = crosstrain::testing::tiny_train_config(/*batch_size=*/4, /*steps=*/8, /*warmup_steps=*/1);
  c.lr = -1;  // the default schedule
  c.profile.dir = dir;
  c.profile.recorder = recorder;
  c.profile.wait = 1;
  c.profile.warmup = 1;
  c.profile.active = 2;
  c.profile.repeat = 2;
  return c;
}

nlohmann::json load(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

class Recorders : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(Recorders, WritesTorchProfilerSchemaOnTheSchedule) {
  auto dir = crosstrain::testing::scratch_dir("profile_" + GetParam());
  auto r = run_training(check_config(profiled(dir.string(), GetParam())));
  EXPECT_EQ(r.profile_recorder, GetParam());
  ASSERT_EQ(r.profile_traces.size(), 2u);  // two cycles of (wait 1, warmup 1, active 2)

  const std::vector<std::set<std::string>> expected_steps = {{"ProfilerStep#2", "ProfilerStep#3"},
                                                             {"ProfilerStep#6", "ProfilerStep#7"}};
  for (size_t cycle = 0; cycle < 2; ++cycle) {
    // The layout `crosstrain run --profile` writes: DIR/cycle<k>/rank<r>.pt.trace.json, rank 0 on one process.
    EXPECT_EQ(r.profile_traces[cycle], (dir / ("cycle" + std::to_string(cycle)) / "rank0.pt.trace.json").string());
    auto doc = load(r.profile_traces[cycle]);
    EXPECT_EQ(doc["schemaVersion"], 1);
    ASSERT_TRUE(doc["traceEvents"].is_array());
    std::set<std::string> steps, annotations, ops;
    std::map<std::string, nlohmann::json> first_op;
    size_t memory = 0;
    int64_t last_total = -1;
    bool totals_consistent = true;
    std::map<int64_t, int> seq_seen;  // sequence number -> forward (1) / backward (2) bits
    for (const auto& e : doc["traceEvents"]) {
      const std::string cat = e.value("cat", "");
      const std::string name = e.value("name", "");
      if (cat == "user_annotation") {
        (name.rfind("ProfilerStep#", 0) == 0 ? steps : annotations).insert(name);
      } else if (cat == "cpu_op") {
        ops.insert(name);
        if (!first_op.count(name)) first_op[name] = e;
        if (e["args"].contains("Sequence number")) {
          const int64_t seq = e["args"]["Sequence number"];
          seq_seen[seq] |= name.find("Backward") != std::string::npos ? 2 : 1;
        }
      } else if (name == "[memory]") {
        ++memory;
        const int64_t total = e["args"]["Total Allocated"], bytes = e["args"]["Bytes"];
        if (last_total >= 0 && total != last_total + bytes) totals_consistent = false;
        last_total = total;
      }
    }
    EXPECT_EQ(steps, expected_steps[cycle]);
    for (const char* a : {"data_wait", "forward", "backward", "optimizer_step", "layer1", "layer1.0.conv1", "fc"})
      EXPECT_TRUE(annotations.count(a)) << a;
    EXPECT_TRUE(ops.count("aten::conv2d"));
    EXPECT_TRUE(ops.count("aten::cross_entropy_loss"));
    // Input shapes of the stem convolution: batch 4 x 3 x 16 x 16 and a 64 x 3 x 3 x 3 weight.
    ASSERT_TRUE(first_op.count("aten::conv2d"));
    auto dims = first_op["aten::conv2d"]["args"]["Input Dims"];
    EXPECT_EQ(dims[0], nlohmann::json({4, 3, 16, 16}));
    EXPECT_EQ(dims[1], nlohmann::json({64, 3, 3, 3}));
    // Allocation events with running totals (single thread: each total = previous + bytes).
    EXPECT_GT(memory, 100u);
    EXPECT_TRUE(totals_consistent);
    // Forward operators and their backward functions share sequence numbers.
    int linked = 0;
    for (const auto& [seq, bits] : seq_seen) linked += bits == 3;
    EXPECT_GT(linked, 20);
  }
}

INSTANTIATE_TEST_SUITE_P(Both, Recorders, ::testing::Values("kineto", "portable"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(Profile, ShortRunWritesThePartialWindowAndBadScheduleIsRejected) {
  auto dir = crosstrain::testing::scratch_dir("profile_short");
  auto c = profiled(dir.string(), "portable");
  c.steps = 3;  // wait 1, warmup 1, then one of two active steps
  auto r = run_training(check_config(c));
  ASSERT_EQ(r.profile_traces.size(), 1u);
  auto doc = load(r.profile_traces[0]);
  int steps = 0;
  for (const auto& e : doc["traceEvents"]) steps += e.value("name", "").rfind("ProfilerStep#", 0) == 0;
  EXPECT_EQ(steps, 1);
  c.profile.active = 0;
  EXPECT_THROW(run_training(check_config(c)), std::invalid_argument);
}

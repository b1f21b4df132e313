#include "tools/analyze/trace_diff.h"

#include <gtest/gtest.h>

#include "tools/analyze/kineto_trace_writer.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;
using crosstrain::analyze::testing::KinetoTraceWriter;

namespace {
const DiffRow* row(const TraceDiff& d, const std::string& name) {
  for (const auto& r : d.rows)
    if (r.name == name) return &r;
  return nullptr;
}
}  // namespace

TEST(TraceDiff, RanksAppearedVanishedSlowerFaster) {
  KinetoTraceWriter a, b;
  a.step("ProfilerStep#1", 0, 1000).op("aten::conv2d", 0, 10).launch(1, 2, "conv", 5, 300);
  a.op("aten::relu", 20, 10).launch(21, 2, "relu", 320, 100);
  a.op("aten::dropout", 40, 10).launch(41, 2, "drop", 430, 50);
  // B: conv 2x slower, relu faster, dropout gone, a new copy; two steps, so per-step times.
  for (int s = 0; s < 2; ++s) {
    double o = s * 1000;
    b.step("ProfilerStep#" + std::to_string(s + 1), o, 1000).op("aten::conv2d", o, 10).launch(o + 1, 2, "conv", o + 5, 600);
    b.op("aten::relu", o + 20, 10).launch(o + 21, 2, "relu", o + 620, 40);
    b.op("aten::copy_", o + 40, 10).launch(o + 41, 2, "Memcpy HtoD", o + 700, 30, "gpu_memcpy");
  }
  auto ta = analyze_trace(parse_trace(a.json(), "a.json"));
  auto tb = analyze_trace(parse_trace(b.json(), "b.json"));
  auto d = diff_analyses(ta, tb);
  EXPECT_TRUE(d.per_step);
  EXPECT_EQ(d.time_basis, "device self");
  ASSERT_FALSE(d.rows.empty());
  EXPECT_EQ(d.rows.front().name, "aten::conv2d");  // largest change first
  EXPECT_EQ(row(d, "aten::conv2d")->status, DiffStatus::Slower);
  EXPECT_DOUBLE_EQ(row(d, "aten::conv2d")->delta_us(), 300);
  EXPECT_EQ(row(d, "aten::relu")->status, DiffStatus::Faster);
  EXPECT_EQ(row(d, "aten::dropout")->status, DiffStatus::Vanished);
  EXPECT_EQ(row(d, "aten::copy_")->status, DiffStatus::Appeared);
  EXPECT_EQ(row(d, "memcpy")->status, DiffStatus::Appeared);
  EXPECT_EQ(row(d, "kernel")->kind, "category");
}

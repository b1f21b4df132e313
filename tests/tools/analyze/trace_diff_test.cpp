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

TEST(TraceDiff, GoneZeroOnBothAndDeviceWarning) {
  KinetoTraceWriter a, b;
  a.step("ProfilerStep#1", 0, 1000).op("aten::conv2d", 0, 10).launch(1, 2, "conv", 5, 300);
  a.op("aten::relu", 20, 10).launch(21, 2, "relu", 320, 100);
  a.op("aten::view", 40, 5);  // no device time on either side
  b.compute_major(9).step("ProfilerStep#1", 0, 1000).op("aten::conv2d", 0, 10).launch(1, 2, "conv", 5, 300);
  b.op("aten::relu", 20, 10);  // still called, no device work any more
  b.op("aten::view", 40, 5);
  auto ta = analyze_trace(parse_trace(a.json(), "a.json"));
  auto tb = analyze_trace(parse_trace(b.json(), "b.json"));
  auto d = diff_analyses(ta, tb);
  ASSERT_NE(row(d, "aten::relu"), nullptr);
  EXPECT_EQ(row(d, "aten::relu")->status, DiffStatus::Gone);
  EXPECT_EQ(row(d, "aten::view"), nullptr);  // zero on both sides: not a change
  EXPECT_EQ(row(d, "aten::conv2d")->status, DiffStatus::Same);
  EXPECT_TRUE(d.warning.empty());  // only B names its device: no claim either way

  KinetoTraceWriter cpu;
  cpu.step("ProfilerStep#1", 0, 1000).op("aten::conv2d", 0, 400);
  auto tc = analyze_trace(parse_trace(cpu.json(), "cpu.json"));
  auto mixed = diff_analyses(ta, tc);
  EXPECT_NE(mixed.warning.find("no device activity"), std::string::npos) << mixed.warning;
  ta.device_name = "NVIDIA A100", tb.device_name = "NVIDIA H100";
  EXPECT_NE(diff_analyses(ta, tb).warning.find("different hardware"), std::string::npos);
}

TEST(TraceDiff, PositionsAreWithinTheTraceAndTheirStep) {
  // The first event in the file is a memory sample later than the spans: nothing may come out
  // with a negative start.
  std::string doc = R"({"traceEvents": [
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5000, "args": {"Total Allocated": 10, "Bytes": 10}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 1000},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1010, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1500, "dur": 100, "args": {"correlation": 1}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 2000, "dur": 1000},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2010, "dur": 5, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2300, "dur": 100, "args": {"correlation": 2}}]})";
  auto a = analyze_trace(parse_trace(doc, "neg.json"));
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(a.steps[0].start_us, 0);
  EXPECT_DOUBLE_EQ(a.steps[1].start_us, 1000);
  ASSERT_FALSE(a.idle_gaps.empty());
  for (const auto& g : a.idle_gaps) {
    EXPECT_GE(g.start_us, 0);
    EXPECT_GE(g.offset_in_step_us, 0);
  }
  // Step 2's gaps: [2000,2300) at +0 and [2400,3000) at +400 into the step.
  bool found = false;
  for (const auto& g : a.idle_gaps)
    if (g.step == "ProfilerStep#2" && g.duration_us == 600) found = g.offset_in_step_us == 400 && g.start_us == 1400;
  EXPECT_TRUE(found);
  for (const auto& m : a.memory)
    for (const auto& [x, y] : m.points) EXPECT_GE(x, 0);
}
